//! The order relay: posters list signed orders, providers find open orders of their models and
//! record a signed acceptance. Everything listed is checked against the chain first (signature,
//! nonce unused, a book that backs the order until its deadline, an active model), and an
//! acceptance only while the provider's bond covers the collateral of every order it accepted
//! here and may still be disputed for.

use std::net::SocketAddr;
use std::sync::Arc;

use alloy::primitives::B256;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use tgrid_chain::market::{OrderView, RelayState};

use super::backing::{bond_cover, book_backs, within_terms};
use super::{
    admit_relay_client, json_rejection, parse_hex, AcceptanceBody, ApiError, ErrorBody, OrderBody, SignedOrderBody,
};
use crate::service::store::{OrderPage, OrderRecord, TaskState};
use crate::service::{unix_now, Shared};

/// Most orders one listing returns.
const MAX_LIST: usize = 1_000;
/// Most orders of one poster a listing returns unless asked otherwise.
const DEFAULT_PER_POSTER: usize = 16;

/// Where an order stands, from the relay's and the sequencer's records.
fn relay_state(shared: &Shared, hash: &B256, record: &OrderRecord, now: u64) -> Result<RelayState, ApiError> {
    if let Some(task) = shared.store.task(&hash.0).map_err(ApiError::unavailable)? {
        return Ok(match task.state {
            TaskState::Settled { .. } => RelayState::Closed,
            TaskState::Dropped { .. } if record.signed.order.deadline < now => RelayState::Expired,
            TaskState::Dropped { .. } => RelayState::Accepted,
            _ => RelayState::Delivered,
        });
    }
    Ok(if record.signed.order.deadline < now {
        RelayState::Expired
    } else if record.acceptance.is_some() {
        RelayState::Accepted
    } else {
        RelayState::Open
    })
}

fn view(shared: &Shared, hash: B256, record: OrderRecord, now: u64) -> Result<OrderBody, ApiError> {
    let state = relay_state(shared, &hash, &record, now)?;
    Ok(OrderBody(OrderView { hash, signed: record.signed, acceptance: record.acceptance, state }))
}

/// List a signed order. Checked against the chain before it is listed: the poster's signature,
/// its nonce unused, a deadline within the market's bounds, a payment at least the market's
/// minimum (smaller orders cannot be disputed), an active model, and a book of the poster that
/// backs it until the deadline (index below the capacity, payment at most the per-order maximum,
/// not unlocking before the deadline). One order per poster nonce.
#[utoipa::path(post, path = "/v1/orders", request_body = SignedOrderBody, responses(
    (status = 201, description = "listed", body = OrderBody),
    (status = 200, description = "already listed", body = OrderBody),
    (status = 400, description = "malformed request", body = ErrorBody),
    (status = 409, description = "its nonce is used on-chain, or another order is listed for it", body = ErrorBody),
    (status = 422, description = "bad signature, or the chain would not back it", body = ErrorBody),
    (status = 429, description = "too many relay requests from this client; retry after Retry-After", body = ErrorBody),
    (status = 503, description = "chain or store unavailable; retry", body = ErrorBody),
))]
pub(super) async fn post_order(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    body: Result<Json<SignedOrderBody>, axum::extract::rejection::JsonRejection>,
) -> Result<(StatusCode, Json<OrderBody>), ApiError> {
    let signed = body.map_err(json_rejection)?.0 .0;
    let hash = signed.verify(&shared.chain.domain()).map_err(ApiError::bad_signature)?;
    let chain = &shared.chain;
    if let Some(existing) = shared.store.order(&hash).map_err(ApiError::unavailable)? {
        let now = shared.relay_reads.now(chain).await.map_err(ApiError::unavailable)?;
        return Ok((StatusCode::OK, Json(view(&shared, hash, existing, now)?)));
    }
    admit_relay_client(&shared, client)?;
    let o = &signed.order;
    let (now, params, book, used, active) = tokio::try_join!(
        shared.relay_reads.now(chain),
        shared.relay_reads.parameters(chain),
        chain.book(o.poster, o.book()),
        chain.nonce_used(o.poster, o.nonce),
        chain.model_active(&o.model_id.0)
    )
    .map_err(ApiError::unavailable)?;
    if used {
        return Err(ApiError::conflict(format!(
            "nonce {} of {} is already used on-chain (settled, disputed or cancelled)",
            o.nonce, o.poster
        )));
    }
    within_terms(o, &params, now)?;
    if !active {
        return Err(ApiError::rejected(format!("model {} is not active in the on-chain registry", o.model_id)));
    }
    book_backs(o, &book)?;

    let record = OrderRecord { signed, acceptance: None, listed_at: unix_now() };
    shared.store.put_order(&hash, &record).map_err(|e| match e {
        crate::service::ServiceError::Rejected(reason) => ApiError::conflict(reason),
        other => ApiError::unavailable(other),
    })?;
    shared.store.flush().await.map_err(ApiError::unavailable)?;
    shared.metrics.orders.with_label_values(&["listed"]).inc();
    tracing::info!(order = %hash, poster = %record.signed.order.poster, "order listed");
    Ok((StatusCode::CREATED, Json(view(&shared, hash, record, now)?)))
}

