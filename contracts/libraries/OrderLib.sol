// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @notice A task order as a poster signs it (EIP-712, domain "TensorGrid TaskMarket" version "2"
/// of the TaskMarket on its chain). Its EIP-712 digest is the task id the provider's proof binds.
/// @param poster The signer, whose deposit book pays.
/// @param provider The only provider that may be paid for it, or zero for any provider.
/// @param modelId The model to run (SHA-256 of the compiled model).
/// @param inputCommitment Commitment to the int8 input tensor.
/// @param payment Paid from the poster's book to the provider (less the protocol fee) on settlement.
/// @param collateral Provider bond at stake if it accepts and does not deliver by the deadline.
/// @param deadline Last second at which a proof of the order can settle.
/// @param nonce `(book << 32) | index`: the poster's deposit book that pays, and the order's index in
/// it; each nonce is used once (settled, disputed or cancelled).
/// @param slashBps Fraction of `collateral` slashed on a dispute, in basis points.
/// @param posterShareBps Fraction of the slash paid to the poster (capped by `payment`), in basis points.
struct Order {
    address poster;
    address provider;
    bytes32 modelId;
    bytes32 inputCommitment;
    uint96 payment;
    uint96 collateral;
    uint40 deadline;
    uint64 nonce;
    uint16 slashBps;
    uint16 posterShareBps;
}

/// @title OrderLib
/// @notice EIP-712 struct hashes of orders and acceptances, and the nonce layout. The Rust side
/// (tgrid-chain) implements the same hashes; contracts/test/OrderLib.t.sol pins them.
library OrderLib {
    /// @notice EIP-712 type hash of {Order}.
    bytes32 internal constant ORDER_TYPEHASH = keccak256(
        "Order(address poster,address provider,bytes32 modelId,bytes32 inputCommitment,uint96 payment,uint96 collateral,uint40 deadline,uint64 nonce,uint16 slashBps,uint16 posterShareBps)"
    );

    /// @notice EIP-712 type hash of a provider's acceptance of an order: `Acceptance(bytes32 order)`,
    /// where `order` is the order's EIP-712 digest (its task id).
    bytes32 internal constant ACCEPTANCE_TYPEHASH = keccak256("Acceptance(bytes32 order)");

    /// @notice The EIP-712 struct hash of `order`.
    /// @param order The order.
    /// @return h `keccak256(abi.encode(ORDER_TYPEHASH, ...fields))`.
    function structHash(Order calldata order) internal pure returns (bytes32 h) {
        return keccak256(
            abi.encode(
                ORDER_TYPEHASH,
                order.poster,
                order.provider,
                order.modelId,
                order.inputCommitment,
                order.payment,
                order.collateral,
                order.deadline,
                order.nonce,
                order.slashBps,
                order.posterShareBps
            )
        );
    }

    /// @notice The EIP-712 struct hash of an acceptance of the order whose digest is `orderHash`.
    /// @param orderHash The order's EIP-712 digest.
    /// @return h `keccak256(abi.encode(ACCEPTANCE_TYPEHASH, orderHash))`.
    function acceptanceStructHash(bytes32 orderHash) internal pure returns (bytes32 h) {
        return keccak256(abi.encode(ACCEPTANCE_TYPEHASH, orderHash));
    }

    /// @notice The nonce of order `index` of book `book`.
    /// @param book The poster's book id.
    /// @param index The order's index in the book.
    /// @return The nonce `(book << 32) | index`.
    function nonceOf(uint32 book, uint32 index) internal pure returns (uint64) {
        return (uint64(book) << 32) | index;
    }
}
