// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title ISettleBatch
/// @notice Permissionless settlement of a proven batch of signed orders. Whoever holds a valid
/// Groth16 batch proof may settle it; each leaf's order is rebuilt from the batch's tables and the
/// leaf, its EIP-712 digest is the task id the proof binds, and the poster's signature authorizes
/// the payment. A leaf that cannot settle is skipped with an event; only a malformed batch, a bad
/// registry root or an invalid proof reverts.
/// @dev Calldata layout (docs/contracts.md, "Batch calldata"): per-batch tables of books, providers,
/// models and order terms, then five words per leaf. A leaf's `meta` word packs, from bit 0:
/// deadline (40 bits), order index in its book (32), book table index (16), provider table index
/// (16), model table index (8), terms table index (8), named-provider flag (1); all higher bits 0.
/// The task leaf is `sha256(0x00 ‖ orderHash ‖ modelId ‖ inputCommitment ‖ outputCommitment ‖
/// provider)` (docs/encodings.md), the batch root their RFC 6962 tree.
interface ISettleBatch {
    /// @notice A book table entry: the poster whose book pays, and the book id.
    /// @param poster The poster.
    /// @param book The poster's book id (the high 32 bits of the order nonce).
    struct BookRef {
        address poster;
        uint32 book;
    }

    /// @notice An order-terms table entry (the order fields besides ids, commitments, deadline and
    /// nonce).
    /// @param payment The order's payment.
    /// @param collateral The order's collateral.
    /// @param slashBps The order's slash fraction of the collateral, in basis points.
    /// @param posterShareBps The order's poster share of a slash, in basis points.
    struct OrderTerms {
        uint96 payment;
        uint96 collateral;
        uint16 slashBps;
        uint16 posterShareBps;
    }

    /// @notice The tables a batch's leaves index into. Books must be sorted strictly ascending by
    /// `(poster, book)` and providers strictly ascending (so each appears once); neither may hold
    /// the zero address.
    /// @param books Book table (at most 2^16 entries).
    /// @param providers Provider table (at most 2^16 entries).
    /// @param models Model id table (at most 256 entries).
    /// @param terms Order terms table (at most 256 entries).
    struct BatchHeader {
        BookRef[] books;
        address[] providers;
        bytes32[] models;
        OrderTerms[] terms;
    }

    /// @notice One proven order of a batch.
    /// @param meta Packed deadline, order index and table indices (see the contract notes).
    /// @param inputCommitment The order's input commitment.
    /// @param outputCommitment The proven output commitment.
    /// @param r The poster's order signature, r.
    /// @param vs The poster's order signature, EIP-2098 compact `s` with the parity in the top bit.
    struct SettlementLeaf {
        uint256 meta;
        bytes32 inputCommitment;
        bytes32 outputCommitment;
        bytes32 r;
        bytes32 vs;
    }

    /// @notice Why a leaf was skipped (its nonce untouched).
    enum SkipReason {
        /// The poster's signature does not recover to the book's poster.
        BadPosterSignature,
        /// The nonce was already used: settled, disputed or cancelled.
        NonceUsed,
        /// The deadline has passed.
        DeadlinePassed,
        /// A non-sequencer settled before the order's self-settlement window opened.
        SequencerPriority
    }

    /// @notice Why a delivered order was not paid (its nonce is used all the same, so it can never
    /// be disputed: the provider delivered).
    enum UnpaidReason {
        /// The order's index is not below its book's capacity.
        IndexOutOfBook,
        /// The order's payment is above its book's per-order maximum.
        PaymentAboveBookMax,
        /// The book does not hold the payment any more (withdrawn).
        BookEmpty
    }

    /// @notice The order `orderHash` was delivered but its book could not pay it.
    /// @param orderHash The order's EIP-712 digest.
    /// @param reason Why.
    event OrderUnpaid(bytes32 indexed orderHash, UnpaidReason reason);

    /// @notice A leaf of the batch was skipped.
    /// @param orderHash The leaf's order digest.
    /// @param reason Why.
    event OrderSkipped(bytes32 indexed orderHash, SkipReason reason);

