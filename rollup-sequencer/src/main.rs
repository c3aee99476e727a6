//! `tgrid-sequencer`: the rollup sequencer's tool. Maintains the model registry file and
//! aggregates task proofs into batch proofs.

mod bench;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use tgrid_aggregation::registry::hex32;
use tgrid_aggregation::{Normalizer, RegistryFile, RegistryFileEntry};
use tgrid_circuits::{ModelFile, TaskProof, TaskVerifier};
use tgrid_sequencer::{Aggregator, Step};

/// TensorGrid rollup sequencer: registry maintenance and batch aggregation.
#[derive(Debug, Parser)]
#[command(name = "tgrid-sequencer", version, about, long_about = None)]
struct Cli {
    /// Print one JSON object on stdout instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Manage the registry file of allowed (model id, normalized circuit digest) pairs.
    Registry {
        #[command(subcommand)]
        command: RegistryCommand,
    },
    /// Aggregate task proofs, in the given order, into one batch proof (.tgb).
    Aggregate {
        /// Task proofs (.tgp) of registered models, in batch order.
        #[arg(required = true)]
        proofs: Vec<PathBuf>,
        /// Registry file (JSON) listing the models and their files.
        #[arg(long)]
        registry: PathBuf,
        /// Where to write the batch proof.
        #[arg(long)]
        out: PathBuf,
    },
    /// Benchmark normalization, leaf and merge proofs and a whole batch; prints one JSON object.
    Bench {
        /// Tasks in the end-to-end batch.
        #[arg(long, default_value_t = 64)]
        tasks: usize,
        /// Compiled models to use (default: two small built-in models).
        #[arg(long = "model")]
        models: Vec<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum RegistryCommand {
    /// Add (or update) a compiled model; creates the file if needed and prints the new root.
    /// Rebuilds the model's circuits to compute the digest rather than trusting the file.
    Add {
        /// Compiled model (.tgm).
        model: PathBuf,
        /// Registry file (JSON).
        #[arg(long)]
        registry: PathBuf,
        /// Name shown in listings (default: the model's name).
        #[arg(long)]
        name: Option<String>,
    },
    /// List the registered models and the root.
    Show {
        /// Registry file (JSON).
        #[arg(long)]
        registry: PathBuf,
    },
}

/// Unreadable or malformed input (exit code 2).
#[derive(Debug)]
struct BadInput(anyhow::Error);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for BadInput {}

fn bad_input(e: impl Into<anyhow::Error>) -> anyhow::Error {
    anyhow::Error::new(BadInput(e.into()))
}

fn main() {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into());
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
    let json = cli.json;
    let result = match cli.command {
        Command::Registry { command: RegistryCommand::Add { model, registry, name } } => {
            registry_add(&model, &registry, name, json)
        }
        Command::Registry { command: RegistryCommand::Show { registry } } => registry_show(&registry, json),
        Command::Aggregate { proofs, registry, out } => aggregate(&proofs, &registry, &out, json),
        Command::Bench { tasks, models } => bench::run(tasks, &models),
    };
    if let Err(e) = result {
        let code = if e.downcast_ref::<BadInput>().is_some() { 2 } else { 1 };
        if json {
            println!("{}", json!({ "ok": false, "error": format!("{e:#}") }));
        }
        eprintln!("error: {e:#}");
        std::process::exit(code);
    }
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display())).map_err(bad_input)
}

