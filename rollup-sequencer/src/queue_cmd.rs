//! `tgrid-sequencer worker` and `aggregate --queue`: aggregation and wrap jobs on a NATS
//! JetStream queue.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::json;
use tgrid_cli::{bad_input, Output};
use tgrid_sequencer::jobs::{self, JobError, JobMetrics, JobQueue, QueueSettings, QueueUrl, WorkerOptions, WrapSetup};
use tgrid_sequencer::Aggregator;
use tgrid_settlement_proof::{KeySource, WrapFri};

use crate::wrap_cmd::FriChoice;

/// The queue's redelivery delay.
#[derive(Debug, clap::Args)]
pub struct AckWaitArg {
    /// Seconds a job may go without a sign of life from its worker before the queue redelivers
    /// it to another (workers report progress at a third of it). Set when the queue's consumer
    /// is first created; later values do not change it.
    #[arg(long, default_value_t = 60)]
    ack_wait_secs: u64,
    /// Longest a job may take: the dispatcher queues it again for another worker after it, and a
    /// worker stops holding a job it has proven for this long.
    #[arg(long, default_value_t = jobs::DEFAULT_JOB_DEADLINE.as_secs())]
    job_deadline_secs: u64,
}

impl AckWaitArg {
    /// Settings for the queue at `url`.
    pub fn settings(&self, url: QueueUrl) -> QueueSettings {
        QueueSettings {
            url,
            ack_wait: Duration::from_secs(self.ack_wait_secs.max(1)),
            job_deadline: Duration::from_secs(self.job_deadline_secs.max(1)),
        }
    }
}

/// Which Groth16 key a worker wraps batches with, if any.
#[derive(Debug, clap::Args)]
pub struct WorkerWrapArgs {
    /// Also take wrap jobs (a closed batch's Groth16 settlement proof, for a sequencer with
    /// `wrap_jobs = true`), with this proving key from a ceremony (validated on load; the
    /// sequencer must use the same key).
    #[arg(long, conflicts_with = "wrap_insecure_devnet_key")]
    wrap_proving_key: Option<PathBuf>,
    /// INSECURE: also take wrap jobs, with the devnet key set up from a PUBLIC seed and cached in
    /// --keys-dir. Anyone can forge proofs for it: devnets and tests only.
    #[arg(long)]
    wrap_insecure_devnet_key: bool,
    /// Directory of cached devnet keys (`<id>.pk`, `<id>.vk.json`).
    #[arg(long, env = "TGRID_KEYS_DIR", default_value = ".tgrid/keys")]
    keys_dir: PathBuf,
    /// FRI parameters of the wrap's final layer: `production` (100 conjectured bits) or
    /// `insecure-test` (10 bits, tests only); the sequencer's `wrap_fri`.
    #[arg(long, value_enum, default_value_t = FriChoice::Production)]
    wrap_fri: FriChoice,
}

impl WorkerWrapArgs {
    /// The wrap setup, if the worker takes wrap jobs.
    pub fn setup(self) -> Option<WrapSetup> {
        let key = match (self.wrap_proving_key, self.wrap_insecure_devnet_key) {
            (Some(file), _) => KeySource::File(file),
            (None, true) => KeySource::InsecureDevnet { dir: self.keys_dir },
            (None, false) => return None,
        };
        let fri = match self.wrap_fri {
            FriChoice::Production => WrapFri::Production,
            FriChoice::InsecureTest => WrapFri::InsecureTest,
        };
        Some(WrapSetup { fri, key })
    }
}

/// `tgrid-sequencer worker`.
pub fn worker(
    queue: QueueSettings,
    name: Option<String>,
    max_jobs: Option<u64>,
    wrap: Option<WrapSetup>,
    out: &Output,
) -> Result<()> {
    let name = name.unwrap_or_else(|| {
        let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
        format!("{}-{}", host.trim(), std::process::id())
    });
    let url = queue.url.to_string();
    let insecure_key = matches!(&wrap, Some(WrapSetup { key: KeySource::InsecureDevnet { .. }, .. }))
        || matches!(&wrap, Some(WrapSetup { fri: WrapFri::InsecureTest, .. }));
    if insecure_key {
        eprintln!("WARNING: wrapping with an INSECURE Groth16 key or FRI parameters: devnets and tests only");
    }
    let wraps = wrap.is_some();
    let started = Instant::now();
    let done = super::runtime()?.block_on(async {
        let stop = super::stop_on_signal();
        jobs::run_worker(WorkerOptions { queue, name: name.clone(), max_jobs, wrap }, stop).await
    })?;
    let value = json!({
        "worker": name,
        "queue": url,
        "jobs": done,
        "wraps": wraps,
        "insecure_wrap_key": insecure_key,
        "seconds": started.elapsed().as_secs_f64(),
    });
    out.emit(value, || format!("worker {name}: {done} jobs in {:.1} s", started.elapsed().as_secs_f64()))
}

/// `tgrid-sequencer aggregate --queue`: the same batch as in-process, proven by workers.
pub fn aggregate(
    proof_paths: &[PathBuf],
    registry_path: &Path,
    batch_path: &Path,
    queue: QueueSettings,
    out: &Output,
) -> Result<()> {
    let started = Instant::now();
    let registry = super::load_registry(registry_path)?;
    let proofs = super::read_task_proofs(proof_paths)?;
    let bar = out.spinner("building the aggregation circuits (to check the workers' proofs)");
    let aggregator = Aggregator::new(registry)?;
    bar.finish_and_clear();
    let provided = super::leaves_beside(&aggregator, proof_paths, &proofs);
    let url = queue.url.to_string();
    let bar = out.spinner(&format!("{} tasks: leaves and merges on the workers of {url}", proofs.len()));
    let (batch, tally) = super::runtime()?
        .block_on(async {
            let queue = JobQueue::connect(queue, JobMetrics::new()).await?;
            let batch = jobs::aggregate(&aggregator, &queue, &proofs, &provided).await?;
            Ok::<_, JobError>((batch, queue.tally()))
        })
        .map_err(|e| match e {
            JobError::Aggregate(
                tgrid_sequencer::Error::Task(_)
                | tgrid_sequencer::Error::UnknownModel(_)
                | tgrid_sequencer::Error::Aggregation(tgrid_aggregation::Error::InvalidBatch(_)),
            ) => bad_input(e),
            other => other.into(),
        })?;
    bar.finish_and_clear();
    super::write_and_report_batch(
        &aggregator,
        &batch,
        batch_path,
        started,
        provided.iter().flatten().count(),
        Some(super::QueueReport { url: &url, workers: &tally }),
        out,
    )
}
