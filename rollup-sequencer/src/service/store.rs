//! Durable state in sled: one record per task and per batch, written before anything is
//! acknowledged and flushed to disk (`flush_async`) before the acknowledgement leaves.
//!
//! Trees: `tasks` (task id → [`TaskRecord`] JSON), `proofs` (task id → .tgp bytes),
//! `leaf_proofs` (task id → the leaf proof its provider sent, checked at ingest), `outputs`
//! (task id → a public task's int8 output), `sealed_outputs` (task id → a private task's output
//! sealed to its poster, `.tgs`: the sequencer never holds a private task's tensors),
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
use serde::{Deserialize, Serialize};
use tgrid_chain::market::{Acceptance, SealingKeyAnnouncement, SignedDelivery, SignedOrder};

use crate::service::ServiceError;

/// What became of an acknowledged task. Proving and submission progress lives in its batch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum TaskState {
    /// Checked and waiting for a batch.
    Verified,
    /// In a batch (see the batch's state).
    Batched {
        /// The batch.
        batch: u64,
    },
    /// Settled on-chain.
    Settled {
        /// The batch that settled it (`None`: settled by a batch this sequencer did not track).
        batch: Option<u64>,
        /// The settling transaction, when known.
        tx: Option<String>,
        /// Why the poster's book did not pay it, if it did not (the provider can no longer be
        /// disputed for it all the same).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unpaid: Option<String>,
    },
    /// Accepted once, then could not be settled (e.g. its deadline passed before settlement).
    Dropped {
        /// Why.
        reason: String,
    },
}

/// An acknowledged task result.
// No `deny_unknown_fields`: serde does not support it together with `flatten`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// 0x-prefixed task id.
    pub task_id: String,
    /// 0x-prefixed provider address.
    pub provider: String,
    /// 0x-prefixed model id.
    pub model_id: String,
    /// 0x-prefixed input commitment.
    pub input_commitment: String,
    /// 0x-prefixed output commitment.
    pub output_commitment: String,
    /// Task deadline (unix seconds, from the order).
    pub deadline: u64,
    /// When the result was acknowledged (unix seconds).
    pub received_at: u64,
    /// The signed order (its hash is the task id).
    pub order: SignedOrder,
    /// The provider's acceptance of it.
    pub acceptance: Acceptance,
    /// keccak256 of the stored proof's bytes (what the receipt acknowledges); `None` in records
    /// written before receipts existed.
    #[serde(default)]
    pub proof_digest: Option<B256>,
    /// Batches holding it that were given up (it went back to the queue each time).
    #[serde(default)]
    pub failed_batches: u32,
    /// A private task's delivery as the provider signed it (its output is stored sealed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed_delivery: Option<SignedDelivery>,
    /// Where it is.
    #[serde(flatten)]
    pub state: TaskState,
}

/// An order listed in the relay.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrderRecord {
    /// The signed order.
    pub signed: SignedOrder,
    /// The first acceptance recorded.
    pub acceptance: Option<Acceptance>,
    /// When it was listed (unix seconds).
    pub listed_at: u64,
}

/// Where a batch is. The pipeline moves every batch forward from any of these after a restart.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum BatchState {
    /// Taking tasks; leaf proofs are merged as tasks join.
    Open,
    /// Closed: aggregating and wrapping.
    Proving,
    /// Proven; the settlement proof file (JSON) is ready to submit.
    Proven {
        /// `tgrid-settlement-proof` file.
        proof: String,
    },
    /// A transaction is out. Every hash sent for this nonce is kept: any of them may be mined.
    Submitted {
        /// The settlement proof file.
        proof: String,
        /// Nonce of the transactions.
        nonce: u64,
        /// Hashes sent, oldest first (each gas bump adds one).
        txs: Vec<String>,
        /// Raw signed transaction of the last hash (re-sent after a restart).
        raw: String,
        /// Max fee per gas of the last transaction (wei, decimal: JSON through serde's
        /// `flatten` cannot carry u128).
        max_fee_per_gas: String,
        /// Priority fee of the last transaction (wei, decimal).
        max_priority_fee_per_gas: String,
        /// When the last transaction was sent (unix seconds).
        sent_at: u64,
    },
    /// Settled with the required confirmations.
    Settled {
        /// The transaction that settled it.
        tx: String,
        /// Its block.
        block: u64,
        /// Gas it used.
        gas_used: u64,
    },
    /// Abandoned; its tasks went back to the queue or were dropped.
    Failed {
        /// Why.
        reason: String,
    },
}

