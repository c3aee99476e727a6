// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {TGridTest} from "./utils/TGridTest.sol";
import {ReentrantVerifier, ReentrantViewVerifier} from "./mocks/VerifierMocks.sol";
import {ISettlement} from "../interfaces/ISettlement.sol";
import {ITaskEscrow} from "../interfaces/ITaskEscrow.sol";
import {TaskLeaf} from "../libraries/TaskLeaf.sol";

/// @notice Adversarial scenarios. The per-task attacks with valid proofs (duplicate, unaccepted,
/// expired, wrong provider/model/input, other registry root, tampered proof, non-sequencer) are in
/// SettlementTest; this suite covers re-entry and cross-party abuse.
contract AttacksTest is TGridTest {
    uint256[8] internal zeroProof;

    function setUp() public override {
        super.setUp();
        _stake(provider, STAKE);
        _stake(provider2, STAKE);
    }

    /// A verifier that re-enters submitBatch as a (compromised) sequencer. Settlement calls the
    /// verifier with STATICCALL, so the attempt cannot change state and the verifier frame reverts:
    /// the batch is rejected and nothing is paid.
    function test_RevertWhen_verifierReentersSubmitBatch() public {
        ReentrantVerifier evil = new ReentrantVerifier(settlement);
        vm.startPrank(address(timelock));
        settlement.setVerifier(address(evil));
        settlement.setSequencer(address(evil), true);
        vm.stopPrank();
        TaskLeaf[] memory leaves = _postAndAccept(provider, 2);
        evil.arm(leaves, ROOT_A);
        (, uint256 publicInput) = settlement.computePublicInput(leaves, ROOT_A);
        vm.expectRevert(abi.encodeWithSelector(ISettlement.SettlementInvalidProof.selector, publicInput));
        _submit(leaves, ROOT_A, zeroProof);
        assertEq(evil.reentryAttempts(), 0);
        assertEq(uint8(_status(leaves[0].taskId)), uint8(ITaskEscrow.TaskStatus.Accepted));
        assertEq(staking.account(provider).earnings, 0);
    }

    /// A view verifier whose re-entry fails (reentrancy guard, static context) and which then
    /// accepts the outer batch: the batch settles exactly once.
    function test_verifierReentryFails_batchSettlesOnce() public {
        ReentrantViewVerifier evil = new ReentrantViewVerifier(settlement);
        vm.startPrank(address(timelock));
        settlement.setVerifier(address(evil));
        settlement.setSequencer(address(evil), true);
        vm.stopPrank();
        TaskLeaf[] memory leaves = _postAndAccept(provider, 2);
        evil.arm(leaves, ROOT_A);
        _submit(leaves, ROOT_A, zeroProof);
        uint256 reward = PAYMENT + FEE_TIP;
        assertEq(staking.account(provider).tasksSettled, 2);
        assertEq(staking.account(provider).earnings, 2 * reward - (2 * reward) / 100);
        // Replaying the same batch fails on the first task.
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowTaskAlreadySettled.selector, leaves[0].taskId));
        _submit(leaves, ROOT_A, zeroProof);
    }

    /// The sequencer cannot settle directly through the escrow, bypassing the proof.
    function test_RevertWhen_sequencerCallsEscrowDirectly() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 1);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowUnauthorizedSettlement.selector, sequencer));
        vm.prank(sequencer);
        escrow.settleTasks(leaves);
    }

    /// A provider cannot release another provider's collateral or slash anyone.
    function test_RevertWhen_providerCallsStakingHooks() public {
        vm.startPrank(provider);
        vm.expectRevert();
        staking.creditSettlement(provider2, 0, 1e18, 1);
        vm.expectRevert();
        staking.slash(provider2, 1e18, provider);
        vm.expectRevert();
        escrow.payEarnings(provider, 1);
        vm.stopPrank();
    }

    /// Expiring a task after it was settled must fail: no double payout to the poster.
    function test_RevertWhen_expiringSettledTask() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 1);
        uint256[8] memory proof = _proveBatch(leaves, ROOT_A);
        _submit(leaves, ROOT_A, proof);
        skip(2 days);
        vm.expectRevert(
            abi.encodeWithSelector(
                ITaskEscrow.TaskEscrowInvalidStatus.selector, leaves[0].taskId, ITaskEscrow.TaskStatus.Settled
            )
        );
        escrow.expireTask(leaves[0].taskId);
    }

    /// A provider whose stake is all locked cannot escape slashing by unbonding.
    function test_RevertWhen_unbondingLockedCollateral() public {
        bytes32 id = _post(poster, MODEL, INPUT, 5_000e18, 0, block.timestamp + 1 days);
        _accept(provider, id);
        vm.expectRevert();
        vm.prank(provider);
        staking.requestUnbonding(STAKE);
        skip(2 days);
        escrow.expireTask(id);
        assertEq(staking.account(provider).bonded, STAKE - 2_500e18);
    }
}
