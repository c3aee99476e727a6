//! `tgrid-sequencer`: the rollup sequencer's tool. Maintains the model registry file and
//! aggregates task proofs into batch proofs.

mod bench;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use serde_json::json;
use tgrid_aggregation::registry::hex32;
use tgrid_aggregation::{Normalizer, RegistryFile, RegistryFileEntry};
use tgrid_circuits::{ModelFile, TaskProof, TaskVerifier};
use tgrid_cli::{bad_input, Output};
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

fn main() {
    let cli = Cli::parse();
    tgrid_cli::init_tracing();
    let out = Output { json: cli.json };
    let result = match cli.command {
        Command::Registry { command: RegistryCommand::Add { model, registry, name } } => {
            registry_add(&model, &registry, name, &out)
        }
        Command::Registry { command: RegistryCommand::Show { registry } } => registry_show(&registry, &out),
        Command::Aggregate { proofs, registry, out: path } => aggregate(&proofs, &registry, &path, &out),
        Command::Bench { tasks, models } => bench::run(tasks, &models),
    };
    out.exit_with(result)
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display())).map_err(bad_input)
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

fn registry_add(model_path: &Path, registry_path: &Path, name: Option<String>, out: &Output) -> Result<()> {
    let file = ModelFile::from_bytes(&read(model_path)?)
        .with_context(|| format!("{} is not a usable compiled model", model_path.display()))
        .map_err(bad_input)?;
    let bar = out.spinner("rebuilding the model's circuits");
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
    out.emit(value, || {
        format!(
            "registered {} ({})\n  normalized digest  {}\n  registry root      {}  ({} models)",
            entry.name,
            entry.model_id,
            entry.normalized_digest,
            hex32(&root),
            registry.models.len()
        )
    })
}

fn registry_show(path: &Path, out: &Output) -> Result<()> {
    let registry = load_registry(path)?;
    out.emit(json!({ "root": registry.root, "depth": registry.depth, "models": registry.models }), || {
        let mut text = format!("registry root {}  ({} models)", registry.root, registry.models.len());
        for m in &registry.models {
            text += &format!("\n  {}  {}  {}  {}", m.model_id, m.normalized_digest, m.name, m.model_file);
        }
        text
    })
}

fn aggregate(proof_paths: &[PathBuf], registry_path: &Path, batch_path: &Path, out: &Output) -> Result<()> {
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
    let bar = out.spinner("building the aggregation circuits");
    let aggregator = Aggregator::new(registry)?;
    bar.finish_and_clear();
    let n = proofs.len() as u64;
    let bar = out.progress(2 * n - 1, "proofs");
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
    std::fs::write(batch_path, batch.to_bytes()).with_context(|| format!("cannot write {}", batch_path.display()))?;
    let verified = aggregator.circuits().verify_batch(&batch, &aggregator.registry().root())?;
    let value = json!({
        "out": batch_path.display().to_string(),
        "batch_root": hex32(&verified.batch_root),
        "registry_root": hex32(&verified.registry_root),
        "count": verified.leaves.len(),
        "proof_bytes": batch.proof.len(),
        "seconds": started.elapsed().as_secs_f64(),
    });
    out.emit(value, || {
        format!(
            "aggregated {} tasks -> {}\n  batch root     {}\n  registry root  {}\n  {:.1} s",
            verified.leaves.len(),
            batch_path.display(),
            hex32(&verified.batch_root),
            hex32(&verified.registry_root),
            started.elapsed().as_secs_f64()
        )
    })
}
