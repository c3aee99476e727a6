//! Every role of the task market end to end on a real anvil with the real contracts, through the
//! real binaries: the model owner compiles a bundled model, the DAO registers it and changes a
//! market parameter by vote, two posters fund deposit books and sign orders that travel through
//! the sequencer's relay, two provider daemons accept by signature, prove and submit (provider 2
//! with its tasks' leaf proofs, which the sequencer adopts), a worker on the sequencer's job queue
//! proves the other leaves, the chunks and merges (the open batch's complete subtrees are handed to it
//! before the batch closes) and the Groth16 wrap, the
//! sequencer settles all five orders (one of them private: input sealed to its provider, output
//! encrypted to its poster by the zero-knowledge proof) in one transaction, the posters check every output
//! against its settled commitment (and catch a tampered one), an auditor re-verifies the batch
//! from calldata; a private order sealed to a key its provider does not hold is never accepted; then, with the sequencer stopped after acknowledging a result, its provider settles
//! it itself before the deadline (reusing the leaf proof it proved with the result) and cannot
//! be disputed; and a provider that accepted an order
//! and never delivered is disputed and slashed on the terms it signed.
//!
//! The wrap uses the INSECURE test FRI parameters and the INSECURE devnet Groth16 key (cached in
//! target/tgrid-test-keys, shared with the sequencer's tests). Provider 1 reaches the node
//! through the sequencer tests' fault-injecting proxy, which fails some of its calls.

// The sequencer tests' proxy, shared rather than copied.
use crate::fault_proxy;
// The sequencer tests' NATS broker, for the aggregation workers.
use crate::nats;
use crate::support;

use std::time::{Duration, Instant};

use alloy::primitives::{Address, B256, U256};
use alloy::providers::{Provider, ProviderBuilder};
use serde_json::Value;
use tgrid_chain::bindings::IERC20;
use tgrid_chain::market::{Acceptance, Market, MarketDomain, RelayClient, SignedOrder, SignedReceipt};

use support::{
    chain_now, count, events_until, http_get, json, pass_proposal, poster_env, provider_env, repo_root, run,
    sequencer_env, start_devnet, Service,
};

