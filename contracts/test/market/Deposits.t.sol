// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20Errors} from "@openzeppelin/contracts/interfaces/draft-IERC6093.sol";

import {MarketTest} from "./MarketTest.sol";
import {IDeposits} from "../../interfaces/market/IDeposits.sol";
import {IDisputes} from "../../interfaces/market/IDisputes.sol";
import {ISettleBatch} from "../../interfaces/market/ISettleBatch.sol";
import {Order} from "../../libraries/OrderLib.sol";

/// @notice Posters' deposit books: opening, closing, withdrawing, cancelling nonces, views.
contract DepositsTest is MarketTest {
    uint256 internal constant MAX_CAPACITY = (1 << 24) - 1;
    uint256 internal constant U96 = (1 << 96) - 1;

    function setUp() public override {
        super.setUp();
        _installBoundVerifier();
        _bond(provider, 1_000e18);
    }

    // ------------------------------------------------------------------ openBook

    function test_openBook_pullsFundingAndEmits() public {
        uint256 posterBefore = token.balanceOf(poster);
        vm.expectEmit(address(market));
        emit IDeposits.BookOpened(poster, 0, 10, BOOK_MAX);
        uint32 id = _openBook(poster, 10, BOOK_MAX);
        assertEq(id, 0);
        assertEq(token.balanceOf(poster), posterBefore - 10 * BOOK_MAX);
        assertEq(token.balanceOf(address(market)), 1_000e18 + 10 * BOOK_MAX); // + the bond of setUp
        IDeposits.Book memory b = market.book(poster, 0);
        assertEq(b.remaining, 10 * BOOK_MAX);
        assertEq(b.perOrderMax, BOOK_MAX);
        assertEq(b.capacity, 10);
        assertEq(b.unlockAt, 0);
        assertEq(market.bookCount(poster), 1);
    }

    function test_openBook_idsIncrementPerPoster() public {
        assertEq(_openBook(poster, 1, 1e18), 0);
        assertEq(_openBook(poster, 2, 1e18), 1);
        assertEq(_openBook(poster2, 3, 1e18), 0);
        assertEq(_openBook(poster, 4, 1e18), 2);
        assertEq(market.bookCount(poster), 3);
        assertEq(market.bookCount(poster2), 1);
        assertEq(market.book(poster, 1).capacity, 2);
        assertEq(market.book(poster2, 0).capacity, 3);
    }

    function test_openBook_largestCapacity() public {
        uint32 id = _openBook(poster, MAX_CAPACITY, 1);
        assertEq(market.book(poster, id).capacity, MAX_CAPACITY);
        assertEq(market.book(poster, id).remaining, MAX_CAPACITY);
    }

    function test_RevertWhen_openBookCapacityZero() public {
        vm.expectRevert(abi.encodeWithSelector(IDeposits.MarketInvalidBook.selector, 0, BOOK_MAX));
        _openBook(poster, 0, BOOK_MAX);
    }

    function test_RevertWhen_openBookCapacityAbove24Bits() public {
        vm.expectRevert(abi.encodeWithSelector(IDeposits.MarketInvalidBook.selector, MAX_CAPACITY + 1, 1));
        _openBook(poster, MAX_CAPACITY + 1, 1);
    }

    function test_RevertWhen_openBookPerOrderMaxZero() public {
        vm.expectRevert(abi.encodeWithSelector(IDeposits.MarketInvalidBook.selector, 1, 0));
        _openBook(poster, 1, 0);
    }

    function test_RevertWhen_openBookFundingAbove96Bits() public {
        uint256 perOrderMax = U96 / MAX_CAPACITY + 1;
        vm.expectRevert(abi.encodeWithSelector(IDeposits.MarketInvalidBook.selector, MAX_CAPACITY, perOrderMax));
        _openBook(poster, MAX_CAPACITY, perOrderMax);
        vm.expectRevert(abi.encodeWithSelector(IDeposits.MarketInvalidBook.selector, 1, U96 + 1));
        _openBook(poster, 1, U96 + 1);
    }

    /// The largest product that fits 96 bits passes the bounds; only the poster's balance stops it.
    function test_openBook_fundingAt96BitsPassesBounds() public {
        uint256 perOrderMax = U96 / MAX_CAPACITY;
        uint256 balance = token.balanceOf(poster);
        vm.expectRevert(
            abi.encodeWithSelector(
                IERC20Errors.ERC20InsufficientBalance.selector, poster, balance, MAX_CAPACITY * perOrderMax
            )
        );
        _openBook(poster, MAX_CAPACITY, perOrderMax);
    }

    function testFuzz_openBook_boundsAndFunding(uint256 capacity, uint256 perOrderMax) public {
        capacity = bound(capacity, 0, MAX_CAPACITY + 1);
        perOrderMax = bound(perOrderMax, 0, 1_000e18);
        bool valid = capacity != 0 && capacity <= MAX_CAPACITY && perOrderMax != 0;
        if (!valid) {
            vm.expectRevert(abi.encodeWithSelector(IDeposits.MarketInvalidBook.selector, capacity, perOrderMax));
            _openBook(poster, capacity, perOrderMax);
            return;
        }
        vm.assume(capacity * perOrderMax <= token.balanceOf(poster));
        _openBook(poster, capacity, perOrderMax);
        assertEq(market.book(poster, 0).remaining, capacity * perOrderMax);
        assertEq(token.balanceOf(address(market)), 1_000e18 + capacity * perOrderMax);
    }

    // ------------------------------------------------------------------ closeBook

    function test_closeBook_startsUnlockDelay() public {
        uint32 id = _openBook(poster, 2, BOOK_MAX);
        uint256 unlockAt = block.timestamp + 8 days;
        vm.expectEmit(address(market));
        emit IDeposits.BookClosed(poster, id, unlockAt);
        vm.prank(poster);
        market.closeBook(id);
        assertEq(market.book(poster, id).unlockAt, unlockAt);
        assertEq(market.book(poster, id).remaining, 2 * BOOK_MAX);
    }

    function test_RevertWhen_closeBookUnknown() public {
        vm.expectRevert(abi.encodeWithSelector(IDeposits.MarketUnknownBook.selector, poster, 0));
        vm.prank(poster);
        market.closeBook(0);
    }

    /// Books are per poster: another poster's book is unknown to the caller.
    function test_RevertWhen_closeBookOfAnotherPoster() public {
        _openBook(poster, 2, BOOK_MAX);
        vm.expectRevert(abi.encodeWithSelector(IDeposits.MarketUnknownBook.selector, poster2, 0));
        vm.prank(poster2);
        market.closeBook(0);
    }

    function test_RevertWhen_closeBookTwice() public {
        uint32 id = _openBook(poster, 2, BOOK_MAX);
        vm.prank(poster);
        market.closeBook(id);
        uint256 unlockAt = block.timestamp + 8 days;
        skip(1 hours);
        vm.expectRevert(abi.encodeWithSelector(IDeposits.MarketBookClosing.selector, poster, id, unlockAt));
        vm.prank(poster);
        market.closeBook(id);
    }

    /// Settlements keep drawing on a closing book until it is withdrawn.
    function test_settleBatch_paysFromClosingBook() public {
        uint32 id = _openBook(poster, 2, BOOK_MAX);
        vm.prank(poster);
        market.closeBook(id);
        assertEq(_settleBound(_items1(_item(_order(poster, id, 0), provider)), sequencer), 1);
        assertEq(market.book(poster, id).remaining, 2 * BOOK_MAX - PAYMENT);
    }

    // ------------------------------------------------------------------ withdrawBook

    function test_RevertWhen_withdrawBookOpen() public {
        uint32 id = _openBook(poster, 2, BOOK_MAX);
        vm.expectRevert(abi.encodeWithSelector(IDeposits.MarketBookLocked.selector, poster, id, 0));
        vm.prank(poster);
        market.withdrawBook(id);
    }

    function test_RevertWhen_withdrawBookBeforeUnlock() public {
        uint32 id = _openBook(poster, 2, BOOK_MAX);
        vm.prank(poster);
        market.closeBook(id);
        uint256 unlockAt = block.timestamp + 8 days;
        vm.warp(unlockAt - 1);
        vm.expectRevert(abi.encodeWithSelector(IDeposits.MarketBookLocked.selector, poster, id, unlockAt));
        vm.prank(poster);
        market.withdrawBook(id);
    }

    function test_RevertWhen_withdrawBookUnknown() public {
        vm.expectRevert(abi.encodeWithSelector(IDeposits.MarketUnknownBook.selector, poster, 3));
        vm.prank(poster);
        market.withdrawBook(3);
    }

    /// At unlockAt exactly, the poster gets what settlements left; a second withdrawal sends 0.
    function test_withdrawBook_sendsRemainderAfterSettlements() public {
        uint32 id = _openBook(poster, 4, BOOK_MAX);
        Item[] memory items = _items2(_item(_order(poster, id, 0), provider), _item(_order(poster, id, 3), provider));
        assertEq(_settleBound(items, sequencer), 2);
        vm.prank(poster);
        market.closeBook(id);
        vm.warp(block.timestamp + 8 days);
        uint256 expected = 4 * BOOK_MAX - 2 * PAYMENT;
        uint256 before = token.balanceOf(poster);
        vm.expectEmit(address(market));
        emit IDeposits.BookWithdrawn(poster, id, expected);
        vm.prank(poster);
        assertEq(market.withdrawBook(id), expected);
        assertEq(token.balanceOf(poster), before + expected);
        assertEq(market.book(poster, id).remaining, 0);

        vm.expectEmit(address(market));
        emit IDeposits.BookWithdrawn(poster, id, 0);
        vm.prank(poster);
        assertEq(market.withdrawBook(id), 0);
        assertEq(token.balanceOf(poster), before + expected);
    }

    // ------------------------------------------------------------------ cancelNonces

    function test_RevertWhen_cancelNoncesEmpty() public {
        vm.expectRevert(IDeposits.MarketEmptyList.selector);
        vm.prank(poster);
        market.cancelNonces(new uint64[](0));
    }

    function test_cancelNonces_marksUsedAndEmits() public {
        uint64[] memory nonces = new uint64[](3);
        nonces[0] = 5;
        nonces[1] = (uint64(2) << 32) | 300;
        nonces[2] = type(uint64).max;
        vm.expectEmit(address(market));
        emit IDeposits.NoncesCancelled(poster, nonces);
        vm.prank(poster);
        market.cancelNonces(nonces);
        for (uint256 i = 0; i < 3; ++i) {
            assertTrue(market.nonceUsed(poster, nonces[i]));
            assertFalse(market.nonceUsed(poster2, nonces[i])); // nonces are per poster
        }
        assertFalse(market.nonceUsed(poster, 4));
        assertFalse(market.nonceUsed(poster, 6));
    }

    /// A cancelled order's leaf is skipped (NonceUsed), its book untouched, and it cannot be
    /// disputed either.
    function test_cancelNonces_orderNeitherSettlesNorDisputes() public {
        uint32 id = _openBook(poster, 2, BOOK_MAX);
        Order memory o = _order(poster, id, 1);
        uint64[] memory nonces = new uint64[](1);
        nonces[0] = o.nonce;
        vm.prank(poster);
        market.cancelNonces(nonces);

        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(o), ISettleBatch.SkipReason.NonceUsed);
        assertEq(_settleBound(_items1(_item(o, provider)), sequencer), 0);
        assertEq(market.book(poster, id).remaining, 2 * BOOK_MAX);
        assertEq(market.earner(provider).earnings, 0);

        vm.warp(o.deadline + 1);
        _expectDisputeRevert(o, provider, abi.encodeWithSelector(IDisputes.MarketOrderClosed.selector, poster, o.nonce));
    }

    /// Cancelling a nonce already settled changes nothing (the payment stays made).
    function test_cancelNonces_usedNonceUnchanged() public {
        uint32 id = _openBook(poster, 2, BOOK_MAX);
        Order memory o = _order(poster, id, 0);
        _settleBound(_items1(_item(o, provider)), sequencer);
        uint64[] memory nonces = new uint64[](1);
        nonces[0] = o.nonce;
        vm.prank(poster);
        market.cancelNonces(nonces);
        assertTrue(market.nonceUsed(poster, o.nonce));
        assertEq(market.book(poster, id).remaining, 2 * BOOK_MAX - PAYMENT);
        assertEq(market.earner(provider).earnings, PAYMENT - _fee(PAYMENT));
    }

    // ------------------------------------------------------------------ views

    function test_views_unknownBookIsZero() public view {
        IDeposits.Book memory b = market.book(stranger, 7);
        assertEq(b.remaining, 0);
        assertEq(b.perOrderMax, 0);
        assertEq(b.capacity, 0);
        assertEq(b.unlockAt, 0);
        assertEq(market.bookCount(stranger), 0);
        assertFalse(market.nonceUsed(stranger, 0));
    }

    function test_nonceUsed_tracksSettlement() public {
        uint32 id = _openBook(poster, 300, 1e18);
        Order memory o = _order(poster, id, 257);
        o.payment = 1e18;
        assertFalse(market.nonceUsed(poster, o.nonce));
        _settleBound(_items1(_item(o, provider)), sequencer);
        assertTrue(market.nonceUsed(poster, o.nonce));
        assertFalse(market.nonceUsed(poster, o.nonce - 1));
        assertFalse(market.nonceUsed(poster, o.nonce + 1));
    }
}
