//! The model registry: the set of allowed (model id, leaf circuit digest) pairs as a
//! fixed-depth Poseidon (Goldilocks) Merkle tree whose root the chain stores.
//!
//! Leaf `i` holds the 12 field elements `model id as 8 big-endian u32 words ‖ digest (4)` of the
//! `i`-th entry in model-id order; unused leaves hold 12 zeros (no real entry can equal them: a
//! model id is a SHA-256 output and a digest a Poseidon output). Leaves are hashed and paired
//! exactly as plonky2's `MerkleTree` and its in-circuit `verify_merkle_proof` do, so the chunk
//! circuit checks membership with plonky2's own gadget.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plonky2::field::types::{Field, Field64};
use plonky2::hash::hash_types::HashOut;
use plonky2::hash::merkle_proofs::MerkleProof;
use plonky2::hash::poseidon::PoseidonHash;
use plonky2::plonk::config::Hasher;
use serde::{Deserialize, Serialize};
use tgrid_circuits::F;

use crate::error::{Error, Result};

/// Depth of the registry tree: up to 2^16 registered models. A circuit constant.
pub const REGISTRY_DEPTH: usize = 16;

/// One allowed pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RegistryEntry {
    /// The compiled model's id.
    pub model_id: [u8; 32],
    /// Digest of the model's leaf circuit ([`crate::LeafCircuit`]).
    pub leaf_digest: [u8; 32],
}

impl RegistryEntry {
    /// The leaf's field elements.
    pub fn leaf_data(&self) -> Vec<F> {
        let mut v: Vec<F> = self
            .model_id
            .chunks(4)
            .map(|w| F::from_canonical_u32(u32::from_be_bytes(w.try_into().expect("4 bytes"))))
            .collect();
        // Canonical by construction: `Registry::new` rejects other digests.
        v.extend(bytes_to_hash(&self.leaf_digest).map(|h| h.elements).unwrap_or_default());
        v
    }
}

/// A membership proof: the leaf index and the siblings from the leaf up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Membership {
    /// Position of the entry.
    pub index: usize,
    /// Sibling hashes, leaf level first.
    pub siblings: Vec<HashOut<F>>,
}

impl Membership {
    /// As plonky2's proof type.
    pub fn to_merkle_proof(&self) -> MerkleProof<F, PoseidonHash> {
        MerkleProof { siblings: self.siblings.clone() }
    }
}

/// The registry: entries ordered by model id, and the tree over them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registry {
    entries: Vec<RegistryEntry>,
    /// levels[0] = leaf hashes of the occupied prefix; levels[d] has the hashes at height d.
    levels: Vec<Vec<HashOut<F>>>,
}

/// Hashes of all-empty subtrees by height.
fn empty_hashes() -> Vec<HashOut<F>> {
    let mut v = vec![PoseidonHash::hash_or_noop(&[F::ZERO; 12])];
    for d in 0..REGISTRY_DEPTH {
        v.push(PoseidonHash::two_to_one(v[d], v[d]));
    }
    v
}

impl Registry {
    /// A registry holding `entries` (any order). Fails on a model listed twice with different
    /// digests, a digest that is not a Goldilocks hash, or too many entries.
    pub fn new(entries: impl IntoIterator<Item = RegistryEntry>) -> Result<Self> {
        let mut by_model = BTreeMap::new();
        for e in entries {
            // A digest is 4 canonical field elements; anything else can never be proven.
            bytes_to_hash(&e.leaf_digest)?;
            if let Some(old) = by_model.insert(e.model_id, e) {
                if old != e {
                    return Err(Error::Registry(format!(
                        "model 0x{} is listed with two different circuit digests",
                        hex::encode(e.model_id)
                    )));
                }
            }
        }
        if by_model.len() > 1 << REGISTRY_DEPTH {
            return Err(Error::Registry(format!("more than 2^{REGISTRY_DEPTH} models")));
        }
        let entries: Vec<RegistryEntry> = by_model.into_values().collect();
        // Sparse tree: only the occupied prefix is stored; the rest are empty-subtree hashes.
        let empty = empty_hashes();
        let mut levels = vec![entries.iter().map(|e| PoseidonHash::hash_or_noop(&e.leaf_data())).collect::<Vec<_>>()];
        for d in 0..REGISTRY_DEPTH {
            let below = &levels[d];
            let next = below
                .chunks(2)
                .map(|pair| PoseidonHash::two_to_one(pair[0], pair.get(1).copied().unwrap_or(empty[d])))
                .collect();
            levels.push(next);
        }
        Ok(Self { entries, levels })
    }

