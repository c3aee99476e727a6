//! Aggregation tests on two small models: registry trees, batch roots against the contract's
//! vectors, leaf, chunk and merge proofs, batch files, and rejection of every way to
//! cheat a batch the circuits are responsible for.

use std::sync::OnceLock;

use plonky2::field::types::Field;
use plonky2::hash::merkle_proofs::verify_merkle_proof;
use plonky2::iop::witness::{PartialWitness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use tgrid_circuits::testing::{random_input, tiny_model};
use tgrid_circuits::{Privacy, Salt, SegmentPlan, TaskProof, TaskProver, TaskVerifier, C, D, F};

use crate::batch::{batch_root, node_hash, split_point, BatchFile, TaskLeaf};
use crate::registry::{Registry, RegistryEntry, RegistryFile, RegistryFileEntry};
use crate::shape::aggregation_config;
use crate::tree::{canonical_halves_bits_be, ChunkCut, MergeCut};
use crate::{AggregationCircuits, Error, LeafCircuit, MergeShape, SubtreeKind, SubtreeProof};

fn hex32(s: &str) -> [u8; 32] {
    hex::decode(s.trim_start_matches("0x")).unwrap().try_into().unwrap()
}

/// The contract's vector i (contracts/test/TaskLeaf.t.sol).
fn vector(i: u64) -> TaskLeaf {
    let word = |v: u64| {
        let mut b = [0u8; 32];
        b[24..].copy_from_slice(&v.to_be_bytes());
        b
    };
    TaskLeaf {
        task_id: word(i + 1),
        model_id: [0x22; 32],
        input_commitment: word(0x1000 + i),
        output_commitment: word(0x2000 + i),
        provider: [0x55; 20],
    }
}

#[test]
fn leaf_and_batch_root_match_the_contract_vectors() {
    let leaf = TaskLeaf {
        task_id: [0x11; 32],
        model_id: [0x22; 32],
        input_commitment: [0x33; 32],
        output_commitment: [0x44; 32],
        provider: [0x55; 20],
    };
    assert_eq!(leaf.hash(), hex32("969236d3c6fa0b18f1b2763544a32e46b67b7ece23c9a2c9e790b6104ea80eb5"));
    let root = |n: u64| batch_root(&(0..n).map(|i| vector(i).hash()).collect::<Vec<_>>()).unwrap();
    assert_eq!(root(1), hex32("416d3b135deb19b0d83922288ac06fd85370957e0ec407d598295aff08137ae6"));
    assert_eq!(root(2), hex32("804bf5d953e8906e805e7f5b49799a91bd04d9717ad1f9dcd800660c80af19b0"));
    assert_eq!(root(3), hex32("663102490f7e093f28fe1a187e4f0afb0abe53a9a9df34742b00b1b25566b397"));
    assert_eq!(root(5), hex32("6f03f2fcfda0df7c54e9301f6e67f075006a546182ef488751830684f4c808da"));
    assert_eq!(root(7), hex32("b39cdca998e82aad25a3d42e3feba40e4440e5dbb7f762f5cf604d3f00a35e0c"));
    assert_eq!(batch_root(&[]), None);
    let reg = [0xaa; 32];
    assert_eq!(
        crate::settlement_public_input(&root(1), &reg, 1),
        hex32("1d0ab97b2d2d3e2ed2497dd958b96586df24ad8d5df195ae61347230eb246ce1")
    );
    assert_eq!(
        crate::settlement_public_input(&root(7), &reg, 7),
        hex32("19a3e639ad5985570f6e6cdca27732308d1afe9ae02708fc8a58354feb88cbcf")
    );
    assert_eq!((2..=9).map(split_point).collect::<Vec<_>>(), [1, 2, 2, 4, 4, 4, 4, 8]);
    assert_eq!(TaskLeaf::decode(&leaf.encode()), leaf);
}

fn entry(seed: u8) -> RegistryEntry {
    let mut digest = [seed; 32];
    for i in 0..4 {
        digest[8 * i] = 0; // keep each element canonical
    }
    RegistryEntry { model_id: [seed; 32], leaf_digest: digest }
}

#[test]
fn registry_membership_proofs_verify_with_plonky2() {
    let registry = Registry::new((1..=5).map(entry)).unwrap();
    for e in registry.entries() {
        let (found, membership) = registry.membership(&e.model_id).unwrap();
        assert_eq!(&found, e);
        verify_merkle_proof(e.leaf_data(), membership.index, registry.root_hash(), &membership.to_merkle_proof())
            .unwrap();
    }
    assert!(matches!(registry.membership(&[9; 32]), Err(Error::Registry(_))));
    // The root pins the set, not the insertion order.
    assert_eq!(Registry::new((1..=5).rev().map(entry)).unwrap().root(), registry.root());
    assert_ne!(Registry::new((1..=4).map(entry)).unwrap().root(), registry.root());
    let mut clash = entry(1);
    clash.leaf_digest[31] ^= 1;
    assert!(matches!(Registry::new([entry(1), clash]), Err(Error::Registry(_))));
    let mut not_a_hash = entry(7);
    not_a_hash.leaf_digest = [0xFF; 32];
    assert!(matches!(Registry::new([not_a_hash]), Err(Error::Format(_))));
}

#[test]
fn registry_file_round_trips_and_detects_a_stale_root() {
    let dir = std::env::temp_dir().join(format!("tgrid-registry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("registry.json");
    let mut file = RegistryFile::empty(dir.clone());
    for seed in [3u8, 1, 2] {
        let e = entry(seed);
        file.upsert(RegistryFileEntry {
            name: format!("m{seed}"),
            model_id: format!("0x{}", hex::encode(e.model_id)),
            leaf_digest: format!("0x{}", hex::encode(e.leaf_digest)),
            model_file: format!("m{seed}.tgm"),
        })
        .unwrap();
    }
    file.save(&path).unwrap();
    let loaded = RegistryFile::load(&path).unwrap();
    assert_eq!(loaded.models, file.models);
    assert_eq!(loaded.registry().unwrap().root(), Registry::new((1..=3).map(entry)).unwrap().root());
    let text = std::fs::read_to_string(&path).unwrap().replace("\"name\": \"m1\"", "\"name\": \"renamed\"");
    std::fs::write(&path, &text).unwrap();
    RegistryFile::load(&path).unwrap();
    let tampered = text.replacen(&loaded.models[0].leaf_digest[2..6], "0000", 1);
    std::fs::write(&path, tampered).unwrap();
    assert!(matches!(RegistryFile::load(&path), Err(Error::Registry(_))));
    std::fs::write(&path, "{\"root\": 1}").unwrap();
    assert!(matches!(RegistryFile::load(&path), Err(Error::Format(_))));
    // Binary bytes are a malformed registry, not an I/O failure.
    std::fs::write(&path, [0xC3u8, 0x28, 0xFF, 0x00, 0x9F]).unwrap();
    let err = RegistryFile::load(&path).unwrap_err();
    assert!(matches!(err, Error::Format(_)) && err.to_string().contains("not a registry file"), "{err}");
    // A missing file names the path and its cause once, also through an error chain.
    std::fs::remove_file(&path).unwrap();
    let err = RegistryFile::load(&path).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
    let chained = format!("{:#}", anyhow::Error::new(err));
    assert_eq!(chained.matches("No such file").count(), 1, "{chained}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two small models, model 0 proving public tasks and model 1 private ones (zero-knowledge,
/// salted commitments, under its private model id), their leaf circuits, a registry holding
/// both, and the aggregation circuits, built once for all tests.
struct Setup {
    provers: Vec<TaskProver>,
    leaf_circuits: Vec<LeafCircuit>,
    registry: Registry,
    circuits: AggregationCircuits,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let models = [(tiny_model(1), Privacy::Public), (tiny_model(2), Privacy::Private)];
        let plan = SegmentPlan::default();
        let provers: Vec<_> =
            models.iter().map(|(m, p)| TaskProver::with_privacy(m.clone(), plan.clone(), *p).unwrap()).collect();
        let leaf_circuits: Vec<_> = models
            .iter()
            .map(|(m, p)| LeafCircuit::new(TaskVerifier::with_privacy(m, &plan, *p).unwrap()).unwrap())
            .collect();
        let registry = Registry::new(
            leaf_circuits.iter().map(|l| RegistryEntry { model_id: l.model_id(), leaf_digest: l.digest() }),
        )
        .unwrap();
        Setup { provers, leaf_circuits, registry, circuits: AggregationCircuits::build().unwrap() }
    })
}

fn task_id(i: u64) -> [u8; 32] {
    let mut t = [0xA5; 32];
    t[24..].copy_from_slice(&i.to_be_bytes());
    t
}

/// Proves task `i` of model `m`.
fn task(m: usize, i: u64) -> TaskProof {
    let s = setup();
    let input = random_input(i, 16);
    let prover = &s.provers[m];
    let (proof, _, _) = match prover.privacy() {
        Privacy::Public => prover.prove(&input, task_id(i), [0x42; 20], &mut |_, _, _| {}).unwrap(),
        Privacy::Private => {
            prover.prove_private(&input, &Salt::random(), task_id(i), [0x42; 20], &mut |_, _, _| {}).unwrap()
        }
    };
    proof
}

/// Proves task `i` of model `m` and its leaf.
fn leaf(m: usize, i: u64) -> (SubtreeProof, TaskLeaf) {
    let (publics, leaf) = setup().leaf_circuits[m].prove(&task(m, i)).unwrap();
    (leaf, TaskLeaf::from_publics(&publics))
}

/// Model `m`'s registry path in `registry`.
fn path(registry: &Registry, m: usize) -> crate::registry::Membership {
    registry.membership(&setup().leaf_circuits[m].model_id()).unwrap().1
}

#[test]
fn leaf_circuits_share_one_shape_and_differ_in_digest() {
    // One shape for a public and a private (zero-knowledge) task proof.
    let s = setup();
    assert_eq!(s.provers[1].task_model_id(), s.leaf_circuits[1].model_id());
    assert_ne!(s.leaf_circuits[1].model_id(), s.provers[1].model().model_id(), "the private variant's id");
    let (a, b) = (s.leaf_circuits[0].verifier_data(), s.leaf_circuits[1].verifier_data());
    assert_eq!(a.common, b.common);
    assert_eq!(&a.common, crate::shape::LEAF.common());
    assert_ne!(s.leaf_circuits[0].digest(), s.leaf_circuits[1].digest());
    // The digest the chunk derives from the cap is plonky2's.
    assert_eq!(
        crate::shape::circuit_digest(&a.verifier_only.constants_sigmas_cap, crate::shape::LEAF.degree_bits()),
        a.verifier_only.circuit_digest
    );
}

/// A transformer-style task proof (token embedding, LayerNorm, causal attention with Softmax,
/// function tables: several lookup tables) fits the one leaf shape and joins a chunk under a
/// registry that lists it.
#[test]
fn a_language_model_task_proves_a_leaf_of_the_standard_shape() {
    let model = tgrid_circuits::testing::language_model(3);
    let plan = SegmentPlan::default();
    let prover = TaskProver::new(model.clone(), plan.clone()).unwrap();
    let tokens: Vec<i8> = [4u8, 8, 1, 5, 9, 2].iter().map(|&id| (id ^ 0x80) as i8).collect();
    let (proof, _, _) = prover.prove(&tokens, task_id(40), [0x42; 20], &mut |_, _, _| {}).unwrap();
    let circuit = LeafCircuit::new(TaskVerifier::new(&model, &plan).unwrap()).unwrap();
    assert_eq!(&circuit.verifier_data().common, crate::shape::LEAF.common());
    let (publics, leaf) = circuit.prove(&proof).unwrap();
    let registry =
        Registry::new([RegistryEntry { model_id: circuit.model_id(), leaf_digest: circuit.digest() }]).unwrap();
    let p = setup().circuits.verify_leaf(&leaf, &registry).unwrap();
    assert_eq!((p.leaf, p.model_id), (TaskLeaf::from_publics(&publics).hash(), circuit.model_id()));
    let chunk = setup().circuits.prove_chunk(&[leaf], &registry).unwrap();
    let p = setup().circuits.verify_root(&chunk).unwrap();
    assert_eq!((p.root, p.count, p.registry_root), (TaskLeaf::from_publics(&publics).hash(), 1, registry.root()));
}

/// A private task cut into segments ends in a join blinded with masking columns (three wires
/// more than a public join): its leaf still has the standard shape and verifies under the
/// registry.
#[test]
fn a_segmented_private_task_proves_a_leaf_of_the_standard_shape() {
    let model = tiny_model(3);
    let plan = SegmentPlan { cuts: vec![3] };
    let prover = TaskProver::with_privacy(model.clone(), plan.clone(), Privacy::Private).unwrap();
    let input = random_input(41, 16);
    let (proof, _, _) =
        prover.prove_private(&input, &Salt::random(), task_id(41), [0x42; 20], &mut |_, _, _| {}).unwrap();
    let circuit = LeafCircuit::new(TaskVerifier::with_privacy(&model, &plan, Privacy::Private).unwrap()).unwrap();
    assert_eq!(&circuit.verifier_data().common, crate::shape::LEAF.common());
    assert_eq!(circuit.model_id(), prover.task_model_id());
    let (publics, leaf) = circuit.prove(&proof).unwrap();
    let registry =
        Registry::new([RegistryEntry { model_id: circuit.model_id(), leaf_digest: circuit.digest() }]).unwrap();
    let p = setup().circuits.verify_leaf(&leaf, &registry).unwrap();
    assert_eq!((p.leaf, p.model_id), (TaskLeaf::from_publics(&publics).hash(), circuit.model_id()));
}

/// A model whose task proof is too large to verify in the leaf shape beside the leaf's hashing
/// (the character GPT's) gets a leaf circuit through a normalization step: the same shape and
/// public inputs, another digest, and its leaves join chunks beside direct ones.
#[test]
fn a_leaf_circuit_through_a_normalization_step_has_the_standard_shape() {
    let s = setup();
    let plan = SegmentPlan::default();
    let circuit = LeafCircuit::with_normalizer(TaskVerifier::new(&tiny_model(1), &plan).unwrap()).unwrap();
    assert!(circuit.normalizer.is_some());
    assert_eq!(&circuit.verifier_data().common, crate::shape::LEAF.common());
    assert_ne!(circuit.digest(), s.leaf_circuits[0].digest(), "the normalizer is part of the circuit");
    let proof = task(0, 90);
    let (publics, normalized) = circuit.prove(&proof).unwrap();
    let registry = Registry::new([
        RegistryEntry { model_id: circuit.model_id(), leaf_digest: circuit.digest() },
        *s.registry.entry(&s.leaf_circuits[1].model_id()).unwrap(),
    ])
    .unwrap();
    let (l1, t1) = leaf(1, 91);
    let chunk = s.circuits.prove_chunk(&[normalized.clone(), l1], &registry).unwrap();
    let p = s.circuits.verify_root(&chunk).unwrap();
    assert_eq!((p.root, p.count), (node_hash(&TaskLeaf::from_publics(&publics).hash(), &t1.hash()), 2));
    // Not under the registry of the direct leaf circuit.
    assert!(matches!(s.circuits.prove_chunk(&[normalized], &s.registry), Err(Error::Registry(_))));
}

/// A leaf proof travels as its circuit's cap and the proof: the encoding round-trips, damage
/// is refused, and a leaf is accepted only under the registry entry of its own circuit.
#[test]
fn leaf_proofs_round_trip_and_verify_only_under_their_registry_entry() {
    let s = setup();
    let (l1, t1) = leaf(1, 80);
    let bytes = l1.to_bytes();
    let decoded = s.circuits.decode(&bytes, SubtreeKind::Leaf).unwrap();
    assert_eq!(decoded.to_bytes(), bytes);
    let p = s.circuits.verify_leaf(&decoded, &s.registry).unwrap();
    assert_eq!((p.leaf, p.model_id), (t1.hash(), t1.model_id));
    for cut in [0, 100, 511, 512, bytes.len() / 2, bytes.len() - 1] {
        assert!(s.circuits.decode(&bytes[..cut], SubtreeKind::Leaf).is_err(), "cut at {cut}");
    }
    let mut non_canonical = bytes.clone();
    non_canonical[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(s.circuits.decode(&non_canonical, SubtreeKind::Leaf), Err(Error::Format(_))));
    // Another cap: its digest is not the registered one.
    let mut other_cap = bytes.clone();
    other_cap[0] ^= 1;
    let other = s.circuits.decode(&other_cap, SubtreeKind::Leaf).unwrap();
    assert!(matches!(s.circuits.verify_leaf(&other, &s.registry), Err(Error::Registry(_))));
    // Model 1 registered with model 0's leaf circuit: the proof does not verify under it.
    let model_0 = *s.registry.entry(&s.leaf_circuits[0].model_id()).unwrap();
    let swapped =
        Registry::new([model_0, RegistryEntry { model_id: t1.model_id, leaf_digest: s.leaf_circuits[0].digest() }])
            .unwrap();
    let mut forged = l1.clone();
    forged.leaf_circuit = Some(s.leaf_circuits[0].verifier_data().verifier_only.constants_sigmas_cap);
    assert!(matches!(s.circuits.verify_leaf(&forged, &swapped), Err(Error::InvalidProof(_))));
    // A tampered public input.
    let mut tampered = l1.clone();
    tampered.proof.public_inputs[0] += F::ONE;
    assert!(matches!(s.circuits.verify_leaf(&tampered, &s.registry), Err(Error::InvalidProof(_))));
    // A model the registry does not list.
    let only_model_0 = Registry::new([model_0]).unwrap();
    assert!(matches!(s.circuits.verify_leaf(&l1, &only_model_0), Err(Error::Registry(_))));
    // A chunk proof is no leaf.
    let chunk = s.circuits.prove_chunk(std::slice::from_ref(&l1), &s.registry).unwrap();
    assert!(s.circuits.verify_leaf(&chunk, &s.registry).is_err());
    assert!(chunk.leaf_public_inputs().is_err() && l1.public_inputs().is_err());
}

#[test]
fn chunks_of_one_to_four_tasks_prove_the_contract_root() {
    let s = setup();
    let (l0, t0) = leaf(0, 10);
    let (l1, t1) = leaf(1, 11);
    let (l2, t2) = leaf(0, 12);
    let p0 = l0.leaf_public_inputs().unwrap();
    assert_eq!((p0.leaf, p0.model_id), (t0.hash(), t0.model_id));
    // RFC 6962 shape for 3 leaves: (l0 l1) l2.
    let three = s.circuits.prove_chunk(&[l0.clone(), l1.clone(), l2.clone()], &s.registry).unwrap();
    let publics = s.circuits.verify_root(&three).unwrap();
    assert_eq!(publics.registry_root, s.registry.root());
    let leaves = vec![t0, t1, t2];
    assert_eq!(publics.root, batch_root(&leaves.iter().map(TaskLeaf::hash).collect::<Vec<_>>()).unwrap());
    assert_eq!(publics.root, node_hash(&node_hash(&t0.hash(), &t1.hash()), &t2.hash()));
    assert_eq!(publics.count, 3);

    let file = s.circuits.batch_file(leaves.clone(), &three).unwrap();
    assert!(!file.root_is_merge);
    let decoded = BatchFile::from_bytes(&file.to_bytes()).unwrap();
    assert_eq!(decoded, file);
    let verified = s.circuits.verify_batch(&decoded, &s.registry.root()).unwrap();
    assert_eq!(verified.leaves, leaves);

    // Reordered, dropped or repeated leaves, another registry root: rejected.
    let mut reordered = file.clone();
    reordered.leaves.swap(0, 1);
    assert!(matches!(s.circuits.verify_batch(&reordered, &s.registry.root()), Err(Error::InvalidProof(_))));
    let mut dropped = file.clone();
    dropped.leaves.pop();
    assert!(s.circuits.verify_batch(&dropped, &s.registry.root()).is_err());
    let mut repeated = file.clone();
    repeated.leaves[2] = repeated.leaves[0];
    assert!(matches!(s.circuits.verify_batch(&repeated, &s.registry.root()), Err(Error::InvalidBatch(_))));
    assert!(matches!(s.circuits.verify_batch(&file, &[7; 32]), Err(Error::InvalidProof(_))));
    // A leaf proof is no batch root.
    assert!(matches!(s.circuits.batch_file(vec![t0], &l0), Err(Error::InvalidBatch(_))));

    // One task: the chunk's root is the leaf.
    let one = s.circuits.prove_chunk(std::slice::from_ref(&l0), &s.registry).unwrap();
    s.circuits.verify_batch(&s.circuits.batch_file(vec![t0], &one).unwrap(), &s.registry.root()).unwrap();
    // Four: node(node(a, b), node(c, d)) (the circuit does not look at repeats: batches do).
    let four = s.circuits.prove_chunk(&[l0.clone(), l1.clone(), l2.clone(), l0.clone()], &s.registry).unwrap();
    let p = s.circuits.verify_root(&four).unwrap();
    let expected = node_hash(&node_hash(&t0.hash(), &t1.hash()), &node_hash(&t2.hash(), &t0.hash()));
    assert_eq!((p.root, p.count), (expected, 4));
    // Neither none nor five leaves, nor a chunk as a leaf.
    assert!(matches!(s.circuits.prove_chunk(&[], &s.registry), Err(Error::InvalidBatch(_))));
    let five = [l0.clone(), l1.clone(), l2.clone(), l0.clone(), l1.clone()];
    assert!(matches!(s.circuits.prove_chunk(&five, &s.registry), Err(Error::InvalidBatch(_))));
    assert!(matches!(s.circuits.prove_chunk(&[l0.clone(), one.clone()], &s.registry), Err(Error::InvalidBatch(_))));

    // Merges over chunks, over one or two levels; a merge child in either position.
    let pair = s.circuits.prove_merge(&four, &one).unwrap();
    let p = s.circuits.verify_root(&pair).unwrap();
    assert_eq!((p.root, p.count), (node_hash(&expected, &t0.hash()), 5));
    let deep = s.circuits.prove_merge3(MergeShape::LeftDeep, &four, &three, &one).unwrap();
    let p = s.circuits.verify_root(&deep).unwrap();
    assert_eq!((p.root, p.count), (node_hash(&node_hash(&expected, &publics.root), &t0.hash()), 8));
    let right_deep = s.circuits.prove_merge3(MergeShape::RightDeep, &one, &pair, &three).unwrap();
    let p = s.circuits.verify_root(&right_deep).unwrap();
    let pair_root = node_hash(&expected, &t0.hash());
    assert_eq!((p.root, p.count), (node_hash(&t0.hash(), &node_hash(&pair_root, &publics.root)), 9));
    assert!(matches!(s.circuits.prove_merge3(MergeShape::Pair, &one, &three, &four), Err(Error::InvalidBatch(_))));
    assert!(matches!(s.circuits.prove_merge(&one, &l1), Err(Error::InvalidBatch(_))));
}

#[test]
fn a_five_task_batch_is_a_chunk_of_four_and_one_under_a_merge() {
    let s = setup();
    let (proofs, leaves): (Vec<_>, Vec<_>) = (0..5).map(|i| leaf((i % 2) as usize, 60 + i)).unzip();
    let four = s.circuits.prove_chunk(&proofs[0..4], &s.registry).unwrap();
    let last = s.circuits.prove_chunk(&proofs[4..5], &s.registry).unwrap();
    let root = s.circuits.prove_merge(&four, &last).unwrap();
    let file = s.circuits.batch_file(leaves.clone(), &root).unwrap();
    assert!(file.root_is_merge);
    let verified =
        s.circuits.verify_batch(&BatchFile::from_bytes(&file.to_bytes()).unwrap(), &s.registry.root()).unwrap();
    assert_eq!(verified.batch_root, batch_root(&leaves.iter().map(TaskLeaf::hash).collect::<Vec<_>>()).unwrap());
    // A chunk root claimed for five tasks, or a merge root for four: the kind does not fit.
    let mut as_chunk = file.clone();
    as_chunk.root_is_merge = false;
    assert!(matches!(s.circuits.verify_batch(&as_chunk, &s.registry.root()), Err(Error::InvalidProof(_))));
}

#[test]
fn a_chunk_with_a_cut_slot_order_is_rejected_by_the_verifier() {
    let s = setup();
    let (l0, _) = leaf(0, 70);
    let (l1, _) = leaf(1, 71);
    let leaves = [l0.clone(), l1.clone(), l0.clone(), l1.clone()];
    let paths = [path(&s.registry, 0), path(&s.registry, 1), path(&s.registry, 0), path(&s.registry, 1)];
    let root = s.registry.root_hash();
    // Slot 2 without slot 1: node(node(a, b), c) with the count of two leaves.
    let forged = s
        .circuits
        .prove_chunk_with_cut(ChunkCut::SlotOrder, &leaves, &paths, root, [false, true, false], None)
        .unwrap();
    assert!(matches!(s.circuits.verify_root(&forged), Err(Error::InvalidProof(_))));
    // The same malicious prover with honest values: accepted (the cut alone is not the fault).
    let honest =
        s.circuits.prove_chunk_with_cut(ChunkCut::SlotOrder, &leaves, &paths, root, [true, true, false], None).unwrap();
    assert_eq!(s.circuits.verify_root(&honest).unwrap().count, 3);
}

#[test]
fn a_merge_with_a_cut_constraint_is_rejected_by_the_verifier() {
    let s = setup();
    let (l0, _) = leaf(0, 50);
    let (l1, _) = leaf(1, 51);
    let c0 = s.circuits.prove_chunk(&[l0], &s.registry).unwrap();
    let c1 = s.circuits.prove_chunk(std::slice::from_ref(&l1), &s.registry).unwrap();
    // A third child proven against another registry root.
    let other = Registry::new([s.registry.entries()[0], s.registry.entries()[1], entry(9)]).unwrap();
    let foreign = s.circuits.prove_chunk(&[l1], &other).unwrap();
    let forged =
        s.circuits.prove_merge_with_cut(MergeCut::ThirdRegistryRoot, [&c0, &c1, &foreign], true, false).unwrap();
    assert!(matches!(s.circuits.verify_root(&forged), Err(Error::InvalidProof(_))));
    // `right_deep` without `deep`: node(b, c) with the count of a and b.
    let forged = s.circuits.prove_merge_with_cut(MergeCut::ShapeEncoding, [&c0, &c1, &c1], false, true).unwrap();
    assert!(matches!(s.circuits.verify_root(&forged), Err(Error::InvalidProof(_))));
    // The same malicious prover with honest values: accepted (the cut alone is not the fault).
    let honest = s.circuits.prove_merge_with_cut(MergeCut::ShapeEncoding, [&c0, &c1, &c1], false, false).unwrap();
    s.circuits.verify_root(&honest).unwrap();
}

#[test]
fn an_unregistered_model_cannot_join_a_chunk() {
    let s = setup();
    let (l1, _) = leaf(1, 20);
    let model_0 = *s.registry.entry(&s.leaf_circuits[0].model_id()).unwrap();
    let only_model_0 = Registry::new([model_0]).unwrap();
    assert!(matches!(s.circuits.prove_chunk(std::slice::from_ref(&l1), &only_model_0), Err(Error::Registry(_))));
    // Bypassing the native check with model 0's membership path fails in the circuit.
    let result = s.circuits.prove_chunk_unchecked(&[l1], &[path(&only_model_0, 0)], only_model_0.root_hash());
    assert!(matches!(result, Err(Error::Proving(_))), "{result:?}");
}

#[test]
fn verifier_data_of_another_circuit_is_rejected_in_the_chunk() {
    let s = setup();
    let (mut l0, _) = leaf(0, 30);
    // Model 1's leaf circuit's cap with model 0's proof, under a registry that lists model 0
    // with that circuit: the digest derived from the cap is registered, but the proof does not
    // verify against it.
    l0.leaf_circuit = Some(s.leaf_circuits[1].verifier_data().verifier_only.constants_sigmas_cap);
    let model_0 = s.leaf_circuits[0].model_id();
    let swapped =
        Registry::new([RegistryEntry { model_id: model_0, leaf_digest: s.leaf_circuits[1].digest() }]).unwrap();
    let (_, membership) = swapped.membership(&model_0).unwrap();
    let result = s.circuits.prove_chunk_unchecked(&[l0], &[membership], swapped.root_hash());
    assert!(matches!(result, Err(Error::Proving(_))), "{result:?}");
}

/// Registry membership reaches the verifier: a prover whose wiring leaves the last slot's path
/// root free proves a chunk whose last leaf is of model 1 under a registry that lists only
/// model 0 (the path is model 1's in the full registry), and the verifier of the real chunk
/// circuit rejects it; the same prover with an honest witness is accepted (the rejection is the
/// missing constraint's, not the malicious prover's).
#[test]
fn a_leaf_outside_the_registry_is_rejected_by_the_verifier() {
    let s = setup();
    let (l0, _) = leaf(0, 50);
    let (l1, _) = leaf(1, 51);
    let model_0 = *s.registry.entry(&s.leaf_circuits[0].model_id()).unwrap();
    let only_model_0 = Registry::new([model_0]).unwrap();
    let leaves = [l0.clone(), l0.clone(), l0.clone(), l1.clone()];
    let p0 = path(&only_model_0, 0);
    let paths = [p0.clone(), p0.clone(), p0.clone(), path(&s.registry, 1)];
    let forged = s
        .circuits
        .prove_chunk_with_cut(ChunkCut::RegistryRoot, &leaves, &paths, only_model_0.root_hash(), [true; 3], None)
        .expect("the malicious prover produces a proof");
    assert_eq!(forged.public_inputs().unwrap().registry_root, only_model_0.root(), "it claims the smaller registry");
    assert!(matches!(s.circuits.verify_root(&forged), Err(Error::InvalidProof(_))));

    let paths = [path(&s.registry, 0), path(&s.registry, 0), path(&s.registry, 0), path(&s.registry, 1)];
    let honest = s
        .circuits
        .prove_chunk_with_cut(ChunkCut::RegistryRoot, &leaves, &paths, s.registry.root_hash(), [true; 3], None)
        .unwrap();
    s.circuits.verify_root(&honest).unwrap();
}

/// The registry entry's digest is the digest of the cap the proof verified under: a prover
/// whose wiring frees the last slot's entry digest shows model 0 registered with model 1's leaf
/// circuit while verifying model 0's own leaf proof, and the verifier rejects it; with the true
/// digest the same prover is accepted.
#[test]
fn a_registry_entry_of_another_circuit_is_rejected_by_the_verifier() {
    let s = setup();
    let (l0, _) = leaf(0, 52);
    let (l1, _) = leaf(1, 53);
    let [model_0, model_1] = [0, 1].map(|m| s.leaf_circuits[m].model_id());
    let digest_of = |m: usize| s.leaf_circuits[m].verifier_data().verifier_only.circuit_digest;
    // Model 1 honestly, model 0 with model 1's leaf circuit.
    let swapped = Registry::new([
        *s.registry.entry(&model_1).unwrap(),
        RegistryEntry { model_id: model_0, leaf_digest: s.leaf_circuits[1].digest() },
    ])
    .unwrap();
    let leaves = [l1.clone(), l1.clone(), l1.clone(), l0.clone()];
    let paths = |r: &Registry| [path(r, 1), path(r, 1), path(r, 1), path(r, 0)];
    let cut = ChunkCut::CircuitDigest;
    let forged = s
        .circuits
        .prove_chunk_with_cut(cut, &leaves, &paths(&swapped), swapped.root_hash(), [true; 3], Some(digest_of(1)))
        .expect("the malicious prover produces a proof");
    assert!(matches!(s.circuits.verify_root(&forged), Err(Error::InvalidProof(_))));

    let honest = s
        .circuits
        .prove_chunk_with_cut(cut, &leaves, &paths(&s.registry), s.registry.root_hash(), [true; 3], Some(digest_of(0)))
        .unwrap();
    s.circuits.verify_root(&honest).unwrap();
}

#[test]
fn tampered_or_foreign_children_are_rejected_by_the_chunk_and_the_merge() {
    let s = setup();
    let (l0, _) = leaf(0, 40);
    let (l1, _) = leaf(1, 41);
    // A tampered public input (the subtree root) of a leaf.
    let mut tampered = l1.clone();
    tampered.proof.public_inputs[0] += F::ONE;
    assert!(matches!(s.circuits.prove_chunk(&[l0.clone(), tampered], &s.registry), Err(Error::Proving(_))));
    // A leaf of a model the registry does not list.
    let model_0 = *s.registry.entry(&s.leaf_circuits[0].model_id()).unwrap();
    let only_model_0 = Registry::new([model_0]).unwrap();
    assert!(matches!(s.circuits.prove_chunk(&[l0.clone(), l1.clone()], &only_model_0), Err(Error::Registry(_))));

    let c0 = s.circuits.prove_chunk(&[l0], &s.registry).unwrap();
    let c1 = s.circuits.prove_chunk(&[l1], &s.registry).unwrap();
    let mut tampered = c1.clone();
    tampered.proof.public_inputs[0] += F::ONE;
    assert!(matches!(s.circuits.prove_merge(&c0, &tampered), Err(Error::Proving(_))));
    // A child claiming to be a merge proof while it is a chunk proof.
    let mut wrong_kind = c1.clone();
    wrong_kind.kind = SubtreeKind::Merge;
    assert!(matches!(s.circuits.prove_merge(&c0, &wrong_kind), Err(Error::Proving(_))));
    // Random bytes as a proof of any kind.
    let noise: Vec<u8> = (0..5000u32).map(|i| (i * 7919 % 251) as u8).collect();
    for kind in [SubtreeKind::Leaf, SubtreeKind::Chunk, SubtreeKind::Merge] {
        assert!(s.circuits.decode(&noise, kind).is_err());
    }
}

#[test]
fn a_non_canonical_commitment_element_is_rejected() {
    // x = 0 written as x + p = 2^64 - 2^32 + 1: high half 2^32 - 1, low half 1.
    let mut b = CircuitBuilder::<F, D>::new(aggregation_config());
    let (x, lo, hi) = (b.add_virtual_target(), b.add_virtual_target(), b.add_virtual_target());
    let two32 = b.constant(F::from_canonical_u64(1 << 32));
    let recomposed = b.mul_add(hi, two32, lo);
    b.connect(x, recomposed);
    let bits = canonical_halves_bits_be(&mut b, lo, hi);
    for bit in &bits {
        b.register_public_input(bit.target);
    }
    let data = b.build::<C>();
    let prove = |lo_v: u64, hi_v: u64| {
        let mut pw = PartialWitness::new();
        pw.set_target(x, F::ZERO).unwrap();
        pw.set_target(lo, F::from_canonical_u64(lo_v)).unwrap();
        pw.set_target(hi, F::from_canonical_u64(hi_v)).unwrap();
        tgrid_circuits::prove_circuit(&data, pw)
    };
    let ok = prove(0, 0).unwrap();
    assert!(ok.public_inputs.iter().all(|&b| b == F::ZERO));
    assert!(prove(1, u32::MAX as u64).is_err());
}

#[test]
fn batch_files_reject_malformed_bytes() {
    let file = BatchFile {
        registry_root: [1; 32],
        leaves: vec![vector(0), vector(1)],
        root_is_merge: true,
        proof: vec![9; 40],
    };
    let bytes = file.to_bytes();
    assert_eq!(BatchFile::from_bytes(&bytes).unwrap(), file);
    for cut in 0..bytes.len() {
        assert!(BatchFile::from_bytes(&bytes[..cut]).is_err());
    }
    let mut huge = bytes.clone();
    huge[10 + 32..10 + 36].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(BatchFile::from_bytes(&huge), Err(Error::Task(_)) | Err(Error::Format(_))));
    let mut bad_kind = bytes.clone();
    let kind_at = 10 + 32 + 4 + 2 * TaskLeaf::ENCODED_LEN;
    bad_kind[kind_at] = 2;
    assert!(BatchFile::from_bytes(&bad_kind).is_err());
}

#[test]
fn audit_paths_lead_to_the_batch_root_and_nowhere_else() {
    use crate::batch::{audit_path, root_from_audit_path};
    for n in 1..=13usize {
        let hashes: Vec<[u8; 32]> = (0..n).map(|i| [i as u8 + 1; 32]).collect();
        let root = batch_root(&hashes).unwrap();
        for (i, leaf) in hashes.iter().enumerate() {
            let path = audit_path(&hashes, i).unwrap();
            assert_eq!(root_from_audit_path(leaf, i, n, &path), Some(root), "leaf {i} of {n}");
            // Another leaf, another position, a truncated or extended path: not the root.
            assert_ne!(root_from_audit_path(&[0xee; 32], i, n, &path), Some(root));
            if n > 1 {
                assert_ne!(root_from_audit_path(leaf, (i + 1) % n, n, &path), Some(root));
                assert_ne!(root_from_audit_path(leaf, i, n, &path[..path.len() - 1]), Some(root));
            }
            let mut longer = path.clone();
            longer.push([0; 32]);
            assert_eq!(root_from_audit_path(leaf, i, n, &longer), None);
        }
        assert!(audit_path(&hashes, n).is_none());
        assert!(root_from_audit_path(&hashes[0], n, n, &[]).is_none());
    }
}
