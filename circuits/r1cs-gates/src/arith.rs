//! Arithmetic helpers on top of the r1cs-goldilocks gadgets: a Karatsuba GF(p²) product (3
//! products instead of 4), products by base-field constants, and plonky2's
//! `ExtensionAlgebra<GF(p²), 2>` (pairs of GF(p²) elements, `v² = 7`), which most gates use.

use ark_relations::gr1cs::SynthesisError;
use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::field::types::Field;
use tgrid_r1cs_goldilocks::{GoldilocksVar, MAX_BITS};

type F = GoldilocksField;
use tgrid_r1cs_goldilocks::GoldilocksExtVar as E;

/// `u² = W` in GF(p²), and `v² = W` in the algebra over GF(p²).
const W: u64 = 7;

fn w() -> F {
    F::from_canonical_u64(W)
}

/// Extra bits of a Karatsuba GF(p²) product over the sum of its operands' bounds:
/// `c0 = t0 + 7·t1` (+3 +1) and `c1 = (a0+a1)(b0+b1) − t0 − t1` (+2, then two offset
/// subtractions).
const EXT_MUL_EXTRA: u32 = 4;

/// Extra bits of a Karatsuba algebra product (one more level of sums and `7·`).
const ALG_MUL_EXTRA: u32 = 8;

/// Bound of a canonical value.
const CANONICAL_BITS: u32 = 64;

fn bound(xs: &[&mut GoldilocksVar]) -> u32 {
    xs.iter().map(|x| x.bits()).max().unwrap_or(0)
}

/// Bound after reducing every component (canonical values and constants keep theirs).
fn reduced_bound(xs: &[&mut GoldilocksVar]) -> u32 {
    xs.iter().map(|x| if x.is_canonical() { x.bits() } else { CANONICAL_BITS }).max().unwrap_or(0)
}

/// Constraints to reduce every non-canonical component (`(bits − 63) + 66` each).
fn reduce_cost(xs: &[&mut GoldilocksVar]) -> u32 {
    xs.iter().filter(|x| !x.is_canonical()).map(|x| x.bits().saturating_sub(63) + 66).sum()
}

fn reduce_all(xs: &mut [&mut GoldilocksVar]) -> Result<(), SynthesisError> {
    for x in xs.iter_mut() {
        **x = x.reduce()?;
    }
    Ok(())
}

/// Makes `bound(a) + bound(b) + extra ≤ MAX_BITS` for a product of two operands given as their
/// components. Why whole operands: reducing the widest component one at a time can reduce one
/// component of each operand where reducing one operand entirely was enough (e.g. the S-box's
/// `x³·x⁴`). Reduces the cheaper operand that suffices alone, else both.
fn fit_operands(
    mut a: Vec<&mut GoldilocksVar>,
    mut b: Vec<&mut GoldilocksVar>,
    extra: u32,
) -> Result<(), SynthesisError> {
    if bound(&a) + bound(&b) + extra <= MAX_BITS {
        return Ok(());
    }
    let a_alone = reduced_bound(&a) + bound(&b) + extra <= MAX_BITS;
    let b_alone = bound(&a) + reduced_bound(&b) + extra <= MAX_BITS;
    match (a_alone, b_alone) {
        (true, true) if reduce_cost(&a) <= reduce_cost(&b) => reduce_all(&mut a),
        (true, false) => reduce_all(&mut a),
        (_, true) => reduce_all(&mut b),
        (false, false) => {
            reduce_all(&mut a)?;
            reduce_all(&mut b)?;
            if bound(&a) + bound(&b) + extra <= MAX_BITS {
                Ok(())
            } else {
                Err(SynthesisError::Unsatisfiable)
            }
        }
    }
}

/// `a·b` in GF(p²) by Karatsuba: 3 constraints (fewer with constant operands). Operands are
/// reduced up front, each component at most once, when the result could pass `MAX_BITS`.
pub(crate) fn mul(a: &E, b: &E) -> Result<E, SynthesisError> {
    let (mut a, mut b) = (a.clone(), b.clone());
    fit_operands(a.0.iter_mut().collect(), b.0.iter_mut().collect(), EXT_MUL_EXTRA)?;
    let [a0, a1] = &a.0;
    let [b0, b1] = &b.0;
    let t0 = a0.mul(b0)?;
    let t1 = a1.mul(b1)?;
    let t2 = a0.add(a1)?.mul(&b0.add(b1)?)?;
    let c0 = t0.add(&t1.mul_const(w())?)?;
    let c1 = t2.sub(&t0)?.sub(&t1)?;
    Ok(E([c0, c1]))
}

