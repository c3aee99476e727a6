//! The whole verifier circuit on the fixture. Gate values come from plonky2 natively here
//! (TEST ONLY, as in `tests::vanishing`); everything else is the production path.

use ark_bn254::Fr;
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystem, SynthesisError};
use plonky2::field::types::Field;
use plonky2::gates::gate::GateRef;
use plonky2::hash::hash_types::HashOut;
use plonky2::plonk::vars::EvaluationVars;
use tgrid_r1cs_goldilocks::{GoldilocksExtVar, GoldilocksVar};

use super::fixture;
use crate::{settlement_input, FinalProof, FinalVerifierCircuit, VanishingError, F};

/// Runs the verifier on `proof`; returns (satisfied, constraints).
fn run(proof: &FinalProof) -> (bool, usize) {
    let fx = fixture();
    let cs = ConstraintSystem::<Fr>::new_ref();
    let openings = &proof.proof.openings;
    let constants = &openings.constants[fx.common.selectors_info.num_selectors()..];
    let pi_hash = proof.get_public_inputs_hash();
    let cs2 = cs.clone();
    let native = move |gate: &GateRef<F, 2>,
                       _: &[GoldilocksExtVar],
                       _: &[GoldilocksExtVar],
                       _: &[GoldilocksVar; 4]|
          -> Result<Vec<GoldilocksExtVar>, VanishingError> {
        let vars = EvaluationVars {
            local_constants: constants,
            local_wires: &openings.wires,
            public_inputs_hash: &HashOut { elements: pi_hash.elements },
        };
        gate.0
            .eval_unfiltered(vars)
            .into_iter()
            .map(|v| GoldilocksExtVar::new_witness_canonical(cs2.clone(), || Ok(v)))
            .collect::<Result<Vec<_>, SynthesisError>>()
            .map_err(VanishingError::from)
    };
    let circuit = FinalVerifierCircuit {
        common: &fx.common,
        verifier_only: &fx.verifier_only,
        proof: Some(proof),
        gates: &native,
    };
    circuit.generate_constraints(cs.clone()).unwrap();
    (cs.is_satisfied().unwrap(), cs.num_constraints())
}

#[test]
fn the_fixture_verifies_with_one_public_input() {
    let fx = fixture();
    let (ok, constraints) = run(&fx.proof);
    assert!(ok);
    // With the stub gate values as witnesses; the production evaluator replaces them.
    assert!(constraints < 800_000, "{constraints} constraints");
    let x = settlement_input(&fx.proof).unwrap();
    assert_ne!(x, Fr::from(0u64));
}

#[test]
fn a_changed_public_input_fails() {
    let mut proof = fixture().proof.clone();
    proof.public_inputs[7] += F::ONE;
    assert!(!run(&proof).0);
}
