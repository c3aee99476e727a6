// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {TGridTest} from "../utils/TGridTest.sol";
import {ISettleBatch} from "../../interfaces/market/ISettleBatch.sol";
import {Order} from "../../libraries/OrderLib.sol";
import {PublicInputBoundVerifier} from "../mocks/VerifierMocks.sol";

/// @notice Shared fixture of the TaskMarket tests: the deployed system (TGridTest), signing keys
/// for the actors, and helpers that sign orders and acceptances and build batches (tables sorted
/// and deduplicated as the sequencer builds them) with real Groth16 proofs of the devnet circuit.
abstract contract MarketTest is TGridTest {
    /// @notice One proven order of a batch being built.
    struct Item {
        Order order;
        address provider;
        bytes32 output;
    }

    uint256 internal constant COLLATERAL = 100e18;
    uint256 internal constant BOOK_MAX = 100e18;
    uint16 internal constant SLASH_BPS = 5_000;
    uint16 internal constant SHARE_BPS = 5_000;

    mapping(address account => uint256) internal keyOf;

    /// @dev Installed by {_installBoundVerifier}: settles batches without a snarkjs proof.
    PublicInputBoundVerifier internal boundVerifier;

    function setUp() public virtual override {
        super.setUp();
        string[6] memory names = ["poster", "poster2", "provider", "provider2", "stranger", "sequencer"];
        for (uint256 i = 0; i < names.length; ++i) {
            (address a, uint256 k) = makeAddrAndKey(names[i]);
            keyOf[a] = k;
        }
    }

    // ------------------------------------------------------------------ actors

    function _openBook(address who, uint256 capacity, uint256 perOrderMax) internal returns (uint32 id) {
        vm.prank(who);
        id = market.openBook(capacity, perOrderMax);
    }

    function _bond(address who, uint256 amount) internal {
        vm.prank(who);
        market.stake(amount);
    }

    // ------------------------------------------------------------------ orders

    /// @dev An open order (no named provider) of `who`'s book with the fixture's defaults.
    function _order(address who, uint32 bookId, uint32 index) internal view returns (Order memory o) {
        o = Order({
            poster: who,
            provider: address(0),
            modelId: MODEL,
            inputCommitment: keccak256(abi.encode("input", who, bookId, index)),
            payment: uint96(PAYMENT),
            collateral: uint96(COLLATERAL),
            deadline: uint40(block.timestamp + 30 minutes),
            nonce: (uint64(bookId) << 32) | index,
            slashBps: SLASH_BPS,
            posterShareBps: SHARE_BPS
        });
    }

    function _hash(Order memory o) internal view returns (bytes32) {
        return market.hashOrder(o);
    }

    /// @dev EIP-2098 compact signature of `digest` by `signer`'s key.
    function _signCompact(address signer, bytes32 digest) internal view returns (bytes32 r, bytes32 vs) {
        (uint8 v, bytes32 r_, bytes32 s) = vm.sign(keyOf[signer], digest);
        r = r_;
        vs = bytes32(uint256(s) | (uint256(v - 27) << 255));
    }

    /// @dev 65-byte signature `r ‖ s ‖ v` of `digest` by `signer`'s key.
    function _sign65(address signer, bytes32 digest) internal view returns (bytes memory) {
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(keyOf[signer], digest);
        return abi.encodePacked(r, s, v);
    }

    function _posterSignature(Order memory o) internal view returns (bytes memory) {
        return _sign65(o.poster, _hash(o));
    }

    function _acceptance(address prov, Order memory o) internal view returns (bytes memory) {
        return _sign65(prov, market.hashAcceptance(_hash(o)));
    }

    // ------------------------------------------------------------------ batches

    function _item(Order memory o, address prov) internal pure returns (Item memory) {
        return Item({order: o, provider: prov, output: keccak256(abi.encode("output", o.inputCommitment))});
    }

    function _items1(Item memory a) internal pure returns (Item[] memory items) {
        items = new Item[](1);
        items[0] = a;
    }

    /// @dev Tables under construction (entries beyond the counts are unused).
    struct Tables {
        uint256[] bookKeys;
        uint256 nb;
        uint256[] provs;
        uint256 np;
        bytes32[] models;
        uint256 nm;
        ISettleBatch.OrderTerms[] terms;
        uint256 nt;
    }

    /// @dev The batch's tables (books and providers sorted ascending, models and terms in order of
    /// first use, all deduplicated) and its leaves, each signed by its order's poster.
    function _build(Item[] memory items)
        internal
        view
        returns (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves)
    {
        uint256 n = items.length;
        Tables memory t;
        t.bookKeys = new uint256[](n);
        t.provs = new uint256[](n);
        t.models = new bytes32[](n);
        t.terms = new ISettleBatch.OrderTerms[](n);
        for (uint256 i = 0; i < n; ++i) {
            Order memory o = items[i].order;
            t.nb = _insertSorted(t.bookKeys, t.nb, _bookKey(o));
            t.np = _insertSorted(t.provs, t.np, uint160(items[i].provider));
            t.nm = _addModel(t.models, t.nm, o.modelId);
            t.nt = _addTerms(t.terms, t.nt, _termsOf(o));
        }
        h.books = new ISettleBatch.BookRef[](t.nb);
        for (uint256 i = 0; i < t.nb; ++i) {
            h.books[i] =
                ISettleBatch.BookRef({poster: address(uint160(t.bookKeys[i] >> 32)), book: uint32(t.bookKeys[i])});
        }
        h.providers = new address[](t.np);
        for (uint256 i = 0; i < t.np; ++i) {
            h.providers[i] = address(uint160(t.provs[i]));
        }
        h.models = new bytes32[](t.nm);
        for (uint256 i = 0; i < t.nm; ++i) {
            h.models[i] = t.models[i];
        }
        h.terms = new ISettleBatch.OrderTerms[](t.nt);
        for (uint256 i = 0; i < t.nt; ++i) {
            h.terms[i] = t.terms[i];
        }
        leaves = new ISettleBatch.SettlementLeaf[](n);
        for (uint256 i = 0; i < n; ++i) {
            leaves[i] = _leaf(items[i], t);
        }
    }

    function _bookKey(Order memory o) private pure returns (uint256) {
        return (uint256(uint160(o.poster)) << 32) | (o.nonce >> 32);
    }

    function _leaf(Item memory it, Tables memory t) private view returns (ISettleBatch.SettlementLeaf memory l) {
        Order memory o = it.order;
        uint256 bi = _indexOf(t.bookKeys, t.nb, _bookKey(o));
        uint256 pi = _indexOf(t.provs, t.np, uint160(it.provider));
        uint256 mi;
        while (mi < t.nm && t.models[mi] != o.modelId) ++mi;
        uint256 ti;
        bytes32 termsHash = keccak256(abi.encode(_termsOf(o)));
        while (ti < t.nt && keccak256(abi.encode(t.terms[ti])) != termsHash) ++ti;
        uint256 named = o.provider == address(0) ? 0 : 1;
        l.meta = uint256(o.deadline) | (uint256(uint32(o.nonce)) << 40) | (bi << 72) | (pi << 88) | (mi << 104)
            | (ti << 112) | (named << 120);
        l.inputCommitment = o.inputCommitment;
        l.outputCommitment = it.output;
        (l.r, l.vs) = _signCompact(o.poster, _hash(o));
    }

    function _termsOf(Order memory o) internal pure returns (ISettleBatch.OrderTerms memory) {
        return ISettleBatch.OrderTerms({
            payment: o.payment, collateral: o.collateral, slashBps: o.slashBps, posterShareBps: o.posterShareBps
        });
    }

    function _insertSorted(uint256[] memory a, uint256 len, uint256 v) private pure returns (uint256) {
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

    function _indexOf(uint256[] memory a, uint256 len, uint256 v) private pure returns (uint256 i) {
        while (i < len && a[i] != v) ++i;
        require(i < len, "not in table");
    }

    function _addModel(bytes32[] memory a, uint256 len, bytes32 v) private pure returns (uint256) {
        for (uint256 i = 0; i < len; ++i) {
            if (a[i] == v) return len;
        }
        a[len] = v;
        return len + 1;
    }

    function _addTerms(ISettleBatch.OrderTerms[] memory a, uint256 len, ISettleBatch.OrderTerms memory v)
        private
        pure
        returns (uint256)
    {
        for (uint256 i = 0; i < len; ++i) {
            if (keccak256(abi.encode(a[i])) == keccak256(abi.encode(v))) return len;
        }
        a[len] = v;
        return len + 1;
    }

    /// @dev A real devnet Groth16 proof of the batch against `root`.
    function _proveMarketBatch(
        ISettleBatch.BatchHeader memory h,
        ISettleBatch.SettlementLeaf[] memory leaves,
        bytes32 root
    ) internal returns (uint256[8] memory) {
        (, uint256 publicInput,) = market.computePublicInput(h, leaves, root);
        return _prove(publicInput);
    }

    /// @dev Builds, proves and settles `items` as `settler` against ROOT_A.
    function _settleItems(Item[] memory items, address settler) internal returns (uint256 paid) {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _build(items);
        uint256[8] memory proof = _proveMarketBatch(h, leaves, ROOT_A);
        vm.prank(settler);
        (,, paid) = market.settleBatch(h, leaves, ROOT_A, proof);
    }

    // ------------------------------------------------------------------ fast settlement (test verifier)

    /// @dev Replaces the real verifier with PublicInputBoundVerifier (through the timelock, the
    /// market's owner), so batches settle with {_boundProof} instead of a snarkjs proof.
    function _installBoundVerifier() internal {
        boundVerifier = new PublicInputBoundVerifier();
        uint256[8] memory proof = boundVerifier.proofFor(1);
        vm.prank(address(timelock));
        market.setVerifier(address(boundVerifier), proof, 1);
    }

    /// @dev The proof PublicInputBoundVerifier accepts for this batch against `root`.
    function _boundProof(ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves, bytes32 root)
        internal
        view
        returns (uint256[8] memory)
    {
        (, uint256 publicInput,) = market.computePublicInput(h, leaves, root);
        return boundVerifier.proofFor(publicInput);
    }

    /// @dev Settles already built tables and leaves as `settler` against ROOT_A (bound verifier).
    function _settleBuilt(
        ISettleBatch.BatchHeader memory h,
        ISettleBatch.SettlementLeaf[] memory leaves,
        address settler
    ) internal returns (uint256 paid) {
        uint256[8] memory proof = _boundProof(h, leaves, ROOT_A);
        vm.prank(settler);
        (,, paid) = market.settleBatch(h, leaves, ROOT_A, proof);
    }

    /// @dev Builds and settles `items` as `settler` against ROOT_A (bound verifier).
    function _settleBound(Item[] memory items, address settler) internal returns (uint256 paid) {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _build(items);
        return _settleBuilt(h, leaves, settler);
    }

    function _items2(Item memory a, Item memory b) internal pure returns (Item[] memory items) {
        items = new Item[](2);
        items[0] = a;
        items[1] = b;
    }

    function _items3(Item memory a, Item memory b, Item memory c) internal pure returns (Item[] memory items) {
        items = new Item[](3);
        items[0] = a;
        items[1] = b;
        items[2] = c;
    }

    // ------------------------------------------------------------------ disputes

    /// @dev Disputes `o` (signed by its poster, accepted by `prov`) as `stranger`.
    function _dispute(Order memory o, address prov) internal returns (uint256 slashed, uint256 toPoster) {
        bytes memory posterSig = _posterSignature(o);
        bytes memory acceptanceSig = _acceptance(prov, o);
        vm.prank(stranger);
        (slashed, toPoster) = market.dispute(o, posterSig, prov, acceptanceSig);
    }

    /// @dev Expects the next dispute of `o` accepted by `prov` to revert with `err`.
    function _expectDisputeRevert(Order memory o, address prov, bytes memory err) internal {
        bytes memory posterSig = _posterSignature(o);
        bytes memory acceptanceSig = _acceptance(prov, o);
        vm.expectRevert(err);
        vm.prank(stranger);
        market.dispute(o, posterSig, prov, acceptanceSig);
    }

    // ------------------------------------------------------------------ misc

    function _fee(uint256 payment) internal view returns (uint256) {
        return payment * market.parameters().protocolFeeBps / 10_000;
    }

    /// @dev The compact form of the high-s twin (r, n - s, flipped parity) of a compact signature.
    /// n - s almost always exceeds 2^255, so its top bit lands on the parity bit: the result is
    /// what a naive encoder would produce, not a valid twin.
    function _malleable(bytes32 vs) internal pure returns (bytes32) {
        uint256 n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141;
        uint256 s = uint256(vs) & ((1 << 255) - 1);
        uint256 parity = uint256(vs) >> 255;
        return bytes32((n - s) | ((1 - parity) << 255));
    }
}
