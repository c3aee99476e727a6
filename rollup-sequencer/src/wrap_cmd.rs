//! `tgrid-sequencer wrap` and `key`: a batch's Groth16 settlement proof, proven in this process
//! or, with `--queue`, by a `tgrid-sequencer worker` holding the proving key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::json;
use tgrid_aggregation::registry::hex32;
use tgrid_aggregation::BatchFile;
use tgrid_cli::{bad_input, Output};
use tgrid_sequencer::jobs::{self, JobError, JobMetrics, JobQueue, QueueSettings, WorkerTally};
use tgrid_settlement_proof::{BatchWrapper, KeySource, SettlementProofFile, Stage, WrapStats};
use tgrid_wrap::FinalFri;

/// Which Groth16 key and final-layer parameters the wrap uses (`wrap`, `key`).
#[derive(Debug, clap::Args)]
pub struct WrapKeyArgs {
    /// Groth16 proving key from a ceremony (tgrid-groth16 key file; validated on load). With
    /// `wrap --queue` only its verifying key is read: the worker proves with its own copy.
    #[arg(long, conflicts_with = "insecure_devnet_key", required_unless_present = "insecure_devnet_key")]
    proving_key: Option<PathBuf>,
    /// INSECURE: use the devnet key, set up once from a PUBLIC seed and cached in --keys-dir.
    /// Anyone can forge proofs for it: devnets and tests only.
    #[arg(long)]
    insecure_devnet_key: bool,
    /// Directory of cached devnet keys (`<id>.pk`, `<id>.vk.json`).
    #[arg(long, env = "TGRID_KEYS_DIR", default_value = ".tgrid/keys")]
    keys_dir: PathBuf,
    /// FRI parameters of the final layer: `production` (100 conjectured bits) or
    /// `insecure-test` (10 bits, same code paths, for tests only).
    #[arg(long, value_enum, default_value_t = FriChoice::Production)]
    fri: FriChoice,
}

impl WrapKeyArgs {
    /// Where the key comes from, and the final layer's FRI parameters.
    pub fn source(self) -> (KeySource, FriChoice) {
        let source = match self.proving_key {
            Some(file) => KeySource::File(file),
            None => KeySource::InsecureDevnet { dir: self.keys_dir },
        };
        (source, self.fri)
    }
}

/// Final-layer FRI parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FriChoice {
    /// Rate 4, 21 queries, 16 bits of grinding: 100 conjectured bits.
    Production,
    /// INSECURE: 2 queries, 2 bits of grinding (10 bits). Tests only.
    InsecureTest,
}

impl FriChoice {
    fn final_fri(self) -> FinalFri {
        match self {
            FriChoice::Production => FinalFri::PRODUCTION,
            FriChoice::InsecureTest => FinalFri::INSECURE_TEST,
        }
    }
}

/// `tgrid-sequencer key`.
pub fn show_key(source: &KeySource, fri: FriChoice, out: &Output) -> Result<()> {
    let bar =
        out.spinner("building the wrap circuits and loading the key (a first INSECURE devnet setup takes minutes)");
    let wrapper = BatchWrapper::build(fri.final_fri())?;
    let key = wrapper.load_or_setup_key(source)?;
    bar.finish_and_clear();
    let words: Vec<String> =
        tgrid_groth16::evm::verifying_key_words(&key.pk.vk)?.iter().map(|w| w.to_string()).collect();
    let fri = key.id.fri;
    let value = json!({
        "id": key.id.to_string(),
        "insecure": key.insecure,
        "public_seed": key.id.public_seed,
        "fri": wrapper.fri_label(),
        "fri_params": {
            "rate_bits": fri.rate_bits,
            "num_query_rounds": fri.num_query_rounds,
            "proof_of_work_bits": fri.proof_of_work_bits,
            "conjectured_security_bits": fri.conjectured_security_bits(),
        },
        "r1cs_digest": hex32(&key.id.r1cs_digest),
        "verifying_key_digest": hex32(&key.verifying_key_digest),
        "verifying_key_words": words,
        "setup_seconds": key.setup_seconds,
    });
    out.emit(value, || {
        let why_insecure = match (key.id.public_seed, fri.conjectured_security_bits() < tgrid_settlement_proof::MIN_SECURE_BITS) {
            (true, _) => "  (INSECURE: public seed, devnets and tests only)",
            (false, true) => "  (INSECURE: the wrapped proof has too few FRI bits, tests only)",
            (false, false) if key.insecure => "  (INSECURE: a public-seed verifying key)",
            _ => "",
        };
        format!(
            "key {}{}\n  FRI                  rate 2^-{}, {} queries, {} grinding bits = {} conjectured bits\n  R1CS digest          {}\n  verifying key digest {}\n  deploy a verifier for it: TGRID_VERIFIER_KEY={} TGRID_VERIFIER_KEY_ID={}",
            key.id,
            why_insecure,
            fri.rate_bits,
            fri.num_query_rounds,
            fri.proof_of_work_bits,
            fri.conjectured_security_bits(),
            hex32(&key.id.r1cs_digest),
            hex32(&key.verifying_key_digest),
            words.join(","),
            key.id
        )
    })
}

