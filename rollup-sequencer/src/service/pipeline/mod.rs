//! The pipeline thread: open batch → proving → proven → submitted → settled (or failed), one
//! step at a time, every transition written to the store before the next begins. Proving runs
//! here, never on the API's async workers.
//!
//! This module holds the thread and its step; the steps' work lives by job in `batching`
//! (tasks join the open batch, batches close and are aggregated), `settlement` (wrap, send,
//! follow until settled) and `ahead` (an open batch's subtrees proven early on the job queue).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tgrid_circuits::TaskProof;
use tgrid_settlement_proof::{BatchWrapper, KeySource, WrapKey, WrapVerifyingKey};
use tracing::{error, info, warn};

use crate::jobs::{JobQueue, QueueSettings};
use crate::service::health::RetryKind;
use crate::service::registry::RegistryFollower;
use crate::service::store::{BatchState, TaskRecord, TaskState};
use crate::service::{unix_now, ServiceError, Shared};
use crate::Aggregator;

mod ahead;
mod batching;
mod settlement;

use batching::OpenBatch;

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
                let queue_settings = QueueSettings {
                    url,
                    ack_wait: Duration::from_secs(settings.job_ack_wait_secs.max(1)),
                    job_deadline: Duration::from_secs(settings.job_deadline_secs.max(1)),
                };
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

    pub(super) fn store(&self) -> &crate::service::store::Store {
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

    pub(super) fn task(&self, id: &str) -> Result<TaskRecord> {
        self.store().task(&parse32(id)?)?.ok_or_else(|| ServiceError::Store(format!("no record for task {id}")))
    }

    pub(super) fn proof(&self, id: &str) -> Result<TaskProof> {
        let bytes =
            self.store().proof(&parse32(id)?)?.ok_or_else(|| ServiceError::Store(format!("no proof for task {id}")))?;
        TaskProof::from_bytes(&bytes).map_err(|e| ServiceError::Store(format!("stored proof of {id}: {e}")))
    }
}
