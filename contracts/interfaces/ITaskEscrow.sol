// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {TaskLeaf} from "../libraries/TaskLeaf.sol";

/// @title ITaskEscrow
/// @notice Tasks and their payments: post (pay by approve or permit), accept (lock provider
/// collateral), cancel before acceptance, expire after the deadline (refund, slash), settle
/// (called by Settlement for a proven batch) and claim (the provider collects the pay of its settled
/// tasks and gets their collateral back). Parameters are owned by the governance timelock.
/// @dev Lifecycle: None -> Posted -> Accepted -> Settled | Expired; Posted -> Cancelled | Expired.
/// A task is settleable while `block.timestamp <= deadline` and expirable once
/// `block.timestamp > deadline`. Settled is terminal; a Settled task is claimed once by its provider
/// with {claimSettled}, which does not change its status (see {claimable}).
interface ITaskEscrow {
    /// @notice Task states.
    enum TaskStatus {
        None,
        Posted,
        Accepted,
        Settled,
        Cancelled,
        Expired
    }

    /// @notice A task as stored.
    /// @param status Its state.
    /// @param deadline Last second at which it can be settled.
    /// @param reward Tokens escrowed: payment plus priority fee; once settled, paid (minus the
    /// protocol fee fixed at settlement) to the provider when it claims ({claimSettled}); refunded to
    /// the poster on cancel or expiry.
    /// @param collateral Provider stake locked on acceptance (0 before); stays locked after
    /// settlement until the provider claims the task.
    /// @param poster The account that posted and paid.
    /// @param payment The payment part of `reward` (`reward - payment` is the priority fee).
    /// @param provider The provider that accepted it (zero before).
    /// @param binding While Posted: `keccak256(abi.encode(modelId, inputCommitment))`; from
    /// acceptance: `keccak256(abi.encode(thatHash, provider))`. Settlement recomputes it from the
    /// leaf. Model id and input commitment themselves are in the {TaskPosted} event.
    struct Task {
        TaskStatus status;
        uint40 deadline;
        uint96 reward;
        uint96 collateral;
        address poster;
        uint96 payment;
        address provider;
        bytes32 binding;
    }

    // ------------------------------------------------------------------ events

    /// @notice A task was posted and its reward escrowed.
    /// @param taskId The task id (docs/encodings.md).
    /// @param poster The poster.
    /// @param modelId The model to run.
    /// @param inputCommitment Commitment to the input tensor.
    /// @param payment Payment offered.
    /// @param priorityFee Extra tip for the provider, paid with the payment.
    /// @param deadline Last second at which the task can be settled.
    event TaskPosted(
        bytes32 indexed taskId,
        address indexed poster,
        bytes32 indexed modelId,
        bytes32 inputCommitment,
        uint256 payment,
        uint256 priorityFee,
        uint256 deadline
    );

    /// @notice `provider` accepted the task, locking `collateral` of its stake.
    /// @param taskId The task id.
    /// @param provider The provider.
    /// @param collateral Collateral locked.
    event TaskAccepted(bytes32 indexed taskId, address indexed provider, uint256 collateral);

    /// @notice The poster cancelled the task before acceptance; `refund` went back to it.
    /// @param taskId The task id.
    /// @param refund Tokens refunded.
    event TaskCancelled(bytes32 indexed taskId, uint256 refund);

    /// @notice The task passed its deadline unsettled: `refund` went back to the poster and, if it
    /// was accepted, `provider` was slashed (see {IStaking-Slashed}).
    /// @param taskId The task id.
    /// @param provider The slashed provider, or zero if the task was never accepted.
    /// @param refund Reward refunded to the poster.
    /// @param slashedToPoster Part of the slash paid to the poster.
    event TaskExpired(bytes32 indexed taskId, address indexed provider, uint256 refund, uint256 slashedToPoster);

    /// @notice The task was settled by a proven batch with this output commitment. Its provider
    /// (see {TaskAccepted}) can now claim the reward minus the protocol fee, both fixed at this
    /// point ({claimSettled}, {claimable}).
    /// @param taskId The task id.
    /// @param outputCommitment Commitment to the output tensor.
    event TaskSettled(bytes32 indexed taskId, bytes32 outputCommitment);

    /// @notice Payouts of one settled batch, fixed at settlement (no token moves until claimed or
    /// swept).
    /// @param tasks Tasks settled.
    /// @param providerPay Summed pay of the batch's tasks (rewards minus fees), held here until each
    /// provider claims its tasks.
    /// @param protocolFees Summed protocol fees of the batch's tasks, added to the accrued fees.
    event BatchPaid(uint256 tasks, uint256 providerPay, uint256 protocolFees);

