//! A full Groth16 setup and proof of the verifier circuit on the fixture (the CI's one real
//! setup): the INSECURE devnet key derived from its public seed must be the one committed for the
//! contracts (`contracts/test/fixtures/groth16/wrap-insecure-test.vk.json`, rendered into
//! `contracts/verifier/WrapVerifierInsecureTest.sol`), a fresh proof verifies, and so does the
//! committed proof the forge test checks on the EVM.

use alloy_primitives::U256;
use ark_ff::PrimeField;
use rand::SeedableRng;
use tgrid_groth16::evm::{proof_from_calldata, verifying_key_json};
use tgrid_groth16::keys::insecure_devnet_setup;
use tgrid_groth16::{prove, verify, CpuBackend};

use super::fixture;
use crate::testing::WRAP_TEST_INSECURE_SEED;
use crate::{settlement_input, FinalVerifierCircuit};

const CONTRACT_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../contracts/test/fixtures/groth16");

#[test]
fn groth16_setup_and_proof_match_the_committed_evm_fixture() {
    let fx = fixture();
    let circuit = |with_proof: bool| FinalVerifierCircuit {
        common: &fx.common,
        verifier_only: &fx.verifier_only,
        proof: with_proof.then_some(&fx.proof),
    };
    let pk = insecure_devnet_setup(circuit(false), WRAP_TEST_INSECURE_SEED).unwrap();
    let committed: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{CONTRACT_FIXTURES}/wrap-insecure-test.vk.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        verifying_key_json(&pk.vk).unwrap(),
        committed,
        "the verifier circuit changed: regenerate with `cargo run -p tgrid-wrap-r1cs --example groth16_fixture` and gen-verifier.js"
    );

    let x = settlement_input(&fx.proof).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let (proof, _) = prove(&pk, circuit(true), &CpuBackend, &mut rng).unwrap();
    assert!(verify(&pk.vk, x, &proof).unwrap());
    assert!(!verify(&pk.vk, x + ark_bn254::Fr::from(1u64), &proof).unwrap());

    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{CONTRACT_FIXTURES}/wrap-insecure-test.proof.json")).unwrap(),
    )
    .unwrap();
    let word = |v: &serde_json::Value| U256::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    let words: [U256; 8] = std::array::from_fn(|i| word(&json["proof"][i]));
    let committed_proof = proof_from_calldata(&words).unwrap();
    assert_eq!(word(&json["publicInput"]), U256::from_limbs(x.into_bigint().0));
    assert!(verify(&pk.vk, x, &committed_proof).unwrap());
}
