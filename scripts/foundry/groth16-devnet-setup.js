#!/usr/bin/env node
// Regenerates the INSECURE devnet Groth16 fixture under contracts/test/fixtures/groth16/:
//   devnet-insecure.circom  -> (circom2) r1cs + wasm witness generator
//   powers of tau (2^3) and the circuit-specific phase 2, each finished with a *public*
//   beacon (fixed hash, 2^10 iterations) instead of secret entropy: the toxic waste is
//   derivable by anyone, so proofs can be forged. Devnet and tests only.
//   -> devnet-insecure.wasm, devnet-insecure.zkey, devnet-insecure.vk.json
// Deterministic: rerunning gives the same zkey and verifying key.
// Usage: node scripts/foundry/groth16-devnet-setup.js
'use strict';

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const FIX = path.join(ROOT, 'contracts', 'test', 'fixtures', 'groth16');
const NAME = 'devnet-insecure';
// Public "entropy": everyone knows it. Never use such a key outside a devnet.
const INSECURE_BEACON = '0000000000000000000000000000000000000000000000000000000000000000';
const BEACON_ITER_EXP = 10;
const POWER = 3; // 2^3 constraints is plenty for one multiplication plus the public input

async function main() {
  const snarkjs = await import(path.join(ROOT, 'node_modules', 'snarkjs', 'main.js'));
  const { getCurveFromName } = await import(path.join(ROOT, 'node_modules', 'ffjavascript', 'main.js'));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tgrid-groth16-'));
  const t = (f) => path.join(tmp, f);

  execFileSync(
    path.join(ROOT, 'node_modules', '.bin', 'circom2'),
    [path.join(FIX, `${NAME}.circom`), '--r1cs', '--wasm', '-o', tmp],
    { stdio: 'inherit' },
  );

  const curve = await getCurveFromName('bn128', { singleThread: true });
  await snarkjs.powersOfTau.newAccumulator(curve, POWER, t('pot0.ptau'));
  await snarkjs.powersOfTau.beacon(t('pot0.ptau'), t('pot1.ptau'), `${NAME} phase1`, INSECURE_BEACON, BEACON_ITER_EXP);
  await snarkjs.powersOfTau.preparePhase2(t('pot1.ptau'), t('pot.ptau'));
  await snarkjs.zKey.newZKey(t(`${NAME}.r1cs`), t('pot.ptau'), t('z0.zkey'));
  await snarkjs.zKey.beacon(t('z0.zkey'), path.join(FIX, `${NAME}.zkey`), `${NAME} phase2`, INSECURE_BEACON, BEACON_ITER_EXP);

  const vk = await snarkjs.zKey.exportVerificationKey(path.join(FIX, `${NAME}.zkey`));
  fs.writeFileSync(path.join(FIX, `${NAME}.vk.json`), JSON.stringify(vk, null, 1) + '\n');
  fs.copyFileSync(path.join(tmp, `${NAME}_js`, `${NAME}.wasm`), path.join(FIX, `${NAME}.wasm`));
  await curve.terminate();
  fs.rmSync(tmp, { recursive: true, force: true });
  process.stdout.write(`wrote ${path.relative(ROOT, FIX)}/${NAME}.{wasm,zkey,vk.json}\n`);
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${err.stack || err}\n`);
    process.exit(1);
  },
);