/// Query of an order listing.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    /// Model id (0x + 64 hex).
    model: String,
    /// `open` (default), `accepted`, `delivered`, `closed`, `expired` or `any`.
    state: Option<String>,
    /// Most orders returned (default 100, at most 1,000).
    limit: Option<usize>,
    /// Where the page starts (`<deadline>:<order hash>`): the previous page's `Next-From` header.
    from: Option<String>,
    /// Most orders of any one poster returned (default 16): one poster's many orders cannot fill
    /// a page.
    per_poster: Option<usize>,
}

/// Parses a page cursor `<deadline>:<0x hash>`.
fn cursor(text: &str) -> Result<(u64, B256), ApiError> {
    let bad = || ApiError::bad_request(format!("from {text:?} is not <deadline>:<order hash>"));
    let (deadline, hash) = text.split_once(':').ok_or_else(bad)?;
    Ok((deadline.parse().map_err(|_| bad())?, B256::from(parse_hex::<32>(hash, "from's order hash")?)))
}

/// Orders of a model, nearest deadline first, at most `per_poster` of one poster per page. When
/// there is more, the `Next-From` header says where the next page starts (`from=`); a later page
/// may repeat an order a poster's bound passed over on an earlier one.
#[utoipa::path(get, path = "/v1/orders", params(ListQuery), responses(
    (status = 200, description = "orders, nearest deadline first; `Next-From` when there is more", body = [OrderBody]),
    (status = 400, body = ErrorBody),
))]
pub(super) async fn list_orders(
    State(shared): State<Arc<Shared>>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<impl axum::response::IntoResponse, ApiError> {
    let Query(q) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let model = B256::from(parse_hex::<32>(&q.model, "model")?);
    let wanted: Option<RelayState> = match q.state.as_deref().unwrap_or("open") {
        "any" => None,
        s => Some(
            serde_json::from_value(serde_json::Value::String(s.to_string()))
                .map_err(|_| ApiError::bad_request(format!("unknown state {s:?}")))?,
        ),
    };
    let limit = q.limit.unwrap_or(100).min(MAX_LIST);
    let from = q.from.as_deref().map(cursor).transpose()?;
    let per_poster = q.per_poster.unwrap_or(DEFAULT_PER_POSTER).clamp(1, MAX_LIST);
    let now = shared.relay_reads.now(&shared.chain).await.map_err(ApiError::unavailable)?;
    // Expired orders are left out unless asked for.
    let not_before =
        if matches!(wanted, None | Some(RelayState::Expired) | Some(RelayState::Closed)) { 0 } else { now };
    let mut out = Vec::new();
    let mut error = None;
    let (records, next) = shared
        .store
        .orders_of_model(&model, OrderPage { not_before, from, limit, per_poster }, |hash, record| {
            match relay_state(&shared, hash, record, now) {
                Ok(state) => wanted.is_none_or(|w| w == state),
                Err(e) => {
                    error.get_or_insert(e);
                    false
                }
            }
        })
        .map_err(ApiError::unavailable)?;
    if let Some(e) = error {
        return Err(e);
    }
    for (hash, record) in records {
        out.push(view(&shared, hash, record, now)?);
    }
    let mut headers = axum::http::HeaderMap::new();
    if let Some((deadline, hash)) = next {
        let value = axum::http::HeaderValue::from_str(&format!("{deadline}:{hash}")).expect("ASCII");
        headers.insert(tgrid_chain::market::NEXT_FROM, value);
    }
    Ok((headers, Json(out)))
}

/// One listed order.
#[utoipa::path(get, path = "/v1/orders/{hash}", params(("hash" = String, Path, description = "order hash, 0x + 64 hex")),
    responses((status = 200, body = OrderBody), (status = 404, body = ErrorBody)))]
pub(super) async fn get_order(
    State(shared): State<Arc<Shared>>,
    Path(hash): Path<String>,
) -> Result<Json<OrderBody>, ApiError> {
    let hash = B256::from(parse_hex::<32>(&hash, "order hash")?);
    let record = shared
        .store
        .order(&hash)
        .map_err(ApiError::unavailable)?
        .ok_or_else(|| ApiError::not_found(format!("no order {hash} is listed")))?;
    let now = shared.relay_reads.now(&shared.chain).await.map_err(ApiError::unavailable)?;
    Ok(Json(view(&shared, hash, record, now)?))
}

