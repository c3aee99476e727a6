//! The whole verifier circuit on the fixture, with the production gate evaluator.

use ark_bn254::Fr;
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystem};
use plonky2::field::types::Field;

use super::fixture;
use crate::{settlement_input, FinalProof, FinalVerifierCircuit, F};

/// Runs the verifier on `proof`; returns (satisfied, constraints).
fn run(proof: &FinalProof) -> (bool, usize) {
    let fx = fixture();
    let cs = ConstraintSystem::<Fr>::new_ref();
    let circuit = FinalVerifierCircuit { common: &fx.common, verifier_only: &fx.verifier_only, proof: Some(proof) };
    circuit.generate_constraints(cs.clone()).unwrap();
    (cs.is_satisfied().unwrap(), cs.num_constraints())
}

#[test]
fn the_fixture_verifies_with_one_public_input() {
    let fx = fixture();
    let (ok, constraints) = run(&fx.proof);
    assert!(ok);
    println!("whole verifier, 2 queries: {constraints} constraints");
    assert!(settlement_input(&fx.proof).unwrap() != Fr::from(0u64));
}

#[test]
fn tampering_anywhere_fails() {
    type Tamper = fn(&mut FinalProof);
    let cases: [(&str, Tamper); 5] = [
        ("public input", |p| p.public_inputs[7] += F::ONE),
        ("wire opening", |p| {
            p.proof.openings.wires[3] += plonky2::field::extension::quadratic::QuadraticExtension([F::ONE, F::ZERO])
        }),
        ("final polynomial", |p| {
            p.proof.opening_proof.final_poly.coeffs[0] +=
                plonky2::field::extension::quadratic::QuadraticExtension([F::ONE, F::ZERO])
        }),
        ("pow witness", |p| p.proof.opening_proof.pow_witness += F::ONE),
        ("quotient opening", |p| {
            p.proof.openings.quotient_polys[1] +=
                plonky2::field::extension::quadratic::QuadraticExtension([F::ZERO, F::ONE])
        }),
    ];
    for (what, tamper) in cases {
        let mut proof = fixture().proof.clone();
        tamper(&mut proof);
        assert!(!run(&proof).0, "{what}");
    }
}
