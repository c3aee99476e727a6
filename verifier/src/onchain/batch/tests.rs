//! The batch audit on calldata, events and keys built in memory: forged leaves, disagreeing
//! events, repeated orders, random calldata and the deployed key.

use std::path::PathBuf;

use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::SolCall;
use tgrid_aggregation::batch::settlement_public_input;
use tgrid_chain::market::{MarketDomain, Order, SettleCall, SettlementBatch, SettlementItem, SignedOrder};

use super::audit::{assign_outcomes, leaf_text};
use super::*;
use crate::onchain::{LeafEvent, SKIP_BAD_SIGNATURE, SKIP_NONCE_USED};

fn domain() -> MarketDomain {
    MarketDomain { chain_id: 31337, market: Address::repeat_byte(0x11) }
}

fn key(byte: u8) -> PrivateKeySigner {
    PrivateKeySigner::from_bytes(&B256::repeat_byte(byte)).unwrap()
}

fn order(poster: Address, book: u32, index: u32) -> Order {
    Order {
        poster,
        provider: Address::ZERO,
        model_id: B256::repeat_byte(0x30 + (index % 2) as u8),
        input_commitment: B256::repeat_byte(0x40 + index as u8),
        payment: 10u128.pow(18) * u128::from(1 + index),
        collateral: 10u128.pow(20),
        deadline: 1_800_000_000,
        nonce: Order::nonce_of(book, index),
        slash_bps: 5_000,
        poster_share_bps: 5_000,
    }
}

fn item(signed: SignedOrder, provider: u8, output: u8) -> SettlementItem {
    SettlementItem {
        order: signed,
        provider: Address::repeat_byte(provider),
        output_commitment: B256::repeat_byte(output),
    }
}

/// Four orders of two posters proven by two providers; leaf 2 carries a signature by another
/// key than its poster's (a forgery the contract skips).
fn items() -> Vec<SettlementItem> {
    let (a, b, forger) = (key(1), key(2), key(3));
    let d = domain();
    let sign = |k: &PrivateKeySigner, book, index| SignedOrder::sign(order(k.address(), book, index), k, &d).unwrap();
    let genuine = sign(&a, 0, 2);
    let forged_sig = SignedOrder::sign(order(forger.address(), 0, 2), &forger, &d).unwrap().signature;
    let forged = SignedOrder { order: genuine.order.clone(), signature: forged_sig };
    vec![
        item(sign(&a, 0, 0), 0xe1, 0xa0),
        item(sign(&b, 1, 0), 0xe2, 0xa1),
        item(forged, 0xe1, 0xa2),
        item(sign(&a, 0, 1), 0xe2, 0xa3),
    ]
}

/// The call as the chain carries it: built, ABI-encoded and decoded back.
fn call_of(items: &[SettlementItem]) -> SettleCall {
    let batch = SettlementBatch::build(items).unwrap();
    let input = batch.call(B256::repeat_byte(0x77), [U256::from(5u64); 8]).abi_encode();
    SettlementBatch::decode_call(&input).unwrap()
}

/// The event the market would emit for `call` with the leaves `paid` paid.
fn event_of(call: &SettleCall, paid: &[usize], fee_bps: u64) -> ITaskMarket::BatchSettled {
    let d = domain();
    let root = recompute_root(call, &d).unwrap();
    let items = call.batch.items().unwrap();
    let payments: U256 = paid.iter().map(|&i| U256::from(items[i].order.order.payment)).sum();
    let fees: U256 = paid
        .iter()
        .map(|&i| U256::from(items[i].order.order.payment) * U256::from(fee_bps) / U256::from(10_000u64))
        .sum();
    let input = settlement_public_input(&root.0, &call.registry_root.0, items.len() as u64);
    ITaskMarket::BatchSettled {
        batchRoot: root,
        registryRoot: call.registry_root,
        settler: Address::repeat_byte(0x5e),
        taskCount: U256::from(items.len()),
        paidCount: U256::from(paid.len()),
        providerPay: payments - fees,
        fees,
        publicInput: U256::from_be_bytes(input),
    }
}

fn check<'a>(audit: &'a BatchAudit, name: &str) -> &'a Check {
    audit.checks.iter().find(|c| c.name == name).unwrap()
}

