//! Constraint counts per operation (the table in the crate docs), setup-mode synthesis, and a
//! structural lint: every witness variable appears in some constraint.

use ark_relations::gr1cs::SynthesisMode;
use plonky2::field::types::Sample;

use super::*;
use crate::{hash_limbs, pack3, unpack_rate, GoldilocksExt, GoldilocksExtVar};

/// Constraints added by `op` after `inputs` are built.
fn cost<T>(inputs: impl FnOnce(&ConstraintSystemRef<Fr>) -> T, op: impl FnOnce(T)) -> usize {
    let cs = new_cs();
    let t = inputs(&cs);
    let before = cs.num_constraints();
    op(t);
    assert_satisfied(&cs);
    cs.num_constraints() - before
}

fn ext_w(cs: &ConstraintSystemRef<Fr>) -> GoldilocksExtVar {
    GoldilocksExtVar::new_witness_canonical(cs.clone(), || Ok(GoldilocksExt::rand())).unwrap()
}

#[test]
fn counts() {
    let fr = |cs: &ConstraintSystemRef<Fr>| {
        FpVar::new_witness(cs.clone(), || {
            Ok(Fr::from(0x1234_5678_9abc_def0_u64) * Fr::from(u64::MAX) * Fr::from(u64::MAX))
        })
        .unwrap()
    };
    let table = [
        ("canonical witness", cost(|cs| cs.clone(), |cs| drop(witness(&cs, P - 1))), 65),
        ("u64 witness", cost(|cs| cs.clone(), |cs| drop(witness_u64(&cs, u64::MAX))), 64),
        ("base mul", cost(|cs| (witness(cs, 3), witness(cs, 4)), |(a, b)| drop(a.mul(&b).unwrap())), 1),
        (
            "reduce 128-bit",
            cost(|cs| witness(cs, P - 1).mul(&witness(cs, P - 2)).unwrap(), |x| drop(x.reduce().unwrap())),
            131,
        ),
        (
            "reduce 252-bit",
            cost(
                |cs| {
                    let m = witness_u64(cs, u64::MAX);
                    m.mul(&m).unwrap().mul(&m).unwrap().mul_const(F::from_canonical_u64((1 << 60) - 1)).unwrap()
                },
                |x| drop(x.reduce().unwrap()),
            ),
            255,
        ),
        (
            "eq mod p 128-bit vs canonical",
            cost(
                |cs| (witness(cs, P - 1).mul(&witness(cs, 3)).unwrap(), witness(cs, P - 3)),
                |(a, b)| a.enforce_equal_mod_p(&b).unwrap(),
            ),
            67,
        ),
        ("base inverse", cost(|cs| witness(cs, 77), |x| drop(x.inverse().unwrap())), 133),
        ("ext mul", cost(|cs| (ext_w(cs), ext_w(cs)), |(a, b)| drop(a.mul(&b).unwrap())), 4),
        ("ext square", cost(ext_w, |a| drop(a.square().unwrap())), 3),
        (
            "ext mul + reduce",
            cost(|cs| (ext_w(cs), ext_w(cs)), |(a, b)| drop(a.mul(&b).unwrap().reduce().unwrap())),
            271,
        ),
        ("ext inverse", cost(ext_w, |a| drop(a.inverse().unwrap())), 273),
        ("pack3", cost(|cs| [witness(cs, 1), witness(cs, 2), witness(cs, 3)], |v| drop(pack3(&v).unwrap())), 0),
        ("unpack_rate", cost(fr, |x| drop(unpack_rate(&x).unwrap())), 328),
        ("hash_limbs", cost(fr, |x| drop(hash_limbs(&x).unwrap())), 316),
    ];
    // Amortized cost of long lazy chains (acc ← acc·fresh canonical input).
    let chain = |n: usize| {
        cost(
            |cs| (0..n).map(|i| witness(cs, P - 1 - i as u64)).collect::<Vec<_>>(),
            |v| drop(v.iter().skip(1).fold(v[0].clone(), |acc, x| acc.mul(x).unwrap()).reduce().unwrap()),
        ) / (n - 1)
    };
    let ext_chain = |n: usize| {
        cost(
            |cs| (0..n).map(|_| ext_w(cs)).collect::<Vec<_>>(),
            |v| drop(v.iter().skip(1).fold(v[0].clone(), |acc, x| acc.mul(x).unwrap()).reduce().unwrap()),
        ) / (n - 1)
    };
    let table = [
        table.as_slice(),
        &[
            ("base mul chain, per mul (201 inputs)", chain(201), 98),
            ("ext mul chain, per mul (201 inputs)", ext_chain(201), 204),
        ],
    ]
    .concat();
    let mut mismatch = false;
    for (name, got, expected) in table {
        println!("| {name} | {got} |");
        mismatch |= got != expected;
    }
    assert!(!mismatch, "update the table in lib.rs");
}

