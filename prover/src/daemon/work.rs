//! An accepted order's work: its input from the store, the proof, the submission to the
//! sequencer, and following it on-chain until it settles.

use std::sync::Arc;
use std::time::Instant;

use alloy::primitives::{B256, U256};
use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tgrid_chain::format_tgrid as tgrid_amount;
use tgrid_chain::market::{Delivery, OrderOutcome, RelayError, ResultSubmission, SignedReceipt};
use tgrid_circuits::{commit, Commitment, EncryptedTensor, OutputKey, Privacy, Salt, MAX_TENSOR_LEN};
use tgrid_onnx::InputData;
use tgrid_seal::Sealed;

use super::{short, write_synced, Daemon, TaskRecord, TaskState};

/// Largest input file read from the input store.
const MAX_INPUT_BYTES: u64 = 64 << 20;

/// An accepted order's input, kept beside its proof (`data_dir/inputs/<order>.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct AcceptedInput {
    /// The int8 input.
    pub values: Vec<i8>,
    /// A private task's secret: the input's salt (the output is encrypted under its key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private: Option<PrivateInput>,
}

/// What a private task's sealed input held besides the tensor.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct PrivateInput {
    /// Salt of the input commitment (hex): the output is encrypted under its key.
    pub salt: String,
}

/// A proven order's output, kept beside its proof (`data_dir/outputs/<order>.json`).
#[derive(Debug, Serialize, Deserialize)]
struct ProvenOutput {
    output_int8: Vec<i8>,
    /// A private task's output encrypted to the poster (`EncryptedTensor` hex), the ciphertext
    /// its proof commits to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    encrypted_output: Option<String>,
}

