//! Circuit tests on small hand-built models that use every op: completeness (the circuit
//! computes exactly [`tgrid_int8::infer::run`]), soundness (each constraint rejects a witness that
//! breaks it), tampering and decoding.

use plonky2::field::types::Field;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::gadgets::Fault;
use crate::{commit, infer, Error, ModelFile, Op, QuantModel, SegmentPlan, TaskProof, TaskProver, TaskVerifier};
use tgrid_int8::{for_each_element, Element};

use crate::testing::tiny_model;

pub(crate) fn random_input(rng: &mut StdRng, n: usize) -> Vec<i8> {
    (0..n).map(|_| rng.gen()).collect()
}

pub(crate) const TASK: [u8; 32] = [0x11; 32];
pub(crate) const PROVIDER: [u8; 20] = [0x22; 20];

/// A circuit cache's entries: paths and inode numbers (a rewritten entry is a new file, renamed
/// in place), sorted.
pub(crate) fn cache_entries(cache: &tgrid_circuit_cache::CircuitCache) -> Vec<(std::path::PathBuf, u64)> {
    use std::os::unix::fs::MetadataExt;
    let mut files: Vec<_> = std::fs::read_dir(cache.dir())
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.path(), e.metadata().unwrap().ino())
        })
        .collect();
    files.sort();
    files
}

#[test]
fn circuit_witness_equals_integer_inference() {
    let model = tiny_model(1);
    let prover = TaskProver::new(model.clone(), SegmentPlan::default()).unwrap();
    let mut rng = StdRng::seed_from_u64(2);
    for _ in 0..8 {
        let x = random_input(&mut rng, model.input_len());
        assert_eq!(prover.circuit_trace(&x).unwrap(), infer::run(&model, &x).unwrap());
    }
    // Extremes saturate every clamp.
    for v in [i8::MIN, i8::MAX, 0] {
        let x = vec![v; model.input_len()];
        assert_eq!(prover.circuit_trace(&x).unwrap(), infer::run(&model, &x).unwrap());
    }
}

#[test]
fn segmented_circuit_witness_equals_integer_inference() {
    let model = tiny_model(3);
    // Cut between the residual's two branches so a tensor passes through a cut.
    let plan = SegmentPlan { cuts: vec![2, 5] };
    let prover = TaskProver::new(model.clone(), plan).unwrap();
    let x = random_input(&mut StdRng::seed_from_u64(4), model.input_len());
    assert_eq!(prover.circuit_trace(&x).unwrap(), infer::run(&model, &x).unwrap());
}

fn prove_and_verify(model: &QuantModel, plan: SegmentPlan) -> (TaskProof, TaskVerifier, Vec<i8>) {
    let x = random_input(&mut StdRng::seed_from_u64(5), model.input_len());
    let prover = TaskProver::new(model.clone(), plan.clone()).unwrap();
    let (proof, trace, _) = prover.prove(&x, TASK, PROVIDER, &mut |_, _, _| {}).unwrap();
    let verifier = TaskVerifier::new(model, &plan).unwrap();
    let publics = verifier.verify(&proof).unwrap();
    assert_eq!(publics.task_id, TASK);
    assert_eq!(publics.provider, PROVIDER);
    assert_eq!(publics.model_id, model.model_id());
    assert_eq!(publics.input_commitment, commit(&x));
    assert_eq!(publics.output_commitment, commit(trace.output()));
    (proof, verifier, x)
}