    /// @notice `provider` claimed the settled task `taskId` and was paid `pay` for it.
    /// @param taskId The task id.
    /// @param provider The provider that accepted and settled it.
    /// @param pay The task's reward minus the protocol fee fixed at settlement.
    event TaskClaimed(bytes32 indexed taskId, address indexed provider, uint256 pay);

    /// @notice One {claimSettled} call: `provider` claimed `tasks` settled tasks (one {TaskClaimed}
    /// each), was sent `paid` tokens and got `collateralReleased` of its stake unlocked
    /// ({IStaking-SettledCollateralReleased}).
    /// @param provider The provider.
    /// @param tasks Number of tasks claimed.
    /// @param paid Tokens sent to the provider (sum of the tasks' pay).
    /// @param collateralReleased Collateral unlocked in Staking (sum of the tasks' collateral).
    event SettlementClaimed(address indexed provider, uint256 tasks, uint256 paid, uint256 collateralReleased);

    /// @notice Accrued protocol fees were sent to the treasury.
    /// @param treasury The treasury.
    /// @param amount Tokens sent.
    event FeesSwept(address indexed treasury, uint256 amount);

    /// @notice The Settlement contract allowed to settle was bound (once).
    /// @param settlement The Settlement.
    event SettlementBound(address indexed settlement);

    /// @notice The collateral rule changed: collateral = max(minCollateral, reward * collateralBps / 10,000).
    /// @param collateralBps Fraction of the reward, in basis points.
    /// @param minCollateral Minimum collateral.
    event CollateralParametersUpdated(uint256 collateralBps, uint256 minCollateral);

    /// @notice The protocol fee changed.
    /// @param protocolFeeBps Fraction of each reward sent to the treasury, in basis points.
    event ProtocolFeeUpdated(uint256 protocolFeeBps);

    /// @notice The deadline bounds changed: a new task's deadline must lie in
    /// [now + minDelay, now + maxDelay].
    /// @param minDelay Minimum seconds from posting.
    /// @param maxDelay Maximum seconds from posting.
    event DeadlineBoundsUpdated(uint256 minDelay, uint256 maxDelay);

    /// @notice The treasury receiving protocol fees changed.
    /// @param treasury New treasury.
    event TreasuryUpdated(address indexed treasury);

    // ------------------------------------------------------------------ errors

    /// @notice The payment is zero.
    error TaskEscrowZeroPayment();

    /// @notice Payment plus priority fee does not fit 96 bits (more than any TGRID supply).
    /// @param payment The payment.
    /// @param priorityFee The priority fee.
    error TaskEscrowRewardTooLarge(uint256 payment, uint256 priorityFee);

    /// @notice `modelId` is not an active registered model.
    /// @param modelId The model id.
    error TaskEscrowModelNotRegistered(bytes32 modelId);

    /// @notice `deadline` lies outside [earliest, latest].
    /// @param deadline The requested deadline.
    /// @param earliest now + minDelay.
    /// @param latest now + maxDelay.
    error TaskEscrowDeadlineOutOfBounds(uint256 deadline, uint256 earliest, uint256 latest);

    /// @notice The task id is already in use (cannot happen short of a keccak collision).
    /// @param taskId The task id.
    error TaskEscrowTaskExists(bytes32 taskId);

    /// @notice Task `taskId` is in `status`, which does not allow the operation.
    /// @param taskId The task id.
    /// @param status Its state.
    error TaskEscrowInvalidStatus(bytes32 taskId, TaskStatus status);

    /// @notice Only the poster may cancel.
    /// @param taskId The task id.
    /// @param caller The caller.
    error TaskEscrowNotPoster(bytes32 taskId, address caller);

    /// @notice The task's deadline has passed (`deadline < block.timestamp`, or for acceptance
    /// `deadline <= block.timestamp`).
    /// @param taskId The task id.
    /// @param deadline Its deadline.
    error TaskEscrowDeadlinePassed(bytes32 taskId, uint256 deadline);

    /// @notice The task's deadline has not passed yet.
    /// @param taskId The task id.
    /// @param deadline Its deadline.
    error TaskEscrowDeadlineNotPassed(bytes32 taskId, uint256 deadline);

    /// @notice A batch leaf names a task that is not Accepted (unknown, posted, cancelled or expired).
    /// @param taskId The task id.
    /// @param status Its state.
    error TaskEscrowTaskNotAccepted(bytes32 taskId, TaskStatus status);

    /// @notice A batch leaf names a task that is already settled (for example twice in one batch).
    /// @param taskId The task id.
    error TaskEscrowTaskAlreadySettled(bytes32 taskId);

    /// @notice A batch leaf's model id, input commitment or provider differs from the task's.
    /// @param taskId The task id.
    error TaskEscrowLeafMismatch(bytes32 taskId);

    /// @notice {claimSettled} was called with no task ids.
    error TaskEscrowEmptyClaim();

