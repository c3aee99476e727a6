// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title IDeposits
/// @notice Posters' deposits, as books of pre-funded orders. A book holds `capacity` orders of at
/// most `perOrderMax` each and is funded in full when opened, so no book can owe more than it holds:
/// order `index` of book `b` (nonce `(b << 32) | index`) is paid at most once and at most
/// `perOrderMax`, whatever else the poster signed. A provider checks before proving that its order's
/// index is below the capacity, its payment at most `perOrderMax`, and the book open or unlocking
/// after the order's deadline. Closing starts an unlock delay longer than the longest deadline;
/// settlements keep drawing on the book until it is withdrawn.
interface IDeposits {
    /// @notice A poster's deposit book.
    /// @param remaining Tokens left: funded minus paid (minus withdrawn once withdrawn).
    /// @param perOrderMax Largest payment one order of the book may draw.
    /// @param capacity Number of orders (indices 0 .. capacity-1).
    /// @param unlockAt Zero while open; once closing, when the remainder may be withdrawn.
    struct Book {
        uint96 remaining;
        uint96 perOrderMax;
        uint24 capacity;
        uint40 unlockAt;
    }

    /// @notice `poster` opened book `book`, funded with `capacity * perOrderMax` tokens.
    /// @param poster The poster.
    /// @param book The book id (the poster's count of books before it).
    /// @param capacity Number of orders.
    /// @param perOrderMax Largest payment of one order.
    event BookOpened(address indexed poster, uint32 indexed book, uint256 capacity, uint256 perOrderMax);

    /// @notice `poster` closed book `book`; its remainder unlocks at `unlockAt`.
    /// @param poster The poster.
    /// @param book The book id.
    /// @param unlockAt When {withdrawBook} becomes possible.
    event BookClosed(address indexed poster, uint32 indexed book, uint256 unlockAt);

    /// @notice `poster` withdrew the remainder `amount` of book `book`.
    /// @param poster The poster.
    /// @param book The book id.
    /// @param amount Tokens sent.
    event BookWithdrawn(address indexed poster, uint32 indexed book, uint256 amount);

    /// @notice `poster` cancelled these nonces: their orders can no longer settle or be disputed.
    /// @param poster The poster.
    /// @param nonces The cancelled nonces.
    event NoncesCancelled(address indexed poster, uint64[] nonces);

    /// @notice A book needs a capacity of 1 .. 2^24-1 and a non-zero per-order maximum whose
    /// product fits 96 bits.
    /// @param capacity The capacity given.
    /// @param perOrderMax The per-order maximum given.
    error MarketInvalidBook(uint256 capacity, uint256 perOrderMax);

    /// @notice `poster` has no book `book`.
    /// @param poster The poster.
    /// @param book The book id.
    error MarketUnknownBook(address poster, uint32 book);

    /// @notice Book `book` of `poster` is already closing (unlocks at `unlockAt`).
    /// @param poster The poster.
    /// @param book The book id.
    /// @param unlockAt When it unlocks.
    error MarketBookClosing(address poster, uint32 book, uint256 unlockAt);

    /// @notice Book `book` of `poster` cannot be withdrawn yet: it is open (`unlockAt` 0) or still
    /// unlocking until `unlockAt`.
    /// @param poster The poster.
    /// @param book The book id.
    /// @param unlockAt When it unlocks (0: not closed).
    error MarketBookLocked(address poster, uint32 book, uint256 unlockAt);

    /// @notice A list argument was empty.
    error MarketEmptyList();

    /// @notice Opens a deposit book of `capacity` orders paying at most `perOrderMax` each, pulling
    /// `capacity * perOrderMax` TGRID from the caller (approve first).
    /// @dev Emits {BookOpened}.
    /// @param capacity Number of orders, 1 .. 2^24-1.
    /// @param perOrderMax Largest payment of one order, > 0.
    /// @return book The new book's id; its orders use nonces `(book << 32) | index`.
    function openBook(uint256 capacity, uint256 perOrderMax) external returns (uint32 book);

    /// @notice Closes one of the caller's books: its remainder unlocks after the deposit unlock delay
    /// (longer than the longest deadline, so every order it backs can still settle). Settlements keep
    /// drawing on it until it is withdrawn.
    /// @dev Emits {BookClosed}.
    /// @param book The book id.
    function closeBook(uint32 book) external;

    /// @notice Sends the caller the remainder of a closed book whose unlock time has passed.
    /// @dev Emits {BookWithdrawn}. Later settlements of the book's orders find it empty: they consume
    /// the nonce unpaid (see {ISettleBatch-OrderUnpaid}), so the provider cannot be disputed.
    /// @param book The book id.
    /// @return amount Tokens sent.
    function withdrawBook(uint32 book) external returns (uint256 amount);

    /// @notice Cancels orders of the caller by nonce: each can no longer settle or be disputed.
    /// Cancelling a nonce already used changes nothing.
    /// @dev Emits {NoncesCancelled}.
    /// @param nonces The nonces (at least one).
    function cancelNonces(uint64[] calldata nonces) external;

    /// @notice Book `book` of `poster` (all zero if it does not exist).
    /// @param poster The poster.
    /// @param book The book id.
    function book(address poster, uint32 book) external view returns (Book memory);

    /// @notice How many books `poster` has opened (the next book's id).
    /// @param poster The poster.
    function bookCount(address poster) external view returns (uint256);

    /// @notice Whether `poster`'s nonce is used (settled, settled unpaid, disputed or cancelled).
    /// @param poster The poster.
    /// @param nonce The nonce.
    function nonceUsed(address poster, uint64 nonce) external view returns (bool);
}
