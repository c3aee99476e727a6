// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";

import {IGroth16Verifier} from "../interfaces/IGroth16Verifier.sol";
import {IModelRegistry} from "../interfaces/IModelRegistry.sol";
import {ISettlement} from "../interfaces/ISettlement.sol";
import {ITaskEscrow} from "../interfaces/ITaskEscrow.sol";
import {TaskLeaf, TaskLeafLib} from "../libraries/TaskLeaf.sol";

/// @title Settlement
/// @notice Verifies one Groth16 proof per batch and settles all of the batch's tasks, or nothing.
/// @dev `submitBatch` takes the registry root as its own argument (rather than inside the proof
/// struct) so the sequencer states which registry the batch was proven against and the contract
/// can reject it with a precise error before verifying. The only external calls are to the
/// ModelRegistry (view), the verifier (view, so a STATICCALL) and the TaskEscrow; `submitBatch` is
/// also guarded against reentrancy. The owner is the governance timelock.
contract Settlement is ISettlement, Ownable, ReentrancyGuardTransient {
    /// @notice Upper bound of the maximum batch size.
    uint256 public constant MAX_BATCH_SIZE_LIMIT = 4096;

    ITaskEscrow private immutable _escrow;
    IModelRegistry private immutable _registry;

    IGroth16Verifier private _verifier;
    uint32 private _maxBatchSize;

    mapping(address account => bool) private _sequencers;

    /// @notice Deploys the settlement contract.
    /// @param owner_ Owner (the timelock, or the deployer who hands over).
    /// @param escrow_ TaskEscrow (which must bind this contract).
    /// @param registry_ ModelRegistry.
    /// @param verifier_ Groth16 verifier.
    /// @param maxBatchSize_ Maximum tasks per batch.
    constructor(
        address owner_,
        ITaskEscrow escrow_,
        IModelRegistry registry_,
        IGroth16Verifier verifier_,
        uint256 maxBatchSize_
    ) Ownable(owner_) {
        if (address(escrow_) == address(0) || address(registry_) == address(0)) {
            revert SettlementZeroAddress();
        }
        _escrow = escrow_;
        _registry = registry_;
        _setVerifier(address(verifier_));
        _setMaxBatchSize(maxBatchSize_);
    }

    /// @inheritdoc ISettlement
    function submitBatch(TaskLeaf[] calldata leaves, bytes32 registryRoot, uint256[8] calldata proof)
        external
        nonReentrant
        returns (bytes32 batchRoot, uint256 publicInput)
    {
        if (!_sequencers[msg.sender]) revert SettlementNotSequencer(msg.sender);
        uint256 n = leaves.length;
        if (n == 0) revert SettlementEmptyBatch();
        IGroth16Verifier verifier_ = _verifier;
        uint256 maxSize = _maxBatchSize;
        if (n > maxSize) revert SettlementBatchTooLarge(n, maxSize);
        _checkRegistryRoot(registryRoot);

        batchRoot = TaskLeafLib.batchRoot(leaves);
        publicInput = TaskLeafLib.publicInput(batchRoot, registryRoot, n);
        if (!_verify(verifier_, proof, publicInput)) revert SettlementInvalidProof(publicInput);

        _settleTasks(leaves);
        emit BatchSettled(batchRoot, registryRoot, msg.sender, n, publicInput);
    }

    /// @inheritdoc ISettlement
    function setSequencer(address account, bool allowed) external onlyOwner {
        if (account == address(0)) revert SettlementZeroAddress();
        _sequencers[account] = allowed;
        emit SequencerUpdated(account, allowed);
    }

    /// @inheritdoc ISettlement
    function setVerifier(address verifier_) external onlyOwner {
        _setVerifier(verifier_);
    }

    /// @inheritdoc ISettlement
    function setMaxBatchSize(uint256 maxBatchSize_) external onlyOwner {
        _setMaxBatchSize(maxBatchSize_);
    }

    /// @inheritdoc ISettlement
    function computePublicInput(TaskLeaf[] calldata leaves, bytes32 registryRoot)
        external
        view
        returns (bytes32 batchRoot, uint256 publicInput)
    {
        batchRoot = TaskLeafLib.batchRoot(leaves);
        publicInput = TaskLeafLib.publicInput(batchRoot, registryRoot, leaves.length);
    }

    /// @inheritdoc ISettlement
    function isSequencer(address account) external view returns (bool) {
        return _sequencers[account];
    }

    /// @inheritdoc ISettlement
    function verifier() external view returns (address) {
        return address(_verifier);
    }

    /// @inheritdoc ISettlement
    function maxBatchSize() external view returns (uint256) {
        return _maxBatchSize;
    }

    /// @inheritdoc ISettlement
    function escrow() external view returns (address) {
        return address(_escrow);
    }

    /// @inheritdoc ISettlement
    function registry() external view returns (address) {
        return address(_registry);
    }

    // ------------------------------------------------------------------ internal

    function _checkRegistryRoot(bytes32 registryRoot) private view {
        (IModelRegistry.RootStatus status, uint256 acceptedUntil) = _registry.rootStatus(registryRoot);
        if (status == IModelRegistry.RootStatus.Current || status == IModelRegistry.RootStatus.Grace) return;
        if (status == IModelRegistry.RootStatus.Expired) {
            revert SettlementRegistryRootExpired(registryRoot, acceptedUntil);
        }
        revert SettlementUnknownRegistryRoot(registryRoot, _registry.registryRoot());
    }

    /// @dev `_escrow.settleTasks(leaves)`, forwarding the leaves' calldata with one copy instead of a
    /// per-element re-encoding (the leaves are static 160-byte structs, already validated by
    /// {TaskLeafLib-batchRoot}); the escrow's revert data is bubbled up unchanged.
    function _settleTasks(TaskLeaf[] calldata leaves) private {
        address escrow_ = address(_escrow);
        bytes4 selector = ITaskEscrow.settleTasks.selector;
        assembly ("memory-safe") {
            let m := mload(0x40)
            let size := mul(leaves.length, 0xa0)
            mstore(m, selector)
            mstore(add(m, 0x04), 0x20)
            mstore(add(m, 0x24), leaves.length)
            calldatacopy(add(m, 0x44), leaves.offset, size)
            if iszero(call(gas(), escrow_, 0, m, add(0x44, size), 0, 0)) {
                returndatacopy(m, 0, returndatasize())
                revert(m, returndatasize())
            }
        }
    }

    /// @dev A verifier that reverts counts as a rejection.
    function _verify(IGroth16Verifier verifier_, uint256[8] calldata proof, uint256 publicInput)
        private
        view
        returns (bool)
    {
        try verifier_.verifyProof(proof, publicInput) returns (bool ok) {
            return ok;
        } catch {
            return false;
        }
    }

    function _setVerifier(address verifier_) private {
        if (verifier_.code.length == 0) revert SettlementZeroAddress();
        _verifier = IGroth16Verifier(verifier_);
        emit VerifierUpdated(verifier_);
    }

    function _setMaxBatchSize(uint256 maxBatchSize_) private {
        if (maxBatchSize_ == 0 || maxBatchSize_ > MAX_BATCH_SIZE_LIMIT) {
            revert SettlementInvalidMaxBatchSize(maxBatchSize_);
        }
        // forge-lint: disable-next-line(unsafe-typecast) -- maxBatchSize_ <= MAX_BATCH_SIZE_LIMIT, checked above
        _maxBatchSize = uint32(maxBatchSize_);
        emit MaxBatchSizeUpdated(maxBatchSize_);
    }
}