    /// @notice A claimed task is not Settled (unknown, posted, accepted, cancelled or expired).
    /// @param taskId The task id.
    /// @param status Its state.
    error TaskEscrowTaskNotSettled(bytes32 taskId, TaskStatus status);

    /// @notice A claimed task was already claimed (for example twice in one call).
    /// @param taskId The task id.
    error TaskEscrowTaskAlreadyClaimed(bytes32 taskId);

    /// @notice Only the provider that accepted (and settled) the task may claim it.
    /// @param taskId The task id.
    /// @param caller The caller.
    error TaskEscrowNotProvider(bytes32 taskId, address caller);

    /// @notice `caller` is not the bound Settlement.
    /// @param caller The caller.
    error TaskEscrowUnauthorizedSettlement(address caller);

    /// @notice The Settlement was already bound to `settlement`.
    /// @param settlement The bound Settlement.
    error TaskEscrowSettlementAlreadyBound(address settlement);

    /// @notice The zero address was given where an account or contract is required.
    error TaskEscrowZeroAddress();

    /// @notice A basis-point parameter is above its maximum.
    /// @param bps The value.
    /// @param maxBps The maximum.
    error TaskEscrowInvalidBps(uint256 bps, uint256 maxBps);

    /// @notice The minimum collateral does not fit 96 bits.
    /// @param minCollateral The value.
    error TaskEscrowMinCollateralTooLarge(uint256 minCollateral);

    /// @notice Deadline bounds must satisfy 0 < minDelay <= maxDelay <= 365 days.
    /// @param minDelay The minimum given.
    /// @param maxDelay The maximum given.
    error TaskEscrowInvalidDeadlineBounds(uint256 minDelay, uint256 maxDelay);

    // ------------------------------------------------------------------ poster / provider

    /// @notice Posts a task; `payment + priorityFee` TGRID is pulled from the caller (approve first).
    /// @dev Emits {TaskPosted}. The task id is
    /// `keccak256(abi.encode(block.chainid, address(this), poster, nonce, blockhash(block.number - 1)))`
    /// with the poster's post nonce (see {postNonce}).
    /// @param modelId An active registered model.
    /// @param inputCommitment Commitment to the input tensor (`tgrid-prover commit-input`).
    /// @param payment Payment, > 0.
    /// @param priorityFee Extra tip for the provider (may be 0).
    /// @param deadline Last second at which the task can be settled; within the deadline bounds.
    /// @return taskId The new task id.
    function postTask(bytes32 modelId, bytes32 inputCommitment, uint256 payment, uint256 priorityFee, uint256 deadline)
        external
        returns (bytes32 taskId);

