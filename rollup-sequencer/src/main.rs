//! `tgrid-sequencer`: the rollup sequencer's tool. Maintains the model registry file and
//! aggregates task proofs into batch proofs.

mod bench;
mod queue_cmd;
mod wrap_cmd;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use serde_json::json;
use tgrid_aggregation::registry::hex32;
use tgrid_aggregation::{BatchFile, LeafCircuit, RegistryFile, RegistryFileEntry};
use tgrid_circuits::{ModelFile, Privacy, TaskProof, TaskVerifier};
use tgrid_cli::{bad_input, print_stdout, Output};
use tgrid_sequencer::jobs::QueueUrl;
use tgrid_sequencer::{Aggregator, Step};
use wrap_cmd::WrapKeyArgs;

/// TensorGrid rollup sequencer: registry maintenance and batch aggregation.
#[derive(Debug, Parser)]
#[command(name = "tgrid-sequencer", version, about, long_about = None)]
struct Cli {
    /// Print one JSON object on stdout instead of text.
    #[arg(long, global = true)]
    json: bool,
    /// Directory where built circuits (aggregation, wrap, task verifiers) and the Groth16
    /// constraint matrices are kept between runs of this executable (restarts skip seconds of
    /// building); `off` builds them at every start. `bench` never uses it.
    /// Default: $XDG_CACHE_HOME/tgrid/circuits, else ~/.cache/tgrid/circuits.
    #[arg(long, global = true, env = "TGRID_CIRCUIT_CACHE", value_name = "DIR")]
    circuit_cache: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Manage the registry file of allowed (model id, leaf circuit digest) pairs.
    Registry {
        #[command(subcommand)]
        command: RegistryCommand,
    },
    /// Aggregate task proofs, in the given order, into one batch proof (.tgb).
    Aggregate {
        /// Task proofs (.tgp) of registered models, in batch order. A leaf proof beside a proof
        /// with the extension `.leaf` (as a provider daemon with `prove_leaves` keeps them) is
        /// used instead of proving that leaf, if it is this task's leaf under this registry.
        #[arg(required = true)]
        proofs: Vec<PathBuf>,
        /// Registry file (JSON) listing the models and their files.
        #[arg(long)]
        registry: PathBuf,
        /// Where to write the batch proof.
        #[arg(long)]
        out: PathBuf,
        /// Run the leaf, chunk and merge proofs on `tgrid-sequencer worker` processes through this job
        /// queue (NATS JetStream, `nats://[user:password@ or token@]host:port`) instead of in
        /// this process. Every proof a worker returns is verified before it is used.
        #[arg(long)]
        queue: Option<QueueUrl>,
        #[command(flatten)]
        ack_wait: queue_cmd::AckWaitArg,
    },
    /// Run an aggregation worker: take leaf, chunk and merge jobs (and, given a Groth16 proving key,
    /// wrap jobs) off the job queue (NATS JetStream), prove them, store each outcome, then
    /// acknowledge the job. A worker killed mid-job loses nothing: the queue redelivers the job
    /// after the ack wait. Stops on Ctrl-C or SIGTERM.
    Worker {
        /// The job queue, `nats://[user:password@ or token@]host:port`. Prefer the environment
        /// variable for credentials: a command line is visible to every local user.
        #[arg(long, env = "TGRID_QUEUE", hide_env_values = true)]
        queue: QueueUrl,
        /// Name reported with each outcome (default: host name and process id).
        #[arg(long)]
        name: Option<String>,
        /// Exit after this many jobs.
        #[arg(long)]
        max_jobs: Option<u64>,
        #[command(flatten)]
        ack_wait: queue_cmd::AckWaitArg,
        #[command(flatten)]
        wrap: queue_cmd::WorkerWrapArgs,
    },
    /// Wrap a batch proof for settlement: the settle and BN254 final plonky2 layers, then one
    /// Groth16 proof (BN254) of the final layer's R1CS verifier. Writes the settlement proof
    /// file (.g16, JSON): the ordered leaves and proof words `Settlement.submitBatch` takes.
    Wrap {
        /// Batch proof (.tgb) written by `aggregate`.
        batch: PathBuf,
        /// Where to write the settlement proof file.
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        key: WrapKeyArgs,
        /// Have a `tgrid-sequencer worker` holding the same proving key (`--wrap-proving-key` or
        /// `--wrap-insecure-devnet-key`) prove it through this job queue (NATS JetStream,
        /// `nats://[user:password@ or token@]host:port`). This process reads only the verifying
        /// key, checks the batch before queuing it and the worker's proof before writing it.
        #[arg(long)]
        queue: Option<QueueUrl>,
        #[command(flatten)]
        ack_wait: queue_cmd::AckWaitArg,
    },
    /// Run the sequencer service: HTTP API (submit results, task and batch status, published
    /// outputs, /openapi.json, /metrics), durable state, batching, proving and on-chain
    /// settlement. With no file the defaults work against a local anvil at 127.0.0.1:8545 (data
    /// under ./.tgrid/sequencer, API on 127.0.0.1:8080). Every setting can also come from the
    /// environment as TGRID_SEQUENCER_<SETTING> (e.g. TGRID_SEQUENCER_MAX_BATCH_TASKS=8).
    ///
    /// Settings: rpc_url, deployment, registry, data_dir, listen, private_key (or keystore, an
    /// encrypted Web3 keystore, with keystore_password_file or TGRID_KEYSTORE_PASSWORD), max_batch_tasks,
    /// max_batch_age_secs, deadline_margin_secs, confirmations, gas_bump_after_secs, wrap_fri
    /// (production | insecure-test), proving_key (a ceremony key) or insecure_devnet_key = true
    /// (INSECURE, devnet chain only: one of the two is required), insecure_devnet_keys_dir, max_body_bytes,
    /// request_timeout_secs, header_timeout_secs (request headers, and idle kept-alive connections),
    /// max_connections and max_connections_per_client (more are closed on arrival), retention_secs
    /// (settled tasks, their batches and listed orders are forgotten this long after their
    /// deadline; default 30 days), submissions_per_provider_per_sec, submissions_per_client_per_sec (per
    /// client address, before the order's backing is read), relay_requests_per_client_per_sec
    /// (orders, acceptances and sealing keys per client address: each costs chain reads), poll_interval_ms,
    /// registry_poll_secs (how often the on-chain registry root is compared with the registry
    /// file's: when governance moved it and the file lists the new root, new batches use it),
    /// job_queue (`nats://host:port`: `tgrid-sequencer worker` processes prove each closed
    /// batch's leaves and merges; unset: this process proves them), job_ack_wait_secs,
    /// job_deadline_secs (a job without an outcome by then is queued again for another worker) and
    /// wrap_jobs (true: the Groth16 wrap is a queue job too, for a worker holding the same key).
    Run {
        /// Settings file (TOML); environment variables override it.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Print the effective settings (JSON) and exit.
        #[arg(long)]
        print_settings: bool,
    },
    /// Print the HTTP API's OpenAPI document.
    Openapi,
    /// Load (or, INSECURE devnet key, set up once and cache) the wrap's Groth16 key and print
    /// its id, digest and the 18 verifying-key words `Groth16KeyedVerifier` is deployed with
    /// (`TGRID_VERIFIER_KEY` / `TGRID_VERIFIER_KEY_ID` of Deploy.s.sol).
    Key {
        #[command(flatten)]
        key: WrapKeyArgs,
    },
    /// Benchmark leaf, chunk and merge proofs and a whole batch; prints one JSON object.
    Bench {
        /// Tasks in the end-to-end batch.
        #[arg(long, default_value_t = 64)]
        tasks: usize,
        /// Compiled models to use (default: two small built-in models).
        #[arg(long = "model")]
        models: Vec<PathBuf>,
        /// Also prove the batch on this job queue (`nats://host:port`, a broker with JetStream
        /// and no earlier outcomes), with worker processes the benchmark starts, and compare.
        #[arg(long)]
        queue: Option<QueueUrl>,
        /// Worker processes to start for `--queue`.
        #[arg(long, default_value_t = 2, requires = "queue")]
        workers: usize,
        /// Also prove the batch with every leaf proven beforehand by its provider (the daemon's
        /// `prove_leaves`): reports the providers' leaf time and what the sequencer still pays.
        #[arg(long)]
        provider_leaves: bool,
        /// Skip the batch in which the sequencer proves every leaf (the slowest part at 64 tasks).
        #[arg(long, conflicts_with = "queue")]
        skip_sequencer_leaves: bool,
        /// With `--provider-leaves`, also feed the tasks one every SECONDS into an incremental
        /// tree, as a service's open batch receives them, and time the batch's close → root.
        #[arg(long, value_name = "SECONDS", requires = "provider_leaves", value_parser = positive_seconds)]
        arrival_every: Option<f64>,
        /// Also wrap (production FRI) and time close → Groth16: the provider-leaf batches in this
        /// process, and with `--queue` the queued batch on a worker (the workers then hold the
        /// key). INSECURE: the devnet Groth16 key from a public seed (benchmark only).
        #[arg(long)]
        wrap_insecure_devnet_key: bool,
        /// Directory of cached devnet keys (`<id>.pk`, `<id>.vk.json`).
        #[arg(long, env = "TGRID_KEYS_DIR", default_value = ".tgrid/keys")]
        keys_dir: PathBuf,
    },
}

