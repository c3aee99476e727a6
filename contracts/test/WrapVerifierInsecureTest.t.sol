// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Test} from "forge-std/Test.sol";

import {WrapVerifierInsecureTest} from "../verifier/WrapVerifierInsecureTest.sol";

/// @notice The Groth16 wrap on the EVM: a proof made in Rust (tgrid-groth16) of the R1CS verifier
/// of a real final-layer plonky2 proof (tgrid-wrap-r1cs fixture, INSECURE test FRI parameters and
/// INSECURE devnet key), checked by the verifier generated from that key.
contract WrapVerifierInsecureTestTest is Test {
    string internal constant FIXTURE = "contracts/test/fixtures/groth16/wrap-insecure-test.proof.json";
    string internal constant VK = "contracts/test/fixtures/groth16/wrap-insecure-test.vk.json";
    string internal constant OUT = "contracts/verifier/WrapVerifierInsecureTest.sol";

    WrapVerifierInsecureTest internal verifier;
    uint256[8] internal proof;
    uint256 internal x;

    function setUp() public {
        verifier = new WrapVerifierInsecureTest();
        string memory json = vm.readFile(FIXTURE);
        uint256[] memory words = vm.parseJsonUintArray(json, ".proof");
        assertEq(words.length, 8);
        for (uint256 i = 0; i < 8; ++i) {
            proof[i] = words[i];
        }
        x = vm.parseJsonUint(json, ".publicInput");
    }

    function test_acceptsTheRustProof() public view {
        assertTrue(verifier.verifyProof(proof, x));
    }

    function test_rejectsAnotherPublicInput() public view {
        assertFalse(verifier.verifyProof(proof, x + 1));
        assertFalse(verifier.verifyProof(proof, x ^ (1 << 200)));
    }

    function test_rejectsTamperedProof() public view {
        for (uint256 i = 0; i < 8; ++i) {
            uint256[8] memory bad = proof;
            bad[i] ^= 1;
            assertFalse(verifier.verifyProof(bad, x));
        }
    }

    function test_gas() public {
        uint256[8] memory p = proof;
        uint256 g = gasleft();
        bool ok = verifier.verifyProof(p, x);
        g -= gasleft();
        assertTrue(ok);
        emit log_named_uint("WrapVerifierInsecureTest.verifyProof gas (cold external call)", g);
        assertLt(g, 210_000);
    }

    function test_keyIdSaysInsecure() public view {
        assertEq(verifier.VERIFYING_KEY_ID(), "wrap-insecure-test");
    }

    /// @notice The committed verifier is exactly what the generator renders from the committed key.
    function test_generatedVerifier_matchesRegeneration() public {
        string[] memory cmd = new string[](11);
        cmd[0] = "node";
        cmd[1] = "scripts/foundry/gen-verifier.js";
        cmd[2] = "--vk";
        cmd[3] = VK;
        cmd[4] = "--out";
        cmd[5] = OUT;
        cmd[6] = "--name";
        cmd[7] = "WrapVerifierInsecureTest";
        cmd[8] = "--key-id";
        cmd[9] = "wrap-insecure-test";
        cmd[10] = "--hex";
        bytes memory rendered = vm.ffi(cmd);
        bytes memory committed = bytes(vm.readFile(OUT));
        assertEq(keccak256(rendered), keccak256(committed));
    }
}
