//! `tgrid-prover`: the provider's tool. Compiles ONNX models to int8 models and circuits, runs
//! the integer inference, commits inputs, proves tasks, settles its own results, runs the
//! provider daemon, and benchmarks the fixtures.

mod bench;
mod daemon;
mod settle;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use serde_json::json;
use tgrid_aggregation::LeafCircuit;
use tgrid_circuits::{
    commit, commit_salted, infer, EncryptedTensor, ModelFile, OutputKey, Privacy, Salt, SegmentPlan, TaskProver,
    TaskVerifier,
};
use tgrid_onnx::{import_onnx, quantize_model_with, tract_reference, CalibrationReport, InputData, QuantizeOptions};

use tgrid_cli::{bad_input, parse_hex, Output};

/// TensorGrid provider tool: compile ONNX models into int8 models and circuits, run inference,
/// commit inputs and prove tasks.
#[derive(Debug, Parser)]
#[command(name = "tgrid-prover", version, about, long_about = None)]
struct Cli {
    /// Print one JSON object on stdout instead of text.
    #[arg(long, global = true)]
    json: bool,
    /// Directory where built circuits (each model's task circuits, a segmented model's segments
    /// and joins included; aggregation, wrap; task verifiers) and the Groth16 constraint matrices
    /// are kept between runs of this executable, so that a restart or the next proof skips
    /// seconds of building (the character GPT's task circuit: 11–16 s); `off` builds them every
    /// time. `bench` never uses it.
    /// Default: $XDG_CACHE_HOME/tgrid/circuits, else ~/.cache/tgrid/circuits.
    #[arg(long, global = true, env = "TGRID_CIRCUIT_CACHE", value_name = "DIR")]
    circuit_cache: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Quantize a float ONNX model with calibration data and build its circuit.
    Compile {
        /// Float ONNX model.
        model: PathBuf,
        /// Calibration samples in EZKL's input format ({"input_data": [[...], ...]}); a model with several inputs takes one array per input (each its samples back to back) or one per sample with the inputs laid end to end.
        #[arg(long)]
        calibration: PathBuf,
        /// Where to write the compiled model (.tgm).
        #[arg(long)]
        out: PathBuf,
        /// Largest estimated segment, in gate rows; larger models are cut into segments joined
        /// by recursion, so proving memory depends on this, not on the model depth. Each
        /// segment's circuit has the next power of two of its rows (2^16 rows: about 2.4 GB).
        #[arg(long, default_value_t = 1 << 16)]
        max_segment_rows: usize,
        /// Keep attention scores (a MatMul of two activations read only by a Softmax) at 16
        /// bits instead of 8: the Softmax sees its logits 256 times finer, at a few lookups per
        /// score. The character GPT agrees with its float model on 95.2 % of next characters
        /// with it, 94.6 % without (8,000 held-out windows; docs/quantization.md).
        #[arg(long)]
        wide_attention_scores: bool,
    },
    /// Run the exact int8 inference on an input.
    Infer {
        /// Compiled model (.tgm).
        model: PathBuf,
        /// Input in EZKL's format (the first sample is used; a model with several inputs takes one array per input, or the inputs laid end to end).
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
        /// Input in EZKL's format (the first sample is used; a model with several inputs takes one array per input, or the inputs laid end to end).
        #[arg(long)]
        input: PathBuf,
        /// A private task's hiding commitment, under a fresh salt (printed: the poster sends it
        /// to the provider with the input, to no one else).
        #[arg(long, conflicts_with = "salt")]
        private: bool,
        /// A private task's hiding commitment under this salt (0x + 64 hex digits).
        #[arg(long)]
        salt: Option<String>,
    },
    /// Prove one task: the inference on the input, bound to the task id and the provider.
    Prove {
        /// Compiled model (.tgm).
        model: PathBuf,
        /// Input in EZKL's format (the first sample is used; a model with several inputs takes one array per input, or the inputs laid end to end).
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
        /// A private task: zero-knowledge proof under the model's private id, salted input
        /// commitment, output encrypted to the poster in the proof. Needs --input-salt.
        #[arg(long, requires = "input_salt")]
        private: bool,
        /// The salt of the private task's input commitment, from the poster (0x + 64 hex
        /// digits); the output is encrypted under the key derived from it.
        #[arg(long, requires = "private")]
        input_salt: Option<String>,
    },
    /// Settle this provider's own results on-chain, without a sequencer: aggregate and wrap the
    /// proofs of signed orders it proved, then send one TaskMarket.settleBatch from its account
    /// (permissionless within each order's self-settlement window).
    Settle {
        /// A signed order (JSON: as `tgrid order post` writes it, or as the relay lists it);
        /// repeated, in the same order as --proof.
        #[arg(long = "order", required = true)]
        orders: Vec<PathBuf>,
        /// The proof (.tgp) of the --order at the same position. A leaf proof kept beside it
        /// with the extension `.leaf` (as the daemon's `prove_leaves` keeps them) is used
        /// instead of proving that leaf again, if it is this task's under the chain's registry.
        #[arg(long = "proof", required = true)]
        proofs: Vec<PathBuf>,
        /// Compiled models (.tgm) of the orders.
        #[arg(long = "model", required = true)]
        models: Vec<PathBuf>,
        /// Ethereum JSON-RPC endpoint.
        #[arg(long, env = "TGRID_RPC_URL", default_value = tgrid_chain::DEFAULT_RPC_URL)]
        rpc: String,
        /// Deployment file written by Deploy.s.sol.
        #[arg(long, env = "TGRID_DEPLOYMENT", default_value = tgrid_chain::DEFAULT_DEPLOYMENT)]
        deployment: PathBuf,
        /// Encrypted keystore of the provider's account (Web3 Secret Storage, as Foundry's `cast
        /// wallet import` writes), its password from --password-file or TGRID_KEYSTORE_PASSWORD.
        /// Without it, the raw key in the environment variable TGRID_PRIVATE_KEY; without that,
        /// anvil account 1 on the devnet chain only. A key is never an argument: any process on
        /// the machine can read another's arguments.
        #[arg(long, env = "TGRID_KEYSTORE")]
        keystore: Option<PathBuf>,
        /// File whose first line is the keystore's password.
        #[arg(long, env = "TGRID_KEYSTORE_PASSWORD_FILE", requires = "keystore")]
        password_file: Option<PathBuf>,
        /// The ceremony's Groth16 proving key of the wrap circuit.
        #[arg(long, conflicts_with = "insecure_devnet_key")]
        proving_key: Option<PathBuf>,
        /// INSECURE: the devnet key set up from a public seed (cached in --keys-dir); devnets only.
        #[arg(long)]
        insecure_devnet_key: bool,
        /// Where the INSECURE devnet key is cached.
        #[arg(long, default_value = ".tgrid/keys")]
        keys_dir: PathBuf,
        /// FRI parameters of the wrap's final layer (the deployed verifier's).
        #[arg(long, value_enum, default_value = "production")]
        fri: FriArg,
    },
    /// Run the provider daemon: bond, find open orders of the held models in the relay, accept
    /// by signature what can be finished and settled before its deadline, prove, submit to the
    /// sequencer, follow each order on-chain, settle itself what the sequencer did not settle in
    /// time, withdraw earnings.
    ///
    /// Settings (defaults for a local devnet, then the file, then TGRID_PROVIDER_<SETTING>
    /// variables; lists comma-separated): rpc_url, deployment, private_key (default: anvil
    /// account 1, devnet chain only) or keystore (an encrypted Web3 keystore, with
    /// keystore_password_file or TGRID_KEYSTORE_PASSWORD), models (.tgm files), inputs_dir or inputs_url (the input
    /// store: <input commitment>.json files), sequencer_url (relay and sequencer), data_dir,
    /// stake_tgrid, settle_margin_secs (time an accepted order must leave after proving),
    /// self_settle (default true) and self_settle_before_secs (settle unsettled orders this long
    /// before their deadline), wrap_key (required with self_settle: a ceremony's proving key file,
    /// or `insecure-devnet`: the INSECURE devnet key cached in insecure_devnet_keys_dir, refused on
    /// any chain but the devnet's), wrap_fri (production | insecure-test),
    /// min_payment_tgrid, max_sequencer_queue (accept new orders only while the sequencer's
    /// advertised queue is at most this; 0 ignores it), initial_prove_estimate_secs, poll_interval_ms, prune_after_secs,
    /// auto_withdraw (default true: withdraw earnings after orders settle).
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
        /// Benchmark private tasks (zero-knowledge, salted commitments) instead of public ones.
        #[arg(long)]
        private: bool,
        /// Compile with 16-bit attention scores (as for compile).
        #[arg(long)]
        wide_attention_scores: bool,
        /// Run one fixture in this process (used internally to measure each one's peak memory).
        #[arg(long, hide = true)]
        in_process: bool,
    },
}

