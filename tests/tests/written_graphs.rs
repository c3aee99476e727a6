//! ONNX graphs written by the tests themselves, for what no committed fixture exports: a
//! scaling of the model input, a class token joined before the patches (`Concat` with a
//! constant), two branches joined (`Concat` of computed tensors with different ranges), and the
//! activations exporters write (LeakyRelu, Elu, Selu, Celu, Softplus, Softsign, Mish,
//! HardSigmoid, HardSwish, ThresholdedRelu, Clip, PRelu, Log), masks and position ids built
//! from shapes at opsets 13 and 17, a LayerNorm written out, reductions over several axes,
//! products and differences of computed tensors, Pad in each mode, BatchNormalization alone,
//! grouped and depthwise convolutions, Resize and Upsample, ConvTranspose, PRelu per channel,
//! InstanceNormalization, scales and differences by constant tensors.
//! Each one: imported, equal to tract on the original graph, int8 close to float, and the
//! circuit witness bit-exact with a proof the verifier accepts.

use crate::onnx_graph;

use onnx_graph::{float_attr, int_attr, values, OnnxGraph};
use tgrid_circuits::{infer, QuantModel, SegmentPlan, TaskProver, TaskVerifier};
use tgrid_onnx::{import_onnx, quantize_model, tract_reference, FloatGraph};

/// Imports `graph`, checks it against tract on `samples`, and quantizes it on them.
pub(crate) fn import_and_quantize(graph: &OnnxGraph, name: &str, samples: &[Vec<f32>]) -> (FloatGraph, QuantModel) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{name}.onnx"));
    graph.write(&path);
    let (float, _) = import_onnx(&path).unwrap();
    let reference = tract_reference(&path, &float, samples).unwrap();
    for (x, r) in samples.iter().zip(&reference) {
        let ours = float.run(x).pop().unwrap();
        assert!(ours.iter().zip(r).all(|(a, b)| (a - b).abs() < 1e-4), "{name}: {ours:?} vs tract {r:?}");
    }
    let model = quantize_model(&float, samples).unwrap();
    (float, model)
}

/// Dequantized int8 outputs stay within `steps` output steps of float on every sample.
pub(crate) fn int8_tracks_float(float: &FloatGraph, model: &QuantModel, samples: &[Vec<f32>], steps: f32) {
    let q = model.tensor_q(model.output_tensor());
    for x in samples {
        let expected = float.run(x).pop().unwrap();
        let int8 = infer::dequantize(infer::run(model, &infer::quantize_input(model, x).unwrap()).unwrap().output(), q);
        for (a, b) in int8.iter().zip(&expected) {
            assert!((a - b).abs() <= steps * q.scale, "int8 {int8:?} vs float {expected:?} (step {})", q.scale);
        }
    }
}

/// The circuit witness equals the integer inference, and the proof verifies and commits to it.
pub(crate) fn proof_commits_to_the_inference(model: &QuantModel, x: &[f32]) {
    let plan = SegmentPlan::auto(model, 1 << 16);
    let prover = TaskProver::new(model.clone(), plan.clone()).unwrap();
    let x = infer::quantize_input(model, x).unwrap();
    let expected = infer::run(model, &x).unwrap();
    assert_eq!(prover.circuit_trace(&x).unwrap(), expected);
    let (proof, trace, _) = prover.prove(&x, [7; 32], [9; 20], &mut |_, _, _| {}).unwrap();
    assert_eq!(trace, expected);
    let publics = TaskVerifier::new(model, &plan).unwrap().verify(&proof).unwrap();
    assert_eq!(publics.output_commitment, tgrid_circuits::commit(trace.output()));
}

pub(crate) fn samples(seed: u64, count: usize, len: usize) -> Vec<Vec<f32>> {
    (0..count).map(|i| values(seed + i as u64, len, 1.0)).collect()
}

/// `output = Gemm(input · 0.5, W, b)`: the scaling applied to the model input itself (no layer
/// before it to fold into) becomes a table, and the model works.
#[test]
fn a_scaling_of_the_model_input_imports_as_a_table() {
    let mut g = OnnxGraph::new(&[1, 4], &[1, 3]);
    g.floats("half", &[], vec![0.5])
        .floats("w", &[4, 3], (0..12).map(|i| i as f32 / 10.0 - 0.5).collect())
        .floats("b", &[3], vec![0.1, -0.2, 0.3])
        .node("Mul", &["input", "half"], "scaled", vec![])
        .node("Gemm", &["scaled", "w", "b"], "output", vec![]);
    let xs: Vec<Vec<f32>> = (0..8).map(|i| (0..4).map(|j| (i * 4 + j) as f32 / 32.0).collect()).collect();
    let (_, quant) = import_and_quantize(&g, "scaled", &xs);
    assert_eq!(quant.nodes.iter().map(|n| n.op.kind()).collect::<Vec<_>>(), ["Table", "Dense"]);
}

/// A vision transformer's class token: patches embedded, a learned token (expanded to the
/// batch, as PyTorch exports `cls.expand(B, -1, -1)`) concatenated before them, position
/// embeddings added, a LayerNorm, the class token's row read out and classified.
fn class_token_graph() -> OnnxGraph {
    let (patches, patch, dim) = (4, 8, 16);
    let mut g = OnnxGraph::new(&[1, patches, patch], &[1, 3]);
    g.floats("embed_w", &[patch, dim], values(1, (patch * dim) as usize, 0.4))
        .floats("embed_b", &[dim], values(2, dim as usize, 0.1))
        .floats("cls", &[1, 1, dim], values(3, dim as usize, 0.8))
        .ints("cls_shape", &[3], vec![1, 1, dim])
        .floats("pos", &[1, patches + 1, dim], values(4, ((patches + 1) * dim) as usize, 0.2))
        .floats("ln_scale", &[dim], values(5, dim as usize, 0.3).into_iter().map(|v| 1.0 + v).collect())
        .floats("ln_bias", &[dim], values(6, dim as usize, 0.1))
        .ints("first", &[], vec![0])
        .floats("head_w", &[dim, 3], values(7, (dim * 3) as usize, 0.5))
        .floats("head_b", &[3], values(8, 3, 0.1))
        .node("MatMul", &["input", "embed_w"], "embedded", vec![])
        .node("Add", &["embedded", "embed_b"], "patches", vec![])
        .node("Expand", &["cls", "cls_shape"], "cls_batch", vec![])
        .node("Concat", &["cls_batch", "patches"], "tokens", vec![int_attr("axis", 1)])
        .node("Add", &["tokens", "pos"], "placed", vec![])
        .node("LayerNormalization", &["placed", "ln_scale", "ln_bias"], "normed", vec![int_attr("axis", -1)])
        .node("Gather", &["normed", "first"], "class_row", vec![int_attr("axis", 1)])
        .node("Gemm", &["class_row", "head_w", "head_b"], "output", vec![]);
    g
}

