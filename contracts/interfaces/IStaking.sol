// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title IStaking
/// @notice Provider accounts of the TensorGrid settlement layer: bonded stake, collateral locked for
/// accepted tasks, unbonding and reputation counters. Only the bound TaskEscrow may lock, release or
/// slash. Parameters are owned by the governance timelock.
/// @dev This contract holds the stake (bonded and unbonding) and nothing else: a settled task's pay
/// stays in the TaskEscrow, which sends it to the provider on {ITaskEscrow-claimSettled}. The
/// collateral of a settled task stays locked until that claim (it can no longer be slashed: the
/// task is Settled), and the claim is what releases it and counts the task in `tasksSettled`.
interface IStaking {
    /// @notice One provider's account.
    /// @param bonded Stake that backs collateral; includes `locked`.
    /// @param locked Part of `bonded` locked as collateral: tasks accepted and not yet settled, plus
    /// settled tasks whose settlement the provider has not claimed yet.
    /// @param unbonding Stake leaving the system; withdrawable from `unbondingReadyAt`.
    /// @param unbondingReadyAt Timestamp from which `unbonding` can be withdrawn.
    /// @param tasksSettled Reputation: tasks of this provider settled with a valid proof whose
    /// settlement it has claimed ({ITaskEscrow-claimSettled}); settled, unclaimed tasks are not
    /// counted yet.
    /// @param tasksSlashed Reputation: accepted tasks this provider let expire (slashed).
    struct ProviderAccount {
        uint96 bonded;
        uint96 locked;
        uint96 unbonding;
        uint40 unbondingReadyAt;
        uint32 tasksSettled;
        uint32 tasksSlashed;
    }

    // ------------------------------------------------------------------ events

    /// @notice `provider` added `amount` to its bonded stake, now `bonded`.
    /// @param provider The provider.
    /// @param amount Tokens added.
    /// @param bonded Bonded stake after the deposit.
    event Staked(address indexed provider, uint256 amount, uint256 bonded);

    /// @notice `provider` moved `amount` from bonded to unbonding stake.
    /// @param provider The provider.
    /// @param amount Tokens moved.
    /// @param unbonding Total unbonding stake after the request (the timer restarts for all of it).
    /// @param readyAt Timestamp from which the unbonding stake can be withdrawn.
    event UnbondingRequested(address indexed provider, uint256 amount, uint256 unbonding, uint256 readyAt);

    /// @notice `provider` withdrew `amount` of matured unbonding stake.
    /// @param provider The provider.
    /// @param amount Tokens sent to the provider.
    event Withdrawn(address indexed provider, uint256 amount);

    /// @notice The escrow locked `amount` of `provider`'s stake as task collateral.
    /// @param provider The provider.
    /// @param amount Collateral locked.
    /// @param locked Total locked collateral after the lock.
    event CollateralLocked(address indexed provider, uint256 amount, uint256 locked);

    /// @notice `provider` claimed the settlement of `tasks` settled tasks
    /// ({ITaskEscrow-SettlementClaimed}): their `collateral` was unlocked and `tasks` was added to
    /// its `tasksSettled`.
    /// @param provider The provider.
    /// @param collateral Collateral unlocked (stays bonded).
    /// @param tasks Number of tasks claimed (added to `tasksSettled`).
    event SettledCollateralReleased(address indexed provider, uint256 collateral, uint256 tasks);

    /// @notice `provider` let an accepted task expire: `slashed` of its `collateral` was taken.
    /// @param provider The slashed provider.
    /// @param poster The harmed poster, paid `toPoster`.
    /// @param collateral The task's collateral, unlocked (the part not slashed stays bonded).
    /// @param slashed Stake taken: `toPoster + toTreasury`.
    /// @param toPoster Part of `slashed` paid to the poster.
    /// @param toTreasury Part of `slashed` paid to the treasury.
    event Slashed(
        address indexed provider,
        address indexed poster,
        uint256 collateral,
        uint256 slashed,
        uint256 toPoster,
        uint256 toTreasury
    );