#[test]
fn proof_verifies_and_rejects_tampering() {
    let model = tiny_model(6);
    let (proof, verifier, _) = prove_and_verify(&model, SegmentPlan::default());

    // Every public input position: task id, provider, model id, both commitments.
    let pi_start = proof.proof.len() - 8 * crate::NUM_PUBLIC_INPUTS;
    for k in 0..crate::NUM_PUBLIC_INPUTS {
        let mut bad = proof.clone();
        bad.proof[pi_start + 8 * k] ^= 1;
        assert!(verifier.verify(&bad).is_err(), "public input {k} tampered but accepted");
    }
    // Swapped public inputs (task id words exchanged with provider words).
    let mut swapped = proof.clone();
    let (a, b) = (pi_start, pi_start + 8 * 8);
    for i in 0..8 {
        swapped.proof.swap(a + i, b + i);
    }
    assert!(verifier.verify(&swapped).is_err());
    // Bytes across the proof body.
    for pos in (0..pi_start).step_by(pi_start / 40) {
        let mut bad = proof.clone();
        bad.proof[pos] ^= 0x40;
        assert!(verifier.verify(&bad).is_err(), "byte {pos} tampered but accepted");
    }
    // Truncated and extended.
    let mut short = proof.clone();
    short.proof.truncate(short.proof.len() - 1);
    assert!(verifier.verify(&short).is_err());
    let mut long = proof.clone();
    long.proof.push(0);
    assert!(verifier.verify(&long).is_err());
}

#[test]
fn proof_is_rejected_for_another_model() {
    let model = tiny_model(7);
    let (proof, _, _) = prove_and_verify(&model, SegmentPlan::default());
    let other = tiny_model(8);
    let other_verifier = TaskVerifier::new(&other, &SegmentPlan::default()).unwrap();
    assert!(matches!(other_verifier.verify(&proof), Err(Error::InvalidProof(_))));
    // Even when relabelled with the other model's id, the circuit check fails.
    let relabelled = TaskProof::new(other.model_id(), proof.proof.clone());
    assert!(other_verifier.verify(&relabelled).is_err());
}

#[test]
fn segmented_proof_verifies_and_binds_the_task() {
    let model = tiny_model(9);
    let (proof, verifier, _) = prove_and_verify(&model, SegmentPlan { cuts: vec![3] });
    let pi_start = proof.proof.len() - 8 * crate::NUM_PUBLIC_INPUTS;
    let mut bad = proof.clone();
    bad.proof[pi_start] ^= 1;
    assert!(verifier.verify(&bad).is_err());
    // The single-segment verifier of the same model does not accept the chained proof.
    let single = TaskVerifier::new(&model, &SegmentPlan::default()).unwrap();
    assert!(single.verify(&proof).is_err());
}

#[test]
fn a_join_rejects_segments_that_do_not_link() {
    let model = tiny_model(9);
    let plan = SegmentPlan { cuts: vec![3] };
    let prover = TaskProver::new(model.clone(), plan.clone()).unwrap();
    let verifier = TaskVerifier::new(&model, &plan).unwrap();
    let x = random_input(&mut StdRng::seed_from_u64(23), model.input_len());
    // The malicious join of honestly linked segments verifies: the machinery is sound.
    let honest = verifier.verify(&prover.prove_with_link_fault(&x, false).unwrap()).unwrap();
    assert_eq!(honest.output_commitment, commit(infer::run(&model, &x).unwrap().output()));
    // Second segment on a changed activation: a proof reaches the verifier, which rejects it.
    let forged = prover.prove_with_link_fault(&x, true).unwrap();
    // plonky2 serializes the public inputs last, 8 bytes little-endian each.
    let tail = &forged.proof[forged.proof.len() - 8 * crate::NUM_PUBLIC_INPUTS..];
    let fields: Vec<crate::F> =
        tail.chunks(8).map(|c| crate::F::from_canonical_u64(u64::from_le_bytes(c.try_into().unwrap()))).collect();
    let claimed = crate::PublicInputs::from_fields(&fields).unwrap();
    assert_ne!(claimed.output_commitment, honest.output_commitment, "the forgery claims another output");
    assert!(verifier.verify(&forged).is_err(), "segments that do not link produced a valid proof");
}

/// Index (in build order) of the hinted elements of `node`.
fn hinted_indices(model: &QuantModel, node: usize) -> std::ops::Range<usize> {
    let mut start = 0;
    let mut count = 0;
    for i in 0..=node {
        let mut c = 0;
        for_each_element(model, i, |_, e| {
            c += match e {
                Element::Copy { .. }
                | Element::Constant { .. }
                | Element::Table { .. }
                | Element::Embedding { .. }
                | Element::Softmax { at: None, .. }
                | Element::ScoresSoftmax { at: None, .. } => 0,
                // A kept score: its requantization, then its probability's quotient.
                Element::ScoresSoftmax { .. } => 2,
                _ => 1,
            }
        });
        if i < node {
            start += c;
        } else {
            count = c;
        }
    }
    start..start + count
}