/// What the report says of the key and of who proved.
struct Proven {
    file: SettlementProofFile,
    key_id: String,
    insecure_key: bool,
    verifying_key_path: Option<PathBuf>,
    setup_seconds: Option<f64>,
    /// This process's timings (`None` when a worker proved).
    stats: Option<WrapStats>,
    /// The queue and the worker that proved (`None` when this process proved).
    queue: Option<(String, BTreeMap<String, WorkerTally>)>,
}

/// `tgrid-sequencer wrap`: in this process, or on a queue worker when `queue` is given.
pub fn wrap(
    batch_path: &Path,
    out_path: &Path,
    source: &KeySource,
    fri: FriChoice,
    queue: Option<QueueSettings>,
    out: &Output,
) -> Result<()> {
    let started = Instant::now();
    let batch = BatchFile::from_bytes(&super::read(batch_path)?)
        .with_context(|| format!("{} is not a batch proof", batch_path.display()))
        .map_err(bad_input)?;
    let insecure_fri = fri == FriChoice::InsecureTest;
    if insecure_fri {
        eprintln!("WARNING: INSECURE test FRI parameters (10 bits of security): tests only");
    }
    let bar = out.spinner(if queue.is_some() {
        "building the aggregation and wrap circuits (to check the worker's proof)"
    } else {
        "building the aggregation and wrap circuits and the Groth16 constraint matrices"
    });
    let wrapper = BatchWrapper::build(fri.final_fri())?;
    bar.finish_and_clear();
    let proven = match queue {
        None => wrap_here(&wrapper, &batch, source, out)?,
        Some(queue) => wrap_on_queue(&wrapper, &batch, source, queue, out)?,
    };
    let Proven { file, key_id, insecure_key, verifying_key_path, setup_seconds, stats, queue } = proven;
    std::fs::write(out_path, file.to_json_bytes()).with_context(|| format!("cannot write {}", out_path.display()))?;

    let warning = insecure_key.then(|| insecure_key_warning(&key_id));
    let mut value = json!({
        "out": out_path.display().to_string(),
        "public_input": file.public_input,
        "batch_root": file.batch_root,
        "registry_root": file.registry_root,
        "count": file.count,
        "fri": file.fri,
        "final_circuit_digest": file.final_circuit_digest,
        "key_id": key_id,
        "insecure_key": insecure_key,
        "insecure_fri": insecure_fri,
        "warning": warning,
        "verifying_key_digest": file.key.verifying_key_digest,
        "verifying_key": verifying_key_path.as_ref().map(|p| p.display().to_string()),
        "setup_seconds": setup_seconds,
        "stats": stats,
        "peak_rss_mib": tgrid_cli::peak_rss_mib(),
        "seconds": started.elapsed().as_secs_f64(),
    });
    if let Some((url, workers)) = &queue {
        value["queue"] = json!(url);
        value["workers"] = json!(workers);
    }
    out.emit(value, || {
        let mut text = format!(
            "wrapped {} tasks{} -> {}\n  public input   {}\n  batch root     {}\n  registry root  {}\n  key            {}{}\n  vk digest      {}",
            file.count,
            if queue.is_some() { " on a queue worker" } else { "" },
            out_path.display(),
            file.public_input,
            file.batch_root,
            file.registry_root,
            key_id,
            if insecure_key { "  (INSECURE devnet key)" } else { "" },
            file.key.verifying_key_digest,
        );
        if let Some(p) = &verifying_key_path {
            text += &format!("\n  verifying key  {}", p.display());
        }
        if let Some(s) = setup_seconds {
            text += &format!("\n  setup          {s:.1} s (cached for next time)");
        }
        if let Some((_, workers)) = &queue {
            let workers: Vec<String> =
                workers.iter().map(|(n, t)| format!("{n}: {} job, {:.1} s", t.jobs, t.seconds)).collect();
            text += &format!("\n  worker         {}", workers.join("; "));
        }
        if let Some(stats) = &stats {
            text += &format!(
                "\n  settle layer {:.1} s, final layer {:.1} s, Groth16 {:.1} s ({} constraints)",
                stats.settle_seconds, stats.final_layer_seconds, stats.groth16_seconds, stats.groth16.constraints,
            );
        }
        text + &format!("\n  {:.1} s in all", started.elapsed().as_secs_f64())
    })
}

