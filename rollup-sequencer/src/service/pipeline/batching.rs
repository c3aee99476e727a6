//! Building batches: a verified task joins the open batch with its leaf (its provider's, proven
//! here, or queued for a worker); the batch closes when full, old or urgent and is aggregated
//! in-process or on the job queue; a batch interrupted while proving is re-proven after a restart.

use tgrid_circuits::TaskProof;
use tracing::{info, warn};

use super::ahead::AheadJobs;
use super::{parse32, Result, Worker};
use crate::service::store::{BatchRecord, BatchState, TaskRecord, TaskState};
use crate::service::{unix_now, ServiceError};
use crate::{Aggregator, IncrementalTree};

/// The batch tasks are joining: its stored record, its tasks' deadlines, and its leaves (merged
/// as they arrive in-process, or handed to the job queue).
pub(super) struct OpenBatch<'a> {
    pub(super) record: BatchRecord,
    pub(super) deadlines: Vec<u64>,
    tree: IncrementalTree<'a>,
    /// The most tasks it takes: the setting, or the market's `maxBatchSize` when smaller (read
    /// when the batch opens, so a governance change applies to the next batch).
    pub(super) max_tasks: usize,
    /// With a job queue: its complete aligned blocks being proven by the workers.
    pub(super) ahead: AheadJobs,
    /// With a job queue: each task's proof and, if its provider sent a valid one, its leaf
    /// proof, in task order, as checked when the task joined (under this batch's registry), so
    /// that handing blocks to the workers neither reloads nor re-checks them.
    pub(super) joined: Vec<JoinedTask>,
}

/// A task of the open batch as it joined: see [`OpenBatch::joined`].
pub(super) struct JoinedTask {
    pub(super) proof: TaskProof,
    pub(super) provider_leaf: Option<tgrid_aggregation::SubtreeProof>,
}

/// Where a joining task's leaf went.
pub(super) enum JoinedLeaf {
    /// Proven (or its provider's, checked) in this process: it goes into the incremental tree.
    Here(tgrid_aggregation::TaskLeaf, tgrid_aggregation::SubtreeProof),
    /// With a job queue: its provider's leaf proof, checked.
    Provided(tgrid_aggregation::SubtreeProof),
    /// With a job queue: its leaf job is queued.
    Queued,
}

impl<'a> OpenBatch<'a> {
    pub(super) fn new(record: BatchRecord, aggregator: &'a Aggregator, max_tasks: usize) -> Self {
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
    pub(super) fn join(&mut self, task_id: String, deadline: u64, proof: TaskProof, leaf: JoinedLeaf) -> Result<()> {
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

impl Worker {
    /// Closes the open batch: stored as proving (a crash from here re-proves it), aggregated, wrapped.
    pub(super) fn close(&mut self, open: OpenBatch<'_>) -> Result<()> {
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
    pub(super) fn leaf_now(
        &self,
        aggregator: &Aggregator,
        task_id: &[u8; 32],
        proof: &TaskProof,
    ) -> Result<JoinedLeaf> {
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
    pub(super) fn batch_limit(&self) -> Result<usize> {
        let on_chain = self.rt.block_on(self.shared.chain.parameters())?.maxBatchSize;
        let on_chain = on_chain.saturating_to::<usize>().max(1);
        Ok(self.shared.settings.max_batch_tasks.min(on_chain))
    }

    pub(super) fn add_to_open_batch<'a>(
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
    pub(super) fn batch_under_previous(&mut self, current: &Aggregator) -> Result<bool> {
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
    pub(super) fn unlisted(&self, aggregator: &Aggregator, task: &TaskRecord) -> Option<String> {
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

    pub(super) fn prove_after_restart(&mut self, aggregator: &Aggregator, record: BatchRecord) -> Result<()> {
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
}
