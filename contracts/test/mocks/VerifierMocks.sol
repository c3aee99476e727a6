// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IGroth16Verifier} from "../../interfaces/IGroth16Verifier.sol";
import {ISettlement} from "../../interfaces/ISettlement.sol";
import {TaskLeaf} from "../../libraries/TaskLeaf.sol";

/// @notice TEST ONLY. A verifier that always reverts: Settlement must treat it as a rejection.
contract RevertingVerifier is IGroth16Verifier {
    function verifyProof(uint256[8] calldata, uint256) external pure returns (bool) {
        revert("verifier exploded");
    }
}

/// @notice TEST ONLY, never deployed. Accepts exactly the proof whose first word is
/// keccak256(publicInput) and whose other words are zero, so the invariant tests can settle random
/// batches without a snarkjs call per batch, while a proof for any other public input still fails.
/// The real pairing check is covered by the Groth16Verifier and Settlement tests.
contract PublicInputBoundVerifier is IGroth16Verifier {
    function verifyProof(uint256[8] calldata proof, uint256 publicInput) external pure returns (bool) {
        if (proof[0] != uint256(keccak256(abi.encode(publicInput)))) return false;
        for (uint256 i = 1; i < 8; ++i) {
            if (proof[i] != 0) return false;
        }
        return true;
    }

    function proofFor(uint256 publicInput) external pure returns (uint256[8] memory proof) {
        proof[0] = uint256(keccak256(abi.encode(publicInput)));
    }
}

/// @notice TEST ONLY. An attacker-controlled verifier that tries to re-enter submitBatch (as a
/// sequencer) while the outer batch is being verified. It is written as a state-changing function
/// (not view) to show that Settlement's STATICCALL, plus its reentrancy guard, stop the re-entry.
contract ReentrantVerifier {
    ISettlement public immutable settlement;
    TaskLeaf[] internal _leaves;
    bytes32 internal _root;
    uint256 public reentryAttempts;
    bool public reentrySucceeded;

    constructor(ISettlement settlement_) {
        settlement = settlement_;
    }

    function arm(TaskLeaf[] calldata leaves, bytes32 root) external {
        delete _leaves;
        for (uint256 i = 0; i < leaves.length; ++i) {
            _leaves.push(leaves[i]);
        }
        _root = root;
    }

    /// @dev Same selector as IGroth16Verifier.verifyProof. Returns true only when the re-entry
    /// failed, so the outer batch settles exactly once.
    function verifyProof(uint256[8] calldata proof, uint256) external returns (bool) {
        (bool ok,) = address(settlement).call(abi.encodeCall(ISettlement.submitBatch, (_leaves, _root, proof)));
        // In a STATICCALL these writes revert the whole frame; the try/catch in Settlement then
        // reports a rejection. Only reached in a plain CALL context.
        reentryAttempts += 1;
        reentrySucceeded = ok;
        return !ok;
    }
}

/// @notice TEST ONLY. A view verifier that attempts the re-entry through a low-level call (allowed
/// in a view function as a STATICCALL) and accepts the outer proof only if the re-entry failed.
contract ReentrantViewVerifier is IGroth16Verifier {
    ISettlement public immutable settlement;
    TaskLeaf[] internal _leaves;
    bytes32 internal _root;

    constructor(ISettlement settlement_) {
        settlement = settlement_;
    }

    function arm(TaskLeaf[] calldata leaves, bytes32 root) external {
        delete _leaves;
        for (uint256 i = 0; i < leaves.length; ++i) {
            _leaves.push(leaves[i]);
        }
        _root = root;
    }

    function verifyProof(uint256[8] calldata proof, uint256) external view returns (bool) {
        (bool ok,) = address(settlement).staticcall(abi.encodeCall(ISettlement.submitBatch, (_leaves, _root, proof)));
        return !ok;
    }
}