/// A batch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchRecord {
    /// Sequence number.
    pub id: u64,
    /// Task ids (0x hex), in batch order.
    pub tasks: Vec<String>,
    /// When the batch opened (unix seconds).
    pub opened_at: u64,
    /// When it closed (unix seconds).
    pub closed_at: Option<u64>,
    /// Where it is.
    #[serde(flatten)]
    pub state: BatchState,
}

impl TaskRecord {
    /// Its place in the queue while it waits for a batch: nearest deadline, then oldest, first.
    fn queue_key(&self, id: &[u8; 32]) -> Option<QueueKey> {
        (self.state == TaskState::Verified).then_some((self.deadline, self.received_at, *id))
    }
}

impl BatchState {
    /// Whether the pipeline still has work on a batch in this state.
    pub fn is_live(&self) -> bool {
        !matches!(self, BatchState::Settled { .. } | BatchState::Failed { .. })
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

/// A result's output as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoredOutput {
    /// A public task's int8 output.
    Plain(Vec<i8>),
    /// A private task's output sealed to its poster (`.tgs` bytes).
    Sealed(Vec<u8>),
}

/// The sled database.
#[derive(Clone, Debug)]
pub struct Store {
    db: sled::Db,
    tasks: sled::Tree,
    proofs: sled::Tree,
    leaf_proofs: sled::Tree,
    outputs: sled::Tree,
    sealed_outputs: sled::Tree,
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
            sealed_outputs: db.open_tree("sealed_outputs")?,
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

