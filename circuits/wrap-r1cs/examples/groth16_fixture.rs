//! Groth16 over the R1CS verifier of the test fixture (`fixtures/`, INSECURE_TEST FRI
//! parameters), with the INSECURE devnet setup from a public seed: setup, prove, verify, then
//! write what the contracts' tests check on the EVM:
//!
//! - `contracts/test/fixtures/groth16/wrap-insecure-test.vk.json` (snarkjs format; the
//!   generated verifier `contracts/verifier/WrapVerifierInsecureTest.sol` is rendered from it);
//! - `contracts/test/fixtures/groth16/wrap-insecure-test.proof.json` (calldata words and the
//!   public input, 0x-hex).
//!
//! `cargo run -p tgrid-wrap-r1cs --example groth16_fixture` (a few minutes, ~3 GB), then
//! `node scripts/foundry/gen-verifier.js --vk contracts/test/fixtures/groth16/wrap-insecure-test.vk.json \
//!   --out contracts/verifier/WrapVerifierInsecureTest.sol --name WrapVerifierInsecureTest --key-id wrap-insecure-test`.

use std::path::PathBuf;

use rand::SeedableRng;
use tgrid_groth16::evm::{proof_calldata, verifying_key_json};
use tgrid_groth16::keys::insecure_devnet_setup;
use tgrid_groth16::{prove, verify, CpuBackend};
use tgrid_wrap_r1cs::testing::{fixture, WRAP_TEST_INSECURE_SEED};
use tgrid_wrap_r1cs::{settlement_input, FinalVerifierCircuit};

fn main() -> anyhow::Result<()> {
    let fx = fixture()?;
    let circuit = |with_proof: bool| FinalVerifierCircuit {
        common: &fx.common,
        verifier_only: &fx.verifier_only,
        proof: with_proof.then_some(&fx.proof),
    };
    eprintln!("INSECURE devnet setup (seed {WRAP_TEST_INSECURE_SEED}): test keys only");
    let t = std::time::Instant::now();
    let pk = insecure_devnet_setup(circuit(false), WRAP_TEST_INSECURE_SEED)?;
    let setup_s = t.elapsed().as_secs_f64();
    let mut rng = rand::rngs::StdRng::from_entropy();
    let (proof, stats) = prove(&pk, circuit(true), &CpuBackend, &mut rng)?;
    let x = settlement_input(&fx.proof)?;
    anyhow::ensure!(verify(&pk.vk, x, &proof)?, "the proof does not verify");

    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../contracts/test/fixtures/groth16");
    std::fs::write(
        dir.join("wrap-insecure-test.vk.json"),
        serde_json::to_string_pretty(&verifying_key_json(&pk.vk)?)? + "\n",
    )?;
    let words: Vec<String> = proof_calldata(&proof).iter().map(|w| format!("{w:#066x}")).collect();
    let x_hex = format!("{:#066x}", alloy_primitives::U256::from_limbs(ark_ff::PrimeField::into_bigint(x).0));
    let json = serde_json::json!({ "proof": words, "publicInput": x_hex });
    std::fs::write(dir.join("wrap-insecure-test.proof.json"), serde_json::to_string_pretty(&json)? + "\n")?;
    println!(
        "{{\"setup\":\"insecure-devnet\",\"setup_s\":{setup_s:.1},\"constraints\":{},\"prove\":{}}}",
        stats.constraints,
        serde_json::to_string(&stats)?
    );
    Ok(())
}
