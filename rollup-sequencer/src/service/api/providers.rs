//! Providers' sealing keys: where posters of private tasks find the key to seal an input to. The
//! relay stores what a provider signed and nothing else; posters check the signature themselves.

use std::net::SocketAddr;
use std::sync::Arc;

use alloy::primitives::Address;
use axum::extract::{ConnectInfo, Path, State};
use axum::Json;

use super::{admit_relay_client, json_rejection, ApiError, ErrorBody, SealingKeyBody};
use crate::service::{unix_now, Shared};

/// How far in the future an announcement may be dated (clock skew): a later date would let it
/// outlive every rotation until then.
const MAX_CLOCK_SKEW_SECS: u64 = 300;

fn provider_of(address: &str) -> Result<Address, ApiError> {
    address.parse().map_err(|_| ApiError::bad_request(format!("{address:?} is not an address")))
}

/// Publish a provider's sealing key, signed by the provider's account (EIP-712
/// `SealingKey(provider, publicKey, issuedAt)`). Only bonded providers are listed (so the table
/// cannot be filled with keys of throwaway accounts). The newest announcement per provider is
/// kept: the answer is the one kept, which is an older one only if a newer was published before.
#[utoipa::path(put, path = "/v1/providers/{address}/sealing-key", request_body = SealingKeyBody,
    params(("address" = String, Path, description = "the provider account, 0x + 40 hex")),
    responses(
        (status = 200, description = "the announcement kept for this provider", body = SealingKeyBody),
        (status = 400, description = "malformed request, another address than the path's, or dated in the future", body = ErrorBody),
        (status = 422, description = "bad signature, or the provider has no bond", body = ErrorBody),
        (status = 429, description = "too many relay requests from this client; retry after Retry-After", body = ErrorBody),
        (status = 503, description = "chain or store unavailable; retry", body = ErrorBody),
    ))]
pub(super) async fn put_sealing_key(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    Path(address): Path<String>,
    body: Result<Json<SealingKeyBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<SealingKeyBody>, ApiError> {
    let provider = provider_of(&address)?;
    let announcement = body.map_err(json_rejection)?.0 .0;
    if announcement.provider != provider {
        return Err(ApiError::bad_request(format!(
            "the announcement is {}'s, the path names {provider}",
            announcement.provider
        )));
    }
    if announcement.issued_at > unix_now() + MAX_CLOCK_SKEW_SECS {
        return Err(ApiError::bad_request(format!(
            "the announcement is dated {}, in the future (now {})",
            announcement.issued_at,
            unix_now()
        )));
    }
    announcement.verify(&shared.chain.domain()).map_err(ApiError::bad_signature)?;
    admit_relay_client(&shared, client)?;
    let bond = shared.chain.bond(provider).await.map_err(ApiError::unavailable)?;
    if bond.bonded.is_zero() {
        return Err(ApiError::rejected(format!("{provider} has no bond in the market: only providers publish keys")));
    }
    let kept = shared.store.put_sealing_key(&announcement).map_err(ApiError::unavailable)?;
    shared.store.flush().await.map_err(ApiError::unavailable)?;
    Ok(Json(SealingKeyBody(kept)))
}

/// A provider's sealing key as it signed it: check the signature against the provider's
/// address before sealing anything to it.
#[utoipa::path(get, path = "/v1/providers/{address}/sealing-key",
    params(("address" = String, Path, description = "the provider account, 0x + 40 hex")),
    responses((status = 200, body = SealingKeyBody), (status = 404, description = "no key published", body = ErrorBody)))]
pub(super) async fn sealing_key(
    State(shared): State<Arc<Shared>>,
    Path(address): Path<String>,
) -> Result<Json<SealingKeyBody>, ApiError> {
    let provider = provider_of(&address)?;
    match shared.store.sealing_key(&provider.0 .0).map_err(ApiError::unavailable)? {
        Some(a) => Ok(Json(SealingKeyBody(a))),
        None => Err(ApiError::not_found(format!("{provider} has published no sealing key"))),
    }
}
