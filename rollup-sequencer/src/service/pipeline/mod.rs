//! The pipeline thread: open batch → proving → proven → submitted → settled (or failed), one
//! step at a time, every transition written to the store before the next begins. Proving runs
//! here, never on the API's async workers.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use alloy::primitives::{Address, B256, U256};
use tgrid_chain::market::{SettlementBatch, SettlementItem};
use tgrid_circuits::TaskProof;
use tgrid_settlement_proof::{BatchWrapper, KeySource, SettlementProofFile, WrapKey, WrapVerifyingKey};
use tracing::{error, info, warn};

use crate::jobs::{JobQueue, QueueSettings};
use crate::service::chain::Mined;
use crate::service::health::RetryKind;
use crate::service::registry::RegistryFollower;
use crate::service::store::{BatchRecord, BatchState, TaskRecord, TaskState};
use crate::service::{unix_now, ServiceError, Shared};
use crate::{Aggregator, IncrementalTree};

mod ahead;
use ahead::AheadJobs;

type Result<T> = std::result::Result<T, ServiceError>;

/// Failed batches after which a task is dropped rather than queued again.
const MAX_FAILED_BATCHES: u32 = 3;

/// The running pipeline thread.
#[derive(Debug)]
pub struct Pipeline {
    thread: std::thread::JoinHandle<()>,
}

impl Pipeline {
    /// Starts the thread; it builds the wrap circuits and loads the key first (the API is
    /// already serving meanwhile).
    pub fn start(shared: Arc<Shared>, rt: tokio::runtime::Handle, stop: Arc<AtomicBool>) -> Result<Self> {
        let thread = std::thread::Builder::new()
            .name("pipeline".into())
            .spawn(move || {
                // Proving runs on its own pool of lower-priority threads, so a burst of
                // submissions gets the cores for proof verification first (acknowledgement
                // latency) and proving takes whatever is left.
                lower_thread_priority();
                let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
                let pool = match rayon::ThreadPoolBuilder::new()
                    .num_threads(cores)
                    .thread_name(|i| format!("pipeline-prover-{i}"))
                    .start_handler(|_| lower_thread_priority())
                    .build()
                {
                    Ok(pool) => pool,
                    Err(e) => {
                        error!(error = %e, "the pipeline cannot start its thread pool");
                        return;
                    }
                };
                pool.install(|| {
                    let mut worker = match Worker::new(shared, rt) {
                        Ok(w) => w,
                        Err(e) => {
                            error!(error = %e, "the pipeline cannot start: results are acknowledged but not settled");
                            return;
                        }
                    };
                    worker.run(&stop);
                });
            })
            .map_err(|e| ServiceError::Io(format!("cannot start the pipeline thread: {e}")))?;
        Ok(Self { thread })
    }

    /// Waits for the thread to finish its current step and stop.
    pub fn join(self) {
        if self.thread.join().is_err() {
            error!("the pipeline thread panicked");
        }
    }
}

/// Gives the calling thread the lowest normal scheduling priority (niceness 19 on Linux, where
/// it is per thread). Failure only costs acknowledgement latency under load: logged, not fatal.
fn lower_thread_priority() {
    if let Err(e) = thread_priority::set_current_thread_priority(thread_priority::ThreadPriority::Min) {
        warn!(error = ?e, "cannot lower the pipeline's thread priority");
    }
}

struct OpenBatch<'a> {
    record: BatchRecord,
    deadlines: Vec<u64>,
    tree: IncrementalTree<'a>,
    /// The most tasks it takes: the setting, or the market's `maxBatchSize` when smaller (read
    /// when the batch opens, so a governance change applies to the next batch).
    max_tasks: usize,
    /// With a job queue: its complete aligned blocks being proven by the workers.
    ahead: AheadJobs,
    /// With a job queue: each task's proof and, if its provider sent a valid one, its leaf
    /// proof, in task order, as checked when the task joined (under this batch's registry), so
    /// that handing blocks to the workers neither reloads nor re-checks them.
    joined: Vec<JoinedTask>,
}

/// A task of the open batch as it joined: see [`OpenBatch::joined`].
struct JoinedTask {
    proof: TaskProof,
    provider_leaf: Option<tgrid_aggregation::SubtreeProof>,
}

/// Where a joining task's leaf went.
enum JoinedLeaf {
    /// Proven (or its provider's, checked) in this process: it goes into the incremental tree.
    Here(tgrid_aggregation::TaskLeaf, tgrid_aggregation::SubtreeProof),
    /// With a job queue: its provider's leaf proof, checked.
    Provided(tgrid_aggregation::SubtreeProof),
    /// With a job queue: its leaf job is queued.
    Queued,
}

impl<'a> OpenBatch<'a> {
    fn new(record: BatchRecord, aggregator: &'a Aggregator, max_tasks: usize) -> Self {
        Self {
            record,
            deadlines: vec![],
            tree: IncrementalTree::new(aggregator),
            max_tasks,
            ahead: AheadJobs::default(),
            joined: Vec::new(),
        }
    }

