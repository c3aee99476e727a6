// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";

import {IGroth16Verifier} from "../interfaces/IGroth16Verifier.sol";
import {IModelRegistry} from "../interfaces/IModelRegistry.sol";
import {ISettleBatch} from "../interfaces/market/ISettleBatch.sol";
import {TaskLeafLib} from "../libraries/TaskLeaf.sol";
import {MarketBase} from "./MarketBase.sol";

/// @title BatchSettlement
/// @notice Permissionless settlement of proven batches of signed orders (see {ISettleBatch}).
/// @dev One pass over the leaves, each leaf in two assembly steps (the settlement hot path; each
/// spells out the Solidity it implements): {_hashLeaf} rebuilds the order from the batch tables
/// and hashes it (EIP-712 digest = task id) and its task leaf; {_settleLeaf} checks the poster's
/// signature, the nonce, the deadline and sequencer priority, then the book pays or the order is
/// recorded unpaid. The root, public input and proof are checked after the loop (an invalid proof
/// reverts everything). Book balances, nonce words and provider earnings are kept in memory and
/// written once per table entry at the end; the tables are sorted strictly, so no storage word is
/// cached twice.
abstract contract BatchSettlement is MarketBase, ReentrancyGuardTransient {
    /// @dev Working state of one batch in memory. The assembly reads its fields by offset (given
    /// next to each field), so the order of the fields is part of the code.
    struct Batch {
        uint256[] bookKeys; // 0x00: uint160(poster) << 32 | book, per book table entry
        uint256[] bookStates; // 0x20: the entry's `Book` storage word, paid down as leaves settle
        uint256[] terms; // 0x40: payment, collateral, slashBps, posterShareBps per terms entry
        uint256[] providers; // 0x60: the provider table
        uint256[] providerPay; // 0x80: pay credited per provider entry
        uint256[] providerPaid; // 0xa0: paid orders per provider entry
        bytes32[] leafHashes; // 0xc0: task leaf hashes (then the RFC 6962 working buffer)
        uint256[] nonceCache; // 0xe0: per book entry 4 words: word index + 1, slot, stored, current
        uint256 domainSeparator; // 0x100
        uint256 bypassPriority; // 0x120: 1 if the caller has the sequencer role
        uint256 window; // 0x140: self-settlement window
        uint256 feeBps; // 0x160
        uint256 pay; // 0x180: out, total provider pay
        uint256 fees; // 0x1a0: out, total fees
        uint256 paidCount; // 0x1c0: out
        uint256 modelsOffset; // 0x1e0: calldata offset of the model table
        uint256 modelCount; // 0x200
        uint256[] nonceBases; // 0x220: per book entry, the slot of `_nonceWords[poster]`
    }

    /// @dev keccak256 of the signatures below (the assembly needs literals; OrderLib.t.sol checks
    /// them against the Solidity declarations).
    uint256 private constant _ORDER_TYPEHASH = 0xe50d500cb6fc033920608971fffab05a4116854e4dfd08f8dc5b27d118132525;
    uint256 private constant _ORDER_SKIPPED_TOPIC = 0x3838114a09af695e25f49b332b10a4ad1764d52e61af5dd023af076c4c71cc70;
    uint256 private constant _ORDER_UNPAID_TOPIC = 0x777df19e739b5148ef8a249ef9a6a6fc590b43f71c7b931dea0c966eeeb1ba59;
    /// @dev Selector of {ISettleBatch-MarketMalformedLeaf}.
    uint256 private constant _MALFORMED_LEAF_SELECTOR = 0x98333124;
    /// @dev secp256k1n / 2: larger `s` values are the malleable twins of valid signatures.
    uint256 private constant _HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;

    /// @inheritdoc ISettleBatch
    function settleBatch(
        BatchHeader calldata header,
        SettlementLeaf[] calldata leaves,
        bytes32 registryRoot,
        uint256[8] calldata proof
    ) external nonReentrant returns (bytes32 batchRoot, uint256 publicInput, uint256 paidCount) {
        uint256 n = leaves.length;
        if (n == 0) revert MarketEmptyBatch();
        IGroth16Verifier verifier_ = _verifier;
        if (n > _maxBatchSize) revert MarketBatchTooLarge(n, _maxBatchSize);
        _checkRegistryRoot(registryRoot);

        Batch memory b = _openBatch(header, n, true);
        b.bypassPriority = _sequencers[msg.sender] ? 1 : 0;
        b.window = _selfSettlementWindow;
        b.feeBps = _protocolFeeBps;
        for (uint256 i = 0; i < n; ++i) {
            _settleLeaf(b, leaves[i], _hashLeaf(b, leaves[i], i));
        }
        batchRoot = TaskLeafLib.rootOfLeafHashes(b.leafHashes);
        publicInput = TaskLeafLib.publicInput(batchRoot, registryRoot, n);
        if (!_accepts(verifier_, proof, publicInput)) revert MarketInvalidProof(publicInput);

        _closeBatch(b);
        paidCount = b.paidCount;
        emit BatchSettled(batchRoot, registryRoot, msg.sender, n, paidCount, b.pay, b.fees, publicInput);
    }

    /// @inheritdoc ISettleBatch
    function computePublicInput(BatchHeader calldata header, SettlementLeaf[] calldata leaves, bytes32 registryRoot)
        external
        view
        returns (bytes32 batchRoot, uint256 publicInput, bytes32[] memory orderHashes)
    {
        uint256 n = leaves.length;
        if (n == 0) revert MarketEmptyBatch();
        Batch memory b = _openBatch(header, n, false);
        orderHashes = new bytes32[](n);
        for (uint256 i = 0; i < n; ++i) {
            orderHashes[i] = _hashLeaf(b, leaves[i], i);
        }
        batchRoot = TaskLeafLib.rootOfLeafHashes(b.leafHashes);
        publicInput = TaskLeafLib.publicInput(batchRoot, registryRoot, n);
    }

    // ------------------------------------------------------------------ tables

    /// @dev Validates and copies the tables; with `settling`, reads each book's storage word and
    /// its poster's nonce base.
    function _openBatch(BatchHeader calldata h, uint256 n, bool settling) private view returns (Batch memory b) {
        uint256 nb = h.books.length;
        b.bookKeys = new uint256[](nb);
        b.bookStates = new uint256[](nb);
        b.nonceBases = new uint256[](nb);
        b.nonceCache = new uint256[](4 * nb);
        uint256 previous;
        for (uint256 i = 0; i < nb; ++i) {
            BookRef calldata r = h.books[i];
            uint256 key = (uint256(uint160(r.poster)) << 32) | r.book;
            if (key <= previous || r.poster == address(0)) revert MarketMalformedBookTable(i);
            previous = key;
            b.bookKeys[i] = key;
            if (settling) {
                b.bookStates[i] = _bookWord(r.poster, r.book);
                b.nonceBases[i] = _nonceBase(r.poster);
            }
        }
        uint256 np = h.providers.length;
        b.providers = new uint256[](np);
        previous = 0;
        for (uint256 i = 0; i < np; ++i) {
            uint256 p = uint160(h.providers[i]);
            if (p <= previous) revert MarketMalformedProviderTable(i);
            previous = p;
            b.providers[i] = p;
        }
        uint256 nt = h.terms.length;
        b.terms = new uint256[](nt * 4);
        for (uint256 i = 0; i < nt; ++i) {
            OrderTerms calldata t = h.terms[i];
            b.terms[4 * i] = t.payment;
            b.terms[4 * i + 1] = t.collateral;
            b.terms[4 * i + 2] = t.slashBps;
            b.terms[4 * i + 3] = t.posterShareBps;
        }
        b.providerPay = new uint256[](np);
        b.providerPaid = new uint256[](np);
        b.leafHashes = new bytes32[](n);
        b.domainSeparator = uint256(_domainSeparatorV4());
        bytes32[] calldata models = h.models;
        uint256 modelsOffset;
        assembly ("memory-safe") {
            modelsOffset := models.offset
        }
        b.modelsOffset = modelsOffset;
        b.modelCount = models.length;
    }

    /// @dev Writes the nonce words and paid-down books, credits providers, the settler and the
    /// treasury.
    function _closeBatch(Batch memory b) private {
        uint256[] memory cache = b.nonceCache;
        for (uint256 i = 0; i < b.bookKeys.length; ++i) {
            // The last nonce word cached for this book, if it changed.
            if (cache[4 * i + 3] != cache[4 * i + 2]) {
                uint256 slot = cache[4 * i + 1];
                uint256 word = cache[4 * i + 3];
                assembly ("memory-safe") {
                    sstore(slot, word)
                }
            }
            uint256 key = b.bookKeys[i];
            Book storage bk = _books[address(uint160(key >> 32))][uint32(key)];
            uint256 state = b.bookStates[i];
            assembly ("memory-safe") {
                if iszero(eq(sload(bk.slot), state)) { sstore(bk.slot, state) }
            }
        }
        for (uint256 i = 0; i < b.providers.length; ++i) {
            uint256 count = b.providerPaid[i];
            if (count == 0) continue;
            Earner storage e = _earners[address(uint160(b.providers[i]))];
            e.earnings += _toUint96(b.providerPay[i]);
            // forge-lint: disable-next-line(unsafe-typecast) -- count <= leaves <= 4096
            e.tasksSettled += uint32(count);
        }
        uint256 fees = b.fees;
        if (fees != 0) {
            uint256 settlerCut = fees * _settlerShareBps / _BPS;
            _earners[msg.sender].earnings += _toUint96(settlerCut);
            _accruedFees += _toUint96(fees - settlerCut);
        }
    }

    /// @dev The slot of `_nonceWords[poster]`: the word of nonce `x` is at `keccak256(x >> 8 ‖ base)`.
    function _nonceBase(address poster) private pure returns (uint256 base) {
        assembly ("memory-safe") {
            mstore(0x00, poster)
            mstore(0x20, _nonceWords.slot)
            base := keccak256(0x00, 0x40)
        }
    }

    function _bookWord(address poster, uint32 id) private view returns (uint256 word) {
        Book storage bk = _books[poster][id];
        assembly ("memory-safe") {
            word := sload(bk.slot)
        }
    }

    // ------------------------------------------------------------------ one leaf

    /// @dev Hashes leaf `i`. With its tables entries `poster, book = books[bi]`, `provider =
    /// providers[pi]`, `model = models[mi]`, `terms[ti]` (indices from its `meta` word):
    ///   orderHash = keccak256(0x1901 ‖ domainSeparator ‖ keccak256(abi.encode(ORDER_TYPEHASH,
    ///     poster, named ? provider : 0, model, input, payment, collateral, deadline,
    ///     book << 32 | index, slashBps, posterShareBps)))
    ///   leafHashes[i] = sha256(0x00 ‖ orderHash ‖ model ‖ input ‖ output ‖ provider)
    /// Reverts with {MarketMalformedLeaf} if `meta` has bits above bit 120 or an index out of range.
    function _hashLeaf(Batch memory b, SettlementLeaf calldata leaf, uint256 i)
        private
        view
        returns (bytes32 orderHash)
    {
        bool ok;
        assembly ("memory-safe") {
            let meta := calldataload(leaf)
            let bi := and(shr(72, meta), 0xffff)
            let pi := and(shr(88, meta), 0xffff)
            let mi := and(shr(104, meta), 0xff)
            let ti := and(shr(112, meta), 0xff)
            let wellFormed := iszero(shr(121, meta))
            wellFormed := and(wellFormed, lt(bi, mload(mload(b))))
            wellFormed := and(wellFormed, lt(pi, mload(mload(add(b, 0x60)))))
            wellFormed := and(wellFormed, lt(mi, mload(add(b, 0x200))))
            wellFormed := and(wellFormed, lt(ti, shr(2, mload(mload(add(b, 0x40))))))
            if iszero(wellFormed) {
                mstore(0x00, _MALFORMED_LEAF_SELECTOR)
                mstore(0x20, i)
                revert(0x1c, 0x24)
            }
            let s := mload(0x40) // 0x160 bytes of scratch past the free memory pointer
            let key := mload(add(mload(b), shl(5, add(bi, 1))))
            let provider := mload(add(mload(add(b, 0x60)), shl(5, add(pi, 1))))
            let model := calldataload(add(mload(add(b, 0x1e0)), shl(5, mi)))
            let t := add(mload(add(b, 0x40)), add(0x20, shl(7, ti)))
            mstore(s, _ORDER_TYPEHASH)
            mstore(add(s, 0x20), shr(32, key))
            mstore(add(s, 0x40), mul(shr(120, meta), provider))
            mstore(add(s, 0x60), model)
            mstore(add(s, 0x80), calldataload(add(leaf, 0x20)))
            mstore(add(s, 0xa0), mload(t))
            mstore(add(s, 0xc0), mload(add(t, 0x20)))
            mstore(add(s, 0xe0), and(meta, _U40))
            mstore(add(s, 0x100), or(shl(32, and(key, _U32)), and(shr(40, meta), _U32)))
            mstore(add(s, 0x120), mload(add(t, 0x40)))
            mstore(add(s, 0x140), mload(add(t, 0x60)))
            let structHash := keccak256(s, 0x160)
            mstore(s, shl(240, 0x1901))
            mstore(add(s, 0x02), mload(add(b, 0x100)))
            mstore(add(s, 0x22), structHash)
            orderHash := keccak256(s, 0x42)
            mstore8(s, 0x00)
            mstore(add(s, 0x01), orderHash)
            mstore(add(s, 0x21), model)
            mstore(add(s, 0x41), calldataload(add(leaf, 0x20)))
            mstore(add(s, 0x61), calldataload(add(leaf, 0x40)))
            mstore(add(s, 0x81), shl(96, provider))
            ok := staticcall(gas(), 0x02, s, 149, add(mload(add(b, 0xc0)), shl(5, add(i, 1))), 0x20)
        }
        if (!ok) revert TaskLeafLib.TaskLeafSha256Failed();
    }

    /// @dev Settles one hashed leaf (poster, book, index, deadline and terms from the leaf and the
    /// tables as in {_hashLeaf}):
    ///   if ecrecover(orderHash, r, vs) != poster (or s is malleable): emit OrderSkipped(BadPosterSignature)
    ///   else if nonce used:                                emit OrderSkipped(NonceUsed)
    ///   else if now > deadline:                            emit OrderSkipped(DeadlinePassed)
    ///   else if !sequencer && deadline > now + window:     emit OrderSkipped(SequencerPriority)
    ///   else { mark nonce used;
    ///     if index >= capacity:                           emit OrderUnpaid(IndexOutOfBook)
    ///     else if payment > perOrderMax:                  emit OrderUnpaid(PaymentAboveBookMax)
    ///     else if payment > remaining:                    emit OrderUnpaid(BookEmpty)
    ///     else { remaining -= payment; fee = payment * feeBps / 10,000;
    ///            providerPay[pi] += payment - fee; providerPaid[pi]++ } }
    /// The book's nonce word is cached: loaded when the leaf's word differs from the cached one
    /// (writing the cached one back if it changed), written back at the end ({_closeBatch}).
    /// A paid order emits no event of its own (a log would cost ~750 gas a task): its settlement is
    /// {BatchSettled} and its leaf in that transaction's calldata. Every sum is bounded by the
    /// books' balances (< 2^96 each, their sum below the supply), so nothing overflows.
    function _settleLeaf(Batch memory b, SettlementLeaf calldata leaf, bytes32 orderHash) private {
        assembly ("memory-safe") {
            function skip(h, reason) {
                mstore(0x00, reason)
                log2(0x00, 0x20, _ORDER_SKIPPED_TOPIC, h)
            }

            function unpaid(h, reason) {
                mstore(0x00, reason)
                log2(0x00, 0x20, _ORDER_UNPAID_TOPIC, h)
            }

            function addTo(ptr, value) {
                mstore(ptr, add(mload(ptr), value))
            }

            for {} 1 {} {
                let meta := calldataload(leaf)
                let bi := and(shr(72, meta), 0xffff)
                let key := mload(add(mload(b), shl(5, add(bi, 1))))
                // The poster's signature: ecrecover(orderHash, v, r, s) with s and v from `vs`.
                {
                    let s := mload(0x40)
                    let vs := calldataload(add(leaf, 0x80))
                    let sv := and(vs, 0x7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff)
                    mstore(s, orderHash)
                    mstore(add(s, 0x20), add(27, shr(255, vs)))
                    mstore(add(s, 0x40), calldataload(add(leaf, 0x60)))
                    mstore(add(s, 0x60), sv)
                    let success := staticcall(gas(), 0x01, s, 0x80, s, 0x20)
                    success := and(and(success, eq(returndatasize(), 0x20)), eq(mload(s), shr(32, key)))
                    if or(iszero(success), gt(sv, _HALF_N)) {
                        skip(orderHash, 0)
                        break
                    }
                }
                let nonce := or(shl(32, and(key, _U32)), and(shr(40, meta), _U32))
                let c := add(mload(add(b, 0xe0)), add(0x20, shl(7, bi)))
                if iszero(eq(mload(c), add(shr(8, nonce), 1))) {
                    if iszero(eq(mload(add(c, 0x40)), mload(add(c, 0x60)))) {
                        sstore(mload(add(c, 0x20)), mload(add(c, 0x60)))
                    }
                    mstore(0x00, shr(8, nonce))
                    mstore(0x20, mload(add(mload(add(b, 0x220)), shl(5, add(bi, 1)))))
                    let slot := keccak256(0x00, 0x40)
                    let word := sload(slot)
                    mstore(c, add(shr(8, nonce), 1))
                    mstore(add(c, 0x20), slot)
                    mstore(add(c, 0x40), word)
                    mstore(add(c, 0x60), word)
                }
                let bit := shl(and(nonce, 0xff), 1)
                if and(mload(add(c, 0x60)), bit) {
                    skip(orderHash, 1)
                    break
                }
                let deadline := and(meta, _U40)
                if gt(timestamp(), deadline) {
                    skip(orderHash, 2)
                    break
                }
                if iszero(mload(add(b, 0x120))) {
                    if gt(deadline, add(timestamp(), mload(add(b, 0x140)))) {
                        skip(orderHash, 3)
                        break
                    }
                }
                mstore(add(c, 0x60), or(mload(add(c, 0x60)), bit))

                let statePtr := add(mload(add(b, 0x20)), shl(5, add(bi, 1)))
                let state := mload(statePtr)
                let payment := mload(add(mload(add(b, 0x40)), add(0x20, shl(7, and(shr(112, meta), 0xff)))))
                if iszero(lt(and(shr(40, meta), _U32), and(shr(192, state), _U24))) {
                    unpaid(orderHash, 0)
                    break
                }
                if gt(payment, and(shr(96, state), _U96)) {
                    unpaid(orderHash, 1)
                    break
                }
                if gt(payment, and(state, _U96)) {
                    unpaid(orderHash, 2)
                    break
                }
                mstore(statePtr, sub(state, payment)) // remaining is the word's low 96 bits
                let fee := div(mul(payment, mload(add(b, 0x160))), _BPS)
                let pi := shl(5, add(and(shr(88, meta), 0xffff), 1))
                addTo(add(mload(add(b, 0x80)), pi), sub(payment, fee))
                addTo(add(mload(add(b, 0xa0)), pi), 1)
                addTo(add(b, 0x180), sub(payment, fee))
                addTo(add(b, 0x1a0), fee)
                addTo(add(b, 0x1c0), 1)
                break
            }
        }
    }

    // ------------------------------------------------------------------ checks

    function _checkRegistryRoot(bytes32 registryRoot) private view {
        (IModelRegistry.RootStatus status, uint256 acceptedUntil) = _registry.rootStatus(registryRoot);
        if (status == IModelRegistry.RootStatus.Current || status == IModelRegistry.RootStatus.Grace) return;
        if (status == IModelRegistry.RootStatus.Expired || status == IModelRegistry.RootStatus.Revoked) {
            revert MarketRegistryRootExpired(registryRoot, acceptedUntil);
        }
        revert MarketUnknownRegistryRoot(registryRoot, _registry.registryRoot());
    }
}
