//! What the end-to-end tests on anvil share: the workspace's binaries run as a user would,
//! long-running services read line by line, DAO votes passed by moving anvil's clock.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

pub mod lying_relay;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The repository's root (tests run the binaries from there).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The body of a GET.
pub async fn http_get(url: &str) -> String {
    alloy::transports::http::reqwest::get(url).await.unwrap().text().await.unwrap()
}

/// A workspace binary; `cargo test --workspace` (what `make test` runs) builds them all first.
pub fn bin(name: &str) -> PathBuf {
    let dir = std::env::current_exe().unwrap().parent().unwrap().parent().unwrap().to_path_buf();
    let path = dir.join(name);
    assert!(path.exists(), "{} is missing: run the tests with `cargo test --workspace`", path.display());
    path
}

/// Runs a command to completion.
pub fn run(program: &str, args: &[&str], env: &[(&str, String)]) -> Output {
    Command::new(bin(program))
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .current_dir(repo_root())
        .output()
        .unwrap()
}

/// Runs a command that must succeed with `--json`; returns its last stdout line as JSON.
pub fn json(program: &str, args: &[&str], env: &[(&str, String)]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = run(program, &all, env);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{program} {args:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// The test-FRI devnet key: its id and verifying-key words.
pub fn wrap_key(keys: &Path) -> (String, String) {
    let v = json(
        "tgrid-sequencer",
        &["key", "--insecure-devnet-key", "--fri", "insecure-test", "--keys-dir", keys.to_str().unwrap()],
        &[],
    );
    assert_eq!(v["insecure"], true);
    let words: Vec<&str> = v["verifying_key_words"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    (v["id"].as_str().unwrap().into(), words.join(","))
}

/// A devnet whose market verifies with the INSECURE test-FRI devnet key (set up once and cached
/// in `keys`), deployed with `deploy_env` besides; set up and started off the async threads.
pub async fn start_devnet(keys: &Path, deploy_env: &[(&str, String)]) -> tgrid_chain::Devnet {
    let keys = keys.to_path_buf();
    let (key_id, key_words) = tokio::task::spawn_blocking(move || wrap_key(&keys)).await.unwrap();
    let mut config = tgrid_chain::DevnetConfig::new(repo_root())
        .deploy_env("TGRID_VERIFIER_KEY", key_words)
        .deploy_env("TGRID_VERIFIER_KEY_ID", key_id);
    for (name, value) in deploy_env {
        config = config.deploy_env(*name, value.clone());
    }
    tokio::task::spawn_blocking(move || tgrid_chain::Devnet::start(&config)).await.unwrap().expect("devnet")
}

/// The environment of `tgrid` on `devnet`: it signs as anvil account 0 unless told otherwise,
/// its signed orders and poster state live in `state_dir`.
pub fn poster_env(devnet: &tgrid_chain::Devnet, state_dir: String) -> [(&'static str, String); 3] {
    [
        ("TGRID_RPC_URL", devnet.rpc_url()),
        ("TGRID_DEPLOYMENT", devnet.deployment_path().display().to_string()),
        ("TGRID_STATE_DIR", state_dir),
    ]
}

/// A long-running child, killed when dropped; its stdout lines arrive on a channel.
pub struct Service {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Service {
    pub fn start(program: &str, args: &[&str], env: &[(String, String)], log: &Path) -> Self {
        let mut child = Command::new(bin(program))
            .args(args)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("RUST_LOG", "info")
            .current_dir(repo_root())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self { child, lines }
    }

    /// The next stdout line parsed as JSON, within `limit`.
    pub fn next_json(&self, limit: Duration, what: &str) -> Value {
        let line = self.lines.recv_timeout(limit).unwrap_or_else(|e| panic!("no {what} within {limit:?}: {e}"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{what}: {e}: {line:?}"))
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Proposes with `tgrid`, then votes, queues and executes, moving anvil's clock as needed.
pub fn pass_proposal(env: &[(&str, String)], propose: &[&str]) -> Value {
    let mut args = vec!["dao", "propose"];
    args.extend_from_slice(propose);
    let proposal = json("tgrid", &args, env);
    let id = proposal["proposal_id"].as_str().unwrap().to_string();
    json("tgrid", &["devnet", "advance-time", "--voting-open", &id], env);
    json("tgrid", &["dao", "vote", &id], env);
    json("tgrid", &["devnet", "advance-time", "--past-voting", &id], env);
    json("tgrid", &["dao", "queue", &id], env);
    json("tgrid", &["devnet", "advance-time", "--past-timelock", &id], env);
    json("tgrid", &["dao", "execute", &id], env);
    let status = json("tgrid", &["dao", "status", &id], env);
    assert_eq!(status["state"], "executed", "{status}");
    proposal
}

/// `pairs` as environment variables named `prefix` + key.
fn prefixed(prefix: &str, pairs: Vec<(&str, String)>) -> Vec<(String, String)> {
    pairs.into_iter().map(|(k, v)| (format!("{prefix}{k}"), v)).collect()
}

/// A devnet `tgrid-sequencer run`'s environment: what every test's sequencer shares (the INSECURE
/// test FRI parameters and devnet key cached in `keys`, an ephemeral port, a fast poll) and the
/// test's own `specific` settings.
pub fn sequencer_env(keys: &Path, specific: Vec<(&str, String)>) -> Vec<(String, String)> {
    let mut all = vec![
        ("LISTEN", "127.0.0.1:0".into()),
        ("MAX_BATCH_AGE_SECS", "3600".into()),
        ("DEADLINE_MARGIN_SECS", "60".into()),
        ("WRAP_FRI", "insecure-test".into()),
        ("INSECURE_DEVNET_KEY", "true".into()),
        ("INSECURE_DEVNET_KEYS_DIR", keys.display().to_string()),
        ("POLL_INTERVAL_MS", "200".into()),
    ];
    all.extend(specific);
    prefixed("TGRID_SEQUENCER_", all)
}

/// A devnet provider daemon's (`tgrid-prover run`) environment: what every test's daemon shares
/// (a 1,000 TGRID stake, the settlement margins, the INSECURE test wrap and devnet key cached in
/// `keys`, a fast poll) and the test's own `specific` settings.
pub fn provider_env(keys: &Path, specific: Vec<(&str, String)>) -> Vec<(String, String)> {
    let mut all = vec![
        ("STAKE_TGRID", "1000".into()),
        ("SETTLE_MARGIN_SECS", "1200".into()),
        ("SELF_SETTLE_BEFORE_SECS", "900".into()),
        ("WRAP_FRI", "insecure-test".into()),
        ("WRAP_KEY", "insecure-devnet".into()),
        ("INSECURE_DEVNET_KEYS_DIR", keys.display().to_string()),
        ("POLL_INTERVAL_MS", "300".into()),
    ];
    all.extend(specific);
    prefixed("TGRID_PROVIDER_", all)
}

/// Waits for the daemon's events until `done` says enough; returns them all.
pub fn events_until(
    service: &Service,
    limit: Duration,
    what: &str,
    mut done: impl FnMut(&[Value]) -> bool,
) -> Vec<Value> {
    let started = Instant::now();
    let mut events = Vec::new();
    while !done(&events) {
        let left = limit.saturating_sub(started.elapsed());
        assert!(!left.is_zero(), "{what}: not within {limit:?}; events so far: {events:?}");
        events.push(service.next_json(left, what));
    }
    events
}

pub fn count(events: &[Value], kind: &str) -> usize {
    events.iter().filter(|e| e["event"] == kind).count()
}

pub async fn chain_now(provider: &alloy::providers::DynProvider) -> u64 {
    tgrid_chain::chain_now(provider).await.unwrap()
}
