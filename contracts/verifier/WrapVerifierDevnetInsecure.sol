// SPDX-License-Identifier: MIT
// GENERATED FILE — do not edit. Rendered by scripts/foundry/gen-verifier.js from
// contracts/test/fixtures/groth16/wrap-production-r4q21g16-b2040e15e164b7bb-6f990bdc6e64c4c2d710109c5ea949d3ceec7851903ff7a22665a9a12f725714-insecure-devnet.vk.json (key id "wrap-production-r4q21g16-b2040e15e164b7bb-6f990bdc6e64c4c2d710109c5ea949d3ceec7851903ff7a22665a9a12f725714-insecure-devnet").
// Regenerate: node scripts/foundry/gen-verifier.js --vk contracts/test/fixtures/groth16/wrap-production-r4q21g16-b2040e15e164b7bb-6f990bdc6e64c4c2d710109c5ea949d3ceec7851903ff7a22665a9a12f725714-insecure-devnet.vk.json --out contracts/verifier/WrapVerifierDevnetInsecure.sol --name WrapVerifierDevnetInsecure --key-id wrap-production-r4q21g16-b2040e15e164b7bb-6f990bdc6e64c4c2d710109c5ea949d3ceec7851903ff7a22665a9a12f725714-insecure-devnet
pragma solidity ^0.8.24;

import {IGroth16Verifier} from "../interfaces/IGroth16Verifier.sol";

/// @title WrapVerifierDevnetInsecure
/// @notice Groth16 verifier over BN254 for exactly one public input, using the EIP-196 (add, mul)
/// and EIP-197 (pairing) precompiles. Proof layout and public input: docs/encodings.md.
/// @dev Verifying key "wrap-production-r4q21g16-b2040e15e164b7bb-6f990bdc6e64c4c2d710109c5ea949d3ceec7851903ff7a22665a9a12f725714-insecure-devnet". A wrap key id names the wrapped proof's FRI parameters and
/// the R1CS digest (docs/wrap.md); one ending in "-insecure-devnet" (or any "insecure" id) marks a
/// key whose toxic waste is public: such a verifier must never guard real value.
/// Checks: publicInput < r (scalar field), every proof coordinate < p (base field), points on the
/// curve and G2 in its subgroup (by the precompiles), then
/// e(-A, B) * e(alpha, beta) * e(IC0 + publicInput * IC1, gamma) * e(C, delta) == 1.
/// Returns false for any invalid proof; never reverts for malformed input. A malformed point makes a
/// precompile fail, which consumes the (capped) gas forwarded to it.
contract WrapVerifierDevnetInsecure is IGroth16Verifier {
    /// @notice Identifier of the verifying key this verifier was generated from.
    string public constant VERIFYING_KEY_ID = "wrap-production-r4q21g16-b2040e15e164b7bb-6f990bdc6e64c4c2d710109c5ea949d3ceec7851903ff7a22665a9a12f725714-insecure-devnet";
    /// @notice sha256 of the key's 18 coordinates as 32-byte big-endian words in EIP-197 order
    /// (alpha, beta, gamma, delta, IC0, IC1); see scripts/foundry/gen-verifier.js.
    bytes32 public constant VERIFYING_KEY_DIGEST = 0x827112031abcb8017c32b9ad02a5b411034c26190379285827a5b259ba660d53;

    // BN254 base field modulus p and scalar field modulus r.
    uint256 private constant _P = 0x30644e72e131a029b85045b68181585d97816a916871ca8d3c208c16d87cfd47;
    uint256 private constant _R = 0x30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001;

    // Gas forwarded to each precompile: their Byzantium (pre-EIP-1108) prices, several times the
    // current ones (add 150, mul 6,000, 4-pair pairing 181,000), so a malformed proof, which makes a
    // precompile fail and consume everything it was given, cannot burn the caller's whole gas.
    uint256 private constant _ADD_GAS = 500;
    uint256 private constant _MUL_GAS = 40_000;
    uint256 private constant _PAIRING_GAS = 420_000;

    uint256 private constant _ALPHA_X = 0x0466b45473406554fcfea7750af6980812e06d896da3e5fa1c809516b77ae3d8;
    uint256 private constant _ALPHA_Y = 0x0102c73c9cedaf3bf9366e07039e0d9eeddfd58a9fc74a2cb4e452bec426f331;
    uint256 private constant _BETA_X1 = 0x0d25e8536efee062b8fea49a26d873621775d4ba42076309402df8bd2a021127;
    uint256 private constant _BETA_X0 = 0x245484d837b80c45acc2bdebe40f40d0f782cfc91672af26f73b9aa596b1b48d;
    uint256 private constant _BETA_Y1 = 0x20b8f57b1b92842283524083a936c2f797f8d1642a20d03bd5b555e972722625;
    uint256 private constant _BETA_Y0 = 0x1b8be43da9a52be657e9158f44ddfb3a06af7eb643558b46397aa27b50b14017;
    uint256 private constant _GAMMA_X1 = 0x022b81913f43eda6630ff988d7238bda9207497e7202e1d8e4953cb616c2cafb;
    uint256 private constant _GAMMA_X0 = 0x1d3223523f86a0a5a341f8ebb76c8d4e3665155a1b4b4d59c1feb0e77922a0f2;
    uint256 private constant _GAMMA_Y1 = 0x1408b0a017af3c7d84f8f595504397f664b83d584e9e0b6d53bf3c797101ac14;
    uint256 private constant _GAMMA_Y0 = 0x1991b1d5809dfbb28ad3d8ce75f631634efc6e2a91b29ba32954136e7f63bbba;
    uint256 private constant _DELTA_X1 = 0x1a6b352589870ec0e387ebbe5be2fc217ec7277e98951cb3dae69d16474e12c9;
    uint256 private constant _DELTA_X0 = 0x295c454069b48981726f188decaec658904c8a11c3caebf2da04aebd5b56644c;
    uint256 private constant _DELTA_Y1 = 0x0c65a324cfb447af7228c39f5c792c5a586e61db9021ab2357f32148f5331d08;
    uint256 private constant _DELTA_Y0 = 0x11705cca21184ef714ee66289a17952fa6e17554ea48c04f2a510289bb7914c6;
    uint256 private constant _IC0_X = 0x1cc6d790d3696d16c5d9e863ffe6dd3dffb0d4d3a7a7880be13b3d9fe7470840;
    uint256 private constant _IC0_Y = 0x1e55b57677c58a31cfd4a78d01a18827204d55dfdb5ea76f3d0ee8c80e070f27;
    uint256 private constant _IC1_X = 0x02b6debfab8a6480bb41d23877c5acc11046a700a32b0890e7f8a3deebae1386;
    uint256 private constant _IC1_Y = 0x22c18614b868fe078392a3108930dc9435734682caf56aa89b663b84be2249e0;

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
