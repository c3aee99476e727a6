//! `tgrid-sequencer run`: the always-on service. It relays signed orders (posters list them,
//! providers find them and record their acceptance). Providers submit results over HTTP; each is
//! checked (signatures, proof, output commitment, the order's state on-chain) and flushed to disk
//! before it is acknowledged. A pipeline thread batches acknowledged results, proves leaves as tasks join
//! the open batch, closes it by size, age or the nearest deadline, aggregates and wraps it,
//! and settles it on the TaskMarket with a locally signed transaction whose hash is stored before it is
//! sent. Every task and batch record moves through a state machine stored in sled, so a restart
//! at any point resumes where it stopped; the chain decides what settled.

pub mod api;
pub mod chain;
pub mod config;
mod connections;
pub(crate) mod edge;
pub mod health;
pub mod metrics;
pub mod pipeline;
mod registry;
pub mod store;

use std::collections::{HashMap, HashSet};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tgrid_aggregation::{RegistryFile, TaskLeaf};

pub use config::{Settings, WrapFri};

use crate::Aggregator;
use chain::Chain;
use health::Health;
use metrics::Metrics;
use store::{Store, TaskRecord};

/// What can stop the service or one of its steps.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceError {
    /// A setting is wrong.
    #[error("settings: {0}")]
    Config(String),
    /// The database failed or holds a corrupt record.
    #[error("store: {0}")]
    Store(String),
    /// The node failed or answered something unexpected.
    #[error("chain: {0}")]
    Chain(String),
    /// The chain refuses the action (a revert, a task in the wrong state).
    #[error("{0}")]
    Rejected(String),
    /// The sequencer's account cannot pay for a transaction.
    #[error("low funds: {0}")]
    Funds(String),
    /// Aggregation failed.
    #[error(transparent)]
    Aggregation(#[from] crate::Error),
    /// The wrap failed.
    #[error(transparent)]
    Wrap(#[from] tgrid_settlement_proof::Error),
    /// Aggregation on the job queue's workers failed.
    #[error(transparent)]
    Jobs(#[from] crate::jobs::JobError),
    /// An I/O error outside the store.
    #[error("{0}")]
    Io(String),
}

/// Refused deliveries remembered (about 1 KB each with the reason).
const REFUSED_DELIVERIES_KEPT: usize = 4096;

/// State shared by the API handlers and the pipeline.
#[derive(Debug)]
pub struct Shared {
    /// The settings.
    pub settings: Settings,
    /// Durable state.
    pub store: Store,
    /// Chain access.
    pub chain: Chain,
    /// Native proof checks and leaf/merge proving under the registry new batches use; replaced
    /// when governance moves the on-chain root (see `registry`). Read it with [`Shared::aggregator`].
    aggregator: RwLock<Arc<Aggregator>>,
    /// The registry batches were proven under before the last move, kept for results of models
    /// governance deregistered: the market settles them under that root through its grace
    /// period. Kept across restarts (`previous-registry.json` in the data directory) and
    /// forgotten once the chain no longer accepts its root.
    previous: RwLock<Option<Arc<Aggregator>>>,
    /// Metrics.
    pub metrics: Metrics,
    /// Per-provider submission rate limit.
    pub limiter: DefaultKeyedRateLimiter<[u8; 20]>,
    /// Per-client rate limit of result submissions ([`edge`]).
    pub(crate) submission_client_limiter: DefaultKeyedRateLimiter<std::net::IpAddr>,
    /// Per-client rate limit of the relay's writes ([`edge`]).
    pub(crate) relay_limiter: DefaultKeyedRateLimiter<std::net::IpAddr>,
    /// Chain reads the relay's requests share ([`edge`]).
    pub(crate) relay_reads: edge::RelayReads,
    /// Tasks whose submission is being checked (refuses a concurrent duplicate).
    pub in_flight: Mutex<HashSet<[u8; 32]>>,
    /// Recently refused deliveries, answered again without a proof check or the rate limit.
    pub(crate) refused: Mutex<api::refused::RefusedDeliveries>,
    /// Bounds concurrent proof checks to the cores.
    pub verify_slots: tokio::sync::Semaphore,
    /// One lock per provider whose acceptance is being checked: its bond is checked against its
    /// open acceptances and the new one recorded as one step, so two racing acceptances cannot
    /// both fit a bond that covers one.
    acceptance_locks: Mutex<HashMap<alloy::primitives::Address, Weak<tokio::sync::Mutex<()>>>>,
    /// The pipeline's trouble (retrying batches, low funds), for the status endpoint.
    pub health: Health,
}

impl Shared {
    /// The lock serializing `provider`'s acceptances (see `acceptance_locks`). Locks nobody holds
    /// are dropped once many accumulate, so throwaway keys cannot grow the map without bound.
    pub(crate) fn acceptance_lock(&self, provider: alloy::primitives::Address) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.acceptance_locks.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if locks.len() >= 1024 {
            locks.retain(|_, lock| lock.strong_count() > 0);
        }
        if let Some(lock) = locks.get(&provider).and_then(Weak::upgrade) {
            return lock;
        }
        let lock = Arc::new(tokio::sync::Mutex::new(()));
        locks.insert(provider, Arc::downgrade(&lock));
        lock
    }

    /// The aggregator of the registry new batches are proven under.
    pub fn aggregator(&self) -> Arc<Aggregator> {
        self.aggregator.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// The aggregator a result of `model_id` is checked and batched under: the current one, or
    /// the previous one if only that lists the model (deregistered by the last move).
    pub fn aggregator_for(&self, model_id: &[u8; 32]) -> Arc<Aggregator> {
        let current = self.aggregator();
        if current.registry().entry(model_id).is_some() {
            return current;
        }
        match self.previous_aggregator() {
            Some(previous) if previous.registry().entry(model_id).is_some() => previous,
            _ => current,
        }
    }

    /// The registry of before the last move, while it is kept.
    pub(crate) fn previous_aggregator(&self) -> Option<Arc<Aggregator>> {
        self.previous.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// Forgets the previous registry (its root is no longer accepted).
    pub(crate) fn forget_previous_aggregator(&self) {
        *self.previous.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = None;
        registry::forget_previous(&self.settings.data_dir);
    }

    /// Moves new submissions and batches to `next` (a new on-chain registry root); the one it
    /// replaces is kept as the previous, in memory and in the data directory (a restart keeps
    /// it too).
    pub(crate) fn replace_aggregator(&self, next: Arc<Aggregator>) {
        let replaced =
            std::mem::replace(&mut *self.aggregator.write().unwrap_or_else(|poisoned| poisoned.into_inner()), next);
        if let Err(e) = registry::save_previous(&self.settings.data_dir, &replaced) {
            tracing::warn!(error = %e, "the previous registry will not outlive a restart");
        }
        *self.previous.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(replaced);
    }
}

/// Seconds since the epoch.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}

/// Decodes a stored 0x-hex field of exactly N bytes.
pub(crate) fn bytes<const N: usize>(s: &str) -> Result<[u8; N], ServiceError> {
    let v = s
        .strip_prefix("0x")
        .and_then(|h| hex::decode(h).ok())
        .ok_or_else(|| ServiceError::Store(format!("bad hex {s:?}")))?;
    v.try_into().map_err(|_| ServiceError::Store(format!("bad length {s:?}")))
}

/// The batch leaf of a stored task.
pub fn leaf_of(r: &TaskRecord) -> Result<TaskLeaf, ServiceError> {
    Ok(TaskLeaf {
        task_id: bytes(&r.task_id)?,
        model_id: bytes(&r.model_id)?,
        input_commitment: bytes(&r.input_commitment)?,
        output_commitment: bytes(&r.output_commitment)?,
        provider: bytes(&r.provider)?,
    })
}

/// Builds every registered model's verifier in the background, so no submission waits for
/// one (about 2 s per model) and a broken model file is reported at start, not at the first
/// result. The API serves meanwhile; a submission for a model still building waits for it.
pub(crate) async fn warm_verifiers(shared: Arc<Shared>) {
    let aggregator = shared.aggregator();
    let built = tokio::task::spawn_blocking(move || {
        let mut built = 0;
        for entry in aggregator.registry().entries() {
            match aggregator.leaf_circuit(&entry.model_id) {
                Ok(_) => built += 1,
                Err(e) => tracing::error!(model = %format!("0x{}", hex::encode(entry.model_id)), error = %e, "cannot build the model's verifier: its results will be refused"),
            }
        }
        built
    })
    .await;
    if let Ok(models) = built {
        tracing::info!(models, "registered models' verifiers built");
    }
}

/// Forgets idle providers' and clients' rate-limit state once a minute, so the limiters' memory
/// follows the active ones rather than every address ever seen.
async fn prune_rate_limiter(shared: Arc<Shared>, stop: Arc<AtomicBool>) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        shared.limiter.retain_recent();
        shared.limiter.shrink_to_fit();
        shared.submission_client_limiter.retain_recent();
        shared.submission_client_limiter.shrink_to_fit();
        shared.relay_limiter.retain_recent();
        shared.relay_limiter.shrink_to_fit();
    }
}

/// Forgets what is past its retention, once an hour ([`Store::prune`]).
async fn prune_store(shared: Arc<Shared>, stop: Arc<AtomicBool>) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(3_600));
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let before = unix_now().saturating_sub(shared.settings.retention_secs);
        let store = shared.store.clone();
        match tokio::task::spawn_blocking(move || store.prune(before)).await {
            Ok(Ok(pruned)) if pruned != store::Pruned::default() => {
                tracing::info!(
                    tasks = pruned.tasks,
                    batches = pruned.batches,
                    orders = pruned.orders,
                    "past retention, forgotten"
                );
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "pruning the store failed; retried in an hour"),
            Err(e) => tracing::warn!(error = %e, "pruning the store panicked"),
        }
    }
}

