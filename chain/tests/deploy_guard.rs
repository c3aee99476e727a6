//! `Deploy.s.sol` on an anvil whose chain id is not the devnet's (31337), as on a real network:
//! it refuses anvil's public keys (and a missing PRIVATE_KEY) and the insecure verifiers, and
//! broadcasts nothing; on the devnet chain id the same script deploys (every other test).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use alloy::node_bindings::Anvil;
use alloy::providers::{Provider, ProviderBuilder};
use alloy::signers::local::PrivateKeySigner;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn deploy(repo: &Path, rpc: &str, key: Option<&str>, out: &Path) -> Output {
    let mut cmd = Command::new(repo.join("node_modules/.bin/forge"));
    cmd.current_dir(repo)
        .args(["script", "contracts/script/Deploy.s.sol", "--rpc-url", rpc, "--broadcast", "--slow"])
        .env("TGRID_DEPLOYMENTS_OUT", out)
        .env_remove("PRIVATE_KEY")
        .env_remove("TGRID_VERIFIER")
        .env_remove("TGRID_VERIFIER_KEY");
    if let Some(key) = key {
        cmd.env("PRIVATE_KEY", key);
    }
    cmd.output().unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[tokio::test]
async fn deployment_off_the_devnet_refuses_public_keys_and_insecure_verifiers() {
    let repo = repo_root();
    let anvil = Anvil::at(repo.join("node_modules/.bin/anvil")).port(0u16).chain_id(1337).try_spawn().unwrap();
    let rpc = anvil.endpoint();
    let node = ProviderBuilder::new().connect_http(rpc.parse().unwrap());
    let out = repo.join(format!("target/test-deployments/guard-{}.json", anvil.port()));

    // No PRIVATE_KEY: no fallback to anvil's key 0 off the devnet.
    let result = deploy(&repo, &rpc, None, &out);
    assert!(!result.status.success());
    assert!(text(&result).contains("PublicKeyOutsideDevnet(1337)"), "{}", text(&result));
    // anvil's key 0 given explicitly: refused too (anyone has it).
    let key0 = format!("0x{}", hex::encode(anvil.keys()[0].to_bytes()));
    let result = deploy(&repo, &rpc, Some(&key0), &out);
    assert!(text(&result).contains("PublicKeyOutsideDevnet(1337)"), "{}", text(&result));

    // A fresh funded key but no verifier: the devnet verifier (public toxic waste) is refused.
    let fresh = PrivateKeySigner::random();
    node.raw_request::<_, serde_json::Value>("anvil_setBalance".into(), (fresh.address(), "0x56bc75e2d63100000"))
        .await
        .unwrap();
    let fresh_key = format!("0x{}", hex::encode(fresh.to_bytes()));
    let result = deploy(&repo, &rpc, Some(&fresh_key), &out);
    assert!(!result.status.success());
    assert!(text(&result).contains("InsecureVerifierOutsideDevnet"), "{}", text(&result));

    // Nothing reached the chain and no deployment file was written.
    assert_eq!(node.get_transaction_count(fresh.address()).await.unwrap(), 0);
    assert_eq!(node.get_block_number().await.unwrap(), 0);
    assert!(!out.exists());
}
