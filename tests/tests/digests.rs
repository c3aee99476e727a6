//! Every fixture's model id, segment plan, task circuit digests (public and private), leaf
//! circuit digest and `.tgm` encoding, compared with the values recorded in
//! `fixture_digests.json`; and files an earlier build wrote, read and verified today. A refactor that changes none of these keeps every
//! registered model, leaf circuit and file valid; one that changes any of them is a new circuit
//! version and must say so (docs/encodings.md), then re-record them with
//! `TGRID_RECORD_DIGESTS=1 cargo test -p tgrid-tests --test integration digests:: -- --test-threads 1`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tgrid_aggregation::LeafCircuit;
use tgrid_circuits::{ModelFile, Privacy, QuantModel, SegmentPlan, TaskProof, TaskVerifier};
use tgrid_onnx::{import_onnx, quantize_model_with, InputData, QuantizeOptions};

/// `tgrid-prover compile`'s default `--max-segment-rows`.
const MAX_SEGMENT_ROWS: usize = 1 << 16;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures")
}

fn recorded_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture_digests.json")
}

fn hex(bytes: impl AsRef<[u8]>) -> String {
    format!("0x{}", hex::encode(bytes))
}

fn compile(name: &str, file: &str, wide_attention_scores: bool) -> QuantModel {
    let (graph, _) = import_onnx(&fixtures().join(name).join(file)).unwrap();
    let cal = InputData::from_path(&fixtures().join(name).join("calibration.json")).unwrap();
    quantize_model_with(&graph, &cal.input_data, QuantizeOptions { wide_attention_scores }).unwrap()
}

/// What a compiled fixture is, bit for bit, in both privacy modes.
fn digests(name: &str, file: &str, wide: bool, leaf: bool) -> BTreeMap<&'static str, String> {
    let model = compile(name, file, wide);
    let plan = SegmentPlan::auto(&model, MAX_SEGMENT_ROWS);
    let public = TaskVerifier::new(&model, &plan).unwrap();
    let private = TaskVerifier::with_privacy(&model, &plan, Privacy::Private).unwrap();
    let mut out = BTreeMap::new();
    out.insert("model_id", hex(model.model_id()));
    out.insert("private_model_id", hex(private.model_id()));
    out.insert("cuts", format!("{:?}", plan.cuts));
    out.insert("public_segment_rows", format!("{:?}", public.segment_rows()));
    out.insert("private_segment_rows", format!("{:?}", private.segment_rows()));
    out.insert("public_circuit_digest", hex(public.circuit_digest()));
    out.insert("private_circuit_digest", hex(private.circuit_digest()));
    let leaf_digest = if leaf { LeafCircuit::new(public).unwrap().digest() } else { [0; 32] };
    if leaf {
        out.insert("public_leaf_digest", hex(leaf_digest));
    }
    let circuit_digest = TaskVerifier::new(&model, &plan).unwrap().circuit_digest();
    // The report is tract's float comparison, which may differ in its last bits between CPUs.
    let file = ModelFile { model, plan, circuit_digest, leaf_digest, report: String::new() };
    out.insert("tgm_sha256", hex(Sha256::digest(file.to_bytes())));
    out
}

/// The fixtures, each as `tgrid-prover compile` (and the benchmarks) compile it.
const CASES: &[(&str, &str, &str, bool, bool)] = &[
    ("mlp", "mlp", "model.onnx", false, true),
    ("cnn", "cnn", "model.onnx", false, true),
    ("lenet", "lenet", "model.onnx", false, true),
    ("gap", "gap", "model.onnx", false, true),
    ("mixer", "mixer", "model.onnx", false, true),
    ("mixer_dynamo", "mixer", "model_dynamo.onnx", false, false),
    ("vit", "vit", "model.onnx", false, true),
    ("vit_dynamo", "vit", "model_dynamo.onnx", false, false),
    ("gpt_wide_scores", "gpt", "model.onnx", true, false),
];

fn check(key: &str, actual: BTreeMap<String, String>) {
    let path = recorded_path();
    if std::env::var_os("TGRID_RECORD_DIGESTS").is_some() {
        // Each test merges its entry into the file: record with `--test-threads 1`.
        let mut all: BTreeMap<String, BTreeMap<String, String>> =
            std::fs::read_to_string(&path).ok().map(|text| serde_json::from_str(&text).unwrap()).unwrap_or_default();
        all.insert(key.to_string(), actual);
        std::fs::write(&path, serde_json::to_string_pretty(&all).unwrap() + "\n").unwrap();
        return;
    }
    let all: BTreeMap<String, BTreeMap<String, String>> =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let recorded = all.get(key).unwrap_or_else(|| panic!("no recorded digests for {key} in {}", path.display()));
    assert_eq!(&actual, recorded, "{key}: compiled circuits or encodings changed");
}

fn check_fixture(key: &str) {
    let &(_, name, file, wide, leaf) = CASES.iter().find(|c| c.0 == key).unwrap();
    let actual = digests(name, file, wide, leaf).into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    check(key, actual);
}

#[test]
fn mlp_digests_are_unchanged() {
    check_fixture("mlp");
}

#[test]
fn cnn_digests_are_unchanged() {
    check_fixture("cnn");
}

#[test]
fn lenet_digests_are_unchanged() {
    check_fixture("lenet");
}

#[test]
fn gap_digests_are_unchanged() {
    check_fixture("gap");
}

#[test]
fn mixer_digests_are_unchanged() {
    check_fixture("mixer");
    check_fixture("mixer_dynamo");
}

#[test]
fn vit_digests_are_unchanged() {
    check_fixture("vit");
    check_fixture("vit_dynamo");
}

#[test]
fn gpt_digests_are_unchanged() {
    check_fixture("gpt_wide_scores");
}

/// Files written by an earlier build (`tests/proofs/`: the mlp compiled and a public proof of
/// it, by `tgrid-prover` at de44017; a private proof under private id v6, the current one)
/// decode, re-encode bit for bit and verify. A private proof under the previous version's id
/// (v5, de44017) still decodes and is refused, naming the model id.
#[test]
fn files_written_before_decode_reencode_and_verify() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/proofs");
    let tgm = std::fs::read(dir.join("mlp.tgm")).unwrap();
    let file = ModelFile::from_bytes(&tgm).unwrap();
    assert_eq!(file.to_bytes(), tgm, "the .tgm re-encodes bit for bit");
    assert_eq!(file.model, compile("mlp", "model.onnx", false), "today's compile gives the same model");
    for (name, privacy) in [("mlp-public.tgp", Privacy::Public), ("mlp-private.tgp", Privacy::Private)] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let proof = TaskProof::from_bytes(&bytes).unwrap();
        assert_eq!(proof.to_bytes(), bytes, "{name} re-encodes bit for bit");
        let verifier = TaskVerifier::with_privacy(&file.model, &file.plan, privacy).unwrap();
        let publics = verifier.verify(&proof).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((publics.task_id, publics.provider), ([7; 32], [9; 20]), "{name}");
    }
    let old = TaskProof::from_bytes(&std::fs::read(dir.join("mlp-private-v5.tgp")).unwrap()).unwrap();
    let verifier = TaskVerifier::with_privacy(&file.model, &file.plan, Privacy::Private).unwrap();
    let refused = verifier.verify(&old).expect_err("a proof under the previous private id verified").to_string();
    assert!(refused.contains("model"), "{refused}");
}
