//! `tgrid-sequencer worker`: takes jobs off the queue, proves them, stores the outcome, and only
//! then acknowledges the job. A worker given a Groth16 proving key also takes wrap jobs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::message::AckKind;
use async_nats::jetstream::message::PublishMessage as Publish;
use async_nats::jetstream::Message;
use futures::StreamExt;
use tgrid_aggregation::{AggregationCircuits, BatchFile, LeafCircuit, Registry, SubtreeKind, SubtreeProof};
use tgrid_circuits::TaskProof;
use tgrid_settlement_proof::aggregate::leaf_circuit_from_model_file;
use tgrid_settlement_proof::{BatchWrapper, KeySource, WrapFri, WrapKey};
use tracing::{info, warn};

use super::{Broker, ChildProof, Job, JobError, Outcome, QueueSettings, SECONDS_HEADER, WORKER_HEADER};

/// Leaf circuits kept per worker (model id, digest); the oldest are dropped beyond it.
const MAX_CACHED_LEAF_CIRCUITS: usize = 64;

/// How a worker runs.
#[derive(Clone, Debug)]
pub struct WorkerOptions {
    /// Where the queue is.
    pub queue: QueueSettings,
    /// Name reported with every outcome (metrics, per-worker throughput).
    pub name: String,
    /// Stop after this many jobs (`None`: run until `stop` is set).
    pub max_jobs: Option<u64>,
    /// Also take wrap jobs, with this key (`None`: leaf, chunk and merge jobs only).
    pub wrap: Option<WrapSetup>,
}

/// The Groth16 key a wrap-capable worker proves with.
#[derive(Clone, Debug)]
pub struct WrapSetup {
    /// Final-layer FRI parameters of the wrap.
    pub fri: WrapFri,
    /// The proving key (a ceremony file, or the INSECURE devnet key).
    pub key: KeySource,
}

/// A registry entry: (model id, leaf circuit digest).
type EntryKey = ([u8; 32], [u8; 32]);

/// The circuits a worker proves with: built once, models' leaf circuits on first use.
struct Prover {
    circuits: Circuits,
    leaf_circuits: Mutex<HashMap<EntryKey, Arc<LeafCircuit>>>,
}

enum Circuits {
    Aggregation(Box<AggregationCircuits>),
    WithWrap(Box<Wrapping>),
}

/// A wrap-capable worker's circuits: the wrapper holds the aggregation circuits too.
struct Wrapping {
    wrapper: BatchWrapper,
    key: WrapKey,
}

impl Circuits {
    fn build(wrap: Option<&WrapSetup>) -> Result<Self, tgrid_settlement_proof::Error> {
        let Some(setup) = wrap else { return Ok(Self::Aggregation(Box::new(AggregationCircuits::build()?))) };
        let wrapper = BatchWrapper::build(setup.fri.params())?;
        // Before the key: the synthesis' transient memory and the key are then never resident together.
        wrapper.prepare_prover()?;
        let key = wrapper.load_or_setup_key(&setup.key)?;
        if key.insecure {
            warn!(key = %key.id, "INSECURE Groth16 key: anyone can forge proofs under it; devnets and tests only");
        }
        Ok(Self::WithWrap(Box::new(Wrapping { wrapper, key })))
    }

    fn aggregation(&self) -> &AggregationCircuits {
        match self {
            Self::Aggregation(circuits) => circuits,
            Self::WithWrap(wrapping) => wrapping.wrapper.aggregation(),
        }
    }
}

/// A job's child proof, decoded as the kind it claims (the circuits then check it).
fn decode(circuits: &AggregationCircuits, child: &ChildProof) -> Result<SubtreeProof, String> {
    circuits.decode(&child.bytes, child.kind).map_err(|e| e.to_string())
}

impl Prover {
    fn run(&self, job: Job) -> Outcome {
        self.prove(job).unwrap_or_else(Outcome::Refused)
    }

