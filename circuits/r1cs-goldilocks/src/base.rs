//! [`GoldilocksVar`]: one native variable, a bit bound, lazy reduction.

use std::borrow::{Borrow, Cow};
use std::rc::Rc;

use ark_bn254::Fr;
use ark_ff::Field as _;
use ark_r1cs_std::fields::fp::FpVar;
use ark_r1cs_std::prelude::*;
use ark_relations::gr1cs::{ConstraintSystemRef, Namespace, SynthesisError};
use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::field::types::{Field as _, PrimeField64};

use crate::bits::{self, divrem_p, fr, gl, int, u, Bits, Int, P};
use crate::fault::{self, Fault};

/// Largest bit bound any intermediate integer may have. With x < 2^252 the quotient of a
/// reduction is below 2^189, so `q·p + rem < 2^253 < r`: every check `x = q·p + rem` (and every
/// sum or product of tracked values) holds over the integers, not just mod r.
pub const MAX_BITS: u32 = 252;

/// A Goldilocks element in BN254 R1CS: a non-negative integer below `2^bits` (a Rust-side bound,
/// free in the circuit) standing for its residue mod p.
///
/// A *canonical* value is below p and carries its 64-bit little-endian decomposition (reused by
/// [`to_bits_le`](Self::to_bits_le), [`pack3`](crate::pack3)).
#[derive(Clone, Debug)]
pub struct GoldilocksVar {
    var: FpVar<Fr>,
    bits: u32,
    canonical: bool,
    le_bits: Option<Rc<[Boolean<Fr>]>>,
}

impl GoldilocksVar {
    fn lazy(var: FpVar<Fr>, bits: u32) -> Self {
        Self { var, bits, canonical: false, le_bits: None }
    }

    /// A canonical value from its 64 checked bits (`bits.enforce_canonical()` already done).
    pub(crate) fn from_canonical_bits(bits: &Bits) -> Result<Self, SynthesisError> {
        Ok(Self { var: bits.all()?, bits: 64, canonical: true, le_bits: Some(bits.bools.clone().into()) })
    }

    /// A canonical value made of `bits` (at most 63 bits, so below p automatically).
    pub(crate) fn from_short_bits(var: FpVar<Fr>, bits: &[Boolean<Fr>]) -> Self {
        let mut le = bits.to_vec();
        le.resize(64, Boolean::FALSE);
        Self { var, bits: bits.len() as u32, canonical: true, le_bits: Some(le.into()) }
    }

    /// A constant (free).
    pub fn constant(v: GoldilocksField) -> Self {
        let x = v.to_canonical_u64();
        Self { var: FpVar::Constant(Fr::from(x)), bits: 64 - x.leading_zeros(), canonical: true, le_bits: None }
    }

    /// The constant `v mod p`.
    pub fn constant_u64(v: u64) -> Self {
        Self::constant(GoldilocksField::from_noncanonical_u64(v))
    }

    /// The constant 0.
    pub fn zero() -> Self {
        Self::constant(GoldilocksField::ZERO)
    }

    /// The constant 1.
    pub fn one() -> Self {
        Self::constant(GoldilocksField::ONE)
    }

    /// A canonical witness: 64-bit decomposition plus the canonicity constraint (65 constraints).
    pub fn new_witness_canonical(
        cs: impl Into<Namespace<Fr>>,
        f: impl FnOnce() -> Result<GoldilocksField, SynthesisError>,
    ) -> Result<Self, SynthesisError> {
        let cs = cs.into().cs();
        let value = lazy_value(&cs, f).map(|v| {
            let x = v.to_canonical_u64();
            // Test fault: the alias v + p encodes the same residue with a 64-bit integer.
            if fault::on(Fault::CanonicalAlias) && x < bits::M32 {
                u(x + P)
            } else {
                u(x)
            }
        });
        alloc_canonical(&cs, value)
    }

    /// A witness known only to be below 2^64 (64 constraints): enough for bounded arithmetic
    /// and injective packing of committed values, not canonical.
    pub fn new_witness_u64(
        cs: impl Into<Namespace<Fr>>,
        f: impl FnOnce() -> Result<u64, SynthesisError>,
    ) -> Result<Self, SynthesisError> {
        let cs = cs.into().cs();
        let b = Bits::alloc(&cs, lazy_value(&cs, f).map(u), 64)?;
        Ok(Self::lazy(b.all()?, 64))
    }

