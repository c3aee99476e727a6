//! Third-party architectures as their users export them (fixtures/make_corpus.py): Hugging Face
//! GPT-2 and BERT, timm's ViT, MobileNetV2 and ResNet, PyTorch's causal `MultiheadAttention`
//! and `TransformerEncoderLayer`, BERT as a sentence-pair classifier (two integer inputs) and a
//! two-tower model (two real inputs, two outputs), each from the TorchScript exporter at opsets 13 and 17 and
//! from torch.export at opset 18 (where the exporter itself succeeds; its failures are in the
//! manifest); and a Keras CNN exported by tf2onnx at opsets 13 and 17
//! (fixtures/make_keras_corpus.py: channels-last, so Transposes around a Flatten). Every file: imported; its float graph equal to onnxruntime's outputs; quantized
//! on the calibration samples; int8 within the documented bound of onnxruntime on held-out
//! samples; and one proof per model whose witness is the integer inference, which verifies and
//! commits to it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tgrid_circuits::{commit, infer, SegmentPlan, TaskProver, TaskVerifier};
use tgrid_onnx::{import_onnx, quantize_model, InputData};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/corpus")
}

#[derive(serde::Deserialize)]
struct Manifest {
    models: BTreeMap<String, Entry>,
}

#[derive(serde::Deserialize)]
struct Entry {
    files: BTreeMap<String, serde_json::Value>,
}

#[derive(serde::Deserialize)]
struct Reference {
    inputs: Vec<Vec<f32>>,
    outputs: BTreeMap<String, Vec<Vec<f32>>>,
}

/// The int8 output may differ from onnxruntime's by this fraction of the output's calibrated
/// range (docs/quantization.md, "Third-party models").
const INT8_BOUND: f32 = 0.15;

fn check_model(name: &str) {
    let manifest: Manifest =
        serde_json::from_str(&std::fs::read_to_string(corpus().join("manifest.json")).unwrap()).unwrap();
    let entry = &manifest.models[name];
    let dir = corpus().join(name);
    let reference: Reference =
        serde_json::from_str(&std::fs::read_to_string(dir.join("reference.json")).unwrap()).unwrap();
    let calibration = InputData::from_path(&dir.join("calibration.json")).unwrap();
    assert!(!entry.files.is_empty(), "{name}: no exported file");
    let mut proven = false;
    for file in entry.files.keys() {
        let stem = file.trim_end_matches(".onnx");
        let what = format!("{name}/{file}");
        let (float, _) = import_onnx(&dir.join(file)).unwrap_or_else(|e| panic!("{what}: {e}"));
        let samples = calibration.samples_for_ports(float.input_shape.iter().product(), &float.ports.inputs).unwrap().0;
        let expected = &reference.outputs[stem];
        // The float graph computes what onnxruntime computes.
        for (x, y) in reference.inputs.iter().zip(expected) {
            let ours = float.run(x).pop().unwrap();
            assert_eq!(ours.len(), y.len(), "{what}");
            for (a, b) in ours.iter().zip(y) {
                assert!((a - b).abs() <= 1e-3 * (1.0 + b.abs()), "{what}: float {a} vs onnxruntime {b}");
            }
        }
        let model = quantize_model(&float, &samples).unwrap_or_else(|e| panic!("{what}: {e}"));
        let q = model.tensor_q(model.output_tensor());
        let range = q.scale * 255.0;
        let mut worst = 0f32;
        for (x, y) in reference.inputs.iter().zip(expected) {
            let int8 =
                infer::dequantize(infer::run(&model, &infer::quantize_input(&model, x).unwrap()).unwrap().output(), q);
            worst = y.iter().zip(&int8).map(|(a, b)| (a - b).abs()).fold(worst, f32::max);
        }
        println!("{what}: int8 vs onnxruntime max |error| {worst:.4} over an output range of {range:.3}");
        assert!(worst <= INT8_BOUND * range, "{what}: int8 error {worst} over a range of {range}");
        if !proven {
            let plan = SegmentPlan::auto(&model, 1 << 16);
            let prover = TaskProver::new(model.clone(), plan.clone()).unwrap();
            let x = infer::quantize_input(&model, &reference.inputs[0]).unwrap();
            let trace = infer::run(&model, &x).unwrap();
            assert_eq!(prover.circuit_trace(&x).unwrap(), trace, "{what}");
            let (proof, proven_trace, _) = prover.prove(&x, [3; 32], [4; 20], &mut |_, _, _| {}).unwrap();
            assert_eq!(proven_trace, trace);
            let publics = TaskVerifier::new(&model, &plan).unwrap().verify(&proof).unwrap();
            assert_eq!(publics.output_commitment, commit(trace.output()), "{what}");
            proven = true;
        }
    }
}

