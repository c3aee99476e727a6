// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

import {IModelRegistry} from "../interfaces/IModelRegistry.sol";

/// @title ModelRegistry
/// @notice The registry root of allowed circuits, its history, and the registered models.
/// @dev Grace rule (see {IModelRegistry}): the current root is accepted; a replaced root stays
/// accepted until `replacedAt + rootGracePeriod` (exclusive), the end fixed at the replacement
/// (so raising the grace period later cannot revive an expired root); everything else is
/// rejected. Governance revokes a replaced root at once with {revokeRoot}; a revoked root is
/// never accepted or set again. The owner is the governance timelock.
contract ModelRegistry is IModelRegistry, Ownable {
    /// @dev Lifetime of a root.
    struct RootInfo {
        bool known;
        bool revoked;
        uint40 activatedAt;
        uint40 retiredAt;
        // End of the grace window (exclusive), fixed when the root is replaced or revoked.
        uint40 acceptedUntil;
    }

    /// @notice Upper bound of the root grace period.
    uint256 public constant MAX_ROOT_GRACE_PERIOD = 30 days;

    bytes32 private _currentRoot;
    uint40 private _rootGracePeriod;
    mapping(bytes32 root => RootInfo) private _rootInfo;
    RootRecord[] private _history;

    mapping(bytes32 modelId => Model) private _models;
    bytes32[] private _modelIds;

    /// @notice Deploys the registry.
    /// @param owner_ Owner (the governance timelock, or the deployer who hands over).
    /// @param initialRoot First registry root, or zero for none yet.
    /// @param gracePeriod Grace period of replaced roots, in seconds.
    constructor(address owner_, bytes32 initialRoot, uint256 gracePeriod) Ownable(owner_) {
        _setRootGracePeriod(gracePeriod);
        if (initialRoot != bytes32(0)) _setRoot(initialRoot);
    }

    // ------------------------------------------------------------------ governance

    /// @inheritdoc IModelRegistry
    function registerModel(bytes32 modelId, bytes32 circuitDigest, string calldata uri, bytes32 newRoot)
        external
        onlyOwner
    {
        if (modelId == bytes32(0)) revert ModelRegistryZeroModelId();
        Model storage m = _models[modelId];
        if (m.registeredAt != 0 || m.active) revert ModelRegistryModelExists(modelId);
        m.circuitDigest = circuitDigest;
        m.registeredAt = uint40(block.timestamp);
        m.active = true;
        m.uri = uri;
        _modelIds.push(modelId);
        emit ModelRegistered(modelId, circuitDigest, uri);
        _setRoot(newRoot);
    }

    /// @inheritdoc IModelRegistry
    function deregisterModel(bytes32 modelId, bytes32 newRoot) external onlyOwner {
        Model storage m = _models[modelId];
        if (!m.active) revert ModelRegistryModelNotActive(modelId);
        m.active = false;
        m.deregisteredAt = uint40(block.timestamp);
        emit ModelDeregistered(modelId);
        _setRoot(newRoot);
    }

    /// @inheritdoc IModelRegistry
    function setRegistryRoot(bytes32 newRoot) external onlyOwner {
        _setRoot(newRoot);
    }

    /// @inheritdoc IModelRegistry
    function revokeRoot(bytes32 root) external onlyOwner {
        RootInfo storage info = _rootInfo[root];
        if (!info.known) revert ModelRegistryUnknownRoot(root);
        if (root == _currentRoot) revert ModelRegistryRevokeCurrentRoot(root);
        if (info.revoked) revert ModelRegistryRootRevoked(root);
        info.revoked = true;
        if (info.acceptedUntil > block.timestamp) info.acceptedUntil = uint40(block.timestamp);
        emit RegistryRootRevoked(root);
    }

    /// @inheritdoc IModelRegistry
    function setRootGracePeriod(uint256 gracePeriod) external onlyOwner {
        _setRootGracePeriod(gracePeriod);
    }

    // ------------------------------------------------------------------ views

    /// @inheritdoc IModelRegistry
    function registryRoot() external view returns (bytes32) {
        return _currentRoot;
    }

    /// @inheritdoc IModelRegistry
    function rootStatus(bytes32 root) external view returns (RootStatus status, uint256 acceptedUntil) {
        if (root == bytes32(0)) return (RootStatus.Unknown, 0);
        if (root == _currentRoot) return (RootStatus.Current, 0);
        RootInfo storage info = _rootInfo[root];
        if (!info.known) return (RootStatus.Unknown, 0);
        acceptedUntil = info.acceptedUntil;
        if (info.revoked) status = RootStatus.Revoked;
        else status = block.timestamp < acceptedUntil ? RootStatus.Grace : RootStatus.Expired;
    }

    /// @inheritdoc IModelRegistry
    function rootGracePeriod() external view returns (uint256) {
        return _rootGracePeriod;
    }

    /// @inheritdoc IModelRegistry
    function rootHistoryLength() external view returns (uint256) {
        return _history.length;
    }

    /// @inheritdoc IModelRegistry
    function rootHistoryAt(uint256 index) external view returns (RootRecord memory) {
        return _history[index];
    }

    /// @inheritdoc IModelRegistry
    function isModelActive(bytes32 modelId) external view returns (bool) {
        return _models[modelId].active;
    }

    /// @inheritdoc IModelRegistry
    function model(bytes32 modelId) external view returns (Model memory) {
        return _models[modelId];
    }

    /// @inheritdoc IModelRegistry
    function modelCount() external view returns (uint256) {
        return _modelIds.length;
    }

    /// @inheritdoc IModelRegistry
    function modelIdAt(uint256 index) external view returns (bytes32) {
        return _modelIds[index];
    }

    // ------------------------------------------------------------------ internal

    function _setRoot(bytes32 newRoot) private {
        if (newRoot == bytes32(0)) revert ModelRegistryZeroRoot();
        bytes32 previous = _currentRoot;
        if (newRoot == previous) revert ModelRegistryRootUnchanged(newRoot);
        if (_rootInfo[newRoot].revoked) revert ModelRegistryRootRevoked(newRoot);
        uint256 previousAcceptedUntil;
        if (previous != bytes32(0)) {
            previousAcceptedUntil = block.timestamp + _rootGracePeriod;
            RootInfo storage retired = _rootInfo[previous];
            retired.retiredAt = uint40(block.timestamp);
            // forge-lint: disable-next-line(unsafe-typecast) -- a timestamp plus at most 30 days
            retired.acceptedUntil = uint40(previousAcceptedUntil);
        }
        _rootInfo[newRoot] = RootInfo({
            known: true, revoked: false, activatedAt: uint40(block.timestamp), retiredAt: 0, acceptedUntil: 0
        });
        _currentRoot = newRoot;
        _history.push(RootRecord({root: newRoot, activatedAt: uint40(block.timestamp)}));
        emit RegistryRootUpdated(previous, newRoot, previousAcceptedUntil);
    }

    function _setRootGracePeriod(uint256 gracePeriod) private {
        if (gracePeriod > MAX_ROOT_GRACE_PERIOD) {
            revert ModelRegistryGracePeriodTooLong(gracePeriod, MAX_ROOT_GRACE_PERIOD);
        }
        // forge-lint: disable-next-line(unsafe-typecast) -- gracePeriod <= MAX_ROOT_GRACE_PERIOD, checked above
        _rootGracePeriod = uint40(gracePeriod);
        emit RootGracePeriodUpdated(gracePeriod);
    }
}
