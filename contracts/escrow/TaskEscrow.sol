// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";

import {IModelRegistry} from "../interfaces/IModelRegistry.sol";
import {IStaking} from "../interfaces/IStaking.sol";
import {ITaskEscrow} from "../interfaces/ITaskEscrow.sol";
import {TaskLeaf} from "../libraries/TaskLeaf.sol";

/// @title TaskEscrow
/// @notice Tasks and their escrowed rewards (see {ITaskEscrow} for the lifecycle).
/// @dev Solvency: this contract's TGRID balance equals the sum of `reward` over Posted and Accepted
/// tasks, plus the pay of Settled tasks not yet claimed, plus accrued protocol fees. A settled
/// task's reward is split once, at settlement, into fee (accrued at once) and pay (sent on the
/// claim); a cancelled or expired task's reward goes back to the poster once. Settling a batch
/// moves no tokens and makes no external call: each provider claims its settled tasks with
/// {claimSettled} (pay sent, collateral released and reputation counted through one Staking call),
/// fees are swept to the treasury by anyone.
///
/// Storage per task is four slots. Slot 0 (`core`) packs everything settlement and claims need
/// besides the binding: status (bits 0-7), deadline (8-47), reward (48-143), collateral (144-239),
/// and from settlement on the protocol fee rate in force then (bits 240-254, basis points) and the
/// claimed flag (bit 255). Settlement reads `core` and `binding` and writes `core` once per task;
/// a claim reads `core` and `provider` and writes `core` once per task. The output commitment is
/// recorded in the {TaskSettled} event (and bound by the batch root of
/// {ISettlement-BatchSettled}) rather than in storage, which would cost ~2.9k gas more per task.
/// The owner is the governance timelock.
contract TaskEscrow is ITaskEscrow, Ownable {
    using SafeERC20 for IERC20;

    /// @dev Task storage; see the contract notes for the `core` layout.
    struct TaskSlots {
        uint256 core;
        bytes32 binding;
        address poster;
        uint96 payment;
        address provider;
    }

    uint256 private constant _BPS = 10_000;
    /// @notice Upper bound of the protocol fee, in basis points.
    uint256 public constant MAX_PROTOCOL_FEE_BPS = 2_000;
    /// @notice Upper bound of the collateral fraction, in basis points (10x the reward).
    uint256 public constant MAX_COLLATERAL_BPS = 100_000;
    /// @notice Upper bound of the maximum deadline delay.
    uint256 public constant MAX_DEADLINE_DELAY = 365 days;

    uint256 private constant _STATUS_MASK = 0xff;
    uint256 private constant _U40 = (1 << 40) - 1;
    uint256 private constant _U96 = (1 << 96) - 1;
    uint256 private constant _DEADLINE_SHIFT = 8;
    uint256 private constant _REWARD_SHIFT = 48;
    uint256 private constant _COLLATERAL_SHIFT = 144;
    uint256 private constant _FEE_BPS_SHIFT = 240;
    uint256 private constant _U15 = (1 << 15) - 1; // fee bps field; MAX_PROTOCOL_FEE_BPS fits
    uint256 private constant _CLAIMED = 1 << 255;
    uint256 private constant _STATUS_ACCEPTED = 2; // uint256(TaskStatus.Accepted)
    uint256 private constant _STATUS_SETTLED = 3; // uint256(TaskStatus.Settled)
    /// @dev keccak256("TaskSettled(bytes32,bytes32)"), the topic of {TaskSettled} (checked in tests).
    uint256 private constant _TASK_SETTLED_TOPIC = 0xbd56e622ca01a1200bc2f48632e6f10b98f70da4c7cd24c56fbb10d94489222e;

    IERC20 private immutable _token;
    IStaking private immutable _staking;
    IModelRegistry private immutable _registry;

    // Read and written once per settled batch.
    address private _settlement;
    uint96 private _accruedFees;

    // Parameters, one slot.
    uint16 private _protocolFeeBps;
    uint32 private _collateralBps;
    uint32 private _minDeadlineDelay;
    uint32 private _maxDeadlineDelay;
    uint96 private _minCollateral;

    address private _treasury;

    mapping(address poster => uint256) private _postNonces;
    mapping(bytes32 taskId => TaskSlots) private _tasks;

    /// @notice Deploys the escrow with its parameters.
    /// @param owner_ Owner of the parameters (the timelock, or the deployer who hands over).
    /// @param token_ Payment token (TGRID).
    /// @param staking_ Staking contract (which must bind this escrow).
    /// @param registry_ ModelRegistry.
    /// @param treasury_ Receives protocol fees.
    /// @param collateralBps_ Collateral fraction of the reward, in basis points.
    /// @param minCollateral_ Minimum collateral.
    /// @param protocolFeeBps_ Protocol fee, in basis points.
    /// @param minDeadlineDelay_ Minimum seconds from posting to the deadline.
    /// @param maxDeadlineDelay_ Maximum seconds from posting to the deadline.
    constructor(
        address owner_,
        IERC20 token_,
        IStaking staking_,
        IModelRegistry registry_,
        address treasury_,
        uint256 collateralBps_,
        uint256 minCollateral_,
        uint256 protocolFeeBps_,
        uint256 minDeadlineDelay_,
        uint256 maxDeadlineDelay_
    ) Ownable(owner_) {
        if (address(token_) == address(0) || address(staking_) == address(0) || address(registry_) == address(0)) {
            revert TaskEscrowZeroAddress();
        }
        _token = token_;
        _staking = staking_;
        _registry = registry_;
        _setTreasury(treasury_);
        _setCollateralParameters(collateralBps_, minCollateral_);
        _setProtocolFee(protocolFeeBps_);
        _setDeadlineBounds(minDeadlineDelay_, maxDeadlineDelay_);
    }

    // ------------------------------------------------------------------ poster / provider

    /// @inheritdoc ITaskEscrow
    function postTask(bytes32 modelId, bytes32 inputCommitment, uint256 payment, uint256 priorityFee, uint256 deadline)
        external
        returns (bytes32 taskId)
    {
        uint256 reward;
        (taskId, reward) = _post(modelId, inputCommitment, payment, priorityFee, deadline);
        _token.safeTransferFrom(msg.sender, address(this), reward);
    }

    /// @inheritdoc ITaskEscrow
    function postTaskWithPermit(
        bytes32 modelId,
        bytes32 inputCommitment,
        uint256 payment,
        uint256 priorityFee,
        uint256 deadline,
        uint256 permitDeadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external returns (bytes32 taskId) {
        uint256 reward;
        (taskId, reward) = _post(modelId, inputCommitment, payment, priorityFee, deadline);
        // A front-run permit has already set the allowance; transferFrom below decides.
        try IERC20Permit(address(_token)).permit(msg.sender, address(this), reward, permitDeadline, v, r, s) {} catch {}
        _token.safeTransferFrom(msg.sender, address(this), reward);
    }

    /// @inheritdoc ITaskEscrow
    function acceptTask(bytes32 taskId) external {
        TaskSlots storage t = _tasks[taskId];
        uint256 core = t.core;
        TaskStatus status = TaskStatus(core & _STATUS_MASK);
        if (status != TaskStatus.Posted) revert TaskEscrowInvalidStatus(taskId, status);
        uint256 deadline = (core >> _DEADLINE_SHIFT) & _U40;
        if (block.timestamp >= deadline) revert TaskEscrowDeadlinePassed(taskId, deadline);
        uint256 collateral = SafeCast.toUint96(_collateralFor((core >> _REWARD_SHIFT) & _U96));

        t.core = (core & ~(_STATUS_MASK | (_U96 << _COLLATERAL_SHIFT))) | uint256(TaskStatus.Accepted)
            | (collateral << _COLLATERAL_SHIFT);
        t.provider = msg.sender;
        t.binding = _bindProvider(t.binding, msg.sender);
        emit TaskAccepted(taskId, msg.sender, collateral);
        _staking.lockCollateral(msg.sender, collateral);
    }

    /// @inheritdoc ITaskEscrow
    function cancelTask(bytes32 taskId) external {
        TaskSlots storage t = _tasks[taskId];
        uint256 core = t.core;
        TaskStatus status = TaskStatus(core & _STATUS_MASK);
        if (status != TaskStatus.Posted) revert TaskEscrowInvalidStatus(taskId, status);
        address poster = t.poster;
        if (msg.sender != poster) revert TaskEscrowNotPoster(taskId, msg.sender);
        t.core = (core & ~_STATUS_MASK) | uint256(TaskStatus.Cancelled);
        uint256 refund = (core >> _REWARD_SHIFT) & _U96;
        emit TaskCancelled(taskId, refund);
        _token.safeTransfer(poster, refund);
    }

    /// @inheritdoc ITaskEscrow
    function expireTask(bytes32 taskId) external {
        TaskSlots storage t = _tasks[taskId];
        uint256 core = t.core;
        TaskStatus status = TaskStatus(core & _STATUS_MASK);
        if (status != TaskStatus.Posted && status != TaskStatus.Accepted) {
            revert TaskEscrowInvalidStatus(taskId, status);
        }
        uint256 deadline = (core >> _DEADLINE_SHIFT) & _U40;
        if (block.timestamp <= deadline) revert TaskEscrowDeadlineNotPassed(taskId, deadline);
        t.core = (core & ~_STATUS_MASK) | uint256(TaskStatus.Expired);
        address poster = t.poster;
        uint256 refund = (core >> _REWARD_SHIFT) & _U96;
        address provider;
        uint256 slashedToPoster;
        if (status == TaskStatus.Accepted) {
            provider = t.provider;
            slashedToPoster = _staking.slash(provider, (core >> _COLLATERAL_SHIFT) & _U96, poster);
        }
        emit TaskExpired(taskId, provider, refund, slashedToPoster);
        _token.safeTransfer(poster, refund);
    }

    // ------------------------------------------------------------------ settlement

    /// @inheritdoc ITaskEscrow
    /// @dev The per-leaf checks and effects are one assembly block (the settlement hot path); the
    /// Solidity they implement is spelled out in its comments, and every failure is re-checked and
    /// reported with its custom error by {_revertLeaf}.
    function settleTasks(TaskLeaf[] calldata leaves) external {
        if (msg.sender != _settlement) revert TaskEscrowUnauthorizedSettlement(msg.sender);
        uint256 feeBps = _protocolFeeBps;
        // Or-ed into each settled task's `core`, whose bits 240-255 are zero until now: status
        // Settled and the fee rate that fixes the task's split, so a later fee change cannot alter it.
        uint256 settledBits = _STATUS_SETTLED | (feeBps << _FEE_BPS_SHIFT);
        uint256 totalReward;
        uint256 totalFees;
        for (uint256 i = 0; i < leaves.length; ++i) {
            bool ok;
            assembly ("memory-safe") {
                let leaf := add(leaves.offset, mul(i, 0xa0))
                let taskId := calldataload(leaf)
                let provider := calldataload(add(leaf, 0x80))
                // TaskSlots storage t = _tasks[taskId]; uint256 core = t.core;
                mstore(0x00, taskId)
                mstore(0x20, _tasks.slot)
                let slot := keccak256(0x00, 0x40)
                let core := sload(slot)
                // expected = keccak256(abi.encode(keccak256(abi.encode(modelId, input)), provider))
                mstore(0x00, calldataload(add(leaf, 0x20)))
                mstore(0x20, calldataload(add(leaf, 0x40)))
                mstore(0x00, keccak256(0x00, 0x40))
                mstore(0x20, provider)
                // ok = provider is an address && status == Accepted && now <= deadline
                //      && t.binding == expected
                ok := and(iszero(shr(160, provider)), eq(and(core, _STATUS_MASK), _STATUS_ACCEPTED))
                ok := and(ok, iszero(gt(timestamp(), and(shr(_DEADLINE_SHIFT, core), _U40))))
                if ok { ok := eq(sload(add(slot, 1)), keccak256(0x00, 0x40)) }
                if ok {
                    // t.core = (core & ~_STATUS_MASK) | settledBits;
                    // emit TaskSettled(taskId, outputCommitment);
                    sstore(slot, or(and(core, not(_STATUS_MASK)), settledBits))
                    mstore(0x00, calldataload(add(leaf, 0x60)))
                    log2(0x00, 0x20, _TASK_SETTLED_TOPIC, taskId)
                    // reward = (core >> _REWARD_SHIFT) & _U96; totalReward += reward;
                    // totalFees += reward * feeBps / _BPS;  (the task's fee, see {_payOf})
                    // Each reward is below 2^96 and the sums are bounded by the token supply
                    // (< 2^96), so nothing here can overflow.
                    let reward := and(shr(_REWARD_SHIFT, core), _U96)
                    totalReward := add(totalReward, reward)
                    totalFees := add(totalFees, div(mul(reward, feeBps), _BPS))
                }
            }
            if (!ok) _revertLeaf(leaves[i]);
        }
        // forge-lint: disable-next-line(unsafe-typecast) -- accrued fees are part of the escrow balance, below the token supply (< 2^96)
        _accruedFees += uint96(totalFees);
        emit BatchPaid(leaves.length, totalReward - totalFees, totalFees);
    }

    /// @inheritdoc ITaskEscrow
    function claimSettled(bytes32[] calldata taskIds) external returns (uint256 paid, uint256 collateralReleased) {
        uint256 n = taskIds.length;
        if (n == 0) revert TaskEscrowEmptyClaim();
        for (uint256 i = 0; i < n; ++i) {
            bytes32 taskId = taskIds[i];
            TaskSlots storage t = _tasks[taskId];
            uint256 core = t.core;
            uint256 status = core & _STATUS_MASK;
            if (status != _STATUS_SETTLED) revert TaskEscrowTaskNotSettled(taskId, TaskStatus(status));
            // A repeated id in `taskIds` fails here: its first occurrence has set the flag below.
            if (core & _CLAIMED != 0) revert TaskEscrowTaskAlreadyClaimed(taskId);
            if (t.provider != msg.sender) revert TaskEscrowNotProvider(taskId, msg.sender);
            t.core = core | _CLAIMED;
            uint256 pay = _payOf(core);
            // Pay and collateral are below 2^96 each, their sums below the token supply (< 2^96).
            unchecked {
                paid += pay;
                collateralReleased += (core >> _COLLATERAL_SHIFT) & _U96;
            }
            emit TaskClaimed(taskId, msg.sender, pay);
        }
        emit SettlementClaimed(msg.sender, n, paid, collateralReleased);
        // Interactions last: every claimed flag is already written. Staking is ours; TGRID has no
        // transfer hooks.
        _staking.releaseSettledCollateral(msg.sender, collateralReleased, n);
        _token.safeTransfer(msg.sender, paid);
    }

    /// @inheritdoc ITaskEscrow
    function sweepFees() external returns (uint256 amount) {
        amount = _accruedFees;
        _accruedFees = 0;
        address treasury_ = _treasury;
        emit FeesSwept(treasury_, amount);
        if (amount != 0) _token.safeTransfer(treasury_, amount);
    }

    // ------------------------------------------------------------------ governance

    /// @inheritdoc ITaskEscrow
    function bindSettlement(address settlement_) external onlyOwner {
        if (_settlement != address(0)) revert TaskEscrowSettlementAlreadyBound(_settlement);
        if (settlement_ == address(0)) revert TaskEscrowZeroAddress();
        _settlement = settlement_;
        emit SettlementBound(settlement_);
    }

    /// @inheritdoc ITaskEscrow
    function setCollateralParameters(uint256 collateralBps_, uint256 minCollateral_) external onlyOwner {
        _setCollateralParameters(collateralBps_, minCollateral_);
    }

    /// @inheritdoc ITaskEscrow
    function setProtocolFee(uint256 protocolFeeBps_) external onlyOwner {
        _setProtocolFee(protocolFeeBps_);
    }

    /// @inheritdoc ITaskEscrow
    function setDeadlineBounds(uint256 minDelay, uint256 maxDelay) external onlyOwner {
        _setDeadlineBounds(minDelay, maxDelay);
    }

    /// @inheritdoc ITaskEscrow
    function setTreasury(address treasury_) external onlyOwner {
        _setTreasury(treasury_);
    }

    // ------------------------------------------------------------------ views

    /// @inheritdoc ITaskEscrow
    function task(bytes32 taskId) external view returns (Task memory) {
        TaskSlots storage t = _tasks[taskId];
        uint256 core = t.core;
        return Task({
            status: TaskStatus(core & _STATUS_MASK),
            // forge-lint: disable-next-line(unsafe-typecast) -- masked to 40 bits
            deadline: uint40((core >> _DEADLINE_SHIFT) & _U40),
            // forge-lint: disable-next-line(unsafe-typecast) -- masked to 96 bits
            reward: uint96((core >> _REWARD_SHIFT) & _U96),
            // forge-lint: disable-next-line(unsafe-typecast) -- masked to 96 bits
            collateral: uint96((core >> _COLLATERAL_SHIFT) & _U96),
            poster: t.poster,
            payment: t.payment,
            provider: t.provider,
            binding: t.binding
        });
    }

    /// @inheritdoc ITaskEscrow
    function claimable(bytes32 taskId) external view returns (bool isClaimable, uint256 pay, uint256 collateral) {
        uint256 core = _tasks[taskId].core;
        if (core & _STATUS_MASK != _STATUS_SETTLED || core & _CLAIMED != 0) return (false, 0, 0);
        return (true, _payOf(core), (core >> _COLLATERAL_SHIFT) & _U96);
    }

    /// @inheritdoc ITaskEscrow
    function postNonce(address poster) external view returns (uint256) {
        return _postNonces[poster];
    }

    /// @inheritdoc ITaskEscrow
    function collateralFor(uint256 reward) external view returns (uint256) {
        return _collateralFor(reward);
    }

    /// @inheritdoc ITaskEscrow
    function token() external view returns (address) {
        return address(_token);
    }

    /// @inheritdoc ITaskEscrow
    function staking() external view returns (address) {
        return address(_staking);
    }

    /// @inheritdoc ITaskEscrow
    function registry() external view returns (address) {
        return address(_registry);
    }

    /// @inheritdoc ITaskEscrow
    function settlement() external view returns (address) {
        return _settlement;
    }

    /// @inheritdoc ITaskEscrow
    function collateralBps() external view returns (uint256) {
        return _collateralBps;
    }

    /// @inheritdoc ITaskEscrow
    function minCollateral() external view returns (uint256) {
        return _minCollateral;
    }

    /// @inheritdoc ITaskEscrow
    function protocolFeeBps() external view returns (uint256) {
        return _protocolFeeBps;
    }

    /// @inheritdoc ITaskEscrow
    function deadlineBounds() external view returns (uint256 minDelay, uint256 maxDelay) {
        return (_minDeadlineDelay, _maxDeadlineDelay);
    }

    /// @inheritdoc ITaskEscrow
    function treasury() external view returns (address) {
        return _treasury;
    }

    /// @inheritdoc ITaskEscrow
    function accruedFees() external view returns (uint256) {
        return _accruedFees;
    }

    // ------------------------------------------------------------------ internal

    function _post(bytes32 modelId, bytes32 inputCommitment, uint256 payment, uint256 priorityFee, uint256 deadline)
        private
        returns (bytes32 taskId, uint256 reward)
    {
        if (payment == 0) revert TaskEscrowZeroPayment();
        if (payment > _U96 || priorityFee > _U96 || payment + priorityFee > _U96) {
            revert TaskEscrowRewardTooLarge(payment, priorityFee);
        }
        reward = payment + priorityFee;
        {
            uint256 earliest = block.timestamp + _minDeadlineDelay;
            uint256 latest = block.timestamp + _maxDeadlineDelay;
            if (deadline < earliest || deadline > latest) {
                revert TaskEscrowDeadlineOutOfBounds(deadline, earliest, latest);
            }
        }
        if (!_registry.isModelActive(modelId)) revert TaskEscrowModelNotRegistered(modelId);

        uint256 nonce = _postNonces[msg.sender]++;
        taskId = keccak256(abi.encode(block.chainid, address(this), msg.sender, nonce, blockhash(block.number - 1)));
        TaskSlots storage t = _tasks[taskId];
        if (t.core != 0) revert TaskEscrowTaskExists(taskId);
        t.core = uint256(TaskStatus.Posted) | (deadline << _DEADLINE_SHIFT) | (reward << _REWARD_SHIFT);
        t.binding = _bindInput(modelId, inputCommitment);
        t.poster = msg.sender;
        // forge-lint: disable-next-line(unsafe-typecast) -- payment <= reward <= 2^96 - 1, checked above
        t.payment = uint96(payment);
        emit TaskPosted(taskId, msg.sender, modelId, inputCommitment, payment, priorityFee, deadline);
    }

    /// @dev Reverts with the custom error explaining why `leaf` cannot be settled (cold path of
    /// {settleTasks}; re-reads the task with plain Solidity).
    function _revertLeaf(TaskLeaf calldata leaf) private view {
        bytes32 taskId = leaf.taskId;
        address provider = leaf.provider; // reverts if the upper 12 bytes are not zero
        TaskSlots storage t = _tasks[taskId];
        uint256 core = t.core;
        if (core & _STATUS_MASK != uint256(TaskStatus.Accepted)) _revertNotAccepted(taskId, core);
        uint256 deadline = (core >> _DEADLINE_SHIFT) & _U40;
        if (block.timestamp > deadline) revert TaskEscrowDeadlinePassed(taskId, deadline);
        if (t.binding != _bindProvider(_bindInput(leaf.modelId, leaf.inputCommitment), provider)) {
            revert TaskEscrowLeafMismatch(taskId);
        }
        revert TaskEscrowLeafMismatch(taskId); // unreachable: the leaf would have been accepted
    }

    /// @dev The pay of a settled task from its `core`: reward - floor(reward * feeBps / 10,000) with
    /// the fee rate recorded at settlement, where {settleTasks} accrued exactly that fee, so
    /// fee + pay == reward.
    function _payOf(uint256 core) private pure returns (uint256) {
        uint256 reward = (core >> _REWARD_SHIFT) & _U96;
        return reward - reward * ((core >> _FEE_BPS_SHIFT) & _U15) / _BPS;
    }

    function _collateralFor(uint256 reward) private view returns (uint256) {
        uint256 byFraction = reward * _collateralBps / _BPS;
        uint256 floor = _minCollateral;
        return byFraction > floor ? byFraction : floor;
    }

    function _revertNotAccepted(bytes32 taskId, uint256 core) private pure {
        TaskStatus status = TaskStatus(core & _STATUS_MASK);
        if (status == TaskStatus.Settled) revert TaskEscrowTaskAlreadySettled(taskId);
        revert TaskEscrowTaskNotAccepted(taskId, status);
    }

    /// @dev keccak256(abi.encode(modelId, inputCommitment)).
    function _bindInput(bytes32 modelId, bytes32 inputCommitment) private pure returns (bytes32 h) {
        assembly ("memory-safe") {
            mstore(0x00, modelId)
            mstore(0x20, inputCommitment)
            h := keccak256(0x00, 0x40)
        }
    }

    /// @dev keccak256(abi.encode(inputBinding, provider)).
    function _bindProvider(bytes32 inputBinding, address provider) private pure returns (bytes32 h) {
        assembly ("memory-safe") {
            mstore(0x00, inputBinding)
            mstore(0x20, and(provider, 0xffffffffffffffffffffffffffffffffffffffff))
            h := keccak256(0x00, 0x40)
        }
    }

    function _setCollateralParameters(uint256 collateralBps_, uint256 minCollateral_) private {
        if (collateralBps_ > MAX_COLLATERAL_BPS) revert TaskEscrowInvalidBps(collateralBps_, MAX_COLLATERAL_BPS);
        if (minCollateral_ > _U96) revert TaskEscrowMinCollateralTooLarge(minCollateral_);
        // forge-lint: disable-next-line(unsafe-typecast) -- collateralBps_ <= MAX_COLLATERAL_BPS, minCollateral_ <= 2^96 - 1, checked above
        _collateralBps = uint32(collateralBps_);
        // forge-lint: disable-next-line(unsafe-typecast) -- checked above
        _minCollateral = uint96(minCollateral_);
        emit CollateralParametersUpdated(collateralBps_, minCollateral_);
    }

    function _setProtocolFee(uint256 protocolFeeBps_) private {
        if (protocolFeeBps_ > MAX_PROTOCOL_FEE_BPS) revert TaskEscrowInvalidBps(protocolFeeBps_, MAX_PROTOCOL_FEE_BPS);
        // forge-lint: disable-next-line(unsafe-typecast) -- protocolFeeBps_ <= MAX_PROTOCOL_FEE_BPS, checked above
        _protocolFeeBps = uint16(protocolFeeBps_);
        emit ProtocolFeeUpdated(protocolFeeBps_);
    }

    function _setDeadlineBounds(uint256 minDelay, uint256 maxDelay) private {
        if (minDelay == 0 || minDelay > maxDelay || maxDelay > MAX_DEADLINE_DELAY) {
            revert TaskEscrowInvalidDeadlineBounds(minDelay, maxDelay);
        }
        // forge-lint: disable-next-line(unsafe-typecast) -- minDelay <= maxDelay <= 365 days, checked above
        _minDeadlineDelay = uint32(minDelay);
        // forge-lint: disable-next-line(unsafe-typecast) -- checked above
        _maxDeadlineDelay = uint32(maxDelay);
        emit DeadlineBoundsUpdated(minDelay, maxDelay);
    }

    function _setTreasury(address treasury_) private {
        if (treasury_ == address(0)) revert TaskEscrowZeroAddress();
        _treasury = treasury_;
        emit TreasuryUpdated(treasury_);
    }
}
