//! `tgrid-verifier batch 0x<batch root> --rpc URL`: a settled batch re-audited from its
//! `settleBatch` calldata and its transaction's events.

use std::path::Path;
use std::time::Instant;

use alloy::eips::BlockId;
use alloy::primitives::{Address, B256, U256};
use alloy::sol_types::SolEvent;
use anyhow::{anyhow, Context, Result};
use serde_json::json;
use tgrid_aggregation::registry::hex32;
use tgrid_chain::bindings::{IKeyedGroth16Verifier, ITaskMarket};
use tgrid_chain::format_tgrid;
use tgrid_cli::{bad_input, parse_hex, Output};

use super::{checks_json, checks_text, first_failure, Chain, Check, Reported};

mod audit;
#[cfg(test)]
mod tests;

use audit::leaf_text;
pub use audit::{leaf_json, recompute_root, BatchAudit, LeafOutcome};

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
