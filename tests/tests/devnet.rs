//! Every role end to end on a real anvil with the real contracts, through the real binaries:
//! the model owner compiles a bundled model, the DAO registers it and changes a parameter by
//! vote, a provider daemon stakes, accepts, proves and submits, the sequencer service batches,
//! wraps and settles, the task poster checks every output against the settled commitment (and
//! catches a tampered one), an auditor re-verifies the batch from calldata, a provider that
//! lets its task expire is slashed, and the provider collects its pay: one task with
//! `tgrid stake claim`, the rest by the restarted daemon's automatic claim.
//!
//! The wrap uses the INSECURE test FRI parameters and the INSECURE devnet Groth16 key (cached in
//! target/tgrid-test-keys, shared with the sequencer's tests).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use alloy::network::EthereumWallet;
use alloy::primitives::{B256, U256};
use alloy::providers::ProviderBuilder;
use serde_json::Value;
use tgrid_chain::bindings::{ISettlement, IStaking, ITaskEscrow, IERC20};
use tgrid_chain::{Devnet, DevnetConfig};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// A workspace binary; `cargo test --workspace` (what `make test` runs) builds them all first.
fn bin(name: &str) -> PathBuf {
    let dir = std::env::current_exe().unwrap().parent().unwrap().parent().unwrap().to_path_buf();
    let path = dir.join(name);
    assert!(path.exists(), "{} is missing: run the tests with `cargo test --workspace`", path.display());
    path
}

fn ether(n: u64) -> U256 {
    U256::from(n) * U256::from(10u64).pow(U256::from(18u64))
}

/// Runs a command to completion.
fn run(program: &str, args: &[&str], env: &[(&str, String)]) -> Output {
    Command::new(bin(program))
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .current_dir(repo_root())
        .output()
        .unwrap()
}

