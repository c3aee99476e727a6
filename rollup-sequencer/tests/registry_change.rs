//! `tgrid-sequencer run` on a real anvil while governance changes the model registry: a batch
//! proven under the old root while a new model is registered settles under that root (its grace
//! period); the sequencer then moves to the new root once its registry file lists it; a batch
//! proven under a root that governance revokes before it settles is given up, its task re-proven
//! under the current root, and settles exactly once; a result of a model governance then
//! deregisters, queued when the sequencer moves to the new root or sent after (and after a
//! restart), is batched under the old root (its grace period) rather than dropped or refused. A `maxBatchSize` lowered by governance
//! below the size of a batch already proven makes its settlement revert: the batch is given up
//! and its tasks settle in smaller batches; the lowered limit, below the sequencer's own, caps
//! every new batch. Node faults on the reads and receipts the
//! pipeline depends on (a fault-injecting proxy) are ridden out.
//!
//! The timelock is impersonated to make the registry calls a passed vote would make. The wrap
//! uses the INSECURE test FRI parameters and the INSECURE devnet Groth16 key.

use std::time::{Duration, Instant};

use alloy::network::EthereumWallet;
use alloy::primitives::{Address, B256};
use alloy::providers::{Provider, ProviderBuilder};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::{SolCall, SolEvent};
use serde_json::{json, Value};
use tgrid_aggregation::RegistryFile;
use tgrid_chain::bindings::{ITaskMarket, IERC20};
use tgrid_chain::market::{Acceptance, Market, MarketDomain, SignedOrder};
use tgrid_chain::{Devnet, DevnetConfig};
use tgrid_circuits::testing::{random_input, tiny_model};
use tgrid_circuits::{QuantModel, SegmentPlan, TaskProver};

use crate::common;
use crate::fault_proxy;

use common::*;

alloy::sol! {
    function registerModel(bytes32 modelId, bytes32 circuitDigest, string uri, bytes32 newRoot);
    function revokeRoot(bytes32 root);
    function deregisterModel(bytes32 modelId, bytes32 newRoot);
    function setMaxBatchSize(uint256 maxBatchSize);
}

