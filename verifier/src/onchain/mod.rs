//! Auditing the task market (contracts/market/) from chain data alone.
//!
//! A settled batch is found by its root in the market's `BatchSettled` events; its tables, leaves
//! and Groth16 proof are decoded from the settling transaction's `settleBatch` calldata, every
//! order is rebuilt (its EIP-712 hash is the task id the proof binds) and its poster signature
//! checked, the batch root and public input are recomputed, and the proof is verified off-chain
//! with a verifying key whose digest must equal the deployed verifier's ([`batch`]). A signed
//! order's fate is read from the market's state and events, and a settlement re-checked against
//! its batch's calldata ([`order`]).

use std::path::{Path, PathBuf};

use alloy::consensus::Transaction as _;
use alloy::primitives::{Address, B256, U256};
use alloy::providers::{DynProvider, Provider};
use alloy::rpc::types::{Filter, Log};
use alloy::sol_types::SolEvent;
use anyhow::{anyhow, Context, Result};
use serde_json::json;
use tgrid_chain::bindings::ITaskMarket;
use tgrid_chain::market::{MarketDomain, OrderError, SettleCall, SettlementBatch, SignedOrder};
use tgrid_chain::{Deployment, MAX_LOG_RANGE};
use tgrid_cli::bad_input;

pub mod batch;
pub mod order;

/// Where to read the chain.
#[derive(Debug, clap::Args)]
pub struct ChainArgs {
    /// Audit from chain data: the JSON-RPC endpoint of the chain.
    #[arg(long)]
    pub rpc: Option<String>,
    /// Deployment file written by contracts/script/Deploy.s.sol.
    #[arg(long, env = "TGRID_DEPLOYMENT", default_value = tgrid_chain::DEFAULT_DEPLOYMENT)]
    pub deployment: PathBuf,
}

/// An error whose report (with `"valid": false` and the reason) is already on stdout: `main`
/// exits with the inner error's code without printing a second JSON object.
#[derive(Debug)]
pub struct Reported(pub anyhow::Error);

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for Reported {}

/// One named check of an audit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// Short name (a JSON key).
    pub name: &'static str,
    /// Whether it holds.
    pub ok: bool,
    /// What was compared.
    pub detail: String,
}

impl Check {
    fn new(name: &'static str, ok: bool, detail: impl Into<String>) -> Self {
        Self { name, ok, detail: detail.into() }
    }
}

/// The checks as a JSON object `{name: {"ok": bool, "detail": "..."}}`.
fn checks_json(checks: &[Check]) -> serde_json::Value {
    let map: serde_json::Map<String, serde_json::Value> =
        checks.iter().map(|c| (c.name.to_string(), json!({"ok": c.ok, "detail": c.detail}))).collect();
    serde_json::Value::Object(map)
}

/// The checks as text lines.
fn checks_text(checks: &[Check]) -> String {
    checks
        .iter()
        .map(|c| format!("\n    {:<5} {:<16} {}", if c.ok { "ok" } else { "FAIL" }, c.name, c.detail))
        .collect()
}

/// The first failed check, as the audit's error.
fn first_failure(checks: &[Check]) -> Option<String> {
    checks.iter().find(|c| !c.ok).map(|c| format!("{}: {}", c.name, c.detail))
}

/// A per-leaf event of a `settleBatch` transaction: the leaf was skipped, or settled unpaid.
/// Read from the raw log (an unknown reason code is kept, not an error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafEvent {
    /// `OrderSkipped(orderHash, reason)`.
    Skipped {
        /// The order hash.
        hash: B256,
        /// `SkipReason` code.
        reason: u8,
    },
    /// `OrderUnpaid(orderHash, reason)`.
    Unpaid {
        /// The order hash.
        hash: B256,
        /// `UnpaidReason` code.
        reason: u8,
    },
}

