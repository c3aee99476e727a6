//! Custom plonky2 gates of the task circuits. Both keep their parameters (weights, fixed-point
//! constants) in the row's constants, which are preprocessed and cost nothing per proof, and are
//! evaluated natively, packed and in-circuit from one definition so recursion checks exactly the
//! constraints the prover satisfies.

mod requantize;
mod weighted_sum;

pub use requantize::RequantizeGate;
pub use weighted_sum::WeightedSumGate;

#[cfg(test)]
mod tests;
