// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";

import {MarketTest} from "./MarketTest.sol";
import {IModelRegistry} from "../../interfaces/IModelRegistry.sol";
import {IBonds} from "../../interfaces/market/IBonds.sol";
import {ITaskMarket} from "../../interfaces/market/ITaskMarket.sol";
import {Order} from "../../libraries/OrderLib.sol";
import {TaskMarket} from "../../market/TaskMarket.sol";
import {TGridTimelock} from "../../governance/TGridTimelock.sol";
import {AcceptAllVerifier, RevertingVerifier} from "../mocks/VerifierMocks.sol";

/// @notice The market's governed parameters: owner-only setters, their bounds and events, views,
/// fee sweeping, and delay changes applying only to later closes and unbondings.
contract MarketGovernanceTest is MarketTest {
    uint256[8] internal zeroProof;
    address internal gov;

    function setUp() public override {
        super.setUp();
        gov = address(timelock);
    }

    function _params() internal view returns (ITaskMarket.Parameters memory) {
        return market.parameters();
    }

    // ------------------------------------------------------------------ ownership and views

    function test_parameters_deployDefaults() public view {
        ITaskMarket.Parameters memory p = _params();
        assertEq(p.verifier, address(verifier));
        assertEq(p.maxBatchSize, 256);
        assertEq(p.protocolFeeBps, 100);
        assertEq(p.settlerShareBps, 2_000);
        assertEq(p.selfSettlementWindow, 1 hours);
        assertEq(p.maxDeadlineDelay, 7 days);
        assertEq(p.disputeWindow, 1 days);
        assertEq(p.depositUnlockDelay, 8 days);
        assertEq(p.unbondingDelay, 8 days);
        assertEq(p.minPayment, 1e18);
        assertEq(p.treasury, address(timelock));
        assertEq(market.owner(), address(timelock));
        assertEq(market.token(), address(token));
        assertEq(market.registry(), address(registry));
        assertEq(market.accruedFees(), 0);
        assertTrue(market.isSequencer(sequencer));
        assertFalse(market.isSequencer(stranger));
        assertEq(market.MAX_PROTOCOL_FEE_BPS(), 2_000);
        assertEq(market.MAX_BATCH_SIZE_LIMIT(), 4096);
        assertEq(market.MIN_SELF_SETTLEMENT_WINDOW(), 5 minutes);
        assertEq(market.MAX_SELF_SETTLEMENT_WINDOW(), 7 days);
    }

    /// Every setter is owner-only (the deployer handed everything to the timelock).
    function test_RevertWhen_setterCalledByNonOwner() public {
        address[2] memory callers = [stranger, address(deployer)];
        for (uint256 i = 0; i < callers.length; ++i) {
            address c = callers[i];
            bytes memory err = abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, c);
            vm.startPrank(c);
            vm.expectRevert(err);
            market.setSequencer(stranger, true);
            vm.expectRevert(err);
            market.setVerifier(address(verifier), zeroProof, 0);
            vm.expectRevert(err);
            market.setMaxBatchSize(10);
            vm.expectRevert(err);
            market.setFees(0, 0);
            vm.expectRevert(err);
            market.setSelfSettlementWindow(2 hours);
            vm.expectRevert(err);
            market.setDelays(7 days, 1 days, 8 days, 8 days);
            vm.expectRevert(err);
            market.setMinPayment(0);
            vm.expectRevert(err);
            market.setTreasury(c);
            vm.stopPrank();
        }
    }

    /// The constructor checks its parameters as the setters do.
    function test_RevertWhen_constructedWithBadArguments() public {
        ITaskMarket.Parameters memory p = _params();
        IERC20 t = IERC20(address(token));
        IModelRegistry r = IModelRegistry(address(registry));
        vm.expectRevert(ITaskMarket.MarketZeroAddress.selector);
        new TaskMarket(gov, IERC20(address(0)), r, p);
        vm.expectRevert(ITaskMarket.MarketZeroAddress.selector);
        new TaskMarket(gov, t, IModelRegistry(address(0)), p);
        p.treasury = address(0);
        vm.expectRevert(ITaskMarket.MarketZeroAddress.selector);
        new TaskMarket(gov, t, r, p);
        p = _params();
        p.verifier = stranger;
        vm.expectRevert(abi.encodeWithSelector(ITaskMarket.MarketNotAContract.selector, stranger));
        new TaskMarket(gov, t, r, p);
        p = _params();
        p.protocolFeeBps = 2_001;
        vm.expectRevert(abi.encodeWithSelector(ITaskMarket.MarketInvalidBps.selector, 2_001, 2_000));
        new TaskMarket(gov, t, r, p);
        p = _params();
        p.unbondingDelay = 8 days - 1;
        vm.expectRevert(
            abi.encodeWithSelector(ITaskMarket.MarketInvalidDelays.selector, 7 days, 1 days, 8 days, 8 days - 1)
        );
        new TaskMarket(gov, t, r, p);
    }

    // ------------------------------------------------------------------ sequencer and verifier

    function test_setSequencer_grantsAndRevokes() public {
        vm.expectEmit(address(market));
        emit ITaskMarket.SequencerUpdated(stranger, true);
        vm.prank(gov);
        market.setSequencer(stranger, true);
        assertTrue(market.isSequencer(stranger));
        vm.expectEmit(address(market));
        emit ITaskMarket.SequencerUpdated(stranger, false);
        vm.prank(gov);
        market.setSequencer(stranger, false);
        assertFalse(market.isSequencer(stranger));
    }

    function test_RevertWhen_setSequencerZero() public {
        vm.expectRevert(ITaskMarket.MarketZeroAddress.selector);
        vm.prank(gov);
        market.setSequencer(address(0), true);
    }

    function test_setVerifier_updates() public {
        _installBoundVerifier();
        assertEq(_params().verifier, address(boundVerifier));
        // Back to the real (one-constraint) Groth16 verifier, with a real proof under its key.
        uint256[8] memory proof = _prove(7);
        vm.expectEmit(address(market));
        emit ITaskMarket.VerifierUpdated(address(verifier));
        vm.prank(gov);
        market.setVerifier(address(verifier), proof, 7);
        assertEq(_params().verifier, address(verifier));
    }

    function test_RevertWhen_setVerifierWithoutCode() public {
        vm.expectRevert(abi.encodeWithSelector(ITaskMarket.MarketNotAContract.selector, stranger));
        vm.prank(gov);
        market.setVerifier(stranger, zeroProof, 0);
        vm.expectRevert(abi.encodeWithSelector(ITaskMarket.MarketNotAContract.selector, address(0)));
        vm.prank(gov);
        market.setVerifier(address(0), zeroProof, 0);
    }

    /// A vote cannot install a verifier that accepts everything: the market would pay for forged
    /// batches.
    function test_RevertWhen_setVerifierAcceptsEverything() public {
        address all = address(new AcceptAllVerifier());
        vm.expectRevert(abi.encodeWithSelector(ITaskMarket.MarketVerifierAcceptsWrongInput.selector, all));
        vm.prank(gov);
        market.setVerifier(all, zeroProof, 0);
        assertEq(_params().verifier, address(verifier));
    }

    /// Nor one that rejects (or reverts on) a valid proof under its key: settlement would stop.
    function test_RevertWhen_setVerifierRejectsGoodProof() public {
        _installBoundVerifier();
        vm.expectRevert(abi.encodeWithSelector(ITaskMarket.MarketVerifierRejectsGoodProof.selector, address(verifier)));
        vm.prank(gov);
        market.setVerifier(address(verifier), zeroProof, 7);
        address reverting = address(new RevertingVerifier());
        vm.expectRevert(abi.encodeWithSelector(ITaskMarket.MarketVerifierRejectsGoodProof.selector, reverting));
        vm.prank(gov);
        market.setVerifier(reverting, _prove(7), 7);
        assertEq(_params().verifier, address(boundVerifier));
    }

    // ------------------------------------------------------------------ bounds

    function test_setMaxBatchSize_bounds() public {
        vm.startPrank(gov);
        vm.expectRevert(abi.encodeWithSelector(ITaskMarket.MarketInvalidMaxBatchSize.selector, 0));
        market.setMaxBatchSize(0);
        vm.expectRevert(abi.encodeWithSelector(ITaskMarket.MarketInvalidMaxBatchSize.selector, 4097));
        market.setMaxBatchSize(4097);
        market.setMaxBatchSize(1);
        assertEq(_params().maxBatchSize, 1);
        vm.expectEmit(address(market));
        emit ITaskMarket.MaxBatchSizeUpdated(4096);
        market.setMaxBatchSize(4096);
        vm.stopPrank();
        assertEq(_params().maxBatchSize, 4096);
    }

    function test_setFees_bounds() public {
        vm.startPrank(gov);
        vm.expectRevert(abi.encodeWithSelector(ITaskMarket.MarketInvalidBps.selector, 2_001, 2_000));
        market.setFees(2_001, 0);
        vm.expectRevert(abi.encodeWithSelector(ITaskMarket.MarketInvalidBps.selector, 10_001, 10_000));
        market.setFees(0, 10_001);
        vm.expectEmit(address(market));
        emit ITaskMarket.FeesUpdated(2_000, 10_000);
        market.setFees(2_000, 10_000);
        vm.stopPrank();
        assertEq(_params().protocolFeeBps, 2_000);
        assertEq(_params().settlerShareBps, 10_000);
    }

    /// Settlement uses the fees in force when it happens.
    function test_setFees_appliesToLaterSettlements() public {
        _installBoundVerifier();
        _openBook(poster, 4, BOOK_MAX);
        _settleBound(_items1(_item(_order(poster, 0, 0), provider)), stranger);
        vm.prank(gov);
        market.setFees(2_000, 10_000); // 20 %, all of it to the settler
        _settleBound(_items1(_item(_order(poster, 0, 1), provider)), stranger);
        assertEq(market.earner(provider).earnings, (PAYMENT - PAYMENT / 100) + (PAYMENT - PAYMENT / 5));
        assertEq(market.earner(stranger).earnings, PAYMENT / 100 / 5 + PAYMENT / 5);
        assertEq(market.accruedFees(), PAYMENT / 100 - PAYMENT / 100 / 5);
    }

    function test_setSelfSettlementWindow_bounds() public {
        vm.startPrank(gov);
        vm.expectRevert(abi.encodeWithSelector(ITaskMarket.MarketInvalidSelfSettlementWindow.selector, 5 minutes - 1));
        market.setSelfSettlementWindow(5 minutes - 1);
        vm.expectRevert(abi.encodeWithSelector(ITaskMarket.MarketInvalidSelfSettlementWindow.selector, 7 days + 1));
        market.setSelfSettlementWindow(7 days + 1);
        market.setSelfSettlementWindow(5 minutes);
        assertEq(_params().selfSettlementWindow, 5 minutes);
        vm.expectEmit(address(market));
        emit ITaskMarket.SelfSettlementWindowUpdated(7 days);
        market.setSelfSettlementWindow(7 days);
        vm.stopPrank();
        assertEq(_params().selfSettlementWindow, 7 days);
    }

    function _expectBadDelays(uint256 maxDeadline, uint256 window, uint256 unlock, uint256 unbonding) internal {
        vm.expectRevert(
            abi.encodeWithSelector(ITaskMarket.MarketInvalidDelays.selector, maxDeadline, window, unlock, unbonding)
        );
        vm.prank(gov);
        market.setDelays(maxDeadline, window, unlock, unbonding);
    }

    /// @dev The timelock's own delay set to `delay` (a passed proposal calling `updateDelay`).
    function _timelockDelay(uint256 delay) internal {
        vm.prank(address(timelock));
        timelock.updateDelay(delay);
    }

    /// Each ordering rule of the delays, one violation at a time.
    function test_setDelays_eachRule() public {
        _timelockDelay(30 days);
        _expectBadDelays(1 hours - 1, 1 hours, 2 hours, 2 hours); // maxDeadline >= 1 hour
        _expectBadDelays(365 days + 1, 1 hours, 366 days, 366 days); // maxDeadline <= 365 days
        _expectBadDelays(1 hours, 1 hours - 1, 2 hours, 2 hours); // disputeWindow >= 1 hour
        _expectBadDelays(1 hours, 30 days + 1, 2 hours, 31 days + 1 hours); // disputeWindow <= 30 days
        _expectBadDelays(7 days, 1 days, 7 days, 8 days); // depositUnlock > maxDeadline
        _expectBadDelays(1 hours, 1 hours, 730 days + 1, 2 hours); // depositUnlock <= 730 days
        _expectBadDelays(7 days, 1 days, 8 days, 8 days - 1); // unbonding >= maxDeadline + window
        _expectBadDelays(1 hours, 1 hours, 2 hours, 730 days + 1); // unbonding <= 730 days

        // The tightest and the loosest settings pass.
        vm.expectEmit(address(market));
        emit ITaskMarket.DelaysUpdated(1 hours, 1 hours, 1 hours + 1, 2 hours);
        vm.prank(gov);
        market.setDelays(1 hours, 1 hours, 1 hours + 1, 2 hours);
        // The loosest within the timelock's longest delay (30 days): neither unbonding nor the
        // deposit unlock may exceed it.
        vm.prank(gov);
        market.setDelays(29 days, 1 days, 30 days, 30 days);
        ITaskMarket.Parameters memory p = _params();
        assertEq(p.maxDeadlineDelay, 29 days);
        assertEq(p.disputeWindow, 1 days);
        assertEq(p.depositUnlockDelay, 30 days);
        assertEq(p.unbondingDelay, 30 days);
    }

    /// Issue 63, point 5: the timelock-versus-unbonding rule is the market's own. An unbonding
    /// delay longer than the timelock's is refused; a vote that shortened the timelock leaves the
    /// market's owner unable to act until it is slow again; the market cannot be handed to a
    /// faster timelock.
    function test_RevertWhen_governanceFasterThanUnbonding() public {
        vm.expectRevert(
            abi.encodeWithSelector(ITaskMarket.MarketTimelockFasterThanUnbonding.selector, 8 days, 9 days)
        );
        vm.prank(gov);
        market.setDelays(7 days, 2 days, 8 days, 9 days);

        _timelockDelay(1 days);
        vm.expectRevert(
            abi.encodeWithSelector(ITaskMarket.MarketTimelockFasterThanUnbonding.selector, 1 days, 8 days)
        );
        vm.prank(gov);
        market.setFees(2_000, 10_000);
        vm.expectRevert(
            abi.encodeWithSelector(ITaskMarket.MarketTimelockFasterThanUnbonding.selector, 1 days, 8 days)
        );
        vm.prank(gov);
        market.setVerifier(address(verifier), zeroProof, 0);

        _timelockDelay(8 days);
        vm.prank(gov);
        market.setFees(2_000, 10_000);
        assertEq(_params().protocolFeeBps, 2_000);

        TGridTimelock fast = new TGridTimelock(1 days, new address[](0), new address[](0), address(0));
        vm.expectRevert(
            abi.encodeWithSelector(ITaskMarket.MarketTimelockFasterThanUnbonding.selector, 1 days, 8 days)
        );
        vm.prank(gov);
        market.transferOwnership(address(fast));
    }

    /// Issue 63, point 6: every party can leave before any passed vote lands, a verifier change
    /// included. A poster's deposit unlocks after `depositUnlockDelay`, so the timelock must wait
    /// at least that long: a longer unlock delay is refused, and a timelock shortened below it
    /// leaves the owner unable to act (a new verifier included) until it is slow again.
    function test_RevertWhen_governanceFasterThanDepositUnlock() public {
        vm.expectRevert(
            abi.encodeWithSelector(ITaskMarket.MarketTimelockFasterThanDepositUnlock.selector, 8 days, 9 days)
        );
        vm.prank(gov);
        market.setDelays(7 days, 1 days, 9 days, 8 days);

        _timelockDelay(9 days);
        vm.prank(gov);
        market.setDelays(7 days, 1 days, 9 days, 8 days);
        _timelockDelay(8 days);
        vm.expectRevert(
            abi.encodeWithSelector(ITaskMarket.MarketTimelockFasterThanDepositUnlock.selector, 8 days, 9 days)
        );
        vm.prank(gov);
        market.setVerifier(address(verifier), zeroProof, 0);
        vm.expectRevert(
            abi.encodeWithSelector(ITaskMarket.MarketTimelockFasterThanDepositUnlock.selector, 8 days, 9 days)
        );
        vm.prank(gov);
        market.setFees(2_000, 10_000);
        _timelockDelay(9 days);
        vm.prank(gov);
        market.setFees(2_000, 10_000);
        assertEq(_params().protocolFeeBps, 2_000);
    }

    /// A delay change applies to books closed and unbondings requested afterwards only.
    function test_setDelays_appliesToLaterClosesAndUnbondings() public {
        uint32 early = _openBook(poster, 1, 1e18);
        uint32 late = _openBook(poster, 1, 1e18);
        _bond(provider, 100e18);
        _bond(provider2, 100e18);
        vm.prank(poster);
        market.closeBook(early);
        vm.prank(provider);
        market.requestUnbonding(10e18);
        uint256 t0 = block.timestamp;

        _timelockDelay(20 days);
        vm.prank(gov);
        market.setDelays(10 days, 2 days, 20 days, 15 days);
        vm.prank(poster);
        market.closeBook(late);
        vm.prank(provider2);
        market.requestUnbonding(10e18);

        assertEq(market.book(poster, early).unlockAt, t0 + 8 days);
        assertEq(market.book(poster, late).unlockAt, t0 + 20 days);
        assertEq(market.bond(provider).unbondingReadyAt, t0 + 8 days);
        assertEq(market.bond(provider2).unbondingReadyAt, t0 + 15 days);
        vm.warp(t0 + 8 days);
        vm.prank(poster);
        assertEq(market.withdrawBook(early), 1e18);
        vm.prank(provider);
        assertEq(market.withdrawStake(), 10e18);
    }

    /// The dispute window in force at dispute time applies, also to orders accepted before the
    /// change (governance can lengthen or shorten open windows, as it can raise minPayment).
    function test_setDelays_disputeWindowReadAtDisputeTime() public {
        _openBook(poster, 1, BOOK_MAX);
        _bond(provider, 100e18);
        Order memory o = _order(poster, 0, 0);
        _timelockDelay(9 days);
        vm.prank(gov);
        market.setDelays(7 days, 2 days, 8 days, 9 days);
        vm.warp(o.deadline + 1 days + 1); // past the old window, inside the new one
        (uint256 slashed,) = _dispute(o, provider);
        assertEq(slashed, 50e18);
    }

    function test_setMinPayment_boundsAndEvent() public {
        uint256 big = uint256(type(uint96).max) + 1;
        vm.expectRevert(abi.encodeWithSelector(IBonds.MarketAmountTooLarge.selector, big));
        vm.prank(gov);
        market.setMinPayment(big);
        vm.expectEmit(address(market));
        emit ITaskMarket.MinPaymentUpdated(type(uint96).max);
        vm.prank(gov);
        market.setMinPayment(type(uint96).max);
        assertEq(_params().minPayment, type(uint96).max);
        vm.prank(gov);
        market.setMinPayment(0);
        assertEq(_params().minPayment, 0);
    }

    function test_setTreasury_updatesAndRefusesZero() public {
        vm.expectRevert(ITaskMarket.MarketZeroAddress.selector);
        vm.prank(gov);
        market.setTreasury(address(0));
        vm.expectEmit(address(market));
        emit ITaskMarket.TreasuryUpdated(stranger);
        vm.prank(gov);
        market.setTreasury(stranger);
        assertEq(_params().treasury, stranger);
    }

    // ------------------------------------------------------------------ sweepFees

    /// Anyone sends accrued fees to the treasury in force; a second sweep sends nothing.
    function test_sweepFees_sendsToTreasury() public {
        _installBoundVerifier();
        _openBook(poster, 4, BOOK_MAX);
        _settleBound(_items1(_item(_order(poster, 0, 0), provider)), sequencer);
        uint256 accrued = _fee(PAYMENT) - _fee(PAYMENT) * 2_000 / 10_000;
        assertEq(market.accruedFees(), accrued);
        uint256 before = token.balanceOf(address(timelock));
        vm.expectEmit(address(market));
        emit ITaskMarket.FeesSwept(address(timelock), accrued);
        vm.prank(stranger);
        assertEq(market.sweepFees(), accrued);
        assertEq(token.balanceOf(address(timelock)), before + accrued);
        assertEq(market.accruedFees(), 0);

        vm.expectEmit(address(market));
        emit ITaskMarket.FeesSwept(address(timelock), 0);
        assertEq(market.sweepFees(), 0);
        assertEq(token.balanceOf(address(timelock)), before + accrued);

        vm.prank(gov);
        market.setTreasury(stranger);
        _settleBound(_items1(_item(_order(poster, 0, 1), provider)), sequencer);
        market.sweepFees();
        assertEq(token.balanceOf(stranger), accrued);
    }
}
