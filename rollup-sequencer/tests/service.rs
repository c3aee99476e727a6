//! `tgrid-sequencer run` against a real anvil with the real contracts: the relay lists signed
//! orders (refusing forged, equivocating or unbacked ones) and records acceptances (the first
//! provider wins; a bond too small for its acceptances is refused); providers' results are
//! checked, acknowledged, batched, proven (aggregation, wrap, Groth16) and settled on-chain by
//! the permissionless TaskMarket, each acknowledgement with the sequencer's signed receipt; a
//! provider's own leaf proof is adopted and used by the batch instead of proving it (one that is
//! not the task's is refused); bad
//! submissions (forged order or delivery signatures among them) are refused with their reason,
//! a forged flood before the rate limit, a flood of acceptances by throwaway keys by the
//! per-client limit before it reads the chain; the process is killed with SIGKILL while a
//! batch is proving, in the middle of an ingest, while a task waits in the open batch, and
//! between sending the settlement transaction and its receipt, and after each restart every
//! acknowledged result settles exactly once; a settlement reorganized away before its
//! confirmations is sent again and settles once; results for a model deregistered by
//! governance are acknowledged and settle while the old root is in its grace window; node faults (a fault-injecting RPC proxy fails
//! the gas estimate and the transaction) are retried, never dropping the batch; an account
//! without gas money holds its batch (retried, reported by /v1/status and the metrics) until it
//! is topped up.
//!
//! The wrap uses the INSECURE test FRI parameters and the INSECURE devnet Groth16 key (cached in
//! target/tgrid-test-keys), and the devnet's verifier is a Groth16KeyedVerifier for that key.

use std::time::{Duration, Instant};

use alloy::network::EthereumWallet;
use alloy::primitives::{Address, B256};
use alloy::providers::{Provider, ProviderBuilder};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::{SolCall, SolEvent};
use serde_json::{json, Value};
use tgrid_chain::bindings::{ITaskMarket, IERC20};
use tgrid_chain::market::{
    Acceptance, Delivery, Market, MarketDomain, Order, SealingKeyAnnouncement, SignedOrder, SignedReceipt,
};
use tgrid_chain::{advance_time, Devnet, DevnetConfig};
use tgrid_circuits::testing::{random_input, tiny_model};
use tgrid_circuits::{commit, SegmentPlan, TaskProver};
use tgrid_sequencer::service::chain::Chain;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common;
use crate::fault_proxy;

use common::*;

alloy::sol! {
    function deregisterModel(bytes32 modelId, bytes32 newRoot);
}

/// Announces a 2 MiB body (over the 1 MiB limit) and reads the answer without sending it: the
/// service must refuse from the length alone rather than buffer the body.
fn oversized_post(api: &str) -> u16 {
    use std::io::{Read, Write};
    let addr = api.trim_start_matches("http://");
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        tcp,
        "POST /v1/results HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{{",
        2 << 20
    )
    .unwrap();
    let mut head = [0u8; 12];
    tcp.read_exact(&mut head).unwrap();
    std::str::from_utf8(&head[9..12]).unwrap().parse().unwrap()
}

