// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Governor} from "@openzeppelin/contracts/governance/Governor.sol";
import {TimelockController} from "@openzeppelin/contracts/governance/TimelockController.sol";
import {GovernorCountingSimple} from "@openzeppelin/contracts/governance/extensions/GovernorCountingSimple.sol";
import {GovernorSettings} from "@openzeppelin/contracts/governance/extensions/GovernorSettings.sol";
import {GovernorTimelockControl} from "@openzeppelin/contracts/governance/extensions/GovernorTimelockControl.sol";
import {GovernorVotes} from "@openzeppelin/contracts/governance/extensions/GovernorVotes.sol";
import {
    GovernorVotesQuorumFraction
} from "@openzeppelin/contracts/governance/extensions/GovernorVotesQuorumFraction.sol";
import {IVotes} from "@openzeppelin/contracts/governance/utils/IVotes.sol";

/// @title TGridGovernor
/// @notice TGRID token governance. Proposals that pass are queued in and executed by the
/// TimelockController, which owns every protocol parameter (TaskMarket, ModelRegistry) and this
/// Governor's own settings.
/// @dev Standard OpenZeppelin 5.x composition. The clock is TGRID's (timestamp), so the voting
/// delay and period are in seconds. Every setting is bounded, at deployment and in every later
/// proposal, so that no vote can make governance capturable or stuck: a voting delay of at least
/// a day (votes are counted at the snapshot taken when voting starts, so tokens borrowed for one
/// block, or bought after the proposal is public, do not vote), a voting period long enough to
/// react, a proposal threshold above zero but reachable (at most 1 % of the supply), and a quorum
/// that a minority cannot reach alone nor an absent majority block for ever.
contract TGridGovernor is
    Governor,
    GovernorSettings,
    GovernorCountingSimple,
    GovernorVotes,
    GovernorVotesQuorumFraction,
    GovernorTimelockControl
{
    /// @notice Bounds of the voting delay, in seconds.
    uint256 public constant MIN_VOTING_DELAY = 1 days;
    uint256 public constant MAX_VOTING_DELAY = 14 days;
    /// @notice Bounds of the voting period, in seconds.
    uint256 public constant MIN_VOTING_PERIOD = 2 days;
    uint256 public constant MAX_VOTING_PERIOD = 30 days;
    /// @notice Bounds of the proposal threshold, in TGRID wei (1 token .. 1 % of the supply).
    uint256 public constant MIN_PROPOSAL_THRESHOLD = 1e18;
    uint256 public constant MAX_PROPOSAL_THRESHOLD = 10_000_000e18; // TGRID.TOTAL_SUPPLY / 100
    /// @notice Bounds of the quorum, in percent of the supply at the snapshot.
    uint256 public constant MIN_QUORUM_PERCENT = 2;
    uint256 public constant MAX_QUORUM_PERCENT = 20;

    /// @notice A governance setting outside its bounds was given.
    /// @param setting Which one ("votingDelay", "votingPeriod", "proposalThreshold", "quorumPercent").
    /// @param value The value given.
    /// @param min The lowest allowed value.
    /// @param max The highest allowed value.
    error TGridGovernorSettingOutOfBounds(string setting, uint256 value, uint256 min, uint256 max);

    /// @notice Deploys the Governor.
    /// @param token_ The votes token (TGRID).
    /// @param timelock_ The TimelockController that executes proposals.
    /// @param votingDelay_ Seconds between proposal and voting start.
    /// @param votingPeriod_ Seconds of voting.
    /// @param proposalThreshold_ Votes needed to propose.
    /// @param quorumPercent_ Quorum as a percentage of the supply at the vote's snapshot.
    constructor(
        IVotes token_,
        TimelockController timelock_,
        uint48 votingDelay_,
        uint32 votingPeriod_,
        uint256 proposalThreshold_,
        uint256 quorumPercent_
    )
        Governor("TensorGrid Governor")
        GovernorSettings(votingDelay_, votingPeriod_, proposalThreshold_)
        GovernorVotes(token_)
        GovernorVotesQuorumFraction(quorumPercent_)
        GovernorTimelockControl(timelock_)
    {}

    /// @dev Every way a setting changes (constructor and proposals) goes through these four.
    function _setVotingDelay(uint48 newVotingDelay) internal override {
        _checkBounds("votingDelay", newVotingDelay, MIN_VOTING_DELAY, MAX_VOTING_DELAY);
        super._setVotingDelay(newVotingDelay);
    }

    function _setVotingPeriod(uint32 newVotingPeriod) internal override {
        _checkBounds("votingPeriod", newVotingPeriod, MIN_VOTING_PERIOD, MAX_VOTING_PERIOD);
        super._setVotingPeriod(newVotingPeriod);
    }

    function _setProposalThreshold(uint256 newProposalThreshold) internal override {
        _checkBounds("proposalThreshold", newProposalThreshold, MIN_PROPOSAL_THRESHOLD, MAX_PROPOSAL_THRESHOLD);
        super._setProposalThreshold(newProposalThreshold);
    }

    function _updateQuorumNumerator(uint256 newQuorumNumerator) internal override {
        _checkBounds("quorumPercent", newQuorumNumerator, MIN_QUORUM_PERCENT, MAX_QUORUM_PERCENT);
        super._updateQuorumNumerator(newQuorumNumerator);
    }

    function _checkBounds(string memory setting, uint256 value, uint256 min, uint256 max) private pure {
        if (value < min || value > max) revert TGridGovernorSettingOutOfBounds(setting, value, min, max);
    }

    /// @inheritdoc Governor
    function proposalThreshold() public view override(Governor, GovernorSettings) returns (uint256) {
        return super.proposalThreshold();
    }

    /// @inheritdoc Governor
    function state(uint256 proposalId) public view override(Governor, GovernorTimelockControl) returns (ProposalState) {
        return super.state(proposalId);
    }

    /// @inheritdoc Governor
    function proposalNeedsQueuing(uint256 proposalId)
        public
        view
        override(Governor, GovernorTimelockControl)
        returns (bool)
    {
        return super.proposalNeedsQueuing(proposalId);
    }

    function _queueOperations(
        uint256 proposalId,
        address[] memory targets,
        uint256[] memory values,
        bytes[] memory calldatas,
        bytes32 descriptionHash
    ) internal override(Governor, GovernorTimelockControl) returns (uint48) {
        return super._queueOperations(proposalId, targets, values, calldatas, descriptionHash);
    }

    function _executeOperations(
        uint256 proposalId,
        address[] memory targets,
        uint256[] memory values,
        bytes[] memory calldatas,
        bytes32 descriptionHash
    ) internal override(Governor, GovernorTimelockControl) {
        super._executeOperations(proposalId, targets, values, calldatas, descriptionHash);
    }

    function _cancel(
        address[] memory targets,
        uint256[] memory values,
        bytes[] memory calldatas,
        bytes32 descriptionHash
    ) internal override(Governor, GovernorTimelockControl) returns (uint256) {
        return super._cancel(targets, values, calldatas, descriptionHash);
    }

    function _executor() internal view override(Governor, GovernorTimelockControl) returns (address) {
        return super._executor();
    }
}
