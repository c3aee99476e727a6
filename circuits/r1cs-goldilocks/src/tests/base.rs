//! GoldilocksVar against plonky2's field arithmetic.

use plonky2::field::types::{PrimeField64, Sample};
use proptest::prelude::*;
use rand::Rng;

use super::*;

fn gl(v: u64) -> F {
    F::from_noncanonical_u64(v)
}

fn bits_of(x: &[Boolean<Fr>]) -> u64 {
    x.iter().enumerate().map(|(i, b)| (b.value().unwrap() as u64) << i).sum()
}

/// Every operation on `a`, `b` against plonky2, on canonical or on plain 64-bit witnesses: the
/// value, the tracked bound, the canonical remainder and its bits, equality mod p.
fn check_ops(a: u64, b: u64, canonical: bool) {
    let cs = new_cs();
    let alloc = |v| if canonical { witness(&cs, v) } else { witness_u64(&cs, v) };
    let (x, y) = (alloc(a), alloc(b));
    let (fa, fb) = (gl(a), gl(b));
    let cases = [
        (x.add(&y).unwrap(), fa + fb),
        (x.sub(&y).unwrap(), fa - fb),
        (y.sub(&x).unwrap(), fb - fa),
        (x.neg().unwrap(), -fa),
        (x.mul(&y).unwrap(), fa * fb),
        (x.square().unwrap(), fa * fa),
        (x.mul_const(fb).unwrap(), fa * fb),
        (x.add_const(fb).unwrap(), fa + fb),
        (GoldilocksVar::constant(fa).sub(&y).unwrap(), fa - fb),
        (x.mul(&y).unwrap().sub(&x.square().unwrap()).unwrap(), fa * fb - fa * fa),
    ];
    for (v, expected) in cases {
        check_bound(&v);
        assert_eq!(v.value().unwrap(), expected);
        let r = v.reduce().unwrap();
        check_bound(&r);
        assert!(r.is_canonical());
        assert_eq!(int(r.var().value().unwrap())[0], expected.to_canonical_u64());
        assert_eq!(bits_of(&r.to_bits_le().unwrap()), expected.to_canonical_u64());
        assert_eq!(bits_of(&v.to_bits_le().unwrap()), expected.to_canonical_u64());
        v.enforce_equal_mod_p(&GoldilocksVar::constant(expected)).unwrap();
        v.enforce_equal_mod_p(&r).unwrap();
        r.enforce_equal_mod_p(&GoldilocksVar::constant(expected)).unwrap();
    }
    if fa != F::ZERO {
        let inv = x.inverse().unwrap();
        assert!(inv.is_canonical());
        assert_eq!(inv.value().unwrap(), fa.inverse());
    }
    assert_satisfied(&cs);
}

#[test]
fn edges_canonical() {
    for a in EDGES {
        for b in EDGES {
            check_ops(a, b, true);
        }
    }
}

