//! Against a real anvil with the real contracts deployed by Deploy.s.sol.

use std::path::PathBuf;

use alloy::network::EthereumWallet;
use alloy::primitives::{B256, U256};
use alloy::providers::{Provider, ProviderBuilder};
use tgrid_chain::bindings::{IKeyedGroth16Verifier, IModelRegistry, ISettlement, IStaking, IERC20};
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
    let settlement = ISettlement::new(d.settlement, &admin_rpc);
    assert!(settlement.isSequencer(admin).call().await.unwrap());
    assert!(!settlement.isSequencer(devnet.address(1)).call().await.unwrap());
    assert_eq!(settlement.verifier().call().await.unwrap(), d.verifier);
    let key_id = IKeyedGroth16Verifier::new(d.verifier, &admin_rpc).VERIFYING_KEY_ID().call().await.unwrap();
    assert_eq!(key_id, d.verifying_key_id);
    assert!(d.verifier_is_insecure(), "the default devnet verifier must say it is insecure: {key_id}");

    // A provider gets tokens and stakes through the real Staking contract.
    let provider = devnet.address(1);
    let token = IERC20::new(d.token, &admin_rpc);
    let amount = U256::from(1_000u64) * U256::from(10u64).pow(U256::from(18u64));
    token.transfer(provider, amount).send().await.unwrap().get_receipt().await.unwrap();
    let provider_rpc = ProviderBuilder::new().wallet(EthereumWallet::from(devnet.signer(1))).connect_http(url);
    IERC20::new(d.token, &provider_rpc).approve(d.staking, amount).send().await.unwrap().get_receipt().await.unwrap();
    let staking = IStaking::new(d.staking, &provider_rpc);
    let receipt = staking.stake(amount).send().await.unwrap().get_receipt().await.unwrap();
    assert!(receipt.status());
    assert_eq!(staking.freeStake(provider).call().await.unwrap(), amount);
    // Staking more than the provider owns reverts, with the revert surfaced as an error.
    assert!(staking.stake(U256::from(1u64)).send().await.is_err());
}

alloy::sol! {
    /// The settlement entry of contracts/interfaces/ITaskEscrow.sol (only Settlement may call it;
    /// the test impersonates the Settlement contract on anvil to settle without a proof).
    #[sol(rpc)]
    interface IEscrowSettle {
        struct Leaf {
            bytes32 taskId;
            bytes32 modelId;
            bytes32 inputCommitment;
            bytes32 outputCommitment;
            address provider;
        }
        function settleTasks(Leaf[] calldata leaves) external;
    }
}