fn positive_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s > 0.0 && s <= 3600.0 => Ok(s),
        _ => Err(format!("`{text}` is not a number of seconds in (0, 3600]")),
    }
}

#[derive(Debug, Subcommand)]
enum RegistryCommand {
    /// Add (or update) a compiled model; creates the file if needed and prints the new root.
    /// Rebuilds the model's circuits to compute the digest rather than trusting the file (or loads
    /// what this executable built before from its circuit cache; `--circuit-cache off` to rebuild).
    Add {
        /// Compiled model (.tgm).
        model: PathBuf,
        /// Registry file (JSON).
        #[arg(long)]
        registry: PathBuf,
        /// Name shown in listings (default: the model's name, with ` (private)` for --private).
        #[arg(long)]
        name: Option<String>,
        /// Register the model's private-task circuit (zero-knowledge, salted commitments) under
        /// its private model id, instead of its public one. A model may have both entries.
        #[arg(long)]
        private: bool,
    },
    /// List the registered models and the root.
    Show {
        /// Registry file (JSON).
        #[arg(long)]
        registry: PathBuf,
    },
}

fn main() {
    let cli = Cli::parse();
    tgrid_cli::init_tracing();
    // The benchmark measures circuit builds as every cold start pays them.
    if !matches!(cli.command, Command::Bench { .. }) {
        tgrid_circuit_cache::enable_from_setting(cli.circuit_cache.as_deref());
    }
    let out = Output { json: cli.json };
    let result = match cli.command {
        Command::Registry { command: RegistryCommand::Add { model, registry, name, private } } => {
            let privacy = if private { Privacy::Private } else { Privacy::Public };
            registry_add(&model, &registry, name, privacy, &out)
        }
        Command::Registry { command: RegistryCommand::Show { registry } } => registry_show(&registry, &out),
        Command::Aggregate { proofs, registry, out: path, queue: None, .. } => {
            aggregate(&proofs, &registry, &path, &out)
        }
        Command::Aggregate { proofs, registry, out: path, queue: Some(url), ack_wait } => {
            queue_cmd::aggregate(&proofs, &registry, &path, ack_wait.settings(url), &out)
        }
        Command::Worker { queue, name, max_jobs, ack_wait, wrap } => {
            queue_cmd::worker(ack_wait.settings(queue), name, max_jobs, wrap.setup(), &out)
        }
        Command::Wrap { batch, out: path, key, queue, ack_wait } => {
            let (source, fri) = key.source();
            wrap_cmd::wrap(&batch, &path, &source, fri, queue.map(|url| ack_wait.settings(url)), &out)
        }
        Command::Bench {
            tasks,
            models,
            queue,
            workers,
            provider_leaves,
            skip_sequencer_leaves,
            arrival_every,
            wrap_insecure_devnet_key,
            keys_dir,
        } => {
            let latency = arrival_every.map(|s| bench::LatencyBench { every: std::time::Duration::from_secs_f64(s) });
            bench::run(
                tasks,
                &models,
                queue.map(|url| bench::QueueBench { url, workers }),
                provider_leaves,
                skip_sequencer_leaves,
                wrap_insecure_devnet_key.then_some(keys_dir),
                latency,
            )
        }
        Command::Run { config, print_settings } => run_service(config.as_deref(), print_settings),
        Command::Key { key } => {
            let (source, fri) = key.source();
            wrap_cmd::show_key(&source, fri, &out)
        }
        Command::Openapi => print_stdout(&tgrid_sequencer::service::api::openapi_json()),
    };
    out.exit_with(result)
}

