use std::ffi::OsString;

use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::field::types::Field;
use plonky2::iop::target::BoolTarget;
use plonky2::iop::witness::{PartialWitness, WitnessWrite};
use plonky2::plonk::circuit_data::CircuitConfig;
use plonky2::plonk::config::{GenericHashOut, PoseidonGoldilocksConfig};
use plonky2::plonk::proof::ProofWithPublicInputs;
use tgrid_sha256::CircuitBuilderSha256;

use super::*;
use crate::entry::HEADER_LEN;
use crate::process::root_from;

type F = GoldilocksField;
type C = PoseidonGoldilocksConfig;
const D: usize = 2;

/// A small circuit with the SHA-256 gates; its input bits are its public inputs.
fn sha_builder() -> (CircuitBuilder<F, D>, Vec<BoolTarget>) {
    let mut b = CircuitBuilder::<F, D>::new(CircuitConfig::standard_recursion_config());
    let bits: Vec<BoolTarget> = (0..64).map(|_| b.add_virtual_bool_target_safe()).collect();
    for bit in &bits {
        b.register_public_input(bit.target);
    }
    let digest = b.sha256_bits_gated(&bits);
    b.register_public_inputs(&digest.words.map(|w| w.0));
    (b, bits)
}

fn prove_sha(data: &CircuitData<F, C, D>, bits: &[BoolTarget]) -> ProofWithPublicInputs<F, C, D> {
    let mut pw = PartialWitness::new();
    for (i, bit) in bits.iter().enumerate() {
        pw.set_bool_target(*bit, i % 3 == 0).unwrap();
    }
    data.prove(pw).unwrap()
}

/// A circuit that verifies a proof of `inner` (the recursive verifier's gates and generators).
fn recursive_builder(
    inner: &CircuitData<F, C, D>,
) -> (CircuitBuilder<F, D>, plonky2::plonk::proof::ProofWithPublicInputsTarget<D>) {
    let mut b = CircuitBuilder::<F, D>::new(CircuitConfig::standard_recursion_config());
    let proof = b.add_virtual_proof_with_pis(&inner.common);
    let vd = b.constant_verifier_data(&inner.verifier_only);
    b.verify_proof::<C>(&proof, &vd, &inner.common);
    b.register_public_inputs(&proof.public_inputs);
    (b, proof)
}

/// The entry kind of circuits proven with configuration `Cfg`.
fn kind<Cfg>() -> String {
    format!("circuit {} {D}", std::any::type_name::<Cfg>())
}

/// A cache under a new temporary root (kept alive by the returned directory).
fn fresh_cache() -> (tempfile::TempDir, CircuitCache) {
    let root = tempfile::tempdir().unwrap();
    let cache = CircuitCache::open(root.path()).unwrap();
    (root, cache)
}

fn entries(cache: &CircuitCache) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(cache.dir()).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

#[test]
fn a_stored_circuit_loads_identical_and_proves() {
    let (_root, cache) = fresh_cache();
    let key = CircuitKey::new("sha");

    let (builder, bits) = sha_builder();
    let (built, source): (CircuitData<F, C, D>, _) = cache.build_traced(&key, builder);
    assert_eq!(source, Source::Built);
    assert_eq!(entries(&cache).len(), 1, "the build is stored");

    let (builder, loaded_bits) = sha_builder();
    let (loaded, source): (CircuitData<F, C, D>, _) = cache.build_traced(&key, builder);
    assert_eq!(source, Source::Loaded);
    assert_eq!(loaded_bits, bits);
    assert_eq!(loaded.verifier_only.circuit_digest, built.verifier_only.circuit_digest);
    assert_eq!(loaded.common, built.common);

    // A proof made with the loaded data verifies under the freshly built circuit and back.
    built.verify(prove_sha(&loaded, &loaded_bits)).unwrap();
    loaded.verify(prove_sha(&built, &bits)).unwrap();

    // Recursion: the verifier gadget's gates and generators survive the round trip too.
    let inner = built;
    let inner_proof = prove_sha(&inner, &bits);
    let key = CircuitKey::new("outer").with(inner.verifier_only.circuit_digest.to_bytes());
    let (builder, _) = recursive_builder(&inner);
    let fresh: CircuitData<F, C, D> = cache.build(&key, builder);
    let (builder, target) = recursive_builder(&inner);
    let (outer, source): (CircuitData<F, C, D>, _) = cache.build_traced(&key, builder);
    assert_eq!(source, Source::Loaded);
    assert_eq!(outer.verifier_only.circuit_digest, fresh.verifier_only.circuit_digest);
    let mut pw = PartialWitness::new();
    pw.set_proof_with_pis_target(&target, &inner_proof).unwrap();
    fresh.verify(outer.prove(pw).unwrap()).unwrap();
    assert_eq!(entries(&cache).len(), 2);
}

