// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IGovernor} from "@openzeppelin/contracts/governance/IGovernor.sol";
import {TimelockController} from "@openzeppelin/contracts/governance/TimelockController.sol";

import {MarketTest} from "./market/MarketTest.sol";
import {IModelRegistry} from "../interfaces/IModelRegistry.sol";
import {ISettleBatch} from "../interfaces/market/ISettleBatch.sol";
import {ITaskMarket} from "../interfaces/market/ITaskMarket.sol";
import {Order} from "../libraries/OrderLib.sol";

/// @notice Full Governor + TimelockController flows: propose, vote, queue, execute; the proposals
/// change the market's parameters and the registry, and a batch settles on the market under the
/// registry root the DAO set.
contract GovernanceTest is MarketTest {
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
        for (uint256 i = 0; i < targets.length; ++i) {
            targets[i] = address(market);
        }
        calls[0] = abi.encodeCall(ITaskMarket.setFees, (250, 3_000));
        calls[1] = abi.encodeCall(ITaskMarket.setMaxBatchSize, (512));
        calls[2] = abi.encodeCall(ITaskMarket.setSequencer, (stranger, true));
        calls[3] = abi.encodeCall(ITaskMarket.setSelfSettlementWindow, (2 hours));
        calls[4] = abi.encodeCall(ITaskMarket.setDelays, (3 days, 2 days, 4 days, 5 days));
        _passAndExecute(targets, calls, "TGIP-1: fees, batch size, sequencer, self-settlement window, delays");

        ITaskMarket.Parameters memory p = market.parameters();
        assertEq(p.protocolFeeBps, 250);
        assertEq(p.settlerShareBps, 3_000);
        assertEq(p.maxBatchSize, 512);
        assertTrue(market.isSequencer(stranger));
        assertTrue(market.isSequencer(sequencer));
        assertEq(p.selfSettlementWindow, 2 hours);
        assertEq(p.maxDeadlineDelay, 3 days);
        assertEq(p.disputeWindow, 2 days);
        assertEq(p.depositUnlockDelay, 4 days);
        assertEq(p.unbondingDelay, 5 days);
        // Untouched.
        assertEq(p.verifier, address(verifier));
        assertEq(p.minPayment, cfg.market.minPayment);
        assertEq(p.treasury, address(timelock));
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

        // An order for the new model, proven against the new root (real proof), settles.
        uint32 bookId = _openBook(poster, 1, BOOK_MAX);
        Order memory o = _order(poster, bookId, 0);
        o.modelId = MODEL2;
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) =
            _build(_items1(_item(o, provider)));
        uint256[8] memory proof = _proveMarketBatch(h, leaves, ROOT_B);
        vm.prank(sequencer);
        (,, uint256 paid) = market.settleBatch(h, leaves, ROOT_B, proof);
        assertEq(paid, 1);
        assertTrue(market.nonceUsed(poster, o.nonce));
        assertEq(market.earner(provider).earnings, PAYMENT - _fee(PAYMENT));
        assertEq(market.earner(provider).tasksSettled, 1);
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
        targets[0] = address(market);
        calls[0] = abi.encodeCall(ITaskMarket.setFees, (2_000, 2_000));
        string memory description = "TGIP-4: max fee";
        (uint256 id, uint256[] memory values) = _propose(targets, calls, description);
        skip(governor.votingDelay() + 1);
        vm.prank(voter);
        governor.castVote(id, 0); // against
        skip(governor.votingPeriod());
        assertEq(uint8(governor.state(id)), uint8(IGovernor.ProposalState.Defeated));
        vm.expectRevert();
        governor.queue(targets, values, calls, keccak256(bytes(description)));
        assertEq(market.parameters().protocolFeeBps, 100);
        assertEq(market.parameters().settlerShareBps, 2_000);
    }

    function test_RevertWhen_parameterChangedOutsideGovernance() public {
        // Nobody but the timelock owns parameters; the deployer kept no role.
        vm.expectRevert();
        market.setFees(0, 0);
        vm.expectRevert();
        registry.setRegistryRoot(ROOT_B);
        assertFalse(timelock.hasRole(timelock.DEFAULT_ADMIN_ROLE(), address(deployer)));
        assertTrue(timelock.hasRole(timelock.PROPOSER_ROLE(), address(governor)));
        assertTrue(timelock.hasRole(timelock.EXECUTOR_ROLE(), address(0)));
        // Proposing directly to the timelock is reserved to the Governor.
        vm.expectRevert();
        vm.prank(voter);
        timelock.schedule(address(market), 0, abi.encodeCall(ITaskMarket.setFees, (0, 0)), 0, 0, 2 days);
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