#[test]
fn edges_u64() {
    let edges = [0, 1, P - 1, P, P + 1, u64::MAX - 2, u64::MAX, (1 << 32) - 1, 1 << 63];
    for a in edges {
        for b in edges {
            check_ops(a, b, false);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_ops(a in any::<u64>(), b in any::<u64>(), canonical in any::<bool>()) {
        check_ops(a, b, canonical);
    }
}

#[test]
fn canonical_witness_bits_are_reused() {
    let cs = new_cs();
    let x = witness(&cs, 0xdead_beef_1234_5678);
    let n = cs.num_constraints();
    assert_eq!(bits_of(&x.to_bits_le().unwrap()), 0xdead_beef_1234_5678);
    assert_eq!(x.reduce().unwrap().var().value().unwrap(), x.var().value().unwrap());
    assert_eq!(cs.num_constraints(), n, "canonical values decompose for free");
    assert_eq!(bits_of(&GoldilocksVar::constant(gl(12345)).to_bits_le().unwrap()), 12345);
}

#[test]
fn constants_fold() {
    let cs = new_cs();
    let a = GoldilocksVar::constant(gl(P - 1));
    let b = GoldilocksVar::constant_u64(u64::MAX);
    let c = a.mul(&b).unwrap().sub(&a.square().unwrap()).unwrap().add(&GoldilocksVar::one()).unwrap();
    assert_eq!(c.value().unwrap(), gl(P - 1) * gl(u64::MAX) - gl(P - 1).square() + F::ONE);
    assert_eq!(c.inverse().unwrap().value().unwrap(), c.value().unwrap().inverse());
    c.enforce_equal_mod_p(&GoldilocksVar::constant(c.value().unwrap())).unwrap();
    assert!(GoldilocksVar::one().enforce_equal_mod_p(&GoldilocksVar::zero()).is_err());
    assert_eq!(GoldilocksVar::zero().inverse().unwrap_err(), SynthesisError::DivisionByZero);
    assert_eq!(cs.num_constraints(), 0);
}

#[test]
fn two_hundred_products_in_a_row() {
    let cs = new_cs();
    let mut r = rng(1);
    let (mut acc, mut native) = (witness(&cs, 3), F::from_canonical_u64(3));
    for _ in 0..200 {
        let v: u64 = r.gen();
        acc = acc.mul(&witness(&cs, v)).unwrap();
        native *= gl(v);
        check_bound(&acc);
    }
    assert_eq!(acc.value().unwrap(), native);
    // Repeated squaring: the accumulator itself must be reduced every time.
    for _ in 0..200 {
        acc = acc.square().unwrap();
        native = native.square();
        check_bound(&acc);
    }
    assert_eq!(acc.reduce().unwrap().value().unwrap(), native);
    assert_satisfied(&cs);
}

#[test]
fn sums_of_a_thousand_products() {
    let cs = new_cs();
    let mut r = rng(2);
    let mut products = Vec::new();
    let (mut acc, mut native) = (GoldilocksVar::zero(), F::ZERO);
    for i in 0..1000 {
        let (a, b) = (F::sample(&mut r), F::sample(&mut r));
        // Mix canonical and plain 64-bit (possibly ≥ p) operands.
        let x = if i % 2 == 0 {
            witness(&cs, a.to_canonical_u64())
        } else {
            witness_u64(&cs, a.to_canonical_u64() + (i % 4 == 1) as u64 * P.min(u64::MAX - a.to_canonical_u64()))
        };
        let p = x.mul(&witness(&cs, b.to_canonical_u64())).unwrap();
        acc = acc.add(&p).unwrap();
        check_bound(&acc);
        products.push(p);
        native += x.value().unwrap() * b;
    }
    assert_eq!(acc.value().unwrap(), native);
    let total = GoldilocksVar::sum(&products).unwrap();
    check_bound(&total);
    assert_eq!(total.bits(), 128 + 10);
    total.enforce_equal_mod_p(&acc).unwrap();
    assert_eq!(total.reduce().unwrap().value().unwrap(), native);
    assert_satisfied(&cs);
}

#[test]
fn long_subtraction_and_negation_chains() {
    let cs = new_cs();
    let mut r = rng(3);
    let (mut acc, mut native) = (witness_u64(&cs, u64::MAX), gl(u64::MAX));
    for i in 0..600 {
        let v: u64 = r.gen();
        let y = if i % 3 == 0 { witness(&cs, v).mul(&witness_u64(&cs, u64::MAX)).unwrap() } else { witness(&cs, v) };
        native -= y.value().unwrap();
        acc = acc.sub(&y).unwrap();
        if i % 5 == 0 {
            acc = acc.neg().unwrap();
            native = -native;
        }
        if i % 7 == 0 {
            acc = y.sub(&acc).unwrap();
            native = y.value().unwrap() - native;
        }
        check_bound(&acc);
    }
    assert_eq!(acc.value().unwrap(), native);
    assert_satisfied(&cs);
}

/// Values right at the bound: a 252-bit integer (quotient of 189 bits), and the product
/// boundary 188 + 64 (no reduction) against 189 + 64 (reduction).
#[test]
fn values_at_the_bound() {
    let cs = new_cs();
    let m = witness_u64(&cs, u64::MAX);
    let cube = m.mul(&m).unwrap().mul(&m).unwrap();
    let top = cube.mul_const(F::from_canonical_u64((1 << 60) - 1)).unwrap();
    assert_eq!(top.bits(), crate::MAX_BITS);
    check_bound(&top);
    let expected = gl(u64::MAX).cube() * F::from_canonical_u64((1 << 60) - 1);
    assert_eq!(top.reduce().unwrap().value().unwrap(), expected);
    top.enforce_equal_mod_p(&GoldilocksVar::constant(expected)).unwrap();

    let sq = m.square().unwrap();
    let w = witness(&cs, P - 1);
    for (bits, reduces) in [(60u32, false), (61, true)] {
        let x = sq.mul_const(F::from_canonical_u64((1 << bits) - 1)).unwrap();
        assert_eq!(x.bits(), 128 + bits);
        let n = cs.num_constraints();
        let y = x.mul(&w).unwrap();
        assert_eq!(cs.num_constraints() - n > 1, reduces);
        check_bound(&y);
        assert_eq!(y.value().unwrap(), gl(u64::MAX).square() * F::from_canonical_u64((1 << bits) - 1) * gl(P - 1));
    }
    assert_satisfied(&cs);
}

#[test]
fn bits_and_inputs() {
    let cs = new_cs();
    let bits: Vec<_> = (0..10).map(|i| Boolean::new_witness(cs.clone(), || Ok(i % 3 == 0)).unwrap()).collect();
    let x = GoldilocksVar::from_le_bits(&bits).unwrap();
    assert!(x.is_canonical() && x.bits() == 10);
    assert_eq!(x.value().unwrap(), F::from_canonical_u64(0b1001001001));
    let full: Vec<_> = (0..64).map(|_| Boolean::new_witness(cs.clone(), || Ok(true)).unwrap()).collect();
    let y = GoldilocksVar::from_le_bits(&full).unwrap();
    assert!(!y.is_canonical());
    assert_eq!(y.reduce().unwrap().value().unwrap(), gl(u64::MAX));
    assert!(GoldilocksVar::from_le_bits(&[full.clone(), bits].concat()).is_err());

    let input = GoldilocksVar::new_input(cs.clone(), || Ok(gl(P - 1))).unwrap();
    assert!(input.is_canonical());
    let w = GoldilocksVar::new_witness(cs.clone(), || Ok(gl(7))).unwrap();
    input.mul(&w).unwrap().enforce_equal_mod_p(&GoldilocksVar::constant(-gl(7))).unwrap();
    assert_satisfied(&cs);

    // from_fp_canonical rejects the alias v + p and anything ≥ 2^64.
    for (v, ok) in [
        (fr_limbs([P - 1, 0, 0, 0]), true),
        (fr_limbs([P, 0, 0, 0]), false),
        (fr_limbs([5 + P, 0, 0, 0]), false),
        (fr_limbs([5, 1, 0, 0]), false),
    ] {
        let cs = new_cs();
        let x = FpVar::new_witness(cs.clone(), || Ok(v)).unwrap();
        GoldilocksVar::from_fp_canonical(&x).unwrap();
        assert_eq!(cs.is_satisfied().unwrap(), ok);
    }
}

#[test]
fn inverse_of_zero_fails_the_prover() {
    // (A system is unusable after a synthesis error: one per case.)
    let cs = new_cs();
    let z = witness(&cs, P); // P mod p = 0
    assert_eq!(z.inverse().unwrap_err(), SynthesisError::DivisionByZero);
    let cs = new_cs();
    let z = witness_u64(&cs, 3).sub(&witness(&cs, 3)).unwrap();
    assert_eq!(z.inverse().unwrap_err(), SynthesisError::DivisionByZero);
}

#[test]
fn select_picks_and_binds() {
    let cs = ConstraintSystem::<Fr>::new_ref();
    let a = GoldilocksVar::new_witness_canonical(cs.clone(), || Ok(gl(5))).unwrap();
    let b = GoldilocksVar::new_witness_u64(cs.clone(), || Ok(u64::MAX)).unwrap();
    for bit in [true, false] {
        let flag = Boolean::new_witness(cs.clone(), || Ok(bit)).unwrap();
        let s = GoldilocksVar::select(&flag, &a, &b).unwrap();
        assert_eq!(s.value().unwrap(), if bit { gl(5) } else { F::from_noncanonical_u64(u64::MAX) });
        assert_eq!(s.bits(), 64);
        assert!(!s.is_canonical());
    }
    let both = GoldilocksVar::select(&Boolean::TRUE, &a, &a).unwrap();
    assert!(both.is_canonical());
    assert!(cs.is_satisfied().unwrap());
    // The selected value is bound to the flag.
    let flag = Boolean::new_witness(cs.clone(), || Ok(true)).unwrap();
    let s = GoldilocksVar::select(&flag, &a, &b).unwrap();
    s.enforce_equal_mod_p(&GoldilocksVar::constant(gl(6))).unwrap();
    assert!(!cs.is_satisfied().unwrap());
}
