//! Durable state in sled: one record per task and per batch, written before anything is
//! acknowledged and flushed to disk (`flush_async`) before the acknowledgement leaves.
//!
//! Trees: `tasks` (task id → [`TaskRecord`] JSON), `proofs` (task id → .tgp bytes),
//! `leaf_proofs` (task id → the leaf proof its provider sent, checked at ingest), `outputs`
//! (task id → a public task's int8 output), `encrypted_outputs` (task id → a private task's
//! output encrypted to its poster: the sequencer never holds a private task's tensors),
//! `sealing_keys` (provider address → its signed sealing key, JSON), `batches` (batch id, big-endian u64 → [`BatchRecord`] JSON),
//! `meta` (`next_batch`), and the relay's `orders` (order hash → [`OrderRecord`] JSON) and
//! `order_nonces` (poster ‖ nonce → order hash: one listed order per nonce).
//!
//! In-memory indexes, rebuilt from the trees at open and kept in step by every write, spare the
//! pipeline and the relay a scan of every record ever stored: the queue of verified tasks
//! (nearest deadline first), the batches not yet settled or failed, and the listed orders by
//! model (nearest deadline first).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use alloy::primitives::B256;
use tgrid_chain::market::{Acceptance, SealingKeyAnnouncement};

use crate::service::ServiceError;

mod records;
#[cfg(test)]
mod tests;

pub use records::{BatchRecord, BatchState, OrderRecord, StoredOutput, TaskRecord, TaskState};

impl TaskRecord {
    /// Its place in the queue while it waits for a batch: nearest deadline, then oldest, first.
    fn queue_key(&self, id: &[u8; 32]) -> Option<QueueKey> {
        (self.state == TaskState::Verified).then_some((self.deadline, self.received_at, *id))
    }
}

type QueueKey = (u64, u64, [u8; 32]);

#[derive(Debug, Default)]
struct Indexes {
    queue: BTreeSet<QueueKey>,
    live_batches: BTreeSet<u64>,
    /// Listed orders per model: (deadline, hash).
    orders_by_model: BTreeMap<B256, BTreeSet<(u64, B256)>>,
    /// Accepted orders per provider: (deadline, hash).
    accepted_by: BTreeMap<alloy::primitives::Address, BTreeSet<(u64, B256)>>,
}

impl Indexes {
    fn index_order(&mut self, hash: B256, record: &OrderRecord) {
        let o = &record.signed.order;
        self.orders_by_model.entry(o.model_id).or_default().insert((o.deadline, hash));
        if let Some(a) = &record.acceptance {
            self.accepted_by.entry(a.provider).or_default().insert((o.deadline, hash));
        }
    }
}

/// Listed orders one page looks at, at most.
const MAX_SCANNED_PER_PAGE: usize = 20_000;

/// A page of listed orders and where the next page starts ([`Store::orders_of_model`]).
pub type OrderListing = (Vec<(B256, OrderRecord)>, Option<(u64, B256)>);

/// Which listed orders [`Store::orders_of_model`] returns.
#[derive(Clone, Copy, Debug)]
pub struct OrderPage {
    /// Orders whose deadline is before this are left out.
    pub not_before: u64,
    /// Where this page starts (`(deadline, hash)`, from the previous page's answer).
    pub from: Option<(u64, B256)>,
    /// Most orders returned.
    pub limit: usize,
    /// Most orders of one poster returned.
    pub per_poster: usize,
}

impl OrderPage {
    /// The first `limit` orders from `not_before` on, with no per-poster bound.
    pub fn first(not_before: u64, limit: usize) -> Self {
        Self { not_before, from: None, limit, per_poster: usize::MAX }
    }
}

/// What one [`Store::prune`] forgot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Tasks (with their proofs and outputs).
    pub tasks: usize,
    /// Batches.
    pub batches: usize,
    /// Listed orders.
    pub orders: usize,
}

