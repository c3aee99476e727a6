//! `tgrid-prover settle`, a provider's way to be paid when no sequencer settles its result, end to
//! end on a real anvil with the real contracts: the model is registered at deployment, a poster
//! signs an order naming the provider (not published to any relay), the provider proves it with
//! `tgrid-prover prove` and settles it from its own account with the command. A leaf file beside
//! the proof that is not a leaf proof of this task is not trusted: the leaf is proven again.
//! Mismatched arguments are refused before anything is built.
//!
//! The wrap uses the INSECURE test FRI parameters and the INSECURE devnet Groth16 key (cached in
//! target/tgrid-test-keys, shared with the other devnet tests).

use crate::support;

use alloy::primitives::B256;
use alloy::providers::{Provider, ProviderBuilder};
use tgrid_chain::market::Market;

use support::{json, poster_env, repo_root, run, start_devnet};

#[tokio::test(flavor = "multi_thread")]
async fn a_provider_settles_its_own_result_with_the_cli() {
    let work = tempfile::tempdir().unwrap();
    let w = |name: &str| work.path().join(name).display().to_string();
    let keys = repo_root().join("target/tgrid-test-keys");
    let fixture = |file: &str| repo_root().join("fixtures/mlp").join(file).display().to_string();

    let compiled = json(
        "tgrid-prover",
        &["compile", &fixture("model.onnx"), "--calibration", &fixture("calibration.json"), "--out", &w("mlp.tgm")],
        &[],
    );
    let registry = json("tgrid-sequencer", &["registry", "add", &w("mlp.tgm"), "--registry", &w("registry.json")], &[]);
    let devnet = start_devnet(
        &keys,
        &[
            ("TGRID_REGISTRY_ROOT", registry["root"].as_str().unwrap().to_string()),
            ("TGRID_DEVNET_MODEL_ID", compiled["model_id"].as_str().unwrap().to_string()),
            ("TGRID_DEVNET_CIRCUIT_DIGEST", compiled["leaf_digest"].as_str().unwrap().to_string()),
        ],
    )
    .await;
    let rpc = devnet.rpc_url();
    let deployment = devnet.deployment_path().display().to_string();
    let env = poster_env(&devnet, w("poster-state"));

    // Anvil account 0 posts an order naming account 1, the provider.
    let provider = devnet.address(1);
    let provider_key = B256::from(devnet.signer(1).to_bytes()).to_string();
    json("tgrid", &["deposit", "add", "10", "--per-order", "10"], &env);
    let order = json(
        "tgrid",
        &[
            "order",
            "post",
            "--model",
            &w("mlp.tgm"),
            "--input",
            &fixture("input.json"),
            "--payment",
            "10",
            "--deadline-in",
            "3600",
            "--provider",
            &provider.to_string(),
            "--inputs-dir",
            &w("inputs"),
            "--no-relay",
            "--out",
            &w("order.json"),
        ],
        &env,
    )["order_hash"]
        .as_str()
        .unwrap()
        .to_string();
    json(
        "tgrid-prover",
        &[
            "prove",
            &w("mlp.tgm"),
            "--input",
            &fixture("input.json"),
            "--task-id",
            &order,
            "--provider",
            &provider.to_string(),
            "--out",
            &w("proof.tgp"),
        ],
        &[],
    );
    // Not a leaf proof: taken for nothing, the leaf is proven again.
    std::fs::write(w("proof.leaf"), b"not a leaf proof").unwrap();

    let model = w("mlp.tgm");
    let keys_dir = keys.display().to_string();
    let settle = |orders: &[&str], proofs: &[&str]| {
        let mut args = vec!["settle"];
        for o in orders {
            args.extend(["--order", o]);
        }
        for p in proofs {
            args.extend(["--proof", p]);
        }
        args.extend(["--model", &model]);
        args.extend(["--rpc", &rpc, "--deployment", &deployment]);
        args.extend(["--insecure-devnet-key", "--keys-dir", &keys_dir, "--fri", "insecure-test"]);
        args.iter().map(|a| a.to_string()).collect::<Vec<String>>()
    };

    // An order without its proof is refused at once (exit 2), naming the mismatch.
    let (order_file, proof_file) = (w("order.json"), w("proof.tgp"));
    let args = settle(&[&order_file, &order_file], &[&proof_file]);
    // The provider's key comes from the environment, never the command line.
    let key_env = [("TGRID_PRIVATE_KEY", provider_key.clone())];
    let refused = run("tgrid-prover", &args.iter().map(String::as_str).collect::<Vec<_>>(), &key_env);
    assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stderr));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("2 --order but 1 --proof"));

    let args = settle(&[&order_file], &[&proof_file]);
    let settled = json("tgrid-prover", &args.iter().map(String::as_str).collect::<Vec<_>>(), &key_env);
    assert_eq!(settled["leaves_reused"], 0, "{settled}");
    assert_eq!(
        (settled["skipped"].as_array().map(Vec::len), settled["unpaid"].as_array().map(Vec::len)),
        (Some(0), Some(0))
    );
    let reader = ProviderBuilder::new().connect_http(rpc.parse().unwrap()).erased();
    let tx: B256 = settled["tx"].as_str().unwrap().parse().unwrap();
    let receipt = reader.get_transaction_receipt(tx).await.unwrap().expect("the settlement is mined");
    assert!(receipt.status());
    assert_eq!(receipt.from, provider, "the provider sent its own settlement");
    let market = Market::new(devnet.deployment(), reader.clone());
    let earner = market.earner(provider).await.unwrap();
    assert_eq!(earner.tasksSettled, 1);
    assert!(!earner.earnings.is_zero(), "the provider was paid");
}