/// `a²` in GF(p²): 3 constraints (the gadget's own square).
pub(crate) fn square(a: &E) -> Result<E, SynthesisError> {
    a.square()
}

/// `a·c` for a base-field constant `c` (free: two constant products).
pub(crate) fn scale(a: &E, c: F) -> Result<E, SynthesisError> {
    Ok(E([a.0[0].mul_const(c)?, a.0[1].mul_const(c)?]))
}

/// An element `x0 + x1·v` of plonky2's `ExtensionAlgebra<GF(p²), 2>` (`v² = 7`).
#[derive(Clone, Debug)]
pub(crate) struct Alg(pub [E; 2]);

impl Alg {
    /// The algebra element from two consecutive wires (plonky2's `get_local_ext_algebra`).
    pub(crate) fn from_wires(w: &[E], start: usize) -> Self {
        Self([w[start].clone(), w[start + 1].clone()])
    }

    /// `x + 0·v` (plonky2's `From<F::Extension>`).
    pub(crate) fn from_ext(x: &E) -> Self {
        Self([x.clone(), E::zero()])
    }

    /// The constant 0.
    pub(crate) fn zero() -> Self {
        Self([E::zero(), E::zero()])
    }

    /// The constant 1.
    pub(crate) fn one() -> Self {
        Self([E::one(), E::zero()])
    }

    pub(crate) fn bits(&self) -> u32 {
        self.0[0].bits().max(self.0[1].bits())
    }

    pub(crate) fn add(&self, o: &Self) -> Result<Self, SynthesisError> {
        Ok(Self([self.0[0].add(&o.0[0])?, self.0[1].add(&o.0[1])?]))
    }

    pub(crate) fn sub(&self, o: &Self) -> Result<Self, SynthesisError> {
        Ok(Self([self.0[0].sub(&o.0[0])?, self.0[1].sub(&o.0[1])?]))
    }

    /// `self · s` for a GF(p²) scalar (plonky2's `scalar_mul`): 2 GF(p²) products.
    pub(crate) fn scalar_mul(&self, s: &E) -> Result<Self, SynthesisError> {
        // `s` is used twice: reduce it once here if it is the operand that must shrink.
        let s = if self.bits() + s.bits() + EXT_MUL_EXTRA > MAX_BITS && s.bits() >= self.bits() {
            s.reduce()?
        } else {
            s.clone()
        };
        Ok(Self([mul(&self.0[0], &s)?, mul(&self.0[1], &s)?]))
    }

    /// `self · c` for a base-field constant (free).
    pub(crate) fn scale(&self, c: F) -> Result<Self, SynthesisError> {
        Ok(Self([scale(&self.0[0], c)?, scale(&self.0[1], c)?]))
    }

    /// Canonical components when the bound exceeds `max_bits`.
    pub(crate) fn fit(&self, max_bits: u32) -> Result<Self, SynthesisError> {
        if self.bits() > max_bits {
            Ok(Self([self.0[0].reduce()?, self.0[1].reduce()?]))
        } else {
            Ok(self.clone())
        }
    }

    /// Karatsuba over GF(p²), itself Karatsuba: 9 constraints (fewer with constant operands).
    /// `(x0 + x1 v)(y0 + y1 v) = (x0 y0 + 7 x1 y1) + ((x0 + x1)(y0 + y1) − x0 y0 − x1 y1) v`.
    pub(crate) fn mul(&self, o: &Self) -> Result<Self, SynthesisError> {
        let (mut a, mut b) = (self.clone(), o.clone());
        fit_operands(
            a.0.iter_mut().flat_map(|e| e.0.iter_mut()).collect(),
            b.0.iter_mut().flat_map(|e| e.0.iter_mut()).collect(),
            ALG_MUL_EXTRA,
        )?;
        let [a0, a1] = &a.0;
        let [b0, b1] = &b.0;
        let p0 = mul(a0, b0)?;
        let p1 = mul(a1, b1)?;
        let p2 = mul(&a0.add(a1)?, &b0.add(b1)?)?;
        let c0 = p0.add(&scale(&p1, w())?)?;
        let c1 = p2.sub(&p0)?.sub(&p1)?;
        Ok(Self([c0, c1]))
    }

    /// The two GF(p²) coordinates (plonky2's `to_basefield_array`).
    pub(crate) fn into_array(self) -> [E; 2] {
        self.0
    }
}
