//! The sequencer's side: publish jobs, wait for their outcomes, check them, build the batch.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::message::PublishMessage as Publish;
use async_nats::HeaderMap;
use futures::StreamExt;
use prometheus::{HistogramOpts, HistogramVec, IntGauge};
use tgrid_aggregation::batch::split_point;
use tgrid_aggregation::batch::AggregationPublicInputs;
use tgrid_aggregation::{
    batch_root, check_leaves, node_hash, BatchFile, MergeShape, SubtreeKind, SubtreeProof, TaskLeaf, CHUNK_LEAVES,
};
use tgrid_circuits::TaskProof;
use tgrid_settlement_proof::{BatchWrapper, SettlementProofFile, WrapVerifyingKey};
use tracing::{debug, warn};

use super::{Broker, ChildProof, Job, JobError, Outcome, QueueSettings, SECONDS_HEADER, WORKER_HEADER};
use crate::Aggregator;

/// How often a waiting dispatcher looks the outcome up in the stream, in case it missed the
/// push (a broker restart or reconnect in between).
const SWEEP: Duration = Duration::from_secs(2);
/// How long publishing a job keeps retrying while the broker is away.
const PUBLISH_PATIENCE: Duration = Duration::from_secs(120);
/// Times a job is queued before its refusal or bad proof is final.
const MAX_ATTEMPTS: u32 = 3;
/// Bytes a published job's headers may take on top of its payload.
const PUBLISH_HEADER_MARGIN: usize = 1024;

/// Jobs done and seconds spent, per worker, as the workers reported them.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct WorkerTally {
    /// Jobs whose outcome came from this worker.
    pub jobs: u64,
    /// Seconds it spent proving them.
    pub seconds: f64,
}

/// The queue's Prometheus metrics, as the sequencer service serves them.
#[derive(Clone, Debug)]
pub struct JobMetrics {
    /// Jobs this sequencer queued whose outcome it has not received yet.
    pub in_flight: IntGauge,
    /// Jobs waiting for a worker (the queue's depth).
    pub waiting: IntGauge,
    /// Workers alive: heard from (a heartbeat every 2 s, busy or idle) in the last 6 s.
    pub workers: IntGauge,
    /// Time from queuing a job to its checked outcome, by kind (`leaf`, `chunk`, `merge`, `wrap`).
    pub seconds: HistogramVec,
}

impl JobMetrics {
    /// The metrics, not yet registered.
    pub fn new() -> Self {
        let gauge = |name: &str, help: &str| IntGauge::new(name, help).expect("metric");
        Self {
            in_flight: gauge("tgrid_sequencer_jobs_in_flight", "aggregation jobs queued and not answered yet"),
            waiting: gauge("tgrid_sequencer_job_queue_depth", "aggregation jobs waiting for a worker"),
            workers: gauge("tgrid_sequencer_job_workers", "workers heard from in the last three heartbeats"),
            seconds: HistogramVec::new(
                HistogramOpts::new("tgrid_sequencer_job_seconds", "time from queuing a job to its checked outcome")
                    .buckets(vec![0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]),
                &["kind"],
            )
            .expect("metric"),
        }
    }

    /// Registers them in `registry`.
    pub fn register(&self, registry: &prometheus::Registry) -> prometheus::Result<()> {
        registry.register(Box::new(self.in_flight.clone()))?;
        registry.register(Box::new(self.waiting.clone()))?;
        registry.register(Box::new(self.workers.clone()))?;
        registry.register(Box::new(self.seconds.clone()))
    }
}

impl Default for JobMetrics {
    fn default() -> Self {
        Self::new()
    }
}

/// A connection to the job queue, as the sequencer uses it.
pub struct JobQueue {
    settings: QueueSettings,
    broker: Broker,
    tally: Mutex<BTreeMap<String, WorkerTally>>,
    metrics: JobMetrics,
    heartbeat_task: tokio::task::JoinHandle<()>,
}

impl Drop for JobQueue {
    fn drop(&mut self) {
        self.heartbeat_task.abort();
    }
}

