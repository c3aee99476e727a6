//! The real `tgrid` binary against a real anvil with the real contracts (Deploy.s.sol through
//! `forge script`): a poster's deposit book and orders (posted without a relay, followed,
//! cancelled), a provider's bond, a dispute of an order the provider accepted and let expire,
//! and the refusals in between (exit 1 for what the chain's state forbids, 2 for bad input).
//! Then the same through a relay (a stub speaking the relay's wire format): orders published,
//! accepted, settled on-chain (a batch built in Rust; the verifier replaced by an accept-all stub,
//! as in tgrid-chain's market tests) and their results checked, or disputed with the acceptance
//! the relay recorded.

use std::ffi::OsStr;
use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::process::Command;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use alloy::network::EthereumWallet;
use alloy::primitives::{B256, U256};
use alloy::providers::{Provider, ProviderBuilder};
use serde_json::Value;
use tgrid_chain::market::relay::OutputView;
use tgrid_chain::market::{
    Acceptance, Market, MarketDomain, OrderView, RelayState, SettlementBatch, SettlementItem, SignedOrder,
};
use tgrid_chain::{Devnet, DevnetConfig};
use tgrid_circuits::{ModelFile, SegmentPlan};

const BIN: &str = env!("CARGO_BIN_EXE_tgrid");
/// Nothing listens on the discard port.
const NO_RELAY: &str = "http://127.0.0.1:9";

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

struct Tgrid {
    dir: PathBuf,
    env: Vec<(&'static str, String)>,
}

impl Tgrid {
    fn run<S: AsRef<OsStr> + Debug>(&self, args: &[S]) -> std::process::Output {
        let mut cmd = Command::new(BIN);
        cmd.arg("--json").args(args).current_dir(&self.dir);
        for name in [
            "TGRID_PRIVATE_KEY",
            "TGRID_KEYSTORE",
            "TGRID_KEYSTORE_PASSWORD",
            "TGRID_KEYSTORE_PASSWORD_FILE",
            "TGRID_RELAY_URL",
            "TGRID_STATE_DIR",
        ] {
            cmd.env_remove(name);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (*k, v.as_str()))).output().unwrap()
    }

    /// Runs and expects success; the JSON answer.
    fn ok<S: AsRef<OsStr> + Debug>(&self, args: &[S]) -> Value {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "tgrid {args:?} failed: {stderr}\n{}", String::from_utf8_lossy(&out.stdout));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("tgrid {args:?}: {e}: {stderr}"))
    }

    /// Runs and expects exit `code` with `message` in the error.
    fn fails<S: AsRef<OsStr> + Debug>(&self, args: &[S], code: i32, message: &str) {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "tgrid {args:?}: {stderr}");
        assert!(stderr.contains(message), "tgrid {args:?}: expected {message:?} in: {stderr}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["ok"], false);
    }
}

/// An encrypted keystore of `signer` (as `cast wallet import` writes) and its password file, in
/// `dir`: the provider signs through it, never with a key on the command line.
fn keystore_of(dir: &Path, signer: &alloy::signers::local::PrivateKeySigner) -> (String, String) {
    let password = dir.join("provider.password");
    std::fs::write(&password, "correct horse\n").unwrap();
    alloy::signers::local::PrivateKeySigner::encrypt_keystore(
        dir,
        &mut rand::thread_rng(),
        signer.to_bytes(),
        "correct horse",
        Some("provider.keystore"),
    )
    .unwrap();
    (dir.join("provider.keystore").display().to_string(), password.display().to_string())
}

/// A model file of a tiny model (its digests are placeholders: nothing proves here) and an input.
fn model_and_input(dir: &Path) -> (B256, String, String) {
    let model = tgrid_circuits::testing::tiny_model(7);
    let id = B256::from(model.model_id());
    let input: Vec<f32> = (0..model.input_len()).map(|i| (i % 7) as f32 * 0.1 - 0.3).collect();
    let file = ModelFile {
        model,
        plan: SegmentPlan::default(),
        circuit_digest: [1; 32],
        leaf_digest: [2; 32],
        report: "{}".into(),
    };
    let (m, i) = (dir.join("tiny.tgm"), dir.join("in.json"));
    std::fs::write(&m, file.to_bytes()).unwrap();
    std::fs::write(&i, serde_json::json!({ "input_data": [input] }).to_string()).unwrap();
    (id, m.display().to_string(), i.display().to_string())
}

