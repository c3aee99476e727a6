// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {MarketTest} from "./MarketTest.sol";
import {IBonds} from "../../interfaces/market/IBonds.sol";
import {Order} from "../../libraries/OrderLib.sol";

/// @notice Providers' bonds: stake, unbonding (slashable until withdrawn), withdrawing.
contract BondsTest is MarketTest {
    uint256 internal constant BOND = 1_000e18;

    function _requestUnbonding(address who, uint256 amount) internal {
        vm.prank(who);
        market.requestUnbonding(amount);
    }

    function _assertBond(address who, uint256 bonded, uint256 unbonding, uint256 readyAt) internal view {
        IBonds.Bond memory b = market.bond(who);
        assertEq(b.bonded, bonded, "bonded");
        assertEq(b.unbonding, unbonding, "unbonding");
        assertEq(b.unbondingReadyAt, readyAt, "readyAt");
    }

    // ------------------------------------------------------------------ stake

    function test_stake_bondsTokens() public {
        uint256 before = token.balanceOf(provider);
        vm.expectEmit(address(market));
        emit IBonds.Staked(provider, BOND, BOND);
        _bond(provider, BOND);
        _assertBond(provider, BOND, 0, 0);
        assertEq(token.balanceOf(provider), before - BOND);
        assertEq(token.balanceOf(address(market)), BOND);
    }

    function test_stake_accumulates() public {
        _bond(provider, BOND);
        vm.expectEmit(address(market));
        emit IBonds.Staked(provider, 5e18, BOND + 5e18);
        _bond(provider, 5e18);
        _assertBond(provider, BOND + 5e18, 0, 0);
    }

    function test_RevertWhen_stakeZero() public {
        vm.expectRevert(IBonds.MarketZeroAmount.selector);
        _bond(provider, 0);
    }

    function test_RevertWhen_stakeAbove96Bits() public {
        uint256 big = uint256(type(uint96).max) + 1;
        vm.expectRevert(abi.encodeWithSelector(IBonds.MarketAmountTooLarge.selector, big));
        _bond(provider, big);
    }

    /// The check is on the new bonded total, not only on the amount.
    function test_RevertWhen_stakeTotalAbove96Bits() public {
        _bond(provider, 1e18);
        uint256 amount = type(uint96).max;
        vm.expectRevert(abi.encodeWithSelector(IBonds.MarketAmountTooLarge.selector, amount + 1e18));
        _bond(provider, amount);
    }

    // ------------------------------------------------------------------ requestUnbonding

    function test_requestUnbonding_movesStake() public {
        _bond(provider, BOND);
        uint256 readyAt = block.timestamp + 8 days;
        vm.expectEmit(address(market));
        emit IBonds.UnbondingRequested(provider, 400e18, 400e18, readyAt);
        _requestUnbonding(provider, 400e18);
        _assertBond(provider, BOND - 400e18, 400e18, readyAt);
        assertEq(token.balanceOf(address(market)), BOND);
    }

    function test_requestUnbonding_wholeBond() public {
        _bond(provider, BOND);
        _requestUnbonding(provider, BOND);
        _assertBond(provider, 0, BOND, block.timestamp + 8 days);
    }

    /// A second request restarts the timer for the whole unbonding balance.
    function test_requestUnbonding_restartsTimer() public {
        _bond(provider, BOND);
        _requestUnbonding(provider, 100e18);
        uint256 firstReadyAt = block.timestamp + 8 days;
        skip(3 days);
        uint256 readyAt = block.timestamp + 8 days;
        vm.expectEmit(address(market));
        emit IBonds.UnbondingRequested(provider, 50e18, 150e18, readyAt);
        _requestUnbonding(provider, 50e18);
        _assertBond(provider, BOND - 150e18, 150e18, readyAt);

        vm.warp(firstReadyAt);
        vm.expectRevert(abi.encodeWithSelector(IBonds.MarketUnbondingNotReady.selector, provider, readyAt));
        vm.prank(provider);
        market.withdrawStake();
    }

    function test_RevertWhen_requestUnbondingZero() public {
        _bond(provider, BOND);
        vm.expectRevert(IBonds.MarketZeroAmount.selector);
        _requestUnbonding(provider, 0);
    }

    function test_RevertWhen_requestUnbondingAboveBonded() public {
        _bond(provider, BOND);
        _requestUnbonding(provider, 600e18);
        vm.expectRevert(abi.encodeWithSelector(IBonds.MarketInsufficientBond.selector, provider, 400e18, 400e18 + 1));
        _requestUnbonding(provider, 400e18 + 1);
    }

    function test_RevertWhen_requestUnbondingWithoutBond() public {
        vm.expectRevert(abi.encodeWithSelector(IBonds.MarketInsufficientBond.selector, stranger, 0, 1));
        _requestUnbonding(stranger, 1);
    }

    // ------------------------------------------------------------------ withdrawStake

    function test_RevertWhen_withdrawStakeNothingUnbonding() public {
        _bond(provider, BOND);
        vm.expectRevert(abi.encodeWithSelector(IBonds.MarketNothingToWithdraw.selector, provider));
        vm.prank(provider);
        market.withdrawStake();
    }

    function test_RevertWhen_withdrawStakeBeforeReady() public {
        _bond(provider, BOND);
        _requestUnbonding(provider, 100e18);
        uint256 readyAt = block.timestamp + 8 days;
        vm.warp(readyAt - 1);
        vm.expectRevert(abi.encodeWithSelector(IBonds.MarketUnbondingNotReady.selector, provider, readyAt));
        vm.prank(provider);
        market.withdrawStake();
    }

    /// At readyAt exactly the unbonding stake leaves; the bonded rest stays; nothing is left to
    /// withdraw afterwards.
    function test_withdrawStake_atReadyAt() public {
        _bond(provider, BOND);
        _requestUnbonding(provider, 100e18);
        vm.warp(block.timestamp + 8 days);
        uint256 before = token.balanceOf(provider);
        vm.expectEmit(address(market));
        emit IBonds.StakeWithdrawn(provider, 100e18);
        vm.prank(provider);
        assertEq(market.withdrawStake(), 100e18);
        assertEq(token.balanceOf(provider), before + 100e18);
        _assertBond(provider, BOND - 100e18, 0, 0);
        assertEq(token.balanceOf(address(market)), BOND - 100e18);

        vm.expectRevert(abi.encodeWithSelector(IBonds.MarketNothingToWithdraw.selector, provider));
        vm.prank(provider);
        market.withdrawStake();
    }

    /// Unbonding stake stays slashable: a dispute that exhausts the bonded stake takes from it,
    /// and the provider withdraws only the rest.
    function test_withdrawStake_afterSlashOfUnbondingStake() public {
        _openBook(poster, 2, BOOK_MAX);
        _bond(provider, 80e18);
        _requestUnbonding(provider, 60e18); // bonded 20, unbonding 60
        uint256 readyAt = block.timestamp + 8 days;
        Order memory o = _order(poster, 0, 0); // slashes 50
        vm.warp(o.deadline + 1);
        (uint256 slashed,) = _dispute(o, provider);
        assertEq(slashed, 50e18);
        _assertBond(provider, 0, 30e18, readyAt);
        vm.warp(readyAt);
        vm.prank(provider);
        assertEq(market.withdrawStake(), 30e18);
    }

    /// A dispute may take the whole unbonding balance: nothing is left to withdraw.
    function test_RevertWhen_withdrawStakeAfterUnbondingFullySlashed() public {
        _openBook(poster, 2, BOOK_MAX);
        _bond(provider, 40e18);
        _requestUnbonding(provider, 40e18);
        Order memory o = _order(poster, 0, 0);
        vm.warp(o.deadline + 1);
        (uint256 slashed,) = _dispute(o, provider);
        assertEq(slashed, 40e18);
        vm.warp(block.timestamp + 8 days);
        vm.expectRevert(abi.encodeWithSelector(IBonds.MarketNothingToWithdraw.selector, provider));
        vm.prank(provider);
        market.withdrawStake();
    }

    function testFuzz_bond_roundTrip(uint256 amount, uint256 unbond, uint256 wait) public {
        amount = bound(amount, 1, 1_000_000e18);
        unbond = bound(unbond, 1, amount);
        wait = bound(wait, 0, 20 days);
        _bond(provider, amount);
        _requestUnbonding(provider, unbond);
        uint256 readyAt = block.timestamp + 8 days;
        skip(wait);
        vm.prank(provider);
        if (block.timestamp < readyAt) {
            vm.expectRevert(abi.encodeWithSelector(IBonds.MarketUnbondingNotReady.selector, provider, readyAt));
            market.withdrawStake();
        } else {
            assertEq(market.withdrawStake(), unbond);
        }
        assertEq(token.balanceOf(address(market)), market.bond(provider).bonded + market.bond(provider).unbonding);
    }
}
