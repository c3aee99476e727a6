// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {CommonBase} from "forge-std/Base.sol";
import {StdCheats} from "forge-std/StdCheats.sol";
import {StdUtils} from "forge-std/StdUtils.sol";

import {TGRID} from "../../token/TGRID.sol";
import {Staking} from "../../staking/Staking.sol";
import {TaskEscrow} from "../../escrow/TaskEscrow.sol";
import {Settlement} from "../../settlement/Settlement.sol";
import {ITaskEscrow} from "../../interfaces/ITaskEscrow.sol";
import {IStaking} from "../../interfaces/IStaking.sol";
import {TaskLeaf} from "../../libraries/TaskLeaf.sol";
import {PublicInputBoundVerifier} from "../mocks/VerifierMocks.sol";

/// @notice Drives the protocol with bounded random actions and keeps ghost accounting.
contract ProtocolHandler is CommonBase, StdCheats, StdUtils {
    TGRID public immutable token;
    Staking public immutable staking;
    TaskEscrow public immutable escrow;
    Settlement public immutable settlement;
    PublicInputBoundVerifier public immutable verifier;
    bytes32 public immutable model;
    bytes32 public immutable root;
    address public immutable sequencer;

    address[] public posters;
    address[] public providers;

    struct Meta {
        bytes32 input;
        address provider;
    }

    bytes32[] public taskIds;
    mapping(bytes32 taskId => Meta) internal _meta;

    // Ghost variables.
    uint256 public ghostOpenRewards; // sum of rewards of Posted + Accepted tasks
    mapping(bytes32 taskId => uint256) public ghostPayouts; // settle, cancel or expire of a task
    uint256 public ghostDoublePayouts;
    uint256 public ghostEarlyWithdrawals; // withdrawals before readyAt or above the unbonding balance
    uint256 public ghostWithdrawn;
    uint256 public ghostSettled;
    uint256 public ghostExpired;
    mapping(bytes32 => uint256) public calls;

    constructor(
        TGRID token_,
        Staking staking_,
        TaskEscrow escrow_,
        Settlement settlement_,
        PublicInputBoundVerifier verifier_,
        bytes32 model_,
        bytes32 root_,
        address sequencer_,
        address[] memory posters_,
        address[] memory providers_
    ) {
        token = token_;
        staking = staking_;
        escrow = escrow_;
        settlement = settlement_;
        verifier = verifier_;
        model = model_;
        root = root_;
        sequencer = sequencer_;
        posters = posters_;
        providers = providers_;
    }

    function taskCount() external view returns (uint256) {
        return taskIds.length;
    }

    function providerCount() external view returns (uint256) {
        return providers.length;
    }

    // ------------------------------------------------------------------ actions

    function stake(uint256 actorSeed, uint256 amount) external {
        address p = providers[actorSeed % providers.length];
        amount = bound(amount, 1, token.balanceOf(p) == 0 ? 1 : token.balanceOf(p));
        if (token.balanceOf(p) == 0) return;
        vm.prank(p);
        staking.stake(amount);
        calls["stake"]++;
    }

    function requestUnbonding(uint256 actorSeed, uint256 amount) external {
        address p = providers[actorSeed % providers.length];
        uint256 free = staking.freeStake(p);
        if (free == 0) return;
        amount = bound(amount, 1, free);
        vm.prank(p);
        staking.requestUnbonding(amount);
        calls["requestUnbonding"]++;
    }

    function withdraw(uint256 actorSeed) external {
        address p = providers[actorSeed % providers.length];
        IStaking.ProviderAccount memory before = staking.account(p);
        vm.prank(p);
        try staking.withdraw() returns (uint256 amount) {
            if (block.timestamp < before.unbondingReadyAt || amount > before.unbonding) ghostEarlyWithdrawals++;
            ghostWithdrawn += amount;
            calls["withdraw"]++;
        } catch {}
    }

    function claimEarnings(uint256 actorSeed) external {
        address p = providers[actorSeed % providers.length];
        if (staking.account(p).earnings == 0) return;
        vm.prank(p);
        staking.claimEarnings();
        calls["claimEarnings"]++;
    }

    function postTask(uint256 posterSeed, uint256 payment, uint256 tip, uint256 delay) external {
        address a = posters[posterSeed % posters.length];
        payment = bound(payment, 1, 2_000e18);
        tip = bound(tip, 0, 200e18);
        if (token.balanceOf(a) < payment + tip) return;
        delay = bound(delay, 10 minutes, 3 days);
        bytes32 input = keccak256(abi.encode(taskIds.length, "input"));
        vm.prank(a);
        bytes32 id = escrow.postTask(model, input, payment, tip, block.timestamp + delay);
        taskIds.push(id);
        _meta[id].input = input;
        ghostOpenRewards += payment + tip;
        calls["postTask"]++;
    }

    /// Accepts the first Posted task at or after `taskSeed` (any task if none is Posted, which
    /// exercises the status checks).
    function acceptTask(uint256 providerSeed, uint256 taskSeed) external {
        uint256 len = taskIds.length;
        if (len == 0) return;
        bytes32 id = taskIds[taskSeed % len];
        for (uint256 k = 0; k < len; ++k) {
            bytes32 candidate = taskIds[(taskSeed + k) % len];
            if (escrow.task(candidate).status == ITaskEscrow.TaskStatus.Posted) {
                id = candidate;
                break;
            }
        }
        address p = providers[providerSeed % providers.length];
        vm.prank(p);
        try escrow.acceptTask(id) {
            _meta[id].provider = p;
            calls["acceptTask"]++;
        } catch {}
    }

    function cancelTask(uint256 taskSeed) external {
        if (taskIds.length == 0) return;
        bytes32 id = taskIds[taskSeed % taskIds.length];
        ITaskEscrow.Task memory t = escrow.task(id);
        vm.prank(t.poster);
        try escrow.cancelTask(id) {
            _paid(id, t.reward);
            calls["cancelTask"]++;
        } catch {}
    }

    function expireTask(uint256 taskSeed) external {
        if (taskIds.length == 0) return;
        bytes32 id = taskIds[taskSeed % taskIds.length];
        ITaskEscrow.Task memory t = escrow.task(id);
        try escrow.expireTask(id) {
            _paid(id, t.reward);
            ghostExpired++;
            calls["expireTask"]++;
        } catch {}
    }

    /// Settles up to `maxCount` accepted, unexpired tasks (scanning from `startSeed`); one call in
    /// eight (`mode < 32`) repeats a task, to check that such a batch is rejected as a whole.
    function settleBatch(uint256 startSeed, uint256 maxCount, uint8 mode) external {
        bool repeatOne = mode < 32;
        uint256 len = taskIds.length;
        if (len == 0) return;
        maxCount = bound(maxCount, 1, 12);
        TaskLeaf[] memory buf = new TaskLeaf[](maxCount + 1);
        uint256 rewards;
        uint256 n;
        for (uint256 k = 0; k < len && n < maxCount; ++k) {
            bytes32 id = taskIds[(startSeed + k) % len];
            ITaskEscrow.Task memory t = escrow.task(id);
            if (t.status != ITaskEscrow.TaskStatus.Accepted || block.timestamp > t.deadline) continue;
            buf[n++] = TaskLeaf({
                taskId: id,
                modelId: model,
                inputCommitment: _meta[id].input,
                outputCommitment: keccak256(abi.encode(id, "output")),
                provider: t.provider
            });
            rewards += t.reward;
        }
        if (n == 0) return;
        if (repeatOne) buf[n++] = buf[0];
        TaskLeaf[] memory leaves = new TaskLeaf[](n);
        for (uint256 i = 0; i < n; ++i) {
            leaves[i] = buf[i];
        }
        (, uint256 publicInput) = settlement.computePublicInput(leaves, root);
        uint256[8] memory proof = verifier.proofFor(publicInput);
        vm.prank(sequencer);
        try settlement.submitBatch(leaves, root, proof) {
            uint256 unique = repeatOne ? n - 1 : n;
            for (uint256 i = 0; i < unique; ++i) {
                ghostPayouts[leaves[i].taskId]++;
                if (ghostPayouts[leaves[i].taskId] > 1) ghostDoublePayouts++;
            }
            if (repeatOne) ghostDoublePayouts++; // a batch repeating a task must never settle
            ghostOpenRewards -= rewards;
            ghostSettled += unique;
            calls["settleBatch"]++;
        } catch {}
    }

    function sweepFees() external {
        escrow.sweepFees();
        calls["sweepFees"]++;
    }

    function warp(uint256 seconds_) external {
        skip(bound(seconds_, 1, 12 hours));
        calls["warp"]++;
    }

    function _paid(bytes32 id, uint256 reward) internal {
        ghostPayouts[id]++;
        if (ghostPayouts[id] > 1) ghostDoublePayouts++;
        ghostOpenRewards -= reward;
    }
}