/// The sled database.
#[derive(Clone, Debug)]
pub struct Store {
    db: sled::Db,
    tasks: sled::Tree,
    proofs: sled::Tree,
    leaf_proofs: sled::Tree,
    outputs: sled::Tree,
    encrypted_outputs: sled::Tree,
    sealing_keys: sled::Tree,
    batches: sled::Tree,
    meta: sled::Tree,
    orders: sled::Tree,
    order_nonces: sled::Tree,
    // Held across each write and its index update, so the two never disagree.
    indexes: Arc<Mutex<Indexes>>,
}

fn corrupt(what: &str, e: impl std::fmt::Display) -> ServiceError {
    ServiceError::Store(format!("corrupt {what} record: {e}"))
}

impl From<sled::Error> for ServiceError {
    fn from(e: sled::Error) -> Self {
        ServiceError::Store(e.to_string())
    }
}

impl Store {
    /// Opens (or creates) the database in `dir`.
    pub fn open(dir: &Path) -> Result<Self, ServiceError> {
        std::fs::create_dir_all(dir).map_err(|e| ServiceError::Store(format!("{}: {e}", dir.display())))?;
        let db = sled::open(dir).map_err(|e| ServiceError::Store(format!("{}: {e}", dir.display())))?;
        let store = Self {
            tasks: db.open_tree("tasks")?,
            proofs: db.open_tree("proofs")?,
            leaf_proofs: db.open_tree("leaf_proofs")?,
            outputs: db.open_tree("outputs")?,
            encrypted_outputs: db.open_tree("encrypted_outputs")?,
            sealing_keys: db.open_tree("sealing_keys")?,
            batches: db.open_tree("batches")?,
            meta: db.open_tree("meta")?,
            orders: db.open_tree("orders")?,
            order_nonces: db.open_tree("order_nonces")?,
            db,
            indexes: Arc::default(),
        };
        let mut indexes = Indexes::default();
        for entry in store.tasks.iter() {
            let (key, value) = entry?;
            let id: [u8; 32] = key.as_ref().try_into().map_err(|_| corrupt("task", "key is not 32 bytes"))?;
            let record: TaskRecord = serde_json::from_slice(&value).map_err(|e| corrupt("task", e))?;
            indexes.queue.extend(record.queue_key(&id));
        }
        for batch in store.batches()? {
            if batch.state.is_live() {
                indexes.live_batches.insert(batch.id);
            }
        }
        for entry in store.orders.iter() {
            let (key, value) = entry?;
            let hash = B256::try_from(key.as_ref()).map_err(|_| corrupt("order", "key is not 32 bytes"))?;
            let record: OrderRecord = serde_json::from_slice(&value).map_err(|e| corrupt("order", e))?;
            indexes.index_order(hash, &record);
        }
        *store.lock() = indexes;
        Ok(store)
    }