    fn prove(&self, job: Job) -> Result<Outcome, String> {
        let circuits = self.circuits.aggregation();
        match job {
            Job::Leaf { registry, model_file, task_proof } => {
                let registry = Registry::new(registry).map_err(|e| e.to_string())?;
                let proof = TaskProof::from_bytes(&task_proof).map_err(|e| format!("task proof: {e}"))?;
                let entry = registry
                    .entry(&proof.model_id)
                    .ok_or_else(|| format!("model 0x{} is not in the job's registry", hex::encode(proof.model_id)))?;
                let leaf_circuit = self.leaf_circuit(&model_file, &entry.model_id, &entry.leaf_digest)?;
                let (_, leaf) = leaf_circuit.prove(&proof).map_err(|e| format!("task proof: {e}"))?;
                Ok(Outcome::Proven(ChildProof { kind: SubtreeKind::Leaf, bytes: leaf.to_bytes() }))
            }
            Job::Chunk { leaves, registry } => {
                let registry = Registry::new(registry).map_err(|e| e.to_string())?;
                let leaves = leaves.iter().map(|c| decode(circuits, c)).collect::<Result<Vec<_>, _>>()?;
                let chunk = circuits.prove_chunk(&leaves, &registry).map_err(|e| e.to_string())?;
                Ok(Outcome::Proven(ChildProof { kind: SubtreeKind::Chunk, bytes: chunk.to_bytes() }))
            }
            Job::Merge { left, right } => {
                let merged = circuits
                    .prove_merge(&decode(circuits, &left)?, &decode(circuits, &right)?)
                    .map_err(|e| e.to_string())?;
                Ok(Outcome::Proven(ChildProof { kind: SubtreeKind::Merge, bytes: merged.to_bytes() }))
            }
            Job::Merge3 { shape, a, b, c } => {
                let [a, b, c] = [&a, &b, &c].map(|child| decode(circuits, child));
                let merged = circuits.prove_merge3(shape, &a?, &b?, &c?).map_err(|e| e.to_string())?;
                Ok(Outcome::Proven(ChildProof { kind: SubtreeKind::Merge, bytes: merged.to_bytes() }))
            }
            Job::Wrap { key_id, batch_file } => {
                let Circuits::WithWrap(wrapping) = &self.circuits else {
                    return Err("this worker has no Groth16 proving key".into());
                };
                let Wrapping { wrapper, key } = wrapping.as_ref();
                if key_id != key.id.to_string() {
                    return Err(format!("the job asks for wrap key {key_id}; this worker holds {}", key.id));
                }
                let batch = BatchFile::from_bytes(&batch_file).map_err(|e| format!("batch file: {e}"))?;
                let (file, _) = wrapper.prove(key, &batch, &|_| {}).map_err(|e| e.to_string())?;
                Ok(Outcome::Wrapped(file.to_json_bytes()))
            }
        }
    }

    fn leaf_circuit(
        &self,
        model_file: &[u8],
        model_id: &[u8; 32],
        digest: &[u8; 32],
    ) -> Result<Arc<LeafCircuit>, String> {
        let key = (*model_id, *digest);
        if let Some(l) = self.leaf_circuits.lock().expect("leaf circuit lock").get(&key) {
            return Ok(l.clone());
        }
        let built = Arc::new(leaf_circuit_from_model_file(model_file, model_id, digest)?);
        let mut cache = self.leaf_circuits.lock().expect("leaf circuit lock");
        if cache.len() >= MAX_CACHED_LEAF_CIRCUITS {
            cache.clear();
        }
        cache.insert(key, built.clone());
        Ok(built)
    }
}

