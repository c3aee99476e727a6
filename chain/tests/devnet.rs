//! Against a real anvil with the real contracts deployed by Deploy.s.sol.

use std::path::PathBuf;

use alloy::network::EthereumWallet;
use alloy::primitives::{B256, U256};
use alloy::providers::{Provider, ProviderBuilder};
use tgrid_chain::bindings::{IKeyedGroth16Verifier, IModelRegistry, IERC20};
use tgrid_chain::market::Market;
use tgrid_chain::{Devnet, DevnetConfig};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

#[tokio::test(flavor = "multi_thread")]
async fn deploys_the_contracts_and_a_provider_stakes() {
    let root = B256::repeat_byte(0x42);
    let config = DevnetConfig::new(repo_root()).deploy_env("TGRID_REGISTRY_ROOT", root.to_string());
    let devnet = tokio::task::spawn_blocking(move || Devnet::start(&config)).await.unwrap().expect("devnet");
    let d = devnet.deployment().clone();
    assert_eq!(d.chain_id, 31337);

    let admin = devnet.address(0);
    let url: alloy::transports::http::reqwest::Url = devnet.rpc_url().parse().unwrap();
    let admin_rpc = ProviderBuilder::new().wallet(EthereumWallet::from(devnet.signer(0))).connect_http(url.clone());

    // What Deploy.s.sol promises: the registry root, the sequencer role, the insecure devnet key.
    let registry = IModelRegistry::new(d.registry, &admin_rpc);
    assert_eq!(registry.registryRoot().call().await.unwrap(), root);
    assert_eq!(registry.registryRoot().call().await.unwrap(), d.registry_root);
    let market = Market::new(&d, admin_rpc.clone().erased());
    assert!(market.is_sequencer(admin).await.unwrap());
    assert!(!market.is_sequencer(devnet.address(1)).await.unwrap());
    assert_eq!(market.parameters().await.unwrap().verifier, d.verifier);
    let key_id = IKeyedGroth16Verifier::new(d.verifier, &admin_rpc).VERIFYING_KEY_ID().call().await.unwrap();
    assert_eq!(key_id, d.verifying_key_id);
    assert!(d.verifier_is_insecure(), "the default devnet verifier must say it is insecure: {key_id}");

    // A provider gets tokens and bonds them in the market.
    let provider = devnet.address(1);
    let token = IERC20::new(d.token, &admin_rpc);
    let amount = U256::from(1_000u64) * U256::from(10u64).pow(U256::from(18u64));
    token.transfer(provider, amount).send().await.unwrap().get_receipt().await.unwrap();
    let provider_rpc = ProviderBuilder::new().wallet(EthereumWallet::from(devnet.signer(1))).connect_http(url);
    let market = Market::new(&d, provider_rpc.erased());
    market.stake(provider, amount).await.unwrap();
    assert_eq!(U256::from(market.bond(provider).await.unwrap().bonded), amount);
    // Bonding more than the provider owns reverts, with the revert surfaced as an error.
    assert!(market.stake(provider, U256::from(1u64)).await.is_err());
}