#[test]
fn a_poster_and_a_provider_through_the_market_on_anvil() {
    let work = tempfile::tempdir().unwrap();
    let (model_id, model, input) = model_and_input(work.path());
    let config = DevnetConfig::new(repo_root()).deploy_env("TGRID_DEVNET_MODEL_ID", model_id.to_string());
    let devnet = Devnet::start(&config).expect("devnet");
    let t = Tgrid {
        dir: work.path().to_path_buf(),
        env: vec![
            ("TGRID_RPC_URL", devnet.rpc_url()),
            ("TGRID_DEPLOYMENT", devnet.deployment_path().display().to_string()),
        ],
    };
    let provider = devnet.signer(3);
    let (keystore, password_file) = keystore_of(work.path(), &provider);
    let with =
        |head: &[&str], tail: &[&str]| -> Vec<String> { head.iter().chain(tail).map(|s| s.to_string()).collect() };
    let as_provider = |args: &[&str]| with(&["--keystore", &keystore, "--password-file", &password_file], args);
    let post = |extra: &[&str]| with(&["order", "post", "--model", &model, "--input", &input], extra);

    // The poster (anvil account 0, holding the supply) funds a book of 10 orders of up to 10 TGRID.
    t.ok(&["token", "transfer", &provider.address().to_string(), "1000"]);
    let book = t.ok(&["deposit", "add", "105", "--per-order", "10"]);
    assert_eq!((book["book"].as_u64(), book["capacity"].as_u64()), (Some(0), Some(10)));
    assert_eq!(book["funded"], "100");
    assert!(book["gas"].as_u64().unwrap() > 0);

    // Orders below the minimum payment, with too long a deadline, or from a missing book are refused.
    t.fails(&post(&["--payment", "0.5", "--no-relay"]), 2, "below the market's minimum payment of 1 TGRID");
    t.fails(&post(&["--payment", "2", "--deadline-in", "99999999", "--no-relay"]), 2, "longest deadline");
    t.fails(&post(&["--payment", "2", "--book", "7", "--no-relay"]), 2, "has no book 7");
    t.fails(&post(&["--payment", "20", "--no-relay"]), 2, "no open book can pay 20 TGRID");

    // Post without a relay: signed, written, index 0 of book 0.
    let first = t.ok(&post(&["--payment", "10", "--no-relay"]));
    assert_eq!((first["book"].as_u64(), first["index"].as_u64()), (Some(0), Some(0)));
    assert_eq!(first["published"], false);
    let hash1 = first["order_hash"].as_str().unwrap().to_string();
    assert!(work.path().join(format!(".tgrid/orders/{hash1}.json")).exists());
    let stored_input = work.path().join(format!(".tgrid/inputs/{}.json", first["input_commitment"].as_str().unwrap()));
    assert!(stored_input.exists());

    let status = t.ok(&["order", "status", &hash1, "--relay", NO_RELAY]);
    assert_eq!(status["state"], "open", "{status}");
    assert_eq!(status["past_deadline"], false);
    assert!(status["relay"]["error"].is_string(), "{status}");

    // Cancelled by its poster; only once; not by anyone else.
    t.fails(&as_provider(&["order", "cancel", &hash1]), 2, "only its poster can cancel it");
    let cancelled = t.ok(&["order", "cancel", &hash1]);
    assert_eq!(cancelled["index"], 0);
    assert_eq!(t.ok(&["order", "status", &hash1, "--relay", NO_RELAY])["state"], "cancelled");
    t.fails(&["order", "cancel", &hash1], 1, "closed already (cancelled)");
    t.fails(&["order", "result", &hash1], 1, "was cancelled: it has no result");

    // The next order takes the next index, from the poster's state file; written where asked.
    let order2 = work.path().join("order2.json").display().to_string();
    let second = t.ok(&post(&["--payment", "10", "--collateral", "20", "--no-relay", "--out", &order2]));
    assert_eq!(second["index"], 1);
    let hash2 = second["order_hash"].as_str().unwrap().to_string();
    // Publishing to an unreachable relay fails after the order is saved (index 2 is taken).
    t.fails(&post(&["--payment", "3", "--relay", NO_RELAY]), 1, "tgrid order publish");
    assert_eq!(t.ok(&post(&["--payment", "3", "--no-relay"]))["index"], 3);

    // The provider bonds and accepts order 2 (a signed acceptance), then lets it expire.
    let staked = t.ok(&as_provider(&["stake", "add", "500"]));
    assert_eq!(staked["bonded"], "500");
    // Keys are never arguments (other processes read them): `--private-key` is no option. The
    // raw key in TGRID_PRIVATE_KEY signs as the same account; a wrong keystore password is a
    // clear error.
    let provider_key = provider.to_bytes().to_string();
    let refused = t.run(&["--private-key", provider_key.as_str(), "stake", "status"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--private-key"));
    let help = String::from_utf8_lossy(&t.run(&["--help"]).stdout).to_string();
    assert!(help.contains("--keystore") && !help.contains("--private-key"), "{help}");
    let from_env =
        Tgrid { dir: t.dir.clone(), env: [t.env.clone(), vec![("TGRID_PRIVATE_KEY", provider_key.clone())]].concat() };
    let added = from_env.ok(&["stake", "add", "1"]);
    assert_eq!(added["bonded"], "501", "the same account: {added}");
    let wrong_password = work.path().join("wrong.password").display().to_string();
    std::fs::write(&wrong_password, "incorrect horse").unwrap();
    t.fails(&["--keystore", &keystore, "--password-file", &wrong_password, "stake", "add", "1"], 2, "wrong password");
    // A read of a named account never opens the keystore: a wrong password does not stop it.
    let provider_address = provider.address().to_string();
    let read =
        t.ok(&["--keystore", &keystore, "--password-file", &wrong_password, "stake", "status", &provider_address]);
    assert_eq!(read["bonded"], "501", "{read}");
    let domain = MarketDomain::of(devnet.deployment());
    let acceptance = Acceptance::sign(hash2.parse().unwrap(), &provider, &domain).unwrap();
    let acceptance_file = work.path().join("acceptance.json").display().to_string();
    std::fs::write(&acceptance_file, serde_json::to_vec(&acceptance).unwrap()).unwrap();
    t.fails(&["dispute", &order2, "--acceptance", &acceptance_file], 1, "deadline has not passed");
    let wrong = Acceptance::sign(hash1.parse().unwrap(), &provider, &domain).unwrap();
    let wrong_file = work.path().join("wrong.json").display().to_string();
    std::fs::write(&wrong_file, serde_json::to_vec(&wrong).unwrap()).unwrap();
    t.fails(&["dispute", &order2, "--acceptance", &wrong_file], 2, &format!("the acceptance is of order {hash1}"));

    t.ok(&["devnet", "advance-time", "3601"]);
    let late = t.ok(&["order", "status", &order2, "--relay", NO_RELAY]);
    assert_eq!((late["state"].as_str(), late["past_deadline"].as_bool()), (Some("open"), Some(true)), "{late}");
    assert_eq!(late["disputable"], true);

    // Anyone disputes (here the poster, the order named by its hash): 50 % of the 20 TGRID
    // collateral slashed, half of that to the poster.
    let disputed = t.ok(&["dispute", &hash2, "--acceptance", &acceptance_file]);
    assert_eq!((disputed["slashed"].as_str(), disputed["to_poster"].as_str()), (Some("10"), Some("5")), "{disputed}");
    assert_eq!(disputed["provider"], provider.address().to_string());
    let after = t.ok(&["order", "status", &hash2, "--relay", NO_RELAY]);
    assert_eq!(after["state"], "disputed");
    assert_eq!(after["dispute"]["slashed"], "10");
    t.fails(&["dispute", &hash2, "--acceptance", &acceptance_file], 1, "is disputed: it can no longer be disputed");

    // The provider's bond: slashed once; unbonding; not withdrawable yet; no earnings.
    let bond = t.ok(&as_provider(&["stake", "status"]));
    assert_eq!((bond["bonded"].as_str(), bond["tasks_slashed"].as_u64()), (Some("491"), Some(1)), "{bond}");
    t.fails(&as_provider(&["stake", "unbond", "492"]), 2, "can unbond at most that");
    let unbonding = t.ok(&as_provider(&["stake", "unbond", "100"]));
    assert_eq!(unbonding["unbonding"], "100");
    t.fails(&as_provider(&["stake", "withdraw"]), 1, "is ready at unix time");
    t.fails(&as_provider(&["earnings", "withdraw"]), 1, "nothing to withdraw");
    let status = t.ok(&["stake", "status", &provider.address().to_string()]);
    assert_eq!((status["bonded"].as_str(), status["unbonding"].as_str()), (Some("391"), Some("100")));

    // The poster closes the book: it cannot be withdrawn before it unlocks, nor back new orders.
    t.fails(&["deposit", "withdraw", "0"], 1, "is open: close it first");
    let closed = t.ok(&["deposit", "close", "0"]);
    assert!(closed["unlock_at"].as_u64().unwrap() > 0);
    t.fails(&["deposit", "close", "0"], 1, "already closing");
    t.fails(&["deposit", "withdraw", "0"], 1, "it can be withdrawn from unix time");
    t.fails(&["deposit", "withdraw", "5"], 2, "has no book 5");
    t.fails(&post(&["--payment", "2", "--no-relay"]), 2, "no open book can pay 2 TGRID");
    let deposits = t.ok(&["deposit", "status"]);
    let b0 = &deposits["books"][0];
    assert_eq!((b0["state"].as_str(), b0["capacity"].as_u64()), (Some("closing"), Some(10)), "{deposits}");
    // 100 funded, nothing paid (the dispute pays the poster from the bond, not the book).
    assert_eq!(b0["remaining"], "100");
    let orders = b0["orders"].as_array().unwrap();
    assert_eq!(orders.len(), 4, "{deposits}");
    let used: Vec<bool> = orders.iter().map(|o| o["nonce_used"].as_bool().unwrap()).collect();
    assert_eq!(used, [true, true, false, false]);
    assert_eq!(orders[1]["hash"], hash2.as_str());
}

/// A relay stub: canned JSON answers by path; `POST /v1/orders` lists the posted order as open.
struct Relay {
    url: String,
    routes: Arc<Mutex<HashMap<String, String>>>,
}

impl Relay {
    fn start(domain: MarketDomain) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let routes = Arc::new(Mutex::new(HashMap::new()));
        let shared = routes.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                serve(stream, &shared, &domain);
            }
        });
        Self { url, routes }
    }

    fn set(&self, path: String, body: String) {
        self.routes.lock().unwrap().insert(path, body);
    }
}