#[test]
fn a_settled_batch_is_rebuilt_from_calldata_and_its_forged_leaf_reported() {
    let items = items();
    let call = call_of(&items);
    let d = domain();
    let forged_hash = items[2].order.hash(&d);
    let skipped = [LeafEvent::Skipped { hash: forged_hash, reason: SKIP_BAD_SIGNATURE }];
    let event = event_of(&call, &[0, 1, 3], 100);
    let audit = BatchAudit::build(&call, &d, &event, &skipped, Some(U256::from(100u64))).unwrap();
    assert!(audit.ok(), "{:?}", audit.checks);
    assert_eq!(audit.tally(), (3, 0, 1));
    for (l, item) in audit.leaves.iter().zip(&items) {
        // Every order comes back with its fields and its hash, the task id of the leaf.
        assert_eq!(l.item, *item);
        assert_eq!(l.hash, item.order.hash(&d));
        assert_eq!(l.leaf.task_id, l.hash.0);
        assert_eq!(l.leaf.provider, item.provider.0 .0);
    }
    assert!(audit.leaves[2].signature.as_ref().unwrap_err().contains("recovers to"));
    assert_eq!(audit.leaves[2].outcome, LeafOutcome::Skipped(SKIP_BAD_SIGNATURE));
    assert_eq!(audit.leaves[2].fee, None);
    // 1 % of 1 TGRID.
    assert_eq!(audit.leaves[0].fee, Some(U256::from(10u64.pow(16))));
    assert_eq!(audit.batch_root, Some(event.batchRoot.0));
    assert_eq!(audit.public_input, Some(event.publicInput.to_be_bytes::<32>()));

    let json = leaf_json(&audit.leaves[2]);
    assert_eq!(json["outcome"], "skipped");
    assert_eq!(json["reason"], "BadPosterSignature");
    assert_eq!(json["signature_valid"], false);
    assert_eq!(json["order_hash"], forged_hash.to_string());
    assert_eq!(json["book"], 0);
    assert_eq!(json["order_index"], 2);
    assert_eq!(json["payment"], "3");
    assert_eq!(leaf_json(&audit.leaves[0])["provider_pay"], "0.99");
    let json = leaf_json(&audit.leaves[1]);
    assert_eq!((json["outcome"].as_str(), json["reason"].as_str()), (Some("paid"), None));
    assert_eq!(json["book"], 1);
    assert!(leaf_text(&audit.leaves[2]).contains("SIGNATURE INVALID"));
}

#[test]
fn an_event_that_disagrees_with_the_calldata_fails_its_check() {
    let items = items();
    let call = call_of(&items);
    let d = domain();
    let skipped = [LeafEvent::Skipped { hash: items[2].order.hash(&d), reason: SKIP_BAD_SIGNATURE }];
    let good = event_of(&call, &[0, 1, 3], 0);
    let failing = |event: &ITaskMarket::BatchSettled, events: &[LeafEvent]| -> Vec<&'static str> {
        let audit = BatchAudit::build(&call, &d, event, events, None).unwrap();
        audit.checks.iter().filter(|c| !c.ok).map(|c| c.name).collect()
    };
    assert!(failing(&good, &skipped).is_empty());
    let mut e = good.clone();
    e.batchRoot = B256::repeat_byte(9);
    assert_eq!(failing(&e, &skipped), ["batch_root"]);
    let mut e = good.clone();
    e.publicInput += U256::from(1u64);
    assert_eq!(failing(&e, &skipped), ["public_input"]);
    let mut e = good.clone();
    e.taskCount = U256::from(5u64);
    assert_eq!(failing(&e, &skipped), ["count"]);
    let mut e = good.clone();
    e.registryRoot = B256::ZERO;
    assert_eq!(failing(&e, &skipped), ["registry_root"]);
    let mut e = good.clone();
    e.fees += U256::from(1u64);
    assert_eq!(failing(&e, &skipped), ["outcomes"]);
    // The forged leaf reported paid: the signature check and the paid count disagree.
    assert_eq!(failing(&good, &[]), ["signatures", "outcomes"]);
    // A genuine leaf reported skipped for its signature.
    let wrong = [LeafEvent::Skipped { hash: items[0].order.hash(&d), reason: SKIP_BAD_SIGNATURE }];
    assert!(failing(&good, &wrong).contains(&"signatures"));
    // An event for an order the batch does not hold.
    let stray = [skipped[0], LeafEvent::Unpaid { hash: B256::repeat_byte(1), reason: 2 }];
    let audit = BatchAudit::build(&call, &d, &good, &stray, None).unwrap();
    assert!(check(&audit, "outcomes").detail.contains("not in the batch"), "{:?}", audit.checks);
}