#[test]
fn common_data_round_trips() {
    let (_root, cache) = fresh_cache();
    let key = CircuitKey::new("shape");
    let make = || sha_builder().0.mock_build::<C>().common;
    let (made, source) = cache.common(&key, make);
    assert_eq!(source, Source::Built);
    let (loaded, source) = cache.common(&key, || unreachable!("the entry is intact"));
    assert_eq!(source, Source::Loaded);
    assert_eq!(loaded, made);
    // Common data and a circuit under the same key are different entries.
    let (builder, _) = sha_builder();
    let (_, source): (CircuitData<F, C, D>, _) = cache.build_traced(&key, builder);
    assert_eq!(source, Source::Built);
}

#[test]
fn other_inputs_or_config_types_get_other_entries() {
    let (_root, cache) = fresh_cache();
    let a = CircuitKey::new("same").with(b"ab").with(b"c");
    let b = CircuitKey::new("same").with(b"a").with(b"bc");
    assert_ne!(cache.entry_key(&kind::<C>(), &a), cache.entry_key(&kind::<C>(), &b));
    assert_ne!(
        cache.entry_key(&kind::<C>(), &a),
        cache.entry_key(&kind::<C>(), &CircuitKey::new("other").with(b"ab").with(b"c"))
    );
    type Keccak = plonky2::plonk::config::KeccakGoldilocksConfig;
    assert_ne!(cache.entry_key(&kind::<C>(), &a), cache.entry_key(&kind::<Keccak>(), &a));
    assert_eq!(cache.entry_key(&kind::<C>(), &a), cache.entry_key(&kind::<C>(), &a.clone()));
    // Names that share a file-name form keep apart keys.
    let (dot, underscore) = (CircuitKey::new("a.b"), CircuitKey::new("a_b"));
    assert_eq!(dot.name(), underscore.name());
    assert_ne!(cache.entry_key(&kind::<C>(), &dot), cache.entry_key(&kind::<C>(), &underscore));
}

