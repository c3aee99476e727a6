//! The market layer (tgrid_chain::market) against a real anvil with the real TaskMarket deployed by
//! Deploy.s.sol: Rust order hashes and batch calldata agree with the contract, a batch built in
//! Rust settles (the verifier replaced by an accept-all stub through anvil_setCode, since a real
//! wrap proof takes minutes: tests/ settles with real proofs), and an order's outcome is found from
//! chain data (settled with its output, cancelled, disputed).

use std::path::PathBuf;

use alloy::network::EthereumWallet;
use alloy::primitives::{Address, B256, U256};
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use alloy::signers::local::PrivateKeySigner;
use tgrid_chain::bindings::IERC20;
use tgrid_chain::market::{
    Acceptance, Market, MarketDomain, Order, OrderOutcome, SettlementBatch, SettlementItem, SignedOrder,
};
use tgrid_chain::{advance_time, chain_now, order_outcome, Deployment, Devnet, DevnetConfig};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn tgrid(n: u64) -> U256 {
    U256::from(n) * U256::from(10u64).pow(U256::from(18u64))
}

struct World {
    devnet: Devnet,
    d: Deployment,
    domain: MarketDomain,
}

impl World {
    fn wallet(&self, i: usize) -> DynProvider {
        let url: alloy::transports::http::reqwest::Url = self.devnet.rpc_url().parse().unwrap();
        ProviderBuilder::new().wallet(EthereumWallet::from(self.devnet.signer(i))).connect_http(url).erased()
    }

    fn market(&self, i: usize) -> Market<DynProvider> {
        Market::new(&self.d, self.wallet(i))
    }

    fn order(&self, poster: &PrivateKeySigner, book: u32, index: u32, deadline: u64) -> SignedOrder {
        let order = Order {
            poster: poster.address(),
            provider: Address::ZERO,
            model_id: self.d.devnet_model_id,
            input_commitment: B256::repeat_byte(0x10 + index as u8),
            payment: 20 * 10u128.pow(18),
            collateral: 100 * 10u128.pow(18),
            deadline,
            nonce: Order::nonce_of(book, index),
            slash_bps: 5_000,
            poster_share_bps: 5_000,
        };
        SignedOrder::sign(order, poster, &self.domain).unwrap()
    }
}

async fn start() -> World {
    let devnet =
        tokio::task::spawn_blocking(|| Devnet::start(&DevnetConfig::new(repo_root()))).await.unwrap().expect("devnet");
    let d = devnet.deployment().clone();
    let domain = MarketDomain::of(&d);
    let world = World { devnet, d, domain };
    let admin = world.wallet(0);
    for i in 1..=4 {
        let sent = IERC20::new(world.d.token, &admin).transfer(world.devnet.address(i), tgrid(10_000)).send().await;
        sent.unwrap().get_receipt().await.unwrap();
    }
    world
}

