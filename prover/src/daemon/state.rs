//! The daemon's durable state: one record per order it considered, written atomically before
//! each next step, so a restart resumes.

use std::collections::BTreeMap;
use std::path::Path;

use alloy::primitives::B256;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use tgrid_chain::market::{Acceptance, SignedOrder, SignedReceipt};

/// Where an order stands for this provider.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum TaskState {
    /// Seen in the relay; waiting for its input (or until it can be taken).
    Seen,
    /// Accepted (signed, recorded in the relay): a proof is owed before the deadline.
    Accepted,
    /// Proven: `proofs/<order>.tgp` and `outputs/<order>.json` exist; not yet acknowledged.
    Proven,
    /// Acknowledged by the sequencer.
    Submitted,
    /// The sequencer refused the result; the daemon settles it itself near the deadline.
    Refused {
        /// The sequencer's answer.
        reason: String,
    },
    /// Settled on-chain (by the sequencer, another settler or this daemon).
    Settled {
        /// Whether the poster's book paid it.
        paid: bool,
        /// The settling transaction.
        tx: B256,
    },
    /// Not taken, given up, or ended otherwise (cancelled, disputed), with the reason.
    Skipped {
        /// Why.
        reason: String,
    },
}

impl TaskState {
    /// Whether a proof of the order exists and the chain has not settled it yet.
    pub fn delivered_unsettled(&self) -> bool {
        matches!(self, Self::Proven | Self::Submitted | Self::Refused { .. })
    }
}

/// One order this daemon has seen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The signed order.
    pub order: SignedOrder,
    /// This provider's acceptance, once signed.
    pub acceptance: Option<Acceptance>,
    /// A block before the order was accepted (events about it are searched from here).
    pub seen_block: u64,
    /// The sequencer's signed receipt of this provider's result: evidence of timely delivery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<SignedReceipt>,
    /// Where it stands.
    #[serde(flatten)]
    pub state: TaskState,
}

impl TaskRecord {
    /// The order's deadline.
    pub fn deadline(&self) -> u64 {
        self.order.order.deadline
    }
}

/// The daemon's durable state.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct State {
    /// Every order considered, by hash.
    pub tasks: BTreeMap<B256, TaskRecord>,
}

impl State {
    /// Reads the state file (a missing file is an empty state; a torn one an error).
    pub fn load(path: &Path) -> Result<Self> {
        match std::fs::read(path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).with_context(|| format!("{} is not a state file", path.display()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    /// Forgets the orders nothing more can happen to (settled, skipped, seen and never accepted)
    /// once their deadline is `retention` seconds past; returns their hashes.
    pub fn prune(&mut self, now: u64, retention: u64) -> Vec<B256> {
        let done: Vec<B256> = self
            .tasks
            .iter()
            .filter(|(_, r)| {
                let finished =
                    matches!(r.state, TaskState::Settled { .. } | TaskState::Skipped { .. } | TaskState::Seen);
                finished && r.deadline().saturating_add(retention) < now
            })
            .map(|(id, _)| *id)
            .collect();
        for id in &done {
            self.tasks.remove(id);
        }
        done
    }

    /// Writes to a temporary file, syncs it, then renames it over the old state.
    pub fn save(&self, path: &Path) -> Result<()> {
        let tmp = path.with_extension("json.tmp");
        let bytes = serde_json::to_vec_pretty(self)?;
        {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
            f.write_all(&bytes)?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, path).with_context(|| format!("cannot replace {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use alloy::primitives::Address;
    use alloy::signers::local::PrivateKeySigner;
    use tgrid_chain::market::{MarketDomain, Order};

    use super::*;

    fn record(deadline: u64, state: TaskState) -> TaskRecord {
        let key = PrivateKeySigner::from_bytes(&B256::repeat_byte(7)).unwrap();
        let order = Order {
            poster: key.address(),
            provider: Address::ZERO,
            model_id: B256::repeat_byte(1),
            input_commitment: B256::repeat_byte(2),
            payment: 1,
            collateral: 1,
            deadline,
            nonce: 0,
            slash_bps: 0,
            poster_share_bps: 0,
        };
        let domain = MarketDomain { chain_id: 1, market: Address::ZERO };
        TaskRecord {
            order: SignedOrder::sign(order, &key, &domain).unwrap(),
            acceptance: None,
            seen_block: 1,
            receipt: None,
            state,
        }
    }

    #[test]
    fn state_round_trips_and_a_torn_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        assert!(State::load(&path).unwrap().tasks.is_empty());
        let mut s = State::default();
        s.tasks.insert(B256::repeat_byte(1), record(100, TaskState::Refused { reason: "x".into() }));
        s.tasks.insert(B256::repeat_byte(2), record(100, TaskState::Settled { paid: false, tx: B256::ZERO }));
        s.save(&path).unwrap();
        assert_eq!(State::load(&path).unwrap().tasks, s.tasks);
        std::fs::write(&path, b"{\"tasks\": {").unwrap();
        assert!(State::load(&path).unwrap_err().to_string().contains("not a state file"));
    }

    #[test]
    fn pruning_forgets_only_finished_orders_past_the_retention() {
        let mut s = State::default();
        let states = [
            TaskState::Settled { paid: true, tx: B256::ZERO },
            TaskState::Skipped { reason: "late".into() },
            TaskState::Seen,
            TaskState::Accepted,
            TaskState::Proven,
            TaskState::Submitted,
            TaskState::Refused { reason: "x".into() },
        ];
        for (i, state) in states.into_iter().enumerate() {
            s.tasks.insert(B256::repeat_byte(i as u8), record(100, state));
        }
        s.tasks.insert(B256::repeat_byte(9), record(10_000, TaskState::Seen));
        assert!(s.prune(150, 100).is_empty());
        assert_eq!(s.prune(250, 100), (0..3).map(B256::repeat_byte).collect::<Vec<_>>());
        // Work still owed stays whatever its age; recent orders stay.
        assert_eq!(s.tasks.len(), 5);
        assert!(s.tasks.values().filter(|r| r.state.delivered_unsettled()).count() == 3);
    }
}