    /// Entries in tree order.
    pub fn entries(&self) -> &[RegistryEntry] {
        &self.entries
    }

    /// The root as field elements.
    pub fn root_hash(&self) -> HashOut<F> {
        self.levels[REGISTRY_DEPTH].first().copied().unwrap_or_else(|| empty_hashes()[REGISTRY_DEPTH])
    }

    /// The root as the contracts store it (each element as 8 big-endian bytes).
    pub fn root(&self) -> [u8; 32] {
        tgrid_circuits::hash_to_bytes(&self.root_hash())
    }

    /// The entry of `model_id`, if registered.
    pub fn entry(&self, model_id: &[u8; 32]) -> Option<&RegistryEntry> {
        self.entries.binary_search_by(|e| e.model_id.cmp(model_id)).ok().map(|i| &self.entries[i])
    }

    /// The membership proof of `model_id`.
    pub fn membership(&self, model_id: &[u8; 32]) -> Result<(RegistryEntry, Membership)> {
        let index = self
            .entries
            .binary_search_by(|e| e.model_id.cmp(model_id))
            .map_err(|_| Error::Registry(format!("model 0x{} is not registered", hex::encode(model_id))))?;
        let empty = empty_hashes();
        let siblings =
            (0..REGISTRY_DEPTH).map(|d| self.levels[d].get((index >> d) ^ 1).copied().unwrap_or(empty[d])).collect();
        Ok((self.entries[index], Membership { index, siblings }))
    }
}

/// Parses 32 bytes written by [`tgrid_circuits::hash_to_bytes`] (four canonical elements).
pub fn bytes_to_hash(bytes: &[u8; 32]) -> Result<HashOut<F>> {
    let mut elements = [F::ZERO; 4];
    for (e, chunk) in elements.iter_mut().zip(bytes.chunks(8)) {
        let v = u64::from_be_bytes(chunk.try_into().expect("8 bytes"));
        if v >= F::ORDER {
            return Err(Error::Format(format!("0x{} is not a Goldilocks hash", hex::encode(bytes))));
        }
        *e = F::from_canonical_u64(v);
    }
    Ok(HashOut { elements })
}

/// One entry of the registry file, with what the sequencer needs to prove its tasks' leaves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegistryFileEntry {
    /// Human-readable model name (informational).
    pub name: String,
    /// `0x`-prefixed model id.
    pub model_id: String,
    /// `0x`-prefixed digest of the model's leaf circuit.
    pub leaf_digest: String,
    /// Path of the compiled model, relative to the registry file (used by the sequencer to
    /// check task proofs and prove their leaves; verifiers ignore it).
    pub model_file: String,
}

/// The JSON registry file: `{"root": "0x..", "depth": 16, "models": [...]}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegistryFile {
    /// `0x`-prefixed registry root (recomputed and checked on load).
    pub root: String,
    /// Tree depth (must be [`REGISTRY_DEPTH`]).
    pub depth: usize,
    /// Entries in tree order.
    pub models: Vec<RegistryFileEntry>,
    /// Directory the model paths are relative to (not serialized).
    #[serde(skip)]
    pub base_dir: PathBuf,
}

/// Largest registry file accepted.
const MAX_REGISTRY_FILE_BYTES: u64 = 64 << 20;

pub(crate) fn parse_bytes32(s: &str, what: &str) -> Result<[u8; 32]> {
    let hex_part = s.strip_prefix("0x").ok_or_else(|| Error::Format(format!("{what} {s:?} lacks the 0x prefix")))?;
    let v = hex::decode(hex_part).map_err(|e| Error::Format(format!("{what} {s:?}: {e}")))?;
    v.try_into().map_err(|_| Error::Format(format!("{what} {s:?} is not 32 bytes")))
}

