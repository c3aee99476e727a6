//! Helpers shared by the service tests: the binary, a started service, HTTP calls, the
//! devnet wrap key, registry files and signed deliveries.
// Each test binary uses a different subset.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use alloy::primitives::{Address, B256, U256};
use alloy::providers::{DynProvider, Provider};
use alloy::signers::local::PrivateKeySigner;
use serde_json::{json, Value};
use tgrid_aggregation::{LeafCircuit, RegistryFile, RegistryFileEntry};
use tgrid_chain::market::{Delivery, MarketDomain, Order, SignedOrder};
use tgrid_circuits::{commit, ModelFile, QuantModel, SegmentPlan, TaskVerifier};

pub const BIN: &str = env!("CARGO_BIN_EXE_tgrid-sequencer");
pub type Http = alloy::transports::http::reqwest::Client;

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

pub fn keys_dir() -> PathBuf {
    repo_root().join("target/tgrid-test-keys")
}

pub fn ether(n: u64) -> U256 {
    U256::from(n) * U256::from(10u64).pow(U256::from(18u64))
}

/// Writes the model file and a registry listing it; returns (model id, leaf digest, root).
pub fn write_registry(dir: &Path, model: &QuantModel) -> ([u8; 32], [u8; 32], [u8; 32]) {
    let mut registry = RegistryFile::empty(dir.to_path_buf());
    let (model_id, digest, root) = add_model(&mut registry, model, "model.tgm");
    registry.save(&dir.join("registry.json")).unwrap();
    (model_id, digest, root)
}

/// Writes `model`'s file as `file_name` in the registry's directory and lists it; returns
/// (model id, leaf digest, the registry's new root).
pub fn add_model(registry: &mut RegistryFile, model: &QuantModel, file_name: &str) -> ([u8; 32], [u8; 32], [u8; 32]) {
    let plan = SegmentPlan::default();
    let verifier = TaskVerifier::new(model, &plan).unwrap();
    let circuit_digest = verifier.circuit_digest();
    let leaf_circuit = LeafCircuit::new(verifier).unwrap();
    let file = ModelFile {
        model: model.clone(),
        plan,
        circuit_digest,
        leaf_digest: leaf_circuit.digest(),
        report: "{}".into(),
    };
    std::fs::write(registry.base_dir.join(file_name), file.to_bytes()).unwrap();
    let root = registry
        .upsert(RegistryFileEntry {
            name: file_name.trim_end_matches(".tgm").into(),
            model_id: format!("0x{}", hex::encode(model.model_id())),
            leaf_digest: format!("0x{}", hex::encode(leaf_circuit.digest())),
            model_file: file_name.into(),
        })
        .unwrap();
    (model.model_id(), leaf_circuit.digest(), root)
}

/// The test-FRI devnet key (set up once and cached): its id and verifying-key words.
pub fn wrap_key() -> (String, String) {
    let out = Command::new(BIN)
        .args(["--json", "key", "--insecure-devnet-key", "--fri", "insecure-test", "--keys-dir"])
        .arg(keys_dir())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["insecure"], true);
    let words: Vec<String> =
        v["verifying_key_words"].as_array().unwrap().iter().map(|w| w.as_str().unwrap().into()).collect();
    assert_eq!(words.len(), 18);
    (v["id"].as_str().unwrap().into(), words.join(","))
}

pub struct Sequencer {
    pub child: Child,
    pub url: String,
}

impl Sequencer {
    pub fn start(env: &[(String, String)]) -> Self {
        let mut child = Command::new(BIN)
            .arg("run")
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("no ready line ({e}): {line:?}"));
        Self { child, url: format!("http://{}", v["listening"].as_str().unwrap()) }
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Sequencer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub async fn post(http: &Http, url: &str, body: String) -> (u16, Value) {
    post_to(http, &format!("{url}/v1/results"), body).await
}

pub async fn post_to(http: &Http, url: &str, body: String) -> (u16, Value) {
    let r = http.post(url).header("content-type", "application/json").body(body).send().await.unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

pub async fn put(http: &Http, url: &str, body: String) -> (u16, Value) {
    let r = http.put(url).header("content-type", "application/json").body(body).send().await.unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

pub async fn get(http: &Http, url: &str) -> (u16, Value) {
    let r = http.get(url).send().await.unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

pub async fn wait_for_status(http: &Http, url: &str, task: B256, wanted: &str, limit: Duration) -> Value {
    let started = Instant::now();
    loop {
        let (code, v) = get(http, &format!("{url}/v1/tasks/{task}")).await;
        if code == 200 && v["status"] == wanted {
            return v;
        }
        assert!(started.elapsed() < limit, "task {task} did not reach {wanted} in {limit:?}: {v}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

pub struct Submission {
    pub task: B256,
    pub body: Value,
}

/// Signs the delivery of `body`'s output and proof with `key` (what a provider sends with its
/// result), replacing any signature there.
pub fn sign_delivery(body: &mut Value, key: &PrivateKeySigner, domain: &MarketDomain) {
    let order: SignedOrder = serde_json::from_value(body["order"].clone()).unwrap();
    let output: Vec<i8> = serde_json::from_value(body["output"].clone()).unwrap();
    let proof = hex::decode(body["proof"].as_str().unwrap().trim_start_matches("0x")).unwrap();
    let delivery = Delivery::of_proof(order.hash(domain), B256::from(commit(&output).0), &proof);
    body["signature"] = json!(format!("0x{}", hex::encode(delivery.sign(key, domain).unwrap().as_bytes())));
}

/// An open order of `model_id` for `input`, the `index`th of `book`: 10 TGRID for 20 TGRID of
/// collateral, half of a slash to the poster.
pub fn open_order(poster: Address, model_id: [u8; 32], input: &[i8], book: u32, index: u32, deadline: u64) -> Order {
    Order {
        poster,
        provider: Address::ZERO,
        model_id: B256::from(model_id),
        input_commitment: B256::from(commit(input).0),
        payment: 10 * 10u128.pow(18),
        collateral: 20 * 10u128.pow(18),
        deadline,
        nonce: Order::nonce_of(book, index),
        slash_bps: 5_000,
        poster_share_bps: 5_000,
    }
}

/// Calls `to` from the impersonated timelock, as the execution of a passed vote would, and
/// waits for its receipt (anvil's automine answers before the block exists on a busy machine).
pub async fn as_timelock(node: &DynProvider, timelock: Address, to: Address, calldata: Vec<u8>) {
    let rpc = |method: &'static str, params: Value| async move {
        node.raw_request::<_, Value>(method.into(), params).await.unwrap()
    };
    rpc("anvil_impersonateAccount", json!([timelock])).await;
    rpc("anvil_setBalance", json!([timelock, "0x56bc75e2d63100000"])).await;
    let data = format!("0x{}", hex::encode(calldata));
    let sent = rpc("eth_sendTransaction", json!([{"from": timelock, "to": to, "data": data}])).await;
    let hash: B256 = serde_json::from_value(sent).unwrap();
    let receipt = loop {
        match node.get_transaction_receipt(hash).await.unwrap() {
            Some(receipt) => break receipt,
            None => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    assert!(receipt.status(), "the governance call reverted: {receipt:?}");
}
