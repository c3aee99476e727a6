//! Wrap layers over real aggregation root proofs of a tiny model: the settlement public input
//! they expose equals the native one, and a root proof that is not a genuine batch root cannot
//! be wrapped.

use std::sync::OnceLock;

use plonky2::field::types::Field;
use tgrid_aggregation::{
    settlement_public_input, AggregationCircuits, LeafCircuit, Registry, RegistryEntry, SubtreeKind, SubtreeProof,
};
use tgrid_circuits::testing::{random_input, tiny_model};
use tgrid_circuits::{SegmentPlan, TaskProver, TaskVerifier, F};

use crate::layers::{settlement_input_from_fields, FinalFri, WrapCircuits, WrappedBatch, FINAL_DEGREE_BITS};
use crate::Error;

struct Setup {
    aggregation: AggregationCircuits,
    wrap: WrapCircuits,
    /// A chunk of one task.
    chunk: SubtreeProof,
    registry_root: [u8; 32],
    /// The chunk wrapped all the way (one final-layer proof, shared by the tests).
    wrapped: WrappedBatch,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let model = tiny_model(1);
        let prover = TaskProver::new(model.clone(), SegmentPlan::default()).unwrap();
        let leaf_circuit = LeafCircuit::new(TaskVerifier::new(&model, &SegmentPlan::default()).unwrap()).unwrap();
        let registry =
            Registry::new([RegistryEntry { model_id: leaf_circuit.model_id(), leaf_digest: leaf_circuit.digest() }])
                .unwrap();
        let aggregation = AggregationCircuits::build().unwrap();
        let (proof, _, _) = prover.prove(&random_input(3, 16), [7; 32], [0x42; 20], &mut |_, _, _| {}).unwrap();
        let (_, leaf) = leaf_circuit.prove(&proof).unwrap();
        let chunk = aggregation.prove_chunk(&[leaf], &registry).unwrap();
        let wrap = WrapCircuits::build(&aggregation, FinalFri::INSECURE_TEST).unwrap();
        let registry_root = chunk.public_inputs().unwrap().registry_root;
        let wrapped = wrap.wrap(&aggregation, &chunk).unwrap();
        Setup { aggregation, wrap, chunk, registry_root, wrapped }
    })
}

#[test]
fn wraps_chunk_and_merge_roots_into_the_settlement_input() {
    let s = setup();
    // The settle layer fits 2^13 rows, so no shrink layer sits between it and the final layer.
    assert_eq!(s.wrap.degree_bits(), vec![13, FINAL_DEGREE_BITS], "settle, shrink and final degrees");

    let publics = s.chunk.public_inputs().unwrap();
    let expected = settlement_public_input(&publics.root, &s.registry_root, 1);
    assert_eq!(s.wrapped.public_input().unwrap(), expected);
    assert_eq!(s.wrap.verify(&s.wrapped.proof).unwrap(), expected);

    // A merge root (the same chunk twice: the circuits do not look for duplicates, the
    // sequencer does) selects the merge digest. The layers above the settle layer forward its
    // public inputs unchanged (checked above), so the settle layer is enough here.
    let merged = s.aggregation.prove_merge(&s.chunk, &s.chunk).unwrap();
    let settled = s.wrap.prove_settle(&s.aggregation, &merged).unwrap();
    let mp = merged.public_inputs().unwrap();
    assert_eq!(mp.count, 2);
    assert_eq!(
        settlement_input_from_fields(&settled.public_inputs).unwrap(),
        settlement_public_input(&mp.root, &s.registry_root, 2)
    );
}

fn assert_rejected<T: std::fmt::Debug>(r: crate::Result<T>) {
    match r {
        Err(Error::Proving(_)) => {}
        other => panic!("expected a proving failure, got {other:?}"),
    }
}

#[test]
fn a_root_of_the_wrong_kind_or_with_altered_outputs_is_rejected() {
    let s = setup();
    // A chunk proof presented as a merge proof: its cap yields the chunk digest, not the merge's.
    let mut flipped = s.chunk.clone();
    flipped.kind = SubtreeKind::Merge;
    assert_rejected(s.wrap.prove_settle(&s.aggregation, &flipped).map(|p| p.public_inputs));
    // A leaf proof is no batch root.
    flipped.kind = SubtreeKind::Leaf;
    assert_rejected(s.wrap.prove_settle(&s.aggregation, &flipped).map(|p| p.public_inputs));

    // Altered public inputs (batch root word, registry root, count, a carried digest): the
    // root proof no longer verifies inside the settle circuit.
    for index in [0, 9, 12, 20] {
        let mut tampered = s.chunk.clone();
        tampered.proof.public_inputs[index] += F::ONE;
        assert_rejected(s.wrap.prove_settle(&s.aggregation, &tampered).map(|p| p.public_inputs));
    }
    // The native entry point refuses before proving.
    let mut tampered = s.chunk.clone();
    tampered.proof.public_inputs[12] += F::ONE;
    assert!(s.wrap.wrap(&s.aggregation, &tampered).is_err());
}

#[test]
fn a_tampered_final_proof_is_rejected() {
    let s = setup();
    let wrapped = &s.wrapped;
    let mut bad = wrapped.proof.clone();
    bad.public_inputs[3] += F::ONE;
    assert!(s.wrap.verify(&bad).is_err());
    let mut bad = wrapped.proof.clone();
    bad.proof.opening_proof.pow_witness += F::ONE;
    assert!(s.wrap.verify(&bad).is_err());
    let mut bad = wrapped.proof.clone();
    bad.proof.openings.wires[0] += plonky2::field::extension::quadratic::QuadraticExtension([F::ONE, F::ZERO]);
    assert!(s.wrap.verify(&bad).is_err());
}

#[test]
fn final_fri_parameters_reach_100_bits() {
    assert_eq!(FinalFri::PRODUCTION.conjectured_security_bits(), 100);
    assert!(FinalFri::INSECURE_TEST.conjectured_security_bits() < 100);
}
