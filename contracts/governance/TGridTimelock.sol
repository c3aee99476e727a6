// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {TimelockController} from "@openzeppelin/contracts/governance/TimelockController.sol";

/// @title TGridTimelock
/// @notice The governance timelock: OpenZeppelin's TimelockController with a bounded delay.
/// @dev Below a day, stakers and posters cannot react to a passed proposal before it lands; a
/// delay beyond 30 days, once voted, would leave governance unable to act (and to lower it again)
/// for that long. The deployment sets it at least as long as the market's unbonding delay, so a
/// bonded provider who dislikes a passed proposal can leave before it executes.
contract TGridTimelock is TimelockController {
    /// @notice Bounds of the delay, in seconds.
    uint256 public constant MIN_DELAY = 1 days;
    uint256 public constant MAX_DELAY = 30 days;

    /// @notice A delay outside [MIN_DELAY, MAX_DELAY] was given.
    /// @param delay The value given.
    error TGridTimelockDelayOutOfBounds(uint256 delay);

    /// @notice Deploys the timelock.
    /// @param minDelay Initial delay in seconds (within the bounds).
    /// @param proposers Accounts granted the proposer and canceller roles.
    /// @param executors Accounts granted the executor role (address(0): anyone).
    /// @param admin Optional admin for the initial setup (address(0): none).
    constructor(uint256 minDelay, address[] memory proposers, address[] memory executors, address admin)
        TimelockController(minDelay, proposers, executors, admin)
    {
        _checkDelay(minDelay);
    }

    /// @notice Changes the delay; only the timelock itself (a passed proposal), within the bounds.
    /// @param newDelay The new delay in seconds.
    function updateDelay(uint256 newDelay) public override {
        super.updateDelay(newDelay);
        _checkDelay(newDelay);
    }

    function _checkDelay(uint256 delay) private pure {
        if (delay < MIN_DELAY || delay > MAX_DELAY) revert TGridTimelockDelayOutOfBounds(delay);
    }
}
