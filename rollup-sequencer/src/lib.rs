//! TensorGrid rollup sequencer library: turns task proofs into batch proofs.
//!
//! [`Aggregator`] (from tgrid-settlement-proof) holds the registry, the aggregation circuits and one leaf
//! circuit per model
//! (built on first use from the model files the registry file points to). It proves leaves in
//! parallel and merges them along the RFC 6962 tree shape, in parallel across independent
//! subtrees ([`Aggregator::aggregate`]), or as proofs arrive ([`IncrementalTree`]).
//!
//! [`jobs`] runs the leaf, chunk and merge proofs on worker processes through a work queue (NATS
//! JetStream) instead: `tgrid-sequencer worker` and `aggregate --queue`.
//!
//! [`service`] is `tgrid-sequencer run`: the HTTP API, durable state, batching pipeline and
//! on-chain settlement.

pub mod jobs;
pub mod service;

/// Aggregation lives in tgrid-settlement-proof (a provider settling its own results uses it too).
pub use tgrid_settlement_proof::aggregate::{
    aggregation_proofs, chunk_proofs, merge_proofs, AggregateError as Error, Aggregator, IncrementalTree, Step,
};

/// Result with the aggregation [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