/// Polls `/v1/status` until `check` holds.
async fn wait_for_sequencer_status(http: &Http, api: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let (code, status) = get(http, &format!("{api}/v1/status")).await;
        if code == 200 && check(&status) {
            return status;
        }
        assert!(started.elapsed() < Duration::from_secs(300), "{what} never happened: {status}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn follows_registry_changes_settling_under_grace_and_reproving_after_revocation() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let (model_a, model_b, model_c) = (tiny_model(1), tiny_model(2), tiny_model(3));
    // The registries governance will move through: {A}, then {A, B}, then {A, B, C}.
    let (a_id, a_digest, root_1) = write_registry(dir, &model_a);
    let mut next = RegistryFile::load(&dir.join("registry.json")).unwrap();
    let (b_id, b_digest, root_2) = add_model(&mut next, &model_b, "b.tgm");
    next.save(&dir.join("registry-2.json")).unwrap();
    let (c_id, c_digest, root_3) = add_model(&mut next, &model_c, "c.tgm");
    next.save(&dir.join("registry-3.json")).unwrap();
    // Then B is deregistered: {A, C}.
    let mut without_b = RegistryFile::empty(dir.to_path_buf());
    add_model(&mut without_b, &model_a, "model.tgm");
    let (_, _, root_4) = add_model(&mut without_b, &model_c, "c.tgm");
    without_b.save(&dir.join("registry-4.json")).unwrap();
    let install = |name: &str| std::fs::copy(dir.join(name), dir.join("registry.json")).unwrap();
    let (key_id, key_words) = tokio::task::spawn_blocking(wrap_key).await.unwrap();

    let config = DevnetConfig::new(repo_root())
        .deploy_env("TGRID_REGISTRY_ROOT", B256::from(root_1).to_string())
        .deploy_env("TGRID_DEVNET_MODEL_ID", B256::from(a_id).to_string())
        .deploy_env("TGRID_DEVNET_CIRCUIT_DIGEST", B256::from(a_digest).to_string())
        .deploy_env("TGRID_VERIFIER_KEY", key_words)
        .deploy_env("TGRID_VERIFIER_KEY_ID", key_id);
    let devnet = tokio::task::spawn_blocking(move || Devnet::start(&config)).await.unwrap().expect("devnet");
    let d = devnet.deployment().clone();
    let url: alloy::transports::http::reqwest::Url = devnet.rpc_url().parse().unwrap();
    let wallet = |i: usize| {
        ProviderBuilder::new().wallet(EthereumWallet::from(devnet.signer(i))).connect_http(url.clone()).erased()
    };
    let admin = wallet(0);
    let (provider_key, poster_key) = (devnet.signer(1), devnet.signer(2));
    let domain = MarketDomain::of(&d);
    let token = IERC20::new(d.token, &admin);
    for who in [provider_key.address(), poster_key.address()] {
        token.transfer(who, ether(1_000)).send().await.unwrap().get_receipt().await.unwrap();
    }
    Market::new(&d, wallet(1)).stake(provider_key.address(), ether(1_000)).await.unwrap();
    let book = Market::new(&d, wallet(2)).open_book(poster_key.address(), 5, ether(10)).await.unwrap().value;
    let now = admin.get_block_by_number(alloy::eips::BlockNumberOrTag::Latest).await.unwrap().unwrap().header.timestamp;

    // Three results for model A and two for model B, proven by the provider for signed orders.
    let submission = |model: &QuantModel, seed: u64, key: &PrivateKeySigner| {
        let prover = TaskProver::new(model.clone(), SegmentPlan::default()).unwrap();
        let input = random_input(seed, model.input_len());
        let order = open_order(poster_key.address(), model.model_id(), &input, book, seed as u32, now + 86_400);
        let signed = SignedOrder::sign(order, &poster_key, &domain).unwrap();
        let task = signed.hash(&domain);
        let (proof, trace, _) = prover.prove(&input, task.0, key.address().0 .0, &mut |_, _, _| {}).unwrap();
        let mut body = json!({
            "order": signed,
            "acceptance": Acceptance::sign(task, key, &domain).unwrap(),
            "output": trace.output(),
            "proof": format!("0x{}", hex::encode(proof.to_bytes())),
        });
        sign_delivery(&mut body, key, &domain);
        Submission { task, body }
    };
    let first = submission(&model_a, 0, &provider_key);
    let first_b = submission(&model_a, 2, &provider_key);
    let second = submission(&model_a, 1, &provider_key);
    let of_model_b = submission(&model_b, 3, &provider_key);
    let of_model_b_late = submission(&model_b, 4, &provider_key);

    // Governance, as a passed vote executes it: the timelock calls the registry or the market.
    let governance = |to: Address, calldata: Vec<u8>| as_timelock(&admin, d.timelock, to, calldata);
    let register = |id: [u8; 32], digest: [u8; 32], root: [u8; 32]| {
        registerModelCall {
            modelId: B256::from(id),
            circuitDigest: B256::from(digest),
            uri: "ipfs://model".into(),
            newRoot: B256::from(root),
        }
        .abi_encode()
    };

    let proxy = fault_proxy::FaultProxy::start(&devnet.rpc_url());
    let env: Vec<(String, String)> = [
        ("RPC_URL", proxy.url.clone()),
        ("DEPLOYMENT", devnet.deployment_path().display().to_string()),
        ("REGISTRY", dir.join("registry.json").display().to_string()),
        ("DATA_DIR", dir.join("sequencer").display().to_string()),
        ("LISTEN", "127.0.0.1:0".into()),
        // Batches of up to 4 that never close by age: only the market's cap (2, then 1) closes them.
        ("MAX_BATCH_TASKS", "4".into()),
        ("MAX_BATCH_AGE_SECS", "3600".into()),
        ("WRAP_FRI", "insecure-test".into()),
        ("INSECURE_DEVNET_KEY", "true".into()),
        ("INSECURE_DEVNET_KEYS_DIR", keys_dir().display().to_string()),
        ("POLL_INTERVAL_MS", "100".into()),
        ("REGISTRY_POLL_SECS", "1".into()),
    ]
    .into_iter()
    .map(|(k, v)| (format!("TGRID_SEQUENCER_{k}"), v.to_string()))
    .collect();
    let set_max_batch_size =
        |n: u64| setMaxBatchSizeCall { maxBatchSize: alloy::primitives::U256::from(n) }.abi_encode();
    governance(d.market, set_max_batch_size(2)).await;
    let http = Http::new();
    let seq = Sequencer::start(&env);
    let api = seq.url.clone();
    let status = wait_for_sequencer_status(&http, &api, "pipeline ready", |s| s["pipeline_ready"] == true).await;
    assert_eq!(status["registry_root"], B256::from(root_1).to_string());

    // 1. While the first two results' batch (full at the market's cap of 2) is proving under
    // root 1, one vote registers model B and another lowers the cap to 1. The proven batch is
    // too large to settle: it is given up and its tasks, re-queued, settle one per batch under
    // root 1 (in its grace period).
    for s in [&first, &first_b] {
        let (code, v) = post(&http, &api, s.body.to_string()).await;
        assert_eq!(code, 202, "{v}");
    }
    wait_for_status(&http, &api, first.task, "proving", Duration::from_secs(300)).await;
    governance(d.registry, register(b_id, b_digest, root_2)).await;
    governance(d.market, set_max_batch_size(1)).await;
    // The registry file still lists root 1: the operator sees why new batches lag behind.
    let status =
        wait_for_sequencer_status(&http, &api, "stale registry reported", |s| s["registry_stale"].is_string()).await;
    assert!(status["registry_stale"].as_str().unwrap().contains("registry add"), "{status}");
    let metrics = http.get(format!("{api}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.lines().any(|l| l == "tgrid_sequencer_registry_stale 1"), "{metrics}");
    for s in [&first, &first_b] {
        let settled = wait_for_status(&http, &api, s.task, "settled", Duration::from_secs(600)).await;
        assert!(settled.get("reason").is_none(), "paid: {settled}");
    }
    let (_, status) = get(&http, &format!("{api}/v1/status")).await;
    assert!(
        status["failed"].as_array().unwrap().iter().any(|f| f["reason"].as_str().unwrap().contains("BatchTooLarge")),
        "the batch proven before the cap was lowered was given up: {status}"
    );

    // The operator lists the new model: new batches move to root 2.
    install("registry-2.json");
    let status = wait_for_sequencer_status(&http, &api, "the move to root 2", |s| {
        s["registry_root"] == B256::from(root_2).to_string() && s["registry_stale"].is_null()
    })
    .await;
    // What is left to report is the batch given up in step 1, not the registry.
    let problems = status["problems"].as_array().unwrap();
    assert!(problems.iter().all(|p| p.as_str().unwrap().contains("BatchTooLarge")), "{status}");

    // 2. The second result's batch proves under root 2; meanwhile governance registers model
    // C (root 3, listed by the file beforehand) and revokes root 2. The batch can no longer
    // settle: it is given up, its task re-proven under root 3, and settles.
    install("registry-3.json");
    let (code, v) = post(&http, &api, second.body.to_string()).await;
    assert_eq!(code, 202, "{v}");
    wait_for_status(&http, &api, second.task, "proving", Duration::from_secs(300)).await;
    governance(d.registry, register(c_id, c_digest, root_3)).await;
    governance(d.registry, revokeRootCall { root: B256::from(root_2) }.abi_encode()).await;
    // And the node falters: the next reads (registry root, root status, nonces) and receipts
    // fail before they succeed.
    proxy.fail("eth_call", 3);
    proxy.fail("eth_getTransactionReceipt", 2);

    // 3. While the second result is re-proven under root 3 (batch 5), a result of model B arrives
    // and waits in the queue; governance then deregisters B (root 4 = {A, C}, which the file
    // lists). That result was acknowledged under root 3, which the market accepts through its
    // grace period: it is batched under root 3 before new batches move to root 4, and settles.
    let started = Instant::now();
    loop {
        let (_, batch) = get(&http, &format!("{api}/v1/batches/5")).await;
        if batch["status"] == "proving" {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(600), "batch 5 never proved: {batch}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (code, v) = post(&http, &api, of_model_b.body.to_string()).await;
    assert_eq!(code, 202, "{v}");
    let deregister = deregisterModelCall { modelId: B256::from(b_id), newRoot: B256::from(root_4) };
    governance(d.registry, deregister.abi_encode()).await;
    install("registry-4.json");
    for s in [&second, &of_model_b] {
        let settled = wait_for_status(&http, &api, s.task, "settled", Duration::from_secs(900)).await;
        assert!(settled.get("reason").is_none(), "paid: {settled}");
    }
    let status = wait_for_sequencer_status(&http, &api, "the move to root 4", |s| {
        s["registry_root"] == B256::from(root_4).to_string()
    })
    .await;
    assert!(
        status["failed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["reason"].as_str().unwrap().contains("no longer accepted")),
        "the batch under the revoked root was given up: {status}"
    );
    let metrics = http.get(format!("{api}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.lines().any(|l| l == "tgrid_sequencer_registry_reloads_total 3"), "{metrics}");
    // A result of B sent after the move, and after a restart, is checked and batched under
    // root 3 too, while the market accepts it.
    seq.kill();
    let seq = Sequencer::start(&env);
    let api = seq.url.clone();
    let (code, v) = post(&http, &api, of_model_b_late.body.to_string()).await;
    assert_eq!(code, 202, "{v}");
    let settled = wait_for_status(&http, &api, of_model_b_late.task, "settled", Duration::from_secs(600)).await;
    assert!(settled.get("reason").is_none(), "paid: {settled}");
    let (_, status) = get(&http, &format!("{api}/v1/status")).await;
    assert_eq!(status["registry_root"], B256::from(root_4).to_string(), "new batches stay on root 4: {status}");
    assert_eq!((proxy.injected("eth_call"), proxy.injected("eth_getTransactionReceipt")), (3, 2));

    // Exactly once, each under the root it was proven for: root 1 (grace) twice, then root 3
    // three times (the last two in its grace, for model B).
    let filter = alloy::rpc::types::Filter::new()
        .address(d.market)
        .event_signature(ITaskMarket::BatchSettled::SIGNATURE_HASH)
        .from_block(0);
    let roots: Vec<B256> = admin
        .get_logs(&filter)
        .await
        .unwrap()
        .iter()
        .map(|l| ITaskMarket::BatchSettled::decode_log(&l.inner).unwrap().registryRoot)
        .collect();
    assert_eq!(roots, [root_1, root_1, root_3, root_3, root_3].map(B256::from));
    let market = Market::new(&d, admin.clone());
    assert_eq!(market.earner(provider_key.address()).await.unwrap().tasksSettled, 5);
    let mut sizes = Vec::new();
    for batch in 1..=7 {
        let (_, view) = get(&http, &format!("{api}/v1/batches/{batch}")).await;
        sizes.push(view["tasks"].as_array().map(Vec::len).unwrap_or_default());
    }
    assert_eq!(sizes, [2, 1, 1, 1, 1, 1, 1], "each batch capped by the market's limit when it opened");
    drop(seq);
}
