//! `tgrid-sequencer bench`: times each aggregation step alone, then a whole batch.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::json;
use tgrid_aggregation::Normalizer;
use tgrid_circuits::testing::{random_input, tiny_model};
use tgrid_circuits::{ModelFile, SegmentPlan, TaskProver, TaskVerifier};
use tgrid_cli::peak_rss_mib;
use tgrid_sequencer::Aggregator;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub(crate) fn run(tasks: usize, model_paths: &[PathBuf]) -> Result<()> {
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
    let normalizers =
        models.iter().map(|(m, plan)| Normalizer::new(TaskVerifier::new(m, plan)?)).collect::<Result<Vec<_>, _>>()?;
    let normalizer_build_seconds = started.elapsed().as_secs_f64() / models.len() as f64;
    let started = Instant::now();
    let aggregator = Aggregator::with_normalizers(normalizers)?;
    let circuits_build_seconds = started.elapsed().as_secs_f64();

    let provers =
        models.iter().map(|(m, plan)| TaskProver::new(m.clone(), plan.clone())).collect::<Result<Vec<_>, _>>()?;
    let started = Instant::now();
    let proofs = (0..tasks)
        .map(|i| {
            let prover = &provers[i % provers.len()];
            let mut task_id = [0x7A; 32];
            task_id[24..].copy_from_slice(&(i as u64).to_be_bytes());
            let input = random_input(i as u64, prover.model().input_len());
            Ok(prover.prove(&input, task_id, [0x42; 20], &mut |_, _, _| {})?.0)
        })
        .collect::<Result<Vec<_>, tgrid_circuits::Error>>()?;
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
    let verified = aggregator.circuits().verify_batch(&batch, &aggregator.registry().root())?;
    anyhow::ensure!(verified.leaves.len() == tasks, "the batch lost tasks");

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
    tgrid_cli::print_stdout(&report.to_string())
}
