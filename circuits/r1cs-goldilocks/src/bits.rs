//! Native integer helpers for hints, and the one primitive every range check is built from:
//! a bit decomposition whose value is a free linear combination of its (booleanity-checked) bits.

use ark_bn254::Fr;
use ark_ff::{AdditiveGroup, Field, PrimeField};
use ark_r1cs_std::fields::fp::{AllocatedFp, FpVar};
use ark_r1cs_std::prelude::*;
use ark_relations::gr1cs::{ConstraintSystemRef, LinearCombination, SynthesisError, Variable};
use ark_relations::{lc, lc_diff};
use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::field::types::Field as _;

use crate::fault::{self, Fault};

/// The Goldilocks modulus p = 2^64 − 2^32 + 1.
pub const P: u64 = 0xFFFF_FFFF_0000_0001;
/// 2^32 − 1: the high half of p − 1, and 2^64 mod p.
pub(crate) const M32: u64 = 0xFFFF_FFFF;
/// H = floor(r / 2^192), the top 64-bit limb of the BN254 scalar modulus r (≈ 2^61.6).
pub(crate) const H: u64 = <Fr as PrimeField>::MODULUS.0[3];

pub(crate) type Int = [u64; 4];

/// The canonical integer of a field element.
pub(crate) fn int(x: Fr) -> Int {
    x.into_bigint().0
}

/// An integer below 2^256, mod r.
pub(crate) fn fr(x: Int) -> Fr {
    let two64 = Fr::from(1u128 << 64);
    x.iter().rev().fold(Fr::ZERO, |acc, &l| acc * two64 + Fr::from(l))
}

/// An integer below 2^256, mod p.
pub(crate) fn gl(x: Int) -> GoldilocksField {
    let two64 = GoldilocksField::from_canonical_u64(M32);
    x.iter().rev().fold(GoldilocksField::ZERO, |acc, &l| acc * two64 + GoldilocksField::from_noncanonical_u64(l))
}

/// (floor(x / p), x mod p).
pub(crate) fn divrem_p(x: Int) -> (Int, u64) {
    let mut q = [0u64; 4];
    let mut rem = 0u128;
    for i in (0..4).rev() {
        let cur = (rem << 64) | x[i] as u128;
        q[i] = (cur / P as u128) as u64;
        rem = cur % P as u128;
    }
    (q, rem as u64)
}

/// Integer sum of two 256-bit values (the caller keeps it below 2^256).
pub(crate) fn add_int(a: Int, b: Int) -> Int {
    let mut out = [0u64; 4];
    let mut carry = 0u128;
    for i in 0..4 {
        let s = a[i] as u128 + b[i] as u128 + carry;
        out[i] = s as u64;
        carry = s >> 64;
    }
    out
}

pub(crate) fn u(x: u64) -> Int {
    [x, 0, 0, 0]
}

/// The linear combination of a variable or constant.
pub(crate) fn lc_of(x: &FpVar<Fr>) -> LinearCombination<Fr> {
    match x {
        FpVar::Constant(c) => lc![(*c, Variable::One)],
        FpVar::Var(v) => v.variable.into(),
    }
}

/// Enforces `a · b = c` in exactly one constraint (constants become coefficients).
pub(crate) fn enforce_product(a: &FpVar<Fr>, b: &FpVar<Fr>, c: &FpVar<Fr>) -> Result<(), SynthesisError> {
    let cs = a.cs().or(b.cs()).or(c.cs());
    if cs.is_none() {
        let ok = a.value()? * b.value()? == c.value()?;
        return if ok { Ok(()) } else { Err(SynthesisError::Unsatisfiable) };
    }
    cs.enforce_r1cs_constraint(|| lc_of(a), || lc_of(b), || lc_of(c))
}

/// `n` witnessed bits with booleanity checks (`n` constraints). Their weighted sums are free.
pub(crate) struct Bits {
    cs: ConstraintSystemRef<Fr>,
    /// The bits as `Boolean`s. Under test fault injection a non-boolean position holds a
    /// placeholder; the linear combinations always use `vars`.
    pub(crate) bools: Vec<Boolean<Fr>>,
    vars: Vec<Variable>,
    vals: Option<Vec<Fr>>,
}

impl Bits {
    /// Witnesses the low `n ≤ 256` bits of `value` (the value is not linked to anything here).
    pub(crate) fn alloc(
        cs: &ConstraintSystemRef<Fr>,
        value: Result<Int, SynthesisError>,
        n: usize,
    ) -> Result<Self, SynthesisError> {
        let vals = value.map(|v| {
            let mut b: Vec<Fr> = (0..n).map(|i| Fr::from((v[i / 64] >> (i % 64)) & 1)).collect();
            perturb(&mut b, fr(v));
            b
        });
        fault::mark(cs, "bool");
        let mut bools = Vec::with_capacity(n);
        let mut vars = Vec::with_capacity(n);
        for i in 0..n {
            let (b, v) = alloc_bit(cs, vals.as_ref().map(|b| b[i]).map_err(|e| *e))?;
            bools.push(b);
            vars.push(v);
        }
        Ok(Self { cs: cs.clone(), bools, vars, vals: vals.ok() })
    }

