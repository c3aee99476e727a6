//! The registry, aggregation and batch verification CLIs end to end on compiled fixtures:
//! `tgrid-prover compile/prove` → `tgrid-sequencer registry add` → `tgrid-sequencer aggregate`
//! → `tgrid-verifier batch`, and the errors each one gives for wrong input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn sibling(name: &str) -> Command {
    let path = Path::new(env!("CARGO_BIN_EXE_tgrid-sequencer")).with_file_name(name);
    assert!(path.exists(), "build {name} first (cargo test --workspace builds it)");
    Command::new(path)
}

fn sequencer() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tgrid-sequencer"))
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

fn compile(dir: &Path, name: &str) -> (PathBuf, serde_json::Value) {
    let tgm = dir.join(format!("{name}.tgm"));
    let v = json(&run(sibling("tgrid-prover")
        .args(["--json", "compile"])
        .arg(fixture(&format!("{name}/model.onnx")))
        .arg("--calibration")
        .arg(fixture(&format!("{name}/calibration.json")))
        .arg("--out")
        .arg(&tgm)));
    (tgm, v)
}

fn prove(dir: &Path, tgm: &Path, name: &str, task_byte: u8) -> PathBuf {
    let tgp = dir.join(format!("{name}-{task_byte}.tgp"));
    json(&run(sibling("tgrid-prover")
        .args(["--json", "prove"])
        .arg(tgm)
        .arg("--input")
        .arg(fixture(&format!("{name}/input.json")))
        .args(["--task-id", &format!("0x{}", hex::encode([task_byte; 32]))])
        .args(["--provider", "0x2222222222222222222222222222222222222222"])
        .arg("--out")
        .arg(&tgp)));
    tgp
}

#[test]
fn register_aggregate_and_verify_a_batch_of_two_models() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (mlp, mlp_info) = compile(d, "mlp");
    let (cnn, _) = compile(d, "cnn");
    let proofs = [prove(d, &mlp, "mlp", 1), prove(d, &cnn, "cnn", 2), prove(d, &mlp, "mlp", 3)];

    let registry = d.join("registry.json");
    let only_mlp = d.join("only-mlp.json");
    let added = json(&run(sequencer().args(["--json", "registry", "add"]).arg(&mlp).arg("--registry").arg(&only_mlp)));
    assert_eq!(added["added"]["normalized_digest"], mlp_info["normalized_digest"]);
    json(&run(sequencer().args(["--json", "registry", "add"]).arg(&mlp).arg("--registry").arg(&registry)));
    let added = json(&run(sequencer().args(["--json", "registry", "add"]).arg(&cnn).arg("--registry").arg(&registry)));
    assert_eq!(added["models"], 2);
    let shown = json(&run(sequencer().args(["--json", "registry", "show", "--registry"]).arg(&registry)));
    assert_eq!(shown["root"], added["root"]);

    // A proof of a model missing from the registry is refused before any proving.
    let out = run(sequencer()
        .args(["aggregate"])
        .args(&proofs)
        .arg("--registry")
        .arg(&only_mlp)
        .arg("--out")
        .arg(d.join("x.tgb")));
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not in the registry"));
    // So is a task listed twice.
    let out = run(sequencer()
        .args(["aggregate"])
        .arg(&proofs[0])
        .arg(&proofs[0])
        .arg("--registry")
        .arg(&registry)
        .arg("--out")
        .arg(d.join("x.tgb")));
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));

    let batch = d.join("batch.tgb");
    let aggregated = json(&run(sequencer()
        .args(["--json", "aggregate"])
        .args(&proofs)
        .arg("--registry")
        .arg(&registry)
        .arg("--out")
        .arg(&batch)));
    assert_eq!(aggregated["count"], 3);
    assert_eq!(aggregated["registry_root"], added["root"]);

    let verified =
        json(&run(sibling("tgrid-verifier").args(["--json", "batch"]).arg(&batch).arg("--registry").arg(&registry)));
    assert_eq!(verified["valid"], true);
    assert_eq!(verified["batch_root"], aggregated["batch_root"]);
    assert_eq!(verified["count"], 3);
    let task_ids: Vec<_> = verified["leaves"].as_array().unwrap().iter().map(|l| l["task_id"].clone()).collect();
    assert_eq!(task_ids, [1u8, 2, 3].map(|b| serde_json::json!(format!("0x{}", hex::encode([b; 32])))));

    // Against another registry root: invalid (exit 1). Garbage or truncated files: exit 2.
    let out = run(sibling("tgrid-verifier").args(["batch"]).arg(&batch).arg("--registry").arg(&only_mlp));
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(&batch).unwrap();
    let truncated = d.join("truncated.tgb");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let out = run(sibling("tgrid-verifier").args(["batch"]).arg(&truncated).arg("--registry").arg(&registry));
    assert_eq!(out.status.code(), Some(2));
    let mut flipped = bytes.clone();
    let at = bytes.len() - 100;
    flipped[at] ^= 0x40;
    let tampered = d.join("tampered.tgb");
    std::fs::write(&tampered, &flipped).unwrap();
    let out = run(sibling("tgrid-verifier").args(["batch"]).arg(&tampered).arg("--registry").arg(&registry));
    assert_ne!(out.status.code(), Some(0));
}
