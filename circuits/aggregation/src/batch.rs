//! The batch file and its verification.
//!
//! `.tgb` (batch proof): magic `TGRIDBAT`, little-endian u16 version, the registry root (32
//! bytes), the task count (u32), each task's leaf data (task id, model id, input commitment,
//! output commitment, provider: 148 bytes), the root proof's kind (0 = leaf, 1 = merge) and the
//! length-prefixed plonky2 proof bytes.

use tgrid_circuits::codec::{Reader, Writer};

use crate::error::{Error, Result};
use crate::tree::{AggregationCircuits, SubtreeKind, SubtreeProof};

pub use crate::leaves::{
    audit_path, batch_root, node_hash, root_from_audit_path, settlement_public_input, split_point,
    AggregationPublicInputs, TaskLeaf,
};

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
