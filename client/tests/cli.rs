//! `tgrid` without a chain: help, and bad input refused with exit code 2 and a clear message
//! before any deployment file or node is needed. (tests/devnet.rs runs the market commands
//! against a real anvil.)

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_tgrid");

fn run_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("TGRID_DEPLOYMENT")
        .env_remove("TGRID_RPC_URL")
        .env_remove("TGRID_PRIVATE_KEY")
        .env_remove("TGRID_RELAY_URL")
        .env_remove("TGRID_STATE_DIR")
        .output()
        .unwrap()
}

fn run(args: &[&str]) -> std::process::Output {
    run_in(&std::env::temp_dir(), args)
}

/// Runs `args` (no deployment file exists where it runs) and expects exit 2 with `message` on
/// stderr, and `{"ok": false}` on stdout with --json.
fn bad_input(args: &[&str], message: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(dir.path(), args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(message), "{args:?}: {stderr}");
    let mut with_json = vec!["--json"];
    with_json.extend_from_slice(args);
    let out = run_in(dir.path(), &with_json);
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert!(v["error"].as_str().unwrap().contains(message), "{v}");
}

#[test]
fn help_names_every_group() {
    let out = run(&["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for command in ["deposit", "order", "dispute", "stake", "earnings", "dao", "token", "devnet"] {
        assert!(text.contains(command), "{command}: {text}");
    }
    assert!(!text.lines().any(|l| l.trim_start().starts_with("task ")), "{text}");
    let out = run(&["dao", "propose", "--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for setter in [
        "register-models",
        "fees",
        "delays",
        "self-settlement-window",
        "min-payment",
        "max-batch-size",
        "verifier",
        "sequencer",
        "revoke-root",
    ] {
        assert!(text.contains(setter), "{setter}: {text}");
    }
    for removed in ["min-stake", "unbonding-delay", "collateral", "protocol-fee", "deadline-bounds"] {
        assert!(!text.contains(removed), "{removed}: {text}");
    }
    let out = run(&["order", "--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for sub in ["post", "status", "cancel", "result", "publish"] {
        assert!(text.contains(sub), "{sub}: {text}");
    }
    let out = run(&["order", "post", "--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--no-relay") && !text.contains("--per-order") && text.contains("--book"), "{text}");
}

#[test]
fn v1_commands_are_gone() {
    for args in [&["task", "post", "--help"][..], &["stake", "claim"]] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn a_missing_or_malformed_deployment_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.json");
    let hash = format!("0x{}", "11".repeat(32));
    let out = run(&["--deployment", missing.to_str().unwrap(), "order", "status", &hash]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("none.json"));

    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, [0xffu8, 0x00, 0x13, 0x37]).unwrap();
    let out = run(&["--json", "--deployment", garbage.to_str().unwrap(), "token", "balance"]);
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
}

#[test]
fn malformed_orders_hashes_and_amounts_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let not_an_order = dir.path().join("not-an-order.json");
    std::fs::write(&not_an_order, r#"{"order": {"poster": "0x01"}, "signature": "0x00"}"#).unwrap();
    let random = dir.path().join("random.bin");
    std::fs::write(&random, (0..512u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect::<Vec<_>>())
        .unwrap();
    let leak = |p: std::path::PathBuf| -> &'static str { Box::leak(p.display().to_string().into_boxed_str()) };
    let (not_an_order, random) = (leak(not_an_order), leak(random));

    for command in [&["order", "status"][..], &["order", "cancel"], &["order", "result"], &["dispute"]] {
        let with = |file: &'static str| [command, &[file]].concat();
        bad_input(&with(not_an_order), "not-an-order.json is not a signed order");
        bad_input(&with(random), "random.bin is not a signed order");
        bad_input(&with("0x1234"), "order hash must have 64 hex digits, got 4");
        bad_input(&with("missing.json"), "cannot read missing.json");
    }
    let hash = format!("0x{}", "22".repeat(32));
    bad_input(&["dispute", &hash, "--acceptance", random], "random.bin is not a signed acceptance");

    bad_input(&["deposit", "add", "5", "--per-order", "10"], "capacity 0");
    bad_input(&["deposit", "add", "5", "--per-order", "0"], "--per-order must be above zero");
    bad_input(&["deposit", "add", "100", "--per-order", "0.000001"], "more than a book holds");
    bad_input(&["deposit", "add", "ten", "--per-order", "1"], "is not a TGRID amount");
    bad_input(&["deposit", "status", "0x1234"], "account must have 40 hex digits");
    bad_input(&["stake", "add", "0"], "above zero");
    bad_input(&["stake", "unbond", "1.2.3"], "is not a TGRID amount");
    bad_input(&["token", "transfer", "0xnothex", "1"], "recipient must have 40 hex digits");
    bad_input(&["dao", "propose", "fees", "2001", "0"], "at most 2,000 bps");
    bad_input(&["dao", "propose", "max-batch-size", "0"], "outside 1 .. 4096");
    bad_input(&["dao", "vote", "abc"], "not a decimal number");
    bad_input(&["dao", "propose", "min-payment", "lots"], "is not a TGRID amount");
    bad_input(&["dao", "propose", "sequencer", "0x00", "true"], "sequencer must have 40 hex digits");
    bad_input(&["dao", "propose", "revoke-root", "0x12"], "root must have 64 hex digits");
    let verifier = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
    bad_input(&["dao", "propose", "verifier", verifier, "--proof", "/nonexistent/batch.g16"], "reading /nonexistent");
    let junk = std::env::temp_dir().join(format!("tgrid-cli-junk-{}.g16", std::process::id()));
    std::fs::write(&junk, b"\x00\x01 not json").unwrap();
    bad_input(
        &["dao", "propose", "verifier", verifier, "--proof", junk.to_str().unwrap()],
        "not a settlement proof file",
    );
    std::fs::remove_file(&junk).unwrap();
    // A model file that is not one, and an input that does not exist.
    bad_input(
        &["order", "post", "--model", random, "--input", "in.json", "--payment", "1"],
        "random.bin is not a compiled model",
    );
    // clap's own refusals exit 2 too.
    let out = run(&["deposit", "close", "not-a-number"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn unreachable_nodes_fail_with_the_url() {
    let dir = tempfile::tempdir().unwrap();
    let deployment = dir.path().join("d.json");
    std::fs::write(
        &deployment,
        r#"{"chainId":31337,"startBlock":1,
        "token":"0x5FbDB2315678afecb367f032d93F642f64180aa3","timelock":"0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512",
        "governor":"0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0","registry":"0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9",
        "market":"0x2279B7A0a67DB372996a5FaB50D91eAA73d2eBe6","verifier":"0xa513E6E4b8f2a923D98304ec87F64353C4D5C853",
        "verifyingKeyId":"k-insecure","sequencer":"0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
        "registryRoot":"0x0101010101010101010101010101010101010101010101010101010101010101",
        "devnetModelId":"0x0000000000000000000000000000000000000000000000000000000000000000"}"#,
    )
    .unwrap();
    let d = deployment.to_str().unwrap();
    // Port 9 (discard) on loopback: nothing listens.
    let out = run(&["--rpc", "http://127.0.0.1:9", "--deployment", d, "token", "balance"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot reach the node at http://127.0.0.1:9"));
    // An order hash neither in the state directory nor at an (unreachable) relay.
    let hash = format!("0x{}", "33".repeat(32));
    let out = run_in(dir.path(), &["--deployment", d, "order", "status", &hash, "--relay", "http://127.0.0.1:9"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("order {hash} is not in .tgrid/orders, and the relay failed")), "{stderr}");
}
