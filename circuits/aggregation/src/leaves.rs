//! Task leaves, the RFC 6962 batch root and its audit paths, the settlement public input and
//! the aggregation circuits' public inputs: the native encodings the circuits and the contracts
//! share (docs/encodings.md).

use plonky2::field::types::PrimeField64;
use sha2::{Digest, Sha256};
use tgrid_circuits::{PublicInputs, F};

use crate::error::{Error, Result};
use crate::shape::NUM_AGGREGATION_PUBLIC_INPUTS;

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