    /// @notice The escrow allowed to lock, release and slash was bound (once).
    /// @param escrow The TaskEscrow.
    event EscrowBound(address indexed escrow);

    /// @notice The minimum bonded stake to accept tasks changed.
    /// @param minStake New minimum.
    event MinStakeUpdated(uint256 minStake);

    /// @notice The unbonding delay changed (applies to later requests).
    /// @param unbondingDelay New delay in seconds.
    event UnbondingDelayUpdated(uint256 unbondingDelay);

    /// @notice The slashing parameters changed.
    /// @param slashBps Fraction of a task's collateral slashed on expiry, in basis points.
    /// @param posterShareBps Fraction of the slashed amount paid to the poster, in basis points.
    event SlashParametersUpdated(uint256 slashBps, uint256 posterShareBps);

    /// @notice The treasury receiving the treasury share of slashes changed.
    /// @param treasury New treasury.
    event TreasuryUpdated(address indexed treasury);

    // ------------------------------------------------------------------ errors

    /// @notice A zero amount was given.
    error StakingZeroAmount();

    /// @notice An amount does not fit the 96-bit accounting (larger than any TGRID supply).
    /// @param amount The amount.
    error StakingAmountTooLarge(uint256 amount);

    /// @notice `provider` has only `free` unlocked bonded stake, `needed` was required.
    /// @param provider The provider.
    /// @param free Bonded minus locked stake.
    /// @param needed Amount required.
    error StakingInsufficientFreeStake(address provider, uint256 free, uint256 needed);

    /// @notice `provider`'s bonded stake is below the minimum needed to accept tasks.
    /// @param provider The provider.
    /// @param bonded Its bonded stake.
    /// @param minStake The minimum.
    error StakingBelowMinimumStake(address provider, uint256 bonded, uint256 minStake);

    /// @notice `provider` has no unbonding stake to withdraw.
    /// @param provider The provider.
    error StakingNothingToWithdraw(address provider);

    /// @notice `provider`'s unbonding stake is not withdrawable before `readyAt`.
    /// @param provider The provider.
    /// @param readyAt Timestamp from which it is.
    error StakingUnbondingNotReady(address provider, uint256 readyAt);

    /// @notice `caller` is not the bound TaskEscrow.
    /// @param caller The caller.
    error StakingUnauthorizedEscrow(address caller);

    /// @notice The escrow was already bound to `escrow`.
    /// @param escrow The bound escrow.
    error StakingEscrowAlreadyBound(address escrow);

    /// @notice The zero address was given where an account or contract is required.
    error StakingZeroAddress();

    /// @notice A basis-point parameter is above 10,000.
    /// @param bps The value.
    error StakingInvalidBps(uint256 bps);

    /// @notice The unbonding delay is above the allowed maximum.
    /// @param delay The value.
    /// @param maxDelay The maximum.
    error StakingUnbondingDelayTooLong(uint256 delay, uint256 maxDelay);

    // ------------------------------------------------------------------ provider functions

    /// @notice Deposits `amount` TGRID (approved to this contract) as bonded stake of the caller.
    /// @dev Emits {Staked}.
    /// @param amount Tokens to stake.
    function stake(uint256 amount) external;

    /// @notice Moves `amount` of the caller's free (unlocked) bonded stake to unbonding. The
    /// unbonding timer restarts for the whole unbonding balance.
    /// @dev Emits {UnbondingRequested}.
    /// @param amount Tokens to unbond.
    function requestUnbonding(uint256 amount) external;

    /// @notice Sends the caller's whole unbonding stake once the unbonding delay has passed.
    /// @dev Emits {Withdrawn}.
    /// @return amount Tokens sent.
    function withdraw() external returns (uint256 amount);

    // ------------------------------------------------------------------ escrow functions

