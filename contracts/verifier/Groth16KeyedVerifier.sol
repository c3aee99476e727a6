// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IGroth16Verifier} from "../interfaces/IGroth16Verifier.sol";

/// @title Groth16KeyedVerifier
/// @notice Groth16 verifier over BN254 for exactly one public input whose verifying key is given
/// at construction instead of rendered into the source: one audited contract serves any key
/// (a ceremony key, or a devnet key made by `tgrid-sequencer` for other FRI parameters) without
/// generating and compiling a new contract. Same checks, proof layout and gas as the generated
/// verifiers (contracts/verifier/WrapVerifierDevnetInsecure.sol): the key lives in immutables,
/// which cost a PUSH32 each, not storage reads.
/// @dev Key words, EIP-197 order: alpha (x, y), beta / gamma / delta (x.c1, x.c0, y.c1, y.c0),
/// IC0 (x, y), IC1 (x, y). A key id containing "insecure" marks a devnet key whose toxic waste is
/// public: such a verifier must never guard real value.
contract Groth16KeyedVerifier is IGroth16Verifier {
    /// @notice A key word is not a canonical BN254 base field element.
    /// @param index Position of the word in the key.
    error KeyWordOutOfField(uint256 index);

    /// @notice The key id is empty.
    error EmptyKeyId();

    /// @notice A key point is the point at infinity, off the curve, or (G2) outside the
    /// prime-order subgroup: a verifier built on it could accept forged proofs.
    /// @param index Position of the point's first word in the key.
    error KeyPointInvalid(uint256 index);

    /// @notice Identifier of the verifying key (e.g. the `tgrid-sequencer` key cache name).
    string public VERIFYING_KEY_ID;
    /// @notice sha256 of the key's 18 words as 32-byte big-endian words in EIP-197 order, the
    /// digest `tgrid-sequencer` prints and the generated verifiers expose.
    bytes32 public immutable VERIFYING_KEY_DIGEST;

    // BN254 base field modulus p and scalar field modulus r.
    uint256 private constant _P = 0x30644e72e131a029b85045b68181585d97816a916871ca8d3c208c16d87cfd47;
    uint256 private constant _R = 0x30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001;

    // Gas forwarded to each precompile: several times their current prices, so a malformed proof
    // (which makes a precompile consume everything it was given) cannot burn the caller's gas.
    uint256 private constant _ADD_GAS = 500;
    uint256 private constant _MUL_GAS = 40_000;
    uint256 private constant _PAIRING_GAS = 420_000;

    uint256 private immutable _ALPHA_X;
    uint256 private immutable _ALPHA_Y;
    uint256 private immutable _BETA_X1;
    uint256 private immutable _BETA_X0;
    uint256 private immutable _BETA_Y1;
    uint256 private immutable _BETA_Y0;
    uint256 private immutable _GAMMA_X1;
    uint256 private immutable _GAMMA_X0;
    uint256 private immutable _GAMMA_Y1;
    uint256 private immutable _GAMMA_Y0;
    uint256 private immutable _DELTA_X1;
    uint256 private immutable _DELTA_X0;
    uint256 private immutable _DELTA_Y1;
    uint256 private immutable _DELTA_Y0;
    uint256 private immutable _IC0_X;
    uint256 private immutable _IC0_Y;
    uint256 private immutable _IC1_X;
    uint256 private immutable _IC1_Y;

    /// @param key The 18 key words in EIP-197 order (see the contract's notes).
    /// @param keyId Identifier of the key; keep "insecure" in it for a key from a public seed.
    constructor(uint256[18] memory key, string memory keyId) {
        if (bytes(keyId).length == 0) revert EmptyKeyId();
        for (uint256 i = 0; i < 18; ++i) {
            if (key[i] >= _P) revert KeyWordOutOfField(i);
        }
        _checkKeyPoints(key);
        VERIFYING_KEY_ID = keyId;
        VERIFYING_KEY_DIGEST = sha256(abi.encodePacked(key));
        (_ALPHA_X, _ALPHA_Y) = (key[0], key[1]);
        (_BETA_X1, _BETA_X0, _BETA_Y1, _BETA_Y0) = (key[2], key[3], key[4], key[5]);
        (_GAMMA_X1, _GAMMA_X0, _GAMMA_Y1, _GAMMA_Y0) = (key[6], key[7], key[8], key[9]);
        (_DELTA_X1, _DELTA_X0, _DELTA_Y1, _DELTA_Y0) = (key[10], key[11], key[12], key[13]);
        (_IC0_X, _IC0_Y, _IC1_X, _IC1_Y) = (key[14], key[15], key[16], key[17]);
    }

    /// @dev The precompiles do the curve arithmetic: EIP-196 addition fails for a G1 point off the
    /// curve (G1 has cofactor 1, so on the curve is in the group), and the EIP-197 pairing fails
    /// for a G2 point off the twist or outside the order-r subgroup; e(g1, Q) * e(-g1, Q) = 1
    /// holds for every valid Q. No point may be the point at infinity.
    function _checkKeyPoints(uint256[18] memory key) private view {
        uint8[3] memory g1 = [0, 14, 16];
        for (uint256 i = 0; i < 3; ++i) {
            uint256 first = g1[i];
            (uint256 x, uint256 y) = (key[first], key[first + 1]);
            (bool ok,) = address(0x06).staticcall{gas: _ADD_GAS}(abi.encode(x, y, x, y));
            if (!ok || (x | y) == 0) revert KeyPointInvalid(first);
        }
        for (uint256 first = 2; first < 14; first += 4) {
            (uint256 a, uint256 b, uint256 c, uint256 d) = (key[first], key[first + 1], key[first + 2], key[first + 3]);
            // (g1, Q), (-g1, Q) with g1 = (1, 2).
            bytes memory input = abi.encode(1, 2, a, b, c, d, 1, _P - 2, a, b, c, d);
            (bool ok, bytes memory out) = address(0x08).staticcall{gas: _PAIRING_GAS}(input);
            if (!ok || out.length != 32 || abi.decode(out, (uint256)) != 1 || (a | b | c | d) == 0) {
                revert KeyPointInvalid(first);
            }
        }
    }

    /// @inheritdoc IGroth16Verifier
    function verifyProof(uint256[8] calldata proof, uint256 publicInput) external view returns (bool) {
        // Inline assembly cannot read immutables: lay the pairing's constant words out in memory
        // first, at the offsets the assembly below fills around them.
        uint256[24] memory m;
        m[6] = _ALPHA_X;
        m[7] = _ALPHA_Y;
        m[8] = _BETA_X1;
        m[9] = _BETA_X0;
        m[10] = _BETA_Y1;
        m[11] = _BETA_Y0;
        m[14] = _GAMMA_X1;
        m[15] = _GAMMA_X0;
        m[16] = _GAMMA_Y1;
        m[17] = _GAMMA_Y0;
        m[20] = _DELTA_X1;
        m[21] = _DELTA_X0;
        m[22] = _DELTA_Y1;
        m[23] = _DELTA_Y0;
        uint256[4] memory scratch = [_IC1_X, _IC1_Y, publicInput, 0];
        (uint256 ic0x, uint256 ic0y) = (_IC0_X, _IC0_Y);
        bool ok;
        assembly ("memory-safe") {
            // Field checks: publicInput < r, every proof coordinate < p.
            ok := lt(publicInput, _R)
            for { let i := 0 } lt(i, 0x100) { i := add(i, 0x20) } {
                ok := and(ok, lt(calldataload(add(proof, i)), _P))
            }
            if ok {
                // vk_x = IC1 * publicInput (EIP-196 mul, 0x07) + IC0 (EIP-196 add, 0x06), written
                // straight into the third pair's G1 slot (words 12, 13).
                ok := and(ok, staticcall(_MUL_GAS, 0x07, scratch, 0x60, scratch, 0x40))
                mstore(add(scratch, 0x40), ic0x)
                mstore(add(scratch, 0x60), ic0y)
                ok := and(ok, staticcall(_ADD_GAS, 0x06, scratch, 0x80, add(m, 0x180), 0x40))
                // Pairing input: (-A, B), (alpha, beta), (vk_x, gamma), (C, delta); 4 x 192 bytes.
                mstore(m, calldataload(proof))
                mstore(add(m, 0x20), mod(sub(_P, calldataload(add(proof, 0x20))), _P))
                calldatacopy(add(m, 0x40), add(proof, 0x40), 0x80)
                calldatacopy(add(m, 0x240), add(proof, 0xc0), 0x40)
                ok := and(ok, staticcall(_PAIRING_GAS, 0x08, m, 0x300, m, 0x20))
                ok := and(ok, eq(mload(m), 1))
            }
        }
        return ok;
    }
}
