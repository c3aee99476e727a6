//! `tgrid-verifier`: the auditor's tool. Checks task proofs against compiled models and batch
//! proofs against a registry, rebuilding
//! every circuit from the model's weights rather than trusting circuit data from a file.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use serde_json::json;
use tgrid_aggregation::registry::hex32;
use tgrid_aggregation::{AggregationCircuits, BatchFile, RegistryFile};
use tgrid_circuits::{ModelFile, Privacy, TaskProof, TaskVerifier};
use tgrid_cli::{bad_input, Output};
use tgrid_settlement_proof::SettlementProofFile;

mod onchain;

/// TensorGrid auditor tool: verify proofs and print what they prove.
#[derive(Debug, Parser)]
#[command(name = "tgrid-verifier", version, about, long_about = None)]
struct Cli {
    /// Print one JSON object on stdout instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Verify a task proof for a compiled model; prints the public inputs when valid.
    /// Exit codes: 0 valid, 1 invalid proof, 2 unreadable or malformed input.
    ///
    /// With --rpc, TASK is an order hash (the task id): the signed order comes from --order FILE
    /// or --relay URL (or, for an order that settled or was disputed, from that transaction's
    /// calldata); its poster signature is checked and its outcome read from the market (open,
    /// settled paid or unpaid, skipped, disputed, cancelled). A settlement is re-checked against
    /// the batch's calldata and BatchSettled event, and --output against the settled output
    /// commitment. Exit codes: 0 valid, 1 a bad signature or a mismatch, 2 unreadable input.
    Task {
        /// Task proof (.tgp), or with --rpc an order hash (0x + 64 hex digits).
        #[arg(value_name = "TASK")]
        proof: String,
        /// Compiled model (.tgm) the proof must be for.
        #[arg(long, required_unless_present = "rpc")]
        model: Option<PathBuf>,
        /// With --rpc: the signed order (JSON, as posted to a relay, or a relay's view of it).
        #[arg(long, requires = "rpc", conflicts_with = "relay")]
        order: Option<PathBuf>,
        /// With --rpc: a relay (or sequencer) base URL to fetch the signed order from.
        #[arg(long, requires = "rpc")]
        relay: Option<String>,
        /// With --rpc: an output file (`output_int8` or `output` array) to check against the
        /// settled output commitment; a private task's needs its `output_key` too (as `tgrid
        /// order result --out` writes it).
        #[arg(long, requires = "rpc")]
        output: Option<PathBuf>,
        #[command(flatten)]
        chain: onchain::ChainArgs,
    },
    /// Verify a batch proof against a registry; prints the batch root, the registry root, the
    /// task count, the settlement public input and the ordered leaves.
    /// Exit codes: 0 valid, 1 invalid proof, 2 unreadable or malformed input.
    ///
    /// With --rpc, BATCH is the root of a batch settled on the TaskMarket: its tables, leaves and
    /// Groth16 proof are read from the settling transaction's settleBatch calldata, every order
    /// rebuilt and its poster signature checked, the root and public input recomputed and compared
    /// with the BatchSettled event, and the proof verified off-chain with a key whose digest must
    /// match the deployed verifier's (TaskMarket.parameters().verifier). Prints each leaf's order,
    /// payment and outcome (paid, unpaid or skipped, with the reason), the batch totals and gas.
    Batch {
        /// Batch proof (.tgb) written by `tgrid-sequencer aggregate`, or with --rpc a batch root.
        #[arg(value_name = "BATCH")]
        batch: String,
        /// Registry file (JSON) whose root the batch must be proven against.
        #[arg(long, required_unless_present = "rpc")]
        registry: Option<PathBuf>,
        /// With --rpc: verifying key (snarkjs JSON); default `<keys-dir>/<deployed key id>.vk.json`.
        #[arg(long, requires = "rpc")]
        vk: Option<PathBuf>,
        /// With --rpc: directory of the keys written by `tgrid-sequencer wrap`/`key`.
        #[arg(long, env = "TGRID_KEYS_DIR", default_value = ".tgrid/keys")]
        keys_dir: PathBuf,
        #[command(flatten)]
        chain: onchain::ChainArgs,
    },
    /// Verify a settlement proof file (.g16) off-chain as the settlement contract would:
    /// recompute the batch root and the public input from the ordered leaves, then verify the
    /// Groth16 proof with the verifying key. Prints the public inputs and the leaves.
    /// Exit codes: 0 valid, 1 invalid proof or wrong key, 2 unreadable or malformed input.
    Groth16 {
        /// Settlement proof file written by `tgrid-sequencer wrap`.
        proof: PathBuf,
        /// Verifying key (snarkjs JSON, as deployed); default: `<keys-dir>/<key id>.vk.json`,
        /// the key the file itself names (not pinned: see --key-digest).
        #[arg(long)]
        vk: Option<PathBuf>,
        /// Pin the key: the verifying key used must have this digest (0x + 64 hex digits), e.g.
        /// the deployed verifier's VERIFYING_KEY_DIGEST.
        #[arg(long)]
        key_digest: Option<String>,
        /// Directory of the devnet keys written by `tgrid-sequencer wrap`.
        #[arg(long, env = "TGRID_KEYS_DIR", default_value = ".tgrid/keys")]
        keys_dir: PathBuf,
    },
    /// List the models registered on-chain (ModelRegistry) with the current registry root, read
    /// from a node: what a batch must be proven against and which models tasks may use.
    /// Exit codes: 0 listed, 1 the node or contract failed, 2 unreadable or malformed input.
    Registry {
        /// JSON-RPC endpoint of the chain.
        #[arg(long, env = "TGRID_RPC_URL", default_value = tgrid_chain::DEFAULT_RPC_URL)]
        rpc: String,
        /// Deployment file written by contracts/script/Deploy.s.sol.
        #[arg(long, env = "TGRID_DEPLOYMENT", default_value = tgrid_chain::DEFAULT_DEPLOYMENT)]
        deployment: PathBuf,
    },
}