fn run_service(config: Option<&Path>, print_settings: bool) -> Result<()> {
    use tgrid_sequencer::service::{self, Settings};

    let settings = Settings::load(config).map_err(bad_input)?;
    if print_settings {
        let mut shown = serde_json::to_value(&settings)?;
        shown["private_key"] = json!("(hidden)");
        shown["job_queue"] = json!(settings.job_queue_url()?.map(|url| url.to_string()));
        return print_stdout(&serde_json::to_string_pretty(&shown)?);
    }
    if settings.key_is_insecure() {
        eprintln!(
            "WARNING: INSECURE batch proofs (insecure_devnet_key: a Groth16 key from a public seed, or \
             wrap_fri = insecure-test): anyone can forge them. Devnets and tests only."
        );
    }
    if settings.keystore.is_none() && settings.private_key == service::config::ANVIL_KEY_0 {
        eprintln!("WARNING: signing with anvil's public default key 0: local devnets only.");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let stop = stop_on_signal();
        service::run(settings, stop, |addr| {
            // One line on stdout when the API is up: scripts and tests wait for it.
            if let Err(e) = print_stdout(&json!({ "listening": addr.to_string() }).to_string()) {
                tracing::warn!(error = %e, "cannot announce the listening address on stdout");
            }
        })
        .await
    })?;
    Ok(())
}

