//! [`GoldilocksExtVar`]: plonky2's quadratic extension GF(p)[u]/(u² − 7), two lazy components.

use std::borrow::Borrow;

use ark_bn254::Fr;
use ark_r1cs_std::fields::fp::FpVar;
use ark_r1cs_std::prelude::*;
use ark_relations::gr1cs::{Namespace, SynthesisError};
use plonky2::field::extension::quadratic::QuadraticExtension;
use plonky2::field::extension::FieldExtension;
use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::field::types::{Field as _, PrimeField64};

use crate::base::{alloc_canonical, lazy_value, GoldilocksVar, MAX_BITS};
use crate::bits::u;
use crate::fault::{self, Fault};

/// plonky2 1.1's extension of Goldilocks (`QuadraticExtension<GoldilocksField>`).
pub type GoldilocksExt = QuadraticExtension<GoldilocksField>;

/// u² = W.
const W: u64 = 7;

/// An element `c0 + c1·u` of [`GoldilocksExt`]; each component follows [`GoldilocksVar`]'s
/// bound rules.
#[derive(Clone, Debug)]
pub struct GoldilocksExtVar(pub [GoldilocksVar; 2]);

impl GoldilocksExtVar {
    /// A constant (free).
    pub fn constant(v: GoldilocksExt) -> Self {
        Self(v.to_basefield_array().map(GoldilocksVar::constant))
    }

    /// The constant 0.
    pub fn zero() -> Self {
        Self::constant(GoldilocksExt::ZERO)
    }

    /// The constant 1.
    pub fn one() -> Self {
        Self::constant(GoldilocksExt::ONE)
    }

    /// `x + 0·u`.
    pub fn from_base(x: GoldilocksVar) -> Self {
        Self([x, GoldilocksVar::zero()])
    }

    /// A canonical witness (2 × 65 constraints).
    pub fn new_witness_canonical(
        cs: impl Into<Namespace<Fr>>,
        f: impl FnOnce() -> Result<GoldilocksExt, SynthesisError>,
    ) -> Result<Self, SynthesisError> {
        let cs = cs.into().cs();
        let v = lazy_value(&cs, f);
        let c0 = GoldilocksVar::new_witness_canonical(cs.clone(), || v.map(|v| v.0[0]))?;
        let c1 = GoldilocksVar::new_witness_canonical(cs, || v.map(|v| v.0[1]))?;
        Ok(Self([c0, c1]))
    }

    /// The plonky2 value.
    pub fn value(&self) -> Result<GoldilocksExt, SynthesisError> {
        Ok(QuadraticExtension([self.0[0].value()?, self.0[1].value()?]))
    }

    /// Whether both components are canonical.
    pub fn is_canonical(&self) -> bool {
        self.0.iter().all(GoldilocksVar::is_canonical)
    }

    /// The larger component bound.
    pub fn bits(&self) -> u32 {
        self.0[0].bits().max(self.0[1].bits())
    }

    /// `if bit { a } else { b }`: two constraints.
    pub fn select(bit: &Boolean<Fr>, a: &Self, b: &Self) -> Result<Self, SynthesisError> {
        Ok(Self([GoldilocksVar::select(bit, &a.0[0], &b.0[0])?, GoldilocksVar::select(bit, &a.0[1], &b.0[1])?]))
    }

    /// Component-wise sum (free).
    pub fn add(&self, other: &Self) -> Result<Self, SynthesisError> {
        Ok(Self([self.0[0].add(&other.0[0])?, self.0[1].add(&other.0[1])?]))
    }

    /// Component-wise difference (free).
    pub fn sub(&self, other: &Self) -> Result<Self, SynthesisError> {
        Ok(Self([self.0[0].sub(&other.0[0])?, self.0[1].sub(&other.0[1])?]))
    }

    /// Negation (free).
    pub fn neg(&self) -> Result<Self, SynthesisError> {
        Ok(Self([self.0[0].neg()?, self.0[1].neg()?]))
    }

    /// `(a0 + a1·u)(b0 + b1·u) = (a0·b0 + 7·a1·b1) + (a0·b1 + a1·b0)·u`: 4 constraints. Operand
    /// components are reduced up front (each at most once) when the result could pass
    /// [`MAX_BITS`].
    pub fn mul(&self, other: &Self) -> Result<Self, SynthesisError> {
        let (a, b) = fit_pair(self, other)?;
        let [a0, a1] = &a.0;
        let [b0, b1] = &b.0;
        let c0 = a0.mul(b0)?.add(&a1.mul(b1)?.mul_const(GoldilocksField::from_canonical_u64(W))?)?;
        let c1 = a0.mul(b1)?.add(&a1.mul(b0)?)?;
        Ok(Self([c0, c1]))
    }

