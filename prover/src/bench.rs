//! `tgrid-prover bench`: compile, prove and verify each fixture; one JSON line per fixture.
//! Each fixture runs in a child process so its peak RSS is its own.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::json;
use tgrid_circuits::{commit, SegmentPlan, TaskProof, TaskProver, TaskVerifier};
use tgrid_onnx::{import_onnx, quantize_model, InputData};

use tgrid_cli::{bad_input, peak_rss_mib};

pub(crate) fn run(fixtures: &[String], max_segment_rows: usize, in_process: bool) -> Result<()> {
    if in_process {
        let [dir] = fixtures else { bail!("--in-process takes exactly one fixture") };
        let line = one(Path::new(dir), max_segment_rows)?;
        return tgrid_cli::print_stdout(&line);
    }
    let exe = std::env::current_exe().context("cannot locate tgrid-prover")?;
    for dir in fixtures {
        let output = Command::new(&exe)
            .args(["bench", "--in-process", "--max-segment-rows", &max_segment_rows.to_string(), dir])
            .output()
            .with_context(|| format!("cannot run the benchmark of {dir}"))?;
        if !output.status.success() {
            bail!("benchmark of {dir} failed: {}", String::from_utf8_lossy(&output.stderr).trim());
        }
        tgrid_cli::print_stdout(String::from_utf8_lossy(&output.stdout).trim_end())?;
    }
    Ok(())
}

fn one(dir: &Path, max_segment_rows: usize) -> Result<String> {
    let (graph, _) = import_onnx(&dir.join("model.onnx")).map_err(bad_input)?;
    let cal = InputData::from_path(&dir.join("calibration.json")).map_err(bad_input)?;
    let model = quantize_model(&graph, &cal.input_data)?;
    let input = crate::quantized_input(&model, &dir.join("input.json"))?;
    let plan = SegmentPlan::auto(&model, max_segment_rows);

    let started = Instant::now();
    let prover = TaskProver::new(model.clone(), plan.clone())?;
    let build_seconds = started.elapsed().as_secs_f64();
    let (proof, _trace, stats) = prover.prove(&input, [7; 32], [9; 20], &mut |_, _, _| {})?;
    let prove_seconds = stats.prove_seconds;
    drop(prover);

    let started = Instant::now();
    let verifier = TaskVerifier::new(&model, &plan)?;
    let verifier_build_seconds = started.elapsed().as_secs_f64();
    let bytes = proof.to_bytes();
    let started = Instant::now();
    let publics = verifier.verify(&TaskProof::from_bytes(&bytes)?)?;
    let verify_ms = started.elapsed().as_secs_f64() * 1000.0;
    anyhow::ensure!(publics.input_commitment == commit(&input), "verified commitment mismatch");

    Ok(json!({
        "fixture": dir.display().to_string(),
        "macs": model.macs(),
        "segments": stats.segments,
        "circuit_rows": stats.total_rows,
        "max_segment_rows": stats.max_segment_rows,
        "build_seconds": build_seconds,
        "prove_seconds": prove_seconds,
        "verifier_build_seconds": verifier_build_seconds,
        "verify_ms": verify_ms,
        "proof_bytes": bytes.len(),
        "peak_rss_mib": peak_rss_mib(),
    })
    .to_string())
}
