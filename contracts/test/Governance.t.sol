// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {IAccessControl} from "@openzeppelin/contracts/access/IAccessControl.sol";
import {IGovernor} from "@openzeppelin/contracts/governance/IGovernor.sol";
import {TimelockController} from "@openzeppelin/contracts/governance/TimelockController.sol";
import {IVotes} from "@openzeppelin/contracts/governance/utils/IVotes.sol";

import {MarketTest} from "./market/MarketTest.sol";
import {TGridGovernor} from "../governance/TGridGovernor.sol";
import {TGridTimelock} from "../governance/TGridTimelock.sol";
import {IModelRegistry} from "../interfaces/IModelRegistry.sol";
import {ISettleBatch} from "../interfaces/market/ISettleBatch.sol";
import {ITaskMarket} from "../interfaces/market/ITaskMarket.sol";
import {Order} from "../libraries/OrderLib.sol";

/// @notice Full Governor + TimelockController flows with the shipped defaults (no overrides):
/// propose, vote, queue, execute; the proposals change the market's parameters and the registry,
/// and a batch settles under the registry root the DAO set. Borrowed votes do not count, and no
/// proposal can push a governance setting out of its bounds.
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

    /// @dev Passes and queues a proposal, checks that the timelock delay holds, and waits it out.
    function _passAndQueue(address[] memory targets, bytes[] memory calls, string memory description)
        internal
        returns (uint256 id, uint256[] memory values, bytes32 descriptionHash)
    {
        (id, values) = _propose(targets, calls, description);
        assertEq(uint8(governor.state(id)), uint8(IGovernor.ProposalState.Pending));
        skip(governor.votingDelay() + 1);
        assertEq(uint8(governor.state(id)), uint8(IGovernor.ProposalState.Active));
        vm.prank(voter);
        governor.castVote(id, 1); // for
        skip(governor.votingPeriod());
        assertEq(uint8(governor.state(id)), uint8(IGovernor.ProposalState.Succeeded));
        descriptionHash = keccak256(bytes(description));
        governor.queue(targets, values, calls, descriptionHash);
        assertEq(uint8(governor.state(id)), uint8(IGovernor.ProposalState.Queued));

        // The timelock delay is enforced.
        bytes32 salt = bytes20(address(governor)) ^ descriptionHash;
        bytes32 operation = timelock.hashOperationBatch(targets, values, calls, 0, salt);
        vm.expectRevert(
            abi.encodeWithSelector(
                TimelockController.TimelockUnexpectedOperationState.selector,
                operation,
                bytes32(1 << uint8(TimelockController.OperationState.Ready))
            )
        );
        governor.execute(targets, values, calls, descriptionHash);
        skip(timelock.getMinDelay());
    }

    function _passAndExecute(address[] memory targets, bytes[] memory calls, string memory description) internal {
        (uint256 id, uint256[] memory values, bytes32 descriptionHash) = _passAndQueue(targets, calls, description);
        governor.execute(targets, values, calls, descriptionHash);
        assertEq(uint8(governor.state(id)), uint8(IGovernor.ProposalState.Executed));
    }

    /// @dev Passes a proposal whose execution must revert with `err` (a bound the vote cannot move).
    function _passAndFailExecution(address target, bytes memory call, string memory description, bytes memory err)
        internal
    {
        address[] memory targets = new address[](1);
        bytes[] memory calls = new bytes[](1);
        targets[0] = target;
        calls[0] = call;
        (, uint256[] memory values, bytes32 descriptionHash) = _passAndQueue(targets, calls, description);
        vm.expectRevert(err);
        governor.execute(targets, values, calls, descriptionHash);
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
        calls[0] = abi.encodeWithSignature("setVotingPeriod(uint32)", uint32(5 days));
        _passAndExecute(targets, calls, "TGIP-3: longer voting period");
        assertEq(governor.votingPeriod(), 5 days);
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
        vm.expectRevert(
            abi.encodeWithSelector(
                IGovernor.GovernorUnexpectedProposalState.selector,
                id,
                IGovernor.ProposalState.Defeated,
                bytes32(1 << uint8(IGovernor.ProposalState.Succeeded))
            )
        );
        governor.queue(targets, values, calls, keccak256(bytes(description)));
        assertEq(market.parameters().protocolFeeBps, 100);
        assertEq(market.parameters().settlerShareBps, 2_000);
    }

    function test_RevertWhen_parameterChangedOutsideGovernance() public {
        // Nobody but the timelock owns parameters; the deployer kept no role.
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, address(this)));
        market.setFees(0, 0);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, address(this)));
        registry.setRegistryRoot(ROOT_B);
        assertFalse(timelock.hasRole(timelock.DEFAULT_ADMIN_ROLE(), address(deployer)));
        assertTrue(timelock.hasRole(timelock.PROPOSER_ROLE(), address(governor)));
        assertTrue(timelock.hasRole(timelock.EXECUTOR_ROLE(), address(0)));
        // Proposing directly to the timelock is reserved to the Governor.
        vm.expectRevert(
            abi.encodeWithSelector(
                IAccessControl.AccessControlUnauthorizedAccount.selector, voter, timelock.PROPOSER_ROLE()
            )
        );
        vm.prank(voter);
        timelock.schedule(address(market), 0, abi.encodeCall(ITaskMarket.setFees, (0, 0)), 0, 0, 8 days);
    }

    function test_clock_isTimestamp() public view {
        assertEq(governor.clock(), block.timestamp);
        assertEq(governor.CLOCK_MODE(), "mode=timestamp");
        assertEq(token.CLOCK_MODE(), "mode=timestamp");
        assertEq(governor.quorum(block.timestamp - 1), token.TOTAL_SUPPLY() * 4 / 100);
    }

    /// The shipped defaults are those docs/contracts.md gives, and within the bounds.
    function test_shippedDefaults() public view {
        assertEq(governor.votingDelay(), 1 days);
        assertEq(governor.votingPeriod(), 3 days);
        assertEq(governor.proposalThreshold(), 1_000_000e18);
        assertEq(governor.quorumNumerator(), 4);
        assertEq(timelock.getMinDelay(), 8 days);
        assertGe(timelock.getMinDelay(), market.parameters().unbondingDelay, "stakers can leave before a change");
        assertEq(governor.MAX_PROPOSAL_THRESHOLD(), token.TOTAL_SUPPLY() / 100);
    }

    /// Tokens borrowed for a block (a flash loan) neither propose nor vote: voting power is read
    /// at the snapshot taken a day after the proposal, and the proposer's one block before it.
    function test_flashLoanedVotesDoNotCount() public {
        address attacker = makeAddr("attacker");
        address[] memory targets = new address[](1);
        bytes[] memory calls = new bytes[](1);
        targets[0] = address(market);
        calls[0] = abi.encodeCall(ITaskMarket.setFees, (2_000, 10_000));
        string memory description = "TGIP-9: all fees to the settler";

        // Borrow half the supply, delegate and propose in the same block: no votes yet.
        assertTrue(token.transfer(attacker, 500_000_000e18));
        vm.prank(attacker);
        token.delegate(attacker);
        uint256[] memory values = new uint256[](1);
        vm.expectRevert(
            abi.encodeWithSelector(
                IGovernor.GovernorInsufficientProposerVotes.selector, attacker, 0, governor.proposalThreshold()
            )
        );
        vm.prank(attacker);
        governor.propose(targets, values, calls, description);
        vm.prank(attacker);
        assertTrue(token.transfer(address(this), 500_000_000e18)); // repaid in the same block

        // A proposal by the honest voter; the attacker borrows again once voting is open.
        (uint256 id,) = _propose(targets, calls, description);
        skip(governor.votingDelay() + 1);
        assertTrue(token.transfer(attacker, 500_000_000e18));
        vm.prank(attacker);
        uint256 weight = governor.castVote(id, 1);
        assertEq(weight, 0, "borrowed after the snapshot: no weight");
        vm.prank(attacker);
        assertTrue(token.transfer(address(this), 500_000_000e18));
        skip(governor.votingPeriod());
        (, uint256 forVotes,) = governor.proposalVotes(id);
        assertEq(forVotes, 0);
        assertEq(uint8(governor.state(id)), uint8(IGovernor.ProposalState.Defeated), "below quorum");
    }

    /// No vote moves a governance setting out of its bounds: too short a delay (borrowed votes),
    /// an unreachable threshold or quorum, or a timelock long enough to freeze governance.
    function test_RevertWhen_proposalSetsGovernanceOutOfBounds() public {
        bytes4 sel = TGridGovernor.TGridGovernorSettingOutOfBounds.selector;
        _passAndFailExecution(
            address(governor),
            abi.encodeWithSignature("setVotingDelay(uint48)", uint48(1)),
            "TGIP-10: vote at once",
            abi.encodeWithSelector(sel, "votingDelay", 1, 1 days, 14 days)
        );
        _passAndFailExecution(
            address(governor),
            abi.encodeWithSignature("setVotingPeriod(uint32)", uint32(1 hours)),
            "TGIP-11: one-hour votes",
            abi.encodeWithSelector(sel, "votingPeriod", 1 hours, 2 days, 30 days)
        );
        _passAndFailExecution(
            address(governor),
            abi.encodeWithSignature("setProposalThreshold(uint256)", token.TOTAL_SUPPLY() + 1),
            "TGIP-12: nobody may propose",
            abi.encodeWithSelector(sel, "proposalThreshold", token.TOTAL_SUPPLY() + 1, 1e18, 10_000_000e18)
        );
        _passAndFailExecution(
            address(governor),
            abi.encodeWithSignature("setProposalThreshold(uint256)", 0),
            "TGIP-13: anyone may propose",
            abi.encodeWithSelector(sel, "proposalThreshold", 0, 1e18, 10_000_000e18)
        );
        _passAndFailExecution(
            address(governor),
            abi.encodeWithSignature("updateQuorumNumerator(uint256)", 100),
            "TGIP-14: unanimity",
            abi.encodeWithSelector(sel, "quorumPercent", 100, 2, 20)
        );
        _passAndFailExecution(
            address(timelock),
            abi.encodeCall(TimelockController.updateDelay, (365 days)),
            "TGIP-15: freeze",
            abi.encodeWithSelector(TGridTimelock.TGridTimelockDelayOutOfBounds.selector, 365 days)
        );
        _passAndFailExecution(
            address(timelock),
            abi.encodeCall(TimelockController.updateDelay, (1 hours)),
            "TGIP-16: act before stakers can leave",
            abi.encodeWithSelector(TGridTimelock.TGridTimelockDelayOutOfBounds.selector, 1 hours)
        );
        assertEq(governor.votingDelay(), 1 days);
        assertEq(timelock.getMinDelay(), 8 days);
    }

    /// In-bounds changes pass, the timelock's and the quorum's included.
    function test_governance_updatesBoundedSettings() public {
        address[] memory targets = new address[](2);
        bytes[] memory calls = new bytes[](2);
        targets[0] = address(timelock);
        calls[0] = abi.encodeCall(TimelockController.updateDelay, (10 days));
        targets[1] = address(governor);
        calls[1] = abi.encodeWithSignature("updateQuorumNumerator(uint256)", 10);
        _passAndExecute(targets, calls, "TGIP-17: longer timelock, higher quorum");
        assertEq(timelock.getMinDelay(), 10 days);
        assertEq(governor.quorumNumerator(), 10);
    }

    function test_RevertWhen_constructedOutOfBounds() public {
        bytes4 sel = TGridGovernor.TGridGovernorSettingOutOfBounds.selector;
        IVotes votes = IVotes(address(token));
        vm.expectRevert(abi.encodeWithSelector(sel, "votingDelay", 15 days, 1 days, 14 days));
        new TGridGovernor(votes, timelock, 15 days, 3 days, 1e18, 4);
        vm.expectRevert(abi.encodeWithSelector(sel, "votingPeriod", 31 days, 2 days, 30 days));
        new TGridGovernor(votes, timelock, 1 days, 31 days, 1e18, 4);
        vm.expectRevert(abi.encodeWithSelector(sel, "quorumPercent", 1, 2, 20));
        new TGridGovernor(votes, timelock, 1 days, 3 days, 1e18, 1);
        address[] memory none = new address[](0);
        vm.expectRevert(abi.encodeWithSelector(TGridTimelock.TGridTimelockDelayOutOfBounds.selector, 0));
        new TGridTimelock(0, none, none, address(0));
        // Only the timelock itself changes its delay.
        vm.expectRevert(abi.encodeWithSelector(TimelockController.TimelockUnauthorizedCaller.selector, voter));
        vm.prank(voter);
        timelock.updateDelay(2 days);
    }
}
