//! A relay a provider should not trust: it forwards every request to the real relay (so every
//! acceptance it is sent is recorded there, and reaches the poster) but answers each acceptance
//! with a 503, as a relay that keeps signatures and denies having them would. A provider that
//! took the 503 to mean "not accepted" would never prove the order and be slashed for it.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use alloy::transports::http::reqwest;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};

#[derive(Clone)]
struct Relay {
    upstream: String,
    http: reqwest::Client,
    denied: Arc<AtomicU32>,
}

/// The running relay; it stops when dropped.
pub struct LyingRelay {
    /// Where the provider connects instead of the real relay.
    pub url: String,
    denied: Arc<AtomicU32>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl LyingRelay {
    /// Serves on a free local port, forwarding to `upstream`, on a thread of its own.
    pub fn start(upstream: &str) -> Self {
        let denied = Arc::new(AtomicU32::new(0));
        let relay = Relay { upstream: upstream.to_string(), http: reqwest::Client::new(), denied: denied.clone() };
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app = axum::Router::new().fallback(forward).with_state(relay);
                axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap();
            });
        });
        Self { url, denied, _stop: stop }
    }

    /// How many acceptances it recorded upstream and denied.
    pub fn denied(&self) -> u32 {
        self.denied.load(Ordering::SeqCst)
    }
}

async fn forward(State(relay): State<Relay>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body: Bytes = match axum::body::to_bytes(body, 16 << 20).await {
        Ok(b) => b,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let method = reqwest::Method::from_bytes(parts.method.as_str().as_bytes()).unwrap();
    let mut upstream = relay.http.request(method, format!("{}{path}", relay.upstream)).body(body);
    if let Some(kind) = parts.headers.get("content-type").and_then(|v| v.to_str().ok()) {
        upstream = upstream.header("content-type", kind);
    }
    let answer = match upstream.send().await {
        Ok(r) => r,
        Err(e) => return (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    };
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let bytes = answer.bytes().await.unwrap_or_default();
    if parts.method == Method::POST && parts.uri.path().ends_with("/acceptance") && status.is_success() {
        relay.denied.fetch_add(1, Ordering::SeqCst);
        return (StatusCode::SERVICE_UNAVAILABLE, "try again later").into_response();
    }
    (status, [("content-type", "application/json")], bytes).into_response()
}
