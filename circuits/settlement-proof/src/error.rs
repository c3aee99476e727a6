//! Errors of the settlement proof.

/// What can go wrong wrapping a batch or checking a settlement proof file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The batch file or its root proof is invalid.
    #[error(transparent)]
    Aggregation(#[from] tgrid_aggregation::Error),
    /// The plonky2 wrap layers failed.
    #[error(transparent)]
    Wrap(#[from] tgrid_wrap::Error),
    /// The R1CS verifier could not be synthesized for this proof.
    #[error("R1CS verifier: {0}")]
    R1cs(#[from] tgrid_wrap_r1cs::Error),
    /// Groth16 setup, proving or decoding failed.
    #[error(transparent)]
    Groth16(#[from] tgrid_groth16::Error),
    /// A settlement proof file is malformed (bad JSON, wrong lengths, bad hex).
    #[error("malformed settlement proof file: {0}")]
    Malformed(String),
    /// The file is well formed but what it claims does not hold.
    #[error("invalid settlement proof: {0}")]
    Invalid(String),
    /// A key does not belong to this circuit or this file.
    #[error("key mismatch: {0}")]
    KeyMismatch(String),
    /// Reading or writing a file failed.
    // The cause is in the message, not a `#[source]`: an error chain would print it twice.
    #[error("{path}: {cause}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        cause: std::io::Error,
    },
}

impl Error {
    pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Self + '_ {
        move |cause| Self::Io { path: path.display().to_string(), cause }
    }
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
