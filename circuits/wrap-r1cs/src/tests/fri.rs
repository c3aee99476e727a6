//! FRI verification in R1CS on the fixture: satisfied for the real proof, unsatisfied for each
//! kind of tampering the transcript alone does not catch.

use plonky2::field::extension::quadratic::QuadraticExtension;
use plonky2::field::types::Field;

use super::{fixture, synthesize};
use crate::{verify_fri, FinalProof, F};

fn fri_holds(proof: &FinalProof) -> bool {
    let fx = fixture();
    let s = synthesize(Some(proof), &fx.common, &fx.digest()).unwrap();
    let before = s.cs.num_constraints();
    let cap: Vec<_> = fx
        .verifier_only
        .constants_sigmas_cap
        .0
        .iter()
        .map(|h| ark_r1cs_std::fields::fp::FpVar::Constant(h.0))
        .collect();
    verify_fri(&s.proof, &s.challenges, &cap, &fx.common).unwrap();
    // 2 queries (INSECURE_TEST fixture); see the crate docs for the per-query split.
    assert!(s.cs.num_constraints() - before < 200_000);
    s.cs.is_satisfied().unwrap()
}

#[test]
fn the_fixture_passes_fri() {
    assert!(fri_holds(&fixture().proof));
}

#[test]
fn tampered_fri_data_fails() {
    type Tamper = fn(&mut FinalProof);
    let cases: [(&str, Tamper); 6] = [
        ("initial leaf value (wires)", |p| {
            p.proof.opening_proof.query_round_proofs[0].initial_trees_proof.evals_proofs[1].0[7] += F::ONE
        }),
        ("initial Merkle sibling", |p| {
            let s = &mut p.proof.opening_proof.query_round_proofs[1].initial_trees_proof.evals_proofs[3].1.siblings[2];
            *s = tgrid_poseidon_bn254::Bn254HashOut(s.0 + ark_bn254::Fr::from(1u64));
        }),
        ("FRI step evaluation at the query", |p| {
            p.proof.opening_proof.query_round_proofs[0].steps[0].evals[1] += QuadraticExtension([F::ONE, F::ZERO])
        }),
        ("FRI step evaluation elsewhere in the coset", |p| {
            p.proof.opening_proof.query_round_proofs[1].steps[2].evals[3] += QuadraticExtension([F::ZERO, F::ONE])
        }),
        ("FRI step Merkle sibling", |p| {
            let s = &mut p.proof.opening_proof.query_round_proofs[0].steps[1].merkle_proof.siblings[0];
            *s = tgrid_poseidon_bn254::Bn254HashOut(s.0 + ark_bn254::Fr::from(1u64));
        }),
        ("opening at zeta (constants)", |p| p.proof.openings.constants[2] += QuadraticExtension([F::ONE, F::ZERO])),
    ];
    for (what, tamper) in cases {
        let mut proof = fixture().proof.clone();
        tamper(&mut proof);
        assert!(!fri_holds(&proof), "{what}");
    }
}
