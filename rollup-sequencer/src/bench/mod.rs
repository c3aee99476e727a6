//! `tgrid-sequencer bench`: times each aggregation step alone, then a whole batch (and, with
//! `--queue`, the same batch on worker processes; with `--provider-leaves`, the same batch with
//! every leaf proven by its provider, as the daemon's `prove_leaves` does; with
//! `--arrival-every`, those tasks arriving over time, timed from the batch's close).

mod latency;
mod queue;
mod wrapping;

pub(crate) use latency::LatencyBench;
pub(crate) use queue::QueueBench;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::json;
use tgrid_aggregation::{batch_root, AggregationCircuits, BatchFile, LeafCircuit, TaskLeaf};
use tgrid_circuits::testing::{random_input, tiny_model};
use tgrid_circuits::{commit, ModelFile, SegmentPlan, TaskProof, TaskProver, TaskVerifier};
use tgrid_cli::peak_rss_mib;
use tgrid_sequencer::Aggregator;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub(crate) fn run(
    tasks: usize,
    model_paths: &[PathBuf],
    queue: Option<QueueBench>,
    provider_leaves: bool,
    skip_sequencer_leaves: bool,
    wrap_insecure_devnet_keys: Option<PathBuf>,
    latency: Option<LatencyBench>,
) -> Result<()> {
    anyhow::ensure!(tasks >= 2, "the batch needs at least 2 tasks");
    anyhow::ensure!(
        wrap_insecure_devnet_keys.is_none() || provider_leaves || queue.is_some(),
        "--wrap-insecure-devnet-key wraps the --provider-leaves or --queue batches: give one of them"
    );
    // The aggregation circuits alone first: the wrapper and the aggregator then share them.
    let started = Instant::now();
    AggregationCircuits::shared()?;
    let circuits_build_seconds = started.elapsed().as_secs_f64();
    // Built next (tens of seconds, minutes for a first devnet key setup) and outside every
    // timing, as the service builds its wrap circuits and loads its key at start-up.
    let wrapping = match wrap_insecure_devnet_keys.clone() {
        Some(dir) => Some(wrapping::Wrapping::load(dir)?),
        None => None,
    };
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
    let (leaf_circuits, circuit_digests): (Vec<LeafCircuit>, Vec<[u8; 32]>) = models
        .iter()
        .map(|(m, plan)| {
            let verifier = TaskVerifier::new(m, plan)?;
            let circuit_digest = verifier.circuit_digest();
            Ok::<_, tgrid_aggregation::Error>((LeafCircuit::new(verifier)?, circuit_digest))
        })
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .unzip();
    let leaf_circuit_build_seconds = started.elapsed().as_secs_f64() / models.len() as f64;
    let aggregator = Aggregator::with_leaf_circuits(leaf_circuits)?;

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
    let (mut leaf, mut chunk, mut merge) = (vec![], vec![], vec![]);
    for proof in proofs.iter().take(3) {
        let leaf_circuit = aggregator.leaf_circuit(&proof.model_id)?;
        let t = Instant::now();
        let (_, l) = leaf_circuit.prove(proof)?;
        leaf.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let c = aggregator.circuits().prove_chunk(&[l.clone(), l.clone(), l.clone(), l], aggregator.registry())?;
        chunk.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        aggregator.circuits().prove_merge(&c, &c)?;
        merge.push(t.elapsed().as_secs_f64());
    }
    let steps_peak_rss_mib = peak_rss_mib();

    let mut sequencer_leaves = None;
    if !skip_sequencer_leaves {
        let started = Instant::now();
        let batch = aggregator.aggregate(&proofs, &|_| {})?;
        let batch_seconds = started.elapsed().as_secs_f64();
        check_batch(&aggregator, &batch, &expected_leaves)?;
        let queued = match &queue {
            Some(q) => {
                let wrap = wrapping
                    .as_ref()
                    .zip(wrap_insecure_devnet_keys.as_deref())
                    .map(|(wrapping, keys_dir)| queue::QueueWrap { wrapping, keys_dir });
                Some(queue::run(q, &aggregator, &models, &circuit_digests, &proofs, &batch, wrap)?)
            }
            None => None,
        };
        sequencer_leaves = Some((batch_seconds, batch.proof.len(), queued));
    }
    let provided = if provider_leaves {
        let (mut report, leaf_bytes) = with_provider_leaves(&aggregator, &proofs, &expected_leaves, wrapping.as_ref())?;
        if let Some(latency) = &latency {
            report["arriving"] =
                latency::run(latency, &aggregator, &proofs, &leaf_bytes, &expected_leaves, wrapping.as_ref())?;
        }
        Some(report)
    } else {
        None
    };

    let mut report = json!({
        "models": models.len(),
        "leaf_circuit_build_seconds": leaf_circuit_build_seconds,
        "aggregation_circuits_build_seconds": circuits_build_seconds,
        "leaf_seconds": median(leaf),
        "chunk_seconds": median(chunk),
        "merge_seconds": median(merge),
        "steps_peak_rss_mib": steps_peak_rss_mib,
        "batch_tasks": tasks,
        "batch_chunk_proofs": tgrid_sequencer::chunk_proofs(tasks),
        "batch_merge_proofs": tgrid_sequencer::merge_proofs(tgrid_sequencer::chunk_proofs(tasks)),
        "task_proofs_seconds": task_prove_seconds,
        "peak_rss_mib": peak_rss_mib(),
    });
    if let Some((batch_seconds, proof_bytes, queued)) = sequencer_leaves {
        report["batch_seconds"] = json!(batch_seconds);
        report["batch_seconds_per_task"] = json!(batch_seconds / tasks as f64);
        report["batch_proof_bytes"] = json!(proof_bytes);
        if let Some(queued) = queued {
            report["queue"] = queued;
        }
    }
    if let Some(provided) = provided {
        report["provider_leaves"] = provided;
    }
    tgrid_cli::print_stdout(&report.to_string())
}