/// A runtime for the commands that talk to the job queue (`aggregate --queue`, `worker`, `wrap --queue`).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().build()?)
}

/// Stops the process's work at Ctrl-C or SIGTERM (sets the returned flag).
fn stop_on_signal() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let on_signal = stop.clone();
    tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
        }
        tracing::info!("stopping: finishing the current step");
        on_signal.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    stop
}

fn read_task_proofs(paths: &[PathBuf]) -> Result<Vec<TaskProof>> {
    paths
        .iter()
        .map(|p| {
            TaskProof::from_bytes(&read(p)?)
                .with_context(|| format!("{} is not a task proof", p.display()))
                .map_err(bad_input)
        })
        .collect()
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display())).map_err(bad_input)
}

fn load_registry(path: &Path) -> Result<RegistryFile> {
    RegistryFile::load(path).map_err(bad_input)
}

/// `path` relative to `base` when it lies below it, else absolute.
fn relative_to(path: &Path, base: &Path) -> Result<String> {
    let abs = std::fs::canonicalize(path).with_context(|| format!("cannot resolve {}", path.display()))?;
    let base = std::fs::canonicalize(if base.as_os_str().is_empty() { Path::new(".") } else { base })
        .with_context(|| format!("cannot resolve {}", base.display()))?;
    Ok(abs.strip_prefix(&base).map(Path::to_path_buf).unwrap_or(abs).display().to_string())
}

