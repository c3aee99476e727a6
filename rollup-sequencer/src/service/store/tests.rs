//! The store's records, indexes and reopening on a real sled database in a temporary directory.

use alloy::primitives::Address;
use alloy::signers::local::PrivateKeySigner;
use tgrid_chain::market::{Acceptance, MarketDomain, Order, SignedOrder};

use super::*;

fn signed(nonce: u64, model: u8, deadline: u64) -> SignedOrder {
    let key = PrivateKeySigner::from_bytes(&B256::repeat_byte(0x42)).unwrap();
    let order = Order {
        poster: key.address(),
        provider: Address::ZERO,
        model_id: B256::repeat_byte(model),
        input_commitment: B256::repeat_byte(2),
        payment: 1,
        collateral: 1,
        deadline,
        nonce,
        slash_bps: 0,
        poster_share_bps: 0,
    };
    let domain = MarketDomain { chain_id: 1, market: Address::ZERO };
    SignedOrder::sign(order, &key, &domain).unwrap()
}

fn record(id: u8) -> TaskRecord {
    let key = PrivateKeySigner::from_bytes(&B256::repeat_byte(0x43)).unwrap();
    let domain = MarketDomain { chain_id: 1, market: Address::ZERO };
    TaskRecord {
        task_id: format!("0x{}", hex::encode([id; 32])),
        provider: format!("0x{}", hex::encode([7u8; 20])),
        model_id: "0x01".into(),
        input_commitment: "0x02".into(),
        output_commitment: "0x03".into(),
        deadline: 100,
        received_at: 1,
        order: signed(u64::from(id), 1, 100),
        acceptance: Acceptance::sign(B256::repeat_byte(id), &key, &domain).unwrap(),
        proof_digest: Some(B256::repeat_byte(4)),
        failed_batches: 0,
        state: TaskState::Verified,
    }
}

fn plain(values: &[i8]) -> StoredOutput {
    StoredOutput::Plain(values.to_vec())
}

#[test]
fn the_relay_lists_orders_by_model_and_deadline_one_per_nonce() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        for (nonce, model, deadline) in [(1u64, 1u8, 300u64), (2, 1, 100), (3, 2, 200), (4, 1, 50)] {
            let order = signed(nonce, model, deadline);
            let record = OrderRecord { signed: order, acceptance: None, listed_at: 1 };
            store.put_order(&B256::repeat_byte(nonce as u8), &record).unwrap();
        }
        // Another order for a listed nonce is refused; the same one again is fine.
        let other = OrderRecord { signed: signed(2, 1, 999), acceptance: None, listed_at: 1 };
        assert!(store.put_order(&B256::repeat_byte(0x99), &other).is_err());
        let again = store.order(&B256::repeat_byte(2)).unwrap().unwrap();
        store.put_order(&B256::repeat_byte(2), &again).unwrap();
        store.flush_blocking().unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let listed = store.orders_of_model(&B256::repeat_byte(1), OrderPage::first(60, 10), |_, _| true).unwrap().0;
    let deadlines: Vec<u64> = listed.iter().map(|(_, r)| r.signed.order.deadline).collect();
    assert_eq!(deadlines, vec![100, 300], "nearest deadline first, expired ones left out");
    assert_eq!(store.orders_of_model(&B256::repeat_byte(1), OrderPage::first(0, 1), |_, _| true).unwrap().0.len(), 1);
    let poster = signed(1, 1, 1).order.poster;
    assert_eq!(store.order_for_nonce(&poster, 3).unwrap(), Some(B256::repeat_byte(3)));
    assert_eq!(store.order_for_nonce(&poster, 9).unwrap(), None);
}

