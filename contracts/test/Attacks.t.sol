// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";

import {TGridTest} from "./utils/TGridTest.sol";
import {ReentrantVerifier, ReentrantViewVerifier} from "./mocks/VerifierMocks.sol";
import {ClaimReentrant, HookedToken} from "./mocks/ClaimMocks.sol";
import {ISettlement} from "../interfaces/ISettlement.sol";
import {ITaskEscrow} from "../interfaces/ITaskEscrow.sol";
import {IStaking} from "../interfaces/IStaking.sol";
import {IModelRegistry} from "../interfaces/IModelRegistry.sol";
import {Staking} from "../staking/Staking.sol";
import {TaskEscrow} from "../escrow/TaskEscrow.sol";
import {TaskLeaf} from "../libraries/TaskLeaf.sol";

/// @notice Adversarial scenarios. The per-task attacks with valid proofs (duplicate, unaccepted,
/// expired, wrong provider/model/input, other registry root, tampered proof, non-sequencer) are in
/// SettlementTest, the claim reverts in TaskEscrowTest; this suite covers re-entry and cross-party
/// abuse.
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
        (bool claimable,,) = escrow.claimable(leaves[0].taskId);
        assertFalse(claimable);
        assertEq(escrow.accruedFees(), 0);
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
        assertEq(escrow.accruedFees(), 2 * (reward / 100));
        bytes32[] memory ids = new bytes32[](2);
        (ids[0], ids[1]) = (leaves[0].taskId, leaves[1].taskId);
        vm.prank(provider);
        (uint256 paid,) = escrow.claimSettled(ids);
        assertEq(paid, 2 * (reward - reward / 100));
        assertEq(staking.account(provider).tasksSettled, 2);
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

    /// A provider cannot release collateral, bump its reputation or slash anyone.
    function test_RevertWhen_providerCallsStakingHooks() public {
        vm.startPrank(provider);
        vm.expectRevert(abi.encodeWithSelector(IStaking.StakingUnauthorizedEscrow.selector, provider));
        staking.releaseSettledCollateral(provider, 0, 1_000);
        vm.expectRevert(abi.encodeWithSelector(IStaking.StakingUnauthorizedEscrow.selector, provider));
        staking.slash(provider2, 1e18, provider);
        vm.stopPrank();
    }

    /// A provider cannot collect a task before it is proven, nor another provider's settled task
    /// (even the poster of it).
    function test_RevertWhen_claimingUnprovenOrForeignTask() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 1);
        bytes32[] memory ids = new bytes32[](1);
        ids[0] = leaves[0].taskId;
        vm.expectRevert(
            abi.encodeWithSelector(
                ITaskEscrow.TaskEscrowTaskNotSettled.selector, ids[0], ITaskEscrow.TaskStatus.Accepted
            )
        );
        vm.prank(provider);
        escrow.claimSettled(ids);
        _submit(leaves, ROOT_A, _proveBatch(leaves, ROOT_A));
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowNotProvider.selector, ids[0], provider2));
        vm.prank(provider2);
        escrow.claimSettled(ids);
    }

    /// A provider contract paid in a token with a receive hook re-enters `claimSettled` with the
    /// same ids while being paid: every task is already marked claimed (checks-effects-interactions),
    /// so the re-entry reverts and the provider is paid once. TGRID has no hook; this runs the
    /// escrow and Staking code against a hooked token to show the ordering holds anyway.
    function test_RevertWhen_claimReentersFromTokenHook() public {
        HookedToken hooked = new HookedToken(1_000_000e18);
        Staking st = new Staking(address(this), IERC20(address(hooked)), address(this), 100e18, 7 days, 5_000, 5_000);
        TaskEscrow es = new TaskEscrow(
            address(this),
            IERC20(address(hooked)),
            st,
            IModelRegistry(address(registry)),
            address(this),
            10_000,
            0,
            100,
            10 minutes,
            30 days
        );
        st.bindEscrow(address(es));
        es.bindSettlement(address(this)); // this test plays Settlement

        ClaimReentrant attacker = new ClaimReentrant(es, st, hooked);
        assertTrue(hooked.transfer(address(attacker), 1_000e18));
        attacker.stake(1_000e18);
        hooked.approve(address(es), type(uint256).max);
        TaskLeaf[] memory leaves = new TaskLeaf[](2);
        bytes32[] memory ids = new bytes32[](2);
        for (uint256 i = 0; i < 2; ++i) {
            bytes32 input = keccak256(abi.encode("hooked input", i));
            ids[i] = es.postTask(MODEL, input, 100e18, 0, block.timestamp + 1 days);
            attacker.accept(ids[i]);
            leaves[i] = TaskLeaf({
                taskId: ids[i],
                modelId: MODEL,
                inputCommitment: input,
                outputCommitment: OUTPUT,
                provider: address(attacker)
            });
        }
        es.settleTasks(leaves);

        (uint256 paid, uint256 released) = attacker.claim(ids);
        assertEq(paid, 2 * 99e18);
        assertEq(released, 2 * 100e18);
        assertEq(attacker.reentryAttempts(), 1);
        assertFalse(attacker.reentrySucceeded());
        assertEq(
            attacker.reentryRevertData(),
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowTaskAlreadyClaimed.selector, ids[0])
        );
        assertEq(hooked.balanceOf(address(attacker)), paid);
        assertEq(hooked.balanceOf(address(es)), es.accruedFees());
        assertEq(st.account(address(attacker)).tasksSettled, 2);
        assertEq(st.account(address(attacker)).locked, 0);
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
