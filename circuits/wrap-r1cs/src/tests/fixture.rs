//! The fixture stays honest: it decodes, plonky2 verifies it, and it has the final layer's
//! configuration and shape.

use plonky2::plonk::circuit_data::VerifierCircuitData;
use tgrid_wrap::FinalFri;

use super::*;
use crate::ProofShape;

#[test]
fn fixture_is_a_valid_final_layer_proof() {
    let f = fixture();
    assert_eq!(f.common.config, FinalFri::INSECURE_TEST.circuit_config());
    assert_eq!(f.common.degree_bits(), 12, "the production final circuit's degree");
    assert_eq!(f.proof.public_inputs.len(), 8);
    assert!(f.proof.public_inputs.iter().all(|x| x.to_canonical_u64() < 1 << 32));
    let data = VerifierCircuitData { verifier_only: f.verifier_only.clone(), common: f.common.clone() };
    data.verify(f.proof.clone()).expect("the fixture verifies");

    // The native verifier is not vacuous: a changed public input is rejected.
    let mut bad = f.proof.clone();
    bad.public_inputs[0] += F::ONE;
    assert!(data.verify(bad).is_err());
}

#[test]
fn fixture_shape() {
    let shape = ProofShape::from_common(&fixture().common).unwrap();
    assert_eq!(shape.num_public_inputs, 8);
    assert_eq!(shape.cap_len, 16);
    assert_eq!(shape.arity_bits, vec![2, 2, 2, 2]);
    assert_eq!(shape.final_poly_len, 16);
    assert_eq!(shape.lde_bits, 16);
    assert_eq!(shape.initial_path_len, 12);
    assert_eq!(shape.step_path_lens, vec![10, 8, 6, 4]);
    assert_eq!(shape.num_query_rounds, 2);
    assert_eq!(shape.proof_of_work_bits, 2);
    assert_eq!(shape.num_deltas, 0);
    assert_eq!(shape.initial_leaf_lens.iter().sum::<usize>(), 256);
    assert_eq!(shape.num_openings(), 258);
}
