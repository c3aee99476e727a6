//! Errors of the wrap layers.

/// What can go wrong building, proving or checking the last plonky2 layers.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The aggregation side (circuits, batch files) failed.
    #[error(transparent)]
    Aggregation(#[from] tgrid_aggregation::Error),
    /// A circuit could not be built to its expected shape.
    #[error("circuit {0}")]
    Build(String),
    /// The prover failed; the witness does not satisfy the circuit.
    #[error("proving failed: {0}")]
    Proving(String),
    /// A proof did not verify or carried unexpected public inputs.
    #[error("invalid proof: {0}")]
    InvalidProof(String),
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
