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
