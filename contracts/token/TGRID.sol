// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";
import {ERC20Votes} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Votes.sol";
import {Nonces} from "@openzeppelin/contracts/utils/Nonces.sol";

/// @title TGRID
/// @notice The TensorGrid token: task payments, provider stake and governance votes.
/// @dev ERC20 + ERC-2612 permit + ERC20Votes on a timestamp clock (the Governor reads the same
/// clock). The whole supply is minted once at deployment; there is no mint or burn afterwards, so
/// every amount fits the 96-bit accounting of TaskMarket. Holders must delegate
/// (possibly to themselves) for their balance to count as votes.
contract TGRID is ERC20, ERC20Permit, ERC20Votes {
    /// @notice Fixed total supply: one billion tokens with 18 decimals.
    uint256 public constant TOTAL_SUPPLY = 1_000_000_000e18;

    /// @notice The initial holder is the zero address.
    error TGRIDZeroHolder();

    /// @notice Mints the whole supply to `initialHolder`.
    /// @param initialHolder Receives {TOTAL_SUPPLY}.
    constructor(address initialHolder) ERC20("TensorGrid", "TGRID") ERC20Permit("TensorGrid") {
        if (initialHolder == address(0)) revert TGRIDZeroHolder();
        _mint(initialHolder, TOTAL_SUPPLY);
    }

    /// @notice The votes clock: the block timestamp.
    /// @return The current timestamp.
    function clock() public view override returns (uint48) {
        return uint48(block.timestamp);
    }

    /// @notice Machine-readable description of the clock (EIP-6372).
    /// @return "mode=timestamp".
    // solhint-disable-next-line func-name-mixedcase
    function CLOCK_MODE() public pure override returns (string memory) {
        return "mode=timestamp";
    }

    /// @notice Permit and vote-delegation nonce of `owner` (shared by both).
    /// @param owner The account.
    /// @return Its current nonce.
    function nonces(address owner) public view override(ERC20Permit, Nonces) returns (uint256) {
        return super.nonces(owner);
    }

    /// @dev Moves voting units along with balances.
    function _update(address from, address to, uint256 value) internal override(ERC20, ERC20Votes) {
        super._update(from, to, value);
    }
}