/// Keeps `workers` at the number of distinct workers heard from within three heartbeats.
async fn count_workers(mut heartbeats: async_nats::Subscriber, workers: IntGauge) {
    let mut seen: HashMap<String, Instant> = HashMap::new();
    let window = super::HEARTBEAT_EVERY * 3;
    loop {
        match tokio::time::timeout(super::HEARTBEAT_EVERY, heartbeats.next()).await {
            Ok(Some(beat)) => {
                // Names are the workers' own: bounded, and the map with them.
                let name: String = String::from_utf8_lossy(&beat.payload).chars().take(128).collect();
                if seen.len() < 10_000 || seen.contains_key(&name) {
                    seen.insert(name, Instant::now());
                }
            }
            Ok(None) => return,
            Err(_) => {}
        }
        seen.retain(|_, at| at.elapsed() < window);
        workers.set(seen.len() as i64);
    }
}

impl std::fmt::Debug for JobQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobQueue").field("url", &self.settings.url).finish()
    }
}

fn header(headers: Option<&HeaderMap>, name: &str) -> Option<String> {
    headers.and_then(|h| h.get(name)).map(|v| v.as_str().to_owned())
}

impl JobQueue {
    /// Connects (waiting for the broker), creates the streams if missing, and starts following
    /// the workers' heartbeats; reports into `metrics`.
    pub async fn connect(settings: QueueSettings, metrics: JobMetrics) -> Result<Self, JobError> {
        let broker = Broker::connect(&settings, "tgrid-sequencer").await?;
        let heartbeats = broker.client.subscribe(super::HEARTBEAT_SUBJECT).await.map_err(|e| settings.error(e))?;
        let heartbeat_task = tokio::spawn(count_workers(heartbeats, metrics.workers.clone()));
        Ok(Self { settings, broker, tally: Mutex::default(), metrics, heartbeat_task })
    }

    /// Reads the queue's depth (jobs waiting for a worker, wraps included) into the metrics.
    pub async fn refresh_metrics(&self) {
        let mut waiting = 0;
        for (stream, consumer) in
            [(&self.broker.jobs, super::WORKERS_CONSUMER), (&self.broker.wrap_jobs, super::WRAP_WORKERS_CONSUMER)]
        {
            match stream.consumer_info(consumer).await {
                Ok(info) => waiting += info.num_pending as i64,
                // No worker has ever attached: the consumer does not exist yet.
                Err(e) => debug!(consumer, error = %e, "no consumer information"),
            }
        }
        self.metrics.waiting.set(waiting);
    }

    /// Jobs answered so far, per worker.
    pub fn tally(&self) -> BTreeMap<String, WorkerTally> {
        self.tally.lock().expect("tally lock").clone()
    }

    /// Runs `job` on some worker and returns its proof (not yet checked: see [`aggregate`]),
    /// with the name of the worker that proved it.
    /// `attempt` > 0 re-queues a job whose earlier outcome was discarded ([`JobQueue::discard`]):
    /// it gets another deduplication id, so the broker does not drop it as a repeat.
    pub async fn run(&self, job: &Job, attempt: u32) -> Result<Delivered, JobError> {
        self.run_metered(job, attempt, true).await
    }

    /// [`run`](Self::run), counted in the metrics only if `counted`.
    async fn run_metered(&self, job: &Job, attempt: u32, counted: bool) -> Result<Delivered, JobError> {
        if !counted {
            return self.run_uncounted(job, attempt).await;
        }
        let started = Instant::now();
        self.metrics.in_flight.inc();
        let outcome = self.run_uncounted(job, attempt).await;
        self.metrics.in_flight.dec();
        self.metrics.seconds.with_label_values(&[job.kind()]).observe(started.elapsed().as_secs_f64());
        self.refresh_metrics().await;
        outcome
    }