    fn lock(&self) -> MutexGuard<'_, Indexes> {
        self.indexes.lock().expect("store index lock")
    }

    /// Waits until everything written so far is on disk.
    pub async fn flush(&self) -> Result<(), ServiceError> {
        self.db.flush_async().await?;
        Ok(())
    }

    /// Same as [`flush`](Self::flush), blocking (pipeline thread).
    pub fn flush_blocking(&self) -> Result<(), ServiceError> {
        self.db.flush()?;
        Ok(())
    }

    /// A task's record.
    pub fn task(&self, id: &[u8; 32]) -> Result<Option<TaskRecord>, ServiceError> {
        self.tasks.get(id)?.map(|v| serde_json::from_slice(&v).map_err(|e| corrupt("task", e))).transpose()
    }

    /// A task's proof file.
    pub fn proof(&self, id: &[u8; 32]) -> Result<Option<Vec<u8>>, ServiceError> {
        Ok(self.proofs.get(id)?.map(|v| v.to_vec()))
    }

    /// The leaf proof a task's provider sent with its result, if it sent one.
    pub fn leaf_proof(&self, id: &[u8; 32]) -> Result<Option<Vec<u8>>, ServiceError> {
        Ok(self.leaf_proofs.get(id)?.map(|v| v.to_vec()))
    }

    /// A task's output: int8 for a public task, encrypted for a private one.
    pub fn output(&self, id: &[u8; 32]) -> Result<Option<StoredOutput>, ServiceError> {
        if let Some(v) = self.outputs.get(id)? {
            return Ok(Some(StoredOutput::Plain(v.iter().map(|&b| b as i8).collect())));
        }
        Ok(self.encrypted_outputs.get(id)?.map(|v| StoredOutput::Encrypted(v.to_vec())))
    }

    /// Stores a new result atomically (record, proof, the provider's leaf proof if any, output);
    /// the caller flushes.
    pub fn insert_result(
        &self,
        id: &[u8; 32],
        record: &TaskRecord,
        proof: &[u8],
        leaf_proof: Option<&[u8]>,
        output: &StoredOutput,
    ) -> Result<(), ServiceError> {
        use sled::Transactional;
        let record_key = record.queue_key(id);
        let record = serde_json::to_vec(record).expect("records serialize");
        let (plain, encrypted): (Option<Vec<u8>>, Option<&[u8]>) = match output {
            StoredOutput::Plain(o) => (Some(o.iter().map(|&v| v as u8).collect()), None),
            StoredOutput::Encrypted(e) => (None, Some(e)),
        };
        let mut indexes = self.lock();
        let previous = self.task(id)?;
        (&self.tasks, &self.proofs, &self.leaf_proofs, &self.outputs, &self.encrypted_outputs)
            .transaction(|(t, p, l, o, eo)| {
                t.insert(&id[..], record.as_slice())?;
                p.insert(&id[..], proof)?;
                // A replaced result's leaf is not this proof's.
                match leaf_proof {
                    Some(leaf) => l.insert(&id[..], leaf).map(drop)?,
                    None => l.remove(&id[..]).map(drop)?,
                }
                // A replaced (dropped) result leaves nothing of the earlier output behind.
                match (&plain, encrypted) {
                    (Some(plain), _) => {
                        o.insert(&id[..], plain.as_slice())?;
                        eo.remove(&id[..])?;
                    }
                    (None, Some(encrypted)) => {
                        eo.insert(&id[..], encrypted)?;
                        o.remove(&id[..])?;
                    }
                    (None, None) => unreachable!("an output is plain or encrypted"),
                }
                Ok::<_, sled::transaction::ConflictableTransactionError<()>>(())
            })
            .map_err(|e| ServiceError::Store(format!("{e:?}")))?;
        if let Some(old) = previous.and_then(|p| p.queue_key(id)) {
            indexes.queue.remove(&old);
        }
        indexes.queue.extend(record_key);
        Ok(())
    }

    /// A provider's sealing key, as it announced it.
    pub fn sealing_key(&self, provider: &[u8; 20]) -> Result<Option<SealingKeyAnnouncement>, ServiceError> {
        self.sealing_keys
            .get(provider)?
            .map(|v| serde_json::from_slice(&v).map_err(|e| corrupt("sealing key", e)))
            .transpose()
    }

    /// Keeps `announcement` unless the provider's stored one was issued later; returns the one kept.
    pub fn put_sealing_key(
        &self,
        announcement: &SealingKeyAnnouncement,
    ) -> Result<SealingKeyAnnouncement, ServiceError> {
        let key = announcement.provider.0 .0;
        let new = serde_json::to_vec(announcement).expect("announcements serialize");
        // Compare-and-swap: two announcements racing never leave the older one.
        loop {
            let current = self.sealing_keys.get(key)?;
            if let Some(bytes) = &current {
                let stored: SealingKeyAnnouncement =
                    serde_json::from_slice(bytes).map_err(|e| corrupt("sealing key", e))?;
                if stored.issued_at >= announcement.issued_at {
                    return Ok(stored);
                }
            }
            if self.sealing_keys.compare_and_swap(key, current, Some(new.as_slice()))?.is_ok() {
                return Ok(*announcement);
            }
        }
    }

    /// Overwrites a task's state.
    pub fn set_task_state(&self, id: &[u8; 32], state: TaskState) -> Result<(), ServiceError> {
        self.update_task(id, |record| record.state = state)
    }

    /// Changes a task's record (its state, its count of failed batches) and its queue entry.
    pub fn update_task(&self, id: &[u8; 32], change: impl FnOnce(&mut TaskRecord)) -> Result<(), ServiceError> {
        let mut indexes = self.lock();
        let mut record = self.task(id)?.ok_or_else(|| ServiceError::Store(format!("no task 0x{}", hex::encode(id))))?;
        let old = record.queue_key(id);
        change(&mut record);
        self.tasks.insert(id, serde_json::to_vec(&record).expect("records serialize"))?;
        if let Some(old) = old {
            indexes.queue.remove(&old);
        }
        indexes.queue.extend(record.queue_key(id));
        Ok(())
    }

    /// The verified task that goes into a batch next: nearest deadline, then oldest.
    pub fn next_queued(&self) -> Result<Option<TaskRecord>, ServiceError> {
        let first = self.lock().queue.first().copied();
        match first {
            Some((_, _, id)) => self.task(&id),
            None => Ok(None),
        }
    }

    /// Every verified task waiting for a batch, in the order they go into batches.
    pub fn queued(&self) -> Result<Vec<TaskRecord>, ServiceError> {
        let ids: Vec<[u8; 32]> = self.lock().queue.iter().map(|(_, _, id)| *id).collect();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            out.extend(self.task(&id)?);
        }
        Ok(out)
    }

    /// Number of verified tasks waiting for a batch.
    pub fn queued_count(&self) -> usize {
        self.lock().queue.len()
    }

    /// A batch.
    pub fn batch(&self, id: u64) -> Result<Option<BatchRecord>, ServiceError> {
        self.batches
            .get(id.to_be_bytes())?
            .map(|v| serde_json::from_slice(&v).map_err(|e| corrupt("batch", e)))
            .transpose()
    }

    /// Writes a batch record.
    pub fn put_batch(&self, batch: &BatchRecord) -> Result<(), ServiceError> {
        let mut indexes = self.lock();
        self.batches.insert(batch.id.to_be_bytes(), serde_json::to_vec(batch).expect("records serialize"))?;
        if batch.state.is_live() {
            indexes.live_batches.insert(batch.id);
        } else {
            indexes.live_batches.remove(&batch.id);
        }
        Ok(())
    }

    /// Every batch, oldest first.
    pub fn batches(&self) -> Result<Vec<BatchRecord>, ServiceError> {
        self.batches.iter().values().map(|v| serde_json::from_slice(&v?).map_err(|e| corrupt("batch", e))).collect()
    }

    /// The batches not yet settled or failed, oldest first.
    pub fn live_batches(&self) -> Result<Vec<BatchRecord>, ServiceError> {
        let ids: Vec<u64> = self.lock().live_batches.iter().copied().collect();
        ids.into_iter()
            .map(|id| self.batch(id)?.ok_or_else(|| ServiceError::Store(format!("batch {id} is indexed but missing"))))
            .collect()
    }

    /// A listed order.
    pub fn order(&self, hash: &B256) -> Result<Option<OrderRecord>, ServiceError> {
        self.orders.get(hash)?.map(|v| serde_json::from_slice(&v).map_err(|e| corrupt("order", e))).transpose()
    }

    /// The order listed for `poster`'s `nonce`, if any.
    pub fn order_for_nonce(
        &self,
        poster: &alloy::primitives::Address,
        nonce: u64,
    ) -> Result<Option<B256>, ServiceError> {
        let mut key = poster.to_vec();
        key.extend(nonce.to_be_bytes());
        Ok(self.order_nonces.get(key)?.and_then(|v| B256::try_from(v.as_ref()).ok()))
    }

    /// Lists an order, or updates its record (the acceptance); the caller flushes. Refuses a
    /// different order for a nonce already listed: one poster nonce, one order.
    pub fn put_order(&self, hash: &B256, record: &OrderRecord) -> Result<(), ServiceError> {
        let o = &record.signed.order;
        let mut nonce_key = o.poster.to_vec();
        nonce_key.extend(o.nonce.to_be_bytes());
        let mut indexes = self.lock();
        match self.order_nonces.get(&nonce_key)? {
            Some(existing) if existing.as_ref() != hash.as_slice() => {
                return Err(ServiceError::Rejected(format!(
                    "poster {} already listed another order ({}) for nonce {}",
                    o.poster,
                    B256::try_from(existing.as_ref()).unwrap_or_default(),
                    o.nonce
                )))
            }
            _ => {}
        }
        self.order_nonces.insert(nonce_key, hash.as_slice())?;
        self.orders.insert(hash, serde_json::to_vec(record).expect("records serialize"))?;
        indexes.index_order(*hash, record);
        Ok(())
    }

    /// Records `acceptance` on its listed order unless another provider's is there: the check
    /// and the write are one step under the index lock, so of two racing acceptances exactly one
    /// is recorded. Returns the acceptance the order holds afterwards (the caller flushes).
    pub fn record_acceptance(&self, hash: &B256, acceptance: &Acceptance) -> Result<Acceptance, ServiceError> {
        let mut indexes = self.lock();
        let mut record = self.order(hash)?.ok_or_else(|| ServiceError::Store(format!("no order {hash} is listed")))?;
        if let Some(existing) = &record.acceptance {
            return Ok(existing.clone());
        }
        record.acceptance = Some(acceptance.clone());
        self.orders.insert(hash, serde_json::to_vec(&record).expect("records serialize"))?;
        indexes.index_order(*hash, &record);
        Ok(acceptance.clone())
    }

    /// Orders `provider` accepted whose deadline is at or after `not_before`.
    pub fn accepted_by(
        &self,
        provider: &alloy::primitives::Address,
        not_before: u64,
    ) -> Result<Vec<(B256, OrderRecord)>, ServiceError> {
        let keys: Vec<B256> = self
            .lock()
            .accepted_by
            .get(provider)
            .map(|set| set.range((not_before, B256::ZERO)..).map(|(_, h)| *h).collect())
            .unwrap_or_default();
        keys.into_iter().filter_map(|h| self.order(&h).transpose().map(|r| r.map(|r| (h, r)))).collect()
    }

    /// Listed orders of `model` whose deadline is at or after `not_before` (and, for a later
    /// page, whose `(deadline, hash)` is at or after `page.from`), nearest deadline first, at
    /// most `limit`, at most `per_poster` of any one poster, keeping those `keep` accepts: one
    /// poster's thousand orders cannot fill a page that others' orders share. Also returns where
    /// the next page starts: the first order this page passed over for its poster's bound, else
    /// the first it did not reach (`None`: nothing more). A later page may repeat an order.
    pub fn orders_of_model(
        &self,
        model: &B256,
        page: OrderPage,
        mut keep: impl FnMut(&B256, &OrderRecord) -> bool,
    ) -> Result<OrderListing, ServiceError> {
        let from = page.from.filter(|&f| f >= (page.not_before, B256::ZERO)).unwrap_or((page.not_before, B256::ZERO));
        // A bounded look: a page passing over one poster's many orders costs a bounded scan.
        let keys: Vec<(u64, B256)> = self
            .lock()
            .orders_by_model
            .get(model)
            .map(|set| set.range(from..).take(MAX_SCANNED_PER_PAGE + 1).copied().collect())
            .unwrap_or_default();
        let mut out = Vec::new();
        let mut shown_per_poster: std::collections::HashMap<alloy::primitives::Address, usize> = Default::default();
        let mut passed_over = None;
        for (scanned, key) in keys.iter().enumerate() {
            if out.len() >= page.limit || scanned == MAX_SCANNED_PER_PAGE {
                return Ok((out, passed_over.or(Some(*key))));
            }
            if let Some(record) = self.order(&key.1)? {
                let shown = shown_per_poster.entry(record.signed.order.poster).or_default();
                if *shown >= page.per_poster {
                    passed_over.get_or_insert(*key);
                } else if keep(&key.1, &record) {
                    *shown += 1;
                    out.push((key.1, record));
                }
            }
        }
        Ok((out, passed_over))
    }

    /// Forgets what is past its retention: a settled or dropped task whose deadline is before
    /// `deadline_before` (its record, proof, leaf proof and output), a batch no longer live once
    /// every task it lists is forgotten (a batch and its tasks go together, so a kept batch can
    /// still prove each member), and a listed order whose deadline is before `deadline_before`
    /// and whose task, if any, is forgotten. A task still waiting for a batch or in one is kept
    /// whatever its deadline: the pipeline decides its fate.
    pub fn prune(&self, deadline_before: u64) -> Result<Pruned, ServiceError> {
        let mut prunable = std::collections::HashSet::new();
        for entry in self.tasks.iter() {
            let (key, value) = entry?;
            let record: TaskRecord = serde_json::from_slice(&value).map_err(|e| corrupt("task", e))?;
            let terminal = matches!(record.state, TaskState::Settled { .. } | TaskState::Dropped { .. });
            if terminal && record.deadline < deadline_before {
                let id: [u8; 32] = key.as_ref().try_into().map_err(|_| corrupt("task", "key is not 32 bytes"))?;
                prunable.insert(id);
            }
        }
        let mut pruned = Pruned::default();
        for batch in self.batches()? {
            if batch.state.is_live() {
                continue;
            }
            let ids: Vec<[u8; 32]> = batch.tasks.iter().filter_map(|t| crate::service::bytes::<32>(t).ok()).collect();
            let all_gone = ids.iter().all(|id| prunable.contains(id) || !self.tasks.contains_key(id).unwrap_or(true));
            if all_gone {
                self.batches.remove(batch.id.to_be_bytes())?;
                pruned.batches += 1;
            } else {
                for id in &ids {
                    prunable.remove(id);
                }
            }
        }
        let mut indexes = self.lock();
        for id in &prunable {
            for tree in [&self.tasks, &self.proofs, &self.leaf_proofs, &self.outputs, &self.encrypted_outputs] {
                tree.remove(id)?;
            }
            pruned.tasks += 1;
        }
        let mut old_orders = Vec::new();
        for entry in self.orders.iter() {
            let (key, value) = entry?;
            let record: OrderRecord = serde_json::from_slice(&value).map_err(|e| corrupt("order", e))?;
            let hash = B256::try_from(key.as_ref()).map_err(|_| corrupt("order", "key is not 32 bytes"))?;
            if record.signed.order.deadline < deadline_before && !self.tasks.contains_key(hash)? {
                old_orders.push((hash, record));
            }
        }
        for (hash, record) in old_orders {
            let o = &record.signed.order;
            let mut nonce_key = o.poster.to_vec();
            nonce_key.extend(o.nonce.to_be_bytes());
            self.order_nonces.remove(nonce_key)?;
            self.orders.remove(hash)?;
            if let Some(set) = indexes.orders_by_model.get_mut(&o.model_id) {
                set.remove(&(o.deadline, hash));
                if set.is_empty() {
                    indexes.orders_by_model.remove(&o.model_id);
                }
            }
            if let Some(a) = &record.acceptance {
                if let Some(set) = indexes.accepted_by.get_mut(&a.provider) {
                    set.remove(&(o.deadline, hash));
                    if set.is_empty() {
                        indexes.accepted_by.remove(&a.provider);
                    }
                }
            }
            pruned.orders += 1;
        }
        Ok(pruned)
    }

    /// Allocates the next batch id.
    pub fn next_batch_id(&self) -> Result<u64, ServiceError> {
        let next = self.meta.update_and_fetch("next_batch", |old| {
            let n = old.and_then(|b| <[u8; 8]>::try_from(b).ok()).map(u64::from_be_bytes).unwrap_or(0);
            Some((n + 1).to_be_bytes().to_vec())
        })?;
        let bytes: [u8; 8] =
            next.as_deref().and_then(|b| b.try_into().ok()).ok_or_else(|| corrupt("meta", "next_batch"))?;
        Ok(u64::from_be_bytes(bytes))
    }
}
