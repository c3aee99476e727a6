//! TensorGrid circuits: the exact int8 model semantics, tensor commitments, and the plonky2
//! circuits that prove a task's inference.
//!
//! Data flow: a [`QuantModel`] (from `tgrid-onnx`) runs with [`infer::run`]; [`TaskProver`]
//! builds the model's circuit(s) and proves one inference bound to a task and a provider;
//! [`TaskVerifier`] checks a [`TaskProof`] against the model. The integer semantics are written
//! down in docs/quantization.md.

mod circuit;
pub mod codec;
pub mod commit;
mod error;
mod files;
mod gadgets;
mod gates;
mod hash;
pub mod infer;
mod lower;
#[cfg(test)]
mod malicious;
mod model;
mod privacy;
#[cfg(test)]
mod private_tests;
mod prover_cache;
mod task;
pub mod testing;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod token_tests;
mod verifier_cache;
mod zero_knowledge;

pub use circuit::{
    join_config, public_segment_fri, segment_config, zk_join_config, PublicInputs, Segment, NUM_PUBLIC_INPUTS,
    PRIVATE_SEGMENT_WIRES, QUARTER_RATE_MAX_ROWS, SEGMENT_WIRES,
};
pub use commit::{commit, commit_salted, Commitment, EncryptedTensor, OutputKey, Salt};
pub use error::{Error, Result};
pub use files::{check_header, decode_plonky2_proof, hash_to_bytes, ModelFile, TaskProof, MODEL_MAGIC, PROOF_MAGIC};
pub use gates::{LowDegreeRow, PoseidonHeadGate, PoseidonLowDegreeGate, PoseidonTailGate};
pub use hash::{verify_proof_parallel, TgridPoseidonConfig, TgridPoseidonHash};
pub use lower::{check_layer_norm, requant_for, requant_for_scores, window_indices};
pub use model::{
    numel, Node, Op, QParams, QuantModel, Requant, CIRCUIT_VERSION, INV_SQRT_BITS, MAX_CONCAT_INPUTS,
    MAX_LAYER_NORM_EPS, MAX_LAYER_NORM_ROW, MAX_MACS, MAX_SOFTMAX_ROW, MAX_TENSOR_LEN, SOFTMAX_Q,
};
pub use privacy::Privacy;
pub use task::{prove_circuit, CircuitStats, SegmentPlan, TaskProver, TaskVerifier};
pub use zero_knowledge::MASK_COLUMNS;

/// The base field (Goldilocks).
pub type F = plonky2::field::goldilocks_field::GoldilocksField;
/// Extension degree used by every circuit.
pub const D: usize = 2;
/// plonky2 configuration of every circuit: Poseidon over Goldilocks, narrow in task circuits
/// ([`TgridPoseidonConfig`]).
pub type C = TgridPoseidonConfig;
