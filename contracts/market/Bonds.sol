// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {MarketBase} from "./MarketBase.sol";
import {IBonds} from "../interfaces/market/IBonds.sol";

/// @title Bonds
/// @notice Providers' bonds (see {IBonds}): bonded stake and stake unbonding, both slashable by
/// disputes until withdrawn.
abstract contract Bonds is MarketBase {
    /// @inheritdoc IBonds
    function stake(uint256 amount) external {
        if (amount == 0) revert MarketZeroAmount();
        Bond storage b = _bonds[msg.sender];
        uint256 bonded = uint256(b.bonded) + amount;
        b.bonded = _toUint96(bonded);
        emit Staked(msg.sender, amount, bonded);
        _pull(msg.sender, amount);
    }

    /// @inheritdoc IBonds
    function requestUnbonding(uint256 amount) external {
        if (amount == 0) revert MarketZeroAmount();
        Bond storage b = _bonds[msg.sender];
        uint256 bonded = b.bonded;
        if (amount > bonded) revert MarketInsufficientBond(msg.sender, bonded, amount);
        uint256 unbonding = uint256(b.unbonding) + amount;
        uint256 readyAt = block.timestamp + _unbondingDelay;
        // forge-lint: disable-next-line(unsafe-typecast) -- amount <= bonded < 2^96
        b.bonded = uint96(bonded - amount);
        // forge-lint: disable-next-line(unsafe-typecast) -- bonded + unbonding of one provider never exceeds the supply (< 2^96)
        b.unbonding = uint96(unbonding);
        // forge-lint: disable-next-line(unsafe-typecast) -- a timestamp plus at most 730 days fits 40 bits
        b.unbondingReadyAt = uint40(readyAt);
        emit UnbondingRequested(msg.sender, amount, unbonding, readyAt);
    }

    /// @inheritdoc IBonds
    function withdrawStake() external returns (uint256 amount) {
        Bond storage b = _bonds[msg.sender];
        amount = b.unbonding;
        if (amount == 0) revert MarketNothingToWithdraw(msg.sender);
        uint256 readyAt = b.unbondingReadyAt;
        if (block.timestamp < readyAt) revert MarketUnbondingNotReady(msg.sender, readyAt);
        b.unbonding = 0;
        b.unbondingReadyAt = 0;
        emit StakeWithdrawn(msg.sender, amount);
        _send(msg.sender, amount);
    }

    /// @inheritdoc IBonds
    function bond(address provider) external view returns (Bond memory) {
        return _bonds[provider];
    }

    /// @dev Takes up to `amount` from `provider`'s bond, bonded stake first, then unbonding stake.
    /// @return slashed What was taken (less than `amount` when the bond does not cover it).
    function _slash(address provider, uint256 amount) internal returns (uint256 slashed) {
        Bond storage b = _bonds[provider];
        uint256 bonded = b.bonded;
        uint256 unbonding = b.unbonding;
        uint256 fromBonded = amount < bonded ? amount : bonded;
        uint256 rest = amount - fromBonded;
        uint256 fromUnbonding = rest < unbonding ? rest : unbonding;
        // forge-lint: disable-next-line(unsafe-typecast) -- each part is at most the field it leaves
        b.bonded = uint96(bonded - fromBonded);
        // forge-lint: disable-next-line(unsafe-typecast) -- as above
        b.unbonding = uint96(unbonding - fromUnbonding);
        slashed = fromBonded + fromUnbonding;
    }
}