#[test]
fn of_racing_acceptances_exactly_one_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let domain = MarketDomain { chain_id: 1, market: Address::ZERO };
    let hash = B256::repeat_byte(1);
    store.put_order(&hash, &OrderRecord { signed: signed(1, 1, 100), acceptance: None, listed_at: 1 }).unwrap();
    let providers: Vec<PrivateKeySigner> = (0..8).map(|_| PrivateKeySigner::random()).collect();
    let barrier = std::sync::Barrier::new(providers.len());
    let kept: Vec<Acceptance> = std::thread::scope(|s| {
        let racers: Vec<_> = providers
            .iter()
            .map(|key| {
                let (store, barrier) = (&store, &barrier);
                s.spawn(move || {
                    let mine = Acceptance::sign(hash, key, &domain).unwrap();
                    barrier.wait();
                    store.record_acceptance(&hash, &mine).unwrap()
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    // Every racer is told the same winner, and the store and its index hold that one.
    assert!(kept.iter().all(|a| a == &kept[0]), "{kept:?}");
    assert_eq!(store.order(&hash).unwrap().unwrap().acceptance.as_ref(), Some(&kept[0]));
    for key in &providers {
        let listed = store.accepted_by(&key.address(), 0).unwrap();
        assert_eq!(listed.len(), usize::from(key.address() == kept[0].provider), "{listed:?}");
    }
}

#[test]
fn records_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        store.insert_result(&[1; 32], &record(1), b"proof", None, &plain(&[-3, 0, 127])).unwrap();
        store.set_task_state(&[1; 32], TaskState::Batched { batch: 1 }).unwrap();
        assert_eq!(store.next_batch_id().unwrap(), 1);
        assert_eq!(store.next_batch_id().unwrap(), 2);
        store
            .put_batch(&BatchRecord {
                id: 2,
                tasks: vec![record(1).task_id],
                opened_at: 5,
                closed_at: None,
                state: BatchState::Open,
            })
            .unwrap();
        store.flush_blocking().unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let task = store.task(&[1; 32]).unwrap().unwrap();
    assert_eq!(task.state, TaskState::Batched { batch: 1 });
    assert_eq!(store.proof(&[1; 32]).unwrap().unwrap(), b"proof");
    assert_eq!(store.output(&[1; 32]).unwrap().unwrap(), plain(&[-3, 0, 127]));
    assert_eq!(store.batches().unwrap()[0].state, BatchState::Open);
    assert_eq!(store.next_batch_id().unwrap(), 3);
    assert!(store.task(&[2; 32]).unwrap().is_none());
}

#[test]
fn a_private_output_is_kept_encrypted_and_replaces_any_earlier_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.insert_result(&[1; 32], &record(1), b"p", None, &plain(&[5])).unwrap();
    let encrypted = StoredOutput::Encrypted(b"TGRIDENC...".to_vec());
    store.insert_result(&[1; 32], &record(1), b"p", None, &encrypted).unwrap();
    assert_eq!(store.output(&[1; 32]).unwrap(), Some(encrypted));
    assert!(store.outputs.get([1; 32]).unwrap().is_none(), "no plaintext left behind");
}

#[test]
fn a_providers_leaf_proof_is_kept_with_its_result_and_not_with_a_replacement() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.insert_result(&[1; 32], &record(1), b"p", Some(b"leaf"), &plain(&[5])).unwrap();
    assert_eq!(store.leaf_proof(&[1; 32]).unwrap().as_deref(), Some(&b"leaf"[..]));
    // A dropped result replaced by one without a leaf proof keeps no leaf of the old proof.
    store.insert_result(&[1; 32], &record(1), b"q", None, &plain(&[5])).unwrap();
    assert_eq!(store.leaf_proof(&[1; 32]).unwrap(), None);
    assert_eq!(store.leaf_proof(&[2; 32]).unwrap(), None);
}

#[test]
fn the_newest_sealing_key_of_a_provider_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let provider = PrivateKeySigner::random();
    let domain = MarketDomain { chain_id: 1, market: Address::ZERO };
    let announce =
        |key: u8, at: u64| SealingKeyAnnouncement::sign(B256::repeat_byte(key), at, &provider, &domain).unwrap();
    let id = provider.address().0 .0;
    assert_eq!(store.sealing_key(&id).unwrap(), None);
    assert_eq!(store.put_sealing_key(&announce(1, 10)).unwrap(), announce(1, 10));
    assert_eq!(store.put_sealing_key(&announce(2, 20)).unwrap(), announce(2, 20));
    // A replay of the older key does not take the newer one's place.
    assert_eq!(store.put_sealing_key(&announce(1, 10)).unwrap(), announce(2, 20));
    assert_eq!(store.sealing_key(&id).unwrap(), Some(announce(2, 20)));
}

#[test]
fn the_queue_and_live_batches_follow_every_write_and_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let batch = |id, state| BatchRecord { id, tasks: vec![], opened_at: 1, closed_at: None, state };
    {
        let store = Store::open(dir.path()).unwrap();
        // Deadlines 300, 100, 200: the queue hands out 100 first, whatever the arrival order.
        for (id, deadline) in [(1u8, 300), (2, 100), (3, 200)] {
            store.insert_result(&[id; 32], &TaskRecord { deadline, ..record(id) }, b"p", None, &plain(&[])).unwrap();
        }
        assert_eq!(store.queued_count(), 3);
        assert_eq!(store.next_queued().unwrap().unwrap().deadline, 100);
        store.set_task_state(&[2; 32], TaskState::Batched { batch: 1 }).unwrap();
        assert_eq!(store.next_queued().unwrap().unwrap().deadline, 200);
        store.set_task_state(&[3; 32], TaskState::Dropped { reason: "x".into() }).unwrap();
        assert_eq!(store.queued_count(), 1);
        // A failed batch puts its task back in the queue, counted.
        store
            .update_task(&[2; 32], |t| {
                t.failed_batches += 1;
                t.state = TaskState::Verified;
            })
            .unwrap();
        assert_eq!(store.next_queued().unwrap().unwrap().deadline, 100);
        assert_eq!(store.task(&[2; 32]).unwrap().unwrap().failed_batches, 1);
        // A dropped task resubmitted is queued again, once.
        store.insert_result(&[3; 32], &TaskRecord { deadline: 200, ..record(3) }, b"p", None, &plain(&[])).unwrap();
        store.insert_result(&[3; 32], &TaskRecord { deadline: 200, ..record(3) }, b"p", None, &plain(&[])).unwrap();
        assert_eq!(store.queued_count(), 3);

        store.put_batch(&batch(1, BatchState::Open)).unwrap();
        store.put_batch(&batch(2, BatchState::Proving)).unwrap();
        store.put_batch(&batch(3, BatchState::Failed { reason: "x".into() })).unwrap();
        store.put_batch(&batch(1, BatchState::Settled { tx: "0x01".into(), block: 1, gas_used: 1 })).unwrap();
        let live: Vec<u64> = store.live_batches().unwrap().iter().map(|b| b.id).collect();
        assert_eq!(live, vec![2]);
        store.flush_blocking().unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.queued_count(), 3);
    assert_eq!(store.next_queued().unwrap().unwrap().deadline, 100);
    assert_eq!(store.task(&[2; 32]).unwrap().unwrap().failed_batches, 1);
    let live: Vec<u64> = store.live_batches().unwrap().iter().map(|b| b.id).collect();
    assert_eq!(live, vec![2]);
}