    async fn run_uncounted(&self, job: &Job, attempt: u32) -> Result<Delivered, JobError> {
        let bytes = job.encode();
        let id = super::job_id(&bytes);
        let subject = format!("tgrid.results.{id}");
        // Subscribe before publishing so an outcome stored right away is not missed.
        let mut pushed = self.broker.client.subscribe(subject).await.map_err(|e| self.settings.error(e))?;
        if let Some(stored) = self.broker.stored_outcome(&id).await {
            debug!(job = %id, "outcome already stored");
            return self.accept(job, &stored.payload, Some(&stored.headers));
        }
        let message_id = if attempt == 0 { id.clone() } else { format!("{id}.retry{attempt}") };
        self.publish(job, &message_id, bytes).await?;
        let published = Instant::now();
        loop {
            if published.elapsed() >= self.settings.job_deadline {
                return Err(JobError::TimedOut { kind: job.kind(), seconds: self.settings.job_deadline.as_secs() });
            }
            match tokio::time::timeout(SWEEP, pushed.next()).await {
                Ok(Some(message)) => return self.accept(job, &message.payload, message.headers.as_ref()),
                Ok(None) => return Err(self.settings.error("the connection closed")),
                Err(_) => {
                    if let Some(stored) = self.broker.stored_outcome(&id).await {
                        return self.accept(job, &stored.payload, Some(&stored.headers));
                    }
                }
            }
        }
    }

    /// Deletes the stored outcome of `job` (a refusal or a proof that failed its checks), so
    /// that running it again proves it again instead of answering from the store.
    pub async fn discard(&self, job: &Job) {
        let id = super::job_id(&job.encode());
        if let Some(stored) = self.broker.stored_outcome(&id).await {
            if let Err(e) = self.broker.results.delete_message(stored.sequence).await {
                warn!(job = %id, error = %e, "cannot delete a discarded outcome");
            }
        }
    }