    /// Records a task that joined: its leaf into the tree, or (with a job queue) its proof and
    /// provider leaf for the blocks handed ahead.
    fn join(&mut self, task_id: String, deadline: u64, proof: TaskProof, leaf: JoinedLeaf) -> Result<()> {
        match leaf {
            JoinedLeaf::Here(leaf, subtree) => self.tree.push(leaf, subtree)?,
            JoinedLeaf::Provided(subtree) => self.joined.push(JoinedTask { proof, provider_leaf: Some(subtree) }),
            JoinedLeaf::Queued => self.joined.push(JoinedTask { proof, provider_leaf: None }),
        }
        self.deadlines.push(deadline);
        self.record.tasks.push(task_id);
        Ok(())
    }
}

/// The Groth16 key as the pipeline needs it: the proving key to wrap in-process, or (with
/// `wrap_jobs`) only its verifying side, to check what the wrap workers return.
enum BatchKey {
    Proving(Box<WrapKey>),
    Verifying(Box<WrapVerifyingKey>),
}

struct Worker {
    shared: Arc<Shared>,
    rt: tokio::runtime::Handle,
    wrapper: BatchWrapper,
    key: BatchKey,
    /// Submitted batches whose transaction was re-sent since this process started.
    resent: HashSet<u64>,
    /// When to compare the on-chain registry root with the one new batches use.
    follower: RegistryFollower,
    /// With the `job_queue` setting: workers prove the batches' leaves and merges.
    queue: Option<Arc<JobQueue>>,
}

fn parse32(s: &str) -> Result<[u8; 32]> {
    crate::service::bytes(s)
}

impl Worker {
    fn new(shared: Arc<Shared>, rt: tokio::runtime::Handle) -> Result<Self> {
        let settings = &shared.settings;
        let fri = settings.wrap_fri.params();
        info!(fri = ?settings.wrap_fri, "building the wrap circuits");
        let wrapper = BatchWrapper::build(fri)?;
        // Before the key: the synthesis' transient memory and the key are then never resident together.
        wrapper.prepare_prover()?;
        let source = match &settings.proving_key {
            Some(path) => KeySource::File(path.clone()),
            None => KeySource::InsecureDevnet { dir: settings.insecure_devnet_keys_dir.clone() },
        };
        let key = if settings.wrap_jobs {
            BatchKey::Verifying(Box::new(wrapper.load_verifying_key(&source)?))
        } else {
            BatchKey::Proving(Box::new(wrapper.load_or_setup_key(&source)?))
        };
        let (key_id, insecure) = match &key {
            BatchKey::Proving(k) => (k.id, k.insecure),
            BatchKey::Verifying(k) => (k.id, k.insecure),
        };
        if insecure {
            warn!(key = %key_id, "INSECURE Groth16 key from a public seed: devnets and tests only");
        }
        let queue = match settings.job_queue_url()? {
            Some(url) => {
                let what = if settings.wrap_jobs { "leaves, merges and wraps" } else { "leaves and merges" };
                info!(queue = %url, "connecting to the job queue: workers prove the batches' {what}");
                let queue_settings =
                    QueueSettings { url, ack_wait: Duration::from_secs(settings.job_ack_wait_secs.max(1)) };
                let queue = rt.block_on(JobQueue::connect(queue_settings, shared.metrics.jobs.clone()))?;
                rt.block_on(queue.refresh_metrics());
                Some(Arc::new(queue))
            }
            None => None,
        };
        info!(key = %key_id, "pipeline ready");
        shared.metrics.pipeline_ready.set(1);
        let follower = RegistryFollower::new(Duration::from_secs(shared.settings.registry_poll_secs));
        Ok(Self { shared, rt, wrapper, key, resent: HashSet::new(), follower, queue })
    }

