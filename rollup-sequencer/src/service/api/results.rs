//! Result submission (checked against the proof, the signed order and acceptance, and the chain
//! before it is acknowledged), task status and published outputs.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use alloy::primitives::{keccak256, B256};
use axum::extract::{ConnectInfo, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use tgrid_chain::market::{Delivery, Receipt};
use tgrid_circuits::{commit, EncryptedTensor, Privacy, TaskProof, MAX_TENSOR_LEN};

use super::backing::check_result_backed;
use super::refused::DeliveryKey;
use super::{hex0x, json_rejection, parse_hex, ApiError, ErrorBody, OutputView, SubmitRequest, TaskView};
use crate::service::metrics::{IngestStage, Metrics};
use crate::service::store::{BatchState, OrderRecord, StoredOutput, TaskRecord, TaskState};
use crate::service::{unix_now, Shared};

/// Submit the result of a signed order. Checked before it is acknowledged: the poster's order
/// signature and the provider's acceptance, that the order is backed (listed and accepted here,
/// or within the market's terms with a book that pays it and a bond that covers its
/// collateral), the proof (its task id is the order's hash, its provider the accepting one, its
/// model, input and output the order's and the output's), and the chain (nonce unused, deadline
/// not passed, model active). The provider signs the delivery (order hash, output commitment,
/// proof digest); rate limits count per signing provider and per client address.
/// The acknowledgement means the result is on disk and carries the sequencer's signed receipt.
/// Repeating an acknowledged submission is harmless (200, `duplicate: true`, the same receipt).
#[utoipa::path(post, path = "/v1/results", request_body = SubmitRequest, responses(
    (status = 202, description = "verified and durably stored", body = TaskView),
    (status = 200, description = "already acknowledged (idempotent repeat)", body = TaskView),
    (status = 400, description = "malformed request", body = ErrorBody),
    (status = 409, description = "another result is acknowledged, another provider accepted the order first, or its nonce is used on-chain", body = ErrorBody),
    (status = 413, description = "body too large"),
    (status = 422, description = "bad signature (order, acceptance or delivery), an order that is not backed, invalid proof, or the chain does not allow this result", body = ErrorBody),
    (status = 429, description = "provider or client over its rate limit; Retry-After", body = ErrorBody),
    (status = 503, description = "the same order's submission is being checked, or chain or store unavailable; Retry-After", body = ErrorBody),
))]
pub(super) async fn submit(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    body: Result<Json<SubmitRequest>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let started = Instant::now();
    let result = match body {
        Ok(Json(request)) => ingest(&shared, client, request).await,
        Err(e) => Err(json_rejection(e)),
    };
    shared.metrics.ack_seconds.observe(started.elapsed().as_secs_f64());
    match result {
        Ok(view) => {
            let outcome = if view.duplicate { "duplicate" } else { "accepted" };
            shared.metrics.submissions.with_label_values(&[outcome]).inc();
            let status = if view.duplicate { StatusCode::OK } else { StatusCode::ACCEPTED };
            (status, Json(view)).into_response()
        }
        Err(e) => {
            shared.metrics.submissions.with_label_values(&["rejected"]).inc();
            tracing::info!(status = %e.status, reason = %e.reason, "submission refused");
            e.into_response()
        }
    }
}

/// The time of each ingest stage of one submission; recorded only once it is acknowledged, so
/// the histograms describe the path a valid result takes.
struct StageClock {
    last: Instant,
    laps: Vec<(IngestStage, f64)>,
}

impl StageClock {
    fn start() -> Self {
        Self { last: Instant::now(), laps: Vec::with_capacity(5) }
    }

    /// Ends `stage` now.
    fn lap(&mut self, stage: IngestStage) {
        let now = Instant::now();
        self.laps.push((stage, (now - self.last).as_secs_f64()));
        self.last = now;
    }

    fn record(&self, metrics: &Metrics) {
        for &(stage, seconds) in &self.laps {
            metrics.observe_stage(stage, seconds);
        }
    }
}

/// Removes the task from the in-flight set when the check ends, however it ends.
struct InFlight<'a>(&'a Shared, [u8; 32]);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.lock().expect("in-flight lock").remove(&self.1);
    }
}