    /// @notice {postTask} paying with an ERC-2612 permit for `payment + priorityFee` instead of an
    /// approval. A permit that fails (for example front-run) is ignored when the allowance already
    /// covers the reward.
    /// @dev Emits {TaskPosted}.
    /// @param modelId An active registered model.
    /// @param inputCommitment Commitment to the input tensor.
    /// @param payment Payment, > 0.
    /// @param priorityFee Extra tip for the provider.
    /// @param deadline Task deadline.
    /// @param permitDeadline The permit's deadline.
    /// @param v Permit signature v.
    /// @param r Permit signature r.
    /// @param s Permit signature s.
    /// @return taskId The new task id.
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
    ) external returns (bytes32 taskId);

    /// @notice Accepts a Posted task before its deadline, locking collateral from the caller's free
    /// stake: max(minCollateral, reward * collateralBps / 10,000).
    /// @dev Emits {TaskAccepted} (and {IStaking-CollateralLocked}).
    /// @param taskId The task id.
    function acceptTask(bytes32 taskId) external;

    /// @notice Cancels a Posted (not yet accepted) task and refunds its reward. Poster only.
    /// @dev Emits {TaskCancelled}.
    /// @param taskId The task id.
    function cancelTask(bytes32 taskId) external;

    /// @notice Expires a Posted or Accepted task after its deadline: refunds the reward to the poster
    /// and, if accepted, slashes the provider's collateral. Anyone may call.
    /// @dev Emits {TaskExpired} (and {IStaking-Slashed} if accepted).
    /// @param taskId The task id.
    function expireTask(bytes32 taskId) external;

    // ------------------------------------------------------------------ settlement

    /// @notice Settles every task of a proven batch, or reverts: each must be Accepted, not past
    /// its deadline, and match the leaf's model id, input commitment and provider. Fixes each
    /// task's split: fee = floor(reward * protocolFeeBps / 10,000) at the fee in force now, pay =
    /// reward - fee (a later fee change does not alter it); accrues the batch's fees for the
    /// treasury. Moves no tokens and does not call Staking: each provider collects its pay, and gets
    /// the collateral back, with {claimSettled}. Only the bound Settlement.
    /// @dev Emits {TaskSettled} per task and {BatchPaid}. The cost per task does not depend on the
    /// order of the leaves or on how many providers the batch has.
    /// @param leaves The batch's leaves.
    function settleTasks(TaskLeaf[] calldata leaves) external;

    /// @notice Claims settled tasks of the caller: each must be Settled, not yet claimed and accepted
    /// by the caller (else the call reverts as a whole, naming the task). Marks each claimed, sends
    /// the caller the summed pay (reward minus the fee fixed at settlement) and has Staking unlock
    /// the summed collateral and add the task count to the caller's `tasksSettled`, in one call.
    /// @dev Emits {TaskClaimed} per task, {SettlementClaimed} and {IStaking-SettledCollateralReleased}.
    /// All state is written before Staking is called and the tokens are sent.
    /// @param taskIds The tasks to claim (at least one, no repeats).
    /// @return paid Tokens sent to the caller.
    /// @return collateralReleased Collateral unlocked in Staking.
    function claimSettled(bytes32[] calldata taskIds) external returns (uint256 paid, uint256 collateralReleased);

    /// @notice Sends all accrued protocol fees to the treasury. Anyone may call.
    /// @dev Emits {FeesSwept}.
    /// @return amount Tokens sent.
    function sweepFees() external returns (uint256 amount);

    // ------------------------------------------------------------------ governance

    /// @notice Binds the Settlement allowed to call {settleTasks}. Once; owner only.
    /// @dev Emits {SettlementBound}.
    /// @param settlement The Settlement.
    function bindSettlement(address settlement) external;

    /// @notice Sets the collateral rule. Owner (timelock) only.
    /// @dev Emits {CollateralParametersUpdated}.
    /// @param collateralBps Fraction of the reward, in basis points (at most 100,000 = 10x).
    /// @param minCollateral Minimum collateral.
    function setCollateralParameters(uint256 collateralBps, uint256 minCollateral) external;

    /// @notice Sets the protocol fee. Owner (timelock) only.
    /// @dev Emits {ProtocolFeeUpdated}.
    /// @param protocolFeeBps Fraction of each reward, in basis points (at most 2,000).
    function setProtocolFee(uint256 protocolFeeBps) external;

    /// @notice Sets the deadline bounds for new tasks. Owner (timelock) only.
    /// @dev Emits {DeadlineBoundsUpdated}.
    /// @param minDelay Minimum seconds from posting (> 0).
    /// @param maxDelay Maximum seconds from posting (<= 365 days).
    function setDeadlineBounds(uint256 minDelay, uint256 maxDelay) external;

    /// @notice Sets the treasury receiving protocol fees. Owner (timelock) only.
    /// @dev Emits {TreasuryUpdated}.
    /// @param treasury New treasury.
    function setTreasury(address treasury) external;

    // ------------------------------------------------------------------ views

    /// @notice The task `taskId` (all zero if unknown).
    /// @param taskId The task id.
    function task(bytes32 taskId) external view returns (Task memory);

    /// @notice Whether `taskId` can be claimed now (Settled and not yet claimed; see
    /// {claimSettled}), and what claiming it pays and releases. The provider is `task(taskId).provider`.
    /// @param taskId The task id.
    /// @return isClaimable True for a Settled, unclaimed task; false otherwise (then both amounts are 0).
    /// @return pay The task's reward minus the protocol fee fixed at its settlement.
    /// @return collateral The task's collateral, unlocked by the claim.
    function claimable(bytes32 taskId) external view returns (bool isClaimable, uint256 pay, uint256 collateral);

    /// @notice The nonce the next task posted by `poster` will use.
    /// @param poster The poster.
    function postNonce(address poster) external view returns (uint256);

    /// @notice The collateral a provider would lock to accept a task with this reward now.
    /// @param reward Payment plus priority fee.
    function collateralFor(uint256 reward) external view returns (uint256);

    /// @notice The payment token (TGRID).
    function token() external view returns (address);

    /// @notice The Staking contract.
    function staking() external view returns (address);

    /// @notice The ModelRegistry.
    function registry() external view returns (address);

    /// @notice The bound Settlement (zero until bound).
    function settlement() external view returns (address);

    /// @notice Collateral fraction of the reward, in basis points.
    function collateralBps() external view returns (uint256);

    /// @notice Minimum collateral.
    function minCollateral() external view returns (uint256);

    /// @notice Protocol fee, in basis points.
    function protocolFeeBps() external view returns (uint256);

    /// @notice Deadline bounds for new tasks, in seconds from posting.
    /// @return minDelay Minimum.
    /// @return maxDelay Maximum.
    function deadlineBounds() external view returns (uint256 minDelay, uint256 maxDelay);

    /// @notice The treasury receiving protocol fees.
    function treasury() external view returns (address);

    /// @notice Protocol fees accrued and not yet swept to the treasury.
    function accruedFees() external view returns (uint256);
}
