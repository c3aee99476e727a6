//! The process's cache: enabled by a binary at start, opened at the first build.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plonky2::field::extension::Extendable;
use plonky2::hash::hash_types::RichField;
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitData, CommonCircuitData};
use plonky2::plonk::config::GenericConfig;
use tracing::{debug, info, warn};

use crate::{CircuitCache, CircuitKey, ENV};

static ROOT: OnceLock<PathBuf> = OnceLock::new();
static OPENED: OnceLock<Option<CircuitCache>> = OnceLock::new();

/// Makes `root` the process's cache root for [`build`]; the cache is opened (the executable
/// hashed) at the first build, so commands that build no circuit pay nothing. The first call
/// wins.
pub fn enable(root: impl Into<PathBuf>) {
    let root = ROOT.get_or_init(|| root.into());
    debug!(root = %root.display(), "circuit cache enabled");
}

/// The process's cache, opened on first use; `None` if none was enabled or it cannot be opened
/// (then circuits are built as without a cache).
pub fn installed() -> Option<&'static CircuitCache> {
    let root = ROOT.get()?;
    OPENED
        .get_or_init(|| match CircuitCache::open(root) {
            Ok(cache) => {
                info!(dir = %cache.dir.display(), "circuit cache in use");
                Some(cache)
            }
            Err(e) => {
                warn!(error = %e, "circuit cache unusable: circuits are built at every start");
                None
            }
        })
        .as_ref()
}

/// The root a binary uses when nothing else is configured: `$TGRID_CIRCUIT_CACHE` (`off`
/// disables the cache), else `$XDG_CACHE_HOME/tgrid/circuits`, else
/// `$HOME/.cache/tgrid/circuits`; `None` if the cache is disabled or there is no home.
pub fn default_root() -> Option<PathBuf> {
    root_from(|name| std::env::var_os(name).filter(|v| !v.is_empty()))
}

pub(crate) fn root_from(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    if let Some(root) = var(ENV) {
        return (root != "off").then(|| PathBuf::from(root));
    }
    let base =
        var("XDG_CACHE_HOME").map(PathBuf::from).or_else(|| var("HOME").map(|h| Path::new(&h).join(".cache")))?;
    Some(base.join("tgrid").join("circuits"))
}

/// Enables the cache at [`default_root`] unless it is disabled; returns the root.
pub fn enable_default() -> Option<PathBuf> {
    let root = default_root()?;
    enable(root.clone());
    Some(root)
}

/// Enables the cache as a binary's `--circuit-cache` setting says: a directory, `off`, or (none
/// given) [`default_root`]. Returns the root in use.
pub fn enable_from_setting(setting: Option<&Path>) -> Option<PathBuf> {
    match setting.filter(|p| !p.as_os_str().is_empty()) {
        Some(p) if p == Path::new("off") => None,
        Some(p) => {
            enable(p);
            Some(p.to_path_buf())
        }
        None => enable_default(),
    }
}

/// Common circuit data through the process's cache ([`enable`]), or `make`'s if it has none.
pub fn common<F: RichField + Extendable<D>, const D: usize>(
    key: &CircuitKey,
    make: impl FnOnce() -> CommonCircuitData<F, D>,
) -> CommonCircuitData<F, D> {
    match installed() {
        Some(cache) => cache.common(key, make).0,
        None => make(),
    }
}

/// Builds `builder` through the process's cache ([`enable`]), or directly if it has none.
pub fn build<F, C, const D: usize>(key: &CircuitKey, builder: CircuitBuilder<F, D>) -> CircuitData<F, C, D>
where
    F: RichField + Extendable<D>,
    C: GenericConfig<D, F = F>,
{
    match installed() {
        Some(cache) => cache.build(key, builder),
        None => builder.build::<C>(),
    }
}

/// [`CircuitCache::try_fetch_or_make`] through the process's cache ([`enable`]), or `make`'s
/// value if it has none.
pub fn try_fetch_or_make<T, E>(
    kind: &str,
    key: &CircuitKey,
    decode: impl FnOnce(&[u8]) -> Result<T, String>,
    make: impl FnOnce() -> Result<T, E>,
    encode: impl FnOnce(&T) -> Result<Vec<u8>, String>,
) -> Result<T, E> {
    match installed() {
        Some(cache) => Ok(cache.try_fetch_or_make(kind, key, decode, make, encode)?.0),
        None => make(),
    }
}
