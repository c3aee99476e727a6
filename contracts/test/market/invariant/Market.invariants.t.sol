// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {TGridTest} from "../../utils/TGridTest.sol";
import {MarketHandler} from "./MarketHandler.sol";
import {PublicInputBoundVerifier} from "../../mocks/VerifierMocks.sol";
import {IBonds} from "../../../interfaces/market/IBonds.sol";
import {IDeposits} from "../../../interfaces/market/IDeposits.sol";
import {Order} from "../../../libraries/OrderLib.sol";

/// @notice TaskMarket invariants under random books, cancellations, bonds, signed orders, batch
/// settlements (by the sequencer and self-settled by providers, with forged and repeated leaves),
/// disputes, withdrawals, fee sweeps and time travel.
/// @dev Settlement uses PublicInputBoundVerifier (test only: accepts only a proof bound to the
/// batch's public input) so that batches settle at fuzzing speed; the real Groth16 check is
/// covered by SettleBatch.t.sol and MarketAttacks.t.sol.
contract MarketInvariantTest is TGridTest {
    MarketHandler internal handler;
    address[] internal actors;

    function setUp() public override {
        super.setUp();
        PublicInputBoundVerifier v = new PublicInputBoundVerifier();
        uint256[8] memory proof = v.proofFor(1);
        vm.prank(address(timelock));
        market.setVerifier(address(v), proof, 1);

        address[] memory posters_ = new address[](3);
        address[] memory providers_ = new address[](3);
        uint256[] memory posterKeys = new uint256[](3);
        uint256[] memory providerKeys = new uint256[](3);
        for (uint256 i = 0; i < 3; ++i) {
            (posters_[i], posterKeys[i]) = makeAddrAndKey(string.concat("market inv poster ", vm.toString(i)));
            (providers_[i], providerKeys[i]) = makeAddrAndKey(string.concat("market inv provider ", vm.toString(i)));
            assertTrue(token.transfer(posters_[i], 100_000e18));
            assertTrue(token.transfer(providers_[i], 50_000e18));
            vm.prank(posters_[i]);
            token.approve(address(market), type(uint256).max);
            vm.startPrank(providers_[i]);
            token.approve(address(market), type(uint256).max);
            market.stake(300e18);
            vm.stopPrank();
            actors.push(posters_[i]);
            actors.push(providers_[i]);
        }
        handler = new MarketHandler(
            token, market, v, MODEL, ROOT_A, sequencer, posters_, posterKeys, providers_, providerKeys
        );

        // Every run starts with one book per poster (32 orders of at most 50).
        for (uint256 i = 0; i < 3; ++i) {
            handler.poster(0, i, 32, 50e18);
        }

        bytes4[] memory selectors = new bytes4[](7);
        selectors[0] = MarketHandler.poster.selector;
        selectors[1] = MarketHandler.provider.selector;
        selectors[2] = MarketHandler.signOrder.selector;
        selectors[3] = MarketHandler.settle.selector;
        selectors[4] = MarketHandler.dispute.selector;
        selectors[5] = MarketHandler.sweepFees.selector;
        selectors[6] = MarketHandler.warp.selector;
        targetSelector(FuzzSelector({addr: address(handler), selectors: selectors}));
        targetContract(address(handler));
    }

    function _earningsAccounts() internal view returns (address[] memory a) {
        a = new address[](actors.length + 1);
        for (uint256 i = 0; i < actors.length; ++i) {
            a[i] = actors[i];
        }
        a[actors.length] = sequencer;
    }

    /// Token conservation: every token is held by an actor, the treasury, this test or the market,
    /// and the supply never changes.
    function invariant_tokenConservation() public view {
        uint256 held =
            token.balanceOf(address(this)) + token.balanceOf(address(timelock)) + token.balanceOf(address(market));
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

    /// Market solvency: its balance is exactly the books' remainders, plus bonded and unbonding
    /// stake, plus earnings not withdrawn, plus accrued treasury income; earnings and accrued fees
    /// are exactly what the handler's ghost accounting expects.
    function invariant_marketSolvent() public view {
        uint256 owed = market.accruedFees();
        assertEq(owed, handler.ghostAccrued(), "accrued fees");
        for (uint256 i = 0; i < handler.bookCount(); ++i) {
            MarketHandler.BookRec memory b = handler.bookAt(i);
            owed += market.book(b.poster, b.id).remaining;
        }
        for (uint256 i = 0; i < handler.providerCount(); ++i) {
            IBonds.Bond memory bd = market.bond(handler.providers(i));
            owed += uint256(bd.bonded) + bd.unbonding;
        }
        address[] memory accounts = _earningsAccounts();
        for (uint256 i = 0; i < accounts.length; ++i) {
            uint256 e = market.earner(accounts[i]).earnings;
            assertEq(e, handler.ghostEarnings(accounts[i]), "earnings");
            owed += e;
        }
        assertEq(token.balanceOf(address(market)), owed);
        assertEq(handler.ghostWrongAmount(), 0, "a withdrawal, sweep or slash of the wrong amount");
        assertEq(handler.ghostWrongPaidCount(), 0, "paidCount");
    }

    /// No nonce is paid twice: every (poster, nonce) is paid at most once, an order settles at most
    /// once in a batch, a forged leaf never settles, and a paid order is never slashed.
    function invariant_noNoncePaidTwice() public view {
        assertEq(handler.ghostDoublePaid(), 0);
        assertEq(handler.ghostDoubleSettled(), 0);
        assertEq(handler.ghostForgedSettled(), 0);
        assertEq(handler.ghostSlashAfterSettlement(), 0);
        for (uint256 i = 0; i < handler.orderCount(); ++i) {
            Order memory o = handler.orderAt(i).order;
            uint256 paid = handler.ghostPaidCount(handler.posterNonceKey(o.poster, o.nonce));
            assertLe(paid, 1);
            if (paid == 1) assertTrue(market.nonceUsed(o.poster, o.nonce));
        }
    }

    /// No book is overdrawn: each pays at most its capacity of orders, each at most perOrderMax,
    /// and what it paid plus what was withdrawn never exceeds its funding; its remainder is exactly
    /// funding - paid - withdrawn. Unpaid reasons hold; BookEmpty only follows a withdrawal; no
    /// book or stake left before its time.
    function invariant_noBookOverdrawn() public view {
        assertEq(handler.ghostBookOverdrawn(), 0);
        assertEq(handler.ghostWrongUnpaid(), 0);
        assertEq(handler.ghostEmptyBeforeWithdrawal(), 0);
        assertEq(handler.ghostEarlyWithdrawal(), 0);
        for (uint256 i = 0; i < handler.bookCount(); ++i) {
            MarketHandler.BookRec memory b = handler.bookAt(i);
            IDeposits.Book memory onChain = market.book(b.poster, b.id);
            assertLe(b.paidOrders, b.capacity);
            assertLe(b.paid, b.paidOrders * b.perOrderMax);
            assertLe(b.paid + b.withdrawn, b.funded);
            assertEq(onChain.remaining, b.funded - b.paid - b.withdrawn);
            assertEq(onChain.capacity, b.capacity);
            assertEq(onChain.perOrderMax, b.perOrderMax);
        }
    }

    /// No slash without a signed acceptance past its deadline: every successful dispute came after
    /// the order's deadline, named the provider whose key signed the acceptance, and that provider
    /// is the one that accepted the order.
    function invariant_slashesNeedAcceptancePastDeadline() public view {
        for (uint256 i = 0; i < handler.slashCount(); ++i) {
            MarketHandler.SlashRec memory s = handler.slashAt(i);
            assertLt(s.deadline, s.slashedAt);
            assertEq(s.provider, s.acceptanceSigner);
            assertEq(s.provider, s.accepter);
        }
    }

    /// Posters' compensation never exceeds the order's payment.
    function invariant_posterCompensationBoundedByPayment() public view {
        for (uint256 i = 0; i < handler.slashCount(); ++i) {
            MarketHandler.SlashRec memory s = handler.slashAt(i);
            assertLe(s.toPoster, s.payment);
            assertLe(s.toPoster, s.slashed);
        }
        for (uint256 i = 0; i < handler.orderCount(); ++i) {
            MarketHandler.OrderRec memory r = handler.orderAt(i);
            assertLe(handler.ghostCompensation(r.hash), r.order.payment);
        }
    }

    /// The runs are not vacuous: each one signs orders, pays some of them in settled batches and
    /// attempts disputes (settle and dispute sign a fresh order when none qualifies). A short
    /// run's disputes may all be refused by design (a wrong signer, a payment below the floor),
    /// so a successful slash is not required per run: `test_handler_exercisesEveryPath` shows
    /// one deterministically, and the invariants above check the amounts of every one.
    function afterInvariant() public view {
        assertGt(handler.calls("signOrder"), 0, "no order signed");
        assertGt(handler.calls("settlePaid"), 0, "no batch paid anything");
        assertGt(handler.calls("disputeOk") + handler.calls("disputeRefused"), 0, "no dispute attempted");
    }

    /// Terms seed of MarketHandler.signOrder: named provider unless `open`, collateral, 50 % / 50 %.
    function _terms(bool open, uint256 collateral) internal pure returns (uint256) {
        return (open ? 1 : 0) | (collateral << 8) | (uint256(5_000) << 104) | (uint256(5_000) << 120);
    }

    /// Seed of MarketHandler.signOrder for entry `i` of a range (book id, index, payment): its low
    /// three bits non-zero select "in range".
    function _in(uint256 i) internal pure returns (uint256) {
        return (i << 3) | 1;
    }

    /// The handler's actions reach the market (guards against a handler whose try/catch silently
    /// swallows every call): a fixed sequence opens, signs, settles (as sequencer and
    /// self-settled), records unpaid orders, skips a replay, disputes (and refuses a wrong
    /// acceptance), withdraws and sweeps. setUp opened book 0 of each poster.
    function test_handler_exercisesEveryPath() public {
        handler.poster(0, 0, 2, 50e18); // poster 0 opens book 1: 2 orders of at most 50
        // Orders 0-2: poster 0, book 1, indices 0, 1 and 2 (out of book), provider 0 named, 1 hour.
        handler.signOrder(0, 0, _in(1), _in(0), _in(10e18), _terms(false, 0), 1 hours);
        handler.signOrder(0, 0, _in(1), _in(1), _in(10e18), _terms(false, 0), 1 hours);
        handler.signOrder(0, 0, _in(1), 0, _in(10e18), _terms(false, 0), 1 hours);
        // Order 3: same nonce as order 1, open, accepted by provider 1, 10 minutes.
        handler.signOrder(0, 1, _in(1), _in(1), _in(10e18), _terms(true, 0), 10 minutes);
        assertEq(handler.orderCount(), 4);
        handler.settle(1, 3, 0); // orders 2, 1, 0 as the sequencer
        assertEq(handler.calls("paidOrders"), 2);
        assertEq(handler.calls("unpaidOrders"), 1);
        // Self-settled (odd mode): nothing is live, so a fresh order 4 (poster 0, book 0,
        // provider 0) is signed and settled, with order 3 replayed as the second leaf (mode bits
        // 10-11 = 3): its nonce is used, skipped.
        handler.settle(1, 2, 1 | (3 << 10));
        assertEq(handler.calls("settleFreshOrder"), 1);
        assertEq(handler.calls("paidOrders"), 3);
        assertEq(handler.calls("skipNonceUsed"), 1);
        assertEq(handler.calls("selfSettlePaid"), 1);

        // Order 5: poster 1's book 1, never opened, provider 2 named, collateral 100: disputable.
        handler.signOrder(1, 2, 0, _in(0), _in(40e18), _terms(false, 100e18), 2 hours);
        handler.dispute(5, 0, 1);
        assertEq(handler.calls("disputeOk"), 1);
        assertEq(handler.slashAt(0).slashed, 50e18);

        // Order 6: poster 2's book 1, opened afterwards, open, provider 1 self-settles it.
        handler.signOrder(2, 1, 0, _in(0), _in(5e18), _terms(true, 0), 30 minutes);
        handler.poster(0, 2, 1, 5e18);
        handler.settle(0, 1, 1);
        assertEq(handler.calls("selfSettlePaid"), 2);
        assertEq(handler.calls("settleFreshOrder"), 1);

        // Order 7: poster 2's book 2 (not opened), provider 0 named; the acceptance is signed by
        // provider 1 (mode 5): refused.
        handler.signOrder(2, 0, 0, _in(0), _in(10e18), _terms(false, 100e18), 10 minutes);
        handler.dispute(7, 0, 5);
        assertEq(handler.calls("disputeRefused"), 1);
        assertEq(handler.calls("disputeOk"), 1);
        assertEq(handler.calls("disputeFreshOrder"), 0);

        handler.provider(3, 0, 0); // provider 0 withdraws its earnings
        handler.provider(3, 3, 0); // the sequencer withdraws its settler share
        assertEq(handler.calls("withdrawEarnings"), 2);
        handler.poster(1, 0, 3, 0); // poster 0 closes book 1 (the handler's 4th book)
        handler.poster(2, 0, 3, 1 << 8); // warps to its unlock and withdraws 100 - 20
        assertEq(handler.calls("withdrawBook"), 1);
        assertEq(handler.bookAt(3).withdrawn, 80e18);
        handler.provider(1, 0, 10e18);
        handler.provider(2, 0, 1 << 8); // warps to readiness and withdraws
        assertEq(handler.calls("withdrawStake"), 1);
        handler.sweepFees();
        assertEq(market.accruedFees(), 0);
        invariant_tokenConservation();
        invariant_marketSolvent();
        invariant_noNoncePaidTwice();
        invariant_noBookOverdrawn();
        invariant_slashesNeedAcceptancePastDeadline();
        invariant_posterCompensationBoundedByPayment();
    }
}
