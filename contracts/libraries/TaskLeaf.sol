// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @notice One settled task as it enters the batch (docs/encodings.md, "Task leaf").
/// @dev TaskMarket hashes its leaves from memory (`orderHash` as the task id) and only needs
/// {TaskLeafLib.rootOfLeafHashes} and {TaskLeafLib.publicInput}; this calldata form and
/// {TaskLeafLib.leafHash} / {TaskLeafLib.batchRoot} are the reference encoding the fixed vectors
/// of the tests (shared with the Rust side) pin.
/// @param taskId Task id: the order's EIP-712 digest.
/// @param modelId Model id (SHA-256 of the compiled model).
/// @param inputCommitment Poseidon (Goldilocks) commitment to the int8 input tensor.
/// @param outputCommitment Poseidon (Goldilocks) commitment to the int8 output tensor.
/// @param provider The provider that accepted the task and proved it.
struct TaskLeaf {
    bytes32 taskId;
    bytes32 modelId;
    bytes32 inputCommitment;
    bytes32 outputCommitment;
    address provider;
}

/// @title TaskLeafLib
/// @notice The binding encodings of docs/encodings.md: task leaf, RFC 6962 batch root and the
/// Groth16 public input. The Rust side (sequencer, circuits) implements the same functions.
library TaskLeafLib {
    /// @notice Mask clearing the top 3 bits, so the public input is below the BN254 scalar modulus.
    uint256 internal constant PUBLIC_INPUT_MASK = (1 << 253) - 1;

    /// @notice A batch must hold at least one leaf.
    error TaskLeafEmptyBatch();

    /// @notice The SHA-256 precompile (0x02) failed.
    error TaskLeafSha256Failed();

    /// @notice Leaf `index` has a provider word with non-zero upper 12 bytes (not an address).
    /// @param index The leaf's position in the batch.
    error TaskLeafMalformedProvider(uint256 index);

    /// @notice `sha256(0x00 ‖ taskId ‖ modelId ‖ inputCommitment ‖ outputCommitment ‖ provider)`,
    /// 149 bytes of input.
    /// @param leaf The task leaf (calldata).
    /// @return h The leaf hash.
    function leafHash(TaskLeaf calldata leaf) internal view returns (bytes32 h) {
        // Reading `provider` through Solidity validates that its upper 12 bytes are zero.
        address provider = leaf.provider;
        bool ok;
        assembly ("memory-safe") {
            let m := mload(0x40)
            mstore8(m, 0x00)
            calldatacopy(add(m, 1), leaf, 0x80) // taskId, modelId, inputCommitment, outputCommitment
            mstore(add(m, 0x81), shl(96, provider)) // 20 bytes at offset 129
            ok := staticcall(gas(), 0x02, m, 149, 0x00, 0x20)
            h := mload(0x00)
        }
        if (!ok) revert TaskLeafSha256Failed();
    }

    /// @notice RFC 6962 Merkle tree hash over the ordered leaves:
    /// `MTH([l]) = l`, `MTH(l[0..n]) = sha256(0x01 ‖ MTH(l[0..k]) ‖ MTH(l[k..n]))`, k the largest
    /// power of two below n.
    /// @dev Computed bottom-up in one buffer: pair neighbours level by level and carry an odd last
    /// node up unchanged, which yields exactly the tree with the largest-power-of-two split (tested
    /// against a recursive reference). Reverts if a leaf's provider word has non-zero upper bits.
    /// @param leaves The batch, in order (non-empty).
    /// @return root The batch root.
    function batchRoot(TaskLeaf[] calldata leaves) internal view returns (bytes32 root) {
        uint256 n = leaves.length;
        if (n == 0) revert TaskLeafEmptyBatch();
        bytes32[] memory hashes = new bytes32[](n);
        for (uint256 i = 0; i < n; ++i) {
            // Checked on the raw word: reading `provider` through Solidity would revert without a reason.
            if (uint256(_providerWord(leaves, i)) >> 160 != 0) revert TaskLeafMalformedProvider(i);
            hashes[i] = leafHash(leaves[i]);
        }
        root = rootOfLeafHashes(hashes);
    }

    /// @dev Leaf `i`'s raw provider word (an address has its upper 12 bytes zero).
    function _providerWord(TaskLeaf[] calldata leaves, uint256 i) private pure returns (bytes32 word) {
        assembly ("memory-safe") {
            word := calldataload(add(add(leaves.offset, mul(i, 0xa0)), 0x80))
        }
    }

    /// @notice The RFC 6962 root (see {batchRoot}) of already hashed leaves. Overwrites `hashes`.
    /// @param hashes The leaf hashes, in order (non-empty); used as the working buffer.
    /// @return root The batch root.
    function rootOfLeafHashes(bytes32[] memory hashes) internal view returns (bytes32 root) {
        uint256 n = hashes.length;
        if (n == 0) revert TaskLeafEmptyBatch();
        bool ok = true;
        assembly ("memory-safe") {
            let buf := add(hashes, 0x20)
            let scratch := mload(0x40) // 65 bytes of scratch past the free memory pointer
            mstore8(scratch, 0x01)
            for {} gt(n, 1) {} {
                let half := shr(1, n)
                for { let i := 0 } lt(i, half) { i := add(i, 1) } {
                    let pair := add(buf, shl(6, i))
                    mstore(add(scratch, 1), mload(pair))
                    mstore(add(scratch, 0x21), mload(add(pair, 0x20)))
                    ok := and(ok, staticcall(gas(), 0x02, scratch, 65, add(buf, shl(5, i)), 0x20))
                }
                if and(n, 1) {
                    mstore(add(buf, shl(5, half)), mload(add(buf, shl(5, sub(n, 1)))))
                    half := add(half, 1)
                }
                n := half
            }
            root := mload(buf)
        }
        if (!ok) revert TaskLeafSha256Failed();
    }

    /// @notice `uint256(sha256(batchRoot ‖ registryRoot ‖ uint64(taskCount))) & (2^253 - 1)`.
    /// @param root The batch root.
    /// @param registryRoot The registry root the batch was proven against.
    /// @param taskCount Number of leaves (fits in 64 bits for any real batch).
    /// @return input The Groth16 public input.
    function publicInput(bytes32 root, bytes32 registryRoot, uint256 taskCount) internal view returns (uint256 input) {
        bool ok;
        assembly ("memory-safe") {
            let m := mload(0x40)
            mstore(m, root)
            mstore(add(m, 0x20), registryRoot)
            mstore(add(m, 0x40), shl(192, taskCount)) // uint64, big-endian, 8 bytes
            ok := staticcall(gas(), 0x02, m, 72, 0x00, 0x20)
            input := and(mload(0x00), PUBLIC_INPUT_MASK)
        }
        if (!ok) revert TaskLeafSha256Failed();
    }
}
