//! The committed digits fixtures: import, int8 accuracy against float, bit-exact agreement
//! between the integer inference and the circuit witness, and import errors.

use std::path::{Path, PathBuf};

use tgrid_circuits::{infer, QuantModel, SegmentPlan, TaskProver};
use tgrid_onnx::{argmax, import_onnx, quantize_model, tract_reference, Error, InputData};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures").join(name)
}

#[derive(serde::Deserialize)]
struct TestSet {
    inputs: Vec<Vec<f32>>,
    labels: Vec<usize>,
    float_predictions: Vec<usize>,
}

fn compile(name: &str) -> QuantModel {
    let (graph, _) = import_onnx(&fixture(name).join("model.onnx")).unwrap();
    let cal = InputData::from_path(&fixture(name).join("calibration.json")).unwrap();
    quantize_model(&graph, &cal.input_data).unwrap()
}

fn test_set(name: &str) -> TestSet {
    serde_json::from_str(&std::fs::read_to_string(fixture(name).join("test_set.json")).unwrap()).unwrap()
}

fn int8_accuracy_within_two_points(name: &str) {
    let model = compile(name);
    let set = test_set(name);
    let n = set.labels.len() as f64;
    let float_acc = set.float_predictions.iter().zip(&set.labels).filter(|(p, l)| p == l).count() as f64 / n;
    let q = model.tensor_q(model.output_tensor());
    let int8_correct = set
        .inputs
        .iter()
        .zip(&set.labels)
        .filter(|(x, &label)| {
            let xq = infer::quantize_input(&model, x).unwrap();
            let y = infer::dequantize(infer::run(&model, &xq).unwrap().output(), q);
            argmax(&y) == label
        })
        .count();
    let int8_acc = int8_correct as f64 / n;
    eprintln!("{name}: float {:.2}% int8 {:.2}% on {n} test digits", 100.0 * float_acc, 100.0 * int8_acc);
    assert!(int8_acc >= float_acc - 0.02, "{name}: int8 {int8_acc} vs float {float_acc}");
}

#[test]
fn mlp_int8_accuracy_is_within_two_points_of_float() {
    int8_accuracy_within_two_points("mlp");
}

#[test]
fn cnn_int8_accuracy_is_within_two_points_of_float() {
    int8_accuracy_within_two_points("cnn");
}

#[test]
fn lenet_int8_accuracy_is_within_two_points_of_float() {
    int8_accuracy_within_two_points("lenet");
}

#[test]
fn gap_residual_int8_accuracy_is_within_two_points_of_float() {
    int8_accuracy_within_two_points("gap");
}

/// Our folded float graph computes what tract computes on the original file.
#[test]
fn folded_float_graph_matches_tract() {
    for name in ["mlp", "cnn", "lenet", "gap"] {
        let path = fixture(name).join("model.onnx");
        let (graph, _) = import_onnx(&path).unwrap();
        let samples: Vec<Vec<f32>> = test_set(name).inputs.into_iter().take(5).collect();
        let reference = tract_reference(&path, &graph.input_shape, &samples).unwrap();
        for (x, r) in samples.iter().zip(&reference) {
            let ours = graph.run(x).pop().unwrap();
            // lenet's file ends in Softmax, which the import drops: compare argmax there.
            if name == "lenet" {
                assert_eq!(argmax(&ours), argmax(r));
            } else {
                let diff = ours.iter().zip(r).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
                assert!(diff < 1e-4, "{name}: float graph differs from tract by {diff}");
            }
        }
    }
}

fn circuit_witness_is_bit_exact(name: &str, plan: impl Fn(&QuantModel) -> SegmentPlan) {
    let model = compile(name);
    let plan = plan(&model);
    let prover = TaskProver::new(model.clone(), plan).unwrap();
    for x in test_set(name).inputs.iter().take(2) {
        let xq = infer::quantize_input(&model, x).unwrap();
        assert_eq!(prover.circuit_trace(&xq).unwrap(), infer::run(&model, &xq).unwrap(), "{name}");
    }
}

#[test]
fn mlp_circuit_witness_is_bit_exact() {
    circuit_witness_is_bit_exact("mlp", |_| SegmentPlan::default());
}

#[test]
fn cnn_circuit_witness_is_bit_exact() {
    circuit_witness_is_bit_exact("cnn", |_| SegmentPlan::default());
}

#[test]
fn lenet_circuit_witness_is_bit_exact_across_segments() {
    // Small segments: also exercises the activation commitments at every cut.
    circuit_witness_is_bit_exact("lenet", |m| SegmentPlan::auto(m, 1 << 13));
}

#[test]
fn gap_residual_circuit_witness_is_bit_exact() {
    circuit_witness_is_bit_exact("gap", |_| SegmentPlan::default());
}

#[test]
fn unsupported_op_names_the_op_and_the_node() {
    let err = import_onnx(&fixture("unsupported").join("model.onnx")).unwrap_err();
    match &err {
        Error::Unsupported { op, node, .. } => {
            assert_eq!(op, "Sigmoid");
            assert_eq!(node, "sigmoid_0");
        }
        other => panic!("expected an unsupported-op error, got {other}"),
    }
    let text = err.to_string();
    assert!(text.contains("Sigmoid") && text.contains("sigmoid_0"), "{text}");
}

#[test]
fn empty_and_random_model_files_are_clear_errors() {
    let dir = std::env::temp_dir().join(format!("tgrid-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.onnx");
    std::fs::write(&empty, b"").unwrap();
    assert!(import_onnx(&empty).is_err());
    let mut state = 0x9e3779b97f4a7c15u64;
    for len in [1usize, 64, 4096] {
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let random = dir.join(format!("random{len}.onnx"));
        std::fs::write(&random, bytes).unwrap();
        assert!(import_onnx(&random).is_err());
    }
    assert!(matches!(import_onnx(&dir.join("missing.onnx")), Err(Error::Read { .. })));
}

#[test]
fn bad_input_data_is_rejected() {
    assert!(InputData::from_json("{}").is_err());
    assert!(InputData::from_json(r#"{"input_data": []}"#).is_err());
    assert!(InputData::from_json(r#"{"input_data": [[1.0, NaN]]}"#).is_err());
    assert!(InputData::from_json(r#"{"input_data": [[1.0, 1e39]]}"#).is_err());
    let model = compile("mlp");
    assert!(infer::quantize_input(&model, &[0.5; 63]).is_err());
    assert!(infer::quantize_input(&model, &[0.5; 65]).is_err());
}
