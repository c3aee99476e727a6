//! A proven batch on its way to the chain: wrapped into its Groth16 proof, sent, followed until
//! it settles (confirmations, reverts, lost or stuck transactions), or given up with its tasks
//! re-queued or dropped.

use alloy::primitives::{Address, B256, U256};
use tgrid_chain::market::{SettlementBatch, SettlementItem};
use tgrid_settlement_proof::SettlementProofFile;
use tracing::{info, warn};

use super::{parse32, BatchKey, Result, Worker, MAX_FAILED_BATCHES};
use crate::service::chain::Mined;
use crate::service::store::{BatchRecord, BatchState, TaskState};
use crate::service::{unix_now, ServiceError};

impl Worker {
    pub(super) fn wrap(&mut self, mut record: BatchRecord, batch_file: &tgrid_aggregation::BatchFile) -> Result<()> {
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
    pub(super) fn fail(
        &self,
        mut record: BatchRecord,
        reason: String,
        outcomes: Vec<([u8; 32], TaskState)>,
    ) -> Result<()> {
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
    pub(super) fn submit(&mut self, mut record: BatchRecord) -> Result<bool> {
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
                // Settled elsewhere and paid (its provider settled it itself): the poster paid for
                // this output, which may now be published; anything else (cancelled, disputed,
                // unpaid, another provider's output) publishes nothing.
                let paid = self.rt.block_on(chain.settled_paying(item))?;
                outcomes.push(match paid {
                    Some(tx) => (id, TaskState::Settled { batch: None, tx: Some(tx.to_string()), unpaid: None }),
                    None => {
                        let reason =
                            "its nonce was used on-chain before this batch (settled elsewhere, disputed or cancelled)";
                        (id, TaskState::Dropped { reason: reason.into() })
                    }
                });
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
    pub(super) fn reconcile(&mut self, mut record: BatchRecord) -> Result<bool> {
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
                let confirmations = self.shared.settings.confirmations_on(chain.deployment().chain_id);
                if head >= mined.block + confirmations {
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