/// Settled tasks are found from the chain (TaskAccepted by provider, less TaskClaimed, kept if
/// `claimable`) and claimed in chunks; each provider sees only its own; a claimed task is no
/// longer listed.
#[tokio::test(flavor = "multi_thread")]
async fn providers_find_and_claim_their_settled_tasks() {
    use tgrid_chain::bindings::ITaskEscrow;
    let devnet = tokio::task::spawn_blocking(move || Devnet::start(&DevnetConfig::new(repo_root())))
        .await
        .unwrap()
        .expect("devnet");
    let d = devnet.deployment().clone();
    let url: alloy::transports::http::reqwest::Url = devnet.rpc_url().parse().unwrap();
    let wallet =
        |i: usize| ProviderBuilder::new().wallet(EthereumWallet::from(devnet.signer(i))).connect_http(url.clone());
    let ether = |n: u64| U256::from(n) * U256::from(10u64).pow(U256::from(18u64));
    let admin = wallet(0);
    let (p1, p2) = (devnet.address(1), devnet.address(2));
    for i in [1, 2] {
        IERC20::new(d.token, &admin)
            .transfer(devnet.address(i), ether(1_000))
            .send()
            .await
            .unwrap()
            .get_receipt()
            .await
            .unwrap();
        let w = wallet(i);
        IERC20::new(d.token, &w).approve(d.staking, ether(1_000)).send().await.unwrap().get_receipt().await.unwrap();
        IStaking::new(d.staking, &w).stake(ether(1_000)).send().await.unwrap().get_receipt().await.unwrap();
    }
    IERC20::new(d.token, &admin).approve(d.escrow, ether(1_000)).send().await.unwrap().get_receipt().await.unwrap();

    // Three tasks of 20 TGRID: provider 1 accepts two, provider 2 one.
    let escrow = ITaskEscrow::new(d.escrow, &admin);
    let deadline = U256::from(tgrid_chain::chain_now(&admin).await.unwrap() + 3_600);
    let mut leaves = Vec::new();
    for (i, who) in [1usize, 2, 1].into_iter().enumerate() {
        let input = B256::repeat_byte(0x10 + i as u8);
        let receipt = escrow
            .postTask(d.devnet_model_id, input, ether(20), U256::ZERO, deadline)
            .send()
            .await
            .unwrap()
            .get_receipt()
            .await
            .unwrap();
        let id = receipt
            .inner
            .logs()
            .iter()
            .find_map(|l| l.log_decode::<ITaskEscrow::TaskPosted>().ok())
            .unwrap()
            .inner
            .data
            .taskId;
        ITaskEscrow::new(d.escrow, &wallet(who)).acceptTask(id).send().await.unwrap().get_receipt().await.unwrap();
        leaves.push(IEscrowSettle::Leaf {
            taskId: id,
            modelId: d.devnet_model_id,
            inputCommitment: input,
            outputCommitment: B256::repeat_byte(0x20 + i as u8),
            provider: devnet.address(who),
        });
    }
    // Nothing is claimable before settlement.
    assert!(tgrid_chain::claimable_tasks(&admin, d.escrow, d.start_block, p1).await.unwrap().is_empty());

    let node = ProviderBuilder::new().connect_http(url.clone());
    node.raw_request::<_, serde_json::Value>("anvil_impersonateAccount".into(), (d.settlement,)).await.unwrap();
    node.raw_request::<_, serde_json::Value>("anvil_setBalance".into(), (d.settlement, "0x56BC75E2D63100000"))
        .await
        .unwrap();
    let receipt = IEscrowSettle::new(d.escrow, &node)
        .settleTasks(leaves.clone())
        .from(d.settlement)
        .send()
        .await
        .unwrap()
        .get_receipt()
        .await
        .unwrap();
    assert!(receipt.status());

    // 1 % protocol fee (the devnet default), fixed at settlement.
    let pay = ether(20) - ether(20) / U256::from(100u64);
    let mine = tgrid_chain::claimable_tasks(&admin, d.escrow, d.start_block, p1).await.unwrap();
    let ids: Vec<B256> = mine.iter().map(|c| c.task_id).collect();
    assert_eq!(ids, vec![leaves[0].taskId, leaves[2].taskId]);
    assert!(mine.iter().all(|c| c.pay == pay && c.collateral == ether(20)), "{mine:?}");
    let theirs = tgrid_chain::claimable_tasks(&admin, d.escrow, d.start_block, p2).await.unwrap();
    assert_eq!(theirs.len(), 1);

    // Provider 1 claims its two tasks one per transaction.
    let w1 = wallet(1);
    let before = IERC20::new(d.token, &w1).balanceOf(p1).call().await.unwrap();
    let claimed = tgrid_chain::claim_settled(&w1, d.escrow, &ids, 1).await.unwrap();
    assert_eq!((claimed.tasks, claimed.paid, claimed.collateral_released), (2, pay * U256::from(2u64), ether(40)));
    assert_eq!(claimed.transactions.len(), 2);
    assert_eq!(IERC20::new(d.token, &w1).balanceOf(p1).call().await.unwrap(), before + claimed.paid);
    let account = IStaking::new(d.staking, &w1).account(p1).call().await.unwrap();
    assert_eq!((U256::from(account.locked), account.tasksSettled), (U256::ZERO, 2));
    assert!(tgrid_chain::claimable_tasks(&admin, d.escrow, d.start_block, p1).await.unwrap().is_empty());
    // Claiming again reverts (already claimed); provider 2's task is untouched.
    assert!(tgrid_chain::claim_settled(&w1, d.escrow, &ids[..1], 200).await.is_err());
    assert!(tgrid_chain::claim_settled(&w1, d.escrow, &[leaves[1].taskId], 200).await.is_err());
    assert_eq!(tgrid_chain::claimable_tasks(&admin, d.escrow, d.start_block, p2).await.unwrap(), theirs);
}
