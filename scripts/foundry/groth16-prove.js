#!/usr/bin/env node
// Proves a public input with the INSECURE devnet Groth16 fixture
// (contracts/test/fixtures/groth16/devnet-insecure.{wasm,zkey}) and prints the proof as the
// ABI encoding of uint256[8] in the docs/encodings.md layout
//   [A.x, A.y, B.x.c1, B.x.c0, B.y.c1, B.y.c0, C.x, C.y]
// as one 0x-hex string (what forge's vm.ffi decodes). Used by the forge tests.
// Usage: node scripts/foundry/groth16-prove.js <publicInput (decimal or 0x-hex)> [--json]
'use strict';

const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const FIX = path.join(ROOT, 'contracts', 'test', 'fixtures', 'groth16');
const SCALAR_R = 0x30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001n;

async function main() {
  const arg = process.argv[2];
  if (!arg) throw new Error('usage: groth16-prove.js <publicInput> [--json]');
  const x = BigInt(arg);
  if (x < 0n || x >= SCALAR_R) throw new Error('public input must be below the BN254 scalar field modulus');
  const snarkjs = await import(path.join(ROOT, 'node_modules', 'snarkjs', 'main.js'));
  // Witness of the devnet circuit: x = a * b with a = x, b = 1.
  const { proof, publicSignals } = await snarkjs.groth16.fullProve(
    { x: x.toString(), a: x.toString(), b: '1' },
    path.join(FIX, 'devnet-insecure.wasm'),
    path.join(FIX, 'devnet-insecure.zkey'),
    undefined,
    undefined,
    { singleThread: true },
  );
  if (publicSignals.length !== 1 || BigInt(publicSignals[0]) !== x) throw new Error('unexpected public signals');
  // snarkjs G2 coordinates are [c0, c1]; EIP-197 wants c1 first.
  const words = [
    proof.pi_a[0], proof.pi_a[1],
    proof.pi_b[0][1], proof.pi_b[0][0], proof.pi_b[1][1], proof.pi_b[1][0],
    proof.pi_c[0], proof.pi_c[1],
  ].map((v) => BigInt(v));
  if (process.argv.includes('--json')) {
    process.stdout.write(JSON.stringify(words.map((w) => '0x' + w.toString(16).padStart(64, '0'))) + '\n');
  } else {
    process.stdout.write('0x' + words.map((w) => w.toString(16).padStart(64, '0')).join(''));
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`groth16-prove: ${err.stack || err}\n`);
    process.exit(1);
  },
);
