//! TensorGrid circuits: the plonky2 circuits that prove a task's int8 inference, on top of the
//! integer semantics of [`tgrid_int8`] (re-exported here, so a caller needs one crate).
//!
//! Data flow: a [`QuantModel`] (from `tgrid-onnx`) runs with [`infer::run`]; [`TaskProver`]
//! builds the model's circuit(s) and proves one inference bound to a task and a provider;
//! [`TaskVerifier`] checks a [`TaskProof`] against the model. The integer semantics are written
//! down in docs/quantization.md.
//!
//! Layers, bottom-up; a module imports only the layers below it (`tests/tests/layering.rs` checks
//! that no two modules import each other):
//! 1. `gates`: custom plonky2 gates, each with its witness generator and its serialization;
//! 2. `hash`: the Poseidon configuration [`C`] built on the narrow Poseidon gates, and parallel
//!    verification;
//! 3. `gadgets`: builder extensions over the gates (requantization, byte checks and tables,
//!    Softmax, LayerNorm, commitments);
//! 4. `zero_knowledge` (a private circuit's blinding), then `circuit`: segment circuits, their
//!    configurations and public inputs;
//! 5. `join` (the recursive step of a segmented model) and `plan` (where a model is cut);
//! 6. `files` (`.tgm`, `.tgp`), then the caches (`verifier_cache`, `prover_cache`);
//! 7. `task`: proving and verifying a task;
//!
//! `testing` helpers beside them; the test-only modules (`malicious`, `tests`, …) may use any.

mod circuit;
mod error;
mod files;
mod gadgets;
mod gates;
mod hash;
mod join;
#[cfg(test)]
mod malicious;
#[cfg(test)]
mod permutation_rank_tests;
mod plan;
#[cfg(test)]
mod private_tests;
mod prover_cache;
#[cfg(test)]
mod quotient_tests;
mod task;
pub mod testing;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod token_tests;
#[cfg(test)]
mod two_proof_tests;
mod verifier_cache;
mod zero_knowledge;

pub use circuit::{
    join_config, prove_circuit, public_segment_fri, segment_config, zk_join_config, PublicInputs, Segment,
    NUM_PUBLIC_INPUTS, PRIVATE_SEGMENT_WIRES, QUARTER_RATE_MAX_ROWS, SEGMENT_WIRES,
};
pub use error::{Error, Result};
pub use files::{decode_plonky2_proof, hash_to_bytes, ModelFile, TaskProof, MODEL_MAGIC, PROOF_MAGIC};
pub use gates::{LowDegreeRow, PoseidonHeadGate, PoseidonLowDegreeGate, PoseidonTailGate, MASK_COLUMNS};
pub use hash::{verify_proof_parallel, TgridPoseidonConfig, TgridPoseidonHash, C};
pub use plan::SegmentPlan;
pub use task::{CircuitStats, TaskProver, TaskVerifier};
/// The int8 semantics crate, for its own error type and anything not re-exported below.
pub use tgrid_int8 as int8;
pub use tgrid_int8::{
    check_header, check_layer_norm, codec, commit, commit_salted, infer, numel, requant_for, requant_for_scores,
    window_indices, Commitment, EncryptedTensor, Node, Op, OutputKey, Port, Ports, Privacy, QParams, QuantModel,
    Requant, Salt, CIRCUIT_VERSION, F, INV_SQRT_BITS, MAX_CONCAT_INPUTS, MAX_LAYER_NORM_EPS, MAX_LAYER_NORM_ROW,
    MAX_MACS, MAX_SOFTMAX_ROW, MAX_TENSOR_LEN, SOFTMAX_Q,
};

/// Extension degree used by every circuit.
pub const D: usize = 2;
