// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title IModelRegistry
/// @notice The registry root of allowed circuits (an opaque bytes32 for the contracts: a
/// Goldilocks-Poseidon Merkle root of (model id, leaf circuit digest) pairs) with its history,
/// and the list of registered models for auditors. Owned by the governance timelock.
/// @dev Grace rule: a root is accepted for settlement while it is the current root, and for
/// `rootGracePeriod` seconds after it was replaced (the grace period in force at the replacement:
/// a later change of the period moves no window that is already open or closed). Any root retired
/// longer ago, revoked, or never set, is rejected. The zero root is never accepted. A revoked
/// root stays rejected for good: it can never become current again.
interface IModelRegistry {
    /// @notice How a registry root stands for settlement.
    enum RootStatus {
        /// Never a registry root (or the zero root).
        Unknown,
        /// The current root.
        Current,
        /// Replaced less than the grace period ago: still accepted.
        Grace,
        /// Replaced at least the grace period ago: rejected.
        Expired,
        /// Revoked by governance: rejected for good.
        Revoked
    }

    /// @notice A registered model.
    /// @param circuitDigest Digest of the model's leaf circuit (the recursion step that verifies its task proofs).
    /// @param registeredAt Registration timestamp.
    /// @param deregisteredAt Deregistration timestamp (0 while active).
    /// @param active False once deregistered.
    /// @param uri Where the compiled model and its metadata are published.
    struct Model {
        bytes32 circuitDigest;
        uint40 registeredAt;
        uint40 deregisteredAt;
        bool active;
        string uri;
    }

    /// @notice A root in the history.
    /// @param root The registry root.
    /// @param activatedAt When it became current.
    struct RootRecord {
        bytes32 root;
        uint40 activatedAt;
    }

    /// @notice `modelId` was registered.
    /// @param modelId The model id (SHA-256 of the compiled model).
    /// @param circuitDigest Digest of its leaf circuit.
    /// @param uri Where it is published.
    event ModelRegistered(bytes32 indexed modelId, bytes32 circuitDigest, string uri);

    /// @notice `modelId` was deregistered (no new tasks; kept in the list).
    /// @param modelId The model id.
    event ModelDeregistered(bytes32 indexed modelId);

    /// @notice The registry root changed from `previousRoot` to `newRoot`.
    /// @param previousRoot The replaced root, accepted until `previousAcceptedUntil`.
    /// @param newRoot The new current root.
    /// @param previousAcceptedUntil End of the previous root's grace window (exclusive).
    event RegistryRootUpdated(bytes32 indexed previousRoot, bytes32 indexed newRoot, uint256 previousAcceptedUntil);

    /// @notice `root` was revoked: rejected from now on, for good.
    /// @param root The revoked root.
    event RegistryRootRevoked(bytes32 indexed root);

    /// @notice The root grace period changed.
    /// @param gracePeriod New grace period in seconds.
    event RootGracePeriodUpdated(uint256 gracePeriod);

    /// @notice The zero model id was given.
    error ModelRegistryZeroModelId();

    /// @notice `modelId` is already registered.
    /// @param modelId The model id.
    error ModelRegistryModelExists(bytes32 modelId);

    /// @notice `modelId` is not an active registered model.
    /// @param modelId The model id.
    error ModelRegistryModelNotActive(bytes32 modelId);

    /// @notice The zero root was given.
    error ModelRegistryZeroRoot();

    /// @notice `root` is already the current root.
    /// @param root The root.
    error ModelRegistryRootUnchanged(bytes32 root);

    /// @notice `root` was revoked and can never be set or accepted again.
    /// @param root The root.
    error ModelRegistryRootRevoked(bytes32 root);

    /// @notice `root` was never a registry root, so there is nothing to revoke.
    /// @param root The root.
    error ModelRegistryUnknownRoot(bytes32 root);

    /// @notice The current root cannot be revoked: replace it first (in the same proposal).
    /// @param root The root.
    error ModelRegistryRevokeCurrentRoot(bytes32 root);

    /// @notice The grace period is above the allowed maximum.
    /// @param gracePeriod The value.
    /// @param maxGracePeriod The maximum.
    error ModelRegistryGracePeriodTooLong(uint256 gracePeriod, uint256 maxGracePeriod);

    /// @notice Registers `modelId` and sets `newRoot` (which must include it) in one call. Owner only.
    /// @dev Emits {ModelRegistered} and {RegistryRootUpdated}.
    /// @param modelId The model id.
    /// @param circuitDigest Digest of its leaf circuit.
    /// @param uri Where it is published.
    /// @param newRoot The new registry root.
    function registerModel(bytes32 modelId, bytes32 circuitDigest, string calldata uri, bytes32 newRoot) external;

    /// @notice Deregisters `modelId` and sets `newRoot` (which must exclude it) in one call. Owner only.
    /// @dev Emits {ModelDeregistered} and {RegistryRootUpdated}.
    /// @param modelId The model id.
    /// @param newRoot The new registry root.
    function deregisterModel(bytes32 modelId, bytes32 newRoot) external;

    /// @notice Sets a new registry root. Owner only.
    /// @dev Emits {RegistryRootUpdated}.
    /// @param newRoot The new registry root.
    function setRegistryRoot(bytes32 newRoot) external;

    /// @notice Revokes a replaced `root` at once (a broken circuit, a leaked key): batches proven
    /// under it are refused from this block on, and it can never be set again. Owner only.
    /// @dev Emits {RegistryRootRevoked}.
    /// @param root A known root other than the current one.
    function revokeRoot(bytes32 root) external;

    /// @notice Sets the grace period of roots replaced from now on (windows already open keep
    /// their end). Owner only.
    /// @dev Emits {RootGracePeriodUpdated}.
    /// @param gracePeriod Seconds (at most 30 days).
    function setRootGracePeriod(uint256 gracePeriod) external;

    /// @notice The current registry root.
    function registryRoot() external view returns (bytes32);

    /// @notice How `root` stands for settlement, and until when it is accepted.
    /// @param root The root to check.
    /// @return status Its status.
    /// @return acceptedUntil For `Grace`/`Expired`: end of its grace window (exclusive); for
    /// `Revoked`: when it was revoked (or its window's end if that came first); else 0.
    function rootStatus(bytes32 root) external view returns (RootStatus status, uint256 acceptedUntil);

    /// @notice Grace period of replaced roots, in seconds.
    function rootGracePeriod() external view returns (uint256);

    /// @notice Number of roots ever set (the history).
    function rootHistoryLength() external view returns (uint256);

    /// @notice The `index`-th root set (0 = first).
    /// @param index Index in the history.
    function rootHistoryAt(uint256 index) external view returns (RootRecord memory);

    /// @notice True if `modelId` is registered and not deregistered.
    /// @param modelId The model id.
    function isModelActive(bytes32 modelId) external view returns (bool);

    /// @notice The registration of `modelId` (zero values if never registered).
    /// @param modelId The model id.
    function model(bytes32 modelId) external view returns (Model memory);

    /// @notice Number of models ever registered.
    function modelCount() external view returns (uint256);

    /// @notice The `index`-th registered model id (registration order).
    /// @param index Index in the list.
    function modelIdAt(uint256 index) external view returns (bytes32);
}