#[test]
fn repeated_orders_get_their_events_in_leaf_order() {
    let d = domain();
    let a = key(1);
    let o = SignedOrder::sign(order(a.address(), 0, 0), &a, &d).unwrap();
    let h = o.hash(&d);
    let items = vec![item(o.clone(), 0xe1, 1), item(o.clone(), 0xe1, 1), item(o, 0xe2, 2)];
    let hashes = [h, h, h];
    let (nonce_used, unpaid) = (LeafOutcome::Skipped(SKIP_NONCE_USED), LeafOutcome::Unpaid(2));
    let ev = |o: LeafOutcome| match o {
        LeafOutcome::Skipped(reason) => LeafEvent::Skipped { hash: h, reason },
        LeafOutcome::Unpaid(reason) => LeafEvent::Unpaid { hash: h, reason },
        LeafOutcome::Paid => unreachable!(),
    };
    // The first settles and is paid; the repeats find its nonce used.
    let (out, problems) = assign_outcomes(&hashes, &[ev(nonce_used), ev(nonce_used)]);
    assert_eq!(out, [LeafOutcome::Paid, nonce_used, nonce_used]);
    assert!(problems.is_empty());
    // Skipped for its deadline... then settled by none: every leaf has its event.
    let late = LeafOutcome::Skipped(2);
    let (out, _) = assign_outcomes(&hashes, &[ev(late), ev(late), ev(late)]);
    assert_eq!(out, [late; 3]);
    // Settled unpaid first.
    let (out, _) = assign_outcomes(&hashes, &[ev(unpaid), ev(nonce_used), ev(nonce_used)]);
    assert_eq!(out, [unpaid, nonce_used, nonce_used]);
    // Two paid leaves of one order cannot be.
    let (_, problems) = assign_outcomes(&hashes, &[ev(nonce_used)]);
    assert_eq!(problems.len(), 1, "{problems:?}");

    let call = call_of(&items);
    let event = event_of(&call, &[0], 0);
    let audit = BatchAudit::build(&call, &d, &event, &[ev(nonce_used), ev(nonce_used)], None).unwrap();
    assert!(audit.ok(), "{:?}", audit.checks);
    assert_eq!(audit.tally(), (1, 0, 2));
}

/// Random bytes and mutated calldata are refused or audited, never a panic.
#[test]
fn random_and_mutated_calldata_never_panic() {
    let items = items();
    let batch = SettlementBatch::build(&items).unwrap();
    let input = batch.call(B256::repeat_byte(0x77), [U256::from(5u64); 8]).abi_encode();
    let d = domain();
    let event = event_of(&call_of(&items), &[0, 1, 3], 0);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut decoded = 0;
    for round in 0..3_000 {
        let bytes: Vec<u8> = if round % 3 == 0 {
            let len = (next() % 1_200) as usize;
            let mut b: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if round % 2 == 0 && b.len() >= 4 {
                b[..4].copy_from_slice(&input[..4]);
            }
            b
        } else {
            let mut b = input.clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() as usize) % b.len();
                b[at] = next() as u8;
            }
            if round % 5 == 0 {
                b.truncate((next() as usize) % b.len());
            }
            b
        };
        if let Ok(call) = SettlementBatch::decode_call(&bytes) {
            decoded += 1;
            let audit = BatchAudit::build(&call, &d, &event, &[], Some(U256::from(50u64))).unwrap();
            let _ = audit.leaves.iter().map(leaf_json).count();
            let _ = recompute_root(&call, &d);
        }
    }
    assert!(decoded > 0, "some mutations keep the calldata well formed");
    assert!(SettlementBatch::decode_call(&[]).is_err());
}

#[test]
fn leaf_events_are_read_from_raw_logs() {
    let h = B256::repeat_byte(4);
    let log =
        |topic0: B256, data: Vec<u8>| alloy::primitives::Log::new(Address::ZERO, vec![topic0, h], data.into()).unwrap();
    let word = |v: u8| {
        let mut w = vec![0u8; 32];
        w[31] = v;
        w
    };
    let skipped = log(ITaskMarket::OrderSkipped::SIGNATURE_HASH, word(3));
    assert_eq!(LeafEvent::of(&skipped), Some(LeafEvent::Skipped { hash: h, reason: 3 }));
    let unpaid = log(ITaskMarket::OrderUnpaid::SIGNATURE_HASH, word(2));
    assert_eq!(LeafEvent::of(&unpaid), Some(LeafEvent::Unpaid { hash: h, reason: 2 }));
    assert_eq!(LeafEvent::of(&log(ITaskMarket::OrderSkipped::SIGNATURE_HASH, vec![1; 32])), None);
    assert_eq!(LeafEvent::of(&log(ITaskMarket::BatchSettled::SIGNATURE_HASH, word(1))), None);
    assert_eq!(super::super::skip_reason(9), "unknown skip reason 9");
    assert_eq!(LeafOutcome::Unpaid(2).reason().as_deref(), Some("BookEmpty"));
}