/// A key file that cannot be read or decoded is the caller's input, not an internal failure.
fn key_error(e: tgrid_settlement_proof::Error) -> anyhow::Error {
    match e {
        tgrid_settlement_proof::Error::Groth16(tgrid_groth16::Error::Malformed { .. })
        | tgrid_settlement_proof::Error::Groth16(tgrid_groth16::Error::Io { .. }) => bad_input(e),
        other => other.into(),
    }
}

fn insecure_key_warning(id: &impl std::fmt::Display) -> String {
    format!(
        "INSECURE devnet Groth16 key {id}: set up from a public seed, anyone can forge proofs for it; never settle real value with it"
    )
}

fn warn_insecure_key(id: &impl std::fmt::Display, insecure: bool) {
    if insecure {
        eprintln!("WARNING: {}", insecure_key_warning(id));
    }
}

fn wrap_here(wrapper: &BatchWrapper, batch: &BatchFile, source: &KeySource, out: &Output) -> Result<Proven> {
    let bar = out.spinner("building the Groth16 constraint matrices");
    // Before the key: the synthesis' transient memory and the key are then never resident together.
    wrapper.prepare_prover()?;
    bar.finish_and_clear();
    let bar = out.spinner(match source {
        KeySource::InsecureDevnet { .. } => "loading the INSECURE devnet Groth16 key (first use: setup, minutes)",
        KeySource::File(_) => "loading and validating the Groth16 proving key",
    });
    let key = wrapper.load_or_setup_key(source).map_err(key_error)?;
    bar.finish_and_clear();
    warn_insecure_key(&key.id, key.insecure);

    let bar = out.spinner("checking the batch, proving the settle and final layers");
    let (file, stats) = wrapper
        .prove(&key, batch, &|stage| {
            if stage == Stage::Groth16 {
                bar.set_message("proving the R1CS verifier with Groth16");
            }
        })
        .map_err(|e| match e {
            tgrid_settlement_proof::Error::Aggregation(_) => bad_input(e),
            other => other.into(),
        })?;
    bar.finish_and_clear();
    Ok(Proven {
        file,
        key_id: key.id.to_string(),
        insecure_key: key.insecure,
        verifying_key_path: key.verifying_key_path,
        setup_seconds: key.setup_seconds,
        stats: Some(stats),
        queue: None,
    })
}

/// The wrap as a queue job: the batch is checked here first (a bad batch is refused before it
/// occupies a worker), and only the worker's proof words are used: the file is rebuilt from
/// the batch and the key, and the proof verified under the key ([`jobs::wrap`]).
fn wrap_on_queue(
    wrapper: &BatchWrapper,
    batch: &BatchFile,
    source: &KeySource,
    queue: QueueSettings,
    out: &Output,
) -> Result<Proven> {
    wrapper.aggregation().verify_batch(batch, &batch.registry_root).map_err(bad_input)?;
    let bar = out.spinner(match source {
        KeySource::InsecureDevnet { .. } => {
            "loading the INSECURE devnet Groth16 verifying key (first use: setup, minutes)"
        }
        KeySource::File(_) => "loading the verifying key of the Groth16 proving key",
    });
    let key = wrapper.load_verifying_key(source).map_err(key_error)?;
    bar.finish_and_clear();
    warn_insecure_key(&key.id, key.insecure);

    let url = queue.url.to_string();
    let bar = out.spinner(&format!(
        "{} tasks: waiting for a worker of {url} holding key {} (`tgrid-sequencer worker --wrap-…`)",
        batch.leaves.len(),
        key.id
    ));
    let (file, tally) = super::runtime()?.block_on(async {
        let queue = JobQueue::connect(queue, JobMetrics::new()).await?;
        let file = jobs::wrap(&queue, wrapper, &key, batch).await?;
        Ok::<_, JobError>((file, queue.tally()))
    })?;
    bar.finish_and_clear();
    Ok(Proven {
        file,
        key_id: key.id.to_string(),
        insecure_key: key.insecure,
        verifying_key_path: None,
        setup_seconds: None,
        stats: None,
        queue: Some((url, tally)),
    })
}
