//! Built plonky2 circuit data kept on disk between runs of one executable.
//!
//! Building a circuit commits to its constants and wiring (an FFT and a Merkle tree over the
//! low-degree extension of every constant and permutation column): seconds for each aggregation
//! and wrap circuit, paid by every sequencer, worker and self-settling provider at start. A built
//! circuit is a function of the code that builds it and of a few runtime inputs (the inner
//! circuit a recursive verifier checks, the FRI parameters). Each file is therefore keyed by the
//! SHA-256 of the running executable, the circuit's name and those inputs ([`CircuitKey`]): a
//! file written by another build of the code, or for other inputs, is never read. A file also
//! carries the SHA-256 of its content, so a torn or corrupted file is rebuilt, never parsed.
//! Other values that follow from the code and a few inputs are kept the same way
//! ([`CircuitCache::try_fetch_or_make`]): a task circuit's verifier data, the Groth16 circuit's
//! R1CS matrices.
//!
//! The cache decides nothing a verifier relies on: a proof made with cached data is checked like
//! any other (each aggregation step verifies what it proved, the chain verifies the Groth16
//! proof), and the auditors' tools do not enable a cache; they derive every circuit they trust.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use plonky2::field::extension::Extendable;
use plonky2::hash::hash_types::RichField;
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitData, CommonCircuitData};
use plonky2::plonk::config::GenericConfig;
use sha2::{Digest, Sha256};
use tracing::{debug, info, warn};

use crate::entry::{load, store, MAGIC};
use crate::key::absorb;

mod entry;
mod key;
mod process;
mod serializer;

pub use key::CircuitKey;
pub use process::{
    build, common, default_root, enable, enable_default, enable_from_setting, installed, try_fetch_or_make,
};
pub use serializer::{Gates, Generators};

#[doc(hidden)]
pub use plonky2 as __plonky2;
#[doc(hidden)]
pub use tgrid_sha256::gates as __sha256_gates;

/// Environment variable naming the cache's root directory; `off` disables the cache.
pub const ENV: &str = "TGRID_CIRCUIT_CACHE";

/// Directories of executables kept under the root (the most recently used); older ones are
/// removed when a cache is opened, so rebuilt binaries do not fill the disk.
pub const KEEP_EXECUTABLES: usize = 6;

/// Errors opening a cache. Reading and writing entries never fails a build: a bad entry is
/// rebuilt and a failed write only logged.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The directory or the running executable could not be read or created.
    #[error("circuit cache: {path}: {source}")]
    Io {
        /// The path concerned.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

/// Where a circuit's data came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Read from an intact cache entry.
    Loaded,
    /// Built (a missing, damaged or unusable entry).
    Built,
}

/// A cache directory for the running executable.
#[derive(Clone, Debug)]
pub struct CircuitCache {
    dir: PathBuf,
    executable: [u8; 32],
}

