//! The records the store keeps, as JSON: tasks, relayed orders and batches, and how a result's
//! output is held.

use alloy::primitives::B256;
use serde::{Deserialize, Serialize};
use tgrid_chain::market::{Acceptance, SignedOrder};

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

impl BatchState {
    /// Whether the pipeline still has work on a batch in this state.
    pub fn is_live(&self) -> bool {
        !matches!(self, BatchState::Settled { .. } | BatchState::Failed { .. })
    }
}

/// A result's output as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoredOutput {
    /// A public task's int8 output.
    Plain(Vec<i8>),
    /// A private task's output encrypted to its poster (`EncryptedTensor` bytes).
    Encrypted(Vec<u8>),
}
