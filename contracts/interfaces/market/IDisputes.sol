// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Order} from "../../libraries/OrderLib.sol";

/// @title IDisputes
/// @notice The only per-task transaction of the market, needed only when something went wrong:
/// after an order's deadline, anyone presents the poster's signed order and the provider's signed
/// acceptance of it. If the order never settled (its nonce is unused), the provider is slashed on
/// the terms it signed, and the poster is compensated out of the slash, never more than the order's
/// payment nor than the provider's bond. Nothing is slashed for an order whose model was not
/// registered through its deadline, below the minimum payment, or with invalid terms.
interface IDisputes {
    /// @notice The provider of order `orderHash` was slashed: `slashed` from its bond, `toPoster`
    /// paid to the poster, the rest to the treasury.
    /// @param orderHash The order's EIP-712 digest.
    /// @param poster The poster.
    /// @param provider The slashed provider.
    /// @param slashed Tokens taken from the bond.
    /// @param toPoster Tokens paid to the poster.
    event OrderDisputed(
        bytes32 indexed orderHash, address indexed poster, address indexed provider, uint256 slashed, uint256 toPoster
    );

    /// @notice The order's signature does not recover to its poster.
    /// @param orderHash The order's digest.
    error MarketBadPosterSignature(bytes32 orderHash);

    /// @notice The acceptance signature does not recover to `provider` (or `provider` is zero).
    /// @param orderHash The order's digest.
    /// @param provider The provider named by the disputer.
    error MarketBadAcceptance(bytes32 orderHash, address provider);

    /// @notice The order names `named` as its only provider, not `provider`.
    /// @param orderHash The order's digest.
    /// @param named The order's provider.
    /// @param provider The provider named by the disputer.
    error MarketNotNamedProvider(bytes32 orderHash, address named, address provider);

    /// @notice The order's deadline `deadline` has not passed.
    /// @param orderHash The order's digest.
    /// @param deadline Its deadline.
    error MarketDeadlineNotPassed(bytes32 orderHash, uint256 deadline);

    /// @notice The dispute window of the order closed at `closedAt` (disputes must come before it).
    /// @param orderHash The order's digest.
    /// @param closedAt Deadline plus the dispute window.
    error MarketDisputeWindowClosed(bytes32 orderHash, uint256 closedAt);

    /// @notice `poster`'s nonce is used: the order settled (paid or not), was disputed or cancelled.
    /// @param poster The poster.
    /// @param nonce The nonce.
    error MarketOrderClosed(address poster, uint64 nonce);

    /// @notice The order's payment `payment` is below the minimum payment `minPayment`.
    /// @param payment The order's payment.
    /// @param minPayment The minimum.
    error MarketPaymentBelowMinimum(uint256 payment, uint256 minPayment);

    /// @notice The order's slash fraction or poster share is above 10,000 basis points.
    /// @param orderHash The order's digest.
    error MarketInvalidTerms(bytes32 orderHash);

    /// @notice `modelId` was not registered through the order's deadline (never registered,
    /// registered after it, or deregistered before it): the provider could not settle.
    /// @param modelId The model id.
    error MarketModelNotServable(bytes32 modelId);

    /// @notice A registry root that was accepted while the order could have been accepted
    /// stopped being accepted before its deadline (replaced with a short grace period, or
    /// revoked): the provider may have been unable to prove it, through governance's act, not its
    /// own fault, so it is not slashed.
    /// @param root The root whose acceptance ended.
    /// @param acceptedUntil When it ended.
    error MarketRegistryChangedUnderOrder(bytes32 root, uint256 acceptedUntil);

    /// @notice Slashes the provider of an order that never settled, on the terms it signed: `collateral
    /// * slashBps / 10,000`, taken from its bonded then unbonding stake as far as they go; the poster
    /// receives `slashed * posterShareBps / 10,000`, capped by the order's payment, the treasury the
    /// rest. The nonce is marked used, so an order is disputed at most once and can no longer
    /// settle. Callable by anyone after the deadline and before `deadline + disputeWindow` (exclusive:
    /// at that second, stake unbonding since the order was accepted may already be withdrawn).
    /// @dev Emits {OrderDisputed}.
    /// @param order The order.
    /// @param posterSignature The poster's EIP-712 signature of the order (65 bytes).
    /// @param provider The provider that accepted it.
    /// @param acceptanceSignature The provider's EIP-712 signature of `Acceptance(orderHash)`.
    /// @return slashed Tokens taken from the provider's bond.
    /// @return toPoster Tokens paid to the poster.
    function dispute(
        Order calldata order,
        bytes calldata posterSignature,
        address provider,
        bytes calldata acceptanceSignature
    ) external returns (uint256 slashed, uint256 toPoster);
}