#[test]
fn every_batch_state_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let states = [
        BatchState::Open,
        BatchState::Proving,
        BatchState::Proven { proof: "{}".into() },
        BatchState::Submitted {
            proof: "{}".into(),
            nonce: 7,
            txs: vec!["0x01".into(), "0x02".into()],
            raw: "0x02f8".into(),
            max_fee_per_gas: u128::MAX.to_string(),
            max_priority_fee_per_gas: "1000000000".into(),
            sent_at: 9,
        },
        BatchState::Settled { tx: "0x02".into(), block: 12, gas_used: 230_000 },
        BatchState::Failed { reason: "deadline".into() },
    ];
    for (id, state) in states.into_iter().enumerate() {
        let b = BatchRecord { id: id as u64, tasks: vec!["0xaa".into()], opened_at: 1, closed_at: Some(2), state };
        store.put_batch(&b).unwrap();
        assert_eq!(store.batch(id as u64).unwrap().unwrap(), b);
    }
    for state in [
        TaskState::Verified,
        TaskState::Batched { batch: 3 },
        TaskState::Settled { batch: Some(3), tx: Some("0x02".into()), unpaid: None },
        TaskState::Settled { batch: None, tx: None, unpaid: Some("BookEmpty".into()) },
        TaskState::Dropped { reason: "expired".into() },
    ] {
        store
            .insert_result(&[5; 32], &TaskRecord { state: state.clone(), ..record(5) }, b"p", None, &plain(&[1]))
            .unwrap();
        assert_eq!(store.task(&[5; 32]).unwrap().unwrap().state, state);
    }
}

