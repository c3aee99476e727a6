//! A provider's pay for settled tasks, which it collects itself: settlement fixes each task's pay
//! (reward minus the protocol fee in force then) and keeps the tokens in the escrow; the provider
//! calls `TaskEscrow.claimSettled(taskIds)`, which sends the summed pay and releases the tasks'
//! collateral. Shared by `tgrid stake status/claim` and the provider daemon.

use std::collections::HashSet;

use alloy::primitives::{Address, B256, U256};
use alloy::providers::Provider;
use alloy::rpc::types::Filter;
use alloy::sol_types::SolEvent;

use crate::bindings::ITaskEscrow;
use crate::{confirm, Error, Result};

/// Largest block range asked of the node in one `eth_getLogs`.
pub const MAX_LOG_RANGE: u64 = 5_000;

/// Most task ids claimed in one transaction (about 2M gas: 31k + 9.7k per task).
pub const MAX_CLAIM_IDS: usize = 200;

fn chain_err(step: &str, e: impl std::fmt::Display) -> Error {
    Error::Chain { step: step.to_string(), reason: e.to_string() }
}

/// A settled task its provider has not claimed yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClaimableTask {
    /// The task.
    pub task_id: B256,
    /// What claiming it pays: its reward minus the protocol fee fixed at settlement.
    pub pay: U256,
    /// The collateral claiming it releases.
    pub collateral: U256,
}

/// What [`claim_settled`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Claimed {
    /// Tasks claimed.
    pub tasks: u64,
    /// Tokens sent to the provider (sum of the `SettlementClaimed` events).
    pub paid: U256,
    /// Collateral released in Staking.
    pub collateral_released: U256,
    /// The claim transactions, in order.
    pub transactions: Vec<B256>,
}

/// Task ids from `events`, in order, once each, without those in `exclude`.
fn candidates(events: impl IntoIterator<Item = B256>, exclude: &HashSet<B256>) -> Vec<B256> {
    let mut seen = HashSet::new();
    events.into_iter().filter(|id| !exclude.contains(id) && seen.insert(*id)).collect()
}

/// Task ids (topic 1) of the escrow's `signature` events whose topic 2 is `who`, from
/// `from_block` to the head, asked in ranges of [`MAX_LOG_RANGE`] blocks.
async fn task_ids_of<P: Provider>(
    provider: &P,
    escrow: Address,
    signature: B256,
    name: &str,
    from_block: u64,
    who: Address,
) -> Result<Vec<B256>> {
    let head = provider.get_block_number().await.map_err(|e| chain_err("eth_blockNumber", e))?;
    let mut ids = Vec::new();
    let mut from = from_block;
    while from <= head {
        let to = head.min(from + MAX_LOG_RANGE - 1);
        let filter = Filter::new()
            .address(escrow)
            .event_signature(signature)
            .topic2(who.into_word())
            .from_block(from)
            .to_block(to);
        let logs = provider.get_logs(&filter).await.map_err(|e| chain_err(&format!("eth_getLogs {name}"), e))?;
        ids.extend(logs.iter().filter_map(|l| l.topics().get(1).copied()));
        from = to + 1;
    }
    Ok(ids)
}

/// The settled, unclaimed tasks of `who`, in acceptance order: the tasks its `TaskAccepted`
/// events name (scanned from `from_block`, the deployment block), less those a `TaskClaimed`
/// event already names, kept when `TaskEscrow.claimable` says so (unsettled and expired tasks
/// are not).
pub async fn claimable_tasks<P: Provider>(
    provider: &P,
    escrow: Address,
    from_block: u64,
    who: Address,
) -> Result<Vec<ClaimableTask>> {
    let accepted =
        task_ids_of(provider, escrow, ITaskEscrow::TaskAccepted::SIGNATURE_HASH, "TaskAccepted", from_block, who)
            .await?;
    let claimed: HashSet<B256> =
        task_ids_of(provider, escrow, ITaskEscrow::TaskClaimed::SIGNATURE_HASH, "TaskClaimed", from_block, who)
            .await?
            .into_iter()
            .collect();
    let contract = ITaskEscrow::new(escrow, provider);
    let mut out = Vec::new();
    for task_id in candidates(accepted, &claimed) {
        let c = contract.claimable(task_id).call().await.map_err(|e| chain_err("TaskEscrow.claimable", e))?;
        if c.isClaimable {
            out.push(ClaimableTask { task_id, pay: c.pay, collateral: c.collateral });
        }
    }
    Ok(out)
}

/// Claims `task_ids` (settled, unclaimed tasks of the signer of `provider`) in transactions of
/// at most `max_per_tx` ids (use [`MAX_CLAIM_IDS`]), waiting for each. The amounts are read from
/// the receipts' `SettlementClaimed` events. Stops at the first failure; its error says what was
/// claimed before it.
pub async fn claim_settled<P: Provider>(
    provider: &P,
    escrow: Address,
    task_ids: &[B256],
    max_per_tx: usize,
) -> Result<Claimed> {
    let contract = ITaskEscrow::new(escrow, provider);
    let mut done = Claimed::default();
    for chunk in task_ids.chunks(max_per_tx.max(1)) {
        let sent = contract.claimSettled(chunk.to_vec()).send().await;
        let receipt = match confirm("TaskEscrow.claimSettled", sent).await {
            Ok(r) => r,
            Err(e) if done.transactions.is_empty() => return Err(e),
            Err(e) => {
                return Err(chain_err(
                    "TaskEscrow.claimSettled",
                    format!(
                        "{e} (after {} task(s) were claimed, {} paid, in {:?})",
                        done.tasks, done.paid, done.transactions
                    ),
                ))
            }
        };
        let event = receipt
            .inner
            .logs()
            .iter()
            .find_map(|l| l.log_decode::<ITaskEscrow::SettlementClaimed>().ok())
            .ok_or_else(|| chain_err("TaskEscrow.claimSettled", "the receipt has no SettlementClaimed event"))?
            .inner
            .data;
        done.tasks += u64::try_from(event.tasks).unwrap_or(u64::MAX);
        done.paid += event.paid;
        done.collateral_released += event.collateralReleased;
        done.transactions.push(receipt.transaction_hash);
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_keep_order_drop_claimed_and_repeats() {
        let id = B256::repeat_byte;
        let claimed: HashSet<B256> = [id(2)].into_iter().collect();
        assert_eq!(candidates([id(3), id(1), id(2), id(3), id(4)], &claimed), vec![id(3), id(1), id(4)]);
        assert!(candidates([], &claimed).is_empty());
    }
}
