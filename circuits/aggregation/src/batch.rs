//! Task leaves, the RFC 6962 batch root, aggregation public inputs and the batch file.
//!
//! `.tgb` (batch proof): magic `TGRIDBAT`, little-endian u16 version, the registry root (32
//! bytes), the task count (u32), each task's leaf data (task id, model id, input commitment,
//! output commitment, provider: 148 bytes), the root proof's kind (0 = leaf, 1 = merge) and the
//! length-prefixed plonky2 proof bytes.

use plonky2::field::types::PrimeField64;
use sha2::{Digest, Sha256};
use tgrid_circuits::codec::{Reader, Writer};
use tgrid_circuits::{PublicInputs, F};

use crate::error::{Error, Result};
use crate::tree::{AggregationCircuits, SubtreeKind, SubtreeProof, NUM_AGGREGATION_PUBLIC_INPUTS};

/// The data of one settled task, as the contract receives it in calldata.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TaskLeaf {
    /// Task id.
    pub task_id: [u8; 32],
    /// Model id.
    pub model_id: [u8; 32],
    /// Input commitment (bytes32).
    pub input_commitment: [u8; 32],
    /// Output commitment (bytes32).
    pub output_commitment: [u8; 32],
    /// Provider address.
    pub provider: [u8; 20],
}

impl TaskLeaf {
    /// Bytes hashed into a leaf: the 0x00 prefix and the five fields.
    pub const PREIMAGE_LEN: usize = 1 + Self::ENCODED_LEN;
    /// Bytes of the five fields.
    pub const ENCODED_LEN: usize = 32 * 4 + 20;

    /// The leaf of a task proof's public inputs.
    pub fn from_publics(p: &PublicInputs) -> Self {
        Self {
            task_id: p.task_id,
            model_id: p.model_id,
            input_commitment: p.input_commitment.0,
            output_commitment: p.output_commitment.0,
            provider: p.provider,
        }
    }

    /// `taskId ‖ modelId ‖ inputCommitment ‖ outputCommitment ‖ provider`.
    pub fn encode(&self) -> [u8; Self::ENCODED_LEN] {
        let mut out = [0u8; Self::ENCODED_LEN];
        out[0..32].copy_from_slice(&self.task_id);
        out[32..64].copy_from_slice(&self.model_id);
        out[64..96].copy_from_slice(&self.input_commitment);
        out[96..128].copy_from_slice(&self.output_commitment);
        out[128..148].copy_from_slice(&self.provider);
        out
    }

    /// Parses [`encode`](Self::encode)'s output.
    pub fn decode(bytes: &[u8; Self::ENCODED_LEN]) -> Self {
        let take = |r: std::ops::Range<usize>| -> [u8; 32] { bytes[r].try_into().expect("32 bytes") };
        Self {
            task_id: take(0..32),
            model_id: take(32..64),
            input_commitment: take(64..96),
            output_commitment: take(96..128),
            provider: bytes[128..148].try_into().expect("20 bytes"),
        }
    }

    /// `sha256(0x00 ‖ encode())`.
    pub fn hash(&self) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update([0x00]);
        h.update(self.encode());
        h.finalize().into()
    }
}

