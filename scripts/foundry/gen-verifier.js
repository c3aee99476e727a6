#!/usr/bin/env node
// Renders a Solidity Groth16 (BN254) verifier implementing IGroth16Verifier
// (contracts/interfaces/IGroth16Verifier.sol, docs/encodings.md) from a verifying-key JSON.
//
// Input: the snarkjs verification-key JSON format (what `snarkjs zkey export verificationkey`
// writes, and what the Rust wrap is expected to emit): protocol "groth16", curve "bn128",
// nPublic 1, vk_alpha_1 [x, y, "1"], vk_beta_2 / vk_gamma_2 / vk_delta_2
// [[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]], IC [[x, y, "1"], [x, y, "1"]], decimal strings.
// G2 coordinates are reordered to the EIP-197 layout (imaginary coefficient first).
//
// Usage:
//   node scripts/foundry/gen-verifier.js [--vk FILE] [--out FILE] [--name CONTRACT] [--key-id ID]
//   node scripts/foundry/gen-verifier.js ... --check   exit 1 if --out differs from the rendering
//   node scripts/foundry/gen-verifier.js ... --hex     print the rendering as 0x-hex (forge ffi)
// Defaults: --vk contracts/test/fixtures/groth16/devnet-insecure.vk.json,
//           --out contracts/verifier/Groth16Verifier.sol, --name Groth16Verifier,
//           --key-id the vk file's "tgrid_key_id" (the Rust wrap writes it: FRI parameters, final
//           circuit and R1CS digest, docs/wrap.md), else its name without .vk.json / .json.
'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
// BN254 base field modulus p (coordinates) and scalar field modulus r (public inputs).
const BASE_P = 0x30644e72e131a029b85045b68181585d97816a916871ca8d3c208c16d87cfd47n;
const SCALAR_R = 0x30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001n;

function parseArgs(argv) {
  const opts = {
    vk: 'contracts/test/fixtures/groth16/devnet-insecure.vk.json',
    out: 'contracts/verifier/Groth16Verifier.sol',
    name: 'Groth16Verifier',
    keyId: undefined,
    check: false,
    hex: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--vk') opts.vk = next();
    else if (a === '--out') opts.out = next();
    else if (a === '--name') opts.name = next();
    else if (a === '--key-id') opts.keyId = next();
    else if (a === '--check') opts.check = true;
    else if (a === '--hex') opts.hex = true;
    else throw new Error(`unknown argument ${a}`);
  }
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(opts.name)) throw new Error(`bad contract name ${opts.name}`);
  return opts;
}

// The key id: --key-id, else the one the vk file records, else the file's name.
function resolveKeyId(opts, vkJson) {
  if (opts.keyId === undefined) {
    opts.keyId = typeof vkJson.tgrid_key_id === 'string'
      ? vkJson.tgrid_key_id
      : path.basename(opts.vk).replace(/\.vk\.json$/, '').replace(/\.json$/, '');
  }
  if (!/^[A-Za-z0-9._-]+$/.test(opts.keyId)) throw new Error(`bad key id ${opts.keyId}`);
}

function fe(v, what) {
  if (typeof v !== 'string' && typeof v !== 'number') throw new Error(`${what}: expected a decimal string`);
  const s = String(v);
  if (!/^[0-9]+$/.test(s)) throw new Error(`${what}: expected a decimal string, got ${s}`);
  const x = BigInt(s);
  if (x >= BASE_P) throw new Error(`${what}: coordinate not below the BN254 base field modulus`);
  return x;
}

function g1(p, what) {
  if (!Array.isArray(p) || p.length < 2) throw new Error(`${what}: expected [x, y, 1]`);
  if (p.length > 2 && String(p[2]) !== '1') throw new Error(`${what}: expected affine coordinates (z = 1)`);
  return { x: fe(p[0], `${what}.x`), y: fe(p[1], `${what}.y`) };
}

