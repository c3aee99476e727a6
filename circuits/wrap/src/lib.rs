//! The top of a batch's proof: the plonky2 layers that turn the aggregation root proof into one
//! small proof with a BN254-Poseidon transcript ([`layers`]), ready for the Groth16 wrapper.

pub mod error;
pub mod layers;

#[cfg(test)]
mod tests;

pub use error::{Error, Result};
pub use layers::{FinalConfig, FinalFri, FinalProof, WrapCircuits, WrapTimings, WrappedBatch};
