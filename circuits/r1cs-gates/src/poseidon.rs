//! `PoseidonGate` (plonky2 1.1.0, width 12, x^7, 4 + 22 + 4 rounds, "fast" partial rounds).
//!
//! Why linear forms: the fast partial rounds multiply the state by full 64-bit constants
//! (`FAST_PARTIAL_ROUND_W_HATS`, `_VS`, the initial matrix). Computed lazily value by value,
//! every lane would need a reduction in every round. Instead the state is kept as constant
//! linear forms (coefficients reduced mod p, natively) over a basis of R1CS values: the S-box
//! outputs since the last full replacement of the state. A lane is materialized (a free linear
//! combination, ≤ 34 terms) only where plonky2 compares it with a wire. This is the same
//! polynomial in the wires as plonky2's evaluation, so the values agree exactly.

use ark_relations::gr1cs::SynthesisError;
use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::field::types::{Field, PrimeField64};
use plonky2::hash::poseidon::{Poseidon, ALL_ROUND_CONSTANTS, HALF_N_FULL_ROUNDS, N_PARTIAL_ROUNDS, SPONGE_WIDTH};
use tgrid_r1cs_goldilocks::{GoldilocksVar, MAX_BITS};

use crate::arith::{mul, square};

type F = GoldilocksField;
use tgrid_r1cs_goldilocks::GoldilocksExtVar as E;

/// Number of wires of the gate.
pub(crate) const NUM_WIRES: usize = START_FULL_1 + SPONGE_WIDTH * HALF_N_FULL_ROUNDS;

const WIRE_SWAP: usize = 2 * SPONGE_WIDTH;
const START_DELTA: usize = 2 * SPONGE_WIDTH + 1;
const START_FULL_0: usize = START_DELTA + 4;
const START_PARTIAL: usize = START_FULL_0 + SPONGE_WIDTH * (HALF_N_FULL_ROUNDS - 1);
const START_FULL_1: usize = START_PARTIAL + N_PARTIAL_ROUNDS;

fn c(x: u64) -> F {
    F::from_noncanonical_u64(x)
}

/// `x^7` as plonky2 computes it (`x³·x⁴`). `x²` is reduced once (it feeds `x³` and `x⁴`);
/// the final product then reduces `x³` (output below ~2^200). With `narrow`, `x⁴` is reduced
/// as well, so the output stays below ~2^132 and can be multiplied by full 64-bit constants.
fn sbox(x: &E, narrow: bool) -> Result<E, SynthesisError> {
    let x2 = square(x)?.reduce()?;
    let mut x3 = mul(x, &x2)?;
    let mut x4 = square(&x2)?;
    if narrow {
        x3 = x3.reduce()?;
        x4 = x4.reduce()?;
    }
    mul(&x3, &x4)
}

/// A constant linear form `Σ coeffs_j · basis_j + constant`.
#[derive(Clone)]
struct Form {
    coeffs: Vec<F>,
    constant: F,
}

impl Form {
    fn unit(n: usize, j: usize) -> Self {
        let mut coeffs = vec![F::ZERO; n];
        coeffs[j] = F::ONE;
        Self { coeffs, constant: F::ZERO }
    }
    fn scaled(&self, k: F) -> Self {
        Self { coeffs: self.coeffs.iter().map(|&x| x * k).collect(), constant: self.constant * k }
    }
    fn add_assign(&mut self, o: &Self) {
        if self.coeffs.len() < o.coeffs.len() {
            self.coeffs.resize(o.coeffs.len(), F::ZERO);
        }
        for (a, b) in self.coeffs.iter_mut().zip(&o.coeffs) {
            *a += *b;
        }
        self.constant += o.constant;
    }
    fn zero() -> Self {
        Self { coeffs: Vec::new(), constant: F::ZERO }
    }
}

fn bit_len(x: F) -> u32 {
    64 - x.to_canonical_u64().leading_zeros()
}

/// The value of `f` over `basis` (free). A basis value that would overflow a product is reduced
/// first, in place, so that it is reduced once however many forms use it.
fn materialize(basis: &mut [E], f: &Form) -> Result<E, SynthesisError> {
    let n_terms = f.coeffs.iter().filter(|&&k| k != F::ZERO).count() as u32 + 1;
    let extra = n_terms.next_power_of_two().trailing_zeros() + 1;
    let mut c0 = Vec::with_capacity(n_terms as usize);
    let mut c1 = Vec::with_capacity(n_terms as usize);
    for (b, &k) in basis.iter_mut().zip(&f.coeffs) {
        if k == F::ZERO {
            continue;
        }
        if b.bits() + bit_len(k) + extra > MAX_BITS {
            *b = b.reduce()?;
        }
        c0.push(b.0[0].mul_const(k)?);
        c1.push(b.0[1].mul_const(k)?);
    }
    c0.push(GoldilocksVar::constant(f.constant));
    Ok(E([GoldilocksVar::sum(&c0)?, GoldilocksVar::sum(&c1)?]))
}

/// plonky2's `mds_layer_field` on forms.
fn mds_layer(state: &[Form]) -> Vec<Form> {
    let circ = <F as Poseidon>::MDS_MATRIX_CIRC;
    let diag = <F as Poseidon>::MDS_MATRIX_DIAG;
    (0..SPONGE_WIDTH)
        .map(|r| {
            let mut acc = Form::zero();
            for (i, &k) in circ.iter().enumerate() {
                acc.add_assign(&state[(i + r) % SPONGE_WIDTH].scaled(c(k)));
            }
            acc.add_assign(&state[r].scaled(c(diag[r])));
            acc
        })
        .collect()
}

