// SPDX-License-Identifier: MIT
// GENERATED FILE — do not edit. Rendered by scripts/foundry/gen-verifier.js from
// contracts/test/fixtures/groth16/devnet-insecure.vk.json (key id "devnet-insecure").
// Regenerate: node scripts/foundry/gen-verifier.js --vk contracts/test/fixtures/groth16/devnet-insecure.vk.json --out contracts/verifier/Groth16Verifier.sol --name Groth16Verifier --key-id devnet-insecure
pragma solidity ^0.8.24;

import {IGroth16Verifier} from "../interfaces/IGroth16Verifier.sol";

/// @title Groth16Verifier
/// @notice Groth16 verifier over BN254 for exactly one public input, using the EIP-196 (add, mul)
/// and EIP-197 (pairing) precompiles. Proof layout and public input: docs/encodings.md.
/// @dev Verifying key "devnet-insecure". A wrap key id names the wrapped proof's FRI parameters and
/// the R1CS digest (docs/wrap.md); one ending in "-insecure-devnet" (or any "insecure" id) marks a
/// key whose toxic waste is public: such a verifier must never guard real value.
/// Checks: publicInput < r (scalar field), every proof coordinate < p (base field), points on the
/// curve and G2 in its subgroup (by the precompiles), then
/// e(-A, B) * e(alpha, beta) * e(IC0 + publicInput * IC1, gamma) * e(C, delta) == 1.
/// Returns false for any invalid proof; never reverts for malformed input. A malformed point makes a
/// precompile fail, which consumes the (capped) gas forwarded to it.
contract Groth16Verifier is IGroth16Verifier {
    /// @notice Identifier of the verifying key this verifier was generated from.
    string public constant VERIFYING_KEY_ID = "devnet-insecure";
    /// @notice sha256 of the key's 18 coordinates as 32-byte big-endian words in EIP-197 order
    /// (alpha, beta, gamma, delta, IC0, IC1); see scripts/foundry/gen-verifier.js.
    bytes32 public constant VERIFYING_KEY_DIGEST = 0xd68cab26fd0cdbcfdce5dcf826e568f20e64cfd8bdc7319939eefb3e6ddbdc60;

    // BN254 base field modulus p and scalar field modulus r.
    uint256 private constant _P = 0x30644e72e131a029b85045b68181585d97816a916871ca8d3c208c16d87cfd47;
    uint256 private constant _R = 0x30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001;

    // Gas forwarded to each precompile: their Byzantium (pre-EIP-1108) prices, several times the
    // current ones (add 150, mul 6,000, 4-pair pairing 181,000), so a malformed proof, which makes a
    // precompile fail and consume everything it was given, cannot burn the caller's whole gas.
    uint256 private constant _ADD_GAS = 500;
    uint256 private constant _MUL_GAS = 40_000;
    uint256 private constant _PAIRING_GAS = 420_000;

    uint256 private constant _ALPHA_X = 0x258d2258fe95f6b0b9759c072a4d5a485368d3b4ef76ac87d02a8e393c4e424e;
    uint256 private constant _ALPHA_Y = 0x06146eb8e4c856f5f59af9eb2d9a7fdfe6c1dcd5e750fe607378cd4d20d31101;
    uint256 private constant _BETA_X1 = 0x0b8c8ddb8baf25c9157da90e632422803aec21f011e9e1f6763dc05a1f95fe18;
    uint256 private constant _BETA_X0 = 0x2b1c823c19c24489869d1ccb80ff3753eeed6d5c7d9b4a6bfeaf6b10824ac433;
    uint256 private constant _BETA_Y1 = 0x2f1857ca223a864b90349b8a5183d23f528e890a9a1a97932d15e94bbcab48b9;
    uint256 private constant _BETA_Y0 = 0x26554d17cf009f0a727e07e7abe49cb0d953a96c844e1791355a5164e0c8b8b2;
    uint256 private constant _GAMMA_X1 = 0x198e9393920d483a7260bfb731fb5d25f1aa493335a9e71297e485b7aef312c2;
    uint256 private constant _GAMMA_X0 = 0x1800deef121f1e76426a00665e5c4479674322d4f75edadd46debd5cd992f6ed;
    uint256 private constant _GAMMA_Y1 = 0x090689d0585ff075ec9e99ad690c3395bc4b313370b38ef355acdadcd122975b;
    uint256 private constant _GAMMA_Y0 = 0x12c85ea5db8c6deb4aab71808dcb408fe3d1e7690c43d37b4ce6cc0166fa7daa;
    uint256 private constant _DELTA_X1 = 0x2ecfc70875cc3e16e661354a0c7b8d2016d1f4093cb6b30ef164c5d10f91ebfd;
    uint256 private constant _DELTA_X0 = 0x052757557db49bfeda9f535bc3ef8e5a51fd2fbcb97bef2fd74abcd4d3f94dcd;
    uint256 private constant _DELTA_Y1 = 0x043f4bb541e209469fdd87ced06abb9a842aabeb5162cdb47368d5e188afe82c;
    uint256 private constant _DELTA_Y0 = 0x02206ab59a572fd82aa7c2ce27818d40c1bf15e65907386f6946934487eaf0e6;
    uint256 private constant _IC0_X = 0x1f69324ff700448387bfc6ed7d02bb9afec2be135ab49a767e01df980d5cc6f9;
    uint256 private constant _IC0_Y = 0x0de880d35a5615ddd0c8bf7212fe73b5fbbef0b894b9584b30130875d1019534;
    uint256 private constant _IC1_X = 0x0605ff924e7509d5ec18b3b4d1cf8136341d2404438ed038cfc778129791a11a;
    uint256 private constant _IC1_Y = 0x199a16abebe313de6d4ef00e88ddfdac04d6b5ea4e9101f9e258ce0906a84f5d;

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
