//! Tests of the ops transformer-style exports lower to: per-row Dense, function tables,
//! gathers (transpose, selection) and added constant tensors. Completeness (the circuit
//! computes exactly [`tgrid_int8::infer::run`] and proves it), soundness (a wrong table output and
//! broken affine constraints reach the verifier and are rejected) and validation.

use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::circuit::{BuildOptions, SegmentCircuit};
use crate::gadgets::Fault;
use crate::testing::token_model;
use crate::tests::{assert_fault_rejected, random_input, PROVIDER, TASK};
use crate::{commit, infer, Privacy, QuantModel, Segment, SegmentPlan, TaskProver, TaskVerifier};

#[test]
fn token_model_circuit_computes_the_integer_inference() {
    let model = token_model(1);
    let prover = TaskProver::new(model.clone(), SegmentPlan::default()).unwrap();
    let mut rng = StdRng::seed_from_u64(2);
    let mut inputs: Vec<Vec<i8>> = (0..4).map(|_| random_input(&mut rng, model.input_len())).collect();
    inputs.extend([i8::MIN, 0, i8::MAX].map(|v| vec![v; model.input_len()]));
    for x in inputs {
        assert_eq!(prover.circuit_trace(&x).unwrap(), infer::run(&model, &x).unwrap());
    }
}

#[test]
fn token_model_proof_verifies_and_commits_to_the_inference() {
    let model = token_model(3);
    // The last plan cuts right before the Concat: both of its inputs cross the cut.
    for plan in [SegmentPlan::default(), SegmentPlan { cuts: vec![2, 5] }, SegmentPlan { cuts: vec![7] }] {
        let x = random_input(&mut StdRng::seed_from_u64(4), model.input_len());
        let prover = TaskProver::new(model.clone(), plan.clone()).unwrap();
        let (proof, trace, _) = prover.prove(&x, TASK, PROVIDER, &mut |_, _, _| {}).unwrap();
        assert_eq!(trace, infer::run(&model, &x).unwrap());
        let publics = TaskVerifier::new(&model, &plan).unwrap().verify(&proof).unwrap();
        assert_eq!(publics.output_commitment, commit(trace.output()));
        assert_eq!(publics.input_commitment, commit(&x));
    }
}

#[test]
fn a_wrong_table_output_is_rejected_by_the_verifier() {
    let model = token_model(5);
    let x = random_input(&mut StdRng::seed_from_u64(6), model.input_len());
    // Table 0 is the byte range table; 1 and 2 are the model's two function tables.
    for lut in [1, 2] {
        let segment = Segment::new(&model, 0..model.nodes.len());
        let mut circuit = SegmentCircuit::build(&model, segment, BuildOptions::binding(true, Privacy::Public)).unwrap();
        assert_eq!(circuit.data.common.luts.len(), 3, "one lookup table per distinct function");
        let pw = circuit.witness(&[&x], Some((&TASK, &PROVIDER)), None).unwrap();
        let proof = crate::malicious::prove_with_a_wrong_lookup_output(&mut circuit.data, pw, lut)
            .expect("the malicious prover produces a proof");
        assert!(circuit.data.verify(proof).is_err(), "a wrong output of table {lut} produced a valid proof");
    }
}

#[test]
fn affine_constraints_of_row_dense_and_added_constants_reject_wrong_witnesses() {
    let model = token_model(7);
    // Node 3 adds constants; node 4 is a Dense over rows (element 13 is in its third row).
    for (node, which) in [(3, 0), (3, 17), (4, 13), (0, 30)] {
        assert_fault_rejected(&model, node, which, Fault::ClampOffByOne);
        assert_fault_rejected(&model, node, which, Fault::WrongOutput);
    }
    assert_fault_rejected(&model, 3, 5, Fault::RemainderOverflow);
    assert_fault_rejected(&model, 4, 2, Fault::OutputOutOfRange);
}

/// `model`'s circuit computes its integer inference on random and extreme inputs, tensor
/// `probabilities` holds rows of 4 that are distributions (masked cells 0 if `causal`), and its
/// proof verifies and commits to the output.
fn assert_attention_proven_exactly(model: &QuantModel, probabilities: usize, causal: bool) {
    let prover = TaskProver::new(model.clone(), SegmentPlan::default()).unwrap();
    let mut rng = StdRng::seed_from_u64(12);
    let mut inputs: Vec<Vec<i8>> = (0..3).map(|_| random_input(&mut rng, model.input_len())).collect();
    inputs.extend([i8::MIN, i8::MAX].map(|v| vec![v; model.input_len()]));
    for x in &inputs {
        let trace = infer::run(model, x).unwrap();
        assert_eq!(prover.circuit_trace(x).unwrap(), trace);
        // Each softmax row is a distribution: its probabilities (y + 128)/255 sum to about 1,
        // and masked cells are 0.
        for (r, row) in trace.tensors[probabilities].chunks(4).enumerate() {
            let total: i32 = row.iter().map(|&y| i32::from(y) + 128).sum();
            assert!((total - 255).abs() <= 2, "row {r} sums to {total}/255");
            if causal {
                assert!(row[r + 1..].iter().all(|&y| y == -128), "row {r} sees the future: {row:?}");
            }
        }
    }
    let (proof, trace, _) = prover.prove(&inputs[0], TASK, PROVIDER, &mut |_, _, _| {}).unwrap();
    let publics = TaskVerifier::new(model, &SegmentPlan::default()).unwrap().verify(&proof).unwrap();
    assert_eq!(publics.output_commitment, commit(trace.output()));
}