/// Runs the S-boxes of a full round on the materialized lanes and returns the new basis with the
/// MDS layer applied (as forms over it).
fn full_round_sboxes(lanes: &[E], narrow: bool) -> Result<(Vec<E>, Vec<Form>), SynthesisError> {
    let basis = lanes.iter().map(|x| sbox(x, narrow)).collect::<Result<Vec<_>, _>>()?;
    let units: Vec<Form> = (0..SPONGE_WIDTH).map(|j| Form::unit(SPONGE_WIDTH, j)).collect();
    Ok((basis, mds_layer(&units)))
}

fn add_round_constants(state: &mut [Form], round_ctr: usize) {
    for (i, f) in state.iter_mut().enumerate() {
        f.constant += c(ALL_ROUND_CONSTANTS[i + SPONGE_WIDTH * round_ctr]);
    }
}

/// `PoseidonGate::eval_unfiltered`: 1 swap + 4 delta + 36 + 22 + 48 S-box-input + 12 output
/// constraints, in plonky2's order.
pub(crate) fn poseidon(w: &[E]) -> Result<Vec<E>, SynthesisError> {
    let mut out = Vec::with_capacity(123);
    let swap = &w[WIRE_SWAP];
    out.push(square(swap)?.sub(swap)?);
    for i in 0..4 {
        let d = w[i + 4].sub(&w[i])?;
        out.push(mul(swap, &d)?.sub(&w[START_DELTA + i])?);
    }

    // The (possibly swapped) input layer, as the first basis.
    let mut basis: Vec<E> = Vec::with_capacity(SPONGE_WIDTH);
    for i in 0..SPONGE_WIDTH {
        basis.push(match i {
            0..4 => w[i].add(&w[START_DELTA + i])?,
            4..8 => w[i].sub(&w[START_DELTA + i - 4])?,
            _ => w[i].clone(),
        });
    }
    let mut state: Vec<Form> = (0..SPONGE_WIDTH).map(|j| Form::unit(SPONGE_WIDTH, j)).collect();
    let mut round_ctr = 0;

    // First full rounds. The last one's S-box outputs feed the 64-bit constants of the partial
    // rounds, so they are kept narrow.
    for r in 0..HALF_N_FULL_ROUNDS {
        add_round_constants(&mut state, round_ctr);
        let mut lanes = Vec::with_capacity(SPONGE_WIDTH);
        for (i, f) in state.iter().enumerate() {
            let v = materialize(&mut basis, f)?;
            if r != 0 {
                let sbox_in = &w[START_FULL_0 + SPONGE_WIDTH * (r - 1) + i];
                out.push(v.sub(sbox_in)?);
                lanes.push(sbox_in.clone());
            } else {
                lanes.push(v);
            }
        }
        (basis, state) = full_round_sboxes(&lanes, r == HALF_N_FULL_ROUNDS - 1)?;
        round_ctr += 1;
    }

    // Partial rounds (plonky2's fast form), all on forms.
    for (f, &k) in state.iter_mut().zip(<F as Poseidon>::FAST_PARTIAL_FIRST_ROUND_CONSTANT.iter()) {
        f.constant += c(k);
    }
    state = {
        // mds_partial_layer_init: row/column 0 is the identity.
        let m = <F as Poseidon>::FAST_PARTIAL_ROUND_INITIAL_MATRIX;
        let mut res = vec![Form::zero(); SPONGE_WIDTH];
        res[0] = state[0].clone();
        for r in 1..SPONGE_WIDTH {
            for col in 1..SPONGE_WIDTH {
                res[col].add_assign(&state[r].scaled(c(m[r - 1][col - 1])));
            }
        }
        res
    };
    for r in 0..N_PARTIAL_ROUNDS {
        let v = materialize(&mut basis, &state[0])?;
        let sbox_in = &w[START_PARTIAL + r];
        out.push(v.sub(sbox_in)?);
        basis.push(sbox(sbox_in, true)?);
        let mut s0 = Form::unit(basis.len(), basis.len() - 1);
        if r < N_PARTIAL_ROUNDS - 1 {
            s0.constant = c(<F as Poseidon>::FAST_PARTIAL_ROUND_CONSTANTS[r]);
        }
        state[0] = s0;
        // mds_partial_layer_fast.
        let mds0to0 = <F as Poseidon>::MDS_MATRIX_CIRC[0] + <F as Poseidon>::MDS_MATRIX_DIAG[0];
        let mut d = state[0].scaled(c(mds0to0));
        for (f, &k) in state[1..].iter().zip(<F as Poseidon>::FAST_PARTIAL_ROUND_W_HATS[r].iter()) {
            d.add_assign(&f.scaled(c(k)));
        }
        let mut next = Vec::with_capacity(SPONGE_WIDTH);
        next.push(d);
        for i in 1..SPONGE_WIDTH {
            let mut f = state[0].scaled(c(<F as Poseidon>::FAST_PARTIAL_ROUND_VS[r][i - 1]));
            f.add_assign(&state[i]);
            next.push(f);
        }
        state = next;
    }
    round_ctr += N_PARTIAL_ROUNDS;

    // Second full rounds.
    for r in 0..HALF_N_FULL_ROUNDS {
        add_round_constants(&mut state, round_ctr);
        let mut lanes = Vec::with_capacity(SPONGE_WIDTH);
        for (i, f) in state.iter().enumerate() {
            let v = materialize(&mut basis, f)?;
            let sbox_in = &w[START_FULL_1 + SPONGE_WIDTH * r + i];
            out.push(v.sub(sbox_in)?);
            lanes.push(sbox_in.clone());
        }
        (basis, state) = full_round_sboxes(&lanes, false)?;
        round_ctr += 1;
    }

    for (i, f) in state.iter().enumerate() {
        let v = materialize(&mut basis, f)?;
        out.push(v.sub(&w[SPONGE_WIDTH + i])?);
    }
    Ok(out)
}