#[test]
fn a_class_token_concatenated_before_the_patches_compiles_and_proves() {
    let xs = samples(100, 24, 32);
    let (float, model) = import_and_quantize(&class_token_graph(), "class_token", &xs);
    let concat = model.nodes.iter().find(|n| n.op.kind() == "Concat").expect("a Concat node");
    let tgrid_circuits::Op::Concat { constants, .. } = &concat.op else { unreachable!() };
    assert_eq!(constants.len(), 16, "the class token is the Concat's constant part");
    int8_tracks_float(&float, &model, &xs, 6.0);
    proof_commits_to_the_inference(&model, &xs[3]);
}

/// The class token is part of the circuit: a proof of the same graph with another token does
/// not verify under the registered model.
#[test]
fn a_proof_with_another_class_token_is_rejected() {
    let xs = samples(100, 24, 32);
    let (_, model) = import_and_quantize(&class_token_graph(), "class_token", &xs);
    let mut other = model.clone();
    let node = other.nodes.iter_mut().find(|n| n.op.kind() == "Concat").unwrap();
    let tgrid_circuits::Op::Concat { constants, .. } = &mut node.op else { unreachable!() };
    constants[5] = constants[5].wrapping_add(1);
    let plan = SegmentPlan::auto(&model, 1 << 16);
    let x = infer::quantize_input(&model, &xs[0]).unwrap();
    let (forged, _, _) =
        TaskProver::new(other, plan.clone()).unwrap().prove(&x, [7; 32], [9; 20], &mut |_, _, _| {}).unwrap();
    assert!(TaskVerifier::new(&model, &plan).unwrap().verify(&forged).is_err());
}

/// Two branches of different ranges joined on the last axis (and one of them twice): both are
/// calibrated to the joined tensor's quantization, so the Concat is a copy.
#[test]
fn two_computed_branches_concatenated_share_one_quantization_and_prove() {
    let mut g = OnnxGraph::new(&[1, 6], &[1, 2]);
    g.floats("wa", &[6, 4], values(11, 24, 0.3))
        .floats("wb", &[6, 3], values(12, 18, 2.0))
        .floats("bb", &[3], values(13, 3, 0.5))
        .floats("wo", &[11, 2], values(14, 22, 0.5))
        .node("MatMul", &["input", "wa"], "a", vec![])
        .node("Gemm", &["input", "wb", "bb"], "b_pre", vec![])
        .node("Relu", &["b_pre"], "b", vec![])
        .node("Concat", &["a", "b", "a"], "joined", vec![int_attr("axis", 1)])
        .node("MatMul", &["joined", "wo"], "output", vec![]);
    let xs = samples(200, 32, 6);
    let (float, model) = import_and_quantize(&g, "branches", &xs);
    let concat = model.nodes.iter().find(|n| n.op.kind() == "Concat").expect("a Concat node");
    assert_eq!(concat.inputs.len(), 2, "a tensor joined twice is read once");
    assert!(concat.inputs.iter().all(|&t| model.tensor_q(t) == concat.q));
    int8_tracks_float(&float, &model, &xs, 6.0);
    proof_commits_to_the_inference(&model, &xs[5]);
}

/// A Concat of the token ids (fixed quantization) with a computed tensor cannot share one
/// quantization: a clear error naming the node, not a wrong model.
#[test]
fn a_concat_that_cannot_share_one_quantization_is_a_clear_error() {
    let mut g = OnnxGraph::new(&[1, 4], &[1, 8]);
    g.floats("w", &[4, 4], values(21, 16, 0.5))
        .node("Softmax", &["input"], "probabilities", vec![int_attr("axis", -1)])
        .node("MatMul", &["input", "w"], "projected", vec![])
        .node("Concat", &["probabilities", "projected"], "output", vec![int_attr("axis", 1)]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("softmax_concat.onnx");
    g.write(&path);
    let (float, _) = import_onnx(&path).unwrap();
    let err = quantize_model(&float, &samples(300, 8, 4)).unwrap_err().to_string();
    assert!(err.contains("Concat") && err.contains("fixed quantization"), "{err}");
}

/// `Gemm → activation → Gemm`, the activation `op` with `attrs` and constant operands `extra`
/// (name, values) after its input.
fn activation_graph(op: &str, attrs: Vec<tract_onnx::pb::AttributeProto>, extra: &[(&str, Vec<f32>)]) -> OnnxGraph {
    let mut g = OnnxGraph::new(&[1, 6], &[1, 3]);
    g.floats("w1", &[6, 8], values(31, 48, 0.8)).floats("b1", &[8], values(32, 8, 0.3));
    g.floats("w2", &[8, 3], values(33, 24, 0.6));
    let mut inputs = vec!["hidden"];
    for (name, v) in extra {
        let dims: Vec<i64> = if v.len() == 1 { vec![] } else { vec![v.len() as i64] };
        g.floats(name, &dims, v.clone());
        inputs.push(name);
    }
    g.node("Gemm", &["input", "w1", "b1"], "hidden", vec![]).node(op, &inputs, "activated", attrs).node(
        "MatMul",
        &["activated", "w2"],
        "output",
        vec![],
    );
    g
}

/// Every activation imports as one table equal to tract's float function, its int8 model tracks
/// float, and its circuit witness, integer inference and proven output agree bit for bit (a
/// wrong table read is refused by the verifier: `tgrid-circuits`' token tests).
#[test]
fn activations_import_as_tables_and_prove_exactly() {
    let xs = samples(400, 24, 6);
    type Case<'a> = (&'a str, Vec<tract_onnx::pb::AttributeProto>, Vec<(&'a str, Vec<f32>)>);
    let cases: Vec<Case<'_>> = vec![
        ("LeakyRelu", vec![float_attr("alpha", 0.1)], vec![]),
        ("Elu", vec![float_attr("alpha", 0.7)], vec![]),
        ("Selu", vec![], vec![]),
        // α = 1: tract 0.23.9's Celu leaves out the α of ONNX's `min(0, α·(exp(x/α) − 1))`, so
        // only there do the two agree (the spec's form is checked in `import::activations`).
        ("Celu", vec![float_attr("alpha", 1.0)], vec![]),
        ("Softplus", vec![], vec![]),
        ("Softsign", vec![], vec![]),
        ("Mish", vec![], vec![]),
        ("HardSigmoid", vec![float_attr("alpha", 0.3), float_attr("beta", 0.4)], vec![]),
        ("HardSwish", vec![], vec![]),
        ("ThresholdedRelu", vec![float_attr("alpha", 0.2)], vec![]),
        ("Clip", vec![], vec![("lo", vec![-0.3]), ("hi", vec![0.5])]),
        ("PRelu", vec![], vec![("slope", vec![0.25; 8])]),
    ];
    for (op, attrs, extra) in cases {
        let (float, model) = import_and_quantize(&activation_graph(op, attrs, &extra), op, &xs);
        let kinds: Vec<&str> = model.nodes.iter().map(|n| n.op.kind()).collect();
        assert!(kinds.contains(&"Table"), "{op}: {kinds:?}");
        // ThresholdedRelu jumps by α at α: an input within half an int8 step of it may land on
        // the other side (docs/quantization.md), so its int8 outputs need not track float.
        if op != "ThresholdedRelu" {
            int8_tracks_float(&float, &model, &xs, 6.0);
        }
        proof_commits_to_the_inference(&model, &xs[2]);
    }
}

/// What cannot be a table is a clear error naming the op and the node.
#[test]
fn activations_that_are_not_one_function_are_clear_errors() {
    let cases = [("Clip", vec![("lo", vec![0.5]), ("hi", vec![-0.5])], "above its max")];
    for (op, extra, why) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("{op}.onnx"));
        activation_graph(op, vec![], &extra).write(&path);
        let err = import_onnx(&path).unwrap_err().to_string();
        assert!(err.contains(why) && err.contains(op), "{op}: {err}");
    }
}

