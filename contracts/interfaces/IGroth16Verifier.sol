// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title IGroth16Verifier
/// @notice Verifies a Groth16 proof over BN254 with exactly one public input (docs/encodings.md).
/// @dev Proof layout: `[A.x, A.y, B.x.c1, B.x.c0, B.y.c1, B.y.c0, C.x, C.y]`, G1 points affine,
/// G2 points with the imaginary coefficient first, as the EIP-197 pairing precompile expects.
interface IGroth16Verifier {
    /// @notice Checks `proof` against the verifying key for the single public input `publicInput`.
    /// @param proof The proof in the calldata layout of docs/encodings.md.
    /// @param publicInput The public input; must be below the BN254 scalar field modulus.
    /// @return True only for a valid proof; false (or a revert) for anything else.
    function verifyProof(uint256[8] calldata proof, uint256 publicInput) external view returns (bool);
}