#[tokio::test(flavor = "multi_thread")]
async fn rust_orders_and_batches_agree_with_the_contract_and_settle() {
    let w = start().await;
    let (poster_a, poster_b) = (w.devnet.signer(1), w.devnet.signer(2));
    let (prov_1, prov_2) = (w.devnet.address(3), w.devnet.address(4));
    let book_a = w.market(1).open_book(poster_a.address(), 8, tgrid(20)).await.unwrap().value;
    let book_b = w.market(2).open_book(poster_b.address(), 8, tgrid(20)).await.unwrap().value;
    assert_eq!((book_a, book_b), (0, 0));
    assert_eq!(
        w.market(1).book(poster_a.address(), 0).await.unwrap().remaining,
        alloy::primitives::Uint::from(160u128 * 10u128.pow(18))
    );

    let deadline = chain_now(&w.wallet(0)).await.unwrap() + 1_800;
    let items: Vec<SettlementItem> = (0..4u32)
        .map(|i| SettlementItem {
            order: w.order(if i % 2 == 0 { &poster_a } else { &poster_b }, 0, i, deadline),
            provider: if i < 2 { prov_1 } else { prov_2 },
            output_commitment: B256::repeat_byte(0xa0 + i as u8),
        })
        .collect();
    let batch = SettlementBatch::build(&items).unwrap();

    // The contract hashes every order as Rust does.
    let market = w.market(0);
    for item in &items {
        let on_chain = market.contract().hashOrder(item.order.order.to_sol()).call().await.unwrap();
        assert_eq!(on_chain, item.order.hash(&w.domain));
    }
    let computed = market
        .contract()
        .computePublicInput(batch.header.clone(), batch.leaves.clone(), w.d.registry_root)
        .call()
        .await
        .unwrap();
    let hashes: Vec<B256> = items.iter().map(|i| i.order.hash(&w.domain)).collect();
    assert_eq!(computed.orderHashes, hashes);

    // A wrong proof is refused with the contract's custom error, decoded.
    let call = batch.call(w.d.registry_root, [U256::from(1u64); 8]);
    let err = market
        .contract()
        .settleBatch(call.header.clone(), call.leaves.clone(), call.registryRoot, call.proof)
        .call()
        .await
        .map(|_| ())
        .map_err(|e| tgrid_chain::market::market_error("settleBatch", e).to_string())
        .unwrap_err();
    assert!(err.contains("MarketInvalidProof"), "{err}");

    // With an accept-all verifier, the Rust batch settles as a provider would self-settle it.
    let node = w.wallet(0);
    // PUSH1 1 PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN: returns true for any call.
    node.raw_request::<_, serde_json::Value>("anvil_setCode".into(), (w.d.verifier, "0x600160005260206000f3"))
        .await
        .unwrap();
    let settler = w.market(3);
    let sent = settler.contract().settleBatch(call.header, call.leaves, call.registryRoot, call.proof).send().await;
    let receipt = tgrid_chain::confirm("settleBatch", sent).await.unwrap();
    assert!(receipt.gas_used > 0);
    let earned = settler.earner(prov_1).await.unwrap();
    assert_eq!(earned.tasksSettled, 2);
    assert!(settler.nonce_used(poster_a.address(), items[0].order.order.nonce).await.unwrap());

    // Its outcome, from chain data: settled, paid, with its output, by provider 3's account.
    let outcome = order_outcome(&node, w.d.market, &w.domain, &items[2].order.order, w.d.start_block).await.unwrap();
    match outcome {
        OrderOutcome::Settled { paid, provider, output_commitment, settler: by, .. } => {
            assert!(paid);
            assert_eq!(provider, prov_2);
            assert_eq!(output_commitment, B256::repeat_byte(0xa2));
            assert_eq!(by, w.devnet.address(3));
        }
        other => panic!("{other:?}"),
    }
    // The earnings reach the provider.
    let before = IERC20::new(w.d.token, &node).balanceOf(prov_1).call().await.unwrap();
    let paid = settler.withdraw_earnings().await.unwrap().value;
    assert!(paid > U256::ZERO);
    assert_eq!(IERC20::new(w.d.token, &node).balanceOf(prov_1).call().await.unwrap(), before + paid);
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelled_and_disputed_orders_are_found_and_a_dispute_slashes_on_signed_terms() {
    let w = start().await;
    let poster = w.devnet.signer(1);
    let provider = w.devnet.signer(3);
    w.market(1).open_book(poster.address(), 4, tgrid(20)).await.unwrap();
    w.market(3).stake(provider.address(), tgrid(1_000)).await.unwrap();
    let node = w.wallet(0);
    let deadline = chain_now(&node).await.unwrap() + 1_800;
    let cancelled = w.order(&poster, 0, 0, deadline);
    let defaulted = w.order(&poster, 0, 1, deadline);

    // Open until something happens.
    assert_eq!(
        order_outcome(&node, w.d.market, &w.domain, &cancelled.order, w.d.start_block).await.unwrap(),
        OrderOutcome::Open
    );
    w.market(1).cancel(vec![cancelled.order.nonce]).await.unwrap();
    assert!(matches!(
        order_outcome(&node, w.d.market, &w.domain, &cancelled.order, w.d.start_block).await.unwrap(),
        OrderOutcome::Cancelled { .. }
    ));

    // A dispute before the deadline is refused with the contract's reason.
    let acceptance = Acceptance::sign(defaulted.hash(&w.domain), &provider, &w.domain).unwrap();
    acceptance.verify(&w.domain).unwrap();
    let err = w.market(2).dispute(&defaulted, &acceptance).await.unwrap_err().to_string();
    assert!(err.contains("MarketDeadlineNotPassed"), "{err}");
    // After it, anyone disputes: 50 % of the 100 TGRID collateral slashed, half of that (capped by
    // the 20 TGRID payment) to the poster.
    advance_time(&node, 1_801).await.unwrap();
    let poster_before = IERC20::new(w.d.token, &node).balanceOf(poster.address()).call().await.unwrap();
    let sent = w.market(2).dispute(&defaulted, &acceptance).await.unwrap();
    assert_eq!(sent.value, (tgrid(50), tgrid(20)));
    assert_eq!(
        IERC20::new(w.d.token, &node).balanceOf(poster.address()).call().await.unwrap(),
        poster_before + tgrid(20)
    );
    assert_eq!(
        w.market(0).bond(provider.address()).await.unwrap().bonded,
        alloy::primitives::Uint::from(950u128 * 10u128.pow(18))
    );
    match order_outcome(&node, w.d.market, &w.domain, &defaulted.order, w.d.start_block).await.unwrap() {
        OrderOutcome::Disputed { provider: p, slashed, .. } => {
            assert_eq!(p, provider.address());
            assert_eq!(slashed, tgrid(50));
        }
        other => panic!("{other:?}"),
    }
    // A second dispute of the same acceptance is refused.
    let err = w.market(2).dispute(&defaulted, &acceptance).await.unwrap_err().to_string();
    assert!(err.contains("MarketOrderClosed"), "{err}");
}
