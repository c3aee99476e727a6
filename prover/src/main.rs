//! `tgrid-prover`: the provider's tool. Compiles ONNX models to int8 models and circuits, runs
//! the integer inference, commits inputs, proves tasks, and benchmarks the fixtures.

mod bench;
mod daemon;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use serde_json::json;
use tgrid_aggregation::Normalizer;
use tgrid_circuits::{commit, infer, ModelFile, SegmentPlan, TaskProver, TaskVerifier};
use tgrid_onnx::{import_onnx, quantize_model, tract_reference, CalibrationReport, InputData};

use tgrid_cli::{bad_input, parse_hex, Output};

/// TensorGrid provider tool: compile ONNX models into int8 models and circuits, run inference,
/// commit inputs and prove tasks.
#[derive(Debug, Parser)]
#[command(name = "tgrid-prover", version, about, long_about = None)]
struct Cli {
    /// Print one JSON object on stdout instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Quantize a float ONNX model with calibration data and build its circuit.
    Compile {
        /// Float ONNX model.
        model: PathBuf,
        /// Calibration samples in EZKL's input format ({"input_data": [[...], ...]}).
        #[arg(long)]
        calibration: PathBuf,
        /// Where to write the compiled model (.tgm).
        #[arg(long)]
        out: PathBuf,
        /// Largest estimated segment, in gate rows; larger models are cut into segments joined
        /// by recursion, so proving memory depends on this, not on the model depth.
        #[arg(long, default_value_t = 1 << 16)]
        max_segment_rows: usize,
    },
    /// Run the exact int8 inference on an input.
    Infer {
        /// Compiled model (.tgm).
        model: PathBuf,
        /// Input in EZKL's format (the first sample is used).
        #[arg(long)]
        input: PathBuf,
        /// Write the output (int8, dequantized, argmax, commitment) as JSON here.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Print the input commitment (bytes32) a task poster puts on-chain.
    CommitInput {
        /// Compiled model (.tgm).
        model: PathBuf,
        /// Input in EZKL's format (the first sample is used).
        #[arg(long)]
        input: PathBuf,
    },
    /// Prove one task: the inference on the input, bound to the task id and the provider.
    Prove {
        /// Compiled model (.tgm).
        model: PathBuf,
        /// Input in EZKL's format (the first sample is used).
        #[arg(long)]
        input: PathBuf,
        /// Task id assigned by the escrow contract (0x + 64 hex digits).
        #[arg(long)]
        task_id: String,
        /// Provider address that accepted the task (0x + 40 hex digits).
        #[arg(long)]
        provider: String,
        /// Where to write the proof (.tgp).
        #[arg(long)]
        out: PathBuf,
        /// Also write the output as JSON here.
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Run the provider daemon: stake, watch posted tasks of the held models, accept what can be
    /// finished before its deadline, prove, submit to the sequencer, follow until settled, claim
    /// the pay.
    ///
    /// Settings (defaults for a local devnet, then the file, then TGRID_PROVIDER_<SETTING>
    /// variables; lists comma-separated): rpc_url, deployment, private_key (default: anvil
    /// account 1, devnet only), models (.tgm files), inputs_dir or inputs_url (the input
    /// store: <input commitment>.json files), sequencer_url, data_dir, stake_tgrid, settle_margin_secs,
    /// initial_prove_estimate_secs, poll_interval_ms, prune_after_secs (finished tasks leave the
    /// state file this long after their deadline), auto_claim (default true: claim the pay of
    /// settled tasks, one transaction per poll round; false: leave it to `tgrid stake claim`).
    Run {
        /// TOML settings file.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Print the effective settings (private key hidden) and exit.
        #[arg(long)]
        print_settings: bool,
    },
    /// Benchmark compile, prove and verify on fixture models; prints one JSON line per fixture.
    Bench {
        /// Fixture directories (each with model.onnx, calibration.json, input.json).
        #[arg(default_values_t = ["fixtures/mlp".to_string(), "fixtures/cnn".to_string(), "fixtures/lenet".to_string()])]
        fixtures: Vec<String>,
        /// Largest segment in rows (as for compile).
        #[arg(long, default_value_t = 1 << 16)]
        max_segment_rows: usize,
        /// Run one fixture in this process (used internally to measure each one's peak memory).
        #[arg(long, hide = true)]
        in_process: bool,
    },
}

fn main() {
    let cli = Cli::parse();
    tgrid_cli::init_tracing();
    let out = Output { json: cli.json };
    out.exit_with(run(cli.command, &out));
}

pub(crate) fn load_model(path: &Path) -> Result<ModelFile> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display())).map_err(bad_input)?;
    ModelFile::from_bytes(&bytes)
        .with_context(|| format!("{} is not a usable compiled model", path.display()))
        .map_err(bad_input)
}