    /// `(a0² + 7·a1²) + 2·a0·a1·u`: 3 constraints.
    pub fn square(&self) -> Result<Self, SynthesisError> {
        let mut a = self.clone();
        while 2 * a.bits() + 4 > MAX_BITS {
            reduce_widest(a.0.iter_mut())?;
        }
        let [a0, a1] = &a.0;
        let c0 = a0.square()?.add(&a1.square()?.mul_const(GoldilocksField::from_canonical_u64(W))?)?;
        let c1 = a0.mul(a1)?.mul_const(GoldilocksField::TWO)?;
        Ok(Self([c0, c1]))
    }

    /// `self · s` for a base-field variable: 2 constraints.
    pub fn scalar_mul(&self, s: &GoldilocksVar) -> Result<Self, SynthesisError> {
        let (a, b) = fit_pair(self, &Self::from_base(s.clone()))?;
        let s = &b.0[0];
        Ok(Self([a.0[0].mul(s)?, a.0[1].mul(s)?]))
    }

    /// `self · k` for a constant (free).
    pub fn mul_const(&self, k: GoldilocksExt) -> Result<Self, SynthesisError> {
        self.mul(&Self::constant(k))
    }

    /// The canonical representative of each component.
    pub fn reduce(&self) -> Result<Self, SynthesisError> {
        Ok(Self([self.0[0].reduce()?, self.0[1].reduce()?]))
    }

    /// Enforces equality in the extension (component-wise mod p, no canonical remainders).
    pub fn enforce_equal(&self, other: &Self) -> Result<(), SynthesisError> {
        self.0[0].enforce_equal_mod_p(&other.0[0])?;
        self.0[1].enforce_equal_mod_p(&other.0[1])
    }

    /// The inverse as a canonical witnessed hint, checked by `self·inv = 1`. Zero has no
    /// inverse: the prover fails with `SynthesisError::DivisionByZero`.
    pub fn inverse(&self) -> Result<Self, SynthesisError> {
        if let (FpVar::Constant(_), FpVar::Constant(_)) = (self.0[0].var(), self.0[1].var()) {
            return self.value()?.try_inverse().map(Self::constant).ok_or(SynthesisError::DivisionByZero);
        }
        let cs = self.0[0].var().cs().or(self.0[1].var().cs());
        let hint = self.value().and_then(|v| {
            let inv = v.try_inverse().ok_or(SynthesisError::DivisionByZero)?;
            Ok(if fault::on(Fault::Inverse) { inv + GoldilocksExt::ONE } else { inv })
        });
        let c0 = alloc_canonical(&cs, hint.map(|v| u(v.0[0].to_canonical_u64())))?;
        let c1 = alloc_canonical(&cs, hint.map(|v| u(v.0[1].to_canonical_u64())))?;
        let inv = Self([c0, c1]);
        self.mul(&inv)?.enforce_equal(&Self::one())?;
        Ok(inv)
    }
}

impl AllocVar<GoldilocksExt, Fr> for GoldilocksExtVar {
    fn new_variable<T: Borrow<GoldilocksExt>>(
        cs: impl Into<Namespace<Fr>>,
        f: impl FnOnce() -> Result<T, SynthesisError>,
        mode: AllocationMode,
    ) -> Result<Self, SynthesisError> {
        let cs = cs.into().cs();
        let v = lazy_value(&cs, || f().map(|v| *v.borrow()));
        let c0 = GoldilocksVar::new_variable(cs.clone(), || v.map(|v| v.0[0]), mode)?;
        let c1 = GoldilocksVar::new_variable(cs, || v.map(|v| v.0[1]), mode)?;
        Ok(Self([c0, c1]))
    }
}

/// Reduces the widest non-canonical component of `a` or `b` until every product `a_i·b_j`, times
/// 7 (3 bits) plus one addition (1 bit), stays within [`MAX_BITS`]. Each component is reduced
/// at most once, where the per-product rule of [`GoldilocksVar::mul`] could reduce a component
/// once per product it appears in.
fn fit_pair(
    a: &GoldilocksExtVar,
    b: &GoldilocksExtVar,
) -> Result<(GoldilocksExtVar, GoldilocksExtVar), SynthesisError> {
    let (mut a, mut b) = (a.clone(), b.clone());
    while a.bits() + b.bits() + 4 > MAX_BITS {
        reduce_widest(a.0.iter_mut().chain(b.0.iter_mut()))?;
    }
    Ok((a, b))
}

fn reduce_widest<'a>(components: impl Iterator<Item = &'a mut GoldilocksVar>) -> Result<(), SynthesisError> {
    match components.filter(|c| !c.is_canonical()).max_by_key(|c| c.bits()) {
        Some(c) => {
            *c = c.reduce()?;
            Ok(())
        }
        // Canonical operands always fit.
        None => Err(SynthesisError::Unsatisfiable),
    }
}
