//! A model registration and a parameter change through a real governance vote on anvil:
//! delegate, propose, vote, queue in the timelock, execute.

use std::path::PathBuf;

use alloy::network::EthereumWallet;
use alloy::primitives::{B256, U256};
use alloy::providers::{Provider, ProviderBuilder};
use tgrid_chain::bindings::IGovernor::ProposalState;
use tgrid_chain::bindings::{IModelRegistry, ITaskMarket, IVotes};
use tgrid_chain::{advance_time, Devnet, DevnetConfig, Governance, Proposal};

#[tokio::test(flavor = "multi_thread")]
async fn the_dao_registers_a_model_and_changes_a_parameter() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let devnet = tokio::task::spawn_blocking(move || Devnet::start(&DevnetConfig::new(repo))).await.unwrap().unwrap();
    let d = devnet.deployment().clone();
    let url: alloy::transports::http::reqwest::Url = devnet.rpc_url().parse().unwrap();
    let rpc = ProviderBuilder::new().wallet(EthereumWallet::from(devnet.signer(0))).connect_http(url.clone());
    // Failed sends go through their own provider: alloy's nonce cache counts a transaction whose
    // gas estimation reverted, which would leave a nonce gap in the main provider.
    let probe = ProviderBuilder::new().wallet(EthereumWallet::from(devnet.signer(0))).connect_http(url);

    // The supply holder votes with its own tokens.
    let holder = devnet.address(0);
    IVotes::new(d.token, &rpc).delegate(holder).send().await.unwrap().get_receipt().await.unwrap();
    advance_time(&rpc, 1).await.unwrap();
    assert!(IVotes::new(d.token, &rpc).getVotes(holder).call().await.unwrap() > U256::ZERO);

    let model_id = B256::repeat_byte(0x11);
    let new_root = B256::repeat_byte(0x22);
    let registry = IModelRegistry::new(d.registry, &rpc);
    assert!(!registry.isModelActive(model_id).call().await.unwrap());
    let register = Proposal::single(
        d.registry,
        &IModelRegistry::registerModelCall {
            modelId: model_id,
            circuitDigest: B256::repeat_byte(0x33),
            uri: "devnet://dao-test".into(),
            newRoot: new_root,
        },
        "register the dao-test model",
    );
    let market = ITaskMarket::new(d.market, &rpc);
    let before = market.parameters().call().await.unwrap().maxBatchSize;
    let resize = Proposal::single(
        d.market,
        &tgrid_chain::bindings::ITaskMarket::setMaxBatchSizeCall { maxBatchSize: U256::from(64u64) },
        "settle at most 64 tasks per batch",
    );
    assert_ne!(before, U256::from(64u64));

    // The deployment's root, replaced by `register`, is then revoked for good.
    let revoke = Proposal::single(
        d.registry,
        &IModelRegistry::revokeRootCall { root: d.registry_root },
        "revoke the deployment's registry root",
    );

    let dao = Governance::new(d.governor, &rpc);
    for proposal in [&register, &resize, &revoke] {
        let id = dao.propose(proposal).await.unwrap();
        assert_eq!(dao.state(id).await.unwrap(), ProposalState::Pending);
        // Executing before the vote is refused with the step named.
        let err = Governance::new(d.governor, &probe).execute(proposal).await.unwrap_err().to_string();
        assert!(err.starts_with("Governor.execute"), "{err}");
        let now = rpc.get_block_by_number(Default::default()).await.unwrap().unwrap().header.timestamp;
        advance_time(&rpc, dao.voting_start(id).await.unwrap() - now + 1).await.unwrap();
        dao.vote(id, 1).await.unwrap();
        let now = rpc.get_block_by_number(Default::default()).await.unwrap().unwrap().header.timestamp;
        advance_time(&rpc, dao.voting_deadline(id).await.unwrap() - now + 1).await.unwrap();
        assert_eq!(dao.state(id).await.unwrap(), ProposalState::Succeeded);
        dao.queue(proposal).await.unwrap();
        let now = rpc.get_block_by_number(Default::default()).await.unwrap().unwrap().header.timestamp;
        advance_time(&rpc, dao.eta(id).await.unwrap() - now + 1).await.unwrap();
        dao.execute(proposal).await.unwrap();
        assert_eq!(dao.state(id).await.unwrap(), ProposalState::Executed);
    }
    assert!(registry.isModelActive(model_id).call().await.unwrap());
    assert_eq!(registry.registryRoot().call().await.unwrap(), new_root);
    assert_eq!(market.parameters().call().await.unwrap().maxBatchSize, U256::from(64u64));
    let old = registry.rootStatus(d.registry_root).call().await.unwrap();
    assert_eq!(old.status, tgrid_chain::bindings::IModelRegistry::RootStatus::Revoked);

    // Nobody but the timelock may change a parameter directly.
    let direct = ITaskMarket::new(d.market, &probe).setMaxBatchSize(U256::from(8u64)).send().await;
    assert!(direct.is_err(), "the deployer kept a role it should have renounced");
}