async fn ingest(shared: &Shared, client: SocketAddr, request: SubmitRequest) -> Result<TaskView, ApiError> {
    // "decode" covers the signatures, the hex and the proof's parsing, up to the verify queue.
    let mut stages = StageClock::start();
    let domain = shared.chain.domain();
    let SubmitRequest { order, acceptance, output, encrypted_output, proof, leaf_proof, signature } = request;
    // Signatures first: cheap, and the delivery's makes the rate limit's key the provider who
    // really sent this result (an order and its acceptance are public; a delivery is not).
    let bad_signature = ApiError::bad_signature;
    let hash = order.verify(&domain).map_err(bad_signature)?;
    acceptance.verify(&domain).map_err(bad_signature)?;
    if acceptance.order_hash != hash {
        return Err(ApiError::rejected(format!("the acceptance is for order {}, not {hash}", acceptance.order_hash)));
    }
    let provider = acceptance.provider;
    if order.order.is_named() && order.order.provider != provider {
        return Err(ApiError::rejected(format!(
            "order {hash} names provider {}, not {provider}",
            order.order.provider
        )));
    }
    let proof_hex = proof.strip_prefix("0x").ok_or_else(|| ApiError::bad_request("proof lacks the 0x prefix"))?;
    // const-hex (through alloy): a proof is ~300 KB of hex, and the `hex` crate's decoder took
    // about a tenth of an acknowledgement's CPU in the load harness (dev profile).
    let proof_bytes = alloy::hex::decode(proof_hex).map_err(|e| ApiError::bad_request(format!("proof: {e}")))?;
    let leaf_bytes = match &leaf_proof {
        None => None,
        Some(hex) => {
            let hex = hex.strip_prefix("0x").ok_or_else(|| ApiError::bad_request("leaf proof lacks the 0x prefix"))?;
            Some(alloy::hex::decode(hex).map_err(|e| ApiError::bad_request(format!("leaf proof: {e}")))?)
        }
    };
    // The output's commitment, checked against the proof's below: a public task's output in the
    // clear, a private task's encrypted to its poster (the proof encrypts it, so a ciphertext that
    // matches the proven commitment is one the poster can decrypt).
    let (output_commitment, output) = match encrypted_output {
        None => (commit(&output).0, StoredOutput::Plain(output)),
        Some(hex) => {
            if !output.is_empty() {
                return Err(ApiError::bad_request(
                    "a private task's output travels encrypted to its poster: `output` must be empty",
                ));
            }
            let hex = hex.strip_prefix("0x").ok_or_else(|| ApiError::bad_request("encrypted output lacks 0x"))?;
            let bytes = alloy::hex::decode(hex).map_err(|e| ApiError::bad_request(format!("encrypted output: {e}")))?;
            let encrypted = EncryptedTensor::from_bytes(&bytes, MAX_TENSOR_LEN)
                .map_err(|e| ApiError::bad_request(format!("encrypted output: {e}")))?;
            (encrypted.commitment().0, StoredOutput::Encrypted(bytes))
        }
    };
    let delivery = Delivery::of_proof(hash, B256::from(output_commitment), &proof_bytes);
    delivery.verify(&signature, provider, &domain).map_err(bad_signature)?;

    let task_id = hash.0;
    // A repeat of an acknowledged result is answered before the rate limit: a provider that
    // lost an answer must always be able to fetch its receipt.
    if let Some(existing) = shared.store.task(&task_id).map_err(ApiError::unavailable)? {
        if !matches!(existing.state, TaskState::Dropped { .. }) {
            if existing.output_commitment == hex0x(&output_commitment)
                && existing.provider == hex0x(provider.as_slice())
            {
                return view_with_receipt(shared, existing, true);
            }
            return Err(ApiError::conflict(format!(
                "another result for order {hash} is already acknowledged (output commitment {})",
                existing.output_commitment
            )));
        }
    }
    let key = DeliveryKey {
        order_hash: hash,
        output_commitment: delivery.output_commitment,
        proof_digest: delivery.proof_digest,
        provider,
    };
    if let Some(answer) = shared.refused.lock().expect("refused lock").get(&key) {
        return Err(answer);
    }
    if shared.limiter.check_key(&provider.0 .0).is_err() {
        return Err(ApiError::too_many(format!(
            "provider {provider} is over {} submissions/s",
            shared.settings.submissions_per_provider_per_sec
        )));
    }
    // Throwaway provider keys are free: the client's own limit bounds what a stranger can make
    // this sequencer read and verify.
    let client_key = crate::service::edge::client_key(client.ip());
    if shared.submission_client_limiter.check_key(&client_key).is_err() {
        return Err(ApiError::too_many(format!(
            "more than {} submissions per second from {client_key}",
            shared.settings.submissions_per_client_per_sec
        )));
    }
    if !shared.in_flight.lock().expect("in-flight lock").insert(task_id) {
        // Only the provider itself can race itself here (the delivery is signed): a retry that
        // overtook its first attempt. Not final: come back when the first check is over.
        return Err(ApiError::busy(format!("a submission for order {hash} is being checked; retry")));
    }
    let _guard = InFlight(shared, task_id);
    // Refusals that depend on the delivery alone (not on the chain, the clock or the relay) are
    // remembered: a replay gets the same answer early.
    let refuse = |answer: ApiError| {
        shared.refused.lock().expect("refused lock").remember(key, &answer);
        answer
    };
    let proof =
        TaskProof::from_bytes(&proof_bytes).map_err(|e| refuse(ApiError::bad_request(format!("proof: {e}"))))?;

    // An open order accepted here by another provider first: the relay keeps it theirs.
    let listed = shared.store.order(&hash).map_err(ApiError::unavailable)?;
    if let Some(first) = listed.as_ref().and_then(|r| r.acceptance.as_ref()) {
        if first.provider != provider {
            return Err(ApiError::conflict(format!("order {hash} was accepted by {} first", first.provider)));
        }
    }

    // Only paid work is verified, stored and settled: a listed order accepted here, or one whose
    // book and bond the chain shows now.
    check_result_backed(shared, &order.order, &acceptance, listed.as_ref()).await?;
    stages.lap(IngestStage::Decode);

    // The proof: the CPU-heavy part runs off the async workers, a few at a time.
    let permit = shared.verify_slots.acquire().await.map_err(ApiError::unavailable)?;
    stages.lap(IngestStage::VerifyQueue);
    // The registry the proof is checked against (the pipeline may move to a new one meanwhile):
    // the previous one for a model only it lists, whose root the chain check below must still
    // accept.
    let aggregator = shared.aggregator_for(&proof.model_id);
    let checked_root = aggregator.registry().root();
    let (checked, leaf_bytes) = tokio::task::spawn_blocking(move || {
        let checked =
            aggregator.check(&proof).and_then(|leaf| Ok((leaf, aggregator.task_verifier(&proof.model_id)?.privacy())));
        // The provider's leaf proof, only for a valid task proof: milliseconds more.
        let adopted = match (&checked, leaf_bytes) {
            (Ok((leaf, _)), Some(bytes)) => Some(aggregator.adopt_leaf_of(leaf, &bytes).map(|_| bytes)),
            _ => None,
        };
        (checked, adopted)
    })
    .await
    .map_err(ApiError::unavailable)?;
    let (leaf, privacy) =
        checked.map_err(|e| refuse(ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_proof", e.to_string())))?;
    drop(permit);
    // A wrong leaf proof is refused but not remembered: the same result without it is welcome.
    let (leaf_bytes, leaf_answer) = match leaf_bytes {
        None => (None, None),
        Some(Ok(bytes)) => (Some(bytes), Some("adopted".to_string())),
        // Made with another version's leaf circuit (or before the model was registered anew):
        // useless here, but no fault of the result.
        Some(Err(e @ tgrid_settlement_proof::AggregateError::LeafOfOtherCircuit { .. })) => {
            (None, Some(format!("dropped: {e}")))
        }
        Some(Err(e)) => return Err(ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_leaf", e.to_string())),
    };
    stages.lap(IngestStage::Verify);
    let o = &order.order;
    let mismatch = if leaf.task_id != task_id {
        Some(format!("the proof is for task {}, not order {hash}", hex0x(&leaf.task_id)))
    } else if leaf.provider != provider.0 .0 {
        Some(format!("the proof binds provider {}, not {provider}", hex0x(&leaf.provider)))
    } else if leaf.model_id != o.model_id.0 || leaf.input_commitment != o.input_commitment.0 {
        Some("the proof's model or input commitment is not the order's".to_string())
    } else if leaf.output_commitment != output_commitment {
        Some(format!(
            "the output's commitment {} is not the proven output commitment {}",
            hex0x(&output_commitment),
            hex0x(&leaf.output_commitment)
        ))
    } else {
        match (privacy, &output) {
            (Privacy::Private, StoredOutput::Plain(_)) => {
                Some("a private task's output must be encrypted to its poster, not sent in the clear".to_string())
            }
            (Privacy::Public, StoredOutput::Encrypted(_)) => {
                Some("a public task's output is sent in the clear".to_string())
            }
            _ => None,
        }
    };
    if let Some(reason) = mismatch {
        return Err(refuse(ApiError::rejected(reason)));
    }

    // The chain: nonce unused, deadline ahead, model active. (A book drained since the backing
    // check does not stop the result: settled unpaid, the order can no longer be disputed, which
    // the provider needs.)
    let chain = &shared.chain;
    // The model may have been deregistered since: the contract still settles it under a root
    // that lists it while that root is accepted (current or in its grace window), and this
    // sequencer proves under its registry file's root, which lists it (the proof checked above).
    let (used, now, active) =
        tokio::try_join!(chain.nonce_used(o.poster, o.nonce), chain.now(), chain.model_active(&leaf.model_id))
            .map_err(ApiError::unavailable)?;
    let file_root = checked_root;
    // A second round trip only for a deregistered model (rare), not on every acknowledgement.
    let servable = active || chain.root_accepted(&file_root).await.map_err(ApiError::unavailable)?;
    stages.lap(IngestStage::Chain);
    if used {
        return Err(ApiError::conflict(format!(
            "order {hash}'s nonce is already used on-chain (settled, disputed or cancelled)"
        )));
    }
    if o.deadline <= now {
        return Err(ApiError::rejected(format!(
            "order {hash}'s deadline {} has passed (chain time {now})",
            o.deadline
        )));
    }
    if !servable {
        return Err(ApiError::rejected(format!(
            "model {} is not active in the on-chain registry, and the root listing it ({}) is no longer accepted",
            o.model_id,
            hex0x(&file_root)
        )));
    }

    let record = TaskRecord {
        task_id: hex0x(&task_id),
        provider: hex0x(provider.as_slice()),
        model_id: hex0x(&leaf.model_id),
        input_commitment: hex0x(&leaf.input_commitment),
        output_commitment: hex0x(&output_commitment),
        deadline: o.deadline,
        received_at: unix_now(),
        order: order.clone(),
        acceptance: acceptance.clone(),
        proof_digest: Some(delivery.proof_digest),
        failed_batches: 0,
        state: TaskState::Verified,
    };
    shared
        .store
        .insert_result(&task_id, &record, &proof_bytes, leaf_bytes.as_deref(), &output)
        .map_err(ApiError::unavailable)?;
    // The relay learns of orders delivered to it without being listed, and of their acceptance.
    let relayed = match listed {
        Some(r) if r.acceptance.is_some() => None,
        Some(r) => Some(OrderRecord { acceptance: Some(acceptance), ..r }),
        None => Some(OrderRecord { signed: order, acceptance: Some(acceptance), listed_at: unix_now() }),
    };
    if let Some(r) = relayed {
        if let Err(e) = shared.store.put_order(&B256::from(task_id), &r) {
            tracing::warn!(order = %hash, error = %e, "delivered order not recorded in the relay");
        }
    }
    shared.store.flush().await.map_err(ApiError::unavailable)?;
    stages.lap(IngestStage::Store);
    stages.record(&shared.metrics);
    shared.metrics.queue_depth.inc();
    if let Some(answer) = &leaf_answer {
        let outcome = if leaf_bytes.is_some() { "adopted" } else { "dropped" };
        shared.metrics.leaves.with_label_values(&[outcome]).inc();
        tracing::info!(task = %record.task_id, leaf_proof = %answer, "the provider's leaf proof");
    }
    tracing::info!(task = %record.task_id, provider = %record.provider, "result acknowledged");
    Ok(TaskView { leaf_proof: leaf_answer, ..view_with_receipt(shared, record, false)? })
}

/// The answer to a submission: the task's view with the sequencer's signed receipt.
fn view_with_receipt(shared: &Shared, record: TaskRecord, duplicate: bool) -> Result<TaskView, ApiError> {
    let id: [u8; 32] = parse_hex(&record.task_id, "stored task id")?;
    let proof_digest = match record.proof_digest {
        Some(d) => d,
        None => keccak256(shared.store.proof(&id).map_err(ApiError::unavailable)?.unwrap_or_default()),
    };
    let receipt = Receipt {
        order_hash: B256::from(id),
        provider: record.acceptance.provider,
        output_commitment: B256::from(parse_hex::<32>(&record.output_commitment, "stored output commitment")?),
        proof_digest,
        received_at: record.received_at,
    };
    let signed = shared.chain.sign_receipt(receipt).map_err(ApiError::unavailable)?;
    Ok(TaskView { receipt: Some(signed), ..view(shared, record, duplicate) })
}

fn view(shared: &Shared, record: TaskRecord, duplicate: bool) -> TaskView {
    let (status, reason, batch, tx) = match &record.state {
        TaskState::Verified => ("verified", None, None, None),
        TaskState::Settled { batch, tx, unpaid } => {
            ("settled", unpaid.as_ref().map(|u| format!("settled unpaid: {u}")), *batch, tx.clone())
        }
        TaskState::Dropped { reason } => ("dropped", Some(reason.clone()), None, None),
        TaskState::Batched { batch } => {
            let status = match shared.store.batch(*batch).ok().flatten().map(|b| b.state) {
                Some(BatchState::Open) | None => "batched",
                Some(BatchState::Proving) | Some(BatchState::Proven { .. }) => "proving",
                Some(_) => "submitted",
            };
            (status, None, Some(*batch), None)
        }
    };
    TaskView {
        task_id: record.task_id,
        status: status.into(),
        reason,
        provider: record.provider,
        model_id: record.model_id,
        input_commitment: record.input_commitment,
        output_commitment: record.output_commitment,
        deadline: record.deadline,
        batch,
        tx,
        duplicate,
        receipt: None,
        leaf_proof: None,
    }
}

/// A task's status.
#[utoipa::path(get, path = "/v1/tasks/{task_id}", params(("task_id" = String, Path, description = "0x + 64 hex")),
    responses((status = 200, body = TaskView), (status = 404, body = ErrorBody)))]
pub(super) async fn task_status(
    State(shared): State<Arc<Shared>>,
    Path(task_id): Path<String>,
) -> Result<Json<TaskView>, ApiError> {
    let id: [u8; 32] = parse_hex(&task_id, "task_id")?;
    match shared.store.task(&id).map_err(ApiError::unavailable)? {
        Some(record) => Ok(Json(view(&shared, record, false))),
        None if shared.in_flight.lock().expect("in-flight lock").contains(&id) => Ok(Json(TaskView {
            task_id,
            status: "received".into(),
            reason: None,
            provider: String::new(),
            model_id: String::new(),
            input_commitment: String::new(),
            output_commitment: String::new(),
            deadline: 0,
            batch: None,
            tx: None,
            duplicate: false,
            receipt: None,
            leaf_proof: None,
        })),
        None => Err(ApiError::not_found(format!("no acknowledged result for task {task_id}"))),
    }
}

/// A task's output, published once a settlement paid its provider for it (recorded by this
/// sequencer's pipeline: its own batch, or a settlement elsewhere read from chain data). Before
/// that a poster could read the output and cancel the order's nonce, or settle another order
/// under it. A private task's is served as it was delivered: encrypted to the poster.
#[utoipa::path(get, path = "/v1/tasks/{task_id}/output", params(("task_id" = String, Path, description = "0x + 64 hex")),
    responses((status = 200, body = OutputView), (status = 404, description = "unknown, or not yet settled and paid", body = ErrorBody)))]