function g2(p, what) {
  if (!Array.isArray(p) || p.length < 2) throw new Error(`${what}: expected [[x0, x1], [y0, y1], [1, 0]]`);
  if (p.length > 2 && (String(p[2][0]) !== '1' || String(p[2][1]) !== '0')) {
    throw new Error(`${what}: expected affine coordinates (z = 1)`);
  }
  // snarkjs order is [c0, c1]; EIP-197 wants the imaginary part (c1) first.
  return {
    x1: fe(p[0][1], `${what}.x.c1`),
    x0: fe(p[0][0], `${what}.x.c0`),
    y1: fe(p[1][1], `${what}.y.c1`),
    y0: fe(p[1][0], `${what}.y.c0`),
  };
}

function loadVk(vk) {
  if (vk.protocol !== 'groth16') throw new Error('vk.protocol must be "groth16"');
  if (vk.curve !== 'bn128' && vk.curve !== 'bn254') throw new Error('vk.curve must be "bn128" (BN254)');
  if (Number(vk.nPublic) !== 1) throw new Error('vk.nPublic must be 1 (docs/encodings.md: one public input)');
  if (!Array.isArray(vk.IC) || vk.IC.length !== 2) throw new Error('vk.IC must have exactly 2 points');
  return {
    alpha: g1(vk.vk_alpha_1, 'vk_alpha_1'),
    beta: g2(vk.vk_beta_2, 'vk_beta_2'),
    gamma: g2(vk.vk_gamma_2, 'vk_gamma_2'),
    delta: g2(vk.vk_delta_2, 'vk_delta_2'),
    ic0: g1(vk.IC[0], 'IC[0]'),
    ic1: g1(vk.IC[1], 'IC[1]'),
  };
}

const hex32 = (x) => '0x' + x.toString(16).padStart(64, '0');

// sha256 over the 18 big-endian 32-byte words of the key in EIP-197 order:
// alpha.x, alpha.y, beta(x.c1, x.c0, y.c1, y.c0), gamma(..), delta(..), IC0.x, IC0.y, IC1.x, IC1.y.
function keyDigest(k) {
  const words = [
    k.alpha.x, k.alpha.y,
    k.beta.x1, k.beta.x0, k.beta.y1, k.beta.y0,
    k.gamma.x1, k.gamma.x0, k.gamma.y1, k.gamma.y0,
    k.delta.x1, k.delta.x0, k.delta.y1, k.delta.y0,
    k.ic0.x, k.ic0.y, k.ic1.x, k.ic1.y,
  ];
  const buf = Buffer.concat(words.map((w) => Buffer.from(w.toString(16).padStart(64, '0'), 'hex')));
  return '0x' + crypto.createHash('sha256').update(buf).digest('hex');
}

