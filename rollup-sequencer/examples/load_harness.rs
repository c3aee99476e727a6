//! Load harness of the sequencer service (a benchmark, not a test): a real anvil with the real
//! contracts, `--tasks` tasks posted and accepted by `--providers` staked providers, each proven
//! for the tiny test model; then the service (in this process, loopback only) receives
//!   warm-up: one result alone, once the pipeline is ready (first connection, first chain reads);
//!   phase 1: the first half of the results as fast as `--concurrency` clients can send them
//!            (throughput of acknowledged, verified submissions);
//!   phase 2: the second half paced at `--rate` requests per second (acknowledgement latency).
//! Every acknowledgement is the full ingest: proof verified, chain state read, record flushed.
//! The pipeline runs too (it proves a leaf for every acknowledged task), as in production.
//! Prints one JSON object. Bounded: at most `--tasks` requests, each with a 30 s timeout.
//! stderr marks the start of each phase, so a profiler can be attached to the burst alone.
//!
//!   cargo run --release --locked -p tgrid-sequencer --example load_harness -- --tasks 400

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy::network::EthereumWallet;
use alloy::primitives::{Address, B256, U256};
use alloy::providers::{Provider, ProviderBuilder};
use anyhow::{Context, Result};
use serde_json::json;
use tgrid_aggregation::{LeafCircuit, RegistryFile, RegistryFileEntry};
use tgrid_chain::bindings::IERC20;
use tgrid_chain::market::{Acceptance, Market, MarketDomain, Order, ResultSubmission, SignedOrder};
use tgrid_chain::{Devnet, DevnetConfig};
use tgrid_circuits::testing::{random_input, tiny_model};
use tgrid_circuits::{commit, ModelFile, SegmentPlan, TaskProver, TaskVerifier};
use tgrid_sequencer::service::{Settings, WrapFri};

struct Args {
    tasks: usize,
    providers: usize,
    concurrency: usize,
    rate: u64,
}

fn args() -> Result<Args> {
    let mut a = Args { tasks: 400, providers: 8, concurrency: 16, rate: 50 };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        let n: usize = value.parse().with_context(|| format!("{flag} {value:?} is not a number"))?;
        match flag.as_str() {
            "--tasks" => a.tasks = n.clamp(2, 5_000),
            "--providers" => a.providers = n.clamp(1, 9),
            "--concurrency" => a.concurrency = n.clamp(1, 256),
            "--rate" => a.rate = (n as u64).clamp(1, 1_000),
            other => anyhow::bail!("unknown option {other} (--tasks, --providers, --concurrency, --rate)"),
        }
    }
    Ok(a)
}

fn ether(n: u64) -> U256 {
    U256::from(n) * U256::from(10u64).pow(U256::from(18u64))
}

fn percentile(sorted_ms: &[f64], p: f64) -> f64 {
    if sorted_ms.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted_ms.len() as f64).ceil() as usize;
    sorted_ms[rank.clamp(1, sorted_ms.len()) - 1]
}

/// `(sum, count)` of each stage of `tgrid_sequencer_ingest_stage_seconds` in a Prometheus text
/// exposition.
fn stage_sums(metrics: &str) -> std::collections::BTreeMap<String, (f64, f64)> {
    let mut out = std::collections::BTreeMap::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix("tgrid_sequencer_ingest_stage_seconds_") else { continue };
        let Some((kind, rest)) = rest.split_once("{stage=\"") else { continue };
        let Some((stage, value)) = rest.split_once("\"} ") else { continue };
        let Ok(value) = value.trim().parse::<f64>() else { continue };
        match kind {
            "sum" => out.entry(stage.to_string()).or_insert((0.0, 0.0)).0 = value,
            "count" => out.entry(stage.to_string()).or_insert((0.0, 0.0)).1 = value,
            _ => {}
        }
    }
    out
}

