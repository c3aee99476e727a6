//! Where an order ended up, from chain data alone: open (nonce unused), settled (paid or unpaid,
//! with the settling transaction and the proven output commitment read from its calldata),
//! disputed or cancelled.

use alloy::primitives::{Address, B256, U256};
use alloy::providers::Provider;
use alloy::rpc::types::Filter;
use alloy::sol_types::SolEvent;

use crate::bindings::ITaskMarket;
use crate::market::batch::SettlementBatch;
use crate::market::ledger::market_error;
use crate::market::order::{MarketDomain, Order};
use crate::{Error, Result, MAX_LOG_RANGE};

/// What happened to an order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OrderOutcome {
    /// Its nonce is unused: it can still settle (before its deadline) or be disputed (after).
    Open,
    /// A proof of it settled.
    Settled {
        /// Whether its book paid (false: settled unpaid, see `unpaid_reason`).
        paid: bool,
        /// Why it was not paid.
        unpaid_reason: Option<String>,
        /// The proving provider.
        provider: Address,
        /// The proven output commitment.
        output_commitment: B256,
        /// Who settled it.
        settler: Address,
        /// The settling transaction and block.
        transaction: B256,
        /// Its block.
        block: u64,
    },
    /// It was disputed: its provider slashed.
    Disputed {
        /// The slashed provider.
        provider: Address,
        /// Tokens slashed.
        slashed: U256,
        /// Tokens paid to the poster.
        to_poster: U256,
        /// The dispute transaction.
        transaction: B256,
    },
    /// The poster cancelled it.
    Cancelled {
        /// The cancelling transaction.
        transaction: B256,
    },
}

fn chain_err(step: &str, e: impl std::fmt::Display) -> Error {
    Error::Chain { step: step.to_string(), reason: e.to_string() }
}

/// The market's logs matching `filter` from `from_block` to the head, in ranges of
/// [`MAX_LOG_RANGE`] blocks.
async fn logs<P: Provider>(
    provider: &P,
    filter: Filter,
    from_block: u64,
    step: &str,
) -> Result<Vec<alloy::rpc::types::Log>> {
    let head = provider.get_block_number().await.map_err(|e| chain_err("eth_blockNumber", e))?;
    let mut out = Vec::new();
    let mut from = from_block;
    while from <= head {
        let to = head.min(from + MAX_LOG_RANGE - 1);
        let page = provider
            .get_logs(&filter.clone().from_block(from).to_block(to))
            .await
            .map_err(|e| chain_err(&format!("eth_getLogs {step}"), e))?;
        out.extend(page);
        from = to + 1;
    }
    Ok(out)
}

/// What happened to `order` (hash `order_hash`), searching the market's events from
/// `from_block` (a block before the order was signed; the deployment block at worst).
pub async fn order_outcome<P: Provider>(
    provider: &P,
    market: Address,
    domain: &MarketDomain,
    order: &Order,
    from_block: u64,
) -> Result<OrderOutcome> {
    let contract = ITaskMarket::new(market, provider);
    let used = contract
        .nonceUsed(order.poster, order.nonce)
        .call()
        .await
        .map_err(|e| market_error("TaskMarket.nonceUsed", e))?;
    if !used {
        return Ok(OrderOutcome::Open);
    }
    let hash = order.hash(domain);
    let disputed =
        Filter::new().address(market).event_signature(ITaskMarket::OrderDisputed::SIGNATURE_HASH).topic1(hash);
    if let Some(log) = logs(provider, disputed, from_block, "OrderDisputed").await?.last() {
        let e = log.log_decode::<ITaskMarket::OrderDisputed>().map_err(|e| chain_err("OrderDisputed", e))?;
        return Ok(OrderOutcome::Disputed {
            provider: e.inner.data.provider,
            slashed: e.inner.data.slashed,
            to_poster: e.inner.data.toPoster,
            transaction: log.transaction_hash.unwrap_or_default(),
        });
    }
    let cancelled = Filter::new()
        .address(market)
        .event_signature(ITaskMarket::NoncesCancelled::SIGNATURE_HASH)
        .topic1(order.poster.into_word());
    for log in logs(provider, cancelled, from_block, "NoncesCancelled").await? {
        let e = log.log_decode::<ITaskMarket::NoncesCancelled>().map_err(|e| chain_err("NoncesCancelled", e))?;
        if e.inner.data.nonces.contains(&order.nonce) {
            return Ok(OrderOutcome::Cancelled { transaction: log.transaction_hash.unwrap_or_default() });
        }
    }
    // Settled: find the batch whose calldata holds the order.
    let unpaid = Filter::new().address(market).event_signature(ITaskMarket::OrderUnpaid::SIGNATURE_HASH).topic1(hash);
    let unpaid_reason = logs(provider, unpaid, from_block, "OrderUnpaid")
        .await?
        .last()
        .and_then(|l| l.log_decode::<ITaskMarket::OrderUnpaid>().ok().map(|e| format!("{:?}", e.inner.data.reason)));
    let batches = Filter::new().address(market).event_signature(ITaskMarket::BatchSettled::SIGNATURE_HASH);
    for log in logs(provider, batches, from_block, "BatchSettled").await? {
        let Some(tx_hash) = log.transaction_hash else { continue };
        let Some(found) = settled_in(provider, tx_hash, domain, hash).await? else { continue };
        let settler = log
            .log_decode::<ITaskMarket::BatchSettled>()
            .map(|e| e.inner.data.settler)
            .map_err(|e| chain_err("BatchSettled", e))?;
        return Ok(OrderOutcome::Settled {
            paid: unpaid_reason.is_none(),
            unpaid_reason,
            provider: found.0,
            output_commitment: found.1,
            settler,
            transaction: tx_hash,
            block: log.block_number.unwrap_or_default(),
        });
    }
    Err(chain_err(
        "order status",
        format!(
            "nonce {} of {} is used, but no dispute, cancellation or settlement of order {hash} was found from block \
             {from_block} (settled through another contract?)",
            order.nonce, order.poster
        ),
    ))
}

/// If transaction `tx` settled the order `hash` (and did not skip it), its provider and output.
async fn settled_in<P: Provider>(
    provider: &P,
    tx: B256,
    domain: &MarketDomain,
    hash: B256,
) -> Result<Option<(Address, B256)>> {
    let Some(transaction) =
        provider.get_transaction_by_hash(tx).await.map_err(|e| chain_err("eth_getTransactionByHash", e))?
    else {
        return Ok(None);
    };
    use alloy::consensus::Transaction as _;
    let Ok(call) = SettlementBatch::decode_call(transaction.input()) else { return Ok(None) };
    let items = call.batch.items().map_err(|e| chain_err("settleBatch calldata", e))?;
    let Some(item) = items.iter().find(|i| i.order.hash(domain) == hash) else { return Ok(None) };
    // The same order may appear in a later batch too, skipped there; the first one found is the
    // settlement only if this transaction did not skip it.
    let receipt = provider
        .get_transaction_receipt(tx)
        .await
        .map_err(|e| chain_err("eth_getTransactionReceipt", e))?
        .ok_or_else(|| chain_err("eth_getTransactionReceipt", format!("no receipt for {tx}")))?;
    let skipped =
        receipt.inner.logs().iter().any(|l| {
            l.log_decode::<ITaskMarket::OrderSkipped>().map(|e| e.inner.data.orderHash == hash).unwrap_or(false)
        });
    Ok((!skipped).then_some((item.provider, item.output_commitment)))
}