fn registry_add(
    model_path: &Path,
    registry_path: &Path,
    name: Option<String>,
    privacy: Privacy,
    out: &Output,
) -> Result<()> {
    let file = ModelFile::from_bytes(&read(model_path)?)
        .with_context(|| format!("{} is not a usable compiled model", model_path.display()))
        .map_err(bad_input)?;
    let bar = out.spinner("rebuilding the model's circuits");
    let verifier =
        TaskVerifier::with_privacy(&file.model, &file.plan, privacy).context("cannot rebuild the model's circuit")?;
    let leaf_circuit = LeafCircuit::new(verifier).context("cannot build the model's leaf circuit")?;
    bar.finish_and_clear();
    // The file records the public circuit's digest: a mismatch means another compiler version.
    // The private circuit's digest is what the rebuild says (same weights, same version).
    if privacy == Privacy::Public {
        anyhow::ensure!(
            leaf_circuit.digest() == file.leaf_digest,
            "the leaf circuit rebuilt from {} has digest {}, the file records {}: compiled by another version \
             (recompile the model with this version's `tgrid-prover compile`)",
            model_path.display(),
            hex32(&leaf_circuit.digest()),
            hex32(&file.leaf_digest)
        );
    }
    let mut registry = if registry_path.exists() {
        load_registry(registry_path)?
    } else {
        RegistryFile::empty(registry_path.parent().map(Path::to_path_buf).unwrap_or_default())
    };
    let entry = RegistryFileEntry {
        name: name.unwrap_or_else(|| match privacy {
            Privacy::Public => file.model.name.clone(),
            Privacy::Private => format!("{} (private)", file.model.name),
        }),
        model_id: hex32(&leaf_circuit.model_id()),
        leaf_digest: hex32(&leaf_circuit.digest()),
        model_file: relative_to(model_path, &registry.base_dir)?,
    };
    let root = registry.upsert(entry.clone())?;
    registry.save(registry_path)?;
    let value = json!({
        "registry": registry_path.display().to_string(),
        "privacy": privacy.name(),
        "root": hex32(&root),
        "models": registry.models.len(),
        "added": entry,
    });
    out.emit(value, || {
        format!(
            "registered {} ({}, {} tasks)\n  leaf digest    {}\n  registry root  {}  ({} models)",
            entry.name,
            entry.model_id,
            privacy.name(),
            entry.leaf_digest,
            hex32(&root),
            registry.models.len()
        )
    })
}

fn registry_show(path: &Path, out: &Output) -> Result<()> {
    let registry = load_registry(path)?;
    out.emit(json!({ "root": registry.root, "depth": registry.depth, "models": registry.models }), || {
        let mut text = format!("registry root {}  ({} models)", registry.root, registry.models.len());
        for m in &registry.models {
            text += &format!("\n  {}  {}  {}  {}", m.model_id, m.leaf_digest, m.name, m.model_file);
        }
        text
    })
}

fn aggregate(proof_paths: &[PathBuf], registry_path: &Path, batch_path: &Path, out: &Output) -> Result<()> {
    let started = Instant::now();
    let registry = load_registry(registry_path)?;
    let proofs = read_task_proofs(proof_paths)?;
    let bar = out.spinner("building the aggregation circuits");
    let aggregator = Aggregator::new(registry)?;
    bar.finish_and_clear();
    let provided = leaves_beside(&aggregator, proof_paths, &proofs);
    let n = proofs.len() as u64;
    let bar = out.progress(n + tgrid_sequencer::aggregation_proofs(proofs.len()) as u64, "proofs");
    let batch = aggregator
        .aggregate_with(&proofs, &provided, &|step| {
            bar.set_message(match step {
                Step::Leaf => "leaves",
                Step::Chunk => "chunks",
                Step::Merge => "merges",
            });
            bar.inc(1)
        })
        .map_err(|e| match e {
            tgrid_sequencer::Error::Task(_) | tgrid_sequencer::Error::UnknownModel(_) => bad_input(e),
            tgrid_sequencer::Error::Aggregation(tgrid_aggregation::Error::InvalidBatch(_)) => bad_input(e),
            other => other.into(),
        })?;
    bar.finish_and_clear();
    let leaves_used = provided.iter().flatten().count();
    write_and_report_batch(&aggregator, &batch, batch_path, started, leaves_used, None, out)
}