    /// Asserts that `x` holds a canonical Goldilocks value (64 bits + canonicity + one linear
    /// check: 66 constraints). An `x` that is not below p leaves the system unsatisfied.
    pub fn from_fp_canonical(x: &FpVar<Fr>) -> Result<Self, SynthesisError> {
        if let FpVar::Constant(c) = x {
            let v = int(*c);
            return if v[1..].iter().all(|&l| l == 0) && v[0] < P {
                Ok(Self::constant(GoldilocksField::from_canonical_u64(v[0])))
            } else {
                Err(SynthesisError::Unsatisfiable)
            };
        }
        let cs = x.cs();
        let out = alloc_canonical(&cs, x.value().map(int))?;
        fault::mark(&cs, "link");
        out.var.enforce_equal(x)?;
        Ok(out)
    }

    /// A value below 2^n from `n ≤ 64` little-endian bits (free). Canonical when `n ≤ 63`.
    pub fn from_le_bits(bits: &[Boolean<Fr>]) -> Result<Self, SynthesisError> {
        if bits.len() > 64 {
            return Err(SynthesisError::Unsatisfiable);
        }
        let var = Boolean::le_bits_to_fp(bits)?;
        if bits.len() < 64 {
            Ok(Self::from_short_bits(var, bits))
        } else {
            Ok(Self::lazy(var, 64))
        }
    }

    /// `if bit { a } else { b }`: one constraint; the bound is the larger one, canonical when
    /// both are.
    pub fn select(bit: &Boolean<Fr>, a: &Self, b: &Self) -> Result<Self, SynthesisError> {
        let var = FpVar::conditionally_select(bit, &a.var, &b.var)?;
        Ok(Self { var, bits: a.bits.max(b.bits), canonical: a.canonical && b.canonical, le_bits: None })
    }

    /// The native variable (an integer below `2^bits()`; only its residue mod p is meaningful).
    pub fn var(&self) -> &FpVar<Fr> {
        &self.var
    }

    /// The bit bound: the integer is below `2^bits()`.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// Whether the integer is known to be below p (then it is the canonical representative).
    pub fn is_canonical(&self) -> bool {
        self.canonical
    }

    /// The plonky2 value (the integer mod p).
    pub fn value(&self) -> Result<GoldilocksField, SynthesisError> {
        self.var.value().map(|x| gl(int(x)))
    }

    /// `self + other` (free; bound `max + 1`).
    pub fn add(&self, other: &Self) -> Result<Self, SynthesisError> {
        let (a, b) = fit(self, other, |a, b| a.bits.max(b.bits) + 1)?;
        Ok(Self::lazy(&a.var + &b.var, a.bits.max(b.bits) + 1))
    }

    /// `self − other` as `self + k·p − other`, with `k·p` above `other`'s bound (free).
    pub fn sub(&self, other: &Self) -> Result<Self, SynthesisError> {
        let (a, b) = fit(self, other, |a, b| a.bits.max(b.offset().1) + 1)?;
        let (off, off_bits) = b.offset();
        Ok(Self::lazy(&a.var + off - &b.var, a.bits.max(off_bits) + 1))
    }

    /// `−self` as `k·p − self` (free).
    pub fn neg(&self) -> Result<Self, SynthesisError> {
        let a = if self.offset().1 > MAX_BITS { Cow::Owned(self.reduce()?) } else { Cow::Borrowed(self) };
        let (off, off_bits) = a.offset();
        Ok(Self::lazy(FpVar::Constant(off) - &a.var, off_bits))
    }

    /// `self · other`: one constraint (free if either is constant). An operand is reduced first
    /// when the product's bound would exceed [`MAX_BITS`].
    pub fn mul(&self, other: &Self) -> Result<Self, SynthesisError> {
        let (a, b) = fit(self, other, |a, b| a.bits + b.bits)?;
        fault::mark(&cs_of(&a.var, &b.var), "mul");
        Ok(Self::lazy(&a.var * &b.var, a.bits + b.bits))
    }

    /// `self · c` for a constant (free).
    pub fn mul_const(&self, c: GoldilocksField) -> Result<Self, SynthesisError> {
        self.mul(&Self::constant(c))
    }

    /// `self + c` for a constant (free).
    pub fn add_const(&self, c: GoldilocksField) -> Result<Self, SynthesisError> {
        self.add(&Self::constant(c))
    }

    /// `self²` (one constraint). Prefer it to `x.mul(&x)`, which may reduce `x` twice.
    pub fn square(&self) -> Result<Self, SynthesisError> {
        let a = if 2 * self.bits > MAX_BITS { Cow::Owned(self.reduce()?) } else { Cow::Borrowed(self) };
        a.mul(&a)
    }

