//! What the relay's unauthenticated requests may cost the sequencer's node. Anyone can sign an
//! order, an acceptance or a sealing-key announcement with a fresh key, and each is checked
//! against the chain before it is refused; without a bound, a flood of them turns into a flood
//! of reads on the node the pipeline settles through. Two bounds:
//! - a rate limit per client address (an IPv6 client per /64, which one host typically holds),
//!   applied before any chain read;
//! - chain reads every request needs alike (the chain's clock, the market's parameters) shared
//!   between requests for a moment, so a request costs at most its own reads (a bond, a book).
//!
//! Behind a reverse proxy every client has the proxy's address: limit at the proxy then.

use std::future::Future;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use tgrid_chain::bindings::ITaskMarket::Parameters;

use crate::service::chain::Chain;
use crate::service::ServiceError;

/// How long the chain's clock is reused: a block interval or less, so a deadline check is at most
/// this much late (the contract makes the final check anyway).
const CLOCK_TTL: Duration = Duration::from_secs(1);
/// How long the market's parameters are reused: governance changes them through a timelock,
/// days ahead.
const PARAMETERS_TTL: Duration = Duration::from_secs(10);
/// How long the sequencer account's balance shown by `/v1/status` is reused: anyone may ask.
const BALANCE_TTL: Duration = Duration::from_secs(5);

/// The rate-limit key of a client: its IPv4 address, or the /64 of an IPv6 address (one host
/// usually holds a whole /64, so rotating within it must not buy new quota).
pub(crate) fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut segments = v6.segments();
                segments[4..].fill(0);
                IpAddr::V6(segments.into())
            }
        },
    }
}

/// A value read from the chain and reused for `ttl`. Concurrent callers wait for one read
/// rather than each sending their own.
#[derive(Debug)]
struct CachedRead<T> {
    ttl: Duration,
    slot: tokio::sync::Mutex<Option<(Instant, T)>>,
}

impl<T: Clone> CachedRead<T> {
    fn new(ttl: Duration) -> Self {
        Self { ttl, slot: tokio::sync::Mutex::new(None) }
    }

    async fn get<F: Future<Output = Result<T, ServiceError>>>(
        &self,
        read: impl FnOnce() -> F,
    ) -> Result<T, ServiceError> {
        let mut slot = self.slot.lock().await;
        if let Some((at, value)) = slot.as_ref() {
            if at.elapsed() < self.ttl {
                return Ok(value.clone());
            }
        }
        let value = read().await?;
        *slot = Some((Instant::now(), value.clone()));
        Ok(value)
    }
}

/// Chain reads the relay's (and other unauthenticated) requests share.
#[derive(Debug)]
pub(crate) struct RelayReads {
    clock: CachedRead<u64>,
    parameters: CachedRead<Parameters>,
    balance: CachedRead<alloy::primitives::U256>,
}

impl Default for RelayReads {
    fn default() -> Self {
        Self {
            clock: CachedRead::new(CLOCK_TTL),
            parameters: CachedRead::new(PARAMETERS_TTL),
            balance: CachedRead::new(BALANCE_TTL),
        }
    }
}

impl RelayReads {
    /// The chain's clock (latest block's timestamp), at most [`CLOCK_TTL`] old.
    pub(crate) async fn now(&self, chain: &Chain) -> Result<u64, ServiceError> {
        self.clock.get(|| chain.now()).await
    }

    /// The market's parameters, at most [`PARAMETERS_TTL`] old.
    pub(crate) async fn parameters(&self, chain: &Chain) -> Result<Parameters, ServiceError> {
        self.parameters.get(|| chain.parameters()).await
    }

    /// The sequencer account's balance, at most [`BALANCE_TTL`] old.
    pub(crate) async fn balance(&self, chain: &Chain) -> Result<alloy::primitives::U256, ServiceError> {
        self.balance.get(|| chain.balance()).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    use super::*;

    #[test]
    fn ipv6_clients_share_their_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(client_key(a), client_key(b));
        assert_ne!(client_key(a), client_key(other));
        let v4: IpAddr = "192.0.2.7".parse().unwrap();
        assert_eq!(client_key(v4), v4);
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(client_key(mapped), v4, "an IPv4 client seen through a dual-stack socket");
    }

    #[tokio::test]
    async fn concurrent_callers_share_one_read_until_it_expires() {
        let cache = Arc::new(CachedRead::<u32>::new(Duration::from_millis(200)));
        let reads = Arc::new(AtomicU32::new(0));
        let read = |reads: Arc<AtomicU32>| async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok(reads.fetch_add(1, Ordering::SeqCst))
        };
        let callers: Vec<_> = (0..16)
            .map(|_| {
                let (cache, reads) = (cache.clone(), reads.clone());
                tokio::spawn(async move { cache.get(|| read(reads)).await.unwrap() })
            })
            .collect();
        for caller in callers {
            assert_eq!(caller.await.unwrap(), 0, "every caller got the one read");
        }
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert_eq!(cache.get(|| read(reads.clone())).await.unwrap(), 1, "read again once expired");
    }

    #[tokio::test]
    async fn a_failed_read_is_not_kept() {
        let cache = CachedRead::<u32>::new(Duration::from_secs(60));
        let failed = cache.get(|| async { Err(ServiceError::Chain("node down".into())) }).await;
        assert!(failed.is_err());
        assert_eq!(cache.get(|| async { Ok(7) }).await.unwrap(), 7);
    }
}
