// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {TaskLeaf} from "../libraries/TaskLeaf.sol";

/// @title ISettlement
/// @notice Settles proven batches of tasks: recomputes the RFC 6962 batch root from the leaves,
/// checks the registry root, verifies one Groth16 proof over the single public input of
/// docs/encodings.md, then settles every task through TaskEscrow, or reverts as a whole.
/// Parameters and the sequencer role are owned by the governance timelock.
interface ISettlement {
    /// @notice A batch was proven and all its tasks settled.
    /// @param batchRoot RFC 6962 root of the leaves.
    /// @param registryRoot Registry root the batch was proven against.
    /// @param sequencer The submitting sequencer.
    /// @param taskCount Number of tasks.
    /// @param publicInput The Groth16 public input that was verified.
    event BatchSettled(
        bytes32 indexed batchRoot,
        bytes32 indexed registryRoot,
        address indexed sequencer,
        uint256 taskCount,
        uint256 publicInput
    );

    /// @notice `account` was granted (`allowed`) or revoked the sequencer role.
    /// @param account The account.
    /// @param allowed Whether it may submit batches.
    event SequencerUpdated(address indexed account, bool allowed);

    /// @notice The Groth16 verifier changed.
    /// @param verifier New verifier.
    event VerifierUpdated(address indexed verifier);

    /// @notice The maximum batch size changed.
    /// @param maxBatchSize New maximum number of tasks per batch.
    event MaxBatchSizeUpdated(uint256 maxBatchSize);

    /// @notice `caller` does not hold the sequencer role.
    /// @param caller The caller.
    error SettlementNotSequencer(address caller);

    /// @notice The batch has no leaves.
    error SettlementEmptyBatch();

    /// @notice The batch has `count` tasks, more than `maxBatchSize`.
    /// @param count Tasks submitted.
    /// @param maxBatchSize The maximum.
    error SettlementBatchTooLarge(uint256 count, uint256 maxBatchSize);

    /// @notice `registryRoot` was never a registry root.
    /// @param registryRoot The root.
    /// @param currentRoot The current root.
    error SettlementUnknownRegistryRoot(bytes32 registryRoot, bytes32 currentRoot);

    /// @notice `registryRoot` was replaced and its grace window ended at `acceptedUntil`.
    /// @param registryRoot The root.
    /// @param acceptedUntil End of its grace window (exclusive).
    error SettlementRegistryRootExpired(bytes32 registryRoot, uint256 acceptedUntil);

    /// @notice The verifier rejected the proof for `publicInput`.
    /// @param publicInput The public input computed from the batch.
    error SettlementInvalidProof(uint256 publicInput);

    /// @notice The zero address was given.
    error SettlementZeroAddress();

    /// @notice The maximum batch size must be in [1, 4096].
    /// @param maxBatchSize The value.
    error SettlementInvalidMaxBatchSize(uint256 maxBatchSize);

    /// @notice Settles a proven batch. Sequencer only.
    /// @dev Checks, in order: sequencer role, 1 <= leaves <= maxBatchSize, registry root current or
    /// in grace, proof valid for `publicInput(batchRoot(leaves), registryRoot, leaves.length)`;
    /// then {ITaskEscrow-settleTasks}. Emits {BatchSettled} (and the escrow's events).
    /// @param leaves The tasks, in the order the batch root was built.
    /// @param registryRoot The registry root the batch was proven against.
    /// @param proof Groth16 proof, layout of docs/encodings.md.
    /// @return batchRoot The batch root.
    /// @return publicInput The verified public input.
    function submitBatch(TaskLeaf[] calldata leaves, bytes32 registryRoot, uint256[8] calldata proof)
        external
        returns (bytes32 batchRoot, uint256 publicInput);

    /// @notice Grants or revokes the sequencer role. Owner (timelock) only.
    /// @dev Emits {SequencerUpdated}.
    /// @param account The account.
    /// @param allowed Whether it may submit batches.
    function setSequencer(address account, bool allowed) external;

    /// @notice Sets the Groth16 verifier. Owner (timelock) only.
    /// @dev Emits {VerifierUpdated}.
    /// @param verifier New verifier (a contract).
    function setVerifier(address verifier) external;

    /// @notice Sets the maximum number of tasks per batch. Owner (timelock) only.
    /// @dev Emits {MaxBatchSizeUpdated}.
    /// @param maxBatchSize New maximum, in [1, 4096].
    function setMaxBatchSize(uint256 maxBatchSize) external;

    /// @notice Computes the batch root and public input a proof for this batch must bind.
    /// @param leaves The tasks, in order.
    /// @param registryRoot The registry root.
    /// @return batchRoot The batch root.
    /// @return publicInput The public input.
    function computePublicInput(TaskLeaf[] calldata leaves, bytes32 registryRoot)
        external
        view
        returns (bytes32 batchRoot, uint256 publicInput);

    /// @notice Whether `account` holds the sequencer role.
    /// @param account The account.
    function isSequencer(address account) external view returns (bool);

    /// @notice The Groth16 verifier.
    function verifier() external view returns (address);

    /// @notice Maximum number of tasks per batch.
    function maxBatchSize() external view returns (uint256);

    /// @notice The TaskEscrow.
    function escrow() external view returns (address);

    /// @notice The ModelRegistry.
    function registry() external view returns (address);
}
