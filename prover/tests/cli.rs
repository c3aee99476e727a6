//! The provider and auditor CLIs end to end on the committed fixtures: compile, infer,
//! commit-input, prove, verify, and every way a proof or an input can be wrong.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn prover() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tgrid-prover"))
}

/// tgrid-verifier is built beside tgrid-prover by `cargo test --workspace`.
fn verifier() -> Command {
    let path = Path::new(env!("CARGO_BIN_EXE_tgrid-prover")).with_file_name("tgrid-verifier");
    assert!(path.exists(), "build tgrid-verifier first (cargo test --workspace builds it)");
    Command::new(path)
}

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures").join(path)
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("the binary runs")
}

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object on stdout")
}

const TASK: &str = "0x1111111111111111111111111111111111111111111111111111111111111111";
const PROVIDER: &str = "0x2222222222222222222222222222222222222222";

/// `tgrid-prover [--json] prove OPTIONS MODEL --input IN --task-id TASK --provider PROVIDER --out OUT`.
fn prove(json: bool, options: &[&str], tgm: &Path, input: &Path, out: &Path) -> Command {
    let mut cmd = prover();
    if json {
        cmd.arg("--json");
    }
    cmd.arg("prove").args(options).arg(tgm).arg("--input").arg(input);
    cmd.args(["--task-id", TASK, "--provider", PROVIDER, "--out"]).arg(out);
    cmd
}

fn compile(dir: &Path, name: &str) -> PathBuf {
    let tgm = dir.join(format!("{name}.tgm"));
    let out = run(prover()
        .args(["--json", "compile"])
        .arg(fixture(&format!("{name}/model.onnx")))
        .arg("--calibration")
        .arg(fixture(&format!("{name}/calibration.json")))
        .arg("--out")
        .arg(&tgm));
    let v = json(&out);
    assert!(v["model_id"].as_str().unwrap().starts_with("0x"));
    assert!(v["calibration"]["argmax_agreement"].as_f64().unwrap() >= 0.9, "{v}");
    tgm
}

#[test]
fn compile_prove_verify_and_reject_every_wrong_proof() {
    let dir = tempfile::tempdir().unwrap();
    let tgm = compile(dir.path(), "mlp");
    let input = fixture("mlp/input.json");

    let infer = json(&run(prover().args(["--json", "infer"]).arg(&tgm).arg("--input").arg(&input)));
    assert_eq!(infer["argmax"], 7, "the sample is a 7");
    let commitment = json(&run(prover().args(["--json", "commit-input"]).arg(&tgm).arg("--input").arg(&input)));
    let input_commitment = commitment["input_commitment"].as_str().unwrap().to_string();
    assert_eq!(input_commitment.len(), 66);

    let tgp = dir.path().join("task.tgp");
    let out_json = dir.path().join("out.json");
    let proved = json(&run(prove(true, &[], &tgm, &input, &tgp).arg("--output").arg(&out_json)));
    assert_eq!(proved["input_commitment"], input_commitment.as_str());
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    assert_eq!(written["output_commitment"], proved["output_commitment"]);

    let verified = json(&run(verifier().args(["--json", "task"]).arg(&tgp).arg("--model").arg(&tgm)));
    assert_eq!(verified["valid"], true);
    assert_eq!(verified["task_id"], TASK);
    assert_eq!(verified["provider"], PROVIDER);
    assert_eq!(verified["input_commitment"], input_commitment.as_str());
    assert_eq!(verified["output_commitment"], proved["output_commitment"]);

    let bytes = std::fs::read(&tgp).unwrap();
    let check = |name: &str, data: &[u8], code: i32| {
        let p = dir.path().join(name);
        std::fs::write(&p, data).unwrap();
        let out = run(verifier().arg("task").arg(&p).arg("--model").arg(&tgm));
        assert_eq!(out.status.code(), Some(code), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(!out.stderr.is_empty(), "{name}: a reason is printed");
    };
    let mut tampered = bytes.clone();
    let mid = tampered.len() / 2;
    tampered[mid] ^= 0x01;
    check("tampered.tgp", &tampered, 1);
    let mut other_task = bytes.clone();
    let last = other_task.len() - 8 * 29; // first public input word: the task id
    other_task[last] ^= 0x01;
    check("other-task.tgp", &other_task, 1);
    let mut other_provider = bytes.clone();
    other_provider[last + 8 * 8] ^= 0x01;
    check("other-provider.tgp", &other_provider, 1);
    check("truncated.tgp", &bytes[..bytes.len() / 3], 2);
    check("empty.tgp", b"", 2);
    check("random.tgp", &[0x5a; 1000], 2);

    // The same proof against another model.
    let cnn = compile(dir.path(), "cnn");
    let out = run(verifier().arg("task").arg(&tgp).arg("--model").arg(&cnn));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("model"));
}