/// `SkipReason.NonceUsed`.
const SKIP_NONCE_USED: u8 = 1;
/// `SkipReason.BadPosterSignature`.
const SKIP_BAD_SIGNATURE: u8 = 0;

impl LeafEvent {
    /// The event of a market log, if it is one.
    fn of(log: &alloy::primitives::Log) -> Option<Self> {
        let topics = log.topics();
        if topics.len() != 2 || log.data.data.len() != 32 {
            return None;
        }
        let word = U256::from_be_slice(&log.data.data);
        let reason = u8::try_from(word).ok()?;
        let hash = topics[1];
        match topics[0] {
            t if t == ITaskMarket::OrderSkipped::SIGNATURE_HASH => Some(Self::Skipped { hash, reason }),
            t if t == ITaskMarket::OrderUnpaid::SIGNATURE_HASH => Some(Self::Unpaid { hash, reason }),
            _ => None,
        }
    }

    /// The order hash.
    pub fn hash(&self) -> B256 {
        match self {
            Self::Skipped { hash, .. } | Self::Unpaid { hash, .. } => *hash,
        }
    }
}

/// `SkipReason` by code (the Solidity enum's names).
pub fn skip_reason(code: u8) -> String {
    match code {
        0 => "BadPosterSignature".into(),
        1 => "NonceUsed".into(),
        2 => "DeadlinePassed".into(),
        3 => "SequencerPriority".into(),
        n => format!("unknown skip reason {n}"),
    }
}

/// `UnpaidReason` by code (the Solidity enum's names).
pub fn unpaid_reason(code: u8) -> String {
    match code {
        0 => "IndexOutOfBook".into(),
        1 => "PaymentAboveBookMax".into(),
        2 => "BookEmpty".into(),
        n => format!("unknown unpaid reason {n}"),
    }
}

/// secp256k1n / 2 (the contract skips signatures with a larger `s`).
const HALF_N: U256 =
    U256::from_be_bytes(alloy::primitives::hex!("7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0"));

/// Whether the poster signed the order, as the contract decides it (`ecrecover(hash) == poster`
/// and a low `s`): `Err` says why not. [`SignedOrder::verify`] also refuses terms the tools
/// never sign (a zero payment, basis points above 100 %) that the contract does not look at; for
/// those only the signature is checked here.
pub fn poster_signature(signed: &SignedOrder, domain: &MarketDomain) -> Result<(), String> {
    match signed.verify(domain) {
        Ok(_) => Ok(()),
        Err(e @ (OrderError::WrongSigner { .. } | OrderError::Malleable(_))) => Err(e.to_string()),
        Err(_) => {
            let hash = signed.hash(domain);
            let poster = signed.order.poster;
            if signed.signature.s() > HALF_N {
                return Err("order signature has a high s value".into());
            }
            match signed.signature.recover_address_from_prehash(&hash) {
                Ok(a) if a == poster && !a.is_zero() => Ok(()),
                Ok(a) => Err(format!("order signature is not {poster}'s (it recovers to {a})")),
                Err(e) => Err(format!("order signature is not {poster}'s (it recovers to nobody: {e})")),
            }
        }
    }
}

/// A `settleBatch` call found in a transaction: the transaction's own input, or (when the market
/// was called through another contract) an inner call from the node's call trace.
#[derive(Clone, Debug)]
pub struct FoundCall {
    /// The decoded call.
    pub call: SettleCall,
    /// Its call-trace frame, when the node gave one.
    pub frame: Option<serde_json::Value>,
}

/// One settled batch of a transaction: its calldata, its event and its leaves' events.
#[derive(Clone, Debug)]
pub struct Settlement {
    /// The decoded `settleBatch` call.
    pub call: SettleCall,
    /// The `BatchSettled` event.
    pub event: ITaskMarket::BatchSettled,
    /// The `OrderSkipped` / `OrderUnpaid` events the call emitted, in order.
    pub leaf_events: Vec<LeafEvent>,
    /// The transaction.
    pub transaction: B256,
    /// Its block.
    pub block: u64,
    /// Gas the whole transaction used.
    pub gas_used: u64,
    /// Whether the transaction called the market directly (else the call came from the trace).
    pub direct: bool,
    /// The call's trace frame, when the node gave one.
    pub frame: Option<serde_json::Value>,
}

