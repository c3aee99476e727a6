//! Wire format of aggregation jobs and their outcomes (little-endian, length-prefixed, every
//! length bounded before anything is allocated: a queue message is untrusted input).
//!
//! ```text
//! job      "TGRIDJOB" u16 version  u8 kind
//!          kind 1 (leaf):  registry   bytes model file (.tgm)   bytes task proof (.tgp)
//!          kind 2 (merge): child left, child right
//!          kind 3 (wrap):  bytes key id (UTF-8)   bytes batch file (.tgb)
//!          kind 4 (merge over two levels): u8 shape (1 node(node(a, b), c), 2 node(a, node(b, c)))
//!                          child a, child b, child c
//!          kind 5 (chunk): u8 n (1 to 4), n × child (leaf proofs, in task order)   registry
//! registry u32 n, n × (model id 32 ‖ leaf circuit digest 32)
//! child    u8 kind (0 leaf proof, 1 merge proof, 2 chunk proof)  bytes proof (a leaf proof's
//!          circuit cap, then the plonky2 proof: `SubtreeProof::to_bytes`)
//! outcome  "TGRIDJRS" u16 version  u8 0 + child (proven)  |  u8 1 + bytes UTF-8 reason (refused)
//!          |  u8 2 + bytes settlement proof file (JSON; wrapped)
//! ```
//!
//! A job's id is the SHA-256 of its encoding: the same work always has the same id, which makes
//! jobs idempotent (the queue drops a republished duplicate, a stored outcome answers a retry).

use sha2::{Digest, Sha256};
use tgrid_aggregation::registry::REGISTRY_DEPTH;
use tgrid_aggregation::{MergeShape, RegistryEntry, SubtreeKind, CHUNK_LEAVES};
use tgrid_circuits::codec::{Reader, Writer};
use tgrid_circuits::{check_header, Error, Result};

const JOB_MAGIC: &[u8; 8] = b"TGRIDJOB";
const OUTCOME_MAGIC: &[u8; 8] = b"TGRIDJRS";
/// 4: a leaf circuit per model: registries list leaf circuit digests, a chunk job carries the
/// registry (the chunk proves membership), a leaf proof starts with its circuit's cap. (3: chunks
/// of four leaves; 2: merges over two tree levels.)
const VERSION: u16 = 4;
/// Largest model file a leaf job may carry.
pub const MAX_MODEL_FILE_BYTES: usize = 16 << 20;
/// Largest task, leaf, chunk or merge proof a job or outcome may carry.
pub const MAX_PROOF_BYTES: usize = 4 << 20;
/// Largest batch file a wrap job, and settlement proof file its outcome, may carry (the broker's
/// own message limit, 1 MiB by default, is usually the tighter one).
pub const MAX_BATCH_BYTES: usize = 16 << 20;
const MAX_KEY_ID_BYTES: usize = 512;
const MAX_REASON_BYTES: usize = 4096;

/// A leaf, chunk or merge proof as bytes, with which circuit produced it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildProof {
    /// The circuit that produced it.
    pub kind: SubtreeKind,
    /// The plonky2 proof with its public inputs.
    pub bytes: Vec<u8>,
}

/// One unit of aggregation work: its inputs are proofs, its output one parent proof.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Job {
    /// Prove a task's leaf with the leaf circuit `registry` lists for its model.
    Leaf {
        /// Every entry of the registry (the worker checks that the leaf circuit it builds is the
        /// one listed).
        registry: Vec<RegistryEntry>,
        /// The model file the task's leaf circuit is built from.
        model_file: Vec<u8>,
        /// The task proof (.tgp).
        task_proof: Vec<u8>,
    },
    /// Prove the chunk over one to four consecutive leaf proofs (in task order).
    Chunk {
        /// The leaf proofs.
        leaves: Vec<ChildProof>,
        /// Every entry of the registry (the chunk proves each leaf's model is in its root).
        registry: Vec<RegistryEntry>,
    },
    /// Merge two adjacent subtrees (`left` holds the earlier tasks).
    Merge {
        /// The earlier subtree.
        left: ChildProof,
        /// The later subtree.
        right: ChildProof,
    },
    /// Merge three adjacent subtrees over two tree levels (`a` holds the earliest tasks).
    Merge3 {
        /// `LeftDeep` or `RightDeep`.
        shape: MergeShape,
        /// The earliest subtree.
        a: ChildProof,
        /// The middle subtree.
        b: ChildProof,
        /// The latest subtree.
        c: ChildProof,
    },
    /// Wrap a closed batch's root proof into the Groth16 settlement proof, with the key `key_id`
    /// names (a worker holding another key refuses: its proof would not verify on-chain).
    Wrap {
        /// The proving key's id (`WrapKeyId`, as displayed).
        key_id: String,
        /// The batch file (.tgb): leaves and root proof.
        batch_file: Vec<u8>,
    },
}

