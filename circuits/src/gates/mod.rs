//! Custom plonky2 gates of the task circuits. The three arithmetic gates keep their parameters
//! (weights, fixed-point constants, zero points) in the row's constants, which are preprocessed
//! and cost nothing per proof; the two Poseidon gates hold plonky2's permutation in two narrow
//! rows. Each is evaluated natively and in-circuit from one definition so recursion checks exactly
//! the constraints the prover satisfies.

mod dot_product;
mod poseidon;
mod requantize;
mod weighted_sum;

pub use dot_product::DotProductGate;
pub(crate) use poseidon::permute_rows;
pub use poseidon::{PoseidonHeadGate, PoseidonTailGate, HEAD_WIRES};
pub use requantize::RequantizeGate;
pub use weighted_sum::WeightedSumGate;

#[cfg(test)]
mod tests;
