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
    address public immutable governance; // owner of the escrow's parameters (the timelock)

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
    uint256 public ghostUnclaimedPay; // sum of the pay fixed at settlement of Settled, unclaimed tasks
    uint256 public ghostFeesAccrued; // fees accrued by settlements, minus fees swept
    mapping(bytes32 taskId => uint256) public ghostPayouts; // settle, cancel or expire of a task
    mapping(bytes32 taskId => uint256) public ghostClaims; // claims of a settled task
    mapping(bytes32 taskId => uint256) internal _ghostPay; // pay fixed at settlement
    uint256 public ghostDoublePayouts;
    uint256 public ghostDoubleClaims; // a task paid to its provider twice, or a bad claim accepted
    uint256 public ghostWrongPay; // a claim paying other than the pay fixed at settlement
    uint256 public ghostClaimed; // tasks claimed
    uint256 public ghostFeeChanges;
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
        address governance_,
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
        governance = governance_;
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

    /// Claims up to `maxCount` claimable tasks of one provider (scanning from `startSeed`). One
    /// call in eight (`mode < 32`) repeats a task and one in eight (`32 <= mode < 64`) adds a task
    /// the provider may not claim (another provider's settled task, or any task that is not
    /// Settled): such a claim must be rejected as a whole.
    function claimSettled(uint256 actorSeed, uint256 startSeed, uint256 maxCount, uint8 mode) external {
        address p = providers[actorSeed % providers.length];
        uint256 len = taskIds.length;
        if (len == 0) return;
        maxCount = bound(maxCount, 1, 12);
        bytes32[] memory buf = new bytes32[](maxCount + 1);
        uint256 n;
        uint256 expectedPay;
        bytes32 intruder;
        for (uint256 k = 0; k < len; ++k) {
            bytes32 id = taskIds[(startSeed % len + k) % len];
            (bool ok, uint256 pay,) = escrow.claimable(id);
            if (ok && escrow.task(id).provider == p) {
                if (n < maxCount) {
                    buf[n++] = id;
                    expectedPay += pay;
                }
            } else if (intruder == bytes32(0)) {
                intruder = id;
            }
        }
        bool bad = mode < 64;
        if (mode < 32 && n != 0) {
            buf[n++] = buf[0];
        } else if (bad && intruder != bytes32(0)) {
            buf[n++] = intruder;
        } else {
            bad = false;
        }
        if (n == 0) return;
        bytes32[] memory ids = new bytes32[](n);
        for (uint256 i = 0; i < n; ++i) {
            ids[i] = buf[i];
        }
        uint256 before = token.balanceOf(p);
        vm.prank(p);
        try escrow.claimSettled(ids) returns (uint256 paid, uint256) {
            if (bad) ghostDoubleClaims++; // must never succeed
            if (paid != expectedPay || token.balanceOf(p) != before + paid) ghostWrongPay++;
            for (uint256 i = 0; i < n; ++i) {
                bytes32 id = ids[i];
                if (++ghostClaims[id] > 1) ghostDoubleClaims++;
                ghostUnclaimedPay -= _ghostPay[id];
            }
            ghostClaimed += n;
            calls["claimSettled"]++;
        } catch {
            if (!bad) ghostWrongPay++; // a claim of the provider's own claimable tasks must succeed
        }
    }

    /// Governance changes the protocol fee (between settlements and claims).
    function setProtocolFee(uint256 bps) external {
        bps = bound(bps, 0, escrow.MAX_PROTOCOL_FEE_BPS());
        vm.prank(governance);
        escrow.setProtocolFee(bps);
        ghostFeeChanges++;
        calls["setProtocolFee"]++;
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
            bytes32 candidate = taskIds[(taskSeed % len + k) % len];
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
            bytes32 id = taskIds[(startSeed % len + k) % len];
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
        uint256 feeBps = escrow.protocolFeeBps();
        vm.prank(sequencer);
        try settlement.submitBatch(leaves, root, proof) {
            uint256 unique = repeatOne ? n - 1 : n;
            for (uint256 i = 0; i < unique; ++i) {
                bytes32 id = leaves[i].taskId;
                ghostPayouts[id]++;
                if (ghostPayouts[id] > 1) ghostDoublePayouts++;
                uint256 reward = escrow.task(id).reward;
                uint256 fee = reward * feeBps / 10_000;
                _ghostPay[id] = reward - fee;
                ghostUnclaimedPay += reward - fee;
                ghostFeesAccrued += fee;
            }
            if (repeatOne) ghostDoublePayouts++; // a batch repeating a task must never settle
            ghostOpenRewards -= rewards;
            ghostSettled += unique;
            calls["settleBatch"]++;
        } catch {}
    }

    function sweepFees() external {
        ghostFeesAccrued -= escrow.sweepFees();
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