/// What a worker answers to a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The parent proof (leaf, chunk and merge jobs).
    Proven(ChildProof),
    /// The settlement proof file, as JSON (wrap jobs).
    Wrapped(Vec<u8>),
    /// The job can never succeed (an invalid proof, a model file that does not match its
    /// registry entry); redelivering it would not help.
    Refused(String),
}

impl Job {
    /// Short name for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Job::Leaf { .. } => "leaf",
            Job::Chunk { .. } => "chunk",
            Job::Merge { .. } | Job::Merge3 { .. } => "merge",
            Job::Wrap { .. } => "wrap",
        }
    }

    /// The queue subject it is published under: wrap jobs go to their own stream, which only
    /// workers holding a Groth16 proving key consume.
    pub fn subject(&self) -> String {
        match self {
            Job::Wrap { .. } => format!("{}.wrap", super::WRAP_SUBJECT_PREFIX),
            _ => format!("tgrid.jobs.{}", self.kind()),
        }
    }

    /// The encoding.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.raw(JOB_MAGIC);
        w.u16(VERSION);
        match self {
            Job::Leaf { registry, model_file, task_proof } => {
                w.u8(1);
                write_registry(&mut w, registry);
                w.bytes(model_file);
                w.bytes(task_proof);
            }
            Job::Chunk { leaves, registry } => {
                w.u8(5);
                w.u8(leaves.len() as u8);
                for leaf in leaves {
                    write_child(&mut w, leaf);
                }
                write_registry(&mut w, registry);
            }
            Job::Merge { left, right } => {
                w.u8(2);
                write_child(&mut w, left);
                write_child(&mut w, right);
            }
            Job::Merge3 { shape, a, b, c } => {
                w.u8(4);
                w.u8(match shape {
                    MergeShape::LeftDeep => 1,
                    MergeShape::RightDeep => 2,
                    // Never built: `Job::Merge` is the one-level merge.
                    MergeShape::Pair => 0,
                });
                for child in [a, b, c] {
                    write_child(&mut w, child);
                }
            }
            Job::Wrap { key_id, batch_file } => {
                w.u8(3);
                w.str(key_id);
                w.bytes(batch_file);
            }
        }
        w.into_bytes()
    }

    /// Decodes a job, rejecting anything malformed or oversized.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        check_header(&mut r, JOB_MAGIC, VERSION, "aggregation job")?;
        let job = match r.u8()? {
            1 => {
                let registry = read_registry(&mut r)?;
                let model_file = r.bytes(MAX_MODEL_FILE_BYTES)?.to_vec();
                let task_proof = r.bytes(MAX_PROOF_BYTES)?.to_vec();
                Job::Leaf { registry, model_file, task_proof }
            }
            2 => Job::Merge { left: read_child(&mut r)?, right: read_child(&mut r)? },
            3 => Job::Wrap { key_id: r.str(MAX_KEY_ID_BYTES)?, batch_file: r.bytes(MAX_BATCH_BYTES)?.to_vec() },
            4 => {
                let shape = match r.u8()? {
                    1 => MergeShape::LeftDeep,
                    2 => MergeShape::RightDeep,
                    s => return Err(Error::Format(format!("unknown two-level merge shape {s}"))),
                };
                Job::Merge3 { shape, a: read_child(&mut r)?, b: read_child(&mut r)?, c: read_child(&mut r)? }
            }
            5 => {
                let n = usize::from(r.u8()?);
                if n == 0 || n > CHUNK_LEAVES {
                    return Err(Error::Format(format!("a chunk job of {n} leaves (1 to {CHUNK_LEAVES})")));
                }
                let leaves = (0..n).map(|_| read_child(&mut r)).collect::<Result<_>>()?;
                Job::Chunk { leaves, registry: read_registry(&mut r)? }
            }
            k => return Err(Error::Format(format!("unknown job kind {k}"))),
        };
        r.finish()?;
        Ok(job)
    }
}

