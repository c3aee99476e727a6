//! Errors of the witness helpers.

use plonky2::iop::target::Target;

/// What can go wrong when reading or writing u32 values in a witness.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Sha256Error {
    /// plonky2 refused the value, typically because the target (or one copy-constrained to it)
    /// already holds a different value.
    #[error("witness rejected a value: {0}")]
    Witness(String),
    /// A slice of values does not match the slice of targets it is meant for.
    #[error("expected {expected} values, got {actual}")]
    LengthMismatch {
        /// Number of targets.
        expected: usize,
        /// Number of values given.
        actual: usize,
    },
    /// The target has no value in the witness (not set and not generated).
    #[error("target {target:?} has no value in the witness")]
    Unset {
        /// The target that was read.
        target: Target,
    },
    /// A target read as a u32 holds a larger field element.
    #[error("value {value} does not fit in 32 bits")]
    NotU32 {
        /// The canonical value found.
        value: u64,
    },
}
