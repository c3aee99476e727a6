//! `tgrid order status` and `tgrid order result`: where an order stands (relay and chain), and
//! its output checked against the output commitment its settlement proved.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use alloy::primitives::{B256, U256};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use serde_json::{json, Value};
use tgrid_chain::format_tgrid;
use tgrid_chain::market::{MarketDomain, OrderOutcome, RelayError};
use tgrid_circuits::{commit, infer, EncryptedTensor, OutputKey, Privacy, MAX_TENSOR_LEN};
use tgrid_cli::{bad_input, Output};

use crate::common::{connect_reading, load_model, relay, relay_view, when, Ctx, Globals, OrderArg, DEFAULT_RELAY};

#[derive(Debug, Args)]
pub(crate) struct ResultArgs {
    /// Order hash (0x + 64 hex digits) or the order's JSON file.
    order: String,
    /// Sequencer API publishing outputs (and relaying orders).
    #[arg(long, env = "TGRID_RELAY_URL", default_value = DEFAULT_RELAY)]
    relay: String,
    /// Check this output file instead of fetching: `output_int8` or `output` as int8 values (for
    /// a private order with the `output_key` it was encrypted under, as `--out` writes it, or the
    /// key of `--output-key` or of the state directory), or a private order's encrypted output.
    #[arg(long)]
    output_file: Option<PathBuf>,
    /// A private order's output key (0x + 64 hex digits; default: the one `tgrid order post
    /// --private` kept in the state directory).
    #[arg(long)]
    output_key: Option<String>,
    /// The model, to print the dequantized output and its argmax.
    #[arg(long)]
    model: Option<PathBuf>,
    /// A language model's vocabulary (JSON `{"tokens": [...]}`, the text of each token id), to
    /// print the most likely next token of its output logits.
    #[arg(long)]
    vocab: Option<PathBuf>,
    /// Write the checked output here (JSON).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Wait up to this many seconds for the order to settle.
    #[arg(long, default_value_t = 0)]
    wait: u64,
}

/// A vocabulary file: `{"tokens": ["a", "b", ...]}`, at most 256 tokens.
fn load_vocab(path: &std::path::Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let not_vocab =
        |why: String| bad_input(anyhow!("{}: not a vocabulary ({{\"tokens\": [...]}}): {why}", path.display()));
    let value: Value = serde_json::from_str(&text).map_err(|e| not_vocab(e.to_string()))?;
    let tokens: Vec<String> = value
        .get("tokens")
        .and_then(Value::as_array)
        .ok_or_else(|| not_vocab("no \"tokens\" array".into()))?
        .iter()
        .map(|t| t.as_str().map(str::to_string).ok_or_else(|| not_vocab(format!("token {t} is not a string"))))
        .collect::<Result<_>>()?;
    if tokens.is_empty() || tokens.len() > 256 {
        return Err(bad_input(anyhow!("{}: {} tokens; 1 to 256 are supported", path.display(), tokens.len())));
    }
    Ok(tokens)
}

/// One word for an outcome.
pub(crate) fn outcome_word(o: &OrderOutcome) -> &'static str {
    match o {
        OrderOutcome::Open => "open",
        OrderOutcome::Settled { paid: true, .. } => "settled",
        OrderOutcome::Settled { paid: false, .. } => "settled unpaid",
        OrderOutcome::Disputed { .. } => "disputed",
        OrderOutcome::Cancelled { .. } => "cancelled",
    }
}

/// The order (checked against the deployment's domain) and a connection.
async fn order_and_ctx(arg: &OrderArg, relay_url: &str, g: &Globals) -> Result<(crate::common::LoadedOrder, Ctx)> {
    let domain = MarketDomain::of(&g.load_deployment()?);
    let o = arg.load(g, &domain, Some(relay_url)).await?;
    Ok((o, connect_reading(g).await?))
}

async fn outcome_of(ctx: &Ctx, order: &tgrid_chain::market::Order) -> Result<OrderOutcome> {
    let d = &ctx.deployment;
    Ok(tgrid_chain::order_outcome(&ctx.chain, d.market, &ctx.domain(), order, d.start_block).await?)
}