/// A read-only connection to the deployment's chain.
pub struct Chain {
    /// The node.
    pub provider: DynProvider,
    /// The deployment.
    pub deployment: Deployment,
    /// The market's EIP-712 domain.
    pub domain: MarketDomain,
}

impl Chain {
    /// Loads the deployment (unreadable: bad input) and checks the node serves its chain.
    pub async fn connect(rpc: &str, deployment: &Path) -> Result<Self> {
        let deployment = Deployment::load(deployment).map_err(bad_input)?;
        let provider = tgrid_chain::reader(rpc).map_err(bad_input)?;
        tgrid_chain::check_chain(&provider, rpc, &deployment).await?;
        let domain = MarketDomain::of(&deployment);
        Ok(Self { provider, deployment, domain })
    }

    /// The market's logs matching `filter` (address and event set by the caller) from the
    /// deployment block to the head, asked in ranges of [`MAX_LOG_RANGE`] blocks.
    pub async fn logs(&self, filter: Filter, step: &str) -> Result<Vec<Log>> {
        let head = self.provider.get_block_number().await.context("eth_blockNumber")?;
        let mut out = Vec::new();
        let mut from = self.deployment.start_block;
        while from <= head {
            let to = head.min(from + MAX_LOG_RANGE - 1);
            let page = self
                .provider
                .get_logs(&filter.clone().from_block(from).to_block(to))
                .await
                .with_context(|| format!("eth_getLogs {step}"))?;
            out.extend(page);
            from = to + 1;
        }
        Ok(out)
    }

    /// A market event's logs with `topic1` (e.g. a batch root or an order hash).
    pub async fn market_logs(&self, signature: B256, topic1: B256, step: &str) -> Result<Vec<Log>> {
        let filter = Filter::new().address(self.deployment.market).event_signature(signature).topic1(topic1);
        self.logs(filter, step).await
    }

    /// The node's call trace of `tx` (`debug_traceTransaction` with the call tracer; anvil and
    /// archive nodes have it), `None` when the node offers none.
    pub async fn trace(&self, tx: B256) -> Option<serde_json::Value> {
        self.provider
            .raw_request::<_, serde_json::Value>("debug_traceTransaction".into(), (tx, json!({"tracer": "callTracer"})))
            .await
            .map_err(|e| tracing::info!("no call trace from the node: {e}"))
            .ok()
    }

    /// The `settleBatch` calls of transaction `tx` to the market, in execution order, and whether
    /// the transaction is one (a direct call). The call trace is asked for a call through another
    /// contract, and with `trace_direct` for a direct one too (for the gas of its inner calls).
    async fn settle_calls(&self, tx: B256, trace_direct: bool) -> Result<(Vec<FoundCall>, bool)> {
        let transaction = self
            .provider
            .get_transaction_by_hash(tx)
            .await
            .context("eth_getTransactionByHash")?
            .ok_or_else(|| anyhow!("the node does not know transaction {tx}"))?;
        if transaction.to() == Some(self.deployment.market) {
            let call = SettlementBatch::decode_call(transaction.input()).with_context(|| {
                format!("transaction {tx} calls the market but not with valid settleBatch calldata")
            })?;
            let frame = if trace_direct { self.trace(tx).await } else { None };
            return Ok((vec![FoundCall { call, frame }], true));
        }
        // Called through another contract (a multisig, a relayer): the calls are in the trace.
        let trace = self.trace(tx).await;
        let Some(root) = &trace else {
            anyhow::bail!(
                "transaction {tx} calls {} rather than the market, and the node gives no call trace \
                 (debug_traceTransaction) to find its settleBatch call in",
                transaction.to().map_or("a contract creation".to_string(), |a| a.to_string())
            );
        };
        let mut found = Vec::new();
        let mut frames = Vec::new();
        collect_frames(root, self.deployment.market, &mut frames);
        for frame in frames {
            let input = frame["input"].as_str().and_then(|s| hex::decode(s.trim_start_matches("0x")).ok());
            if let Some(call) = input.and_then(|i| SettlementBatch::decode_call(&i).ok()) {
                found.push(FoundCall { call, frame: Some(frame.clone()) });
            }
        }
        Ok((found, false))
    }