#[test]
fn attention_is_proven_exactly_with_and_without_a_causal_mask() {
    for causal in [false, true] {
        assert_attention_proven_exactly(&crate::testing::attention_model(11, causal), 5, causal);
    }
}

#[test]
fn softmax_constraints_reject_a_wrong_maximum_or_quotient() {
    for causal in [false, true] {
        let model = crate::testing::attention_model(15, causal);
        // Node 4 is the softmax; hinted elements are its kept cells, a row's first cell also
        // carries the row maximum (rows start at 0, 4, 8, 12, or 0, 1, 3, 6 with the mask).
        let row_starts = if causal { [0, 1, 3, 6] } else { [0, 4, 8, 12] };
        for start in row_starts {
            assert_fault_rejected(&model, 4, start, Fault::MaxTooLarge);
            assert_fault_rejected(&model, 4, start, Fault::MaxTooSmall);
        }
        for which in [0, 2, 5] {
            assert_fault_rejected(&model, 4, which, Fault::SoftmaxQuotientHigh);
            assert_fault_rejected(&model, 4, which, Fault::SoftmaxQuotientLow);
        }
    }
}

#[test]
fn sixteen_bit_scores_are_proven_exactly() {
    for causal in [false, true] {
        assert_attention_proven_exactly(&crate::testing::scores_attention_model(31, causal), 4, causal);
    }
}

#[test]
fn sixteen_bit_score_constraints_reject_wrong_witnesses() {
    let model = crate::testing::scores_attention_model(35, true);
    // Node 3 is the fused op. Per row of K kept cells (1, 2, 3, 4 with the causal mask) its
    // hinted elements are the K score requantizations, then the K probabilities (the first also
    // carries the row maximum).
    for (start, kept) in [(2, 2), (12, 4)] {
        assert_fault_rejected(&model, 3, start + kept, Fault::MaxTooLarge);
        assert_fault_rejected(&model, 3, start + kept, Fault::MaxTooSmall);
        assert_fault_rejected(&model, 3, start + kept + 1, Fault::SoftmaxQuotientHigh);
        assert_fault_rejected(&model, 3, start + kept, Fault::ScoreExpOffByOne);
        assert_fault_rejected(&model, 3, start + kept - 1, Fault::ProductSumOffByOne);
        assert_fault_rejected(&model, 3, start, Fault::ClampOffByOne);
        assert_fault_rejected(&model, 3, start, Fault::WrongOutput);
        // A score of 32768: outside 16 bits (the range check's two bytes reject it).
        assert_fault_rejected(&model, 3, start + 1, Fault::OutputOutOfRange);
    }
    assert_fault_rejected(&model, 3, 0, Fault::RemainderOverflow);
    assert_fault_rejected(&model, 3, 0, Fault::DotProductOffByOne);
    assert_fault_rejected(&model, 3, 5, Fault::SoftmaxQuotientLow);
}

#[test]
fn a_wrong_sum_of_products_is_rejected_by_the_verifier() {
    let model = crate::testing::attention_model(13, false);
    // Node 3 is q·kᵀ, node 6 softmax·v.
    for (node, which) in [(3, 0), (3, 9), (6, 15)] {
        assert_fault_rejected(&model, node, which, Fault::ProductSumOffByOne);
        assert_fault_rejected(&model, node, which, Fault::DotProductOffByOne);
        assert_fault_rejected(&model, node, which, Fault::ClampOffByOne);
        assert_fault_rejected(&model, node, which, Fault::WrongOutput);
    }
    assert_fault_rejected(&model, 6, 3, Fault::RemainderOverflow);
}

