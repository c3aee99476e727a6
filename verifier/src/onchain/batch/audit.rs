//! A settled batch rebuilt from its calldata and checked against its events, leaf by leaf.

use std::collections::BTreeMap;

use alloy::primitives::{B256, U256};
use anyhow::{anyhow, Context, Result};
use serde_json::json;
use tgrid_aggregation::batch::{batch_root, settlement_public_input};
use tgrid_aggregation::registry::hex32;
use tgrid_aggregation::TaskLeaf;
use tgrid_chain::bindings::ITaskMarket;
use tgrid_chain::format_tgrid;
use tgrid_chain::market::{MarketDomain, SettleCall, SettlementItem};

use crate::onchain::{
    poster_signature, skip_reason, unpaid_reason, Check, LeafEvent, SKIP_BAD_SIGNATURE, SKIP_NONCE_USED,
};

/// What happened to one leaf in its settling transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafOutcome {
    /// Settled and paid from its book (no event of its own).
    Paid,
    /// Settled (nonce used) but its book could not pay: `UnpaidReason` code.
    Unpaid(u8),
    /// Skipped (nonce untouched): `SkipReason` code.
    Skipped(u8),
}

impl LeafOutcome {
    /// `paid`, `unpaid` or `skipped`.
    pub fn status(&self) -> &'static str {
        match self {
            Self::Paid => "paid",
            Self::Unpaid(_) => "unpaid",
            Self::Skipped(_) => "skipped",
        }
    }

    /// The reason's name, if not paid.
    pub fn reason(&self) -> Option<String> {
        match *self {
            Self::Paid => None,
            Self::Unpaid(r) => Some(unpaid_reason(r)),
            Self::Skipped(r) => Some(skip_reason(r)),
        }
    }

    fn text(&self) -> String {
        match self.reason() {
            None => self.status().to_string(),
            Some(r) => format!("{} ({r})", self.status()),
        }
    }
}

/// One leaf of a settled batch, rebuilt from the calldata.
#[derive(Clone, Debug)]
pub struct LeafReport {
    /// Position in the batch.
    pub index: usize,
    /// The rebuilt order, its signature, the proving provider and the proven output.
    pub item: SettlementItem,
    /// The order's EIP-712 hash: the task id.
    pub hash: B256,
    /// The task leaf the proof binds.
    pub leaf: TaskLeaf,
    /// Whether the poster signed the order (`Err`: why not).
    pub signature: Result<(), String>,
    /// What happened to it in this transaction.
    pub outcome: LeafOutcome,
    /// The protocol fee taken from its payment if paid (given the fee rate).
    pub fee: Option<U256>,
}

/// A settled batch audited from its calldata and its transaction's events (no proof checked yet).
#[derive(Clone, Debug)]
pub struct BatchAudit {
    /// The leaves, in the proven order.
    pub leaves: Vec<LeafReport>,
    /// The batch root recomputed from the calldata (`None`: no leaves).
    pub batch_root: Option<[u8; 32]>,
    /// The registry root of the call.
    pub registry_root: [u8; 32],
    /// The public input recomputed from the calldata.
    pub public_input: Option<[u8; 32]>,
    /// The event.
    pub event: ITaskMarket::BatchSettled,
    /// The checks, in order.
    pub checks: Vec<Check>,
}

/// Each leaf's order hash and task leaf.
fn hashed_leaves(items: &[SettlementItem], domain: &MarketDomain) -> Vec<(B256, TaskLeaf)> {
    items
        .iter()
        .map(|item| {
            let hash = item.order.hash(domain);
            let leaf = TaskLeaf {
                task_id: hash.0,
                model_id: item.order.order.model_id.0,
                input_commitment: item.order.order.input_commitment.0,
                output_commitment: item.output_commitment.0,
                provider: item.provider.0 .0,
            };
            (hash, leaf)
        })
        .collect()
}

/// The RFC 6962 root of a call's task leaves.
pub fn recompute_root(call: &SettleCall, domain: &MarketDomain) -> Result<B256> {
    let items = call.batch.items()?;
    let hashes: Vec<[u8; 32]> = hashed_leaves(&items, domain).iter().map(|(_, l)| l.hash()).collect();
    batch_root(&hashes).map(B256::from).ok_or_else(|| anyhow!("the batch has no leaves"))
}

