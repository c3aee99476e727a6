//! pack3 / unpack_rate / hash_limbs against tgrid-poseidon-bn254's native encodings.

use ark_ff::UniformRand;
use plonky2::field::types::{PrimeField64, Sample};
use rand::Rng;
use tgrid_poseidon_bn254::hasher::{pack, unpack};
use tgrid_poseidon_bn254::Bn254HashOut;

use super::*;
use crate::bits::H;
use crate::{hash_limbs, pack3, unpack_rate};

fn fr_witness(cs: &ConstraintSystemRef<Fr>, x: Fr) -> FpVar<Fr> {
    FpVar::new_witness(cs.clone(), || Ok(x)).unwrap()
}

/// Rate elements worth testing: random, limbs at and above p, limbs 0 and 2^64 − 1, the largest
/// accepted top limb H − 1, and zero.
fn samples() -> Vec<Fr> {
    let mut r = rng(5);
    let mut out: Vec<Fr> = (0..40).map(|_| Fr::rand(&mut r)).filter(|x| int(*x)[3] < H).collect();
    out.extend([
        Fr::from(0u8),
        fr_limbs([P, P + 1, u64::MAX, H - 1]),
        fr_limbs([u64::MAX, 0, P - 1, 0]),
        fr_limbs([0, (1 << 32) - 1, 1 << 32, 1]),
        fr_limbs([u64::MAX, u64::MAX, u64::MAX, H - 1]),
    ]);
    out
}

#[test]
fn unpack_rate_matches_native() {
    for x in samples() {
        let cs = new_cs();
        let limbs = unpack_rate(&fr_witness(&cs, x)).unwrap();
        for (g, n) in limbs.iter().zip(unpack(x)) {
            assert!(g.is_canonical());
            check_bound(g);
            assert_eq!(g.value().unwrap(), n);
            let bits = g.to_bits_le().unwrap();
            let v: u64 = bits.iter().enumerate().map(|(i, b)| (b.value().unwrap() as u64) << i).sum();
            assert_eq!(v, n.to_canonical_u64());
        }
        assert_satisfied(&cs);
        // Constants fold natively.
        let c = unpack_rate(&FpVar::Constant(x)).unwrap();
        assert_eq!(c.map(|g| g.value().unwrap()), unpack(x));
    }
}

#[test]
fn hash_limbs_match_native() {
    for x in samples() {
        let cs = new_cs();
        let limbs = hash_limbs(&fr_witness(&cs, x)).unwrap();
        let native = Bn254HashOut(x).limbs();
        for ((g, n), w) in limbs.iter().zip(native).zip(tgrid_poseidon_bn254::hasher::HASH_LIMB_BITS) {
            assert!(g.is_canonical());
            assert_eq!(g.bits(), w);
            check_bound(g);
            assert_eq!(g.value().unwrap().to_canonical_u64(), n);
            assert_eq!(int(g.var().value().unwrap())[0], n);
        }
        assert_satisfied(&cs);
        let c = hash_limbs(&FpVar::Constant(x)).unwrap();
        assert_eq!(c.map(|g| g.value().unwrap().to_canonical_u64()), native);
    }
}

#[test]
fn pack3_matches_native_and_round_trips() {
    let mut r = rng(6);
    for n in 0..=3 {
        for _ in 0..10 {
            let cs = new_cs();
            let vals: Vec<F> = (0..n).map(|_| F::sample(&mut r)).collect();
            let vars: Vec<_> = vals.iter().map(|v| witness(&cs, v.to_canonical_u64())).collect();
            let packed = pack3(&vars).unwrap();
            assert_eq!(packed.value().unwrap(), pack(&vals));
            let back = unpack_rate(&packed).unwrap();
            for (i, g) in back.iter().enumerate() {
                assert_eq!(g.value().unwrap(), vals.get(i).copied().unwrap_or(F::ZERO));
            }
            assert_satisfied(&cs);
        }
    }
    // Non-canonical inputs are reduced before packing; the edges pack like their residues.
    let cs = new_cs();
    let raw = [P, u64::MAX, (1 << 32) - 1];
    let vars: Vec<_> = raw.iter().map(|&v| witness_u64(&cs, v)).collect();
    let expected: Vec<F> = raw.iter().map(|&v| F::from_noncanonical_u64(v)).collect();
    assert_eq!(pack3(&vars).unwrap().value().unwrap(), pack(&expected));
    let lazy = vars[0].mul(&vars[1]).unwrap();
    assert_eq!(pack3(&[lazy]).unwrap().value().unwrap(), pack(&[expected[0] * expected[1]]));
    assert_satisfied(&cs);
    assert!(pack3(&[GoldilocksVar::one(), GoldilocksVar::one(), GoldilocksVar::one(), GoldilocksVar::one()]).is_err());
}

/// The completeness gap: a top limb equal to H (here r − 1, the largest field element) has no
/// accepted decomposition, and the prover gets an error instead of an unsatisfied system.
#[test]
fn top_limb_h_fails_the_prover() {
    let r_minus_1 = -Fr::from(1u8);
    assert_eq!(int(r_minus_1)[3], H);
    let mut r = rng(7);
    let just_below_r = fr_limbs([r.gen(), r.gen(), 0, H]);
    for x in [r_minus_1, just_below_r] {
        let cs = new_cs();
        let v = fr_witness(&cs, x);
        assert_eq!(unpack_rate(&v).unwrap_err(), SynthesisError::Unsatisfiable);
        assert_eq!(hash_limbs(&v).unwrap_err(), SynthesisError::Unsatisfiable);
    }
}