#[test]
fn layer_norm_is_proven_exactly_and_normalizes() {
    let model = crate::testing::layer_norm_model(21);
    let prover = TaskProver::new(model.clone(), SegmentPlan::default()).unwrap();
    let mut rng = StdRng::seed_from_u64(22);
    let mut inputs: Vec<Vec<i8>> = (0..3).map(|_| random_input(&mut rng, model.input_len())).collect();
    // Constant rows (variance 0: V = eps) and extremes.
    inputs.extend([i8::MIN, 0, i8::MAX].map(|v| vec![v; model.input_len()]));
    for x in &inputs {
        let trace = infer::run(&model, x).unwrap();
        assert_eq!(prover.circuit_trace(x).unwrap(), trace);
    }
    // Against the real LayerNorm (γ_i = 1 + 0.1i, β_i = 0.05i − 0.1): within two output steps.
    let x = &inputs[0];
    let trace = infer::run(&model, x).unwrap();
    let real = infer::dequantize(x, model.input_q);
    for (r, row) in real.chunks(8).enumerate() {
        let mean = row.iter().sum::<f32>() / 8.0;
        let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f32>() / 8.0;
        for (i, v) in row.iter().enumerate() {
            let expected = (v - mean) / (var + 1e-5).sqrt() * (1.0 + 0.1 * i as f32) + 0.05 * i as f32 - 0.1;
            let got = 0.03 * f32::from(trace.tensors[1][r * 8 + i]);
            assert!((got - expected).abs() <= 0.06 + 1e-4, "row {r} cell {i}: {got} vs {expected}");
        }
    }
    let (proof, trace, _) = prover.prove(&inputs[0], TASK, PROVIDER, &mut |_, _, _| {}).unwrap();
    let publics = TaskVerifier::new(&model, &SegmentPlan::default()).unwrap().verify(&proof).unwrap();
    assert_eq!(publics.output_commitment, commit(trace.output()));
}

#[test]
fn layer_norm_constraints_reject_a_wrong_inverse_square_root_or_output() {
    let model = crate::testing::layer_norm_model(23);
    // Node 0 has rows of 8 (rows start at hinted 0, 8, 16), node 2 rows of 4.
    for (node, start) in [(0, 0), (0, 8), (2, 4)] {
        for fault in [Fault::InvSqrtHigh, Fault::InvSqrtLow, Fault::IsqrtHigh, Fault::IsqrtLow] {
            assert_fault_rejected(&model, node, start, fault);
        }
    }
    for (node, which) in [(0, 3), (2, 10)] {
        assert_fault_rejected(&model, node, which, Fault::ClampOffByOne);
        assert_fault_rejected(&model, node, which, Fault::WrongOutput);
    }
}

#[test]
fn a_causal_language_model_is_proven_exactly() {
    let model = crate::testing::language_model(31);
    let prover = TaskProver::new(model.clone(), SegmentPlan::default()).unwrap();
    // Token ids 0..10 in offset form are the int8 values id − 128.
    let tokens = |ids: &[u8]| -> Vec<i8> { ids.iter().map(|&id| (id ^ 0x80) as i8).collect() };
    for ids in [[1u8, 2, 3, 4, 5, 6], [0, 0, 0, 0, 0, 0], [9, 9, 9, 9, 9, 9], [3, 1, 4, 1, 5, 9]] {
        let x = tokens(&ids);
        assert_eq!(prover.circuit_trace(&x).unwrap(), infer::run(&model, &x).unwrap());
    }
    // Causality: the first position's logits depend only on the first token.
    let first_logits = |ids: &[u8]| infer::run(&model, &tokens(ids)).unwrap().tensors[11][..10].to_vec();
    assert_eq!(first_logits(&[7, 1, 2, 3, 4, 5]), first_logits(&[7, 9, 9, 9, 9, 9]));
    let x = tokens(&[3, 1, 4, 1, 5, 9]);
    let (proof, trace, _) = prover.prove(&x, TASK, PROVIDER, &mut |_, _, _| {}).unwrap();
    let publics = TaskVerifier::new(&model, &SegmentPlan::default()).unwrap().verify(&proof).unwrap();
    assert_eq!(publics.output_commitment, commit(trace.output()));
}

#[test]
fn a_token_outside_the_vocabulary_is_refused_and_cannot_be_proven() {
    let model = crate::testing::language_model(33);
    let mut x: Vec<i8> = [1u8, 2, 3, 4, 5, 6].iter().map(|&id| (id ^ 0x80) as i8).collect();
    x[2] = (10u8 ^ 0x80) as i8; // id 10 with a vocabulary of 10
    let err = infer::run(&model, &x).unwrap_err().to_string();
    assert!(err.contains("token id 10") && err.contains("vocabulary of 10"), "{err}");
    // The malicious prover admits the lookup of an unknown key: the verifier must refuse it.
    let segment = Segment::new(&model, 0..model.nodes.len());
    let mut circuit = SegmentCircuit::build(&model, segment, BuildOptions::binding(true, Privacy::Public)).unwrap();
    let pw = circuit.witness(&[&x], Some((&TASK, &PROVIDER)), None).unwrap();
    let proof =
        crate::malicious::prove_admitting_any_byte(&mut circuit.data, pw).expect("a proof reaches the verifier");
    assert!(circuit.data.verify(proof).is_err(), "an out-of-vocabulary token produced a valid proof");
}
