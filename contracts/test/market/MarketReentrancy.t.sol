// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Vm} from "forge-std/Vm.sol";

import {MarketTest} from "./MarketTest.sol";
import {ISettleBatch} from "../../interfaces/market/ISettleBatch.sol";
import {ReentrantVerifier, ReentrantViewVerifier} from "../mocks/VerifierMocks.sol";

/// @notice A verifier that re-enters settleBatch while the outer batch is being verified. The
/// market calls the verifier with STATICCALL (IGroth16Verifier.verifyProof is view) and
/// settleBatch has a reentrancy guard: the outer batch either counts as an invalid proof or
/// settles exactly once.
contract MarketReentrancyTest is MarketTest {
    uint32 internal bookA;
    uint256[8] internal zeroProof;

    function setUp() public override {
        super.setUp();
        bookA = _openBook(poster, 4, BOOK_MAX);
    }

    /// Installs `evil` as the verifier and, as a compromised sequencer, gives it the sequencer role.
    function _install(address evil) internal {
        _forceVerifier(evil);
        vm.prank(address(timelock));
        market.setSequencer(evil, true);
    }

    function _batch() internal view returns (ISettleBatch.BatchHeader memory, ISettleBatch.SettlementLeaf[] memory) {
        return _build(_items2(_item(_order(poster, bookA, 0), provider), _item(_order(poster, bookA, 1), provider)));
    }

    /// A state-changing verifier that re-enters settleBatch with the same batch. Under STATICCALL
    /// its writes revert the verifier frame: the batch is rejected as an invalid proof and nothing
    /// is paid.
    function test_RevertWhen_verifierReentersSettleBatch() public {
        ReentrantVerifier evil = new ReentrantVerifier(address(market));
        _install(address(evil));
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _batch();
        evil.arm(h, leaves, ROOT_A);
        (, uint256 publicInput,) = market.computePublicInput(h, leaves, ROOT_A);
        vm.expectRevert(abi.encodeWithSelector(ISettleBatch.MarketInvalidProof.selector, publicInput));
        vm.prank(sequencer);
        market.settleBatch(h, leaves, ROOT_A, zeroProof);

        assertEq(evil.reentryAttempts(), 0);
        assertFalse(evil.reentrySucceeded());
        assertFalse(market.nonceUsed(poster, _order(poster, bookA, 0).nonce));
        assertFalse(market.nonceUsed(poster, _order(poster, bookA, 1).nonce));
        assertEq(market.book(poster, bookA).remaining, 4 * BOOK_MAX);
        assertEq(market.earner(provider).earnings, 0);
        assertEq(market.earner(sequencer).earnings, 0);
        assertEq(market.accruedFees(), 0);
    }

    /// A view verifier whose re-entry is refused by the reentrancy guard, and which then accepts
    /// the outer batch: the batch settles exactly once (one BatchSettled, each order paid once),
    /// and settling it again pays nothing.
    function test_verifierReentryFails_batchSettlesOnce() public {
        ReentrantViewVerifier evil = new ReentrantViewVerifier(address(market));
        _install(address(evil));
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _batch();
        evil.arm(h, leaves, ROOT_A);
        uint256 marketBalance = token.balanceOf(address(market));

        vm.recordLogs();
        vm.prank(sequencer);
        (,, uint256 paid) = market.settleBatch(h, leaves, ROOT_A, zeroProof);
        assertEq(paid, 2);
        Vm.Log[] memory logs = vm.getRecordedLogs();
        uint256 settled;
        for (uint256 i = 0; i < logs.length; ++i) {
            if (logs[i].emitter == address(market) && logs[i].topics[0] == ISettleBatch.BatchSettled.selector) {
                ++settled;
            }
        }
        assertEq(settled, 1);

        uint256 fee = _fee(PAYMENT);
        uint256 settlerCut = 2 * fee * 2_000 / 10_000;
        assertTrue(market.nonceUsed(poster, _order(poster, bookA, 0).nonce));
        assertTrue(market.nonceUsed(poster, _order(poster, bookA, 1).nonce));
        assertEq(market.book(poster, bookA).remaining, 4 * BOOK_MAX - 2 * PAYMENT);
        assertEq(market.earner(provider).earnings, 2 * (PAYMENT - fee));
        assertEq(market.earner(provider).tasksSettled, 2);
        assertEq(market.earner(sequencer).earnings, settlerCut);
        assertEq(market.accruedFees(), 2 * fee - settlerCut);
        assertEq(token.balanceOf(address(market)), marketBalance);

        // Settling the same batch again: every leaf is skipped (nonce used), nothing is paid.
        vm.prank(sequencer);
        (,, paid) = market.settleBatch(h, leaves, ROOT_A, zeroProof);
        assertEq(paid, 0);
        assertEq(market.book(poster, bookA).remaining, 4 * BOOK_MAX - 2 * PAYMENT);
        assertEq(market.earner(provider).earnings, 2 * (PAYMENT - fee));
        assertEq(market.earner(provider).tasksSettled, 2);
    }
}