/// A workload touching every gadget, with values that arkworks must not need in setup mode.
fn workload(cs: &ConstraintSystemRef<Fr>) {
    let mut r = rng(40);
    let a = GoldilocksVar::new_witness_canonical(cs.clone(), || Ok(F::sample(&mut rng(41)))).unwrap();
    let b = GoldilocksVar::new_witness_u64(cs.clone(), || Ok(u64::MAX)).unwrap();
    let i = GoldilocksVar::new_input(cs.clone(), || Ok(F::from_canonical_u64(9))).unwrap();
    let mut acc = a.mul(&b).unwrap().sub(&i).unwrap();
    for _ in 0..5 {
        acc = acc.mul(&acc).unwrap().mul(&a).unwrap();
    }
    let inv = acc.inverse().unwrap();
    inv.mul(&acc).unwrap().enforce_equal_mod_p(&GoldilocksVar::one()).unwrap();
    let e = GoldilocksExtVar::new_witness_canonical(cs.clone(), || Ok(GoldilocksExt::sample(&mut r))).unwrap();
    let e2 = e.mul(&e.square().unwrap()).unwrap().scalar_mul(&acc).unwrap();
    let einv = e2.inverse().unwrap();
    einv.mul(&e2).unwrap().enforce_equal(&GoldilocksExtVar::one()).unwrap();
    let packed = pack3(&[a.clone(), acc.clone(), e2.0[1].clone()]).unwrap();
    let limbs = unpack_rate(&packed).unwrap();
    limbs[1].enforce_equal_mod_p(&acc).unwrap();
    let h = FpVar::new_witness(cs.clone(), || Ok(Fr::from(12345u64))).unwrap();
    let hl = hash_limbs(&(h * packed)).unwrap();
    let _ = hl[4].to_bits_le().unwrap();
}

#[test]
fn setup_mode_synthesizes_the_same_shape() {
    let prove = new_cs();
    workload(&prove);
    assert_satisfied(&prove);

    let setup = new_cs();
    setup.set_mode(SynthesisMode::Setup);
    workload(&setup);
    assert_eq!(setup.num_constraints(), prove.num_constraints());
    assert_eq!(setup.num_witness_variables(), prove.num_witness_variables());
    assert_eq!(setup.num_instance_variables(), prove.num_instance_variables());
}

#[test]
fn every_witness_is_constrained() {
    let cs = new_cs();
    workload(&cs);
    cs.finalize();
    let matrices = cs.to_matrices().unwrap();
    let mut used = std::collections::BTreeSet::new();
    for rows in matrices.values().flatten().flatten() {
        used.extend(rows.iter().map(|(_, i)| *i));
    }
    let (inputs, witnesses) = (cs.num_instance_variables(), cs.num_witness_variables());
    let unused: Vec<_> = (inputs..inputs + witnesses).filter(|i| !used.contains(i)).collect();
    assert!(unused.is_empty(), "{} unconstrained witnesses: {unused:?}", unused.len());
}