#[tokio::test(flavor = "multi_thread")]
async fn the_task_market_end_to_end_on_anvil() {
    let started = Instant::now();
    let work = tempfile::tempdir().unwrap();
    let w = |name: &str| work.path().join(name).display().to_string();
    let keys = repo_root().join("target/tgrid-test-keys");

    // Model owner: compile the bundled MLP and list it in a registry.
    let compiled = json(
        "tgrid-prover",
        &[
            "compile",
            "fixtures/mlp/model.onnx",
            "--calibration",
            "fixtures/mlp/calibration.json",
            "--out",
            &w("mlp.tgm"),
        ],
        &[],
    );
    let model_id = compiled["model_id"].as_str().unwrap().to_string();
    json("tgrid-sequencer", &["registry", "add", &w("mlp.tgm"), "--registry", &w("registry.json")], &[]);
    // Its private mode too: another circuit, under the model's private id.
    let private = json(
        "tgrid-sequencer",
        &["registry", "add", &w("mlp.tgm"), "--private", "--registry", &w("registry.json")],
        &[],
    );
    let private_model_id = private["added"]["model_id"].as_str().unwrap().to_string();
    assert_ne!(private_model_id, model_id.to_lowercase());

    // Devnet: the verifier is a Groth16KeyedVerifier for the test-FRI devnet key.
    let devnet = start_devnet(&keys, &[("TGRID_DEVNET_MODEL_ID", B256::ZERO.to_string())]).await;
    let d = devnet.deployment().clone();
    let domain = MarketDomain::of(&d);
    let rpc = devnet.rpc_url();
    let deployment = devnet.deployment_path().display().to_string();
    // `tgrid` signs as anvil account 0 (the token holder, poster A) unless told otherwise; its
    // signed orders and poster state live in the test's directory.
    let env = poster_env(&devnet, w("poster-state"));
    let with_key = |i: usize| {
        let mut e = env.to_vec();
        e.push(("TGRID_PRIVATE_KEY", B256::from(devnet.signer(i).to_bytes()).to_string()));
        e
    };
    let url: alloy::transports::http::reqwest::Url = rpc.parse().unwrap();
    let reader = ProviderBuilder::new().connect_http(url.clone()).erased();
    let market = Market::new(&d, reader.clone());

    // DAO: delegate, register the model, and change a market parameter, each by a vote.
    json("tgrid", &["dao", "delegate"], &env);
    json("tgrid", &["devnet", "advance-time", "1"], &env);
    let registration = pass_proposal(&env, &["register-models", "--registry", &w("registry.json")]);
    assert!(registration["description"].as_str().unwrap().contains("mlp"), "{registration}");
    pass_proposal(&env, &["max-batch-size", "32"]);
    assert_eq!(market.parameters().await.unwrap().maxBatchSize, U256::from(32u64));
    let listed = json("tgrid-verifier", &["registry", "--rpc", &rpc, "--deployment", &deployment], &[]);
    let ids: Vec<&str> = listed["models"].as_array().unwrap().iter().map(|m| m["model_id"].as_str().unwrap()).collect();
    assert!(ids.contains(&model_id.to_lowercase().as_str()) && ids.contains(&private_model_id.as_str()), "{listed}");

    // Accounts: posters A (anvil 0) and B (anvil 3), provider daemons P1 (anvil 1) and P2
    // (anvil 2), and a provider L (anvil 4) that will accept an order and never deliver.
    let (p1, p2, poster_b, lazy) = (devnet.address(1), devnet.address(2), devnet.address(3), devnet.address(4));
    for (who, amount) in [(p1, "2000"), (p2, "2000"), (poster_b, "500"), (lazy, "500")] {
        json("tgrid", &["token", "transfer", &who.to_string(), amount], &env);
    }
    // Each poster funds one book of ten orders of at most 10 TGRID.
    for e in [env.to_vec(), with_key(3)] {
        let book = json("tgrid", &["deposit", "add", "100", "--per-order", "10"], &e);
        assert_eq!((book["book"].as_u64(), book["capacity"].as_u64()), (Some(0), Some(10)), "{book}");
    }
    json("tgrid", &["stake", "add", "500"], &with_key(4));

    // The sequencer (relay included), one worker on its job queue (a real NATS JetStream
    // broker) proving the leaves, merges and the Groth16 wrap, and two provider daemons.
    let broker = nats::Broker::start(&work.path().join("jetstream"));
    let _aggregation_worker = Service::start(
        "tgrid-sequencer",
        &[
            "--json",
            "worker",
            "--queue",
            &broker.url,
            "--name",
            "e2e-worker",
            "--wrap-insecure-devnet-key",
            "--wrap-fri",
            "insecure-test",
            "--keys-dir",
            keys.to_str().unwrap(),
        ],
        &[],
        &work.path().join("worker.log"),
    );
    let seq_env = sequencer_env(
        &keys,
        vec![
            ("RPC_URL", rpc.clone()),
            ("DEPLOYMENT", deployment.clone()),
            ("REGISTRY", w("registry.json")),
            ("DATA_DIR", w("sequencer")),
            ("MAX_BATCH_TASKS", "5".into()),
            ("JOB_QUEUE", broker.url.clone()),
            ("WRAP_JOBS", "true".into()),
        ],
    );
    let sequencer = Service::start("tgrid-sequencer", &["run"], &seq_env, &work.path().join("sequencer.log"));
    let ready = sequencer.next_json(Duration::from_secs(120), "the sequencer's ready line");
    let seq_url = format!("http://{}", ready["listening"].as_str().unwrap());
    // Provider 1 reaches the node through a proxy that fails chosen calls on demand; provider 2
    // reaches the sequencer through a relay that records its acceptances but answers each with
    // a 503: P2 must treat them as binding and deliver (or be slashed on them).
    let proxy = fault_proxy::FaultProxy::start(&rpc);
    let lying_relay = support::lying_relay::LyingRelay::start(&seq_url);
    let daemon = |i: usize| {
        let env = provider_env(
            &keys,
            vec![
                ("RPC_URL", if i == 1 { proxy.url.clone() } else { rpc.clone() }),
                ("DEPLOYMENT", deployment.clone()),
                ("PRIVATE_KEY", B256::from(devnet.signer(i).to_bytes()).to_string()),
                ("MODELS", w("mlp.tgm")),
                ("INPUTS_DIR", w("inputs")),
                ("SEQUENCER_URL", if i == 2 { lying_relay.url.clone() } else { seq_url.clone() }),
                ("DATA_DIR", w(&format!("provider-{i}"))),
                // P2 proves its tasks' leaves itself; the sequencer's worker proves only P1's.
                ("PROVE_LEAVES", (i == 2).to_string()),
            ],
        );
        let service =
            Service::start("tgrid-prover", &["--json", "run"], &env, &work.path().join(format!("provider-{i}.log")));
        let staked = service.next_json(Duration::from_secs(120), "the provider's first line");
        assert_eq!(staked["event"], "staked", "{staked}");
        let ready = service.next_json(Duration::from_secs(60), "the provider's ready line");
        assert_eq!((ready["event"].as_str(), ready["bonded"].as_str()), (Some("ready"), Some("1000")), "{ready}");
        service
    };
    let (d1, d2) = (daemon(1), daemon(2));
    // Each announces its sealing key on the relay before it looks for orders.
    for (service, who) in [(&d1, p1), (&d2, p2)] {
        let announced = events_until(service, Duration::from_secs(60), "the sealing key announced", |e| {
            count(e, "sealing_key") == 1
        });
        assert!(announced.iter().all(|e| e["event"] == "sealing_key"), "{announced:?}");
        let relay = RelayClient::new(&seq_url, Duration::from_secs(30)).unwrap();
        let key = relay.sealing_key(who).await.unwrap();
        key.verify(&domain).unwrap();
        assert_eq!(key.public_key.to_string(), announced[0]["sealing_key"].as_str().unwrap());
    }
    // From now on provider 1's node falters: reads, the clock and receipts fail a few times.
    // Each costs a round, never the daemon or a task.
    proxy.fail("eth_call", 4);
    proxy.fail("eth_getBlockByNumber", 3);

    // Inputs: test digits from the calibration set.
    let calibration: Value =
        serde_json::from_slice(&std::fs::read(repo_root().join("fixtures/mlp/calibration.json")).unwrap()).unwrap();
    let input = |i: usize| {
        let path = w(&format!("input-{i}.json"));
        std::fs::write(&path, serde_json::json!({"input_data": [calibration["input_data"][i]]}).to_string()).unwrap();
        path
    };
    let post = |e: &[(&str, String)], i: usize, provider: Address, deadline_in: &str, extra: &[&str]| {
        let (model, inputs, input_path) = (w("mlp.tgm"), w("inputs"), input(i));
        let mut args = vec![
            "order",
            "post",
            "--model",
            &model,
            "--payment",
            "10",
            "--deadline-in",
            deadline_in,
            "--inputs-dir",
            &inputs,
            "--relay",
            &seq_url,
        ];
        let provider = provider.to_string();
        args.extend(["--input", &input_path, "--provider", &provider]);
        args.extend_from_slice(extra);
        json("tgrid", &args, e)["order_hash"].as_str().unwrap().to_string()
    };

    // 0. A private order for P1 sealed to a key P1 does not hold (a poster's mistake, or a
    //    poster hoping to get P1 slashed): P1 cannot open the input, so it never accepts.
    let stray_key = format!("0x{}", "09".repeat(32));
    let unopenable = post(&env, 6, p1, "3600", &["--private", "--provider-sealing-key", &stray_key]);
    // 1. Five orders, two per poster to each provider (each names its provider) and one private
    //    order of poster A to P2, settle in one batch of the sequencer: one transaction.
    let private_input = json("tgrid-prover", &["infer", &w("mlp.tgm"), "--input", &input(7)], &[]);
    let orders = [
        post(&env, 0, p1, "3600", &[]),
        post(&env, 1, p2, "3600", &[]),
        post(&with_key(3), 2, p1, "3600", &[]),
        post(&with_key(3), 3, p2, "3600", &[]),
        post(&env, 7, p2, "3600", &["--private"]),
    ];
    assert!(
        std::path::Path::new(&w(&format!("inputs/{}.tgs", order_input_commitment(&work, &orders[4])))).exists(),
        "the private input is published sealed"
    );
    for (service, name, n) in [(&d1, "P1", 2), (&d2, "P2", 3)] {
        let events = events_until(service, Duration::from_secs(1200), &format!("{name}'s orders settling"), |e| {
            count(e, "settled") == n
        });
        assert_eq!(
            (count(&events, "accepted"), count(&events, "proven"), count(&events, "submitted")),
            (n, n, n),
            "{events:?}"
        );
        if name == "P1" {
            let skipped = events.iter().find(|e| e["event"] == "skipped" && e["task_id"] == unopenable.as_str());
            let reason = skipped.and_then(|e| e["reason"].as_str()).unwrap_or_default();
            assert!(reason.contains("does not open"), "{events:?}");
        }
        for e in events.iter().filter(|e| e["event"] == "proven") {
            assert_eq!(e["leaf_seconds"].is_f64(), name == "P2", "{e}");
        }
        for e in events.iter().filter(|e| e["event"] == "submitted") {
            let leaf = e["leaf_proof"].as_str();
            assert_eq!(leaf, (name == "P2").then_some("adopted"), "P2's leaf proofs are adopted: {e}");
            // Each acknowledgement came with the sequencer's (anvil 0's) signed receipt.
            let receipt: SignedReceipt = serde_json::from_value(e["receipt"].clone()).expect("a receipt");
            receipt.verify(&domain).unwrap();
            assert_eq!(receipt.sequencer, devnet.address(0), "{e}");
            assert_eq!(receipt.receipt.order_hash.to_string(), e["task_id"].as_str().unwrap(), "{e}");
        }
        for e in events.iter().filter(|e| e["event"] == "settled") {
            // 10 TGRID less the 1 % protocol fee, settled by the sequencer.
            assert_eq!(
                (e["paid"].as_bool(), e["pay"].as_str(), e["self_settled"].as_bool()),
                (Some(true), Some("9.9"), Some(false)),
                "{e}"
            );
        }
    }
    assert_eq!(
        (proxy.injected("eth_call"), proxy.injected("eth_getBlockByNumber")),
        (4, 3),
        "provider 1's node faults were all hit, and ridden out"
    );
    assert_eq!(lying_relay.denied(), 3, "each of P2's acceptances was recorded and denied once");
    // The batch's 2 chunk proofs (5 tasks: 4 + 1), its merge and its wrap were proven by the
    // worker, through the queue, and so were P1's 2 leaves; P2's 3 leaves (one of a private task)
    // came with its results.
    let metrics = http_get(&format!("{seq_url}/metrics")).await;
    let metric = |name: &str| -> f64 {
        let line = metrics.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name} in\n{metrics}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert_eq!(metric("tgrid_sequencer_job_seconds_count{kind=\"leaf\"}"), 2.0);
    assert_eq!(metric("tgrid_sequencer_leaves_total{outcome=\"adopted\"}"), 3.0);
    assert_eq!(metric("tgrid_sequencer_leaves_total{outcome=\"used\"}"), 3.0);
    assert_eq!(metric("tgrid_sequencer_leaves_total{outcome=\"proven\"}"), 2.0);
    assert_eq!(metric("tgrid_sequencer_job_seconds_count{kind=\"chunk\"}"), 2.0);
    assert_eq!(metric("tgrid_sequencer_job_seconds_count{kind=\"merge\"}"), 1.0);
    assert_eq!(metric("tgrid_sequencer_job_seconds_count{kind=\"wrap\"}"), 1.0);
    assert_eq!(metric("tgrid_sequencer_jobs_in_flight"), 0.0);
    // Before the batch closed at five tasks, its complete aligned block of a chunk or more (tasks
    // 0..4) was handed to the worker; whether it was proven by the close depends on timing, it
    // may not fail.
    let log = std::fs::read_to_string(work.path().join("sequencer.log")).unwrap();
    assert_eq!(log.matches("handing a complete subtree of the open batch to the workers").count(), 1, "{log}");
    assert!(!metrics.contains("tgrid_sequencer_subtrees_ahead_total{outcome=\"failed\"}"), "{metrics}");
    assert_eq!(metric("tgrid_sequencer_job_workers"), 1.0);
    let mut txs = std::collections::BTreeSet::new();
    let mut batch_roots = std::collections::BTreeSet::new();
    for (i, order) in orders.iter().enumerate() {
        let poster_env = if i < 2 { env.to_vec() } else { with_key(3) };
        let out_file = w(&format!("result-{i}.json"));
        let result = json(
            "tgrid",
            &[
                "order",
                "result",
                order,
                "--relay",
                &seq_url,
                "--model",
                &w("mlp.tgm"),
                "--out",
                &out_file,
                "--wait",
                "60",
            ],
            &poster_env,
        );
        assert_eq!(result["valid"], true, "{result}");
        if i == 4 {
            // The private order: the ciphertext the proof committed to, checked against the settled
            // commitment and decrypted with the output key poster A kept when it posted.
            assert_eq!(result["privacy"], "private", "{result}");
            assert_eq!(result["output_int8"], private_input["output_int8"], "order {order}");
            // The poster can show the result file (output and its key) to an auditor, who checks
            // it against the settled commitment; another key does not match.
            let audit_args = |file: &str| -> Vec<String> {
                ["task", order, "--rpc", &rpc, "--deployment", &deployment, "--relay", &seq_url, "--output", file]
                    .iter()
                    .map(|s| s.to_string())
                    .collect()
            };
            let args = audit_args(&out_file);
            let audit = json("tgrid-verifier", &args.iter().map(String::as_str).collect::<Vec<_>>(), &[]);
            assert_eq!(
                (audit["status"].as_str(), audit["output_matches"].as_bool()),
                (Some("settled"), Some(true)),
                "{audit}"
            );
            txs.insert(audit["tx"].as_str().unwrap_or_default().to_string());
            let mut rekeyed = result.clone();
            rekeyed["output_key"] = Value::from(format!("0x{}", "00".repeat(31) + "01"));
            std::fs::write(w("rekeyed.json"), rekeyed.to_string()).unwrap();
            let args = audit_args(&w("rekeyed.json"));
            let refused = run("tgrid-verifier", &args.iter().map(String::as_str).collect::<Vec<_>>(), &[]);
            assert_eq!(refused.status.code(), Some(1), "{}", String::from_utf8_lossy(&refused.stdout));
            // The poster's own tool checks the same file (encrypted again under the file's key),
            // and the file's key is the one tried: the rekeyed file does not match.
            let rekeyed_file = w("rekeyed.json");
            let recheck =
                |file| ["order", "result", order.as_str(), "--relay", seq_url.as_str(), "--output-file", file];
            let rechecked = json("tgrid", &recheck(out_file.as_str()), &poster_env);
            assert_eq!((&rechecked["valid"], &rechecked["privacy"]), (&Value::from(true), &Value::from("private")));
            assert_eq!(rechecked["output_int8"], private_input["output_int8"]);
            let refused = run("tgrid", &recheck(rekeyed_file.as_str()), &poster_env);
            let stderr = String::from_utf8_lossy(&refused.stderr);
            assert_eq!(refused.status.code(), Some(1), "{stderr}");
            assert!(stderr.contains("encrypted under the order's output key, does NOT match"), "{stderr}");
            continue;
        }
        assert_eq!(result["privacy"], "public", "{result}");
        let inferred = json("tgrid-prover", &["infer", &w("mlp.tgm"), "--input", &input(i)], &[]);
        assert_eq!(result["output_int8"], inferred["output_int8"], "order {order}");
        let audit = json(
            "tgrid-verifier",
            &["task", order, "--rpc", &rpc, "--deployment", &deployment, "--relay", &seq_url, "--output", &out_file],
            &[],
        );
        assert_eq!(
            (audit["status"].as_str(), audit["output_matches"].as_bool()),
            (Some("settled"), Some(true)),
            "{audit}"
        );
        txs.insert(audit["tx"].as_str().unwrap_or_default().to_string());
        batch_roots.insert(audit["batch_root"].as_str().unwrap().to_string());
    }
    assert_eq!(txs.len(), 1, "five orders from two posters to two providers, one transaction: {txs:?}");
    // The sequencer serves the private output only encrypted, and holds no plaintext of it: its
    // bytes appear nowhere in the sequencer's store, where a public output's do.
    let relay = RelayClient::new(&seq_url, Duration::from_secs(30)).unwrap();
    let served = relay.output(orders[4].parse().unwrap()).await.unwrap();
    assert!(served.output.is_empty() && served.encrypted_output.is_some(), "{served:?}");
    let bytes_of =
        |v: &Value| -> Vec<u8> { v.as_array().unwrap().iter().map(|x| x.as_i64().unwrap() as i8 as u8).collect() };
    let store = std::fs::read_dir(w("sequencer"))
        .unwrap()
        .flat_map(|e| std::fs::read(e.unwrap().path()).unwrap_or_default())
        .collect::<Vec<u8>>();
    let inferred = json("tgrid-prover", &["infer", &w("mlp.tgm"), "--input", &input(0)], &[]);
    let holds = |needle: &[u8]| store.windows(needle.len()).any(|w| w == needle);
    assert!(holds(&bytes_of(&inferred["output_int8"])), "the check can see a public output");
    assert!(!holds(&bytes_of(&private_input["output_int8"])), "the private output is in the sequencer's store");
    // A tampered output is caught by the poster's check and by the auditor's.
    let mut tampered: Value = serde_json::from_slice(&std::fs::read(w("result-0.json")).unwrap()).unwrap();
    tampered["output_int8"][0] = Value::from(tampered["output_int8"][0].as_i64().unwrap() ^ 1);
    std::fs::write(w("tampered.json"), tampered.to_string()).unwrap();
    let check = run("tgrid", &["order", "result", &orders[0], "--output-file", &w("tampered.json")], &env);
    assert_eq!(check.status.code(), Some(1), "{}", String::from_utf8_lossy(&check.stderr));
    let audit = run(
        "tgrid-verifier",
        &[
            "task",
            &orders[0],
            "--rpc",
            &rpc,
            "--deployment",
            &deployment,
            "--relay",
            &seq_url,
            "--output",
            &w("tampered.json"),
        ],
        &[],
    );
    assert_eq!(audit.status.code(), Some(1));
    // The auditor re-verifies the batch from its calldata, with the real Groth16 proof.
    let root = batch_roots.into_iter().next().unwrap();
    let batch = json(
        "tgrid-verifier",
        &["batch", &root, "--rpc", &rpc, "--deployment", &deployment, "--keys-dir", keys.to_str().unwrap()],
        &[],
    );
    assert_eq!((batch["valid"].as_bool(), batch["count"].as_u64()), (Some(true), Some(5)), "{batch}");
    assert_eq!(batch["insecure_key"], true);
    // The daemons withdraw their earnings: 9.9 TGRID per order.
    for (who, n) in [(p1, 2u32), (p2, 3)] {
        let mut paid = U256::ZERO;
        for _ in 0..100 {
            let e = market.earner(who).await.unwrap();
            if e.tasksSettled == n && e.earnings.is_zero() {
                paid = U256::from(n) * tgrid_chain::parse_tgrid("9.9").unwrap();
                break;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        assert!(!paid.is_zero(), "{who} did not withdraw its earnings");
    }

    // 3 (set up now, disputed below). Provider L accepts an order of poster B naming it, and never
    // delivers: its acceptance is recorded in the relay.
    let lazy_order = post(
        &with_key(3),
        5,
        lazy,
        "1300",
        &["--collateral", "40", "--slash-bps", "5000", "--poster-share-bps", "5000"],
    );
    let relay = RelayClient::new(&seq_url, Duration::from_secs(30)).unwrap();
    let acceptance = Acceptance::sign(lazy_order.parse().unwrap(), &devnet.signer(4), &domain).unwrap();
    relay.accept(&acceptance).await.unwrap();

    // 2. The sequencer acknowledges P2's result and then stops; near the deadline P2 settles the
    //    order itself, and cannot be disputed for it. P2 proves its leaves (`prove_leaves`): its
    //    self-settlement takes that leaf as proven rather than proving it again.
    let own = post(&env, 4, p2, "3000", &[]);
    events_until(&d2, Duration::from_secs(600), "P2 submitting the order", |e| {
        e.iter().any(|e| e["event"] == "submitted" && e["task_id"] == own.as_str())
    });
    drop(sequencer);
    json("tgrid", &["devnet", "advance-time", "2200"], &env);
    let events = events_until(&d2, Duration::from_secs(1200), "P2 settling its order itself", |e| {
        e.iter().any(|e| e["event"] == "settled" && e["task_id"] == own.as_str())
    });
    let self_settled = events.iter().find(|e| e["event"] == "self_settled").expect("a self-settlement");
    eprintln!("self-settlement (dev build, test FRI): {self_settled}");
    assert_eq!(self_settled["leaves_reused"], 1, "{self_settled}");
    let settled = events.iter().find(|e| e["event"] == "settled" && e["task_id"] == own.as_str()).unwrap();
    assert_eq!((settled["self_settled"].as_bool(), settled["paid"].as_bool()), (Some(true), Some(true)), "{settled}");
    let receipt =
        reader.get_transaction_receipt(self_settled["tx"].as_str().unwrap().parse().unwrap()).await.unwrap().unwrap();
    assert_eq!(receipt.from, p2, "P2 sent its own settlement");
    let order_file = work.path().join("poster-state/orders").join(format!("{own}.json"));
    let signed: SignedOrder = serde_json::from_slice(&std::fs::read(&order_file).unwrap()).unwrap();
    assert!(chain_now(&reader).await < signed.order.deadline, "settled before the deadline");
    json("tgrid", &["devnet", "advance-time", "1000"], &env);
    let p2_acceptance = w("p2-acceptance.json");
    std::fs::write(
        &p2_acceptance,
        serde_json::to_vec(&Acceptance::sign(own.parse().unwrap(), &devnet.signer(2), &domain).unwrap()).unwrap(),
    )
    .unwrap();
    let refused = run("tgrid", &["dispute", &own, "--acceptance", &p2_acceptance], &env);
    assert_ne!(refused.status.code(), Some(0), "a settled order cannot be disputed");
    assert_eq!(market.earner(p2).await.unwrap().tasksSlashed, 0);
    drop(d1);
    drop(d2);

    // 3. L's order passed its deadline unsettled: poster B disputes it with L's signed acceptance.
    //    L loses 50 % of the 40 TGRID collateral it signed for; B gets half of that, capped by the
    //    10 TGRID payment.
    let lazy_acceptance = w("lazy-acceptance.json");
    std::fs::write(&lazy_acceptance, serde_json::to_vec(&acceptance).unwrap()).unwrap();
    let before = IERC20::new(d.token, &reader).balanceOf(poster_b).call().await.unwrap();
    let disputed = json("tgrid", &["dispute", &lazy_order, "--acceptance", &lazy_acceptance], &with_key(3));
    assert_eq!((disputed["slashed"].as_str(), disputed["to_poster"].as_str()), (Some("20"), Some("10")), "{disputed}");
    assert_eq!(
        IERC20::new(d.token, &reader).balanceOf(poster_b).call().await.unwrap(),
        before + tgrid_chain::parse_tgrid("10").unwrap()
    );
    assert_eq!(market.bond(lazy).await.unwrap().bonded, alloy::primitives::Uint::from(480u128 * 10u128.pow(18)));
    assert_eq!(market.earner(lazy).await.unwrap().tasksSlashed, 1);
    let again = run("tgrid", &["dispute", &lazy_order, "--acceptance", &lazy_acceptance], &with_key(3));
    assert_eq!(again.status.code(), Some(1), "an order is disputed once");
    let status = json("tgrid", &["order", "status", &lazy_order], &with_key(3));
    assert_eq!(status["state"], "disputed", "{status}");
    eprintln!("the task market end to end: {:.0} s", started.elapsed().as_secs_f64());
}

/// The input commitment of an order the test posted (from the poster's saved order).
fn order_input_commitment(work: &tempfile::TempDir, order: &str) -> B256 {
    let file = work.path().join("poster-state/orders").join(format!("{order}.json"));
    let signed: SignedOrder = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    signed.order.input_commitment
}
