//! The arithmetic, bookkeeping and linear gates: each function mirrors the `eval_unfiltered` of
//! the plonky2 1.1.0 gate it is named after (same constraint order, same count). Lengths are
//! checked by the caller.

use ark_relations::gr1cs::SynthesisError;
use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::field::types::Field;
use plonky2::hash::poseidon::{Poseidon, SPONGE_WIDTH};
use tgrid_r1cs_goldilocks::GoldilocksVar;

use crate::arith::{mul, scale, square, Alg};

type F = GoldilocksField;
use tgrid_r1cs_goldilocks::GoldilocksExtVar as E;

/// `Σ terms[i].0 · terms[i].1` for base-field constants (free). Each component is one sum, so
/// the bound grows by `log2(n)` rather than by one bit per addition.
pub(crate) fn lin_comb(terms: &[(&E, F)]) -> Result<E, SynthesisError> {
    let mut c0 = Vec::with_capacity(terms.len());
    let mut c1 = Vec::with_capacity(terms.len());
    for (x, k) in terms {
        if *k == F::ZERO {
            continue;
        }
        let y = scale(x, *k)?;
        let [y0, y1] = y.0;
        c0.push(y0);
        c1.push(y1);
    }
    Ok(E([GoldilocksVar::sum(&c0)?, GoldilocksVar::sum(&c1)?]))
}

/// `ConstantGate`: `c_i − w_i` for `i < num_consts`.
pub(crate) fn constant(num_consts: usize, c: &[E], w: &[E]) -> Result<Vec<E>, SynthesisError> {
    (0..num_consts).map(|i| c[i].sub(&w[i])).collect()
}

/// `PublicInputGate`: `w_i − pi_hash_i` for the 4 hash elements.
pub(crate) fn public_input(w: &[E], pih: &[GoldilocksVar; 4]) -> Result<Vec<E>, SynthesisError> {
    (0..4).map(|i| w[i].sub(&E::from_base(pih[i].clone()))).collect()
}

/// `ArithmeticGate`: `out − (m0·m1·c0 + addend·c1)` per op, wires `4i..4i+4`.
pub(crate) fn arithmetic(num_ops: usize, c: &[E], w: &[E]) -> Result<Vec<E>, SynthesisError> {
    let (c0, c1) = (&c[0], &c[1]);
    (0..num_ops)
        .map(|i| {
            let [m0, m1, addend, out] = [&w[4 * i], &w[4 * i + 1], &w[4 * i + 2], &w[4 * i + 3]];
            let computed = mul(&mul(m0, m1)?, c0)?.add(&mul(addend, c1)?)?;
            out.sub(&computed)
        })
        .collect()
}

/// `ArithmeticExtensionGate`: per op (wires `8i..8i+8`, four algebra elements),
/// `out − ((m0·m1)·c0 + addend·c1)` in the algebra, as its two coordinates.
pub(crate) fn arithmetic_extension(num_ops: usize, c: &[E], w: &[E]) -> Result<Vec<E>, SynthesisError> {
    let mut out = Vec::with_capacity(2 * num_ops);
    for i in 0..num_ops {
        let base = 8 * i;
        let m0 = Alg::from_wires(w, base);
        let m1 = Alg::from_wires(w, base + 2);
        let addend = Alg::from_wires(w, base + 4);
        let output = Alg::from_wires(w, base + 6);
        let computed = m0.mul(&m1)?.scalar_mul(&c[0])?.add(&addend.scalar_mul(&c[1])?)?;
        out.extend(output.sub(&computed)?.into_array());
    }
    Ok(out)
}

/// `MulExtensionGate`: per op (wires `6i..6i+6`), `out − (m0·m1)·c0` in the algebra.
pub(crate) fn mul_extension(num_ops: usize, c: &[E], w: &[E]) -> Result<Vec<E>, SynthesisError> {
    let mut out = Vec::with_capacity(2 * num_ops);
    for i in 0..num_ops {
        let base = 6 * i;
        let m0 = Alg::from_wires(w, base);
        let m1 = Alg::from_wires(w, base + 2);
        let output = Alg::from_wires(w, base + 4);
        let computed = m0.mul(&m1)?.scalar_mul(&c[0])?;
        out.extend(output.sub(&computed)?.into_array());
    }
    Ok(out)
}

/// `BaseSumGate<2>`: `Σ limb_i·2^i − sum`, then `limb·(limb − 1)` per limb (plonky2's
/// `Π_{i<B} (limb − i)` for B = 2, whose leading factor 1 changes nothing).
pub(crate) fn base_sum_2(num_limbs: usize, w: &[E]) -> Result<Vec<E>, SynthesisError> {
    let limbs = &w[1..1 + num_limbs];
    let two = F::TWO;
    let terms: Vec<(&E, F)> = limbs.iter().enumerate().map(|(i, l)| (l, two.exp_u64(i as u64))).collect();
    let mut out = Vec::with_capacity(1 + num_limbs);
    out.push(lin_comb(&terms)?.sub(&w[0])?);
    for limb in limbs {
        out.push(square(limb)?.sub(limb)?);
    }
    Ok(out)
}

