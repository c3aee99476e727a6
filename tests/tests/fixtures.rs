//! The committed digits fixtures: import, int8 accuracy against float, bit-exact agreement
//! between the integer inference and the circuit witness, and import errors.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use tgrid_circuits::{infer, QuantModel, SegmentPlan, TaskProver};
use tgrid_onnx::{
    argmax, import_onnx, quantize_model, quantize_model_with, tract_reference, Error, InputData, QuantizeOptions,
};

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
    compile_file(name, "model.onnx")
}

fn compile_file(name: &str, file: &str) -> QuantModel {
    let (graph, _) = import_onnx(&fixture(name).join(file)).unwrap();
    let cal = InputData::from_path(&fixture(name).join("calibration.json")).unwrap();
    quantize_model(&graph, &cal.input_data).unwrap()
}

/// The held-out inputs of any fixture's test set.
fn test_set_inputs(name: &str) -> Vec<Vec<f32>> {
    #[derive(serde::Deserialize)]
    struct Inputs {
        inputs: Vec<Vec<f32>>,
    }
    let text = std::fs::read_to_string(fixture(name).join("test_set.json")).unwrap();
    serde_json::from_str::<Inputs>(&text).unwrap().inputs
}

fn test_set(name: &str) -> TestSet {
    serde_json::from_str(&std::fs::read_to_string(fixture(name).join("test_set.json")).unwrap()).unwrap()
}

fn int8_accuracy_within_two_points(name: &str) {
    int8_accuracy_of_model_within_two_points(name, &compile(name));
}

