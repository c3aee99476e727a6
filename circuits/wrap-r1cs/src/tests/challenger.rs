//! `ChallengerVar` against plonky2's `Challenger` over the same duplex, on random sequences of
//! observations and challenge requests (partial overwrites, long squeezes, mixed constant and
//! witness inputs, edge values).

use ark_ff::UniformRand;
use plonky2::iop::challenger::Challenger;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tgrid_poseidon_bn254::Bn254PoseidonHash;
use tgrid_r1cs_goldilocks::{GoldilocksExtVar, P};

use super::*;
use crate::{ChallengerVar, Error};

fn sample(rng: &mut StdRng) -> F {
    const EDGES: [u64; 7] = [0, 1, P - 1, (1 << 32) - 1, 1 << 32, P - 2, u64::MAX - P];
    if rng.gen_bool(0.3) {
        F::from_canonical_u64(EDGES[rng.gen_range(0..EDGES.len())])
    } else {
        F::from_canonical_u64(rng.gen_range(0..P))
    }
}

#[test]
fn matches_native_challenger() {
    for seed in 0..12 {
        let mut rng = StdRng::seed_from_u64(seed);
        let cs = ConstraintSystem::<Fr>::new_ref();
        let mut var = ChallengerVar::new();
        let mut native = Challenger::<F, Bn254PoseidonHash>::new();
        // Witnesses only from the second operation on in half the runs: the first duplexes
        // then fold to constants, as the constant prefix of the real transcript does.
        let constant_prefix = seed % 2 == 0;
        for step in 0..40 {
            let constant = (constant_prefix && step < 3) || rng.gen_bool(0.1);
            match rng.gen_range(0..5) {
                0 | 1 => {
                    for _ in 0..rng.gen_range(1..14) {
                        let x = sample(&mut rng);
                        let v = if constant {
                            GoldilocksVar::constant(x)
                        } else {
                            GoldilocksVar::new_witness_canonical(cs.clone(), || Ok(x)).unwrap()
                        };
                        var.observe_element(&v).unwrap();
                        native.observe_element(x);
                    }
                }
                2 => {
                    let h = Bn254HashOut(Fr::rand(&mut rng));
                    let v = if constant {
                        FpVar::Constant(h.0)
                    } else {
                        FpVar::new_witness(cs.clone(), || Ok(h.0)).unwrap()
                    };
                    var.observe_hash(&v).unwrap();
                    native.observe_hash::<Bn254PoseidonHash>(h);
                }
                3 => {
                    let n = rng.gen_range(1..20);
                    let got: Vec<F> = var.get_n_challenges(n).unwrap().iter().map(|c| c.value().unwrap()).collect();
                    assert_eq!(got, native.get_n_challenges(n), "seed {seed} step {step}");
                }
                _ => {
                    let got: GoldilocksExtVar = var.get_extension_challenge().unwrap();
                    assert_eq!(got.value().unwrap(), native.get_extension_challenge::<D>(), "seed {seed} step {step}");
                }
            }
        }
        // Whatever is pending still reaches the next challenge.
        assert_eq!(var.get_challenge().unwrap().value().unwrap(), native.get_challenge());
        assert!(cs.is_satisfied().unwrap());
    }
}

#[test]
fn constant_transcripts_cost_nothing() {
    let mut var = ChallengerVar::new();
    let mut native = Challenger::<F, Bn254PoseidonHash>::new();
    for i in 0..20u64 {
        var.observe_element(&GoldilocksVar::constant(F::from_canonical_u64(i))).unwrap();
        native.observe_element(F::from_canonical_u64(i));
    }
    let c = var.get_n_challenges(12).unwrap();
    assert!(c.iter().all(|c| c.var().is_constant()));
    assert_eq!(c.iter().map(|c| c.value().unwrap()).collect::<Vec<_>>(), native.get_n_challenges(12));
    let stats = var.stats();
    assert_eq!((stats.duplexes, stats.witness_duplexes, stats.unpacks), (4, 0, 0));
}

#[test]
fn non_canonical_values_are_refused() {
    let cs = ConstraintSystem::<Fr>::new_ref();
    let mut var = ChallengerVar::new();
    // A 64-bit range-checked alias v + p of v = 5: packing it would give another transcript.
    let alias = GoldilocksVar::new_witness_u64(cs.clone(), || Ok(5 + P)).unwrap();
    assert!(matches!(var.observe_element(&alias), Err(Error::NotCanonical)));
    // A lazy sum of canonical values is not canonical either.
    let a = GoldilocksVar::new_witness_canonical(cs.clone(), || Ok(F::NEG_ONE)).unwrap();
    assert!(matches!(var.observe_element(&a.add(&a).unwrap()), Err(Error::NotCanonical)));
    // Its reduction is.
    var.observe_element(&a.add(&a).unwrap().reduce().unwrap()).unwrap();
}