/// `ReducingGate<2>` (base coefficients) and `ReducingExtensionGate<2>` (algebra coefficients):
/// `acc·α + coeff_i − acc_i` with `acc` the previous accumulator wire (`old_acc` first), two
/// coordinates each. Wires: output `0..2`, α `2..4`, old_acc `4..6`, coefficients from 6 (one
/// wire each, or two), then the accumulators; the last accumulator is the output.
pub(crate) fn reducing(num_coeffs: usize, ext_coeffs: bool, w: &[E]) -> Result<Vec<E>, SynthesisError> {
    let width = if ext_coeffs { 2 } else { 1 };
    let start_accs = 6 + width * num_coeffs;
    let acc_wires = |i: usize| if i == num_coeffs - 1 { 0 } else { start_accs + 2 * i };
    let alpha = Alg::from_wires(w, 2);
    let mut acc = Alg::from_wires(w, 4);
    let mut out = Vec::with_capacity(2 * num_coeffs);
    for i in 0..num_coeffs {
        let coeff = if ext_coeffs { Alg::from_wires(w, 6 + 2 * i) } else { Alg::from_ext(&w[6 + i]) };
        let next = Alg::from_wires(w, acc_wires(i));
        out.extend(acc.mul(&alpha)?.add(&coeff)?.sub(&next)?.into_array());
        acc = next;
    }
    Ok(out)
}

/// Highest wire index + 1 that [`reducing`] reads.
pub(crate) fn reducing_wires(num_coeffs: usize, ext_coeffs: bool) -> usize {
    let width = if ext_coeffs { 2 } else { 1 };
    let start_accs = 6 + width * num_coeffs;
    if num_coeffs >= 2 {
        start_accs + 2 * (num_coeffs - 1)
    } else {
        start_accs
    }
}

/// `RandomAccessGate` layout, as in plonky2.
pub(crate) struct RandomAccessLayout {
    pub bits: usize,
    pub num_copies: usize,
    pub num_extra_constants: usize,
}

impl RandomAccessLayout {
    fn vec_size(&self) -> usize {
        1 << self.bits
    }
    fn start_extra_constants(&self) -> usize {
        (2 + self.vec_size()) * self.num_copies
    }
    fn num_routed_wires(&self) -> usize {
        self.start_extra_constants() + self.num_extra_constants
    }
    fn wire_bit(&self, i: usize, copy: usize) -> usize {
        self.num_routed_wires() + copy * self.bits + i
    }
    /// Number of wires read.
    pub(crate) fn num_wires(&self) -> usize {
        self.num_routed_wires() + self.num_copies * self.bits
    }
}

/// `RandomAccessGate`: per copy, `b·(b − 1)` per index bit, `Σ b_i 2^i − index`, then the list
/// folded by `x + b·(y − x)` per bit (lowest first) minus the claimed element; then
/// `c_i − w_extra_i` for the extra constants.
pub(crate) fn random_access(l: &RandomAccessLayout, c: &[E], w: &[E]) -> Result<Vec<E>, SynthesisError> {
    let mut out = Vec::new();
    for copy in 0..l.num_copies {
        let base = (2 + l.vec_size()) * copy;
        let access_index = &w[base];
        let claimed = &w[base + 1];
        let mut items: Vec<E> = w[base + 2..base + 2 + l.vec_size()].to_vec();
        let bits: Vec<&E> = (0..l.bits).map(|i| &w[l.wire_bit(i, copy)]).collect();
        for b in &bits {
            out.push(square(b)?.sub(b)?);
        }
        let terms: Vec<(&E, F)> = bits.iter().enumerate().map(|(i, b)| (*b, F::TWO.exp_u64(i as u64))).collect();
        out.push(lin_comb(&terms)?.sub(access_index)?);
        for b in &bits {
            // Each difference is used once: the product reduces it if needed, and only it.
            items = items.chunks(2).map(|xy| xy[0].add(&mul(b, &xy[1].sub(&xy[0])?)?)).collect::<Result<_, _>>()?;
        }
        out.push(items[0].sub(claimed)?);
    }
    for i in 0..l.num_extra_constants {
        out.push(c[i].sub(&w[l.start_extra_constants() + i])?);
    }
    Ok(out)
}

/// `PoseidonMdsGate`: `out_r − Σ_i v_{(i+r) mod 12}·circ_i − v_r·diag_r` in the algebra (inputs at
/// wires `2i`, outputs at `2(12+i)`). Constant coefficients only: free.
pub(crate) fn poseidon_mds(w: &[E]) -> Result<Vec<E>, SynthesisError> {
    let circ = <F as Poseidon>::MDS_MATRIX_CIRC;
    let diag = <F as Poseidon>::MDS_MATRIX_DIAG;
    let mut out = Vec::with_capacity(4 * SPONGE_WIDTH);
    for r in 0..SPONGE_WIDTH {
        for coord in 0..2 {
            let v = |i: usize| &w[2 * i + coord];
            let mut terms: Vec<(&E, F)> =
                (0..SPONGE_WIDTH).map(|i| (v((i + r) % SPONGE_WIDTH), F::from_noncanonical_u64(circ[i]))).collect();
            terms.push((v(r), F::from_noncanonical_u64(diag[r])));
            let computed = lin_comb(&terms)?;
            // plonky2's order: output r, coordinate 0 then 1.
            out.push(w[2 * (SPONGE_WIDTH + r) + coord].sub(&computed)?);
        }
    }
    Ok(out)
}