impl RegistryFile {
    /// An empty registry file located in `base_dir`.
    pub fn empty(base_dir: PathBuf) -> Self {
        let root = Registry::new([]).expect("empty registry").root();
        Self { root: format!("0x{}", hex::encode(root)), depth: REGISTRY_DEPTH, models: vec![], base_dir }
    }

    /// Reads and validates a registry file: every entry parses, no model appears twice, and the
    /// recorded root matches the entries.
    pub fn load(path: &Path) -> Result<Self> {
        let io = |cause| Error::Io { path: path.display().to_string(), cause };
        let meta = std::fs::metadata(path).map_err(io)?;
        if meta.len() > MAX_REGISTRY_FILE_BYTES {
            return Err(Error::Format(format!("{}: registry file larger than 64 MiB", path.display())));
        }
        // Bytes, not a string: a binary file is "not a registry file", not an I/O error.
        let bytes = std::fs::read(path).map_err(io)?;
        let mut file: RegistryFile = serde_json::from_slice(&bytes).map_err(|e| {
            // Registries before per-model leaf circuits listed another circuit per model.
            let hint = if e.to_string().contains("`normalized_digest`") {
                " (a registry of normalization circuits, from before leaf circuits replaced them: rebuild it \
                 with `tgrid-sequencer registry add` for each model, recompiled)"
            } else {
                ""
            };
            Error::Format(format!("{}: not a registry file: {e}{hint}", path.display()))
        })?;
        file.base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if file.depth != REGISTRY_DEPTH {
            return Err(Error::Format(format!("registry depth {} is not {REGISTRY_DEPTH}", file.depth)));
        }
        let registry = file.registry()?;
        let recorded = parse_bytes32(&file.root, "registry root")?;
        if recorded != registry.root() {
            return Err(Error::Registry(format!(
                "{}: the recorded root {} does not match its entries (0x{})",
                path.display(),
                file.root,
                hex::encode(registry.root())
            )));
        }
        Ok(file)
    }

    /// The registry tree of the entries.
    pub fn registry(&self) -> Result<Registry> {
        let entries = self
            .models
            .iter()
            .map(|m| {
                let model_id = parse_bytes32(&m.model_id, "model id")?;
                let leaf_digest = parse_bytes32(&m.leaf_digest, "leaf digest")?;
                bytes_to_hash(&leaf_digest)?;
                Ok(RegistryEntry { model_id, leaf_digest })
            })
            .collect::<Result<Vec<_>>>()?;
        let registry = Registry::new(entries)?;
        if registry.entries().len() != self.models.len() {
            return Err(Error::Registry("a model is listed twice".into()));
        }
        Ok(registry)
    }

    /// Adds or replaces the entry of a model, keeps the entries in tree order and updates the
    /// root. Returns the new root.
    pub fn upsert(&mut self, entry: RegistryFileEntry) -> Result<[u8; 32]> {
        let id = parse_bytes32(&entry.model_id, "model id")?;
        self.models.retain(|m| parse_bytes32(&m.model_id, "model id").map(|x| x != id).unwrap_or(true));
        self.models.push(entry);
        self.models.sort_by_key(|m| m.model_id.to_lowercase());
        let root = self.registry()?.root();
        self.root = format!("0x{}", hex::encode(root));
        Ok(root)
    }

    /// Writes the file atomically (temporary file, then rename).
    pub fn save(&self, path: &Path) -> Result<()> {
        let io = |cause| Error::Io { path: path.display().to_string(), cause };
        let text = serde_json::to_string_pretty(self).expect("serializable") + "\n";
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }

    /// Path of an entry's model file.
    pub fn model_path(&self, entry: &RegistryFileEntry) -> PathBuf {
        self.base_dir.join(&entry.model_file)
    }

    /// The model file of `model_id`, if the file lists it.
    pub fn model_path_of(&self, model_id: &[u8; 32]) -> Option<PathBuf> {
        let id = hex32(model_id);
        self.models.iter().find(|m| m.model_id.eq_ignore_ascii_case(&id)).map(|m| self.model_path(m))
    }
}

/// Root as a `0x` string, for reports.
pub fn hex32(bytes: &[u8; 32]) -> String {
    format!("0x{}", hex::encode(bytes))
}
