//! The registry, aggregation and batch verification CLIs end to end on compiled fixtures:
//! `tgrid-prover compile/prove` → `tgrid-sequencer registry add` → `tgrid-sequencer aggregate`
//! → `tgrid-verifier batch` → `tgrid-sequencer wrap` → `tgrid-verifier groth16`, and the errors
//! each one gives for wrong input; `aggregate` with a provider's leaf proof beside a task proof.

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
    assert_eq!(added["added"]["leaf_digest"], mlp_info["leaf_digest"]);
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
    assert_eq!(aggregated["leaves_used"], 0);

    // A provider's leaf proof kept beside its task proof (PROOF.leaf, as the daemon's
    // `prove_leaves` keeps them) is used as given; beside another task's proof the same file is
    // not this task's leaf: reported, and that leaf proven here. The batch is the same.
    let aggregator =
        tgrid_sequencer::Aggregator::new(tgrid_aggregation::RegistryFile::load(&registry).unwrap()).unwrap();
    let cnn_proof = tgrid_circuits::TaskProof::from_bytes(&std::fs::read(&proofs[1]).unwrap()).unwrap();
    let (_, cnn_leaf) = aggregator.prove_leaf(&cnn_proof).unwrap();
    std::fs::write(proofs[1].with_extension("leaf"), cnn_leaf.to_bytes()).unwrap();
    std::fs::write(proofs[2].with_extension("leaf"), cnn_leaf.to_bytes()).unwrap();
    let with_leaves = run(sequencer()
        .args(["--json", "aggregate"])
        .args(&proofs)
        .arg("--registry")
        .arg(&registry)
        .arg("--out")
        .arg(d.join("with-leaves.tgb")));
    assert!(String::from_utf8_lossy(&with_leaves.stderr).contains("not using this leaf proof"));
    let with_leaves = json(&with_leaves);
    assert_eq!(with_leaves["leaves_used"], 1, "{with_leaves}");
    assert_eq!(with_leaves["batch_root"], aggregated["batch_root"]);

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
    wrap_and_check(d, &batch, &verified);
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