/// The batch again with every leaf proven beforehand by its provider (timed apart: the providers'
/// cost), so the sequencer only checks each leaf proof and merges: what it pays per task when
/// providers run with `prove_leaves`; all tasks there at the close, so with `wrapping` this is
/// also the close → Groth16 latency of a batch that arrives at once. Returns the leaf proofs.
fn with_provider_leaves(
    aggregator: &Aggregator,
    proofs: &[TaskProof],
    expected: &[TaskLeaf],
    wrapping: Option<&wrapping::Wrapping>,
) -> Result<(serde_json::Value, Vec<Vec<u8>>)> {
    let started = Instant::now();
    let leaf_bytes = proofs
        .iter()
        .map(|p| Ok(aggregator.prove_leaf(p)?.1.to_bytes()))
        .collect::<Result<Vec<_>, tgrid_sequencer::Error>>()?;
    let provider_seconds = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let adopted = proofs
        .iter()
        .zip(&leaf_bytes)
        .map(|(p, bytes)| Ok(Some(aggregator.adopt_leaf(p, bytes)?.1)))
        .collect::<Result<Vec<_>, tgrid_sequencer::Error>>()?;
    let adopt_seconds = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let batch = aggregator.aggregate_with(proofs, &adopted, &|_| {})?;
    let merge_seconds = started.elapsed().as_secs_f64();
    check_batch(aggregator, &batch, expected)?;
    let n = proofs.len() as f64;
    let mut report = json!({
        "provider_leaf_seconds_per_task": provider_seconds / n,
        "adopt_seconds_per_task": adopt_seconds / n,
        "batch_seconds": adopt_seconds + merge_seconds,
        "batch_seconds_per_task": (adopt_seconds + merge_seconds) / n,
    });
    if let Some(wrapping) = wrapping {
        let wrapped = wrapping.wrap(&batch)?;
        report["close_to_groth16_seconds"] = json!(adopt_seconds + merge_seconds + wrapped.seconds);
        report["wrap"] = wrapped.report;
    }
    Ok((report, leaf_bytes))
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