fn main() {
    let cli = Cli::parse();
    tgrid_cli::init_tracing();
    // The benchmark measures circuit builds (its `verifier_build_seconds`) as a cold start pays them.
    if !matches!(cli.command, Command::Bench { .. }) {
        tgrid_circuit_cache::enable_from_setting(cli.circuit_cache.as_deref());
    }
    let out = Output { json: cli.json };
    out.exit_with(run(cli.command, &out));
}

pub(crate) fn load_model(path: &Path) -> Result<ModelFile> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display())).map_err(bad_input)?;
    ModelFile::from_bytes(&bytes)
        .with_context(|| format!("{} is not a usable compiled model", path.display()))
        .map_err(bad_input)
}

/// The mode a `--private` flag selects.
fn privacy(private: bool) -> Privacy {
    if private {
        Privacy::Private
    } else {
        Privacy::Public
    }
}

/// The named inputs and outputs of a model with several, one line each, laid end to end in
/// this order; empty for a model with one of each.
fn ports_text(ports: &tgrid_circuits::Ports) -> String {
    let list = |parts: &[tgrid_circuits::Port]| {
        parts.iter().map(|p| format!("{} {:?}", p.name, p.shape)).collect::<Vec<_>>().join(", ")
    };
    let mut text = String::new();
    if !ports.inputs.is_empty() {
        text.push_str(&format!("inputs (laid end to end)  {}\n  ", list(&ports.inputs)));
    }
    if !ports.outputs.is_empty() {
        text.push_str(&format!("outputs (laid end to end) {}\n  ", list(&ports.outputs)));
    }
    text
}