#[test]
fn a_damaged_entry_is_rebuilt_and_replaced() {
    let (_root, cache) = fresh_cache();
    let key = CircuitKey::new("sha");
    let (builder, _) = sha_builder();
    let reference: CircuitData<F, C, D> = cache.build(&key, builder);
    let path = entries(&cache).pop().unwrap();
    let good = fs::read(&path).unwrap();

    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    let damaged: Vec<(&str, Vec<u8>)> = vec![
        ("flipped payload byte", flipped),
        ("truncated", good[..good.len() / 2].to_vec()),
        ("header only", good[..HEADER_LEN].to_vec()),
        ("empty", Vec::new()),
        ("random bytes", (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect()),
    ];
    for (what, bytes) in damaged {
        fs::write(&path, &bytes).unwrap();
        let (builder, bits) = sha_builder();
        let (data, source): (CircuitData<F, C, D>, _) = cache.build_traced(&key, builder);
        assert_eq!(source, Source::Built, "{what}");
        assert_eq!(data.verifier_only.circuit_digest, reference.verifier_only.circuit_digest, "{what}");
        reference.verify(prove_sha(&data, &bits)).unwrap();
        assert_eq!(fs::read(&path).unwrap(), good, "{what}: the entry is rewritten");
    }
}

#[test]
fn an_entry_under_another_key_is_not_used() {
    let (_root, cache) = fresh_cache();
    let (builder, _) = sha_builder();
    let _: CircuitData<F, C, D> = cache.build(&CircuitKey::new("sha").with(b"one"), builder);
    let one = entries(&cache).pop().unwrap();

    // The other key's file name, with the first key's content: refused on the header's key.
    let mut small = CircuitBuilder::<F, D>::new(CircuitConfig::standard_recursion_config());
    let x = small.add_virtual_target();
    small.register_public_input(x);
    let two = CircuitKey::new("sha").with(b"two");
    let digest = cache.entry_key(&kind::<C>(), &two);
    let two_path = cache.dir().join(format!("sha-{}.bin", hex::encode(&digest[..8])));
    fs::copy(&one, &two_path).unwrap();
    let (data, source): (CircuitData<F, C, D>, _) = cache.build_traced(&two, small);
    assert_eq!(source, Source::Built);
    assert_eq!(data.common.num_public_inputs, 1, "built from its own builder");
    let mut pw = PartialWitness::new();
    pw.set_target(x, F::from_canonical_u64(7)).unwrap();
    data.verify(data.prove(pw).unwrap()).unwrap();
}

#[test]
fn builds_without_an_enabled_cache_are_plain_builds() {
    // Library tests never enable a cache: `build` is then plonky2's build.
    assert!(installed().is_none());
    let (builder, bits) = sha_builder();
    let data: CircuitData<F, C, D> = build(&CircuitKey::new("sha"), builder);
    data.verify(prove_sha(&data, &bits)).unwrap();
}

#[test]
fn old_executables_are_pruned_and_foreign_directories_kept() {
    let root = tempfile::tempdir().unwrap();
    let base = SystemTime::now() - std::time::Duration::from_secs(3600);
    for i in 0..KEEP_EXECUTABLES + 2 {
        let dir = root.path().join(format!("{i:016x}"));
        fs::create_dir(&dir).unwrap();
        fs::File::open(&dir).unwrap().set_modified(base + std::time::Duration::from_secs(i as u64)).unwrap();
    }
    fs::create_dir(root.path().join("keep-me")).unwrap();
    let cache = CircuitCache::open(root.path()).unwrap();
    let mut left: Vec<String> =
        fs::read_dir(root.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    let mine = cache.dir().file_name().unwrap().to_string_lossy().into_owned();
    let mut expected: Vec<String> = (3..KEEP_EXECUTABLES + 2).map(|i| format!("{i:016x}")).collect();
    expected.push(mine);
    expected.push("keep-me".into());
    expected.sort();
    assert_eq!(left, expected);
}

#[test]
fn the_default_root_follows_the_environment() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
    };
    assert_eq!(root_from(env(&[(ENV, "off"), ("HOME", "/h")])), None);
    assert_eq!(root_from(env(&[(ENV, "/c"), ("HOME", "/h")])), Some(PathBuf::from("/c")));
    assert_eq!(root_from(env(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")])), Some(PathBuf::from("/x/tgrid/circuits")));
    assert_eq!(root_from(env(&[("HOME", "/h")])), Some(PathBuf::from("/h/.cache/tgrid/circuits")));
    assert_eq!(root_from(env(&[])), None);
}

#[test]
fn a_directory_pruned_by_another_executable_is_recreated_on_store() {
    let (_root, cache) = fresh_cache();
    fs::remove_dir_all(cache.dir()).unwrap();
    let (builder, _) = sha_builder();
    let (_, source): (CircuitData<F, C, D>, _) = cache.build_traced(&CircuitKey::new("sha"), builder);
    assert_eq!(source, Source::Built);
    let (builder, _) = sha_builder();
    let (_, source): (CircuitData<F, C, D>, _) = cache.build_traced(&CircuitKey::new("sha"), builder);
    assert_eq!(source, Source::Loaded);
}

#[test]
fn other_values_are_kept_like_circuits_and_a_failed_make_stores_nothing() {
    let (_root, cache) = fresh_cache();
    let key = CircuitKey::new("matrices").with(b"final circuit digest");
    let decode = |bytes: &[u8]| -> Result<Vec<u8>, String> {
        (bytes.first() == Some(&7)).then(|| bytes.to_vec()).ok_or_else(|| "not ours".to_string())
    };
    let encode = |value: &Vec<u8>| Ok(value.clone());

    // A failed make is returned as is and leaves no entry behind.
    let failed = cache.try_fetch_or_make("value", &key, decode, || Err::<Vec<u8>, _>("synthesis failed"), encode);
    assert_eq!(failed.unwrap_err(), "synthesis failed");
    assert!(entries(&cache).is_empty());

    let made = cache.try_fetch_or_make("value", &key, decode, || Ok::<_, ()>(vec![7, 1, 2]), encode).unwrap();
    assert_eq!(made, (vec![7, 1, 2], Source::Built));
    let loaded = cache.try_fetch_or_make("value", &key, decode, || Ok::<_, ()>(vec![7, 9]), encode).unwrap();
    assert_eq!(loaded, (vec![7, 1, 2], Source::Loaded));
    // Another kind under the same key is another entry.
    let other = cache.try_fetch_or_make("other", &key, decode, || Ok::<_, ()>(vec![7, 5]), encode).unwrap();
    assert_eq!(other, (vec![7, 5], Source::Built));

    // An intact entry the decoder refuses is rebuilt and replaced.
    let refused = cache.try_fetch_or_make("value", &key, |_| Err("refused".into()), || Ok::<_, ()>(vec![7, 3]), encode);
    assert_eq!(refused.unwrap(), (vec![7, 3], Source::Built));
    let loaded = cache.try_fetch_or_make("value", &key, decode, || Ok::<_, ()>(vec![7, 9]), encode).unwrap();
    assert_eq!(loaded, (vec![7, 3], Source::Loaded));
    assert_eq!(entries(&cache).len(), 2);
}
