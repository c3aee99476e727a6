// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {MarketTest} from "./MarketTest.sol";
import {IBonds} from "../../interfaces/market/IBonds.sol";
import {IDeposits} from "../../interfaces/market/IDeposits.sol";
import {IDisputes} from "../../interfaces/market/IDisputes.sol";
import {ISettleBatch} from "../../interfaces/market/ISettleBatch.sol";
import {Order} from "../../libraries/OrderLib.sol";

/// @notice The market's threat model, one attack per test: what a poster, a provider, a settler or
/// governance could try, and why it fails (or what it is bounded by).
contract MarketAttacksTest is MarketTest {
    uint256 internal constant BOND = 1_000e18;
    uint32 internal bookA;

    function setUp() public override {
        super.setUp();
        bookA = _openBook(poster, 4, BOOK_MAX);
        _bond(provider, BOND);
    }

    // ------------------------------------------------------------------ liveness

    /// The sequencer is absent: the provider settles its own batch (real proof) once the order's
    /// self-settlement window opens, and can no longer be slashed for it.
    function test_attack_sequencerAbsentProviderSelfSettles() public {
        Order memory o = _order(poster, bookA, 0);
        o.deadline = uint40(block.timestamp + 5 hours);
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) =
            _build(_items1(_item(o, provider)));
        uint256[8] memory proof = _proveMarketBatch(h, leaves, ROOT_A);

        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(o), ISettleBatch.SkipReason.SequencerPriority);
        vm.prank(provider);
        (,, uint256 paid) = market.settleBatch(h, leaves, ROOT_A, proof);
        assertEq(paid, 0);
        assertFalse(market.nonceUsed(poster, o.nonce));

        vm.warp(o.deadline - 1 hours);
        vm.prank(provider);
        (,, paid) = market.settleBatch(h, leaves, ROOT_A, proof);
        assertEq(paid, 1);
        uint256 fee = _fee(PAYMENT);
        assertEq(market.earner(provider).earnings, PAYMENT - fee + fee * 2_000 / 10_000); // pay + settler share

        vm.warp(o.deadline + 1);
        _expectDisputeRevert(o, provider, abi.encodeWithSelector(IDisputes.MarketOrderClosed.selector, poster, o.nonce));
        assertEq(market.bond(provider).bonded, BOND);
    }

    /// One expired, one already settled and one forged leaf do not stop the batch's other leaves.
    function test_attack_poisonLeavesDoNotBlockBatch() public {
        _installBoundVerifier();
        Order memory settled = _order(poster, bookA, 2);
        _settleBound(_items1(_item(settled, provider)), sequencer);
        Order memory good1 = _order(poster, bookA, 0);
        Order memory good2 = _order(poster, bookA, 1);
        Order memory expired = _order(poster, bookA, 3);
        expired.deadline = uint40(block.timestamp - 1);
        Order memory forged = _order(poster, bookA, 3);
        forged.payment = uint96(BOOK_MAX);
        Item[] memory items = new Item[](5);
        items[0] = _item(expired, provider);
        items[1] = _item(good1, provider);
        items[2] = _item(settled, provider);
        items[3] = _item(forged, provider2);
        items[4] = _item(good2, provider2);
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _build(items);
        (leaves[3].r, leaves[3].vs) = _signCompact(stranger, _hash(forged));

        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(expired), ISettleBatch.SkipReason.DeadlinePassed);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(settled), ISettleBatch.SkipReason.NonceUsed);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(forged), ISettleBatch.SkipReason.BadPosterSignature);
        assertEq(_settleBuilt(h, leaves, sequencer), 2);
        assertTrue(market.nonceUsed(poster, good1.nonce));
        assertTrue(market.nonceUsed(poster, good2.nonce));
        assertFalse(market.nonceUsed(poster, expired.nonce));
        assertEq(market.book(poster, bookA).remaining, 4 * BOOK_MAX - 3 * PAYMENT);
    }

    // ------------------------------------------------------------------ governance after acceptance

    /// Governance changes fees, minimum payment and delays after the provider accepted: the slash
    /// still follows exactly the terms both parties signed.
    function test_attack_termsChangedAfterAcceptance() public {
        Order memory o = _order(poster, bookA, 0);
        bytes memory posterSig = _posterSignature(o);
        bytes memory acceptance = _acceptance(provider, o);
        vm.startPrank(address(timelock));
        timelock.updateDelay(9 days); // the market refuses an unbonding delay beyond the timelock's
        market.setFees(2_000, 10_000);
        market.setMinPayment(0);
        market.setDelays(7 days, 2 days, 8 days, 9 days);
        vm.stopPrank();
        vm.warp(o.deadline + 1);
        vm.expectEmit(address(market));
        emit IDisputes.OrderDisputed(_hash(o), poster, provider, 50e18, 25e18);
        vm.prank(stranger);
        (uint256 slashed, uint256 toPoster) = market.dispute(o, posterSig, provider, acceptance);
        assertEq(slashed, uint256(o.collateral) * o.slashBps / 10_000);
        assertEq(toPoster, slashed * o.posterShareBps / 10_000);
    }

    /// Intended: minPayment is a dust floor read at dispute time. Raising it above an accepted
    /// order's payment makes that order non-disputable (governance can only lower providers' risk,
    /// never raise it).
    function test_attack_minPaymentRaisedAfterAcceptanceShieldsProvider() public {
        Order memory o = _order(poster, bookA, 0);
        vm.prank(address(timelock));
        market.setMinPayment(PAYMENT + 1);
        vm.warp(o.deadline + 1);
        _expectDisputeRevert(
            o, provider, abi.encodeWithSelector(IDisputes.MarketPaymentBelowMinimum.selector, PAYMENT, PAYMENT + 1)
        );
        assertEq(market.bond(provider).bonded, BOND);
    }

    // ------------------------------------------------------------------ dust and compensation

    /// A dust order with a large collateral cannot be disputed at all; above the floor, the poster
    /// never gets more than the order's payment, however large the slash.
    function test_attack_dustOrderAndCompensationCap() public {
        Order memory dust = _order(poster, bookA, 0);
        dust.payment = 1e18 - 1;
        dust.collateral = uint96(BOND);
        Order memory greedy = _order(poster, bookA, 1);
        greedy.payment = 1e18;
        greedy.collateral = uint96(BOND);
        greedy.slashBps = 10_000;
        greedy.posterShareBps = 10_000;
        vm.warp(dust.deadline + 1);
        _expectDisputeRevert(
            dust, provider, abi.encodeWithSelector(IDisputes.MarketPaymentBelowMinimum.selector, 1e18 - 1, 1e18)
        );
        (uint256 slashed, uint256 toPoster) = _dispute(greedy, provider);
        assertEq(slashed, BOND);
        assertEq(toPoster, 1e18);
        assertEq(market.accruedFees(), BOND - 1e18);
    }

    // ------------------------------------------------------------------ deposits

    /// The poster closes its book right after signing an order with the longest deadline: the
    /// book stays locked past the deadline, the order is paid, and only the rest comes back.
    function test_attack_withdrawalAheadOfAcceptedOrder() public {
        _installBoundVerifier();
        Order memory o = _order(poster, bookA, 0);
        o.deadline = uint40(block.timestamp + 7 days);
        vm.prank(poster);
        market.closeBook(bookA);
        uint256 unlockAt = market.book(poster, bookA).unlockAt;
        assertGt(unlockAt, o.deadline);

        vm.warp(o.deadline);
        vm.expectRevert(abi.encodeWithSelector(IDeposits.MarketBookLocked.selector, poster, bookA, unlockAt));
        vm.prank(poster);
        market.withdrawBook(bookA);
        assertEq(_settleBound(_items1(_item(o, provider)), provider), 1);

        vm.warp(unlockAt);
        vm.prank(poster);
        assertEq(market.withdrawBook(bookA), 4 * BOOK_MAX - PAYMENT);
    }

    /// Over-signing: a poster signs more orders than its book holds (and two orders on one
    /// nonce). The book pays at most `capacity` orders; the extras are recorded unpaid and can no
    /// longer be disputed; the book never goes below zero.
    function test_attack_overSigningNeverOverdrawsBook() public {
        _installBoundVerifier();
        uint32 small = _openBook(poster, 2, PAYMENT);
        Item[] memory items = new Item[](5);
        for (uint32 i = 0; i < 4; ++i) {
            items[i] = _item(_order(poster, small, i), provider);
        }
        Order memory sameNonce = _order(poster, small, 0);
        sameNonce.inputCommitment = keccak256("second order on nonce 0");
        items[4] = _item(sameNonce, provider2);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderUnpaid(_hash(items[2].order), ISettleBatch.UnpaidReason.IndexOutOfBook);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderUnpaid(_hash(items[3].order), ISettleBatch.UnpaidReason.IndexOutOfBook);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(sameNonce), ISettleBatch.SkipReason.NonceUsed);
        assertEq(_settleBound(items, sequencer), 2);
        assertEq(market.book(poster, small).remaining, 0);
        vm.warp(items[3].order.deadline + 1);
        for (uint256 i = 2; i < 4; ++i) {
            Order memory extra = items[i].order;
            _expectDisputeRevert(
                extra, provider, abi.encodeWithSelector(IDisputes.MarketOrderClosed.selector, poster, extra.nonce)
            );
        }
    }

    /// Over-accepting: three defaulted acceptances slash 50 each from a bond of 120. Disputes are
    /// paid in order, the last gets what is left, never more than the bond in all.
    function test_attack_overAcceptingSlashesAtMostTheBond() public {
        _bond(provider2, 120e18);
        uint256 posterBefore = token.balanceOf(poster);
        uint256[3] memory expected = [uint256(50e18), 50e18, 20e18];
        uint256 total;
        vm.warp(block.timestamp + 30 minutes + 1);
        for (uint32 i = 0; i < 3; ++i) {
            Order memory o = _order(poster, bookA, i);
            o.deadline = uint40(block.timestamp - 1);
            (uint256 slashed, uint256 toPoster) = _dispute(o, provider2);
            assertEq(slashed, expected[i]);
            assertEq(toPoster, slashed / 2);
            assertLe(toPoster, o.payment);
            total += slashed;
        }
        assertEq(total, 120e18);
        assertEq(market.bond(provider2).bonded, 0);
        assertEq(token.balanceOf(poster), posterBefore + 60e18);
        assertEq(market.earner(provider2).tasksSlashed, 3);
    }

    // ------------------------------------------------------------------ replays and forgeries

    function test_attack_replayedOrderInLaterBatch() public {
        _installBoundVerifier();
        Order memory o = _order(poster, bookA, 0);
        _settleBound(_items1(_item(o, provider)), sequencer);
        Order memory fresh = _order(poster, bookA, 1);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(o), ISettleBatch.SkipReason.NonceUsed);
        assertEq(_settleBound(_items2(_item(o, provider2), _item(fresh, provider2)), stranger), 1);
        assertEq(market.earner(provider2).tasksSettled, 1);
        assertEq(market.earner(provider).tasksSettled, 1);
        assertEq(market.book(poster, bookA).remaining, 4 * BOOK_MAX - 2 * PAYMENT);
    }

    /// An acceptance slashes once; it is no acceptance of any other order.
    function test_attack_replayedAcceptance() public {
        Order memory o = _order(poster, bookA, 0);
        bytes memory acceptance = _acceptance(provider, o);
        vm.warp(o.deadline + 1);
        _dispute(o, provider);
        bytes memory posterSig = _posterSignature(o);
        vm.expectRevert(abi.encodeWithSelector(IDisputes.MarketOrderClosed.selector, poster, o.nonce));
        vm.prank(stranger);
        market.dispute(o, posterSig, provider, acceptance);

        Order memory other = _order(poster, bookA, 1);
        other.deadline = o.deadline;
        bytes memory otherSig = _posterSignature(other);
        vm.expectRevert(abi.encodeWithSelector(IDisputes.MarketBadAcceptance.selector, _hash(other), provider));
        vm.prank(stranger);
        market.dispute(other, otherSig, provider, acceptance);
        assertEq(market.bond(provider).bonded, BOND - 50e18);
    }

    /// Signatures by the wrong key: a settlement leaf is skipped; a dispute is refused, for a bad
    /// order signature and for a bad acceptance alike.
    function test_attack_signatureByWrongKey() public {
        _installBoundVerifier();
        Order memory o = _order(poster, bookA, 0);
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) =
            _build(_items1(_item(o, provider)));
        (leaves[0].r, leaves[0].vs) = _signCompact(stranger, _hash(o));
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(o), ISettleBatch.SkipReason.BadPosterSignature);
        assertEq(_settleBuilt(h, leaves, sequencer), 0);

        vm.warp(o.deadline + 1);
        bytes memory goodPoster = _posterSignature(o);
        bytes memory goodAcceptance = _acceptance(provider, o);
        bytes memory badPoster = _sign65(stranger, _hash(o));
        bytes memory badAcceptance = _acceptance(stranger, o);
        vm.expectRevert(abi.encodeWithSelector(IDisputes.MarketBadPosterSignature.selector, _hash(o)));
        vm.prank(stranger);
        market.dispute(o, badPoster, provider, goodAcceptance);
        vm.expectRevert(abi.encodeWithSelector(IDisputes.MarketBadAcceptance.selector, _hash(o), provider));
        vm.prank(stranger);
        market.dispute(o, goodPoster, provider, badAcceptance);
        assertEq(market.bond(provider).bonded, BOND);
    }

    /// Signatures made for chain 31337 mean nothing on another chain id: the digest differs, the
    /// leaf is skipped and the dispute refused.
    function test_attack_crossChainReplay() public {
        _installBoundVerifier();
        Order memory o = _order(poster, bookA, 0);
        bytes32 homeHash = _hash(o);
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) =
            _build(_items1(_item(o, provider)));
        bytes memory posterSig = _posterSignature(o);
        bytes memory acceptance = _acceptance(provider, o);

        vm.chainId(block.chainid + 1);
        bytes32 foreignHash = _hash(o);
        assertTrue(foreignHash != homeHash);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(foreignHash, ISettleBatch.SkipReason.BadPosterSignature);
        assertEq(_settleBuilt(h, leaves, sequencer), 0);
        assertFalse(market.nonceUsed(poster, o.nonce));

        vm.warp(o.deadline + 1);
        vm.expectRevert(abi.encodeWithSelector(IDisputes.MarketBadPosterSignature.selector, foreignHash));
        vm.prank(stranger);
        market.dispute(o, posterSig, provider, acceptance);
        bytes memory foreignPosterSig = _posterSignature(o); // signed on this chain
        vm.expectRevert(abi.encodeWithSelector(IDisputes.MarketBadAcceptance.selector, foreignHash, provider));
        vm.prank(stranger);
        market.dispute(o, foreignPosterSig, provider, acceptance);
    }

    /// An attacker forges an order "from" the poster (its own signature), proves the batch for
    /// real and settles it itself: skipped, the poster's book untouched, the attacker unpaid.
    function test_attack_forgedOrderWithAttackersOwnProof() public {
        Order memory forged = _order(poster, bookA, 0);
        forged.provider = stranger;
        forged.payment = uint96(BOOK_MAX);
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) =
            _build(_items1(_item(forged, stranger)));
        (leaves[0].r, leaves[0].vs) = _signCompact(stranger, _hash(forged));
        uint256[8] memory proof = _proveMarketBatch(h, leaves, ROOT_A);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(forged), ISettleBatch.SkipReason.BadPosterSignature);
        vm.prank(stranger);
        (,, uint256 paid) = market.settleBatch(h, leaves, ROOT_A, proof);
        assertEq(paid, 0);
        assertEq(market.book(poster, bookA).remaining, 4 * BOOK_MAX);
        assertFalse(market.nonceUsed(poster, forged.nonce));
        assertEq(market.earner(stranger).earnings, 0);
    }

    // ------------------------------------------------------------------ bonds leaving early

    /// The provider asks to unbond everything right as it accepts an order with the longest
    /// deadline: the dispute window of that order ends (exclusive) exactly when the stake may
    /// leave, so until then the unbonding stake is slashable...
    function test_attack_unbondingRightAfterAcceptingIsSlashable() public {
        Order memory o = _order(poster, bookA, 0);
        o.deadline = uint40(block.timestamp + 7 days);
        vm.prank(provider);
        market.requestUnbonding(BOND);
        uint256 readyAt = market.bond(provider).unbondingReadyAt;
        assertEq(readyAt, o.deadline + 1 days);
        vm.warp(readyAt - 1);
        vm.expectRevert(abi.encodeWithSelector(IBonds.MarketUnbondingNotReady.selector, provider, readyAt));
        vm.prank(provider);
        market.withdrawStake();
        (uint256 slashed,) = _dispute(o, provider);
        assertEq(slashed, 50e18);
        assertEq(market.bond(provider).unbonding, BOND - 50e18);
    }

    /// ...and from the second it may leave, no dispute of that order is possible any more, so the
    /// two never overlap (no same-block race between withdrawStake and dispute).
    function test_attack_unbondingReadyOnlyAfterDisputeWindow() public {
        Order memory o = _order(poster, bookA, 0);
        o.deadline = uint40(block.timestamp + 7 days);
        vm.prank(provider);
        market.requestUnbonding(BOND);
        uint256 readyAt = market.bond(provider).unbondingReadyAt;
        vm.warp(readyAt);
        _expectDisputeRevert(
            o, provider, abi.encodeWithSelector(IDisputes.MarketDisputeWindowClosed.selector, _hash(o), readyAt)
        );
        vm.prank(provider);
        assertEq(market.withdrawStake(), BOND);
    }
}