/// Record a provider's signed acceptance of a listed order. The first acceptance wins (a second
/// provider gets 409; the same one again 200). Refused when the order names another provider,
/// its deadline passed, or the provider's bond (bonded, plus unbonding stake that stays until
/// the dispute window closes) does not cover the collateral of this order plus every order it
/// accepted here that may still be disputed.
#[utoipa::path(post, path = "/v1/orders/{hash}/acceptance", request_body = AcceptanceBody,
    params(("hash" = String, Path, description = "order hash, 0x + 64 hex")), responses(
    (status = 200, description = "recorded", body = OrderBody),
    (status = 400, body = ErrorBody),
    (status = 404, body = ErrorBody),
    (status = 409, description = "another provider accepted it first", body = ErrorBody),
    (status = 422, description = "bad signature, another named provider, deadline passed, bond too small", body = ErrorBody),
    (status = 429, description = "too many relay requests from this client; retry after Retry-After", body = ErrorBody),
))]
pub(super) async fn accept_order(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    Path(hash): Path<String>,
    body: Result<Json<AcceptanceBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<OrderBody>, ApiError> {
    let hash = B256::from(parse_hex::<32>(&hash, "order hash")?);
    let acceptance = body.map_err(json_rejection)?.0 .0;
    if acceptance.order_hash != hash {
        return Err(ApiError::bad_request(format!(
            "the acceptance is for order {}, not {hash}",
            acceptance.order_hash
        )));
    }
    acceptance.verify(&shared.chain.domain()).map_err(ApiError::bad_signature)?;
    let mut record = shared
        .store
        .order(&hash)
        .map_err(ApiError::unavailable)?
        .ok_or_else(|| ApiError::not_found(format!("no order {hash} is listed")))?;
    let o = record.signed.order.clone();
    let chain = &shared.chain;
    // Answered from the store alone: a flood of acceptances for a taken order reads nothing.
    match &record.acceptance {
        Some(a) if a.provider == acceptance.provider => {
            let now = shared.relay_reads.now(chain).await.map_err(ApiError::unavailable)?;
            return Ok(Json(view(&shared, hash, record, now)?));
        }
        Some(a) => return Err(ApiError::conflict(format!("order {hash} was accepted by {} first", a.provider))),
        None => {}
    }
    if o.is_named() && o.provider != acceptance.provider {
        return Err(ApiError::rejected(format!("order {hash} names provider {}", o.provider)));
    }
    admit_relay_client(&shared, client)?;
    // This provider's acceptances are checked against its bond one at a time: two racing ones
    // must not both fit a bond that covers one.
    let provider_lock = shared.acceptance_lock(acceptance.provider);
    let _serialized = provider_lock.lock().await;
    let now = shared.relay_reads.now(chain).await.map_err(ApiError::unavailable)?;
    if o.deadline <= now {
        return Err(ApiError::rejected(format!("order {hash}'s deadline {} has passed", o.deadline)));
    }
    let (bond, params) = tokio::try_join!(chain.bond(acceptance.provider), shared.relay_reads.parameters(chain))
        .map_err(ApiError::unavailable)?;
    let window = params.disputeWindow.saturating_to::<u64>();
    // Orders this provider accepted here that may still end in a dispute.
    let open =
        shared.store.accepted_by(&acceptance.provider, now.saturating_sub(window)).map_err(ApiError::unavailable)?;
    let mut exposure = o.collateral;
    for (h, r) in &open {
        let settled = matches!(
            shared.store.task(&h.0).map_err(ApiError::unavailable)?.map(|t| t.state),
            Some(TaskState::Settled { .. })
        );
        if !settled {
            exposure = exposure.saturating_add(r.signed.order.collateral);
        }
    }
    let cover = bond_cover(&bond, o.deadline, window);
    if cover < exposure {
        return Err(ApiError::rejected(format!(
            "provider {}'s bond {cover} does not cover the collateral {exposure} of this order and the {} other order(s) it \
             accepted here that can still be disputed",
            acceptance.provider,
            open.len()
        )));
    }
    // First acceptance wins, checked again as it is written: another provider's may have been
    // recorded while this one's bond was read.
    let kept = shared.store.record_acceptance(&hash, &acceptance).map_err(ApiError::unavailable)?;
    if kept.provider != acceptance.provider {
        return Err(ApiError::conflict(format!("order {hash} was accepted by {} first", kept.provider)));
    }
    shared.store.flush().await.map_err(ApiError::unavailable)?;
    shared.metrics.orders.with_label_values(&["accepted"]).inc();
    tracing::info!(order = %hash, provider = %kept.provider, "acceptance recorded");
    record.acceptance = Some(kept);
    Ok(Json(view(&shared, hash, record, now)?))
}