fn output_json(file: &ModelFile, output: &[i8]) -> serde_json::Value {
    let q = file.model.tensor_q(file.model.output_tensor());
    let real = infer::dequantize(output, q);
    json!({
        "output_int8": output,
        "output": real,
        "argmax": tgrid_onnx::argmax(&real),
        "output_commitment": commit(output).to_hex(),
    })
}

fn run(command: Command, out: &Output) -> Result<()> {
    match command {
        Command::Compile { model, calibration, out: out_path, max_segment_rows } => {
            let started = Instant::now();
            let (graph, warnings) = import_onnx(&model).map_err(bad_input)?;
            for w in &warnings {
                tracing::warn!("{w}");
            }
            let cal = InputData::from_path(&calibration).map_err(bad_input)?;
            let quant = quantize_model(&graph, &cal.input_data).map_err(bad_input)?;
            let reference = tract_reference(&model, &quant.input_shape, &cal.input_data)?;
            let report = CalibrationReport::compare(&quant, &cal.input_data, &reference)?;
            let plan = SegmentPlan::auto(&quant, max_segment_rows);
            let bar = out.spinner("building the circuit");
            let verifier = TaskVerifier::new(&quant, &plan)?;
            let segment_rows = verifier.segment_rows().to_vec();
            let circuit_digest = verifier.circuit_digest();
            bar.set_message("building the normalization circuit");
            let normalized_digest = Normalizer::new(verifier)?.digest();
            bar.finish_and_clear();
            let report_json = json!({
                "source": model.display().to_string(),
                "warnings": warnings,
                "calibration": report,
                "macs": quant.macs(),
                "segments": plan.cuts.len() + 1,
                "segment_rows": segment_rows,
            });
            let file =
                ModelFile { model: quant, plan, circuit_digest, normalized_digest, report: report_json.to_string() };
            std::fs::write(&out_path, file.to_bytes())
                .with_context(|| format!("cannot write {}", out_path.display()))?;
            let model_id = format!("0x{}", hex::encode(file.model.model_id()));
            out.emit(
                json!({
                    "model_id": model_id,
                    "out": out_path.display().to_string(),
                    "circuit_digest": format!("0x{}", hex::encode(file.circuit_digest)),
                    "normalized_digest": format!("0x{}", hex::encode(file.normalized_digest)),
                    "layers": file.model.nodes.len(),
                    "macs": file.model.macs(),
                    "segments": file.plan.cuts.len() + 1,
                    "segment_rows": segment_rows,
                    "calibration": report,
                    "warnings": warnings,
                    "seconds": started.elapsed().as_secs_f64(),
                }),
                || {
                    format!(
                        "compiled {} -> {}\n  model id        {model_id}\n  circuit digest  0x{}\n  normalized      0x{} (the registry lists this)\n  layers {}  MACs {}  segments {}  rows per segment {:?}\n  int8 vs float on {} calibration samples: argmax agreement {:.2}%, max |error| {:.4}, mean |error| {:.4}\n  {}{:.1} s",
                        model.display(),
                        out_path.display(),
                        hex::encode(file.circuit_digest),
                        hex::encode(file.normalized_digest),
                        file.model.nodes.len(),
                        file.model.macs(),
                        file.plan.cuts.len() + 1,
                        segment_rows,
                        report.samples,
                        100.0 * report.argmax_agreement,
                        report.max_abs_error,
                        report.mean_abs_error,
                        warnings.iter().map(|w| format!("warning: {w}\n  ")).collect::<String>(),
                        started.elapsed().as_secs_f64()
                    )
                },
            )
        }
        Command::Infer { model, input, out: out_path } => {
            let file = load_model(&model)?;
            let x = quantized_input(&file.model, &input)?;
            let trace = infer::run(&file.model, &x).map_err(bad_input)?;
            let result = output_json(&file, trace.output());
            if let Some(p) = &out_path {
                std::fs::write(p, serde_json::to_string_pretty(&result)?)
                    .with_context(|| format!("cannot write {}", p.display()))?;
            }
            out.emit(result.clone(), || {
                format!(
                    "argmax {}\noutput {}\noutput commitment {}",
                    result["argmax"],
                    result["output"],
                    result["output_commitment"].as_str().unwrap_or_default()
                )
            })
        }
        Command::CommitInput { model, input } => {
            let file = load_model(&model)?;
            let x = quantized_input(&file.model, &input)?;
            let c = commit(&x).to_hex();
            out.emit(json!({ "input_commitment": c }), || c.clone())
        }
        Command::Prove { model, input, task_id, provider, out: out_path, output } => {
            let task_id: [u8; 32] = parse_hex(&task_id, "--task-id").map_err(bad_input)?;
            let provider: [u8; 20] = parse_hex(&provider, "--provider").map_err(bad_input)?;
            let file = load_model(&model)?;
            let x = quantized_input(&file.model, &input)?;
            let started = Instant::now();
            let bar = out.spinner("building the circuit");
            let prover = TaskProver::new(file.model.clone(), file.plan.clone())?;
            let mut progress = |stage: &str, done: usize, total: usize| {
                bar.set_message(format!("{stage} ({done}/{total})"));
            };
            let (proof, trace, stats) = prover.prove(&x, task_id, provider, &mut progress)?;
            bar.finish_and_clear();
            let bytes = proof.to_bytes();
            std::fs::write(&out_path, &bytes).with_context(|| format!("cannot write {}", out_path.display()))?;
            let result = output_json(&file, trace.output());
            if let Some(p) = &output {
                std::fs::write(p, serde_json::to_string_pretty(&result)?)
                    .with_context(|| format!("cannot write {}", p.display()))?;
            }
            out.emit(
                json!({
                    "proof": out_path.display().to_string(),
                    "proof_bytes": bytes.len(),
                    "task_id": format!("0x{}", hex::encode(task_id)),
                    "provider": format!("0x{}", hex::encode(provider)),
                    "model_id": format!("0x{}", hex::encode(proof.model_id)),
                    "input_commitment": commit(&x).to_hex(),
                    "output_commitment": result["output_commitment"],
                    "argmax": result["argmax"],
                    "stats": stats,
                    "seconds": started.elapsed().as_secs_f64(),
                }),
                || {
                    format!(
                        "proved task 0x{} for provider 0x{} -> {} ({} bytes)\n  output argmax {}  output commitment {}\n  segments {}  rows {}  build {:.2} s  prove {:.2} s  total {:.2} s",
                        hex::encode(task_id),
                        hex::encode(provider),
                        out_path.display(),
                        bytes.len(),
                        result["argmax"],
                        result["output_commitment"].as_str().unwrap_or_default(),
                        stats.segments,
                        stats.total_rows,
                        stats.build_seconds,
                        stats.prove_seconds,
                        started.elapsed().as_secs_f64()
                    )
                },
            )
        }
        Command::Run { config, print_settings } => {
            let mut settings = daemon::Settings::load(config.as_deref()).map_err(bad_input)?;
            if print_settings {
                settings.private_key = "(hidden)".into();
                return out.emit(serde_json::to_value(&settings)?, || {
                    toml::to_string(&settings).unwrap_or_else(|e| e.to_string())
                });
            }
            daemon::run(settings, *out)
        }
        Command::Bench { fixtures, max_segment_rows, in_process } => {
            bench::run(&fixtures, max_segment_rows, in_process)
        }
    }
}

/// Reads the first sample of an EZKL input file and quantizes it for the model.
pub(crate) fn quantized_input(model: &tgrid_circuits::QuantModel, path: &Path) -> Result<Vec<i8>> {
    let data = InputData::from_path(path).map_err(bad_input)?;
    infer::quantize_input(model, &data.input_data[0])
        .with_context(|| format!("{} does not fit the model", path.display()))
        .map_err(bad_input)
}
