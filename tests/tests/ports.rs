//! Models with several inputs and outputs, written by the tests: the inputs are laid end to end
//! in one input tensor and the outputs in one output tensor (one commitment each,
//! docs/encodings.md); what is not one quantization is a clear error.

use crate::onnx_graph::{values, OnnxGraph};
use crate::written_graphs::{import_and_quantize, int8_tracks_float, proof_commits_to_the_inference, samples};
use tgrid_circuits::{infer, Port};
use tgrid_onnx::{import_onnx, named_outputs_json, quantize_model};

/// Writes `graph` and imports it, returning the error's text.
fn import_error(graph: &OnnxGraph, name: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{name}.onnx"));
    graph.write(&path);
    import_onnx(&path).map(|_| ()).unwrap_err().to_string()
}

/// `output = (input·W1 ⊙ side)·W2` and `features = relu(input·W1)`: two real inputs, one product
/// of computed tensors between them, and two outputs, one of them read by the other's branch.
fn two_by_two() -> OnnxGraph {
    let mut g = OnnxGraph::new(&[1, 6], &[1, 3]);
    g.input("side", &[1, 4], 1)
        .output("features", &[1, 4])
        .floats("w1", &[6, 4], values(61, 24, 0.7))
        .floats("w2", &[4, 3], values(62, 12, 0.6))
        .node("MatMul", &["input", "w1"], "hidden", vec![])
        .node("Relu", &["hidden"], "features", vec![])
        .node("Mul", &["hidden", "side"], "gated", vec![])
        .node("MatMul", &["gated", "w2"], "output", vec![]);
    g
}

#[test]
fn two_inputs_and_two_outputs_compile_match_tract_and_prove() {
    let xs = samples(600, 16, 10);
    let (float, model) = import_and_quantize(&two_by_two(), "two-by-two", &xs);
    let port = |name: &str, shape: Vec<usize>| Port { name: name.into(), shape };
    assert_eq!(model.ports.inputs, [port("input", vec![6]), port("side", vec![4])]);
    assert_eq!(model.ports.outputs, [port("output", vec![3]), port("features", vec![4])]);
    assert_eq!((model.input_len(), model.output_len()), (10, 7));
    int8_tracks_float(&float, &model, &xs, 6.0);
    proof_commits_to_the_inference(&model, &xs[3]);
    // The outputs a user reads are cut out of the flat output in the graph's order.
    let real = float.run(&xs[3]).pop().unwrap();
    let parts = named_outputs_json(&model, &real).unwrap();
    assert_eq!(parts[0]["name"], "output");
    assert_eq!(parts[1]["shape"], serde_json::json!([4]));
    assert_eq!(parts[1]["output"].as_array().unwrap().len(), 4);
    // Each input's part of a sample is that input: `side` alone moves only the gated output.
    let mut moved = xs[3].clone();
    moved[6..].iter_mut().for_each(|v| *v = -*v);
    let y = float.run(&moved).pop().unwrap();
    assert_eq!(y[3..], real[3..], "features do not read `side`");
    assert_ne!(y[..3], real[..3]);
}

#[test]
fn token_ids_beside_real_values_are_refused_naming_both_inputs() {
    let mut g = OnnxGraph::new(&[1, 4], &[1, 4]);
    g.input("ids", &[1, 4], 7).node("Relu", &["input"], "output", vec![]);
    let err = import_error(&g, "mixed");
    assert!(err.contains("input 'ids' holds integers (token ids) and input 'input' real values"), "{err}");
}

/// Dimensions a hostile file names are bounded before anything is allocated for them.
#[test]
fn inputs_too_large_together_are_refused_before_allocating() {
    let mut g = OnnxGraph::new(&[1, 4], &[1, 4]);
    g.input("huge", &[1, 1 << 21, 1 << 21], 1).node("Relu", &["input"], "output", vec![]);
    let err = import_error(&g, "huge");
    assert!(err.contains("input 'huge' of shape [1, 2097152, 2097152]: the inputs together exceed"), "{err}");
}

#[test]
fn an_output_that_is_an_input_is_refused() {
    let mut g = OnnxGraph::new(&[1, 4], &[1, 4]);
    g.input("side", &[1, 4], 1).output("side", &[1, 4]).node("Add", &["input", "side"], "output", vec![]);
    let err = import_error(&g, "passthrough");
    assert!(err.contains("output 'side' is an input: there is nothing to prove"), "{err}");
}

/// A Softmax's probabilities have a fixed quantization that logits beside them cannot share:
/// a clear error, not a silently wrong scale.
#[test]
fn outputs_that_cannot_share_one_quantization_are_a_clear_error() {
    let mut g = OnnxGraph::new(&[1, 6], &[1, 3]);
    g.output("probabilities", &[1, 3])
        .floats("w", &[6, 3], values(71, 18, 0.7))
        .node("MatMul", &["input", "w"], "output", vec![])
        .node("Softmax", &["output"], "probabilities", vec![]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("softmax.onnx");
    g.write(&path);
    let (float, _) = import_onnx(&path).unwrap();
    let err = quantize_model(&float, &samples(700, 8, 6)).unwrap_err().to_string();
    assert!(err.contains("output 'probabilities' has a fixed quantization"), "{err}");
}

/// A sample with the wrong number of values for the inputs together is refused before running.
#[test]
fn a_sample_of_the_wrong_length_is_refused() {
    let xs = samples(800, 8, 10);
    let (_, model) = import_and_quantize(&two_by_two(), "two-by-two", &xs);
    let err = infer::quantize_input(&model, &xs[0][..6]).unwrap_err().to_string();
    assert!(err.contains('6') && err.contains("10"), "{err}");
}