fn main() -> Result<()> {
    let args = args()?;
    tracing_subscriber::fmt().with_env_filter("warn,gr1cs=off").with_writer(std::io::stderr).init();
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().context("repo root")?.to_path_buf();
    let work = tempfile::tempdir()?;

    // The tiny model, registered at deployment.
    let model = tiny_model(1);
    let plan = SegmentPlan::default();
    let verifier = TaskVerifier::new(&model, &plan)?;
    let circuit_digest = verifier.circuit_digest();
    let leaf_circuit = LeafCircuit::new(verifier)?;
    let file = ModelFile {
        model: model.clone(),
        plan: plan.clone(),
        circuit_digest,
        leaf_digest: leaf_circuit.digest(),
        report: "{}".into(),
    };
    std::fs::write(work.path().join("model.tgm"), file.to_bytes())?;
    let mut registry = RegistryFile::empty(work.path().to_path_buf());
    let root = registry.upsert(RegistryFileEntry {
        name: "tiny".into(),
        model_id: format!("0x{}", hex::encode(model.model_id())),
        leaf_digest: format!("0x{}", hex::encode(leaf_circuit.digest())),
        model_file: "model.tgm".into(),
    })?;
    registry.save(&work.path().join("registry.json"))?;
    let model_id = model.model_id();

    let config = DevnetConfig::new(&repo)
        .deploy_env("TGRID_REGISTRY_ROOT", B256::from(root).to_string())
        .deploy_env("TGRID_DEVNET_MODEL_ID", B256::from(model_id).to_string())
        .deploy_env("TGRID_DEVNET_CIRCUIT_DIGEST", B256::from(leaf_circuit.digest()).to_string());
    let devnet = Devnet::start(&config)?;
    let d = devnet.deployment().clone();
    let url: alloy::transports::http::reqwest::Url = devnet.rpc_url().parse()?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;

    // Providers bond; the poster opens one book and signs every order; provider i % P accepts
    // order i (signatures only: nothing on-chain per order).
    let started = Instant::now();
    let domain = MarketDomain::of(&d);
    let poster_key = devnet.signer(0);
    let tasks: Vec<(SignedOrder, Acceptance, Vec<i8>, usize)> = runtime.block_on(async {
        let wallet = |i: usize| {
            ProviderBuilder::new().wallet(EthereumWallet::from(devnet.signer(i))).connect_http(url.clone()).erased()
        };
        let admin = wallet(0);
        let token = IERC20::new(d.token, &admin);
        for p in 1..=args.providers {
            token.transfer(devnet.address(p), ether(100_000)).send().await?.get_receipt().await?;
            Market::new(&d, wallet(p)).stake(devnet.address(p), ether(100_000)).await?;
        }
        let book =
            Market::new(&d, admin.clone()).open_book(poster_key.address(), args.tasks as u32, ether(10)).await?.value;
        let now = admin.get_block_by_number(Default::default()).await?.context("no block")?.header.timestamp;
        let mut tasks = Vec::new();
        for i in 0..args.tasks {
            let input = random_input(i as u64, model.input_len());
            let order = Order {
                poster: poster_key.address(),
                provider: Address::ZERO,
                model_id: B256::from(model_id),
                input_commitment: B256::from(commit(&input).0),
                payment: 10 * 10u128.pow(18),
                collateral: 10 * 10u128.pow(18),
                deadline: now + 86_400,
                nonce: Order::nonce_of(book, i as u32),
                slash_bps: 5_000,
                poster_share_bps: 5_000,
            };
            let signed = SignedOrder::sign(order, &poster_key, &domain)?;
            let p = i % args.providers;
            let acceptance = Acceptance::sign(signed.hash(&domain), &devnet.signer(p + 1), &domain)?;
            tasks.push((signed, acceptance, input, p + 1));
        }
        anyhow::Ok(tasks)
    })?;
    let chain_seconds = started.elapsed().as_secs_f64();

    // The results: proofs made before the service starts, so proving never competes with it.
    let started = Instant::now();
    let prover = TaskProver::new(model.clone(), plan)?;
    let mut bodies = Vec::with_capacity(tasks.len());
    for (n, (order, acceptance, input, p)) in tasks.iter().enumerate() {
        let provider = devnet.address(*p);
        let task = order.hash(&domain);
        let (proof, trace, _) = prover.prove(input, task.0, provider.0 .0, &mut |_, _, _| {})?;
        let output = trace.output().to_vec();
        let commitment = B256::from(commit(&output).0);
        let submission = ResultSubmission::sign(
            order.clone(),
            acceptance.clone(),
            output,
            commitment,
            &proof.to_bytes(),
            &devnet.signer(*p),
            &domain,
        )?;
        bodies.push(serde_json::to_string(&submission)?);
        if (n + 1) % 50 == 0 {
            eprintln!("proved {}/{} results", n + 1, tasks.len());
        }
    }
    let prove_seconds = started.elapsed().as_secs_f64();

    let settings = Settings {
        rpc_url: devnet.rpc_url(),
        deployment: devnet.deployment_path().to_path_buf(),
        registry: work.path().join("registry.json"),
        data_dir: work.path().join("sequencer"),
        listen: ([127, 0, 0, 1], 0).into(),
        // One open batch for the whole run: the pipeline proves a leaf per task, never wraps.
        max_batch_tasks: 1 << 20,
        max_batch_age_secs: 1 << 30,
        deadline_margin_secs: 0,
        wrap_fri: WrapFri::InsecureTest,
        insecure_devnet_key: true,
        insecure_devnet_keys_dir: repo.join("target/tgrid-test-keys"),
        // Every simulated provider sends from loopback: one client address.
        submissions_per_client_per_sec: 100_000,
        ..Settings::default()
    };
    let report = runtime.block_on(async move {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let service = tokio::spawn(tgrid_sequencer::service::run(settings, stop.clone(), move |addr| {
            let _ = ready_tx.send(addr);
        }));
        let addr = ready_rx.await.context("the service stopped before listening")?;
        let endpoint = format!("http://{addr}/v1/results");
        let http = alloy::transports::http::reqwest::Client::builder().timeout(Duration::from_secs(30)).build()?;
        let send = |body: String| {
            let (http, endpoint) = (http.clone(), endpoint.clone());
            async move {
                let t = Instant::now();
                let status = http
                    .post(&endpoint)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .map(|r| r.status().as_u16())
                    .unwrap_or(0);
                (status, t.elapsed().as_secs_f64() * 1e3)
            }
        };
        // Measure the steady state: the pipeline's start (circuits, key) would otherwise share
        // the cores with the first requests.
        let metrics = format!("http://{addr}/metrics");
        let waited = Instant::now();
        let ready = |text: String| text.lines().any(|l| l.trim() == "tgrid_sequencer_pipeline_ready 1");
        while !ready(http.get(&metrics).send().await?.text().await?) {
            anyhow::ensure!(waited.elapsed() < Duration::from_secs(600), "the pipeline did not start in 10 minutes");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // One result alone first: the first connection and chain reads are not the steady state.
        let (warmup, bodies) = bodies.split_first().context("no results")?;
        let (warmup_status, warmup_ms) = send(warmup.clone()).await;
        anyhow::ensure!(warmup_status == 202, "the warm-up result was refused ({warmup_status})");
        let (burst, paced) = bodies.split_at(bodies.len() / 2);

        // Phase 1: as fast as `concurrency` clients go.
        let stages_before = stage_sums(&http.get(&metrics).send().await?.text().await?);
        eprintln!("phase 1: {} results from {} concurrent clients", burst.len(), args.concurrency);
        let started = Instant::now();
        let limit = Arc::new(tokio::sync::Semaphore::new(args.concurrency));
        let mut handles = Vec::new();
        for body in burst {
            let permit = limit.clone().acquire_owned().await?;
            let fut = send(body.clone());
            handles.push(tokio::spawn(async move {
                let r = fut.await;
                drop(permit);
                r
            }));
        }
        let mut phase1 = Vec::new();
        for h in handles {
            phase1.push(h.await?);
        }
        let burst_seconds = started.elapsed().as_secs_f64();
        let stages_after = stage_sums(&http.get(&metrics).send().await?.text().await?);
        // Mean milliseconds per acknowledged result in each ingest stage, over the burst alone.
        let burst_stages: serde_json::Map<String, serde_json::Value> = stages_after
            .iter()
            .map(|(stage, &(sum, count))| {
                let (sum0, count0) = stages_before.get(stage).copied().unwrap_or((0.0, 0.0));
                let mean_ms = if count > count0 { (sum - sum0) / (count - count0) * 1e3 } else { f64::NAN };
                (stage.clone(), json!(mean_ms))
            })
            .collect();

        // Phase 2: paced.
        eprintln!("phase 2: {} results at {} per second", paced.len(), args.rate);
        let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / args.rate as f64));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        let started = Instant::now();
        let mut handles = Vec::new();
        for body in paced {
            tick.tick().await;
            handles.push(tokio::spawn(send(body.clone())));
        }
        let mut phase2 = Vec::new();
        for h in handles {
            phase2.push(h.await?);
        }
        let paced_seconds = started.elapsed().as_secs_f64();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = tokio::time::timeout(Duration::from_secs(120), service).await;

        let summarize = |results: &[(u16, f64)]| {
            let acked = results.iter().filter(|(s, _)| *s == 202 || *s == 200).count();
            let mut ms: Vec<f64> = results.iter().map(|(_, ms)| *ms).collect();
            ms.sort_by(f64::total_cmp);
            let mut statuses = std::collections::BTreeMap::new();
            for (s, _) in results {
                *statuses.entry(s.to_string()).or_insert(0usize) += 1;
            }
            (
                acked,
                json!({
                    "requests": results.len(),
                    "acknowledged": acked,
                    "statuses": statuses,
                    "p50_ms": percentile(&ms, 50.0),
                    "p99_ms": percentile(&ms, 99.0),
                    "max_ms": ms.last().copied().unwrap_or(f64::NAN),
                }),
            )
        };
        let (acked1, mut s1) = summarize(&phase1);
        s1["concurrency"] = json!(args.concurrency);
        s1["seconds"] = json!(burst_seconds);
        s1["acknowledged_per_sec"] = json!(acked1 as f64 / burst_seconds);
        s1["mean_stage_ms"] = json!(burst_stages);
        let (_, mut s2) = summarize(&phase2);
        s2["rate_per_sec"] = json!(args.rate);
        s2["seconds"] = json!(paced_seconds);
        anyhow::Ok(json!({"throughput": s1, "paced": s2, "first_request_ms": warmup_ms}))
    })?;
    let out = json!({
        "bench": "sequencer_ingest",
        "tasks": args.tasks,
        "providers": args.providers,
        "setup_chain_seconds": chain_seconds,
        "prove_seconds_per_result": prove_seconds / args.tasks as f64,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "throughput": report["throughput"],
        "paced": report["paced"],
        "first_request_ms": report["first_request_ms"],
    });
    println!("{out}");
    Ok(())
}
