//! TensorGrid recursive aggregation: many task proofs folded into one batch proof.
//!
//! ```text
//! task proof (per model)  ──the model's leaf circuit──►  leaf proof (one shape for every
//!                      model): the task leaf sha256(0x00 ‖ task ‖ model ‖ in ‖ out ‖ provider)
//!   ──chunk circuit (1 to 4 leaves)──►  chunk proof: checks each leaf's circuit against the
//!                      registry root, RFC 6962 root of up to 4 leaves
//!   ──merge circuit (2 or 3 subtrees over one or two tree levels, repeated)──►  root proof:
//!                      RFC 6962 root of the ordered leaves, registry root, task count
//! ```
//!
//! [`shape`] pads circuits to standard shapes, [`registry`] holds the registry tree and file,
//! [`tree`] the per-model leaf circuits and the chunk and merge circuits, [`batch`] leaves,
//! batch roots and the `.tgb` batch file. Scheduling the tree (incrementally, in parallel) is
//! the sequencer's job.

pub mod batch;
mod error;
mod leaves;
pub mod registry;
pub mod shape;
#[cfg(test)]
mod tests;
pub mod tree;

pub use batch::{
    audit_path, batch_root, check_leaves, node_hash, root_from_audit_path, settlement_public_input, BatchFile,
    TaskLeaf, VerifiedBatch,
};
pub use error::{Error, Result};
pub use registry::{Registry, RegistryEntry, RegistryFile, RegistryFileEntry};
pub use tree::{
    AggregationCircuits, LeafCircuit, LeafCircuitCap, LeafPublicInputs, MergeShape, SubtreeKind, SubtreeProof,
    CHUNK_LEAVES,
};