/// An output that is an `Identity` of an earlier tensor, with nodes nothing reads beside and
/// after it (as exporters leave them): the dead nodes are left out, with a warning, and the rest
/// compiles and proves.
#[test]
fn an_output_before_the_last_node_keeps_only_what_it_reads() {
    let mut g = OnnxGraph::new(&[1, 6], &[1, 3]);
    g.floats("w1", &[6, 8], values(41, 48, 0.8))
        .floats("w2", &[8, 3], values(42, 24, 0.6))
        .floats("w3", &[8, 2], values(43, 16, 0.5))
        .floats("w4", &[3, 2], values(44, 6, 0.5))
        .node("MatMul", &["input", "w1"], "hidden", vec![])
        .node("MatMul", &["hidden", "w3"], "unread", vec![])
        .node("MatMul", &["hidden", "w2"], "logits", vec![])
        .node("Identity", &["logits"], "output", vec![])
        .node("MatMul", &["logits", "w4"], "after", vec![]);
    let xs = samples(500, 16, 6);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dead.onnx");
    g.write(&path);
    let (_, warnings) = import_onnx(&path).unwrap();
    assert!(warnings.iter().any(|w| w.contains("compute nothing the output")), "{warnings:?}");
    let (float, model) = import_and_quantize(&g, "dead", &xs);
    assert_eq!(model.nodes.iter().map(|n| n.op.kind()).collect::<Vec<_>>(), ["Dense", "Dense"]);
    int8_tracks_float(&float, &model, &xs, 6.0);
    proof_commits_to_the_inference(&model, &xs[1]);
}

/// `Expand` and `Tile` of a computed tensor (a token broadcast over positions, features repeated)
/// are copies: index maps, proven like any gather.
#[test]
fn expand_and_tile_of_a_computed_tensor_compile_and_prove() {
    let mut g = OnnxGraph::new(&[1, 4], &[1, 3]);
    g.floats("w1", &[4, 4], values(51, 16, 0.8))
        .ints("row", &[3], vec![1, 1, 4])
        .ints("to", &[3], vec![1, 3, 4])
        .ints("repeats", &[3], vec![1, 1, 2])
        .floats("w2", &[24, 3], values(52, 72, 0.4))
        .node("MatMul", &["input", "w1"], "h", vec![])
        .node("Reshape", &["h", "row"], "h_row", vec![])
        .node("Expand", &["h_row", "to"], "broadcast", vec![])
        .node("Tile", &["broadcast", "repeats"], "tiled", vec![])
        .node("Flatten", &["tiled"], "flat", vec![int_attr("axis", 1)])
        .node("MatMul", &["flat", "w2"], "output", vec![]);
    let xs = samples(600, 16, 4);
    let (float, model) = import_and_quantize(&g, "expand_tile", &xs);
    assert!(
        model.nodes.iter().any(|n| n.op.kind() == "Gather"),
        "{:?}",
        model.nodes.iter().map(|n| n.op.kind()).collect::<Vec<_>>()
    );
    int8_tracks_float(&float, &model, &xs, 6.0);
    proof_commits_to_the_inference(&model, &xs[4]);
}

/// One causal self-attention layer the way exporters write it: the mask built from the
/// hidden state's shape (`Shape`, `Gather`, `Range`, `Unsqueeze`, `Greater`) and position ids
/// from `ConstantOfShape`, `Equal` and `NonZero`. Everything that depends on constants and
/// shapes alone is folded at compile time (by tract's inference where our own folding has no
/// rule), so what remains is the layers.
fn shape_built_attention_graph(opset: i64) -> OnnxGraph {
    let (t, d) = (4i64, 8i64);
    let mut g = OnnxGraph::new(&[1, t, d], &[1, t, 3]);
    g.opset(opset)
        .floats("w0", &[d, d], values(61, 64, 0.5))
        .floats("pos_table", &[16, d], values(62, 128, 0.3))
        .floats("wq", &[d, d], values(63, 64, 0.6))
        .floats("wk", &[d, d], values(64, 64, 0.6))
        .floats("wv", &[d, d], values(65, 64, 0.6))
        .floats("wo", &[d, 3], values(66, 24, 0.5))
        .floats("scale", &[], vec![0.35])
        .floats("minus_inf", &[], vec![f32::NEG_INFINITY])
        .floats("zero_f", &[], vec![0.0])
        .ints("one_index", &[], vec![1])
        .ints("zero", &[], vec![0])
        .ints("one", &[], vec![1])
        .ints("axis0", &[1], vec![0])
        .ints("axis1", &[1], vec![1])
        .node("MatMul", &["input", "w0"], "h", vec![])
        // Position ids: nonzero(zeros(T) == 0) = 0..T.
        .node("Shape", &["h"], "shape", vec![])
        .node("Gather", &["shape", "one_index"], "len", vec![int_attr("axis", 0)])
        .node("Unsqueeze", &["len", "axis0"], "len_1d", vec![])
        .node("ConstantOfShape", &["len_1d"], "zeros", vec![])
        .node("Equal", &["zeros", "zero_f"], "all_true", vec![])
        .node("NonZero", &["all_true"], "nonzero", vec![])
        .node("Squeeze", &["nonzero", "axis0"], "position_ids", vec![])
        .node("Gather", &["pos_table", "position_ids"], "positions", vec![int_attr("axis", 0)])
        .node("Add", &["h", "positions"], "hp", vec![])
        .node("MatMul", &["hp", "wq"], "q", vec![])
        .node("MatMul", &["hp", "wk"], "k", vec![])
        .node("MatMul", &["hp", "wv"], "v", vec![])
        .node("Transpose", &["k"], "kt", vec![onnx_graph::ints_attr("perm", &[0, 2, 1])])
        .node("MatMul", &["q", "kt"], "scores", vec![])
        .node("Mul", &["scores", "scale"], "scaled", vec![])
        // The causal mask: position j is hidden from query i when j > i.
        .node("Range", &["zero", "len", "one"], "range", vec![])
        .node("Unsqueeze", &["range", "axis0"], "key_index", vec![])
        .node("Unsqueeze", &["range", "axis1"], "query_index", vec![])
        .node("Greater", &["key_index", "query_index"], "future", vec![])
        .node("Where", &["future", "minus_inf", "scaled"], "masked", vec![])
        .node("Softmax", &["masked"], "probs", vec![int_attr("axis", -1)])
        .node("MatMul", &["probs", "v"], "attended", vec![])
        .node("MatMul", &["attended", "wo"], "output", vec![]);
    g
}