fn output_json(file: &ModelFile, output: &[i8]) -> serde_json::Value {
    let q = file.model.tensor_q(file.model.output_tensor());
    let real = infer::dequantize(output, q);
    let mut result = json!({
        "output_int8": output,
        "output": real,
        "argmax": tgrid_onnx::argmax(&real),
        "output_commitment": commit(output).to_hex(),
    });
    // A model with several outputs: each named, cut out of the flat output the proof commits to.
    if let Some(parts) = tgrid_onnx::named_outputs_json(&file.model, &real) {
        result["outputs"] = parts;
    }
    result
}

fn run(command: Command, out: &Output) -> Result<()> {
    match command {
        Command::Compile { model, calibration, out: out_path, max_segment_rows, wide_attention_scores } => {
            let started = Instant::now();
            let (graph, mut warnings) = import_onnx(&model).map_err(bad_input)?;
            for w in &warnings {
                tracing::warn!("{w}");
            }
            let cal = InputData::from_path(&calibration).map_err(bad_input)?;
            let (samples, split) =
                cal.samples_for_ports(graph.input_shape.iter().product(), &graph.ports.inputs).map_err(bad_input)?;
            if let Some(note) = split {
                tracing::warn!("{note}");
                warnings.push(note);
            }
            let options = QuantizeOptions { wide_attention_scores };
            let quant = quantize_model_with(&graph, &samples, options).map_err(bad_input)?;
            let eight_bit_scores = quant.nodes.iter().filter(|n| n.op.kind() == "Softmax").count();
            if !wide_attention_scores && eight_bit_scores > 0 {
                tracing::info!(
                    "{eight_bit_scores} Softmax(es) over 8-bit inputs; --wide-attention-scores keeps attention \
                     scores at 16 bits (more accurate, a few lookups per score)"
                );
            }
            // tract lacks a few ops we import (Upsample) and panics on a few graphs (negative
            // pads): the report then compares with the importer's own float graph, and says so.
            let reference = match tract_reference(&model, &graph, &samples) {
                Ok(reference) => reference,
                Err(e) => {
                    let note = format!(
                        "tract, the independent float reference, cannot run this model ({e}); int8 is compared with \
                         the importer's own float graph instead"
                    );
                    tracing::warn!("{note}");
                    warnings.push(note);
                    samples.iter().map(|s| graph.run(s).pop().unwrap_or_default()).collect()
                }
            };
            let report = CalibrationReport::compare(&quant, &samples, &reference)?;
            let plan = SegmentPlan::auto(&quant, max_segment_rows);
            let bar = out.spinner("building the circuit");
            let verifier = TaskVerifier::new(&quant, &plan)?;
            let segment_rows = verifier.segment_rows().to_vec();
            let circuit_digest = verifier.circuit_digest();
            bar.set_message("building the leaf circuit");
            let leaf_digest = LeafCircuit::new(verifier)?.digest();
            bar.finish_and_clear();
            let report_json = json!({
                "source": model.display().to_string(),
                "warnings": warnings,
                "calibration": report,
                "macs": quant.macs(),
                "segments": plan.cuts.len() + 1,
                "segment_rows": segment_rows,
            });
            let file = ModelFile { model: quant, plan, circuit_digest, leaf_digest, report: report_json.to_string() };
            std::fs::write(&out_path, file.to_bytes())
                .with_context(|| format!("cannot write {}", out_path.display()))?;
            let model_id = format!("0x{}", hex::encode(file.model.model_id()));
            out.emit(
                json!({
                    "model_id": model_id,
                    "out": out_path.display().to_string(),
                    "circuit_digest": format!("0x{}", hex::encode(file.circuit_digest)),
                    "leaf_digest": format!("0x{}", hex::encode(file.leaf_digest)),
                    "layers": file.model.nodes.len(),
                    "macs": file.model.macs(),
                    "segments": file.plan.cuts.len() + 1,
                    "segment_rows": segment_rows,
                    "inputs": file.model.ports.inputs,
                    "outputs": file.model.ports.outputs,
                    "calibration": report,
                    "warnings": warnings,
                    "seconds": started.elapsed().as_secs_f64(),
                }),
                || {
                    format!(
                        "compiled {} -> {}\n  model id        {model_id}\n  circuit digest  0x{}\n  leaf circuit    0x{} (the registry lists this)\n  layers {}  MACs {}  segments {}  rows per segment {:?}\n  {}int8 vs float on {} calibration samples: argmax agreement {:.2}%, max |error| {:.4}, mean |error| {:.4}\n  {}{:.1} s",
                        model.display(),
                        out_path.display(),
                        hex::encode(file.circuit_digest),
                        hex::encode(file.leaf_digest),
                        file.model.nodes.len(),
                        file.model.macs(),
                        file.plan.cuts.len() + 1,
                        segment_rows,
                        ports_text(&file.model.ports),
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
        Command::CommitInput { model, input, private, salt } => {
            let file = load_model(&model)?;
            let x = quantized_input(&file.model, &input)?;
            let salt = match (private, salt) {
                (_, Some(s)) => Some(Salt::from_hex(&s).context("--salt").map_err(bad_input)?),
                (true, None) => Some(Salt::random()),
                (false, None) => None,
            };
            match salt {
                None => {
                    let c = commit(&x).to_hex();
                    out.emit(json!({ "input_commitment": c, "privacy": "public" }), || c.clone())
                }
                Some(salt) => {
                    let c = commit_salted(&x, &salt).to_hex();
                    let model_id = Privacy::Private.task_model_id(file.model.model_id());
                    out.emit(
                        json!({
                            "input_commitment": c,
                            "privacy": "private",
                            "salt": salt.to_hex(),
                            "model_id": format!("0x{}", hex::encode(model_id)),
                        }),
                        || {
                            format!(
                                "{c}\n  salt      {} (secret: for the provider only)\n  model id  0x{} (the private task's)",
                                salt.to_hex(),
                                hex::encode(model_id)
                            )
                        },
                    )
                }
            }
        }
        Command::Prove { model, input, task_id, provider, out: out_path, output, private, input_salt } => {
            let task_id: [u8; 32] = parse_hex(&task_id, "--task-id").map_err(bad_input)?;
            let provider: [u8; 20] = parse_hex(&provider, "--provider").map_err(bad_input)?;
            let file = load_model(&model)?;
            let x = quantized_input(&file.model, &input)?;
            let started = Instant::now();
            let bar = out.spinner("building the circuit");
            let salt = input_salt.map(|s| Salt::from_hex(&s).context("--input-salt").map_err(bad_input)).transpose()?;
            let prover = TaskProver::with_privacy(file.model.clone(), file.plan.clone(), privacy(private))?;
            let mut progress = |stage: &str, done: usize, total: usize| {
                bar.set_message(format!("{stage} ({done}/{total})"));
            };
            let (proof, trace, stats) = match &salt {
                Some(salt) => prover.prove_private(&x, salt, task_id, provider, &mut progress)?,
                None => prover.prove(&x, task_id, provider, &mut progress)?,
            };
            bar.finish_and_clear();
            let bytes = proof.to_bytes();
            std::fs::write(&out_path, &bytes).with_context(|| format!("cannot write {}", out_path.display()))?;
            let mut result = output_json(&file, trace.output());
            let mut input_commitment = commit(&x).to_hex();
            if let Some(salt) = &salt {
                // What the proof commits to: the output encrypted under the input salt's key,
                // which is what the provider hands over (the poster decrypts it).
                let encrypted = EncryptedTensor::encrypt(trace.output(), &OutputKey::from_input_salt(salt));
                result["output_commitment"] = json!(encrypted.commitment().to_hex());
                result["encrypted_output"] = json!(format!("0x{}", hex::encode(encrypted.to_bytes())));
                input_commitment = commit_salted(&x, salt).to_hex();
            }
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
                    "privacy": privacy(private).name(),
                    "input_commitment": input_commitment,
                    "output_commitment": result["output_commitment"],
                    "encrypted_output": result.get("encrypted_output"),
                    "argmax": result["argmax"],
                    "stats": stats,
                    "seconds": started.elapsed().as_secs_f64(),
                }),
                || {
                    let mut text = format!(
                        "proved {} task 0x{} for provider 0x{} -> {} ({} bytes)\n  output argmax {}  output commitment {}\n  segments {}  rows {}  build {:.2} s  prove {:.2} s  total {:.2} s",
                        privacy(private).name(),
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
                    );
                    if result.get("encrypted_output").is_some() {
                        text.push_str("\n  output encrypted to the poster (the key of its input salt): --json prints it");
                    }
                    text
                },
            )
        }
        Command::Settle {
            orders,
            proofs,
            models,
            rpc,
            deployment,
            keystore,
            password_file,
            proving_key,
            insecure_devnet_key,
            keys_dir,
            fri,
        } => {
            let key = match (proving_key, insecure_devnet_key) {
                (Some(p), false) => settle::WrapKeySetting::File(p),
                (None, true) => settle::WrapKeySetting::InsecureDevnet(keys_dir),
                _ => {
                    return Err(bad_input(anyhow::anyhow!(
                        "give --proving-key FILE or (devnets) --insecure-devnet-key"
                    )))
                }
            };
            let keystore = keystore.map(|path| tgrid_chain::keys::Keystore { path, password_file });
            settle_command(orders, proofs, models, &rpc, &deployment, keystore.as_ref(), key, fri, out)
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
        Command::Bench { fixtures, max_segment_rows, private, wide_attention_scores, in_process } => {
            let options = tgrid_onnx::QuantizeOptions { wide_attention_scores };
            bench::run(&fixtures, max_segment_rows, privacy(private), options, in_process)
        }
    }
}

/// FRI parameters of the wrap's final layer.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum FriArg {
    /// 100 conjectured bits: what a real verifier expects.
    Production,
    /// INSECURE: 10 bits, for tests only.
    InsecureTest,
}

/// Reads a signed order: `tgrid order post`'s file, or an order as the relay lists it.
fn read_signed_order(path: &Path) -> Result<tgrid_chain::market::SignedOrder> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display())).map_err(bad_input)?;
    if let Ok(signed) = serde_json::from_slice::<tgrid_chain::market::SignedOrder>(&bytes) {
        return Ok(signed);
    }
    serde_json::from_slice::<tgrid_chain::market::OrderView>(&bytes)
        .map(|v| v.signed)
        .map_err(|e| bad_input(anyhow::anyhow!("{} is not a signed order: {e}", path.display())))
}

