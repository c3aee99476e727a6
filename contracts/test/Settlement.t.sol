// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

import {TGridTest} from "./utils/TGridTest.sol";
import {RevertingVerifier} from "./mocks/VerifierMocks.sol";
import {Settlement} from "../settlement/Settlement.sol";
import {IGroth16Verifier} from "../interfaces/IGroth16Verifier.sol";
import {IModelRegistry} from "../interfaces/IModelRegistry.sol";
import {ISettlement} from "../interfaces/ISettlement.sol";
import {ITaskEscrow} from "../interfaces/ITaskEscrow.sol";
import {IStaking} from "../interfaces/IStaking.sol";
import {TaskLeaf} from "../libraries/TaskLeaf.sol";

/// @notice Settlement with the real devnet Groth16 verifier; proofs come from snarkjs via FFI.
contract SettlementTest is TGridTest {
    uint256[8] internal zeroProof;

    function setUp() public override {
        super.setUp();
        _stake(provider, STAKE);
        _stake(provider2, STAKE);
    }

    function test_submitBatch_settlesSingleTask() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 1);
        uint256[8] memory proof = _proveBatch(leaves, ROOT_A);
        (bytes32 batchRoot, uint256 publicInput) = settlement.computePublicInput(leaves, ROOT_A);

        uint256 reward = PAYMENT + FEE_TIP;
        uint256 fee = reward * 100 / 10_000;
        uint256 treasuryBefore = token.balanceOf(address(timelock));

        vm.expectEmit(address(escrow));
        emit ITaskEscrow.TaskSettled(leaves[0].taskId, leaves[0].outputCommitment);
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.BatchPaid(1, reward - fee, fee);
        vm.expectEmit(address(settlement));
        emit ISettlement.BatchSettled(batchRoot, ROOT_A, sequencer, 1, publicInput);
        vm.prank(sequencer);
        (bytes32 gotRoot, uint256 gotInput) = settlement.submitBatch(leaves, ROOT_A, proof);
        assertEq(gotRoot, batchRoot);
        assertEq(gotInput, publicInput);

        assertEq(uint8(_status(leaves[0].taskId)), uint8(ITaskEscrow.TaskStatus.Settled));
        // Settlement does not touch Staking: the collateral stays locked and the reputation counts
        // the task once the provider claims it.
        IStaking.ProviderAccount memory a = staking.account(provider);
        assertEq(a.locked, reward);
        assertEq(a.tasksSettled, 0);
        (bool claimable, uint256 pay, uint256 collateral) = escrow.claimable(leaves[0].taskId);
        assertTrue(claimable);
        assertEq(pay, reward - fee);
        assertEq(collateral, reward);
        // No token moved: pay and fee stay in the escrow until claimed / swept.
        assertEq(token.balanceOf(address(escrow)), reward);
        assertEq(escrow.accruedFees(), fee);
        assertEq(token.balanceOf(address(staking)), 2 * STAKE);

        uint256 before = token.balanceOf(provider);
        bytes32[] memory ids = new bytes32[](1);
        ids[0] = leaves[0].taskId;
        vm.prank(provider);
        escrow.claimSettled(ids);
        assertEq(token.balanceOf(provider), before + reward - fee);
        a = staking.account(provider);
        assertEq(a.locked, 0);
        assertEq(a.tasksSettled, 1);
        vm.prank(stranger);
        escrow.sweepFees();
        assertEq(token.balanceOf(address(timelock)), treasuryBefore + fee);
        assertEq(token.balanceOf(address(escrow)), 0);
    }

    function test_submitBatch_settlesInterleavedProviders() public {
        // Providers p1, p1, p2, p1, p2: each claims its own tasks afterwards.
        address[5] memory who = [provider, provider, provider2, provider, provider2];
        TaskLeaf[] memory leaves = new TaskLeaf[](5);
        for (uint256 i = 0; i < 5; ++i) {
            TaskLeaf[] memory one = _postAndAccept(who[i], 1);
            leaves[i] = one[0];
        }
        uint256[8] memory proof = _proveBatch(leaves, ROOT_A);
        _submit(leaves, ROOT_A, proof);
        uint256 reward = PAYMENT + FEE_TIP;
        uint256 net = reward - reward / 100;
        for (uint256 i = 0; i < 5; ++i) {
            assertEq(uint8(_status(leaves[i].taskId)), uint8(ITaskEscrow.TaskStatus.Settled));
        }
        assertEq(token.balanceOf(address(escrow)), 5 * reward);
        assertEq(escrow.accruedFees(), 5 * (reward - net));

        bytes32[] memory mine = new bytes32[](3);
        (mine[0], mine[1], mine[2]) = (leaves[0].taskId, leaves[1].taskId, leaves[3].taskId);
        bytes32[] memory theirs = new bytes32[](2);
        (theirs[0], theirs[1]) = (leaves[2].taskId, leaves[4].taskId);
        vm.prank(provider);
        (uint256 paid1, uint256 released1) = escrow.claimSettled(mine);
        vm.prank(provider2);
        (uint256 paid2, uint256 released2) = escrow.claimSettled(theirs);
        assertEq(paid1, 3 * net);
        assertEq(paid2, 2 * net);
        assertEq(released1, 3 * reward);
        assertEq(released2, 2 * reward);
        assertEq(staking.account(provider).tasksSettled, 3);
        assertEq(staking.account(provider2).tasksSettled, 2);
        assertEq(staking.account(provider).locked, 0);
        assertEq(staking.account(provider2).locked, 0);
        assertEq(token.balanceOf(address(escrow)), escrow.accruedFees());
    }

    function test_submitBatch_settlesAtDeadline() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 1);
        uint256[8] memory proof = _proveBatch(leaves, ROOT_A);
        vm.warp(escrow.task(leaves[0].taskId).deadline);
        _submit(leaves, ROOT_A, proof);
        assertEq(uint8(_status(leaves[0].taskId)), uint8(ITaskEscrow.TaskStatus.Settled));
    }

    function test_submitBatch_acceptsPreviousRootWithinGrace() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 2);
        uint256[8] memory proof = _proveBatch(leaves, ROOT_A);
        vm.prank(address(timelock));
        registry.setRegistryRoot(ROOT_B);
        skip(1 days - 1);
        _submit(leaves, ROOT_A, proof);
        assertEq(uint8(_status(leaves[1].taskId)), uint8(ITaskEscrow.TaskStatus.Settled));
    }

    function test_RevertWhen_previousRootGraceEnded() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 1);
        vm.prank(address(timelock));
        registry.setRegistryRoot(ROOT_B);
        uint256 end = block.timestamp + 1 days;
        vm.warp(end);
        vm.expectRevert(abi.encodeWithSelector(ISettlement.SettlementRegistryRootExpired.selector, ROOT_A, end));
        _submit(leaves, ROOT_A, zeroProof);
    }

    function test_RevertWhen_unknownRegistryRoot() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 1);
        bytes32 bogus = keccak256("bogus root");
        vm.expectRevert(abi.encodeWithSelector(ISettlement.SettlementUnknownRegistryRoot.selector, bogus, ROOT_A));
        _submit(leaves, bogus, zeroProof);
    }

    function test_RevertWhen_notSequencer() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 1);
        vm.expectRevert(abi.encodeWithSelector(ISettlement.SettlementNotSequencer.selector, provider));
        vm.prank(provider);
        settlement.submitBatch(leaves, ROOT_A, zeroProof);
    }

    function test_RevertWhen_revokedSequencer() public {
        vm.prank(address(timelock));
        settlement.setSequencer(sequencer, false);
        TaskLeaf[] memory leaves = _postAndAccept(provider, 1);
        vm.expectRevert(abi.encodeWithSelector(ISettlement.SettlementNotSequencer.selector, sequencer));
        _submit(leaves, ROOT_A, zeroProof);
    }

    function test_RevertWhen_emptyBatch() public {
        vm.expectRevert(ISettlement.SettlementEmptyBatch.selector);
        _submit(new TaskLeaf[](0), ROOT_A, zeroProof);
    }

    function test_RevertWhen_batchTooLarge() public {
        vm.prank(address(timelock));
        settlement.setMaxBatchSize(2);
        TaskLeaf[] memory leaves = _postAndAccept(provider, 3);
        vm.expectRevert(abi.encodeWithSelector(ISettlement.SettlementBatchTooLarge.selector, 3, 2));
        _submit(leaves, ROOT_A, zeroProof);
    }

    function test_RevertWhen_proofTampered() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 1);
        uint256[8] memory proof = _proveBatch(leaves, ROOT_A);
        (, uint256 publicInput) = settlement.computePublicInput(leaves, ROOT_A);
        proof[6] ^= 1; // C.x
        vm.expectRevert(abi.encodeWithSelector(ISettlement.SettlementInvalidProof.selector, publicInput));
        _submit(leaves, ROOT_A, proof);
    }

    function test_RevertWhen_proofForAnotherRegistryRoot() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 1);
        uint256[8] memory proofForB = _proveBatch(leaves, ROOT_B);
        // Both roots are acceptable (A in grace), but the proof binds B.
        vm.prank(address(timelock));
        registry.setRegistryRoot(ROOT_B);
        (, uint256 inputA) = settlement.computePublicInput(leaves, ROOT_A);
        vm.expectRevert(abi.encodeWithSelector(ISettlement.SettlementInvalidProof.selector, inputA));
        _submit(leaves, ROOT_A, proofForB);
        _submit(leaves, ROOT_B, proofForB);
        assertEq(uint8(_status(leaves[0].taskId)), uint8(ITaskEscrow.TaskStatus.Settled));
    }

    function test_RevertWhen_leafChangedAfterProving() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 2);
        uint256[8] memory proof = _proveBatch(leaves, ROOT_A);
        leaves[1].outputCommitment = keccak256("forged output");
        (, uint256 publicInput) = settlement.computePublicInput(leaves, ROOT_A);
        vm.expectRevert(abi.encodeWithSelector(ISettlement.SettlementInvalidProof.selector, publicInput));
        _submit(leaves, ROOT_A, proof);
    }

    function test_RevertWhen_leavesReordered() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 2);
        uint256[8] memory proof = _proveBatch(leaves, ROOT_A);
        (leaves[0], leaves[1]) = (leaves[1], leaves[0]);
        (, uint256 publicInput) = settlement.computePublicInput(leaves, ROOT_A);
        vm.expectRevert(abi.encodeWithSelector(ISettlement.SettlementInvalidProof.selector, publicInput));
        _submit(leaves, ROOT_A, proof);
    }

    function test_RevertWhen_verifierReverts() public {
        RevertingVerifier bad = new RevertingVerifier();
        vm.prank(address(timelock));
        settlement.setVerifier(address(bad));
        TaskLeaf[] memory leaves = _postAndAccept(provider, 1);
        (, uint256 publicInput) = settlement.computePublicInput(leaves, ROOT_A);
        vm.expectRevert(abi.encodeWithSelector(ISettlement.SettlementInvalidProof.selector, publicInput));
        _submit(leaves, ROOT_A, zeroProof);
    }

    // ------------------------------------------------------------------ per-task checks (valid proofs)

    function test_RevertWhen_batchRepeatsTask() public {
        TaskLeaf[] memory one = _postAndAccept(provider, 1);
        TaskLeaf[] memory leaves = new TaskLeaf[](2);
        (leaves[0], leaves[1]) = (one[0], one[0]);
        uint256[8] memory proof = _proveBatch(leaves, ROOT_A);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowTaskAlreadySettled.selector, one[0].taskId));
        _submit(leaves, ROOT_A, proof);
        assertEq(uint8(_status(one[0].taskId)), uint8(ITaskEscrow.TaskStatus.Accepted));
    }

    function test_RevertWhen_taskSettledInEarlierBatch() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 1);
        uint256[8] memory proof = _proveBatch(leaves, ROOT_A);
        _submit(leaves, ROOT_A, proof);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowTaskAlreadySettled.selector, leaves[0].taskId));
        _submit(leaves, ROOT_A, proof);
        (bool claimable, uint256 pay,) = escrow.claimable(leaves[0].taskId);
        assertTrue(claimable);
        assertEq(pay, PAYMENT + FEE_TIP - (PAYMENT + FEE_TIP) / 100);
        assertEq(escrow.accruedFees(), (PAYMENT + FEE_TIP) / 100); // accrued once
    }

    function test_RevertWhen_taskNotAccepted() public {
        bytes32 id = _post(poster);
        TaskLeaf[] memory leaves = _one(
            TaskLeaf({taskId: id, modelId: MODEL, inputCommitment: INPUT, outputCommitment: OUTPUT, provider: provider})
        );
        uint256[8] memory proof = _proveBatch(leaves, ROOT_A);
        vm.expectRevert(
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowTaskNotAccepted.selector, id, ITaskEscrow.TaskStatus.Posted)
        );
        _submit(leaves, ROOT_A, proof);
    }

    function test_RevertWhen_settlingAfterDeadline() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 1);
        uint256[8] memory proof = _proveBatch(leaves, ROOT_A);
        uint256 d = escrow.task(leaves[0].taskId).deadline;
        vm.warp(d + 1);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowDeadlinePassed.selector, leaves[0].taskId, d));
        _submit(leaves, ROOT_A, proof);
        // The provider can no longer be paid; the task expires and the provider is slashed.
        escrow.expireTask(leaves[0].taskId);
        assertEq(staking.account(provider).tasksSlashed, 1);
    }

    function test_RevertWhen_leafNamesAnotherProvider() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 1);
        leaves[0].provider = provider2; // provider2 tries to get paid for provider's task
        uint256[8] memory proof = _proveBatch(leaves, ROOT_A);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowLeafMismatch.selector, leaves[0].taskId));
        _submit(leaves, ROOT_A, proof);
    }

    function test_RevertWhen_leafNamesAnotherModel() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 1);
        leaves[0].modelId = MODEL2;
        uint256[8] memory proof = _proveBatch(leaves, ROOT_A);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowLeafMismatch.selector, leaves[0].taskId));
        _submit(leaves, ROOT_A, proof);
    }

    function test_RevertWhen_leafNamesAnotherInput() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 1);
        leaves[0].inputCommitment = keccak256("other input");
        uint256[8] memory proof = _proveBatch(leaves, ROOT_A);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowLeafMismatch.selector, leaves[0].taskId));
        _submit(leaves, ROOT_A, proof);
    }

    // ------------------------------------------------------------------ governance

    function test_setters_ownerOnlyAndEmit() public {
        RevertingVerifier v2 = new RevertingVerifier();
        vm.startPrank(address(timelock));
        vm.expectEmit(address(settlement));
        emit ISettlement.SequencerUpdated(stranger, true);
        settlement.setSequencer(stranger, true);
        vm.expectEmit(address(settlement));
        emit ISettlement.VerifierUpdated(address(v2));
        settlement.setVerifier(address(v2));
        vm.expectEmit(address(settlement));
        emit ISettlement.MaxBatchSizeUpdated(64);
        settlement.setMaxBatchSize(64);
        vm.stopPrank();
        assertTrue(settlement.isSequencer(stranger));
        assertEq(settlement.verifier(), address(v2));
        assertEq(settlement.maxBatchSize(), 64);
        assertEq(settlement.escrow(), address(escrow));
        assertEq(settlement.registry(), address(registry));
        assertEq(settlement.owner(), address(timelock));
    }

    function test_RevertWhen_setterCalledByNonOwner() public {
        vm.startPrank(sequencer);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, sequencer));
        settlement.setSequencer(sequencer, true);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, sequencer));
        settlement.setVerifier(address(verifier));
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, sequencer));
        settlement.setMaxBatchSize(1);
        vm.stopPrank();
    }

    function test_RevertWhen_constructedWithZeroAddresses() public {
        vm.expectRevert(ISettlement.SettlementZeroAddress.selector);
        new Settlement(address(this), ITaskEscrow(address(0)), registry, IGroth16Verifier(address(verifier)), 1);
        vm.expectRevert(ISettlement.SettlementZeroAddress.selector);
        new Settlement(address(this), escrow, IModelRegistry(address(0)), IGroth16Verifier(address(verifier)), 1);
        vm.expectRevert(ISettlement.SettlementZeroAddress.selector);
        new Settlement(address(this), escrow, registry, IGroth16Verifier(address(0)), 1);
    }

    function test_RevertWhen_invalidParameters() public {
        vm.startPrank(address(timelock));
        vm.expectRevert(ISettlement.SettlementZeroAddress.selector);
        settlement.setVerifier(stranger); // not a contract
        vm.expectRevert(ISettlement.SettlementZeroAddress.selector);
        settlement.setSequencer(address(0), true);
        vm.expectRevert(abi.encodeWithSelector(ISettlement.SettlementInvalidMaxBatchSize.selector, 0));
        settlement.setMaxBatchSize(0);
        vm.expectRevert(abi.encodeWithSelector(ISettlement.SettlementInvalidMaxBatchSize.selector, 4097));
        settlement.setMaxBatchSize(4097);
        vm.stopPrank();
    }
}
