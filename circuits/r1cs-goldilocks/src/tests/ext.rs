//! GoldilocksExtVar against plonky2's `QuadraticExtension<GoldilocksField>`.

use plonky2::field::extension::quadratic::QuadraticExtension;
use plonky2::field::types::{PrimeField64, Sample};
use proptest::prelude::*;

use super::*;
use crate::{GoldilocksExt, GoldilocksExtVar};

fn ext(a: u64, b: u64) -> GoldilocksExt {
    QuadraticExtension([F::from_noncanonical_u64(a), F::from_noncanonical_u64(b)])
}

fn ext_witness(cs: &ConstraintSystemRef<Fr>, v: GoldilocksExt) -> GoldilocksExtVar {
    GoldilocksExtVar::new_witness_canonical(cs.clone(), || Ok(v)).unwrap()
}

fn check_ext_bound(x: &GoldilocksExtVar) {
    x.0.iter().for_each(check_bound);
}

fn check_ops(a: GoldilocksExt, b: GoldilocksExt, s: u64) {
    let cs = new_cs();
    let (x, y) = (ext_witness(&cs, a), ext_witness(&cs, b));
    let sv = witness(&cs, s);
    let fs = F::from_noncanonical_u64(s);
    let cases = [
        (x.add(&y).unwrap(), a + b),
        (x.sub(&y).unwrap(), a - b),
        (x.neg().unwrap(), -a),
        (x.mul(&y).unwrap(), a * b),
        (x.square().unwrap(), a * a),
        (x.scalar_mul(&sv).unwrap(), a * GoldilocksExt::from(fs)),
        (x.mul_const(b).unwrap(), a * b),
        (x.mul(&y).unwrap().mul(&x.square().unwrap()).unwrap().sub(&y).unwrap(), a * b * a * a - b),
        (GoldilocksExtVar::from_base(sv.clone()).mul(&x).unwrap(), a * GoldilocksExt::from(fs)),
    ];
    for (v, expected) in cases {
        check_ext_bound(&v);
        assert_eq!(v.value().unwrap(), expected);
        let r = v.reduce().unwrap();
        assert!(r.is_canonical());
        check_ext_bound(&r);
        for (c, e) in r.0.iter().zip(expected.0) {
            assert_eq!(bits::int(c.var().value().unwrap())[0], e.to_canonical_u64());
        }
        v.enforce_equal(&GoldilocksExtVar::constant(expected)).unwrap();
        v.enforce_equal(&r).unwrap();
    }
    if a != GoldilocksExt::ZERO {
        assert_eq!(x.inverse().unwrap().value().unwrap(), a.inverse());
    } else {
        assert_eq!(x.inverse().unwrap_err(), SynthesisError::DivisionByZero);
        return;
    }
    assert_satisfied(&cs);
}

use crate::bits;

#[test]
fn edges() {
    for (i, a0) in EDGES.into_iter().enumerate() {
        for b1 in EDGES {
            let a1 = EDGES[(i + 3) % EDGES.len()];
            check_ops(ext(a0, a1), ext(b1, a0), a1);
        }
    }
    check_ops(GoldilocksExt::ZERO, ext(1, 2), 3);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn random_ops(a in any::<[u64; 2]>(), b in any::<[u64; 2]>(), s in any::<u64>()) {
        check_ops(ext(a[0], a[1]), ext(b[0], b[1]), s);
    }
}

#[test]
fn long_lazy_chains() {
    let cs = new_cs();
    let mut r = rng(4);
    let (mut acc, mut native) = (GoldilocksExtVar::one(), GoldilocksExt::ONE);
    for _ in 0..200 {
        let v = GoldilocksExt::sample(&mut r);
        acc = acc.mul(&ext_witness(&cs, v)).unwrap();
        native *= v;
        check_ext_bound(&acc);
    }
    for _ in 0..50 {
        acc = acc.square().unwrap().mul(&acc).unwrap();
        native = native.square() * native;
        check_ext_bound(&acc);
    }
    assert_eq!(acc.value().unwrap(), native);

    // Σ a_i·b_i over 300 terms with lazy accumulation.
    let (mut sum, mut native_sum) = (GoldilocksExtVar::zero(), GoldilocksExt::ZERO);
    for _ in 0..300 {
        let (a, b) = (GoldilocksExt::sample(&mut r), GoldilocksExt::sample(&mut r));
        sum = sum.add(&ext_witness(&cs, a).mul(&ext_witness(&cs, b)).unwrap()).unwrap();
        native_sum += a * b;
        check_ext_bound(&sum);
    }
    assert_eq!(sum.value().unwrap(), native_sum);
    let inv = sum.inverse().unwrap();
    assert_eq!(inv.value().unwrap(), native_sum.inverse());
    assert_satisfied(&cs);
}

#[test]
fn alloc_modes() {
    let cs = new_cs();
    let v = ext(P - 1, 12345);
    let i = GoldilocksExtVar::new_input(cs.clone(), || Ok(v)).unwrap();
    let w = GoldilocksExtVar::new_witness(cs.clone(), || Ok(v)).unwrap();
    let c = GoldilocksExtVar::new_constant(cs.clone(), v).unwrap();
    i.enforce_equal(&w).unwrap();
    w.enforce_equal(&c).unwrap();
    assert!(i.is_canonical() && w.is_canonical());
    assert_satisfied(&cs);
}