#[test]
fn what_is_past_its_retention_is_forgotten_with_its_batch_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = |n: u8| [n; 32];
    let settled = |batch| TaskState::Settled { batch, tx: None, unpaid: None };
    // (task, deadline, state): 1 and 2 share settled batch 7; 2's deadline is still in retention,
    // so the batch and both tasks stay. 3 settled elsewhere, old: forgotten. 4 dropped, old:
    // forgotten. 5 still waits for a batch although old: kept. 6 settled, recent: kept.
    let cases: [(u8, u64, TaskState); 6] = [
        (1, 50, settled(Some(7))),
        (2, 500, settled(Some(7))),
        (3, 50, settled(None)),
        (4, 50, TaskState::Dropped { reason: "late".into() }),
        (5, 50, TaskState::Verified),
        (6, 500, settled(None)),
    ];
    for (n, deadline, state) in &cases {
        let mut r = record(*n);
        r.deadline = *deadline;
        r.state = state.clone();
        store.insert_result(&id(*n), &r, b"proof", Some(b"leaf"), &plain(&[1, 2])).unwrap();
    }
    let batch = |id, tasks: &[u8]| BatchRecord {
        id,
        tasks: tasks.iter().map(|&n| record(n).task_id).collect(),
        opened_at: 1,
        closed_at: Some(2),
        state: BatchState::Settled { tx: "0x01".into(), block: 1, gas_used: 1 },
    };
    store.put_batch(&batch(7, &[1, 2])).unwrap();
    store.put_batch(&batch(8, &[3])).unwrap();
    // Orders: 20 old and never delivered, 21 recent, 3's order (delivered, forgotten with its task).
    for (hash, nonce, deadline) in [(B256::repeat_byte(20), 20u64, 50u64), (B256::repeat_byte(21), 21, 500)] {
        store
            .put_order(&hash, &OrderRecord { signed: signed(nonce, 1, deadline), acceptance: None, listed_at: 1 })
            .unwrap();
    }
    store
        .put_order(&B256::from(id(3)), &OrderRecord { signed: signed(3, 1, 50), acceptance: None, listed_at: 1 })
        .unwrap();

    let pruned = store.prune(100).unwrap();
    assert_eq!(pruned, Pruned { tasks: 2, batches: 1, orders: 2 });
    for n in [3u8, 4] {
        assert!(store.task(&id(n)).unwrap().is_none(), "task {n}");
        assert!(store.proof(&id(n)).unwrap().is_none() && store.leaf_proof(&id(n)).unwrap().is_none());
        assert!(store.output(&id(n)).unwrap().is_none());
    }
    for n in [1u8, 2, 5, 6] {
        assert!(store.task(&id(n)).unwrap().is_some(), "task {n}");
        assert_eq!(store.proof(&id(n)).unwrap().as_deref(), Some(&b"proof"[..]));
    }
    assert!(store.batch(7).unwrap().is_some() && store.batch(8).unwrap().is_none());
    assert!(store.order(&B256::repeat_byte(20)).unwrap().is_none());
    assert!(store.order(&B256::repeat_byte(21)).unwrap().is_some());
    let poster = signed(20, 1, 50).order.poster;
    assert_eq!(store.order_for_nonce(&poster, 20).unwrap(), None, "the nonce index follows");
    let listed = store.orders_of_model(&B256::repeat_byte(1), OrderPage::first(0, 10), |_, _| true).unwrap().0;
    assert_eq!(listed.iter().map(|(h, _)| *h).collect::<Vec<_>>(), vec![B256::repeat_byte(21)]);
    assert_eq!(store.queued_count(), 1, "task 5 still queued");
    // Once task 2 is past retention too, its batch goes with both tasks.
    assert_eq!(store.prune(1_000).unwrap(), Pruned { tasks: 3, batches: 1, orders: 1 });
    assert!(store.batch(7).unwrap().is_none() && store.task(&id(1)).unwrap().is_none());
    assert!(store.task(&id(5)).unwrap().is_some());
}