/// Runs a worker until `stop` is set (or `max_jobs` are done). Builds the aggregation circuits
/// first (a few seconds; with a wrap key also the wrap circuits and the key), then takes one job
/// at a time, a waiting wrap first: proving uses every core.
pub async fn run_worker(options: WorkerOptions, stop: Arc<AtomicBool>) -> Result<u64, JobError> {
    let started = Instant::now();
    let wrap = options.wrap.clone();
    let circuits = tokio::task::spawn_blocking(move || Circuits::build(wrap.as_ref()))
        .await
        .map_err(|e| options.queue.error(format!("building the circuits: {e}")))??;
    info!(seconds = started.elapsed().as_secs_f64(), wraps = options.wrap.is_some(), "circuits built");
    let prover = Arc::new(Prover { circuits, leaf_circuits: Mutex::default() });
    let broker = Broker::connect(&options.queue, &options.name).await?;
    let consumer = broker.workers_consumer(&options.queue).await?;
    let wrap_consumer = match options.wrap {
        Some(_) => Some(broker.wrap_consumer(&options.queue).await?),
        None => None,
    };
    let heartbeat = {
        let (client, name) = (broker.client.clone(), options.name.clone());
        tokio::spawn(async move {
            loop {
                // A lost beat only makes the sequencer's worker count lag.
                let _ = client.publish(super::HEARTBEAT_SUBJECT, name.clone().into()).await;
                tokio::time::sleep(super::HEARTBEAT_EVERY).await;
            }
        })
    };
    info!(worker = %options.name, queue = %options.queue.url, "waiting for jobs");
    let mut done = 0u64;
    while !stop.load(Ordering::Relaxed) && options.max_jobs.is_none_or(|max| done < max) {
        // A wrap is the last step before a batch settles: take it before any leaf, chunk or merge.
        let mut from = &consumer;
        if let Some(wraps) = &wrap_consumer {
            match broker.wrap_jobs.consumer_info(super::WRAP_WORKERS_CONSUMER).await {
                Ok(info) if info.num_pending > 0 => from = wraps,
                Ok(_) => {}
                Err(e) => warn!(error = %e, "cannot read the wrap queue's depth"),
            }
        }
        let batch = from.fetch().max_messages(1).expires(Duration::from_secs(2)).messages().await;
        let mut messages = match batch {
            Ok(m) => m,
            Err(e) => {
                warn!(error = %e, "cannot fetch jobs; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        while let Some(message) = messages.next().await {
            match message {
                Ok(message) => {
                    if handle(&broker, &prover, &options, &stop, message).await {
                        done += 1;
                    }
                }
                Err(e) => {
                    warn!(error = %e, "fetching a job failed; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }
    heartbeat.abort();
    Ok(done)
}

/// One delivered job; `true` if this worker proved it.
async fn handle(
    broker: &Broker,
    prover: &Arc<Prover>,
    options: &WorkerOptions,
    stop: &AtomicBool,
    message: Message,
) -> bool {
    let job = match Job::decode(&message.payload) {
        Ok(job) => job,
        Err(e) => {
            // Nobody can prove garbage: drop it for good rather than redeliver it forever.
            warn!(error = %e, "dropping a malformed job");
            let _ = message.ack_with(AckKind::Term).await;
            return false;
        }
    };
    let id = super::job_id(&message.payload);
    if broker.stored_outcome(&id).await.is_some() {
        // A worker stored it and died before acknowledging: nothing to prove again.
        info!(job = %id, kind = job.kind(), "outcome already stored; acknowledging the redelivery");
        let _ = message.double_ack().await;
        return false;
    }
    info!(job = %id, kind = job.kind(), "proving");
    let started = Instant::now();
    let keep_alive = {
        let message_ack = message.clone();
        let id_for_log = id.clone();
        let every = (options.queue.ack_wait / 3).max(Duration::from_millis(200));
        let deadline = options.queue.job_deadline;
        tokio::spawn(async move {
            // Past the job deadline this worker goes silent on the job: the broker gives it to
            // another worker even if this one never returns.
            while started.elapsed() < deadline {
                tokio::time::sleep(every).await;
                let _ = message_ack.ack_with(AckKind::Progress).await;
            }
            warn!(job = %id_for_log, "past the job deadline: no longer holding the job");
        })
    };
    let worker = prover.clone();
    let kind = job.kind();
    let outcome = tokio::task::spawn_blocking(move || worker.run(job))
        .await
        .unwrap_or_else(|e| Outcome::Refused(format!("the prover panicked: {e}")));
    let seconds = started.elapsed().as_secs_f64();
    if let Outcome::Refused(reason) = &outcome {
        warn!(job = %id, kind, %reason, "refused");
    }
    let payload = outcome.encode();
    // Stored before acknowledged: a crash between the two leaves a redelivery that finds it.
    loop {
        let publish = Publish::build()
            .payload(payload.clone().into())
            .message_id(&id)
            .header(WORKER_HEADER, options.name.as_str())
            .header(SECONDS_HEADER, format!("{seconds:.3}").as_str());
        let stored = match broker.js.send_publish(format!("tgrid.results.{id}"), publish).await {
            Ok(ack) => ack.await.map(|_| ()).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match stored {
            Ok(()) => break,
            Err(e) if stop.load(Ordering::Relaxed) => {
                // Not acknowledged: the broker gives the job to another worker.
                warn!(job = %id, error = %e, "stopping without storing the outcome");
                keep_alive.abort();
                return false;
            }
            Err(e) => {
                warn!(job = %id, error = %e, "cannot store the outcome yet; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
    keep_alive.abort();
    if let Err(e) = message.double_ack().await {
        // The broker will redeliver it; the next worker finds the stored outcome.
        warn!(job = %id, error = %e, "acknowledging failed");
    }
    info!(job = %id, kind, seconds, "done");
    true
}
