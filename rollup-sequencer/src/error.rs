//! Errors of the sequencer library.

/// What can go wrong while aggregating.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Normalization, leaf or merge proving, registry or batch rules.
    #[error(transparent)]
    Aggregation(#[from] tgrid_aggregation::Error),
    /// A task proof or model file is invalid.
    #[error(transparent)]
    Task(#[from] tgrid_circuits::Error),
    /// A submitted proof is for a model the registry does not list.
    #[error("model 0x{} is not in the registry", hex::encode(.0))]
    UnknownModel([u8; 32]),
    /// The registry's model file does not produce the registered circuit.
    #[error("{path}: {reason}")]
    ModelFile {
        /// The model file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