/// The key step with the devnet key and a real settlement proof of it (the v1 fixture: the
/// step only needs its proof words and public input).
#[test]
fn the_proof_verifies_only_with_the_deployed_key() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../contracts/test/fixtures/groth16");
    let id = "wrap-production-r4q21g16-b2040e15e164b7bb-6f990bdc6e64c4c2d710109c5ea949d3ceec7851903ff7a22665a9a12f725714-insecure-devnet";
    let file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(format!("{id}.batch.g16.json"))).unwrap()).unwrap();
    let digest: B256 = file["key"]["verifying_key_digest"].as_str().unwrap().parse().unwrap();
    let input = parse_hex::<32>(file["public_input"].as_str().unwrap(), "input").unwrap();
    let mut proof = [U256::ZERO; 8];
    for (w, s) in proof.iter_mut().zip(file["proof"].as_array().unwrap()) {
        *w = s.as_str().unwrap().parse().unwrap();
    }
    let deployed = |digest: Option<B256>, key_id: Option<&str>| KeyStep {
        verifier: Address::repeat_byte(0xaa),
        key_id: key_id.map(str::to_string),
        deployed_digest: digest,
        vk_path: None,
        insecure: Some("devnet".into()),
    };
    let names = |checks: &[Check]| checks.iter().map(|c| (c.name, c.ok)).collect::<Vec<_>>();

    // Found by the deployed key id in the key directory, verified.
    let mut key = deployed(Some(digest), Some(id));
    let checks = verify_proof(&proof, Some(input), None, &dir, &mut key).unwrap();
    assert_eq!(names(&checks), [("key_digest", true), ("groth16", true)], "{checks:?}");
    assert!(key.vk_path.unwrap().ends_with(&format!("{id}.vk.json")));
    // Another public input or a changed proof word: the proof does not verify.
    let mut other = input;
    other[31] ^= 1;
    let checks = verify_proof(&proof, Some(other), None, &dir, &mut deployed(Some(digest), Some(id))).unwrap();
    assert_eq!(names(&checks), [("key_digest", true), ("groth16", false)]);
    let mut bent = proof;
    bent[0] += U256::from(1u64);
    let checks = verify_proof(&bent, Some(input), None, &dir, &mut deployed(Some(digest), Some(id))).unwrap();
    assert_eq!(names(&checks), [("key_digest", true), ("groth16", false)]);
    // A verifier built from another key (the accept-all stub answers 1 to everything).
    let stub = Some(B256::with_last_byte(1));
    let vk = dir.join(format!("{id}.vk.json"));
    let (check, e) = verify_proof(&proof, Some(input), Some(&vk), &dir, &mut deployed(stub, None)).unwrap_err();
    assert!(!check.ok && check.name == "key_digest");
    assert!(
        e.to_string().contains("with digest 0x0000000000000000000000000000000000000000000000000000000000000001"),
        "{e}"
    );
    // No key id to find the key by, no digest to match it to, no key file.
    let (_, e) = verify_proof(&proof, Some(input), None, &dir, &mut deployed(stub, None)).unwrap_err();
    assert!(e.to_string().contains("does not answer VERIFYING_KEY_ID"), "{e}");
    let (_, e) = verify_proof(&proof, Some(input), Some(&vk), &dir, &mut deployed(None, None)).unwrap_err();
    assert!(e.to_string().contains("does not answer VERIFYING_KEY_DIGEST"), "{e}");
    let (_, e) =
        verify_proof(&proof, Some(input), None, Path::new("/nonexistent"), &mut deployed(Some(digest), Some(id)))
            .unwrap_err();
    assert!(e.downcast_ref::<tgrid_cli::BadInput>().is_some(), "{e}");
    let (_, e) = verify_proof(&proof, Some(input), None, &dir, &mut deployed(Some(digest), Some("../x"))).unwrap_err();
    assert!(e.downcast_ref::<tgrid_cli::BadInput>().is_some(), "{e}");
}