fn main() {
    let cli = Cli::parse();
    tgrid_cli::init_tracing();
    let out = Output { json: cli.json };
    let result = match cli.command {
        Command::Task { proof, model, order, relay, output, chain } => match (&chain.rpc, model) {
            (Some(rpc), _) => {
                let source = match (&order, &relay) {
                    (Some(path), _) => onchain::order::OrderSource::File(path),
                    (None, Some(url)) => onchain::order::OrderSource::Relay(url),
                    (None, None) => onchain::order::OrderSource::Chain,
                };
                onchain::order::audit_task(&proof, rpc, &chain.deployment, source, output.as_deref(), &out)
            }
            (None, Some(model)) => verify_task(Path::new(&proof), &model, &out),
            (None, None) => unreachable!("clap requires --model without --rpc"),
        },
        Command::Batch { batch, registry, vk, keys_dir, chain } => match (&chain.rpc, registry) {
            (Some(rpc), _) => {
                onchain::batch::audit_batch(&batch, rpc, &chain.deployment, vk.as_deref(), &keys_dir, &out)
            }
            (None, Some(registry)) => verify_batch(Path::new(&batch), &registry, &out),
            (None, None) => unreachable!("clap requires --registry without --rpc"),
        },
        Command::Groth16 { proof, vk, key_digest, keys_dir } => {
            verify_groth16(&proof, vk.as_deref(), key_digest.as_deref(), &keys_dir, &out)
        }
        Command::Registry { rpc, deployment } => list_registry(&rpc, &deployment, &out),
    };
    // An audit that printed its report (`"valid": false` and the reason) exits without a second
    // JSON object: 2 if its input was unreadable, else 1.
    if let Err(e) = &result {
        if let Some(onchain::Reported(inner)) = e.downcast_ref::<onchain::Reported>() {
            eprintln!("error: {inner:#}");
            std::process::exit(if inner.downcast_ref::<tgrid_cli::BadInput>().is_some() { 2 } else { 1 });
        }
    }
    out.exit_with(result)
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display())).map_err(bad_input)
}

