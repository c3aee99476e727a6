//! A batch with each task's membership proof.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::Json;
use tgrid_aggregation::TaskLeaf;

use super::{hex0x, parse_hex, ApiError, BatchMember, BatchView, ErrorBody};
use crate::service::store::BatchState;
use crate::service::Shared;

/// A batch with each task's membership proof.
#[utoipa::path(get, path = "/v1/batches/{id}", params(("id" = u64, Path, description = "batch sequence number")),
    responses((status = 200, body = BatchView), (status = 404, body = ErrorBody)))]
pub(super) async fn batch_status(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<u64>,
) -> Result<Json<BatchView>, ApiError> {
    let batch = shared
        .store
        .batch(id)
        .map_err(ApiError::unavailable)?
        .ok_or_else(|| ApiError::not_found(format!("no batch {id}")))?;
    let mut leaves = Vec::with_capacity(batch.tasks.len());
    for t in &batch.tasks {
        let record = parse_hex::<32>(t, "task id")
            .ok()
            .and_then(|id| shared.store.task(&id).ok().flatten())
            .ok_or_else(|| ApiError::unavailable(format!("batch {id} lists task {t} without a record")))?;
        leaves.push(crate::service::leaf_of(&record).map_err(ApiError::unavailable)?);
    }
    let hashes: Vec<[u8; 32]> = leaves.iter().map(TaskLeaf::hash).collect();
    let tasks = leaves
        .iter()
        .enumerate()
        .map(|(index, leaf)| BatchMember {
            task_id: hex0x(&leaf.task_id),
            index,
            leaf_hash: hex0x(&hashes[index]),
            membership_proof: tgrid_aggregation::audit_path(&hashes, index)
                .unwrap_or_default()
                .iter()
                .map(|h| hex0x(h))
                .collect(),
        })
        .collect();
    let (mut reason, mut txs, mut block, mut gas_used) = (None, vec![], None, None);
    match &batch.state {
        BatchState::Submitted { txs: sent, .. } => txs = sent.clone(),
        BatchState::Settled { tx, block: b, gas_used: g } => {
            txs = vec![tx.clone()];
            block = Some(*b);
            gas_used = Some(*g);
        }
        BatchState::Failed { reason: r } => reason = Some(r.clone()),
        _ => {}
    }
    Ok(Json(BatchView {
        id,
        status: batch_status_name(&batch.state).into(),
        reason,
        batch_root: tgrid_aggregation::batch_root(&hashes).map(|r| hex0x(&r)).unwrap_or_default(),
        tasks,
        txs,
        block,
        gas_used,
    }))
}

pub(super) fn batch_status_name(state: &BatchState) -> &'static str {
    match state {
        BatchState::Open => "open",
        BatchState::Proving => "proving",
        BatchState::Proven { .. } => "proven",
        BatchState::Submitted { .. } => "submitted",
        BatchState::Settled { .. } => "settled",
        BatchState::Failed { .. } => "failed",
    }
}
