//! A JSON-RPC proxy between a service and anvil that fails chosen methods a chosen number of
//! times (HTTP 503, as an overloaded node or its load balancer answers): the services must ride
//! out node faults without dropping or double-settling anything.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use alloy::transports::http::reqwest;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

#[derive(Default)]
struct Faults {
    /// Failures still to inject, by JSON-RPC method.
    pending: HashMap<String, u32>,
    /// Failures injected so far, by method.
    injected: HashMap<String, u32>,
    /// `eth_call`s forwarded, by function selector.
    calls: HashMap<[u8; 4], u32>,
    /// Requests forwarded, by JSON-RPC method.
    methods: HashMap<String, u32>,
}

/// The function selector of an `eth_call`'s calldata (`input`, or `data` from older clients).
fn selector(call: &Value) -> Option<[u8; 4]> {
    let tx = &call["params"][0];
    let data = tx["input"].as_str().or_else(|| tx["data"].as_str())?;
    Some(u32::from_str_radix(data.strip_prefix("0x")?.get(..8)?, 16).ok()?.to_be_bytes())
}

#[derive(Clone)]
struct Proxy {
    upstream: String,
    http: reqwest::Client,
    faults: Arc<Mutex<Faults>>,
}

/// The running proxy; it stops when dropped.
pub struct FaultProxy {
    /// Where the services connect instead of the node.
    pub url: String,
    faults: Arc<Mutex<Faults>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl FaultProxy {
    /// Serves on a free local port, forwarding to `upstream`, on a thread of its own (so a test
    /// blocked on a child process never stalls the services' RPC).
    pub fn start(upstream: &str) -> Self {
        let faults = Arc::new(Mutex::new(Faults::default()));
        let proxy = Proxy { upstream: upstream.to_string(), http: reqwest::Client::new(), faults: faults.clone() };
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app = axum::Router::new().fallback(forward).with_state(proxy);
                axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap();
            });
        });
        Self { url, faults, _stop: stop }
    }

    /// Fails the next `times` requests that call `method`.
    pub fn fail(&self, method: &str, times: u32) {
        *self.faults.lock().unwrap().pending.entry(method.to_string()).or_default() += times;
    }

    /// How many `eth_call`s of the function `selector` reached the node so far.
    #[allow(dead_code)] // not every test binary that includes the proxy counts calls
    pub fn calls_to(&self, selector: [u8; 4]) -> u32 {
        self.faults.lock().unwrap().calls.get(&selector).copied().unwrap_or(0)
    }

    /// How many requests calling `method` were forwarded so far.
    #[allow(dead_code)] // not every test binary that includes the proxy counts calls
    pub fn calls_of(&self, method: &str) -> u32 {
        self.faults.lock().unwrap().methods.get(method).copied().unwrap_or(0)
    }

    /// How many requests calling `method` were failed so far.
    pub fn injected(&self, method: &str) -> u32 {
        self.faults.lock().unwrap().injected.get(method).copied().unwrap_or(0)
    }
}

async fn forward(State(proxy): State<Proxy>, body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let calls = match &request {
        Value::Array(calls) => calls.clone(),
        call => vec![call.clone()],
    };
    {
        let mut faults = proxy.faults.lock().unwrap();
        for call in &calls {
            let Some(method) = call["method"].as_str() else { continue };
            if let Some(left) = faults.pending.get_mut(method).filter(|n| **n > 0) {
                *left -= 1;
                *faults.injected.entry(method.to_string()).or_default() += 1;
                return (StatusCode::SERVICE_UNAVAILABLE, format!("injected fault on {method}")).into_response();
            }
        }
        for method in calls.iter().filter_map(|c| c["method"].as_str()) {
            *faults.methods.entry(method.to_string()).or_default() += 1;
        }
        for call in calls.iter().filter(|c| c["method"] == "eth_call") {
            if let Some(selector) = selector(call) {
                *faults.calls.entry(selector).or_default() += 1;
            }
        }
    }
    match proxy.http.post(&proxy.upstream).header("content-type", "application/json").body(body).send().await {
        Ok(r) => {
            let status = StatusCode::from_u16(r.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
            let bytes = r.bytes().await.unwrap_or_default();
            (status, [("content-type", "application/json")], bytes).into_response()
        }
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}
