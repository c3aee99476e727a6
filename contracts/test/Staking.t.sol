// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";

import {TGridTest} from "./utils/TGridTest.sol";
import {IStaking} from "../interfaces/IStaking.sol";
import {Staking} from "../staking/Staking.sol";

contract StakingTest is TGridTest {
    function test_stake_bondsTokens() public {
        vm.expectEmit(address(staking));
        emit IStaking.Staked(provider, STAKE, STAKE);
        _stake(provider, STAKE);
        IStaking.ProviderAccount memory a = staking.account(provider);
        assertEq(a.bonded, STAKE);
        assertEq(staking.freeStake(provider), STAKE);
        assertEq(token.balanceOf(address(staking)), STAKE);
    }

    function test_RevertWhen_stakeZero() public {
        vm.expectRevert(IStaking.StakingZeroAmount.selector);
        _stake(provider, 0);
    }

    function test_RevertWhen_stakeAboveUint96() public {
        uint256 big = uint256(type(uint96).max) + 1;
        vm.expectRevert(abi.encodeWithSelector(IStaking.StakingAmountTooLarge.selector, big));
        _stake(provider, big);
    }

    function test_requestUnbonding_movesFreeStake() public {
        _stake(provider, STAKE);
        vm.expectEmit(address(staking));
        emit IStaking.UnbondingRequested(provider, 400e18, 400e18, block.timestamp + 7 days);
        vm.prank(provider);
        staking.requestUnbonding(400e18);
        IStaking.ProviderAccount memory a = staking.account(provider);
        assertEq(a.bonded, STAKE - 400e18);
        assertEq(a.unbonding, 400e18);
        assertEq(a.unbondingReadyAt, block.timestamp + 7 days);
    }

    function test_requestUnbonding_restartsTimerForWholeBalance() public {
        _stake(provider, STAKE);
        vm.prank(provider);
        staking.requestUnbonding(100e18);
        skip(3 days);
        vm.prank(provider);
        staking.requestUnbonding(100e18);
        IStaking.ProviderAccount memory a = staking.account(provider);
        assertEq(a.unbonding, 200e18);
        assertEq(a.unbondingReadyAt, block.timestamp + 7 days);
    }

    function test_RevertWhen_requestUnbondingZero() public {
        vm.expectRevert(IStaking.StakingZeroAmount.selector);
        vm.prank(provider);
        staking.requestUnbonding(0);
    }

    function test_RevertWhen_requestUnbondingLockedStake() public {
        _stake(provider, STAKE);
        vm.prank(address(escrow));
        staking.lockCollateral(provider, 9_500e18);
        vm.expectRevert(
            abi.encodeWithSelector(IStaking.StakingInsufficientFreeStake.selector, provider, 500e18, 600e18)
        );
        vm.prank(provider);
        staking.requestUnbonding(600e18);
    }

    function test_withdraw_afterDelay() public {
        _stake(provider, STAKE);
        vm.prank(provider);
        staking.requestUnbonding(STAKE);
        skip(7 days);
        uint256 before = token.balanceOf(provider);
        vm.expectEmit(address(staking));
        emit IStaking.Withdrawn(provider, STAKE);
        vm.prank(provider);
        assertEq(staking.withdraw(), STAKE);
        assertEq(token.balanceOf(provider), before + STAKE);
        assertEq(staking.account(provider).unbonding, 0);
    }

    function test_RevertWhen_withdrawBeforeDelay() public {
        _stake(provider, STAKE);
        vm.prank(provider);
        staking.requestUnbonding(STAKE);
        uint256 readyAt = block.timestamp + 7 days;
        skip(7 days - 1);
        vm.expectRevert(abi.encodeWithSelector(IStaking.StakingUnbondingNotReady.selector, provider, readyAt));
        vm.prank(provider);
        staking.withdraw();
    }

    function test_RevertWhen_withdrawNothing() public {
        _stake(provider, STAKE);
        vm.expectRevert(abi.encodeWithSelector(IStaking.StakingNothingToWithdraw.selector, provider));
        vm.prank(provider);
        staking.withdraw();
    }

    function test_lockCollateral_locksFreeStake() public {
        _stake(provider, STAKE);
        vm.expectEmit(address(staking));
        emit IStaking.CollateralLocked(provider, 300e18, 300e18);
        vm.prank(address(escrow));
        staking.lockCollateral(provider, 300e18);
        assertEq(staking.account(provider).locked, 300e18);
        assertEq(staking.freeStake(provider), STAKE - 300e18);
    }

    function test_RevertWhen_lockCollateralBelowMinStake() public {
        _stake(provider, 99e18);
        vm.expectRevert(abi.encodeWithSelector(IStaking.StakingBelowMinimumStake.selector, provider, 99e18, 100e18));
        vm.prank(address(escrow));
        staking.lockCollateral(provider, 1e18);
    }

    function test_RevertWhen_lockCollateralAboveFreeStake() public {
        _stake(provider, 100e18);
        vm.expectRevert(
            abi.encodeWithSelector(IStaking.StakingInsufficientFreeStake.selector, provider, 100e18, 101e18)
        );
        vm.prank(address(escrow));
        staking.lockCollateral(provider, 101e18);
    }

    function test_RevertWhen_lockCollateralNotEscrow() public {
        vm.expectRevert(abi.encodeWithSelector(IStaking.StakingUnauthorizedEscrow.selector, stranger));
        vm.prank(stranger);
        staking.lockCollateral(provider, 1);
    }

    function test_RevertWhen_releaseSettledCollateralNotEscrow() public {
        vm.expectRevert(abi.encodeWithSelector(IStaking.StakingUnauthorizedEscrow.selector, address(settlement)));
        vm.prank(address(settlement));
        staking.releaseSettledCollateral(provider, 0, 1);
        vm.expectRevert(abi.encodeWithSelector(IStaking.StakingUnauthorizedEscrow.selector, provider));
        vm.prank(provider);
        staking.releaseSettledCollateral(provider, 0, 1);
    }

    function test_RevertWhen_slashNotEscrow() public {
        vm.expectRevert(abi.encodeWithSelector(IStaking.StakingUnauthorizedEscrow.selector, provider));
        vm.prank(provider);
        staking.slash(provider, 1, poster);
    }

    function test_releaseSettledCollateral_unlocksAndCounts() public {
        _stake(provider, STAKE);
        vm.startPrank(address(escrow));
        staking.lockCollateral(provider, 800e18);
        vm.expectEmit(address(staking));
        emit IStaking.SettledCollateralReleased(provider, 500e18, 3);
        staking.releaseSettledCollateral(provider, 500e18, 3);
        vm.stopPrank();
        IStaking.ProviderAccount memory a = staking.account(provider);
        assertEq(a.locked, 300e18);
        assertEq(a.bonded, STAKE); // released collateral stays bonded
        assertEq(staking.freeStake(provider), STAKE - 300e18);
        assertEq(token.balanceOf(address(staking)), STAKE); // no token moves
        (uint256 settled, uint256 slashedCount) = staking.reputation(provider);
        assertEq(settled, 3);
        assertEq(slashedCount, 0);
        assertEq(a.tasksSettled, 3);
    }

    /// The escrow only ever releases collateral it locked; releasing more is an arithmetic panic.
    function test_RevertWhen_releaseSettledCollateralAboveLocked() public {
        _stake(provider, STAKE);
        vm.startPrank(address(escrow));
        staking.lockCollateral(provider, 100e18);
        vm.expectRevert(abi.encodeWithSignature("Panic(uint256)", 0x11));
        staking.releaseSettledCollateral(provider, 100e18 + 1, 1);
        vm.stopPrank();
    }

    function test_slash_paysPosterAndTreasury() public {
        _stake(provider, STAKE);
        vm.startPrank(address(escrow));
        staking.lockCollateral(provider, 1_000e18);
        uint256 posterBefore = token.balanceOf(poster);
        uint256 treasuryBefore = token.balanceOf(address(timelock));
        // 50% of the collateral slashed, half of that to the poster.
        vm.expectEmit(address(staking));
        emit IStaking.Slashed(provider, poster, 1_000e18, 500e18, 250e18, 250e18);
        uint256 toPoster = staking.slash(provider, 1_000e18, poster);
        vm.stopPrank();
        assertEq(toPoster, 250e18);
        assertEq(token.balanceOf(poster), posterBefore + 250e18);
        assertEq(token.balanceOf(address(timelock)), treasuryBefore + 250e18);
        IStaking.ProviderAccount memory a = staking.account(provider);
        assertEq(a.locked, 0);
        assertEq(a.bonded, STAKE - 500e18);
        (, uint256 slashedCount) = staking.reputation(provider);
        assertEq(slashedCount, 1);
    }

    function test_slash_zeroFractionOnlyUnlocks() public {
        vm.prank(address(timelock));
        staking.setSlashParameters(0, 5_000);
        _stake(provider, STAKE);
        vm.startPrank(address(escrow));
        staking.lockCollateral(provider, 1_000e18);
        assertEq(staking.slash(provider, 1_000e18, poster), 0);
        vm.stopPrank();
        assertEq(staking.account(provider).bonded, STAKE);
        assertEq(staking.account(provider).locked, 0);
    }

    function testFuzz_slash_splitsExactly(uint96 collateral, uint16 slashBps, uint16 shareBps) public {
        slashBps = uint16(bound(slashBps, 0, 10_000));
        shareBps = uint16(bound(shareBps, 0, 10_000));
        uint256 c = bound(collateral, 1, 500_000e18);
        vm.prank(address(timelock));
        staking.setSlashParameters(slashBps, shareBps);
        _stake(provider, 500_000e18);
        uint256 supplyHeld =
            token.balanceOf(address(staking)) + token.balanceOf(poster) + token.balanceOf(address(timelock));
        vm.startPrank(address(escrow));
        staking.lockCollateral(provider, c);
        uint256 toPoster = staking.slash(provider, c, poster);
        vm.stopPrank();
        uint256 slashed = c * slashBps / 10_000;
        assertEq(toPoster, slashed * shareBps / 10_000);
        assertEq(staking.account(provider).bonded, 500_000e18 - slashed);
        assertEq(token.balanceOf(address(staking)), 500_000e18 - slashed);
        assertEq(
            token.balanceOf(address(staking)) + token.balanceOf(poster) + token.balanceOf(address(timelock)), supplyHeld
        );
    }

    function testFuzz_unbonding_timing(uint96 amount, uint32 wait) public {
        uint256 a = bound(amount, 1, 1_000_000e18);
        uint256 w = bound(wait, 0, 30 days);
        _stake(provider, a);
        vm.prank(provider);
        staking.requestUnbonding(a);
        skip(w);
        vm.prank(provider);
        if (w < 7 days) {
            vm.expectRevert(
                abi.encodeWithSelector(
                    IStaking.StakingUnbondingNotReady.selector, provider, block.timestamp - w + 7 days
                )
            );
            staking.withdraw();
        } else {
            assertEq(staking.withdraw(), a);
        }
    }

    // ------------------------------------------------------------------ governance setters

    function test_setters_ownerOnlyAndEmit() public {
        vm.startPrank(address(timelock));
        vm.expectEmit(address(staking));
        emit IStaking.MinStakeUpdated(5e18);
        staking.setMinStake(5e18);
        vm.expectEmit(address(staking));
        emit IStaking.UnbondingDelayUpdated(1 days);
        staking.setUnbondingDelay(1 days);
        vm.expectEmit(address(staking));
        emit IStaking.SlashParametersUpdated(1_000, 9_000);
        staking.setSlashParameters(1_000, 9_000);
        vm.expectEmit(address(staking));
        emit IStaking.TreasuryUpdated(stranger);
        staking.setTreasury(stranger);
        vm.stopPrank();
        assertEq(staking.minStake(), 5e18);
        assertEq(staking.unbondingDelay(), 1 days);
        assertEq(staking.slashBps(), 1_000);
        assertEq(staking.slashPosterShareBps(), 9_000);
        assertEq(staking.treasury(), stranger);
        assertEq(staking.token(), address(token));
        assertEq(staking.escrow(), address(escrow));
        assertEq(staking.owner(), address(timelock));
    }

    function test_RevertWhen_setterCalledByNonOwner() public {
        vm.startPrank(stranger);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        staking.setMinStake(1);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        staking.setUnbondingDelay(1);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        staking.setSlashParameters(1, 1);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        staking.setTreasury(stranger);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        staking.bindEscrow(stranger);
        vm.stopPrank();
    }

    function test_RevertWhen_invalidParameters() public {
        vm.startPrank(address(timelock));
        vm.expectRevert(abi.encodeWithSelector(IStaking.StakingInvalidBps.selector, 10_001));
        staking.setSlashParameters(10_001, 0);
        vm.expectRevert(abi.encodeWithSelector(IStaking.StakingInvalidBps.selector, 10_001));
        staking.setSlashParameters(0, 10_001);
        vm.expectRevert(abi.encodeWithSelector(IStaking.StakingUnbondingDelayTooLong.selector, 366 days, 365 days));
        staking.setUnbondingDelay(366 days);
        vm.expectRevert(IStaking.StakingZeroAddress.selector);
        staking.setTreasury(address(0));
        uint256 big = uint256(type(uint96).max) + 1;
        vm.expectRevert(abi.encodeWithSelector(IStaking.StakingAmountTooLarge.selector, big));
        staking.setMinStake(big);
        vm.stopPrank();
    }

    function test_RevertWhen_bindEscrowTwice() public {
        vm.expectRevert(abi.encodeWithSelector(IStaking.StakingEscrowAlreadyBound.selector, address(escrow)));
        vm.prank(address(timelock));
        staking.bindEscrow(stranger);
    }

    function test_RevertWhen_bindEscrowZero() public {
        Staking fresh = new Staking(address(this), IERC20(address(token)), address(this), 0, 0, 0, 0);
        vm.expectRevert(IStaking.StakingZeroAddress.selector);
        fresh.bindEscrow(address(0));
    }

    function test_RevertWhen_constructedWithZeroToken() public {
        vm.expectRevert(IStaking.StakingZeroAddress.selector);
        new Staking(address(this), IERC20(address(0)), address(this), 0, 0, 0, 0);
    }
}