pub(crate) async fn status(arg: &OrderArg, relay_url: &str, g: &Globals, out: Output) -> Result<()> {
    let (o, ctx) = order_and_ctx(arg, relay_url, g).await?;
    let order = &o.signed.order;
    let outcome = outcome_of(&ctx, order).await?;
    let now = ctx.now().await?;
    let params = ctx.market().parameters().await?;
    let view = match &o.view {
        Some(v) if o.from_relay => Ok(v.clone()),
        _ => relay_view(relay_url, o.hash).await,
    };
    let accepted_by = view.as_ref().ok().and_then(|v| v.acceptance.as_ref().map(|a| a.provider));
    let relay_json = match &view {
        Ok(v) => json!({
            "url": relay_url,
            "state": v.state,
            "accepted_by": accepted_by.map(|a| a.to_string()),
        }),
        Err(e) => json!({"url": relay_url, "error": e}),
    };
    let window = params.disputeWindow.to::<u64>();
    let past_deadline = now > order.deadline;
    let disputable = matches!(outcome, OrderOutcome::Open)
        && past_deadline
        && now < order.deadline + window
        && U256::from(order.payment) >= params.minPayment;
    let state = match (&outcome, accepted_by) {
        (OrderOutcome::Open, Some(_)) => "accepted",
        (o, _) => outcome_word(o),
    };
    let mut v = json!({
        "order_hash": o.hash.to_string(),
        "state": state,
        "poster": order.poster.to_string(),
        "provider": (!order.provider.is_zero()).then(|| order.provider.to_string()),
        "accepted_by": accepted_by.map(|a| a.to_string()),
        "book": order.book(),
        "index": order.index(),
        "payment": format_tgrid(U256::from(order.payment)),
        "collateral": format_tgrid(U256::from(order.collateral)),
        "deadline": order.deadline,
        "chain_time": now,
        "past_deadline": past_deadline,
        "disputable": disputable,
        // The window closes at this second (exclusive).
        "dispute_window_closes_at": (matches!(outcome, OrderOutcome::Open)).then_some(order.deadline + window),
        "relay": relay_json,
        "source": o.source,
    });
    match &outcome {
        OrderOutcome::Settled { paid, unpaid_reason, provider, output_commitment, settler, transaction, block } => {
            v["settlement"] = json!({
                "paid": paid,
                "unpaid_reason": unpaid_reason,
                "provider": provider.to_string(),
                "output_commitment": output_commitment.to_string(),
                "settler": settler.to_string(),
                "tx": transaction.to_string(),
                "block": block,
            });
        }
        OrderOutcome::Disputed { provider, slashed, to_poster, transaction } => {
            v["dispute"] = json!({
                "provider": provider.to_string(),
                "slashed": format_tgrid(*slashed),
                "to_poster": format_tgrid(*to_poster),
                "tx": transaction.to_string(),
            });
        }
        OrderOutcome::Cancelled { transaction } => v["cancelled_in"] = json!(transaction.to_string()),
        OrderOutcome::Open => {}
    }
    out.emit(v, || {
        let mut text = format!(
            "order {}: {}\n  book {} index {}, payment {} TGRID, collateral {} TGRID, deadline {}",
            o.hash,
            match accepted_by {
                Some(p) if state == "accepted" => format!("accepted by {p}"),
                _ => state.to_string(),
            },
            order.book(),
            order.index(),
            format_tgrid(U256::from(order.payment)),
            format_tgrid(U256::from(order.collateral)),
            when(order.deadline, now)
        );
        match &outcome {
            OrderOutcome::Settled { paid, unpaid_reason, provider, output_commitment, transaction, .. } => {
                let pay = if *paid {
                    "paid".to_string()
                } else {
                    format!("unpaid: {}", unpaid_reason.as_deref().unwrap_or("unknown reason"))
                };
                text += &format!(
                    "\n  settled ({pay}) by provider {provider}\n  output commitment {output_commitment} (tx {transaction})"
                );
            }
            OrderOutcome::Disputed { provider, slashed, to_poster, transaction } => {
                text += &format!(
                    "\n  provider {provider} slashed {} TGRID, {} TGRID to the poster (tx {transaction})",
                    format_tgrid(*slashed),
                    format_tgrid(*to_poster)
                );
            }
            OrderOutcome::Cancelled { transaction } => text += &format!("\n  cancelled in tx {transaction}"),
            OrderOutcome::Open if disputable => {
                text += &format!(
                    "\n  past its deadline and unsettled: a provider that accepted it can be disputed before {} (tgrid dispute {})",
                    when(order.deadline + window, now),
                    o.hash
                );
            }
            OrderOutcome::Open if past_deadline => {
                text += "\n  past its deadline and unsettled; no longer disputable";
            }
            OrderOutcome::Open => {}
        }
        match &view {
            Ok(v) => {
                let state = serde_json::to_value(v.state).ok().and_then(|s| s.as_str().map(str::to_string));
                text += &format!("\n  relay {relay_url}: {}", state.unwrap_or_default());
            }
            Err(e) => text += &format!("\n  relay: {e}"),
        }
        text
    })
}

/// An output as fetched or read: in the clear (a public task's, or a private task's decrypted
/// output with the key of a result file) or encrypted to the poster (private task, the bytes of
/// an [`EncryptedTensor`]).
enum Delivered {
    Plain { values: Vec<i8>, key: Option<OutputKey> },
    Encrypted(Vec<u8>),
}