impl CircuitCache {
    /// Opens (creating it) the directory of the running executable under `root` and removes the
    /// directories of all but the [`KEEP_EXECUTABLES`] most recently used executables.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, Error> {
        let root = root.into();
        let started = Instant::now();
        let executable = executable_digest()?;
        let dir = root.join(hex::encode(&executable[..8]));
        fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
        // Mark this executable as recently used (directory mtimes order the pruning).
        if let Err(e) = fs::File::open(&dir).and_then(|f| f.set_modified(SystemTime::now())) {
            debug!(dir = %dir.display(), error = %e, "could not touch the circuit cache directory");
        }
        prune(&root, &dir);
        debug!(dir = %dir.display(), seconds = started.elapsed().as_secs_f64(), "circuit cache opened");
        Ok(Self { dir, executable })
    }

    /// The directory of this executable's entries.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The circuit `builder` describes: loaded from this cache if an entry for `key` exists and
    /// is intact, built (and stored) otherwise.
    pub fn build<F, C, const D: usize>(&self, key: &CircuitKey, builder: CircuitBuilder<F, D>) -> CircuitData<F, C, D>
    where
        F: RichField + Extendable<D>,
        C: GenericConfig<D, F = F>,
    {
        self.build_traced(key, builder).0
    }

    /// [`build`](Self::build), also saying where the data came from.
    pub fn build_traced<F, C, const D: usize>(
        &self,
        key: &CircuitKey,
        builder: CircuitBuilder<F, D>,
    ) -> (CircuitData<F, C, D>, Source)
    where
        F: RichField + Extendable<D>,
        C: GenericConfig<D, F = F>,
    {
        let (config, num_public_inputs) = (builder.config.clone(), builder.num_public_inputs());
        let kind = format!("circuit {} {D}", std::any::type_name::<C>());
        self.fetch_or_make(
            &kind,
            key,
            |bytes| {
                let data = CircuitData::<F, C, D>::from_bytes(bytes, &Gates, &Generators)
                    .map_err(|e| format!("cannot parse the entry: {e:?}"))?;
                // Cheap agreement with the builder; the key already names the code and inputs.
                if data.common.config != config || data.common.num_public_inputs != num_public_inputs {
                    return Err("the entry's configuration or public inputs differ from the builder's".into());
                }
                Ok(data)
            },
            || builder.build::<C>(),
            |data| data.to_bytes(&Gates, &Generators).map_err(|e| format!("cannot serialize the circuit: {e:?}")),
        )
    }

    /// Common circuit data (a standard shape's, say) that `make` computes: loaded from this
    /// cache if an intact entry for `key` exists, computed (and stored) otherwise.
    pub fn common<F, const D: usize>(
        &self,
        key: &CircuitKey,
        make: impl FnOnce() -> CommonCircuitData<F, D>,
    ) -> (CommonCircuitData<F, D>, Source)
    where
        F: RichField + Extendable<D>,
    {
        self.fetch_or_make(
            "common data",
            key,
            |bytes| {
                CommonCircuitData::from_bytes(bytes.to_vec(), &Gates)
                    .map_err(|e| format!("cannot parse the entry: {e:?}"))
            },
            make,
            |common| common.to_bytes(&Gates).map_err(|e| format!("cannot serialize the common data: {e:?}")),
        )
    }

    /// The entry of `key` decoded, or `make`'s value, stored on the way.
    fn fetch_or_make<T>(
        &self,
        kind: &str,
        key: &CircuitKey,
        decode: impl FnOnce(&[u8]) -> Result<T, String>,
        make: impl FnOnce() -> T,
        encode: impl FnOnce(&T) -> Result<Vec<u8>, String>,
    ) -> (T, Source) {
        match self.try_fetch_or_make(kind, key, decode, || Ok::<T, std::convert::Infallible>(make()), encode) {
            Ok(found) => found,
            Err(never) => match never {},
        }
    }

    /// Any value derived from the code and `key`'s inputs (say a circuit's R1CS matrices), kept
    /// like a circuit: the entry of `key` and `kind` if it is intact and `decode` accepts it,
    /// else `make`'s value, stored on the way (a failed `make` stores nothing).
    pub fn try_fetch_or_make<T, E>(
        &self,
        kind: &str,
        key: &CircuitKey,
        decode: impl FnOnce(&[u8]) -> Result<T, String>,
        make: impl FnOnce() -> Result<T, E>,
        encode: impl FnOnce(&T) -> Result<Vec<u8>, String>,
    ) -> Result<(T, Source), E> {
        let digest = self.entry_key(kind, key);
        let path = self.dir.join(format!("{}-{}.bin", key.name(), hex::encode(&digest[..8])));
        let started = Instant::now();
        match load(&path, &digest, decode) {
            Ok(Some(value)) => {
                debug!(
                    circuit = key.name(),
                    kind,
                    seconds = started.elapsed().as_secs_f64(),
                    "loaded from the circuit cache"
                );
                return Ok((value, Source::Loaded));
            }
            Ok(None) => {}
            Err(reason) => {
                warn!(circuit = key.name(), kind, path = %path.display(), %reason, "rebuilding a cached entry")
            }
        }
        let started = Instant::now();
        let value = make()?;
        let built = started.elapsed().as_secs_f64();
        let started = Instant::now();
        match encode(&value).and_then(|payload| store(&path, &digest, &payload)) {
            Ok(bytes) => info!(
                circuit = key.name(),
                kind,
                build_seconds = built,
                store_seconds = started.elapsed().as_secs_f64(),
                megabytes = bytes as f64 / 1e6,
                "built and stored in the circuit cache"
            ),
            Err(reason) => warn!(circuit = key.name(), kind, path = %path.display(), %reason, "built but not cached"),
        }
        Ok((value, Source::Built))
    }

    fn entry_key(&self, kind: &str, key: &CircuitKey) -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(MAGIC);
        hasher.update(self.executable);
        absorb(&mut hasher, kind.as_bytes());
        hasher.update(key.inputs.clone().finalize());
        hasher.finalize().into()
    }
}

/// SHA-256 of the running executable's file (on Linux the running image even if the path has
/// since been replaced by a rebuild).
fn executable_digest() -> Result<[u8; 32], Error> {
    let path = if cfg!(target_os = "linux") {
        PathBuf::from("/proc/self/exe")
    } else {
        std::env::current_exe().map_err(|source| Error::Io { path: "current executable".into(), source })?
    };
    let io = |source| Error::Io { path: path.clone(), source };
    let mut file = fs::File::open(&path).map_err(io)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buffer).map_err(io)?;
        if n == 0 {
            return Ok(hasher.finalize().into());
        }
        hasher.update(&buffer[..n]);
    }
}

/// Removes the directories of executables beyond the [`KEEP_EXECUTABLES`] most recently used;
/// only directories named like ours (16 hex digits) are touched.
fn prune(root: &Path, current: &Path) {
    let Ok(entries) = fs::read_dir(root) else { return };
    let mut dirs: Vec<(SystemTime, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.len() == 16 && name.bytes().all(|b| b.is_ascii_hexdigit())
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .filter(|(_, path)| path != current)
        .collect();
    dirs.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    for (_, dir) in dirs.into_iter().skip(KEEP_EXECUTABLES - 1) {
        match fs::remove_dir_all(&dir) {
            Ok(()) => debug!(dir = %dir.display(), "removed an old executable's circuit cache"),
            Err(e) => debug!(dir = %dir.display(), error = %e, "could not remove an old circuit cache"),
        }
    }
}

#[cfg(test)]
mod tests;