    /// Σ items (free): bound `max + ceil(log2 n)` instead of one bit per addition.
    pub fn sum(items: &[Self]) -> Result<Self, SynthesisError> {
        let extra = items.len().next_power_of_two().trailing_zeros();
        let mut var = FpVar::zero();
        let mut bits = 0;
        for x in items {
            let x = if x.bits + extra > MAX_BITS { Cow::Owned(x.reduce()?) } else { Cow::Borrowed(x) };
            var += &x.var;
            bits = bits.max(x.bits);
        }
        Ok(Self::lazy(var, bits + extra))
    }

    /// The canonical representative: witness `q < 2^(bits−63)` and a canonical `rem`, check
    /// `self = q·p + rem` (`(bits − 63) + 65 + 1` constraints; free for canonical values and
    /// constants).
    pub fn reduce(&self) -> Result<Self, SynthesisError> {
        if self.canonical {
            return Ok(self.clone());
        }
        if let FpVar::Constant(c) = &self.var {
            return Ok(Self::constant(gl(int(*c))));
        }
        let cs = self.var.cs();
        let hint = self.var.value().map(|x| {
            let x = int(x);
            let (q, rem) = divrem_p(x);
            let (q, rem) = (fr(q), Fr::from(rem));
            let p = Fr::from(P);
            // Test faults: keep x = q·p + rem (except `ReduceRemainder`) with a forged split.
            let (q, rem) = if fault::on(Fault::ReduceQuotientDown) {
                (q - Fr::from(1u8), rem + p)
            } else if fault::on(Fault::ReduceQuotientUp) {
                (q + Fr::from(1u8), rem - p)
            } else if fault::on(Fault::ReduceRemainder) {
                (q, rem + Fr::from(1u8))
            } else if fault::on(Fault::ReduceFieldQuotient) {
                let rem = Fr::from((int(rem)[0] + 1) % P);
                ((fr(x) - rem) / p, rem)
            } else {
                (q, rem)
            };
            (int(q), int(rem))
        });
        let q = Bits::alloc(&cs, hint.map(|h| h.0), self.bits.saturating_sub(63) as usize)?;
        let rem = alloc_canonical(&cs, hint.map(|h| h.1))?;
        fault::mark(&cs, "link");
        (q.all()? * Fr::from(P) + &rem.var).enforce_equal(&self.var)?;
        Ok(rem)
    }

    /// Enforces `self ≡ other (mod p)` without a canonical remainder: witness only the quotient
    /// of `d = self − other + k·p` (range-checked to `bits(d) − 63` bits) and check `d = q·p`.
    /// One constraint when both are canonical. Unequal values leave the system unsatisfied.
    pub fn enforce_equal_mod_p(&self, other: &Self) -> Result<(), SynthesisError> {
        if let (FpVar::Constant(a), FpVar::Constant(b)) = (&self.var, &other.var) {
            return if gl(int(*a)) == gl(int(*b)) { Ok(()) } else { Err(SynthesisError::Unsatisfiable) };
        }
        if self.canonical && other.canonical {
            fault::mark(&cs_of(&self.var, &other.var), "link");
            return self.var.enforce_equal(&other.var);
        }
        let d = self.sub(other)?;
        if let FpVar::Constant(c) = &d.var {
            return if divrem_p(int(*c)).1 == 0 { Ok(()) } else { Err(SynthesisError::Unsatisfiable) };
        }
        let cs = d.var.cs();
        let hint = d.var.value().map(|x| {
            let q = fr(divrem_p(int(x)).0);
            // Test faults: a wrong quotient, or the exact field quotient d/p (which exists for
            // any d and only fails the range check).
            int(if fault::on(Fault::EqQuotient) {
                q + Fr::from(1u8)
            } else if fault::on(Fault::EqFieldQuotient) {
                x / Fr::from(P)
            } else {
                q
            })
        });
        let q = Bits::alloc(&cs, hint, d.bits.saturating_sub(63) as usize)?;
        fault::mark(&cs, "link");
        (q.all()? * Fr::from(P)).enforce_equal(&d.var)
    }

    /// The 64 little-endian bits of the canonical representative (reduces first if needed; free
    /// for canonical values).
    pub fn to_bits_le(&self) -> Result<Vec<Boolean<Fr>>, SynthesisError> {
        if let Some(b) = &self.le_bits {
            return Ok(b.to_vec());
        }
        if let FpVar::Constant(c) = &self.var {
            return Ok(bits::const_bits(gl(int(*c)).to_canonical_u64(), 64));
        }
        self.reduce()?.to_bits_le()
    }

