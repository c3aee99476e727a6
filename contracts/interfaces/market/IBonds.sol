// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title IBonds
/// @notice Providers' bonds. Acceptances are off-chain signatures, so a bond is not locked per
/// task: it is what a dispute can slash, bonded stake first, then stake still unbonding. Unbonding
/// takes at least the longest deadline plus the dispute window, so stake cannot leave before a
/// dispute of any order the provider accepted before asking to unbond.
interface IBonds {
    /// @notice A provider's bond.
    /// @param bonded Stake at risk and not unbonding.
    /// @param unbonding Stake waiting for the unbonding delay (still slashable until withdrawn).
    /// @param unbondingReadyAt When `unbonding` may be withdrawn.
    struct Bond {
        uint96 bonded;
        uint96 unbonding;
        uint40 unbondingReadyAt;
    }

    /// @notice `provider` bonded `amount` more; its bonded stake is now `bonded`.
    /// @param provider The provider.
    /// @param amount Tokens added.
    /// @param bonded New bonded stake.
    event Staked(address indexed provider, uint256 amount, uint256 bonded);

    /// @notice `provider` moved `amount` to unbonding; `unbonding` in all, ready at `readyAt`.
    /// @param provider The provider.
    /// @param amount Tokens moved.
    /// @param unbonding New unbonding balance.
    /// @param readyAt When it may be withdrawn.
    event UnbondingRequested(address indexed provider, uint256 amount, uint256 unbonding, uint256 readyAt);

    /// @notice `provider` withdrew `amount` of unbonded stake.
    /// @param provider The provider.
    /// @param amount Tokens sent.
    event StakeWithdrawn(address indexed provider, uint256 amount);

    /// @notice A zero amount was given.
    error MarketZeroAmount();

    /// @notice An amount does not fit the 96-bit accounting (more than the TGRID supply).
    /// @param amount The amount.
    error MarketAmountTooLarge(uint256 amount);

    /// @notice `provider` has `bonded` bonded stake, less than `needed`.
    /// @param provider The provider.
    /// @param bonded Its bonded stake.
    /// @param needed The amount asked for.
    error MarketInsufficientBond(address provider, uint256 bonded, uint256 needed);

    /// @notice `provider` has nothing unbonding to withdraw.
    /// @param provider The provider.
    error MarketNothingToWithdraw(address provider);

    /// @notice `provider`'s unbonding stake is not ready before `readyAt`.
    /// @param provider The provider.
    /// @param readyAt When it will be.
    error MarketUnbondingNotReady(address provider, uint256 readyAt);

    /// @notice Bonds `amount` TGRID of the caller (approve first).
    /// @dev Emits {Staked}.
    /// @param amount Tokens, > 0.
    function stake(uint256 amount) external;

    /// @notice Moves `amount` of the caller's bonded stake to unbonding and restarts the unbonding
    /// timer for the whole unbonding balance. Unbonding stake can still be slashed by disputes.
    /// @dev Emits {UnbondingRequested}.
    /// @param amount Tokens, > 0 and at most the bonded stake.
    function requestUnbonding(uint256 amount) external;

    /// @notice Sends the caller its unbonding stake once the unbonding delay has passed.
    /// @dev Emits {StakeWithdrawn}.
    /// @return amount Tokens sent.
    function withdrawStake() external returns (uint256 amount);

    /// @notice `provider`'s bond.
    /// @param provider The provider.
    function bond(address provider) external view returns (Bond memory);
}