/// Matches the receipt's leaf events to the leaves. The contract emits at most one event per
/// leaf, in leaf order, none for a paid leaf; a leaf whose order appears earlier in the batch was
/// skipped (`NonceUsed`) if the earlier one settled. So, per order hash, the leaves before the paid
/// one (if any) have the leading events that are not `NonceUsed` skips, the paid one none, the
/// rest the remaining events. `Err` says what does not fit.
pub(super) fn assign_outcomes(hashes: &[B256], events: &[LeafEvent]) -> (Vec<LeafOutcome>, Vec<String>) {
    let mut problems = Vec::new();
    let mut outcomes = vec![LeafOutcome::Paid; hashes.len()];
    let mut positions: BTreeMap<B256, Vec<usize>> = BTreeMap::new();
    for (i, h) in hashes.iter().enumerate() {
        positions.entry(*h).or_default().push(i);
    }
    let mut by_hash: BTreeMap<B256, Vec<LeafOutcome>> = BTreeMap::new();
    for e in events {
        let outcome = match *e {
            LeafEvent::Skipped { reason, .. } => LeafOutcome::Skipped(reason),
            LeafEvent::Unpaid { reason, .. } => LeafOutcome::Unpaid(reason),
        };
        if !positions.contains_key(&e.hash()) {
            problems.push(format!("the receipt has an event for order {}, which is not in the batch", e.hash()));
            continue;
        }
        by_hash.entry(e.hash()).or_default().push(outcome);
    }
    for (hash, pos) in &positions {
        let evs = by_hash.remove(hash).unwrap_or_default();
        let (k, m) = (pos.len(), evs.len());
        if m > k {
            problems.push(format!("order {hash} has {m} leaf events for {k} leaves"));
        }
        if m + 1 < k {
            problems.push(format!("order {hash} appears in {k} leaves but only {m} were not paid"));
        }
        // The paid leaf: after the leading events that are not NonceUsed skips.
        let paid_at = if m + 1 == k {
            evs.iter().take_while(|o| **o != LeafOutcome::Skipped(SKIP_NONCE_USED)).count()
        } else {
            usize::MAX
        };
        let mut evs = evs.into_iter();
        for (j, &p) in pos.iter().enumerate() {
            if j != paid_at {
                outcomes[p] = evs.next().unwrap_or(LeafOutcome::Paid);
            }
        }
    }
    (outcomes, problems)
}

impl BatchAudit {
    /// Audits a settled batch: rebuilds every order and its hash from the calldata, checks each
    /// poster signature, recomputes the leaves, the batch root and the public input and compares
    /// them with the event, and matches the receipt's per-leaf events to the leaves (totals
    /// checked against the event). `fee_bps`: the protocol fee rate in force, for per-leaf fees.
    pub fn build(
        call: &SettleCall,
        domain: &MarketDomain,
        event: &ITaskMarket::BatchSettled,
        leaf_events: &[LeafEvent],
        fee_bps: Option<U256>,
    ) -> Result<Self> {
        let items = call.batch.items().context("settleBatch calldata")?;
        let hashed = hashed_leaves(&items, domain);
        let hashes: Vec<B256> = hashed.iter().map(|(h, _)| *h).collect();
        let (outcomes, problems) = assign_outcomes(&hashes, leaf_events);
        let leaves: Vec<LeafReport> = items
            .into_iter()
            .zip(hashed)
            .zip(outcomes)
            .enumerate()
            .map(|(index, ((item, (hash, leaf)), outcome))| {
                let payment = U256::from(item.order.order.payment);
                let fee =
                    fee_bps.filter(|_| outcome == LeafOutcome::Paid).map(|bps| payment * bps / U256::from(10_000u64));
                LeafReport { index, signature: poster_signature(&item.order, domain), item, hash, leaf, outcome, fee }
            })
            .collect();

        let mut checks = Vec::new();
        let n = leaves.len() as u64;
        let count_ok = U256::from(n) == event.taskCount;
        checks.push(Check::new(
            "count",
            count_ok,
            format!("{n} leaves in the calldata, the event says {}", event.taskCount),
        ));
        let leaf_hashes: Vec<[u8; 32]> = leaves.iter().map(|l| l.leaf.hash()).collect();
        let root = batch_root(&leaf_hashes);
        let registry_root = call.registry_root.0;
        checks.push(match root {
            Some(r) if r == event.batchRoot.0 => {
                Check::new("batch_root", true, format!("recomputed from the calldata: {}", hex32(&r)))
            }
            Some(r) => Check::new(
                "batch_root",
                false,
                format!("the calldata's leaves hash to {}, the event says {}", hex32(&r), event.batchRoot),
            ),
            None => Check::new("batch_root", false, "the calldata has no leaves"),
        });
        checks.push(Check::new(
            "registry_root",
            event.registryRoot == call.registry_root,
            format!("calldata {}, event {}", call.registry_root, event.registryRoot),
        ));
        let public_input = root.map(|r| settlement_public_input(&r, &registry_root, n));
        let event_input = event.publicInput.to_be_bytes::<32>();
        checks.push(match public_input {
            Some(p) if p == event_input => Check::new(
                "public_input",
                true,
                format!("sha256(batch root ‖ registry root ‖ {n}) & (2^253 - 1) = {}", hex32(&p)),
            ),
            Some(p) => Check::new(
                "public_input",
                false,
                format!("recomputed {}, the event says {}", hex32(&p), hex32(&event_input)),
            ),
            None => Check::new("public_input", false, "no leaves"),
        });

        // Signatures: the contract skips exactly the leaves whose signature does not verify.
        let mut disagree = Vec::new();
        for l in &leaves {
            let skipped_bad_sig = l.outcome == LeafOutcome::Skipped(SKIP_BAD_SIGNATURE);
            if l.signature.is_err() != skipped_bad_sig {
                disagree.push(format!(
                    "leaf {}: signature {} but the contract reports {}",
                    l.index,
                    if l.signature.is_ok() { "valid" } else { "invalid" },
                    l.outcome.text()
                ));
            }
        }
        let bad_sigs = leaves.iter().filter(|l| l.signature.is_err()).count();
        checks.push(Check::new(
            "signatures",
            disagree.is_empty(),
            if disagree.is_empty() {
                format!(
                    "{} of {n} poster signatures verify{}",
                    n as usize - bad_sigs,
                    if bad_sigs > 0 { "; the contract skipped the others" } else { "" }
                )
            } else {
                disagree.join("; ")
            },
        ));

        // Outcomes and totals: the paid leaves' payments are the provider pay plus the fees.
        let paid: Vec<&LeafReport> = leaves.iter().filter(|l| l.outcome == LeafOutcome::Paid).collect();
        let paid_sum: U256 = paid.iter().map(|l| U256::from(l.item.order.order.payment)).sum();
        let mut outcome_problems = problems;
        if U256::from(paid.len()) != event.paidCount {
            outcome_problems.push(format!(
                "{} leaves without a skip or unpaid event, the event counts {} paid",
                paid.len(),
                event.paidCount
            ));
        }
        if paid_sum != event.providerPay + event.fees {
            outcome_problems.push(format!(
                "the paid leaves' payments sum to {} TGRID, the event's provider pay plus fees to {} TGRID",
                format_tgrid(paid_sum),
                format_tgrid(event.providerPay + event.fees)
            ));
        }
        checks.push(Check::new(
            "outcomes",
            outcome_problems.is_empty(),
            if outcome_problems.is_empty() {
                format!(
                    "{} paid ({} TGRID = {} to providers + {} fees), receipt events match the leaves",
                    paid.len(),
                    format_tgrid(paid_sum),
                    format_tgrid(event.providerPay),
                    format_tgrid(event.fees)
                )
            } else {
                outcome_problems.join("; ")
            },
        ));
        Ok(Self { leaves, batch_root: root, registry_root, public_input, event: event.clone(), checks })
    }

