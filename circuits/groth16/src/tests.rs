//! The prover against arkworks' verifier on a real circuit (a Poseidon preimage), the key files,
//! and the EVM encodings against the committed Solidity verifier.

use ark_bn254::{Bn254, Fr};
use ark_ff::{AdditiveGroup, UniformRand};
use ark_groth16::ProvingKey;
use ark_r1cs_std::fields::fp::FpVar;
use ark_r1cs_std::prelude::*;
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystemRef, SynthesisError};
use rand::SeedableRng;
use std::sync::OnceLock;
use tgrid_poseidon_bn254::POSEIDON_T3;

use crate::backend::{CpuBackend, Domain, ProverBackend, Transform};
use crate::evm::{
    proof_calldata, proof_from_calldata, public_input_scalar, verifying_key_digest, verifying_key_from_json,
    verifying_key_json,
};
use crate::keys::{insecure_devnet_setup, load_proving_key, save_proving_key, KeyFile};
use crate::{prove, prove_with_matrices, verify, Error, R1csMatrices};

/// Knowledge of `(a, b)` with `poseidon(a, b) = y`, `y` public.
#[derive(Clone)]
struct Preimage {
    a: Fr,
    b: Fr,
    y: Fr,
}

impl ConstraintSynthesizer<Fr> for Preimage {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let y = FpVar::new_input(cs.clone(), || Ok(self.y))?;
        let a = FpVar::new_witness(cs.clone(), || Ok(self.a))?;
        let b = FpVar::new_witness(cs, || Ok(self.b))?;
        let mut state = [FpVar::zero(), a, b];
        POSEIDON_T3.permute_var(&mut state)?;
        state[0].enforce_equal(&y)
    }
}

fn poseidon(a: Fr, b: Fr) -> Fr {
    let mut s = [Fr::ZERO, a, b];
    POSEIDON_T3.permute(&mut s);
    s[0]
}

fn instance(seed: u64) -> Preimage {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (a, b) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
    Preimage { a, b, y: poseidon(a, b) }
}

fn key() -> &'static ProvingKey<Bn254> {
    static KEY: OnceLock<ProvingKey<Bn254>> = OnceLock::new();
    KEY.get_or_init(|| insecure_devnet_setup(instance(0), 42).unwrap())
}

#[test]
fn proofs_verify_and_bind_the_public_input() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let statement = instance(5);
    let (proof, stats) = prove(key(), statement.clone(), &CpuBackend, &mut rng).unwrap();
    // 243 for the permutation, less the first S-box of the constant 0, plus the equality.
    assert_eq!(stats.constraints, 241);
    assert_eq!(stats.public_inputs, 1);
    assert!(verify(&key().vk, statement.y, &proof).unwrap());
    assert!(!verify(&key().vk, statement.y + Fr::from(1u64), &proof).unwrap());

    // Zero knowledge: a second proof of the same statement differs.
    let (again, _) = prove(key(), statement.clone(), &CpuBackend, &mut rng).unwrap();
    assert_ne!(again.a, proof.a);
    assert!(verify(&key().vk, statement.y, &again).unwrap());
}

#[test]
fn a_false_statement_or_a_foreign_key_is_refused() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    let mut lie = instance(6);
    lie.y += Fr::from(1u64);
    assert!(matches!(prove(key(), lie, &CpuBackend, &mut rng), Err(Error::Unsatisfied(_))));

    // A key for a circuit with two Poseidon calls does not fit this circuit.
    #[derive(Clone)]
    struct Twice(Preimage);
    impl ConstraintSynthesizer<Fr> for Twice {
        fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
            let x = FpVar::new_witness(cs.clone(), || Ok(self.0.a))?;
            let mut s = [FpVar::zero(), x.clone(), x];
            POSEIDON_T3.permute_var(&mut s)?;
            self.0.generate_constraints(cs)
        }
    }
    assert!(matches!(prove(key(), Twice(instance(7)), &CpuBackend, &mut rng), Err(Error::KeyMismatch(_))));
}

