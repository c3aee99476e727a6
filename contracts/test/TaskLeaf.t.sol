// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Test} from "forge-std/Test.sol";

import {TaskLeaf, TaskLeafLib} from "../libraries/TaskLeaf.sol";

/// @dev Exposes the library's functions.
contract TaskLeafHarness {
    function leafHash(TaskLeaf calldata leaf) external view returns (bytes32) {
        return TaskLeafLib.leafHash(leaf);
    }

    function batchRoot(TaskLeaf[] calldata leaves) external view returns (bytes32) {
        return TaskLeafLib.batchRoot(leaves);
    }

    function rootOfLeafHashes(bytes32[] memory hashes) external view returns (bytes32) {
        return TaskLeafLib.rootOfLeafHashes(hashes);
    }

    function publicInput(bytes32 root, bytes32 registryRoot, uint256 count) external view returns (uint256) {
        return TaskLeafLib.publicInput(root, registryRoot, count);
    }
}

/// @notice docs/encodings.md: task leaf, RFC 6962 batch root, public input. Fixed vectors were
/// computed independently (Python hashlib); the Rust implementation must reproduce them.
contract TaskLeafTest is Test {
    TaskLeafHarness internal h;

    function setUp() public {
        h = new TaskLeafHarness();
    }

    // Vector i: taskId = i + 1, modelId = 0x22..22, input = 0x1000 + i, output = 0x2000 + i,
    // provider = 0x5555..55.
    function _vector(uint256 i) internal pure returns (TaskLeaf memory) {
        return TaskLeaf({
            taskId: bytes32(i + 1),
            modelId: bytes32(uint256(0x2222222222222222222222222222222222222222222222222222222222222222)),
            inputCommitment: bytes32(0x1000 + i),
            outputCommitment: bytes32(0x2000 + i),
            provider: address(0x5555555555555555555555555555555555555555)
        });
    }

    function _vectors(uint256 n) internal pure returns (TaskLeaf[] memory leaves) {
        leaves = new TaskLeaf[](n);
        for (uint256 i = 0; i < n; ++i) {
            leaves[i] = _vector(i);
        }
    }

    /// @dev Independent reference: abi.encodePacked + the sha256 builtin, recursive split.
    function _refLeaf(TaskLeaf memory l) internal pure returns (bytes32) {
        return
            sha256(
                abi.encodePacked(bytes1(0x00), l.taskId, l.modelId, l.inputCommitment, l.outputCommitment, l.provider)
            );
    }

    function _refRoot(bytes32[] memory hashes, uint256 lo, uint256 hi) internal pure returns (bytes32) {
        uint256 n = hi - lo;
        if (n == 1) return hashes[lo];
        uint256 k = 1;
        while (k * 2 < n) k *= 2;
        return sha256(abi.encodePacked(bytes1(0x01), _refRoot(hashes, lo, lo + k), _refRoot(hashes, lo + k, hi)));
    }

    function test_leafHash_matchesVector() public view {
        TaskLeaf memory l = TaskLeaf({
            taskId: bytes32(uint256(0x1111111111111111111111111111111111111111111111111111111111111111)),
            modelId: bytes32(uint256(0x2222222222222222222222222222222222222222222222222222222222222222)),
            inputCommitment: bytes32(uint256(0x3333333333333333333333333333333333333333333333333333333333333333)),
            outputCommitment: bytes32(uint256(0x4444444444444444444444444444444444444444444444444444444444444444)),
            provider: address(0x5555555555555555555555555555555555555555)
        });
        assertEq(h.leafHash(l), 0x969236d3c6fa0b18f1b2763544a32e46b67b7ece23c9a2c9e790b6104ea80eb5);
        assertEq(h.leafHash(l), _refLeaf(l));
    }

    function test_batchRoot_matchesVectors() public view {
        assertEq(h.batchRoot(_vectors(1)), 0x416d3b135deb19b0d83922288ac06fd85370957e0ec407d598295aff08137ae6);
        assertEq(h.batchRoot(_vectors(2)), 0x804bf5d953e8906e805e7f5b49799a91bd04d9717ad1f9dcd800660c80af19b0);
        assertEq(h.batchRoot(_vectors(3)), 0x663102490f7e093f28fe1a187e4f0afb0abe53a9a9df34742b00b1b25566b397);
        assertEq(h.batchRoot(_vectors(5)), 0x6f03f2fcfda0df7c54e9301f6e67f075006a546182ef488751830684f4c808da);
        assertEq(h.batchRoot(_vectors(7)), 0xb39cdca998e82aad25a3d42e3feba40e4440e5dbb7f762f5cf604d3f00a35e0c);
    }

    function test_batchRoot_singleLeafIsLeafHash() public view {
        TaskLeaf[] memory one = _vectors(1);
        assertEq(h.batchRoot(one), h.leafHash(one[0]));
    }

    function test_publicInput_matchesVectors() public view {
        bytes32 reg = bytes32(uint256(0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa));
        assertEq(
            h.publicInput(0x416d3b135deb19b0d83922288ac06fd85370957e0ec407d598295aff08137ae6, reg, 1),
            0x1d0ab97b2d2d3e2ed2497dd958b96586df24ad8d5df195ae61347230eb246ce1
        );
        assertEq(
            h.publicInput(0x6f03f2fcfda0df7c54e9301f6e67f075006a546182ef488751830684f4c808da, reg, 5),
            0x0bfc639e1f471a2c7b537eb3cc9f292e79596ff157b5c1126673b7ae75af7d4c
        );
        assertEq(
            h.publicInput(0xb39cdca998e82aad25a3d42e3feba40e4440e5dbb7f762f5cf604d3f00a35e0c, reg, 7),
            0x19a3e639ad5985570f6e6cdca27732308d1afe9ae02708fc8a58354feb88cbcf
        );
    }

    function test_RevertWhen_batchRootOfEmptyBatch() public {
        vm.expectRevert(TaskLeafLib.TaskLeafEmptyBatch.selector);
        h.batchRoot(new TaskLeaf[](0));
        vm.expectRevert(TaskLeafLib.TaskLeafEmptyBatch.selector);
        h.rootOfLeafHashes(new bytes32[](0));
    }

    /// The memory path TaskMarket uses (leaf hashes, then their root) gives the vectors' roots.
    function test_rootOfLeafHashes_matchesVectors() public view {
        uint256[5] memory sizes = [uint256(1), 2, 3, 5, 7];
        for (uint256 k = 0; k < sizes.length; ++k) {
            TaskLeaf[] memory leaves = _vectors(sizes[k]);
            bytes32[] memory hashes = new bytes32[](leaves.length);
            for (uint256 i = 0; i < leaves.length; ++i) {
                hashes[i] = h.leafHash(leaves[i]);
            }
            assertEq(h.rootOfLeafHashes(hashes), h.batchRoot(leaves));
        }
    }

    function testFuzz_rootOfLeafHashes_matchesRecursiveReference(uint8 rawN, bytes32 salt) public view {
        uint256 n = bound(rawN, 1, 70);
        bytes32[] memory hashes = new bytes32[](n);
        for (uint256 i = 0; i < n; ++i) {
            hashes[i] = keccak256(abi.encode(salt, i));
        }
        assertEq(h.rootOfLeafHashes(hashes), _refRoot(hashes, 0, n));
    }

    function test_RevertWhen_leafProviderHasDirtyUpperBits() public {
        bytes memory data = abi.encodeCall(TaskLeafHarness.leafHash, (_vector(0)));
        // Set a byte in the 12 zero-padding bytes of the provider word (last argument word).
        data[4 + 4 * 32] = 0x01;
        (bool ok,) = address(h).staticcall(data);
        assertFalse(ok);
    }

    function test_RevertWhen_batchLeafProviderHasDirtyUpperBits() public {
        bytes memory data = abi.encodeCall(TaskLeafHarness.batchRoot, (_vectors(3)));
        // selector, offset, length, then 3 x 5 words; leaf 1's provider word starts at
        // 4 + 2 * 32 + (1 * 5 + 4) * 32.
        data[4 + 2 * 32 + 9 * 32] = 0x01;
        (bool ok, bytes memory ret) = address(h).staticcall(data);
        assertFalse(ok);
        assertEq(ret, abi.encodeWithSelector(TaskLeafLib.TaskLeafMalformedProvider.selector, 1));
    }

    function testFuzz_batchRoot_matchesRecursiveReference(uint8 rawN, bytes32 salt) public view {
        uint256 n = bound(rawN, 1, 70);
        TaskLeaf[] memory leaves = new TaskLeaf[](n);
        bytes32[] memory hashes = new bytes32[](n);
        for (uint256 i = 0; i < n; ++i) {
            leaves[i] = TaskLeaf({
                taskId: keccak256(abi.encode(salt, i)),
                modelId: keccak256(abi.encode(salt, "m", i)),
                inputCommitment: keccak256(abi.encode(salt, "in", i)),
                outputCommitment: keccak256(abi.encode(salt, "out", i)),
                provider: address(uint160(uint256(keccak256(abi.encode(salt, "p", i)))))
            });
            hashes[i] = _refLeaf(leaves[i]);
        }
        assertEq(h.batchRoot(leaves), _refRoot(hashes, 0, n));
    }

    function testFuzz_batchRoot_changesWhenLeavesReorderedOrDropped(bytes32 salt) public view {
        TaskLeaf[] memory leaves = new TaskLeaf[](3);
        for (uint256 i = 0; i < 3; ++i) {
            leaves[i] = _vector(uint256(keccak256(abi.encode(salt, i))) % 1e9);
        }
        vm.assume(leaves[0].taskId != leaves[1].taskId);
        bytes32 root = h.batchRoot(leaves);
        TaskLeaf[] memory swapped = new TaskLeaf[](3);
        (swapped[0], swapped[1], swapped[2]) = (leaves[1], leaves[0], leaves[2]);
        assertTrue(h.batchRoot(swapped) != root);
        TaskLeaf[] memory dropped = new TaskLeaf[](2);
        (dropped[0], dropped[1]) = (leaves[0], leaves[1]);
        assertTrue(h.batchRoot(dropped) != root);
    }

    function testFuzz_publicInput_isBelowScalarField(bytes32 root, bytes32 reg, uint64 count) public view {
        uint256 pi = h.publicInput(root, reg, count);
        assertLt(pi, 1 << 253);
        assertEq(pi, uint256(sha256(abi.encodePacked(root, reg, count))) & ((1 << 253) - 1));
    }
}
