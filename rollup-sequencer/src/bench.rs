//! `tgrid-sequencer bench`: times each aggregation step alone, then a whole batch.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;
use tgrid_aggregation::{batch_root, BatchFile, Normalizer, RegistryFile, RegistryFileEntry, TaskLeaf};
use tgrid_circuits::testing::{random_input, tiny_model};
use tgrid_circuits::{commit, ModelFile, SegmentPlan, TaskProof, TaskProver, TaskVerifier};
use tgrid_cli::peak_rss_mib;
use tgrid_sequencer::jobs::{self, JobMetrics, JobQueue, QueueSettings, QueueUrl};
use tgrid_sequencer::Aggregator;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Where to run the batch a second time: a job queue and how many worker processes to start.
pub(crate) struct QueueBench {
    pub url: QueueUrl,
    pub workers: usize,
}

pub(crate) fn run(tasks: usize, model_paths: &[PathBuf], queue: Option<QueueBench>) -> Result<()> {
    anyhow::ensure!(tasks >= 2, "the batch needs at least 2 tasks");
    let models = if model_paths.is_empty() {
        vec![(tiny_model(1), SegmentPlan::default()), (tiny_model(2), SegmentPlan::default())]
    } else {
        model_paths
            .iter()
            .map(|p| {
                let bytes = std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))?;
                let file = ModelFile::from_bytes(&bytes).with_context(|| format!("{} is not a model", p.display()))?;
                Ok((file.model, file.plan))
            })
            .collect::<Result<Vec<_>>>()?
    };

    let started = Instant::now();
    let (normalizers, circuit_digests): (Vec<Normalizer>, Vec<[u8; 32]>) = models
        .iter()
        .map(|(m, plan)| {
            let verifier = TaskVerifier::new(m, plan)?;
            let circuit_digest = verifier.circuit_digest();
            Ok::<_, tgrid_aggregation::Error>((Normalizer::new(verifier)?, circuit_digest))
        })
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .unzip();
    let normalizer_build_seconds = started.elapsed().as_secs_f64() / models.len() as f64;
    let started = Instant::now();
    let aggregator = Aggregator::with_normalizers(normalizers)?;
    let circuits_build_seconds = started.elapsed().as_secs_f64();

    let provers =
        models.iter().map(|(m, plan)| TaskProver::new(m.clone(), plan.clone())).collect::<Result<Vec<_>, _>>()?;
    let started = Instant::now();
    let (proofs, expected_leaves): (Vec<TaskProof>, Vec<TaskLeaf>) = (0..tasks)
        .map(|i| {
            // Models interleaved irregularly (runs of one or two), by the top bits of a
            // multiplicative hash.
            let hash = (i as u64 * 2_654_435_761) % (1 << 32);
            let prover = &provers[((hash * provers.len() as u64) >> 32) as usize];
            let mut task_id = [0x7A; 32];
            task_id[24..].copy_from_slice(&(i as u64).to_be_bytes());
            let provider = [0x42; 20];
            let input = random_input(i as u64, prover.model().input_len());
            let (proof, trace, _) = prover.prove(&input, task_id, provider, &mut |_, _, _| {})?;
            // The leaf as the contract hashes it, from what the provider knows, not from the proof.
            let leaf = TaskLeaf {
                task_id,
                model_id: prover.model().model_id(),
                input_commitment: commit(&input).0,
                output_commitment: commit(trace.output()).0,
                provider,
            };
            Ok((proof, leaf))
        })
        .collect::<Result<Vec<_>, tgrid_circuits::Error>>()?
        .into_iter()
        .unzip();
    let task_prove_seconds = started.elapsed().as_secs_f64();
    drop(provers);

    // Each step alone (one at a time, so each has both cores), median of 3.
    let (mut normalize, mut leaf, mut merge) = (vec![], vec![], vec![]);
    for proof in proofs.iter().take(3) {
        let normalizer = aggregator.normalizer(&proof.model_id)?;
        let t = Instant::now();
        let (_, normalized) = normalizer.normalize(proof)?;
        normalize.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let l = aggregator.circuits().prove_leaf(&normalized, aggregator.registry())?;
        leaf.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        aggregator.circuits().prove_merge(&l, &l)?;
        merge.push(t.elapsed().as_secs_f64());
    }
    let steps_peak_rss_mib = peak_rss_mib();

    let started = Instant::now();
    let batch = aggregator.aggregate(&proofs, &|_| {})?;
    let batch_seconds = started.elapsed().as_secs_f64();
    check_batch(&aggregator, &batch, &expected_leaves)?;
    let queued = match &queue {
        Some(q) => {
            // Leaf jobs carry the model files: write them and a registry file listing them.
            let dir = tempfile::tempdir()?;
            let mut file = RegistryFile::empty(dir.path().to_path_buf());
            for (i, ((model, plan), digest)) in models.iter().zip(&circuit_digests).enumerate() {
                let normalized_digest =
                    aggregator.registry().entry(&model.model_id()).context("model not listed")?.normalized_digest;
                let model_file = ModelFile {
                    model: model.clone(),
                    plan: plan.clone(),
                    circuit_digest: *digest,
                    normalized_digest,
                    report: "{}".into(),
                };
                let name = format!("bench-{i}.tgm");
                std::fs::write(dir.path().join(&name), model_file.to_bytes())?;
                file.upsert(RegistryFileEntry {
                    name: format!("bench-{i}"),
                    model_id: format!("0x{}", hex::encode(model.model_id())),
                    normalized_digest: format!("0x{}", hex::encode(normalized_digest)),
                    model_file: name,
                })?;
            }
            let with_files = aggregator.for_registry_file(file)?;
            Some(on_queue(q, &with_files, &proofs, &batch)?)
        }
        None => None,
    };

    let report = json!({
        "models": models.len(),
        "normalizer_build_seconds": normalizer_build_seconds,
        "aggregation_circuits_build_seconds": circuits_build_seconds,
        "normalize_seconds": median(normalize),
        "leaf_seconds": median(leaf),
        "merge_seconds": median(merge),
        "steps_peak_rss_mib": steps_peak_rss_mib,
        "batch_tasks": tasks,
        "task_proofs_seconds": task_prove_seconds,
        "batch_seconds": batch_seconds,
        "batch_seconds_per_task": batch_seconds / tasks as f64,
        "batch_proof_bytes": batch.proof.len(),
        "peak_rss_mib": peak_rss_mib(),
    });
    let mut report = report;
    if let Some(queued) = queued {
        report["queue"] = queued;
    }
    tgrid_cli::print_stdout(&report.to_string())
}

