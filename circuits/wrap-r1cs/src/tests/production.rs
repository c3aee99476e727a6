//! The whole R1CS verifier on a final-layer proof with the PRODUCTION FRI parameters (rate 4, 21
//! queries, 16 bits of grinding; `fixtures/production/`), the shape the deployed Groth16 key is
//! for, and not only on the 2-query test fixture: the honest proof satisfies it, and tampering
//! with what only the production shape has (a query past the second, the 16-bit grinding) does
//! not. Each case synthesizes the ~2 M constraints again (about 25 s in the test profile), so
//! the kinds of tampering the 2-query fixture already covers (`fri.rs`, `circuit.rs`) are not
//! repeated here.

use std::sync::OnceLock;

use ark_bn254::Fr;
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystem};
use plonky2::field::types::Field;
use plonky2::plonk::circuit_data::VerifierCircuitData;
use tgrid_wrap::FinalFri;

use crate::testing::{decode_fixture, Fixture};
use crate::{FinalProof, FinalVerifierCircuit, F};

fn production() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        decode_fixture(
            include_bytes!("../../fixtures/production/final_common.bin"),
            include_bytes!("../../fixtures/production/final_verifier_only.bin"),
            include_bytes!("../../fixtures/production/final_proof.bin"),
        )
        .expect("the committed production fixture decodes")
    })
}

/// Runs the whole verifier on `proof`; returns (satisfied, constraints).
fn run(proof: &FinalProof) -> (bool, usize) {
    let fx = production();
    let cs = ConstraintSystem::<Fr>::new_ref();
    let circuit = FinalVerifierCircuit { common: &fx.common, verifier_only: &fx.verifier_only, proof: Some(proof) };
    circuit.generate_constraints(cs.clone()).unwrap();
    (cs.is_satisfied().unwrap(), cs.num_constraints())
}

#[test]
fn the_production_fixture_has_the_production_parameters_and_verifies() {
    let fx = production();
    assert_eq!(fx.common.config, FinalFri::PRODUCTION.circuit_config());
    assert_eq!(fx.common.config.fri_config.num_query_rounds, 21);
    assert_eq!(fx.common.config.fri_config.proof_of_work_bits, 16);
    assert_eq!(fx.common.degree_bits(), 12);
    assert_eq!(fx.proof.proof.opening_proof.query_round_proofs.len(), 21);
    let data = VerifierCircuitData { verifier_only: fx.verifier_only.clone(), common: fx.common.clone() };
    data.verify(fx.proof.clone()).expect("plonky2 accepts the fixture");
}

#[test]
fn the_whole_verifier_accepts_the_production_proof_and_rejects_tampering() {
    let honest = &production().proof;
    let (ok, constraints) = run(honest);
    assert!(ok, "the honest production proof satisfies the verifier");
    println!("whole verifier, 21 queries: {constraints} constraints");
    assert!(constraints > 1_500_000, "{constraints}: not the production query count");

    type Tamper = fn(&mut FinalProof);
    let cases: [(&str, Tamper); 2] = [
        ("the last query's initial leaf (wires)", |p| {
            p.proof.opening_proof.query_round_proofs[20].initial_trees_proof.evals_proofs[1].0[7] += F::ONE
        }),
        ("the 16-bit grinding witness", |p| p.proof.opening_proof.pow_witness += F::ONE),
    ];
    for (what, tamper) in cases {
        let mut proof = honest.clone();
        tamper(&mut proof);
        assert!(!run(&proof).0, "{what}");
    }
}