/// Largest output file read (an encrypted output of the largest tensor is well below).
const MAX_OUTPUT_FILE_BYTES: u64 = 64 << 20;

/// `--output-file`: an encrypted output (by its magic) or int8 values in JSON, with the
/// `output_key` of a private order's result file.
fn read_output_file(path: &std::path::Path) -> Result<Delivered> {
    let bytes = tgrid_cli::read_bounded(path, MAX_OUTPUT_FILE_BYTES, "output")?;
    if bytes.starts_with(tgrid_circuits::commit::ENCRYPTED_MAGIC) {
        return Ok(Delivered::Encrypted(bytes));
    }
    let json = tgrid_cli::read_output_json(path)?;
    let in_file = |e: anyhow::Error| bad_input(anyhow!("{}: {e}", path.display()));
    let values = tgrid_cli::int8_output(&json).map_err(in_file)?;
    let key = tgrid_cli::output_key_field(&json)
        .map_err(in_file)?
        .map(|hex| OutputKey::from_hex(hex).map_err(|e| in_file(anyhow!("output_key: {e}"))))
        .transpose()?;
    Ok(Delivered::Plain { values, key })
}

/// A private order's output key: `--output-key`, or the file `tgrid order post --private` kept.
fn output_key(a: &ResultArgs, g: &Globals, hash: &B256) -> Result<OutputKey> {
    if let Some(hex) = &a.output_key {
        return OutputKey::from_hex(hex).context("--output-key").map_err(bad_input);
    }
    let path = g.output_key_path(hash);
    let text = tgrid_cli::read_bounded(&path, 4096, "output key").with_context(|| {
        format!("order {hash} is private: its output key is not in {} (give it with --output-key)", path.display())
    })?;
    let text = String::from_utf8(text).map_err(|_| anyhow!("{}: not an output key", path.display()))?;
    OutputKey::from_hex(text.trim()).with_context(|| format!("{}: not an output key", path.display()))
}

/// The key to try on a plain output that does not match as a public one: `--output-key`, the
/// result file's, or the one kept in the state directory; none for a public order.
/// A malformed `--output-key` is an error; a missing kept key is not (the order may be public).
fn plain_output_key(a: &ResultArgs, g: &Globals, hash: &B256, in_file: Option<OutputKey>) -> Result<Option<OutputKey>> {
    if a.output_key.is_some() {
        return output_key(a, g, hash).map(Some);
    }
    Ok(in_file.or_else(|| output_key(a, g, hash).ok()))
}