pub(crate) fn assert_fault_rejected(model: &QuantModel, node: usize, which: usize, fault: Fault) {
    assert_fault_rejected_in(crate::Privacy::Public, model, node, which, fault);
}

/// [`assert_fault_rejected`] for a task of mode `privacy` (a private circuit checks its bytes
/// with limbs, not lookups).
pub(crate) fn assert_fault_rejected_in(
    privacy: crate::Privacy,
    model: &QuantModel,
    node: usize,
    which: usize,
    fault: Fault,
) {
    let prover = TaskProver::with_privacy(model.clone(), SegmentPlan::default(), privacy).unwrap();
    let verifier = TaskVerifier::with_privacy(model, &SegmentPlan::default(), privacy).unwrap();
    let x = random_input(&mut StdRng::seed_from_u64(10), model.input_len());
    let at = hinted_indices(model, node).nth(which).expect("element exists");
    // The malicious prover always produces a proof: the verifier, not witness generation, must
    // reject it.
    let proof = prover
        .prove_with_fault(&x, (at, fault))
        .unwrap_or_else(|e| panic!("{privacy:?} {fault:?} at node {node}: {e}"));
    assert!(verifier.verify(&proof).is_err(), "{privacy:?} {fault:?} at node {node} produced a valid proof");
}

#[test]
fn the_malicious_prover_proves_an_honest_witness() {
    // Without a fault it must produce a proof that verifies, or the rejections above would
    // show nothing about the constraints.
    let model = tiny_model(12);
    let segment = crate::Segment::new(&model, 0..model.nodes.len());
    let mut circuit = crate::circuit::SegmentCircuit::build(
        &model,
        segment,
        crate::circuit::BuildOptions::binding(true, crate::Privacy::Public),
    )
    .unwrap();
    let x = random_input(&mut StdRng::seed_from_u64(10), model.input_len());
    let pw = circuit.witness(&[&x], Some((&TASK, &PROVIDER)), None).unwrap();
    let proof = crate::malicious::prove_admitting_any_byte(&mut circuit.data, pw).unwrap();
    circuit.data.verify(proof).unwrap();
}

/// A grouped and a depthwise convolution prove their integer inference exactly, and a wrong
/// output of either is refused by the verifier.
#[test]
fn grouped_convolutions_prove_exactly_and_refuse_a_wrong_output() {
    let model = tgrid_int8::testing::grouped_conv_model(5, 4, 2, 5);
    let prover = TaskProver::new(model.clone(), SegmentPlan::default()).unwrap();
    let x = random_input(&mut StdRng::seed_from_u64(3), model.input_len());
    assert_eq!(prover.circuit_trace(&x).unwrap(), crate::infer::run(&model, &x).unwrap());
    for node in [0, 1] {
        assert_fault_rejected(&model, node, 0, Fault::WrongOutput);
    }
}

#[test]
fn clamp_constraints_reject_a_wrong_clamp() {
    let model = tiny_model(11);
    for node in [0, 2, 3, 4, 6] {
        for which in [0, 1] {
            assert_fault_rejected(&model, node, which, Fault::ClampOffByOne);
        }
    }
}

#[test]
fn activation_range_check_rejects_values_outside_int8() {
    let model = tiny_model(12);
    for node in [0, 3, 6] {
        assert_fault_rejected(&model, node, 0, Fault::OutputOutOfRange);
    }
}

#[test]
fn remainder_range_check_rejects_an_oversized_remainder() {
    let model = tiny_model(13);
    for node in [0, 2, 3, 6] {
        assert_fault_rejected(&model, node, 1, Fault::RemainderOverflow);
    }
}