    fn run(&mut self, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            let aggregator = self.shared.aggregator();
            if let Some(next) = self.run_under(&aggregator, stop) {
                self.shared.replace_aggregator(Arc::new(next));
                self.rt.spawn(crate::service::warm_verifiers(self.shared.clone()));
            }
        }
    }

    /// Runs the pipeline under one registry until the chain moves to a root the registry file
    /// lists (returned, after the open batch was closed under the old root), or `stop`.
    fn run_under(&mut self, aggregator: &Aggregator, stop: &AtomicBool) -> Option<Aggregator> {
        let poll = Duration::from_millis(self.shared.settings.poll_interval_ms);
        let mut open: Option<OpenBatch<'_>> = None;
        while !stop.load(Ordering::Relaxed) {
            match self.follow_registry(aggregator, &mut open) {
                Ok(Some(next)) => return Some(next),
                Ok(None) => {}
                // Node trouble: keep proving under the current root and look again later.
                Err(e) => warn!(error = %e, "cannot compare the on-chain registry root; retrying"),
            }
            match self.step(aggregator, &mut open) {
                Ok(true) => {}
                Ok(false) => std::thread::sleep(poll),
                Err(e) => {
                    error!(error = %e, "pipeline step failed; retrying");
                    std::thread::sleep(poll * 4);
                }
            }
        }
        None
    }

    /// The aggregator of a new on-chain registry root, once the chain moved to one the registry
    /// file lists. The open batch's leaves were proven under the old root, which the market
    /// accepts through its grace period: it is closed and proven now rather than re-proven.
    /// (Queued results of models the new registry no longer lists go into batches under the old
    /// one, kept as the previous: see `batch_under_previous`.)
    fn follow_registry<'a>(
        &mut self,
        aggregator: &'a Aggregator,
        open: &mut Option<OpenBatch<'a>>,
    ) -> Result<Option<Aggregator>> {
        let Some(next) = self.follower.poll(&self.shared, &self.rt, aggregator)? else { return Ok(None) };
        if let Some(o) = open.take() {
            info!(batch = o.record.id, "closing the open batch under the registry root it was proven for");
            self.close(o)?;
        }
        Ok(Some(next))
    }

    /// Records a failed settlement step of `batch`: logged, counted, retried after a backoff.
    fn retry_later(&self, batch: u64, step: &str, error: &ServiceError) {
        let (retry, wait) = self.shared.health.failed(batch, error);
        let m = &self.shared.metrics;
        m.settlement_retries.with_label_values(&[retry.kind.label()]).inc();
        if retry.kind == RetryKind::Funds {
            m.low_funds.set(1);
        }
        self.publish_retries();
        warn!(
            batch,
            step,
            attempts = retry.attempts,
            kind = retry.kind.label(),
            retry_in_secs = wait.as_secs(),
            stalled = retry.stalled,
            error = %error,
            "settlement step failed; retrying (its tasks stay queued)"
        );
    }

    fn recovered(&self, batch: u64, paid_gas: bool) {
        self.shared.health.recovered(batch, paid_gas);
        if paid_gas {
            self.shared.metrics.low_funds.set(0);
        }
        self.publish_retries();
    }

    fn publish_retries(&self) {
        let retrying = self.shared.health.retrying();
        let m = &self.shared.metrics;
        m.retrying_batches.set(retrying.len() as i64);
        m.stalled_batches.set(retrying.iter().filter(|r| r.stalled).count() as i64);
    }

    fn store(&self) -> &crate::service::store::Store {
        &self.shared.store
    }

    /// One transition; `Ok(true)` if something moved.
    // The guard clippy suggests for `Submitted` would borrow `batch` while `reconcile` takes it.
    #[allow(clippy::collapsible_match)]
    fn step<'a>(&mut self, aggregator: &'a Aggregator, open: &mut Option<OpenBatch<'a>>) -> Result<bool> {
        for batch in self.store().live_batches()? {
            let id = batch.id;
            // A batch whose settlement step fails waits out its backoff while the batches behind
            // it move on: one bad batch, or a flaky node, never holds up the rest.
            match &batch.state {
                BatchState::Proving if open.as_ref().is_none_or(|o| o.record.id != batch.id) => {
                    self.prove_after_restart(aggregator, batch)?;
                    return Ok(true);
                }
                BatchState::Proven { .. } if self.shared.health.due(id) => match self.submit(batch) {
                    Ok(sent) => {
                        self.recovered(id, sent);
                        return Ok(true);
                    }
                    Err(e) => self.retry_later(id, "submitting", &e),
                },
                BatchState::Submitted { .. } if self.shared.health.due(id) => match self.reconcile(batch) {
                    Ok(moved) => {
                        self.recovered(id, false);
                        if moved {
                            return Ok(true);
                        }
                    }
                    Err(e) => self.retry_later(id, "following", &e),
                },
                _ => {}
            }
        }
        if open.is_none() {
            if let Some(batch) = self.store().live_batches()?.into_iter().find(|b| b.state == BatchState::Open) {
                info!(batch = batch.id, tasks = batch.tasks.len(), "resuming the open batch: re-proving its leaves");
                let max_tasks = self.batch_limit()?.max(batch.tasks.len());
                let mut resumed = OpenBatch::new(batch, aggregator, max_tasks);
                for t in std::mem::take(&mut resumed.record.tasks) {
                    let record = self.task(&t)?;
                    let proof = self.proof(&t)?;
                    // The registry moved on while the process was down: a model it no longer
                    // lists cannot join a batch under it.
                    if let Some(reason) = self.unlisted(aggregator, &record) {
                        warn!(task = %t, %reason, "dropping the task from the resumed batch");
                        self.store().set_task_state(&parse32(&t)?, TaskState::Dropped { reason })?;
                        continue;
                    }
                    let leaf = self.leaf_now(aggregator, &parse32(&t)?, &proof)?;
                    resumed.join(t, record.deadline, proof, leaf)?;
                }
                self.store().put_batch(&resumed.record)?;
                self.store().flush_blocking()?;
                self.prove_ahead(aggregator, &mut resumed);
                if !resumed.record.tasks.is_empty() {
                    *open = Some(resumed);
                } else {
                    let reason = "no task of the resumed batch is in the current registry".to_string();
                    self.fail(resumed.record, reason, vec![])?;
                }
                return Ok(true);
            }
        }

        self.shared.metrics.queue_depth.set(self.store().queued_count() as i64);
        // Nearest deadline first: those tasks go into the next batch.
        if let Some(next) = self.store().next_queued()? {
            if self.unlisted(aggregator, &next).is_some() && self.batch_under_previous(aggregator)? {
                return Ok(true);
            }
            if open.as_ref().is_none_or(|o| o.record.tasks.len() < o.max_tasks) {
                self.add_to_open_batch(aggregator, open, &next)?;
                return Ok(true);
            }
        }

        let Some(o) = open.as_ref() else { return Ok(false) };
        let chain_now = self.rt.block_on(self.shared.chain.now())?;
        let settings = &self.shared.settings;
        let nearest = o.deadlines.iter().copied().min().unwrap_or(u64::MAX);
        let full = o.record.tasks.len() >= o.max_tasks;
        let old = unix_now().saturating_sub(o.record.opened_at) >= settings.max_batch_age_secs;
        let urgent = nearest <= chain_now.saturating_add(settings.deadline_margin_secs);
        if !(full || old || urgent) {
            return Ok(false);
        }
        info!(batch = o.record.id, tasks = o.record.tasks.len(), full, old, urgent, "closing the batch");
        self.close(open.take().expect("checked"))?;
        Ok(true)
    }

    /// Closes the open batch: stored as proving (a crash from here re-proves it), aggregated, wrapped.
    fn close(&mut self, open: OpenBatch<'_>) -> Result<()> {
        let OpenBatch { mut record, tree, ahead, joined, .. } = open;
        // The aggregation below takes over every job (done, in flight or not queued yet).
        drop(ahead);
        record.state = BatchState::Proving;
        record.closed_at = Some(unix_now());
        self.store().put_batch(&record)?;
        self.store().flush_blocking()?;
        let batch_file = match &self.queue {
            Some(_) => self.aggregate_on_queue(tree.aggregator(), &record, Some(joined))?,
            None => tree.finish()?,
        };
        self.wrap(record, &batch_file)
    }

    /// The leaf of a task joining the open batch: its provider's leaf proof if it sent one that
    /// is valid under this registry, else proven now in-process; with a job queue the proof is
    /// checked natively (milliseconds) and, unless its provider proved the leaf, its leaf job
    /// queued, so a worker proves it while the batch is open and the batch's aggregation finds
    /// it done.
    fn leaf_now(&self, aggregator: &Aggregator, task_id: &[u8; 32], proof: &TaskProof) -> Result<JoinedLeaf> {
        let provided = self.provider_leaf(aggregator, task_id, proof)?;
        let outcome = if provided.is_some() { "used" } else { "proven" };
        self.shared.metrics.leaves.with_label_values(&[outcome]).inc();
        match (&self.queue, provided) {
            (Some(_), Some((_, subtree))) => Ok(JoinedLeaf::Provided(subtree)),
            (Some(queue), None) => {
                aggregator.check(proof)?;
                self.rt.block_on(crate::jobs::queue_leaf(aggregator, queue, proof))?;
                Ok(JoinedLeaf::Queued)
            }
            (None, Some((leaf, subtree))) => Ok(JoinedLeaf::Here(leaf, subtree)),
            (None, None) => {
                let (leaf, subtree) = aggregator.prove_leaf(proof)?;
                Ok(JoinedLeaf::Here(leaf, subtree))
            }
        }
    }

    /// [`provider_leaf`](Self::provider_leaf) of each task of a batch (`None` where the leaf
    /// is to be proven here or by a worker).
    fn provider_leaves(
        &self,
        aggregator: &Aggregator,
        tasks: &[String],
        proofs: &[TaskProof],
    ) -> Result<Vec<Option<tgrid_aggregation::SubtreeProof>>> {
        tasks
            .iter()
            .zip(proofs)
            .map(|(t, p)| Ok(self.provider_leaf(aggregator, &parse32(t)?, p)?.map(|(_, subtree)| subtree)))
            .collect()
    }

    /// The leaf proof the task's provider sent, if it is valid under `aggregator`'s registry
    /// (checked at ingest, checked again: the registry may have moved since).
    fn provider_leaf(
        &self,
        aggregator: &Aggregator,
        task_id: &[u8; 32],
        proof: &TaskProof,
    ) -> Result<Option<(tgrid_aggregation::TaskLeaf, tgrid_aggregation::SubtreeProof)>> {
        let Some(bytes) = self.store().leaf_proof(task_id)? else { return Ok(None) };
        match aggregator.adopt_leaf(proof, &bytes) {
            Ok(adopted) => Ok(Some(adopted)),
            Err(e) => {
                info!(task = %hex::encode(task_id), reason = %e, "proving the leaf here instead of the provider's");
                Ok(None)
            }
        }
    }

    /// Proves a closed batch on the job queue's workers (every returned proof is verified).
    /// `joined`: its tasks as they joined under `aggregator`; `None` after a restart, when they
    /// are loaded and their provider leaves checked again.
    fn aggregate_on_queue(
        &self,
        aggregator: &Aggregator,
        record: &BatchRecord,
        joined: Option<Vec<JoinedTask>>,
    ) -> Result<tgrid_aggregation::BatchFile> {
        let queue = self.queue.as_ref().ok_or_else(|| ServiceError::Config("no job queue".into()))?;
        let (proofs, provided) = match joined {
            Some(joined) => joined.into_iter().map(|t| (t.proof, t.provider_leaf)).unzip(),
            None => {
                let proofs = record.tasks.iter().map(|t| self.proof(t)).collect::<Result<Vec<_>>>()?;
                let provided = self.provider_leaves(aggregator, &record.tasks, &proofs)?;
                (proofs, provided)
            }
        };
        let started = std::time::Instant::now();
        info!(
            batch = record.id,
            tasks = proofs.len(),
            provider_leaves = provided.iter().flatten().count(),
            "proving the batch on the job queue's workers"
        );
        let batch_file = self.rt.block_on(crate::jobs::aggregate(aggregator, queue, &proofs, &provided))?;
        info!(batch = record.id, seconds = started.elapsed().as_secs_f64(), "the workers proved the batch");
        Ok(batch_file)
    }

    /// The most tasks a new batch may take: the setting, capped by the market's `maxBatchSize`.
    fn batch_limit(&self) -> Result<usize> {
        let on_chain = self.rt.block_on(self.shared.chain.parameters())?.maxBatchSize;
        let on_chain = on_chain.saturating_to::<usize>().max(1);
        Ok(self.shared.settings.max_batch_tasks.min(on_chain))
    }

    fn task(&self, id: &str) -> Result<TaskRecord> {
        self.store().task(&parse32(id)?)?.ok_or_else(|| ServiceError::Store(format!("no record for task {id}")))
    }

    fn proof(&self, id: &str) -> Result<TaskProof> {
        let bytes =
            self.store().proof(&parse32(id)?)?.ok_or_else(|| ServiceError::Store(format!("no proof for task {id}")))?;
        TaskProof::from_bytes(&bytes).map_err(|e| ServiceError::Store(format!("stored proof of {id}: {e}")))
    }

    fn add_to_open_batch<'a>(
        &mut self,
        aggregator: &'a Aggregator,
        open: &mut Option<OpenBatch<'a>>,
        next: &TaskRecord,
    ) -> Result<()> {
        let task_id = parse32(&next.task_id)?;
        let proof = self.proof(&next.task_id)?;
        let proven = match self.leaf_now(aggregator, &task_id, &proof) {
            Ok(x) => x,
            // The queue is away: the task stays queued and the step is retried.
            Err(e @ ServiceError::Jobs(_)) => return Err(e),
            Err(e) => {
                // Checked at ingest; only a changed registry file gets here.
                warn!(task = %next.task_id, error = %e, "cannot prove the leaf; dropping the task");
                self.store()
                    .set_task_state(&task_id, TaskState::Dropped { reason: format!("leaf proof failed: {e}") })?;
                return self.store().flush_blocking();
            }
        };
        if open.is_none() {
            let max_tasks = self.batch_limit()?;
            let id = self.store().next_batch_id()?;
            let record =
                BatchRecord { id, tasks: vec![], opened_at: unix_now(), closed_at: None, state: BatchState::Open };
            *open = Some(OpenBatch::new(record, aggregator, max_tasks));
        }
        let o = open.as_mut().expect("opened above");
        o.join(next.task_id.clone(), next.deadline, proof, proven)?;
        self.store().put_batch(&o.record)?;
        self.store().set_task_state(&task_id, TaskState::Batched { batch: o.record.id })?;
        self.store().flush_blocking()?;
        info!(task = %next.task_id, batch = o.record.id, size = o.record.tasks.len(), "task joined the batch");
        self.prove_ahead(aggregator, o);
        Ok(())
    }

    /// Batches queued results of models only the previous registry lists (governance
    /// deregistered them with the last move) under that registry's root, which the market
    /// accepts through its grace period; `Ok(false)` if there is none, or the chain no longer
    /// accepts its root (then it is forgotten and such results are dropped with the reason).
    /// Closed at once: such results are rare and their grace runs out.
    fn batch_under_previous(&mut self, current: &Aggregator) -> Result<bool> {
        let Some(previous) = self.shared.previous_aggregator() else { return Ok(false) };
        if !self.rt.block_on(self.shared.chain.root_accepted(&previous.registry().root()))? {
            info!(root = %format!("0x{}", hex::encode(previous.registry().root())), "the previous registry root is no longer accepted: forgotten");
            self.shared.forget_previous_aggregator();
            return Ok(false);
        }
        let limit = self.batch_limit()?;
        let leaving: Vec<TaskRecord> = self
            .store()
            .queued()?
            .into_iter()
            .filter(|t| self.unlisted(current, t).is_some() && self.unlisted(&previous, t).is_none())
            .take(limit)
            .collect();
        if leaving.is_empty() {
            return Ok(false);
        }
        let mut open = None;
        for task in &leaving {
            self.add_to_open_batch(&previous, &mut open, task)?;
        }
        let Some(open) = open else { return Ok(true) };
        info!(
            batch = open.record.id,
            tasks = open.record.tasks.len(),
            root = %format!("0x{}", hex::encode(previous.registry().root())),
            "batch under the previous registry root: the current one no longer lists these models"
        );
        self.close(open)?;
        Ok(true)
    }

    /// Why `task` cannot be proven under `aggregator`'s registry (its model is not listed), if so.
    fn unlisted(&self, aggregator: &Aggregator, task: &TaskRecord) -> Option<String> {
        let model = parse32(&task.model_id).ok()?;
        aggregator.registry().entry(&model).is_none().then(|| {
            format!(
                "model {} is not in the registry new batches are proven under (0x{}): governance \
                 deregistered it and its old root is no longer used",
                task.model_id,
                hex::encode(aggregator.registry().root())
            )
        })
    }

    fn prove_after_restart(&mut self, aggregator: &Aggregator, record: BatchRecord) -> Result<()> {
        info!(batch = record.id, "re-proving a batch interrupted while proving");
        // Under a registry that moved on, tasks of models it lists go back to the queue (a new
        // batch), the others are dropped.
        let mut unlisted = Vec::new();
        for t in &record.tasks {
            if let Some(reason) = self.unlisted(aggregator, &self.task(t)?) {
                unlisted.push((parse32(t)?, TaskState::Dropped { reason }));
            }
        }
        if !unlisted.is_empty() {
            let reason = format!("{} of its tasks' models are not in the current registry", unlisted.len());
            return self.fail(record, reason, unlisted);
        }
        let batch_file = match &self.queue {
            Some(_) => self.aggregate_on_queue(aggregator, &record, None)?,
            None => {
                let proofs = record.tasks.iter().map(|t| self.proof(t)).collect::<Result<Vec<_>>>()?;
                let provided = self.provider_leaves(aggregator, &record.tasks, &proofs)?;
                for leaf in &provided {
                    let outcome = if leaf.is_some() { "used" } else { "proven" };
                    self.shared.metrics.leaves.with_label_values(&[outcome]).inc();
                }
                aggregator.aggregate_with(&proofs, &provided, &|_| {})?
            }
        };
        self.wrap(record, &batch_file)
    }

    fn wrap(&mut self, mut record: BatchRecord, batch_file: &tgrid_aggregation::BatchFile) -> Result<()> {
        let started = std::time::Instant::now();
        let file = match (&self.key, &self.queue) {
            (BatchKey::Verifying(key), Some(queue)) => {
                let file = self.rt.block_on(crate::jobs::wrap(queue, &self.wrapper, key, batch_file))?;
                info!(batch = record.id, seconds = started.elapsed().as_secs_f64(), "batch proven by a wrap worker");
                file
            }
            (BatchKey::Verifying(_), None) => {
                return Err(ServiceError::Config("wrap_jobs without a job_queue".into()));
            }
            (BatchKey::Proving(key), _) => {
                let (file, stats) = self.wrapper.prove(key, batch_file, &|_| {})?;
                info!(
                    batch = record.id,
                    seconds = started.elapsed().as_secs_f64(),
                    groth16 = stats.groth16_seconds,
                    "batch proven"
                );
                file
            }
        };
        let proof = String::from_utf8(file.to_json_bytes()).map_err(|e| ServiceError::Io(e.to_string()))?;
        record.state = BatchState::Proven { proof };
        self.store().put_batch(&record)?;
        self.store().flush_blocking()
    }

    /// Abandons a batch: `outcomes` says what became of some tasks, the rest go back to the queue
    /// (up to their third failed batch).
    fn fail(&self, mut record: BatchRecord, reason: String, outcomes: Vec<([u8; 32], TaskState)>) -> Result<()> {
        warn!(batch = record.id, %reason, "batch failed");
        self.shared.health.batch_failed(record.id, &reason);
        for t in &record.tasks {
            let id = parse32(t)?;
            let outcome = outcomes.iter().find(|(o, _)| *o == id).map(|(_, s)| s.clone());
            self.store().update_task(&id, |task| {
                task.failed_batches += 1;
                task.state = match outcome {
                    Some(state) => state,
                    // Whatever keeps failing its batches (a verifier that refuses this
                    // sequencer's proofs, a registry file the chain no longer accepts) must not
                    // loop forever: the provider settles it itself, with its own proof.
                    None if task.failed_batches >= MAX_FAILED_BATCHES => TaskState::Dropped {
                        reason: format!("{} batches holding it failed; the last: {reason}", task.failed_batches),
                    },
                    None => TaskState::Verified,
                };
            })?;
        }
        record.state = BatchState::Failed { reason };
        self.store().put_batch(&record)?;
        self.store().flush_blocking()?;
        self.shared.metrics.failed_batches.inc();
        Ok(())
    }

    /// The settlement calldata of a proven batch: its tasks' signed orders in batch order, checked
    /// against the task ids the proof binds.
    fn settlement_batch(&self, record: &BatchRecord, file: &SettlementProofFile) -> Result<SettlementBatch> {
        let leaves = file.task_leaves()?;
        if leaves.len() != record.tasks.len() {
            return Err(ServiceError::Store(format!(
                "batch {}'s proof has {} leaves for {} tasks",
                record.id,
                leaves.len(),
                record.tasks.len()
            )));
        }
        let mut items = Vec::with_capacity(leaves.len());
        for (leaf, id) in leaves.iter().zip(&record.tasks) {
            let task = self.task(id)?;
            if B256::from(leaf.task_id) != task.order.hash(&self.shared.chain.domain()) {
                return Err(ServiceError::Store(format!("batch {}: task {id} is not its stored order", record.id)));
            }
            items.push(SettlementItem {
                order: task.order,
                provider: Address::from(leaf.provider),
                output_commitment: B256::from(leaf.output_commitment),
            });
        }
        SettlementBatch::build(&items).map_err(|e| ServiceError::Store(format!("batch {}: {e}", record.id)))
    }

    /// Sends the settlement of a proven batch (`Ok(true)`), or gives the batch up and re-queues
    /// or drops its tasks (`Ok(false)`).
    fn submit(&mut self, mut record: BatchRecord) -> Result<bool> {
        let BatchState::Proven { proof } = &record.state else { unreachable!("called on proven batches") };
        let file = SettlementProofFile::from_json_bytes(proof.as_bytes())?;
        let batch = self.settlement_batch(&record, &file)?;
        let words = file.proof_words()?;
        let registry_root = parse32(&file.registry_root)?;
        let chain = &self.shared.chain;

        // The contract skips what can no longer settle (a used nonce, a passed deadline) without
        // reverting; only a batch with nothing left to settle is not worth a transaction.
        let items = batch.items().map_err(|e| ServiceError::Store(e.to_string()))?;
        let nonces: Vec<(Address, u64)> = items.iter().map(|i| (i.order.order.poster, i.order.order.nonce)).collect();
        let (now, used) = self.rt.block_on(async { tokio::try_join!(chain.now(), chain.nonces_used(&nonces)) })?;
        let mut outcomes = Vec::new();
        for (item, used) in items.iter().zip(&used) {
            let id = item.order.hash(&chain.domain()).0;
            if *used {
                let reason = "its nonce was used on-chain before this batch (settled elsewhere, disputed or cancelled)";
                outcomes.push((id, TaskState::Dropped { reason: reason.into() }));
            } else if item.order.order.deadline < now {
                let reason = format!("deadline {} passed before settlement", item.order.order.deadline);
                outcomes.push((id, TaskState::Dropped { reason }));
            }
        }
        if outcomes.len() == items.len() {
            return self.fail(record, "no task of the batch can settle any more".into(), outcomes).map(|()| false);
        }
        // A batch proven under a registry root the chain no longer accepts (grace over) is
        // re-proven: its tasks go back to the queue.
        if !self.rt.block_on(chain.root_accepted(&registry_root))? {
            let reason = format!("registry root {} is no longer accepted on-chain", file.registry_root);
            // Its tasks should be re-proven under the chain's root: look for it before they
            // are batched again.
            self.follower.check_now();
            return self.fail(record, reason, vec![]).map(|()| false);
        }
        let gas = match self.rt.block_on(chain.estimate_settle(&batch, &registry_root, &words)) {
            Ok(gas) => gas,
            // The contract refuses the batch as a whole (what it refuses per order it skips,
            // and what is known unsettleable was dropped above): its orders are still good, so
            // they go back to the queue and settle in another batch. A smaller chain limit on
            // batch sizes applies to the next batch (read when it opens).
            Err(ServiceError::Rejected(reason)) => return self.fail(record, reason, outcomes).map(|()| false),
            // Node trouble: the batch stays proven and is retried.
            Err(e) => return Err(e),
        };
        let nonce = self.rt.block_on(chain.pending_nonce())?;
        let (max_fee, priority) = self.rt.block_on(chain.fees())?;
        let gas_limit = gas + gas / 5;
        let balance = self.rt.block_on(chain.balance())?;
        self.shared.metrics.balance_eth.set(f64::from(balance) / 1e18);
        let needed = U256::from(gas_limit) * U256::from(max_fee);
        if balance < needed {
            return Err(ServiceError::Funds(format!(
                "account {} holds {balance} wei; batch {}'s settlement may cost {needed} wei ({gas_limit} gas at {max_fee} wei)",
                chain.sender(),
                record.id
            )));
        }
        let signed =
            self.rt.block_on(chain.sign_settle(&batch, &registry_root, &words, nonce, gas_limit, max_fee, priority))?;
        let raw = format!("0x{}", hex::encode(&signed.raw));
        record.state = BatchState::Submitted {
            proof: proof.clone(),
            nonce,
            txs: vec![signed.hash.to_string()],
            raw,
            max_fee_per_gas: max_fee.to_string(),
            max_priority_fee_per_gas: priority.to_string(),
            sent_at: unix_now(),
        };
        // Stored before it is sent: after a crash the hash is known and the bytes can be re-sent.
        self.store().put_batch(&record)?;
        self.store().flush_blocking()?;
        self.rt.block_on(chain.send_raw(&signed.raw))?;
        self.resent.insert(record.id);
        info!(batch = record.id, tx = %signed.hash, nonce, gas_limit, "settlement transaction sent");
        Ok(true)
    }

    /// Records a mined settlement: each task settled (paid or not) or skipped by the contract.
    fn settle(&self, mut record: BatchRecord, tx: String, mined: &Mined) -> Result<()> {
        let mut paid = 0u64;
        for t in &record.tasks {
            let id = parse32(t)?;
            let hash = B256::from(id);
            let state = if let Some((_, reason)) = mined.skipped.iter().find(|(h, _)| *h == hash) {
                TaskState::Dropped { reason: format!("skipped by the settlement: {reason}") }
            } else {
                let unpaid = mined.unpaid.iter().find(|(h, _)| *h == hash).map(|(_, r)| r.clone());
                paid += u64::from(unpaid.is_none());
                TaskState::Settled { batch: Some(record.id), tx: Some(tx.clone()), unpaid }
            };
            self.store().set_task_state(&id, state)?;
        }
        let n = record.tasks.len() as u64;
        info!(batch = record.id, %tx, block = mined.block, gas_used = mined.gas_used, tasks = n, paid, skipped = mined.skipped.len(), "batch settled");
        let m = &self.shared.metrics;
        m.settled_tasks.inc_by(n - mined.skipped.len() as u64);
        m.gas_per_task.set((mined.gas_used / n.max(1)) as i64);
        m.batch_seconds.observe(unix_now().saturating_sub(record.opened_at) as f64);
        record.state = BatchState::Settled { tx, block: mined.block, gas_used: mined.gas_used };
        self.store().put_batch(&record)?;
        self.store().flush_blocking()
    }

    /// Follows a submitted batch: confirmations, a revert, a lost or stuck transaction.
    fn reconcile(&mut self, mut record: BatchRecord) -> Result<bool> {
        let BatchState::Submitted { proof, nonce, txs, raw, max_fee_per_gas, max_priority_fee_per_gas, sent_at } =
            record.state.clone()
        else {
            unreachable!("called on submitted batches")
        };
        let chain = self.shared.chain.clone();
        for h in &txs {
            let hash: B256 = h.parse().map_err(|_| ServiceError::Store(format!("bad transaction hash {h}")))?;
            if let Some(mined) = self.rt.block_on(chain.receipt(hash))? {
                if !mined.success {
                    let reason = format!("settlement transaction {h} reverted");
                    self.fail(record, reason, vec![])?;
                    return Ok(true);
                }
                let head = self.rt.block_on(chain.block_number())?;
                if head + 1 >= mined.block + self.shared.settings.confirmations {
                    self.settle(record, h.clone(), &mined)?;
                    return Ok(true);
                }
                return Ok(false);
            }
        }
        let raw_bytes = hex::decode(raw.trim_start_matches("0x")).map_err(|e| ServiceError::Store(e.to_string()))?;
        if self.resent.insert(record.id) {
            // First look since this process started: the node may have dropped it.
            self.rt.block_on(chain.send_raw(&raw_bytes))?;
            return Ok(true);
        }
        let mined_nonce = self.rt.block_on(chain.mined_nonce())?;
        if mined_nonce <= nonce {
            let last: B256 = txs
                .last()
                .and_then(|h| h.parse().ok())
                .ok_or_else(|| ServiceError::Store(format!("batch {} has no transaction hash", record.id)))?;
            if !self.rt.block_on(chain.transaction_known(last))? {
                // Mined then reorganized away (the node forgets it), or evicted from the pool:
                // the same signed bytes are still valid at this nonce, so send them again now
                // rather than wait for the stuck-transaction timeout.
                match self.rt.block_on(chain.send_raw(&raw_bytes)) {
                    Ok(()) => {
                        warn!(batch = record.id, tx = %last, nonce, "the node no longer knows the settlement transaction (reorg or eviction): re-sent");
                        self.shared.metrics.resent_transactions.inc();
                        return Ok(true);
                    }
                    // E.g. its fee cap is now under the base fee: the stuck-transaction path
                    // below replaces it with higher fees.
                    Err(e) => {
                        warn!(batch = record.id, tx = %last, error = %e, "the node forgot the settlement transaction and refuses it again")
                    }
                }
            }
        }
        if mined_nonce > nonce {
            // A node can count the nonce a moment before it serves the receipt: give the receipt
            // time to appear before concluding that another transaction took the nonce.
            if unix_now() < sent_at + self.shared.settings.gas_bump_after_secs {
                return Ok(false);
            }
            warn!(batch = record.id, nonce, mined_nonce, txs = ?txs, "no receipt for our transactions but the nonce is used");
            // The nonce went to a transaction we do not know (e.g. a reorg): ask the market whether
            // every order's nonce is used.
            let nonces = record
                .tasks
                .iter()
                .map(|t| self.task(t).map(|r| (r.order.order.poster, r.order.order.nonce)))
                .collect::<Result<Vec<_>>>()?;
            let used = self.rt.block_on(chain.nonces_used(&nonces))?;
            if used.iter().all(|u| *u) {
                let last = txs.last().cloned().unwrap_or_default();
                let unknown = Mined { success: true, block: 0, gas_used: 0, skipped: vec![], unpaid: vec![] };
                self.settle(record, last, &unknown)?;
            } else {
                self.fail(record, format!("nonce {nonce} was used by another transaction"), vec![])?;
            }
            return Ok(true);
        }
        if unix_now() >= sent_at + self.shared.settings.gas_bump_after_secs {
            let wei = |s: &str| s.parse::<u128>().map_err(|_| ServiceError::Store(format!("bad fee {s:?}")));
            let (max_fee_per_gas, max_priority_fee_per_gas) = (wei(&max_fee_per_gas)?, wei(&max_priority_fee_per_gas)?);
            // Stuck: the same nonce with fees 25 % higher (nodes replace at +10 %).
            let (est_max, est_prio) = self.rt.block_on(chain.fees())?;
            let max_fee = (max_fee_per_gas + max_fee_per_gas / 4).max(est_max);
            let priority = (max_priority_fee_per_gas + max_priority_fee_per_gas / 4 + 1).max(est_prio);
            let file = SettlementProofFile::from_json_bytes(proof.as_bytes())?;
            let batch = self.settlement_batch(&record, &file)?;
            let root = parse32(&file.registry_root)?;
            let gas = self.rt.block_on(chain.estimate_settle(&batch, &root, &file.proof_words()?)).unwrap_or(3_000_000);
            let signed = self.rt.block_on(chain.sign_settle(
                &batch,
                &root,
                &file.proof_words()?,
                nonce,
                gas + gas / 5,
                max_fee,
                priority.min(max_fee),
            ))?;
            let mut txs = txs;
            txs.push(signed.hash.to_string());
            warn!(batch = record.id, tx = %signed.hash, max_fee, "settlement transaction stuck: re-sent with higher fees");
            record.state = BatchState::Submitted {
                proof,
                nonce,
                txs,
                raw: format!("0x{}", hex::encode(&signed.raw)),
                max_fee_per_gas: max_fee.to_string(),
                max_priority_fee_per_gas: priority.min(max_fee).to_string(),
                sent_at: unix_now(),
            };
            self.store().put_batch(&record)?;
            self.store().flush_blocking()?;
            self.rt.block_on(chain.send_raw(&signed.raw))?;
            return Ok(true);
        }
        Ok(false)
    }
}