/// `sha256(0x01 ‖ left ‖ right)`.
pub fn node_hash(left: &[u8; 32], right: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([0x01]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// Size of the left subtree of an RFC 6962 tree over `n > 1` leaves: the largest power of two
/// below `n`.
pub fn split_point(n: usize) -> usize {
    debug_assert!(n > 1);
    1 << (usize::BITS - 1 - (n - 1).leading_zeros())
}

/// RFC 6962 Merkle tree hash of the ordered leaf hashes; `None` for an empty list.
pub fn batch_root(leaf_hashes: &[[u8; 32]]) -> Option<[u8; 32]> {
    match leaf_hashes.len() {
        0 => None,
        1 => Some(leaf_hashes[0]),
        n => {
            let k = split_point(n);
            Some(node_hash(&batch_root(&leaf_hashes[..k])?, &batch_root(&leaf_hashes[k..])?))
        }
    }
}

/// RFC 6962 audit path of leaf `index` among `leaf_hashes` (siblings from the leaf up); `None`
/// if `index` is out of range. Lets a provider or poster check its task is in a settled batch
/// from the batch root alone.
pub fn audit_path(leaf_hashes: &[[u8; 32]], index: usize) -> Option<Vec<[u8; 32]>> {
    let n = leaf_hashes.len();
    if index >= n {
        return None;
    }
    if n == 1 {
        return Some(Vec::new());
    }
    let k = split_point(n);
    let (mut path, sibling) = if index < k {
        (audit_path(&leaf_hashes[..k], index)?, batch_root(&leaf_hashes[k..])?)
    } else {
        (audit_path(&leaf_hashes[k..], index - k)?, batch_root(&leaf_hashes[..k])?)
    };
    path.push(sibling);
    Some(path)
}

/// The root an audit path leads to from leaf `index` of a tree of `count` leaves (RFC 9162
/// section 2.1.3.2); `None` if the path has the wrong length for that position.
pub fn root_from_audit_path(leaf_hash: &[u8; 32], index: usize, count: usize, path: &[[u8; 32]]) -> Option<[u8; 32]> {
    if index >= count {
        return None;
    }
    let (mut f_n, mut s_n, mut r) = (index, count - 1, *leaf_hash);
    for p in path {
        if s_n == 0 {
            return None;
        }
        if f_n & 1 == 1 || f_n == s_n {
            r = node_hash(p, &r);
            while f_n & 1 == 0 && f_n != 0 {
                f_n >>= 1;
                s_n >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        f_n >>= 1;
        s_n >>= 1;
    }
    (s_n == 0).then_some(r)
}

/// The one public input of the settlement's Groth16 proof:
/// `sha256(batchRoot ‖ registryRoot ‖ uint64 count)` with its top 3 bits cleared (so it is below
/// the BN254 scalar field), as a big-endian uint256.
pub fn settlement_public_input(batch_root: &[u8; 32], registry_root: &[u8; 32], count: u64) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(batch_root);
    h.update(registry_root);
    h.update(count.to_be_bytes());
    let mut out: [u8; 32] = h.finalize().into();
    out[0] &= 0x1f;
    out
}

/// Public inputs of a leaf, chunk or merge proof (see [`crate::tree`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AggregationPublicInputs {
    /// Subtree root (task leaf or node hash).
    pub root: [u8; 32],
    /// Registry root the leaves were checked against.
    pub registry_root: [u8; 32],
    /// Number of tasks.
    pub count: u64,
    /// Chunk and merge circuit digests, as field elements.
    pub digests: [F; 8],
}

impl AggregationPublicInputs {
    /// Parses field elements, rejecting a wrong count or out-of-range words.
    pub fn from_fields(v: &[F]) -> Result<Self> {
        if v.len() != NUM_AGGREGATION_PUBLIC_INPUTS {
            return Err(Error::InvalidProof(format!(
                "{} public inputs, expected {NUM_AGGREGATION_PUBLIC_INPUTS}",
                v.len()
            )));
        }
        let root =
            tgrid_sha256::digest_from_fields(&v[0..8]).map_err(|e| Error::InvalidProof(format!("root words: {e}")))?;
        let mut registry_root = [0u8; 32];
        for (chunk, e) in registry_root.chunks_mut(8).zip(&v[8..12]) {
            chunk.copy_from_slice(&e.to_canonical_u64().to_be_bytes());
        }
        Ok(Self { root, registry_root, count: v[12].to_canonical_u64(), digests: std::array::from_fn(|i| v[13 + i]) })
    }
}

/// Magic of `.tgb` files.
pub const BATCH_MAGIC: &[u8; 8] = b"TGRIDBAT";
/// 2: the root proof is a chunk proof up to four tasks (a leaf proof before).
const BATCH_VERSION: u16 = 2;
/// Largest batch a file may hold.
pub const MAX_BATCH_TASKS: usize = 1 << 16;
const MAX_PROOF_BYTES: usize = 16 << 20;

/// A batch proof file: the ordered leaves and the root proof over them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchFile {
    /// Registry root the batch was proven against.
    pub registry_root: [u8; 32],
    /// The tasks, in batch order.
    pub leaves: Vec<TaskLeaf>,
    /// Whether the root proof is a merge proof, rather than a chunk proof (batches of up to
    /// [`CHUNK_LEAVES`](crate::tree::CHUNK_LEAVES) tasks).
    pub root_is_merge: bool,
    /// plonky2 proof bytes of the root proof.
    pub proof: Vec<u8>,
}

impl BatchFile {
    /// Encodes the file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.raw(BATCH_MAGIC);
        w.u16(BATCH_VERSION);
        w.raw(&self.registry_root);
        w.u32(self.leaves.len() as u32);
        for leaf in &self.leaves {
            w.raw(&leaf.encode());
        }
        w.u8(self.root_is_merge as u8);
        w.bytes(&self.proof);
        w.into_bytes()
    }

    /// Decodes a file; never trusts a length and never panics.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        tgrid_circuits::check_header(&mut r, BATCH_MAGIC, BATCH_VERSION, "TensorGrid batch file (.tgb)")?;
        let registry_root = r.raw()?;
        let n = r.len_prefix(MAX_BATCH_TASKS, TaskLeaf::ENCODED_LEN)?;
        let leaves = (0..n).map(|_| Ok(TaskLeaf::decode(&r.raw()?))).collect::<Result<Vec<_>>>()?;
        let root_is_merge = r.bool()?;
        let proof = r.bytes(MAX_PROOF_BYTES)?.to_vec();
        r.finish()?;
        Ok(Self { registry_root, leaves, root_is_merge, proof })
    }
}

