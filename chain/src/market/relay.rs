//! The order relay's wire format and a client for it. The sequencer serves one relay (any other
//! service may serve the same API): posters publish signed orders, providers list open orders by
//! model and record their signed acceptance, and everyone reads an order's state.
//!
//! | method and path | body | answer |
//! | --- | --- | --- |
//! | `POST /v1/orders` | [`SignedOrder`] | 201 [`OrderView`] (200 if already listed) |
//! | `GET /v1/orders?model=0x..&state=open&limit=N[&per_poster=16][&from=D:0x..]` | | `[OrderView]`, nearest deadline first, at most `per_poster` of one poster; header `Next-From` when there is more |
//! | `GET /v1/orders/{hash}` | | [`OrderView`] |
//! | `POST /v1/orders/{hash}/acceptance` | [`Acceptance`] | 200 [`OrderView`] |
//! | `PUT /v1/providers/{address}/sealing-key` | [`SealingKeyAnnouncement`] | 200 (the newest kept) |
//! | `GET /v1/providers/{address}/sealing-key` | | [`SealingKeyAnnouncement`] |
//!
//! Results (`POST /v1/results`, [`ResultSubmission`], signed by the provider; the answer carries
//! the sequencer's [`SignedReceipt`](crate::market::SignedReceipt)) go to the sequencer that
//! batches them; an output is published (`GET /v1/tasks/{hash}/output`, [`OutputView`]) once its
//! order settled. A private task's output travels encrypted to the poster in the proof itself
//! (`encrypted_output`, the bytes of a `tgrid_circuits::EncryptedTensor` as hex, whose hash is the
//! proof's output commitment) and is served as such. Refusals carry [`ErrorBody`].

use std::time::Duration;

use alloy::primitives::{Signature, B256};
use alloy::signers::local::PrivateKeySigner;
use alloy::transports::http::reqwest;
use serde::{Deserialize, Serialize};

use crate::market::delivery::Delivery;
use crate::market::order::{signature_hex, Acceptance, MarketDomain, OrderError, SignedOrder};
use crate::market::sealing::SealingKeyAnnouncement;

/// Where an order stands in the relay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RelayState {
    /// Listed, nobody accepted it yet.
    Open,
    /// A provider's acceptance is recorded.
    Accepted,
    /// The sequencer holds a verified result for it.
    Delivered,
    /// It settled on-chain (or its nonce was otherwise used).
    Closed,
    /// Its deadline passed unsettled.
    Expired,
}

/// An order as the relay lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OrderView {
    /// Its hash (task id).
    pub hash: B256,
    /// The signed order.
    pub signed: SignedOrder,
    /// The acceptance recorded, if any.
    pub acceptance: Option<Acceptance>,
    /// Where it stands.
    pub state: RelayState,
}

/// A provider's result: the proof of a signed order it accepted, with the output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultSubmission {
    /// The signed order (its hash is the task id the proof binds).
    pub order: SignedOrder,
    /// The provider's acceptance of it.
    pub acceptance: Acceptance,
    /// A public task's int8 output tensor (flat); its commitment must be the proof's output
    /// commitment. Empty for a private task.
    pub output: Vec<i8>,
    /// A private task's output encrypted to the poster (the bytes of a
    /// `tgrid_circuits::EncryptedTensor`, 0x-prefixed hex), whose commitment must be the proof's
    /// output commitment; absent for a public task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_output: Option<String>,
    /// The task proof file (.tgp), 0x-prefixed hex.
    pub proof: String,
    /// Optionally, the task's leaf proof (the aggregation's first recursive step over the task
    /// proof, proven by the provider under the registry the sequencer batches with), 0x-prefixed
    /// hex: the sequencer checks it in milliseconds instead of proving it. Not signed: it is
    /// verified in full, and a wrong one is refused without touching the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf_proof: Option<String>,
    /// The provider's signature of the [`Delivery`] of this output and proof, by the key that
    /// accepted the order.
    #[serde(with = "signature_hex")]
    pub signature: Signature,
}

impl ResultSubmission {
    /// A submission signed by `provider` (the key of `acceptance`); `output_commitment` is the
    /// proven commitment of `output`, `proof` the .tgp bytes.
    pub fn sign(
        order: SignedOrder,
        acceptance: Acceptance,
        output: Vec<i8>,
        output_commitment: B256,
        proof: &[u8],
        provider: &PrivateKeySigner,
        domain: &MarketDomain,
    ) -> Result<Self, OrderError> {
        let delivery = Delivery::of_proof(acceptance.order_hash, output_commitment, proof);
        let signature = delivery.sign(provider, domain)?;
        Ok(Self {
            order,
            acceptance,
            output,
            encrypted_output: None,
            proof: format!("0x{}", hex::encode(proof)),
            leaf_proof: None,
            signature,
        })
    }

    /// A private task's submission: its output encrypted to the poster (`EncryptedTensor`
    /// bytes), whose commitment `output_commitment` is the proof's.
    pub fn sign_encrypted(
        order: SignedOrder,
        acceptance: Acceptance,
        encrypted_output: &[u8],
        output_commitment: B256,
        proof: &[u8],
        provider: &PrivateKeySigner,
        domain: &MarketDomain,
    ) -> Result<Self, OrderError> {
        let delivery = Delivery::of_proof(acceptance.order_hash, output_commitment, proof);
        let signature = delivery.sign(provider, domain)?;
        Ok(Self {
            order,
            acceptance,
            output: Vec::new(),
            encrypted_output: Some(format!("0x{}", hex::encode(encrypted_output))),
            proof: format!("0x{}", hex::encode(proof)),
            leaf_proof: None,
            signature,
        })
    }