fn verify_task(proof_path: &Path, model_path: &Path, out: &Output) -> Result<()> {
    let started = Instant::now();
    let file = ModelFile::from_bytes(&read(model_path)?)
        .with_context(|| format!("{} is not a usable compiled model", model_path.display()))
        .map_err(bad_input)?;
    let proof = TaskProof::from_bytes(&read(proof_path)?)
        .with_context(|| format!("{} is not a task proof", proof_path.display()))
        .map_err(bad_input)?;
    // The proof's model id says its mode: a private task names the model's private variant.
    let privacy = if proof.model_id == Privacy::Private.task_model_id(file.model.model_id()) {
        Privacy::Private
    } else {
        Privacy::Public
    };
    let verifier =
        TaskVerifier::with_privacy(&file.model, &file.plan, privacy).context("cannot rebuild the model's circuit")?;
    // The file records the public circuit's digest; the private one is only ever rebuilt.
    anyhow::ensure!(
        privacy == Privacy::Private || verifier.circuit_digest() == file.circuit_digest,
        "the circuit rebuilt from {} has digest 0x{}, the file records 0x{}: built by another version",
        model_path.display(),
        hex::encode(verifier.circuit_digest()),
        hex::encode(file.circuit_digest)
    );
    let publics = verifier
        .verify(&proof)
        .with_context(|| format!("{} is not a valid proof for this model", proof_path.display()))?;
    let value = json!({
        "valid": true,
        "task_id": format!("0x{}", hex::encode(publics.task_id)),
        "provider": format!("0x{}", hex::encode(publics.provider)),
        "model_id": format!("0x{}", hex::encode(publics.model_id)),
        "input_commitment": publics.input_commitment.to_hex(),
        "output_commitment": publics.output_commitment.to_hex(),
        "privacy": privacy.name(),
        "not_visible": not_visible(privacy),
        "seconds": started.elapsed().as_secs_f64(),
    });
    let mut text = format!(
        "valid {} task proof\n  task id            {}\n  provider           {}\n  model id           {}\n  input commitment   {}\n  output commitment  {}",
        privacy.name(),
        value["task_id"].as_str().unwrap_or_default(),
        value["provider"].as_str().unwrap_or_default(),
        value["model_id"].as_str().unwrap_or_default(),
        value["input_commitment"].as_str().unwrap_or_default(),
        value["output_commitment"].as_str().unwrap_or_default()
    );
    if let Some(hidden) = not_visible(privacy) {
        text.push_str(&format!("\n  not visible        {hidden}"));
    }
    out.emit(value, || text)
}

/// What an auditor cannot check of a task of mode `privacy`.
fn not_visible(privacy: Privacy) -> Option<&'static str> {
    (privacy == Privacy::Private).then_some(
        "the input, the output and every activation: the commitments are salted and the proof is \
         zero-knowledge; the proof shows that the committed output is the model's output on the \
         committed input, and only the poster and the provider hold the salts",
    )
}

fn verify_batch(batch_path: &Path, registry_path: &Path, out: &Output) -> Result<()> {
    let started = Instant::now();
    let registry = RegistryFile::load(registry_path).map_err(bad_input)?.registry().map_err(bad_input)?;
    let batch = BatchFile::from_bytes(&read(batch_path)?)
        .with_context(|| format!("{} is not a batch proof", batch_path.display()))
        .map_err(bad_input)?;
    // Rebuilding the circuits (rather than reading verifier keys from a file) pins their digests.
    let circuits = AggregationCircuits::build().context("cannot build the aggregation circuits")?;
    let verified = circuits
        .verify_batch(&batch, &registry.root())
        .with_context(|| format!("{} is not a valid batch proof", batch_path.display()))?;
    let leaves = leaves_json(&verified.leaves);
    let value = json!({
        "valid": true,
        "batch_root": hex32(&verified.batch_root),
        "registry_root": hex32(&verified.registry_root),
        "count": verified.leaves.len(),
        "public_input": hex32(&verified.public_input),
        "leaves": leaves,
        "seconds": started.elapsed().as_secs_f64(),
    });
    out.emit(value, || {
        format!(
            "valid batch proof\n  batch root     {}\n  registry root  {}\n  tasks          {}\n  public input   {}\n{}",
            hex32(&verified.batch_root),
            hex32(&verified.registry_root),
            verified.leaves.len(),
            hex32(&verified.public_input),
            leaves_text(&verified.leaves).trim_end()
        )
    })
}