fn serve(mut stream: TcpStream, routes: &Mutex<HashMap<String, String>>, domain: &MarketDomain) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request = String::new();
    reader.read_line(&mut request).unwrap();
    let mut parts = request.split_whitespace();
    let (method, path) = (parts.next().unwrap_or_default().to_string(), parts.next().unwrap_or_default().to_string());
    let mut len = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap() == 0 || header == "\r\n" {
            break;
        }
        if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).unwrap();
    let (status, answer) = if method == "POST" && path == "/v1/orders" {
        let signed: SignedOrder = serde_json::from_slice(&body).unwrap();
        let hash = signed.hash(domain);
        let view =
            serde_json::to_string(&OrderView { hash, signed, acceptance: None, state: RelayState::Open }).unwrap();
        routes.lock().unwrap().insert(format!("/v1/orders/{hash}"), view.clone());
        (201, view)
    } else {
        match routes.lock().unwrap().get(&path) {
            Some(b) => (200, b.clone()),
            None => (404, r#"{"error":"not_found","reason":"no such order"}"#.to_string()),
        }
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
        answer.len()
    );
}

#[test]
fn relayed_orders_settle_their_results_check_and_accepted_orders_are_disputed() {
    let work = tempfile::tempdir().unwrap();
    let (model_id, model, input) = model_and_input(work.path());
    let config = DevnetConfig::new(repo_root()).deploy_env("TGRID_DEVNET_MODEL_ID", model_id.to_string());
    let devnet = Devnet::start(&config).expect("devnet");
    let d = devnet.deployment().clone();
    let domain = MarketDomain::of(&d);
    let relay = Relay::start(domain);
    let t = Tgrid {
        dir: work.path().to_path_buf(),
        env: vec![
            ("TGRID_RPC_URL", devnet.rpc_url()),
            ("TGRID_DEPLOYMENT", devnet.deployment_path().display().to_string()),
        ],
    };
    let provider = devnet.signer(3);
    let (keystore, password_file) = keystore_of(work.path(), &provider);
    let with =
        |head: &[&str], tail: &[&str]| -> Vec<String> { head.iter().chain(tail).map(|s| s.to_string()).collect() };
    let as_provider = |args: &[&str]| with(&["--keystore", &keystore, "--password-file", &password_file], args);
    let post = |extra: &[&str]| with(&["order", "post", "--model", &model, "--input", &input], extra);
    let accept = |hash: &str| {
        let mut view: OrderView =
            serde_json::from_str(&relay.routes.lock().unwrap()[&format!("/v1/orders/{hash}")]).unwrap();
        view.acceptance = Some(Acceptance::sign(view.hash, &provider, &domain).unwrap());
        view.state = RelayState::Accepted;
        relay.set(format!("/v1/orders/{hash}"), serde_json::to_string(&view).unwrap());
        view
    };

    t.ok(&["token", "transfer", &provider.address().to_string(), "1000"]);
    t.ok(&as_provider(&["stake", "add", "100"]));
    t.ok(&["deposit", "add", "50", "--per-order", "10"]);

    // A private order names its provider, and its model's private mode must be registered: the
    // devnet registers the tiny model's public id only. Refused before anything is signed.
    let unnamed = t.run(&post(&["--payment", "10", "--private", "--relay", &relay.url]));
    assert_eq!(unnamed.status.code(), Some(2), "{}", String::from_utf8_lossy(&unnamed.stderr));
    assert!(String::from_utf8_lossy(&unnamed.stderr).contains("--provider"));
    let named = provider.address().to_string();
    t.fails(
        &post(&["--payment", "10", "--private", "--provider", &named, "--relay", &relay.url]),
        1,
        "the private mode of",
    );
    assert!(!work.path().join(".tgrid/orders").exists(), "nothing was signed");

    // Published to the relay, accepted there by the provider.
    let posted = t.ok(&post(&["--payment", "10", "--relay", &relay.url]));
    assert_eq!((posted["published"].as_bool(), posted["relay_state"].as_str()), (Some(true), Some("open")));
    let hash = posted["order_hash"].as_str().unwrap().to_string();
    let view = accept(&hash);
    let status = t.ok(&["order", "status", &hash, "--relay", &relay.url]);
    assert_eq!(status["state"], "accepted", "{status}");
    assert_eq!(status["accepted_by"], provider.address().to_string());
    t.fails(&["order", "result", &hash, "--relay", &relay.url], 1, "has not settled (open");

    // The provider's output settles in a batch (sent by anvil account 0, the deployment's sequencer).
    let output: Vec<i8> = vec![3, -1, 7, 0, -128, 127];
    let commitment = B256::from(tgrid_circuits::commit(&output).0);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let url: alloy::transports::http::reqwest::Url = devnet.rpc_url().parse().unwrap();
        let node = ProviderBuilder::new().wallet(EthereumWallet::from(devnet.signer(0))).connect_http(url).erased();
        node.raw_request::<_, Value>("anvil_setCode".into(), (d.verifier, "0x600160005260206000f3")).await.unwrap();
        let items = [SettlementItem {
            order: view.signed.clone(),
            provider: provider.address(),
            output_commitment: commitment,
        }];
        let call = SettlementBatch::build(&items).unwrap().call(d.registry_root, [U256::from(1u64); 8]);
        let market = Market::new(&d, node);
        let sent = market.contract().settleBatch(call.header, call.leaves, call.registryRoot, call.proof).send().await;
        tgrid_chain::confirm("settleBatch", sent).await.unwrap();
    });
    let status = t.ok(&["order", "status", &hash, "--relay", &relay.url]);
    assert_eq!(status["state"], "settled", "{status}");
    assert_eq!(status["settlement"]["paid"], true);
    assert_eq!(status["settlement"]["output_commitment"], commitment.to_string());

    // The published output checks against the settled commitment; another output does not.
    let published = OutputView {
        task_id: hash.clone(),
        output_commitment: commitment.to_string(),
        output: output.clone(),
        encrypted_output: None,
    };
    relay.set(format!("/v1/tasks/{hash}/output"), serde_json::to_string(&published).unwrap());
    let result = t.ok(&["order", "result", &hash, "--relay", &relay.url, "--model", &model]);
    assert_eq!(result["valid"], true);
    assert_eq!(result["output_int8"], serde_json::json!(output));
    assert_eq!(result["argmax"], 5);
    let tampered = work.path().join("tampered.json").display().to_string();
    std::fs::write(&tampered, serde_json::json!({"output_int8": [3, -1, 7, 0, -128, 126]}).to_string()).unwrap();
    t.fails(&["order", "result", &hash, "--output-file", &tampered], 1, "does NOT match");
    let other_model = work.path().join("other.tgm");
    let other = ModelFile {
        model: tgrid_circuits::testing::tiny_model(8),
        plan: SegmentPlan::default(),
        circuit_digest: [1; 32],
        leaf_digest: [2; 32],
        report: "{}".into(),
    };
    std::fs::write(&other_model, other.to_bytes()).unwrap();
    t.fails(&["order", "result", &hash, "--model", other_model.to_str().unwrap()], 2, "the order runs");

    // The provider is paid (10 TGRID less the 1 % protocol fee); the settler earned a fee share.
    let paid = t.ok(&as_provider(&["earnings", "withdraw"]));
    assert_eq!(paid["withdrawn"], "9.9");
    assert_eq!(t.ok(&["earnings", "withdraw"])["withdrawn"], "0.02");
    assert_eq!(t.ok(&as_provider(&["stake", "status"]))["tasks_settled"], 1);

    // An order accepted at the relay and never settled: disputed with the relay's acceptance.
    let second = t.ok(&post(&["--payment", "10", "--collateral", "40", "--relay", &relay.url, "--deadline-in", "600"]));
    let hash2 = second["order_hash"].as_str().unwrap().to_string();
    assert_eq!(second["index"], 1);
    t.fails(&["dispute", &hash2, "--relay", &relay.url], 2, "records no acceptance");
    accept(&hash2);
    t.ok(&["devnet", "advance-time", "601"]);
    // Found through the relay alone (not in this state directory).
    std::fs::remove_file(work.path().join(format!(".tgrid/orders/{hash2}.json"))).unwrap();
    let disputed = t.ok(&["dispute", &hash2, "--relay", &relay.url]);
    assert_eq!((disputed["slashed"].as_str(), disputed["to_poster"].as_str()), (Some("20"), Some("10")), "{disputed}");
    let bond = t.ok(&["stake", "status", &provider.address().to_string()]);
    assert_eq!((bond["bonded"].as_str(), bond["tasks_slashed"].as_u64()), (Some("80"), Some(1)), "{bond}");

    // An order signed without a relay is published later.
    let third = t.ok(&post(&["--payment", "5", "--no-relay"]));
    let file = third["order_file"].as_str().unwrap().to_string();
    let published = t.ok(&["order", "publish", &file, "--relay", &relay.url]);
    assert_eq!(published["relay_state"], "open");
    let status = t.ok(&["order", "status", third["order_hash"].as_str().unwrap(), "--relay", &relay.url]);
    assert_eq!(status["relay"]["state"], "open", "{status}");
}
