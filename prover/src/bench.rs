//! `tgrid-prover bench`: compile, prove and verify each fixture; one JSON line per fixture.
//! Each fixture runs in a child process so its peak RSS is its own.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::json;
use tgrid_circuits::{commit, commit_salted, Privacy, Salt, SegmentPlan, TaskProof, TaskProver, TaskVerifier};
use tgrid_onnx::{import_onnx, quantize_model_with, InputData, QuantizeOptions};

use tgrid_cli::{bad_input, peak_rss_mib};

/// Verifications timed per fixture; the median is reported.
const VERIFY_RUNS: usize = 7;

pub(crate) fn run(
    fixtures: &[String],
    max_segment_rows: usize,
    privacy: Privacy,
    options: QuantizeOptions,
    in_process: bool,
) -> Result<()> {
    if in_process {
        let [dir] = fixtures else { bail!("--in-process takes exactly one fixture") };
        let line = one(Path::new(dir), max_segment_rows, privacy, options)?;
        return tgrid_cli::print_stdout(&line);
    }
    let exe = std::env::current_exe().context("cannot locate tgrid-prover")?;
    for dir in fixtures {
        let mut args = vec!["bench", "--in-process"];
        if privacy == Privacy::Private {
            args.push("--private");
        }
        if options.wide_attention_scores {
            args.push("--wide-attention-scores");
        }
        let output = Command::new(&exe)
            .args(args)
            .args(["--max-segment-rows", &max_segment_rows.to_string(), dir])
            .output()
            .with_context(|| format!("cannot run the benchmark of {dir}"))?;
        if !output.status.success() {
            bail!("benchmark of {dir} failed: {}", String::from_utf8_lossy(&output.stderr).trim());
        }
        tgrid_cli::print_stdout(String::from_utf8_lossy(&output.stdout).trim_end())?;
    }
    Ok(())
}

fn one(dir: &Path, max_segment_rows: usize, privacy: Privacy, options: QuantizeOptions) -> Result<String> {
    let (graph, _) = import_onnx(&dir.join("model.onnx")).map_err(bad_input)?;
    let cal = InputData::from_path(&dir.join("calibration.json")).map_err(bad_input)?;
    let (samples, _) =
        cal.samples_for_ports(graph.input_shape.iter().product(), &graph.ports.inputs).map_err(bad_input)?;
    let model = quantize_model_with(&graph, &samples, options)?;
    let input = crate::quantized_input(&model, &dir.join("input.json"))?;
    let plan = SegmentPlan::auto(&model, max_segment_rows);

    let started = Instant::now();
    let prover = TaskProver::with_privacy(model.clone(), plan.clone(), privacy)?;
    let build_seconds = started.elapsed().as_secs_f64();
    let salt = Salt::random();
    let (proof, trace, stats) = match privacy {
        Privacy::Public => prover.prove(&input, [7; 32], [9; 20], &mut |_, _, _| {})?,
        Privacy::Private => prover.prove_private(&input, &salt, [7; 32], [9; 20], &mut |_, _, _| {})?,
    };
    let prove_seconds = stats.prove_seconds;
    drop(prover);

    let started = Instant::now();
    let verifier = TaskVerifier::with_privacy(&model, &plan, privacy)?;
    let verifier_build_seconds = started.elapsed().as_secs_f64();
    let bytes = proof.to_bytes();
    let mut verify_ms = Vec::with_capacity(VERIFY_RUNS);
    for _ in 0..VERIFY_RUNS {
        let started = Instant::now();
        let publics = verifier.verify(&TaskProof::from_bytes(&bytes)?)?;
        verify_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        let expected = match privacy {
            Privacy::Public => commit(&input),
            Privacy::Private => commit_salted(&input, &salt),
        };
        anyhow::ensure!(publics.input_commitment == expected, "verified commitment mismatch");
        if privacy == Privacy::Public {
            // The proven output is the integer inference's.
            let inferred = tgrid_circuits::infer::run(&model, &input)?;
            anyhow::ensure!(inferred == trace, "the proven trace differs from the integer inference");
            anyhow::ensure!(publics.output_commitment == commit(inferred.output()), "verified output mismatch");
        }
    }
    verify_ms.sort_by(f64::total_cmp);

    Ok(json!({
        "fixture": dir.display().to_string(),
        "privacy": privacy.name(),
        "macs": model.macs(),
        "segments": stats.segments,
        "circuit_rows": stats.total_rows,
        "estimated_segment_rows": plan.estimated_rows(&model),
        "max_segment_rows": stats.max_segment_rows,
        "build_seconds": build_seconds,
        "prove_seconds": prove_seconds,
        "verifier_build_seconds": verifier_build_seconds,
        "verify_ms": verify_ms[VERIFY_RUNS / 2],
        "verify_ms_min": verify_ms[0],
        "proof_bytes": bytes.len(),
        "peak_rss_mib": peak_rss_mib(),
    })
    .to_string())
}
