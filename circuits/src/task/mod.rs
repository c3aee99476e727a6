//! Task proofs: one segment circuit for a model that fits, or a chain of segment circuits joined
//! by recursion into ONE proof, so peak memory depends on the segment size, not on the depth.
//!
//! Chain: `S_1 … S_k` prove segments (public inputs: commitments at their two cuts);
//! `J_2` verifies `S_1` and `S_2` and checks `S_1.out == S_2.in`; `J_i` verifies `J_{i-1}` and
//! `S_i` likewise. The last join carries the task binding and is the task proof.

#[cfg(test)]
mod faults;
mod prover;
mod verifier;

use serde::{Deserialize, Serialize};

pub use prover::TaskProver;
pub use verifier::TaskVerifier;

/// Size and timing figures of a proof, for reports and benchmarks.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CircuitStats {
    /// Segments the model was cut into.
    pub segments: usize,
    /// Largest segment's padded row count.
    pub max_segment_rows: usize,
    /// Sum of all segment row counts.
    pub total_rows: usize,
    /// Seconds spent building circuits.
    pub build_seconds: f64,
    /// Seconds spent proving (segments and joins).
    pub prove_seconds: f64,
}

/// Progress callback: (stage description, steps done, steps total).
pub type Progress<'a> = &'a mut dyn FnMut(&str, usize, usize);
