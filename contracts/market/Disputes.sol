// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

import {IModelRegistry} from "../interfaces/IModelRegistry.sol";
import {Order, OrderLib} from "../libraries/OrderLib.sol";
import {Bonds} from "./Bonds.sol";
import {IDisputes} from "../interfaces/market/IDisputes.sol";

/// @title Disputes
/// @notice Slashing a provider that signed an acceptance and did not deliver (see {IDisputes}).
abstract contract Disputes is Bonds {
    /// @inheritdoc IDisputes
    function dispute(
        Order calldata order,
        bytes calldata posterSignature,
        address provider,
        bytes calldata acceptanceSignature
    ) external returns (uint256 slashed, uint256 toPoster) {
        bytes32 orderHash = _hashTypedDataV4(OrderLib.structHash(order));
        _checkSignatures(order, orderHash, posterSignature, provider, acceptanceSignature);
        _checkDisputable(order, orderHash);
        if (_useNonce(order.poster, order.nonce)) revert MarketOrderClosed(order.poster, order.nonce);

        slashed = _slash(provider, uint256(order.collateral) * order.slashBps / _BPS);
        toPoster = slashed * order.posterShareBps / _BPS;
        if (toPoster > order.payment) toPoster = order.payment;
        // slashed <= the provider's bond, part of this contract's balance (< 2^96).
        // forge-lint: disable-next-line(unsafe-typecast) -- see above
        _accruedFees += uint96(slashed - toPoster);
        _earners[provider].tasksSlashed += 1;
        emit OrderDisputed(orderHash, order.poster, provider, slashed, toPoster);
        _send(order.poster, toPoster);
    }

    function _checkSignatures(
        Order calldata order,
        bytes32 orderHash,
        bytes calldata posterSignature,
        address provider,
        bytes calldata acceptanceSignature
    ) private view {
        (address signer, ECDSA.RecoverError err,) = ECDSA.tryRecoverCalldata(orderHash, posterSignature);
        if (err != ECDSA.RecoverError.NoError || signer != order.poster || signer == address(0)) {
            revert MarketBadPosterSignature(orderHash);
        }
        bytes32 acceptance = _hashTypedDataV4(OrderLib.acceptanceStructHash(orderHash));
        (signer, err,) = ECDSA.tryRecoverCalldata(acceptance, acceptanceSignature);
        if (err != ECDSA.RecoverError.NoError || signer != provider || provider == address(0)) {
            revert MarketBadAcceptance(orderHash, provider);
        }
        if (order.provider != address(0) && order.provider != provider) {
            revert MarketNotNamedProvider(orderHash, order.provider, provider);
        }
    }

    /// @dev Everything besides signatures and the nonce that must hold before a slash: the dispute
    /// window, and that the provider could have settled (a servable model, sane terms, not dust).
    function _checkDisputable(Order calldata order, bytes32 orderHash) private view {
        uint256 deadline = order.deadline;
        if (block.timestamp <= deadline) revert MarketDeadlineNotPassed(orderHash, deadline);
        // The window ends before deadline + disputeWindow: from that second on, stake whose
        // unbonding was requested when the order was accepted may leave (unbondingDelay >=
        // maxDeadlineDelay + disputeWindow), so the two never overlap.
        uint256 closedAt = deadline + _disputeWindow;
        if (block.timestamp >= closedAt) revert MarketDisputeWindowClosed(orderHash, closedAt);
        if (order.payment < _minPayment) revert MarketPaymentBelowMinimum(order.payment, _minPayment);
        if (order.slashBps > _BPS || order.posterShareBps > _BPS) revert MarketInvalidTerms(orderHash);
        IModelRegistry.Model memory m = _registry.model(order.modelId);
        bool servable = m.registeredAt != 0 && m.registeredAt <= deadline && (m.active || m.deregisteredAt > deadline);
        if (!servable) revert MarketModelNotServable(order.modelId);
        _checkRootsHeld(deadline);
    }

    /// @dev Reverts if a registry root that was current when the order could have been accepted
    /// (retired after `deadline − maxDeadlineDelay`) stopped being accepted by the deadline (its
    /// grace period shorter than the rest of the order's time, or a revocation): the provider
    /// proved against that root and may have been left without one that holds the model. Whether
    /// the newer root holds it is not visible on-chain, so such orders are spared. A grace period
    /// of at least the longest deadline spares none. Walks the root history from the newest
    /// change back to the first retirement before the earliest acceptance.
    function _checkRootsHeld(uint256 deadline) private view {
        uint256 earliest = deadline > _maxDeadlineDelay ? deadline - _maxDeadlineDelay : 0;
        for (uint256 i = _registry.rootHistoryLength(); i > 1; --i) {
            // Record i − 1 activated a root, retiring record i − 2's at that moment.
            if (_registry.rootHistoryAt(i - 1).activatedAt <= earliest) break;
            bytes32 retired = _registry.rootHistoryAt(i - 2).root;
            (IModelRegistry.RootStatus status, uint256 until) = _registry.rootStatus(retired);
            if (status == IModelRegistry.RootStatus.Current) continue;
            if (until <= deadline) revert MarketRegistryChangedUnderOrder(retired, until);
        }
    }
}
