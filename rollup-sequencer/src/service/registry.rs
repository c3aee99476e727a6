//! Following the on-chain model registry. Governance moves the root (a model registered or
//! deregistered); the market then accepts the old root only through its grace period. The
//! pipeline compares the chain's root with its own every `registry_poll_secs`; when they differ
//! it re-reads the registry file (which the operator updates with `tgrid-sequencer registry add`,
//! before or after the vote) and, once the file lists the chain's root, moves new batches to it.
//! Until then it keeps proving under the old root, says why on `/v1/status` and in
//! `tgrid_sequencer_registry_stale`, and the market settles those batches while the old root
//! is in its grace period (a batch whose root expired is re-proven, see the pipeline).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tgrid_aggregation::RegistryFile;
use tracing::{info, warn};

use crate::service::{ServiceError, Shared};
use crate::Aggregator;

/// When the pipeline next compares roots, and what it last said about a stale file.
#[derive(Debug)]
pub(crate) struct RegistryFollower {
    every: Duration,
    next_check: Instant,
    /// The stale state last logged, so a file that stays behind is logged once.
    logged: Option<String>,
}

fn hex0x(bytes: &[u8; 32]) -> String {
    format!("0x{}", hex::encode(bytes))
}

impl RegistryFollower {
    pub(crate) fn new(every: Duration) -> Self {
        Self { every, next_check: Instant::now(), logged: None }
    }

    /// Makes the next [`poll`](Self::poll) compare roots whatever the interval (a batch was
    /// just refused for its root).
    pub(crate) fn check_now(&mut self) {
        self.next_check = Instant::now();
    }

    /// The aggregator of the chain's new root, when the chain moved to a root the registry file
    /// lists; `None` when nothing changed, it is not time to look, or the file is behind (then
    /// recorded in the health and the metric). Blocking: loads the file and its model files.
    pub(crate) fn poll(
        &mut self,
        shared: &Shared,
        rt: &tokio::runtime::Handle,
        current: &Aggregator,
    ) -> Result<Option<Aggregator>, ServiceError> {
        if Instant::now() < self.next_check {
            return Ok(None);
        }
        self.next_check = Instant::now() + self.every;
        let chain_root = rt.block_on(shared.chain.registry_root())?;
        let proving_root = current.registry().root();
        if chain_root == proving_root {
            self.stale(shared, None);
            return Ok(None);
        }
        let path = &shared.settings.registry;
        let file = match RegistryFile::load(path) {
            Ok(file) => file,
            Err(e) => {
                let why = format!(
                    "the chain's registry root is {}, new batches use {} and the registry file {} cannot be read: {e}",
                    hex0x(&chain_root),
                    hex0x(&proving_root),
                    path.display()
                );
                self.stale(shared, Some(why));
                return Ok(None);
            }
        };
        let file_root = file.registry().map(|r| r.root()).map_err(|e| ServiceError::Config(e.to_string()))?;
        if file_root != chain_root {
            let why = format!(
                "the chain's registry root is {} but the registry file {} lists {}: new batches use {} (settling \
                 only during its grace period); add the registered models with `tgrid-sequencer registry add`",
                hex0x(&chain_root),
                path.display(),
                hex0x(&file_root),
                hex0x(&proving_root)
            );
            self.stale(shared, Some(why));
            return Ok(None);
        }
        let next = current.for_registry_file(file)?;
        info!(
            from = %hex0x(&proving_root),
            to = %hex0x(&chain_root),
            models = next.registry().entries().len(),
            "the on-chain registry root changed: new batches are proven under it"
        );
        shared.metrics.registry_reloads.inc();
        self.stale(shared, None);
        Ok(Some(next))
    }

    fn stale(&mut self, shared: &Shared, why: Option<String>) {
        if why != self.logged {
            if let Some(why) = &why {
                warn!("{why}");
            }
            self.logged = why.clone();
        }
        shared.metrics.registry_stale.set(i64::from(why.is_some()));
        shared.health.set_registry_stale(why);
    }
}

/// Where the registry of before the last move is kept across restarts.
fn previous_path(data_dir: &Path) -> PathBuf {
    data_dir.join("previous-registry.json")
}

/// Keeps `replaced` (the registry of before a move) in the data directory, its model paths made
/// absolute: the operator's registry file now lists the new root.
pub(crate) fn save_previous(data_dir: &Path, replaced: &Aggregator) -> Result<(), ServiceError> {
    let mut file = replaced.registry_file().clone();
    for entry in &mut file.models {
        let path = file.base_dir.join(&entry.model_file);
        entry.model_file = std::path::absolute(&path).unwrap_or(path).display().to_string();
    }
    file.save(&previous_path(data_dir)).map_err(|e| ServiceError::Io(format!("keeping the previous registry: {e}")))
}

/// Forgets the kept previous registry.
pub(crate) fn forget_previous(data_dir: &Path) {
    let path = previous_path(data_dir);
    if let Err(e) = std::fs::remove_file(&path) {
        if e.kind() != std::io::ErrorKind::NotFound {
            warn!(path = %path.display(), error = %e, "cannot remove the previous registry");
        }
    }
}

/// The registry of before the last move, kept by [`save_previous`], if the chain still accepts
/// its root (otherwise it is forgotten).
pub(crate) async fn load_previous(
    data_dir: &Path,
    current: &Aggregator,
    chain: &crate::service::chain::Chain,
) -> Result<Option<Aggregator>, ServiceError> {
    let path = previous_path(data_dir);
    if !path.exists() {
        return Ok(None);
    }
    let file = RegistryFile::load(&path).map_err(|e| ServiceError::Config(format!("{}: {e}", path.display())))?;
    let root = file.registry().map_err(|e| ServiceError::Config(e.to_string()))?.root();
    if root == current.registry().root() || !chain.root_accepted(&root).await? {
        forget_previous(data_dir);
        return Ok(None);
    }
    info!(root = %hex0x(&root), "the previous registry is kept: its root is in its grace period");
    Ok(Some(current.for_registry_file(file).map_err(|e| ServiceError::Config(e.to_string()))?))
}