    /// Σ 2^(i − start)·bit_i over `range`, as a free linear combination.
    pub(crate) fn lc(&self, range: std::ops::Range<usize>) -> Result<FpVar<Fr>, SynthesisError> {
        if range.is_empty() {
            return Ok(FpVar::zero());
        }
        let mut coeff = Fr::ONE;
        let mut terms = Vec::with_capacity(range.len());
        for v in &self.vars[range.clone()] {
            terms.push((coeff, *v));
            coeff.double_in_place();
        }
        let value = self.vals.as_ref().map(|v| v[range].iter().rev().fold(Fr::ZERO, |acc, b| acc.double() + b));
        let var = self.cs.new_lc(|| LinearCombination(terms))?;
        Ok(FpVar::Var(AllocatedFp::new(value, var, self.cs.clone())))
    }

    /// The value of all bits.
    pub(crate) fn all(&self) -> Result<FpVar<Fr>, SynthesisError> {
        self.lc(0..self.vars.len())
    }

    /// Enforces that the 64 bits encode a value below p: ¬(hi32 = 2^32−1 ∧ lo32 ≠ 0), as the
    /// single constraint `(hi32 − (2^32−1))·w = lo32`. When hi32 ≠ 2^32−1 the prover takes
    /// `w = lo32 / (hi32 − (2^32−1))`; when hi32 = 2^32−1 the left side is 0, so lo32 = 0.
    pub(crate) fn enforce_canonical(&self) -> Result<(), SynthesisError> {
        let hi = self.lc(32..64)? - Fr::from(M32);
        let lo = self.lc(0..32)?;
        let w = FpVar::new_witness(self.cs.clone(), || {
            let w = hi.value()?.inverse().unwrap_or(Fr::ZERO) * lo.value()?;
            Ok(if fault::on(Fault::CanonicityHint) { w + Fr::ONE } else { w })
        })?;
        fault::mark(&self.cs, "canon");
        enforce_product(&hi, &w, &lo)
    }

    /// Enforces that the bits in `range` encode an integer ≤ `bound`: scan from the top while
    /// `eq` = "the prefix equals `bound`'s prefix"; where `bound` has a 0, a set bit under an
    /// equal prefix is forbidden; where it has a 1, `eq ← eq ∧ bit`. Below `bound`'s lowest 0
    /// nothing can exceed it. One constraint per scanned bit after the first.
    pub(crate) fn enforce_at_most(&self, range: std::ops::Range<usize>, bound: u64) -> Result<(), SynthesisError> {
        fault::mark(&self.cs, "cmp");
        let Some(lowest_zero) = (0..range.len()).find(|&i| i >= 64 || (bound >> i) & 1 == 0) else {
            return Ok(());
        };
        let value = |i: usize| self.vals.as_ref().map(|v| v[range.start + i]);
        // None: the empty prefix (constant true).
        let mut eq: Option<(Variable, Option<Fr>)> = None;
        for i in (lowest_zero..range.len()).rev() {
            let (bit, bit_value) = (self.vars[range.start + i], value(i));
            let one = i < 64 && (bound >> i) & 1 == 1;
            match (eq, one) {
                (None, true) => eq = Some((bit, bit_value)),
                (None, false) => self.cs.enforce_r1cs_constraint(|| bit.into(), || Variable::One.into(), || lc!())?,
                (Some((e, _)), false) => self.cs.enforce_r1cs_constraint(|| e.into(), || bit.into(), || lc!())?,
                (Some((e, e_value)), true) => {
                    let and_value =
                        e_value
                            .zip(bit_value)
                            .map(|(a, b)| if fault::on(Fault::CompareAnd) { a * b + Fr::ONE } else { a * b });
                    let and = self.cs.new_witness_variable(|| and_value.ok_or(SynthesisError::AssignmentMissing))?;
                    self.cs.enforce_r1cs_constraint(|| e.into(), || bit.into(), || and.into())?;
                    eq = Some((and, and_value));
                }
            }
        }
        Ok(())
    }
}

/// Test fault hooks on a decomposition whose intended value is `value`.
fn perturb(bits: &mut [Fr], value: Fr) {
    if fault::on(Fault::BitCarry) && !bits.is_empty() {
        let rest =
            bits.iter().enumerate().skip(1).fold(Fr::ZERO, |acc, (i, b)| acc + Fr::from(2u8).pow([i as u64]) * b);
        bits[0] = value - rest;
    }
    if fault::on(Fault::BitNonBoolean) && bits.len() >= 2 {
        bits[0] += Fr::from(2u8);
        bits[1] -= Fr::ONE;
    }
}

/// One bit. In production its value is always 0 or 1; a test fault may ask for any field
/// element, which gets the same booleanity constraint on a raw variable.
fn alloc_bit(
    cs: &ConstraintSystemRef<Fr>,
    v: Result<Fr, SynthesisError>,
) -> Result<(Boolean<Fr>, Variable), SynthesisError> {
    if let Ok(x) = v {
        if x != Fr::ZERO && x != Fr::ONE {
            let var = cs.new_witness_variable(|| Ok(x))?;
            cs.enforce_r1cs_constraint(|| var.into(), || lc_diff!(Variable::One, var), || lc!())?;
            return Ok((Boolean::FALSE, var));
        }
    }
    let b = Boolean::new_witness(cs.clone(), || v.map(|x| x == Fr::ONE))?;
    let var = b.variable();
    Ok((b, var))
}

/// The bits of a constant, little-endian.
pub(crate) fn const_bits(x: u64, n: usize) -> Vec<Boolean<Fr>> {
    (0..n).map(|i| Boolean::constant(i < 64 && (x >> i) & 1 == 1)).collect()
}
