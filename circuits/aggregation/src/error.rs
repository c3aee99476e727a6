//! Errors of the aggregation library.

/// Everything that can go wrong while proving leaves, aggregating or checking a batch.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error of the task-proof layer (model, proof decoding, task proof rejected).
    #[error(transparent)]
    Task(#[from] tgrid_circuits::Error),
    /// A file or byte string is not a valid encoding.
    #[error("malformed data: {0}")]
    Format(String),
    /// The registry does not allow what was asked (unknown model, duplicate entry, full tree).
    #[error("registry: {0}")]
    Registry(String),
    /// A batch violates a batching rule (empty, duplicate task id, mixed registry roots).
    #[error("invalid batch: {0}")]
    InvalidBatch(String),
    /// A proof does not verify, or verifies for something else than what was claimed.
    #[error("proof rejected: {0}")]
    InvalidProof(String),
    /// A circuit does not fit its standard shape (a bug or an unsupported task circuit).
    #[error("circuit shape: {0}")]
    Shape(String),
    /// Proving failed (the witness does not satisfy the circuit).
    #[error("proving failed: {0}")]
    Proving(String),
    /// Reading or writing a file.
    // The cause is in the message, not a `#[source]`: an error chain would print it twice.
    #[error("{path}: {cause}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        cause: std::io::Error,
    },
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The semantics' errors (encodings read with its codec) reach callers as the task layer's.
impl From<tgrid_circuits::int8::Error> for Error {
    fn from(e: tgrid_circuits::int8::Error) -> Self {
        Error::Task(e.into())
    }
}