/// Runs a command that must succeed with `--json`; returns its last stdout line as JSON.
fn json(program: &str, args: &[&str], env: &[(&str, String)]) -> Value {
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
fn wrap_key(keys: &Path) -> (String, String) {
    let v = json(
        "tgrid-sequencer",
        &["key", "--insecure-devnet-key", "--fri", "insecure-test", "--keys-dir", keys.to_str().unwrap()],
        &[],
    );
    assert_eq!(v["insecure"], true);
    let words: Vec<&str> = v["verifying_key_words"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    (v["id"].as_str().unwrap().into(), words.join(","))
}

/// A long-running child, killed when dropped; its stdout lines arrive on a channel.
struct Service {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Service {
    fn start(program: &str, args: &[&str], env: &[(String, String)], log: &Path) -> Self {
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
    fn next_json(&self, limit: Duration, what: &str) -> Value {
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
fn pass_proposal(env: &[(&str, String)], propose: &[&str]) -> Value {
    let mut args = vec!["dao", "propose"];
    args.extend_from_slice(propose);
    let proposal = json("tgrid", &args, env);
    let id = proposal["proposal_id"].as_str().unwrap().to_string();
    json("tgrid", &["devnet", "advance-time", "2"], env);
    json("tgrid", &["dao", "vote", &id], env);
    json("tgrid", &["devnet", "advance-time", "--past-voting", &id], env);
    json("tgrid", &["dao", "queue", &id], env);
    json("tgrid", &["devnet", "advance-time", "--past-timelock", &id], env);
    json("tgrid", &["dao", "execute", &id], env);
    let status = json("tgrid", &["dao", "status", &id], env);
    assert_eq!(status["state"], "executed", "{status}");
    proposal
}

#[tokio::test(flavor = "multi_thread")]
async fn every_role_end_to_end_on_anvil() {
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

    // Devnet: the verifier is a Groth16KeyedVerifier for the test-FRI devnet key.
    let keys_for_setup = keys.clone();
    let (key_id, key_words) = tokio::task::spawn_blocking(move || wrap_key(&keys_for_setup)).await.unwrap();
    let config = DevnetConfig::new(repo_root())
        .deploy_env("TGRID_DEVNET_MODEL_ID", B256::ZERO.to_string())
        .deploy_env("TGRID_VERIFIER_KEY", key_words)
        .deploy_env("TGRID_VERIFIER_KEY_ID", key_id);
    let devnet = tokio::task::spawn_blocking(move || Devnet::start(&config)).await.unwrap().expect("devnet");
    let d = devnet.deployment().clone();
    let rpc = devnet.rpc_url();
    let deployment = devnet.deployment_path().display().to_string();
    // `tgrid` signs as anvil account 0 (the token holder) unless told otherwise.
    let env = [("TGRID_RPC_URL", rpc.clone()), ("TGRID_DEPLOYMENT", deployment.clone())];
    let url: alloy::transports::http::reqwest::Url = rpc.parse().unwrap();
    let wallet =
        |i: usize| ProviderBuilder::new().wallet(EthereumWallet::from(devnet.signer(i))).connect_http(url.clone());
    let reader = wallet(0);

    // Unknown tasks and malformed ids are bad input (exit 2), not crashes.
    assert_eq!(run("tgrid", &["task", "status", "0x1234"], &env).status.code(), Some(2));
    assert_eq!(run("tgrid", &["task", "status", &format!("{}", B256::repeat_byte(7))], &env).status.code(), Some(2));

    // DAO: delegate, register the model, and change a parameter, each by a vote.
    json("tgrid", &["dao", "delegate"], &env);
    json("tgrid", &["devnet", "advance-time", "1"], &env);
    let registration = pass_proposal(&env, &["register-models", "--registry", &w("registry.json")]);
    assert!(registration["description"].as_str().unwrap().contains("mlp"), "{registration}");
    pass_proposal(&env, &["max-batch-size", "32"]);
    assert_eq!(ISettlement::new(d.settlement, &reader).maxBatchSize().call().await.unwrap(), U256::from(32u64));
    let listed = json("tgrid-verifier", &["registry", "--rpc", &rpc, "--deployment", &deployment], &[]);
    assert_eq!(listed["models"][0]["model_id"], model_id.to_lowercase());
    // Proposing what is already registered is refused.
    let again = run("tgrid", &["dao", "propose", "register-models", "--registry", &w("registry.json")], &env);
    assert_eq!(again.status.code(), Some(2), "{}", String::from_utf8_lossy(&again.stderr));

    // Fund the provider (anvil 1, the daemon) and a lazy provider (anvil 2) that will let its task expire.
    let daemon_addr = devnet.address(1).to_string();
    json("tgrid", &["token", "transfer", &daemon_addr, "2000"], &env);
    json("tgrid", &["token", "transfer", &devnet.address(2).to_string(), "500"], &env);
    let lazy = wallet(2);
    IERC20::new(d.token, &lazy).approve(d.staking, ether(500)).send().await.unwrap().get_receipt().await.unwrap();
    IStaking::new(d.staking, &lazy).stake(ether(500)).send().await.unwrap().get_receipt().await.unwrap();

    // Task inputs: test digits from the calibration set.
    let calibration: Value =
        serde_json::from_slice(&std::fs::read(repo_root().join("fixtures/mlp/calibration.json")).unwrap()).unwrap();
    let input = |i: usize| {
        let path = w(&format!("input-{i}.json"));
        std::fs::write(&path, serde_json::json!({"input_data": [calibration["input_data"][i]]}).to_string()).unwrap();
        path
    };
    let post = |i: usize, deadline_in: &str| {
        let v = json(
            "tgrid",
            &[
                "task",
                "post",
                "--model",
                &w("mlp.tgm"),
                "--input",
                &input(i),
                "--payment",
                "10",
                "--priority-fee",
                "0.5",
                "--deadline-in",
                deadline_in,
                "--inputs-dir",
                &w("inputs"),
            ],
            &env,
        );
        v["task_id"].as_str().unwrap().to_string()
    };
    // A deadline outside the escrow's bounds is refused before anything is sent.
    let too_soon = run(
        "tgrid",
        &["task", "post", "--model", &w("mlp.tgm"), "--input", &input(0), "--payment", "1", "--deadline-in", "60"],
        &env,
    );
    assert_eq!(too_soon.status.code(), Some(2), "{}", String::from_utf8_lossy(&too_soon.stderr));
    assert!(String::from_utf8_lossy(&too_soon.stderr).contains("outside the escrow's bounds"));
    // The lazy provider takes the first task (before the daemon runs) and never proves it.
    let lazy_task = post(9, "900");
    ITaskEscrow::new(d.escrow, &lazy)
        .acceptTask(lazy_task.parse().unwrap())
        .send()
        .await
        .unwrap()
        .get_receipt()
        .await
        .unwrap();

    // The sequencer service and the provider daemon.
    let seq_env: Vec<(String, String)> = [
        ("RPC_URL", rpc.clone()),
        ("DEPLOYMENT", deployment.clone()),
        ("REGISTRY", w("registry.json")),
        ("DATA_DIR", w("sequencer")),
        ("LISTEN", "127.0.0.1:0".into()),
        ("MAX_BATCH_TASKS", "3".into()),
        ("MAX_BATCH_AGE_SECS", "900".into()),
        ("WRAP_FRI", "insecure-test".into()),
        ("INSECURE_DEVNET_KEYS_DIR", keys.display().to_string()),
        ("POLL_INTERVAL_MS", "200".into()),
    ]
    .into_iter()
    .map(|(k, v)| (format!("TGRID_SEQUENCER_{k}"), v))
    .collect();
    let sequencer = Service::start("tgrid-sequencer", &["run"], &seq_env, &work.path().join("sequencer.log"));
    let ready = sequencer.next_json(Duration::from_secs(120), "the sequencer's ready line");
    let seq_url = format!("http://{}", ready["listening"].as_str().unwrap());
    let provider_env: Vec<(String, String)> = [
        ("RPC_URL", rpc.clone()),
        ("DEPLOYMENT", deployment.clone()),
        ("MODELS", w("mlp.tgm")),
        ("INPUTS_DIR", w("inputs")),
        ("SEQUENCER_URL", seq_url.clone()),
        ("DATA_DIR", w("provider")),
        ("STAKE_TGRID", "1000".into()),
        ("POLL_INTERVAL_MS", "300".into()),
    ]
    .into_iter()
    .map(|(k, v)| (format!("TGRID_PROVIDER_{k}"), v))
    .collect();
    // First without automatic claims, so the pay waits for `tgrid stake claim` (below).
    let mut manual_claims = provider_env.clone();
    manual_claims.push(("TGRID_PROVIDER_AUTO_CLAIM".into(), "false".into()));
    let provider =
        Service::start("tgrid-prover", &["--json", "run"], &manual_claims, &work.path().join("provider.log"));
    let ready = provider.next_json(Duration::from_secs(120), "the provider's ready line");
    assert_eq!(ready["event"], "staked", "{ready}");
    let ready = provider.next_json(Duration::from_secs(60), "the provider's ready line");
    assert_eq!(ready["event"], "ready", "{ready}");
    assert_eq!(ready["bonded"], "1000");

    // The poster posts three tasks; the daemon proves them, the sequencer settles one batch.
    let tasks: Vec<(String, usize)> = (0..3).map(|i| (post(i, "3600"), i)).collect();
    let mut events = Vec::new();
    let mut settled = 0;
    while settled < 3 {
        let e = provider.next_json(Duration::from_secs(900), "provider events until three tasks settle");
        settled += usize::from(e["event"] == "settled");
        events.push(e);
    }
    let count = |kind: &str| events.iter().filter(|e| e["event"] == kind).count();
    assert_eq!((count("accepted"), count("proven"), count("submitted")), (3, 3, 3), "{events:?}");
    // Each task's pay is fixed at settlement: the 10.5 TGRID reward minus the 1 % protocol fee.
    for e in events.iter().filter(|e| e["event"] == "settled") {
        assert_eq!((e["pay"].as_str(), e["claimable"].as_bool()), (Some("10.395"), Some(true)), "{e}");
    }
    assert_eq!(count("claimed"), 0, "auto_claim is off: {events:?}");
    let skipped: Vec<&Value> = events.iter().filter(|e| e["event"] == "skipped").collect();
    assert_eq!(skipped.len(), 1, "{events:?}");
    assert_eq!(skipped[0]["task_id"], lazy_task);
    assert!(skipped[0]["reason"].as_str().unwrap().contains("no longer open"), "{skipped:?}");

    // The poster fetches each output from the sequencer and checks it against the chain; it is
    // exactly the int8 inference of the committed input.
    let mut batch_roots = std::collections::BTreeSet::new();
    for (task, i) in &tasks {
        let result = json(
            "tgrid",
            &[
                "task",
                "result",
                task,
                "--sequencer",
                &seq_url,
                "--model",
                &w("mlp.tgm"),
                "--out",
                &w(&format!("result-{i}.json")),
            ],
            &env,
        );
        assert_eq!(result["valid"], true);
        let inferred = json("tgrid-prover", &["infer", &w("mlp.tgm"), "--input", &input(*i)], &[]);
        assert_eq!(result["output_int8"], inferred["output_int8"], "task {task}");
        assert_eq!(result["argmax"], inferred["argmax"]);
        let audit = json(
            "tgrid-verifier",
            &["task", task, "--rpc", &rpc, "--deployment", &deployment, "--output", &w(&format!("result-{i}.json"))],
            &[],
        );
        assert_eq!(audit["status"], "settled");
        assert_eq!(audit["output_matches"], true);
        batch_roots.insert(audit["batch_root"].as_str().unwrap().to_string());
    }

    // A tampered output is caught by the poster's check and by the auditor's.
    let mut tampered: Value = serde_json::from_slice(&std::fs::read(w("result-0.json")).unwrap()).unwrap();
    tampered["output_int8"][0] = Value::from(tampered["output_int8"][0].as_i64().unwrap() ^ 1);
    std::fs::write(w("tampered.json"), tampered.to_string()).unwrap();
    let check = run("tgrid", &["task", "result", &tasks[0].0, "--output-file", &w("tampered.json")], &env);
    assert_eq!(check.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&check.stderr).contains("does NOT match"),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let audit = run(
        "tgrid-verifier",
        &["task", &tasks[0].0, "--rpc", &rpc, "--deployment", &deployment, "--output", &w("tampered.json")],
        &[],
    );
    assert_eq!(audit.status.code(), Some(1));

    // The auditor re-verifies the one settled batch from its calldata.
    assert_eq!(batch_roots.len(), 1, "{batch_roots:?}");
    let root = batch_roots.into_iter().next().unwrap();
    let batch = json(
        "tgrid-verifier",
        &["batch", &root, "--rpc", &rpc, "--deployment", &deployment, "--keys-dir", keys.to_str().unwrap()],
        &[],
    );
    assert_eq!(batch["valid"], true);
    assert_eq!(batch["count"], 3);
    assert_eq!(batch["insecure_key"], true);
    let verify_gas = batch["verify_gas"].as_u64().unwrap();
    assert!((150_000..260_000).contains(&verify_gas), "verifyProof gas {verify_gas}");
    // The wrong key is refused.
    let wrong = run(
        "tgrid-verifier",
        &["batch", &root, "--rpc", &rpc, "--deployment", &deployment, "--keys-dir", &w("no-keys")],
        &[],
    );
    assert_eq!(wrong.status.code(), Some(2));

    // The lazy provider misses its deadline: the poster expires the task, gets the payment back
    // and part of the collateral; the provider's reputation records the slash.
    let early = run("tgrid", &["task", "expire", &lazy_task], &env);
    assert_eq!(early.status.code(), Some(1), "expiring before the deadline must be refused");
    json("tgrid", &["devnet", "advance-time", "1000"], &env);
    let expired = json("tgrid", &["task", "expire", &lazy_task], &env);
    assert_eq!(expired["provider"].as_str().unwrap().to_lowercase(), devnet.address(2).to_string().to_lowercase());
    assert_ne!(expired["slashed_to_poster"], "0", "{expired}");
    assert_eq!(expired["refund"], "10.5");
    let staking = IStaking::new(d.staking, &reader);
    let lazy_rep = staking.reputation(devnet.address(2)).call().await.unwrap();
    assert_eq!((lazy_rep.settled, lazy_rep.slashed), (U256::ZERO, U256::from(1u64)));
    // The provider's three tasks are settled but not claimed: reputation counts claimed tasks.
    let rep = staking.reputation(devnet.address(1)).call().await.unwrap();
    assert_eq!((rep.settled, rep.slashed), (U256::ZERO, U256::ZERO));
    let status = json("tgrid", &["task", "status", &lazy_task], &env);
    assert_eq!(status["status"], "expired");
    drop(provider);
    drop(sequencer);

    // The provider collects its pay: the settled tasks' collateral (10.5 each) stays locked until
    // then. It claims one task with `tgrid`; the balance rises by exactly what was claimed.
    let provider_key = B256::from(devnet.signer(1).to_bytes()).to_string();
    let mut provider_cli = env.to_vec();
    provider_cli.push(("TGRID_PRIVATE_KEY", provider_key));
    let tgrid = |s: &str| tgrid_chain::parse_tgrid(s).unwrap();
    let balance = || tgrid(json("tgrid", &["token", "balance"], &provider_cli)["balance"].as_str().unwrap());
    let stake = json("tgrid", &["stake", "status"], &provider_cli);
    assert_eq!((stake["bonded"].as_str(), stake["locked"].as_str()), (Some("1000"), Some("31.5")), "{stake}");
    assert_eq!((stake["claimable"].as_str(), stake["claimable_tasks"].as_u64()), (Some("31.185"), Some(3)), "{stake}");
    assert_eq!((stake["claim_releases"].as_str(), stake["tasks_settled"].as_u64()), (Some("31.5"), Some(0)), "{stake}");
    let before = balance();
    let one = json("tgrid", &["stake", "claim", &tasks[0].0], &provider_cli);
    assert_eq!((one["tasks"].as_u64(), one["paid"].as_str()), (Some(1), Some("10.395")), "{one}");
    assert_eq!(one["collateral_released"], "10.5", "{one}");
    assert_eq!(one["transactions"].as_array().unwrap().len(), 1, "{one}");
    let after_one = balance();
    assert_eq!(after_one, before + tgrid(one["paid"].as_str().unwrap()));
    let stake = json("tgrid", &["stake", "status"], &provider_cli);
    assert_eq!((stake["locked"].as_str(), stake["claimable_tasks"].as_u64()), (Some("21"), Some(2)), "{stake}");
    assert_eq!(stake["tasks_settled"], 1);
    // The same task again, the lazy provider's expired task: refused as bad input, nothing sent.
    let again = run("tgrid", &["stake", "claim", &tasks[0].0], &provider_cli);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("already claimed"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let foreign = run("tgrid", &["stake", "claim", &lazy_task], &provider_cli);
    assert_eq!(foreign.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&foreign.stderr).contains("not settled"),
        "{}",
        String::from_utf8_lossy(&foreign.stderr)
    );
    assert_eq!(balance(), after_one);

    // The daemon restarts with automatic claims (the default): it resumes from its state file and
    // claims the two other tasks in one transaction, seeing that the first was claimed already.
    let provider =
        Service::start("tgrid-prover", &["--json", "run"], &provider_env, &work.path().join("provider-2.log"));
    let ready = provider.next_json(Duration::from_secs(120), "the restarted provider's ready line");
    assert_eq!((ready["event"].as_str(), ready["unclaimed_tasks"].as_u64()), (Some("ready"), Some(3)), "{ready}");
    assert_eq!(ready["auto_claim"], true);
    let claimed = loop {
        let e = provider.next_json(Duration::from_secs(60), "the daemon's claim");
        if e["event"] == "claimed" {
            break e;
        }
    };
    assert_eq!((claimed["tasks"].as_u64(), claimed["paid"].as_str()), (Some(2), Some("20.79")), "{claimed}");
    assert_eq!(claimed["collateral_released"], "21", "{claimed}");
    drop(provider);
    let after = balance();
    assert_eq!(after, after_one + tgrid("20.79"));
    let stake = json("tgrid", &["stake", "status"], &provider_cli);
    assert_eq!((stake["locked"].as_str(), stake["claimable"].as_str()), (Some("0"), Some("0")), "{stake}");
    assert_eq!((stake["claimable_tasks"].as_u64(), stake["tasks_settled"].as_u64()), (Some(0), Some(3)), "{stake}");
    let rep = staking.reputation(devnet.address(1)).call().await.unwrap();
    assert_eq!((rep.settled, rep.slashed), (U256::from(3u64), U256::ZERO));
    let nothing = run("tgrid", &["stake", "claim"], &provider_cli);
    assert_eq!(nothing.status.code(), Some(2), "nothing left to claim");
    assert!(
        String::from_utf8_lossy(&nothing.stderr).contains("nothing to claim"),
        "{}",
        String::from_utf8_lossy(&nothing.stderr)
    );

    // Then it unbonds part of its stake (all of it free again) and withdraws it once the
    // unbonding delay has passed.
    assert_eq!(run("tgrid", &["stake", "unbond", "1001"], &provider_cli).status.code(), Some(2), "over the free stake");
    let unbonding = json("tgrid", &["stake", "unbond", "400"], &provider_cli);
    assert_eq!(unbonding["unbonding"], "400");
    let early = run("tgrid", &["stake", "withdraw"], &provider_cli);
    assert_eq!(early.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&early.stderr).contains("ready in"), "{}", String::from_utf8_lossy(&early.stderr));
    let now = json("tgrid", &["devnet", "advance-time", "1"], &env)["chain_time"].as_u64().unwrap();
    let wait = unbonding["ready_at"].as_u64().unwrap().saturating_sub(now);
    json("tgrid", &["devnet", "advance-time", &wait.to_string()], &env);
    let withdrawn = json("tgrid", &["stake", "withdraw"], &provider_cli);
    assert_eq!(withdrawn["withdrawn"], "400");
    let stake = json("tgrid", &["stake", "status"], &provider_cli);
    assert_eq!((stake["bonded"].as_str(), stake["unbonding"].as_str()), (Some("600"), Some("0")), "{stake}");
    assert_eq!(balance(), after + tgrid("400"));
    eprintln!("every role end to end: {:.0} s", started.elapsed().as_secs_f64());
}
