//! Malformed proofs are errors, not panics; setup mode synthesizes the same circuit without
//! values.

use ark_relations::gr1cs::SynthesisError;

use super::*;
use crate::Error;

/// Drops the last element.
fn shorten<T>(v: &mut Vec<T>) {
    v.pop();
}

/// A change to a proof.
type Edit = Box<dyn FnOnce(&mut FinalProof)>;

fn shape_error(edit: impl FnOnce(&mut FinalProof)) -> String {
    let f = fixture();
    let mut proof = f.proof.clone();
    edit(&mut proof);
    let cs = ConstraintSystem::<Fr>::new_ref();
    match ProofVar::new_witness(cs.clone(), Some(&proof), &f.common) {
        Err(Error::Shape { what, expected, got }) => {
            assert_ne!(expected, got);
            // Nothing was allocated.
            assert_eq!(cs.num_witness_variables(), 0);
            what
        }
        other => panic!("expected a shape error, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn wrong_lengths_are_shape_errors() {
    let cases: Vec<(&str, Edit)> = vec![
        ("public inputs", Box::new(|p| shorten(&mut p.public_inputs))),
        ("wires cap", Box::new(|p| shorten(&mut p.proof.wires_cap.0))),
        ("quotient cap", Box::new(|p| p.proof.quotient_polys_cap.0.push(Bn254HashOut::default()))),
        ("openings.wires", Box::new(|p| shorten(&mut p.proof.openings.wires))),
        ("openings.lookup_zs", Box::new(|p| p.proof.openings.lookup_zs.push(Default::default()))),
        ("commit-phase caps", Box::new(|p| shorten(&mut p.proof.opening_proof.commit_phase_merkle_caps))),
        ("commit-phase cap 1", Box::new(|p| shorten(&mut p.proof.opening_proof.commit_phase_merkle_caps[1].0))),
        ("query rounds", Box::new(|p| shorten(&mut p.proof.opening_proof.query_round_proofs))),
        (
            "query 1 tree 2 siblings",
            Box::new(|p| {
                shorten(&mut p.proof.opening_proof.query_round_proofs[1].initial_trees_proof.evals_proofs[2].1.siblings)
            }),
        ),
        (
            "query 0 tree 3 leaf",
            Box::new(|p| {
                p.proof.opening_proof.query_round_proofs[0].initial_trees_proof.evals_proofs[3].0.push(F::ONE)
            }),
        ),
        (
            "query 0 initial trees",
            Box::new(|p| shorten(&mut p.proof.opening_proof.query_round_proofs[0].initial_trees_proof.evals_proofs)),
        ),
        ("query 1 steps", Box::new(|p| shorten(&mut p.proof.opening_proof.query_round_proofs[1].steps))),
        (
            "query 0 step 3 evaluations",
            Box::new(|p| shorten(&mut p.proof.opening_proof.query_round_proofs[0].steps[3].evals)),
        ),
        (
            "query 1 step 0 siblings",
            Box::new(|p| shorten(&mut p.proof.opening_proof.query_round_proofs[1].steps[0].merkle_proof.siblings)),
        ),
        ("final polynomial", Box::new(|p| shorten(&mut p.proof.opening_proof.final_poly.coeffs))),
    ];
    for (what, edit) in cases {
        assert_eq!(shape_error(edit), what);
    }
}

#[test]
fn setup_mode_builds_the_same_circuit() {
    let f = fixture();
    let prove = synthesize(Some(&f.proof), &f.common, &f.digest()).unwrap();
    let setup = synthesize(None, &f.common, &f.digest()).unwrap();
    assert_eq!((setup.alloc, setup.transcript), (prove.alloc, prove.transcript));
    assert_eq!(setup.cs.num_witness_variables(), prove.cs.num_witness_variables());
    assert_eq!(setup.challenges.stats, prove.challenges.stats);
}

#[test]
fn missing_values_outside_setup_mode_are_an_error() {
    let f = fixture();
    let cs = ConstraintSystem::<Fr>::new_ref();
    assert!(matches!(
        ProofVar::new_witness(cs, None, &f.common),
        Err(Error::Synthesis(SynthesisError::AssignmentMissing))
    ));
}

#[test]
fn a_proof_allocated_for_another_shape_is_refused() {
    let f = fixture();
    let mut other = f.common.clone();
    other.config.fri_config.num_query_rounds = 3;
    other.fri_params.config.num_query_rounds = 3;
    let cs = ConstraintSystem::<Fr>::new_ref();
    cs.set_mode(SynthesisMode::Setup);
    let proof = ProofVar::new_witness(cs.clone(), None, &f.common).unwrap();
    let pi_hash = std::array::from_fn(|_| GoldilocksVar::zero());
    assert!(matches!(get_challenges_var(&proof, &pi_hash, &f.digest(), &other), Err(Error::Unsupported(_))));

    // Inconsistent FRI parameters in the circuit data.
    other.config.fri_config.num_query_rounds = 2;
    assert!(matches!(crate::ProofShape::from_common(&other), Err(Error::Unsupported(_))));
}
