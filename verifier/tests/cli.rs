//! tgrid-verifier's own CLI contract: help, exit codes and reasons on unreadable input. The
//! full prove-then-verify round trip is in prover/tests/cli.rs.

use std::process::Command;

fn verifier() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tgrid-verifier"))
}

#[test]
fn help_describes_the_task_command() {
    let out = verifier().arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("task"), "{text}");
    let out = verifier().args(["task", "--help"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("--model"));
}

#[test]
fn missing_and_malformed_files_exit_with_code_two() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.tgp");
    let out = verifier().arg("task").arg(&missing).arg("--model").arg(&missing).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read"));

    let empty = dir.path().join("empty.tgm");
    std::fs::write(&empty, b"").unwrap();
    let out = verifier().args(["--json", "task"]).arg(&empty).arg("--model").arg(&empty).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["valid"], false);
    assert!(v["error"].as_str().unwrap().contains("not a usable compiled model"));
}

/// The on-chain audits refuse what they cannot read before asking any node (exit 2).
#[test]
fn on_chain_audits_refuse_bad_arguments_with_code_two() {
    let dir = tempfile::tempdir().unwrap();
    let hash = format!("0x{}", "ab".repeat(32));
    // Nothing listens on port 1: a refusal there would be exit 1, not 2.
    let rpc = "http://127.0.0.1:1";
    let run = |args: &[&str]| verifier().args(args).output().unwrap();
    let stderr = |out: &std::process::Output| String::from_utf8_lossy(&out.stderr).into_owned();

    let help = run(&["task", "--help"]);
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("--order") && text.contains("--relay") && text.contains("order hash"), "{text}");

    let out = run(&["task", "0x1234", "--rpc", rpc]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("order hash must have 64 hex digits"), "{}", stderr(&out));
    let out = run(&["batch", "not-a-root", "--rpc", rpc]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("batch root must start with 0x"));
    // --order and --relay need --rpc, and exclude each other.
    let out = run(&["task", &hash, "--order", "o.json"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["task", &hash, "--rpc", rpc, "--order", "o.json", "--relay", "http://127.0.0.1:1"]);
    assert_eq!(out.status.code(), Some(2));
    // Order files: missing, random bytes, not an order.
    let missing = dir.path().join("missing.json");
    let out = verifier().args(["task", &hash, "--rpc", rpc, "--order"]).arg(&missing).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot read"), "{}", stderr(&out));
    for (name, bytes) in [("junk", &b"\x00\xff\x10 junk"[..]), ("other", &br#"{"order":{"poster":"0x01"}}"#[..])] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let out = verifier().args(["--json", "task", &hash, "--rpc", rpc, "--order"]).arg(&path).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(v["error"].as_str().unwrap().contains("is not a signed order"), "{v}");
    }
    // A node that is not there: exit 1 with the reason.
    let deployment = dir.path().join("d.json");
    std::fs::write(&deployment, b"not a deployment").unwrap();
    let out = verifier().args(["batch", &hash, "--rpc", rpc, "--deployment"]).arg(&deployment).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("deployment file"));
}
