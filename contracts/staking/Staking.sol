// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";

import {IStaking} from "../interfaces/IStaking.sol";

/// @title Staking
/// @notice Provider accounts: bonded stake, task collateral, unbonding and reputation.
/// @dev Every token held here is accounted in exactly one of `bonded` (which includes `locked`) or
/// `unbonding`, so `balanceOf(this) == sum(bonded + unbonding)`. Settled tasks' pay is not held
/// here: the TaskEscrow sends it on {ITaskEscrow-claimSettled}, which also releases the tasks'
/// collateral and counts them in `tasksSettled` through {releaseSettledCollateral}.
/// Collateral is locked only from free bonded stake; unbonding stake can be neither locked nor
/// slashed, and leaves only after the unbonding delay. Only the bound TaskEscrow may lock, release
/// or slash. The owner is the governance timelock.
contract Staking is IStaking, Ownable {
    using SafeERC20 for IERC20;

    /// @dev One provider's account in two slots. Slot 0 holds everything locking, claiming and
    /// slashing touch (so each is one slot read and written); slot 1 only unbonding.
    struct Account {
        // slot 0: lock / claim / slash (96 + 32 + 32 + 96 bits)
        uint96 locked;
        uint32 tasksSettled;
        uint32 tasksSlashed;
        uint96 bonded;
        // slot 1: unbonding
        uint96 unbonding;
        uint40 unbondingReadyAt;
    }

    uint256 private constant _BPS = 10_000;
    /// @notice Upper bound of the unbonding delay.
    uint256 public constant MAX_UNBONDING_DELAY = 365 days;

    IERC20 private immutable _token;

    address private _escrow;
    uint16 private _slashBps;
    uint16 private _slashPosterShareBps;
    uint32 private _unbondingDelay;

    address private _treasury;
    uint96 private _minStake;

    mapping(address provider => Account) private _accounts;

    /// @notice Deploys with its parameters; `owner_` should be the governance timelock (or the
    /// deployer, who binds the escrow and hands ownership to the timelock).
    /// @param owner_ Owner of the parameters.
    /// @param token_ The staked token (TGRID).
    /// @param treasury_ Receives the treasury share of slashes.
    /// @param minStake_ Minimum bonded stake to accept tasks.
    /// @param unbondingDelay_ Unbonding delay in seconds.
    /// @param slashBps_ Fraction of an expired task's collateral slashed, in basis points.
    /// @param slashPosterShareBps_ Fraction of a slash paid to the poster, in basis points.
    constructor(
        address owner_,
        IERC20 token_,
        address treasury_,
        uint256 minStake_,
        uint256 unbondingDelay_,
        uint256 slashBps_,
        uint256 slashPosterShareBps_
    ) Ownable(owner_) {
        if (address(token_) == address(0)) revert StakingZeroAddress();
        _token = token_;
        _setTreasury(treasury_);
        _setMinStake(minStake_);
        _setUnbondingDelay(unbondingDelay_);
        _setSlashParameters(slashBps_, slashPosterShareBps_);
    }

    modifier onlyEscrow() {
        if (msg.sender != _escrow) revert StakingUnauthorizedEscrow(msg.sender);
        _;
    }

    // ------------------------------------------------------------------ provider functions

    /// @inheritdoc IStaking
    function stake(uint256 amount) external {
        if (amount == 0) revert StakingZeroAmount();
        Account storage a = _accounts[msg.sender];
        uint256 bonded = uint256(a.bonded) + amount;
        a.bonded = _toUint96(bonded);
        emit Staked(msg.sender, amount, bonded);
        _token.safeTransferFrom(msg.sender, address(this), amount);
    }

    /// @inheritdoc IStaking
    function requestUnbonding(uint256 amount) external {
        if (amount == 0) revert StakingZeroAmount();
        Account storage a = _accounts[msg.sender];
        uint256 free = uint256(a.bonded) - a.locked;
        if (amount > free) revert StakingInsufficientFreeStake(msg.sender, free, amount);
        uint256 unbonding = uint256(a.unbonding) + amount;
        uint256 readyAt = block.timestamp + _unbondingDelay;
        // forge-lint: disable-next-line(unsafe-typecast) -- amount <= free <= bonded < 2^96
        a.bonded -= uint96(amount);
        a.unbonding = _toUint96(unbonding);
        // forge-lint: disable-next-line(unsafe-typecast) -- a timestamp plus at most 365 days fits 40 bits
        a.unbondingReadyAt = uint40(readyAt);
        emit UnbondingRequested(msg.sender, amount, unbonding, readyAt);
    }

    /// @inheritdoc IStaking
    function withdraw() external returns (uint256 amount) {
        Account storage a = _accounts[msg.sender];
        amount = a.unbonding;
        if (amount == 0) revert StakingNothingToWithdraw(msg.sender);
        uint256 readyAt = a.unbondingReadyAt;
        if (block.timestamp < readyAt) revert StakingUnbondingNotReady(msg.sender, readyAt);
        a.unbonding = 0;
        a.unbondingReadyAt = 0;
        emit Withdrawn(msg.sender, amount);
        _token.safeTransfer(msg.sender, amount);
    }

    // ------------------------------------------------------------------ escrow functions

    /// @inheritdoc IStaking
    function lockCollateral(address provider, uint256 amount) external onlyEscrow {
        Account storage a = _accounts[provider];
        uint256 bonded = a.bonded;
        uint256 minStake_ = _minStake;
        if (bonded < minStake_) revert StakingBelowMinimumStake(provider, bonded, minStake_);
        uint256 locked = a.locked;
        uint256 free = bonded - locked;
        if (amount > free) revert StakingInsufficientFreeStake(provider, free, amount);
        locked += amount;
        // forge-lint: disable-next-line(unsafe-typecast) -- locked <= bonded < 2^96
        a.locked = uint96(locked);
        emit CollateralLocked(provider, amount, locked);
    }

    /// @inheritdoc IStaking
    function releaseSettledCollateral(address provider, uint256 collateral, uint256 tasks) external onlyEscrow {
        Account storage a = _accounts[provider];
        // The escrow releases only collateral it locked for these tasks, so this cannot underflow
        // (checked arithmetic reverts if it ever did).
        a.locked -= _toUint96(collateral);
        a.tasksSettled += SafeCast.toUint32(tasks);
        emit SettledCollateralReleased(provider, collateral, tasks);
    }

    /// @inheritdoc IStaking
    function slash(address provider, uint256 collateral, address poster)
        external
        onlyEscrow
        returns (uint256 toPoster)
    {
        Account storage a = _accounts[provider];
        uint256 slashed = collateral * _slashBps / _BPS;
        toPoster = slashed * _slashPosterShareBps / _BPS;
        uint256 toTreasury = slashed - toPoster;
        // slashed <= collateral <= locked <= bonded, so neither subtraction can underflow.
        a.locked -= _toUint96(collateral);
        // forge-lint: disable-next-line(unsafe-typecast) -- slashed <= collateral, already cast-checked
        a.bonded -= uint96(slashed);
        a.tasksSlashed += 1;
        emit Slashed(provider, poster, collateral, slashed, toPoster, toTreasury);
        if (toPoster != 0) _token.safeTransfer(poster, toPoster);
        if (toTreasury != 0) _token.safeTransfer(_treasury, toTreasury);
    }

    // ------------------------------------------------------------------ governance

    /// @inheritdoc IStaking
    function bindEscrow(address escrow_) external onlyOwner {
        if (_escrow != address(0)) revert StakingEscrowAlreadyBound(_escrow);
        if (escrow_ == address(0)) revert StakingZeroAddress();
        _escrow = escrow_;
        emit EscrowBound(escrow_);
    }

    /// @inheritdoc IStaking
    function setMinStake(uint256 minStake_) external onlyOwner {
        _setMinStake(minStake_);
    }

    /// @inheritdoc IStaking
    function setUnbondingDelay(uint256 unbondingDelay_) external onlyOwner {
        _setUnbondingDelay(unbondingDelay_);
    }

    /// @inheritdoc IStaking
    function setSlashParameters(uint256 slashBps_, uint256 posterShareBps_) external onlyOwner {
        _setSlashParameters(slashBps_, posterShareBps_);
    }

    /// @inheritdoc IStaking
    function setTreasury(address treasury_) external onlyOwner {
        _setTreasury(treasury_);
    }

    // ------------------------------------------------------------------ views

    /// @inheritdoc IStaking
    function token() external view returns (address) {
        return address(_token);
    }

    /// @inheritdoc IStaking
    function escrow() external view returns (address) {
        return _escrow;
    }

    /// @inheritdoc IStaking
    function account(address provider) external view returns (ProviderAccount memory) {
        Account storage a = _accounts[provider];
        return ProviderAccount({
            bonded: a.bonded,
            locked: a.locked,
            unbonding: a.unbonding,
            unbondingReadyAt: a.unbondingReadyAt,
            tasksSettled: a.tasksSettled,
            tasksSlashed: a.tasksSlashed
        });
    }

    /// @inheritdoc IStaking
    function freeStake(address provider) external view returns (uint256) {
        Account storage a = _accounts[provider];
        return uint256(a.bonded) - a.locked;
    }

    /// @inheritdoc IStaking
    function reputation(address provider) external view returns (uint256 settled, uint256 slashed) {
        Account storage a = _accounts[provider];
        return (a.tasksSettled, a.tasksSlashed);
    }

    /// @inheritdoc IStaking
    function minStake() external view returns (uint256) {
        return _minStake;
    }

    /// @inheritdoc IStaking
    function unbondingDelay() external view returns (uint256) {
        return _unbondingDelay;
    }

    /// @inheritdoc IStaking
    function slashBps() external view returns (uint256) {
        return _slashBps;
    }

    /// @inheritdoc IStaking
    function slashPosterShareBps() external view returns (uint256) {
        return _slashPosterShareBps;
    }

    /// @inheritdoc IStaking
    function treasury() external view returns (address) {
        return _treasury;
    }

    // ------------------------------------------------------------------ internal

    function _setMinStake(uint256 minStake_) private {
        _minStake = _toUint96(minStake_);
        emit MinStakeUpdated(minStake_);
    }

    function _setUnbondingDelay(uint256 unbondingDelay_) private {
        if (unbondingDelay_ > MAX_UNBONDING_DELAY) {
            revert StakingUnbondingDelayTooLong(unbondingDelay_, MAX_UNBONDING_DELAY);
        }
        // forge-lint: disable-next-line(unsafe-typecast) -- unbondingDelay_ <= MAX_UNBONDING_DELAY, checked above
        _unbondingDelay = uint32(unbondingDelay_);
        emit UnbondingDelayUpdated(unbondingDelay_);
    }

    function _setSlashParameters(uint256 slashBps_, uint256 posterShareBps_) private {
        if (slashBps_ > _BPS) revert StakingInvalidBps(slashBps_);
        if (posterShareBps_ > _BPS) revert StakingInvalidBps(posterShareBps_);
        // forge-lint: disable-next-line(unsafe-typecast) -- both <= 10,000, checked above
        _slashBps = uint16(slashBps_);
        // forge-lint: disable-next-line(unsafe-typecast) -- checked above
        _slashPosterShareBps = uint16(posterShareBps_);
        emit SlashParametersUpdated(slashBps_, posterShareBps_);
    }

    function _setTreasury(address treasury_) private {
        if (treasury_ == address(0)) revert StakingZeroAddress();
        _treasury = treasury_;
        emit TreasuryUpdated(treasury_);
    }

    function _toUint96(uint256 amount) private pure returns (uint96) {
        if (amount > type(uint96).max) revert StakingAmountTooLarge(amount);
        // forge-lint: disable-next-line(unsafe-typecast) -- checked on the line above
        return uint96(amount);
    }
}
