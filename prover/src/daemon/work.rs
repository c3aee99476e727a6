//! An accepted order's work: its input from the store, the proof, the submission to the
//! sequencer, and following it on-chain until it settles.

use std::sync::Arc;
use std::time::Instant;

use alloy::primitives::{B256, U256};
use anyhow::{anyhow, bail, Context, Result};
use serde_json::json;
use tgrid_chain::format_tgrid as tgrid_amount;
use tgrid_chain::market::{Delivery, OrderOutcome, RelayError, ResultSubmission, SignedReceipt};
use tgrid_circuits::commit;
use tgrid_onnx::InputData;

use super::{short, write_synced, Daemon, TaskRecord, TaskState};

/// Largest input file read from the input store.
const MAX_INPUT_BYTES: u64 = 64 << 20;

impl Daemon {
    /// The order's input from the store, quantized and checked against its commitment. `None`
    /// while it is not (or not reachably) published; an error when what is published is not the
    /// committed input.
    pub(super) async fn input(&self, record: &TaskRecord) -> Result<Option<Vec<i8>>> {
        let o = &record.order.order;
        let name = format!("{}.json", o.input_commitment);
        let (text, source) = if self.settings.inputs_url.is_empty() {
            let path = self.settings.inputs_dir.join(&name);
            let len = match std::fs::metadata(&path) {
                Ok(m) => m.len(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
            };
            if len > MAX_INPUT_BYTES {
                bail!("{}: {len} bytes, larger than any input", path.display());
            }
            let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
            (text, path.display().to_string())
        } else {
            let url = format!("{}/{name}", self.settings.inputs_url.trim_end_matches('/'));
            let response = match self.http.get(&url).send().await {
                Ok(r) if r.status().as_u16() == 404 => return Ok(None),
                Ok(r) if r.status().is_success() => r,
                // Unreachable or failing store: look again next round.
                Ok(r) => {
                    tracing::warn!(url, status = %r.status(), "input store answered an error");
                    return Ok(None);
                }
                Err(e) => {
                    tracing::warn!(url, "input store unreachable: {e}");
                    return Ok(None);
                }
            };
            if response.content_length().is_some_and(|n| n > MAX_INPUT_BYTES) {
                bail!("{url}: larger than any input");
            }
            let bytes = response.bytes().await.with_context(|| format!("reading {url}"))?;
            if bytes.len() as u64 > MAX_INPUT_BYTES {
                bail!("{url}: larger than any input");
            }
            (String::from_utf8(bytes.to_vec()).with_context(|| format!("{url} is not UTF-8 JSON"))?, url)
        };
        let model = &self.models[&o.model_id].file.model;
        let data = InputData::from_json(&text).map_err(|e| anyhow!("{source}: {e}"))?;
        let sample = data.input_data.first().ok_or_else(|| anyhow!("{source} holds no sample"))?;
        let x = tgrid_circuits::infer::quantize_input(model, sample)
            .with_context(|| format!("{source} does not fit the model"))?;
        if B256::from(commit(&x).0) != o.input_commitment {
            bail!("{source} does not match the order's input commitment");
        }
        Ok(Some(x))
    }

    pub(super) async fn prove(&mut self, id: B256, record: &TaskRecord) -> Result<()> {
        let x: Vec<i8> = match std::fs::read(self.accepted_input_path(&id)) {
            Ok(bytes) => serde_json::from_slice(&bytes)?,
            // Accepted before a crash lost the copy: fetch it again.
            Err(_) => {
                self.input(record).await?.ok_or_else(|| anyhow!("the input of order {id} is not in the store"))?
            }
        };
        let model_id = record.order.order.model_id;
        let prover = Arc::clone(&self.models[&model_id].prover);
        let (task_id, provider) = (id.0, self.me.0 .0);
        let bar = self.out.spinner(&format!("proving order {}", short(&id)));
        let started = Instant::now();
        let (proof, output) = tokio::task::spawn_blocking(move || -> Result<_> {
            let (proof, trace, _stats) = prover.prove(&x, task_id, provider, &mut |_, _, _| {})?;
            Ok((proof.to_bytes(), trace.output().to_vec()))
        })
        .await??;
        bar.finish_and_clear();
        let seconds = started.elapsed().as_secs_f64();
        write_synced(&self.proof_path(&id), &proof)?;
        write_synced(&self.output_path(&id), &serde_json::to_vec(&json!({"output_int8": output}))?)?;
        let held = self.models.get_mut(&model_id).expect("held model");
        held.prove_estimate = if held.measured { held.prove_estimate.max(seconds * 1.5) } else { seconds * 1.5 };
        held.measured = true;
        self.set(id, TaskState::Proven)?;
        self.event(
            "proven",
            json!({"task_id": id.to_string(), "seconds": seconds, "proof_bytes": proof.len()}),
            format!("proved order {} in {seconds:.1} s ({} bytes)", short(&id), proof.len()),
        );
        Ok(())
    }

    pub(super) async fn submit(&mut self, id: B256, record: &TaskRecord, now: u64) -> Result<()> {
        if now > record.deadline() {
            return self.follow(id, record, now).await;
        }
        let proof = std::fs::read(self.proof_path(&id))?;
        let output: serde_json::Value = serde_json::from_slice(&std::fs::read(self.output_path(&id))?)?;
        let output: Vec<i8> = serde_json::from_value(output["output_int8"].clone())?;
        let acceptance = record.acceptance.clone().ok_or_else(|| anyhow!("order {id} has no acceptance"))?;
        let output_commitment = B256::from(commit(&output).0);
        let delivery = Delivery::of_proof(id, output_commitment, &proof);
        let submission = ResultSubmission::sign(
            record.order.clone(),
            acceptance,
            output,
            output_commitment,
            &proof,
            &self.signer,
            &self.domain,
        )?;
        match self.relay.submit_result(&submission).await {
            Ok(answer) => {
                let receipt = self.check_receipt(&answer, &delivery);
                if let Some(r) = self.state.tasks.get_mut(&id) {
                    r.receipt = receipt.clone();
                }
                self.set(id, TaskState::Submitted)?;
                let by = receipt.as_ref().map(|r| r.sequencer.to_string());
                self.event(
                    "submitted",
                    json!({"task_id": id.to_string(), "receipt": receipt}),
                    match by {
                        Some(by) => format!("submitted order {} to the sequencer (receipt signed by {by})", short(&id)),
                        None => format!("submitted order {} to the sequencer (no valid receipt)", short(&id)),
                    },
                );
                Ok(())
            }
            // Busy, rate-limited or down: the same submission again next round.
            Err(e @ RelayError::Unreachable { .. }) => Err(e.into()),
            Err(RelayError::Refused { status, reason, .. }) if matches!(status, 408 | 429) || status >= 500 => {
                bail!("the sequencer answered {status}: {reason} (retrying)")
            }
            // Refused for good by this sequencer: the chain decides, and near the deadline the
            // daemon settles the order itself.
            Err(RelayError::Refused { status, reason, .. }) => {
                let reason = format!("the sequencer refused the result ({status}): {reason}");
                self.event(
                    "refused",
                    json!({"task_id": id.to_string(), "reason": reason}),
                    format!("order {}: {reason}; it will be settled by this provider", short(&id)),
                );
                self.set(id, TaskState::Refused { reason })
            }
        }
    }

    /// The sequencer's receipt in its answer, if it is signed and acknowledges exactly this
    /// delivery. Without one the result still counts as submitted (the chain decides, and the
    /// daemon self-settles near the deadline), but there is no evidence to show: say so.
    fn check_receipt(&self, answer: &serde_json::Value, delivery: &Delivery) -> Option<SignedReceipt> {
        receipt_in(answer, delivery, self.me, &self.domain)
            .map_err(|problem| tracing::warn!(order = %delivery.order_hash, "{problem}"))
            .ok()
    }

    /// Reads the order's fate from the chain once its nonce is used.
    pub(super) async fn follow(&mut self, id: B256, record: &TaskRecord, now: u64) -> Result<()> {
        let o = &record.order.order;
        if !self.market.nonce_used(o.poster, o.nonce).await? {
            if now > o.deadline {
                // Nothing can settle it any more; it may be disputed.
                return self.skip(id, "its deadline passed unsettled".into());
            }
            return Ok(());
        }
        let outcome =
            tgrid_chain::order_outcome(&self.chain, self.deployment.market, &self.domain, o, record.seen_block).await?;
        match outcome {
            OrderOutcome::Settled { paid, unpaid_reason, provider, transaction, settler, .. }
                if provider == self.me =>
            {
                self.settled_since_withdrawal += 1;
                let fee_bps = self.market.parameters().await?.protocolFeeBps;
                let pay = U256::from(o.payment) - U256::from(o.payment) * fee_bps / U256::from(10_000u64);
                self.set(id, TaskState::Settled { paid, tx: transaction })?;
                let by = if settler == self.me { "by this provider" } else { "by the sequencer" };
                self.event(
                    "settled",
                    json!({
                        "task_id": id.to_string(),
                        "paid": paid,
                        "pay": if paid { tgrid_amount(pay) } else { "0".into() },
                        "unpaid_reason": unpaid_reason,
                        "tx": transaction.to_string(),
                        "self_settled": settler == self.me,
                    }),
                    if paid {
                        format!("order {} settled {by}: pay {} TGRID (tx {transaction})", short(&id), tgrid_amount(pay))
                    } else {
                        format!(
                            "order {} settled {by} but unpaid ({}): it can no longer be disputed",
                            short(&id),
                            unpaid_reason.unwrap_or_default()
                        )
                    },
                );
                Ok(())
            }
            OrderOutcome::Settled { provider, .. } => {
                self.skip(id, format!("settled with another provider's proof ({provider})"))
            }
            OrderOutcome::Disputed { slashed, .. } => {
                self.skip(id, format!("disputed: {} TGRID slashed", tgrid_amount(slashed)))
            }
            OrderOutcome::Cancelled { transaction } => {
                self.skip(id, format!("cancelled by the poster (tx {transaction})"))
            }
            OrderOutcome::Open => Ok(()),
        }
    }
}

/// The receipt in a sequencer's answer if it is signed by the key it names and acknowledges
/// exactly `delivery` from `me`; otherwise what is wrong with it.
fn receipt_in(
    answer: &serde_json::Value,
    delivery: &Delivery,
    me: alloy::primitives::Address,
    domain: &tgrid_chain::market::MarketDomain,
) -> std::result::Result<SignedReceipt, String> {
    let r = serde_json::from_value::<SignedReceipt>(answer["receipt"].clone())
        .map_err(|e| format!("no receipt in the sequencer's answer ({e})"))?;
    r.verify(domain).map_err(|e| format!("the sequencer's receipt does not verify: {e}"))?;
    if !r.receipt.acknowledges(delivery, me) {
        return Err(format!("the sequencer's receipt is for another delivery: {:?}", r.receipt));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use alloy::primitives::{Address, B256};
    use alloy::signers::local::PrivateKeySigner;
    use serde_json::json;
    use tgrid_chain::market::{Delivery, MarketDomain, Receipt, SignedReceipt};

    use super::receipt_in;

    /// A missing, malformed, forged, foreign or mismatched receipt is no evidence; the right one is.
    #[test]
    fn only_a_signed_receipt_of_this_very_delivery_counts() {
        let domain = MarketDomain { chain_id: 31337, market: Address::repeat_byte(0x11) };
        let me = Address::repeat_byte(0x22);
        let delivery = Delivery::of_proof(B256::repeat_byte(1), B256::repeat_byte(2), b"proof bytes");
        let sequencer = PrivateKeySigner::random();
        let receipt = Receipt {
            order_hash: delivery.order_hash,
            provider: me,
            output_commitment: delivery.output_commitment,
            proof_digest: delivery.proof_digest,
            received_at: 1_700_000_000,
        };
        let signed = SignedReceipt::sign(receipt, &sequencer, &domain).unwrap();
        let answer = |r: &SignedReceipt| json!({"status": "verified", "receipt": r});
        assert_eq!(receipt_in(&answer(&signed), &delivery, me, &domain).unwrap(), signed);

        let err = |a: serde_json::Value| receipt_in(&a, &delivery, me, &domain).unwrap_err();
        assert!(err(json!({"status": "verified"})).contains("no receipt"));
        assert!(err(json!({"receipt": {"sequencer": "0x12"}})).contains("no receipt"));
        // Signed by another key than the one it names.
        let forged = SignedReceipt { sequencer: Address::repeat_byte(0x33), ..signed.clone() };
        assert!(err(answer(&forged)).contains("does not verify"));
        // Signed for another market (another EIP-712 domain).
        let elsewhere = MarketDomain { market: Address::repeat_byte(0x44), ..domain };
        let foreign = SignedReceipt::sign(receipt, &sequencer, &elsewhere).unwrap();
        assert!(err(answer(&foreign)).contains("does not verify"));
        // Honestly signed, but for another output, proof or provider.
        for other in [
            Receipt { output_commitment: B256::repeat_byte(9), ..receipt },
            Receipt { proof_digest: B256::repeat_byte(9), ..receipt },
            Receipt { provider: Address::repeat_byte(9), ..receipt },
        ] {
            let mismatched = SignedReceipt::sign(other, &sequencer, &domain).unwrap();
            assert!(err(answer(&mismatched)).contains("another delivery"));
        }
    }
}
