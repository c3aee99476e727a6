//! TensorGrid's contracts from Rust: typed bindings of the deployed interfaces, the deployment
//! file `Deploy.s.sol` writes, and a local devnet (a real anvil plus the real contracts deployed
//! by the Foundry script) for integration tests and `make demo`.
//!
//! Services (sequencer, provider daemon, auditor tools) depend on this crate; nothing under
//! `circuits/` does.

mod amount;
pub mod bindings;
mod client;
mod deployment;
mod devnet;
mod error;
pub mod governance;
pub mod keys;
pub mod market;

pub use amount::{format_tgrid, parse_tgrid};
pub use client::{chain_now, check_chain, parse_signer, reader, signing};

/// Largest block range asked of the node in one `eth_getLogs`.
pub const MAX_LOG_RANGE: u64 = 5_000;
pub use deployment::{Deployment, DEFAULT_DEPLOYMENT, DEFAULT_RPC_URL, DEVNET_CHAIN_ID};
pub use devnet::{advance_time, Devnet, DevnetConfig};
pub use error::{Error, Result};
pub use governance::{confirm, Governance, Proposal};
pub use market::order_outcome;
