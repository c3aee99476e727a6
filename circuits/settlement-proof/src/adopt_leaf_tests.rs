//! [`Aggregator::adopt_leaf`]: a leaf proof made by the task's provider replaces the
//! sequencer's own only when it is exactly the leaf the sequencer would prove.

use tgrid_aggregation::{LeafCircuit, Registry, RegistryEntry, RegistryFile, RegistryFileEntry};
use tgrid_circuits::testing::{random_input, tiny_model};
use tgrid_circuits::{ModelFile, SegmentPlan, TaskProof, TaskProver, TaskVerifier};

use crate::{AggregateError, Aggregator};

fn task_proof(prover: &TaskProver, i: u8) -> TaskProof {
    let (proof, _, _) = prover.prove(&random_input(u64::from(i), 16), [i; 32], [0x42; 20], &mut |_, _, _| {}).unwrap();
    proof
}

fn leaf_circuit(plan: &SegmentPlan) -> LeafCircuit {
    LeafCircuit::new(TaskVerifier::new(&tiny_model(1), plan).unwrap()).unwrap()
}

#[test]
fn a_providers_leaf_is_adopted_only_for_its_own_task_and_registry() {
    let plan = SegmentPlan::default();
    let prover = TaskProver::new(tiny_model(1), plan.clone()).unwrap();
    let sequencer = Aggregator::with_leaf_circuits(vec![leaf_circuit(&plan)]).unwrap();
    let (a, b) = (task_proof(&prover, 1), task_proof(&prover, 2));
    // The provider proves its leaf with the same circuits and registry.
    let (leaf_a, provided) = sequencer.prove_leaf(&a).unwrap();
    let bytes = provided.to_bytes();

    let (leaf, adopted) = sequencer.adopt_leaf(&a, &bytes).unwrap();
    assert_eq!(leaf, leaf_a);
    assert_eq!(adopted.leaf_public_inputs().unwrap(), provided.leaf_public_inputs().unwrap());
    // It joins a chunk like a leaf proven here.
    let (_, leaf_b) = sequencer.prove_leaf(&b).unwrap();
    let chunk = sequencer.circuits().prove_chunk(&[adopted.clone(), leaf_b.clone()], sequencer.registry()).unwrap();
    assert_eq!(sequencer.circuits().verify_root(&chunk).unwrap().count, 2);

    // A batch of the two takes both leaves as given (one chunk is all it proves); given in the
    // wrong places they are not used, and the leaves are proven instead.
    let leaves_of = |file: &tgrid_aggregation::BatchFile| {
        let verified = sequencer.circuits().verify_batch(file, &sequencer.registry().root()).unwrap();
        verified.leaves.iter().map(|l| l.task_id).collect::<Vec<_>>()
    };
    let given = [Some(adopted.clone()), Some(leaf_b.clone())];
    let file = sequencer.aggregate_with(&[a.clone(), b.clone()], &given, &|_| {}).unwrap();
    assert_eq!(leaves_of(&file), [[1; 32], [2; 32]]);
    let file = sequencer.aggregate_with(&[b.clone(), a.clone()], &given, &|_| {}).unwrap();
    assert_eq!(leaves_of(&file), [[2; 32], [1; 32]]);

    // A sequencer reading its models from files checks given leaves' tasks against the task
    // circuit only: a batch of them builds no leaf circuit; a task without its leaf does.
    let dir = std::env::temp_dir().join(format!("tgrid-adopt-leaf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut registry = RegistryFile::empty(dir.clone());
    let n = leaf_circuit(&plan);
    let model = ModelFile {
        model: tiny_model(1),
        plan: plan.clone(),
        circuit_digest: n.task_verifier().circuit_digest(),
        leaf_digest: n.digest(),
        report: "{}".into(),
    };
    std::fs::write(dir.join("tiny.tgm"), model.to_bytes()).unwrap();
    registry
        .upsert(RegistryFileEntry {
            name: "tiny".into(),
            model_id: format!("0x{}", hex::encode(n.model_id())),
            leaf_digest: format!("0x{}", hex::encode(n.digest())),
            model_file: "tiny.tgm".into(),
        })
        .unwrap();
    let from_files = Aggregator::new(registry).unwrap();
    let file = from_files.aggregate_with(&[a.clone(), b.clone()], &given, &|_| {}).unwrap();
    assert_eq!(leaves_of(&file), [[1; 32], [2; 32]]);
    assert!(!from_files.leaf_circuit_built(&n.model_id()));
    from_files.check(&a).unwrap();
    assert!(from_files.leaf_circuit_built(&n.model_id()));
    std::fs::remove_dir_all(&dir).unwrap();

    let invalid = |result: Result<_, AggregateError>| match result {
        Err(AggregateError::InvalidLeaf(reason)) => reason,
        Err(other) => panic!("expected an invalid leaf, got {other}"),
        Ok(_) => panic!("an invalid leaf was adopted"),
    };
    // Another task's leaf.
    assert!(invalid(sequencer.adopt_leaf(&b, &bytes)).contains("this task's leaf is"));
    // A chunk proof (two tasks) does not decode as a leaf.
    invalid(sequencer.adopt_leaf(&a, &chunk.to_bytes()));
    // Bytes that are not a proof, or a truncated one.
    invalid(sequencer.adopt_leaf(&a, &[7u8; 1000]));
    invalid(sequencer.adopt_leaf(&a, &bytes[..bytes.len() / 2]));
    invalid(sequencer.adopt_leaf(&a, &[]));
    let mut flipped = bytes.clone();
    let last = flipped.len() - 40;
    flipped[last] ^= 1;
    invalid(sequencer.adopt_leaf(&a, &flipped));

    // Governance moved the registry (another model added): the leaf does not depend on the
    // root, so it is adopted under the new one too.
    let n = leaf_circuit(&plan);
    let other = RegistryEntry { model_id: [9; 32], leaf_digest: [0; 32] };
    let moved = Registry::new([RegistryEntry { model_id: n.model_id(), leaf_digest: n.digest() }, other]).unwrap();
    let model_id = n.model_id();
    let after_the_move = Aggregator::with_registry(moved, vec![n]).unwrap();
    after_the_move.adopt_leaf(&a, &bytes).unwrap();
    // The model registered with another leaf circuit: the leaf is not this registry's, which
    // is no fault of the task (the sequencer proves the leaf itself).
    let other_circuit = RegistryEntry { model_id, leaf_digest: [1; 32] };
    let re_registered = Aggregator::with_registry(Registry::new([other_circuit]).unwrap(), vec![]).unwrap();
    match re_registered.adopt_leaf_of(&leaf_a, &bytes) {
        Err(AggregateError::LeafOfOtherCircuit { proven, registered }) => {
            assert_eq!(proven, provided.leaf_circuit_digest().unwrap());
            assert_eq!(registered, [1; 32]);
        }
        other => panic!("expected a leaf of another circuit, got {:?}", other.map(|l| l.kind)),
    }
}