    /// A task's output: int8 for a public task, sealed for a private one.
    pub fn output(&self, id: &[u8; 32]) -> Result<Option<StoredOutput>, ServiceError> {
        if let Some(v) = self.outputs.get(id)? {
            return Ok(Some(StoredOutput::Plain(v.iter().map(|&b| b as i8).collect())));
        }
        Ok(self.sealed_outputs.get(id)?.map(|v| StoredOutput::Sealed(v.to_vec())))
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
        let (plain, sealed): (Option<Vec<u8>>, Option<&[u8]>) = match output {
            StoredOutput::Plain(o) => (Some(o.iter().map(|&v| v as u8).collect()), None),
            StoredOutput::Sealed(s) => (None, Some(s)),
        };
        let mut indexes = self.lock();
        let previous = self.task(id)?;
        (&self.tasks, &self.proofs, &self.leaf_proofs, &self.outputs, &self.sealed_outputs)
            .transaction(|(t, p, l, o, so)| {
                t.insert(&id[..], record.as_slice())?;
                p.insert(&id[..], proof)?;
                // A replaced result's leaf is not this proof's.
                match leaf_proof {
                    Some(leaf) => l.insert(&id[..], leaf).map(drop)?,
                    None => l.remove(&id[..]).map(drop)?,
                }
                // A replaced (dropped) result leaves nothing of the earlier output behind.
                match (&plain, sealed) {
                    (Some(plain), _) => {
                        o.insert(&id[..], plain.as_slice())?;
                        so.remove(&id[..])?;
                    }
                    (None, Some(sealed)) => {
                        so.insert(&id[..], sealed)?;
                        o.remove(&id[..])?;
                    }
                    (None, None) => unreachable!("an output is plain or sealed"),
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

    /// Listed orders of `model` whose deadline is at or after `not_before`, nearest deadline
    /// first, at most `limit`, keeping those `keep` accepts.
    pub fn orders_of_model(
        &self,
        model: &B256,
        not_before: u64,
        limit: usize,
        mut keep: impl FnMut(&B256, &OrderRecord) -> bool,
    ) -> Result<Vec<(B256, OrderRecord)>, ServiceError> {
        let keys: Vec<B256> = self
            .lock()
            .orders_by_model
            .get(model)
            .map(|set| set.range((not_before, B256::ZERO)..).map(|(_, h)| *h).collect())
            .unwrap_or_default();
        let mut out = Vec::new();
        for hash in keys {
            if out.len() >= limit {
                break;
            }
            if let Some(record) = self.order(&hash)? {
                if keep(&hash, &record) {
                    out.push((hash, record));
                }
            }
        }
        Ok(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    use alloy::primitives::Address;
    use alloy::signers::local::PrivateKeySigner;
    use tgrid_chain::market::{MarketDomain, Order};

    fn signed(nonce: u64, model: u8, deadline: u64) -> SignedOrder {
        let key = PrivateKeySigner::from_bytes(&B256::repeat_byte(0x42)).unwrap();
        let order = Order {
            poster: key.address(),
            provider: Address::ZERO,
            model_id: B256::repeat_byte(model),
            input_commitment: B256::repeat_byte(2),
            payment: 1,
            collateral: 1,
            deadline,
            nonce,
            slash_bps: 0,
            poster_share_bps: 0,
        };
        let domain = MarketDomain { chain_id: 1, market: Address::ZERO };
        SignedOrder::sign(order, &key, &domain).unwrap()
    }

    fn record(id: u8) -> TaskRecord {
        let key = PrivateKeySigner::from_bytes(&B256::repeat_byte(0x43)).unwrap();
        let domain = MarketDomain { chain_id: 1, market: Address::ZERO };
        TaskRecord {
            task_id: format!("0x{}", hex::encode([id; 32])),
            provider: format!("0x{}", hex::encode([7u8; 20])),
            model_id: "0x01".into(),
            input_commitment: "0x02".into(),
            output_commitment: "0x03".into(),
            deadline: 100,
            received_at: 1,
            order: signed(u64::from(id), 1, 100),
            acceptance: Acceptance::sign(B256::repeat_byte(id), &key, &domain).unwrap(),
            proof_digest: Some(B256::repeat_byte(4)),
            failed_batches: 0,
            sealed_delivery: None,
            state: TaskState::Verified,
        }
    }

    fn plain(values: &[i8]) -> StoredOutput {
        StoredOutput::Plain(values.to_vec())
    }

    #[test]
    fn the_relay_lists_orders_by_model_and_deadline_one_per_nonce() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            for (nonce, model, deadline) in [(1u64, 1u8, 300u64), (2, 1, 100), (3, 2, 200), (4, 1, 50)] {
                let order = signed(nonce, model, deadline);
                let record = OrderRecord { signed: order, acceptance: None, listed_at: 1 };
                store.put_order(&B256::repeat_byte(nonce as u8), &record).unwrap();
            }
            // Another order for a listed nonce is refused; the same one again is fine.
            let other = OrderRecord { signed: signed(2, 1, 999), acceptance: None, listed_at: 1 };
            assert!(store.put_order(&B256::repeat_byte(0x99), &other).is_err());
            let again = store.order(&B256::repeat_byte(2)).unwrap().unwrap();
            store.put_order(&B256::repeat_byte(2), &again).unwrap();
            store.flush_blocking().unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        let listed = store.orders_of_model(&B256::repeat_byte(1), 60, 10, |_, _| true).unwrap();
        let deadlines: Vec<u64> = listed.iter().map(|(_, r)| r.signed.order.deadline).collect();
        assert_eq!(deadlines, vec![100, 300], "nearest deadline first, expired ones left out");
        assert_eq!(store.orders_of_model(&B256::repeat_byte(1), 0, 1, |_, _| true).unwrap().len(), 1);
        let poster = signed(1, 1, 1).order.poster;
        assert_eq!(store.order_for_nonce(&poster, 3).unwrap(), Some(B256::repeat_byte(3)));
        assert_eq!(store.order_for_nonce(&poster, 9).unwrap(), None);
    }

    #[test]
    fn records_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            store.insert_result(&[1; 32], &record(1), b"proof", None, &plain(&[-3, 0, 127])).unwrap();
            store.set_task_state(&[1; 32], TaskState::Batched { batch: 1 }).unwrap();
            assert_eq!(store.next_batch_id().unwrap(), 1);
            assert_eq!(store.next_batch_id().unwrap(), 2);
            store
                .put_batch(&BatchRecord {
                    id: 2,
                    tasks: vec![record(1).task_id],
                    opened_at: 5,
                    closed_at: None,
                    state: BatchState::Open,
                })
                .unwrap();
            store.flush_blocking().unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        let task = store.task(&[1; 32]).unwrap().unwrap();
        assert_eq!(task.state, TaskState::Batched { batch: 1 });
        assert_eq!(store.proof(&[1; 32]).unwrap().unwrap(), b"proof");
        assert_eq!(store.output(&[1; 32]).unwrap().unwrap(), plain(&[-3, 0, 127]));
        assert_eq!(store.batches().unwrap()[0].state, BatchState::Open);
        assert_eq!(store.next_batch_id().unwrap(), 3);
        assert!(store.task(&[2; 32]).unwrap().is_none());
    }

    #[test]
    fn a_private_output_is_kept_sealed_and_replaces_any_earlier_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.insert_result(&[1; 32], &record(1), b"p", None, &plain(&[5])).unwrap();
        let sealed = StoredOutput::Sealed(b"TGRIDSEL...".to_vec());
        store.insert_result(&[1; 32], &record(1), b"p", None, &sealed).unwrap();
        assert_eq!(store.output(&[1; 32]).unwrap(), Some(sealed));
        assert!(store.outputs.get([1; 32]).unwrap().is_none(), "no plaintext left behind");
    }

    #[test]
    fn a_providers_leaf_proof_is_kept_with_its_result_and_not_with_a_replacement() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.insert_result(&[1; 32], &record(1), b"p", Some(b"leaf"), &plain(&[5])).unwrap();
        assert_eq!(store.leaf_proof(&[1; 32]).unwrap().as_deref(), Some(&b"leaf"[..]));
        // A dropped result replaced by one without a leaf proof keeps no leaf of the old proof.
        store.insert_result(&[1; 32], &record(1), b"q", None, &plain(&[5])).unwrap();
        assert_eq!(store.leaf_proof(&[1; 32]).unwrap(), None);
        assert_eq!(store.leaf_proof(&[2; 32]).unwrap(), None);
    }

    #[test]
    fn the_newest_sealing_key_of_a_provider_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let provider = PrivateKeySigner::random();
        let domain = MarketDomain { chain_id: 1, market: Address::ZERO };
        let announce =
            |key: u8, at: u64| SealingKeyAnnouncement::sign(B256::repeat_byte(key), at, &provider, &domain).unwrap();
        let id = provider.address().0 .0;
        assert_eq!(store.sealing_key(&id).unwrap(), None);
        assert_eq!(store.put_sealing_key(&announce(1, 10)).unwrap(), announce(1, 10));
        assert_eq!(store.put_sealing_key(&announce(2, 20)).unwrap(), announce(2, 20));
        // A replay of the older key does not take the newer one's place.
        assert_eq!(store.put_sealing_key(&announce(1, 10)).unwrap(), announce(2, 20));
        assert_eq!(store.sealing_key(&id).unwrap(), Some(announce(2, 20)));
    }

    #[test]
    fn the_queue_and_live_batches_follow_every_write_and_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let batch = |id, state| BatchRecord { id, tasks: vec![], opened_at: 1, closed_at: None, state };
        {
            let store = Store::open(dir.path()).unwrap();
            // Deadlines 300, 100, 200: the queue hands out 100 first, whatever the arrival order.
            for (id, deadline) in [(1u8, 300), (2, 100), (3, 200)] {
                store
                    .insert_result(&[id; 32], &TaskRecord { deadline, ..record(id) }, b"p", None, &plain(&[]))
                    .unwrap();
            }
            assert_eq!(store.queued_count(), 3);
            assert_eq!(store.next_queued().unwrap().unwrap().deadline, 100);
            store.set_task_state(&[2; 32], TaskState::Batched { batch: 1 }).unwrap();
            assert_eq!(store.next_queued().unwrap().unwrap().deadline, 200);
            store.set_task_state(&[3; 32], TaskState::Dropped { reason: "x".into() }).unwrap();
            assert_eq!(store.queued_count(), 1);
            // A failed batch puts its task back in the queue, counted.
            store
                .update_task(&[2; 32], |t| {
                    t.failed_batches += 1;
                    t.state = TaskState::Verified;
                })
                .unwrap();
            assert_eq!(store.next_queued().unwrap().unwrap().deadline, 100);
            assert_eq!(store.task(&[2; 32]).unwrap().unwrap().failed_batches, 1);
            // A dropped task resubmitted is queued again, once.
            store.insert_result(&[3; 32], &TaskRecord { deadline: 200, ..record(3) }, b"p", None, &plain(&[])).unwrap();
            store.insert_result(&[3; 32], &TaskRecord { deadline: 200, ..record(3) }, b"p", None, &plain(&[])).unwrap();
            assert_eq!(store.queued_count(), 3);

            store.put_batch(&batch(1, BatchState::Open)).unwrap();
            store.put_batch(&batch(2, BatchState::Proving)).unwrap();
            store.put_batch(&batch(3, BatchState::Failed { reason: "x".into() })).unwrap();
            store.put_batch(&batch(1, BatchState::Settled { tx: "0x01".into(), block: 1, gas_used: 1 })).unwrap();
            let live: Vec<u64> = store.live_batches().unwrap().iter().map(|b| b.id).collect();
            assert_eq!(live, vec![2]);
            store.flush_blocking().unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.queued_count(), 3);
        assert_eq!(store.next_queued().unwrap().unwrap().deadline, 100);
        assert_eq!(store.task(&[2; 32]).unwrap().unwrap().failed_batches, 1);
        let live: Vec<u64> = store.live_batches().unwrap().iter().map(|b| b.id).collect();
        assert_eq!(live, vec![2]);
    }

