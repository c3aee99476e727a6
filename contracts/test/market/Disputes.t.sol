// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {MarketTest} from "./MarketTest.sol";
import {IBonds} from "../../interfaces/market/IBonds.sol";
import {IDisputes} from "../../interfaces/market/IDisputes.sol";
import {Order} from "../../libraries/OrderLib.sol";

/// @notice dispute: slashing on the signed terms, and every condition that refuses a slash.
contract DisputesTest is MarketTest {
    uint256 internal constant BOND = 1_000e18;
    uint32 internal bookA;

    function setUp() public override {
        super.setUp();
        bookA = _openBook(poster, 4, BOOK_MAX);
        _bond(provider, BOND);
    }

    /// The fixture's order, its deadline passed.
    function _defaulted(uint32 index) internal returns (Order memory o) {
        o = _order(poster, bookA, index);
        vm.warp(o.deadline + 1);
    }

    function _disputeWith(Order memory o, bytes memory posterSig, address prov, bytes memory acceptanceSig)
        internal
        returns (uint256 slashed, uint256 toPoster)
    {
        vm.prank(stranger);
        (slashed, toPoster) = market.dispute(o, posterSig, prov, acceptanceSig);
    }

    // ------------------------------------------------------------------ slashing

    /// 50 % of the 100 collateral is slashed; half of it goes to the poster, half to the treasury.
    function test_dispute_slashesOnSignedTerms() public {
        Order memory o = _defaulted(0);
        uint256 posterBefore = token.balanceOf(poster);
        uint256 marketBefore = token.balanceOf(address(market));
        vm.expectEmit(address(market));
        emit IDisputes.OrderDisputed(_hash(o), poster, provider, 50e18, 25e18);
        (uint256 slashed, uint256 toPoster) = _dispute(o, provider);
        assertEq(slashed, 50e18);
        assertEq(toPoster, 25e18);
        assertEq(token.balanceOf(poster), posterBefore + 25e18);
        assertEq(token.balanceOf(address(market)), marketBefore - 25e18);
        assertEq(market.bond(provider).bonded, BOND - 50e18);
        assertEq(market.accruedFees(), 25e18);
        assertEq(market.earner(provider).tasksSlashed, 1);
        assertEq(market.earner(provider).tasksSettled, 0);
        assertTrue(market.nonceUsed(poster, o.nonce));
        assertEq(market.book(poster, bookA).remaining, 4 * BOOK_MAX); // the book is not involved
    }

    function test_dispute_lastSecondOfWindow() public {
        Order memory o = _order(poster, bookA, 0);
        vm.warp(o.deadline + 1 days - 1);
        (uint256 slashed,) = _dispute(o, provider);
        assertEq(slashed, 50e18);
    }

    function test_dispute_posterShareCappedByPayment() public {
        Order memory o = _order(poster, bookA, 0);
        o.payment = 10e18;
        o.posterShareBps = 10_000;
        vm.warp(o.deadline + 1);
        vm.expectEmit(address(market));
        emit IDisputes.OrderDisputed(_hash(o), poster, provider, 50e18, 10e18);
        (uint256 slashed, uint256 toPoster) = _dispute(o, provider);
        assertEq(slashed, 50e18);
        assertEq(toPoster, 10e18);
        assertEq(market.accruedFees(), 40e18);
    }

    function test_dispute_slashCappedByBond() public {
        _bond(provider2, 30e18);
        Order memory o = _defaulted(0);
        (uint256 slashed, uint256 toPoster) = _dispute(o, provider2);
        assertEq(slashed, 30e18);
        assertEq(toPoster, 15e18);
        assertEq(market.bond(provider2).bonded, 0);
        assertEq(market.accruedFees(), 15e18);
    }

    /// Bonded stake goes first, then unbonding stake; the unbonding timer is unchanged.
    function test_dispute_takesBondedThenUnbonding() public {
        _bond(provider2, 100e18);
        vm.prank(provider2);
        market.requestUnbonding(80e18);
        uint256 readyAt = block.timestamp + 8 days;
        Order memory o = _defaulted(0);
        (uint256 slashed,) = _dispute(o, provider2);
        assertEq(slashed, 50e18);
        IBonds.Bond memory b = market.bond(provider2);
        assertEq(b.bonded, 0);
        assertEq(b.unbonding, 50e18);
        assertEq(b.unbondingReadyAt, readyAt);
    }

    /// A provider without a bond loses nothing, but the dispute still closes the order and counts.
    function test_dispute_unbondedProviderSlashesNothing() public {
        Order memory o = _defaulted(0);
        (uint256 slashed, uint256 toPoster) = _dispute(o, provider2);
        assertEq(slashed, 0);
        assertEq(toPoster, 0);
        assertEq(market.earner(provider2).tasksSlashed, 1);
        assertTrue(market.nonceUsed(poster, o.nonce));
    }

    function test_dispute_namedProvider() public {
        Order memory o = _order(poster, bookA, 0);
        o.provider = provider;
        vm.warp(o.deadline + 1);
        (uint256 slashed,) = _dispute(o, provider);
        assertEq(slashed, 50e18);
    }

    function test_dispute_fullAndZeroTerms() public {
        Order memory full = _order(poster, bookA, 0);
        full.slashBps = 10_000;
        full.posterShareBps = 10_000;
        full.payment = uint96(BOOK_MAX);
        Order memory none = _order(poster, bookA, 1);
        none.slashBps = 0;
        vm.warp(full.deadline + 1);
        (uint256 slashed, uint256 toPoster) = _dispute(full, provider);
        assertEq(slashed, COLLATERAL);
        assertEq(toPoster, COLLATERAL);
        (slashed, toPoster) = _dispute(none, provider);
        assertEq(slashed, 0);
        assertEq(toPoster, 0);
        assertTrue(market.nonceUsed(poster, none.nonce));
    }

    function testFuzz_dispute_amounts(
        uint96 payment,
        uint96 collateral,
        uint16 slashBps,
        uint16 share,
        uint256 bonded,
        uint256 unbonding
    ) public {
        payment = uint96(bound(payment, 1e18, 1_000_000e18));
        collateral = uint96(bound(collateral, 0, 1_000_000e18));
        slashBps = uint16(bound(slashBps, 0, 10_000));
        share = uint16(bound(share, 0, 10_000));
        bonded = bound(bonded, 0, 500_000e18);
        unbonding = bound(unbonding, 0, bonded);
        if (bonded != 0) _bond(provider2, bonded);
        if (unbonding != 0) {
            vm.prank(provider2);
            market.requestUnbonding(unbonding);
        }
        Order memory o = _order(poster, bookA, 0);
        (o.payment, o.collateral, o.slashBps, o.posterShareBps) = (payment, collateral, slashBps, share);
        vm.warp(o.deadline + 1);
        uint256 marketBefore = token.balanceOf(address(market));
        (uint256 slashed, uint256 toPoster) = _dispute(o, provider2);
        uint256 wanted = uint256(collateral) * slashBps / 10_000;
        assertEq(slashed, wanted < bonded ? wanted : bonded);
        uint256 share_ = slashed * share / 10_000;
        assertEq(toPoster, share_ < payment ? share_ : payment);
        assertLe(toPoster, payment);
        assertEq(market.accruedFees(), slashed - toPoster);
        IBonds.Bond memory b = market.bond(provider2);
        assertEq(uint256(b.bonded) + b.unbonding, bonded - slashed);
        assertEq(token.balanceOf(address(market)), marketBefore - toPoster);
    }

    // ------------------------------------------------------------------ signatures

    function test_RevertWhen_posterSignatureByAnotherKey() public {
        Order memory o = _defaulted(0);
        bytes memory acceptance = _acceptance(provider, o);
        bytes memory sig = _sign65(poster2, _hash(o));
        vm.expectRevert(abi.encodeWithSelector(IDisputes.MarketBadPosterSignature.selector, _hash(o)));
        _disputeWith(o, sig, provider, acceptance);
    }

    /// A 64-byte compact signature, a 65-byte one with v = 0, and the high-s twin are refused.
    function test_RevertWhen_posterSignatureMalformed() public {
        Order memory o = _defaulted(0);
        bytes memory acceptance = _acceptance(provider, o);
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(keyOf[poster], _hash(o));
        bytes memory compact = abi.encodePacked(r, bytes32(uint256(s) | (uint256(v - 27) << 255)));
        bytes memory badV = abi.encodePacked(r, s, uint8(0));
        uint256 n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141;
        bytes memory twin = abi.encodePacked(r, bytes32(n - uint256(s)), v == 27 ? uint8(28) : uint8(27));
        assertEq(ecrecover(_hash(o), v == 27 ? 28 : 27, r, bytes32(n - uint256(s))), poster);
        bytes[4] memory bad = [compact, badV, twin, bytes("")];
        for (uint256 i = 0; i < bad.length; ++i) {
            vm.expectRevert(abi.encodeWithSelector(IDisputes.MarketBadPosterSignature.selector, _hash(o)));
            _disputeWith(o, bad[i], provider, acceptance);
        }
    }

    function test_RevertWhen_acceptanceByAnotherKey() public {
        Order memory o = _defaulted(0);
        bytes memory posterSig = _posterSignature(o);
        bytes memory acceptance = _acceptance(provider2, o);
        vm.expectRevert(abi.encodeWithSelector(IDisputes.MarketBadAcceptance.selector, _hash(o), provider));
        _disputeWith(o, posterSig, provider, acceptance);
    }

    /// The provider's signature of the order digest itself, or its acceptance of another order,
    /// is no acceptance of this order.
    function test_RevertWhen_acceptanceOfSomethingElse() public {
        Order memory o = _defaulted(0);
        bytes memory posterSig = _posterSignature(o);
        bytes memory rawDigest = _sign65(provider, _hash(o));
        vm.expectRevert(abi.encodeWithSelector(IDisputes.MarketBadAcceptance.selector, _hash(o), provider));
        _disputeWith(o, posterSig, provider, rawDigest);
        bytes memory otherOrder = _acceptance(provider, _order(poster, bookA, 1));
        vm.expectRevert(abi.encodeWithSelector(IDisputes.MarketBadAcceptance.selector, _hash(o), provider));
        _disputeWith(o, posterSig, provider, otherOrder);
    }

    function test_RevertWhen_acceptanceProviderZero() public {
        Order memory o = _defaulted(0);
        bytes memory posterSig = _posterSignature(o);
        bytes memory acceptance = _acceptance(provider, o);
        vm.expectRevert(abi.encodeWithSelector(IDisputes.MarketBadAcceptance.selector, _hash(o), address(0)));
        _disputeWith(o, posterSig, address(0), acceptance);
        vm.expectRevert(abi.encodeWithSelector(IDisputes.MarketBadAcceptance.selector, _hash(o), address(0)));
        _disputeWith(o, posterSig, address(0), new bytes(65));
    }

    function test_RevertWhen_notNamedProvider() public {
        Order memory o = _order(poster, bookA, 0);
        o.provider = provider;
        vm.warp(o.deadline + 1);
        _expectDisputeRevert(
            o,
            provider2,
            abi.encodeWithSelector(IDisputes.MarketNotNamedProvider.selector, _hash(o), provider, provider2)
        );
    }

    // ------------------------------------------------------------------ timing

    function test_RevertWhen_deadlineNotPassed() public {
        Order memory o = _order(poster, bookA, 0);
        _expectDisputeRevert(
            o, provider, abi.encodeWithSelector(IDisputes.MarketDeadlineNotPassed.selector, _hash(o), o.deadline)
        );
        vm.warp(o.deadline);
        _expectDisputeRevert(
            o, provider, abi.encodeWithSelector(IDisputes.MarketDeadlineNotPassed.selector, _hash(o), o.deadline)
        );
    }

    /// The window closes at deadline + disputeWindow exactly.
    function test_RevertWhen_disputeWindowClosed() public {
        Order memory o = _order(poster, bookA, 0);
        uint256 closedAt = o.deadline + 1 days;
        vm.warp(closedAt);
        _expectDisputeRevert(
            o, provider, abi.encodeWithSelector(IDisputes.MarketDisputeWindowClosed.selector, _hash(o), closedAt)
        );
        vm.warp(closedAt + 30 days);
        _expectDisputeRevert(
            o, provider, abi.encodeWithSelector(IDisputes.MarketDisputeWindowClosed.selector, _hash(o), closedAt)
        );
    }

    // ------------------------------------------------------------------ closed orders

    function test_RevertWhen_orderSettled() public {
        _installBoundVerifier();
        Order memory o = _order(poster, bookA, 0);
        _settleBound(_items1(_item(o, provider)), sequencer);
        vm.warp(o.deadline + 1);
        _expectDisputeRevert(o, provider, abi.encodeWithSelector(IDisputes.MarketOrderClosed.selector, poster, o.nonce));
    }

    function test_RevertWhen_orderCancelled() public {
        Order memory o = _order(poster, bookA, 0);
        uint64[] memory nonces = new uint64[](1);
        nonces[0] = o.nonce;
        vm.prank(poster);
        market.cancelNonces(nonces);
        vm.warp(o.deadline + 1);
        _expectDisputeRevert(o, provider, abi.encodeWithSelector(IDisputes.MarketOrderClosed.selector, poster, o.nonce));
    }

    function test_RevertWhen_orderDisputedTwice() public {
        Order memory o = _defaulted(0);
        _dispute(o, provider);
        _expectDisputeRevert(o, provider, abi.encodeWithSelector(IDisputes.MarketOrderClosed.selector, poster, o.nonce));
        assertEq(market.bond(provider).bonded, BOND - 50e18);
    }

    /// Another order signed with a disputed order's nonce is closed too.
    function test_RevertWhen_otherOrderWithDisputedNonce() public {
        Order memory o = _defaulted(0);
        _dispute(o, provider);
        Order memory twin = _order(poster, bookA, 0);
        twin.deadline = o.deadline;
        twin.inputCommitment = keccak256("another input");
        _expectDisputeRevert(
            twin, provider, abi.encodeWithSelector(IDisputes.MarketOrderClosed.selector, poster, o.nonce)
        );
    }

    // ------------------------------------------------------------------ order checks

    function test_RevertWhen_paymentBelowMinimum() public {
        Order memory o = _order(poster, bookA, 0);
        o.payment = 1e18 - 1;
        vm.warp(o.deadline + 1);
        _expectDisputeRevert(
            o, provider, abi.encodeWithSelector(IDisputes.MarketPaymentBelowMinimum.selector, 1e18 - 1, 1e18)
        );
        o.payment = 1e18; // exactly the minimum is disputable
        (uint256 slashed,) = _dispute(o, provider);
        assertEq(slashed, 50e18);
    }

    function test_RevertWhen_termsInvalid() public {
        Order memory o = _order(poster, bookA, 0);
        o.slashBps = 10_001;
        vm.warp(o.deadline + 1);
        _expectDisputeRevert(o, provider, abi.encodeWithSelector(IDisputes.MarketInvalidTerms.selector, _hash(o)));
        o.slashBps = SLASH_BPS;
        o.posterShareBps = 10_001;
        _expectDisputeRevert(o, provider, abi.encodeWithSelector(IDisputes.MarketInvalidTerms.selector, _hash(o)));
    }

    // ------------------------------------------------------------------ model servability

    function _registerModel2(bytes32 newRoot) internal {
        vm.prank(address(timelock));
        registry.registerModel(MODEL2, keccak256("circuit digits v1"), "ipfs://digits", newRoot);
    }

    function _deregisterModel(bytes32 newRoot) internal {
        vm.prank(address(timelock));
        registry.deregisterModel(MODEL, newRoot);
    }

    function test_RevertWhen_modelUnknown() public {
        Order memory o = _order(poster, bookA, 0);
        o.modelId = keccak256("never registered");
        vm.warp(o.deadline + 1);
        _expectDisputeRevert(o, provider, abi.encodeWithSelector(IDisputes.MarketModelNotServable.selector, o.modelId));
    }

    function test_RevertWhen_modelRegisteredAfterDeadline() public {
        Order memory o = _order(poster, bookA, 0);
        o.modelId = MODEL2;
        vm.warp(o.deadline + 1);
        _registerModel2(ROOT_B);
        _expectDisputeRevert(o, provider, abi.encodeWithSelector(IDisputes.MarketModelNotServable.selector, MODEL2));
    }

    function test_dispute_modelRegisteredAtDeadline() public {
        Order memory o = _order(poster, bookA, 0);
        o.modelId = MODEL2;
        vm.warp(o.deadline);
        _registerModel2(ROOT_B);
        skip(1);
        (uint256 slashed,) = _dispute(o, provider);
        assertEq(slashed, 50e18);
    }

    function test_RevertWhen_modelDeregisteredBeforeDeadline() public {
        Order memory o = _order(poster, bookA, 0);
        _deregisterModel(ROOT_B);
        vm.warp(o.deadline + 1);
        _expectDisputeRevert(o, provider, abi.encodeWithSelector(IDisputes.MarketModelNotServable.selector, MODEL));
    }

    /// Deregistered in the deadline's second counts as deregistered by the deadline (the rule is
    /// deregisteredAt > deadline): not servable.
    function test_RevertWhen_modelDeregisteredAtDeadline() public {
        Order memory o = _order(poster, bookA, 0);
        vm.warp(o.deadline);
        _deregisterModel(ROOT_B);
        skip(1);
        _expectDisputeRevert(o, provider, abi.encodeWithSelector(IDisputes.MarketModelNotServable.selector, MODEL));
    }

    function test_dispute_modelDeregisteredAfterDeadline() public {
        Order memory o = _defaulted(0);
        _deregisterModel(ROOT_B);
        (uint256 slashed,) = _dispute(o, provider);
        assertEq(slashed, 50e18);
    }

    // ------------------------------------------------------------------ registry changes (issue 63, point 4)

    function _setRoot(bytes32 root) internal {
        vm.prank(address(timelock));
        registry.setRegistryRoot(root);
    }

    function _grace(uint256 period) internal {
        vm.prank(address(timelock));
        registry.setRootGracePeriod(period);
    }

    /// A root swapped under an accepted order with a grace period that ends before its deadline
    /// may have left the model unprovable: the provider is not slashed.
    function test_RevertWhen_rootReplacedWithShortGraceBeforeDeadline() public {
        Order memory o = _order(poster, bookA, 0);
        _grace(0);
        skip(1);
        uint256 swappedAt = block.timestamp;
        _setRoot(ROOT_B);
        vm.warp(o.deadline + 1);
        _expectDisputeRevert(
            o, provider, abi.encodeWithSelector(IDisputes.MarketRegistryChangedUnderOrder.selector, ROOT_A, swappedAt)
        );
    }

    /// A revocation cuts the grace short: the same.
    function test_RevertWhen_rootRevokedBeforeDeadline() public {
        Order memory o = _order(poster, bookA, 0);
        _setRoot(ROOT_B);
        skip(10);
        uint256 revokedAt = block.timestamp;
        vm.prank(address(timelock));
        registry.revokeRoot(ROOT_A);
        vm.warp(o.deadline + 1);
        _expectDisputeRevert(
            o, provider, abi.encodeWithSelector(IDisputes.MarketRegistryChangedUnderOrder.selector, ROOT_A, revokedAt)
        );
    }

    /// A swap whose grace outlasts the deadline strands nothing, and a swap whose grace had ended
    /// before the order could be accepted (longer ago than the longest deadline) is history:
    /// both orders are disputable.
    function test_dispute_rootChangesThatStrandNothing() public {
        Order memory o = _order(poster, bookA, 0);
        _setRoot(ROOT_B); // 1 day of grace, past the 30-minute deadline
        vm.warp(o.deadline + 1);
        (uint256 slashed,) = _dispute(o, provider);
        assertEq(slashed, 50e18);

        _grace(0);
        _setRoot(keccak256("registry root C"));
        vm.warp(block.timestamp + market.parameters().maxDeadlineDelay + 1);
        Order memory later = _order(poster, bookA, 1);
        vm.warp(later.deadline + 1);
        (slashed,) = _dispute(later, provider);
        assertEq(slashed, 50e18);
    }
}
