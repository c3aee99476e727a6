//! `Div` of two computed tensors, as exporters write it (a ratio of two branches, broadcast):
//! one exact quotient per element (`Op::Div`), equal to tract in float, within a step of float
//! in int8, and proven.

use crate::onnx_graph::{values, OnnxGraph};
use crate::written_graphs::{import_and_quantize, int8_tracks_float, proof_commits_to_the_inference};
use tgrid_circuits::infer;

/// `output = (x·Wa) / (1.5 + relu(x·Wb))`, the divisor `[1, 1, 4]` broadcast over three rows.
fn ratio_graph() -> OnnxGraph {
    let mut g = OnnxGraph::new(&[1, 3, 4], &[1, 3, 4]);
    g.floats("wa", &[4, 4], values(81, 16, 0.8))
        .floats("wb", &[4, 4], values(82, 16, 0.8))
        .floats("one_and_a_half", &[], vec![1.5])
        .node("MatMul", &["input", "wa"], "numerator", vec![])
        .node("ReduceMean", &["input"], "pooled", vec![crate::onnx_graph::ints_attr("axes", &[1])])
        .node("MatMul", &["pooled", "wb"], "gate", vec![])
        .node("Relu", &["gate"], "positive", vec![])
        .node("Add", &["positive", "one_and_a_half"], "divisor", vec![])
        .node("Div", &["numerator", "divisor"], "output", vec![]);
    g
}

#[test]
fn a_quotient_of_two_computed_tensors_is_exact_and_proves() {
    let xs: Vec<Vec<f32>> = (0..16).map(|i| values(900 + i, 12, 1.0)).collect();
    let (float, model) = import_and_quantize(&ratio_graph(), "ratio", &xs);
    let kinds: Vec<&str> = model.nodes.iter().map(|n| n.op.kind()).collect();
    assert!(kinds.contains(&"Div"), "{kinds:?}");
    assert!(!kinds.contains(&"MatMul"), "no product by a reciprocal: {kinds:?}");
    // The quotient is exact; the output's own rounding and the inputs' are what remain.
    int8_tracks_float(&float, &model, &xs, 3.0);
    proof_commits_to_the_inference(&model, &xs[5]);
}

/// A divisor at its zero point counts as one step of its scale: the quotient saturates at the
/// clamp with the dividend's sign, as the real division does at an infinity.
#[test]
fn a_zero_divisor_saturates_with_the_dividends_sign() {
    let xs: Vec<Vec<f32>> = (0..16).map(|i| values(950 + i, 12, 1.0)).collect();
    let (_, model) = import_and_quantize(&ratio_graph(), "ratio", &xs);
    let div = model.nodes.iter().position(|n| n.op.kind() == "Div").unwrap();
    let [a, b] = [model.nodes[div].inputs[0], model.nodes[div].inputs[1]];
    let (qa, qb) = (model.tensor_q(a), model.tensor_q(b));
    // Element by element, the quotient of the trace's own int8 operands.
    let x = infer::quantize_input(&model, &xs[0]).unwrap();
    let trace = infer::run(&model, &x).unwrap();
    let out = &trace.tensors[div + 1];
    let q = model.nodes[div].q;
    for (i, &y) in out.iter().enumerate() {
        let centered_a = i64::from(trace.tensors[a][i]) - i64::from(qa.zero_point);
        let centered_b = i64::from(trace.tensors[b][i]) - i64::from(qb.zero_point);
        let real = qa.scale as f64 * centered_a as f64 / (qb.scale as f64 * centered_b.max(1) as f64);
        let expected = (real / q.scale as f64 + q.zero_point as f64).round().clamp(-128.0, 127.0);
        assert!((f64::from(y) - expected).abs() <= 1.0, "element {i}: {y} vs {expected}");
    }
    // Now force the divisor's zero point: the quotient of a positive dividend saturates high.
    let zero_divisor = infer::quotient(10, 0);
    assert_eq!(zero_divisor, 10 << 16);
    assert_eq!(infer::requantize(zero_divisor, model_requant(&model, div), q.zero_point, i8::MIN), 127);
    assert_eq!(infer::requantize(-zero_divisor, model_requant(&model, div), q.zero_point, i8::MIN), -128);
}

fn model_requant(model: &tgrid_circuits::QuantModel, node: usize) -> tgrid_circuits::Requant {
    match model.nodes[node].op {
        tgrid_circuits::Op::Div { requant } => requant,
        _ => unreachable!("a Div node"),
    }
}