#[test]
fn masks_and_position_ids_built_from_shapes_fold_at_any_opset_and_prove() {
    let xs = samples(700, 24, 32);
    for opset in [13, 17] {
        let (float, model) = import_and_quantize(&shape_built_attention_graph(opset), "shape_built", &xs);
        let softmax = model.nodes.iter().find(|n| n.op.kind() == "Softmax").expect("a Softmax");
        let tgrid_circuits::Op::Softmax { keep, .. } = &softmax.op else { unreachable!() };
        let causal: Vec<bool> = (0..16).map(|c| c % 4 <= c / 4).collect();
        assert_eq!(keep, &causal, "opset {opset}: the mask tract evaluated is the causal one");
        int8_tracks_float(&float, &model, &xs, 8.0);
        if opset == 13 {
            proof_commits_to_the_inference(&model, &xs[2]);
        }
    }
}

/// A projection, a LayerNorm, a head: the LayerNorm as one `LayerNormalization` node (opset 17)
/// or written out as opset-13 exporters write it (`ReduceMean`, `Sub`, `Pow`, `ReduceMean`,
/// `Add`, `Sqrt`, then `Div`, or `Reciprocal` and `Mul`; then `Mul γ`, `Add β` if `affine`).
fn layer_norm_graph(written_out: Option<&str>, affine: bool) -> OnnxGraph {
    let (t, d) = (4i64, 16i64);
    let mut g = OnnxGraph::new(&[1, t, d], &[1, t, 3]);
    let gamma: Vec<f32> = values(72, 16, 0.4).into_iter().map(|v| 1.0 + v).collect();
    let beta = if affine { values(73, 16, 0.2) } else { vec![0.0; 16] };
    let gamma = if affine { gamma } else { vec![1.0; 16] };
    g.opset(if written_out.is_some() { 13 } else { 17 })
        .floats("w", &[d, d], values(71, 256, 0.5))
        .floats("gamma", &[d], gamma)
        .floats("beta", &[d], beta)
        .floats("wo", &[d, 3], values(74, 48, 0.5))
        .floats("two", &[], vec![2.0])
        .floats("eps", &[], vec![1e-5])
        .node("MatMul", &["input", "w"], "h", vec![]);
    let normed = if affine { "normed" } else { "ln" };
    match written_out {
        None => {
            g.node("LayerNormalization", &["h", "gamma", "beta"], "ln", vec![float_attr("epsilon", 1e-5)]);
        }
        Some(division) => {
            g.node("ReduceMean", &["h"], "mean", vec![onnx_graph::ints_attr("axes", &[-1])])
                .node("Sub", &["h", "mean"], "centered", vec![])
                .node("Pow", &["centered", "two"], "squared", vec![])
                .node("ReduceMean", &["squared"], "variance", vec![onnx_graph::ints_attr("axes", &[2])])
                .node("Add", &["variance", "eps"], "variance_eps", vec![])
                .node("Sqrt", &["variance_eps"], "deviation", vec![]);
            if division == "Div" {
                g.node("Div", &["centered", "deviation"], normed, vec![]);
            } else {
                g.node("Reciprocal", &["deviation"], "inverse", vec![]).node(
                    "Mul",
                    &["inverse", "centered"],
                    normed,
                    vec![],
                );
            }
            if affine {
                g.node("Mul", &["normed", "gamma"], "scaled", vec![]).node("Add", &["scaled", "beta"], "ln", vec![]);
            }
        }
    }
    g.node("MatMul", &["ln", "wo"], "output", vec![]);
    g
}

/// A LayerNorm written out op by op is recognised and proven as the one LayerNorm node: the
/// quantized model is the one the `LayerNormalization` export gives, and it proves.
#[test]
fn a_layer_norm_written_out_is_the_layer_norm_node() {
    let xs = samples(800, 24, 64);
    // Everything but the names the nodes carry for messages.
    let ops = |m: &QuantModel| {
        let mut m = m.clone();
        m.name.clear();
        m.nodes.iter_mut().for_each(|n| n.name.clear());
        m
    };
    for affine in [true, false] {
        let (_, fused) = import_and_quantize(&layer_norm_graph(None, affine), "ln", &xs);
        for division in ["Div", "Reciprocal"] {
            let (float, model) = import_and_quantize(&layer_norm_graph(Some(division), affine), "ln_written", &xs);
            assert_eq!(ops(&model), ops(&fused), "{division}, affine {affine}");
            int8_tracks_float(&float, &model, &xs, 6.0);
        }
    }
    let (_, model) = import_and_quantize(&layer_norm_graph(Some("Div"), true), "ln_written", &xs);
    proof_commits_to_the_inference(&model, &xs[5]);
}

/// A pattern that is not a LayerNorm (the variance over another axis) is not fused: it is
/// imported op by op (its division a reciprocal table and a product), equal to tract in float.
#[test]
fn a_near_layer_norm_is_not_fused() {
    let mut g = layer_norm_graph(Some("Div"), false);
    // The same graph with the second mean over axis 1: a different function.
    g.replace_attr("ReduceMean_4", onnx_graph::ints_attr("axes", &[1]));
    let xs = samples(800, 24, 64);
    let (float, _) = import_and_quantize(&g, "near_ln", &xs);
    assert!(
        !float.nodes.iter().any(|n| matches!(n.op, tgrid_onnx::FloatOp::LayerNorm { .. })),
        "a near miss must not become a LayerNorm"
    );
}

