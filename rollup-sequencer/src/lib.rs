//! TensorGrid rollup sequencer library: turns task proofs into batch proofs.
//!
//! [`Aggregator`] holds the registry, the aggregation circuits and one normalizer per model
//! (built on first use from the model files the registry file points to). It proves leaves in
//! parallel and merges them along the RFC 6962 tree shape, in parallel across independent
//! subtrees ([`Aggregator::aggregate`]), or as proofs arrive ([`IncrementalTree`]).
//!
//! [`service`] is `tgrid-sequencer run`: the HTTP API, durable state, batching pipeline and
//! on-chain settlement.

mod aggregate;
mod error;
pub mod service;

pub use aggregate::{Aggregator, IncrementalTree, Step};
pub use error::{Error, Result};
