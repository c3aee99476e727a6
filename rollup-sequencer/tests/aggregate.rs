//! Batches of two models with 1, 2, 3 tasks (one chunk), 6 tasks (two chunks under a merge) and
//! 7 tasks (proven incrementally as they arrive): the circuit's batch root equals the natively
//! computed root.
//! The 64-task batch (about 10 minutes on 2 cores) is checked the same way, and for reordered and
//! dropped leaves, by `make bench-aggregation` (`tgrid-sequencer bench`), not here.

use std::sync::OnceLock;

use tgrid_aggregation::{batch_root, LeafCircuit, SubtreeProof, TaskLeaf};
use tgrid_circuits::testing::{random_input, tiny_model};
use tgrid_circuits::{SegmentPlan, TaskProof, TaskProver, TaskVerifier};
use tgrid_sequencer::{Aggregator, Error, IncrementalTree, Step};

struct Setup {
    aggregator: Aggregator,
    proofs: Vec<TaskProof>,
    /// Leaf proofs of `proofs`, proven once and reused by the batches below.
    leaves: Vec<(TaskLeaf, SubtreeProof)>,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let models = [tiny_model(3), tiny_model(4)];
        let leaf_circuits = models
            .iter()
            .map(|m| LeafCircuit::new(TaskVerifier::new(m, &SegmentPlan::default()).unwrap()).unwrap())
            .collect();
        let aggregator = Aggregator::with_leaf_circuits(leaf_circuits).unwrap();
        let provers: Vec<_> =
            models.iter().map(|m| TaskProver::new(m.clone(), SegmentPlan::default()).unwrap()).collect();
        // Models interleaved irregularly: 0 1 1 0 1 0 0.
        let proofs: Vec<TaskProof> = [0, 1, 1, 0, 1, 0, 0]
            .iter()
            .enumerate()
            .map(|(i, &m)| {
                let mut task_id = [0x3C; 32];
                task_id[31] = i as u8;
                let input = random_input(100 + i as u64, 16);
                provers[m].prove(&input, task_id, [0x10 + m as u8; 20], &mut |_, _, _| {}).unwrap().0
            })
            .collect();
        let leaves = proofs.iter().map(|p| aggregator.prove_leaf(p).unwrap()).collect();
        Setup { aggregator, proofs, leaves }
    })
}

fn native_root(leaves: &[TaskLeaf]) -> [u8; 32] {
    batch_root(&leaves.iter().map(TaskLeaf::hash).collect::<Vec<_>>()).unwrap()
}

#[test]
fn batches_of_1_2_3_and_6_tasks_prove_the_native_root() {
    let s = setup();
    // Up to 4 tasks: one chunk, no merge; 6: chunks of 4 and 2 under one merge.
    for n in [1, 2, 3, 6] {
        let (leaves, proofs): (Vec<TaskLeaf>, Vec<SubtreeProof>) = s.leaves[..n].iter().cloned().unzip();
        let proven = std::sync::Mutex::new(Vec::new());
        let count = |step| proven.lock().unwrap().push(step);
        let chunks = s.aggregator.prove_chunks(&proofs, &count).unwrap();
        let root = s.aggregator.merge_all(chunks, &count).unwrap();
        let proven = proven.into_inner().unwrap();
        let chunks = proven.iter().filter(|&&step| step == Step::Chunk).count();
        assert_eq!(chunks, tgrid_sequencer::chunk_proofs(n), "chunk proofs of a batch of {n}");
        assert_eq!(proven.len(), tgrid_sequencer::aggregation_proofs(n), "chunk and merge proofs of a batch of {n}");
        let batch = s.aggregator.circuits().batch_file(leaves.clone(), &root).unwrap();
        let verified = s.aggregator.circuits().verify_batch(&batch, &s.aggregator.registry().root()).unwrap();
        assert_eq!(verified.batch_root, native_root(&leaves), "batch of {n}");
        assert_eq!(verified.leaves, leaves);
        // Reordering two tasks or dropping the last one breaks the batch.
        if n > 1 {
            let mut swapped = batch.clone();
            swapped.leaves.swap(0, n - 1);
            assert!(s.aggregator.circuits().verify_batch(&swapped, &s.aggregator.registry().root()).is_err());
            let mut dropped = batch.clone();
            dropped.leaves.pop();
            assert!(s.aggregator.circuits().verify_batch(&dropped, &s.aggregator.registry().root()).is_err());
        }
    }
}

#[test]
fn a_7_task_batch_is_merged_incrementally_as_leaves_arrive() {
    let s = setup();
    let mut tree = IncrementalTree::new(&s.aggregator);
    for (leaf, proof) in &s.leaves {
        tree.push(*leaf, proof.clone()).unwrap();
    }
    assert!(matches!(tree.push(s.leaves[2].0, s.leaves[2].1.clone()), Err(Error::Aggregation(_))));
    let batch = tree.finish().unwrap();
    let leaves: Vec<TaskLeaf> = s.leaves.iter().map(|(l, _)| *l).collect();
    let verified = s.aggregator.circuits().verify_batch(&batch, &s.aggregator.registry().root()).unwrap();
    assert_eq!(verified.batch_root, native_root(&leaves));
    assert_eq!(verified.leaves, leaves);
    let mut reordered = batch.clone();
    reordered.leaves.swap(3, 4);
    assert!(s.aggregator.circuits().verify_batch(&reordered, &s.aggregator.registry().root()).is_err());
}

#[test]
fn aggregate_rejects_duplicates_and_unknown_models_before_proving() {
    let s = setup();
    let duplicated = vec![s.proofs[0].clone(), s.proofs[1].clone(), s.proofs[0].clone()];
    let result = s.aggregator.aggregate(&duplicated, &|_| panic!("nothing may be proven"));
    assert!(matches!(result, Err(Error::Aggregation(tgrid_aggregation::Error::InvalidBatch(_)))), "{result:?}");
    let mut unknown = s.proofs[0].clone();
    unknown.model_id = [0xEE; 32];
    let result = s.aggregator.aggregate(&[unknown], &|_| panic!("nothing may be proven"));
    assert!(matches!(result, Err(Error::UnknownModel(_))), "{result:?}");
    let mut tampered = s.proofs[1].clone();
    let last = tampered.proof.len() - 1;
    tampered.proof[last] ^= 1;
    assert!(s.aggregator.aggregate(&[tampered], &|_| panic!("nothing may be proven")).is_err());
    assert!(s.aggregator.aggregate(&[], &|_| {}).is_err());
}

#[test]
fn aggregate_proves_a_mixed_batch_end_to_end() {
    let s = setup();
    let batch = s.aggregator.aggregate(&s.proofs[..2], &|_| {}).unwrap();
    let verified = s.aggregator.circuits().verify_batch(&batch, &s.aggregator.registry().root()).unwrap();
    let leaves: Vec<TaskLeaf> = s.leaves[..2].iter().map(|(l, _)| *l).collect();
    assert_eq!(verified.leaves, leaves);
    assert_eq!(verified.batch_root, native_root(&leaves));
}
