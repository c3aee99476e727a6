//! `tgrid-verifier registry` against a real anvil with the contracts deployed by Deploy.s.sol.

use std::path::PathBuf;
use std::process::Command;

use tgrid_chain::{Devnet, DevnetConfig};

fn verifier() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tgrid-verifier"))
}

#[test]
fn lists_the_models_registered_on_chain() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let model_id = format!("0x{}", "ab".repeat(32));
    let digest = format!("0x{}", "cd".repeat(32));
    let root = format!("0x{}", "42".repeat(32));
    let config = DevnetConfig::new(&repo)
        .deploy_env("TGRID_REGISTRY_ROOT", &root)
        .deploy_env("TGRID_DEVNET_MODEL_ID", &model_id)
        .deploy_env("TGRID_DEVNET_CIRCUIT_DIGEST", &digest)
        .deploy_env("TGRID_DEVNET_MODEL_URI", "devnet://registry-test");
    let devnet = Devnet::start(&config).expect("devnet");
    let deployment = devnet.deployment_path().to_path_buf();

    let out = verifier()
        .args(["--json", "registry", "--rpc", &devnet.rpc_url()])
        .arg("--deployment")
        .arg(&deployment)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["registry_root"], root);
    let models = v["models"].as_array().unwrap();
    assert_eq!(models.len(), 1, "{v}");
    assert_eq!(models[0]["model_id"], model_id);
    assert_eq!(models[0]["circuit_digest"], digest);
    assert_eq!(models[0]["active"], true);
    assert_eq!(models[0]["deregistered_at"], 0, "never deregistered");
    assert_eq!(models[0]["uri"], "devnet://registry-test");

    let text = verifier()
        .args(["registry", "--rpc", &devnet.rpc_url()])
        .arg("--deployment")
        .arg(&deployment)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("active  devnet://registry-test"));

    // A deployment file that is not one, and a URL that is not one: exit 2 with the reason.
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, b"\x00\x01 not json").unwrap();
    let out =
        verifier().args(["registry", "--rpc", &devnet.rpc_url()]).arg("--deployment").arg(&junk).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("deployment file"));
    let out =
        verifier().args(["registry", "--rpc", "not a url"]).arg("--deployment").arg(&deployment).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    // A node of another chain than the deployment's: refused, not misread.
    let mut other: serde_json::Value = serde_json::from_slice(&std::fs::read(&deployment).unwrap()).unwrap();
    other["chainId"] = 1.into();
    let other_path = dir.path().join("other.json");
    std::fs::write(&other_path, other.to_string()).unwrap();
    let out = verifier()
        .args(["registry", "--rpc", &devnet.rpc_url()])
        .arg("--deployment")
        .arg(&other_path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is chain 31337"));
}