/// RMSNorm as exporters write it (`Pow 2 → ReduceMean → Add ε → Sqrt`, then `Div`, or
/// `Reciprocal` and `Mul`, then `Mul γ`): op by op, the division a reciprocal table and a product
/// of two tensors. Two roundings more than a fused norm: it tracks float more loosely.
#[test]
fn an_rms_norm_written_out_compiles_and_proves() {
    let xs = samples(2000, 24, 64);
    for division in ["Div", "Reciprocal"] {
        let (t, d) = (4i64, 16i64);
        let mut g = OnnxGraph::new(&[1, t, d], &[1, t, 3]);
        g.opset(13)
            .floats("w", &[d, d], values(221, 256, 0.5))
            .floats("gamma", &[d], values(222, 16, 0.3).into_iter().map(|v| 1.0 + v).collect())
            .floats("wo", &[d, 3], values(223, 48, 0.5))
            .floats("two", &[], vec![2.0])
            .floats("eps", &[], vec![1e-6])
            .node("MatMul", &["input", "w"], "h", vec![])
            .node("Pow", &["h", "two"], "squared", vec![])
            .node("ReduceMean", &["squared"], "mean_square", vec![onnx_graph::ints_attr("axes", &[-1])])
            .node("Add", &["mean_square", "eps"], "shifted", vec![])
            .node("Sqrt", &["shifted"], "rms", vec![]);
        if division == "Div" {
            g.node("Div", &["h", "rms"], "normed", vec![]);
        } else {
            g.node("Reciprocal", &["rms"], "inverse", vec![]).node("Mul", &["h", "inverse"], "normed", vec![]);
        }
        g.node("Mul", &["normed", "gamma"], "scaled", vec![]).node("MatMul", &["scaled", "wo"], "output", vec![]);
        let (float, model) = import_and_quantize(&g, &format!("rms_{division}"), &xs);
        int8_tracks_float(&float, &model, &xs, 16.0);
        proof_commits_to_the_inference(&model, &xs[1]);
    }
}

/// `ReduceMean`, `ReduceSum` and `ReduceMax` over several axes, and over all of them: the
/// reduced axes are moved last and merged (copies), then summed by a Dense or maxed by a pool.
#[test]
fn reductions_over_several_axes_and_all_axes_compile_and_prove() {
    let xs = samples(900, 24, 60);
    for op in ["ReduceMean", "ReduceSum", "ReduceMax"] {
        for all_axes in [false, true] {
            let mut g = OnnxGraph::new(&[1, 3, 4, 5], &[1, 3]);
            g.floats("w", &[5, 5], values(91, 25, 0.6)).ints("axes", &[2], vec![1, 3]);
            g.node("MatMul", &["input", "w"], "h", vec![]);
            let (inputs, mut attrs) = match (op, all_axes) {
                (_, true) => (vec!["h"], vec![]),
                ("ReduceSum", false) => (vec!["h", "axes"], vec![]),
                _ => (vec!["h"], vec![onnx_graph::ints_attr("axes", &[1, 3])]),
            };
            attrs.push(int_attr("keepdims", 0));
            g.node(op, &inputs, "reduced", attrs);
            let width = if all_axes { 1 } else { 4 };
            g.floats("head", &[width, 3], values(92, width as usize * 3, 0.7));
            if all_axes {
                g.ints("one_by_one", &[2], vec![1, 1]).node("Reshape", &["reduced", "one_by_one"], "row", vec![]);
            } else {
                g.node("Identity", &["reduced"], "row", vec![]);
            }
            g.node("MatMul", &["row", "head"], "output", vec![]);
            let name = format!("{op}_{all_axes}");
            let (float, model) = import_and_quantize(&g, &name, &xs);
            int8_tracks_float(&float, &model, &xs, 6.0);
            proof_commits_to_the_inference(&model, &xs[1]);
        }
    }
}

/// Elementwise arithmetic of two computed tensors with numpy broadcasting: a gate
/// (`h · σ(g)`), a centering over tokens (`h − mean over axis 1`, broadcast), and a sum of
/// a row and a column. Products are 1×1 matrix products, differences an `Add` with a negative
/// weight, broadcasts copies; all proven.
#[test]
fn products_and_differences_of_computed_tensors_broadcast_and_prove() {
    let mut g = OnnxGraph::new(&[1, 4, 6], &[1, 4, 3]);
    g.floats("w1", &[6, 6], values(101, 36, 0.6))
        .floats("w2", &[6, 6], values(102, 36, 0.6))
        .floats("w3", &[6, 4], values(103, 24, 0.6))
        .floats("wo", &[6, 3], values(104, 18, 0.5))
        .node("MatMul", &["input", "w1"], "h", vec![])
        .node("MatMul", &["input", "w2"], "g", vec![])
        .node("Sigmoid", &["g"], "gate", vec![])
        .node("Mul", &["h", "gate"], "gated", vec![])
        .node("ReduceMean", &["gated"], "token_mean", vec![onnx_graph::ints_attr("axes", &[1])])
        .node("Sub", &["gated", "token_mean"], "centered", vec![])
        // A per-token value (one column) added to every channel of its row.
        .node("MatMul", &["input", "w3"], "per_token", vec![])
        .node("ReduceMax", &["per_token"], "token_max", vec![onnx_graph::ints_attr("axes", &[2])])
        .node("Add", &["centered", "token_max"], "shifted", vec![])
        .node("MatMul", &["shifted", "wo"], "output", vec![]);
    let xs = samples(1000, 24, 24);
    let (float, model) = import_and_quantize(&g, "arithmetic", &xs);
    let kinds: Vec<&str> = model.nodes.iter().map(|n| n.op.kind()).collect();
    assert!(kinds.contains(&"MatMul") && kinds.contains(&"Add"), "{kinds:?}");
    let subtracts = model.nodes.iter().any(|n| matches!(n.op, tgrid_circuits::Op::Add { kb, .. } if kb < 0));
    assert!(subtracts, "the difference is an Add with a negative weight");
    int8_tracks_float(&float, &model, &xs, 8.0);
    proof_commits_to_the_inference(&model, &xs[6]);
}