fn spinner(json: bool, message: &str) -> ProgressBar {
    if json {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").expect("static template"));
    bar.set_message(message.to_string());
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
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

fn registry_add(model_path: &Path, registry_path: &Path, name: Option<String>, json: bool) -> Result<()> {
    let file = ModelFile::from_bytes(&read(model_path)?)
        .with_context(|| format!("{} is not a usable compiled model", model_path.display()))
        .map_err(bad_input)?;
    let bar = spinner(json, "rebuilding the model's circuits");
    let verifier = TaskVerifier::new(&file.model, &file.plan).context("cannot rebuild the model's circuit")?;
    let normalizer = Normalizer::new(verifier).context("cannot build the normalization circuit")?;
    bar.finish_and_clear();
    anyhow::ensure!(
        normalizer.digest() == file.normalized_digest,
        "the normalization circuit rebuilt from {} has digest {}, the file records {}: compiled by another version",
        model_path.display(),
        hex32(&normalizer.digest()),
        hex32(&file.normalized_digest)
    );
    let mut registry = if registry_path.exists() {
        load_registry(registry_path)?
    } else {
        RegistryFile::empty(registry_path.parent().map(Path::to_path_buf).unwrap_or_default())
    };
    let entry = RegistryFileEntry {
        name: name.unwrap_or_else(|| file.model.name.clone()),
        model_id: hex32(&normalizer.model_id()),
        normalized_digest: hex32(&normalizer.digest()),
        model_file: relative_to(model_path, &registry.base_dir)?,
    };
    let root = registry.upsert(entry.clone())?;
    registry.save(registry_path)?;
    let value = json!({
        "registry": registry_path.display().to_string(),
        "root": hex32(&root),
        "models": registry.models.len(),
        "added": entry,
    });
    if json {
        println!("{value}");
    } else {
        println!(
            "registered {} ({})\n  normalized digest  {}\n  registry root      {}  ({} models)",
            entry.name,
            entry.model_id,
            entry.normalized_digest,
            hex32(&root),
            registry.models.len()
        );
    }
    Ok(())
}

fn registry_show(path: &Path, json: bool) -> Result<()> {
    let registry = load_registry(path)?;
    if json {
        println!("{}", json!({ "root": registry.root, "depth": registry.depth, "models": registry.models }));
    } else {
        println!("registry root {}  ({} models)", registry.root, registry.models.len());
        for m in &registry.models {
            println!("  {}  {}  {}  {}", m.model_id, m.normalized_digest, m.name, m.model_file);
        }
    }
    Ok(())
}

fn aggregate(proof_paths: &[PathBuf], registry_path: &Path, out: &Path, json: bool) -> Result<()> {
    let started = Instant::now();
    let registry = load_registry(registry_path)?;
    let proofs = proof_paths
        .iter()
        .map(|p| {
            TaskProof::from_bytes(&read(p)?)
                .with_context(|| format!("{} is not a task proof", p.display()))
                .map_err(bad_input)
        })
        .collect::<Result<Vec<_>>>()?;
    let bar = spinner(json, "building the aggregation circuits");
    let aggregator = Aggregator::new(registry)?;
    bar.finish_and_clear();
    let n = proofs.len() as u64;
    let bar = if json {
        ProgressBar::hidden()
    } else {
        let bar = ProgressBar::new(2 * n - 1);
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} proofs ({msg}) [{elapsed} / ~{eta}]")
                .expect("static template"),
        );
        bar
    };
    let batch = aggregator
        .aggregate(&proofs, &|step| {
            bar.set_message(match step {
                Step::Leaf => "leaves",
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
    std::fs::write(out, batch.to_bytes()).with_context(|| format!("cannot write {}", out.display()))?;
    let verified = aggregator.circuits().verify_batch(&batch, &aggregator.registry().root())?;
    let value = json!({
        "out": out.display().to_string(),
        "batch_root": hex32(&verified.batch_root),
        "registry_root": hex32(&verified.registry_root),
        "count": verified.leaves.len(),
        "proof_bytes": batch.proof.len(),
        "seconds": started.elapsed().as_secs_f64(),
    });
    if json {
        println!("{value}");
    } else {
        println!(
            "aggregated {} tasks -> {}\n  batch root     {}\n  registry root  {}\n  {:.1} s",
            verified.leaves.len(),
            out.display(),
            hex32(&verified.batch_root),
            hex32(&verified.registry_root),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