#[allow(clippy::too_many_arguments)]
fn settle_command(
    orders: Vec<PathBuf>,
    proofs: Vec<PathBuf>,
    models: Vec<PathBuf>,
    rpc: &str,
    deployment: &Path,
    keystore: Option<&tgrid_chain::keys::Keystore>,
    key: settle::WrapKeySetting,
    fri: FriArg,
    out: &Output,
) -> Result<()> {
    if orders.len() != proofs.len() {
        return Err(bad_input(anyhow::anyhow!(
            "{} --order but {} --proof: give them in pairs",
            orders.len(),
            proofs.len()
        )));
    }
    let deployment = tgrid_chain::Deployment::load(deployment).map_err(bad_input)?;
    let signer = match tgrid_chain::keys::signer_from(keystore).map_err(bad_input)? {
        Some(signer) => signer,
        None if deployment.chain_id == tgrid_chain::DEVNET_CHAIN_ID => {
            tgrid_chain::parse_signer(daemon::ANVIL_KEY_1).map_err(bad_input)?
        }
        None => {
            return Err(bad_input(anyhow::anyhow!(
                "chain {} is not the devnet: give --keystore (or TGRID_KEYSTORE) or the key in TGRID_PRIVATE_KEY",
                deployment.chain_id
            )))
        }
    };
    let me = signer.address();
    let domain = tgrid_chain::market::MarketDomain::of(&deployment);
    let files = models.iter().map(|p| load_model(p)).collect::<Result<Vec<_>>>()?;
    let mut results = Vec::new();
    for (o, p) in orders.iter().zip(&proofs) {
        let signed = read_signed_order(o)?;
        let hash = signed.verify(&domain).map_err(|e| bad_input(anyhow::anyhow!("{}: {e}", o.display())))?;
        let bytes = std::fs::read(p).with_context(|| format!("cannot read {}", p.display())).map_err(bad_input)?;
        let proof = tgrid_circuits::TaskProof::from_bytes(&bytes)
            .with_context(|| format!("{} is not a task proof", p.display()))
            .map_err(bad_input)?;
        tracing::debug!(order = %hash, proof = %p.display(), "to settle");
        // The daemon keeps a result's leaf proof beside its proof (`<order>.leaf`); used when valid.
        let leaf = std::fs::read(p.with_extension("leaf")).ok();
        results.push(settle::OwnResult { order: signed, proof, leaf });
    }
    let fri = match fri {
        FriArg::Production => tgrid_wrap::FinalFri::PRODUCTION,
        FriArg::InsecureTest => tgrid_wrap::FinalFri::INSECURE_TEST,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    runtime.block_on(async move {
        let chain = tgrid_chain::signing(rpc, signer)?;
        tgrid_chain::check_chain(&chain, rpc, &deployment).await?;
        let bar = out.spinner("building the aggregation and wrap circuits, loading the key");
        let aggregator = std::sync::Arc::new(settle::chain_aggregator(&chain, &deployment, &files).await?);
        let settler = std::sync::Arc::new(settle::SelfSettler::build(&chain, &deployment, &key, fri).await?);
        bar.set_message(format!("aggregating and wrapping {} proof(s)", results.len()));
        let settled = settler.settle(aggregator, &chain, &deployment, me, results).await;
        bar.finish_and_clear();
        let settled = settled?;
        out.emit(
            json!({
                "tx": settled.transaction.to_string(),
                "gas_used": settled.gas_used,
                "prove_seconds": settled.prove_seconds,
                "leaves_reused": settled.leaves_reused,
                "skipped": settled.skipped.iter().map(|(h, r)| json!({"task_id": h.to_string(), "reason": r})).collect::<Vec<_>>(),
                "unpaid": settled.unpaid.iter().map(|(h, r)| json!({"task_id": h.to_string(), "reason": r})).collect::<Vec<_>>(),
            }),
            || {
                format!(
                    "settled in tx {} ({} gas, {:.0} s of proving); skipped {}, unpaid {}",
                    settled.transaction,
                    settled.gas_used,
                    settled.prove_seconds,
                    settled.skipped.len(),
                    settled.unpaid.len()
                )
            },
        )
    })
}

/// Reads the first sample of an EZKL input file and quantizes it for the model.
pub(crate) fn quantized_input(model: &tgrid_circuits::QuantModel, path: &Path) -> Result<Vec<i8>> {
    let data = InputData::from_path(path).map_err(bad_input)?;
    let sample = data
        .first_sample(model.input_len(), &model.ports.inputs)
        .with_context(|| format!("{} does not fit the model", path.display()))
        .map_err(bad_input)?;
    infer::quantize_input(model, &sample)
        .with_context(|| format!("{} does not fit the model", path.display()))
        .map_err(bad_input)
}
