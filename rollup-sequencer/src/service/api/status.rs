//! The operator's view: is anything stuck, and why. Everything a provider could be slashed over
//! shows here first: a batch whose settlement keeps failing, an account that cannot pay gas, a
//! pipeline that never became ready.

use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::batches::batch_status_name;
use super::{ApiError, ErrorBody};
use crate::service::health::{FailedBatch, Retrying};
use crate::service::{unix_now, Shared};

/// How long the status waits for the node's answer about the account's balance.
const BALANCE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a failed batch counts as a problem.
const RECENT_FAILURE_SECS: u64 = 15 * 60;

/// A batch not settled yet.
#[derive(Debug, Serialize, ToSchema)]
pub struct LiveBatch {
    /// Sequence number.
    pub id: u64,
    /// `open`, `proving`, `proven` or `submitted`.
    pub status: String,
    /// Tasks in it.
    pub tasks: usize,
    /// Seconds since it opened.
    pub age_secs: u64,
}

/// The sequencer's account.
#[derive(Debug, Serialize, ToSchema)]
pub struct Account {
    /// Address that signs settlements and receipts.
    pub address: String,
    /// Balance in wei (decimal), read now; absent if the node did not answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub balance_wei: Option<String>,
    /// Why the last settlement could not be paid, until one is paid again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub low_funds: Option<String>,
}

/// What an operator needs to see before providers are hurt.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatusView {
    /// `ok`, or `degraded` when `problems` is not empty.
    pub status: String,
    /// Each problem, for a human (empty when healthy).
    pub problems: Vec<String>,
    /// Whether the pipeline has built its circuits and loaded its key.
    pub pipeline_ready: bool,
    /// Acknowledged results waiting for a batch (what a provider weighs before accepting more).
    pub queue_depth: usize,
    /// Batches not settled yet, oldest first.
    pub batches: Vec<LiveBatch>,
    /// Batches whose settlement step failed and is being retried.
    pub retrying: Vec<Retrying>,
    /// The last batches given up (tasks re-queued, or dropped when they could no longer
    /// settle), oldest first; those of the last 15 minutes count as problems.
    pub failed: Vec<FailedBatch>,
    /// The sequencer's account.
    pub account: Account,
    /// The registry root new batches are proven under.
    pub registry_root: String,
    /// Why that is not the chain's current root, when it is not (the registry file does not list
    /// the root governance set: batches settle only while the old root is in its grace period).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry_stale: Option<String>,
}

/// The sequencer's health: queue, live batches, retrying settlements, the account's funds.
#[utoipa::path(get, path = "/v1/status", responses(
    (status = 200, description = "current state; `status` is `degraded` when something needs an operator", body = StatusView),
    (status = 503, description = "the store failed", body = ErrorBody),
))]
pub(super) async fn status(State(shared): State<Arc<Shared>>) -> Result<Json<StatusView>, ApiError> {
    let now = unix_now();
    let batches: Vec<LiveBatch> = shared
        .store
        .live_batches()
        .map_err(ApiError::unavailable)?
        .into_iter()
        .map(|b| LiveBatch {
            id: b.id,
            status: batch_status_name(&b.state).into(),
            tasks: b.tasks.len(),
            age_secs: now.saturating_sub(b.opened_at),
        })
        .collect();
    let retrying = shared.health.retrying();
    let low_funds = shared.health.low_funds();
    // A hanging node must not take the operator's view down with it.
    // Shared between requests for a few seconds: anyone may ask, and must not drive the node.
    let balance = match tokio::time::timeout(BALANCE_TIMEOUT, shared.relay_reads.balance(&shared.chain)).await {
        Ok(balance) => balance.map_err(|e| e.to_string()),
        Err(_) => Err(format!("no answer to eth_getBalance within {} s", BALANCE_TIMEOUT.as_secs())),
    };
    let pipeline_ready = shared.metrics.pipeline_ready.get() == 1;

    let mut problems = Vec::new();
    if !pipeline_ready {
        problems.push("the pipeline is not ready: results are acknowledged but not settled".to_string());
    }
    for r in &retrying {
        problems.push(format!(
            "batch {}: {} failed settlement attempt(s) in a row ({}{}): {}",
            r.batch,
            r.attempts,
            r.kind.label(),
            if r.stalled { ", stalled" } else { "" },
            r.last_error
        ));
    }
    let failed = shared.health.failures();
    for f in failed.iter().filter(|f| now.saturating_sub(f.at) < RECENT_FAILURE_SECS) {
        problems.push(format!("batch {} failed {} s ago: {}", f.batch, now.saturating_sub(f.at), f.reason));
    }
    if let Some(why) = &low_funds {
        problems.push(format!("low funds: {why}"));
    }
    if let Err(e) = &balance {
        problems.push(format!("the node does not answer: {e}"));
    }
    let registry_stale = shared.health.registry_stale();
    if let Some(why) = &registry_stale {
        problems.push(format!("registry: {why}"));
    }
    Ok(Json(StatusView {
        status: if problems.is_empty() { "ok" } else { "degraded" }.into(),
        problems,
        pipeline_ready,
        queue_depth: shared.store.queued_count(),
        batches,
        retrying,
        failed,
        account: Account {
            address: shared.chain.sender().to_string(),
            balance_wei: balance.ok().map(|b| b.to_string()),
            low_funds,
        },
        registry_root: format!("0x{}", hex::encode(shared.aggregator().registry().root())),
        registry_stale,
    }))
}
