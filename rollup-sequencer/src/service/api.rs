//! HTTP API: result submission (checked against the proof and the chain before it is
//! acknowledged), task and batch status with membership proofs, published outputs, the OpenAPI
//! document and Prometheus metrics.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use tgrid_aggregation::TaskLeaf;
use tgrid_chain::bindings::ITaskEscrow::TaskStatus;
use tgrid_circuits::{commit, TaskProof};
use utoipa::{OpenApi, ToSchema};

use crate::service::chain::task_binding;
use crate::service::metrics::{IngestStage, Metrics};
use crate::service::store::{BatchState, TaskRecord, TaskState};
use crate::service::{unix_now, Shared};

/// Why a request was refused: HTTP status, a stable code and a human reason.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    reason: String,
}

/// Error body of every refused request.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    /// Stable machine-readable code (`bad_request`, `invalid_proof`, `rejected`, `conflict`,
    /// `rate_limited`, `not_found`, `unavailable`).
    pub error: String,
    /// What is wrong, for a human.
    pub reason: String,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, reason: impl Into<String>) -> Self {
        Self { status, code, reason: reason.into() }
    }
    fn bad_request(reason: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", reason)
    }
    fn rejected(reason: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "rejected", reason)
    }
    fn conflict(reason: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", reason)
    }
    fn not_found(reason: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", reason)
    }
    fn unavailable(reason: impl std::fmt::Display) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", reason.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(ErrorBody { error: self.code.into(), reason: self.reason })).into_response()
    }
}

/// A provider's result for a task it accepted.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitRequest {
    /// Task id (0x + 64 hex).
    pub task_id: String,
    /// The accepting provider (0x + 40 hex); must match the proof and the escrow.
    pub provider: String,
    /// The int8 output tensor (flat); its commitment must be the proof's output commitment.
    pub output: Vec<i8>,
    /// The task proof file (.tgp from `tgrid-prover prove`), 0x-prefixed hex.
    pub proof: String,
}

/// Where a task is.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TaskView {
    /// Task id.
    pub task_id: String,
    /// `received` (being checked), `verified`, `batched`, `proving`, `submitted`, `settled`, or
    /// `dropped` (accepted, then not settleable, see `reason`).
    pub status: String,
    /// Why a task was dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Provider.
    pub provider: String,
    /// Model id.
    pub model_id: String,
    /// Input commitment.
    pub input_commitment: String,
    /// Output commitment.
    pub output_commitment: String,
    /// Deadline (unix seconds).
    pub deadline: u64,
    /// Batch holding the task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<u64>,
    /// Settling transaction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tx: Option<String>,
    /// Whether this answer is for a repeated submission of an already acknowledged result.
    #[serde(default)]
    pub duplicate: bool,
}

/// A published output.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct OutputView {
    /// Task id.
    pub task_id: String,
    /// Output commitment (proven in the task proof).
    pub output_commitment: String,
    /// The int8 output tensor.
    pub output: Vec<i8>,
}

/// A task's place in its batch.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct BatchMember {
    /// Task id.
    pub task_id: String,
    /// Position in the batch.
    pub index: usize,
    /// Leaf hash (sha256(0x00 ‖ taskId ‖ modelId ‖ inputCommitment ‖ outputCommitment ‖ provider)).
    pub leaf_hash: String,
    /// RFC 6962 audit path from the leaf to the batch root.
    pub membership_proof: Vec<String>,
}

/// A batch.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct BatchView {
    /// Sequence number.
    pub id: u64,
    /// `open`, `proving`, `proven`, `submitted`, `settled` or `failed`.
    pub status: String,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// RFC 6962 root of the leaves (once every task is known).
    pub batch_root: String,
    /// Tasks, in order, with membership proofs.
    pub tasks: Vec<BatchMember>,
    /// Transactions sent, oldest first.
    pub txs: Vec<String>,
    /// Settling block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<u64>,
    /// Gas the settlement used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gas_used: Option<u64>,
}

#[derive(OpenApi)]
#[openapi(
    info(title = "tgrid-sequencer", description = "TensorGrid rollup sequencer API"),
    paths(submit, task_status, task_output, batch_status),
    components(schemas(SubmitRequest, TaskView, OutputView, BatchView, BatchMember, ErrorBody))
)]
struct ApiDoc;