    /// @notice Locks `amount` of `provider`'s free stake as collateral for a task it accepts.
    /// Requires bonded stake of at least the minimum stake. Only the TaskEscrow.
    /// @dev Emits {CollateralLocked}.
    /// @param provider The accepting provider.
    /// @param amount Collateral to lock.
    function lockCollateral(address provider, uint256 amount) external;

    /// @notice Records that `provider` claimed the settlement of `tasks` settled tasks: unlocks
    /// their summed `collateral` (it stays bonded) and adds `tasks` to its `tasksSettled`. Called
    /// once per {ITaskEscrow-claimSettled}. Only the TaskEscrow.
    /// @dev Emits {SettledCollateralReleased}.
    /// @param provider The provider.
    /// @param collateral Summed collateral of the claimed tasks.
    /// @param tasks Number of claimed tasks.
    function releaseSettledCollateral(address provider, uint256 collateral, uint256 tasks) external;

    /// @notice Slashes an expired task's `collateral`: the slash fraction of it leaves `provider`'s
    /// bonded stake and is paid to `poster` and the treasury by the poster share; the rest is
    /// unlocked. Only the TaskEscrow.
    /// @dev Emits {Slashed}.
    /// @param provider The provider that accepted the task.
    /// @param collateral The task's locked collateral.
    /// @param poster The task's poster.
    /// @return toPoster Tokens paid to the poster.
    function slash(address provider, uint256 collateral, address poster) external returns (uint256 toPoster);

    // ------------------------------------------------------------------ governance

    /// @notice Binds the TaskEscrow allowed to lock, release and slash. Once; owner only.
    /// @dev Emits {EscrowBound}.
    /// @param escrow The TaskEscrow.
    function bindEscrow(address escrow) external;

    /// @notice Sets the minimum bonded stake to accept tasks. Owner (timelock) only.
    /// @dev Emits {MinStakeUpdated}.
    /// @param minStake New minimum.
    function setMinStake(uint256 minStake) external;

    /// @notice Sets the unbonding delay for later requests. Owner (timelock) only.
    /// @dev Emits {UnbondingDelayUpdated}.
    /// @param unbondingDelay New delay in seconds (at most 365 days).
    function setUnbondingDelay(uint256 unbondingDelay) external;

    /// @notice Sets the slash fraction and the poster's share of it. Owner (timelock) only.
    /// @dev Emits {SlashParametersUpdated}.
    /// @param slashBps Fraction of the collateral slashed, in basis points.
    /// @param posterShareBps Fraction of the slashed amount paid to the poster, in basis points.
    function setSlashParameters(uint256 slashBps, uint256 posterShareBps) external;

    /// @notice Sets the treasury. Owner (timelock) only.
    /// @dev Emits {TreasuryUpdated}.
    /// @param treasury New treasury.
    function setTreasury(address treasury) external;

    // ------------------------------------------------------------------ views

    /// @notice The staked token (TGRID).
    function token() external view returns (address);

    /// @notice The bound TaskEscrow (zero until bound).
    function escrow() external view returns (address);

    /// @notice `provider`'s account.
    /// @param provider The provider.
    function account(address provider) external view returns (ProviderAccount memory);

    /// @notice `provider`'s bonded stake not locked as collateral.
    /// @param provider The provider.
    function freeStake(address provider) external view returns (uint256);

    /// @notice Reputation counters of `provider`.
    /// @param provider The provider.
    /// @return settled Tasks settled with a valid proof whose settlement the provider has claimed.
    /// @return slashed Accepted tasks that expired unsettled.
    function reputation(address provider) external view returns (uint256 settled, uint256 slashed);

    /// @notice Minimum bonded stake to accept tasks.
    function minStake() external view returns (uint256);

    /// @notice Unbonding delay in seconds.
    function unbondingDelay() external view returns (uint256);

    /// @notice Fraction of an expired task's collateral slashed, in basis points.
    function slashBps() external view returns (uint256);

    /// @notice Fraction of a slash paid to the poster, in basis points (the rest to the treasury).
    function slashPosterShareBps() external view returns (uint256);

    /// @notice The treasury.
    function treasury() external view returns (address);
}