    /// Leaves paid, unpaid, skipped.
    pub fn tally(&self) -> (usize, usize, usize) {
        let count = |s: &str| self.leaves.iter().filter(|l| l.outcome.status() == s).count();
        (count("paid"), count("unpaid"), count("skipped"))
    }

    /// Whether every check so far holds.
    #[cfg(test)]
    pub fn ok(&self) -> bool {
        self.checks.iter().all(|c| c.ok)
    }
}

/// One leaf as JSON (the file-based `leaves` fields, then the order's).
pub fn leaf_json(l: &LeafReport) -> serde_json::Value {
    let o = &l.item.order.order;
    json!({
        "index": l.index,
        "task_id": l.hash.to_string(),
        "order_hash": l.hash.to_string(),
        "model_id": o.model_id.to_string(),
        "input_commitment": o.input_commitment.to_string(),
        "output_commitment": l.item.output_commitment.to_string(),
        "provider": l.item.provider.to_string(),
        "leaf": hex32(&l.leaf.hash()),
        "poster": o.poster.to_string(),
        "book": o.book(),
        "order_index": o.index(),
        "nonce": o.nonce.to_string(),
        "named_provider": o.is_named(),
        "payment": format_tgrid(U256::from(o.payment)),
        "collateral": format_tgrid(U256::from(o.collateral)),
        "deadline": o.deadline,
        "slash_bps": o.slash_bps,
        "poster_share_bps": o.poster_share_bps,
        "signature_valid": l.signature.is_ok(),
        "signature_error": l.signature.as_ref().err(),
        "outcome": l.outcome.status(),
        "reason": l.outcome.reason(),
        "fee": l.fee.map(format_tgrid),
        "provider_pay": l.fee.map(|fee| format_tgrid(U256::from(o.payment).saturating_sub(fee))),
    })
}

/// One leaf as text lines, each ending in a newline.
pub(super) fn leaf_text(l: &LeafReport) -> String {
    let o = &l.item.order.order;
    let mut text = format!(
        "  #{:<4} order {}  {}\n         poster {} book {} index {}  payment {} TGRID\n         provider {}{}  model {}\n         input {}  output {}\n",
        l.index,
        l.hash,
        l.outcome.text(),
        o.poster,
        o.book(),
        o.index(),
        format_tgrid(U256::from(o.payment)),
        l.item.provider,
        if o.is_named() { " (named)" } else { "" },
        o.model_id,
        o.input_commitment,
        l.item.output_commitment,
    );
    if let Err(e) = &l.signature {
        text += &format!("         SIGNATURE INVALID: {e}\n");
    }
    text
}
