//! What the pipeline knows about its own trouble: batches whose settlement keeps failing (with
//! the error and the next attempt), batches it gave up, and the sequencer's funds. The pipeline
//! writes it; the status endpoint and the metrics read it, so an operator sees a stalled batch or
//! an empty account before a provider's deadline passes.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use utoipa::ToSchema;

use crate::service::{unix_now, ServiceError};

/// Attempts after which a retrying batch counts as stalled.
pub const STALLED_AFTER_ATTEMPTS: u32 = 3;
/// Longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Why a batch's settlement is being retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RetryKind {
    /// The node failed, timed out or answered something unexpected.
    Rpc,
    /// The sequencer's account cannot pay the settlement's gas.
    Funds,
    /// The local store or a stored record failed.
    Store,
    /// Anything else (proving, I/O).
    Other,
}

impl RetryKind {
    /// The kind of `error`.
    pub fn of(error: &ServiceError) -> Self {
        match error {
            ServiceError::Chain(_) => Self::Rpc,
            ServiceError::Funds(_) => Self::Funds,
            ServiceError::Store(_) => Self::Store,
            _ => Self::Other,
        }
    }

    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Rpc => "rpc",
            Self::Funds => "funds",
            Self::Store => "store",
            Self::Other => "other",
        }
    }
}

/// A batch whose settlement step failed and will be tried again.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Retrying {
    /// Batch id.
    pub batch: u64,
    /// Failed attempts in a row.
    pub attempts: u32,
    /// Whether it has failed often enough to need an operator ([`STALLED_AFTER_ATTEMPTS`]).
    pub stalled: bool,
    /// What kind of failure the last one was.
    pub kind: RetryKind,
    /// The last error.
    pub last_error: String,
    /// Unix time of the first failure of this run.
    pub failing_since: u64,
    /// Unix time of the next attempt.
    pub next_attempt_at: u64,
}

/// A batch given up (its tasks re-queued or dropped), as the status endpoint lists it.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct FailedBatch {
    /// Batch id.
    pub batch: u64,
    /// Why.
    pub reason: String,
    /// Unix time.
    pub at: u64,
}

/// Failed batches kept for the status endpoint.
const FAILURES_KEPT: usize = 16;

#[derive(Debug, Default)]
struct State {
    retrying: BTreeMap<u64, Retrying>,
    low_funds: Option<String>,
    failures: std::collections::VecDeque<FailedBatch>,
    registry_stale: Option<String>,
}

/// The pipeline's trouble, shared with the API.
#[derive(Debug, Default)]
pub struct Health {
    state: Mutex<State>,
}

impl Health {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere while holding this lock leaves only diagnostics behind: keep serving them.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a failed attempt on `batch`; returns the wait before the next one (doubling from
    /// one second up to a minute).
    pub fn failed(&self, batch: u64, error: &ServiceError) -> (Retrying, Duration) {
        let now = unix_now();
        let kind = RetryKind::of(error);
        let mut state = self.lock();
        if kind == RetryKind::Funds {
            state.low_funds = Some(error.to_string());
        }
        let entry = state.retrying.entry(batch).or_insert_with(|| Retrying {
            batch,
            attempts: 0,
            stalled: false,
            kind,
            last_error: String::new(),
            failing_since: now,
            next_attempt_at: now,
        });
        entry.attempts += 1;
        entry.stalled = entry.attempts >= STALLED_AFTER_ATTEMPTS;
        entry.kind = kind;
        entry.last_error = error.to_string();
        let wait = Duration::from_secs(1u64 << (entry.attempts - 1).min(6)).min(MAX_BACKOFF);
        entry.next_attempt_at = now + wait.as_secs();
        (entry.clone(), wait)
    }

    /// A step on `batch` went through: it is no longer retrying (and the account could pay, if
    /// that step sent a transaction).
    pub fn recovered(&self, batch: u64, paid_gas: bool) {
        let mut state = self.lock();
        state.retrying.remove(&batch);
        if paid_gas {
            state.low_funds = None;
        }
    }

    /// Whether `batch` may be tried now.
    pub fn due(&self, batch: u64) -> bool {
        self.lock().retrying.get(&batch).is_none_or(|r| r.next_attempt_at <= unix_now())
    }

    /// Records a batch given up; the last few are kept. A batch that keeps failing the same
    /// way (say, proofs the deployed verifier refuses) shows here as a run of failures.
    pub fn batch_failed(&self, batch: u64, reason: &str) {
        let mut state = self.lock();
        state.retrying.remove(&batch);
        if state.failures.len() == FAILURES_KEPT {
            state.failures.pop_front();
        }
        state.failures.push_back(FailedBatch { batch, reason: reason.to_string(), at: unix_now() });
    }

    /// The last batches given up, oldest first.
    pub fn failures(&self) -> Vec<FailedBatch> {
        self.lock().failures.iter().cloned().collect()
    }

    /// The batches being retried, by id.
    pub fn retrying(&self) -> Vec<Retrying> {
        self.lock().retrying.values().cloned().collect()
    }

    /// Why the account was last found unable to pay, until a settlement is paid again.
    pub fn low_funds(&self) -> Option<String> {
        self.lock().low_funds.clone()
    }

    /// Records why new batches cannot follow the on-chain registry root (`None`: they do).
    pub fn set_registry_stale(&self, why: Option<String>) {
        self.lock().registry_stale = why;
    }

    /// Why new batches are proven under a registry root the chain has replaced, if they are.
    pub fn registry_stale(&self) -> Option<String> {
        self.lock().registry_stale.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_back_off_stall_and_recover() {
        let health = Health::default();
        assert!(health.due(7));
        let rpc = ServiceError::Chain("eth_estimateGas: timed out".into());
        let waits: Vec<u64> = (0..9).map(|_| health.failed(7, &rpc).1.as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        let r = &health.retrying()[0];
        assert_eq!((r.batch, r.attempts, r.stalled, r.kind), (7, 9, true, RetryKind::Rpc));
        assert!(!health.due(7), "waits out its backoff");
        assert!(health.due(8), "other batches are not held back");
        assert_eq!(health.low_funds(), None);

        health.failed(8, &ServiceError::Funds("balance 0 < 1 wei".into()));
        assert!(health.low_funds().unwrap().contains("balance"));
        health.recovered(7, false);
        assert!(health.low_funds().is_some(), "only a paid transaction clears low funds");
        health.recovered(8, true);
        assert!(health.retrying().is_empty() && health.low_funds().is_none());

        for batch in 0..20 {
            health.batch_failed(batch, "settleBatch would revert: MarketInvalidProof");
        }
        let failures = health.failures();
        assert_eq!(failures.len(), FAILURES_KEPT);
        assert_eq!((failures[0].batch, failures[FAILURES_KEPT - 1].batch), (4, 19), "the last ones, oldest first");
    }
}
