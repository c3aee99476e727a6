//! `tgrid-verifier task 0x<order hash> --rpc URL`: where a signed order ended up, from chain
//! data, and for a settled order a re-check of its settlement against the batch's calldata.
//!
//! An order reaches the chain only when it settles (the batch calldata carries it) or is
//! disputed (the dispute's calldata carries it); until then the auditor needs its copy from the
//! poster (`--order FILE`) or a relay (`--relay URL`).

use std::path::Path;
use std::time::Duration;

use alloy::consensus::Transaction as _;
use alloy::primitives::{Signature, B256, U256};
use alloy::providers::Provider;
use alloy::sol_types::{SolCall, SolEvent};
use anyhow::{anyhow, Context, Result};
use serde_json::json;
use tgrid_chain::bindings::{self, ITaskMarket};
use tgrid_chain::format_tgrid;
use tgrid_chain::market::{Acceptance, Order, OrderOutcome, OrderView, RelayClient, RelayError, SignedOrder};
use tgrid_circuits::{EncryptedTensor, OutputKey};
use tgrid_cli::{bad_input, parse_hex, Output};

use super::batch::{BatchAudit, LeafOutcome};
use super::{checks_json, checks_text, first_failure, poster_signature, skip_reason, Chain, Check, Reported};

/// Where the auditor's copy of the order comes from.
#[derive(Clone, Copy, Debug)]
pub enum OrderSource<'a> {
    /// A JSON file: a signed order (`{"order": {...}, "signature": "0x.."}`) or a relay's view of
    /// one (`{"hash", "signed", "acceptance", "state"}`).
    File(&'a Path),
    /// A relay's `GET /v1/orders/{hash}`.
    Relay(&'a str),
    /// The chain: the calldata of a batch or a dispute that carries it (settled, skipped or
    /// disputed orders only).
    Chain,
}

/// Largest order file read.
const MAX_ORDER_FILE: u64 = 1 << 20;

/// A signed order from a file (bad input when unreadable).
fn read_order_file(path: &Path) -> Result<(SignedOrder, Option<OrderView>)> {
    let bytes = tgrid_cli::read_bounded(path, MAX_ORDER_FILE, "order")?;
    match serde_json::from_slice::<SignedOrder>(&bytes) {
        Ok(signed) => Ok((signed, None)),
        Err(e) => match serde_json::from_slice::<OrderView>(&bytes) {
            Ok(view) => Ok((view.signed.clone(), Some(view))),
            Err(_) => {
                Err(bad_input(anyhow!("{} is not a signed order (nor a relay's view of one): {e}", path.display())))
            }
        },
    }
}

/// The relay's copy of order `hash`.
async fn relay_order(url: &str, hash: B256) -> Result<OrderView> {
    url.parse::<alloy::transports::http::reqwest::Url>().map_err(|e| bad_input(anyhow!("relay URL {url:?}: {e}")))?;
    let relay = RelayClient::new(url, Duration::from_secs(30))?;
    match relay.order(hash).await {
        Ok(view) => Ok(view),
        Err(e @ RelayError::Refused { status: 404, .. }) => {
            Err(bad_input(anyhow!("the relay at {url} has no order {hash} ({e})")))
        }
        Err(e) => Err(anyhow!(e).context(format!("cannot fetch order {hash} from the relay"))),
    }
}

/// An order as the Rust type (the Solidity struct's amounts fit: uint96, uint40).
fn order_from_sol(o: &bindings::Order) -> Order {
    Order {
        poster: o.poster,
        provider: o.provider,
        model_id: o.modelId,
        input_commitment: o.inputCommitment,
        payment: o.payment.to::<u128>(),
        collateral: o.collateral.to::<u128>(),
        deadline: o.deadline.to::<u64>(),
        nonce: o.nonce,
        slash_bps: o.slashBps,
        poster_share_bps: o.posterShareBps,
    }
}

/// The order `hash` from chain data: a dispute's calldata, or a leaf of a settleBatch call
/// (those that skipped it first, found by its event; then every settled batch).
async fn order_from_chain(chain: &Chain, hash: B256) -> Result<Option<(SignedOrder, String)>> {
    let market = chain.deployment.market;
    for log in chain.market_logs(ITaskMarket::OrderDisputed::SIGNATURE_HASH, hash, "OrderDisputed").await? {
        let Some(tx) = log.transaction_hash else { continue };
        let Some(t) = chain.provider.get_transaction_by_hash(tx).await.context("eth_getTransactionByHash")? else {
            continue;
        };
        if t.to() != Some(market) {
            continue;
        }
        let Ok(call) = ITaskMarket::disputeCall::abi_decode(t.input()) else { continue };
        let Ok(signature) = Signature::from_raw(&call.posterSignature) else { continue };
        let signed = SignedOrder { order: order_from_sol(&call.order), signature };
        if signed.hash(&chain.domain) == hash {
            return Ok(Some((signed, format!("the calldata of dispute {tx}"))));
        }
    }
    let skipped = chain.market_logs(ITaskMarket::OrderSkipped::SIGNATURE_HASH, hash, "OrderSkipped").await?;
    let settled = chain
        .logs(
            alloy::rpc::types::Filter::new().address(market).event_signature(ITaskMarket::BatchSettled::SIGNATURE_HASH),
            "BatchSettled",
        )
        .await?;
    let mut seen = std::collections::HashSet::new();
    for tx in skipped.iter().chain(&settled).filter_map(|l| l.transaction_hash) {
        if !seen.insert(tx) {
            continue;
        }
        let Ok((calls, _)) = chain.settle_calls(tx, false).await else { continue };
        for found in calls {
            let Ok(items) = found.call.batch.items() else { continue };
            if let Some(item) = items.into_iter().find(|i| i.order.hash(&chain.domain) == hash) {
                return Ok(Some((item.order, format!("the settleBatch calldata of {tx}"))));
            }
        }
    }
    Ok(None)
}

/// A settled order re-checked against its batch: the leaf that settled it.
struct SettledLeaf {
    batch_root: B256,
    public_input: U256,
    index: usize,
    outcome: LeafOutcome,
    output_commitment: B256,
    gas_used: u64,
}

/// Re-checks a settlement found by `order_outcome`: the transaction's settleBatch calldata holds
/// exactly this order (same fields, hence hash) in a leaf it did not skip, with a poster signature
/// that verifies, the same provider, output and paid status; and the batch's BatchSettled event
/// (the market verified the proof) matches the root and public input recomputed from the calldata.
async fn check_settlement(
    chain: &Chain,
    signed: &SignedOrder,
    hash: B256,
    outcome: &OrderOutcome,
    checks: &mut Vec<Check>,
) -> Result<Option<SettledLeaf>> {
    let OrderOutcome::Settled { paid, provider, output_commitment, transaction, .. } = outcome else {
        return Ok(None);
    };
    let settlements = chain.settlements(*transaction, false).await?;
    let mut found = None;
    for s in &settlements {
        let audit = BatchAudit::build(&s.call, &chain.domain, &s.event, &s.leaf_events, None)?;
        if let Some(l) = audit.leaves.iter().find(|l| l.hash == hash && !matches!(l.outcome, LeafOutcome::Skipped(_))) {
            found = Some((s, l.clone(), audit.clone()));
            break;
        }
    }
    let Some((s, leaf, audit)) = found else {
        checks.push(Check::new(
            "in_batch",
            false,
            format!("no settleBatch call of {transaction} settles order {hash}"),
        ));
        return Ok(None);
    };
    let same_order = leaf.item.order.order == signed.order;
    checks.push(Check::new(
        "in_batch",
        same_order && leaf.signature.is_ok(),
        match (&leaf.signature, same_order) {
            (Ok(()), true) => format!(
                "leaf {} of batch {} rebuilds exactly this order, with a poster signature that verifies",
                leaf.index, s.event.batchRoot
            ),
            (_, false) => format!("leaf {} of batch {} holds a different order", leaf.index, s.event.batchRoot),
            (Err(e), true) => format!("leaf {}'s signature: {e}", leaf.index),
        },
    ));
    let leaf_paid = leaf.outcome == LeafOutcome::Paid;
    let agree =
        leaf.item.provider == *provider && leaf.item.output_commitment == *output_commitment && leaf_paid == *paid;
    checks.push(Check::new(
        "settlement",
        agree,
        format!(
            "calldata: provider {}, output {}, {}",
            leaf.item.provider,
            leaf.item.output_commitment,
            leaf.outcome.status()
        ),
    ));
    let batch_ok = ["count", "batch_root", "registry_root", "public_input"]
        .iter()
        .all(|name| audit.checks.iter().any(|c| c.name == *name && c.ok));
    checks.push(Check::new(
        "batch_proof",
        batch_ok,
        if batch_ok {
            format!(
                "BatchSettled {} in the same transaction: the market verified the proof for public input {:#066x}",
                s.event.batchRoot, s.event.publicInput
            )
        } else {
            first_failure(&audit.checks).unwrap_or_default()
        },
    ));
    Ok(Some(SettledLeaf {
        batch_root: s.event.batchRoot,
        public_input: s.event.publicInput,
        index: leaf.index,
        outcome: leaf.outcome,
        output_commitment: leaf.item.output_commitment,
        gas_used: s.gas_used,
    }))
}

/// An output file: its int8 values, and for a private task's the key it was encrypted under
/// (`output_key`, as `tgrid order result --out` writes it), without which a private output
/// cannot be checked.
fn read_output(path: &Path) -> Result<(Vec<i8>, Option<OutputKey>)> {
    let v = tgrid_cli::read_output_json(path)?;
    let values = tgrid_cli::int8_output(&v).with_context(|| path.display().to_string()).map_err(bad_input)?;
    let key = tgrid_cli::output_key_field(&v)
        .map_err(|e| bad_input(anyhow!("{}: {e}", path.display())))?
        .map(|hex| OutputKey::from_hex(hex).map_err(|e| bad_input(anyhow!("{}: output_key: {e}", path.display()))))
        .transpose()?;
    Ok((values, key))
}

/// `tgrid-verifier task ORDER_HASH --rpc URL [--order FILE | --relay URL] [--output OUT.json]`.
pub fn audit_task(
    order_hash: &str,
    rpc: &str,
    deployment: &Path,
    source: OrderSource<'_>,
    output: Option<&Path>,
    out: &Output,
) -> Result<()> {
    let hash = B256::from(parse_hex::<32>(order_hash, "order hash").map_err(bad_input)?);
    let output_values = output.map(read_output).transpose()?;
    // Unreadable files are refused before the node is asked anything.
    let file_order = match source {
        OrderSource::File(path) => {
            let (signed, view) = read_order_file(path)?;
            Some((signed, view, format!("file {}", path.display())))
        }
        OrderSource::Relay(_) | OrderSource::Chain => None,
    };
    let rt = super::runtime()?;
    let report = rt.block_on(async {
        let chain = Chain::connect(rpc, deployment).await?;
        let (signed, view, from) = match (source, file_order) {
            (_, Some(from_file)) => from_file,
            (OrderSource::Relay(url), None) => {
                let view = relay_order(url, hash).await?;
                (view.signed.clone(), Some(view), format!("relay {url}"))
            }
            (OrderSource::Chain | OrderSource::File(_), None) => match order_from_chain(&chain, hash).await? {
                Some((signed, from)) => (signed, None, from),
                None => {
                    return Err(bad_input(anyhow!(
                        "order {hash} is in no settled batch or dispute of the market {}: an order that has not \
                         settled has no copy on-chain; give it with --order FILE or --relay URL",
                        chain.deployment.market
                    )))
                }
            },
        };
        let computed = signed.hash(&chain.domain);
        if computed != hash {
            return Err(bad_input(anyhow!(
                "the order from the {from} hashes to {computed} on this deployment (chain {}, market {}), not {hash}",
                chain.deployment.chain_id,
                chain.deployment.market
            )));
        }
        if let Some(v) = &view {
            if v.hash != hash {
                return Err(bad_input(anyhow!("the relay's view names order {}, not {hash}", v.hash)));
            }
        }
        let signature = poster_signature(&signed, &chain.domain);
        let acceptance = view.as_ref().and_then(|v| v.acceptance.clone());
        let acceptance_ok = acceptance.as_ref().map(|a: &Acceptance| {
            a.verify(&chain.domain).map_err(|e| e.to_string()).and_then(|()| {
                if a.order_hash != hash {
                    Err(format!("the acceptance is of order {}", a.order_hash))
                } else {
                    Ok(())
                }
            })
        });
        let outcome = tgrid_chain::order_outcome(
            &chain.provider,
            chain.deployment.market,
            &chain.domain,
            &signed.order,
            chain.deployment.start_block,
        )
        .await;
        // A forged copy may share its nonce with the poster's real order: its own outcome is then
        // unknowable from the nonce; its skips below still say what the contract did with it.
        let outcome = match outcome {
            Ok(o) => Ok(o),
            Err(e) if signature.is_err() => Err(e.to_string()),
            Err(e) => return Err(anyhow!(e).context(format!("the outcome of order {hash}"))),
        };
        let mut skipped = Vec::new();
        for log in chain.market_logs(ITaskMarket::OrderSkipped::SIGNATURE_HASH, hash, "OrderSkipped").await? {
            if let Some(super::LeafEvent::Skipped { reason, .. }) = super::LeafEvent::of(&log.inner) {
                skipped.push(json!({
                    "transaction": log.transaction_hash.map(|t| t.to_string()),
                    "block": log.block_number,
                    "reason": skip_reason(reason),
                }));
            }
        }
        let mut checks = vec![Check::new(
            "signature",
            signature.is_ok(),
            match &signature {
                Ok(()) => format!("signed by its poster {}", signed.order.poster),
                Err(e) => format!("{e}: the market skips it (BadPosterSignature)"),
            },
        )];
        let settled = match &outcome {
            Ok(o) => check_settlement(&chain, &signed, hash, o, &mut checks).await?,
            Err(_) => None,
        };
        let now = tgrid_chain::chain_now(&chain.provider).await?;
        let dispute_window = ITaskMarket::new(chain.deployment.market, &chain.provider)
            .parameters()
            .call()
            .await
            .map(|p| p.disputeWindow)
            .ok();
        anyhow::Ok(TaskReport {
            hash,
            signed,
            from,
            view,
            acceptance,
            acceptance_ok,
            signature,
            outcome,
            skipped,
            settled,
            checks,
            now,
            dispute_window,
        })
    })?;
    report.finish(output_values.as_ref().map(|(v, key)| (v.as_slice(), key.as_ref())), out)
}

/// Everything `task --rpc` found, before the output check.
struct TaskReport {
    hash: B256,
    signed: SignedOrder,
    from: String,
    view: Option<OrderView>,
    acceptance: Option<Acceptance>,
    acceptance_ok: Option<Result<(), String>>,
    signature: Result<(), String>,
    outcome: Result<OrderOutcome, String>,
    skipped: Vec<serde_json::Value>,
    settled: Option<SettledLeaf>,
    checks: Vec<Check>,
    now: u64,
    dispute_window: Option<U256>,
}

impl TaskReport {
    fn status(&self) -> &'static str {
        match &self.outcome {
            Ok(OrderOutcome::Settled { .. }) => "settled",
            Ok(OrderOutcome::Disputed { .. }) => "disputed",
            Ok(OrderOutcome::Cancelled { .. }) => "cancelled",
            _ if !self.skipped.is_empty() => "skipped",
            Err(_) => "unknown",
            Ok(OrderOutcome::Open) if self.now > self.signed.order.deadline => "expired",
            Ok(OrderOutcome::Open) => "open",
        }
    }

    /// What the chain does and does not say about the order.
    fn note(&self) -> String {
        let deadline = self.signed.order.deadline;
        let window = self.dispute_window.map(|w| U256::from(deadline) + w);
        match &self.outcome {
            Ok(OrderOutcome::Open) if !self.skipped.is_empty() => {
                let mut note = format!(
                    "the market skipped it in {} settlement(s) (see skipped): its nonce is still unused",
                    self.skipped.len()
                );
                if self.signature.is_err() {
                    note += "; with this signature it can never settle";
                } else if self.now <= deadline {
                    note += &format!("; it can still settle until its deadline {deadline}");
                } else {
                    note += &format!(
                        "; its deadline {deadline} has passed: a provider that accepted it can be disputed{}",
                        window.map_or(String::new(), |w| format!(" before {w}"))
                    );
                }
                note
            }
            Ok(OrderOutcome::Open) => {
                let mut note = String::from(
                    "nothing about this order is on-chain yet: its nonce is unused, and its acceptance, result and \
                     output live off-chain (relay, sequencer) until it settles or is disputed",
                );
                if self.signature.is_err() {
                    note += "; with this signature it can never settle";
                } else if self.now <= deadline {
                    note += &format!("; it can settle until its deadline {deadline} (chain time now {})", self.now);
                } else {
                    note += &format!(
                        "; its deadline {deadline} has passed (chain time now {}): it can no longer settle, and a \
                         provider that accepted it can be disputed{}",
                        self.now,
                        window.map_or(String::new(), |w| format!(" before {w}"))
                    );
                }
                note
            }
            Ok(OrderOutcome::Settled { paid: false, .. }) => {
                "settled unpaid: the provider delivered (the nonce is used, it cannot be disputed) but the poster's \
                 book could not pay"
                    .into()
            }
            Ok(OrderOutcome::Settled { .. }) => {
                "the output commitment is proven by the batch's Groth16 proof; the output itself is off-chain \
                 (check a copy with --output)"
                    .into()
            }
            Ok(OrderOutcome::Disputed { .. }) => {
                "disputed: no result settled by the deadline and the accepting provider was slashed".into()
            }
            Ok(OrderOutcome::Cancelled { .. }) => "the poster cancelled its nonce: it can never settle".into(),
            Err(e) => format!("the chain does not say what became of this copy of the order: {e}"),
        }
    }

    fn finish(mut self, output: Option<(&[i8], Option<&OutputKey>)>, out: &Output) -> Result<()> {
        let o = &self.signed.order;
        let status = self.status();
        let mut value = json!({
            "task_id": self.hash.to_string(),
            "order_hash": self.hash.to_string(),
            "status": status,
            "source": self.from,
            "order": &self.signed,
            "poster": o.poster.to_string(),
            "book": o.book(),
            "order_index": o.index(),
            "named_provider": o.is_named().then(|| o.provider.to_string()),
            "model_id": o.model_id.to_string(),
            "input_commitment": o.input_commitment.to_string(),
            "payment": format_tgrid(U256::from(o.payment)),
            "collateral": format_tgrid(U256::from(o.collateral)),
            "deadline": o.deadline,
            "chain_time": self.now,
            "signature_valid": self.signature.is_ok(),
            "signature_error": self.signature.as_ref().err(),
            "relay_state": self.view.as_ref().map(|v| v.state),
            "acceptance": self.acceptance.as_ref().map(|a| json!({
                "provider": a.provider.to_string(),
                "valid": self.acceptance_ok.as_ref().is_some_and(|r| r.is_ok()),
                "error": self.acceptance_ok.as_ref().and_then(|r| r.as_ref().err()),
            })),
            "provider": null,
            "output_commitment": null,
            "settled_in": null,
            "batch_root": null,
            "skipped": self.skipped,
        });
        match &self.outcome {
            Ok(OrderOutcome::Settled {
                paid,
                unpaid_reason,
                provider,
                output_commitment,
                settler,
                transaction,
                block,
            }) => {
                value["provider"] = json!(provider.to_string());
                value["output_commitment"] = json!(output_commitment.to_string());
                value["settled_in"] = json!(transaction.to_string());
                value["block"] = json!(block);
                value["settler"] = json!(settler.to_string());
                value["paid"] = json!(paid);
                value["unpaid_reason"] =
                    json!(self.settled.as_ref().and_then(|s| s.outcome.reason()).or(unpaid_reason.clone()));
            }
            Ok(OrderOutcome::Disputed { provider, slashed, to_poster, transaction }) => {
                value["provider"] = json!(provider.to_string());
                value["dispute"] = json!({
                    "transaction": transaction.to_string(),
                    "provider": provider.to_string(),
                    "slashed": format_tgrid(*slashed),
                    "to_poster": format_tgrid(*to_poster),
                });
            }
            Ok(OrderOutcome::Cancelled { transaction }) => value["cancelled_in"] = json!(transaction.to_string()),
            Ok(OrderOutcome::Open) | Err(_) => {}
        }
        if let Some(s) = &self.settled {
            value["batch_root"] = json!(s.batch_root.to_string());
            value["leaf_index"] = json!(s.index);
            value["public_input"] = json!(format!("{:#066x}", s.public_input));
            value["batch_verified_on_chain"] = json!(self.checks.iter().any(|c| c.name == "batch_proof" && c.ok));
            value["settlement_gas"] = json!(s.gas_used);
        }
        let mut output_error = None;
        if let Some((values, key)) = output {
            // A private output is checked as the proof committed to it: encrypted under its key.
            let computed = B256::from(match key {
                None => tgrid_circuits::commit(values).0,
                Some(key) => EncryptedTensor::encrypt(values, key).commitment().0,
            });
            match &self.settled {
                Some(s) => {
                    let ok = computed == s.output_commitment;
                    value["output_commitment_of_file"] = json!(computed.to_string());
                    value["output_matches"] = json!(ok);
                    self.checks.push(Check::new(
                        "output",
                        ok,
                        if ok {
                            format!("the output file commits to {computed}, as settled")
                        } else {
                            format!(
                                "the output file does NOT match order {}: it commits to {computed}, the settlement \
                                 recorded {}",
                                self.hash, s.output_commitment
                            )
                        },
                    ));
                }
                None => {
                    output_error = Some(anyhow!(
                        "order {} is {status}: there is no settled output to check the output file against",
                        self.hash
                    ));
                }
            }
        }
        value["note"] = json!(self.note());
        value["checks"] = checks_json(&self.checks);
        let failure = output_error
            .map(|e| format!("{e:#}"))
            .or_else(|| first_failure(&self.checks))
            .or_else(|| self.outcome.as_ref().err().cloned());
        let valid = failure.is_none();
        value["valid"] = json!(valid);
        value["error"] = json!(failure);
        out.emit(value.clone(), || self.text(status, failure.as_deref()))?;
        match failure {
            None => Ok(()),
            Some(f) => Err(anyhow::Error::new(Reported(anyhow!("order {}: {f}", self.hash)))),
        }
    }

    fn text(&self, status: &str, failure: Option<&str>) -> String {
        let o = &self.signed.order;
        let mut text = match failure {
            None => format!("order {}: {status}", self.hash),
            Some(f) => format!("INVALID order {}: {status}: {f}", self.hash),
        };
        if let Ok(OrderOutcome::Settled { paid, .. }) = &self.outcome {
            text += if *paid { " (paid)" } else { " (unpaid)" };
        }
        text += &format!(
            "\n  from           {}\n  poster         {} book {} index {}\n  payment        {} TGRID  collateral {} TGRID  slash {} bps (poster share {} bps)\n  deadline       {} (chain time now {})\n  model          {}\n  input          {}\n  named provider {}\n  signature      {}",
            self.from,
            o.poster,
            o.book(),
            o.index(),
            format_tgrid(U256::from(o.payment)),
            format_tgrid(U256::from(o.collateral)),
            o.slash_bps,
            o.poster_share_bps,
            o.deadline,
            self.now,
            o.model_id,
            o.input_commitment,
            if o.is_named() { o.provider.to_string() } else { "none (any provider)".into() },
            match &self.signature {
                Ok(()) => "valid".to_string(),
                Err(e) => format!("INVALID: {e}"),
            },
        );
        if let (Some(a), Some(ok)) = (&self.acceptance, &self.acceptance_ok) {
            text += &format!(
                "\n  accepted by    {} ({})",
                a.provider,
                match ok {
                    Ok(()) => "signature valid".to_string(),
                    Err(e) => format!("INVALID: {e}"),
                }
            );
        }
        match &self.outcome {
            Ok(OrderOutcome::Settled { provider, output_commitment, settler, transaction, block, .. }) => {
                text += &format!(
                    "\n  settled in     {transaction} (block {block}) by {settler}\n  proven by      {provider}\n  output         {output_commitment}"
                );
            }
            Ok(OrderOutcome::Disputed { provider, slashed, to_poster, transaction }) => {
                text += &format!(
                    "\n  disputed in    {transaction}: provider {provider} slashed {} TGRID, {} TGRID to the poster",
                    format_tgrid(*slashed),
                    format_tgrid(*to_poster)
                );
            }
            Ok(OrderOutcome::Cancelled { transaction }) => text += &format!("\n  cancelled in   {transaction}"),
            Ok(OrderOutcome::Open) | Err(_) => {}
        }
        if let Some(s) = &self.settled {
            text += &format!(
                "\n  batch root     {} leaf #{} (audit it with `tgrid-verifier batch {} --rpc ...`)",
                s.batch_root, s.index, s.batch_root
            );
        }
        for s in &self.skipped {
            text += &format!(
                "\n  skipped in     {} (block {}): {}",
                s["transaction"].as_str().unwrap_or("?"),
                s["block"],
                s["reason"].as_str().unwrap_or("?")
            );
        }
        text += "\n  checks";
        text += &checks_text(&self.checks);
        text += &format!("\n  note: {}", self.note());
        text
    }
}
