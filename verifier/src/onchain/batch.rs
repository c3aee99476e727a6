//! `tgrid-verifier batch 0x<batch root> --rpc URL`: a settled batch re-audited from its
//! `settleBatch` calldata and its transaction's events.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use alloy::eips::BlockId;
use alloy::primitives::{Address, B256, U256};
use alloy::sol_types::SolEvent;
use anyhow::{anyhow, Context, Result};
use serde_json::json;
use tgrid_aggregation::batch::{batch_root, settlement_public_input};
use tgrid_aggregation::registry::hex32;
use tgrid_aggregation::TaskLeaf;
use tgrid_chain::bindings::{IKeyedGroth16Verifier, ITaskMarket};
use tgrid_chain::format_tgrid;
use tgrid_chain::market::{MarketDomain, SettleCall, SettlementItem};
use tgrid_cli::{bad_input, parse_hex, Output};

use super::{
    checks_json, checks_text, first_failure, poster_signature, skip_reason, unpaid_reason, Chain, Check, LeafEvent,
    Reported, SKIP_BAD_SIGNATURE, SKIP_NONCE_USED,
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
fn assign_outcomes(hashes: &[B256], events: &[LeafEvent]) -> (Vec<LeafOutcome>, Vec<String>) {
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
fn leaf_text(l: &LeafReport) -> String {
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

/// The deployed verifier's key, and where the local copy comes from.
struct KeyStep {
    verifier: Address,
    key_id: Option<String>,
    deployed_digest: Option<B256>,
    vk_path: Option<String>,
    /// Why anyone could forge proofs under the key (`None`: nothing known against it).
    insecure: Option<String>,
}

/// `tgrid-verifier batch BATCH_ROOT --rpc URL`.
pub fn audit_batch(
    batch_root: &str,
    rpc: &str,
    deployment: &Path,
    vk: Option<&Path>,
    keys_dir: &Path,
    out: &Output,
) -> Result<()> {
    let started = Instant::now();
    let root = B256::from(parse_hex::<32>(batch_root, "batch root").map_err(bad_input)?);
    let rt = super::runtime()?;
    let (settlement, also, audit, mut key, verify_gas) = rt.block_on(async {
        let chain = Chain::connect(rpc, deployment).await?;
        let logs = chain.market_logs(ITaskMarket::BatchSettled::SIGNATURE_HASH, root, "BatchSettled").await?;
        let first = logs.first().ok_or_else(|| {
            bad_input(anyhow!("no batch with root {root} settled on the market {}", chain.deployment.market))
        })?;
        let tx = first.transaction_hash.context("the BatchSettled log has no transaction hash")?;
        // The same batch settled again later skipped every leaf: the first one is the settlement.
        let also: Vec<B256> = logs.iter().skip(1).filter_map(|l| l.transaction_hash).filter(|t| *t != tx).collect();
        let settlement = chain
            .settlements(tx, true)
            .await?
            .into_iter()
            .find(|s| s.event.batchRoot == root)
            .ok_or_else(|| anyhow!("transaction {tx} has no BatchSettled event for root {root}"))?;
        // The parameters in force when the batch settled (governance may have changed them since);
        // a node without that block's state answers for the latest block.
        let market = ITaskMarket::new(chain.deployment.market, &chain.provider);
        let params = match market.parameters().block(BlockId::number(settlement.block)).call().await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!("TaskMarket.parameters at block {}: {e}; using the latest", settlement.block);
                market.parameters().call().await.context("TaskMarket.parameters")?
            }
        };
        let audit = BatchAudit::build(
            &settlement.call,
            &chain.domain,
            &settlement.event,
            &settlement.leaf_events,
            Some(params.protocolFeeBps),
        )?;
        let verifier = IKeyedGroth16Verifier::new(params.verifier, &chain.provider);
        let key_id = verifier.VERIFYING_KEY_ID().call().await;
        let digest = verifier.VERIFYING_KEY_DIGEST().call().await;
        let key = KeyStep {
            verifier: params.verifier,
            // From the key's digest (a public-seed key under any name) and its parsed id (its
            // FRI parameters); an id that does not say them counts against the key.
            insecure: tgrid_settlement_proof::insecurity(key_id.as_deref().ok(), digest.as_ref().ok().map(|d| &d.0)),
            key_id: key_id.map_err(|e| tracing::info!("VERIFYING_KEY_ID: {e}")).ok(),
            deployed_digest: digest.map_err(|e| tracing::info!("VERIFYING_KEY_DIGEST: {e}")).ok(),
            vk_path: None,
        };
        let verify_gas = settlement.frame.as_ref().and_then(|f| super::gas_of_call(f, params.verifier));
        anyhow::Ok((settlement, also, audit, key, verify_gas))
    })?;

    let mut checks = audit.checks.clone();
    // The key: a local verifying key whose digest is the deployed verifier's, then the proof.
    let key_result = verify_proof(&settlement.call.proof, audit.public_input, vk, keys_dir, &mut key);
    let proof_error = match key_result {
        Ok(groth16) => {
            checks.extend(groth16);
            None
        }
        Err((check, e)) => {
            checks.push(check);
            Some(e)
        }
    };
    let valid = checks.iter().all(|c| c.ok);
    let error = proof_error
        .as_ref()
        .map(|e| format!("{e:#}"))
        .or_else(|| first_failure(&checks))
        .map(|e| format!("batch {root} (tx {}) does not verify: {e}", settlement.transaction));

    let count = audit.leaves.len() as u64;
    let (paid, unpaid, skipped) = audit.tally();
    let ev = &audit.event;
    let value = json!({
        "valid": valid,
        "error": error,
        "batch_root": audit.batch_root.map(|r| hex32(&r)),
        "registry_root": hex32(&audit.registry_root),
        "public_input": audit.public_input.map(|p| hex32(&p)),
        "count": count,
        "paid_count": paid,
        "unpaid_count": unpaid,
        "skipped_count": skipped,
        "settler": ev.settler.to_string(),
        "provider_pay": format_tgrid(ev.providerPay),
        "fees": format_tgrid(ev.fees),
        "transaction": settlement.transaction.to_string(),
        "block": settlement.block,
        "direct_call": settlement.direct,
        "also_settled_in": also.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
        "gas_used": settlement.gas_used,
        "gas_per_task": settlement.gas_used / count.max(1),
        "verify_gas": verify_gas,
        "verifier": key.verifier.to_string(),
        "key_id": key.key_id,
        "verifying_key_digest": key.deployed_digest.map(|d| d.to_string()),
        "verifying_key": key.vk_path,
        "insecure_key": key.insecure.is_some(),
        "insecure_reason": key.insecure,
        "checks": checks_json(&checks),
        "leaves": audit.leaves.iter().map(leaf_json).collect::<Vec<_>>(),
        "seconds": started.elapsed().as_secs_f64(),
    });
    out.emit(value, || {
        let mut text = match &error {
            None => "valid settled batch (re-verified off-chain from calldata)".to_string(),
            Some(e) => format!("INVALID settled batch: {e}"),
        };
        text += &format!(
            "\n  batch root     {}\n  registry root  {}\n  tasks          {count} ({paid} paid, {unpaid} unpaid, {skipped} skipped)\n  public input   {}\n  settler        {}\n  paid           {} TGRID to providers, {} TGRID fees\n  transaction    {} (block {}{})\n  gas            {} total, {} per task, {} in verifyProof\n  verifier       {} key {}{}",
            audit.batch_root.map_or("(none)".into(), |r| hex32(&r)),
            hex32(&audit.registry_root),
            audit.public_input.map_or("(none)".into(), |p| hex32(&p)),
            ev.settler,
            format_tgrid(ev.providerPay),
            format_tgrid(ev.fees),
            settlement.transaction,
            settlement.block,
            if settlement.direct { "" } else { ", through another contract" },
            settlement.gas_used,
            settlement.gas_used / count.max(1),
            verify_gas.map_or("(no trace from the node)".to_string(), |g| g.to_string()),
            key.verifier,
            key.key_id.as_deref().unwrap_or("(unknown)"),
            key.insecure.as_ref().map_or(String::new(), |why| format!("  (INSECURE: {why})")),
        );
        for t in &also {
            text += &format!("\n  settled again  {t} (every leaf skipped there)");
        }
        text += "\n  checks";
        text += &checks_text(&checks);
        text += "\n";
        text += audit.leaves.iter().map(leaf_text).collect::<String>().trim_end();
        text
    })?;
    match (valid, proof_error) {
        (true, _) => Ok(()),
        (false, Some(e)) => Err(anyhow::Error::new(Reported(e))),
        (false, None) => Err(anyhow::Error::new(Reported(anyhow!("{}", error.unwrap_or_default())))),
    }
}

/// Finds the local key, checks its digest against the deployed verifier's and verifies the
/// proof for the recomputed public input: the checks `key_digest` and `groth16`. On an error that
/// stops it, the failed check and the error (bad input for an unreadable key file).
fn verify_proof(
    proof: &[U256; 8],
    public_input: Option<[u8; 32]>,
    vk: Option<&Path>,
    keys_dir: &Path,
    key: &mut KeyStep,
) -> std::result::Result<Vec<Check>, (Check, anyhow::Error)> {
    let fail = |detail: String, e: anyhow::Error| (Check::new("key_digest", false, detail), e);
    let Some(deployed) = key.deployed_digest else {
        let e = anyhow!(
            "the verifier {} does not answer VERIFYING_KEY_DIGEST: it is not a keyed Groth16 verifier, so no \
             local key can be matched to it",
            key.verifier
        );
        return Err(fail(e.to_string(), e));
    };
    let vk_path = match vk {
        Some(p) => p.to_path_buf(),
        None => {
            let Some(id) = key.key_id.as_deref() else {
                let e = anyhow!(
                    "the verifier {} does not answer VERIFYING_KEY_ID, so its key cannot be found in {}; \
                     give the verifying key with --vk (its digest must be {deployed})",
                    key.verifier,
                    keys_dir.display()
                );
                return Err(fail(e.to_string(), e));
            };
            match crate::safe_key_id(id) {
                Ok(id) => keys_dir.join(format!("{id}.vk.json")),
                Err(e) => return Err(fail(e.to_string(), bad_input(e))),
            }
        }
    };
    key.vk_path = Some(vk_path.display().to_string());
    let vk = match crate::load_vk(&vk_path) {
        Ok(vk) => vk,
        Err(e) => return Err(fail(format!("{e:#}"), e)),
    };
    let local = match tgrid_groth16::evm::verifying_key_digest(&vk) {
        Ok(d) => B256::from(d),
        Err(e) => return Err(fail(e.to_string(), bad_input(e))),
    };
    if local != deployed {
        let e = anyhow!(
            "{} has digest {local}, the deployed verifier {} was built from key {} with digest {deployed}",
            vk_path.display(),
            key.verifier,
            key.key_id.as_deref().unwrap_or("(no VERIFYING_KEY_ID)")
        );
        return Err(fail(e.to_string(), e));
    }
    let digest =
        Check::new("key_digest", true, format!("{} has the deployed verifier's digest {deployed}", vk_path.display()));
    let groth16 = |ok: bool, detail: String| Check::new("groth16", ok, detail);
    let Some(input) = public_input else {
        return Ok(vec![digest, groth16(false, "no public input to verify against".into())]);
    };
    let verified = tgrid_groth16::evm::proof_from_calldata(proof)
        .map_err(|e| format!("the proof words are not a proof: {e}"))
        .and_then(|proof| {
            let scalar = tgrid_groth16::evm::public_input_scalar(&input).map_err(|e| e.to_string())?;
            tgrid_groth16::verify(&vk, scalar, &proof).map_err(|e| e.to_string())
        });
    let check = match verified {
        Ok(true) => groth16(true, format!("the proof verifies off-chain for public input {}", hex32(&input))),
        Ok(false) => groth16(false, "the Groth16 proof does not verify for this public input".into()),
        Err(e) => groth16(false, e),
    };
    Ok(vec![digest, check])
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use alloy::signers::local::PrivateKeySigner;
    use alloy::sol_types::SolCall;
    use tgrid_chain::market::{Order, SettlementBatch, SignedOrder};

    use super::*;

    fn domain() -> MarketDomain {
        MarketDomain { chain_id: 31337, market: Address::repeat_byte(0x11) }
    }

    fn key(byte: u8) -> PrivateKeySigner {
        PrivateKeySigner::from_bytes(&B256::repeat_byte(byte)).unwrap()
    }

    fn order(poster: Address, book: u32, index: u32) -> Order {
        Order {
            poster,
            provider: Address::ZERO,
            model_id: B256::repeat_byte(0x30 + (index % 2) as u8),
            input_commitment: B256::repeat_byte(0x40 + index as u8),
            payment: 10u128.pow(18) * u128::from(1 + index),
            collateral: 10u128.pow(20),
            deadline: 1_800_000_000,
            nonce: Order::nonce_of(book, index),
            slash_bps: 5_000,
            poster_share_bps: 5_000,
        }
    }

    fn item(signed: SignedOrder, provider: u8, output: u8) -> SettlementItem {
        SettlementItem {
            order: signed,
            provider: Address::repeat_byte(provider),
            output_commitment: B256::repeat_byte(output),
        }
    }

    /// Four orders of two posters proven by two providers; leaf 2 carries a signature by another
    /// key than its poster's (a forgery the contract skips).
    fn items() -> Vec<SettlementItem> {
        let (a, b, forger) = (key(1), key(2), key(3));
        let d = domain();
        let sign =
            |k: &PrivateKeySigner, book, index| SignedOrder::sign(order(k.address(), book, index), k, &d).unwrap();
        let genuine = sign(&a, 0, 2);
        let forged_sig = SignedOrder::sign(order(forger.address(), 0, 2), &forger, &d).unwrap().signature;
        let forged = SignedOrder { order: genuine.order.clone(), signature: forged_sig };
        vec![
            item(sign(&a, 0, 0), 0xe1, 0xa0),
            item(sign(&b, 1, 0), 0xe2, 0xa1),
            item(forged, 0xe1, 0xa2),
            item(sign(&a, 0, 1), 0xe2, 0xa3),
        ]
    }

    /// The call as the chain carries it: built, ABI-encoded and decoded back.
    fn call_of(items: &[SettlementItem]) -> SettleCall {
        let batch = SettlementBatch::build(items).unwrap();
        let input = batch.call(B256::repeat_byte(0x77), [U256::from(5u64); 8]).abi_encode();
        SettlementBatch::decode_call(&input).unwrap()
    }

    /// The event the market would emit for `call` with the leaves `paid` paid.
    fn event_of(call: &SettleCall, paid: &[usize], fee_bps: u64) -> ITaskMarket::BatchSettled {
        let d = domain();
        let root = recompute_root(call, &d).unwrap();
        let items = call.batch.items().unwrap();
        let payments: U256 = paid.iter().map(|&i| U256::from(items[i].order.order.payment)).sum();
        let fees: U256 = paid
            .iter()
            .map(|&i| U256::from(items[i].order.order.payment) * U256::from(fee_bps) / U256::from(10_000u64))
            .sum();
        let input = settlement_public_input(&root.0, &call.registry_root.0, items.len() as u64);
        ITaskMarket::BatchSettled {
            batchRoot: root,
            registryRoot: call.registry_root,
            settler: Address::repeat_byte(0x5e),
            taskCount: U256::from(items.len()),
            paidCount: U256::from(paid.len()),
            providerPay: payments - fees,
            fees,
            publicInput: U256::from_be_bytes(input),
        }
    }

    fn check<'a>(audit: &'a BatchAudit, name: &str) -> &'a Check {
        audit.checks.iter().find(|c| c.name == name).unwrap()
    }

    #[test]
    fn a_settled_batch_is_rebuilt_from_calldata_and_its_forged_leaf_reported() {
        let items = items();
        let call = call_of(&items);
        let d = domain();
        let forged_hash = items[2].order.hash(&d);
        let skipped = [LeafEvent::Skipped { hash: forged_hash, reason: SKIP_BAD_SIGNATURE }];
        let event = event_of(&call, &[0, 1, 3], 100);
        let audit = BatchAudit::build(&call, &d, &event, &skipped, Some(U256::from(100u64))).unwrap();
        assert!(audit.ok(), "{:?}", audit.checks);
        assert_eq!(audit.tally(), (3, 0, 1));
        for (l, item) in audit.leaves.iter().zip(&items) {
            // Every order comes back with its fields and its hash, the task id of the leaf.
            assert_eq!(l.item, *item);
            assert_eq!(l.hash, item.order.hash(&d));
            assert_eq!(l.leaf.task_id, l.hash.0);
            assert_eq!(l.leaf.provider, item.provider.0 .0);
        }
        assert!(audit.leaves[2].signature.as_ref().unwrap_err().contains("recovers to"));
        assert_eq!(audit.leaves[2].outcome, LeafOutcome::Skipped(SKIP_BAD_SIGNATURE));
        assert_eq!(audit.leaves[2].fee, None);
        // 1 % of 1 TGRID.
        assert_eq!(audit.leaves[0].fee, Some(U256::from(10u64.pow(16))));
        assert_eq!(audit.batch_root, Some(event.batchRoot.0));
        assert_eq!(audit.public_input, Some(event.publicInput.to_be_bytes::<32>()));

        let json = leaf_json(&audit.leaves[2]);
        assert_eq!(json["outcome"], "skipped");
        assert_eq!(json["reason"], "BadPosterSignature");
        assert_eq!(json["signature_valid"], false);
        assert_eq!(json["order_hash"], forged_hash.to_string());
        assert_eq!(json["book"], 0);
        assert_eq!(json["order_index"], 2);
        assert_eq!(json["payment"], "3");
        assert_eq!(leaf_json(&audit.leaves[0])["provider_pay"], "0.99");
        let json = leaf_json(&audit.leaves[1]);
        assert_eq!((json["outcome"].as_str(), json["reason"].as_str()), (Some("paid"), None));
        assert_eq!(json["book"], 1);
        assert!(leaf_text(&audit.leaves[2]).contains("SIGNATURE INVALID"));
    }

    #[test]
    fn an_event_that_disagrees_with_the_calldata_fails_its_check() {
        let items = items();
        let call = call_of(&items);
        let d = domain();
        let skipped = [LeafEvent::Skipped { hash: items[2].order.hash(&d), reason: SKIP_BAD_SIGNATURE }];
        let good = event_of(&call, &[0, 1, 3], 0);
        let failing = |event: &ITaskMarket::BatchSettled, events: &[LeafEvent]| -> Vec<&'static str> {
            let audit = BatchAudit::build(&call, &d, event, events, None).unwrap();
            audit.checks.iter().filter(|c| !c.ok).map(|c| c.name).collect()
        };
        assert!(failing(&good, &skipped).is_empty());
        let mut e = good.clone();
        e.batchRoot = B256::repeat_byte(9);
        assert_eq!(failing(&e, &skipped), ["batch_root"]);
        let mut e = good.clone();
        e.publicInput += U256::from(1u64);
        assert_eq!(failing(&e, &skipped), ["public_input"]);
        let mut e = good.clone();
        e.taskCount = U256::from(5u64);
        assert_eq!(failing(&e, &skipped), ["count"]);
        let mut e = good.clone();
        e.registryRoot = B256::ZERO;
        assert_eq!(failing(&e, &skipped), ["registry_root"]);
        let mut e = good.clone();
        e.fees += U256::from(1u64);
        assert_eq!(failing(&e, &skipped), ["outcomes"]);
        // The forged leaf reported paid: the signature check and the paid count disagree.
        assert_eq!(failing(&good, &[]), ["signatures", "outcomes"]);
        // A genuine leaf reported skipped for its signature.
        let wrong = [LeafEvent::Skipped { hash: items[0].order.hash(&d), reason: SKIP_BAD_SIGNATURE }];
        assert!(failing(&good, &wrong).contains(&"signatures"));
        // An event for an order the batch does not hold.
        let stray = [skipped[0], LeafEvent::Unpaid { hash: B256::repeat_byte(1), reason: 2 }];
        let audit = BatchAudit::build(&call, &d, &good, &stray, None).unwrap();
        assert!(check(&audit, "outcomes").detail.contains("not in the batch"), "{:?}", audit.checks);
    }

    #[test]
    fn repeated_orders_get_their_events_in_leaf_order() {
        let d = domain();
        let a = key(1);
        let o = SignedOrder::sign(order(a.address(), 0, 0), &a, &d).unwrap();
        let h = o.hash(&d);
        let items = vec![item(o.clone(), 0xe1, 1), item(o.clone(), 0xe1, 1), item(o, 0xe2, 2)];
        let hashes = [h, h, h];
        let (nonce_used, unpaid) = (LeafOutcome::Skipped(SKIP_NONCE_USED), LeafOutcome::Unpaid(2));
        let ev = |o: LeafOutcome| match o {
            LeafOutcome::Skipped(reason) => LeafEvent::Skipped { hash: h, reason },
            LeafOutcome::Unpaid(reason) => LeafEvent::Unpaid { hash: h, reason },
            LeafOutcome::Paid => unreachable!(),
        };
        // The first settles and is paid; the repeats find its nonce used.
        let (out, problems) = assign_outcomes(&hashes, &[ev(nonce_used), ev(nonce_used)]);
        assert_eq!(out, [LeafOutcome::Paid, nonce_used, nonce_used]);
        assert!(problems.is_empty());
        // Skipped for its deadline... then settled by none: every leaf has its event.
        let late = LeafOutcome::Skipped(2);
        let (out, _) = assign_outcomes(&hashes, &[ev(late), ev(late), ev(late)]);
        assert_eq!(out, [late; 3]);
        // Settled unpaid first.
        let (out, _) = assign_outcomes(&hashes, &[ev(unpaid), ev(nonce_used), ev(nonce_used)]);
        assert_eq!(out, [unpaid, nonce_used, nonce_used]);
        // Two paid leaves of one order cannot be.
        let (_, problems) = assign_outcomes(&hashes, &[ev(nonce_used)]);
        assert_eq!(problems.len(), 1, "{problems:?}");

        let call = call_of(&items);
        let event = event_of(&call, &[0], 0);
        let audit = BatchAudit::build(&call, &d, &event, &[ev(nonce_used), ev(nonce_used)], None).unwrap();
        assert!(audit.ok(), "{:?}", audit.checks);
        assert_eq!(audit.tally(), (1, 0, 2));
    }

    /// Random bytes and mutated calldata are refused or audited, never a panic.
    #[test]
    fn random_and_mutated_calldata_never_panic() {
        let items = items();
        let batch = SettlementBatch::build(&items).unwrap();
        let input = batch.call(B256::repeat_byte(0x77), [U256::from(5u64); 8]).abi_encode();
        let d = domain();
        let event = event_of(&call_of(&items), &[0, 1, 3], 0);
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut decoded = 0;
        for round in 0..3_000 {
            let bytes: Vec<u8> = if round % 3 == 0 {
                let len = (next() % 1_200) as usize;
                let mut b: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                if round % 2 == 0 && b.len() >= 4 {
                    b[..4].copy_from_slice(&input[..4]);
                }
                b
            } else {
                let mut b = input.clone();
                for _ in 0..1 + next() % 4 {
                    let at = (next() as usize) % b.len();
                    b[at] = next() as u8;
                }
                if round % 5 == 0 {
                    b.truncate((next() as usize) % b.len());
                }
                b
            };
            if let Ok(call) = SettlementBatch::decode_call(&bytes) {
                decoded += 1;
                let audit = BatchAudit::build(&call, &d, &event, &[], Some(U256::from(50u64))).unwrap();
                let _ = audit.leaves.iter().map(leaf_json).count();
                let _ = recompute_root(&call, &d);
            }
        }
        assert!(decoded > 0, "some mutations keep the calldata well formed");
        assert!(SettlementBatch::decode_call(&[]).is_err());
    }

    #[test]
    fn leaf_events_are_read_from_raw_logs() {
        let h = B256::repeat_byte(4);
        let log = |topic0: B256, data: Vec<u8>| {
            alloy::primitives::Log::new(Address::ZERO, vec![topic0, h], data.into()).unwrap()
        };
        let word = |v: u8| {
            let mut w = vec![0u8; 32];
            w[31] = v;
            w
        };
        let skipped = log(ITaskMarket::OrderSkipped::SIGNATURE_HASH, word(3));
        assert_eq!(LeafEvent::of(&skipped), Some(LeafEvent::Skipped { hash: h, reason: 3 }));
        let unpaid = log(ITaskMarket::OrderUnpaid::SIGNATURE_HASH, word(2));
        assert_eq!(LeafEvent::of(&unpaid), Some(LeafEvent::Unpaid { hash: h, reason: 2 }));
        assert_eq!(LeafEvent::of(&log(ITaskMarket::OrderSkipped::SIGNATURE_HASH, vec![1; 32])), None);
        assert_eq!(LeafEvent::of(&log(ITaskMarket::BatchSettled::SIGNATURE_HASH, word(1))), None);
        assert_eq!(super::super::skip_reason(9), "unknown skip reason 9");
        assert_eq!(LeafOutcome::Unpaid(2).reason().as_deref(), Some("BookEmpty"));
    }

    /// The key step with the devnet key and a real settlement proof of it (the v1 fixture: the
    /// step only needs its proof words and public input).
    #[test]
    fn the_proof_verifies_only_with_the_deployed_key() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../contracts/test/fixtures/groth16");
        let id = "wrap-production-r4q21g16-5ef98bd092609bcb-f4b8d33c24b2a135a445e7b013bdd76ae4b8a380c2a4650a44c42c43bd050268-insecure-devnet";
        let file: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join(format!("{id}.batch.g16.json"))).unwrap()).unwrap();
        let digest: B256 = file["key"]["verifying_key_digest"].as_str().unwrap().parse().unwrap();
        let input = parse_hex::<32>(file["public_input"].as_str().unwrap(), "input").unwrap();
        let mut proof = [U256::ZERO; 8];
        for (w, s) in proof.iter_mut().zip(file["proof"].as_array().unwrap()) {
            *w = s.as_str().unwrap().parse().unwrap();
        }
        let deployed = |digest: Option<B256>, key_id: Option<&str>| KeyStep {
            verifier: Address::repeat_byte(0xaa),
            key_id: key_id.map(str::to_string),
            deployed_digest: digest,
            vk_path: None,
            insecure: Some("devnet".into()),
        };
        let names = |checks: &[Check]| checks.iter().map(|c| (c.name, c.ok)).collect::<Vec<_>>();

        // Found by the deployed key id in the key directory, verified.
        let mut key = deployed(Some(digest), Some(id));
        let checks = verify_proof(&proof, Some(input), None, &dir, &mut key).unwrap();
        assert_eq!(names(&checks), [("key_digest", true), ("groth16", true)], "{checks:?}");
        assert!(key.vk_path.unwrap().ends_with(&format!("{id}.vk.json")));
        // Another public input or a changed proof word: the proof does not verify.
        let mut other = input;
        other[31] ^= 1;
        let checks = verify_proof(&proof, Some(other), None, &dir, &mut deployed(Some(digest), Some(id))).unwrap();
        assert_eq!(names(&checks), [("key_digest", true), ("groth16", false)]);
        let mut bent = proof;
        bent[0] += U256::from(1u64);
        let checks = verify_proof(&bent, Some(input), None, &dir, &mut deployed(Some(digest), Some(id))).unwrap();
        assert_eq!(names(&checks), [("key_digest", true), ("groth16", false)]);
        // A verifier built from another key (the accept-all stub answers 1 to everything).
        let stub = Some(B256::with_last_byte(1));
        let vk = dir.join(format!("{id}.vk.json"));
        let (check, e) = verify_proof(&proof, Some(input), Some(&vk), &dir, &mut deployed(stub, None)).unwrap_err();
        assert!(!check.ok && check.name == "key_digest");
        assert!(
            e.to_string().contains("with digest 0x0000000000000000000000000000000000000000000000000000000000000001"),
            "{e}"
        );
        // No key id to find the key by, no digest to match it to, no key file.
        let (_, e) = verify_proof(&proof, Some(input), None, &dir, &mut deployed(stub, None)).unwrap_err();
        assert!(e.to_string().contains("does not answer VERIFYING_KEY_ID"), "{e}");
        let (_, e) = verify_proof(&proof, Some(input), Some(&vk), &dir, &mut deployed(None, None)).unwrap_err();
        assert!(e.to_string().contains("does not answer VERIFYING_KEY_DIGEST"), "{e}");
        let (_, e) =
            verify_proof(&proof, Some(input), None, Path::new("/nonexistent"), &mut deployed(Some(digest), Some(id)))
                .unwrap_err();
        assert!(e.downcast_ref::<tgrid_cli::BadInput>().is_some(), "{e}");
        let (_, e) =
            verify_proof(&proof, Some(input), None, &dir, &mut deployed(Some(digest), Some("../x"))).unwrap_err();
        assert!(e.downcast_ref::<tgrid_cli::BadInput>().is_some(), "{e}");
    }
}
