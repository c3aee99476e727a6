// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {TGridTest} from "./utils/TGridTest.sol";
import {TGRID} from "../token/TGRID.sol";

contract TGRIDTest is TGridTest {
    function test_constructor_mintsFixedSupply() public view {
        assertEq(token.totalSupply(), 1_000_000_000e18);
        assertLt(token.totalSupply(), uint256(type(uint96).max));
        assertEq(token.name(), "TensorGrid");
        assertEq(token.symbol(), "TGRID");
        assertEq(token.decimals(), 18);
    }

    function test_RevertWhen_zeroHolder() public {
        vm.expectRevert(TGRID.TGRIDZeroHolder.selector);
        new TGRID(address(0));
    }

    function test_votes_followDelegationAndTransfers() public {
        vm.prank(poster);
        token.delegate(poster);
        assertEq(token.getVotes(poster), 1_000_000e18);
        vm.prank(poster);
        assertTrue(token.transfer(stranger, 400_000e18));
        assertEq(token.getVotes(poster), 600_000e18);
        uint256 t = block.timestamp;
        skip(10);
        assertEq(token.getPastVotes(poster, t), 600_000e18);
        assertEq(token.clock(), block.timestamp);
    }

    function test_permit_setsAllowance() public {
        (address owner, uint256 key) = makeAddrAndKey("permit owner");
        bytes32 structHash = keccak256(
            abi.encode(
                keccak256("Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)"),
                owner,
                stranger,
                5e18,
                token.nonces(owner),
                block.timestamp + 1
            )
        );
        (uint8 v, bytes32 r, bytes32 s) =
            vm.sign(key, keccak256(abi.encodePacked("\x19\x01", token.DOMAIN_SEPARATOR(), structHash)));
        token.permit(owner, stranger, 5e18, block.timestamp + 1, v, r, s);
        assertEq(token.allowance(owner, stranger), 5e18);
        assertEq(token.nonces(owner), 1);
    }
}