/// `Pad` of a computed tensor in each mode (constant 0.25, reflect, edge; uneven pads) between
/// two convolutions: a copy out of the tensor and the padding value. (Negative pads crop; tract
/// 0.23.9, the float reference, panics on them, so they are tested in tgrid-onnx alone.)
#[test]
fn pads_in_every_mode_compile_and_prove() {
    let xs = samples(1100, 24, 50);
    for mode in ["constant", "reflect", "edge"] {
        let mut g = OnnxGraph::new(&[1, 2, 5, 5], &[1, 3]);
        g.floats("c1", &[3, 2, 3, 3], values(111, 54, 0.4))
            .floats("c2", &[2, 3, 3, 3], values(112, 54, 0.4))
            .floats("head", &[32, 3], values(113, 96, 0.3))
            .ints("pads", &[8], vec![0, 0, 1, 2, 0, 0, 2, 1])
            .floats("value", &[], vec![0.25])
            .node("Conv", &["input", "c1"], "a", vec![])
            // tract 0.23.9 pads with the constant whenever one is given, whatever the mode, so
            // the other modes leave it out (as ONNX ignores it there).
            .node(
                "Pad",
                if mode == "constant" { &["a", "pads", "value"][..] } else { &["a", "pads"][..] },
                "padded",
                vec![onnx_graph::string_attr("mode", mode)],
            )
            .node("Conv", &["padded", "c2"], "b", vec![])
            .node("Flatten", &["b"], "flat", vec![int_attr("axis", 1)])
            .node("Gemm", &["flat", "head"], "output", vec![]);
        let (float, model) = import_and_quantize(&g, &format!("pad_{mode}"), &xs);
        int8_tracks_float(&float, &model, &xs, 6.0);
        proof_commits_to_the_inference(&model, &xs[7]);
    }
}

/// `BatchNormalization` with no layer to fold into: after a max pool (`[N, C, H, W]`) and after
/// a ReLU (`[N, C]`, as Keras and pre-activation networks place it): a depthwise 1×1
/// convolution, one weight per channel.
#[test]
fn a_batch_norm_after_anything_compiles_and_proves() {
    let bn = |g: &mut OnnxGraph, prefix: &str, c: usize, seed: u64| {
        let var: Vec<f32> = values(seed + 3, c, 0.5).into_iter().map(|v| v + 0.8).collect();
        g.floats(&format!("{prefix}_scale"), &[c as i64], values(seed, c, 0.5).into_iter().map(|v| v + 1.0).collect())
            .floats(&format!("{prefix}_bias"), &[c as i64], values(seed + 1, c, 0.3))
            .floats(&format!("{prefix}_mean"), &[c as i64], values(seed + 2, c, 0.2))
            .floats(&format!("{prefix}_var"), &[c as i64], var);
    };
    let mut g = OnnxGraph::new(&[1, 2, 6, 6], &[1, 3]);
    bn(&mut g, "bn1", 3, 121);
    bn(&mut g, "bn2", 4, 125);
    let norm = |p: &str| [format!("{p}_scale"), format!("{p}_bias"), format!("{p}_mean"), format!("{p}_var")];
    let [s1, b1, m1, v1] = norm("bn1");
    let [s2, b2, m2, v2] = norm("bn2");
    g.floats("c1", &[3, 2, 3, 3], values(131, 54, 0.4))
        .floats("fc", &[12, 4], values(132, 48, 0.4))
        .floats("head", &[4, 3], values(133, 12, 0.5))
        .node("Conv", &["input", "c1"], "a", vec![])
        .node("Relu", &["a"], "r", vec![])
        .node(
            "MaxPool",
            &["r"],
            "pooled",
            vec![onnx_graph::ints_attr("kernel_shape", &[2, 2]), onnx_graph::ints_attr("strides", &[2, 2])],
        )
        .node("BatchNormalization", &["pooled", &s1, &b1, &m1, &v1], "normed", vec![])
        .node("Flatten", &["normed"], "flat", vec![int_attr("axis", 1)])
        .node("Gemm", &["flat", "fc"], "hidden", vec![])
        .node("Relu", &["hidden"], "hidden_relu", vec![])
        .node("BatchNormalization", &["hidden_relu", &s2, &b2, &m2, &v2], "hidden_normed", vec![])
        .node("Gemm", &["hidden_normed", "head"], "output", vec![]);
    let xs = samples(1200, 24, 72);
    let (float, model) = import_and_quantize(&g, "batch_norm_alone", &xs);
    let kinds: Vec<&str> = model.nodes.iter().map(|n| n.op.kind()).collect();
    assert_eq!(kinds, ["Conv", "MaxPool", "Conv", "Reshape", "Dense", "Reshape", "Conv", "Reshape", "Dense"]);
    let depthwise = model
        .nodes
        .iter()
        .filter(|n| matches!(n.op, tgrid_circuits::Op::Conv { groups, c_out, .. } if groups == c_out));
    assert_eq!(depthwise.count(), 2, "each alone BatchNormalization is one weight per channel");
    int8_tracks_float(&float, &model, &xs, 6.0);
    proof_commits_to_the_inference(&model, &xs[8]);
}