/// The leaf proof kept beside each task proof (`PROOF.leaf`), where there is one that proves
/// this task's leaf under `aggregator`'s circuits and registry; any other file is reported and
/// the leaf proven here. Checked in parallel: the first check of a model builds its task circuit.
pub(crate) fn leaves_beside(
    aggregator: &Aggregator,
    paths: &[PathBuf],
    proofs: &[TaskProof],
) -> Vec<Option<tgrid_aggregation::SubtreeProof>> {
    use rayon::prelude::*;
    let files: Vec<(PathBuf, Option<Vec<u8>>)> = paths
        .iter()
        .map(|path| {
            let leaf_path = path.with_extension("leaf");
            let bytes = std::fs::read(&leaf_path).ok();
            (leaf_path, bytes)
        })
        .collect();
    files
        .par_iter()
        .zip(proofs)
        .map(|((leaf_path, bytes), proof)| {
            let bytes = bytes.as_deref()?;
            match aggregator.adopt_leaf(proof, bytes) {
                Ok((_, leaf)) => Some(leaf),
                Err(e) => {
                    tracing::warn!(file = %leaf_path.display(), error = %e, "not using this leaf proof: proving the leaf");
                    None
                }
            }
        })
        .collect()
}

/// Where the proofs of `aggregate --queue` came from: the queue and each worker's share.
pub(crate) struct QueueReport<'a> {
    pub url: &'a str,
    pub workers: &'a std::collections::BTreeMap<String, tgrid_sequencer::jobs::WorkerTally>,
}

/// Writes an aggregated batch, checks it as a verifier would and reports it (`aggregate` with
/// or without a queue).
pub(crate) fn write_and_report_batch(
    aggregator: &Aggregator,
    batch: &BatchFile,
    batch_path: &Path,
    started: Instant,
    leaves_used: usize,
    queue: Option<QueueReport<'_>>,
    out: &Output,
) -> Result<()> {
    std::fs::write(batch_path, batch.to_bytes()).with_context(|| format!("cannot write {}", batch_path.display()))?;
    let verified = aggregator.circuits().verify_batch(batch, &aggregator.registry().root())?;
    let seconds = started.elapsed().as_secs_f64();
    let mut value = json!({
        "out": batch_path.display().to_string(),
        "batch_root": hex32(&verified.batch_root),
        "registry_root": hex32(&verified.registry_root),
        "count": verified.leaves.len(),
        "proof_bytes": batch.proof.len(),
        "leaves_used": leaves_used,
        "seconds": seconds,
    });
    if let Some(q) = &queue {
        value["queue"] = json!(q.url);
        value["workers"] = json!(q.workers);
    }
    out.emit(value, || {
        let mut text = format!(
            "aggregated {} tasks{} -> {}\n  batch root     {}\n  registry root  {}",
            verified.leaves.len(),
            if queue.is_some() { " on the queue's workers" } else { "" },
            batch_path.display(),
            hex32(&verified.batch_root),
            hex32(&verified.registry_root),
        );
        if let Some(q) = &queue {
            let workers: Vec<String> =
                q.workers.iter().map(|(n, t)| format!("{n}: {} jobs, {:.1} s", t.jobs, t.seconds)).collect();
            text += &format!("\n  workers        {}", workers.join("; "));
        }
        if leaves_used > 0 {
            text += &format!("\n  leaf proofs    {leaves_used} used as given (PROOF.leaf)");
        }
        text + &format!("\n  {seconds:.1} s")
    })
}

#[cfg(test)]
mod tests {
    use super::positive_seconds;

    #[test]
    fn arrival_intervals_are_positive_finite_seconds() {
        assert_eq!(positive_seconds("4"), Ok(4.0));
        assert_eq!(positive_seconds("0.25"), Ok(0.25));
        for bad in ["0", "-1", "NaN", "inf", "3601", "four", ""] {
            assert!(positive_seconds(bad).is_err(), "{bad}");
        }
    }
}
