//! `tgrid` without a chain: help, and bad input refused with exit code 2 and a clear message.
//! (Everything that needs a chain runs in tests/tests/devnet.rs against a real anvil.)

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_tgrid");

fn run(args: &[&str]) -> std::process::Output {
    Command::new(BIN).args(args).env_remove("TGRID_DEPLOYMENT").env_remove("TGRID_RPC_URL").output().unwrap()
}

#[test]
fn help_names_every_role() {
    let out = run(&["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for command in ["task", "dao", "token", "devnet"] {
        assert!(text.contains(command), "{text}");
    }
    let out = run(&["dao", "propose", "--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("register-models") && text.contains("max-batch-size"), "{text}");
}

#[test]
fn a_missing_or_malformed_deployment_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.json");
    let out = run(&["--deployment", missing.to_str().unwrap(), "task", "status", "0x00"]);
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
fn unreachable_nodes_fail_with_the_url() {
    let dir = tempfile::tempdir().unwrap();
    let deployment = dir.path().join("d.json");
    std::fs::write(
        &deployment,
        r#"{"chainId":31337,"startBlock":1,
        "token":"0x5FbDB2315678afecb367f032d93F642f64180aa3","timelock":"0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512",
        "governor":"0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0","registry":"0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9",
        "staking":"0xDc64a140Aa3E981100a9becA4E685f962f0cF6C9","escrow":"0x5FC8d32690cc91D4c39d9d3abcBD16989F875707",
        "settlement":"0x0165878A594ca255338adfa4d48449f69242Eb8F","market":"0x2279B7A0a67DB372996a5FaB50D91eAA73d2eBe6","verifier":"0xa513E6E4b8f2a923D98304ec87F64353C4D5C853",
        "verifyingKeyId":"k-insecure","sequencer":"0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
        "registryRoot":"0x0101010101010101010101010101010101010101010101010101010101010101",
        "devnetModelId":"0x0000000000000000000000000000000000000000000000000000000000000000"}"#,
    )
    .unwrap();
    // Port 9 (discard) on loopback: nothing listens.
    let out = run(&["--rpc", "http://127.0.0.1:9", "--deployment", deployment.to_str().unwrap(), "token", "balance"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot reach the node at http://127.0.0.1:9"));
}
