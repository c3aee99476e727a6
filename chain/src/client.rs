//! Connecting to a node as one account, and the chain reads every role's tool shares: the
//! chain's clock and the node's chain id.

use alloy::network::EthereumWallet;
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use alloy::signers::local::PrivateKeySigner;

use crate::{Deployment, Error, Result};

fn chain_err(step: &str, e: impl std::fmt::Display) -> Error {
    Error::Chain { step: step.to_string(), reason: e.to_string() }
}

/// Parses a 0x-prefixed secp256k1 private key.
pub fn parse_signer(private_key: &str) -> Result<PrivateKeySigner> {
    // The key itself never appears in the error.
    private_key
        .trim()
        .parse::<PrivateKeySigner>()
        .map_err(|_| chain_err("private key", "not a 0x-prefixed 32-byte hex secp256k1 key"))
}

fn parse_url(rpc_url: &str) -> Result<alloy::transports::http::reqwest::Url> {
    rpc_url.parse().map_err(|e| chain_err("rpc url", format!("{rpc_url:?}: {e}")))
}

/// A read-only connection.
pub fn reader(rpc_url: &str) -> Result<DynProvider> {
    Ok(ProviderBuilder::new().disable_recommended_fillers().connect_http(parse_url(rpc_url)?).erased())
}

/// A connection whose transactions `signer` signs. Nonces are asked from the node for every
/// transaction (never cached): a call whose estimation reverts must not leave a nonce gap, and
/// several tools may send from one account.
pub fn signing(rpc_url: &str, signer: PrivateKeySigner) -> Result<DynProvider> {
    Ok(ProviderBuilder::new()
        .disable_recommended_fillers()
        .with_gas_estimation()
        .with_simple_nonce_management()
        .fetch_chain_id()
        .wallet(EthereumWallet::from(signer))
        .connect_http(parse_url(rpc_url)?)
        .erased())
}

/// Checks that the node at `rpc_url` serves the chain `deployment` was made for (its addresses
/// mean nothing elsewhere) and returns the chain id.
pub async fn check_chain<P: Provider>(provider: &P, rpc_url: &str, deployment: &Deployment) -> Result<u64> {
    let node =
        provider.get_chain_id().await.map_err(|e| chain_err(&format!("cannot reach the node at {rpc_url}"), e))?;
    if node != deployment.chain_id {
        return Err(Error::WrongChain { rpc_url: rpc_url.to_string(), node, deployment: deployment.chain_id });
    }
    Ok(node)
}

/// The latest block's timestamp: the clock deadlines are measured by (on a devnet it may run
/// ahead of the wall clock).
pub async fn chain_now<P: Provider>(provider: &P) -> Result<u64> {
    let block = provider
        .get_block_by_number(Default::default())
        .await
        .map_err(|e| chain_err("eth_getBlockByNumber", e))?
        .ok_or_else(|| chain_err("eth_getBlockByNumber", "the node has no latest block"))?;
    Ok(block.header.timestamp)
}