    /// The same submission carrying the task's leaf proof (bytes of a plonky2 leaf proof).
    pub fn with_leaf_proof(self, leaf_proof: &[u8]) -> Self {
        Self { leaf_proof: Some(format!("0x{}", hex::encode(leaf_proof))), ..self }
    }
}

/// A published output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputView {
    /// Task id (order hash).
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

/// Error body of every refused request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// Stable machine-readable code.
    pub error: String,
    /// What is wrong, for a human.
    pub reason: String,
}

/// What a relay or sequencer call can end in.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    /// The service could not be reached or answered garbage: worth retrying.
    #[error("{url}: {reason}")]
    Unreachable {
        /// The URL.
        url: String,
        /// What happened.
        reason: String,
    },
    /// The service refused the request.
    #[error("{url} answered {status}: {reason}")]
    Refused {
        /// The URL.
        url: String,
        /// HTTP status.
        status: u16,
        /// Stable code from the error body (empty if none).
        code: String,
        /// The reason given.
        reason: String,
    },
}

impl RelayError {
    /// HTTP status of a refusal.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Refused { status, .. } => Some(*status),
            Self::Unreachable { .. } => None,
        }
    }
}

/// A client of one relay / sequencer base URL.
#[derive(Clone, Debug)]
pub struct RelayClient {
    base: String,
    http: reqwest::Client,
}

impl RelayClient {
    /// A client of `base_url` (e.g. `http://127.0.0.1:8080`) whose requests time out after `timeout`.
    pub fn new(base_url: &str, timeout: Duration) -> Result<Self, RelayError> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| RelayError::Unreachable { url: base_url.to_string(), reason: e.to_string() })?;
        Ok(Self { base: base_url.trim_end_matches('/').to_string(), http })
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    async fn call<T: serde::de::DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
        url: String,
    ) -> Result<T, RelayError> {
        let unreachable = |reason: String| RelayError::Unreachable { url: url.clone(), reason };
        let response = request.send().await.map_err(|e| unreachable(e.to_string()))?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|e| unreachable(e.to_string()))?;
        if status.is_success() {
            return serde_json::from_slice(&bytes).map_err(|e| unreachable(format!("unexpected answer: {e}")));
        }
        let (code, reason) = match serde_json::from_slice::<ErrorBody>(&bytes) {
            Ok(body) => (body.error, body.reason),
            Err(_) => (String::new(), String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).into_owned()),
        };
        Err(RelayError::Refused { url, status: status.as_u16(), code, reason })
    }

    /// Publishes a signed order.
    pub async fn post_order(&self, order: &SignedOrder) -> Result<OrderView, RelayError> {
        let url = format!("{}/v1/orders", self.base);
        self.call(self.http.post(&url).json(order), url).await
    }

    /// Orders of `model` in `state`, nearest deadline first, at most `limit`.
    pub async fn orders(&self, model: B256, state: RelayState, limit: usize) -> Result<Vec<OrderView>, RelayError> {
        let state = serde_json::to_value(state).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let url = format!("{}/v1/orders?model={model}&state={state}&limit={limit}", self.base);
        self.call(self.http.get(&url), url).await
    }

    /// One order (a 404 is `Refused` with status 404).
    pub async fn order(&self, hash: B256) -> Result<OrderView, RelayError> {
        let url = format!("{}/v1/orders/{hash}", self.base);
        self.call(self.http.get(&url), url).await
    }

    /// Records a provider's acceptance of an order.
    pub async fn accept(&self, acceptance: &Acceptance) -> Result<OrderView, RelayError> {
        let url = format!("{}/v1/orders/{}/acceptance", self.base, acceptance.order_hash);
        self.call(self.http.post(&url).json(acceptance), url).await
    }

    /// Submits a result (answer: the sequencer's task view, as JSON).
    pub async fn submit_result(&self, result: &ResultSubmission) -> Result<serde_json::Value, RelayError> {
        let url = format!("{}/v1/results", self.base);
        self.call(self.http.post(&url).json(result), url).await
    }

    /// A task's status at the sequencer (JSON task view).
    pub async fn task(&self, hash: B256) -> Result<serde_json::Value, RelayError> {
        let url = format!("{}/v1/tasks/{hash}", self.base);
        self.call(self.http.get(&url), url).await
    }

    /// Acknowledged results waiting for a batch at the sequencer (`queue_depth` of `/v1/status`):
    /// what a provider weighs before accepting more work.
    pub async fn queue_depth(&self) -> Result<u64, RelayError> {
        let url = format!("{}/v1/status", self.base);
        let status: serde_json::Value = self.call(self.http.get(&url), url.clone()).await?;
        status["queue_depth"].as_u64().ok_or_else(|| RelayError::Unreachable {
            url,
            reason: "unexpected answer: no queue_depth in the status".into(),
        })
    }

    /// Publishes a provider's signed sealing key.
    pub async fn publish_sealing_key(
        &self,
        announcement: &SealingKeyAnnouncement,
    ) -> Result<SealingKeyAnnouncement, RelayError> {
        let url = format!("{}/v1/providers/{}/sealing-key", self.base, announcement.provider);
        self.call(self.http.put(&url).json(announcement), url).await
    }

    /// A provider's sealing key as announced (not yet checked: see
    /// [`SealingKeyAnnouncement::verify`]).
    pub async fn sealing_key(
        &self,
        provider: alloy::primitives::Address,
    ) -> Result<SealingKeyAnnouncement, RelayError> {
        let url = format!("{}/v1/providers/{provider}/sealing-key", self.base);
        self.call(self.http.get(&url), url).await
    }

    /// A settled task's published output.
    pub async fn output(&self, hash: B256) -> Result<OutputView, RelayError> {
        let url = format!("{}/v1/tasks/{hash}/output", self.base);
        self.call(self.http.get(&url), url).await
    }
}