impl Daemon {
    /// Reads `<input commitment>.<extension>` from the input store: `None` while it is not (or
    /// not reachably) published.
    async fn fetch_input(&self, name: &str) -> Result<Option<(Vec<u8>, String)>> {
        if self.settings.inputs_url.is_empty() {
            let path = self.settings.inputs_dir.join(name);
            let len = match std::fs::metadata(&path) {
                Ok(m) => m.len(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
            };
            if len > MAX_INPUT_BYTES {
                bail!("{}: {len} bytes, larger than any input", path.display());
            }
            let bytes = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
            return Ok(Some((bytes, path.display().to_string())));
        }
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
        Ok(Some((bytes.to_vec(), url)))
    }

    /// The order's input from the store, checked against its commitment: a public task's
    /// (`<commitment>.json`, EZKL format) quantized, a private task's (`<commitment>.tgs`) opened
    /// with this provider's key. `None` while it is not (or not reachably) published; an error
    /// when what is published is not the committed input (or not sealed to this provider).
    pub(super) async fn input(&self, record: &TaskRecord) -> Result<Option<AcceptedInput>> {
        let o = &record.order.order;
        let held = self.held(&o.model_id)?;
        if held.privacy == Privacy::Private {
            let Some((bytes, source)) = self.fetch_input(&format!("{}.tgs", o.input_commitment)).await? else {
                return Ok(None);
            };
            let sealed = Sealed::from_bytes(&bytes).map_err(|e| anyhow!("{source}: {e}"))?;
            let opened =
                tgrid_seal::open_input(&self.opening_key, &sealed, &o.model_id.0, &Commitment(o.input_commitment.0))
                    .map_err(|e| anyhow!("{source}: the sealed input does not open for this order: {e}"))?;
            // Proving checks the length again; refusing here keeps a bad input from being accepted.
            if opened.tensor.len() != held.file.model.input_len() {
                bail!(
                    "{source}: the sealed input holds {} values, the model takes {}",
                    opened.tensor.len(),
                    held.file.model.input_len()
                );
            }
            provable(&held.file.model, &opened.tensor).map_err(|e| anyhow!("{source}: {e:#}"))?;
            let private = PrivateInput { salt: opened.salt.to_hex() };
            return Ok(Some(AcceptedInput { values: opened.tensor, private: Some(private) }));
        }
        let Some((bytes, source)) = self.fetch_input(&format!("{}.json", o.input_commitment)).await? else {
            return Ok(None);
        };
        let text = String::from_utf8(bytes).with_context(|| format!("{source} is not UTF-8 JSON"))?;
        let data = InputData::from_json(&text).map_err(|e| anyhow!("{source}: {e}"))?;
        let model = &held.file.model;
        let sample = data.first_sample(model.input_len(), &model.ports.inputs).map_err(|e| anyhow!("{source}: {e}"))?;
        let x = tgrid_circuits::infer::quantize_input(model, &sample)
            .with_context(|| format!("{source} does not fit the model"))?;
        if B256::from(commit(&x).0) != o.input_commitment {
            bail!("{source} does not match the order's input commitment");
        }
        provable(&held.file.model, &x).map_err(|e| anyhow!("{source}: {e:#}"))?;
        Ok(Some(AcceptedInput { values: x, private: None }))
    }

    pub(super) async fn prove(&mut self, id: B256, record: &TaskRecord) -> Result<()> {
        let input: AcceptedInput = match std::fs::read(self.accepted_input_path(&id))
            .map_err(anyhow::Error::from)
            .and_then(|bytes| Ok(serde_json::from_slice(&bytes)?))
        {
            Ok(input) => input,
            // Accepted before a crash lost the copy: fetch it again.
            Err(_) => {
                self.input(record).await?.ok_or_else(|| anyhow!("the input of order {id} is not in the store"))?
            }
        };
        let model_id = record.order.order.model_id;
        let prover = Arc::clone(&self.held(&model_id)?.prover);
        let (task_id, provider) = (id.0, self.me.0 .0);
        let salt = input.private.as_ref().map(|p| Salt::from_hex(&p.salt)).transpose()?;
        // A leaf prover that cannot be had (the chain's registry unreadable) costs only the leaf:
        // the sequencer proves it.
        let leaf_prover = match self.settings.prove_leaves {
            false => None,
            true => self
                .chain_aggregator()
                .await
                .map_err(|e| tracing::warn!(order = %id, "no leaf proof for this result: {e:#}"))
                .ok(),
        };
        // A leaf left from an earlier attempt at this order is not this proof's.
        let _ = std::fs::remove_file(self.leaf_path(&id));
        let bar = self.out.spinner(&format!("proving order {}", short(&id)));
        let started = Instant::now();
        let x = input.values;
        let (proof, output, leaf) = tokio::task::spawn_blocking(move || -> Result<_> {
            let (proof, trace, _stats) = match &salt {
                None => prover.prove(&x, task_id, provider, &mut |_, _, _| {})?,
                Some(salt) => prover.prove_private(&x, salt, task_id, provider, &mut |_, _, _| {})?,
            };
            let leaf = leaf_prover.map(|aggregator| {
                let started = Instant::now();
                aggregator.prove_leaf(&proof).map(|(_, leaf)| (leaf.to_bytes(), started.elapsed().as_secs_f64()))
            });
            Ok((proof.to_bytes(), trace.output().to_vec(), leaf))
        })
        .await??;
        bar.finish_and_clear();
        let seconds = started.elapsed().as_secs_f64();
        let leaf_seconds = match leaf {
            Some(Ok((bytes, seconds))) => {
                write_synced(&self.leaf_path(&id), &bytes)?;
                Some(seconds)
            }
            Some(Err(e)) => {
                tracing::warn!(order = %id, "no leaf proof for this result: {e}");
                None
            }
            None => None,
        };
        // A private output is encrypted exactly as the proof did (under the input salt's key).
        let encrypted_output = salt.map(|salt| {
            let encrypted = EncryptedTensor::encrypt(&output, &OutputKey::from_input_salt(&salt));
            format!("0x{}", hex::encode(encrypted.to_bytes()))
        });
        let kept = ProvenOutput { output_int8: output, encrypted_output };
        write_synced(&self.proof_path(&id), &proof)?;
        write_synced(&self.output_path(&id), &serde_json::to_vec(&kept)?)?;
        let held = self.models.get_mut(&model_id).expect("held: its prover ran above");
        held.prove_estimate = if held.measured { held.prove_estimate.max(seconds * 1.5) } else { seconds * 1.5 };
        held.measured = true;
        let privacy = held.privacy;
        self.set(id, TaskState::Proven)?;
        self.event(
            "proven",
            json!({
                "task_id": id.to_string(),
                "seconds": seconds,
                "proof_bytes": proof.len(),
                "privacy": privacy.name(),
                "leaf_seconds": leaf_seconds,
            }),
            match leaf_seconds {
                None => format!("proved order {} in {seconds:.1} s ({} bytes)", short(&id), proof.len()),
                Some(l) => format!(
                    "proved order {} and its leaf in {seconds:.1} s (leaf {l:.1} s; {} bytes)",
                    short(&id),
                    proof.len()
                ),
            },
        );
        Ok(())
    }

    pub(super) async fn submit(&mut self, id: B256, record: &TaskRecord, now: u64) -> Result<()> {
        if now > record.deadline() {
            return self.follow(id, record, now).await;
        }
        let proof = std::fs::read(self.proof_path(&id))?;
        let kept: ProvenOutput = serde_json::from_slice(&std::fs::read(self.output_path(&id))?)?;
        let acceptance = record.acceptance.clone().ok_or_else(|| anyhow!("order {id} has no acceptance"))?;
        let (order, output) = (record.order.clone(), kept.output_int8);
        let (delivery, submission) = match kept.encrypted_output {
            Some(encrypted) => {
                let bytes = hex::decode(encrypted.trim_start_matches("0x"))?;
                let commitment = B256::from(EncryptedTensor::from_bytes(&bytes, MAX_TENSOR_LEN)?.commitment().0);
                let delivery = Delivery::of_proof(id, commitment, &proof);
                let submission = ResultSubmission::sign_encrypted(
                    order,
                    acceptance,
                    &bytes,
                    commitment,
                    &proof,
                    &self.signer,
                    &self.domain,
                )?;
                (delivery, submission)
            }
            None => {
                let commitment = B256::from(commit(&output).0);
                let delivery = Delivery::of_proof(id, commitment, &proof);
                let submission =
                    ResultSubmission::sign(order, acceptance, output, commitment, &proof, &self.signer, &self.domain)?;
                (delivery, submission)
            }
        };
        let leaf = std::fs::read(self.leaf_path(&id)).ok();
        let submission = match &leaf {
            Some(bytes) => submission.with_leaf_proof(bytes),
            None => submission,
        };
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
                    json!({"task_id": id.to_string(), "receipt": receipt, "leaf_proof": answer.get("leaf_proof")}),
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
            // The leaf proof alone is refused: the result goes again without it.
            Err(RelayError::Refused { code, reason, .. }) if leaf.is_some() && code == "invalid_leaf" => {
                let _ = std::fs::remove_file(self.leaf_path(&id));
                bail!("the sequencer refused the leaf proof ({reason}); resubmitting without it")
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

/// Refuses an input the exact int8 inference refuses (a token id outside the model's vocabulary:
/// no witness exists, so the proof would fail after the acceptance had made the provider
/// slashable). The inference is what the proof's witness generation runs first, so an input it
/// accepts is proven.
fn provable(model: &tgrid_circuits::QuantModel, input: &[i8]) -> Result<()> {
    tgrid_circuits::infer::run(model, input).map(|_| ()).context("the model cannot run on this input")
}

#[cfg(test)]
mod tests {
    use alloy::primitives::{Address, B256};
    use alloy::signers::local::PrivateKeySigner;
    use serde_json::json;
    use tgrid_chain::market::{Delivery, MarketDomain, Receipt, SignedReceipt};

    use super::{provable, receipt_in};

    /// An input the inference refuses (a token outside the vocabulary) is refused before any
    /// acceptance; a valid one of the same model passes.
    #[test]
    fn an_input_the_model_cannot_run_on_is_not_accepted() {
        let model = tgrid_circuits::testing::language_model(3);
        let tokens = |ids: &[u8]| -> Vec<i8> { ids.iter().map(|&id| (id ^ 0x80) as i8).collect() };
        provable(&model, &tokens(&[1, 2, 3, 4, 5, 6])).unwrap();
        let why = format!("{:#}", provable(&model, &tokens(&[1, 2, 10, 4, 5, 6])).unwrap_err());
        assert!(why.contains("cannot run") && why.contains("token id 10"), "{why}");
    }

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