#[test]
fn a_wrong_output_cannot_be_proven() {
    let model = tiny_model(14);
    for which in 0..3 {
        assert_fault_rejected(&model, 6, which, Fault::WrongOutput);
    }
}

#[test]
fn max_constraints_reject_a_wrong_maximum() {
    let model = tiny_model(15);
    for which in [0, 5] {
        assert_fault_rejected(&model, 1, which, Fault::MaxTooLarge);
        assert_fault_rejected(&model, 1, which, Fault::MaxTooSmall);
    }
}

/// The single-segment circuit of `model` with every affine node laid out as `layout`.
fn circuit_with_layout(
    model: &QuantModel,
    layout: crate::gadgets::MacLayout,
    fault: Option<Fault>,
) -> crate::circuit::SegmentCircuit {
    let segment = crate::Segment::new(model, 0..model.nodes.len());
    let options = crate::circuit::BuildOptions {
        bind_task: true,
        layout: Some(layout),
        fault: fault.map(|f| (0, f)),
        cut: false,
        privacy: crate::Privacy::Public,
        cut_output_key: false,
    };
    crate::circuit::SegmentCircuit::build(model, segment, options).unwrap()
}

#[test]
fn weighted_sum_layouts_compute_the_integer_inference_and_prove() {
    use plonky2::field::types::PrimeField64;
    use plonky2::iop::witness::Witness;
    let model = tiny_model(18);
    let x = random_input(&mut StdRng::seed_from_u64(19), model.input_len());
    let trace = infer::run(&model, &x).unwrap();
    // 1 term per operation (every chunk short), 2 (a residual Add's width), 8 (a 3x3 kernel split
    // in two), 38 (whole rows).
    for terms in [1, 2, 8, 38] {
        let gate = crate::gates::WeightedSumGate::new(terms, 80);
        let circuit = circuit_with_layout(&model, crate::gadgets::MacLayout::WeightedSum(gate), None);
        let pw = circuit.witness(&[&x], Some((&TASK, &PROVIDER)), None).unwrap();
        let witness = plonky2::iop::generator::generate_partial_witness(
            pw.clone(),
            &circuit.data.prover_only,
            &circuit.data.common,
        )
        .unwrap();
        for (&t, targets) in &circuit.tensors {
            let values: Vec<i8> =
                targets.iter().map(|&v| ((witness.get_target(v).to_canonical_u64() as u8) ^ 0x80) as i8).collect();
            assert_eq!(values, trace.tensors[t], "tensor {t} with {terms}-term operations");
        }
        let proof = crate::prove_circuit(&circuit.data, pw).unwrap();
        circuit.data.verify(proof).unwrap();
    }
}

#[test]
fn weighted_sum_constraint_rejects_a_wrong_sum() {
    use crate::gadgets::MacLayout;
    let model = tiny_model(20);
    let layout = MacLayout::WeightedSum(crate::gates::WeightedSumGate::new(11, 80));
    let honest = circuit_with_layout(&model, layout, None);
    let faulty = circuit_with_layout(&model, layout, Some(Fault::WeightedSumOffByOne));
    // The faulty generator changes the witness, not the circuit.
    assert_eq!(honest.data.verifier_only.circuit_digest, faulty.data.verifier_only.circuit_digest);
    let x = random_input(&mut StdRng::seed_from_u64(21), model.input_len());
    let pw = faulty.witness(&[&x], Some((&TASK, &PROVIDER)), None).unwrap();
    match crate::prove_circuit(&faulty.data, pw) {
        Err(Error::Proving(_)) => {}
        Err(e) => panic!("unexpected error {e}"),
        Ok(proof) => assert!(honest.data.verify(proof).is_err(), "an off-by-one weighted sum produced a valid proof"),
    }
}