/// The OpenAPI document.
pub fn openapi_json() -> String {
    ApiDoc::openapi().to_pretty_json().expect("the document serializes")
}

/// The router with its limits: body size, per-request timeout.
pub fn router(shared: Arc<Shared>) -> Router {
    let limit = shared.settings.max_body_bytes;
    let timeout = Duration::from_secs(shared.settings.request_timeout_secs);
    Router::new()
        .route("/v1/results", post(submit))
        .route("/v1/tasks/{task_id}", get(task_status))
        .route("/v1/tasks/{task_id}/output", get(task_output))
        .route("/v1/batches/{id}", get(batch_status))
        .route("/openapi.json", get(|| async { ([("content-type", "application/json")], openapi_json()) }))
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        // Refuses from Content-Length alone (413 before reading), and caps streamed bodies.
        .layer(DefaultBodyLimit::disable())
        .layer(tower_http::limit::RequestBodyLimitLayer::new(limit))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, timeout))
        .with_state(shared)
}

async fn metrics(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    ([("content-type", "text/plain; version=0.0.4")], shared.metrics.render())
}

fn parse_hex<const N: usize>(s: &str, what: &str) -> Result<[u8; N], ApiError> {
    let digits = s.strip_prefix("0x").ok_or_else(|| ApiError::bad_request(format!("{what} lacks the 0x prefix")))?;
    if digits.len() != 2 * N {
        return Err(ApiError::bad_request(format!("{what} must be {N} bytes (0x + {} hex digits)", 2 * N)));
    }
    let bytes = hex::decode(digits).map_err(|e| ApiError::bad_request(format!("{what}: {e}")))?;
    Ok(bytes.try_into().expect("length checked"))
}

fn hex0x(bytes: &[u8]) -> String {
    format!("0x{}", hex::encode(bytes))
}