fn leaves_json(leaves: &[tgrid_aggregation::TaskLeaf]) -> Vec<serde_json::Value> {
    leaves
        .iter()
        .map(|l| {
            json!({
                "task_id": hex32(&l.task_id),
                "model_id": hex32(&l.model_id),
                "input_commitment": hex32(&l.input_commitment),
                "output_commitment": hex32(&l.output_commitment),
                "provider": format!("0x{}", hex::encode(l.provider)),
                "leaf": hex32(&l.hash()),
            })
        })
        .collect()
}

/// The ordered leaves, two lines each, each line ending in a newline.
fn leaves_text(leaves: &[tgrid_aggregation::TaskLeaf]) -> String {
    let mut text = String::new();
    for (i, l) in leaves.iter().enumerate() {
        text += &format!(
            "  #{i:<4} task {}  model {}  provider 0x{}\n         input {}  output {}\n",
            hex32(&l.task_id),
            hex32(&l.model_id),
            hex::encode(l.provider),
            hex32(&l.input_commitment),
            hex32(&l.output_commitment)
        );
    }
    text
}

/// A key id from a file names a file in the key directory: plain names only.
fn safe_key_id(id: &str) -> Result<&str> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    anyhow::ensure!(ok, "key id {id:?} is not a plain file name");
    Ok(id)
}

/// A verifying key in snarkjs JSON.
fn load_vk(path: &Path) -> Result<ark_groth16::VerifyingKey<ark_bn254::Bn254>> {
    let vk_json: serde_json::Value = serde_json::from_slice(&read(path)?)
        .with_context(|| format!("{} is not JSON", path.display()))
        .map_err(bad_input)?;
    tgrid_groth16::evm::verifying_key_from_json(&vk_json)
        .with_context(|| format!("{} is not a verifying key", path.display()))
        .map_err(bad_input)
}

/// The `tgrid_key_id` a verifying key file names, if it names one.
fn vk_json_key_id(path: &Path) -> Result<Option<String>> {
    let vk_json: serde_json::Value = serde_json::from_slice(&read(path)?)
        .with_context(|| format!("{} is not JSON", path.display()))
        .map_err(bad_input)?;
    Ok(vk_json.get("tgrid_key_id").and_then(|v| v.as_str()).map(str::to_string))
}

fn verify_groth16(
    path: &Path,
    vk_path: Option<&Path>,
    pinned_digest: Option<&str>,
    keys_dir: &Path,
    out: &Output,
) -> Result<()> {
    use tgrid_settlement_proof::Error as E;
    let started = Instant::now();
    let pinned_digest =
        pinned_digest.map(|d| tgrid_cli::parse_hex::<32>(d, "--key-digest")).transpose().map_err(bad_input)?;
    let pinned = pinned_digest.is_some() || vk_path.is_some();
    let file = SettlementProofFile::from_json_bytes(&read(path)?)
        .with_context(|| format!("{} is not a settlement proof file", path.display()))
        .map_err(bad_input)?;
    let vk_path = match vk_path {
        Some(p) => p.to_path_buf(),
        None => keys_dir.join(format!("{}.vk.json", safe_key_id(&file.key.id).map_err(bad_input)?)),
    };
    let vk = load_vk(&vk_path)?;
    let digest = tgrid_groth16::evm::verifying_key_digest(&vk)
        .with_context(|| format!("{} is not a verifying key", vk_path.display()))
        .map_err(bad_input)?;
    if let Some(expected) = pinned_digest {
        anyhow::ensure!(
            digest == expected,
            "{} has key digest {}, not the pinned {}",
            vk_path.display(),
            hex32(&digest),
            hex32(&expected)
        );
    }
    // Public-seed keys are known by digest whatever the file calls them; the key id (parsed
    // and checked against the file on load) says the FRI parameters.
    let insecure = tgrid_settlement_proof::insecurity(Some(&file.key.id), Some(&digest));
    if let Some(named) = vk_json_key_id(&vk_path)? {
        anyhow::ensure!(
            named == file.key.id,
            "{} is the verifying key of {named}, the proof names {}",
            vk_path.display(),
            file.key.id
        );
    }
    let verified = file.verify(&vk).map_err(|e| match e {
        E::Malformed(_) => bad_input(e),
        other => anyhow::Error::new(other).context(format!("{} is not a valid settlement proof", path.display())),
    })?;
    let value = json!({
        "valid": true,
        "public_input": hex32(&verified.public_input),
        "batch_root": hex32(&verified.batch_root),
        "registry_root": hex32(&verified.registry_root),
        "count": verified.leaves.len(),
        "key_id": file.key.id,
        "insecure_key": insecure.is_some(),
        "insecure_reason": insecure,
        "key_pinned": pinned,
        "verifying_key": vk_path.display().to_string(),
        "verifying_key_digest": hex32(&digest),
        "fri": file.fri,
        "final_circuit_digest": file.final_circuit_digest,
        "proof": file.proof,
        "leaves": leaves_json(&verified.leaves),
        "seconds": started.elapsed().as_secs_f64(),
    });
    out.emit(value, || {
        let mut text = format!(
            "valid settlement proof\n  public input   {}\n  batch root     {}\n  registry root  {}\n  tasks          {}\n  key            {}{}\n  verifying key  {}",
            hex32(&verified.public_input),
            hex32(&verified.batch_root),
            hex32(&verified.registry_root),
            verified.leaves.len(),
            file.key.id,
            insecure.as_ref().map_or(String::new(), |why| format!("  (INSECURE: {why})")),
            vk_path.display()
        );
        if !pinned {
            text += "\n  the key is the one the file names: pin it with --key-digest (the deployed verifier's \
                     VERIFYING_KEY_DIGEST) or --vk";
        }
        text += "\n";
        text += leaves_text(&verified.leaves).trim_end();
        text
    })
}