/// The benchmark doubles as the large-batch test (too slow for `make test`): the batch verifies,
/// carries the expected leaves in order, its root is the natively computed one, and the same
/// proof with two leaves swapped or one dropped is rejected.
fn check_batch(aggregator: &Aggregator, batch: &BatchFile, expected: &[TaskLeaf]) -> Result<()> {
    let registry_root = aggregator.registry().root();
    let verified = aggregator.circuits().verify_batch(batch, &registry_root)?;
    anyhow::ensure!(verified.leaves == expected, "the batch's leaves are not the tasks' leaves in order");
    let native = batch_root(&expected.iter().map(TaskLeaf::hash).collect::<Vec<_>>()).context("an empty batch")?;
    anyhow::ensure!(verified.batch_root == native, "the batch root differs from the native root");
    let mut reordered = batch.clone();
    reordered.leaves.swap(0, expected.len() / 2);
    anyhow::ensure!(
        aggregator.circuits().verify_batch(&reordered, &registry_root).is_err(),
        "a batch with two leaves swapped verified"
    );
    let mut dropped = batch.clone();
    dropped.leaves.pop();
    anyhow::ensure!(
        aggregator.circuits().verify_batch(&dropped, &registry_root).is_err(),
        "a batch missing its last leaf verified"
    );
    Ok(())
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
/// check that it has the in-process batch's leaves and root.
fn on_queue(
    queue: &QueueBench,
    aggregator: &Aggregator,
    proofs: &[TaskProof],
    in_process: &BatchFile,
) -> Result<serde_json::Value> {
    anyhow::ensure!(queue.workers >= 1, "the queue benchmark needs at least one worker");
    let exe = std::env::current_exe().context("cannot find this program to start workers")?;
    let mut workers = Workers(Vec::new());
    for i in 0..queue.workers {
        let child = Command::new(&exe)
            .args(["worker", "--name", &format!("bench-worker-{i}")])
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
        let settings = QueueSettings { url: queue.url.clone(), ack_wait: Duration::from_secs(60) };
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
        let batch = jobs::aggregate(aggregator, &jobs_queue, proofs).await?;
        let seconds = started.elapsed().as_secs_f64();
        let registry_root = aggregator.registry().root();
        let queued = aggregator.circuits().verify_batch(&batch, &registry_root)?;
        let local = aggregator.circuits().verify_batch(in_process, &registry_root)?;
        anyhow::ensure!(
            queued.leaves == local.leaves && queued.batch_root == local.batch_root,
            "the workers' batch differs from the in-process batch"
        );
        Ok(json!({
            "url": queue.url.to_string(),
            "workers": queue.workers,
            "batch_seconds": seconds,
            "batch_seconds_per_task": seconds / proofs.len() as f64,
            "same_root_as_in_process": true,
            "per_worker": jobs_queue.tally(),
        }))
    })
}