#[test]
fn layouts_pick_the_fewest_rows() {
    use crate::gadgets::MacLayout;
    // A 3x3 convolution with 16 output channels over 8x8: every channel's interior positions
    // share one 9-weight chunk, so 11-term operations (6 per row) beat 20 MACs per row.
    let model = crate::testing::conv_model(22, 16, 8);
    match crate::circuit::choose_layout(&model, 0, 80, crate::Privacy::Public) {
        MacLayout::WeightedSum(g) => assert!(g.terms >= 9, "{g:?}"),
        other => panic!("expected a weighted-sum layout, got {other:?}"),
    }
    // A single-term Relu is cheapest as arithmetic operations (20 per row).
    let relu = model.nodes.iter().position(|n| matches!(n.op, Op::Relu)).unwrap();
    assert_eq!(crate::circuit::choose_layout(&model, relu, 80, crate::Privacy::Public), MacLayout::Arithmetic);
}

#[test]
fn input_range_check_rejects_a_non_byte_input() {
    use plonky2::iop::witness::WitnessWrite;
    let model = tiny_model(16);
    let segment = crate::Segment::new(&model, 0..model.nodes.len());
    let mut circuit = crate::circuit::SegmentCircuit::build(
        &model,
        segment,
        crate::circuit::BuildOptions { bind_task: true, ..Default::default() },
    )
    .unwrap();
    let mut pw = plonky2::iop::witness::PartialWitness::new();
    for (i, &t) in circuit.inputs[0].iter().enumerate() {
        // 256 is "one past int8" in offset form.
        let v = if i == 3 { 256 } else { 128 };
        pw.set_target(t, crate::F::from_canonical_u64(v)).unwrap();
    }
    crate::circuit::set_binding(&mut pw, circuit.binding.as_ref().unwrap(), &TASK, &PROVIDER).unwrap();
    let proof =
        crate::malicious::prove_admitting_any_byte(&mut circuit.data, pw).expect("a proof reaches the verifier");
    assert!(circuit.data.verify(proof).is_err(), "an input of 256 produced a valid proof");
}

#[test]
fn model_file_round_trips() {
    let model = tiny_model(17);
    let file = ModelFile {
        model,
        plan: SegmentPlan { cuts: vec![2] },
        circuit_digest: [5; 32],
        leaf_digest: [6; 32],
        report: "{}".into(),
    };
    assert_eq!(ModelFile::from_bytes(&file.to_bytes()).unwrap(), file);
}

mod decoding {
    use proptest::prelude::*;
    use rand::Rng;

    use super::*;

    fn valid_files() -> (Vec<u8>, Vec<u8>) {
        let model = tiny_model(19);
        let file = ModelFile {
            model: model.clone(),
            plan: SegmentPlan::default(),
            circuit_digest: [1; 32],
            leaf_digest: [2; 32],
            report: "{}".into(),
        };
        let proof = TaskProof::new(model.model_id(), vec![7; 300]);
        (file.to_bytes(), proof.to_bytes())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = ModelFile::from_bytes(&bytes);
            let _ = TaskProof::from_bytes(&bytes);
            let _ = QuantModel::from_canonical_bytes(&bytes);
        }

        #[test]
        fn mutated_files_never_panic(pos in any::<prop::sample::Index>(), byte in any::<u8>(), cut in any::<prop::sample::Index>()) {
            let (model, proof) = valid_files();
            for original in [model, proof] {
                let mut m = original.clone();
                let p = pos.index(m.len());
                m[p] = byte;
                let _ = ModelFile::from_bytes(&m);
                let _ = TaskProof::from_bytes(&m);
                let t = &original[..cut.index(original.len())];
                prop_assert!(ModelFile::from_bytes(t).is_err());
                prop_assert!(TaskProof::from_bytes(t).is_err());
            }
        }
    }

    #[test]
    fn random_proof_bytes_are_rejected_without_panic() {
        let model = tiny_model(20);
        let verifier = TaskVerifier::new(&model, &SegmentPlan::default()).unwrap();
        let mut rng = StdRng::seed_from_u64(21);
        for len in [0, 1, 100, 5_000, 60_000, 200_000] {
            let bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            let proof = TaskProof::new(model.model_id(), bytes);
            assert!(verifier.verify(&proof).is_err());
        }
        assert!(ModelFile::from_bytes(b"").is_err());
        assert!(TaskProof::from_bytes(b"TGRIDPRF").is_err());
    }
}