/// What a valid batch proves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedBatch {
    /// The settlement proof's public input for this batch ([`settlement_public_input`]).
    pub public_input: [u8; 32],
    /// RFC 6962 root of the leaves.
    pub batch_root: [u8; 32],
    /// Registry root.
    pub registry_root: [u8; 32],
    /// The tasks, in order.
    pub leaves: Vec<TaskLeaf>,
}

/// Rejects an empty batch and duplicated task ids (a task settles once).
pub fn check_leaves(leaves: &[TaskLeaf]) -> Result<()> {
    if leaves.is_empty() {
        return Err(Error::InvalidBatch("a batch needs at least one task".into()));
    }
    if leaves.len() > MAX_BATCH_TASKS {
        return Err(Error::InvalidBatch(format!("more than {MAX_BATCH_TASKS} tasks")));
    }
    let mut seen = std::collections::HashSet::new();
    for leaf in leaves {
        if !seen.insert(leaf.task_id) {
            return Err(Error::InvalidBatch(format!("task 0x{} appears twice", hex::encode(leaf.task_id))));
        }
    }
    Ok(())
}

impl AggregationCircuits {
    /// Verifies a batch file against an expected registry root: the root proof, its circuit
    /// digests, the batch root recomputed from the listed leaves, the task count and the
    /// registry root.
    pub fn verify_batch(&self, file: &BatchFile, registry_root: &[u8; 32]) -> Result<VerifiedBatch> {
        check_leaves(&file.leaves)?;
        if file.root_is_merge != (file.leaves.len() > crate::tree::CHUNK_LEAVES) {
            return Err(Error::InvalidProof("the root proof's kind does not fit the task count".into()));
        }
        let kind = if file.root_is_merge { SubtreeKind::Merge } else { SubtreeKind::Chunk };
        let proof = self.decode(&file.proof, kind)?;
        let publics = self.verify_root(&proof)?;
        let hashes: Vec<[u8; 32]> = file.leaves.iter().map(TaskLeaf::hash).collect();
        let root = batch_root(&hashes).expect("non-empty");
        if publics.root != root {
            return Err(Error::InvalidProof(format!(
                "the proven batch root 0x{} is not the root of the listed leaves (0x{})",
                hex::encode(publics.root),
                hex::encode(root)
            )));
        }
        if publics.count != file.leaves.len() as u64 {
            return Err(Error::InvalidProof(format!(
                "the proof covers {} tasks, the file lists {}",
                publics.count,
                file.leaves.len()
            )));
        }
        if publics.registry_root != file.registry_root || &publics.registry_root != registry_root {
            return Err(Error::InvalidProof(format!(
                "the batch was proven against registry root 0x{}, expected 0x{}",
                hex::encode(publics.registry_root),
                hex::encode(registry_root)
            )));
        }
        Ok(VerifiedBatch {
            public_input: settlement_public_input(&root, registry_root, publics.count),
            batch_root: root,
            registry_root: *registry_root,
            leaves: file.leaves.clone(),
        })
    }

    /// Wraps a finished root proof into a batch file.
    pub fn batch_file(&self, leaves: Vec<TaskLeaf>, root: &SubtreeProof) -> Result<BatchFile> {
        if root.kind == SubtreeKind::Leaf {
            return Err(Error::InvalidBatch("a batch's root proof is a chunk or merge proof, not a leaf proof".into()));
        }
        let publics = root.public_inputs()?;
        Ok(BatchFile {
            registry_root: publics.registry_root,
            leaves,
            root_is_merge: root.kind == SubtreeKind::Merge,
            proof: root.proof.to_bytes(),
        })
    }
}