    /// Every batch settled by transaction `tx`: its calldata (matched to its `BatchSettled`
    /// event by the batch root recomputed from the calldata) and the leaf events it emitted. With
    /// `trace`, the call-trace frame of each (for the gas of its verifier call) when the node has
    /// traces.
    pub async fn settlements(&self, tx: B256, trace: bool) -> Result<Vec<Settlement>> {
        let receipt = self
            .provider
            .get_transaction_receipt(tx)
            .await
            .context("eth_getTransactionReceipt")?
            .ok_or_else(|| anyhow!("no receipt for {tx}"))?;
        let block = receipt.block_number.context("the receipt has no block number")?;
        // The market's logs of each settleBatch call: its leaf events, then its BatchSettled.
        let mut events = Vec::new();
        let mut pending = Vec::new();
        for log in receipt.inner.logs() {
            if log.address() != self.deployment.market {
                continue;
            }
            if let Some(e) = LeafEvent::of(&log.inner) {
                pending.push(e);
            } else if let Ok(settled) = log.log_decode::<ITaskMarket::BatchSettled>() {
                events.push((settled.inner.data, std::mem::take(&mut pending)));
            }
        }
        if events.is_empty() {
            anyhow::bail!("transaction {tx} settled no batch on the market {}", self.deployment.market);
        }
        let (calls, direct) = self.settle_calls(tx, trace).await?;
        let mut calls: Vec<Option<FoundCall>> = calls.into_iter().map(Some).collect();
        let mut out = Vec::new();
        for (event, leaf_events) in events {
            // The first unused call whose leaves hash to the event's root.
            let slot = calls.iter_mut().find(|c| {
                c.as_ref().is_some_and(|c| batch::recompute_root(&c.call, &self.domain).ok() == Some(event.batchRoot))
            });
            let Some(found) = slot.and_then(Option::take) else {
                anyhow::bail!(
                    "transaction {tx} emitted BatchSettled for root {}, but none of its settleBatch calls \
                     hashes to that root",
                    event.batchRoot
                );
            };
            out.push(Settlement {
                call: found.call,
                event,
                leaf_events,
                transaction: tx,
                block,
                gas_used: receipt.gas_used,
                direct,
                frame: found.frame,
            });
        }
        Ok(out)
    }
}

/// The successful call frames to `to` in a call trace, in execution order.
fn collect_frames<'a>(frame: &'a serde_json::Value, to: Address, out: &mut Vec<&'a serde_json::Value>) {
    let is_to = frame["to"].as_str().and_then(|s| s.parse::<Address>().ok()) == Some(to);
    if is_to && frame.get("error").is_none() {
        out.push(frame);
    }
    if let Some(calls) = frame["calls"].as_array() {
        for c in calls {
            collect_frames(c, to, out);
        }
    }
}

/// Gas used by the first call to `to` inside a trace frame.
fn gas_of_call(frame: &serde_json::Value, to: Address) -> Option<u64> {
    let mut frames = Vec::new();
    for c in frame["calls"].as_array()? {
        collect_frames(c, to, &mut frames);
    }
    let gas = frames.first()?["gasUsed"].as_str()?;
    u64::from_str_radix(gas.trim_start_matches("0x"), 16).ok()
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}