fn int8_accuracy_of_model_within_two_points(name: &str, model: &QuantModel) {
    let set = test_set(name);
    let n = set.labels.len() as f64;
    let float_acc = set.float_predictions.iter().zip(&set.labels).filter(|(p, l)| p == l).count() as f64 / n;
    let q = model.tensor_q(model.output_tensor());
    let int8_correct = set
        .inputs
        .iter()
        .zip(&set.labels)
        .filter(|(x, &label)| {
            let xq = infer::quantize_input(model, x).unwrap();
            let y = infer::dequantize(infer::run(model, &xq).unwrap().output(), q);
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

/// The PyTorch fixture as both of PyTorch's exporters write it: TorchScript (opset 17, one
/// file, shape arithmetic on `Shape`/`Constant` nodes) and torch.export (opset 18, weights in an
/// external data file).
const EXPORT_FORMS: [&str; 2] = ["model.onnx", "model_dynamo.onnx"];

#[test]
fn mixer_exports_compile_to_the_same_int8_computation_within_two_points_of_float() {
    let [torchscript, dynamo] = EXPORT_FORMS.map(|file| compile_file("mixer", file));
    let kinds = |m: &QuantModel| m.nodes.iter().map(|n| n.op.kind()).collect::<Vec<_>>();
    assert_eq!(kinds(&torchscript), kinds(&dynamo));
    for op in ["Gather", "Table", "AddConst", "Dense"] {
        assert!(kinds(&torchscript).contains(&op), "the mixer exercises {op}: {:?}", kinds(&torchscript));
    }
    int8_accuracy_of_model_within_two_points("mixer", &torchscript);
    for x in &test_set("mixer").inputs {
        let run = |m: &QuantModel| infer::run(m, &infer::quantize_input(m, x).unwrap()).unwrap().output().to_vec();
        assert_eq!(run(&torchscript), run(&dynamo), "the two exports compute different int8 outputs");
    }
}

#[test]
fn vit_exports_compile_to_the_same_int8_computation_within_two_points_of_float() {
    let [torchscript, dynamo] = EXPORT_FORMS.map(|file| compile_file("vit", file));
    let kinds = |m: &QuantModel| m.nodes.iter().map(|n| n.op.kind()).collect::<Vec<_>>();
    assert_eq!(kinds(&torchscript), kinds(&dynamo));
    for op in ["LayerNorm", "MatMul", "Softmax", "Table", "Gather", "AddConst"] {
        assert!(kinds(&torchscript).contains(&op), "the vit exercises {op}: {:?}", kinds(&torchscript));
    }
    int8_accuracy_of_model_within_two_points("vit", &torchscript);
    for x in test_set("vit").inputs.iter().take(60) {
        let run = |m: &QuantModel| infer::run(m, &infer::quantize_input(m, x).unwrap()).unwrap().output().to_vec();
        assert_eq!(run(&torchscript), run(&dynamo), "the two exports compute different int8 outputs");
    }
}

#[test]
fn vit_circuit_witness_is_bit_exact_and_its_proof_verifies() {
    proof_verifies_and_commits_to_the_inference("vit");
}

#[test]
fn mixer_circuit_witness_is_bit_exact_and_its_proof_verifies() {
    proof_verifies_and_commits_to_the_inference("mixer");
}

#[derive(serde::Deserialize)]
struct TextTestSet {
    inputs: Vec<Vec<f32>>,
    labels: Vec<usize>,
    float_outputs: Vec<Vec<f32>>,
    float_perplexity: f64,
}

/// Perplexity of next-token logits against the labels.
fn perplexity(logits: &[Vec<f32>], labels: &[usize]) -> f64 {
    let nll: f64 = logits
        .iter()
        .zip(labels)
        .map(|(z, &label)| {
            let m = z.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let log_sum = z.iter().map(|&v| f64::from(v - m).exp()).sum::<f64>().ln();
            log_sum - f64::from(z[label] - m)
        })
        .sum();
    (nll / labels.len() as f64).exp()
}

/// The character GPT (PyTorch, both export forms): its int8 perplexity on held-out windows is
/// within 5 % of the float model's, and its next-character prediction agrees with float's.
#[test]
fn gpt_int8_predictions_agree_with_float_and_keep_the_perplexity() {
    let torchscript = compile_file("gpt", EXPORT_FORMS[0]);
    let dynamo = compile_file("gpt", EXPORT_FORMS[1]);
    let kinds = |m: &QuantModel| m.nodes.iter().map(|n| n.op.kind()).collect::<Vec<_>>();
    assert_eq!(kinds(&torchscript), kinds(&dynamo));
    for op in ["Embedding", "LayerNorm", "MatMul", "Softmax", "Table", "AddConst"] {
        assert!(kinds(&torchscript).contains(&op), "the gpt exercises {op}: {:?}", kinds(&torchscript));
    }
    // Row pruning: the output is the last position's logits, so the head and the last block's
    // softmax compute one row (of 32), while the first block computes every position.
    let shapes = |kind: &str| -> Vec<Vec<usize>> {
        torchscript.nodes.iter().filter(|n| n.op.kind() == kind).map(|n| n.shape.clone()).collect()
    };
    let dense = shapes("Dense");
    assert_eq!(dense.last().unwrap(), &vec![1, 39], "the head: {dense:?}");
    let softmax = shapes("Softmax");
    assert_eq!((softmax.first().unwrap()[1], softmax.last().unwrap()[1]), (32, 1), "{softmax:?}");
    let set: TextTestSet =
        serde_json::from_str(&std::fs::read_to_string(fixture("gpt").join("test_set.json")).unwrap()).unwrap();
    let (agree, int8) = agreement(&torchscript, &set);
    let (float_ppl, int8_ppl) = (perplexity(&set.float_outputs, &set.labels), perplexity(&int8, &set.labels));
    eprintln!("gpt: argmax agreement {:.2}%, perplexity float {float_ppl:.3} int8 {int8_ppl:.3}", 100.0 * agree);
    assert!((float_ppl - set.float_perplexity).abs() < 1e-3, "the test set's float perplexity");
    // Every tensor at 8 bits: 94.6 % on these 4,000 held-out windows (standard error ~0.35
    // points). The 400-window set read 96.75 %, and compiles 1 % apart read 92.75–96.75 %:
    // that was the small sample's noise (docs/quantization.md).
    assert!(agree >= 0.935, "int8 agrees with float on {agree} of the windows");
    assert!(int8_ppl <= float_ppl * 1.05, "int8 perplexity {int8_ppl} vs float {float_ppl}");
    // Issue 26 asks for 95 %: the attention scores at 16 bits (`ScoresSoftmax`) lift it there.
    let (graph, _) = import_onnx(&fixture("gpt").join(EXPORT_FORMS[0])).unwrap();
    let cal = InputData::from_path(&fixture("gpt").join("calibration.json")).unwrap();
    let options = QuantizeOptions { wide_attention_scores: true };
    let wide = quantize_model_with(&graph, &cal.input_data, options).unwrap();
    assert_eq!(kinds(&wide).iter().filter(|&&k| k == "ScoresSoftmax").count(), 2, "{:?}", kinds(&wide));
    assert!(!kinds(&wide).contains(&"Softmax") && wide.nodes.len() == torchscript.nodes.len() - 2);
    let (wide_agree, wide_int8) = agreement(&wide, &set);
    let wide_ppl = perplexity(&wide_int8, &set.labels);
    eprintln!("gpt, 16-bit attention scores: argmax agreement {:.2}%, perplexity {wide_ppl:.3}", 100.0 * wide_agree);
    assert!(wide_agree >= 0.95, "with 16-bit scores int8 agrees with float on {wide_agree} of the windows");
    assert!(wide_ppl <= float_ppl * 1.05, "int8 perplexity {wide_ppl} vs float {float_ppl}");
    for x in set.inputs.iter().take(20) {
        let run = |m: &QuantModel| infer::run(m, &infer::quantize_input(m, x).unwrap()).unwrap().output().to_vec();
        assert_eq!(run(&torchscript), run(&dynamo), "the two exports compute different int8 outputs");
    }
}

/// The fraction of the test windows whose int8 next character is float's, and the int8 logits.
fn agreement(model: &QuantModel, set: &TextTestSet) -> (f64, Vec<Vec<f32>>) {
    let q = model.tensor_q(model.output_tensor());
    let int8: Vec<Vec<f32>> = set
        .inputs
        .par_iter()
        .map(|x| infer::dequantize(infer::run(model, &infer::quantize_input(model, x).unwrap()).unwrap().output(), q))
        .collect();
    let agree = int8.iter().zip(&set.float_outputs).filter(|(a, f)| argmax(a) == argmax(f)).count();
    (agree as f64 / set.inputs.len() as f64, int8)
}

/// The three-way check: the integer inference, the circuit witness and the verifier agree.
fn proof_verifies_and_commits_to_the_inference(name: &str) {
    let model = compile(name);
    let plan = SegmentPlan::auto(&model, 1 << 16);
    let prover = TaskProver::new(model.clone(), plan.clone()).unwrap();
    let x = infer::quantize_input(&model, &test_set_inputs(name)[3]).unwrap();
    assert_eq!(prover.circuit_trace(&x).unwrap(), infer::run(&model, &x).unwrap(), "{name}");
    let (proof, trace, _) = prover.prove(&x, [7; 32], [9; 20], &mut |_, _, _| {}).unwrap();
    assert_eq!(trace, infer::run(&model, &x).unwrap());
    let publics = tgrid_circuits::TaskVerifier::new(&model, &plan).unwrap().verify(&proof).unwrap();
    assert_eq!(publics.output_commitment, tgrid_circuits::commit(trace.output()));
}

/// Our folded float graph computes what tract computes on the original file.
#[test]
fn folded_float_graph_matches_tract() {
    let files = ["mlp", "cnn", "lenet", "gap"].map(|name| (name, "model.onnx"));
    let torch = ["mixer", "vit", "gpt"].into_iter().flat_map(|name| EXPORT_FORMS.map(|file| (name, file)));
    for (name, file) in files.into_iter().chain(torch) {
        let path = fixture(name).join(file);
        let (graph, _) = import_onnx(&path).unwrap();
        let samples: Vec<Vec<f32>> = test_set_inputs(name).into_iter().take(5).collect();
        let reference = tract_reference(&path, &graph, &samples).unwrap();
        for (x, r) in samples.iter().zip(&reference) {
            let ours = graph.run(x).pop().unwrap();
            // lenet's file ends in Softmax, which the import drops: compare argmax there.
            if name == "lenet" {
                assert_eq!(argmax(&ours), argmax(r));
            } else {
                let diff = ours.iter().zip(r).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
                assert!(diff < 1e-4, "{name} ({file}): float graph differs from tract by {diff}");
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
    circuit_witness_is_bit_exact("lenet", |m| {
        let plan = SegmentPlan::auto(m, 1 << 11);
        assert!(plan.cuts.len() >= 2, "lenet in small segments: {plan:?}");
        plan
    });
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
            assert_eq!(op, "Hardmax");
            assert_eq!(node, "hardmax_0");
        }
        other => panic!("expected an unsupported-op error, got {other}"),
    }
    let text = err.to_string();
    assert!(text.contains("Hardmax") && text.contains("hardmax_0"), "{text}");
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

/// The torch.export file names its weights' file; a hostile one names a file elsewhere, a
/// range past the end, or a file that is missing: each is a clear error, and nothing outside
/// the model's directory is read.
#[test]
fn external_data_must_stay_in_the_model_directory_and_in_range() {
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read(fixture("mixer").join("model_dynamo.onnx")).unwrap();
    let data = std::fs::read(fixture("mixer").join("model_dynamo.onnx.data")).unwrap();
    let location = b"model_dynamo.onnx.data";
    // Same length, so the protobuf stays well formed; every external tensor names the file.
    let with_location = |name: &[u8; 22]| -> Vec<u8> {
        let (mut bytes, mut from, mut replaced) = (original.clone(), 0, 0);
        while let Some(k) = bytes[from..].windows(22).position(|w| w == location) {
            bytes[from + k..from + k + 22].copy_from_slice(name);
            from += k + 22;
            replaced += 1;
        }
        assert!(replaced > 0, "the file names its data file");
        bytes
    };
    let import = |onnx: Vec<u8>, data: Option<&[u8]>| {
        std::fs::write(dir.path().join("model_dynamo.onnx"), onnx).unwrap();
        let data_path = dir.path().join("model_dynamo.onnx.data");
        match data {
            Some(d) => std::fs::write(&data_path, d).unwrap(),
            None => {
                let _ = std::fs::remove_file(&data_path);
            }
        }
        import_onnx(&dir.path().join("model_dynamo.onnx")).map(|_| ()).unwrap_err().to_string()
    };
    let escape = import(with_location(b"../../../../etc/passwd"), Some(&data));
    assert!(escape.contains("outside the model's directory"), "{escape}");
    let absolute = import(with_location(b"/////////////etc/hosts"), Some(&data));
    assert!(absolute.contains("outside the model's directory"), "{absolute}");
    let short = import(original.clone(), Some(&data[..data.len() - 7]));
    assert!(short.contains("reads bytes"), "{short}");
    let missing = import(original.clone(), None);
    assert!(missing.contains("model_dynamo.onnx.data"), "{missing}");
    // And the untouched pair imports.
    std::fs::write(dir.path().join("model_dynamo.onnx.data"), &data).unwrap();
    import_onnx(&dir.path().join("model_dynamo.onnx")).unwrap();
}

/// Hostile or damaged exports: every single-byte change of the PyTorch files imports (and, when
/// it imports, quantizes) to a model or a clear error, never a panic.
#[test]
fn damaged_torch_exports_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = tgrid_circuits::testing::SplitMix64(0xbad);
    for (name, file) in
        [("mixer", "model.onnx"), ("vit", "model.onnx"), ("gpt", "model.onnx"), ("vit", "model_dynamo.onnx")]
    {
        let original = std::fs::read(fixture(name).join(file)).unwrap();
        let cal = InputData::from_path(&fixture(name).join("calibration.json")).unwrap();
        let samples = &cal.input_data[..2];
        if file == "model_dynamo.onnx" {
            std::fs::copy(fixture(name).join("model_dynamo.onnx.data"), dir.path().join("model_dynamo.onnx.data"))
                .unwrap();
        }
        let (mut imported, mut quantized) = (0, 0);
        for _ in 0..150 {
            let mut bytes = original.clone();
            let at = (rng.next_u64() % bytes.len() as u64) as usize;
            bytes[at] = rng.next_u64() as u8;
            let path = dir.path().join(file);
            std::fs::write(&path, &bytes).unwrap();
            let outcome = std::panic::catch_unwind(|| {
                let Ok((graph, _)) = import_onnx(&path) else { return (false, false) };
                (true, quantize_model(&graph, samples).is_ok())
            });
            let (i, q) = outcome.unwrap_or_else(|_| panic!("{name}/{file} with byte {at} changed: a panic"));
            imported += usize::from(i);
            quantized += usize::from(q);
        }
        eprintln!("{name}/{file}: 150 damaged copies, {imported} imported, {quantized} quantized");
    }
}

/// The character GPT as the TorchScript exporter writes it below opset 17: every
/// `LayerNormalization` written out (`ReduceMean → Sub → Pow 2 → ReduceMean → Add ε → Sqrt →
/// Div → Mul γ → Add β`) at opset 13, with its `Where` masks as they are. It compiles to the
/// opset-17 export's int8 model, node for node, so its agreement with float is the same
/// figure (issue 62 asks for within 1 point).
#[test]
fn the_gpt_written_out_at_opset_13_compiles_to_the_opset_17_model() {
    use prost::Message;
    use tract_onnx::pb;

    let bytes = std::fs::read(fixture("gpt").join(EXPORT_FORMS[0])).unwrap();
    let mut model = pb::ModelProto::decode(bytes.as_slice()).unwrap();
    let graph = model.graph.as_mut().unwrap();
    let scalar = |name: &str, value: f32| pb::TensorProto {
        name: name.into(),
        data_type: 1,
        float_data: vec![value],
        ..Default::default()
    };
    let node = |op: &str, name: String, inputs: &[&str], output: &str, axes: bool| pb::NodeProto {
        op_type: op.into(),
        name,
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![output.into()],
        attribute: if axes {
            vec![pb::AttributeProto { name: "axes".into(), r#type: 7, ints: vec![-1], ..Default::default() }]
        } else {
            vec![]
        },
        ..Default::default()
    };
    graph.initializer.push(scalar("ln_two", 2.0));
    let mut nodes = Vec::new();
    let mut written_out = 0;
    for n in std::mem::take(&mut graph.node) {
        if n.op_type != "LayerNormalization" {
            nodes.push(n);
            continue;
        }
        let eps = n.attribute.iter().find(|a| a.name == "epsilon").map_or(1e-5, |a| a.f);
        assert!(n.attribute.iter().all(|a| a.name != "axis" || a.i == -1), "{n:?}");
        let (x, gamma, beta, y) = (&n.input[0], &n.input[1], &n.input[2], &n.output[0]);
        let t = |s: &str| format!("{}_{s}", n.name);
        let eps_name = t("eps");
        graph.initializer.push(scalar(&eps_name, eps));
        nodes.extend([
            node("ReduceMean", t("mean"), &[x], &t("mean"), true),
            node("Sub", t("centered"), &[x, &t("mean")], &t("centered"), false),
            node("Pow", t("squared"), &[&t("centered"), "ln_two"], &t("squared"), false),
            node("ReduceMean", t("variance"), &[&t("squared")], &t("variance"), true),
            node("Add", t("shifted"), &[&t("variance"), &eps_name], &t("shifted"), false),
            node("Sqrt", t("deviation"), &[&t("shifted")], &t("deviation"), false),
            node("Div", t("normed"), &[&t("centered"), &t("deviation")], &t("normed"), false),
            node("Mul", t("scaled"), &[&t("normed"), gamma], &t("scaled"), false),
            node("Add", t("shifted_out"), &[&t("scaled"), beta], y, false),
        ]);
        written_out += 1;
    }
    assert_eq!(written_out, 5, "two blocks of two norms, and the final one");
    graph.node = nodes;
    model.opset_import = vec![pb::OperatorSetIdProto { domain: String::new(), version: 13 }];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gpt_opset13.onnx");
    std::fs::write(&path, model.encode_to_vec()).unwrap();

    let (graph13, _) = import_onnx(&path).unwrap();
    let cal = InputData::from_path(&fixture("gpt").join("calibration.json")).unwrap();
    let samples = test_set_inputs("gpt");
    let reference = tract_reference(&path, &graph13, &samples[..4]).unwrap();
    for (x, r) in samples.iter().zip(&reference) {
        let ours = graph13.run(x).pop().unwrap();
        assert!(ours.iter().zip(r).all(|(a, b)| (a - b).abs() < 1e-3), "{ours:?} vs tract {r:?}");
    }
    let nameless = |m: &QuantModel| {
        let mut m = m.clone();
        m.name.clear();
        m.nodes.iter_mut().for_each(|n| n.name.clear());
        m
    };
    let written = quantize_model(&graph13, &cal.input_data).unwrap();
    assert_eq!(nameless(&written), nameless(&compile_file("gpt", EXPORT_FORMS[0])));
}