/// Sends the headers and the first half of a submission and gives the service 300 ms to read
/// them; the connection is returned open, the request unfinished.
fn half_sent_post(api: &str, body: &str) -> std::net::TcpStream {
    use std::io::Write;
    let addr = api.trim_start_matches("http://");
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    write!(
        tcp,
        "POST /v1/results HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    tcp.write_all(&body.as_bytes()[..body.len() / 2]).unwrap();
    tcp.flush().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    tcp
}

fn admin_address(devnet: &Devnet) -> Address {
    devnet.address(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn settles_results_on_anvil_refuses_bad_ones_survives_sigkill_and_reorgs() {
    let work = tempfile::tempdir().unwrap();
    let model = tiny_model(1);
    let (model_id, leaf_digest, registry_root) = write_registry(work.path(), &model);
    let (key_id, key_words) = tokio::task::spawn_blocking(wrap_key).await.unwrap();

    let config = DevnetConfig::new(repo_root())
        .deploy_env("TGRID_REGISTRY_ROOT", B256::from(registry_root).to_string())
        .deploy_env("TGRID_DEVNET_MODEL_ID", B256::from(model_id).to_string())
        .deploy_env("TGRID_DEVNET_CIRCUIT_DIGEST", B256::from(leaf_digest).to_string())
        .deploy_env("TGRID_VERIFIER_KEY", key_words)
        .deploy_env("TGRID_VERIFIER_KEY_ID", key_id.clone());
    let devnet = tokio::task::spawn_blocking(move || Devnet::start(&config)).await.unwrap().expect("devnet");
    let d = devnet.deployment().clone();
    assert_eq!(d.verifying_key_id, key_id);
    let url: alloy::transports::http::reqwest::Url = devnet.rpc_url().parse().unwrap();
    let wallet = |i: usize| {
        ProviderBuilder::new().wallet(EthereumWallet::from(devnet.signer(i))).connect_http(url.clone()).erased()
    };
    let admin = wallet(0);
    let (provider_key, poster_key, other_key) = (devnet.signer(1), devnet.signer(2), devnet.signer(3));
    let provider_addr = provider_key.address();
    let domain = MarketDomain::of(&d);

    // The provider bonds; the poster opens a deposit book of 16 orders of at most 10 TGRID.
    let token = IERC20::new(d.token, &admin);
    for who in [provider_addr, poster_key.address()] {
        token.transfer(who, ether(1_000)).send().await.unwrap().get_receipt().await.unwrap();
    }
    Market::new(&d, wallet(1)).stake(provider_addr, ether(1_000)).await.unwrap();
    let book = Market::new(&d, wallet(2)).open_book(poster_key.address(), 16, ether(10)).await.unwrap().value;

    let now = admin.get_block_by_number(alloy::eips::BlockNumberOrTag::Latest).await.unwrap().unwrap().header.timestamp;
    let order_of = |seed: u64, deadline: u64| -> (SignedOrder, Vec<i8>) {
        let input = random_input(seed, model.input_len());
        let order = open_order(poster_key.address(), model_id, &input, book, seed as u32, deadline);
        (SignedOrder::sign(order, &poster_key, &domain).unwrap(), input)
    };
    let accept =
        |signed: &SignedOrder, key: &PrivateKeySigner| Acceptance::sign(signed.hash(&domain), key, &domain).unwrap();
    let orders: Vec<(SignedOrder, Vec<i8>)> = (0..4).map(|seed| order_of(seed, now + 86_400)).collect();
    let short = order_of(10, now + 700); // expires before it is submitted
    let forged = {
        let (mut signed, input) = order_of(11, now + 86_400);
        signed.order.payment -= 1; // the poster never signed this
        (signed, input)
    };

    // The batch check reads many nonces at once: each comes back in the order asked.
    let sequencer_key = format!("0x{}", hex::encode(devnet.signer(0).to_bytes()));
    let chain = Chain::connect(&devnet.rpc_url(), d.clone(), &sequencer_key).await.unwrap();
    Market::new(&d, wallet(2)).cancel(vec![Order::nonce_of(book, 12)]).await.unwrap();
    let poster_addr = poster_key.address();
    let asked = [
        (poster_addr, Order::nonce_of(book, 1)),
        (poster_addr, Order::nonce_of(book, 12)),
        (admin_address(&devnet), 5),
    ];
    assert_eq!(chain.nonces_used(&asked).await.unwrap(), vec![false, true, false]);

    // The provider proves its orders (and a few results that must be refused).
    let prover = TaskProver::new(model.clone(), SegmentPlan::default()).unwrap();
    let prove = |signed: &SignedOrder, input: &[i8], key: &PrivateKeySigner| {
        let task = signed.hash(&domain);
        let (proof, trace, _) = prover.prove(input, task.0, key.address().0 .0, &mut |_, _, _| {}).unwrap();
        let mut body = json!({
            "order": signed,
            "acceptance": accept(signed, key),
            "output": trace.output(),
            "proof": format!("0x{}", hex::encode(proof.to_bytes())),
        });
        sign_delivery(&mut body, key, &domain);
        Submission { task, body }
    };
    let good: Vec<Submission> = orders.iter().map(|(o, input)| prove(o, input, &provider_key)).collect();
    let expired = prove(&short.0, &short.1, &provider_key);
    let forged_submission = prove(&forged.0, &forged.1, &provider_key);
    let someone_else = prove(&orders[0].0, &orders[0].1, &other_key);
    let mismatched_provider = {
        // Proven for provider 3, accepted by provider 1.
        let mut body = someone_else.body.clone();
        body["acceptance"] = json!(accept(&orders[0].0, &provider_key));
        sign_delivery(&mut body, &provider_key, &domain);
        body
    };
    let other_model = {
        let other = TaskProver::new(tiny_model(2), SegmentPlan::default()).unwrap();
        let input = random_input(0, other.model().input_len());
        let task = orders[1].0.hash(&domain);
        let (proof, trace, _) = other.prove(&input, task.0, provider_addr.0 .0, &mut |_, _, _| {}).unwrap();
        let mut body = json!({
            "order": orders[1].0,
            "acceptance": accept(&orders[1].0, &provider_key),
            "output": trace.output(),
            "proof": format!("0x{}", hex::encode(proof.to_bytes())),
        });
        sign_delivery(&mut body, &provider_key, &domain);
        body
    };
    // Unbacked work (issue 63): an order of a poster without a book, accepted by a provider
    // without a bond, both throwaway keys; and the poster's backed order accepted by provider 3,
    // whose bond (none) does not cover its collateral. Both proofs are valid.
    let (stranger_poster, stranger_provider) = (PrivateKeySigner::random(), PrivateKeySigner::random());
    let unbacked_result = {
        let input = random_input(40, model.input_len());
        let order = open_order(stranger_poster.address(), model_id, &input, 0, 0, now + 86_400);
        prove(&SignedOrder::sign(order, &stranger_poster, &domain).unwrap(), &input, &stranger_provider)
    };
    let unbonded_result = {
        let (signed, input) = order_of(5, now + 86_400);
        prove(&signed, &input, &other_key)
    };
    drop(prover);
    // Provider 1 proves good[1]'s leaf itself, under the registry the sequencer batches with.
    let work_dir = work.path().to_path_buf();
    let proof_of = |s: &Submission| {
        let hex = s.body["proof"].as_str().unwrap().trim_start_matches("0x").to_string();
        tgrid_circuits::TaskProof::from_bytes(&hex::decode(hex).unwrap()).unwrap()
    };
    let leaf_task = proof_of(&good[1]);
    let leaf_hex = tokio::task::spawn_blocking(move || {
        let registry = tgrid_aggregation::RegistryFile::load(&work_dir.join("registry.json")).unwrap();
        let (_, leaf) = tgrid_settlement_proof::Aggregator::new(registry).unwrap().prove_leaf(&leaf_task).unwrap();
        format!("0x{}", hex::encode(leaf.to_bytes()))
    })
    .await
    .unwrap();
    let with_leaf = |body: &Value, leaf: &str| {
        let mut body = body.clone();
        body["leaf_proof"] = json!(leaf);
        body
    };

    // The sequencer reaches anvil through a proxy that fails chosen calls on demand.
    let proxy = fault_proxy::FaultProxy::start(&devnet.rpc_url());
    let data_dir = work.path().join("sequencer");
    let env = |max_age: u64| -> Vec<(String, String)> {
        [
            ("RPC_URL", proxy.url.clone()),
            ("DEPLOYMENT", devnet.deployment_path().display().to_string()),
            ("REGISTRY", work.path().join("registry.json").display().to_string()),
            ("DATA_DIR", data_dir.display().to_string()),
            ("LISTEN", "127.0.0.1:0".into()),
            ("MAX_BATCH_TASKS", "2".into()),
            ("MAX_BATCH_AGE_SECS", max_age.to_string()),
            ("WRAP_FRI", "insecure-test".into()),
            ("INSECURE_DEVNET_KEY", "true".into()),
            ("INSECURE_DEVNET_KEYS_DIR", keys_dir().display().to_string()),
            ("POLL_INTERVAL_MS", "100".into()),
            ("MAX_BODY_BYTES", (1usize << 20).to_string()),
            ("RELAY_REQUESTS_PER_CLIENT_PER_SEC", "5".into()),
            ("SUBMISSIONS_PER_CLIENT_PER_SEC", "20".into()),
            ("MAX_CONNECTIONS_PER_CLIENT", "8".into()),
            ("HEADER_TIMEOUT_SECS", "5".into()),
        ]
        .into_iter()
        .map(|(k, v)| (format!("TGRID_SEQUENCER_{k}"), v))
        .collect()
    };
    let http = Http::new();
    let seq = Sequencer::start(&env(3_600));
    let api = seq.url.clone();

    // The API describes itself.
    let (code, doc) = get(&http, &format!("{api}/openapi.json")).await;
    assert_eq!(code, 200);
    assert!(doc["paths"]["/v1/results"]["post"].is_object(), "{doc}");

    // The relay: orders are listed once checked, one per nonce; the first acceptance wins.
    let (code, v) = post_to(&http, &format!("{api}/v1/orders"), json!(orders[0].0).to_string()).await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["state"], "open");
    let (code, _) = post_to(&http, &format!("{api}/v1/orders"), json!(orders[0].0).to_string()).await;
    assert_eq!(code, 200, "listing twice is idempotent");
    let (code, v) = post_to(&http, &format!("{api}/v1/orders"), json!(forged.0).to_string()).await;
    assert_eq!((code, v["error"].as_str()), (422, Some("bad_signature")), "{v}");
    let equivocation = {
        let mut o = orders[0].0.order.clone();
        o.input_commitment = B256::repeat_byte(9);
        SignedOrder::sign(o, &poster_key, &domain).unwrap()
    };
    let (code, v) = post_to(&http, &format!("{api}/v1/orders"), json!(equivocation).to_string()).await;
    assert_eq!(code, 409, "another order for a listed nonce: {v}");
    let unbacked = {
        let mut o = orders[0].0.order.clone();
        o.nonce = Order::nonce_of(book, 99); // beyond the book's 16 orders
        SignedOrder::sign(o, &poster_key, &domain).unwrap()
    };
    let (code, v) = post_to(&http, &format!("{api}/v1/orders"), json!(unbacked).to_string()).await;
    assert_eq!(code, 422, "{v}");
    assert!(v["reason"].as_str().unwrap().contains("capacity"), "{v}");
    let (code, listed) = get(&http, &format!("{api}/v1/orders?model={}&state=open", B256::from(model_id))).await;
    assert_eq!(code, 200);
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    // One page holds it all: no `Next-From`; a malformed cursor is a clear 400.
    let listing =
        http.get(format!("{api}/v1/orders?model={}&per_poster=1", B256::from(model_id))).send().await.unwrap();
    assert!(listing.status().is_success() && listing.headers().get("next-from").is_none());
    let (code, v) = get(&http, &format!("{api}/v1/orders?model={}&from=yesterday", B256::from(model_id))).await;
    assert_eq!(code, 400, "{v}");
    let acceptance_url = format!("{api}/v1/orders/{}/acceptance", good[0].task);
    // Provider 3 has no bond: its acceptance would not be backed.
    let (code, v) = post_to(&http, &acceptance_url, json!(accept(&orders[0].0, &other_key)).to_string()).await;
    assert_eq!(code, 422, "{v}");
    assert!(v["reason"].as_str().unwrap().contains("bond"), "{v}");
    // A flood of acceptances signed by fresh keys from one client: past its burst the per-client
    // limit refuses them before anything reads the chain, so the node sees one bond read per
    // admitted request and the market's parameters once; a provider elsewhere is not held up.
    let spammer = Http::builder().local_address(std::net::IpAddr::from([127, 0, 0, 2])).build().unwrap();
    let (bond_reads, parameter_reads) =
        (proxy.calls_to(ITaskMarket::bondCall::SELECTOR), proxy.calls_to(ITaskMarket::parametersCall::SELECTOR));
    let mut limited = 0;
    for _ in 0..100 {
        let throwaway = PrivateKeySigner::random();
        let (code, v) = post_to(&spammer, &acceptance_url, json!(accept(&orders[0].0, &throwaway)).to_string()).await;
        match code {
            429 => limited += 1,
            422 => assert!(v["reason"].as_str().unwrap().contains("bond"), "{v}"),
            _ => panic!("a throwaway key's acceptance: {code} {v}"),
        }
    }
    assert!(limited >= 85, "burst of 10 at 5/s: only {limited} of 100 limited");
    assert_eq!(proxy.calls_to(ITaskMarket::bondCall::SELECTOR) - bond_reads, 100 - limited, "one read per admitted");
    assert!(proxy.calls_to(ITaskMarket::parametersCall::SELECTOR) - parameter_reads <= 1, "parameters are shared");
    let metrics = http.get(format!("{api}/metrics")).send().await.unwrap().text().await.unwrap();
    let line = format!("tgrid_sequencer_relay_orders_total{{event=\"rate_limited\"}} {limited}");
    assert!(metrics.lines().any(|l| l == line), "{metrics}");
    let (code, v) = post_to(&http, &acceptance_url, json!(accept(&orders[0].0, &provider_key)).to_string()).await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["state"], "accepted");
    // Once an order is taken, acceptances for it are answered from the store alone.
    let bond_reads = proxy.calls_to(ITaskMarket::bondCall::SELECTOR);
    let (code, v) =
        post_to(&spammer, &acceptance_url, json!(accept(&orders[0].0, &PrivateKeySigner::random())).to_string()).await;
    assert_eq!(code, 409, "{v}");
    assert_eq!(proxy.calls_to(ITaskMarket::bondCall::SELECTOR), bond_reads);

    // Providers' sealing keys: only a bonded provider's own signed key is listed, the newest kept.
    let key_url = |who: Address| format!("{api}/v1/providers/{who}/sealing-key");
    let announce = |key: &PrivateKeySigner, public: u8, at: u64| {
        json!(SealingKeyAnnouncement::sign(B256::repeat_byte(public), at, key, &domain).unwrap()).to_string()
    };
    let (code, v) = get(&http, &key_url(provider_addr)).await;
    assert_eq!(code, 404, "{v}");
    let (code, v) = put(&http, &key_url(provider_addr), announce(&provider_key, 2, now)).await;
    assert_eq!((code, v["publicKey"].as_str()), (200, Some(B256::repeat_byte(2).to_string().as_str())), "{v}");
    let (code, v) = put(&http, &key_url(provider_addr), announce(&provider_key, 1, now - 10)).await;
    assert_eq!(
        (code, v["publicKey"].as_str()),
        (200, Some(B256::repeat_byte(2).to_string().as_str())),
        "an older key replayed: {v}"
    );
    let (code, v) = put(&http, &key_url(provider_addr), announce(&other_key, 3, now)).await;
    assert_eq!(code, 400, "another account's key under provider 1's address: {v}");
    let (code, v) = put(&http, &key_url(other_key.address()), announce(&other_key, 3, now)).await;
    assert_eq!(code, 422, "an account without a bond: {v}");
    assert!(v["reason"].as_str().unwrap().contains("bond"), "{v}");
    let mut forged_key: Value = serde_json::from_str(&announce(&provider_key, 4, now + 1)).unwrap();
    forged_key["publicKey"] = json!(B256::repeat_byte(5));
    let (code, v) = put(&http, &key_url(provider_addr), forged_key.to_string()).await;
    assert_eq!((code, v["error"].as_str()), (422, Some("bad_signature")), "{v}");
    let (code, v) = get(&http, &key_url(provider_addr)).await;
    assert_eq!((code, v["publicKey"].as_str()), (200, Some(B256::repeat_byte(2).to_string().as_str())), "{v}");

    // Bad input: refused with a reason, never stored.
    let (code, v) = post(&http, &api, "{not json".into()).await;
    assert_eq!(code, 400, "{v}");
    assert_eq!(oversized_post(&api), 413);
    let mut tampered = good[0].body.clone();
    let p = tampered["proof"].as_str().unwrap().to_string();
    let flip = p.len() - 40;
    let flipped = if &p[flip..flip + 1] == "0" { "1" } else { "0" };
    tampered["proof"] = json!(format!("{}{}{}", &p[..flip], flipped, &p[flip + 1..]));
    let (code, v) = post(&http, &api, tampered.to_string()).await;
    assert_eq!((code, v["error"].as_str()), (422, Some("bad_signature")), "a changed proof, not signed: {v}");
    sign_delivery(&mut tampered, &provider_key, &domain);
    let (code, v) = post(&http, &api, tampered.to_string()).await;
    assert!(code == 422 || code == 400, "tampered proof: {code} {v}");
    assert_ne!(v["error"], "bad_signature", "{v}");
    let mut wrong_output = good[0].body.clone();
    wrong_output["output"][0] = json!(wrong_output["output"][0].as_i64().unwrap() ^ 1);
    sign_delivery(&mut wrong_output, &provider_key, &domain);
    let (code, v) = post(&http, &api, wrong_output.to_string()).await;
    assert_eq!(code, 422, "{v}");
    assert!(v["reason"].as_str().unwrap().contains("output"), "{v}");
    // Anyone who saw that refused (but validly signed) delivery replays it, far past provider 1's
    // rate limit: the same answer each time, and provider 1's own results below still get in.
    for _ in 0..250 {
        let (code, again) = post(&http, &api, wrong_output.to_string()).await;
        assert_eq!((code, &again), (422, &v), "a replayed refusal is answered alike");
    }
    // A public task's output sent encrypted (as if private): its proof is public, so refused.
    let mut encrypted_public = good[0].body.clone();
    let output: Vec<i8> = serde_json::from_value(encrypted_public["output"].clone()).unwrap();
    let key = tgrid_circuits::OutputKey::from_input_salt(&tgrid_circuits::Salt::random());
    let encrypted = tgrid_circuits::EncryptedTensor::encrypt(&output, &key);
    encrypted_public["output"] = json!([]);
    encrypted_public["encrypted_output"] = json!(format!("0x{}", hex::encode(encrypted.to_bytes())));
    let proof_bytes = hex::decode(encrypted_public["proof"].as_str().unwrap().trim_start_matches("0x")).unwrap();
    let delivery = Delivery::of_proof(good[0].task, B256::from(encrypted.commitment().0), &proof_bytes);
    encrypted_public["signature"] =
        json!(format!("0x{}", hex::encode(delivery.sign(&provider_key, &domain).unwrap().as_bytes())));
    let (code, v) = post(&http, &api, encrypted_public.to_string()).await;
    assert_eq!(code, 422, "{v}");
    assert!(v["reason"].as_str().unwrap().contains("output"), "{v}");
    // Random bytes as an encrypted output: a clear 400, never a panic.
    let mut garbage = encrypted_public.clone();
    garbage["encrypted_output"] = json!("0x5447524944454e43000100000010deadbeef");
    let (code, v) = post(&http, &api, garbage.to_string()).await;
    assert_eq!(code, 400, "{v}");
    assert!(v["reason"].as_str().unwrap().contains("encrypted output"), "{v}");
    let (code, v) = post(&http, &api, someone_else.body.to_string()).await;
    assert_eq!(code, 409, "the relay recorded provider 1's acceptance first: {v}");
    assert!(v["reason"].as_str().unwrap().contains("accepted by"), "{v}");
    let (code, v) = post(&http, &api, mismatched_provider.to_string()).await;
    assert_eq!(code, 422, "{v}");
    assert!(v["reason"].as_str().unwrap().contains("binds provider"), "{v}");
    let (code, v) = post(&http, &api, forged_submission.body.to_string()).await;
    assert_eq!((code, v["error"].as_str()), (422, Some("bad_signature")), "{v}");
    let (code, v) = post(&http, &api, other_model.to_string()).await;
    assert_eq!(code, 422, "{v}");
    assert!(v["reason"].as_str().unwrap().contains("registry"), "{v}");
    advance_time(&admin, 800).await.unwrap();
    let (code, v) = post(&http, &api, expired.body.to_string()).await;
    assert_eq!(code, 422, "{v}");
    assert!(v["reason"].as_str().unwrap().contains("deadline"), "{v}");
    for s in [&good[0], &good[1], &expired, &forged_submission] {
        let (code, _) = get(&http, &format!("{api}/v1/tasks/{}", s.task)).await;
        assert_eq!(code, 404, "a refused submission must not be stored");
    }
    // An order and its acceptance are public; the delivery is not. A flood naming provider 1
    // (twice its rate limit, signed by another key) is refused before the rate limit, so provider
    // 1's own submission below still gets through.
    let mut spam = good[0].body.clone();
    sign_delivery(&mut spam, &other_key, &domain);
    for _ in 0..100 {
        let (code, v) = post(&http, &api, spam.to_string()).await;
        assert_eq!((code, v["error"].as_str()), (422, Some("bad_signature")), "{v}");
        assert!(v["reason"].as_str().unwrap().contains("delivery"), "{v}");
    }

    // Only backed work is acknowledged: a valid proof of an order no book pays, accepted by a
    // provider with no bond, is refused before its proof is checked; so is an order of a real
    // book accepted by a provider whose bond does not cover the collateral.
    let (code, v) = post(&http, &api, unbacked_result.body.to_string()).await;
    assert_eq!(code, 422, "{v}");
    assert!(v["reason"].as_str().unwrap().contains("has no book"), "{v}");
    let (code, v) = post(&http, &api, unbonded_result.body.to_string()).await;
    assert_eq!(code, 422, "{v}");
    assert!(v["reason"].as_str().unwrap().contains("bond"), "{v}");
    // A flood of such results, each signed by fresh keys, from one client: past its burst the
    // per-client limit answers 429 before any chain read; each admitted one costs one book read
    // and no proof check (the proof is another task's: checked, it would be refused as such).
    // A thousand of them count nowhere: not in the queue depth providers weigh before accepting,
    // not in a batch (the batch below holds the two good results only).
    const FLOOD: u32 = 1_000;
    let queue_depth = || async { get(&http, &format!("{api}/v1/status")).await.1["queue_depth"].as_u64().unwrap() };
    let depth_before = queue_depth().await;
    let book_reads = proxy.calls_to(ITaskMarket::bookCall::SELECTOR);
    let spammer_results = Http::builder().local_address(std::net::IpAddr::from([127, 0, 0, 3])).build().unwrap();
    let flood: Vec<String> = (0..u64::from(FLOOD))
        .map(|seed| {
            let (poster, provider) = (PrivateKeySigner::random(), PrivateKeySigner::random());
            let input = random_input(seed, model.input_len());
            let order = open_order(poster.address(), model_id, &input, 0, 0, now + 86_400);
            let signed = SignedOrder::sign(order, &poster, &domain).unwrap();
            let mut body = unbacked_result.body.clone();
            body["order"] = json!(signed);
            body["acceptance"] = json!(accept(&signed, &provider));
            sign_delivery(&mut body, &provider, &domain);
            body.to_string()
        })
        .collect();
    let mut limited = 0;
    let started = Instant::now();
    for body in flood {
        let (code, v) = post(&spammer_results, &api, body).await;
        match code {
            429 => limited += 1,
            422 => assert!(v["reason"].as_str().unwrap().contains("has no book"), "{v}"),
            _ => panic!("a throwaway key's result: {code} {v}"),
        }
    }
    // A burst of 40, then 20 a second.
    let allowed = 40 + (20.0 * started.elapsed().as_secs_f64()).ceil() as u32;
    assert!(FLOOD - limited <= allowed, "{} of {FLOOD} admitted, at most {allowed} allowed", FLOOD - limited);
    assert!(limited > 0, "none of {FLOOD} limited");
    assert_eq!(proxy.calls_to(ITaskMarket::bookCall::SELECTOR) - book_reads, FLOOD - limited, "one read per admitted");
    assert_eq!(queue_depth().await, depth_before, "unbacked results in the queue depth");

    // Slowloris: one client (127.0.0.5) opens 20 connections and sends half a request's headers
    // on each. It keeps 8 (max_connections_per_client), the other 12 are closed on arrival; the
    // service answers others meanwhile, and closes the 8 once their headers are 5 s late.
    let refused_connections = |text: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix("tgrid_sequencer_refused_connections_total "))
            .map(|n| n.parse().unwrap())
            .unwrap_or_else(|| panic!("no refused connections count: {text}"))
    };
    let metrics_text = || async { http.get(format!("{api}/metrics")).send().await.unwrap().text().await.unwrap() };
    let refused_before = refused_connections(&metrics_text().await);
    let service_addr: std::net::SocketAddr = api.trim_start_matches("http://").parse().unwrap();
    let mut slow = Vec::new();
    for _ in 0..20 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.5:0".parse().unwrap()).unwrap();
        let mut stream = socket.connect(service_addr).await.unwrap();
        // A refused connection may already be closed: the write may fail.
        let _ = stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: sequencer\r\nX-Slow: ").await;
        slow.push(stream);
    }
    // Once the service counts the 12 refused (closed before counted), the held ones are those
    // still open: checked well within the 5 s a connection's headers may take.
    let counted = Instant::now();
    while refused_connections(&metrics_text().await) - refused_before < 12 {
        assert!(counted.elapsed() < Duration::from_secs(10), "12 connections never refused");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut held = 0;
    for stream in &mut slow {
        let mut buf = [0u8; 256];
        match tokio::time::timeout(Duration::from_millis(50), stream.read(&mut buf)).await {
            Err(_) => held += 1,
            Ok(Ok(0)) | Ok(Err(_)) => {}
            Ok(Ok(n)) => panic!("half a request answered: {}", String::from_utf8_lossy(&buf[..n])),
        }
    }
    assert_eq!(held, 8, "the client keeps its 8 connections, no more");
    let (code, v) = get(&http, &format!("{api}/v1/status")).await;
    assert_eq!(code, 200, "another client is served meanwhile: {v}");
    assert_eq!(refused_connections(&metrics_text().await) - refused_before, 12);
    let started = Instant::now();
    for stream in &mut slow {
        let mut buf = [0u8; 256];
        match tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf)).await {
            Err(_) => panic!("a connection with late headers still open after {:?}", started.elapsed()),
            Ok(Ok(0)) | Ok(Err(_)) => {}
            // hyper may say why before it closes.
            Ok(Ok(n)) => assert!(buf[..n].starts_with(b"HTTP/1.1 4"), "{}", String::from_utf8_lossy(&buf[..n])),
        }
    }
    drop(slow);

    // Anyone may read /v1/status: a flood of them reads the account's balance from the node at
    // most once per 5 s, not once per request.
    let balance_reads = proxy.calls_of("eth_getBalance");
    let flood_started = Instant::now();
    for _ in 0..50 {
        let (code, status) = get(&http, &format!("{api}/v1/status")).await;
        assert_eq!(code, 200, "{status}");
    }
    let windows = 1 + (flood_started.elapsed().as_secs() / 5) as u32;
    assert!(proxy.calls_of("eth_getBalance") - balance_reads <= windows + 1, "status reads are shared");

    // A leaf proof that is not the task's is refused (and not held against the result itself).
    for (body, leaf) in [(&good[0].body, leaf_hex.as_str()), (&good[1].body, "0x00ff00ff"), (&good[1].body, "0x")] {
        let (code, v) = post(&http, &api, with_leaf(body, leaf).to_string()).await;
        assert_eq!((code, v["error"].as_str()), (422, Some("invalid_leaf")), "{v}");
    }
    let (code, v) = post(&http, &api, with_leaf(&good[1].body, "00ff").to_string()).await;
    assert_eq!(code, 400, "no 0x prefix: {v}");

    // Two good results, the second with its provider's leaf proof: acknowledged with a receipt
    // signed by the sequencer, a replay is idempotent (the same receipt), the batch of two closes.
    let sequencer_address = devnet.signer(0).address();
    let mut receipts = vec![];
    for (i, s) in good[..2].iter().enumerate() {
        let body = if i == 1 { with_leaf(&s.body, &leaf_hex) } else { s.body.clone() };
        let (code, v) = post(&http, &api, body.to_string()).await;
        assert_eq!(code, 202, "{v}");
        assert_eq!(v["duplicate"], false);
        assert_eq!(v.get("leaf_proof").and_then(Value::as_str), (i == 1).then_some("adopted"), "{v}");
        let receipt: SignedReceipt = serde_json::from_value(v["receipt"].clone()).unwrap();
        receipt.verify(&domain).unwrap();
        assert_eq!(receipt.sequencer, sequencer_address);
        let output: Vec<i8> = serde_json::from_value(s.body["output"].clone()).unwrap();
        let proof = hex::decode(s.body["proof"].as_str().unwrap().trim_start_matches("0x")).unwrap();
        let delivery = Delivery::of_proof(s.task, B256::from(commit(&output).0), &proof);
        assert!(receipt.receipt.acknowledges(&delivery, provider_addr), "{receipt:?}");
        receipts.push(receipt);
    }
    let (code, v) = post(&http, &api, good[0].body.to_string()).await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["duplicate"], true);
    // The node will fail the batch's gas estimate twice and its transaction once: node trouble,
    // not a refusal, so the batch is retried (never dropped) and settles once.
    proxy.fail("eth_estimateGas", 2);
    proxy.fail("eth_sendRawTransaction", 1);
    assert_eq!(serde_json::from_value::<SignedReceipt>(v["receipt"].clone()).unwrap(), receipts[0]);
    // An output is published only once its order settled (a poster could otherwise read it and
    // cancel the order).
    let (code, _) = get(&http, &format!("{api}/v1/tasks/{}/output", good[1].task)).await;
    assert_eq!(code, 404);

    // Crash 1: SIGKILL while the batch is proving; the restarted service proves it again.
    wait_for_status(&http, &api, good[0].task, "proving", Duration::from_secs(600)).await;
    // The batch took the provider's leaf as it was and proved only the other one.
    let metrics = http.get(format!("{api}/metrics")).send().await.unwrap().text().await.unwrap();
    for (outcome, n) in [("adopted", 1), ("used", 1), ("proven", 1)] {
        let line = format!("tgrid_sequencer_leaves_total{{outcome=\"{outcome}\"}} {n}");
        assert!(metrics.lines().any(|l| l == line), "{line}: {metrics}");
    }
    seq.kill();
    let seq = Sequencer::start(&env(3_600));
    let api = seq.url.clone();
    let settled = wait_for_status(&http, &api, good[0].task, "settled", Duration::from_secs(900)).await;
    let batch_id = settled["batch"].as_u64().unwrap();
    assert_eq!((proxy.injected("eth_estimateGas"), proxy.injected("eth_sendRawTransaction")), (2, 1));
    let metrics = http.get(format!("{api}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(
        metrics.lines().any(|l| l == r#"tgrid_sequencer_settlement_retries_total{kind="rpc"} 3"#),
        "three node faults, three retries: {metrics}"
    );
    let (_, status) = get(&http, &format!("{api}/v1/status")).await;
    assert_eq!(status["retrying"], json!([]), "{status}");
    let (code, out) = get(&http, &format!("{api}/v1/tasks/{}/output", good[1].task)).await;
    assert_eq!(code, 200);
    assert_eq!(out["output"], good[1].body["output"]);
    let (_, relayed) = get(&http, &format!("{api}/v1/orders/{}", good[1].task)).await;
    assert_eq!(relayed["state"], "closed", "a delivered order unknown to the relay is recorded: {relayed}");

    let rpc = |method: &'static str, params: Value| {
        let admin = &admin;
        async move { admin.raw_request::<_, Value>(method.into(), params).await.unwrap() }
    };
    // Crash 2a: SIGKILL in the middle of an ingest (half the body received): nothing is
    // acknowledged, so nothing may be stored; the provider sends it again after the restart.
    let half = half_sent_post(&api, &good[2].body.to_string());
    seq.kill();
    drop(half);
    let seq = Sequencer::start(&env(3_600));
    let api = seq.url.clone();
    let (code, _) = get(&http, &format!("{api}/v1/tasks/{}", good[2].task)).await;
    assert_eq!(code, 404, "an unacknowledged submission must leave no record");
    // Governance deregisters the model (the timelock, impersonated, calls the registry as a
    // passed vote would) and moves the root on. The old root stays accepted for its grace period,
    // so results for the model are still acknowledged and settle under it (below).
    let deregister =
        deregisterModelCall { modelId: B256::from(model_id), newRoot: B256::repeat_byte(0x5e) }.abi_encode();
    as_timelock(&admin, d.timelock, d.registry, deregister).await;
    assert!(!chain.model_active(&model_id).await.unwrap(), "deregistered");
    assert!(chain.root_accepted(&registry_root).await.unwrap(), "the old root is in its grace window");
    // Crash 2b: a third result waits alone in the open batch; SIGKILL right after its
    // acknowledgement; the restart (batch age now 1 s) closes and settles it.
    let (code, v) = post(&http, &api, good[2].body.to_string()).await;
    assert_eq!(code, 202, "{v}");
    seq.kill();
    // Crash 3: the chain stops mining, so the settlement transaction stays pending; SIGKILL once
    // it is sent. The restarted service finds the stored transaction (re-sends the same bytes)
    // and settles when it is mined.
    rpc("evm_setAutomine", json!([false])).await;
    let seq = Sequencer::start(&env(1));
    let api = seq.url.clone();
    wait_for_status(&http, &api, good[2].task, "submitted", Duration::from_secs(900)).await;
    seq.kill();
    let seq = Sequencer::start(&env(1));
    let api = seq.url.clone();
    assert_eq!(get(&http, &format!("{api}/v1/tasks/{}", good[2].task)).await.1["status"], "submitted");
    rpc("evm_setAutomine", json!([true])).await;
    rpc("evm_mine", json!([])).await;
    wait_for_status(&http, &api, good[2].task, "settled", Duration::from_secs(300)).await;
    drop(seq);

    // A reorg: the block holding a fourth result's settlement is reorganized away before it has
    // its 3 confirmations, and the node forgets the transaction. The service must notice and
    // send the same transaction again at once (the stuck-transaction timer is an hour here, so
    // only that can settle it), then wait for 3 blocks on top of the new one.
    let mut reorg_env = env(1);
    reorg_env.push(("TGRID_SEQUENCER_CONFIRMATIONS".into(), "3".into()));
    reorg_env.push(("TGRID_SEQUENCER_GAS_BUMP_AFTER_SECS".into(), "3600".into()));
    let seq = Sequencer::start(&reorg_env);
    let api = seq.url.clone();
    // First the sequencer's account runs dry: the proven batch is retried (its task stays
    // queued, never dropped) and the status endpoint says why until the account is topped up.
    let sequencer_balance = admin.get_balance(sequencer_address).await.unwrap();
    rpc("anvil_setBalance", json!([sequencer_address, "0x0"])).await;
    let (code, v) = post(&http, &api, good[3].body.to_string()).await;
    assert_eq!(code, 202, "{v}");
    let started = Instant::now();
    let status = loop {
        let (code, status) = get(&http, &format!("{api}/v1/status")).await;
        assert_eq!(code, 200, "{status}");
        if status["account"]["low_funds"].is_string() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(900), "low funds never reported: {status}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(status["status"], "degraded", "{status}");
    assert_eq!(status["account"]["balance_wei"], "0", "{status}");
    assert_eq!(status["retrying"][0]["kind"], "funds", "{status}");
    assert!(status["problems"][0].as_str().unwrap().contains("failed settlement attempt"), "{status}");
    let (_, v) = get(&http, &format!("{api}/v1/tasks/{}", good[3].task)).await;
    assert_eq!(v["status"], "proving", "proven and waiting for funds, not dropped: {v}");
    let metrics = http.get(format!("{api}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.lines().any(|l| l == "tgrid_sequencer_low_funds 1"), "{metrics}");
    assert!(metrics.lines().any(|l| l == "tgrid_sequencer_retrying_batches 1"), "{metrics}");
    rpc("anvil_setBalance", json!([sequencer_address, format!("{sequencer_balance:#x}")])).await;
    let submitted = wait_for_status(&http, &api, good[3].task, "submitted", Duration::from_secs(300)).await;
    let (_, batch) = get(&http, &format!("{api}/v1/batches/{}", submitted["batch"])).await;
    let tx: B256 = batch["txs"][0].as_str().unwrap().parse().unwrap();
    let started = Instant::now();
    let mined = loop {
        if let Some(r) = admin.get_transaction_receipt(tx).await.unwrap() {
            break r.block_number.unwrap();
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the settlement transaction was not mined");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(admin.get_block_number().await.unwrap(), mined, "nothing else mines in this test");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (_, v) = get(&http, &format!("{api}/v1/tasks/{}", good[3].task)).await;
    assert_eq!(v["status"], "submitted", "settled before its confirmations: {v}");
    rpc("anvil_reorg", json!([1, []])).await;
    assert!(admin.get_transaction_receipt(tx).await.unwrap().is_none(), "the reorg removed the settlement");
    let started = Instant::now();
    loop {
        let (_, v) = get(&http, &format!("{api}/v1/tasks/{}", good[3].task)).await;
        if v["status"] == "settled" {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "not settled again after the reorg: {v}");
        // Blocks keep coming, as on a live chain: confirmations for the re-mined transaction.
        rpc("evm_mine", json!([])).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let receipt = admin.get_transaction_receipt(tx).await.unwrap().expect("the same transaction, mined again");
    assert!(receipt.status());
    assert!(admin.get_block_number().await.unwrap() >= receipt.block_number.unwrap() + 3, "3 blocks on top");
    let metrics = http.get(format!("{api}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.lines().any(|l| l == "tgrid_sequencer_resent_transactions_total 1"), "{metrics}");
    assert!(metrics.lines().any(|l| l == "tgrid_sequencer_low_funds 0"), "{metrics}");
    let (_, status) = get(&http, &format!("{api}/v1/status")).await;
    assert_eq!(status["retrying"], json!([]), "{status}");
    // The one problem left: governance moved the root to one the registry file does not list
    // (the deregistration above), reported until the operator updates the file.
    let problems = status["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{status}");
    assert!(problems[0].as_str().unwrap().starts_with("registry: "), "{status}");

    // Exactly once: every acknowledged order settled and paid on-chain, three batches, no more.
    let market = Market::new(&d, admin.clone());
    for (s, (signed, _)) in good.iter().zip(&orders) {
        assert!(market.nonce_used(poster_addr, signed.order.nonce).await.unwrap(), "order {}", s.task);
        let (_, v) = get(&http, &format!("{api}/v1/tasks/{}", s.task)).await;
        assert_eq!(v["status"], "settled");
        assert!(v.get("reason").is_none(), "paid: {v}");
    }
    assert_eq!(market.earner(provider_addr).await.unwrap().tasksSettled, 4);
    let filter = alloy::rpc::types::Filter::new()
        .address(d.market)
        .event_signature(ITaskMarket::BatchSettled::SIGNATURE_HASH)
        .from_block(0);
    assert_eq!(admin.get_logs(&filter).await.unwrap().len(), 3, "each batch settles once");

    // The batch view proves membership against the root the contract recorded.
    let (code, batch) = get(&http, &format!("{api}/v1/batches/{batch_id}")).await;
    assert_eq!(code, 200);
    assert_eq!(batch["status"], "settled");
    let members = batch["tasks"].as_array().unwrap();
    assert_eq!(members.len(), 2);
    let root: [u8; 32] = hex::decode(&batch["batch_root"].as_str().unwrap()[2..]).unwrap().try_into().unwrap();
    for m in members {
        let leaf: [u8; 32] = hex::decode(&m["leaf_hash"].as_str().unwrap()[2..]).unwrap().try_into().unwrap();
        let path: Vec<[u8; 32]> = m["membership_proof"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| hex::decode(&h.as_str().unwrap()[2..]).unwrap().try_into().unwrap())
            .collect();
        let index = m["index"].as_u64().unwrap() as usize;
        assert_eq!(tgrid_aggregation::root_from_audit_path(&leaf, index, 2, &path), Some(root));
    }
    let logs = admin.get_logs(&filter).await.unwrap();
    let roots: Vec<B256> =
        logs.iter().map(|l| ITaskMarket::BatchSettled::decode_log(&l.inner).unwrap().batchRoot).collect();
    assert!(roots.contains(&B256::from(root)), "the contract recorded the batch root the API shows");

    // The transaction the API names is the one that settled the batch, in a real block.
    let tx: B256 = batch["txs"][0].as_str().unwrap().parse().unwrap();
    let receipt = admin.get_transaction_receipt(tx).await.unwrap().expect("the settling transaction is mined");
    assert!(receipt.status());
    assert_eq!(batch["block"].as_u64(), receipt.block_number);
    assert_eq!(batch["gas_used"].as_u64(), Some(receipt.gas_used));

    // Metrics report the work.
    let r = http.get(format!("{api}/metrics")).send().await.unwrap();
    let text = r.text().await.unwrap();
    assert!(text.contains("tgrid_sequencer_settled_tasks_total"), "{text}");
    assert!(text.contains("tgrid_sequencer_gas_per_task"), "{text}");
    // Every acknowledged result went through each ingest stage once.
    for stage in ["decode", "verify_queue", "verify", "chain", "store"] {
        let count = format!("tgrid_sequencer_ingest_stage_seconds_count{{stage=\"{stage}\"}} ");
        let n: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix(count.as_str()))
            .unwrap_or_else(|| panic!("no {stage} stage count in {text}"))
            .parse()
            .unwrap();
        assert!(n >= 1, "{stage}: {n}");
    }

    // A poster cannot read an output without paying for it: cancelling the order's nonce once
    // the result is acknowledged (or settling another order under it) publishes nothing, since
    // no settlement paid the provider for it (issue 63).
    let now = admin.get_block_by_number(alloy::eips::BlockNumberOrTag::Latest).await.unwrap().unwrap().header.timestamp;
    let (late, late_input) = order_of(6, now + 86_400);
    let late_task = late.hash(&domain);
    let body = {
        let prover = TaskProver::new(model.clone(), SegmentPlan::default()).unwrap();
        let (proof, trace, _) = prover.prove(&late_input, late_task.0, provider_addr.0 .0, &mut |_, _, _| {}).unwrap();
        let mut body = json!({
            "order": late,
            "acceptance": accept(&late, &provider_key),
            "output": trace.output(),
            "proof": format!("0x{}", hex::encode(proof.to_bytes())),
        });
        sign_delivery(&mut body, &provider_key, &domain);
        body
    };
    let (code, v) = post(&http, &api, body.to_string()).await;
    assert_eq!(code, 202, "acknowledged: {v}");
    Market::new(&d, wallet(2)).cancel(vec![late.order.nonce]).await.unwrap();
    assert!(market.nonce_used(poster_addr, late.order.nonce).await.unwrap());
    let (code, v) = get(&http, &format!("{api}/v1/tasks/{late_task}/output")).await;
    assert_eq!(code, 404, "an output read after its nonce was cancelled, unpaid: {v}");
    drop(seq);
}
