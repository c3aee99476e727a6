//! HTTP API: the order relay (post and list signed orders, record acceptances), result
//! submission (checked against the proof, the signed order and the chain before it is
//! acknowledged), providers' sealing keys for private tasks, task and batch status with
//! membership proofs, published outputs (encrypted to the poster for private tasks), the
//! operator's status (retrying batches, funds), the OpenAPI document and Prometheus metrics.

mod backing;
mod batches;
mod orders;
mod providers;
pub(crate) mod refused;
mod results;
mod status;

use std::sync::Arc;
use std::time::Duration;

use alloy::primitives::Signature;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use tgrid_chain::market::{Acceptance, OrderView, SealingKeyAnnouncement, SignedOrder, SignedReceipt};
use utoipa::{OpenApi, ToSchema};

use crate::service::Shared;

/// Why a request was refused: HTTP status, a stable code and a human reason.
#[derive(Clone, Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    reason: String,
}

/// Error body of every refused request.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    /// Stable machine-readable code (`bad_request`, `bad_signature`, `invalid_proof`, `rejected`,
    /// `conflict`, `rate_limited`, `not_found`, `busy`, `unavailable`). 429 and 503 carry
    /// `Retry-After`.
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
    fn bad_signature(e: tgrid_chain::market::OrderError) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "bad_signature", e.to_string())
    }
    fn rejected(reason: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "rejected", reason)
    }
    fn conflict(reason: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", reason)
    }
    fn too_many(reason: impl Into<String>) -> Self {
        Self::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", reason)
    }
    fn not_found(reason: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", reason)
    }
    fn busy(reason: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "busy", reason)
    }
    fn unavailable(reason: impl std::fmt::Display) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", reason.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Json(ErrorBody { error: self.code.into(), reason: self.reason });
        match self.status {
            // Busy or briefly unavailable: say when to come back rather than leave clients guessing.
            StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS => {
                (self.status, [(axum::http::header::RETRY_AFTER, "1")], body).into_response()
            }
            status => (status, body).into_response(),
        }
    }
}

/// Admits a relay write from `client` under the per-client limit ([`crate::service::edge`]),
/// before anything reads the chain for it.
fn admit_relay_client(shared: &Shared, client: std::net::SocketAddr) -> Result<(), ApiError> {
    let key = crate::service::edge::client_key(client.ip());
    if shared.relay_limiter.check_key(&key).is_err() {
        shared.metrics.orders.with_label_values(&["rate_limited"]).inc();
        return Err(ApiError::too_many(format!(
            "more than {} relay requests per second from {key}",
            shared.settings.relay_requests_per_client_per_sec
        )));
    }
    Ok(())
}

/// A provider's result: the proof of a signed order it accepted, with the output
/// (`tgrid_chain::market::ResultSubmission`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitRequest {
    /// The poster's signed order: `{"order": {...}, "signature": "0x<65 bytes>"}`; its EIP-712
    /// hash is the task id the proof binds.
    #[schema(value_type = Object)]
    pub order: SignedOrder,
    /// The provider's signed acceptance: `{"orderHash", "provider", "signature"}`; the provider
    /// must be the one the proof binds.
    #[schema(value_type = Object)]
    pub acceptance: Acceptance,
    /// A public task's int8 output tensor (flat); its commitment must be the proof's output
    /// commitment. Empty for a private task.
    pub output: Vec<i8>,
    /// A private task's output encrypted to its poster: the bytes of a
    /// `tgrid_circuits::EncryptedTensor` (0x-prefixed hex), whose commitment must be the proof's
    /// output commitment. Absent for a public task. The sequencer stores and serves only the
    /// ciphertext.
    #[serde(default)]
    pub encrypted_output: Option<String>,
    /// The task proof file (.tgp from `tgrid-prover prove`), 0x-prefixed hex.
    pub proof: String,
    /// Optional: the task's leaf proof (plonky2 bytes, 0x-prefixed hex), proven by the provider
    /// with the aggregation's leaf circuit under the registry the sequencer batches with
    /// (`prove_leaves` in the provider daemon). Verified in full: one that is not this task's
    /// leaf is refused (422 `invalid_leaf`); a valid one under another registry root is dropped
    /// and the sequencer proves the leaf itself. Not covered by the delivery signature.
    #[serde(default)]
    pub leaf_proof: Option<String>,
    /// The provider's EIP-712 signature of `Delivery(orderHash, outputCommitment, proofDigest)`
    /// (keccak256 of the proof bytes), by the key that accepted the order: 0x + 65 bytes. Checked
    /// before anything costly.
    #[serde(with = "tgrid_chain::market::order::signature_hex")]
    #[schema(value_type = String)]
    pub signature: Signature,
}