/// MobileNet's inverted residual: a 1×1 expansion with BatchNormalization and ReLU6, a depthwise
/// 3×3 (one group per channel) with its own, a grouped 3×3 (2 groups), a 1×1 projection and the
/// residual sum; then a depthwise convolution of 80 channels. A grouped convolution is one Conv
/// whose outputs each read their group's channels only: `c_in / groups` weights per output.
#[test]
fn grouped_and_depthwise_convolutions_compile_and_prove() {
    let bn = |g: &mut OnnxGraph, p: &str, c: usize, seed: u64| {
        let var: Vec<f32> = values(seed + 3, c, 0.3).into_iter().map(|v| v + 0.7).collect();
        g.floats(&format!("{p}_s"), &[c as i64], values(seed, c, 0.3).into_iter().map(|v| v + 1.0).collect())
            .floats(&format!("{p}_b"), &[c as i64], values(seed + 1, c, 0.2))
            .floats(&format!("{p}_m"), &[c as i64], values(seed + 2, c, 0.1))
            .floats(&format!("{p}_v"), &[c as i64], var);
        [format!("{p}_s"), format!("{p}_b"), format!("{p}_m"), format!("{p}_v")]
    };
    let mut g = OnnxGraph::new(&[1, 4, 6, 6], &[1, 3]);
    let [s1, b1, m1, v1] = bn(&mut g, "bn1", 8, 141);
    let [s2, b2, m2, v2] = bn(&mut g, "bn2", 8, 145);
    let with_group = |k: i64| {
        let mut a = vec![onnx_graph::ints_attr("pads", &[1, 1, 1, 1])];
        a.push(int_attr("group", k));
        a
    };
    g.floats("expand", &[8, 4, 1, 1], values(151, 32, 0.5))
        .floats("depthwise", &[8, 1, 3, 3], values(152, 72, 0.5))
        .floats("grouped", &[8, 4, 3, 3], values(153, 288, 0.3))
        .floats("project", &[4, 8, 1, 1], values(154, 32, 0.4))
        .floats("head", &[4, 3], values(155, 12, 0.5))
        .floats("zero", &[], vec![0.0])
        .floats("six", &[], vec![6.0])
        .node("Conv", &["input", "expand"], "e", vec![])
        .node("BatchNormalization", &["e", &s1, &b1, &m1, &v1], "e_bn", vec![])
        .node("Clip", &["e_bn", "zero", "six"], "e_act", vec![])
        .node("Conv", &["e_act", "depthwise"], "d", with_group(8))
        .node("BatchNormalization", &["d", &s2, &b2, &m2, &v2], "d_bn", vec![])
        .node("Clip", &["d_bn", "zero", "six"], "d_act", vec![])
        .node("Conv", &["d_act", "grouped"], "grouped_out", with_group(2))
        .node("Conv", &["grouped_out", "project"], "p", vec![])
        .node("Add", &["p", "input"], "residual", vec![])
        .node("GlobalAveragePool", &["residual"], "pooled", vec![])
        .node("Flatten", &["pooled"], "flat", vec![int_attr("axis", 1)])
        .node("Gemm", &["flat", "head"], "output", vec![]);
    let xs = samples(1300, 24, 144);
    let (float, model) = import_and_quantize(&g, "inverted_residual", &xs);
    let groups: Vec<usize> = model
        .nodes
        .iter()
        .filter_map(|n| match n.op {
            tgrid_circuits::Op::Conv { groups, .. } => Some(groups),
            _ => None,
        })
        .collect();
    assert_eq!(groups, [1, 8, 2, 1], "BatchNormalization and ReLU6 fold into the grouped convolutions");
    int8_tracks_float(&float, &model, &xs, 8.0);
    proof_commits_to_the_inference(&model, &xs[9]);

    let mut wide = OnnxGraph::new(&[1, 2, 4, 4], &[1, 3]);
    wide.floats("expand", &[80, 2, 1, 1], values(161, 160, 0.5))
        .floats("depthwise", &[80, 1, 3, 3], values(162, 720, 0.5))
        .floats("head", &[80, 3], values(163, 240, 0.3))
        .node("Conv", &["input", "expand"], "e", vec![])
        .node("Relu", &["e"], "e_act", vec![])
        .node("Conv", &["e_act", "depthwise"], "d", with_group(80))
        .node("GlobalAveragePool", &["d"], "pooled", vec![])
        .node("Flatten", &["pooled"], "flat", vec![int_attr("axis", 1)])
        .node("Gemm", &["flat", "head"], "output", vec![]);
    let xs = samples(1400, 16, 32);
    let (float, model) = import_and_quantize(&wide, "depthwise_80", &xs);
    int8_tracks_float(&float, &model, &xs, 8.0);
    proof_commits_to_the_inference(&model, &xs[3]);
}

/// `Resize` between two convolutions in the modes exporters write (`nearest` as PyTorch's
/// `Upsample` and `interpolate` export it, `linear` with half_pixel, align_corners and
/// pytorch_half_pixel; scales and sizes, a non-integer scale), and opset 9's `Upsample`.
#[test]
fn resizes_in_every_mode_compile_and_prove() {
    let cases: [(&str, &str, &str, bool, i64); 6] = [
        ("nearest", "asymmetric", "floor", false, 13),
        ("nearest", "half_pixel", "round_prefer_floor", true, 13),
        ("linear", "half_pixel", "", false, 13),
        ("linear", "align_corners", "", true, 13),
        ("linear", "pytorch_half_pixel", "", false, 17),
        ("nearest", "asymmetric", "floor", false, 9),
    ];
    let xs = samples(1500, 24, 24);
    let mut first_resize: Option<QuantModel> = None;
    for (k, (mode, transform, nearest, by_sizes, opset)) in cases.into_iter().enumerate() {
        let mut g = OnnxGraph::new(&[1, 2, 3, 4], &[1, 3]);
        g.opset(opset)
            .floats("c1", &[2, 2, 1, 1], values(171, 4, 0.8))
            .floats("c2", &[2, 2, 3, 3], values(172, 36, 0.4))
            .floats("scales", &[4], vec![1.0, 1.0, 2.0, 1.5])
            .floats("roi", &[0], vec![])
            .ints("sizes", &[4], vec![1, 2, 6, 6])
            .floats("head", &[32, 3], values(173, 96, 0.3))
            .node("Conv", &["input", "c1"], "a", vec![]);
        let mut attrs = vec![onnx_graph::string_attr("mode", mode)];
        if !transform.is_empty() {
            attrs.push(onnx_graph::string_attr("coordinate_transformation_mode", transform));
        }
        if !nearest.is_empty() {
            attrs.push(onnx_graph::string_attr("nearest_mode", nearest));
        }
        if opset == 9 {
            g.node("Upsample", &["a", "scales"], "big", vec![onnx_graph::string_attr("mode", mode)]);
        } else if by_sizes {
            g.node("Resize", &["a", "roi", "", "sizes"], "big", attrs);
        } else {
            g.node("Resize", &["a", "roi", "scales"], "big", attrs);
        }
        // 6×6 → 4×4 after a 3×3 convolution: 2 × 16 = 32 features.
        g.node("Conv", &["big", "c2"], "b", vec![]).node("Flatten", &["b"], "flat", vec![int_attr("axis", 1)]).node(
            "Gemm",
            &["flat", "head"],
            "output",
            vec![],
        );
        if opset == 9 {
            // tract 0.23.9 has no Upsample: opset 9's Upsample is the first case's Resize.
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("upsample.onnx");
            g.write(&path);
            let (float, _) = import_onnx(&path).unwrap();
            let upsampled = quantize_model(&float, &xs).unwrap();
            assert_eq!(
                upsampled.nodes.iter().map(|n| &n.op).collect::<Vec<_>>(),
                first_resize.as_ref().unwrap().nodes.iter().map(|n| &n.op).collect::<Vec<_>>()
            );
            continue;
        }
        let (float, model) = import_and_quantize(&g, &format!("resize_{k}"), &xs);
        int8_tracks_float(&float, &model, &xs, 8.0);
        proof_commits_to_the_inference(&model, &xs[k]);
        first_resize.get_or_insert(model);
    }
}

