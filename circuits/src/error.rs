//! Errors of the circuits library.

/// Everything that can go wrong in this crate. Each variant says what the caller can fix. The
/// first three are the int8 semantics' own ([`tgrid_int8::Error`]), kept as variants so a caller
/// matches one enum.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or byte string is not a valid encoding (wrong magic or version, truncated,
    /// trailing bytes, out-of-range values).
    #[error("malformed data: {0}")]
    Format(String),
    /// The model violates a structural rule (shapes, parameter counts, bounds).
    #[error("invalid model: {0}")]
    InvalidModel(String),
    /// An input tensor does not fit the model.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The proof does not verify, or verifies for something else than what was asked.
    #[error("proof rejected: {0}")]
    InvalidProof(String),
    /// Proving failed (the witness does not satisfy the circuit).
    #[error("proving failed: {0}")]
    Proving(String),
}

impl From<tgrid_int8::Error> for Error {
    fn from(e: tgrid_int8::Error) -> Self {
        match e {
            tgrid_int8::Error::Format(m) => Error::Format(m),
            tgrid_int8::Error::InvalidModel(m) => Error::InvalidModel(m),
            tgrid_int8::Error::InvalidInput(m) => Error::InvalidInput(m),
            // The int8 error is non-exhaustive for its downstream users only.
            other => Error::Format(other.to_string()),
        }
    }
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
