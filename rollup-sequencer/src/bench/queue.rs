//! `tgrid-sequencer bench --queue`: the benchmark's batch again on worker processes.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;
use tgrid_aggregation::{BatchFile, RegistryFile, RegistryFileEntry};
use tgrid_circuits::{ModelFile, QuantModel, SegmentPlan, TaskProof};
use tgrid_sequencer::jobs::{self, JobMetrics, JobQueue, QueueSettings, QueueUrl};
use tgrid_sequencer::Aggregator;

use super::wrapping::Wrapping;

/// Where to run the batch a second time: a job queue and how many worker processes to start.
pub(crate) struct QueueBench {
    pub url: QueueUrl,
    pub workers: usize,
}

/// With `--wrap-insecure-devnet-key`: the workers also take wrap jobs with the key cached in
/// this directory, and the queued batch is wrapped on one of them.
pub(crate) struct QueueWrap<'a> {
    pub wrapping: &'a Wrapping,
    pub keys_dir: &'a Path,
}

/// Proves `proofs` again on `queue` and compares with the in-process batch. Leaf jobs carry
/// the model files, so the models and a registry file listing them are written first.
pub(crate) fn run(
    queue: &QueueBench,
    aggregator: &Aggregator,
    models: &[(QuantModel, SegmentPlan)],
    circuit_digests: &[[u8; 32]],
    proofs: &[TaskProof],
    in_process: &BatchFile,
    wrap: Option<QueueWrap<'_>>,
) -> Result<serde_json::Value> {
    let dir = tempfile::tempdir()?;
    let mut file = RegistryFile::empty(dir.path().to_path_buf());
    for (i, ((model, plan), digest)) in models.iter().zip(circuit_digests).enumerate() {
        let leaf_digest = aggregator.registry().entry(&model.model_id()).context("model not listed")?.leaf_digest;
        let model_file = ModelFile {
            model: model.clone(),
            plan: plan.clone(),
            circuit_digest: *digest,
            leaf_digest,
            report: "{}".into(),
        };
        let name = format!("bench-{i}.tgm");
        std::fs::write(dir.path().join(&name), model_file.to_bytes())?;
        file.upsert(RegistryFileEntry {
            name: format!("bench-{i}"),
            model_id: format!("0x{}", hex::encode(model.model_id())),
            leaf_digest: format!("0x{}", hex::encode(leaf_digest)),
            model_file: name,
        })?;
    }
    let with_files = aggregator.for_registry_file(file)?;
    on_queue(queue, &with_files, proofs, in_process, wrap)
}

/// Worker processes started by the benchmark, killed when it ends however it ends.
struct Workers(Vec<Child>);

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The same batch again on `queue`'s workers (started here, timed from when all of them have
/// built their circuits and announced themselves): its seconds, each worker's share, and a
/// check that it has the in-process batch's leaves and root; then, with `wrap`, its wrap as a
/// job (the worker's proof checked under the key, as the sequencer does).
fn on_queue(
    queue: &QueueBench,
    aggregator: &Aggregator,
    proofs: &[TaskProof],
    in_process: &BatchFile,
    wrap: Option<QueueWrap<'_>>,
) -> Result<serde_json::Value> {
    anyhow::ensure!(queue.workers >= 1, "the queue benchmark needs at least one worker");
    let exe = std::env::current_exe().context("cannot find this program to start workers")?;
    let mut workers = Workers(Vec::new());
    for i in 0..queue.workers {
        let mut command = Command::new(&exe);
        command.args(["worker", "--name", &format!("bench-worker-{i}")]);
        if let Some(wrap) = &wrap {
            command.arg("--wrap-insecure-devnet-key").arg("--keys-dir").arg(wrap.keys_dir);
        }
        let child = command
            .env("TGRID_QUEUE", queue.url.with_secret())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .context("cannot start a worker")?;
        workers.0.push(child);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let metrics = JobMetrics::new();
        let settings = QueueSettings {
            url: queue.url.clone(),
            ack_wait: Duration::from_secs(60),
            job_deadline: tgrid_sequencer::jobs::DEFAULT_JOB_DEADLINE,
        };
        let jobs_queue = JobQueue::connect(settings, metrics.clone()).await?;
        let waiting_since = Instant::now();
        while metrics.workers.get() < queue.workers as i64 {
            for child in &mut workers.0 {
                if let Some(status) = child.try_wait()? {
                    anyhow::bail!("a worker exited before taking a job ({status})");
                }
            }
            anyhow::ensure!(
                waiting_since.elapsed() < Duration::from_secs(600),
                "the workers did not start in 10 minutes"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let started = Instant::now();
        let batch = jobs::aggregate(aggregator, &jobs_queue, proofs, &[]).await?;
        let seconds = started.elapsed().as_secs_f64();
        // The in-process batch was verified already; the root is a function of the leaves.
        let queued = aggregator.circuits().verify_batch(&batch, &aggregator.registry().root())?;
        anyhow::ensure!(queued.leaves == in_process.leaves, "the workers' batch differs from the in-process batch");
        let mut report = json!({
            "url": queue.url.to_string(),
            "workers": queue.workers,
            "batch_seconds": seconds,
            "batch_seconds_per_task": seconds / proofs.len() as f64,
            "same_root_as_in_process": true,
        });
        if let Some(wrap) = &wrap {
            let started = Instant::now();
            let file = jobs::wrap(&jobs_queue, wrap.wrapping.wrapper(), &wrap.wrapping.verifying_key(), &batch).await?;
            let wrap_seconds = started.elapsed().as_secs_f64();
            anyhow::ensure!(file.count as usize == batch.leaves.len(), "the settlement proof counts another batch");
            report["wrap_seconds"] = json!(wrap_seconds);
            report["close_to_groth16_seconds"] = json!(seconds + wrap_seconds);
        }
        report["per_worker"] = json!(jobs_queue.tally());
        Ok(report)
    })
}
