//! The HTTP server's connections, bounded. `axum::serve` accepts every connection and waits for
//! its request headers forever, so one client that opens connections and sends a header byte
//! now and then (slowloris) holds file descriptors and tasks without limit. Here:
//! - each client address (an IPv6 client per /64) holds at most `max_connections_per_client`
//!   connections, and the server at most `max_connections`; a connection past either is closed
//!   at once, before anything is read from it;
//! - a request's headers must arrive within `header_timeout_secs` (hyper's header read timeout,
//!   also the longest a kept-alive connection waits idle for its next request); the body and the
//!   handler are bounded by `request_timeout_secs` (the router's timeout layer).

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::service::edge::client_key;

/// How long open connections may finish their requests once the server stops.
const DRAIN: Duration = Duration::from_secs(10);

/// The bounds of [`serve`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConnectionLimits {
    pub(crate) max_connections: usize,
    pub(crate) max_connections_per_client: usize,
    pub(crate) header_timeout: Duration,
}

/// Open connections per client address.
#[derive(Debug, Default)]
struct PerClient(Mutex<HashMap<IpAddr, usize>>);

impl PerClient {
    fn admit(self: &Arc<Self>, client: IpAddr, cap: usize) -> Option<ClientSlot> {
        let mut open = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let count = open.entry(client).or_default();
        if *count >= cap {
            return None;
        }
        *count += 1;
        Some(ClientSlot { table: self.clone(), client })
    }
}

/// One open connection of a client; released when the connection ends.
struct ClientSlot {
    table: Arc<PerClient>,
    client: IpAddr,
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut open = self.table.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(count) = open.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.client);
            }
        }
    }
}

/// Serves `app` on `listener` within `limits` until `stop` resolves, then lets open connections
/// finish for a few seconds. Each request carries its peer's address as [`ConnectInfo`].
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    refused: prometheus::IntCounter,
    stop: impl Future<Output = ()>,
) {
    let total = Arc::new(Semaphore::new(limits.max_connections));
    let per_client = Arc::new(PerClient::default());
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: the listener itself is fine.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let slots: Option<(OwnedSemaphorePermit, ClientSlot)> =
            total.clone().try_acquire_owned().ok().and_then(|permit| {
                Some((permit, per_client.admit(client_key(peer.ip()), limits.max_connections_per_client)?))
            });
        let Some(slots) = slots else {
            drop(stream);
            refused.inc();
            tracing::debug!(%peer, "connection refused: over the connection limits");
            continue;
        };
        let app = app.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            let mut app = app.clone();
            async move { tower::Service::call(&mut app, request.map(axum::body::Body::new)).await }
        });
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            let _slots = slots;
            if let Err(e) = connection.await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN, graceful.shutdown()).await.is_err() {
        tracing::warn!("open connections did not finish within {DRAIN:?} of the stop");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_holds_at_most_its_share_and_gets_it_back_as_connections_close() {
        let table = Arc::new(PerClient::default());
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        let held: Vec<_> = (0..3).map(|_| table.admit(a, 3).expect("within the cap")).collect();
        assert!(table.admit(a, 3).is_none());
        assert!(table.admit(b, 3).is_some(), "another client is not held up");
        drop(held);
        assert!(table.admit(a, 3).is_some());
        assert!(table.0.lock().unwrap().is_empty(), "closed connections leave no entry");
    }
}
