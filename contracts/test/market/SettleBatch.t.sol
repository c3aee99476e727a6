// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {MarketTest} from "./MarketTest.sol";
import {IBonds} from "../../interfaces/market/IBonds.sol";
import {IDisputes} from "../../interfaces/market/IDisputes.sol";
import {ISettleBatch} from "../../interfaces/market/ISettleBatch.sol";
import {ITaskMarket} from "../../interfaces/market/ITaskMarket.sol";
import {Order} from "../../libraries/OrderLib.sol";

/// @notice settleBatch: payment, fees, skips, unpaid orders, sequencer priority and replays.
/// One batch uses a real Groth16 proof; the others the PublicInputBoundVerifier.
contract SettleBatchTest is MarketTest {
    uint32 internal bookA; // poster's
    uint32 internal bookB; // poster2's

    function setUp() public override {
        super.setUp();
        bookA = _openBook(poster, 4, BOOK_MAX);
        bookB = _openBook(poster2, 4, BOOK_MAX);
    }

    function _assertUntouched(Order memory o) internal view {
        assertFalse(market.nonceUsed(o.poster, o.nonce), "nonce untouched");
        assertEq(market.book(o.poster, uint32(o.nonce >> 32)).remaining, 4 * BOOK_MAX, "book untouched");
    }

    // ------------------------------------------------------------------ paying (real proof)

    /// Two posters, two providers, one batch, a real proof, settled by a third party: providers
    /// earn payment - fee per order, the settler its share of the fees, the treasury the rest.
    function test_settleBatch_paysTwoPostersTwoProvidersWithRealProof() public {
        Item[] memory items = new Item[](4);
        items[0] = _item(_order(poster, bookA, 0), provider);
        items[1] = _item(_order(poster2, bookB, 0), provider2);
        items[2] = _item(_order(poster, bookA, 1), provider2);
        items[3] = _item(_order(poster2, bookB, 3), provider);
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _build(items);
        (bytes32 root, uint256 publicInput,) = market.computePublicInput(h, leaves, ROOT_A);
        uint256[8] memory proof = _prove(publicInput);

        // The proof binds every leaf: with one output changed it no longer verifies.
        bytes32 output = leaves[2].outputCommitment;
        leaves[2].outputCommitment = keccak256("another output");
        (, uint256 tampered,) = market.computePublicInput(h, leaves, ROOT_A);
        vm.expectRevert(abi.encodeWithSelector(ISettleBatch.MarketInvalidProof.selector, tampered));
        vm.prank(stranger);
        market.settleBatch(h, leaves, ROOT_A, proof);
        leaves[2].outputCommitment = output;

        uint256 fee = _fee(PAYMENT);
        uint256 fees = 4 * fee;
        uint256 settlerCut = fees * 2_000 / 10_000;
        vm.expectEmit(address(market));
        emit ISettleBatch.BatchSettled(root, ROOT_A, stranger, 4, 4, 4 * (PAYMENT - fee), fees, publicInput);
        vm.prank(stranger);
        (bytes32 r, uint256 p, uint256 paid) = market.settleBatch(h, leaves, ROOT_A, proof);
        assertEq(r, root);
        assertEq(p, publicInput);
        assertEq(paid, 4);
        _assertFourPaidAndWithdraw(items, fees - settlerCut, settlerCut);
    }

    function _assertFourPaidAndWithdraw(Item[] memory items, uint256 treasuryCut, uint256 settlerCut) internal {
        uint256 fee = _fee(PAYMENT);
        for (uint256 i = 0; i < 4; ++i) {
            assertTrue(market.nonceUsed(items[i].order.poster, items[i].order.nonce));
        }
        assertFalse(market.nonceUsed(poster, 2));
        assertEq(market.book(poster, bookA).remaining, 4 * BOOK_MAX - 2 * PAYMENT);
        assertEq(market.book(poster2, bookB).remaining, 4 * BOOK_MAX - 2 * PAYMENT);
        ITaskMarket.Earner memory e = market.earner(provider);
        assertEq(e.earnings, 2 * (PAYMENT - fee));
        assertEq(e.tasksSettled, 2);
        assertEq(e.tasksSlashed, 0);
        assertEq(market.earner(provider2).earnings, 2 * (PAYMENT - fee));
        assertEq(market.earner(provider2).tasksSettled, 2);
        assertEq(market.earner(stranger).earnings, settlerCut);
        assertEq(market.earner(stranger).tasksSettled, 0);
        assertEq(market.accruedFees(), treasuryCut);
        assertEq(token.balanceOf(address(market)), 8 * BOOK_MAX); // nothing left the market yet

        uint256 before = token.balanceOf(provider);
        vm.expectEmit(address(market));
        emit ITaskMarket.EarningsWithdrawn(provider, 2 * (PAYMENT - fee));
        vm.prank(provider);
        assertEq(market.withdrawEarnings(), 2 * (PAYMENT - fee));
        assertEq(token.balanceOf(provider), before + 2 * (PAYMENT - fee));
        assertEq(market.earner(provider).earnings, 0);
        assertEq(market.earner(provider).tasksSettled, 2);
        vm.prank(stranger);
        assertEq(market.withdrawEarnings(), settlerCut);
        assertEq(token.balanceOf(stranger), settlerCut);

        vm.expectRevert(abi.encodeWithSelector(IBonds.MarketNothingToWithdraw.selector, provider));
        vm.prank(provider);
        market.withdrawEarnings();
    }

    // ------------------------------------------------------------------ named provider

    function test_settleBatch_paysNamedProvider() public {
        _installBoundVerifier();
        Order memory o = _order(poster, bookA, 0);
        o.provider = provider2;
        assertEq(_settleBound(_items1(_item(o, provider2)), sequencer), 1);
        assertEq(market.earner(provider2).earnings, PAYMENT - _fee(PAYMENT));
        assertTrue(market.nonceUsed(poster, o.nonce));
    }

    /// Another provider cannot take a named order: the rebuilt order names it instead, so the
    /// poster's signature does not match.
    function test_settleBatch_skipsNamedOrderProvenByAnother() public {
        _installBoundVerifier();
        Order memory o = _order(poster, bookA, 0);
        o.provider = provider2;
        Order memory asRebuilt = _order(poster, bookA, 0);
        asRebuilt.provider = provider;
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(asRebuilt), ISettleBatch.SkipReason.BadPosterSignature);
        assertEq(_settleBound(_items1(_item(o, provider)), sequencer), 0);
        _assertUntouched(o);
        assertEq(market.earner(provider).earnings, 0);
    }

    // ------------------------------------------------------------------ skips

    function test_settleBatch_skipsBadPosterSignature() public {
        _installBoundVerifier();
        Order memory o = _order(poster, bookA, 0);
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) =
            _build(_items1(_item(o, provider)));
        (leaves[0].r, leaves[0].vs) = _signCompact(poster2, _hash(o));
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(o), ISettleBatch.SkipReason.BadPosterSignature);
        assertEq(_settleBuilt(h, leaves, sequencer), 0);
        _assertUntouched(o);
    }

    /// The high-s twin (r, n - s) of the poster's signature: n - s is above 2^255 except for a
    /// ~2^-127 fraction of signatures, so it cannot be written in EIP-2098 form at all; writing it
    /// anyway sets the parity bit and the rest recovers to someone else. Skipped, nothing paid.
    function test_settleBatch_skipsHighSTwin() public {
        _installBoundVerifier();
        Order memory o = _order(poster, bookA, 0);
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) =
            _build(_items1(_item(o, provider)));
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(keyOf[poster], _hash(o));
        uint256 n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141;
        assertEq(ecrecover(_hash(o), v == 27 ? 28 : 27, r, bytes32(n - uint256(s))), poster); // the twin
        assertGe(n - uint256(s), 1 << 255);
        leaves[0].vs = _malleable(leaves[0].vs);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(o), ISettleBatch.SkipReason.BadPosterSignature);
        assertEq(_settleBuilt(h, leaves, sequencer), 0);
        _assertUntouched(o);
    }

    /// A leaf past its deadline is skipped with its nonce untouched, so the order stays disputable.
    function test_settleBatch_skipsDeadlinePassed() public {
        _installBoundVerifier();
        _bond(provider, 1_000e18);
        Order memory o = _order(poster, bookA, 0);
        vm.warp(o.deadline + 1);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(o), ISettleBatch.SkipReason.DeadlinePassed);
        assertEq(_settleBound(_items1(_item(o, provider)), sequencer), 0);
        _assertUntouched(o);
        (uint256 slashed,) = _dispute(o, provider);
        assertEq(slashed, COLLATERAL / 2);
    }

    function test_settleBatch_paysAtDeadline() public {
        _installBoundVerifier();
        Order memory o = _order(poster, bookA, 0);
        vm.warp(o.deadline);
        assertEq(_settleBound(_items1(_item(o, provider)), provider), 1);
    }

    /// A skip takes precedence in the order signature, nonce, deadline: a cancelled order with a
    /// forged signature reports the signature.
    function test_settleBatch_signatureCheckedBeforeNonce() public {
        _installBoundVerifier();
        Order memory o = _order(poster, bookA, 0);
        uint64[] memory nonces = new uint64[](1);
        nonces[0] = o.nonce;
        vm.prank(poster);
        market.cancelNonces(nonces);
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) =
            _build(_items1(_item(o, provider)));
        (leaves[0].r, leaves[0].vs) = _signCompact(stranger, _hash(o));
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(o), ISettleBatch.SkipReason.BadPosterSignature);
        _settleBuilt(h, leaves, sequencer);
    }

    // ------------------------------------------------------------------ sequencer priority

    /// Before the self-settlement window a non-sequencer's leaf is skipped (nonce untouched);
    /// the sequencer settles the same order.
    function test_settleBatch_skipsSequencerPriority() public {
        _installBoundVerifier();
        Order memory o = _order(poster, bookA, 0);
        o.deadline = uint40(block.timestamp + 2 hours);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(o), ISettleBatch.SkipReason.SequencerPriority);
        assertEq(_settleBound(_items1(_item(o, provider)), provider), 0);
        _assertUntouched(o);
        assertEq(_settleBound(_items1(_item(o, provider)), sequencer), 1);
    }

    /// The window opens at deadline - selfSettlementWindow exactly.
    function test_settleBatch_selfSettlementWindowBoundary() public {
        _installBoundVerifier();
        Order memory inside = _order(poster, bookA, 0);
        inside.deadline = uint40(block.timestamp + 1 hours);
        Order memory outside = _order(poster, bookA, 1);
        outside.deadline = uint40(block.timestamp + 1 hours + 1);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(outside), ISettleBatch.SkipReason.SequencerPriority);
        assertEq(_settleBound(_items2(_item(inside, provider), _item(outside, provider)), stranger), 1);
        assertTrue(market.nonceUsed(poster, inside.nonce));
        assertFalse(market.nonceUsed(poster, outside.nonce));
        skip(1);
        assertEq(_settleBound(_items1(_item(outside, provider)), stranger), 1);
    }

    function test_settleBatch_sequencerSettlesAnyTime() public {
        _installBoundVerifier();
        Order memory o = _order(poster, bookA, 0);
        o.deadline = uint40(block.timestamp + 6 days);
        assertEq(_settleBound(_items1(_item(o, provider)), sequencer), 1);
        assertEq(market.earner(sequencer).earnings, _fee(PAYMENT) * 2_000 / 10_000);
    }

    function test_settleBatch_revokedSequencerWaitsForWindow() public {
        _installBoundVerifier();
        vm.prank(address(timelock));
        market.setSequencer(sequencer, false);
        Order memory o = _order(poster, bookA, 0);
        o.deadline = uint40(block.timestamp + 6 days);
        assertEq(_settleBound(_items1(_item(o, provider)), sequencer), 0);
        _assertUntouched(o);
    }

    // ------------------------------------------------------------------ unpaid

    /// An index at or above the book's capacity: delivered, not paid, nonce consumed.
    function test_settleBatch_unpaidIndexOutOfBook() public {
        _installBoundVerifier();
        _bond(provider, 1_000e18);
        Order memory o = _order(poster, bookA, 4);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderUnpaid(_hash(o), ISettleBatch.UnpaidReason.IndexOutOfBook);
        assertEq(_settleBound(_items1(_item(o, provider)), sequencer), 0);
        assertTrue(market.nonceUsed(poster, o.nonce));
        assertEq(market.book(poster, bookA).remaining, 4 * BOOK_MAX);
        assertEq(market.earner(provider).earnings, 0);
        assertEq(market.earner(provider).tasksSettled, 0);
        assertEq(market.accruedFees(), 0);
        vm.warp(o.deadline + 1);
        _expectDisputeRevert(o, provider, abi.encodeWithSelector(IDisputes.MarketOrderClosed.selector, poster, o.nonce));
    }

    /// A book never opened has capacity 0: every index is out of it.
    function test_settleBatch_unpaidUnknownBook() public {
        _installBoundVerifier();
        Order memory o = _order(poster, 9, 0);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderUnpaid(_hash(o), ISettleBatch.UnpaidReason.IndexOutOfBook);
        assertEq(_settleBound(_items1(_item(o, provider)), sequencer), 0);
        assertTrue(market.nonceUsed(poster, o.nonce));
        assertEq(market.book(poster, 9).remaining, 0);
    }

    function test_settleBatch_unpaidPaymentAboveBookMax() public {
        _installBoundVerifier();
        uint32 small = _openBook(poster, 4, PAYMENT - 1);
        Order memory o = _order(poster, small, 0);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderUnpaid(_hash(o), ISettleBatch.UnpaidReason.PaymentAboveBookMax);
        assertEq(_settleBound(_items1(_item(o, provider)), sequencer), 0);
        assertTrue(market.nonceUsed(poster, o.nonce));
        assertEq(market.book(poster, small).remaining, 4 * (PAYMENT - 1));
        assertEq(market.earner(provider).earnings, 0);
    }

    /// A book withdrawn after its unlock pays nothing to a proof arriving later (here an order
    /// signed with a deadline beyond the unlock, which tools refuse): unpaid BookEmpty, nonce
    /// consumed, not disputable.
    function test_settleBatch_unpaidBookEmptyAfterWithdrawal() public {
        _installBoundVerifier();
        _bond(provider, 1_000e18);
        Order memory o = _order(poster, bookA, 0);
        o.deadline = uint40(block.timestamp + 8 days + 1 hours);
        vm.prank(poster);
        market.closeBook(bookA);
        vm.warp(block.timestamp + 8 days);
        vm.prank(poster);
        assertEq(market.withdrawBook(bookA), 4 * BOOK_MAX);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderUnpaid(_hash(o), ISettleBatch.UnpaidReason.BookEmpty);
        assertEq(_settleBound(_items1(_item(o, provider)), sequencer), 0);
        assertTrue(market.nonceUsed(poster, o.nonce));
        assertEq(market.earner(provider).earnings, 0);
        vm.warp(o.deadline + 1);
        _expectDisputeRevert(o, provider, abi.encodeWithSelector(IDisputes.MarketOrderClosed.selector, poster, o.nonce));
    }

    /// Paid, unpaid and skipped leaves in one batch: BatchSettled counts only the paid ones.
    function test_settleBatch_mixedBatchTotals() public {
        _installBoundVerifier();
        Order memory paid1 = _order(poster, bookA, 0);
        Order memory unpaid = _order(poster, bookA, 7);
        Order memory expired = _order(poster2, bookB, 0);
        expired.deadline = uint40(block.timestamp - 1);
        Order memory paid2 = _order(poster2, bookB, 1);
        paid2.payment = 20e18;
        Item[] memory items = new Item[](4);
        items[0] = _item(paid1, provider);
        items[1] = _item(unpaid, provider2);
        items[2] = _item(expired, provider);
        items[3] = _item(paid2, provider2);
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _build(items);
        (bytes32 root, uint256 publicInput,) = market.computePublicInput(h, leaves, ROOT_A);
        uint256 fees = _fee(PAYMENT) + _fee(20e18);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderUnpaid(_hash(unpaid), ISettleBatch.UnpaidReason.IndexOutOfBook);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(expired), ISettleBatch.SkipReason.DeadlinePassed);
        vm.expectEmit(address(market));
        emit ISettleBatch.BatchSettled(root, ROOT_A, sequencer, 4, 2, PAYMENT + 20e18 - fees, fees, publicInput);
        assertEq(_settleBuilt(h, leaves, sequencer), 2);
        assertEq(market.earner(provider).earnings, PAYMENT - _fee(PAYMENT));
        assertEq(market.earner(provider2).earnings, 20e18 - _fee(20e18));
        assertEq(market.earner(provider2).tasksSettled, 1);
    }

    // ------------------------------------------------------------------ replays

    function test_settleBatch_duplicateLeafSkippedNonceUsed() public {
        _installBoundVerifier();
        Order memory o = _order(poster, bookA, 0);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(o), ISettleBatch.SkipReason.NonceUsed);
        assertEq(_settleBound(_items2(_item(o, provider), _item(o, provider)), sequencer), 1);
        assertEq(market.book(poster, bookA).remaining, 4 * BOOK_MAX - PAYMENT);
        assertEq(market.earner(provider).tasksSettled, 1);
    }

    /// Two different orders signed with the same nonce: only the first settles.
    function test_settleBatch_sameNonceTwoOrders() public {
        _installBoundVerifier();
        Order memory a = _order(poster, bookA, 0);
        Order memory b = _order(poster, bookA, 0);
        b.inputCommitment = keccak256("another input");
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(b), ISettleBatch.SkipReason.NonceUsed);
        assertEq(_settleBound(_items2(_item(a, provider), _item(b, provider2)), sequencer), 1);
        assertEq(market.earner(provider2).earnings, 0);
    }

    /// Settling the same batch twice: the second settles nothing, every leaf skipped NonceUsed.
    function test_settleBatch_sameBatchTwice() public {
        _installBoundVerifier();
        Item[] memory items = _items3(
            _item(_order(poster, bookA, 0), provider),
            _item(_order(poster2, bookB, 0), provider2),
            _item(_order(poster, bookA, 1), provider)
        );
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _build(items);
        assertEq(_settleBuilt(h, leaves, sequencer), 3);
        uint256 marketBalance = token.balanceOf(address(market));
        uint256 earnings = market.earner(provider).earnings;
        uint256 fees = market.accruedFees();
        (bytes32 root, uint256 publicInput,) = market.computePublicInput(h, leaves, ROOT_A);
        for (uint256 i = 0; i < 3; ++i) {
            vm.expectEmit(address(market));
            emit ISettleBatch.OrderSkipped(_hash(items[i].order), ISettleBatch.SkipReason.NonceUsed);
        }
        vm.expectEmit(address(market));
        emit ISettleBatch.BatchSettled(root, ROOT_A, sequencer, 3, 0, 0, 0, publicInput);
        assertEq(_settleBuilt(h, leaves, sequencer), 0);
        assertEq(token.balanceOf(address(market)), marketBalance);
        assertEq(market.earner(provider).earnings, earnings);
        assertEq(market.accruedFees(), fees);
        assertEq(market.book(poster, bookA).remaining, 4 * BOOK_MAX - 2 * PAYMENT);
    }

    // ------------------------------------------------------------------ nonce words

    /// Leaves of one book hopping between nonce words (and back), and a second book of the same
    /// poster: every nonce is written, none twice, and a replay settles nothing.
    function test_settleBatch_noncesAcrossWordsAndBooks() public {
        _installBoundVerifier();
        uint32 big = _openBook(poster, 1_000, PAYMENT);
        uint32[6] memory idx = [uint32(0), 300, 1, 600, 2, 300];
        Item[] memory items = new Item[](8);
        for (uint256 i = 0; i < 6; ++i) {
            items[i] = _item(_order(poster, big, idx[i]), i % 2 == 0 ? provider : provider2);
        }
        items[6] = _item(_order(poster, bookA, 0), provider);
        items[7] = _item(_order(poster, bookA, 3), provider);
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _build(items);
        assertEq(_settleBuilt(h, leaves, sequencer), 7); // index 300 twice
        for (uint256 i = 0; i < 8; ++i) {
            assertTrue(market.nonceUsed(poster, items[i].order.nonce));
        }
        assertFalse(market.nonceUsed(poster, (uint64(big) << 32) | 3));
        assertFalse(market.nonceUsed(poster, (uint64(big) << 32) | 301));
        assertFalse(market.nonceUsed(poster, (uint64(bookA) << 32) | 1));
        assertEq(market.book(poster, big).remaining, 1_000 * PAYMENT - 5 * PAYMENT);
        assertEq(market.book(poster, bookA).remaining, 4 * BOOK_MAX - 2 * PAYMENT);
        assertEq(_settleBuilt(h, leaves, sequencer), 0);
    }

    function testFuzz_settleBatch_eachNoncePaidOnce(uint16[8] memory raw) public {
        _installBoundVerifier();
        uint32 big = _openBook(poster, 1_024, PAYMENT);
        Item[] memory items = new Item[](8);
        uint256 unique;
        for (uint256 i = 0; i < 8; ++i) {
            uint32 index = uint32(raw[i] % 1_024);
            bool seen;
            for (uint256 j = 0; j < i; ++j) {
                if (uint32(items[j].order.nonce) == index) seen = true;
            }
            if (!seen) ++unique;
            items[i] = _item(_order(poster, big, index), i % 3 == 0 ? provider2 : provider);
        }
        assertEq(_settleBound(items, sequencer), unique);
        for (uint256 i = 0; i < 8; ++i) {
            assertTrue(market.nonceUsed(poster, items[i].order.nonce));
        }
        assertEq(market.book(poster, big).remaining, (1_024 - unique) * PAYMENT);
        assertEq(market.earner(provider).tasksSettled + market.earner(provider2).tasksSettled, unique);
        assertEq(_settleBound(items, sequencer), 0);
    }
}