pub(super) async fn task_output(
    State(shared): State<Arc<Shared>>,
    Path(task_id): Path<String>,
) -> Result<Json<OutputView>, ApiError> {
    let id: [u8; 32] = parse_hex(&task_id, "task_id")?;
    let record = shared.store.task(&id).map_err(ApiError::unavailable)?;
    let output = shared.store.output(&id).map_err(ApiError::unavailable)?;
    let (Some(r), Some(output)) = (record, output) else {
        return Err(ApiError::not_found(format!("no acknowledged result for task {task_id}")));
    };
    // Published only once a settlement paid this provider for this output: a used nonce alone
    // is not enough (a poster may cancel its nonce after the delivery, or use it for another
    // order, and read the output unpaid).
    if !matches!(r.state, TaskState::Settled { unpaid: None, .. }) {
        return Err(ApiError::not_found(format!(
            "task {task_id}'s output is published once a settlement pays its provider for it"
        )));
    }
    let (output, encrypted_output) = match output {
        StoredOutput::Plain(values) => (values, None),
        StoredOutput::Encrypted(bytes) => (Vec::new(), Some(format!("0x{}", alloy::hex::encode(bytes)))),
    };
    Ok(Json(OutputView { task_id, output_commitment: r.output_commitment, output, encrypted_output }))
}
