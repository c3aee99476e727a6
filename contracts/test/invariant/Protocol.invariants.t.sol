// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {TGridTest} from "../utils/TGridTest.sol";
import {ProtocolHandler} from "./ProtocolHandler.sol";
import {PublicInputBoundVerifier} from "../mocks/VerifierMocks.sol";
import {ITaskEscrow} from "../../interfaces/ITaskEscrow.sol";
import {IStaking} from "../../interfaces/IStaking.sol";

/// @notice Protocol-wide invariants under random posting, accepting, cancelling, expiring,
/// settling, claiming settled tasks, fee changes, staking, unbonding, withdrawing and time travel.
/// @dev Settlement here uses PublicInputBoundVerifier (test only: accepts only a proof bound to the
/// batch's public input) so that batches can be settled at fuzzing speed; the real Groth16 check
/// is covered by the unit and attack suites.
contract ProtocolInvariantTest is TGridTest {
    ProtocolHandler internal handler;
    address[] internal actors;

    function setUp() public override {
        super.setUp();
        PublicInputBoundVerifier v = new PublicInputBoundVerifier();
        vm.prank(address(timelock));
        settlement.setVerifier(address(v));

        address[] memory posters = new address[](3);
        address[] memory providers = new address[](3);
        for (uint256 i = 0; i < 3; ++i) {
            posters[i] = makeAddr(string.concat("inv poster ", vm.toString(i)));
            providers[i] = makeAddr(string.concat("inv provider ", vm.toString(i)));
            assertTrue(token.transfer(posters[i], 100_000e18));
            assertTrue(token.transfer(providers[i], 50_000e18));
            vm.prank(posters[i]);
            token.approve(address(escrow), type(uint256).max);
            vm.startPrank(providers[i]);
            token.approve(address(staking), type(uint256).max);
            staking.stake(5_000e18);
            vm.stopPrank();
            actors.push(posters[i]);
            actors.push(providers[i]);
        }
        handler = new ProtocolHandler(
            token, staking, escrow, settlement, v, MODEL, ROOT_A, sequencer, address(timelock), posters, providers
        );

        bytes4[] memory selectors = new bytes4[](12);
        selectors[0] = ProtocolHandler.stake.selector;
        selectors[1] = ProtocolHandler.requestUnbonding.selector;
        selectors[2] = ProtocolHandler.withdraw.selector;
        selectors[3] = ProtocolHandler.claimSettled.selector;
        selectors[4] = ProtocolHandler.postTask.selector;
        selectors[5] = ProtocolHandler.acceptTask.selector;
        selectors[6] = ProtocolHandler.cancelTask.selector;
        selectors[7] = ProtocolHandler.expireTask.selector;
        selectors[8] = ProtocolHandler.settleBatch.selector;
        selectors[9] = ProtocolHandler.sweepFees.selector;
        selectors[10] = ProtocolHandler.warp.selector;
        selectors[11] = ProtocolHandler.setProtocolFee.selector;
        targetSelector(FuzzSelector({addr: address(handler), selectors: selectors}));
        targetContract(address(handler));
    }

    function _sumProviders() internal view returns (uint256 bonded, uint256 unbonding) {
        for (uint256 i = 0; i < handler.providerCount(); ++i) {
            IStaking.ProviderAccount memory a = staking.account(handler.providers(i));
            bonded += a.bonded;
            unbonding += a.unbonding;
        }
    }

    /// Sum of the pay of Settled, unclaimed tasks, as the escrow reports it.
    function _sumClaimablePay() internal view returns (uint256 pay) {
        for (uint256 i = 0; i < handler.taskCount(); ++i) {
            (, uint256 p,) = escrow.claimable(handler.taskIds(i));
            pay += p;
        }
    }

    /// Token conservation: every token is held by an account, the escrow (open rewards, unclaimed
    /// pay of settled tasks, accrued fees) or Staking (bonded and unbonding stake), and the supply
    /// never changes.
    function invariant_tokenConservation() public view {
        uint256 held = token.balanceOf(address(this)) + token.balanceOf(address(timelock))
            + token.balanceOf(address(escrow)) + token.balanceOf(address(staking));
        address[6] memory fixedActors = [poster, poster2, provider, provider2, stranger, sequencer];
        for (uint256 i = 0; i < fixedActors.length; ++i) {
            held += token.balanceOf(fixedActors[i]);
        }
        for (uint256 i = 0; i < actors.length; ++i) {
            held += token.balanceOf(actors[i]);
        }
        assertEq(held, token.TOTAL_SUPPLY());
        assertEq(token.totalSupply(), token.TOTAL_SUPPLY());
    }

    /// Escrow solvency: its balance is exactly the rewards of Posted and Accepted tasks, plus the
    /// unpaid pay of Settled, unclaimed tasks (as fixed at settlement, whatever the fee did since),
    /// plus accrued fees (so every liability can be paid); the fees are exactly those accrued by
    /// settlements and not swept.
    function invariant_escrowSolvent() public view {
        uint256 unclaimed = _sumClaimablePay();
        assertEq(unclaimed, handler.ghostUnclaimedPay());
        assertEq(escrow.accruedFees(), handler.ghostFeesAccrued());
        assertEq(token.balanceOf(address(escrow)), handler.ghostOpenRewards() + unclaimed + escrow.accruedFees());
    }

    /// Staking holds exactly the bonded and unbonding stake.
    function invariant_stakingBacked() public view {
        (uint256 bonded, uint256 unbonding) = _sumProviders();
        // The fixture's provider/provider2 never stake in this suite.
        assertEq(token.balanceOf(address(staking)), bonded + unbonding);
    }

    /// No task is paid twice: settled, cancelled or expired at most once, a batch repeating a task
    /// never settles, a settled task is claimed at most once and only by its provider (a claim
    /// repeating a task or naming one the caller may not claim never succeeds), and every claim
    /// pays exactly the pay fixed at settlement.
    function invariant_noTaskPaidTwice() public view {
        assertEq(handler.ghostDoublePayouts(), 0);
        assertEq(handler.ghostDoubleClaims(), 0);
        assertEq(handler.ghostWrongPay(), 0);
        for (uint256 i = 0; i < handler.taskCount(); ++i) {
            bytes32 id = handler.taskIds(i);
            ITaskEscrow.TaskStatus s = escrow.task(id).status;
            uint256 payouts = handler.ghostPayouts(id);
            bool closed = s == ITaskEscrow.TaskStatus.Settled || s == ITaskEscrow.TaskStatus.Cancelled
                || s == ITaskEscrow.TaskStatus.Expired;
            assertEq(payouts, closed ? 1 : 0);
            (bool claimable,,) = escrow.claimable(id);
            bool claimed = s == ITaskEscrow.TaskStatus.Settled && !claimable;
            assertEq(handler.ghostClaims(id), claimed ? 1 : 0);
        }
    }

    /// No stake leaves while locked or unbonding: locked collateral never exceeds bonded stake,
    /// and no withdrawal happened before its unbonding delay or above the unbonding balance.
    function invariant_noStakeWithdrawnWhileLockedOrUnbonding() public view {
        assertEq(handler.ghostEarlyWithdrawals(), 0);
        uint256 locked;
        for (uint256 i = 0; i < handler.providerCount(); ++i) {
            IStaking.ProviderAccount memory a = staking.account(handler.providers(i));
            assertLe(a.locked, a.bonded);
            locked += a.locked;
        }
        // Locked collateral is exactly the collateral of Accepted tasks and of Settled tasks not
        // claimed yet.
        uint256 expected;
        for (uint256 i = 0; i < handler.taskCount(); ++i) {
            bytes32 id = handler.taskIds(i);
            ITaskEscrow.Task memory t = escrow.task(id);
            (bool claimable,, uint256 collateral) = escrow.claimable(id);
            if (t.status == ITaskEscrow.TaskStatus.Accepted) expected += t.collateral;
            if (claimable) {
                assertEq(collateral, t.collateral);
                expected += collateral;
            }
        }
        assertEq(locked, expected);
    }

    /// Reputation counters match the outcomes: `tasksSettled` counts claimed settlements,
    /// `tasksSlashed` expired accepted tasks.
    function invariant_reputationMatchesOutcomes() public view {
        uint256 settled;
        uint256 slashed;
        for (uint256 i = 0; i < handler.providerCount(); ++i) {
            (uint256 s, uint256 x) = staking.reputation(handler.providers(i));
            settled += s;
            slashed += x;
        }
        assertEq(settled, handler.ghostClaimed());
        assertLe(handler.ghostClaimed(), handler.ghostSettled());
        uint256 expiredAccepted;
        for (uint256 i = 0; i < handler.taskCount(); ++i) {
            ITaskEscrow.Task memory t = escrow.task(handler.taskIds(i));
            if (t.status == ITaskEscrow.TaskStatus.Expired && t.provider != address(0)) expiredAccepted++;
        }
        assertEq(slashed, expiredAccepted);
    }

    /// The handler's actions really reach the protocol (guards against a handler whose try/catch
    /// silently swallows every call): a fixed sequence posts, accepts, settles, expires and claims.
    function test_handler_exercisesEveryPath() public {
        handler.postTask(0, 100e18, 1e18, 1 days);
        handler.postTask(1, 200e18, 0, 1 hours);
        handler.acceptTask(0, 0);
        handler.acceptTask(1, 1);
        handler.settleBatch(0, 1, 0); // repeats a task: must be rejected
        assertEq(handler.ghostSettled(), 0);
        handler.settleBatch(0, 1, 255);
        assertEq(handler.ghostSettled(), 1);
        for (uint256 i = 0; i < 4; ++i) {
            handler.warp(12 hours);
        }
        handler.expireTask(1);
        assertEq(handler.ghostExpired(), 1);
        handler.setProtocolFee(2_000); // after settlement: the claim still pays the 1 % split
        handler.claimSettled(0, 0, 12, 32); // adds an expired task: must be rejected
        assertEq(handler.ghostClaimed(), 0);
        handler.claimSettled(1, 0, 12, 255); // provider 1 has nothing to claim
        assertEq(handler.ghostClaimed(), 0);
        handler.claimSettled(0, 0, 12, 255);
        assertEq(handler.ghostClaimed(), 1);
        handler.claimSettled(0, 0, 12, 255); // nothing left to claim
        assertEq(handler.ghostClaimed(), 1);
        handler.sweepFees();
        handler.requestUnbonding(2, 1e18);
        for (uint256 i = 0; i < 14; ++i) {
            handler.warp(12 hours); // past the 7-day unbonding delay
        }
        handler.withdraw(2);
        assertEq(handler.ghostWithdrawn(), 1e18);
        invariant_tokenConservation();
        invariant_escrowSolvent();
        invariant_stakingBacked();
        invariant_noTaskPaidTwice();
        invariant_noStakeWithdrawnWhileLockedOrUnbonding();
        invariant_reputationMatchesOutcomes();
    }
}