#[test]
fn prebuilt_matrices_prove_the_same_circuit_and_refuse_another() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    let matrices = R1csMatrices::build(instance(0)).unwrap();
    assert_eq!(matrices.num_constraints(), 241);
    let statement = instance(10);
    let (proof, stats) = prove_with_matrices(key(), &matrices, statement.clone(), &CpuBackend, &mut rng).unwrap();
    assert_eq!(stats.constraints, 241);
    assert!(verify(&key().vk, statement.y, &proof).unwrap());

    // A false statement fails the row check, as without prebuilt matrices.
    let mut lie = instance(11);
    lie.y += Fr::from(1u64);
    assert!(matches!(prove_with_matrices(key(), &matrices, lie, &CpuBackend, &mut rng), Err(Error::Unsatisfied(_))));

    // Matrices of another circuit (one more witness variable) are refused before any work.
    #[derive(Clone)]
    struct Padded(Preimage);
    impl ConstraintSynthesizer<Fr> for Padded {
        fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
            let _padding = FpVar::new_witness(cs.clone(), || Ok(self.0.a))?;
            self.0.generate_constraints(cs)
        }
    }
    let other = R1csMatrices::build(Padded(instance(0))).unwrap();
    assert!(matches!(
        prove_with_matrices(key(), &other, instance(12), &CpuBackend, &mut rng),
        Err(Error::KeyMismatch(_))
    ));
}

