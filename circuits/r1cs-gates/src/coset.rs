//! `CosetInterpolationGate` (plonky2 1.1.0).
//!
//! plonky2 runs, per chunk of domain points `x_j` (values `v_j`, barycentric weights `w_j`), the
//! recurrence `eval ← eval·(X − x_j) + w_j v_j·prod`, `prod ← prod·(X − x_j)` from
//! `(eval₀, prod₀)`. Unrolled, a chunk gives
//!
//! `eval = eval₀·P(X) + prod₀·Σ_j v_j·(w_j Q_j)(X)`, `prod = prod₀·P(X)`,
//!
//! with `P = Π_j (X − x_j)` and `Q_j = Π_{k≠j} (X − x_k)` polynomials with constant coefficients.
//! Why: the recurrence multiplies 64-bit values into a chain and would need a reduction of
//! each algebra element almost every step, whereas the unrolled form needs the powers of `X`
//! once for the whole gate (canonical up to the largest `Q` degree; the top power only occurs
//! in the monic `P`, so it stays lazy) and one reduction of the weighted sum per later chunk.
//! Both are the same polynomial in the wires, so the values agree exactly.

use ark_relations::gr1cs::SynthesisError;
use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::field::types::Field;
use tgrid_r1cs_goldilocks::{GoldilocksVar, MAX_BITS};

use crate::arith::Alg;

type F = GoldilocksField;

/// Parameters of the gate, validated by the caller.
pub(crate) struct CosetLayout<'a> {
    pub subgroup_bits: usize,
    pub degree: usize,
    pub weights: &'a [F],
}

impl CosetLayout<'_> {
    pub(crate) fn num_points(&self) -> usize {
        1 << self.subgroup_bits
    }
    pub(crate) fn num_intermediates(&self) -> usize {
        (self.num_points() - 2) / (self.degree - 1)
    }
    fn start_intermediates(&self) -> usize {
        1 + 2 * self.num_points() + 4
    }
    /// Number of wires read.
    pub(crate) fn num_wires(&self) -> usize {
        self.start_intermediates() + 2 * (2 * self.num_intermediates() + 1)
    }
    /// The domain index ranges of the chunks (plonky2's slicing), or `None` if they do not fit.
    pub(crate) fn chunks(&self) -> Option<Vec<std::ops::Range<usize>>> {
        let n = self.num_points();
        let mut v = Vec::with_capacity(1 + self.num_intermediates());
        v.push(0..self.degree);
        for i in 0..self.num_intermediates() {
            let start = 1 + (self.degree - 1) * (i + 1);
            let end = (start + self.degree - 1).min(n);
            v.push(start..end);
        }
        v.iter().all(|r| r.start < r.end && r.end <= n).then_some(v)
    }
}

/// Coefficients (low to high) of `Π_{x ∈ roots} (X − x)`.
fn poly_from_roots(roots: impl Iterator<Item = F>) -> Vec<F> {
    let mut p = vec![F::ONE];
    for x in roots {
        let mut next = vec![F::ZERO; p.len() + 1];
        for (i, &a) in p.iter().enumerate() {
            next[i + 1] += a;
            next[i] -= a * x;
        }
        p = next;
    }
    p
}

/// `Σ_j coeffs_j · powers_j` (free: constant products, one sum per component).
fn eval_poly(coeffs: &[F], powers: &[Alg]) -> Result<Alg, SynthesisError> {
    let mut comps: [Vec<GoldilocksVar>; 4] = Default::default();
    for (&k, p) in coeffs.iter().zip(powers) {
        if k == F::ZERO {
            continue;
        }
        let s = p.scale(k)?;
        for (i, x) in s.0.iter().flat_map(|e| e.0.iter()).enumerate() {
            comps[i].push(x.clone());
        }
    }
    let [a, b, c, d] = comps.map(|v| GoldilocksVar::sum(&v));
    Ok(Alg([tgrid_r1cs_goldilocks::GoldilocksExtVar([a?, b?]), tgrid_r1cs_goldilocks::GoldilocksExtVar([c?, d?])]))
}

/// `CosetInterpolationGate::eval_unfiltered`.
pub(crate) fn coset_interpolation(
    l: &CosetLayout<'_>,
    chunks: &[std::ops::Range<usize>],
    w: &[tgrid_r1cs_goldilocks::GoldilocksExtVar],
) -> Result<Vec<tgrid_r1cs_goldilocks::GoldilocksExtVar>, SynthesisError> {
    let n = l.num_points();
    let ni = l.num_intermediates();
    let start_int = l.start_intermediates();
    let shift = &w[0];
    let value = |i: usize| Alg::from_wires(w, 1 + 2 * i);
    let evaluation_point = Alg::from_wires(w, 1 + 2 * n);
    let evaluation_value = Alg::from_wires(w, 3 + 2 * n);
    let intermediate_eval = |i: usize| Alg::from_wires(w, start_int + 2 * i);
    let intermediate_prod = |i: usize| Alg::from_wires(w, start_int + 2 * (ni + i));
    let x = Alg::from_wires(w, start_int + 4 * ni);

    let mut out = Vec::with_capacity(4 + 4 * ni);
    out.extend(evaluation_point.sub(&x.scalar_mul(shift)?)?.into_array());

    let domain = F::two_adic_subgroup(l.subgroup_bits);
    let max_len = chunks.iter().map(|r| r.len()).max().unwrap_or(1);
    // Powers X^0..X^(max_len−1) canonical (they meet 64-bit constants), X^max_len lazy.
    let mut powers = vec![Alg::one(), x.clone()];
    while powers.len() <= max_len {
        let last = powers.last().cloned().unwrap_or_else(Alg::one);
        let next = last.mul(&x)?;
        powers.push(if powers.len() < max_len { next.fit(64)? } else { next });
    }

    // P(X) for a chunk, and S = Σ_j v_j·(w_j Q_j)(X).
    let chunk_polys = |r: &std::ops::Range<usize>| -> Result<(Alg, Alg), SynthesisError> {
        let p = eval_poly(&poly_from_roots(domain[r.clone()].iter().copied()), &powers)?;
        let mut s = Alg::zero();
        for j in r.clone() {
            let q = poly_from_roots(r.clone().filter(|&k| k != j).map(|k| domain[k]));
            let q: Vec<F> = q.iter().map(|&a| a * l.weights[j]).collect();
            s = s.add(&value(j).mul(&eval_poly(&q, &powers)?)?)?;
        }
        Ok((p, s))
    };

    let (mut eval, mut prod) = {
        let (p, s) = chunk_polys(&chunks[0])?;
        (s, p)
    };
    for i in 0..ni {
        let (ie, ip) = (intermediate_eval(i), intermediate_prod(i));
        out.extend(ie.sub(&eval)?.into_array());
        out.extend(ip.sub(&prod)?.into_array());
        let (p, s) = chunk_polys(&chunks[i + 1])?;
        // S is used once: reduce it here if the product needs it (it does, ~2^207).
        let s = s.fit(MAX_BITS - 8 - ip.bits())?;
        eval = ie.mul(&p)?.add(&ip.mul(&s)?)?;
        prod = ip.mul(&p)?;
    }
    out.extend(evaluation_value.sub(&eval)?.into_array());
    Ok(out)
}