#[test]
fn huggingface_gpt2() {
    check_model("gpt2");
}

#[test]
fn huggingface_bert() {
    check_model("bert");
}

#[test]
fn timm_vit() {
    check_model("vit_timm");
}

#[test]
fn keras_cnn_from_tf2onnx() {
    check_model("keras_cnn");
}

#[test]
fn timm_mobilenetv2() {
    check_model("mobilenetv2_timm");
}

#[test]
fn timm_resnet() {
    check_model("resnet_timm");
}

/// Two integer inputs (token ids and token type ids), laid end to end in one input tensor.
#[test]
fn huggingface_bert_sentence_pair() {
    check_model("bert_pair");
    let (float, _) = import_onnx(&corpus().join("bert_pair/opset17.onnx")).unwrap();
    let names: Vec<&str> = float.ports.inputs.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["input_ids", "token_type_ids"]);
    assert!(float.ports.outputs.is_empty());
}

/// Two real inputs and two outputs, each laid end to end; the ports survive the model file.
#[test]
fn torch_two_towers_with_two_inputs_and_two_outputs() {
    check_model("two_towers");
    let dir = corpus().join("two_towers");
    let (float, _) = import_onnx(&dir.join("opset17.onnx")).unwrap();
    let ports =
        |list: &[tgrid_circuits::Port]| list.iter().map(|p| (p.name.clone(), p.shape.clone())).collect::<Vec<_>>();
    assert_eq!(ports(&float.ports.inputs), [("image".into(), vec![1, 8, 8]), ("features".into(), vec![6])]);
    assert_eq!(ports(&float.ports.outputs), [("logits".into(), vec![4]), ("embedding".into(), vec![8])]);
    let calibration = InputData::from_path(&dir.join("calibration.json")).unwrap();
    let (samples, note) = calibration.samples_for_ports(70, &float.ports.inputs).unwrap();
    assert_eq!(samples.len(), 16);
    assert_eq!(note, None);
    let model = quantize_model(&float, &samples).unwrap();
    let bytes = model.to_canonical_bytes();
    assert_eq!(tgrid_circuits::QuantModel::from_canonical_bytes(&bytes).unwrap(), model);
    // A file whose parts do not tile the input is refused.
    let mut broken = model.clone();
    broken.ports.inputs[1].shape = vec![7];
    let err = tgrid_circuits::QuantModel::from_canonical_bytes(&broken.to_canonical_bytes()).unwrap_err();
    assert!(err.to_string().contains("their sizes add up to 71, the input tensor holds 70"), "{err}");
}

#[test]
fn torch_causal_multihead_attention() {
    check_model("causal_mha");
}

#[test]
fn torch_transformer_encoder_layer() {
    check_model("encoder_layer");
}

/// Every model the generator lists is tested above, so a model added to the corpus without a
/// test fails here.
#[test]
fn every_corpus_model_has_a_test() {
    let manifest: Manifest =
        serde_json::from_str(&std::fs::read_to_string(corpus().join("manifest.json")).unwrap()).unwrap();
    let tested = [
        "bert",
        "bert_pair",
        "causal_mha",
        "encoder_layer",
        "gpt2",
        "keras_cnn",
        "mobilenetv2_timm",
        "resnet_timm",
        "two_towers",
        "vit_timm",
    ];
    assert_eq!(manifest.models.keys().map(String::as_str).collect::<Vec<_>>(), tested);
}
