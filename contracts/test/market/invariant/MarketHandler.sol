// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {CommonBase} from "forge-std/Base.sol";
import {StdCheats} from "forge-std/StdCheats.sol";
import {StdUtils} from "forge-std/StdUtils.sol";
import {Vm} from "forge-std/Vm.sol";

import {TGRID} from "../../../token/TGRID.sol";
import {TaskMarket} from "../../../market/TaskMarket.sol";
import {IBonds} from "../../../interfaces/market/IBonds.sol";
import {IDeposits} from "../../../interfaces/market/IDeposits.sol";
import {ISettleBatch} from "../../../interfaces/market/ISettleBatch.sol";
import {Order} from "../../../libraries/OrderLib.sol";
import {PublicInputBoundVerifier} from "../../mocks/VerifierMocks.sol";

/// @notice Drives the TaskMarket with bounded random actions of a few posters and providers and
/// keeps ghost accounting of what each action should have done. Actions are grouped into a few
/// entry points (poster, provider, signOrder, settle, dispute, sweepFees, warp) so that each run
/// reaches settlements and disputes often. Violations are counted here and asserted by
/// Market.invariants.t.sol.
contract MarketHandler is CommonBase, StdCheats, StdUtils {
    uint256 internal constant BPS = 10_000;
    bytes32 internal constant SKIPPED_TOPIC = keccak256("OrderSkipped(bytes32,uint8)");
    bytes32 internal constant UNPAID_TOPIC = keccak256("OrderUnpaid(bytes32,uint8)");

    TGRID public immutable token;
    TaskMarket public immutable market;
    PublicInputBoundVerifier public immutable verifier;
    bytes32 public immutable model;
    bytes32 public immutable root;
    address public immutable sequencer;

    address[] public posters;
    address[] public providers;
    mapping(address account => uint256) internal _keyOf;

    /// @dev A book the handler opened, with what it was funded, paid and sent back.
    struct BookRec {
        address poster;
        uint32 id;
        uint256 funded;
        uint256 perOrderMax;
        uint256 capacity;
        uint256 paid;
        uint256 paidOrders;
        uint256 withdrawn;
        bool withdrawnOnce;
    }

    /// @dev An order the handler signed, and the provider that accepted it (and proves it).
    struct OrderRec {
        Order order;
        address accepter;
        bytes32 hash;
    }

    /// @dev A successful dispute, as observed when it happened.
    struct SlashRec {
        uint256 deadline;
        uint256 slashedAt;
        address provider;
        address acceptanceSigner;
        address accepter;
        uint256 slashed;
        uint256 toPoster;
        uint256 payment;
    }

    BookRec[] internal _books;
    mapping(uint256 bookKey => uint256 indexPlusOne) internal _bookIndex;
    OrderRec[] internal _orders;
    SlashRec[] internal _slashes;
    mapping(uint256 bookKey => uint256) internal _nextIndex; // next index never signed
    mapping(uint256 orderIndex => bool) internal _notDisputable; // refused with a genuine acceptance

    // ------------------------------------------------------------------ ghosts

    mapping(bytes32 posterNonce => uint256) public ghostPaidCount;
    mapping(address account => uint256) public ghostEarnings;
    mapping(bytes32 orderHash => uint256) public ghostCompensation;
    uint256 public ghostAccrued;
    uint256 public ghostDoublePaid; // a (poster, nonce) paid twice
    uint256 public ghostDoubleSettled; // one order settled twice in a batch
    uint256 public ghostBookOverdrawn; // paid above perOrderMax, outside the capacity, or beyond the funding
    uint256 public ghostWrongUnpaid; // an unpaid reason that does not hold
    uint256 public ghostEmptyBeforeWithdrawal; // BookEmpty on a book never withdrawn
    uint256 public ghostForgedSettled; // a leaf with a forged poster signature settled
    uint256 public ghostWrongPaidCount; // settleBatch's paidCount differs from the leaves paid
    uint256 public ghostWrongAmount; // a slash, withdrawal or sweep not of the expected amount
    uint256 public ghostSlashAfterSettlement; // a dispute of a paid order succeeded
    uint256 public ghostEarlyWithdrawal; // a stake or book withdrawal before its time
    mapping(bytes32 => uint256) public calls;

    constructor(
        TGRID token_,
        TaskMarket market_,
        PublicInputBoundVerifier verifier_,
        bytes32 model_,
        bytes32 root_,
        address sequencer_,
        address[] memory posters_,
        uint256[] memory posterKeys,
        address[] memory providers_,
        uint256[] memory providerKeys
    ) {
        token = token_;
        market = market_;
        verifier = verifier_;
        model = model_;
        root = root_;
        sequencer = sequencer_;
        posters = posters_;
        providers = providers_;
        for (uint256 i = 0; i < posters_.length; ++i) {
            _keyOf[posters_[i]] = posterKeys[i];
        }
        for (uint256 i = 0; i < providers_.length; ++i) {
            _keyOf[providers_[i]] = providerKeys[i];
        }
    }

    // ------------------------------------------------------------------ views for the invariants

    function posterCount() external view returns (uint256) {
        return posters.length;
    }

    function providerCount() external view returns (uint256) {
        return providers.length;
    }

    function bookCount() external view returns (uint256) {
        return _books.length;
    }

    function bookAt(uint256 i) external view returns (BookRec memory) {
        return _books[i];
    }

    function orderCount() external view returns (uint256) {
        return _orders.length;
    }

    function orderAt(uint256 i) external view returns (OrderRec memory) {
        return _orders[i];
    }

    function slashCount() external view returns (uint256) {
        return _slashes.length;
    }

    function slashAt(uint256 i) external view returns (SlashRec memory) {
        return _slashes[i];
    }

    function posterNonceKey(address who, uint64 nonce) public pure returns (bytes32) {
        return keccak256(abi.encode(who, nonce));
    }

    // ------------------------------------------------------------------ poster actions

    /// op 0 opens a book, 1 closes one, 2 withdraws one (warping to its unlock one time in four),
    /// 3 cancels the nonce of a signed order.
    function poster(uint256 op, uint256 actorSeed, uint256 a, uint256 b) external {
        address p = posters[actorSeed % posters.length];
        op %= 4;
        if (op == 0) {
            uint256 capacity = _bound(a, 1, 32);
            uint256 perOrderMax = _bound(b, 1e18, 60e18);
            vm.prank(p);
            uint32 id = market.openBook(capacity, perOrderMax);
            _books.push(BookRec(p, id, capacity * perOrderMax, perOrderMax, capacity, 0, 0, 0, false));
            _bookIndex[_bookKey(p, id)] = _books.length;
            calls["openBook"]++;
        } else if (op == 1) {
            if (_books.length == 0) return;
            BookRec storage r = _books[a % _books.length];
            vm.prank(r.poster);
            try market.closeBook(r.id) {
                calls["closeBook"]++;
            } catch {}
        } else if (op == 2) {
            if (_books.length == 0) return;
            BookRec storage r = _books[a % _books.length];
            uint256 unlockAt = market.book(r.poster, r.id).unlockAt;
            if (unlockAt == 0) return;
            if (block.timestamp < unlockAt && (b >> 8) % 4 == 1) vm.warp(unlockAt); // now and then: it expires every order
            uint256 expected = r.funded - r.paid - r.withdrawn;
            vm.prank(r.poster);
            try market.withdrawBook(r.id) returns (uint256 amount) {
                if (block.timestamp < unlockAt) ghostEarlyWithdrawal++;
                if (amount != expected) ghostWrongAmount++;
                r.withdrawn += amount;
                r.withdrawnOnce = true;
                calls["withdrawBook"]++;
            } catch {}
        } else {
            if (_orders.length == 0) return;
            Order memory o = _orders[a % _orders.length].order;
            uint64[] memory nonces = new uint64[](2);
            nonces[0] = o.nonce;
            nonces[1] = uint64(b); // any nonce of the poster, perhaps one it signs later: that order never settles
            vm.prank(o.poster);
            market.cancelNonces(nonces);
            calls["cancelNonces"]++;
        }
    }

    // ------------------------------------------------------------------ provider actions

    /// op 0 stakes, 1 requests unbonding, 2 withdraws stake (warping to readiness one time in four),
    /// 3 withdraws earnings (of a provider or the sequencer).
    function provider(uint256 op, uint256 actorSeed, uint256 amount) external {
        address p = providers[actorSeed % providers.length];
        op %= 4;
        if (op == 0) {
            amount = _bound(amount, 1, 500e18);
            vm.prank(p);
            market.stake(amount);
            calls["stake"]++;
        } else if (op == 1) {
            uint256 bonded = market.bond(p).bonded;
            if (bonded == 0) return;
            amount = _bound(amount, 1, bonded);
            vm.prank(p);
            market.requestUnbonding(amount);
            calls["requestUnbonding"]++;
        } else if (op == 2) {
            IBonds.Bond memory bd = market.bond(p);
            if (bd.unbonding != 0 && block.timestamp < bd.unbondingReadyAt && (amount >> 8) % 4 == 1) {
                vm.warp(bd.unbondingReadyAt);
            }
            vm.prank(p);
            try market.withdrawStake() returns (uint256 sent) {
                if (block.timestamp < bd.unbondingReadyAt) ghostEarlyWithdrawal++;
                if (sent != bd.unbonding) ghostWrongAmount++;
                calls["withdrawStake"]++;
            } catch {}
        } else {
            address account = actorSeed % (providers.length + 1) == providers.length ? sequencer : p;
            uint256 expected = ghostEarnings[account];
            vm.prank(account);
            try market.withdrawEarnings() returns (uint256 sent) {
                if (sent != expected) ghostWrongAmount++;
                ghostEarnings[account] = 0;
                calls["withdrawEarnings"]++;
            } catch {}
        }
    }

    // ------------------------------------------------------------------ orders

    /// Signs one to three orders of a random poster's book, each at the book's next unsigned
    /// index, with deadlines 10 minutes apart. One order in eight goes wrong on purpose in each
    /// way: a book not opened yet, an index past the capacity, a random index (possibly signed
    /// before: two orders on one nonce), a payment above the book's maximum (payments may also fall
    /// below the dispute floor). Accepted by a random provider. `termsSeed`: bit 0 clear names the
    /// provider in the order; bits 8-103 collateral, 104-119 slashBps, 120-135 posterShareBps (each
    /// bounded).
    function signOrder(
        uint256 posterSeed,
        uint256 providerSeed,
        uint256 bookSeed,
        uint256 indexSeed,
        uint256 paymentSeed,
        uint256 termsSeed,
        uint256 delaySeed
    ) external {
        address p = posters[posterSeed % posters.length];
        uint256 count = market.bookCount(p);
        uint32 id = uint32(count == 0 || bookSeed % 8 == 0 ? count : (bookSeed >> 3) % count);
        address prov = providers[providerSeed % providers.length];
        uint256 deadline = block.timestamp + _bound(delaySeed, 15 minutes, 3 hours);
        for (uint256 j = 0; j <= (delaySeed >> 32) % 3; ++j) {
            _signOne(p, id, prov, indexSeed, paymentSeed, termsSeed, deadline + j * 10 minutes);
            indexSeed >>= 3; // the next order draws its own index mode
        }
    }

    function _signOne(
        address p,
        uint32 id,
        address prov,
        uint256 indexSeed,
        uint256 paymentSeed,
        uint256 termsSeed,
        uint256 deadline
    ) internal {
        IDeposits.Book memory b = market.book(p, id);
        uint256 maxPay = b.perOrderMax == 0 ? 50e18 : b.perOrderMax;
        uint256 index = _pickIndex(_bookKey(p, id), b.capacity, indexSeed);
        uint256 payment = paymentSeed % 8 == 0
            ? maxPay + _bound(paymentSeed >> 3, 1, 10e18)
            : _bound(paymentSeed >> 3, 0.5e18, maxPay);
        Order memory o = Order({
            poster: p,
            provider: termsSeed % 2 == 0 ? prov : address(0),
            modelId: model,
            inputCommitment: keccak256(abi.encode("invariant input", _orders.length)),
            payment: uint96(payment),
            collateral: uint96(_bound(uint96(termsSeed >> 8), 0, 200e18)),
            deadline: uint40(deadline),
            nonce: (uint64(id) << 32) | uint32(index),
            slashBps: uint16(_bound(uint16(termsSeed >> 104), 0, BPS)),
            posterShareBps: uint16(_bound(uint16(termsSeed >> 120), 0, BPS))
        });
        _orders.push(OrderRec(o, prov, market.hashOrder(o)));
        calls["signOrder"]++;
    }

    /// Signs one order of a random poster's existing book (or book 0, possibly not opened yet), at
    /// a fresh index, paying within the book's maximum, due in `delay` seconds.
    function _signFresh(uint256 seed, uint256 delay) internal {
        address p = posters[seed % posters.length];
        uint256 count = market.bookCount(p);
        uint32 id = uint32(count == 0 ? 0 : (seed >> 8) % count);
        address prov = providers[(seed >> 16) % providers.length];
        _signOne(p, id, prov, 2, ((seed >> 24) << 3) | 1, seed >> 64, block.timestamp + delay);
    }

    /// Orders among the 16 latest whose nonce is unused and whose deadline lies in [now, horizon].
    function _liveOrders(uint256 horizon) internal view returns (uint256[] memory live, uint256 nl) {
        live = new uint256[](16);
        uint256 n = _orders.length;
        for (uint256 i = n; i > 0 && n - i < 16; --i) {
            Order memory c = _orders[i - 1].order;
            if (block.timestamp <= c.deadline && c.deadline <= horizon && !market.nonceUsed(c.poster, c.nonce)) {
                live[nl++] = i - 1;
            }
        }
    }

    /// Index of a new order of book `key`: past the capacity (seed % 8 == 0), random in range
    /// (seed % 8 == 1, or the book is fully signed), else the book's next unsigned index.
    function _pickIndex(uint256 key, uint256 capacity, uint256 seed) internal returns (uint256 index) {
        uint256 next = _nextIndex[key];
        if (seed % 8 == 0 || capacity == 0) return capacity;
        if (seed % 8 == 1 || next >= capacity) return _bound(seed >> 3, 0, capacity - 1);
        _nextIndex[key] = next + 1;
        return next;
    }

    // ------------------------------------------------------------------ settlement

    /// Settles up to 6 orders, as the sequencer (one batch in two) or as a provider
    /// (self-settlement). The first leaf and, three times in four, each other one is a live order
    /// (nonce unused, deadline not passed, among the 16 latest, and for a provider inside its
    /// self-settlement window; repeats possible), else any order (a replay, an expired one, one
    /// before its window or a closed one). One batch in four carries a leaf with a forged poster
    /// signature.
    function settle(uint256 startSeed, uint256 count, uint256 mode) external {
        count = _bound(count, 1, 6);
        bool asSequencer = mode % 2 == 0;
        uint256 horizon = asSequencer ? type(uint40).max : block.timestamp + market.parameters().selfSettlementWindow;
        (uint256[] memory live, uint256 nl) = _liveOrders(horizon);
        if (nl == 0) {
            // Nothing live: the batch carries an order just received, inside any settler's window.
            _signFresh(startSeed ^ mode, 15 minutes + (startSeed >> 128) % 45 minutes);
            (live, nl) = _liveOrders(horizon);
            calls["settleFreshOrder"]++;
        }
        uint256 n = _orders.length;
        uint256[] memory pick = new uint256[](count);
        for (uint256 k = 0; k < count; ++k) {
            bool anyOrder = nl == 0 || (k != 0 && (mode >> (8 + 2 * k)) % 4 == 3);
            pick[k] = anyOrder ? (startSeed % n + 7 * k) % n : live[(startSeed % 16 + k) % nl];
        }
        address settler = asSequencer ? sequencer : _orders[pick[0]].accepter;
        uint256 forged = type(uint256).max;
        if ((mode >> 4) % 4 == 3) {
            forged = (mode >> 6) % count;
            for (uint256 k = 0; k < count; ++k) {
                if (k != forged && pick[k] == pick[forged]) {
                    forged = type(uint256).max; // forge a lone leaf only
                    break;
                }
            }
        }
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _buildBatch(pick, forged);
        (, uint256 publicInput,) = market.computePublicInput(h, leaves, root);
        uint256[8] memory proof = verifier.proofFor(publicInput);
        uint256 feeBps = market.parameters().protocolFeeBps;
        uint256 shareBps = market.parameters().settlerShareBps; // both read before: the fees in force
        vm.recordLogs();
        vm.prank(settler);
        (,, uint256 paidCount) = market.settleBatch(h, leaves, root, proof);
        Vm.Log[] memory logs = vm.getRecordedLogs();
        _countSkips(logs);
        (uint256 paid, uint256 fees) = _account(pick, forged, logs, feeBps);
        if (paid != paidCount) ghostWrongPaidCount++;
        uint256 settlerCut = fees * shareBps / BPS;
        ghostEarnings[settler] += settlerCut;
        ghostAccrued += fees - settlerCut;
        calls["settle"]++;
        if (paid != 0) calls["settlePaid"]++;
        if (settler != sequencer && paid != 0) calls["selfSettlePaid"]++;
    }

    /// Accounts for each distinct order of the batch from the events: settled = its leaves minus
    /// its skips (0 or 1); unpaid if it has an OrderUnpaid event, else paid.
    function _account(uint256[] memory pick, uint256 forged, Vm.Log[] memory logs, uint256 feeBps)
        internal
        returns (uint256 paid, uint256 fees)
    {
        for (uint256 k = 0; k < pick.length; ++k) {
            bool first = true;
            uint256 occurrences;
            for (uint256 j = 0; j < pick.length; ++j) {
                if (pick[j] == pick[k]) {
                    if (j < k) first = false;
                    ++occurrences;
                }
            }
            if (!first) continue;
            OrderRec memory r = _orders[pick[k]];
            (uint256 skips, bool unpaid, uint8 reason) = _eventsOf(logs, r.hash);
            if (skips > occurrences || occurrences - skips > 1) {
                ghostDoubleSettled++;
                continue;
            }
            if (occurrences == skips) continue;
            if (k == forged) ghostForgedSettled++;
            if (unpaid) {
                _checkUnpaid(r.order, reason);
                calls["unpaidOrders"]++;
            } else {
                fees += _pay(r, feeBps);
                ++paid;
            }
        }
    }

    /// Statistics: leaves skipped per reason.
    function _countSkips(Vm.Log[] memory logs) internal {
        bytes32[4] memory names = [bytes32("skipBadSignature"), "skipNonceUsed", "skipDeadlinePassed", "skipPriority"];
        for (uint256 i = 0; i < logs.length; ++i) {
            if (logs[i].emitter == address(market) && logs[i].topics[0] == SKIPPED_TOPIC) {
                calls[names[abi.decode(logs[i].data, (uint256))]]++;
            }
        }
    }

    function _eventsOf(Vm.Log[] memory logs, bytes32 orderHash)
        internal
        view
        returns (uint256 skips, bool unpaid, uint8 reason)
    {
        for (uint256 i = 0; i < logs.length; ++i) {
            Vm.Log memory l = logs[i];
            if (l.emitter != address(market) || l.topics.length != 2 || l.topics[1] != orderHash) continue;
            if (l.topics[0] == SKIPPED_TOPIC) ++skips;
            if (l.topics[0] == UNPAID_TOPIC) {
                unpaid = true;
                reason = uint8(abi.decode(l.data, (uint256)));
            }
        }
    }

    function _checkUnpaid(Order memory o, uint8 reason) internal {
        uint256 i = _bookIndex[_bookKey(o.poster, uint32(o.nonce >> 32))];
        if (i == 0) {
            // A book never opened has capacity 0.
            if (reason != uint8(ISettleBatch.UnpaidReason.IndexOutOfBook)) ghostWrongUnpaid++;
            return;
        }
        uint256 capacity = _books[i - 1].capacity;
        uint256 index = uint32(o.nonce);
        if (reason == uint8(ISettleBatch.UnpaidReason.IndexOutOfBook)) {
            if (index < capacity) ghostWrongUnpaid++;
        } else if (reason == uint8(ISettleBatch.UnpaidReason.PaymentAboveBookMax)) {
            if (index >= capacity || o.payment <= _books[i - 1].perOrderMax) ghostWrongUnpaid++;
        } else {
            // BookEmpty: a funded book always holds (capacity - paid orders) * perOrderMax until
            // withdrawn, so only a withdrawn book can be empty for an in-range order.
            if (index >= capacity || o.payment > _books[i - 1].perOrderMax) ghostWrongUnpaid++;
            if (!_books[i - 1].withdrawnOnce) ghostEmptyBeforeWithdrawal++;
        }
    }

    function _pay(OrderRec memory r, uint256 feeBps) internal returns (uint256 fee) {
        Order memory o = r.order;
        bytes32 key = posterNonceKey(o.poster, o.nonce);
        if (ghostPaidCount[key] != 0) ghostDoublePaid++;
        ghostPaidCount[key]++;
        uint256 i = _bookIndex[_bookKey(o.poster, uint32(o.nonce >> 32))];
        if (i == 0) {
            ghostBookOverdrawn++;
            return 0;
        }
        BookRec storage b = _books[i - 1];
        if (o.payment > b.perOrderMax || uint32(o.nonce) >= b.capacity) ghostBookOverdrawn++;
        b.paid += o.payment;
        b.paidOrders++;
        if (b.paid + b.withdrawn > b.funded) ghostBookOverdrawn++;
        fee = uint256(o.payment) * feeBps / BPS;
        ghostEarnings[r.accepter] += o.payment - fee;
        calls["paidOrders"]++;
    }

    /// Tables sorted and deduplicated as the contract requires, one model, one terms entry per leaf.
    function _buildBatch(uint256[] memory pick, uint256 forged)
        internal
        view
        returns (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves)
    {
        uint256[] memory bookKeys;
        uint256[] memory provs;
        (h, bookKeys, provs) = _tables(pick);
        leaves = new ISettleBatch.SettlementLeaf[](pick.length);
        for (uint256 k = 0; k < pick.length; ++k) {
            OrderRec memory r = _orders[pick[k]];
            uint256 bi = _indexOf(bookKeys, _bookKey(r.order.poster, uint32(r.order.nonce >> 32)));
            leaves[k] = _leafOf(r, bi, _indexOf(provs, uint160(r.accepter)), k, k == forged);
        }
    }

    function _tables(uint256[] memory pick)
        internal
        view
        returns (ISettleBatch.BatchHeader memory h, uint256[] memory bookKeys, uint256[] memory provs)
    {
        uint256 n = pick.length;
        bookKeys = new uint256[](n);
        provs = new uint256[](n);
        uint256 nb;
        uint256 np;
        h.terms = new ISettleBatch.OrderTerms[](n);
        for (uint256 k = 0; k < n; ++k) {
            OrderRec memory r = _orders[pick[k]];
            Order memory o = r.order;
            nb = _insertSorted(bookKeys, nb, _bookKey(o.poster, uint32(o.nonce >> 32)));
            np = _insertSorted(provs, np, uint160(r.accepter));
            h.terms[k] = ISettleBatch.OrderTerms(o.payment, o.collateral, o.slashBps, o.posterShareBps);
        }
        h.books = new ISettleBatch.BookRef[](nb);
        for (uint256 i = 0; i < nb; ++i) {
            h.books[i] = ISettleBatch.BookRef(address(uint160(bookKeys[i] >> 32)), uint32(bookKeys[i]));
        }
        h.providers = new address[](np);
        for (uint256 i = 0; i < np; ++i) {
            h.providers[i] = address(uint160(provs[i]));
        }
        h.models = new bytes32[](1);
        h.models[0] = model;
    }

    /// Leaf of order `r` with table indices `bi`, `pi` and terms entry `ti` (model entry 0), signed
    /// by its poster, or by its provider when `forge`.
    function _leafOf(OrderRec memory r, uint256 bi, uint256 pi, uint256 ti, bool forge)
        internal
        view
        returns (ISettleBatch.SettlementLeaf memory l)
    {
        Order memory o = r.order;
        uint256 named = o.provider == address(0) ? 0 : 1;
        l.meta = uint256(o.deadline) | (uint256(uint32(o.nonce)) << 40) | (bi << 72) | (pi << 88) | (ti << 112)
            | (named << 120);
        l.inputCommitment = o.inputCommitment;
        l.outputCommitment = keccak256(abi.encode("invariant output", o.inputCommitment));
        (uint8 v, bytes32 rr, bytes32 s) = vm.sign(forge ? _keyOf[r.accepter] : _keyOf[o.poster], r.hash);
        l.r = rr;
        l.vs = bytes32(uint256(s) | (uint256(v - 27) << 255));
    }

    // ------------------------------------------------------------------ disputes

    /// Disputes the order with the earliest deadline among those whose nonce is unused, whose
    /// dispute window has not closed and that were not refused before (ties: the first from
    /// `orderSeed`), warping just past its deadline if needed, so that later orders stay
    /// settleable (with no such order, a fresh one is signed and left to default). One dispute in
    /// five presents an acceptance signed by a provider that did not accept the order: it must fail.
    function dispute(uint256 orderSeed, uint256 delaySeed, uint256 mode) external {
        uint256 n = _orders.length;
        uint256 found = type(uint256).max;
        uint256 earliest = type(uint256).max;
        for (uint256 k = 0; k < n; ++k) {
            uint256 i = (orderSeed % n + k) % n;
            Order memory c = _orders[i].order;
            if (
                c.deadline < earliest && block.timestamp < uint256(c.deadline) + 1 days && !_notDisputable[i]
                    && !market.nonceUsed(c.poster, c.nonce)
            ) {
                found = i;
                earliest = c.deadline;
            }
        }
        if (found == type(uint256).max) {
            // Nothing to dispute: a provider accepts an order just received (and will not deliver).
            _signFresh(orderSeed ^ mode, 15 minutes);
            found = _orders.length - 1;
            calls["disputeFreshOrder"]++;
        }
        OrderRec memory r = _orders[found];
        Order memory o = r.order;
        if (block.timestamp <= o.deadline) vm.warp(uint256(o.deadline) + 1 + _bound(delaySeed, 0, 2 minutes));
        address signer = r.accepter;
        if (mode % 5 == 0) {
            for (uint256 k = 0; k < providers.length; ++k) {
                if (providers[k] == r.accepter) signer = providers[(k + 1) % providers.length];
            }
        }
        bytes memory posterSig = _sign65(o.poster, r.hash);
        bytes memory acceptance = _sign65(signer, market.hashAcceptance(r.hash));
        IBonds.Bond memory bd = market.bond(r.accepter);
        vm.prank(posters[mode % posters.length]); // anyone may dispute
        try market.dispute(o, posterSig, r.accepter, acceptance) returns (uint256 slashed, uint256 toPoster) {
            _slashes.push(
                SlashRec(o.deadline, block.timestamp, r.accepter, signer, r.accepter, slashed, toPoster, o.payment)
            );
            uint256 wanted = uint256(o.collateral) * o.slashBps / BPS;
            uint256 available = uint256(bd.bonded) + bd.unbonding;
            uint256 expected = wanted < available ? wanted : available;
            uint256 expectedToPoster = expected * o.posterShareBps / BPS;
            if (expectedToPoster > o.payment) expectedToPoster = o.payment;
            if (slashed != expected || toPoster != expectedToPoster) ghostWrongAmount++;
            if (ghostPaidCount[posterNonceKey(o.poster, o.nonce)] != 0) ghostSlashAfterSettlement++;
            ghostAccrued += slashed - toPoster;
            ghostCompensation[r.hash] += toPoster;
            calls["disputeOk"]++;
        } catch {
            if (signer == r.accepter) _notDisputable[found] = true; // e.g. a payment below the floor
            calls["disputeRefused"]++;
        }
    }

    // ------------------------------------------------------------------ fees and time

    function sweepFees() external {
        uint256 expected = ghostAccrued;
        uint256 sent = market.sweepFees();
        if (sent != expected) ghostWrongAmount++;
        ghostAccrued = 0;
        calls["sweepFees"]++;
    }

    function warp(uint256 seconds_) external {
        vm.warp(block.timestamp + _bound(seconds_, 1, 45 minutes));
        calls["warp"]++;
    }

    // ------------------------------------------------------------------ helpers

    function _bookKey(address p, uint32 id) internal pure returns (uint256) {
        return (uint256(uint160(p)) << 32) | id;
    }

    function _sign65(address signer, bytes32 digest) internal view returns (bytes memory) {
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(_keyOf[signer], digest);
        return abi.encodePacked(r, s, v);
    }

    function _insertSorted(uint256[] memory a, uint256 len, uint256 v) internal pure returns (uint256) {
        for (uint256 i = 0; i < len; ++i) {
            if (a[i] == v) return len;
        }
        uint256 j = len;
        while (j > 0 && a[j - 1] > v) {
            a[j] = a[j - 1];
            --j;
        }
        a[j] = v;
        return len + 1;
    }

    function _indexOf(uint256[] memory a, uint256 v) internal pure returns (uint256 i) {
        while (a[i] != v) ++i;
    }
}
