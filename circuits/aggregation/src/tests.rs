//! Aggregation tests on two small models: registry trees, batch roots against the contract's
//! vectors, normalization, leaf, chunk and merge proofs, batch files, and rejection of every way to
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
use crate::tree::{canonical_halves_bits_be, ChunkCut, LeafCut, MergeCut};
use crate::{AggregationCircuits, Error, MergeShape, NormalizedProof, Normalizer, SubtreeKind, SubtreeProof};

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
    RegistryEntry { model_id: [seed; 32], normalized_digest: digest }
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
    clash.normalized_digest[31] ^= 1;
    assert!(matches!(Registry::new([entry(1), clash]), Err(Error::Registry(_))));
    let mut not_a_hash = entry(7);
    not_a_hash.normalized_digest = [0xFF; 32];
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
            normalized_digest: format!("0x{}", hex::encode(e.normalized_digest)),
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
    let tampered = text.replacen(&loaded.models[0].normalized_digest[2..6], "0000", 1);
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
/// salted commitments, under its private model id), their normalizers, a registry holding both,
/// and the aggregation circuits, built once for all tests.
struct Setup {
    provers: Vec<TaskProver>,
    normalizers: Vec<Normalizer>,
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
        let normalizers: Vec<_> = models
            .iter()
            .map(|(m, p)| Normalizer::new(TaskVerifier::with_privacy(m, &plan, *p).unwrap()).unwrap())
            .collect();
        let registry = Registry::new(
            normalizers.iter().map(|n| RegistryEntry { model_id: n.model_id(), normalized_digest: n.digest() }),
        )
        .unwrap();
        Setup { provers, normalizers, registry, circuits: AggregationCircuits::build().unwrap() }
    })
}

fn task_id(i: u64) -> [u8; 32] {
    let mut t = [0xA5; 32];
    t[24..].copy_from_slice(&i.to_be_bytes());
    t
}

/// Proves and normalizes task `i` of model `m`.
fn normalized(m: usize, i: u64) -> (TaskProof, NormalizedProof, TaskLeaf) {
    let s = setup();
    let input = random_input(i, 16);
    let prover = &s.provers[m];
    let (proof, _, _) = match prover.privacy() {
        Privacy::Public => prover.prove(&input, task_id(i), [0x42; 20], &mut |_, _, _| {}).unwrap(),
        Privacy::Private => {
            prover.prove_private(&input, &Salt::random(), task_id(i), [0x42; 20], &mut |_, _, _| {}).unwrap()
        }
    };
    let (publics, norm) = s.normalizers[m].normalize(&proof).unwrap();
    (proof, norm, TaskLeaf::from_publics(&publics))
}

fn leaf(m: usize, i: u64) -> (SubtreeProof, TaskLeaf) {
    let (_, norm, leaf) = normalized(m, i);
    (setup().circuits.prove_leaf(&norm, &setup().registry).unwrap(), leaf)
}

#[test]
fn normalized_circuits_share_one_shape_and_differ_in_digest() {
    // One shape for a public and a private (zero-knowledge) task proof.
    let s = setup();
    assert_eq!(s.provers[1].task_model_id(), s.normalizers[1].model_id());
    assert_ne!(s.normalizers[1].model_id(), s.provers[1].model().model_id(), "the private variant's id");
    let (a, b) = (s.normalizers[0].verifier_data(), s.normalizers[1].verifier_data());
    assert_eq!(a.common, b.common);
    assert_eq!(&a.common, crate::shape::NORMALIZED.common());
    assert_ne!(s.normalizers[0].digest(), s.normalizers[1].digest());
}

/// A transformer-style task proof (token embedding, LayerNorm, causal attention with Softmax,
/// function tables: several lookup tables) normalizes to the one standard shape and becomes a
/// leaf of a registry that lists it.
#[test]
fn a_language_model_task_normalizes_to_the_standard_shape_and_proves_a_leaf() {
    let model = tgrid_circuits::testing::language_model(3);
    let plan = SegmentPlan::default();
    let prover = TaskProver::new(model.clone(), plan.clone()).unwrap();
    let tokens: Vec<i8> = [4u8, 8, 1, 5, 9, 2].iter().map(|&id| (id ^ 0x80) as i8).collect();
    let (proof, _, _) = prover.prove(&tokens, task_id(40), [0x42; 20], &mut |_, _, _| {}).unwrap();
    let normalizer = Normalizer::new(TaskVerifier::new(&model, &plan).unwrap()).unwrap();
    assert_eq!(&normalizer.verifier_data().common, crate::shape::NORMALIZED.common());
    let (publics, norm) = normalizer.normalize(&proof).unwrap();
    let registry =
        Registry::new([RegistryEntry { model_id: normalizer.model_id(), normalized_digest: normalizer.digest() }])
            .unwrap();
    let leaf = setup().circuits.prove_leaf(&norm, &registry).unwrap();
    let p = leaf.public_inputs().unwrap();
    assert_eq!((p.root, p.count), (TaskLeaf::from_publics(&publics).hash(), 1));
}

