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
//!
//! The cache decides nothing a verifier relies on: a proof made with cached data is checked like
//! any other (each aggregation step verifies what it proved, the chain verifies the Groth16
//! proof), and the auditors' tools do not enable a cache; they derive every circuit they trust.

use std::fs;
use std::io::{self, Read, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Instant, SystemTime};

use plonky2::field::extension::Extendable;
use plonky2::hash::hash_types::RichField;
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitData, CommonCircuitData};
use plonky2::plonk::config::GenericConfig;
use sha2::{Digest, Sha256};
use tracing::{debug, info, warn};

mod serializer;

pub use serializer::{Gates, Generators};

/// Environment variable naming the cache's root directory; `off` disables the cache.
pub const ENV: &str = "TGRID_CIRCUIT_CACHE";

/// Directories of executables kept under the root (the most recently used); older ones are
/// removed when a cache is opened, so rebuilt binaries do not fill the disk.
pub const KEEP_EXECUTABLES: usize = 6;

const MAGIC: &[u8; 8] = b"TGRIDCC1";
const HEADER_LEN: usize = 8 + 32 + 32 + 8;

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

/// What determines one circuit besides the code: its name and runtime inputs.
#[derive(Clone, Debug)]
pub struct CircuitKey {
    name: String,
    inputs: Sha256,
}

impl CircuitKey {
    /// A circuit called `name` (letters, digits, `-` and `_` keep the file name readable; other
    /// characters are replaced).
    pub fn new(name: impl AsRef<str>) -> Self {
        let name: String = name
            .as_ref()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
            .collect();
        let mut inputs = Sha256::new();
        absorb(&mut inputs, name.as_bytes());
        Self { name, inputs }
    }

    /// Adds a runtime input the circuit depends on (inner verifier data, parameters).
    pub fn with(mut self, input: impl AsRef<[u8]>) -> Self {
        absorb(&mut self.inputs, input.as_ref());
        self
    }

    /// The circuit's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Length-prefixed, so that inputs `("ab", "c")` and `("a", "bc")` differ.
fn absorb(hasher: &mut Sha256, bytes: &[u8]) {
    hasher.update((bytes.len() as u64).to_le_bytes());
    hasher.update(bytes);
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
#[derive(Debug)]
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
        let digest = self.entry_key(kind, key);
        let path = self.dir.join(format!("{}-{}.bin", key.name, hex::encode(&digest[..8])));
        let started = Instant::now();
        match load(&path, &digest, decode) {
            Ok(Some(value)) => {
                debug!(
                    circuit = key.name,
                    kind,
                    seconds = started.elapsed().as_secs_f64(),
                    "loaded from the circuit cache"
                );
                return (value, Source::Loaded);
            }
            Ok(None) => {}
            Err(reason) => {
                warn!(circuit = key.name, kind, path = %path.display(), %reason, "rebuilding a cached entry")
            }
        }
        let started = Instant::now();
        let value = make();
        let built = started.elapsed().as_secs_f64();
        let started = Instant::now();
        match encode(&value).and_then(|payload| store(&path, &digest, &payload)) {
            Ok(bytes) => info!(
                circuit = key.name,
                kind,
                build_seconds = built,
                store_seconds = started.elapsed().as_secs_f64(),
                megabytes = bytes as f64 / 1e6,
                "built and stored in the circuit cache"
            ),
            Err(reason) => warn!(circuit = key.name, kind, path = %path.display(), %reason, "built but not cached"),
        }
        (value, Source::Built)
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

/// `Ok(None)` if there is no entry; `Err` (with the reason) if there is one we cannot use.
fn load<T>(
    path: &Path,
    digest: &[u8; 32],
    decode: impl FnOnce(&[u8]) -> Result<T, String>,
) -> Result<Option<T>, String> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let payload = checked_payload(&bytes, digest)?;
    match catch_unwind(AssertUnwindSafe(|| decode(payload))) {
        Ok(decoded) => decoded.map(Some),
        Err(_) => Err("decoding the entry panicked".into()),
    }
}

/// The payload of an entry file, after checking its magic, key, length and content digest.
fn checked_payload<'a>(bytes: &'a [u8], digest: &[u8; 32]) -> Result<&'a [u8], String> {
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
        return Err("not a circuit cache entry".into());
    }
    if &bytes[8..40] != digest {
        return Err("the entry was written for another key".into());
    }
    let payload = &bytes[HEADER_LEN..];
    let declared = u64::from_le_bytes(bytes[72..80].try_into().expect("8 bytes"));
    if declared != payload.len() as u64 {
        return Err(format!("truncated entry: {} of {declared} bytes", payload.len()));
    }
    if Sha256::digest(payload).as_slice() != &bytes[40..72] {
        return Err("the entry's content digest does not match".into());
    }
    Ok(payload)
}

/// Writes an entry atomically (a temporary file renamed into place), returning its size.
fn store(path: &Path, digest: &[u8; 32], payload: &[u8]) -> Result<usize, String> {
    let mut header = Vec::with_capacity(HEADER_LEN);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(digest);
    header.extend_from_slice(&Sha256::digest(payload));
    header.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    let temporary = path.with_extension(format!("tmp.{}", std::process::id()));
    let write = || -> io::Result<()> {
        // Another executable may have pruned this directory since it was opened.
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        let mut file = fs::File::create(&temporary)?;
        file.write_all(&header)?;
        file.write_all(payload)?;
        drop(file);
        fs::rename(&temporary, path)
    };
    write().map_err(|e| {
        let _ = fs::remove_file(&temporary);
        e.to_string()
    })?;
    Ok(HEADER_LEN + payload.len())
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

fn root_from(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
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

#[cfg(test)]
mod tests;