#[test]
fn matrices_round_trip_through_bytes_and_any_damage_is_refused() {
    let matrices = R1csMatrices::build(instance(0)).unwrap();
    let bytes = matrices.to_bytes().unwrap();
    let loaded = R1csMatrices::from_bytes(&bytes).unwrap();
    assert_eq!(loaded.digest(), matrices.digest());
    assert_eq!(loaded.num_constraints(), 241);
    assert_eq!(loaded.nonzeros(), matrices.nonzeros());
    assert_eq!(loaded.to_bytes().unwrap(), bytes);
    let mut rng = rand::rngs::StdRng::seed_from_u64(13);
    let statement = instance(14);
    let (proof, _) = prove_with_matrices(key(), &loaded, statement.clone(), &CpuBackend, &mut rng).unwrap();
    assert!(verify(&key().vk, statement.y, &proof).unwrap());

    // Every truncation, every flipped byte, trailing bytes and random bytes are errors.
    for len in 0..bytes.len() {
        assert!(R1csMatrices::from_bytes(&bytes[..len]).is_err(), "truncated to {len} bytes");
    }
    for at in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x01;
        assert!(
            matches!(R1csMatrices::from_bytes(&damaged), Err(Error::Malformed { .. })),
            "byte {at} of {} flipped",
            bytes.len()
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(R1csMatrices::from_bytes(&longer).is_err());
    let mut random = vec![0u8; 4096];
    rand::RngCore::fill_bytes(&mut rng, &mut random);
    assert!(R1csMatrices::from_bytes(&random).is_err());
    // A header claiming more of everything than the input holds allocates nothing first.
    let mut huge = bytes[..8].to_vec();
    for _ in 0..4 {
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
    }
    assert!(R1csMatrices::from_bytes(&huge).is_err());
}

#[test]
fn the_matrices_digest_is_the_one_of_one_update_per_number() {
    // The digest names keys on disk and in deployed verifiers' ids: feeding it in blocks must not
    // change it. The reference feeds SHA-256 one number at a time, as the first version did.
    use ark_ff::{BigInteger, PrimeField};
    use sha2::{Digest, Sha256};
    let matrices = R1csMatrices::build(instance(0)).unwrap();
    let bytes = matrices.to_bytes().unwrap();
    // Re-read the parts from the encoding (its layout is documented in `matrices::encoding`).
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let (constraints, instance_vars, witness_vars, coefficients) = (u64_at(8), u64_at(16), u64_at(24), u64_at(32));
    let mut h = Sha256::new();
    h.update(b"tgrid-r1cs-v1");
    for n in [constraints, instance_vars, witness_vars, coefficients] {
        h.update((n as u64).to_le_bytes());
    }
    let mut at = 40;
    for _ in 0..coefficients {
        let c = Fr::from_le_bytes_mod_order(&bytes[at..at + 32]);
        h.update(c.into_bigint().to_bytes_le());
        at += 32;
    }
    for _ in 0..3 {
        let entries = u64_at(at);
        at += 8;
        let mut offset = 0u64;
        h.update(offset.to_le_bytes());
        for _ in 0..constraints {
            offset += u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as u64;
            h.update(offset.to_le_bytes());
            at += 4;
        }
        for _ in 0..entries {
            h.update(&bytes[at..at + 4]);
            h.update(&bytes[at + 4..at + 8]);
            at += 8;
        }
    }
    let reference: [u8; 32] = h.finalize().into();
    assert_eq!(matrices.digest(), reference);
    assert_eq!(&bytes[at..], &reference);
}

#[test]
fn calldata_round_trips_and_rejects_garbage() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let statement = instance(8);
    let (proof, _) = prove(key(), statement.clone(), &CpuBackend, &mut rng).unwrap();
    let words = proof_calldata(&proof);
    assert_eq!(proof_from_calldata(&words).unwrap(), proof);
    for i in 0..8 {
        let mut bad = words;
        bad[i] ^= alloy_primitives::U256::from(1u8);
        // Either not a curve point any more, or a different point the pairing rejects.
        match proof_from_calldata(&bad) {
            Err(Error::Malformed { .. }) => {}
            Ok(p) => assert!(!verify(&key().vk, statement.y, &p).unwrap()),
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert!(proof_from_calldata(&[alloy_primitives::U256::MAX; 8]).is_err());
    assert!(public_input_scalar(&[0xff; 32]).is_err());
    let mut top_cleared = [0xff; 32];
    top_cleared[0] = 0x1f;
    assert!(public_input_scalar(&top_cleared).is_ok());
}

#[test]
fn key_files_round_trip_and_corruption_is_detected() {
    let dir = std::env::temp_dir().join(format!("tgrid-groth16-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("k.pk");
    save_proving_key(&path, b"circuit record", key()).unwrap();
    for validate in [false, true] {
        let (circuit, loaded) = load_proving_key(&path, validate).unwrap();
        assert_eq!(circuit, b"circuit record");
        assert_eq!(loaded.vk, key().vk);
        assert_eq!(loaded.h_query, key().h_query);
    }
    assert_eq!(KeyFile::read(&path).unwrap().verifying_key().unwrap(), key().vk, "the verifying key alone");
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(load_proving_key(&path, false), Err(Error::Malformed { .. })));
    std::fs::write(&path, b"random bytes").unwrap();
    assert!(matches!(load_proving_key(&path, false), Err(Error::Malformed { .. })));
    // A record length past the end, under a valid checksum.
    let mut rest = 900u16.to_le_bytes().to_vec();
    rest.extend_from_slice(b"short");
    let mut bytes = b"TGRIDGK2".to_vec();
    bytes.extend_from_slice(&<sha2::Sha256 as sha2::Digest>::digest(&rest));
    bytes.extend_from_slice(&rest);
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(load_proving_key(&path, false), Err(Error::Malformed { .. })));
    std::fs::write(&path, b"TGRIDG16 an old key").unwrap();
    let old = load_proving_key(&path, false).unwrap_err().to_string();
    assert!(old.contains("version 1"), "{old}");
    assert!(save_proving_key(&path, &[0; 2000], key()).is_err());
    assert!(matches!(load_proving_key(&dir.join("missing"), false), Err(Error::Io { .. })));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The JSON export parses back, and the digest equals the one the Solidity generator put in
/// the committed verifier for the committed devnet key.
#[test]
fn verifying_key_json_and_digest_match_the_solidity_generator() {
    let json = verifying_key_json(&key().vk).unwrap();
    assert_eq!(verifying_key_from_json(&json).unwrap(), key().vk);

    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let committed: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{root}/contracts/test/fixtures/groth16/devnet-insecure.vk.json")).unwrap(),
    )
    .unwrap();
    let vk = verifying_key_from_json(&committed).unwrap();
    let solidity = std::fs::read_to_string(format!("{root}/contracts/verifier/Groth16Verifier.sol")).unwrap();
    let digest = format!("0x{}", hex(&verifying_key_digest(&vk).unwrap()));
    assert!(solidity.contains(&format!("VERIFYING_KEY_DIGEST = {digest}")), "digest {digest} not in the verifier");

    let mut broken = committed.clone();
    broken["vk_alpha_1"][0] = serde_json::json!("1");
    assert!(verifying_key_from_json(&broken).is_err());
    broken["vk_alpha_1"][0] = serde_json::json!("0x12");
    assert!(verifying_key_from_json(&broken).is_err());
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn cpu_ntt_inverts_on_subgroup_and_coset() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(4);
    let v: Vec<Fr> = (0..64).map(|_| Fr::rand(&mut rng)).collect();
    for domain in [Domain::Subgroup, Domain::Coset] {
        let mut w = v.clone();
        CpuBackend.ntt(&mut w, Transform::Forward, domain).unwrap();
        assert_ne!(w, v);
        CpuBackend.ntt(&mut w, Transform::Inverse, domain).unwrap();
        assert_eq!(w, v);
    }
    let mut odd = vec![Fr::ZERO; 3];
    assert!(CpuBackend.ntt(&mut odd, Transform::Forward, Domain::Subgroup).is_err());
    assert!(CpuBackend.msm_g1(&[], &[Fr::ZERO]).is_err());
}
