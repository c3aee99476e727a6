// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IGovernor} from "@openzeppelin/contracts/governance/IGovernor.sol";
import {TimelockController} from "@openzeppelin/contracts/governance/TimelockController.sol";

import {TGridTest} from "./utils/TGridTest.sol";
import {ITaskEscrow} from "../interfaces/ITaskEscrow.sol";
import {IStaking} from "../interfaces/IStaking.sol";
import {IModelRegistry} from "../interfaces/IModelRegistry.sol";
import {ISettlement} from "../interfaces/ISettlement.sol";
import {TaskLeaf} from "../libraries/TaskLeaf.sol";

/// @notice Full Governor + TimelockController flows: propose, vote, queue, execute.
contract GovernanceTest is TGridTest {
    address internal voter = makeAddr("voter");

    function setUp() public override {
        super.setUp();
        // The holder (this contract) gives a voter 10% of the supply; both delegate to themselves.
        assertTrue(token.transfer(voter, 100_000_000e18));
        vm.prank(voter);
        token.delegate(voter);
        skip(1);
    }

    function _propose(address[] memory targets, bytes[] memory calls, string memory description)
        internal
        returns (uint256 id, uint256[] memory values)
    {
        values = new uint256[](targets.length);
        vm.prank(voter);
        id = governor.propose(targets, values, calls, description);
    }

    function _passAndExecute(address[] memory targets, bytes[] memory calls, string memory description) internal {
        (uint256 id, uint256[] memory values) = _propose(targets, calls, description);
        assertEq(uint8(governor.state(id)), uint8(IGovernor.ProposalState.Pending));
        skip(governor.votingDelay() + 1);
        assertEq(uint8(governor.state(id)), uint8(IGovernor.ProposalState.Active));
        vm.prank(voter);
        governor.castVote(id, 1); // for
        skip(governor.votingPeriod());
        assertEq(uint8(governor.state(id)), uint8(IGovernor.ProposalState.Succeeded));
        bytes32 descriptionHash = keccak256(bytes(description));
        governor.queue(targets, values, calls, descriptionHash);
        assertEq(uint8(governor.state(id)), uint8(IGovernor.ProposalState.Queued));

        // The timelock delay is enforced.
        vm.expectRevert();
        governor.execute(targets, values, calls, descriptionHash);
        skip(timelock.getMinDelay());
        governor.execute(targets, values, calls, descriptionHash);
        assertEq(uint8(governor.state(id)), uint8(IGovernor.ProposalState.Executed));
    }

    function test_governance_changesParametersThroughTimelock() public {
        address[] memory targets = new address[](5);
        bytes[] memory calls = new bytes[](5);
        targets[0] = address(escrow);
        calls[0] = abi.encodeCall(ITaskEscrow.setProtocolFee, (250));
        targets[1] = address(staking);
        calls[1] = abi.encodeCall(IStaking.setSlashParameters, (2_000, 8_000));
        targets[2] = address(settlement);
        calls[2] = abi.encodeCall(ISettlement.setMaxBatchSize, (512));
        targets[3] = address(settlement);
        calls[3] = abi.encodeCall(ISettlement.setSequencer, (stranger, true));
        targets[4] = address(escrow);
        calls[4] = abi.encodeCall(ITaskEscrow.setDeadlineBounds, (5 minutes, 7 days));
        _passAndExecute(targets, calls, "TGIP-1: fees, slashing, batch size, sequencer, deadlines");

        assertEq(escrow.protocolFeeBps(), 250);
        assertEq(staking.slashBps(), 2_000);
        assertEq(staking.slashPosterShareBps(), 8_000);
        assertEq(settlement.maxBatchSize(), 512);
        assertTrue(settlement.isSequencer(stranger));
        (uint256 lo, uint256 hi) = escrow.deadlineBounds();
        assertEq(lo, 5 minutes);
        assertEq(hi, 7 days);
    }

    function test_governance_registersModelAndChangesRoot_thenBatchSettlesUnderNewRoot() public {
        bytes32 digest2 = keccak256("normalized circuit digits v1");
        address[] memory targets = new address[](1);
        bytes[] memory calls = new bytes[](1);
        targets[0] = address(registry);
        calls[0] = abi.encodeCall(IModelRegistry.registerModel, (MODEL2, digest2, "ipfs://digits", ROOT_B));
        _passAndExecute(targets, calls, "TGIP-2: register the digits model");

        assertEq(registry.registryRoot(), ROOT_B);
        assertTrue(registry.isModelActive(MODEL2));
        assertEq(registry.modelCount(), 2);

        // A task for the new model, proven against the new root, settles.
        _stake(provider, STAKE);
        bytes32 id = _post(poster, MODEL2, INPUT, PAYMENT, 0, block.timestamp + 1 days);
        _accept(provider, id);
        TaskLeaf[] memory leaves = _one(
            TaskLeaf({
                taskId: id, modelId: MODEL2, inputCommitment: INPUT, outputCommitment: OUTPUT, provider: provider
            })
        );
        uint256[8] memory proof = _proveBatch(leaves, ROOT_B);
        _submit(leaves, ROOT_B, proof);
        assertEq(uint8(_status(id)), uint8(ITaskEscrow.TaskStatus.Settled));
    }

    function test_governance_updatesItsOwnSettings() public {
        address[] memory targets = new address[](1);
        bytes[] memory calls = new bytes[](1);
        targets[0] = address(governor);
        calls[0] = abi.encodeWithSignature("setVotingPeriod(uint32)", uint32(3 days));
        _passAndExecute(targets, calls, "TGIP-3: shorter voting period");
        assertEq(governor.votingPeriod(), 3 days);
    }

    function test_RevertWhen_queueingDefeatedProposal() public {
        address[] memory targets = new address[](1);
        bytes[] memory calls = new bytes[](1);
        targets[0] = address(escrow);
        calls[0] = abi.encodeCall(ITaskEscrow.setProtocolFee, (2_000));
        string memory description = "TGIP-4: max fee";
        (uint256 id, uint256[] memory values) = _propose(targets, calls, description);
        skip(governor.votingDelay() + 1);
        vm.prank(voter);
        governor.castVote(id, 0); // against
        skip(governor.votingPeriod());
        assertEq(uint8(governor.state(id)), uint8(IGovernor.ProposalState.Defeated));
        vm.expectRevert();
        governor.queue(targets, values, calls, keccak256(bytes(description)));
        assertEq(escrow.protocolFeeBps(), 100);
    }

    function test_RevertWhen_parameterChangedOutsideGovernance() public {
        // Nobody but the timelock owns parameters; the deployer kept no role.
        vm.expectRevert();
        escrow.setProtocolFee(0);
        assertFalse(timelock.hasRole(timelock.DEFAULT_ADMIN_ROLE(), address(deployer)));
        assertTrue(timelock.hasRole(timelock.PROPOSER_ROLE(), address(governor)));
        assertTrue(timelock.hasRole(timelock.EXECUTOR_ROLE(), address(0)));
        // Proposing directly to the timelock is reserved to the Governor.
        vm.expectRevert();
        vm.prank(voter);
        timelock.schedule(address(escrow), 0, abi.encodeCall(ITaskEscrow.setProtocolFee, (0)), 0, 0, 2 days);
    }

    function test_clock_isTimestamp() public view {
        assertEq(governor.clock(), block.timestamp);
        assertEq(governor.CLOCK_MODE(), "mode=timestamp");
        assertEq(token.CLOCK_MODE(), "mode=timestamp");
        assertEq(governor.quorum(block.timestamp - 1), token.TOTAL_SUPPLY() * 4 / 100);
        TimelockController t = timelock;
        assertEq(t.getMinDelay(), 2 days);
    }
}
