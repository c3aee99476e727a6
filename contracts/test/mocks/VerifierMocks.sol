// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";

import {IGroth16Verifier} from "../../interfaces/IGroth16Verifier.sol";
import {ISettleBatch} from "../../interfaces/market/ISettleBatch.sol";

/// @notice TEST ONLY. A verifier that always reverts: the market must treat it as a rejection.
contract RevertingVerifier is IGroth16Verifier {
    function verifyProof(uint256[8] calldata, uint256) external pure returns (bool) {
        revert("verifier exploded");
    }
}

/// @notice TEST ONLY. What a hostile or broken proposal might install: accepts every proof.
contract AcceptAllVerifier is IGroth16Verifier {
    function verifyProof(uint256[8] calldata, uint256) external pure returns (bool) {
        return true;
    }
}

/// @notice TEST ONLY, never deployed. Accepts exactly the proof whose first word is
/// keccak256(publicInput) and whose other words are zero, so the market tests can settle random
/// batches without a snarkjs call per batch, while a proof for any other public input still fails.
/// The real pairing check is covered by the Groth16Verifier tests and the real-proof market tests.
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

/// @notice TEST ONLY. Holds a batch to re-submit to the market's settleBatch from inside the
/// verification of another (or the same) batch.
abstract contract ReentrantVerifierBase {
    address public immutable market;
    bytes internal _batch; // abi.encode(header, leaves, registryRoot)

    constructor(address market_) {
        market = market_;
    }

    /// @notice Sets the batch the verifier re-submits.
    function arm(
        ISettleBatch.BatchHeader calldata header,
        ISettleBatch.SettlementLeaf[] calldata leaves,
        bytes32 registryRoot
    ) external {
        _batch = abi.encode(header, leaves, registryRoot);
    }

    /// @dev settleBatch calldata of the armed batch with `proof` (the proof being verified).
    function _reentry(uint256[8] calldata proof) internal view returns (bytes memory) {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves, bytes32 root) =
            abi.decode(_batch, (ISettleBatch.BatchHeader, ISettleBatch.SettlementLeaf[], bytes32));
        return abi.encodeCall(ISettleBatch.settleBatch, (h, leaves, root, proof));
    }
}

/// @notice TEST ONLY. An attacker-controlled verifier that tries to re-enter settleBatch while the
/// outer batch is being verified. It is written as a state-changing function (not view) to show
/// that the market's STATICCALL, plus settleBatch's reentrancy guard, stop the re-entry.
contract ReentrantVerifier is ReentrantVerifierBase {
    uint256 public reentryAttempts;
    bool public reentrySucceeded;

    constructor(address market_) ReentrantVerifierBase(market_) {}

    /// @dev Same selector as IGroth16Verifier.verifyProof. Returns true only when the re-entry
    /// failed, so the outer batch would settle exactly once.
    function verifyProof(uint256[8] calldata proof, uint256) external returns (bool) {
        (bool ok,) = market.call(_reentry(proof));
        // In a STATICCALL these writes revert the whole frame; the market's try/catch then reports
        // a rejection. Only reached in a plain CALL context.
        reentryAttempts += 1;
        reentrySucceeded = ok;
        return !ok;
    }
}

/// @notice TEST ONLY. A view verifier that attempts the re-entry through a low-level call (allowed
/// in a view function as a STATICCALL) and accepts the outer proof only if the re-entry was refused
/// by settleBatch's reentrancy guard.
contract ReentrantViewVerifier is ReentrantVerifierBase, IGroth16Verifier {
    constructor(address market_) ReentrantVerifierBase(market_) {}

    function verifyProof(uint256[8] calldata proof, uint256) external view returns (bool) {
        (bool ok, bytes memory ret) = market.staticcall(_reentry(proof));
        return !ok
            && keccak256(ret)
                == keccak256(abi.encodeWithSelector(ReentrancyGuardTransient.ReentrancyGuardReentrantCall.selector));
    }
}