    #[test]
    fn every_batch_state_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let states = [
            BatchState::Open,
            BatchState::Proving,
            BatchState::Proven { proof: "{}".into() },
            BatchState::Submitted {
                proof: "{}".into(),
                nonce: 7,
                txs: vec!["0x01".into(), "0x02".into()],
                raw: "0x02f8".into(),
                max_fee_per_gas: u128::MAX.to_string(),
                max_priority_fee_per_gas: "1000000000".into(),
                sent_at: 9,
            },
            BatchState::Settled { tx: "0x02".into(), block: 12, gas_used: 230_000 },
            BatchState::Failed { reason: "deadline".into() },
        ];
        for (id, state) in states.into_iter().enumerate() {
            let b = BatchRecord { id: id as u64, tasks: vec!["0xaa".into()], opened_at: 1, closed_at: Some(2), state };
            store.put_batch(&b).unwrap();
            assert_eq!(store.batch(id as u64).unwrap().unwrap(), b);
        }
        for state in [
            TaskState::Verified,
            TaskState::Batched { batch: 3 },
            TaskState::Settled { batch: Some(3), tx: Some("0x02".into()), unpaid: None },
            TaskState::Settled { batch: None, tx: None, unpaid: Some("BookEmpty".into()) },
            TaskState::Dropped { reason: "expired".into() },
        ] {
            store
                .insert_result(&[5; 32], &TaskRecord { state: state.clone(), ..record(5) }, b"p", None, &plain(&[1]))
                .unwrap();
            assert_eq!(store.task(&[5; 32]).unwrap().unwrap().state, state);
        }
    }
}
