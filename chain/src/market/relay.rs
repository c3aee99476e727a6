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

/// The most a relay's answer may hold unless [`RelayClient::with_answer_limit`] says otherwise.
/// Outputs and order pages are far smaller; a hostile relay cannot make a client buffer more.
pub const MAX_ANSWER_BYTES: usize = 64 << 20;

/// The response header of an order listing that says where its next page starts (`from=`).
pub const NEXT_FROM: &str = "next-from";

/// The longest `Next-From` cursor taken from a relay (`<deadline>:<0x + 64 hex>` is ~90).
const MAX_CURSOR_LEN: usize = 256;

/// One page of a relay's order listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderListingPage {
    /// The orders, nearest deadline first.
    pub orders: Vec<OrderView>,
    /// Where the next page starts (the relay's `Next-From` header), when there is more.
    pub next_from: Option<String>,
}

/// A client of one relay / sequencer base URL.
#[derive(Clone, Debug)]
pub struct RelayClient {
    base: String,
    http: reqwest::Client,
    max_answer_bytes: usize,
}

impl RelayClient {
    /// A client of `base_url` (e.g. `http://127.0.0.1:8080`) whose requests time out after `timeout`.
    pub fn new(base_url: &str, timeout: Duration) -> Result<Self, RelayError> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| RelayError::Unreachable { url: base_url.to_string(), reason: e.to_string() })?;
        Ok(Self { base: base_url.trim_end_matches('/').to_string(), http, max_answer_bytes: MAX_ANSWER_BYTES })
    }

    /// The same client, refusing answers longer than `bytes` (default [`MAX_ANSWER_BYTES`]).
    pub fn with_answer_limit(mut self, bytes: usize) -> Self {
        self.max_answer_bytes = bytes;
        self
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
        self.exchange(request, url).await.map(|(answer, _)| answer)
    }

    /// Sends `request`; a success's body decoded, with the answer's headers.
    async fn exchange<T: serde::de::DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
        url: String,
    ) -> Result<(T, reqwest::header::HeaderMap), RelayError> {
        let unreachable = |reason: String| RelayError::Unreachable { url: url.clone(), reason };
        let mut response = request.send().await.map_err(|e| unreachable(e.to_string()))?;
        let status = response.status();
        let limit = self.max_answer_bytes;
        let too_long = || unreachable(format!("the answer is longer than {limit} bytes"));
        // The announced length is only a hint: the body is counted as it arrives.
        if response.content_length().is_some_and(|n| n > limit as u64) {
            return Err(too_long());
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| unreachable(e.to_string()))? {
            if bytes.len() + chunk.len() > limit {
                return Err(too_long());
            }
            bytes.extend_from_slice(&chunk);
        }
        if status.is_success() {
            let answer = serde_json::from_slice(&bytes).map_err(|e| unreachable(format!("unexpected answer: {e}")))?;
            return Ok((answer, response.headers().clone()));
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

    /// Orders of `model` in `state`, nearest deadline first, at most `limit`: the first page.
    pub async fn orders(&self, model: B256, state: RelayState, limit: usize) -> Result<Vec<OrderView>, RelayError> {
        Ok(self.orders_page(model, state, limit, None).await?.orders)
    }

    /// One page of the orders of `model` in `state`, at most `limit`, starting where a previous
    /// page's [`OrderListingPage::next_from`] said (`None`: the first page).
    pub async fn orders_page(
        &self,
        model: B256,
        state: RelayState,
        limit: usize,
        from: Option<&str>,
    ) -> Result<OrderListingPage, RelayError> {
        let state = serde_json::to_value(state).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let url = format!("{}/v1/orders?model={model}&state={state}&limit={limit}", self.base);
        let mut request_url = reqwest::Url::parse(&url)
            .map_err(|e| RelayError::Unreachable { url: url.clone(), reason: e.to_string() })?;
        if let Some(from) = from {
            request_url.query_pairs_mut().append_pair("from", from);
        }
        let (orders, headers) = self.exchange(self.http.get(request_url), url.clone()).await?;
        let next_from = match headers.get(NEXT_FROM) {
            None => None,
            Some(value) => match value.to_str() {
                Ok(cursor) if !cursor.is_empty() && cursor.len() <= MAX_CURSOR_LEN => Some(cursor.to_string()),
                _ => {
                    return Err(RelayError::Unreachable {
                        url,
                        reason: format!("unexpected answer: a Next-From header that is not a cursor ({value:?})"),
                    })
                }
            },
        };
        Ok(OrderListingPage { orders, next_from })
    }

    /// Orders of `model` in `state` over at most `max_pages` pages of `limit`, each page starting
    /// at the previous one's cursor; stops early when the relay has no more or repeats a cursor.
    /// A failure on the first page is the error; on a later one, the orders read so far are
    /// kept (logged): a relay that fails its third page still shows the first two.
    pub async fn orders_across_pages(
        &self,
        model: B256,
        state: RelayState,
        limit: usize,
        max_pages: usize,
    ) -> Result<Vec<OrderView>, RelayError> {
        let mut orders = Vec::new();
        let mut from: Option<String> = None;
        for read in 0..max_pages {
            let page = match self.orders_page(model, state, limit, from.as_deref()).await {
                Ok(page) => page,
                Err(error) if read > 0 => {
                    tracing::warn!(%error, pages = read, orders = orders.len(), "stopped reading the relay's order pages");
                    break;
                }
                Err(error) => return Err(error),
            };
            orders.extend(page.orders);
            match page.next_from {
                Some(next) if from.as_ref() != Some(&next) => from = Some(next),
                _ => break,
            }
        }
        Ok(orders)
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

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use alloy::primitives::Address;

    use super::*;
    use crate::market::order::Order;

    /// A relay on loopback answering each request with `answer(request line)`: extra header
    /// lines and a body. `length: false` leaves out `content-length` (the body ends at close).
    fn relay(length: bool, answer: impl Fn(&str) -> (String, Vec<u8>) + Send + 'static) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for mut stream in listener.incoming().map_while(Result::ok) {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let line = String::from_utf8_lossy(&request).lines().next().unwrap_or_default().to_string();
                let (headers, body) = answer(&line);
                let length = if length { format!("content-length: {}\r\n", body.len()) } else { String::new() };
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{length}connection: close\r\n{headers}\r\n"
                );
                let _ = stream.write_all(&body);
            }
        });
        url
    }

    fn view(nonce: u32) -> OrderView {
        let key = PrivateKeySigner::random();
        let order = Order {
            poster: key.address(),
            provider: Address::ZERO,
            model_id: B256::repeat_byte(2),
            input_commitment: B256::repeat_byte(3),
            payment: 1,
            collateral: 1,
            deadline: 1_800_000_000,
            nonce: Order::nonce_of(1, nonce),
            slash_bps: 5_000,
            poster_share_bps: 5_000,
        };
        let domain = MarketDomain { chain_id: 31337, market: Address::repeat_byte(0x11) };
        let signed = SignedOrder::sign(order, &key, &domain).unwrap();
        OrderView { hash: signed.verify(&domain).unwrap(), signed, acceptance: None, state: RelayState::Open }
    }

    fn client(url: &str) -> RelayClient {
        RelayClient::new(url, Duration::from_secs(10)).unwrap()
    }

    #[tokio::test]
    async fn order_pages_are_followed_by_their_cursor_up_to_a_bound() {
        let pages = [vec![view(0), view(1)], vec![view(2)], vec![view(3)]];
        let served = pages.clone();
        // Three pages chained by cursors, the cursor (with a colon) sent back encoded.
        let url = relay(true, move |line| {
            let (page, next) = if line.contains("from=1000%3A0xaa") {
                (1, Some("2000:0xbb"))
            } else if line.contains("from=2000%3A0xbb") {
                (2, None)
            } else {
                assert!(!line.contains("from="), "{line}");
                (0, Some("1000:0xaa"))
            };
            let header = next.map(|n| format!("next-from: {n}\r\n")).unwrap_or_default();
            (header, serde_json::to_vec(&served[page]).unwrap())
        });
        let listing = client(&url);
        let first = listing.orders_page(B256::ZERO, RelayState::Open, 2, None).await.unwrap();
        assert_eq!((first.orders, first.next_from.as_deref()), (pages[0].clone(), Some("1000:0xaa")));
        let all = listing.orders_across_pages(B256::ZERO, RelayState::Open, 2, 8).await.unwrap();
        assert_eq!(all, pages.concat());
        let bounded = listing.orders_across_pages(B256::ZERO, RelayState::Open, 2, 2).await.unwrap();
        assert_eq!(bounded, [pages[0].clone(), pages[1].clone()].concat());

        // A relay that answers every page with the same cursor is read twice, not eight times.
        let requests = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = requests.clone();
        let url = relay(true, move |_| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            ("next-from: 5:0x01\r\n".into(), b"[]".to_vec())
        });
        assert!(client(&url).orders_across_pages(B256::ZERO, RelayState::Open, 2, 8).await.unwrap().is_empty());
        assert_eq!(requests.load(std::sync::atomic::Ordering::SeqCst), 2);

        // A page that fails after the first keeps the pages before it; a first page that fails
        // is the error.
        let first_page = pages[0].clone();
        let url = relay(true, move |line| {
            if line.contains("from=") {
                (String::new(), b"<html>502 Bad Gateway</html>".to_vec())
            } else {
                ("next-from: 1000:0xaa\r\n".into(), serde_json::to_vec(&first_page).unwrap())
            }
        });
        let kept = client(&url).orders_across_pages(B256::ZERO, RelayState::Open, 2, 8).await.unwrap();
        assert_eq!(kept, pages[0]);
        let url = relay(true, |_| (String::new(), b"<html>502 Bad Gateway</html>".to_vec()));
        assert!(client(&url).orders_across_pages(B256::ZERO, RelayState::Open, 2, 8).await.is_err());

        // A cursor that is not one is a clear error.
        let long = "9".repeat(MAX_CURSOR_LEN + 1);
        let url = relay(true, move |_| (format!("next-from: {long}\r\n"), b"[]".to_vec()));
        let err = client(&url).orders_page(B256::ZERO, RelayState::Open, 2, None).await.unwrap_err();
        assert!(err.to_string().contains("Next-From"), "{err}");
    }

    #[tokio::test]
    async fn answers_past_the_limit_are_refused_whatever_their_length_says() {
        let body = serde_json::to_vec(&vec![view(0); 8]).unwrap();
        assert!(body.len() > 2_048);
        for announced in [true, false] {
            let served = body.clone();
            let url = relay(announced, move |_| (String::new(), served.clone()));
            let err = client(&url).with_answer_limit(2_048).orders(B256::ZERO, RelayState::Open, 8).await.unwrap_err();
            assert!(
                matches!(err, RelayError::Unreachable { .. }) && err.to_string().contains("longer than 2048"),
                "{err}"
            );
            // Within the limit, the same answer is read.
            let served = body.clone();
            let url = relay(announced, move |_| (String::new(), served.clone()));
            assert_eq!(client(&url).orders(B256::ZERO, RelayState::Open, 8).await.unwrap().len(), 8);
        }
    }
}