fn write_registry(w: &mut Writer, registry: &[RegistryEntry]) {
    w.u32(registry.len() as u32);
    for e in registry {
        w.raw(&e.model_id);
        w.raw(&e.leaf_digest);
    }
}

fn read_registry(r: &mut Reader<'_>) -> Result<Vec<RegistryEntry>> {
    let n = r.len_prefix(1 << REGISTRY_DEPTH, 64)?;
    (0..n).map(|_| Ok(RegistryEntry { model_id: r.raw()?, leaf_digest: r.raw()? })).collect()
}

/// The id of a job's encoding: lowercase hex of its SHA-256 (a NATS subject token).
pub fn job_id(encoded: &[u8]) -> String {
    hex::encode(Sha256::digest(encoded))
}

impl Outcome {
    /// The encoding.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.raw(OUTCOME_MAGIC);
        w.u16(VERSION);
        match self {
            Outcome::Proven(child) => {
                w.u8(0);
                write_child(&mut w, child);
            }
            Outcome::Wrapped(settlement_file) => {
                w.u8(2);
                w.bytes(settlement_file);
            }
            Outcome::Refused(reason) => {
                w.u8(1);
                // Reasons are ours, but bound them like everything else on the wire.
                let mut end = reason.len().min(MAX_REASON_BYTES);
                while !reason.is_char_boundary(end) {
                    end -= 1;
                }
                w.str(&reason[..end]);
            }
        }
        w.into_bytes()
    }

    /// Decodes an outcome, rejecting anything malformed or oversized.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        check_header(&mut r, OUTCOME_MAGIC, VERSION, "aggregation job outcome")?;
        let outcome = match r.u8()? {
            0 => Outcome::Proven(read_child(&mut r)?),
            1 => Outcome::Refused(r.str(MAX_REASON_BYTES)?),
            2 => Outcome::Wrapped(r.bytes(MAX_BATCH_BYTES)?.to_vec()),
            k => return Err(Error::Format(format!("unknown outcome kind {k}"))),
        };
        r.finish()?;
        Ok(outcome)
    }
}

fn write_child(w: &mut Writer, child: &ChildProof) {
    w.u8(match child.kind {
        SubtreeKind::Leaf => 0,
        SubtreeKind::Merge => 1,
        SubtreeKind::Chunk => 2,
    });
    w.bytes(&child.bytes);
}