function render(k, opts, vkPathForHeader) {
  const c = (name, v) => `    uint256 private constant ${name} = ${hex32(v)};`;
  return `// SPDX-License-Identifier: MIT
// GENERATED FILE — do not edit. Rendered by scripts/foundry/gen-verifier.js from
// ${vkPathForHeader} (key id "${opts.keyId}").
// Regenerate: node scripts/foundry/gen-verifier.js --vk ${vkPathForHeader} --out ${opts.out} --name ${opts.name} --key-id ${opts.keyId}
pragma solidity ^0.8.24;

import {IGroth16Verifier} from "${path.posix.relative(path.posix.dirname(opts.out), 'contracts/interfaces/IGroth16Verifier.sol').replace(/^(?!\.)/, './')}";

/// @title ${opts.name}
/// @notice Groth16 verifier over BN254 for exactly one public input, using the EIP-196 (add, mul)
/// and EIP-197 (pairing) precompiles. Proof layout and public input: docs/encodings.md.
/// @dev Verifying key "${opts.keyId}". A wrap key id names the wrapped proof's FRI parameters and
/// the R1CS digest (docs/wrap.md); one ending in "-insecure-devnet" (or any "insecure" id) marks a
/// key whose toxic waste is public: such a verifier must never guard real value.
/// Checks: publicInput < r (scalar field), every proof coordinate < p (base field), points on the
/// curve and G2 in its subgroup (by the precompiles), then
/// e(-A, B) * e(alpha, beta) * e(IC0 + publicInput * IC1, gamma) * e(C, delta) == 1.
/// Returns false for any invalid proof; never reverts for malformed input. A malformed point makes a
/// precompile fail, which consumes the (capped) gas forwarded to it.
contract ${opts.name} is IGroth16Verifier {
    /// @notice Identifier of the verifying key this verifier was generated from.
    string public constant VERIFYING_KEY_ID = "${opts.keyId}";
    /// @notice sha256 of the key's 18 coordinates as 32-byte big-endian words in EIP-197 order
    /// (alpha, beta, gamma, delta, IC0, IC1); see scripts/foundry/gen-verifier.js.
    bytes32 public constant VERIFYING_KEY_DIGEST = ${keyDigest(k)};

    // BN254 base field modulus p and scalar field modulus r.
    uint256 private constant _P = ${hex32(BASE_P)};
    uint256 private constant _R = ${hex32(SCALAR_R)};

    // Gas forwarded to each precompile: their Byzantium (pre-EIP-1108) prices, several times the
    // current ones (add 150, mul 6,000, 4-pair pairing 181,000), so a malformed proof, which makes a
    // precompile fail and consume everything it was given, cannot burn the caller's whole gas.
    uint256 private constant _ADD_GAS = 500;
    uint256 private constant _MUL_GAS = 40_000;
    uint256 private constant _PAIRING_GAS = 420_000;

${c('_ALPHA_X', k.alpha.x)}
${c('_ALPHA_Y', k.alpha.y)}
${c('_BETA_X1', k.beta.x1)}
${c('_BETA_X0', k.beta.x0)}
${c('_BETA_Y1', k.beta.y1)}
${c('_BETA_Y0', k.beta.y0)}
${c('_GAMMA_X1', k.gamma.x1)}
${c('_GAMMA_X0', k.gamma.x0)}
${c('_GAMMA_Y1', k.gamma.y1)}
${c('_GAMMA_Y0', k.gamma.y0)}
${c('_DELTA_X1', k.delta.x1)}
${c('_DELTA_X0', k.delta.x0)}
${c('_DELTA_Y1', k.delta.y1)}
${c('_DELTA_Y0', k.delta.y0)}
${c('_IC0_X', k.ic0.x)}
${c('_IC0_Y', k.ic0.y)}
${c('_IC1_X', k.ic1.x)}
${c('_IC1_Y', k.ic1.y)}

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
`;
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const vkAbs = path.resolve(ROOT, opts.vk);
  const vkRel = path.relative(ROOT, vkAbs).split(path.sep).join('/');
  opts.out = path.relative(ROOT, path.resolve(ROOT, opts.out)).split(path.sep).join('/');
  const vkJson = JSON.parse(fs.readFileSync(vkAbs, 'utf8'));
  resolveKeyId(opts, vkJson);
  const source = render(loadVk(vkJson), opts, vkRel);
  const outAbs = path.join(ROOT, opts.out);
  if (opts.hex) {
    process.stdout.write('0x' + Buffer.from(source, 'utf8').toString('hex'));
  } else if (opts.check) {
    const current = fs.existsSync(outAbs) ? fs.readFileSync(outAbs, 'utf8') : null;
    if (current !== source) {
      process.stderr.write(`${opts.out} is stale: regenerate it from ${vkRel}\n`);
      process.exit(1);
    }
    process.stdout.write(`${opts.out} matches ${vkRel}\n`);
  } else {
    fs.mkdirSync(path.dirname(outAbs), { recursive: true });
    fs.writeFileSync(outAbs, source);
    process.stdout.write(`wrote ${opts.out}\n`);
  }
}

try {
  main();
} catch (err) {
  process.stderr.write(`gen-verifier: ${err.message}\n`);
  process.exit(1);
}