/// Starts the service and runs until `stop` is set (or ctrl-c / SIGTERM in the binary):
/// opens the store, connects to the chain, builds the aggregation and wrap circuits and loads
/// the key, then serves the API and runs the pipeline. `on_ready` receives the bound address.
pub async fn run(
    settings: Settings,
    stop: Arc<AtomicBool>,
    on_ready: impl FnOnce(std::net::SocketAddr),
) -> Result<(), ServiceError> {
    let deployment =
        tgrid_chain::Deployment::load(&settings.deployment).map_err(|e| ServiceError::Config(e.to_string()))?;
    // The deployment's chain id is the node's (Chain::connect checks it).
    settings.check_chain(deployment.chain_id)?;
    let chain = Chain::connect_as(&settings.rpc_url, deployment, settings.signer()?).await?;
    let registry_file = RegistryFile::load(&settings.registry)
        .map_err(|e| ServiceError::Config(format!("registry {}: {e}", settings.registry.display())))?;
    let store = Store::open(&settings.data_dir)?;
    let aggregator = Arc::new(
        tokio::task::spawn_blocking(move || Aggregator::new(registry_file))
            .await
            .map_err(|e| ServiceError::Io(e.to_string()))??,
    );
    let previous = match registry::load_previous(&settings.data_dir, &aggregator, &chain).await {
        Ok(previous) => previous.map(Arc::new),
        Err(e) => {
            tracing::warn!(error = %e, "the previous registry is not kept: results of models only it lists are refused");
            None
        }
    };
    let chain_root = chain.registry_root().await?;
    if chain_root != aggregator.registry().root() {
        tracing::warn!(
            chain = %format!("0x{}", hex::encode(chain_root)),
            file = %format!("0x{}", hex::encode(aggregator.registry().root())),
            "the registry file's root is not the on-chain root: batches will not settle until they agree"
        );
    }
    let per_sec = NonZeroU32::new(settings.submissions_per_provider_per_sec).expect("validated");
    let quota = Quota::per_second(per_sec).allow_burst(per_sec.saturating_mul(NonZeroU32::new(2).expect("2")));
    let per_client_quota = |per_sec: u32| {
        let per_sec = NonZeroU32::new(per_sec).expect("validated");
        Quota::per_second(per_sec).allow_burst(per_sec.saturating_mul(NonZeroU32::new(2).expect("2")))
    };
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
    let shared = Arc::new(Shared {
        settings: settings.clone(),
        store,
        chain,
        aggregator: RwLock::new(aggregator),
        previous: RwLock::new(previous),
        metrics: Metrics::new(),
        limiter: RateLimiter::keyed(quota),
        submission_client_limiter: RateLimiter::keyed(per_client_quota(settings.submissions_per_client_per_sec)),
        relay_limiter: RateLimiter::keyed(per_client_quota(settings.relay_requests_per_client_per_sec)),
        relay_reads: edge::RelayReads::default(),
        in_flight: Mutex::default(),
        refused: Mutex::new(api::refused::RefusedDeliveries::new(REFUSED_DELIVERIES_KEPT)),
        verify_slots: tokio::sync::Semaphore::new(cores),
        acceptance_locks: Mutex::default(),
        health: Health::default(),
    });
    shared.metrics.queue_depth.set(shared.store.queued_count() as i64);

    let pipeline = pipeline::Pipeline::start(shared.clone(), tokio::runtime::Handle::current(), stop.clone())?;
    tokio::spawn(warm_verifiers(shared.clone()));
    tokio::spawn(prune_rate_limiter(shared.clone(), stop.clone()));
    tokio::spawn(prune_store(shared.clone(), stop.clone()));

    let listener = tokio::net::TcpListener::bind(settings.listen)
        .await
        .map_err(|e| ServiceError::Config(format!("cannot listen on {}: {e}", settings.listen)))?;
    let addr = listener.local_addr().map_err(|e| ServiceError::Io(e.to_string()))?;
    tracing::info!(%addr, sequencer = %shared.chain.sender(), "sequencer API listening");
    on_ready(addr);
    let stop_wait = stop.clone();
    let limits = connections::ConnectionLimits {
        max_connections: settings.max_connections,
        max_connections_per_client: settings.max_connections_per_client,
        header_timeout: std::time::Duration::from_secs(settings.header_timeout_secs),
    };
    connections::serve(
        listener,
        api::router(shared.clone()),
        limits,
        shared.metrics.refused_connections.clone(),
        async move {
            while !stop_wait.load(Ordering::Relaxed) {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        },
    )
    .await;
    stop.store(true, Ordering::Relaxed);
    let joined = tokio::task::spawn_blocking(move || pipeline.join()).await;
    shared.store.flush().await?;
    joined.map_err(|e| ServiceError::Io(e.to_string()))?;
    Ok(())
}