#[test]
fn chunks_of_one_to_four_tasks_prove_the_contract_root() {
    let s = setup();
    let (l0, t0) = leaf(0, 10);
    let (l1, t1) = leaf(1, 11);
    let (l2, t2) = leaf(0, 12);
    let p0 = l0.public_inputs().unwrap();
    assert_eq!((p0.root, p0.count, p0.registry_root), (t0.hash(), 1, s.registry.root()));
    // RFC 6962 shape for 3 leaves: (l0 l1) l2.
    let three = s.circuits.prove_chunk(&[l0.clone(), l1.clone(), l2.clone()]).unwrap();
    let publics = s.circuits.verify_root(&three).unwrap();
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
    let one = s.circuits.prove_chunk(std::slice::from_ref(&l0)).unwrap();
    s.circuits.verify_batch(&s.circuits.batch_file(vec![t0], &one).unwrap(), &s.registry.root()).unwrap();
    // Four: node(node(a, b), node(c, d)) (the circuit does not look at repeats: batches do).
    let four = s.circuits.prove_chunk(&[l0.clone(), l1.clone(), l2.clone(), l0.clone()]).unwrap();
    let p = s.circuits.verify_root(&four).unwrap();
    let expected = node_hash(&node_hash(&t0.hash(), &t1.hash()), &node_hash(&t2.hash(), &t0.hash()));
    assert_eq!((p.root, p.count), (expected, 4));
    // Neither none nor five leaves, nor a chunk as a leaf.
    assert!(matches!(s.circuits.prove_chunk(&[]), Err(Error::InvalidBatch(_))));
    let five = [l0.clone(), l1.clone(), l2.clone(), l0.clone(), l1.clone()];
    assert!(matches!(s.circuits.prove_chunk(&five), Err(Error::InvalidBatch(_))));
    assert!(matches!(s.circuits.prove_chunk(&[l0.clone(), one.clone()]), Err(Error::InvalidBatch(_))));

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
    let four = s.circuits.prove_chunk(&proofs[0..4]).unwrap();
    let last = s.circuits.prove_chunk(&proofs[4..5]).unwrap();
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
fn a_chunk_with_a_cut_constraint_is_rejected_by_the_verifier() {
    let s = setup();
    let (l0, _) = leaf(0, 70);
    let (l1, _) = leaf(1, 71);
    // A last leaf proven against another registry root.
    let other = Registry::new([s.registry.entries()[0], s.registry.entries()[1], entry(9)]).unwrap();
    let (_, norm, _) = normalized(1, 72);
    let foreign = s.circuits.prove_leaf(&norm, &other).unwrap();
    let leaves = [l0.clone(), l1.clone(), l1.clone(), foreign];
    let forged = s.circuits.prove_chunk_with_cut(ChunkCut::LastRegistryRoot, &leaves, [true; 3]).unwrap();
    assert!(matches!(s.circuits.verify_root(&forged), Err(Error::InvalidProof(_))));
    // Slot 2 without slot 1: node(node(a, b), c) with the count of two leaves.
    let leaves = [l0.clone(), l1.clone(), l0.clone(), l1.clone()];
    let forged = s.circuits.prove_chunk_with_cut(ChunkCut::SlotOrder, &leaves, [false, true, false]).unwrap();
    assert!(matches!(s.circuits.verify_root(&forged), Err(Error::InvalidProof(_))));
    // The same malicious prover with honest values: accepted (the cut alone is not the fault).
    let honest = s.circuits.prove_chunk_with_cut(ChunkCut::SlotOrder, &leaves, [true, true, false]).unwrap();
    assert_eq!(s.circuits.verify_root(&honest).unwrap().count, 3);
}

#[test]
fn a_merge_with_a_cut_constraint_is_rejected_by_the_verifier() {
    let s = setup();
    let (l0, _) = leaf(0, 50);
    let (l1, _) = leaf(1, 51);
    let c0 = s.circuits.prove_chunk(&[l0]).unwrap();
    let c1 = s.circuits.prove_chunk(&[l1]).unwrap();
    // A third child proven against another registry root.
    let other = Registry::new([s.registry.entries()[0], s.registry.entries()[1], entry(9)]).unwrap();
    let (_, norm, _) = normalized(1, 52);
    let foreign = s.circuits.prove_chunk(&[s.circuits.prove_leaf(&norm, &other).unwrap()]).unwrap();
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
fn an_unregistered_model_cannot_get_a_leaf() {
    let s = setup();
    let (_, norm, _) = normalized(1, 20);
    let only_model_0 = Registry::new([s.registry.entry(&s.normalizers[0].model_id()).copied().unwrap()]).unwrap();
    assert!(matches!(s.circuits.prove_leaf(&norm, &only_model_0), Err(Error::Registry(_))));
    // Bypassing the native check with model 0's membership path fails in the circuit.
    let (_, membership) = only_model_0.membership(&s.normalizers[0].model_id()).unwrap();
    let result = s.circuits.prove_leaf_unchecked(&norm, only_model_0.root_hash(), &membership);
    assert!(matches!(result, Err(Error::Proving(_))), "{result:?}");
}

#[test]
fn verifier_data_of_another_circuit_is_rejected_in_the_leaf() {
    let s = setup();
    let (_, mut norm, _) = normalized(0, 30);
    // Model 1's cap with model 0's proof: the digest derived from the cap is registered, but
    // the proof does not verify against it.
    norm.verifier = s.normalizers[1].verifier_data().verifier_only;
    let (_, membership) = s.registry.membership(&s.normalizers[1].model_id()).unwrap();
    let result = s.circuits.prove_leaf_unchecked(&norm, s.registry.root_hash(), &membership);
    assert!(matches!(result, Err(Error::Proving(_))), "{result:?}");
}

/// Registry membership reaches the verifier: a prover whose wiring leaves the path's root free
/// proves a leaf of model 1 under a registry that lists only model 0 (model 0's path), and the
/// verifier of the real leaf circuit rejects it; the same prover with an honest witness is
/// accepted (the rejection is the missing constraint's, not the malicious prover's).
#[test]
fn a_leaf_outside_the_registry_is_rejected_by_the_verifier() {
    let s = setup();
    let (_, norm, _) = normalized(1, 50);
    let model_0 = *s.registry.entry(&s.normalizers[0].model_id()).unwrap();
    let only_model_0 = Registry::new([model_0]).unwrap();
    let (_, path_of_0) = only_model_0.membership(&model_0.model_id).unwrap();
    let unused = norm.verifier.circuit_digest;
    let forged = s
        .circuits
        .prove_leaf_with_cut(LeafCut::RegistryRoot, &norm, only_model_0.root_hash(), &path_of_0, unused)
        .expect("the malicious prover produces a proof");
    assert_eq!(forged.public_inputs().unwrap().registry_root, only_model_0.root(), "it claims the smaller registry");
    assert!(matches!(s.circuits.verify_root(&forged), Err(Error::InvalidProof(_))));

    let (_, path_of_1) = s.registry.membership(&s.normalizers[1].model_id()).unwrap();
    let honest = s
        .circuits
        .prove_leaf_with_cut(LeafCut::RegistryRoot, &norm, s.registry.root_hash(), &path_of_1, unused)
        .unwrap();
    s.circuits.verify_root(&honest).unwrap();
}

/// The registry entry's digest is the digest of the cap the proof verified under: a prover
/// whose wiring frees the entry's digest shows model 0 registered with model 1's normalized
/// circuit while verifying model 0's own proof, and the verifier rejects it; with the true
/// digest the same prover is accepted.
#[test]
fn a_registry_entry_of_another_circuit_is_rejected_by_the_verifier() {
    let s = setup();
    let (_, norm, _) = normalized(0, 51);
    let model_0 = s.normalizers[0].model_id();
    let digest_of = |n: &Normalizer| n.verifier_data().verifier_only.circuit_digest;
    let swapped =
        Registry::new([RegistryEntry { model_id: model_0, normalized_digest: s.normalizers[1].digest() }]).unwrap();
    let (_, path) = swapped.membership(&model_0).unwrap();
    let forged = s
        .circuits
        .prove_leaf_with_cut(LeafCut::CircuitDigest, &norm, swapped.root_hash(), &path, digest_of(&s.normalizers[1]))
        .expect("the malicious prover produces a proof");
    assert!(matches!(s.circuits.verify_root(&forged), Err(Error::InvalidProof(_))));

    let (_, path) = s.registry.membership(&model_0).unwrap();
    let honest = s
        .circuits
        .prove_leaf_with_cut(LeafCut::CircuitDigest, &norm, s.registry.root_hash(), &path, digest_of(&s.normalizers[0]))
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
    assert!(matches!(s.circuits.prove_chunk(&[l0.clone(), tampered]), Err(Error::Proving(_))));
    // A leaf proven against another registry root.
    let other = Registry::new([s.registry.entries()[0], s.registry.entries()[1], entry(9)]).unwrap();
    let (_, norm, _) = normalized(1, 42);
    let foreign = s.circuits.prove_leaf(&norm, &other).unwrap();
    assert!(matches!(s.circuits.prove_chunk(&[l0.clone(), foreign]), Err(Error::InvalidBatch(_))));

    let c0 = s.circuits.prove_chunk(&[l0]).unwrap();
    let c1 = s.circuits.prove_chunk(&[l1]).unwrap();
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
