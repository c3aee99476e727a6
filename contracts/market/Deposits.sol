// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {MarketBase} from "./MarketBase.sol";
import {IDeposits} from "../interfaces/market/IDeposits.sol";

/// @title Deposits
/// @notice Posters' deposit books (see {IDeposits}): funded in full when opened, drawn by
/// settlements, withdrawn after closing and the unlock delay.
abstract contract Deposits is MarketBase {
    /// @inheritdoc IDeposits
    function openBook(uint256 capacity, uint256 perOrderMax) external returns (uint32 id) {
        if (capacity == 0 || capacity > _U24 || perOrderMax == 0 || perOrderMax > _U96 / capacity) {
            revert MarketInvalidBook(capacity, perOrderMax);
        }
        id = _bookCounts[msg.sender]++;
        uint256 funded = capacity * perOrderMax;
        // forge-lint: disable-next-line(unsafe-typecast) -- funded and perOrderMax < 2^96, capacity < 2^24, checked above
        _books[msg.sender][id] = Book(uint96(funded), uint96(perOrderMax), uint24(capacity), 0);
        emit BookOpened(msg.sender, id, capacity, perOrderMax);
        _pull(msg.sender, funded);
    }

    /// @inheritdoc IDeposits
    function closeBook(uint32 id) external {
        Book storage b = _existingBook(msg.sender, id);
        uint256 unlockAt = b.unlockAt;
        if (unlockAt != 0) revert MarketBookClosing(msg.sender, id, unlockAt);
        unlockAt = block.timestamp + _depositUnlockDelay;
        // forge-lint: disable-next-line(unsafe-typecast) -- a timestamp plus at most 730 days fits 40 bits
        b.unlockAt = uint40(unlockAt);
        emit BookClosed(msg.sender, id, unlockAt);
    }

    /// @inheritdoc IDeposits
    function withdrawBook(uint32 id) external returns (uint256 amount) {
        Book storage b = _existingBook(msg.sender, id);
        uint256 unlockAt = b.unlockAt;
        if (unlockAt == 0 || block.timestamp < unlockAt) revert MarketBookLocked(msg.sender, id, unlockAt);
        amount = b.remaining;
        b.remaining = 0;
        emit BookWithdrawn(msg.sender, id, amount);
        _send(msg.sender, amount);
    }

    /// @inheritdoc IDeposits
    function cancelNonces(uint64[] calldata nonces) external {
        if (nonces.length == 0) revert MarketEmptyList();
        for (uint256 i = 0; i < nonces.length; ++i) {
            _useNonce(msg.sender, nonces[i]);
        }
        emit NoncesCancelled(msg.sender, nonces);
    }

    /// @inheritdoc IDeposits
    function book(address poster, uint32 id) external view returns (Book memory) {
        return _books[poster][id];
    }

    /// @inheritdoc IDeposits
    function bookCount(address poster) external view returns (uint256) {
        return _bookCounts[poster];
    }

    /// @inheritdoc IDeposits
    function nonceUsed(address poster, uint64 nonce) external view returns (bool) {
        return _nonceUsed(poster, nonce);
    }

    function _existingBook(address poster, uint32 id) private view returns (Book storage b) {
        b = _books[poster][id];
        if (b.capacity == 0) revert MarketUnknownBook(poster, id);
    }
}