    /// The inverse, as a canonical witnessed hint checked by one product and
    /// `enforce_equal_mod_p(self·inv, 1)`. Zero has no inverse: the prover fails with
    /// `SynthesisError::DivisionByZero` (a constant zero fails the same way at synthesis).
    pub fn inverse(&self) -> Result<Self, SynthesisError> {
        if let FpVar::Constant(c) = &self.var {
            return gl(int(*c)).try_inverse().map(Self::constant).ok_or(SynthesisError::DivisionByZero);
        }
        let cs = self.var.cs();
        let hint = self.value().and_then(|v| {
            let inv = v.try_inverse().ok_or(SynthesisError::DivisionByZero)?;
            let inv = if fault::on(Fault::Inverse) { inv + GoldilocksField::ONE } else { inv };
            Ok(u(inv.to_canonical_u64()))
        });
        let inv = alloc_canonical(&cs, hint)?;
        self.mul(&inv)?.enforce_equal_mod_p(&Self::one())?;
        Ok(inv)
    }

    /// A multiple of p above this value's bound, and that multiple's bit length: subtracting
    /// `self` from it stays non-negative.
    fn offset(&self) -> (Fr, u32) {
        if self.canonical || self.bits <= 63 {
            (Fr::from(P), 64)
        } else {
            // 2^(bits−63)·p > 2^(bits−63)·2^63 = 2^bits, and < 2^(bits+1).
            (Fr::from(P) * Fr::from(2u8).pow([self.bits as u64 - 63]), self.bits + 1)
        }
    }
}

impl AllocVar<GoldilocksField, Fr> for GoldilocksVar {
    /// Constants are free, witnesses canonical (65 constraints), inputs an `Fr` public input
    /// asserted canonical (66 constraints).
    fn new_variable<T: Borrow<GoldilocksField>>(
        cs: impl Into<Namespace<Fr>>,
        f: impl FnOnce() -> Result<T, SynthesisError>,
        mode: AllocationMode,
    ) -> Result<Self, SynthesisError> {
        let cs = cs.into().cs();
        match mode {
            AllocationMode::Constant => Ok(Self::constant(*f()?.borrow())),
            AllocationMode::Witness => Self::new_witness_canonical(cs, || f().map(|v| *v.borrow())),
            AllocationMode::Input => {
                let x = FpVar::new_input(cs, || f().map(|v| Fr::from(v.borrow().to_canonical_u64())))?;
                Self::from_fp_canonical(&x)
            }
        }
    }
}

/// Calls a value closure only when the system wants values (arkworks never evaluates witness
/// closures in setup mode; user closures may rely on that).
pub(crate) fn lazy_value<T>(
    cs: &ConstraintSystemRef<Fr>,
    f: impl FnOnce() -> Result<T, SynthesisError>,
) -> Result<T, SynthesisError> {
    if cs.is_in_setup_mode() {
        Err(SynthesisError::AssignmentMissing)
    } else {
        f()
    }
}

/// A canonical witness from its integer value: 64 bits + canonicity (65 constraints).
pub(crate) fn alloc_canonical(
    cs: &ConstraintSystemRef<Fr>,
    value: Result<Int, SynthesisError>,
) -> Result<GoldilocksVar, SynthesisError> {
    let b = Bits::alloc(cs, value, 64)?;
    b.enforce_canonical()?;
    GoldilocksVar::from_canonical_bits(&b)
}

fn cs_of(a: &FpVar<Fr>, b: &FpVar<Fr>) -> ConstraintSystemRef<Fr> {
    a.cs().or(b.cs())
}

/// Reduces the wider non-canonical operand until `bound(a, b) ≤ MAX_BITS` (two canonical
/// operands always fit every bound used here).
fn fit<'a>(
    a: &'a GoldilocksVar,
    b: &'a GoldilocksVar,
    bound: impl Fn(&GoldilocksVar, &GoldilocksVar) -> u32,
) -> Result<(Cow<'a, GoldilocksVar>, Cow<'a, GoldilocksVar>), SynthesisError> {
    let (mut a, mut b) = (Cow::Borrowed(a), Cow::Borrowed(b));
    while bound(&a, &b) > MAX_BITS {
        if !a.canonical && (b.canonical || a.bits >= b.bits) {
            a = Cow::Owned(a.reduce()?);
        } else if !b.canonical {
            b = Cow::Owned(b.reduce()?);
        } else {
            return Err(SynthesisError::Unsatisfiable);
        }
    }
    Ok((a, b))
}