/// Submit a task result. Checked against the proof and the chain before it is acknowledged;
/// the acknowledgement means the result is on disk. Repeating an acknowledged submission is
/// harmless (200, `duplicate: true`).
#[utoipa::path(post, path = "/v1/results", request_body = SubmitRequest, responses(
    (status = 202, description = "verified and durably stored", body = TaskView),
    (status = 200, description = "already acknowledged (idempotent repeat)", body = TaskView),
    (status = 400, description = "malformed request", body = ErrorBody),
    (status = 409, description = "another result is acknowledged, or the task already settled", body = ErrorBody),
    (status = 413, description = "body too large"),
    (status = 422, description = "invalid proof, or the chain does not allow this result", body = ErrorBody),
    (status = 429, description = "provider over its rate limit", body = ErrorBody),
    (status = 503, description = "chain or store unavailable; retry", body = ErrorBody),
))]
async fn submit(
    State(shared): State<Arc<Shared>>,
    body: Result<Json<SubmitRequest>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let started = Instant::now();
    let result = match body {
        Ok(Json(request)) => ingest(&shared, request).await,
        Err(e) => Err(match e {
            axum::extract::rejection::JsonRejection::BytesRejection(b) => {
                ApiError::new(b.status(), "bad_request", b.body_text())
            }
            other => ApiError::bad_request(other.body_text()),
        }),
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

async fn ingest(shared: &Shared, request: SubmitRequest) -> Result<TaskView, ApiError> {
    let task_id: [u8; 32] = parse_hex(&request.task_id, "task_id")?;
    let provider: [u8; 20] = parse_hex(&request.provider, "provider")?;
    if shared.limiter.check_key(&provider).is_err() {
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!(
                "provider {} is over {} submissions/s",
                request.provider, shared.settings.submissions_per_provider_per_sec
            ),
        ));
    }
    if !shared.in_flight.lock().expect("in-flight lock").insert(task_id) {
        return Err(ApiError::conflict("a submission for this task is being checked; retry"));
    }
    let _guard = InFlight(shared, task_id);
    let mut stages = StageClock::start();

    let proof_hex =
        request.proof.strip_prefix("0x").ok_or_else(|| ApiError::bad_request("proof lacks the 0x prefix"))?;
    // const-hex (through alloy): a proof is ~300 KB of hex, and the `hex` crate's decoder took
    // about a tenth of an acknowledgement's CPU in the load harness (dev profile).
    let proof_bytes = alloy::hex::decode(proof_hex).map_err(|e| ApiError::bad_request(format!("proof: {e}")))?;
    let proof = TaskProof::from_bytes(&proof_bytes).map_err(|e| ApiError::bad_request(format!("proof: {e}")))?;
    let output_commitment = commit(&request.output).0;

    if let Some(existing) = shared.store.task(&task_id).map_err(ApiError::unavailable)? {
        if !matches!(existing.state, TaskState::Dropped { .. }) {
            if existing.output_commitment == hex0x(&output_commitment) && existing.provider == hex0x(&provider) {
                return Ok(view(shared, existing, true));
            }
            return Err(ApiError::conflict(format!(
                "another result for task {} is already acknowledged (output commitment {})",
                request.task_id, existing.output_commitment
            )));
        }
    }

    stages.lap(IngestStage::Decode);

    // The proof: the CPU-heavy part runs off the async workers, a few at a time.
    let permit = shared.verify_slots.acquire().await.map_err(ApiError::unavailable)?;
    stages.lap(IngestStage::VerifyQueue);
    let aggregator = shared.aggregator.clone();
    let leaf: TaskLeaf = tokio::task::spawn_blocking(move || aggregator.check(&proof))
        .await
        .map_err(ApiError::unavailable)?
        .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_proof", e.to_string()))?;
    drop(permit);
    stages.lap(IngestStage::Verify);
    if leaf.task_id != task_id {
        return Err(ApiError::rejected(format!(
            "the proof is for task {}, not {}",
            hex0x(&leaf.task_id),
            request.task_id
        )));
    }
    if leaf.provider != provider {
        return Err(ApiError::rejected(format!(
            "the proof binds provider {}, not {}",
            hex0x(&leaf.provider),
            request.provider
        )));
    }
    if leaf.output_commitment != output_commitment {
        return Err(ApiError::rejected(format!(
            "the output's commitment {} is not the proven output commitment {}",
            hex0x(&output_commitment),
            hex0x(&leaf.output_commitment)
        )));
    }

    // The chain: accepted by this provider, for this model and input, not expired, model active.
    let chain = &shared.chain;
    let (task, now, active) = tokio::try_join!(chain.task(&task_id), chain.now(), chain.model_active(&leaf.model_id))
        .map_err(ApiError::unavailable)?;
    stages.lap(IngestStage::Chain);
    match task.status {
        TaskStatus::Accepted => {}
        TaskStatus::Settled => return Err(ApiError::conflict(format!("task {} is already settled", request.task_id))),
        TaskStatus::None => {
            return Err(ApiError::rejected(format!("task {} does not exist on-chain", request.task_id)))
        }
        other => {
            return Err(ApiError::rejected(format!("task {} is {other:?} on-chain, not accepted", request.task_id)));
        }
    }
    if task.provider.0 .0 != provider {
        return Err(ApiError::rejected(format!(
            "task {} was accepted by {}, not {}",
            request.task_id, task.provider, request.provider
        )));
    }
    if task.binding != task_binding(&leaf.model_id, &leaf.input_commitment, &leaf.provider) {
        return Err(ApiError::rejected(
            "the proof's model or input commitment is not the task's (escrow binding mismatch)",
        ));
    }
    if task.deadline <= now {
        return Err(ApiError::rejected(format!(
            "task {}'s deadline {} has passed (chain time {now})",
            request.task_id, task.deadline
        )));
    }
    if !active {
        return Err(ApiError::rejected(format!(
            "model {} is not active in the on-chain registry",
            hex0x(&leaf.model_id)
        )));
    }

    let record = TaskRecord {
        task_id: hex0x(&task_id),
        provider: hex0x(&provider),
        model_id: hex0x(&leaf.model_id),
        input_commitment: hex0x(&leaf.input_commitment),
        output_commitment: hex0x(&output_commitment),
        deadline: task.deadline,
        received_at: unix_now(),
        state: TaskState::Verified,
    };
    shared.store.insert_result(&task_id, &record, &proof_bytes, &request.output).map_err(ApiError::unavailable)?;
    shared.store.flush().await.map_err(ApiError::unavailable)?;
    stages.lap(IngestStage::Store);
    stages.record(&shared.metrics);
    shared.metrics.queue_depth.inc();
    tracing::info!(task = %record.task_id, provider = %record.provider, "result acknowledged");
    Ok(view(shared, record, false))
}

