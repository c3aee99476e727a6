// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Test} from "forge-std/Test.sol";
import {TimelockController} from "@openzeppelin/contracts/governance/TimelockController.sol";

import {Deploy} from "../../script/Deploy.s.sol";
import {TGRID} from "../../token/TGRID.sol";
import {TGridGovernor} from "../../governance/TGridGovernor.sol";
import {ModelRegistry} from "../../registry/ModelRegistry.sol";
import {Staking} from "../../staking/Staking.sol";
import {TaskEscrow} from "../../escrow/TaskEscrow.sol";
import {Settlement} from "../../settlement/Settlement.sol";
import {Groth16Verifier} from "../../verifier/Groth16Verifier.sol";
import {TaskMarket} from "../../market/TaskMarket.sol";
import {ITaskEscrow} from "../../interfaces/ITaskEscrow.sol";
import {TaskLeaf} from "../../libraries/TaskLeaf.sol";

/// @notice Shared fixture: the whole system deployed by the Deploy script's `deploy` (so the
/// tests also exercise the wiring), funded actors and helpers to post, accept and prove.
abstract contract TGridTest is Test {
    Deploy internal deployer;
    Deploy.Config internal cfg;
    TGRID internal token;
    TimelockController internal timelock;
    TGridGovernor internal governor;
    ModelRegistry internal registry;
    Staking internal staking;
    TaskEscrow internal escrow;
    Settlement internal settlement;
    Groth16Verifier internal verifier;
    TaskMarket internal market;

    address internal sequencer = makeAddr("sequencer");
    address internal poster = makeAddr("poster");
    address internal poster2 = makeAddr("poster2");
    address internal provider = makeAddr("provider");
    address internal provider2 = makeAddr("provider2");
    address internal stranger = makeAddr("stranger");

    bytes32 internal constant ROOT_A = keccak256("registry root A");
    bytes32 internal constant ROOT_B = keccak256("registry root B");
    bytes32 internal constant MODEL = keccak256("model lenet5 v1");
    bytes32 internal constant MODEL2 = keccak256("model digits v1");
    bytes32 internal constant DIGEST = keccak256("normalized circuit lenet5 v1");
    bytes32 internal constant INPUT = keccak256("input tensor 0");
    bytes32 internal constant OUTPUT = keccak256("output tensor 0");

    uint256 internal constant PAYMENT = 50e18;
    uint256 internal constant FEE_TIP = 5e18;
    uint256 internal constant STAKE = 10_000e18;

    function setUp() public virtual {
        deployer = new Deploy();
        cfg = deployer.defaultConfig(address(deployer));
        cfg.tokenHolder = address(this);
        cfg.sequencer = sequencer;
        cfg.timelockDelay = 2 days;
        cfg.votingDelay = 1 days;
        cfg.votingPeriod = 5 days;
        cfg.registryRoot = ROOT_A;
        cfg.devnetModelId = MODEL;
        cfg.devnetCircuitDigest = DIGEST;
        cfg.devnetModelUri = "ipfs://lenet5";
        // The one-constraint test circuit: the tests prove any public input with snarkjs.
        cfg.verifier = address(new Groth16Verifier());
        Deploy.Deployment memory d = deployer.deploy(cfg);
        token = d.token;
        timelock = d.timelock;
        governor = d.governor;
        registry = d.registry;
        staking = d.staking;
        escrow = d.escrow;
        settlement = d.settlement;
        verifier = Groth16Verifier(address(d.verifier));
        market = d.market;

        address[4] memory actors = [poster, poster2, provider, provider2];
        for (uint256 i = 0; i < actors.length; ++i) {
            assertTrue(token.transfer(actors[i], 1_000_000e18));
            vm.startPrank(actors[i]);
            token.approve(address(escrow), type(uint256).max);
            token.approve(address(staking), type(uint256).max);
            token.approve(address(market), type(uint256).max);
            vm.stopPrank();
        }
        vm.label(address(token), "TGRID");
        vm.label(address(timelock), "Timelock");
        vm.label(address(governor), "Governor");
        vm.label(address(registry), "ModelRegistry");
        vm.label(address(staking), "Staking");
        vm.label(address(escrow), "TaskEscrow");
        vm.label(address(settlement), "Settlement");
        vm.label(address(verifier), "Groth16Verifier");
        vm.label(address(market), "TaskMarket");
    }

    // ------------------------------------------------------------------ helpers

    function _stake(address who, uint256 amount) internal {
        vm.prank(who);
        staking.stake(amount);
    }

    function _post(address who) internal returns (bytes32) {
        return _post(who, MODEL, INPUT, PAYMENT, FEE_TIP, block.timestamp + 1 days);
    }

    function _post(address who, bytes32 modelId, bytes32 input, uint256 payment, uint256 tip, uint256 deadline)
        internal
        returns (bytes32 taskId)
    {
        vm.prank(who);
        taskId = escrow.postTask(modelId, input, payment, tip, deadline);
    }

    function _accept(address who, bytes32 taskId) internal {
        vm.prank(who);
        escrow.acceptTask(taskId);
    }

    /// @dev Posts `n` tasks by `poster` (input commitment varies) and has `prov` accept them.
    function _postAndAccept(address prov, uint256 n) internal returns (TaskLeaf[] memory leaves) {
        leaves = new TaskLeaf[](n);
        for (uint256 i = 0; i < n; ++i) {
            bytes32 input = keccak256(abi.encode("input", i));
            bytes32 id = _post(poster, MODEL, input, PAYMENT, FEE_TIP, block.timestamp + 1 days);
            _accept(prov, id);
            leaves[i] = TaskLeaf({
                taskId: id,
                modelId: MODEL,
                inputCommitment: input,
                outputCommitment: keccak256(abi.encode("output", i)),
                provider: prov
            });
        }
    }

    function _status(bytes32 taskId) internal view returns (ITaskEscrow.TaskStatus) {
        return escrow.task(taskId).status;
    }

    /// @dev Groth16 proof for `publicInput` from the devnet circuit, via snarkjs (FFI).
    function _prove(uint256 publicInput) internal returns (uint256[8] memory proof) {
        string[] memory cmd = new string[](3);
        cmd[0] = "node";
        cmd[1] = "scripts/foundry/groth16-prove.js";
        cmd[2] = vm.toString(publicInput);
        proof = abi.decode(vm.ffi(cmd), (uint256[8]));
    }

    /// @dev Proof for the batch `leaves` against `root`, as the sequencer would produce it.
    function _proveBatch(TaskLeaf[] memory leaves, bytes32 root) internal returns (uint256[8] memory) {
        (, uint256 publicInput) = settlement.computePublicInput(leaves, root);
        return _prove(publicInput);
    }

    function _submit(TaskLeaf[] memory leaves, bytes32 root, uint256[8] memory proof) internal {
        vm.prank(sequencer);
        settlement.submitBatch(leaves, root, proof);
    }

    function _one(TaskLeaf memory leaf) internal pure returns (TaskLeaf[] memory leaves) {
        leaves = new TaskLeaf[](1);
        leaves[0] = leaf;
    }
}
