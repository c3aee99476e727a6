//! Differential, soundness (fault-injection) and cost tests.

use ark_bn254::Fr;
use ark_ff::PrimeField;
use ark_r1cs_std::fields::fp::FpVar;
use ark_r1cs_std::prelude::*;
use ark_relations::gr1cs::{ConstraintSystem, ConstraintSystemRef, SynthesisError};
use plonky2::field::goldilocks_field::GoldilocksField as F;
use plonky2::field::ops::Square as _;
use plonky2::field::types::Field as _;
use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::bits::int;
use crate::fault::{self, Fault};
use crate::{GoldilocksVar, P};

mod base;
mod counts;
mod encoding;
mod ext;
mod faults;

/// The edge values of the brief (2^64 − 2^32 is p − 1) and a few neighbours.
pub(crate) const EDGES: [u64; 9] = [0, 1, 2, P - 1, P - 2, (1 << 32) - 1, 1 << 32, (1 << 32) + 1, 1 << 63];

pub(crate) fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// A fresh constraint system (and a clean fault/label log for this thread).
pub(crate) fn new_cs() -> ConstraintSystemRef<Fr> {
    fault::reset();
    ConstraintSystem::<Fr>::new_ref()
}

pub(crate) fn witness(cs: &ConstraintSystemRef<Fr>, v: u64) -> GoldilocksVar {
    GoldilocksVar::new_witness_canonical(cs.clone(), || Ok(F::from_noncanonical_u64(v))).unwrap()
}

pub(crate) fn witness_u64(cs: &ConstraintSystemRef<Fr>, v: u64) -> GoldilocksVar {
    GoldilocksVar::new_witness_u64(cs.clone(), || Ok(v)).unwrap()
}

/// The tracked bound holds: the integer is below 2^bits (below p when canonical).
pub(crate) fn check_bound(x: &GoldilocksVar) {
    let v = int(x.var().value().unwrap());
    let bits =
        v.iter().enumerate().rev().find(|(_, l)| **l != 0).map_or(0, |(i, l)| 64 * i as u32 + 64 - l.leading_zeros());
    assert!(bits <= x.bits(), "integer of {bits} bits under a bound of {}", x.bits());
    assert!(x.bits() <= crate::MAX_BITS);
    if x.is_canonical() {
        assert!(v[1..] == [0, 0, 0] && v[0] < P, "non-canonical value flagged canonical");
    }
}

pub(crate) fn assert_satisfied(cs: &ConstraintSystemRef<Fr>) {
    assert_eq!(first_failure(cs), None);
}

/// The label of the first unsatisfied constraint, or `None` when satisfied.
pub(crate) fn first_failure(cs: &ConstraintSystemRef<Fr>) -> Option<&'static str> {
    let which = cs.which_is_unsatisfied().expect("prove mode")?;
    let index: usize = which.rsplit(' ').next().and_then(|s| s.parse().ok()).expect("constraint index");
    Some(fault::label_of(index).unwrap_or("unlabelled"))
}

/// Builds `inputs` honestly, then runs `gadget` twice: without faults (must be satisfied) and
/// with `faults` injected (must be unsatisfied, first at a constraint of kind `label`).
pub(crate) fn assert_caught<T>(
    faults: &[Fault],
    label: &str,
    inputs: impl Fn(&ConstraintSystemRef<Fr>) -> T,
    gadget: impl Fn(&T) -> Result<(), SynthesisError>,
) {
    for faulty in [false, true] {
        let cs = new_cs();
        let t = inputs(&cs);
        if faulty {
            fault::with(faults, || gadget(&t)).unwrap();
            assert!(!cs.is_satisfied().unwrap(), "{faults:?} accepted");
            assert_eq!(first_failure(&cs), Some(label), "{faults:?} caught by the wrong constraint");
        } else {
            gadget(&t).unwrap();
            assert_satisfied(&cs);
        }
    }
}

/// An `Fr` from four limbs (the caller keeps it below r).
pub(crate) fn fr_limbs(l: [u64; 4]) -> Fr {
    Fr::from_bigint(ark_ff::BigInt(l)).expect("below r")
}
