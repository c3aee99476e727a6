//! A language model's order end to end on a real anvil with the real contracts, through the real
//! binaries: the model owner compiles the character GPT fixture (PyTorch export, 2 blocks,
//! 4 heads, 32 characters of context), the DAO registers it by vote, a poster signs an order for
//! the next character after 32 characters of Moby-Dick, the provider daemon accepts, proves the
//! forward pass (one segment of 2^16 rows after row pruning) and submits, the sequencer proves its leaf,
//! aggregates, wraps and settles it, the poster checks the settled output and reads the
//! predicted character, and an auditor re-verifies the task from chain data.
//!
//! The wrap uses the INSECURE test FRI parameters and the INSECURE devnet Groth16 key (cached in
//! target/tgrid-test-keys, shared with the other devnet tests).

use crate::support;

use std::time::{Duration, Instant};

use alloy::primitives::B256;
use serde_json::Value;

use support::{
    count, events_until, json, pass_proposal, poster_env, provider_env, repo_root, sequencer_env, start_devnet, Service,
};

#[tokio::test(flavor = "multi_thread")]
async fn a_gpt_order_is_proven_settled_and_decoded_on_anvil() {
    let started = Instant::now();
    let work = tempfile::tempdir().unwrap();
    let w = |name: &str| work.path().join(name).display().to_string();
    let keys = repo_root().join("target/tgrid-test-keys");
    let fixture = |file: &str| repo_root().join("fixtures/gpt").join(file).display().to_string();

    // Model owner: compile the PyTorch export and list it in a registry.
    let compiled = json(
        "tgrid-prover",
        &[
            "compile",
            &fixture("model.onnx"),
            "--calibration",
            &fixture("calibration.json"),
            "--wide-attention-scores",
            "--out",
            &w("gpt.tgm"),
        ],
        &[],
    );
    let model_id = compiled["model_id"].as_str().unwrap().to_lowercase();
    json("tgrid-sequencer", &["registry", "add", &w("gpt.tgm"), "--registry", &w("registry.json")], &[]);

    let devnet = start_devnet(&keys, &[("TGRID_DEVNET_MODEL_ID", B256::ZERO.to_string())]).await;
    let rpc = devnet.rpc_url();
    let deployment = devnet.deployment_path().display().to_string();
    // `tgrid` signs as anvil account 0: token holder, DAO voter and the poster.
    let env = poster_env(&devnet, w("poster-state"));

    // DAO: the GPT is registered by a vote.
    json("tgrid", &["dao", "delegate"], &env);
    json("tgrid", &["devnet", "advance-time", "1"], &env);
    pass_proposal(&env, &["register-models", "--registry", &w("registry.json")]);
    let listed = json("tgrid-verifier", &["registry", "--rpc", &rpc, "--deployment", &deployment], &[]);
    assert!(listed["models"].as_array().unwrap().iter().any(|m| m["model_id"] == model_id.as_str()), "{listed}");

    let provider = devnet.address(1);
    json("tgrid", &["token", "transfer", &provider.to_string(), "2000"], &env);
    json("tgrid", &["deposit", "add", "10", "--per-order", "10"], &env);

    // The sequencer runs its aggregation in-process (the embedded default) and closes a batch
    // at one task.
    let seq_env = sequencer_env(
        &keys,
        vec![
            ("RPC_URL", rpc.clone()),
            ("DEPLOYMENT", deployment.clone()),
            ("REGISTRY", w("registry.json")),
            ("DATA_DIR", w("sequencer")),
            ("MAX_BATCH_TASKS", "1".into()),
        ],
    );
    let sequencer = Service::start("tgrid-sequencer", &["run"], &seq_env, &work.path().join("sequencer.log"));
    let ready = sequencer.next_json(Duration::from_secs(600), "the sequencer's ready line");
    let seq_url = format!("http://{}", ready["listening"].as_str().unwrap());

    let daemon_env = provider_env(
        &keys,
        vec![
            ("RPC_URL", rpc.clone()),
            ("DEPLOYMENT", deployment.clone()),
            ("PRIVATE_KEY", B256::from(devnet.signer(1).to_bytes()).to_string()),
            ("MODELS", w("gpt.tgm")),
            ("INPUTS_DIR", w("inputs")),
            ("SEQUENCER_URL", seq_url.clone()),
            ("DATA_DIR", w("provider")),
        ],
    );
    let daemon = Service::start("tgrid-prover", &["--json", "run"], &daemon_env, &work.path().join("provider.log"));
    let staked = daemon.next_json(Duration::from_secs(600), "the provider's first line");
    assert_eq!(staked["event"], "staked", "{staked}");

    // The poster asks for the character after 32 characters of the held-out text.
    let input = fixture("input.json");
    let order = json(
        "tgrid",
        &[
            "order",
            "post",
            "--model",
            &w("gpt.tgm"),
            "--payment",
            "10",
            "--deadline-in",
            "3600",
            "--inputs-dir",
            &w("inputs"),
            "--relay",
            &seq_url,
            "--input",
            &input,
            "--provider",
            &provider.to_string(),
        ],
        &env,
    )["order_hash"]
        .as_str()
        .unwrap()
        .to_string();
    let events =
        events_until(&daemon, Duration::from_secs(1800), "the GPT order settling", |e| count(e, "settled") == 1);
    assert_eq!((count(&events, "accepted"), count(&events, "proven"), count(&events, "submitted")), (1, 1, 1));
    let settled = events.iter().find(|e| e["event"] == "settled").unwrap();
    assert_eq!(
        (settled["task_id"].as_str(), settled["paid"].as_bool()),
        (Some(order.as_str()), Some(true)),
        "{settled}"
    );
    let proven = events.iter().find(|e| e["event"] == "proven").unwrap();
    eprintln!("the provider's GPT proof (test build): {proven}");

    // The poster checks the settled output and reads the predicted character.
    let result = json(
        "tgrid",
        &[
            "order",
            "result",
            &order,
            "--relay",
            &seq_url,
            "--model",
            &w("gpt.tgm"),
            "--vocab",
            &fixture("vocab.json"),
            "--out",
            &w("result.json"),
            "--wait",
            "60",
        ],
        &env,
    );
    assert_eq!(result["valid"], true, "{result}");
    let inferred = json("tgrid-prover", &["infer", &w("gpt.tgm"), "--input", &input], &[]);
    assert_eq!(result["output_int8"], inferred["output_int8"], "the settled output is the int8 inference");
    let vocab: Value = serde_json::from_str(&std::fs::read_to_string(fixture("vocab.json")).unwrap()).unwrap();
    let logits: Vec<i64> = result["output_int8"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
    assert_eq!(logits.len(), vocab["tokens"].as_array().unwrap().len(), "one logit per character");
    let best = (0..logits.len()).fold(0, |best, i| if logits[i] > logits[best] { i } else { best });
    assert_eq!(result["next_token"], vocab["tokens"][best], "{result}");
    // The float model (PyTorch, in the fixture) predicts the same character here.
    let fixture_input: Value = serde_json::from_str(&std::fs::read_to_string(&input).unwrap()).unwrap();
    let float: Vec<f64> =
        fixture_input["output_data"][0].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    let float_best = (0..float.len()).fold(0, |best, i| if float[i] > float[best] { i } else { best });
    assert_eq!(best, float_best, "int8 and float predict different characters");

    // An auditor re-verifies the task from chain data and the relay.
    let audit = json(
        "tgrid-verifier",
        &[
            "task",
            &order,
            "--rpc",
            &rpc,
            "--deployment",
            &deployment,
            "--relay",
            &seq_url,
            "--output",
            &w("result.json"),
        ],
        &[],
    );
    assert_eq!((audit["status"].as_str(), audit["output_matches"].as_bool()), (Some("settled"), Some(true)), "{audit}");
    drop(daemon);
    drop(sequencer);
    eprintln!("a GPT order end to end: {:.0} s", started.elapsed().as_secs_f64());
}