fn list_registry(rpc: &str, deployment_path: &Path, out: &Output) -> Result<()> {
    use tgrid_chain::bindings::IModelRegistry;

    let deployment = tgrid_chain::Deployment::load(deployment_path).map_err(bad_input)?;
    let provider = tgrid_chain::reader(rpc).map_err(bad_input)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (root, models) = runtime.block_on(async {
        tgrid_chain::check_chain(&provider, rpc, &deployment).await?;
        let registry = IModelRegistry::new(deployment.registry, &provider);
        let root = registry.registryRoot().call().await.context("ModelRegistry.registryRoot")?;
        let count = registry.modelCount().call().await.context("ModelRegistry.modelCount")?;
        let count = u64::try_from(count).ok().filter(|&n| n <= 1 << 20).context("implausible model count")?;
        let mut models = Vec::new();
        for i in 0..count {
            let id =
                registry.modelIdAt(alloy::primitives::U256::from(i)).call().await.context("ModelRegistry.modelIdAt")?;
            let m = registry.model(id).call().await.context("ModelRegistry.model")?;
            models.push(json!({
                "model_id": id.to_string(),
                "circuit_digest": m.circuitDigest.to_string(),
                "registered_at": m.registeredAt.to::<u64>(),
                "deregistered_at": m.deregisteredAt.to::<u64>(),
                "active": m.active,
                "uri": m.uri,
            }));
        }
        anyhow::Ok((root, models))
    })?;
    let value = json!({
        "registry": deployment.registry.to_string(),
        "registry_root": root.to_string(),
        "models": models,
    });
    out.emit(value.clone(), || {
        let mut text = format!(
            "registry {}\n  root  {}\n  models ({})",
            value["registry"].as_str().unwrap_or_default(),
            value["registry_root"].as_str().unwrap_or_default(),
            models.len()
        );
        for m in &models {
            let deregistered_at = m["deregistered_at"].as_u64().unwrap_or_default();
            text.push_str(&format!(
                "\n    {}  circuit {}  {}{}  {}",
                m["model_id"].as_str().unwrap_or_default(),
                m["circuit_digest"].as_str().unwrap_or_default(),
                if m["active"] == true { "active" } else { "deregistered" },
                if deregistered_at != 0 { format!(" (deregistered at {deregistered_at})") } else { String::new() },
                m["uri"].as_str().unwrap_or_default()
            ));
        }
        text
    })
}
