#![doc = include_str!("../README.md")]

mod core;
mod error;
mod gadget;
pub mod gates;
mod native;
mod targets;
#[cfg(test)]
mod tests;
mod witness;

pub use error::Sha256Error;
pub use gadget::CircuitBuilderSha256;
pub use native::{digest_bytes, num_blocks, words_be, IV, K};
pub use targets::{Sha256DigestTarget, U32Target};
pub use witness::{digest_from_fields, WitnessU32};