    /// @notice A batch was verified and settled.
    /// @param batchRoot RFC 6962 root of the task leaves.
    /// @param registryRoot Registry root the batch was proven against.
    /// @param settler Who settled it (credited the settler share of the fees).
    /// @param taskCount Leaves in the batch.
    /// @param paidCount Leaves settled and paid.
    /// @param providerPay Pay credited to providers (payments minus fees).
    /// @param fees Protocol fees of the paid leaves (settler share included).
    /// @param publicInput The Groth16 public input.
    event BatchSettled(
        bytes32 indexed batchRoot,
        bytes32 indexed registryRoot,
        address indexed settler,
        uint256 taskCount,
        uint256 paidCount,
        uint256 providerPay,
        uint256 fees,
        uint256 publicInput
    );

    /// @notice The batch has no leaves.
    error MarketEmptyBatch();

    /// @notice The batch has `count` leaves, more than `maxBatchSize`.
    /// @param count Leaves given.
    /// @param maxBatchSize The maximum.
    error MarketBatchTooLarge(uint256 count, uint256 maxBatchSize);

    /// @notice `registryRoot` was never a registry root (current: `currentRoot`).
    /// @param registryRoot The root given.
    /// @param currentRoot The current root.
    error MarketUnknownRegistryRoot(bytes32 registryRoot, bytes32 currentRoot);

    /// @notice `registryRoot` was replaced and its grace window closed at `acceptedUntil` (or it
    /// was revoked then).
    /// @param registryRoot The root given.
    /// @param acceptedUntil End of its grace window.
    error MarketRegistryRootExpired(bytes32 registryRoot, uint256 acceptedUntil);

    /// @notice The Groth16 proof does not verify for `publicInput`.
    /// @param publicInput The public input computed from the batch.
    error MarketInvalidProof(uint256 publicInput);

    /// @notice Leaf `index` has bits set above its fields or a table index out of range.
    /// @param index The leaf's position.
    error MarketMalformedLeaf(uint256 index);

    /// @notice Book table entry `index` is not strictly above the previous one or has a zero poster.
    /// @param index The entry's position.
    error MarketMalformedBookTable(uint256 index);

    /// @notice Provider table entry `index` is not strictly above the previous one (or is zero).
    /// @param index The entry's position.
    error MarketMalformedProviderTable(uint256 index);

    /// @notice Verifies the batch's Groth16 proof against `sha256(batchRoot ‖ registryRoot ‖
    /// uint64(n)) & (2^253 - 1)` and settles each leaf that can settle: poster signature valid,
    /// nonce unused, deadline not passed, and, for a caller without the sequencer role, the order
    /// within its self-settlement window. Such a leaf's nonce is marked used; it is paid from its
    /// book if the book can (payment to the provider less the protocol fee at the rate in force,
    /// the settler's share of that fee to the caller, the rest to the treasury), else recorded
    /// unpaid. Anyone may call.
    /// @dev Emits {OrderUnpaid} or {OrderSkipped} for each leaf not paid, then {BatchSettled}. A paid
    /// leaf has no event of its own (a log would cost ~750 gas a task): tools read the leaves from
    /// the calldata of the transaction that emitted {BatchSettled}.
    /// Payments and counts are summed per book and per provider and written once each.
    /// @param header The batch's tables.
    /// @param leaves The leaves, in the proven order.
    /// @param registryRoot The registry root the batch was proven against (current or in grace).
    /// @param proof The Groth16 proof (docs/encodings.md layout).
    /// @return batchRoot The batch root.
    /// @return publicInput The Groth16 public input.
    /// @return paidCount Leaves settled and paid.
    function settleBatch(
        BatchHeader calldata header,
        SettlementLeaf[] calldata leaves,
        bytes32 registryRoot,
        uint256[8] calldata proof
    ) external returns (bytes32 batchRoot, uint256 publicInput, uint256 paidCount);

    /// @notice The batch root and Groth16 public input a proof of this batch must bind, and each
    /// leaf's order hash (task id); reverts like {settleBatch} on a malformed batch.
    /// @param header The batch's tables.
    /// @param leaves The leaves.
    /// @param registryRoot The registry root.
    /// @return batchRoot The batch root.
    /// @return publicInput The Groth16 public input.
    /// @return orderHashes Each leaf's order digest.
    function computePublicInput(BatchHeader calldata header, SettlementLeaf[] calldata leaves, bytes32 registryRoot)
        external
        view
        returns (bytes32 batchRoot, uint256 publicInput, bytes32[] memory orderHashes);
}