fn batch_status_name(state: &BatchState) -> &'static str {
    match state {
        BatchState::Open => "open",
        BatchState::Proving => "proving",
        BatchState::Proven { .. } => "proven",
        BatchState::Submitted { .. } => "submitted",
        BatchState::Settled { .. } => "settled",
        BatchState::Failed { .. } => "failed",
    }
}

fn view(shared: &Shared, record: TaskRecord, duplicate: bool) -> TaskView {
    let (status, reason, batch, tx) = match &record.state {
        TaskState::Verified => ("verified", None, None, None),
        TaskState::Settled { batch, tx } => ("settled", None, *batch, tx.clone()),
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
    }
}

/// A task's status.
#[utoipa::path(get, path = "/v1/tasks/{task_id}", params(("task_id" = String, Path, description = "0x + 64 hex")),
    responses((status = 200, body = TaskView), (status = 404, body = ErrorBody)))]
async fn task_status(
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
        })),
        None => Err(ApiError::not_found(format!("no acknowledged result for task {task_id}"))),
    }
}

/// A task's published output.
#[utoipa::path(get, path = "/v1/tasks/{task_id}/output", params(("task_id" = String, Path, description = "0x + 64 hex")),
    responses((status = 200, body = OutputView), (status = 404, body = ErrorBody)))]
async fn task_output(
    State(shared): State<Arc<Shared>>,
    Path(task_id): Path<String>,
) -> Result<Json<OutputView>, ApiError> {
    let id: [u8; 32] = parse_hex(&task_id, "task_id")?;
    let record = shared.store.task(&id).map_err(ApiError::unavailable)?;
    let output = shared.store.output(&id).map_err(ApiError::unavailable)?;
    match (record, output) {
        (Some(r), Some(output)) => Ok(Json(OutputView { task_id, output_commitment: r.output_commitment, output })),
        _ => Err(ApiError::not_found(format!("no acknowledged result for task {task_id}"))),
    }
}

/// A batch with each task's membership proof.
#[utoipa::path(get, path = "/v1/batches/{id}", params(("id" = u64, Path, description = "batch sequence number")),
    responses((status = 200, body = BatchView), (status = 404, body = ErrorBody)))]
async fn batch_status(State(shared): State<Arc<Shared>>, Path(id): Path<u64>) -> Result<Json<BatchView>, ApiError> {
    let batch = shared
        .store
        .batch(id)
        .map_err(ApiError::unavailable)?
        .ok_or_else(|| ApiError::not_found(format!("no batch {id}")))?;
    let mut leaves = Vec::with_capacity(batch.tasks.len());
    for t in &batch.tasks {
        let record = parse_hex::<32>(t, "task id")
            .ok()
            .and_then(|id| shared.store.task(&id).ok().flatten())
            .ok_or_else(|| ApiError::unavailable(format!("batch {id} lists task {t} without a record")))?;
        leaves.push(crate::service::leaf_of(&record).map_err(ApiError::unavailable)?);
    }
    let hashes: Vec<[u8; 32]> = leaves.iter().map(TaskLeaf::hash).collect();
    let tasks = leaves
        .iter()
        .enumerate()
        .map(|(index, leaf)| BatchMember {
            task_id: hex0x(&leaf.task_id),
            index,
            leaf_hash: hex0x(&hashes[index]),
            membership_proof: tgrid_aggregation::audit_path(&hashes, index)
                .unwrap_or_default()
                .iter()
                .map(|h| hex0x(h))
                .collect(),
        })
        .collect();
    let (mut reason, mut txs, mut block, mut gas_used) = (None, vec![], None, None);
    match &batch.state {
        BatchState::Submitted { txs: sent, .. } => txs = sent.clone(),
        BatchState::Settled { tx, block: b, gas_used: g } => {
            txs = vec![tx.clone()];
            block = Some(*b);
            gas_used = Some(*g);
        }
        BatchState::Failed { reason: r } => reason = Some(r.clone()),
        _ => {}
    }
    Ok(Json(BatchView {
        id,
        status: batch_status_name(&batch.state).into(),
        reason,
        batch_root: tgrid_aggregation::batch_root(&hashes).map(|r| hex0x(&r)).unwrap_or_default(),
        tasks,
        txs,
        block,
        gas_used,
    }))
}