#[test]
fn a_private_task_is_committed_proven_and_audited_with_salts() {
    let dir = tempfile::tempdir().unwrap();
    let tgm = compile(dir.path(), "mlp");
    let input = fixture("mlp/input.json");
    let public = json(&run(prover().args(["--json", "commit-input"]).arg(&tgm).arg("--input").arg(&input)));
    let committed =
        json(&run(prover().args(["--json", "commit-input", "--private"]).arg(&tgm).arg("--input").arg(&input)));
    assert_eq!(committed["privacy"], "private");
    assert_ne!(committed["input_commitment"], public["input_commitment"], "salted");
    let salt = committed["salt"].as_str().unwrap();
    // The same salt gives the same commitment; a non-canonical one is refused.
    let again =
        json(&run(prover().args(["--json", "commit-input", "--salt", salt]).arg(&tgm).arg("--input").arg(&input)));
    assert_eq!(again["input_commitment"], committed["input_commitment"]);
    let out = run(prover()
        .args(["commit-input", "--salt", &format!("0x{}", "ff".repeat(32))])
        .arg(&tgm)
        .arg("--input")
        .arg(&input));
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));

    let tgp = dir.path().join("private.tgp");
    let out_json = dir.path().join("out.json");
    let private = ["--private", "--input-salt", salt];
    let proved = json(&run(prove(true, &private, &tgm, &input, &tgp).arg("--output").arg(&out_json)));
    assert_eq!(proved["privacy"], "private");
    assert_eq!(proved["model_id"], committed["model_id"], "the private task's model id");
    assert_eq!(proved["input_commitment"], committed["input_commitment"]);
    // The output file carries the encrypted output the proof commits to, which decrypts to the
    // output under the key of the input salt.
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    assert_eq!(written["output_commitment"], proved["output_commitment"]);
    assert_eq!(written["encrypted_output"], proved["encrypted_output"]);
    let encrypted = hex::decode(proved["encrypted_output"].as_str().unwrap().trim_start_matches("0x")).unwrap();
    let encrypted = tgrid_circuits::EncryptedTensor::from_bytes(&encrypted, tgrid_circuits::MAX_TENSOR_LEN).unwrap();
    assert_eq!(encrypted.commitment().to_hex(), proved["output_commitment"].as_str().unwrap());
    let key = tgrid_circuits::OutputKey::from_input_salt(&tgrid_circuits::Salt::from_hex(salt).unwrap());
    let output: Vec<i8> = serde_json::from_value(written["output_int8"].clone()).unwrap();
    assert_eq!(encrypted.decrypt(&key).unwrap(), output);

    let verified = json(&run(verifier().args(["--json", "task"]).arg(&tgp).arg("--model").arg(&tgm)));
    assert_eq!(verified["privacy"], "private");
    assert_eq!(verified["input_commitment"], committed["input_commitment"]);
    assert_eq!(verified["output_commitment"], proved["output_commitment"]);
    assert!(verified["not_visible"].as_str().unwrap().contains("input"), "the auditor is told what it cannot see");
    let mut tampered = std::fs::read(&tgp).unwrap();
    let mid = tampered.len() / 2;
    tampered[mid] ^= 1;
    std::fs::write(&tgp, tampered).unwrap();
    let out = run(verifier().arg("task").arg(&tgp).arg("--model").arg(&tgm));
    assert_eq!(out.status.code(), Some(1));

    // Salts without --private are a usage error.
    let out = run(&mut prove(false, &["--input-salt", salt], &tgm, &input, &dir.path().join("x.tgp")));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn bad_inputs_exit_with_code_two_and_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let expect2 = |out: Output, needle: &str| {
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(needle), "expected '{needle}' in: {err}");
    };
    // Unsupported op: the op and the node are named.
    expect2(
        run(prover()
            .arg("compile")
            .arg(fixture("unsupported/model.onnx"))
            .arg("--calibration")
            .arg(fixture("unsupported/calibration.json"))
            .arg("--out")
            .arg(dir.path().join("x.tgm"))),
        "'Hardmax' at node 'hardmax_0'",
    );
    let tgm = compile(dir.path(), "mlp");
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let short = write("short.json", r#"{"input_data": [[0.1, 0.2, 0.3]]}"#);
    expect2(
        run(prover().arg("infer").arg(&tgm).arg("--input").arg(&short)),
        "sample 0 has 3 values, the model takes 64",
    );
    let nan = write("nan.json", &format!(r#"{{"input_data": [[{}NaN]]}}"#, "0.5, ".repeat(63)));
    expect2(run(prover().arg("commit-input").arg(&tgm).arg("--input").arg(&nan)), "input");
    let input = fixture("mlp/input.json");
    expect2(
        run(prover()
            .arg("prove")
            .arg(&tgm)
            .arg("--input")
            .arg(&input)
            .args(["--task-id", "0x12", "--provider", PROVIDER, "--out"])
            .arg(dir.path().join("p.tgp"))),
        "--task-id",
    );
    let garbage = write("garbage.tgm", "not a model");
    expect2(run(prover().arg("infer").arg(&garbage).arg("--input").arg(&input)), "not a usable compiled model");
    expect2(run(verifier().arg("task").arg(&garbage).arg("--model").arg(&garbage)), "not a usable compiled model");
}

/// Calibration as users have it: EZKL's calibration files often hold many inputs back to back
/// in one sample, and exporters write samples nested as their tensor's shape, in integers.
#[test]
fn calibration_back_to_back_or_nested_compiles_to_the_same_model() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("mlp/calibration.json")).unwrap();
    let samples: Vec<Vec<f32>> = serde_json::from_str::<serde_json::Value>(&text).unwrap()["input_data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect())
        .collect();
    let compile_with = |name: &str, data: serde_json::Value| {
        let path = dir.path().join(format!("{name}.json"));
        std::fs::write(&path, serde_json::json!({ "input_data": data }).to_string()).unwrap();
        json(&run(prover()
            .args(["--json", "compile"])
            .arg(fixture("mlp/model.onnx"))
            .arg("--calibration")
            .arg(&path)
            .arg("--out")
            .arg(dir.path().join(format!("{name}.tgm")))))
    };
    let as_listed = compile_with("listed", serde_json::json!(samples));
    let joined: Vec<f32> = samples.concat();
    let back_to_back = compile_with("joined", serde_json::json!([joined]));
    assert_eq!(back_to_back["model_id"], as_listed["model_id"], "{back_to_back}");
    assert_eq!(back_to_back["calibration"]["samples"], as_listed["calibration"]["samples"]);
    let warnings = back_to_back["warnings"].to_string();
    assert!(warnings.contains("back to back"), "{warnings}");
    // The same samples nested 8 × 8 (the mlp reads 64 values).
    let nested: Vec<Vec<Vec<f32>>> = samples.iter().map(|s| s.chunks(8).map(<[f32]>::to_vec).collect()).collect();
    assert_eq!(compile_with("nested", serde_json::json!(nested))["model_id"], as_listed["model_id"]);
}

/// A model with two inputs and two outputs (fixtures/corpus/two_towers, exported by PyTorch):
/// compiled from EZKL's one-array-per-input calibration, proven from an input in either form
/// (one commitment over the inputs laid end to end), and its outputs printed by name.
#[test]
fn two_inputs_and_two_outputs_compile_prove_and_name_their_parts() {
    let dir = tempfile::tempdir().unwrap();
    let tgm = dir.path().join("two_towers.tgm");
    let compiled = json(&run(prover()
        .args(["--json", "compile"])
        .arg(fixture("corpus/two_towers/opset17.onnx"))
        .arg("--calibration")
        .arg(fixture("corpus/two_towers/calibration.json"))
        .arg("--out")
        .arg(&tgm)));
    assert_eq!(compiled["inputs"][1]["name"], "features", "{compiled}");
    assert_eq!(compiled["outputs"][0]["name"], "logits", "{compiled}");
    assert_eq!(compiled["outputs"][1]["shape"], serde_json::json!([8]));

    let reference: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("corpus/two_towers/reference.json")).unwrap()).unwrap();
    let laid: Vec<f64> = reference["inputs"][0].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    let write = |name: &str, data: serde_json::Value| {
        let path = dir.path().join(name);
        std::fs::write(&path, serde_json::json!({ "input_data": data }).to_string()).unwrap();
        path
    };
    let per_input = write("per-input.json", serde_json::json!([laid[..64], laid[64..]]));
    let end_to_end = write("end-to-end.json", serde_json::json!([laid]));
    let commit = |input: &Path| {
        json(&run(prover().args(["--json", "commit-input"]).arg(&tgm).arg("--input").arg(input)))["input_commitment"]
            .clone()
    };
    assert_eq!(commit(&per_input), commit(&end_to_end));

    let tgp = dir.path().join("task.tgp");
    let out_json = dir.path().join("out.json");
    let proved = json(&run(prove(true, &[], &tgm, &per_input, &tgp).arg("--output").arg(&out_json)));
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    let flat = written["output"].as_array().unwrap();
    assert_eq!(flat.len(), 12);
    assert_eq!(written["outputs"][0]["name"], "logits");
    assert_eq!(written["outputs"][0]["output"].as_array().unwrap()[..], flat[..4]);
    assert_eq!(written["outputs"][1]["output"].as_array().unwrap()[..], flat[4..]);
    let verified = json(&run(verifier().args(["--json", "task"]).arg(&tgp).arg("--model").arg(&tgm)));
    assert_eq!(verified["input_commitment"], commit(&per_input));
    assert_eq!(verified["output_commitment"], proved["output_commitment"]);

    // An input whose parts do not fit is refused, with the lengths.
    let short = write("short.json", serde_json::json!([laid[..64], laid[64..69]]));
    let out = run(&mut prove(false, &[], &tgm, &short, &tgp));
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the model takes 70"), "{stderr}");
}