fn read_child(r: &mut Reader<'_>) -> Result<ChildProof> {
    let kind = match r.u8()? {
        0 => SubtreeKind::Leaf,
        1 => SubtreeKind::Merge,
        2 => SubtreeKind::Chunk,
        k => return Err(Error::Format(format!("unknown proof kind {k}"))),
    };
    Ok(ChildProof { kind, bytes: r.bytes(MAX_PROOF_BYTES)?.to_vec() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf() -> Job {
        Job::Leaf {
            registry: vec![RegistryEntry { model_id: [1; 32], leaf_digest: [2; 32] }],
            model_file: vec![3; 100],
            task_proof: vec![4; 200],
        }
    }

    #[test]
    fn jobs_and_outcomes_round_trip_and_ids_follow_the_bytes() {
        let merge = Job::Merge {
            left: ChildProof { kind: SubtreeKind::Chunk, bytes: vec![5; 10] },
            right: ChildProof { kind: SubtreeKind::Merge, bytes: vec![6; 11] },
        };
        let wrap = Job::Wrap { key_id: "wrap-key-id".into(), batch_file: vec![8; 300] };
        assert_eq!((wrap.kind(), wrap.subject().as_str()), ("wrap", "tgrid.wrap-jobs.wrap"));
        assert_eq!(leaf().subject(), "tgrid.jobs.leaf");
        let child = |kind, fill| ChildProof { kind, bytes: vec![fill; 12] };
        let merge3 = |shape| Job::Merge3 {
            shape,
            a: child(SubtreeKind::Merge, 1),
            b: child(SubtreeKind::Chunk, 2),
            c: child(SubtreeKind::Chunk, 3),
        };
        let (left_deep, right_deep) = (merge3(MergeShape::LeftDeep), merge3(MergeShape::RightDeep));
        assert_eq!(left_deep.subject(), "tgrid.jobs.merge");
        assert_ne!(job_id(&left_deep.encode()), job_id(&right_deep.encode()));
        let mut bad_shape = left_deep.encode();
        bad_shape[11] = 3;
        assert!(Job::decode(&bad_shape).unwrap_err().to_string().contains("shape"));
        let chunk = Job::Chunk {
            leaves: (1..=3).map(|fill| child(SubtreeKind::Leaf, fill)).collect(),
            registry: vec![RegistryEntry { model_id: [1; 32], leaf_digest: [2; 32] }; 2],
        };
        assert_eq!(chunk.subject(), "tgrid.jobs.chunk");
        let mut too_big = chunk.encode();
        too_big[11] = 5;
        assert!(Job::decode(&too_big).unwrap_err().to_string().contains("a chunk job of 5 leaves"));
        let mut bad_kind = chunk.encode();
        bad_kind[12] = 3;
        assert!(Job::decode(&bad_kind).unwrap_err().to_string().contains("unknown proof kind 3"));
        for job in [leaf(), chunk, merge, wrap, left_deep, right_deep] {
            assert_eq!(Job::decode(&job.encode()).unwrap(), job);
        }
        assert_eq!(job_id(&leaf().encode()), job_id(&leaf().encode()));
        let Job::Leaf { registry, model_file, mut task_proof } = leaf() else { unreachable!() };
        task_proof[0] ^= 1;
        assert_ne!(job_id(&leaf().encode()), job_id(&Job::Leaf { registry, model_file, task_proof }.encode()));
        for outcome in [
            Outcome::Proven(ChildProof { kind: SubtreeKind::Merge, bytes: vec![7; 9] }),
            Outcome::Wrapped(b"{}".to_vec()),
            Outcome::Refused("bad proof".into()),
        ] {
            assert_eq!(Outcome::decode(&outcome.encode()).unwrap(), outcome);
        }
        // A long reason is cut on a character boundary, not rejected by its own decoder.
        let long = Outcome::Refused("é".repeat(MAX_REASON_BYTES)).encode();
        assert!(matches!(Outcome::decode(&long).unwrap(), Outcome::Refused(r) if r.len() <= MAX_REASON_BYTES));
    }

    #[test]
    fn malformed_messages_are_errors_not_panics() {
        let good = leaf().encode();
        let wrap = Job::Wrap { key_id: "k".into(), batch_file: vec![1; 40] }.encode();
        let wrapped = Outcome::Wrapped(vec![2; 40]).encode();
        for cut in 0..good.len() {
            assert!(Job::decode(&good[..cut]).is_err(), "truncated at {cut}");
        }
        for cut in 0..wrap.len() {
            assert!(Job::decode(&wrap[..cut]).is_err(), "wrap job truncated at {cut}");
        }
        for cut in 0..wrapped.len() {
            assert!(Outcome::decode(&wrapped[..cut]).is_err(), "wrapped outcome truncated at {cut}");
        }
        // A key id longer than any id, and a batch length past the message.
        let mut long_key = wrap.clone();
        long_key[11..15].copy_from_slice(&100_000u32.to_le_bytes());
        assert!(Job::decode(&long_key).is_err());
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(Job::decode(&trailing).is_err());
        // A registry count the message cannot hold, and a huge proof length.
        let mut lying = good.clone();
        lying[11..15].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Job::decode(&lying).is_err());
        let mut kind = good.clone();
        kind[10] = 9;
        assert!(Job::decode(&kind).unwrap_err().to_string().contains("unknown job kind"));
        assert!(Outcome::decode(&good).is_err());
        assert!(Outcome::decode(b"TGRIDJRS\x01\x00\x00\x02").is_err());
        let mut rng_bytes = 0x9e37_79b9_7f4a_7c15u64;
        for len in [0usize, 1, 16, 64, 4096] {
            let random: Vec<u8> = (0..len)
                .map(|_| {
                    rng_bytes ^= rng_bytes << 13;
                    rng_bytes ^= rng_bytes >> 7;
                    rng_bytes ^= rng_bytes << 17;
                    rng_bytes as u8
                })
                .collect();
            assert!(Job::decode(&random).is_err());
            assert!(Outcome::decode(&random).is_err());
        }
    }
}
