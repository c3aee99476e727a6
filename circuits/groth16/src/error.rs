//! Errors of the Groth16 layer.

/// What can go wrong setting up, proving, verifying or decoding.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Constraint synthesis failed.
    #[error("constraint synthesis failed: {0}")]
    Synthesis(#[from] ark_relations::gr1cs::SynthesisError),
    /// The witness does not satisfy the circuit (the statement is false).
    #[error("the witness does not satisfy the circuit ({0})")]
    Unsatisfied(String),
    /// The proving key does not belong to this circuit.
    #[error("the proving key does not fit the circuit: {0}")]
    KeyMismatch(String),
    /// The MSM/NTT backend failed.
    #[error("prover backend: {0}")]
    Backend(String),
    /// A key, proof or public input could not be decoded.
    #[error("malformed {what}: {reason}")]
    Malformed {
        /// What was being decoded.
        what: &'static str,
        /// Why it was rejected.
        reason: String,
    },
    /// Reading or writing a key file failed.
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
    pub(crate) fn malformed(what: &'static str, reason: impl ToString) -> Self {
        Self::Malformed { what, reason: reason.to_string() }
    }
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