    async fn publish(&self, job: &Job, id: &str, bytes: Vec<u8>) -> Result<(), JobError> {
        // The broker would refuse it on every retry: say why at once. (The margin is for the
        // deduplication header.)
        let limit = self.broker.client.server_info().max_payload;
        if limit > 0 && bytes.len() + PUBLISH_HEADER_MARGIN > limit {
            return Err(self.settings.error(format!(
                "a {} job of {} bytes exceeds the broker's max_payload of {limit} bytes: raise max_payload in \
                 the nats-server configuration (up to 64 MB)",
                job.kind(),
                bytes.len()
            )));
        }
        let started = Instant::now();
        loop {
            let message = Publish::build().payload(bytes.clone().into()).message_id(id);
            let sent = self.broker.js.send_publish(job.subject(), message).await;
            let stored = match sent {
                Ok(ack) => ack.await.map(|_| ()).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            match stored {
                Ok(()) => return Ok(()),
                Err(e) if started.elapsed() < PUBLISH_PATIENCE => {
                    warn!(job = %id, error = %e, "cannot queue the job yet; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(e) => return Err(self.settings.error(format!("queuing a {} job: {e}", job.kind()))),
            }
        }
    }

    fn accept(&self, job: &Job, payload: &[u8], headers: Option<&HeaderMap>) -> Result<Delivered, JobError> {
        let worker = header(headers, WORKER_HEADER).unwrap_or_else(|| "unnamed".into());
        let seconds = header(headers, SECONDS_HEADER).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
        match Outcome::decode(payload) {
            Err(e) => Err(JobError::InvalidOutcome { kind: job.kind(), worker, reason: e.to_string() }),
            Ok(Outcome::Refused(reason)) => Err(JobError::Refused { kind: job.kind(), reason }),
            Ok(Outcome::Proven(child)) => Ok(Delivered { product: Product::Subtree(child), worker, seconds }),
            Ok(Outcome::Wrapped(file)) => Ok(Delivered { product: Product::Settlement(file), worker, seconds }),
        }
    }

    /// Runs `job` and returns `check`'s reading of its outcome. A refusal or an outcome `check`
    /// rejects (one faulty or hostile worker) is discarded and the job queued again, and so is a
    /// job without an outcome by the job deadline (a stuck worker), up to
    /// [`MAX_ATTEMPTS`] times. Counted in the metrics and the workers' tallies if `counted`.
    async fn run_checked<T>(
        &self,
        job: &Job,
        counted: bool,
        check: impl Fn(&Delivered) -> Result<T, JobError>,
    ) -> Result<T, JobError> {
        let mut attempt = 0;
        loop {
            let error = match self.run_metered(job, attempt, counted).await {
                Ok(delivered) => match check(&delivered) {
                    Ok(checked) => {
                        if counted {
                            self.credit(&delivered);
                        }
                        return Ok(checked);
                    }
                    Err(e) => e,
                },
                Err(e @ JobError::Refused { .. }) => e,
                // Queued again under a new id, for another worker.
                Err(e @ JobError::TimedOut { .. }) => e,
                Err(e) => return Err(e),
            };
            attempt += 1;
            if attempt >= MAX_ATTEMPTS {
                return Err(error);
            }
            warn!(kind = job.kind(), attempt, error = %error, "discarding the outcome and queuing the job again");
            if !matches!(error, JobError::TimedOut { .. }) {
                self.discard(job).await;
            }
        }
    }

    /// Counts a delivered proof that passed its checks for its worker.
    fn credit(&self, delivered: &Delivered) {
        let mut tally = self.tally.lock().expect("tally lock");
        let entry = tally.entry(delivered.worker.clone()).or_default();
        entry.jobs += 1;
        entry.seconds += delivered.seconds.max(0.0);
    }
}

/// What a worker proved.
#[derive(Debug)]
pub enum Product {
    /// A leaf, chunk or merge proof.
    Subtree(ChildProof),
    /// A settlement proof file (JSON).
    Settlement(Vec<u8>),
}

/// A worker's proof for a job, not checked yet.
#[derive(Debug)]
pub struct Delivered {
    /// The proof.
    pub product: Product,
    /// The worker's name, as it reported it.
    pub worker: String,
    /// Seconds it reported spending.
    pub seconds: f64,
}

/// A proof with its checked public inputs.
type Checked = (SubtreeProof, AggregationPublicInputs);

/// A subtree on its way up (as in [`Aggregator::merge_all`]): proven, or a node over two
/// proofs left for its parent to prove together with it.
// A handful live at a time (one per tree level in progress): their size does not matter.
#[allow(clippy::large_enum_variant)]
enum Partial {
    Proven(Checked),
    Pending(Box<[Checked; 2]>),
}

type Subtree<'a> = Pin<Box<dyn Future<Output = Result<Partial, JobError>> + Send + 'a>>;

/// [`Aggregator::aggregate`] with the leaf, chunk and merge proofs done by workers through
/// `queue`: checks every task proof natively and rejects duplicated task ids first, then queues
/// every leaf at once, each chunk as soon as its leaves are back, and each merge as soon as its
/// children are (RFC 6962 shape). Every proof a worker returns is verified and its public inputs
/// (subtree root, registry root, task count, circuit digests) compared with the native ones
/// before it is used.
pub async fn aggregate(
    aggregator: &Aggregator,
    queue: &JobQueue,
    proofs: &[TaskProof],
    provided: &[Option<SubtreeProof>],
) -> Result<BatchFile, JobError> {
    let leaves = checked_leaves(aggregator, proofs)?;
    let model_files = model_files(aggregator, proofs)?;
    let context =
        Context { aggregator, queue, proofs, provided, leaves: &leaves, model_files: &model_files, counted: true };
    let chunks = proofs.len().div_ceil(CHUNK_LEAVES);
    let (root, _) = context.close(context.subtree(0, chunks).await?).await?;
    Ok(aggregator.circuits().batch_file(leaves, &root).map_err(crate::Error::from)?)
}

/// Has the workers prove the subtree over `proofs`, an aligned block of an open batch's tasks
/// (a power of two of them, at least a chunk, starting at a multiple of it: a subtree of the
/// batch's RFC 6962 tree whatever size the batch closes at), so that [`aggregate`] at the
/// batch's close finds its leaves, chunks and merges done: the same jobs, so the same ids,
/// whose outcomes the broker keeps.
/// Every proof is checked as in [`aggregate`]. Nothing is counted in the metrics or the workers'
/// tallies: the aggregation at close counts each job once.
pub async fn prove_ahead(
    aggregator: Arc<Aggregator>,
    queue: Arc<JobQueue>,
    proofs: Vec<TaskProof>,
    provided: Vec<Option<SubtreeProof>>,
) -> Result<(), JobError> {
    // Verifying the task proofs takes milliseconds each: not on the async threads.
    let (checker, to_check) = (aggregator.clone(), proofs.clone());
    let leaves = match tokio::task::spawn_blocking(move || checked_leaves(&checker, &to_check)).await {
        Ok(checked) => checked?,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // The runtime is shutting down: nothing to prove ahead for.
        Err(_) => return Ok(()),
    };
    let model_files = model_files(&aggregator, &proofs)?;
    let context = Context {
        aggregator: &aggregator,
        queue: &queue,
        proofs: &proofs,
        provided: &provided,
        leaves: &leaves,
        model_files: &model_files,
        counted: false,
    };
    if proofs.len() % CHUNK_LEAVES != 0 {
        // Part of a chunk: a chunk over these leaves would not be the batch's. Leaves only.
        let leaves = (0..proofs.len()).map(|i| context.leaf(i));
        return futures::future::try_join_all(leaves).await.map(|_| ());
    }
    // A pending top node is left unproven: only the batch's close knows whether its parent
    // proves it (the same jobs then, the same ids).
    context.subtree(0, proofs.len() / CHUNK_LEAVES).await.map(|_| ())
}

/// The leaves of `proofs`, each proof verified natively, no task twice.
fn checked_leaves(aggregator: &Aggregator, proofs: &[TaskProof]) -> Result<Vec<TaskLeaf>, JobError> {
    let leaves = proofs.iter().map(|p| aggregator.check(p)).collect::<crate::Result<Vec<_>>>()?;
    check_leaves(&leaves).map_err(crate::Error::from)?;
    Ok(leaves)
}

/// The model file of every model among `proofs`, once each.
fn model_files(aggregator: &Aggregator, proofs: &[TaskProof]) -> Result<HashMap<[u8; 32], Vec<u8>>, JobError> {
    let mut files = HashMap::new();
    for proof in proofs {
        if let std::collections::hash_map::Entry::Vacant(slot) = files.entry(proof.model_id) {
            slot.insert(model_file(aggregator, &proof.model_id)?);
        }
    }
    Ok(files)
}

/// The model file the registry file names for `model_id`.
fn model_file(aggregator: &Aggregator, model_id: &[u8; 32]) -> Result<Vec<u8>, JobError> {
    let path = aggregator.registry_file().model_path_of(model_id).ok_or_else(|| JobError::ModelFile {
        path: format!("model 0x{}", hex::encode(model_id)),
        reason: "the registry file names no file for it".into(),
    })?;
    std::fs::read(&path).map_err(|e| JobError::ModelFile { path: path.display().to_string(), reason: e.to_string() })
}

fn leaf_job(aggregator: &Aggregator, model_file: Vec<u8>, proof: &TaskProof) -> Job {
    Job::Leaf { registry: aggregator.registry().entries().to_vec(), model_file, task_proof: proof.to_bytes() }
}

/// Queues the leaf job of a task proof without waiting for it, so that a worker proves it while
/// the batch is still open: [`aggregate`] then finds its outcome stored (same job, same id).
pub async fn queue_leaf(aggregator: &Aggregator, queue: &JobQueue, proof: &TaskProof) -> Result<(), JobError> {
    let job = leaf_job(aggregator, model_file(aggregator, &proof.model_id)?, proof);
    let bytes = job.encode();
    let id = super::job_id(&bytes);
    if queue.broker.stored_outcome(&id).await.is_none() {
        queue.publish(&job, &id, bytes).await?;
    }
    Ok(())
}

struct Context<'a> {
    aggregator: &'a Aggregator,
    queue: &'a JobQueue,
    proofs: &'a [TaskProof],
    /// Leaf proofs already at hand (proven by the tasks' providers, checked by the caller), by
    /// task index; empty or `None` where a worker proves the leaf.
    provided: &'a [Option<SubtreeProof>],
    leaves: &'a [TaskLeaf],
    model_files: &'a HashMap<[u8; 32], Vec<u8>>,
    /// Whether the jobs count in the metrics and tallies (not when proving ahead).
    counted: bool,
}

impl<'a> Context<'a> {
    /// The subtree over chunks `lo..hi`: both halves concurrently, then their node, proven with
    /// a pending child in one merge or left pending (see [`Partial`]).
    fn subtree(&'a self, lo: usize, hi: usize) -> Subtree<'a> {
        Box::pin(async move {
            if hi - lo == 1 {
                return Ok(Partial::Proven(self.chunk(lo).await?));
            }
            let mid = lo + split_point(hi - lo);
            let (left, right) = futures::try_join!(self.subtree(lo, mid), self.subtree(mid, hi))?;
            let (shape, [a, b, c]) = match (left, right) {
                (Partial::Pending(pair), right) => {
                    let [a, b] = *pair;
                    (MergeShape::LeftDeep, [a, b, self.close(right).await?])
                }
                (Partial::Proven(a), Partial::Pending(pair)) => {
                    let [b, c] = *pair;
                    (MergeShape::RightDeep, [a, b, c])
                }
                (Partial::Proven(a), Partial::Proven(b)) => return Ok(Partial::Pending(Box::new([a, b]))),
            };
            let root = match shape {
                MergeShape::LeftDeep => node_hash(&node_hash(&a.1.root, &b.1.root), &c.1.root),
                _ => node_hash(&a.1.root, &node_hash(&b.1.root, &c.1.root)),
            };
            let job = Job::Merge3 { shape, a: child(&a.0), b: child(&b.0), c: child(&c.0) };
            let expected = AggregationPublicInputs {
                root,
                registry_root: a.1.registry_root,
                count: a.1.count + b.1.count + c.1.count,
                digests: a.1.digests,
            };
            Ok(Partial::Proven(self.checked(&job, SubtreeKind::Merge, &expected).await?))
        })
    }

    /// The proof of chunk `index`: its leaves concurrently, then the chunk.
    async fn chunk(&self, index: usize) -> Result<Checked, JobError> {
        let tasks = index * CHUNK_LEAVES..((index + 1) * CHUNK_LEAVES).min(self.proofs.len());
        let leaves = futures::future::try_join_all(tasks.clone().map(|i| self.leaf(i))).await?;
        let registry = self.aggregator.registry();
        let job = Job::Chunk { leaves: leaves.iter().map(child).collect(), registry: registry.entries().to_vec() };
        let hashes: Vec<[u8; 32]> = self.leaves[tasks].iter().map(TaskLeaf::hash).collect();
        let expected = AggregationPublicInputs {
            root: batch_root(&hashes).expect("a chunk holds a task"),
            registry_root: registry.root(),
            count: hashes.len() as u64,
            digests: self.aggregator.circuits().digests(),
        };
        self.checked(&job, SubtreeKind::Chunk, &expected).await
    }

    /// The proof of a subtree, proving a pending node on its own.
    async fn close(&self, partial: Partial) -> Result<Checked, JobError> {
        let [left, right] = match partial {
            Partial::Proven(checked) => return Ok(checked),
            Partial::Pending(pair) => *pair,
        };
        let job = Job::Merge { left: child(&left.0), right: child(&right.0) };
        let expected = AggregationPublicInputs {
            root: node_hash(&left.1.root, &right.1.root),
            registry_root: left.1.registry_root,
            count: left.1.count + right.1.count,
            digests: left.1.digests,
        };
        self.checked(&job, SubtreeKind::Merge, &expected).await
    }

    /// Task `index`'s leaf proof: its provider's, if given and of the circuit the registry lists
    /// for the model, else a worker's.
    async fn leaf(&self, index: usize) -> Result<SubtreeProof, JobError> {
        let proof = &self.proofs[index];
        if let Some(Some(provided)) = self.provided.get(index) {
            if self.aggregator.still_fits(&self.leaves[index], provided) {
                return Ok(provided.clone());
            }
        }
        let job = leaf_job(self.aggregator, self.model_files[&proof.model_id].clone(), proof);
        self.queue.run_checked(&job, self.counted, |delivered| self.check_leaf(&job, index, delivered)).await
    }

    /// Accepts a worker's leaf proof only as [`Aggregator::adopt_leaf_of`] accepts a provider's:
    /// of the leaf circuit the registry lists, verified, this task's leaf.
    fn check_leaf(&self, job: &Job, index: usize, delivered: &Delivered) -> Result<SubtreeProof, JobError> {
        let invalid =
            |reason: String| JobError::InvalidOutcome { kind: job.kind(), worker: delivered.worker.clone(), reason };
        let Product::Subtree(child) = &delivered.product else {
            return Err(invalid("a settlement proof, not a leaf proof".into()));
        };
        if child.kind != SubtreeKind::Leaf {
            return Err(invalid(format!("a {} proof, not a leaf proof", child.kind.name())));
        }
        self.aggregator.adopt_leaf_of(&self.leaves[index], &child.bytes).map_err(|e| invalid(e.to_string()))
    }

    /// Runs `job` and accepts its proof only if it is of the circuit of `kind` and verifies
    /// under our own circuits with exactly the expected public inputs.
    async fn checked(
        &self,
        job: &Job,
        kind: SubtreeKind,
        expected: &AggregationPublicInputs,
    ) -> Result<(SubtreeProof, AggregationPublicInputs), JobError> {
        self.queue.run_checked(job, self.counted, |delivered| self.check(job, kind, expected, delivered)).await
    }

    fn check(
        &self,
        job: &Job,
        kind: SubtreeKind,
        expected: &AggregationPublicInputs,
        delivered: &Delivered,
    ) -> Result<(SubtreeProof, AggregationPublicInputs), JobError> {
        let worker = &delivered.worker;
        let invalid = |reason: String| JobError::InvalidOutcome { kind: job.kind(), worker: worker.clone(), reason };
        let Product::Subtree(child) = &delivered.product else {
            return Err(invalid("a settlement proof, not a leaf, chunk or merge proof".into()));
        };
        if child.kind != kind {
            return Err(invalid(format!("a {} proof, not a {} proof", child.kind.name(), kind.name())));
        }
        let circuits = self.aggregator.circuits();
        let proof = circuits.decode(&child.bytes, kind).map_err(|e| invalid(e.to_string()))?;
        let publics = circuits.verify_root(&proof).map_err(|e| invalid(e.to_string()))?;
        if &publics != expected {
            return Err(invalid(format!(
                "its public inputs (root 0x{}, {} tasks) are not the expected ones (root 0x{}, {} tasks)",
                hex::encode(publics.root),
                publics.count,
                hex::encode(expected.root),
                expected.count
            )));
        }
        Ok((proof, publics))
    }
}

fn child(proof: &SubtreeProof) -> ChildProof {
    ChildProof { kind: proof.kind, bytes: proof.to_bytes() }
}

/// Has a worker holding the Groth16 proving key wrap `batch` (a job waits until a worker started
/// with `--wrap-proving-key` or the devnet key takes it). Only the worker's 8 proof words are
/// used: the settlement file is rebuilt here from the batch and `key`, and the proof must verify
/// under `key` for the batch's public input ([`BatchWrapper::adopt_proof`]).
pub async fn wrap(
    queue: &JobQueue,
    wrapper: &BatchWrapper,
    key: &WrapVerifyingKey,
    batch: &BatchFile,
) -> Result<SettlementProofFile, JobError> {
    let job = Job::Wrap { key_id: key.id.to_string(), batch_file: batch.to_bytes() };
    queue
        .run_checked(&job, true, |delivered| {
            let invalid = |reason: String| JobError::InvalidOutcome {
                kind: job.kind(),
                worker: delivered.worker.clone(),
                reason,
            };
            let Product::Settlement(bytes) = &delivered.product else {
                return Err(invalid("a leaf, chunk or merge proof, not a settlement proof".into()));
            };
            let words = SettlementProofFile::from_json_bytes(bytes)
                .and_then(|file| file.proof_words())
                .map_err(|e| invalid(e.to_string()))?;
            wrapper.adopt_proof(key, batch, words).map_err(|e| invalid(e.to_string()))
        })
        .await
}
