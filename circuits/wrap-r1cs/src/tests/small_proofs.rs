//! Transcripts of small final-config proofs proved on the spot, for what the fixture does not
//! exercise: lookups (δ challenges, lookup openings), zero knowledge (salted leaves, `hiding`
//! observed as 1), three challenge rounds, other FRI parameters, no grinding.

use std::sync::Arc;

use plonky2::fri::reduction_strategies::FriReductionStrategy;
use plonky2::iop::witness::{PartialWitness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::CircuitConfig;

use super::*;

fn prove_and_check(config: CircuitConfig, lookups: bool) {
    let mut b = CircuitBuilder::<F, D>::new(config);
    let x = b.add_virtual_target();
    let y = b.add_virtual_target();
    let mut acc = b.mul(x, y);
    for _ in 0..20 {
        acc = b.mul_add(acc, x, y);
    }
    b.register_public_input(acc);
    b.register_public_input(x);
    if lookups {
        let table = Arc::new((0..16u16).map(|i| (i, (i * i) % 13)).collect::<Vec<_>>());
        let lut = b.add_lookup_table_from_pairs(table);
        let out = b.add_lookup_from_index(y, lut);
        b.register_public_input(out);
    }
    let data = b.build::<PoseidonBn254GoldilocksConfig>();
    let mut pw = PartialWitness::new();
    pw.set_target(x, F::from_canonical_u64(3)).unwrap();
    pw.set_target(y, F::from_canonical_u64(7)).unwrap();
    let proof = data.prove(pw).unwrap();
    data.verify(proof.clone()).unwrap();

    let digest = data.verifier_only.circuit_digest;
    let s = synthesize(Some(&proof), &data.common, &digest).unwrap();
    let n = native(&proof, &data.common, &digest);
    assert_eq!(n.plonk_deltas.is_empty(), !lookups);
    assert_matches_native(&s, &n, &data.common);
    assert!(s.cs.is_satisfied().unwrap());
}

fn small_config(pow_bits: u32, queries: usize) -> CircuitConfig {
    let mut config = CircuitConfig::standard_recursion_config();
    config.fri_config.proof_of_work_bits = pow_bits;
    config.fri_config.num_query_rounds = queries;
    config.security_bits = 10;
    config
}

#[test]
fn lookups() {
    prove_and_check(small_config(3, 5), true);
}

#[test]
fn zero_knowledge() {
    // Blinding rows grow with the values FRI opens per query: binary folding down to a
    // 2-coefficient final polynomial opens few, and keeps the circuit at 2^8 rows.
    let mut config = CircuitConfig { zero_knowledge: true, ..small_config(1, 4) };
    config.fri_config.reduction_strategy = FriReductionStrategy::ConstantArityBits(1, 1);
    prove_and_check(config, false);
}

#[test]
fn three_challenge_rounds_and_no_grinding() {
    let mut config = small_config(0, 11);
    config.num_challenges = 3;
    config.fri_config.cap_height = 2;
    prove_and_check(config, false);
}

/// A small final-config proof whose 8 public inputs are `words`, through the whole verifier
/// circuit: whether the constraint system is satisfied.
fn whole_verifier_accepts(words: [u64; 8]) -> bool {
    use ark_relations::gr1cs::ConstraintSynthesizer;

    let mut b = CircuitBuilder::<F, D>::new(small_config(3, 5));
    let targets: Vec<_> = (0..8).map(|_| b.add_virtual_target()).collect();
    let mut acc = b.mul(targets[0], targets[1]);
    for &t in &targets[2..] {
        acc = b.mul_add(acc, t, targets[0]);
    }
    b.register_public_inputs(&targets);
    let data = b.build::<PoseidonBn254GoldilocksConfig>();
    let mut pw = PartialWitness::new();
    for (&t, w) in targets.iter().zip(words) {
        pw.set_target(t, F::from_canonical_u64(w)).unwrap();
    }
    let proof = data.prove(pw).unwrap();
    data.verify(proof.clone()).unwrap();

    let cs = ConstraintSystem::<Fr>::new_ref();
    let circuit =
        crate::FinalVerifierCircuit { common: &data.common, verifier_only: &data.verifier_only, proof: Some(&proof) };
    circuit.generate_constraints(cs.clone()).unwrap();
    cs.is_satisfied().unwrap()
}

#[test]
fn the_packed_public_input_is_below_2_pow_253() {
    let below = [0x1fff_ffff, u32::MAX as u64, 0, 0, 0, 0, 0, 7];
    assert!(whole_verifier_accepts(below));
    // 2^253 and above would alias values mod r: a valid final proof carrying one is rejected
    // by the circuit itself, whatever the settle layer does.
    for top in [0x2000_0000u64, 0xe000_0000, u32::MAX as u64] {
        let mut words = below;
        words[0] = top;
        assert!(!whole_verifier_accepts(words), "first word {top:#x}");
    }
}
