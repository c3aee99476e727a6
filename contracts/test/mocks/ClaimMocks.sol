// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

import {ITaskEscrow} from "../../interfaces/ITaskEscrow.sol";
import {IStaking} from "../../interfaces/IStaking.sol";

/// @notice TEST ONLY. An ERC20 that calls `onTokensReceived(from, amount)` on every contract it
/// sends tokens to (ERC-777 style), ignoring the outcome. TGRID has no such hook; this token lets
/// the attack tests hand control to a receiver in the middle of `TaskEscrow.claimSettled`.
contract HookedToken is ERC20 {
    constructor(uint256 supply) ERC20("Hooked", "HOOK") {
        _mint(msg.sender, supply);
    }

    function _update(address from, address to, uint256 value) internal override {
        super._update(from, to, value);
        if (to.code.length != 0) {
            // A receiver without the hook (Staking, the escrow) simply fails this call.
            (bool ok,) = to.call(abi.encodeCall(ClaimReentrant.onTokensReceived, (from, value)));
            ok; // outcome deliberately ignored
        }
    }
}

/// @notice TEST ONLY. A provider contract that, when paid by a claim, re-enters `claimSettled`
/// with the same task ids (to be paid twice), recording what happened.
contract ClaimReentrant {
    ITaskEscrow public immutable escrow;
    IStaking public immutable staking;
    bytes32[] internal _ids;
    bool internal _armed;
    uint256 public reentryAttempts;
    bool public reentrySucceeded;
    bytes public reentryRevertData;

    constructor(ITaskEscrow escrow_, IStaking staking_, ERC20 token_) {
        escrow = escrow_;
        staking = staking_;
        token_.approve(address(staking_), type(uint256).max);
    }

    function stake(uint256 amount) external {
        staking.stake(amount);
    }

    function accept(bytes32 taskId) external {
        escrow.acceptTask(taskId);
    }

    function claim(bytes32[] calldata ids) external returns (uint256 paid, uint256 released) {
        _ids = ids;
        _armed = true;
        (paid, released) = escrow.claimSettled(ids);
        _armed = false;
    }

    function onTokensReceived(address, uint256) external {
        if (!_armed || msg.sender != escrow.token()) return;
        _armed = false;
        reentryAttempts += 1;
        bytes memory data;
        (reentrySucceeded, data) = address(escrow).call(abi.encodeCall(ITaskEscrow.claimSettled, (_ids)));
        reentryRevertData = data;
    }
}