/// An order as the relay lists it: `{"hash", "signed": {"order", "signature"}, "acceptance",
/// "state"}` (`tgrid_chain::market::OrderView`); `state` is `open`, `accepted`, `delivered`,
/// `closed` or `expired`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(transparent)]
#[schema(value_type = Object)]
pub struct OrderBody(pub OrderView);

/// A signed order to list (`tgrid_chain::market::SignedOrder`).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(transparent)]
#[schema(value_type = Object)]
pub struct SignedOrderBody(pub SignedOrder);

/// A provider's signed acceptance (`tgrid_chain::market::Acceptance`).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(transparent)]
#[schema(value_type = Object)]
pub struct AcceptanceBody(pub Acceptance);

/// Where a task is.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TaskView {
    /// Task id.
    pub task_id: String,
    /// `received` (being checked), `verified`, `batched`, `proving`, `submitted`, `settled`
    /// (`reason` says why it was not paid, if it was not), or `dropped` (acknowledged, then not
    /// settleable, see `reason`).
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
    /// Deadline (unix seconds, from the order).
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
    /// In answers to a submission: the sequencer's signed receipt
    /// (`tgrid_chain::market::SignedReceipt`), the provider's evidence of delivery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub receipt: Option<SignedReceipt>,
    /// In answers to a submission with a leaf proof: `adopted` (the sequencer will not prove
    /// this task's leaf), or `dropped: <why>` (valid, but under another registry root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf_proof: Option<String>,
}

/// A published output.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct OutputView {
    /// Task id.
    pub task_id: String,
    /// Output commitment (proven in the task proof).
    pub output_commitment: String,
    /// A public task's int8 output tensor (empty for a private task).
    pub output: Vec<i8>,
    /// A private task's output encrypted to the poster (`EncryptedTensor` bytes, 0x-prefixed
    /// hex); its commitment is the output commitment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_output: Option<String>,
}

/// A provider's signed sealing key (`tgrid_chain::market::SealingKeyAnnouncement`):
/// `{"provider", "publicKey", "issuedAt", "signature"}`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(transparent)]
#[schema(value_type = Object)]
pub struct SealingKeyBody(pub SealingKeyAnnouncement);

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
    paths(
        orders::post_order,
        orders::list_orders,
        orders::get_order,
        orders::accept_order,
        providers::put_sealing_key,
        providers::sealing_key,
        results::submit,
        results::task_status,
        results::task_output,
        batches::batch_status,
        status::status
    ),
    components(schemas(
        SubmitRequest,
        SignedOrderBody,
        AcceptanceBody,
        OrderBody,
        SealingKeyBody,
        TaskView,
        OutputView,
        BatchView,
        BatchMember,
        ErrorBody,
        status::StatusView,
        status::LiveBatch,
        status::Account,
        crate::service::health::Retrying,
        crate::service::health::FailedBatch,
        crate::service::health::RetryKind
    ))
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
        .route("/v1/orders", post(orders::post_order).get(orders::list_orders))
        .route("/v1/orders/{hash}", get(orders::get_order))
        .route("/v1/orders/{hash}/acceptance", post(orders::accept_order))
        .route("/v1/providers/{address}/sealing-key", put(providers::put_sealing_key).get(providers::sealing_key))
        .route("/v1/results", post(results::submit))
        .route("/v1/tasks/{task_id}", get(results::task_status))
        .route("/v1/tasks/{task_id}/output", get(results::task_output))
        .route("/v1/batches/{id}", get(batches::batch_status))
        .route("/v1/status", get(status::status))
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

pub(crate) fn parse_hex<const N: usize>(s: &str, what: &str) -> Result<[u8; N], ApiError> {
    let digits = s.strip_prefix("0x").ok_or_else(|| ApiError::bad_request(format!("{what} lacks the 0x prefix")))?;
    if digits.len() != 2 * N {
        return Err(ApiError::bad_request(format!("{what} must be {N} bytes (0x + {} hex digits)", 2 * N)));
    }
    let bytes = hex::decode(digits).map_err(|e| ApiError::bad_request(format!("{what}: {e}")))?;
    Ok(bytes.try_into().expect("length checked"))
}

pub(crate) fn hex0x(bytes: &[u8]) -> String {
    format!("0x{}", hex::encode(bytes))
}

/// The error of a body that is not the expected JSON (or too large).
fn json_rejection(e: axum::extract::rejection::JsonRejection) -> ApiError {
    match e {
        axum::extract::rejection::JsonRejection::BytesRejection(b) => {
            ApiError::new(b.status(), "bad_request", b.body_text())
        }
        other => ApiError::bad_request(other.body_text()),
    }
}
