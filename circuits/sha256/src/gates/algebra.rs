//! One definition of each constraint for the three evaluations plonky2 asks of a gate (extension
//! field, packed base field, and recursively inside a circuit).

use std::marker::PhantomData;
use std::ops::{Add, Mul, Sub};

use plonky2::field::extension::Extendable;
use plonky2::field::types::Field;
use plonky2::hash::hash_types::RichField;
use plonky2::iop::ext_target::ExtensionTarget;
use plonky2::plonk::circuit_builder::CircuitBuilder;

/// The ring operations a constraint is written with.
#[allow(missing_docs)]
pub trait Algebra {
    /// A value: a field element, a packed vector of them, or a circuit target.
    type V: Copy;
    fn constant(&mut self, c: u64) -> Self::V;
    fn add(&mut self, a: Self::V, b: Self::V) -> Self::V;
    fn sub(&mut self, a: Self::V, b: Self::V) -> Self::V;
    fn mul(&mut self, a: Self::V, b: Self::V) -> Self::V;
    /// `c · a` for a small constant `c`.
    fn scale(&mut self, c: u64, a: Self::V) -> Self::V {
        let c = self.constant(c);
        self.mul(c, a)
    }
}

/// Values of any field-like type (extension elements, packed base elements).
pub(crate) struct Values<T, K> {
    constant: K,
    _values: PhantomData<T>,
}

impl<T, K: Fn(u64) -> T> Values<T, K> {
    pub(crate) fn new(constant: K) -> Self {
        Self { constant, _values: PhantomData }
    }
}

impl<T, K> Algebra for Values<T, K>
where
    T: Copy + Add<Output = T> + Sub<Output = T> + Mul<Output = T>,
    K: Fn(u64) -> T,
{
    type V = T;
    fn constant(&mut self, c: u64) -> T {
        (self.constant)(c)
    }
    fn add(&mut self, a: T, b: T) -> T {
        a + b
    }
    fn sub(&mut self, a: T, b: T) -> T {
        a - b
    }
    fn mul(&mut self, a: T, b: T) -> T {
        a * b
    }
}

/// Extension targets of a recursive verifier.
pub(crate) struct Targets<'a, F: RichField + Extendable<D>, const D: usize> {
    pub(crate) builder: &'a mut CircuitBuilder<F, D>,
}

impl<F: RichField + Extendable<D>, const D: usize> Algebra for Targets<'_, F, D> {
    type V = ExtensionTarget<D>;
    fn constant(&mut self, c: u64) -> Self::V {
        self.builder.constant_extension(F::Extension::from_canonical_u64(c))
    }
    fn add(&mut self, a: Self::V, b: Self::V) -> Self::V {
        self.builder.add_extension(a, b)
    }
    fn sub(&mut self, a: Self::V, b: Self::V) -> Self::V {
        self.builder.sub_extension(a, b)
    }
    fn mul(&mut self, a: Self::V, b: Self::V) -> Self::V {
        self.builder.mul_extension(a, b)
    }
    fn scale(&mut self, c: u64, a: Self::V) -> Self::V {
        self.builder.mul_const_extension(F::from_canonical_u64(c), a)
    }
}

/// Where a bit of a word's rotation or shift comes from: `ROTR^r` or `SHR^r`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Move {
    Rotr(usize),
    Shr(usize),
}

impl Move {
    /// Index (least significant first) of the input bit that lands at position `i`, if any.
    fn source(self, i: usize) -> Option<usize> {
        match self {
            Move::Rotr(r) => Some((i + r) % 32),
            Move::Shr(r) => (i + r < 32).then_some(i + r),
        }
    }

    /// The native value.
    pub(crate) fn apply(self, x: u32) -> u32 {
        match self {
            Move::Rotr(r) => x.rotate_right(r as u32),
            Move::Shr(r) => x >> r,
        }
    }
}

/// `Σ0`, `Σ1`, `σ0`, `σ1` of FIPS 180-4: the XOR of three moves of a word.
pub(crate) const BIG_SIGMA0: [Move; 3] = [Move::Rotr(2), Move::Rotr(13), Move::Rotr(22)];
pub(crate) const BIG_SIGMA1: [Move; 3] = [Move::Rotr(6), Move::Rotr(11), Move::Rotr(25)];
pub(crate) const SMALL_SIGMA0: [Move; 3] = [Move::Rotr(7), Move::Rotr(18), Move::Shr(3)];
pub(crate) const SMALL_SIGMA1: [Move; 3] = [Move::Rotr(17), Move::Rotr(19), Move::Shr(10)];

/// Native `Σ`/`σ`.
pub(crate) fn sigma_native(moves: [Move; 3], x: u32) -> u32 {
    moves.iter().fold(0, |acc, m| acc ^ m.apply(x))
}

/// `x ⊕ y` of bits.
fn xor<A: Algebra>(alg: &mut A, x: A::V, y: A::V) -> A::V {
    let sum = alg.add(x, y);
    let xy = alg.mul(x, y);
    let two_xy = alg.scale(2, xy);
    alg.sub(sum, two_xy)
}

/// Bit `i` of `Σ`/`σ` of a word given by its bits (degree 3).
pub(crate) fn sigma_bit<A: Algebra>(alg: &mut A, moves: [Move; 3], bits: &[A::V], i: usize) -> A::V {
    let mut sources = moves.iter().filter_map(|m| m.source(i)).map(|j| bits[j]);
    let first = sources.next().expect("a rotation always contributes");
    sources.fold(first, |acc, b| xor(alg, acc, b))
}

/// `Σ_i 2^i · terms[i]`.
pub(crate) fn weighted<A: Algebra>(alg: &mut A, terms: &[A::V]) -> A::V {
    let mut acc = terms[0];
    for (i, &t) in terms.iter().enumerate().skip(1) {
        let scaled = alg.scale(1 << i, t);
        acc = alg.add(acc, scaled);
    }
    acc
}

/// `b² − b` for every bit.
pub(crate) fn booleans<A: Algebra>(alg: &mut A, bits: &[A::V], out: &mut Vec<A::V>) {
    for &b in bits {
        let square = alg.mul(b, b);
        out.push(alg.sub(square, b));
    }
}