#[test]
fn order_pages_follow_a_cursor_and_share_a_page_between_posters() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let other = PrivateKeySigner::from_bytes(&B256::repeat_byte(0x44)).unwrap();
    let domain = MarketDomain { chain_id: 1, market: Address::ZERO };
    // Poster A lists orders due at 100..=109; poster B one due at 105.
    for i in 0..10u64 {
        let record = OrderRecord { signed: signed(i, 1, 100 + i), acceptance: None, listed_at: 1 };
        store.put_order(&B256::repeat_byte(i as u8 + 1), &record).unwrap();
    }
    let mut b = signed(0, 1, 105).order;
    b.poster = other.address();
    let b = SignedOrder::sign(b, &other, &domain).unwrap();
    store.put_order(&B256::repeat_byte(0xbb), &OrderRecord { signed: b, acceptance: None, listed_at: 1 }).unwrap();
    let deadlines =
        |page: &[(B256, OrderRecord)]| page.iter().map(|(_, r)| r.signed.order.deadline).collect::<Vec<_>>();

    // At most 3 of one poster per page: B's order is on the first page although A's fill it.
    let model = B256::repeat_byte(1);
    let page = OrderPage { not_before: 0, from: None, limit: 4, per_poster: 3 };
    let (first, next) = store.orders_of_model(&model, page, |_, _| true).unwrap();
    assert_eq!(deadlines(&first), [100, 101, 102, 105]);
    assert_eq!(first[3].1.signed.order.poster, other.address());
    // The next page starts at the first order passed over (A's 103): nothing is lost.
    assert_eq!(next, Some((103, B256::repeat_byte(4))));
    let (second, next) = store.orders_of_model(&model, OrderPage { from: next, ..page }, |_, _| true).unwrap();
    assert_eq!(deadlines(&second), [103, 104, 105, 105], "B's again, and A's 103 to 105");
    let (third, next) = store.orders_of_model(&model, OrderPage { from: next, ..page }, |_, _| true).unwrap();
    assert_eq!(deadlines(&third), [106, 107, 108]);
    let (fourth, next) = store.orders_of_model(&model, OrderPage { from: next, ..page }, |_, _| true).unwrap();
    assert_eq!((deadlines(&fourth), next), (vec![109], None), "the last page says so");
    // A cursor before `not_before` does not reach back past it.
    let early = OrderPage { not_before: 108, from: Some((100, B256::ZERO)), limit: 10, per_poster: 10 };
    assert_eq!(deadlines(&store.orders_of_model(&model, early, |_, _| true).unwrap().0), [108, 109]);
}
