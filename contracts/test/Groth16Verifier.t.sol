// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Test} from "forge-std/Test.sol";

import {Groth16Verifier} from "../verifier/Groth16Verifier.sol";

/// @notice The generated verifier against real proofs of the devnet circuit (snarkjs via FFI).
contract Groth16VerifierTest is Test {
    uint256 internal constant P = 0x30644e72e131a029b85045b68181585d97816a916871ca8d3c208c16d87cfd47;
    uint256 internal constant R = 0x30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001;
    uint256 internal constant X = 0x0bfc639e1f471a2c7b537eb3cc9f292e79596ff157b5c1126673b7ae75af7d4c;

    Groth16Verifier internal verifier;
    uint256[8] internal proofX;

    function setUp() public {
        verifier = new Groth16Verifier();
        proofX = _prove(X);
    }

    function _prove(uint256 x) internal returns (uint256[8] memory) {
        string[] memory cmd = new string[](3);
        cmd[0] = "node";
        cmd[1] = "scripts/foundry/groth16-prove.js";
        cmd[2] = vm.toString(x);
        return abi.decode(vm.ffi(cmd), (uint256[8]));
    }

    function test_verifyProof_acceptsValidProof() public view {
        assertTrue(verifier.verifyProof(proofX, X));
    }

    function test_verifyProof_acceptsEdgeInputs() public {
        assertTrue(verifier.verifyProof(_prove(0), 0));
        assertTrue(verifier.verifyProof(_prove(R - 1), R - 1));
    }

    function test_verifyProof_rejectsOtherPublicInput() public view {
        assertFalse(verifier.verifyProof(proofX, X + 1));
        assertFalse(verifier.verifyProof(proofX, 0));
    }

    function test_verifyProof_rejectsTamperedProof() public view {
        for (uint256 i = 0; i < 8; ++i) {
            uint256[8] memory bad = proofX;
            bad[i] ^= 1;
            assertFalse(verifier.verifyProof(bad, X));
        }
    }

    function test_verifyProof_rejectsNegatedA() public view {
        uint256[8] memory bad = proofX;
        bad[1] = P - bad[1]; // -A is a valid curve point, but the wrong one
        assertFalse(verifier.verifyProof(bad, X));
    }

    function test_verifyProof_rejectsSnarkjsG2Order() public view {
        // snarkjs lists G2 coordinates real part first; docs/encodings.md wants imaginary first.
        uint256[8] memory swapped = proofX;
        (swapped[2], swapped[3]) = (proofX[3], proofX[2]);
        (swapped[4], swapped[5]) = (proofX[5], proofX[4]);
        assertFalse(verifier.verifyProof(swapped, X));
    }

    function test_verifyProof_rejectsPublicInputOutOfField() public view {
        assertFalse(verifier.verifyProof(proofX, X + R));
        assertFalse(verifier.verifyProof(proofX, R));
    }

    function test_verifyProof_rejectsCoordinateOutOfField() public view {
        for (uint256 i = 0; i < 8; ++i) {
            uint256[8] memory bad = proofX;
            bad[i] += P; // same residue, but not canonical
            assertFalse(verifier.verifyProof(bad, X));
        }
    }

    function test_verifyProof_gas() public {
        uint256[8] memory proof = proofX;
        uint256 g = gasleft();
        bool ok = verifier.verifyProof(proof, X);
        g -= gasleft();
        assertTrue(ok);
        emit log_named_uint("Groth16Verifier.verifyProof gas (cold external call)", g);
        assertLt(g, 210_000);
    }

    function test_verifyingKeyId_marksDevnetKeyInsecure() public view {
        assertEq(verifier.VERIFYING_KEY_ID(), "devnet-insecure");
    }

    /// @notice contracts/verifier/Groth16Verifier.sol is exactly what the generator renders from
    /// the committed verifying key.
    function test_generatedVerifier_matchesRegeneration() public {
        string[] memory cmd = new string[](3);
        cmd[0] = "node";
        cmd[1] = "scripts/foundry/gen-verifier.js";
        cmd[2] = "--hex";
        bytes memory rendered = vm.ffi(cmd);
        bytes memory committed = bytes(vm.readFile("contracts/verifier/Groth16Verifier.sol"));
        assertEq(keccak256(rendered), keccak256(committed));
        assertEq(rendered.length, committed.length);
    }
}