/// `ConvTranspose` as GAN generators and U-Net decoders use it: stride 2 with padding 1 and
/// output_padding 1 (a 4×4 kernel doubling the size, a 3×3 one), and 2 groups; then a
/// convolution and a head. The equal convolution over the spread input proves it.
#[test]
fn transposed_convolutions_compile_and_prove() {
    // (kernel, pads, output_padding, group)
    type Case = ([i64; 2], [i64; 4], [i64; 2], i64);
    let cases: [Case; 3] =
        [([4, 4], [1, 1, 1, 1], [0, 0], 1), ([3, 3], [1, 1, 1, 1], [1, 1], 1), ([3, 3], [0, 1, 1, 0], [1, 0], 2)];
    let xs = samples(1600, 24, 18);
    for (k, (kernel, pads, output_padding, group)) in cases.into_iter().enumerate() {
        // ONNX's output size: stride·(in − 1) + output_padding + kernel − pads.
        let out_hw = |i: usize| 2 * (3 - 1) + output_padding[i] + kernel[i] - pads[i] - pads[i + 2];
        let (oh, ow) = (out_hw(0), out_hw(1));
        let features = 2 * (oh - 2) * (ow - 2);
        let mut g = OnnxGraph::new(&[1, 2, 3, 3], &[1, 3]);
        g.floats(
            "up",
            &[2, 4 / group, kernel[0], kernel[1]],
            values(181, (8 / group * kernel[0] * kernel[1]) as usize, 0.5),
        )
        .floats("up_bias", &[4], values(182, 4, 0.2))
        .floats("c", &[2, 4, 3, 3], values(183, 72, 0.3))
        .floats("head", &[features, 3], values(184, (features * 3) as usize, 0.3))
        .node(
            "ConvTranspose",
            &["input", "up", "up_bias"],
            "up_out",
            vec![
                onnx_graph::ints_attr("strides", &[2, 2]),
                onnx_graph::ints_attr("pads", &pads),
                onnx_graph::ints_attr("output_padding", &output_padding),
                int_attr("group", group),
            ],
        )
        .node("Relu", &["up_out"], "up_act", vec![])
        .node("Conv", &["up_act", "c"], "b", vec![])
        .node("Flatten", &["b"], "flat", vec![int_attr("axis", 1)])
        .node("Gemm", &["flat", "head"], "output", vec![]);
        let (float, model) = import_and_quantize(&g, &format!("conv_transpose_{k}"), &xs);
        int8_tracks_float(&float, &model, &xs, 8.0);
        proof_commits_to_the_inference(&model, &xs[k]);
    }
}

/// `PRelu` with a slope per channel, channels first (`[N, C, H, W]`, slope `[C, 1, 1]`) and last
/// (`[N, C]` after a Gemm, slope `[C]`): `x + (α_c − 1)·min(x, 0)`, a table, a depthwise
/// 1×1 convolution and a sum.
#[test]
fn a_prelu_with_a_slope_per_channel_compiles_and_proves() {
    let xs = samples(1700, 24, 32);
    let mut g = OnnxGraph::new(&[1, 2, 4, 4], &[1, 3]);
    g.floats("c", &[3, 2, 3, 3], values(191, 54, 0.5))
        .floats("slope_c", &[3, 1, 1], vec![0.1, 0.25, -0.2])
        .floats("fc", &[12, 5], values(192, 60, 0.4))
        .floats("slope_last", &[5], vec![0.05, 0.3, 0.0, 0.6, 1.5])
        .floats("head", &[5, 3], values(193, 15, 0.5))
        .node("Conv", &["input", "c"], "a", vec![onnx_graph::ints_attr("pads", &[0, 0, 0, 0])])
        .node("PRelu", &["a", "slope_c"], "a_act", vec![])
        .node("Flatten", &["a_act"], "flat", vec![int_attr("axis", 1)])
        .node("Gemm", &["flat", "fc"], "hidden", vec![])
        .node("PRelu", &["hidden", "slope_last"], "hidden_act", vec![])
        .node("Gemm", &["hidden_act", "head"], "output", vec![]);
    let (float, model) = import_and_quantize(&g, "prelu_per_channel", &xs);
    int8_tracks_float(&float, &model, &xs, 8.0);
    proof_commits_to_the_inference(&model, &xs[3]);
}

/// `InstanceNormalization` (style transfer, GAN generators) after a convolution: a LayerNorm of
/// each channel's positions, then its scale and bias.
#[test]
fn instance_normalization_compiles_and_proves() {
    let xs = samples(1800, 24, 32);
    let mut g = OnnxGraph::new(&[1, 2, 4, 4], &[1, 3]);
    g.floats("c", &[3, 2, 3, 3], values(201, 54, 0.5))
        .floats("scale", &[3], vec![1.2, 0.7, -0.9])
        .floats("bias", &[3], vec![0.1, -0.3, 0.2])
        .floats("head", &[48, 3], values(202, 144, 0.3))
        .node("Conv", &["input", "c"], "a", vec![onnx_graph::ints_attr("pads", &[1, 1, 1, 1])])
        .node("InstanceNormalization", &["a", "scale", "bias"], "normed", vec![float_attr("epsilon", 1e-4)])
        .node("Relu", &["normed"], "act", vec![])
        .node("Flatten", &["act"], "flat", vec![int_attr("axis", 1)])
        .node("Gemm", &["flat", "head"], "output", vec![]);
    let (float, model) = import_and_quantize(&g, "instance_norm", &xs);
    assert!(model.nodes.iter().any(|n| n.op.kind() == "LayerNorm"));
    int8_tracks_float(&float, &model, &xs, 8.0);
    proof_commits_to_the_inference(&model, &xs[2]);
}

/// Constants of several values applied to a computed tensor: a LayerScale (`x · γ`, channels
/// last), a division by a per-channel constant (channels first), and a constant tensor
/// subtracted. A scale is a depthwise 1×1 convolution along its one varying axis; a subtracted
/// constant is an added one.
#[test]
fn scales_and_differences_by_constant_tensors_compile_and_prove() {
    let xs = samples(1900, 24, 32);
    let mut g = OnnxGraph::new(&[1, 2, 4, 4], &[1, 3]);
    g.floats("c", &[3, 2, 3, 3], values(211, 54, 0.5))
        .floats("divisor", &[3, 1, 1], vec![0.5, 2.0, -1.5])
        .floats("offsets", &[1, 3, 4, 4], values(212, 48, 0.3))
        .floats("w", &[4, 5], values(213, 20, 0.5))
        .floats("layer_scale", &[5], vec![0.1, 1.0, -0.7, 2.5, 0.02])
        .floats("head", &[60, 3], values(214, 180, 0.3))
        .ints("rows", &[3], vec![1, 12, 4])
        .node("Conv", &["input", "c"], "a", vec![onnx_graph::ints_attr("pads", &[1, 1, 1, 1])])
        .node("Div", &["a", "divisor"], "divided", vec![])
        .node("Sub", &["divided", "offsets"], "shifted", vec![])
        .node("Reshape", &["shifted", "rows"], "tokens", vec![])
        .node("MatMul", &["tokens", "w"], "h", vec![])
        .node("Mul", &["h", "layer_scale"], "scaled", vec![])
        .node("Flatten", &["scaled"], "flat", vec![int_attr("axis", 1)])
        .node("Gemm", &["flat", "head"], "output", vec![]);
    let (float, model) = import_and_quantize(&g, "constant_tensors", &xs);
    int8_tracks_float(&float, &model, &xs, 8.0);
    proof_commits_to_the_inference(&model, &xs[4]);
}
