// SPDX-License-Identifier: MIT
// GENERATED FILE — do not edit. Rendered by scripts/foundry/gen-verifier.js from
// contracts/test/fixtures/groth16/wrap-insecure-test.vk.json (key id "wrap-insecure-test").
// Regenerate: node scripts/foundry/gen-verifier.js --vk contracts/test/fixtures/groth16/wrap-insecure-test.vk.json --out contracts/verifier/WrapVerifierInsecureTest.sol --name WrapVerifierInsecureTest --key-id wrap-insecure-test
pragma solidity ^0.8.24;

import {IGroth16Verifier} from "../interfaces/IGroth16Verifier.sol";

/// @title WrapVerifierInsecureTest
/// @notice Groth16 verifier over BN254 for exactly one public input, using the EIP-196 (add, mul)
/// and EIP-197 (pairing) precompiles. Proof layout and public input: docs/encodings.md.
/// @dev Verifying key "wrap-insecure-test". A wrap key id names the wrapped proof's FRI parameters and
/// the R1CS digest (docs/wrap.md); one ending in "-insecure-devnet" (or any "insecure" id) marks a
/// key whose toxic waste is public: such a verifier must never guard real value.
/// Checks: publicInput < r (scalar field), every proof coordinate < p (base field), points on the
/// curve and G2 in its subgroup (by the precompiles), then
/// e(-A, B) * e(alpha, beta) * e(IC0 + publicInput * IC1, gamma) * e(C, delta) == 1.
/// Returns false for any invalid proof; never reverts for malformed input. A malformed point makes a
/// precompile fail, which consumes the (capped) gas forwarded to it.
contract WrapVerifierInsecureTest is IGroth16Verifier {
    /// @notice Identifier of the verifying key this verifier was generated from.
    string public constant VERIFYING_KEY_ID = "wrap-insecure-test";
    /// @notice sha256 of the key's 18 coordinates as 32-byte big-endian words in EIP-197 order
    /// (alpha, beta, gamma, delta, IC0, IC1); see scripts/foundry/gen-verifier.js.
    bytes32 public constant VERIFYING_KEY_DIGEST = 0xc8f54b39a6e206c828ba84ec2fc5ccd316339f90e8d93fdc3cd13e2b6b07dca0;

    // BN254 base field modulus p and scalar field modulus r.
    uint256 private constant _P = 0x30644e72e131a029b85045b68181585d97816a916871ca8d3c208c16d87cfd47;
    uint256 private constant _R = 0x30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001;

    // Gas forwarded to each precompile: their Byzantium (pre-EIP-1108) prices, several times the
    // current ones (add 150, mul 6,000, 4-pair pairing 181,000), so a malformed proof, which makes a
    // precompile fail and consume everything it was given, cannot burn the caller's whole gas.
    uint256 private constant _ADD_GAS = 500;
    uint256 private constant _MUL_GAS = 40_000;
    uint256 private constant _PAIRING_GAS = 420_000;

    uint256 private constant _ALPHA_X = 0x2b50b20fdedf37c05bcca197f0511832f80e320a4638e33e2f686e2747db2976;
    uint256 private constant _ALPHA_Y = 0x23a17790aa02968803dcf04c6522ec5c8d66310b602847deec9af14ffeafbb72;
    uint256 private constant _BETA_X1 = 0x084f6633cc203b508970f3a393ebf5a0387363b2f3f93bd69e6a675af35395e2;
    uint256 private constant _BETA_X0 = 0x0c159cff100a997dce495c0ae3fa43cad72cbb4d42f56e185700a364c105d334;
    uint256 private constant _BETA_Y1 = 0x0452087f960933e2cdbfd62d1a5afb35ebac3e5a85076faa0cdd83974ed87b20;
    uint256 private constant _BETA_Y0 = 0x2ac9be04eed5663fa6b448217d2d1b969232dc8f6cb7fde9b4ec34d7e020e96e;
    uint256 private constant _GAMMA_X1 = 0x17720b6cf7cf3dd5e260bee0f71ba4458b29fd466f725eadc10d5c5089473564;
    uint256 private constant _GAMMA_X0 = 0x18256e0f9009cc05ceea6908735291c0929719d5372ee33cbf9f9bb3602decb3;
    uint256 private constant _GAMMA_Y1 = 0x036c58439572ff3a0b101066dacde93a5a8d59e26ebee3d367d162898dbb9233;
    uint256 private constant _GAMMA_Y0 = 0x06dd84db74fd1f2361d3e4bf909bd62fab0caf3ab36d20054b3235c0126dd284;
    uint256 private constant _DELTA_X1 = 0x19d4f113fbdce7b7f069cdf6818ea9706db05e918921cb28de3e6fe91ddee3b7;
    uint256 private constant _DELTA_X0 = 0x00f385542bef3920cb1c82e037259c4535aac2972fae30c6e3bf04f891a90be4;
    uint256 private constant _DELTA_Y1 = 0x2e457f0c0765cfc3741f2d265e58fec9853fd967c6538acb2f3ce6cd6dd5995c;
    uint256 private constant _DELTA_Y0 = 0x09d1e251fd86af8883f111485b4dfa297bec3e29225d6c73656154cec3f5b434;
    uint256 private constant _IC0_X = 0x0ae091726699412364f44cdda54026f5e04af46e740fa8a2e2397b6416cafc55;
    uint256 private constant _IC0_Y = 0x12d914a12322e22c451db449fceabae0cc9b2980aca042569c1abae222b3697c;
    uint256 private constant _IC1_X = 0x035bc5bfb08f0f2b82cfeeadf0067ff4875bba1a3a3dcbe9ffbc28ae2fc53c69;
    uint256 private constant _IC1_Y = 0x0cace5ff179c2d91f7cdb7616db1221d38198cf29f49b207437ce660f8515318;

    /// @inheritdoc IGroth16Verifier
    function verifyProof(uint256[8] calldata proof, uint256 publicInput) external view returns (bool) {
        bool ok;
        assembly ("memory-safe") {
            // Field checks: publicInput < r, every proof coordinate < p.
            ok := lt(publicInput, _R)
            for { let i := 0 } lt(i, 0x100) { i := add(i, 0x20) } {
                ok := and(ok, lt(calldataload(add(proof, i)), _P))
            }
            if ok {
                let m := mload(0x40)
                // vk_x = IC1 * publicInput (EIP-196 mul, 0x07) + IC0 (EIP-196 add, 0x06)
                mstore(m, _IC1_X)
                mstore(add(m, 0x20), _IC1_Y)
                mstore(add(m, 0x40), publicInput)
                ok := and(ok, staticcall(_MUL_GAS, 0x07, m, 0x60, m, 0x40))
                mstore(add(m, 0x40), _IC0_X)
                mstore(add(m, 0x60), _IC0_Y)
                ok := and(ok, staticcall(_ADD_GAS, 0x06, m, 0x80, add(m, 0x180), 0x40))
                // Pairing input: (-A, B), (alpha, beta), (vk_x, gamma), (C, delta); 4 x 192 bytes.
                // vk_x already sits at m + 0x180 .. m + 0x1c0 (third pair's G1 slot).
                mstore(m, calldataload(proof))
                mstore(add(m, 0x20), mod(sub(_P, calldataload(add(proof, 0x20))), _P))
                calldatacopy(add(m, 0x40), add(proof, 0x40), 0x80)
                mstore(add(m, 0xc0), _ALPHA_X)
                mstore(add(m, 0xe0), _ALPHA_Y)
                mstore(add(m, 0x100), _BETA_X1)
                mstore(add(m, 0x120), _BETA_X0)
                mstore(add(m, 0x140), _BETA_Y1)
                mstore(add(m, 0x160), _BETA_Y0)
                mstore(add(m, 0x1c0), _GAMMA_X1)
                mstore(add(m, 0x1e0), _GAMMA_X0)
                mstore(add(m, 0x200), _GAMMA_Y1)
                mstore(add(m, 0x220), _GAMMA_Y0)
                calldatacopy(add(m, 0x240), add(proof, 0xc0), 0x40)
                mstore(add(m, 0x280), _DELTA_X1)
                mstore(add(m, 0x2a0), _DELTA_X0)
                mstore(add(m, 0x2c0), _DELTA_Y1)
                mstore(add(m, 0x2e0), _DELTA_Y0)
                ok := and(ok, staticcall(_PAIRING_GAS, 0x08, m, 0x300, m, 0x20))
                ok := and(ok, eq(mload(m), 1))
            }
        }
        return ok;
    }
}