pub(crate) async fn result(a: ResultArgs, g: &Globals, out: Output) -> Result<()> {
    let arg = OrderArg::read(&a.order)?;
    let model = a.model.as_deref().map(load_model).transpose()?;
    let vocab = a.vocab.as_deref().map(load_vocab).transpose()?;
    let local_output = a.output_file.as_deref().map(read_output_file).transpose()?;
    let (o, ctx) = order_and_ctx(&arg, &a.relay, g).await?;
    let order = &o.signed.order;
    if let Some(m) = &model {
        let id = m.model.model_id();
        if Privacy::of_task_model_id(id, &order.model_id.0).is_none() {
            return Err(bad_input(anyhow!(
                "the model file is model {} (private id {}), the order runs {}",
                B256::from(id),
                B256::from(Privacy::Private.task_model_id(id)),
                order.model_id
            )));
        }
    }
    let started = Instant::now();
    let spinner = (a.wait > 0).then(|| out.spinner(&format!("waiting for order {} to settle", o.hash)));
    let settled = loop {
        let outcome = outcome_of(&ctx, order).await?;
        match outcome {
            OrderOutcome::Settled { .. } => break outcome,
            OrderOutcome::Disputed { .. } | OrderOutcome::Cancelled { .. } => {
                bail!("order {} was {}: it has no result", o.hash, outcome_word(&outcome))
            }
            OrderOutcome::Open if started.elapsed().as_secs() < a.wait => {
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            OrderOutcome::Open => {
                let now = ctx.now().await?;
                bail!("order {} has not settled (open; deadline {})", o.hash, when(order.deadline, now));
            }
        }
    };
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    let OrderOutcome::Settled { paid, output_commitment, transaction, provider, .. } = settled else {
        unreachable!("the loop ends on a settlement")
    };
    let (delivered, source) = match (local_output, &a.output_file) {
        (Some(v), Some(path)) => (v, path.display().to_string()),
        _ => {
            let client = relay(&a.relay)?;
            // The sequencer publishes an output once it sees the order settled; within --wait,
            // a moment's lag (or a restart) is waited out.
            let fetched = loop {
                match client.output(o.hash).await {
                    Ok(v) => break v,
                    Err(_) if started.elapsed().as_secs() < a.wait => tokio::time::sleep(Duration::from_secs(2)).await,
                    Err(RelayError::Refused { status: 404, .. }) => {
                        bail!("the sequencer at {} has no output for order {}", a.relay, o.hash)
                    }
                    Err(other) => bail!("fetching the output of order {}: {other}", o.hash),
                }
            };
            let source = format!("{}/v1/tasks/{}/output", a.relay.trim_end_matches('/'), o.hash);
            let delivered = match fetched.encrypted_output {
                None => Delivered::Plain { values: fetched.output, key: None },
                Some(hex) => Delivered::Encrypted(
                    alloy::hex::decode(&hex).map_err(|e| anyhow!("{source}: the encrypted output is not hex: {e}"))?,
                ),
            };
            (delivered, source)
        }
    };
    // A private output is the ciphertext the proof committed to: checked against the settled
    // commitment first, then decrypted with the order's output key.
    let (computed, output, key) = match delivered {
        Delivered::Plain { values, key: key_in_file } => {
            let public = B256::from(commit(&values).0);
            // A private order's decrypted output (a result file shown to someone) is checked by
            // encrypting it again: the encryption is a function of the key and the values.
            let key = if public == output_commitment { None } else { plain_output_key(&a, g, &o.hash, key_in_file)? };
            match key {
                Some(key) => (B256::from(EncryptedTensor::encrypt(&values, &key).commitment().0), values, Some(key)),
                None => (public, values, None),
            }
        }
        Delivered::Encrypted(bytes) => {
            let encrypted = EncryptedTensor::from_bytes(&bytes, MAX_TENSOR_LEN)
                .map_err(|e| anyhow!("{source}: not an encrypted output: {e}"))?;
            let computed = B256::from(encrypted.commitment().0);
            if computed != output_commitment {
                bail!(
                    "the encrypted output from {source} does NOT match order {}'s settled output commitment: it \
                     commits to {computed}, the chain recorded {output_commitment} (tx {transaction})",
                    o.hash
                );
            }
            let key = output_key(&a, g, &o.hash)?;
            let output = encrypted.decrypt(&key).with_context(|| {
                format!("order {}'s output does not decrypt with this output key: is it this order's?", o.hash)
            })?;
            (computed, output, Some(key))
        }
    };
    if computed != output_commitment {
        let encrypted = if key.is_some() { ", encrypted under the order's output key," } else { "" };
        bail!(
            "the output from {source}{encrypted} does NOT match order {}'s settled output commitment: it commits to \
             {computed}, the chain recorded {output_commitment} (tx {transaction})",
            o.hash
        );
    }
    let mut result = json!({
        "order_hash": o.hash.to_string(),
        "valid": true,
        "paid": paid,
        "provider": provider.to_string(),
        "output_int8": output,
        "output_commitment": computed.to_string(),
        "privacy": if key.is_some() { "private" } else { "public" },
        // A private output's key: with it (and the output) anyone the poster shows this file to
        // can check the output against the settled commitment; it reveals nothing of the input.
        "output_key": key.as_ref().map(OutputKey::to_hex),
        "settled_in": transaction.to_string(),
        "source": source,
    });
    if let Some(file) = &model {
        let real = infer::dequantize(&output, file.model.tensor_q(file.model.output_tensor()));
        result["argmax"] = json!(tgrid_onnx::argmax(&real));
        if let Some(parts) = tgrid_onnx::named_outputs_json(&file.model, &real) {
            result["outputs"] = parts;
        }
        result["output"] = json!(real);
    }
    if let Some(tokens) = &vocab {
        if tokens.len() != output.len() {
            bail!("the vocabulary has {} tokens, the output {} logits", tokens.len(), output.len());
        }
        // The int8 logits share one scale: their argmax is the real logits' argmax.
        let best = (0..output.len()).fold(0, |best, i| if output[i] > output[best] { i } else { best });
        result["next_token"] = json!(tokens[best]);
    }
    if let Some(p) = &a.out {
        std::fs::write(p, serde_json::to_vec_pretty(&result)?)
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    out.emit(result.clone(), || {
        let private = if key.is_some() { " (private: decrypted with the order's output key)" } else { "" };
        let mut text = format!(
            "order {}: the output{private} matches the commitment settled on-chain ({computed}, tx {transaction})",
            o.hash
        );
        if let Some(a) = result.get("argmax").and_then(Value::as_u64) {
            text += &format!("\n  argmax {a}");
        }
        if let Some(t) = result.get("next_token").and_then(Value::as_str) {
            text += &format!("\n  next token {t:?}");
        }
        text
    })
}
