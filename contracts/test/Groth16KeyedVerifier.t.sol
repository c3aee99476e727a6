// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Test} from "forge-std/Test.sol";

import {Groth16KeyedVerifier} from "../verifier/Groth16KeyedVerifier.sol";
import {WrapVerifierDevnetInsecure} from "../verifier/WrapVerifierDevnetInsecure.sol";

/// @notice The keyed verifier, given the devnet wrap key at construction, behaves exactly like
/// the verifier generated from that key: same digest, accepts the real batch, rejects the rest.
contract Groth16KeyedVerifierTest is Test {
    string internal constant KEY_ID = "wrap-production-r4q21g16-b2040e15e164b7bb-6f990bdc6e64c4c2d710109c5ea949d3ceec7851903ff7a22665a9a12f725714-insecure-devnet";
    string internal constant DIR = "contracts/test/fixtures/groth16/";

    Groth16KeyedVerifier internal verifier;
    WrapVerifierDevnetInsecure internal generated;
    uint256[18] internal key;
    uint256[8] internal proof;
    uint256 internal publicInput;

    function _g2(string memory vk, string memory name, uint256 offset) internal {
        // snarkjs writes [[x.c0, x.c1], [y.c0, y.c1]]; EIP-197 wants the imaginary part first.
        uint256[] memory x = vm.parseJsonUintArray(vk, string.concat(".", name, "[0]"));
        uint256[] memory y = vm.parseJsonUintArray(vk, string.concat(".", name, "[1]"));
        (key[offset], key[offset + 1], key[offset + 2], key[offset + 3]) = (x[1], x[0], y[1], y[0]);
    }

    function setUp() public {
        string memory vk = vm.readFile(string.concat(DIR, KEY_ID, ".vk.json"));
        uint256[] memory alpha = vm.parseJsonUintArray(vk, ".vk_alpha_1");
        (key[0], key[1]) = (alpha[0], alpha[1]);
        _g2(vk, "vk_beta_2", 2);
        _g2(vk, "vk_gamma_2", 6);
        _g2(vk, "vk_delta_2", 10);
        uint256[] memory ic0 = vm.parseJsonUintArray(vk, ".IC[0]");
        uint256[] memory ic1 = vm.parseJsonUintArray(vk, ".IC[1]");
        (key[14], key[15], key[16], key[17]) = (ic0[0], ic0[1], ic1[0], ic1[1]);
        verifier = new Groth16KeyedVerifier(key, KEY_ID);
        generated = new WrapVerifierDevnetInsecure();

        string memory batch = vm.readFile(string.concat(DIR, KEY_ID, ".batch.g16.json"));
        uint256[] memory words = vm.parseJsonUintArray(batch, ".proof");
        for (uint256 i = 0; i < 8; ++i) {
            proof[i] = words[i];
        }
        publicInput = vm.parseJsonUint(batch, ".public_input");
    }

    function test_digestAndIdMatchTheGeneratedVerifier() public view {
        assertEq(verifier.VERIFYING_KEY_DIGEST(), generated.VERIFYING_KEY_DIGEST());
        assertEq(verifier.VERIFYING_KEY_ID(), KEY_ID);
    }

    function test_acceptsTheRealBatchProof() public view {
        assertTrue(verifier.verifyProof(proof, publicInput));
    }

    function test_rejectsAnotherPublicInputAndTamperedProofs() public view {
        assertFalse(verifier.verifyProof(proof, publicInput ^ 1));
        for (uint256 i = 0; i < 8; ++i) {
            uint256[8] memory bad = proof;
            bad[i] ^= 1;
            assertFalse(verifier.verifyProof(bad, publicInput));
        }
    }

    function test_rejectsOutOfFieldInputs() public view {
        uint256 r = 0x30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001;
        uint256 p = 0x30644e72e131a029b85045b68181585d97816a916871ca8d3c208c16d87cfd47;
        assertFalse(verifier.verifyProof(proof, publicInput + r));
        uint256[8] memory bad = proof;
        bad[0] += p;
        assertFalse(verifier.verifyProof(bad, publicInput));
    }

    function test_anotherKeyRejectsTheProof() public {
        uint256[18] memory other = key;
        (other[16], other[17]) = (other[14], other[15]); // IC1 := IC0, still on the curve
        Groth16KeyedVerifier wrong = new Groth16KeyedVerifier(other, "other");
        assertFalse(wrong.verifyProof(proof, publicInput));
    }

    function test_constructorRejectsBadKeys() public {
        uint256[18] memory bad = key;
        bad[5] = 0x30644e72e131a029b85045b68181585d97816a916871ca8d3c208c16d87cfd47;
        vm.expectRevert(abi.encodeWithSelector(Groth16KeyedVerifier.KeyWordOutOfField.selector, 5));
        new Groth16KeyedVerifier(bad, KEY_ID);
        vm.expectRevert(Groth16KeyedVerifier.EmptyKeyId.selector);
        new Groth16KeyedVerifier(key, "");
    }

    /// Every key point is checked at construction: off the curve, at infinity, off the twist.
    function test_constructorRejectsInvalidPoints() public {
        // G1: alpha, IC0, IC1 moved off the curve (y + 1), or set to the point first infinity.
        uint8[3] memory g1 = [0, 14, 16];
        for (uint256 i = 0; i < 3; ++i) {
            uint256[18] memory bad = key;
            bad[g1[i] + 1] += 1;
            vm.expectRevert(abi.encodeWithSelector(Groth16KeyedVerifier.KeyPointInvalid.selector, g1[i]));
            new Groth16KeyedVerifier(bad, KEY_ID);
            bad = key;
            (bad[g1[i]], bad[g1[i] + 1]) = (0, 0);
            vm.expectRevert(abi.encodeWithSelector(Groth16KeyedVerifier.KeyPointInvalid.selector, g1[i]));
            new Groth16KeyedVerifier(bad, KEY_ID);
        }
        // G2: beta, gamma, delta with one coordinate changed (off the twist), or first infinity.
        for (uint256 first = 2; first < 14; first += 4) {
            uint256[18] memory bad = key;
            bad[first + 3] += 1;
            vm.expectRevert(abi.encodeWithSelector(Groth16KeyedVerifier.KeyPointInvalid.selector, first));
            new Groth16KeyedVerifier(bad, KEY_ID);
            bad = key;
            (bad[first], bad[first + 1], bad[first + 2], bad[first + 3]) = (0, 0, 0, 0);
            vm.expectRevert(abi.encodeWithSelector(Groth16KeyedVerifier.KeyPointInvalid.selector, first));
            new Groth16KeyedVerifier(bad, KEY_ID);
        }
    }

    function test_gasMatchesTheGeneratedVerifier() public {
        uint256[8] memory p = proof;
        uint256 g = gasleft();
        bool ok = verifier.verifyProof(p, publicInput);
        g -= gasleft();
        assertTrue(ok);
        uint256 h = gasleft();
        generated.verifyProof(p, publicInput);
        h -= gasleft();
        emit log_named_uint("Groth16KeyedVerifier.verifyProof gas (cold external call)", g);
        emit log_named_uint("WrapVerifierDevnetInsecure.verifyProof gas (cold external call)", h);
        assertLt(g, h + 3_000); // the memory layout of the immutables
        assertLt(g, 210_000);
    }
}
