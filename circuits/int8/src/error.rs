//! Errors of the int8 semantics.

/// Everything that can go wrong with a model, an input or an encoding. Each variant says what the
/// caller can fix.
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
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