/// `tgrid-sequencer wrap` with the INSECURE test FRI parameters and the INSECURE devnet key (the
/// same code as production, fewer queries), then `tgrid-verifier groth16` on the result and on
/// every kind of tampering.
fn wrap_and_check(d: &Path, batch: &Path, verified_batch: &serde_json::Value) {
    use tgrid_aggregation::{batch_root, settlement_public_input, TaskLeaf};

    // No key chosen: refused (the devnet key must be asked for by name).
    let out = run(sequencer().args(["wrap"]).arg(batch).arg("--out").arg(d.join("x.g16")));
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));

    // Shared with tests/service.rs: the INSECURE test-FRI key is set up once per target dir.
    let keys = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/tgrid-test-keys");
    // Keys cached before this run (a key of older circuits may be among them: only the one of
    // the current circuits counts).
    let cached_before: Vec<String> = std::fs::read_dir(&keys)
        .map(|entries| entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    let g16 = d.join("batch.g16");
    let out = run(sequencer()
        .args(["--json", "wrap"])
        .arg(batch)
        .arg("--out")
        .arg(&g16)
        .args(["--insecure-devnet-key", "--fri", "insecure-test", "--keys-dir"])
        .arg(&keys));
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let wrapped = json(&out);
    assert!(stderr.contains("INSECURE devnet Groth16 key"), "{stderr}");
    assert_eq!(wrapped["insecure_key"], true);
    assert!(wrapped["key_id"].as_str().unwrap().contains("insecure"));
    let cached = cached_before.contains(&format!("{}.pk", wrapped["key_id"].as_str().unwrap()));
    assert_eq!(wrapped["setup_seconds"].as_f64().is_some(), !cached, "the setup runs on first use only");
    assert_eq!(wrapped["public_input"], verified_batch["public_input"]);
    assert_eq!(wrapped["batch_root"], verified_batch["batch_root"]);
    assert_eq!(wrapped["count"], 3);
    let vk = PathBuf::from(wrapped["verifying_key"].as_str().unwrap());
    let pk = keys.join(format!("{}.pk", wrapped["key_id"].as_str().unwrap()));
    assert!(vk.exists() && pk.exists());
    // The same key given as a "ceremony" key file is still reported insecure: its circuit has the
    // 10-bit test FRI parameters, forgeable whatever the Groth16 key.
    let shown = json(&run(sequencer().args(["--json", "key", "--fri", "insecure-test", "--proving-key"]).arg(&pk)));
    assert_eq!(shown["insecure"], true, "{shown}");
    assert_eq!(shown["fri"], "insecure-test");
    assert_eq!(shown["id"], wrapped["key_id"]);
    assert_eq!(shown["fri_params"]["conjectured_security_bits"], 10);
    // The key file records its circuit: the same key relabelled as a production-parameter key
    // (a valid file, checksum and all) is refused for this circuit.
    let (record, key) = tgrid_groth16::keys::load_proving_key(&pk, false).unwrap();
    let record = String::from_utf8(record).unwrap();
    assert_eq!(record, wrapped["key_id"].as_str().unwrap());
    let relabelled = d.join("relabelled.pk");
    let production = record.replace("wrap-insecure-test-r4q2g2-", "wrap-production-r4q21g16-");
    tgrid_groth16::keys::save_proving_key(&relabelled, production.as_bytes(), &key).unwrap();
    let out = run(sequencer().args(["key", "--fri", "insecure-test", "--proving-key"]).arg(&relabelled));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr.contains("set up for another circuit: FRI parameters r4q21g16"), "{stderr}");

    let verify =
        |file: &Path| run(sibling("tgrid-verifier").args(["--json", "groth16"]).arg(file).arg("--keys-dir").arg(&keys));
    let checked = json(&verify(&g16));
    assert_eq!(checked["valid"], true);
    assert_eq!(checked["public_input"], verified_batch["public_input"]);
    assert_eq!(checked["insecure_key"], true);
    assert_eq!(checked["key_pinned"], false, "the key the file names is not a pinned key");
    assert_eq!(checked["leaves"], verified_batch["leaves"]);
    let checked = json(&run(sibling("tgrid-verifier").args(["--json", "groth16"]).arg(&g16).arg("--vk").arg(&vk)));
    assert_eq!(checked["valid"], true);
    assert_eq!(checked["key_pinned"], true);
    // Pinned by digest: the right one passes, another is refused (exit 1), junk is bad input.
    let digest = wrapped["verifying_key_digest"].as_str().unwrap().to_string();
    assert_eq!(checked["verifying_key_digest"], digest.as_str());
    let pinned = |d: &str| {
        run(sibling("tgrid-verifier")
            .args(["--json", "groth16"])
            .arg(&g16)
            .arg("--keys-dir")
            .arg(&keys)
            .args(["--key-digest", d]))
    };
    let out = pinned(&digest);
    assert_eq!(json(&out)["key_pinned"], true);
    let other = format!("0x{}", "ab".repeat(32));
    let out = pinned(&other);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not the pinned"));
    assert_eq!(pinned("0x12").status.code(), Some(2));

    let original: serde_json::Value = serde_json::from_slice(&std::fs::read(&g16).unwrap()).unwrap();
    let expect_exit = |name: &str, edit: &dyn Fn(&mut serde_json::Value), code: i32| {
        let mut v = original.clone();
        edit(&mut v);
        let path = d.join(format!("{name}.g16"));
        std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
        let out = verify(&path);
        assert_eq!(out.status.code(), Some(code), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let hex_of = |bytes: &[u8]| format!("0x{}", hex::encode(bytes));
    // A proof word changed: not a curve point, or a different point.
    expect_exit("word", &|v| v["proof"][0] = hex_of(&[0x11; 32]).into(), 1);
    expect_exit("swapped", &|v| v["proof"].as_array_mut().unwrap().swap(0, 6), 1);
    // A leaf changed without the root: the recomputed root differs.
    expect_exit("leaf", &|v| v["leaves"][1]["output_commitment"] = hex_of(&[0x77; 32]).into(), 1);
    // A leaf changed and root, public input recomputed to match: the Groth16 proof fails.
    expect_exit(
        "consistent-leaf",
        &|v| {
            v["leaves"][1]["output_commitment"] = hex_of(&[0x77; 32]).into();
            let leaves: Vec<TaskLeaf> = v["leaves"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| {
                    let h = |k: &str| hex::decode(&l[k].as_str().unwrap()[2..]).unwrap();
                    TaskLeaf {
                        task_id: h("task_id").try_into().unwrap(),
                        model_id: h("model_id").try_into().unwrap(),
                        input_commitment: h("input_commitment").try_into().unwrap(),
                        output_commitment: h("output_commitment").try_into().unwrap(),
                        provider: h("provider").try_into().unwrap(),
                    }
                })
                .collect();
            let root = batch_root(&leaves.iter().map(TaskLeaf::hash).collect::<Vec<_>>()).unwrap();
            let registry: [u8; 32] =
                hex::decode(&v["registry_root"].as_str().unwrap()[2..]).unwrap().try_into().unwrap();
            v["batch_root"] = hex_of(&root).into();
            v["public_input"] = hex_of(&settlement_public_input(&root, &registry, 3)).into();
        },
        1,
    );
    // A dropped leaf, a wrong count, another key's digest: invalid. Bad hex, junk: malformed.
    expect_exit("dropped", &|v| _ = v["leaves"].as_array_mut().unwrap().pop(), 1);
    expect_exit("count", &|v| v["count"] = 4.into(), 1);
    expect_exit("key", &|v| v["key"]["verifying_key_digest"] = hex_of(&[0; 32]).into(), 1);
    expect_exit("hex", &|v| v["batch_root"] = "0x12".into(), 2);
    expect_exit("traversal", &|v| v["key"]["id"] = "../../etc/passwd".into(), 2);
    let junk = d.join("junk.g16");
    std::fs::write(&junk, b"\x00\x01 not json").unwrap();
    assert_eq!(verify(&junk).status.code(), Some(2));
}

/// A reader that has gone away (`tgrid-sequencer openapi | head -1` once head exits) ends the
/// command quietly with the status a SIGPIPE gives, not with a panic about a broken pipe.
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = sequencer().arg("openapi").stdout(writer).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
}

/// `run` needs a Groth16 key: a ceremony key file or the explicit INSECURE opt-in. Nothing
/// defaults to the devnet key any more.
#[test]
fn run_refuses_to_start_without_a_key_or_the_insecure_opt_in() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = sequencer();
    cmd.current_dir(dir.path()).arg("run");
    for (name, _) in std::env::vars().filter(|(k, _)| k.starts_with("TGRID_SEQUENCER_")) {
        cmd.env_remove(name);
    }
    let out = run(&mut cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains("no Groth16 key") && stderr.contains("insecure_devnet_key"), "stderr: {stderr}");
    assert!(!dir.path().join(".tgrid").exists(), "nothing created before the settings are valid");
    // The opt-in shows in the effective settings.
    let out = run(cmd.arg("--print-settings").env("TGRID_SEQUENCER_INSECURE_DEVNET_KEY", "true"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json(&out)["insecure_devnet_key"], true);
}
