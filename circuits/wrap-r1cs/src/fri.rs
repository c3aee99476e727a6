//! FRI verification of a final-layer proof in R1CS, mirroring plonky2 1.1's
//! `fri::verifier::verify_fri_proof` (the proof of work is checked by the transcript replay):
//! per query, the four initial Merkle openings (BN254 Poseidon, native in R1CS), the
//! combination of the opened polynomials into the DEEP quotient, each folding step
//! (Lagrange interpolation of the coset at β, its Merkle opening), and the final polynomial.

use ark_bn254::Fr;
use ark_ff::Field as _;
use ark_r1cs_std::fields::fp::FpVar;
use ark_r1cs_std::prelude::*;
use ark_relations::gr1cs::SynthesisError;
use plonky2::field::extension::FieldExtension;
use plonky2::field::types::Field;
use tgrid_poseidon_bn254::hasher::{DOMAIN_NODE, DOMAIN_SPONGE, PACK, RATE};
use tgrid_poseidon_bn254::{POSEIDON_T3, POSEIDON_T4};
use tgrid_r1cs_goldilocks::{GoldilocksExt, GoldilocksExtVar, GoldilocksVar};

use crate::{ChallengesVar, Error, FinalCommon, ProofVar, Result, F};

/// `Bn254PoseidonHash::hash_no_pad` of leaf values: a width-4 sponge, 9 values (3 packed per
/// `Fr`) per permutation. Values need not be canonical, only below 2^64: packing is then
/// injective over the integers, and a value other than the committed one fails the path.
pub fn leaf_hash(values: &[GoldilocksVar]) -> Result<FpVar<Fr>> {
    let mut state = [FpVar::Constant(Fr::from(DOMAIN_SPONGE)), FpVar::zero(), FpVar::zero(), FpVar::zero()];
    let mut chunks = values.chunks(RATE).peekable();
    if chunks.peek().is_none() {
        POSEIDON_T4.permute_var(&mut state)?;
    }
    let shift = Fr::from(2u8).pow([64u64]);
    for chunk in chunks {
        for (slot, group) in state[1..].iter_mut().zip(chunk.chunks(PACK).chain(std::iter::repeat(&[][..]))) {
            let mut packed = FpVar::zero();
            for v in group.iter().rev() {
                if v.bits() > 64 {
                    return Err(Error::Unsupported("a leaf value above 64 bits".into()));
                }
                packed = packed * shift + v.var();
            }
            *slot = packed;
        }
        POSEIDON_T4.permute_var(&mut state)?;
    }
    Ok(state[1].clone())
}

/// The low `bits` bits of `n`, reversed (plonky2's crate-private `reverse_bits`).
fn reverse_bits(n: usize, bits: usize) -> usize {
    (0..bits).fold(0, |acc, i| acc | ((n >> i) & 1) << (bits - 1 - i))
}

/// `two_to_one`: width-3 permutation of `[DOMAIN_NODE, left, right]`, element 0.
pub fn compress(left: &FpVar<Fr>, right: &FpVar<Fr>) -> Result<FpVar<Fr>> {
    let mut state = [FpVar::Constant(Fr::from(DOMAIN_NODE)), left.clone(), right.clone()];
    POSEIDON_T3.permute_var(&mut state)?;
    Ok(state[0].clone())
}

/// `values[index]` for little-endian index bits: a tree of `select(bit, if_set, if_clear)`.
fn select_by_bits<T: Clone>(
    bits: &[Boolean<Fr>],
    values: &[T],
    what: &str,
    select: impl Fn(&Boolean<Fr>, &T, &T) -> std::result::Result<T, SynthesisError>,
) -> Result<T> {
    if values.len() != 1 << bits.len() {
        return Err(Error::Unsupported(format!("{what} size is not 2^{}", bits.len())));
    }
    let mut level = values.to_vec();
    for bit in bits {
        level = level.chunks(2).map(|p| select(bit, &p[1], &p[0])).collect::<std::result::Result<_, _>>()?;
    }
    Ok(level.remove(0))
}

fn select_fp(bits: &[Boolean<Fr>], values: &[FpVar<Fr>]) -> Result<FpVar<Fr>> {
    select_by_bits(bits, values, "cap", FpVar::conditionally_select)
}

fn select_ext(bits: &[Boolean<Fr>], values: &[GoldilocksExtVar]) -> Result<GoldilocksExtVar> {
    select_by_bits(bits, values, "coset", GoldilocksExtVar::select)
}

/// `verify_merkle_proof_to_cap`: the path climbs with the low index bits (a set bit means the
/// current node is the right child), the remaining bits pick the cap entry.
pub fn verify_merkle_to_cap(
    leaf: FpVar<Fr>,
    index_bits: &[Boolean<Fr>],
    siblings: &[FpVar<Fr>],
    cap: &[FpVar<Fr>],
) -> Result<()> {
    if index_bits.len() < siblings.len() {
        return Err(Error::Unsupported("index shorter than the path".into()));
    }
    let mut current = leaf;
    for (sibling, bit) in siblings.iter().zip(index_bits) {
        let left = FpVar::conditionally_select(bit, sibling, &current)?;
        let right = FpVar::conditionally_select(bit, &current, sibling)?;
        current = compress(&left, &right)?;
    }
    let root = select_fp(&index_bits[siblings.len()..], cap)?;
    current.enforce_equal(&root)?;
    Ok(())
}

fn bit_var(bit: &Boolean<Fr>) -> Result<GoldilocksVar> {
    Ok(GoldilocksVar::from_le_bits(std::slice::from_ref(bit))?)
}

/// `c^e` for a constant base and little-endian exponent bits: Π (bit ? c^(2^k) : 1).
fn pow_const_bits(c: F, bits: &[Boolean<Fr>]) -> Result<GoldilocksVar> {
    let mut acc = GoldilocksVar::one();
    let mut power = c;
    for bit in bits {
        let factor = bit_var(bit)?.mul_const(power - F::ONE)?.add_const(F::ONE)?;
        acc = acc.mul(&factor)?;
        power = power * power;
    }
    Ok(acc.reduce()?)
}

fn ext_sum(terms: &[GoldilocksExtVar]) -> Result<GoldilocksExtVar> {
    let c0: Vec<GoldilocksVar> = terms.iter().map(|t| t.0[0].clone()).collect();
    let c1: Vec<GoldilocksVar> = terms.iter().map(|t| t.0[1].clone()).collect();
    Ok(GoldilocksExtVar([GoldilocksVar::sum(&c0)?, GoldilocksVar::sum(&c1)?]))
}

/// `2^a · P(β)` for the polynomial `P` of degree < 2^a (a = arity bits) through the coset of
/// `x` (plonky2's `compute_evaluation`), together with that scale `2^a`. The coset's points are
/// `s·g^j` with `s = x·g^(−rev(i))`; `evals` lists them in bit-reversed order, so neighbours
/// `2m, 2m+1` sit at `±y`. Each level folds such pairs as FRI does:
/// `2·F(y²) = (P(y) + P(−y)) + c·(P(y) − P(−y))·y⁻¹` with `c = β^(2^level)` (`betas`), which
/// halves the degree and ends at `P(β)`. One inverse (of `s`) instead of Lagrange weights; the
/// result is left unreduced (the caller compares it mod p), its factor `2^a` kept for the check.
fn interpolate_coset(
    x: &GoldilocksVar,
    within_bits: &[Boolean<Fr>],
    evals: &[GoldilocksExtVar],
    betas: &[GoldilocksExtVar],
) -> Result<(GoldilocksExtVar, F)> {
    let arity_bits = within_bits.len();
    if evals.len() != 1 << arity_bits || betas.len() != arity_bits {
        return Err(Error::Unsupported("coset shape".into()));
    }
    let g = F::primitive_root_of_unity(arity_bits);
    // rev(i) has bit k = bit (a−1−k) of i; g^(−rev(i)) = Π over those bits of g^(−2^k).
    let rev_bits: Vec<Boolean<Fr>> = within_bits.iter().rev().cloned().collect();
    let s = x.mul(&pow_const_bits(g.inverse(), &rev_bits)?)?.reduce()?;
    let mut inv_s = s.inverse()?;
    let mut g_level = g;
    let mut level = evals.to_vec();
    for (l, c) in betas.iter().enumerate() {
        let last = l + 1 == arity_bits;
        let mut next = Vec::with_capacity(level.len() / 2);
        for (m, pair) in level.chunks(2).enumerate() {
            // y = s^(2^l) · g_l^rev(m) over the remaining arity_bits − l − 1 bits.
            let e = reverse_bits(m, arity_bits - l - 1) as u64;
            let inv_y = if e == 0 { inv_s.clone() } else { inv_s.mul_const(g_level.exp_u64(e).inverse())?.reduce()? };
            let odd = pair[0].sub(&pair[1])?.scalar_mul(&inv_y)?.mul(c)?;
            let folded = pair[0].add(&pair[1])?.add(&odd)?;
            next.push(if last { folded } else { folded.reduce()? });
        }
        level = next;
        if !last {
            inv_s = inv_s.square()?.reduce()?;
            g_level = g_level * g_level;
        }
    }
    let value = level.pop().ok_or_else(|| Error::Unsupported("empty coset".into()))?;
    Ok((value, F::from_canonical_u64(1 << arity_bits)))
}

/// `P(x)` for the final polynomial's coefficients: powers of `x` reduced once each, the terms
/// summed unreduced (one product per coefficient limb, no reduction per Horner step).
fn eval_final_poly(coefficients: &[GoldilocksExtVar], x: &GoldilocksVar) -> Result<GoldilocksExtVar> {
    let mut power = GoldilocksVar::one();
    let mut terms = Vec::with_capacity(coefficients.len());
    for (j, c) in coefficients.iter().enumerate() {
        if j > 0 {
            power = if j == 1 { x.reduce()? } else { power.mul(x)?.reduce()? };
        }
        terms.push(c.scalar_mul(&power)?);
    }
    ext_sum(&terms)
}

/// Verifies the FRI proof of `proof` against the constants/sigmas cap of the circuit (a
/// constant) and the challenges of the replayed transcript.
pub fn verify_fri(
    proof: &ProofVar,
    challenges: &ChallengesVar,
    constants_sigmas_cap: &[FpVar<Fr>],
    common: &FinalCommon,
) -> Result<()> {
    let params = &common.fri_params;
    if params.hiding {
        return Err(Error::Unsupported("zero-knowledge (salted) final layers".into()));
    }
    if common.num_lookup_polys != 0 {
        return Err(Error::Unsupported("lookup arguments".into()));
    }
    let fri = &challenges.fri_challenges;
    let zeta = &challenges.plonk_zeta;
    let g = F::primitive_root_of_unity(common.degree_bits());
    let zeta_next = zeta.mul_const(<GoldilocksExt as FieldExtension<2>>::from_basefield(g))?.reduce()?;
    let caps: [&[FpVar<Fr>]; 4] =
        [constants_sigmas_cap, &proof.wires_cap, &proof.plonk_zs_partial_products_cap, &proof.quotient_polys_cap];

    // Powers of the FRI α (canonical), and the openings reduced with them (once per proof).
    let openings0: Vec<&GoldilocksExtVar> = proof.openings.zeta_batch().collect();
    let openings1: Vec<&GoldilocksExtVar> = proof.openings.zeta_next_batch().collect();
    let mut alpha_powers = vec![GoldilocksExtVar::one()];
    for _ in 1..openings0.len().max(openings1.len()) + 1 {
        let next = alpha_powers.last().expect("non-empty").mul(&fri.fri_alpha)?.reduce()?;
        alpha_powers.push(next);
    }
    let reduce_ext = |values: &[&GoldilocksExtVar]| -> Result<GoldilocksExtVar> {
        let terms: Vec<GoldilocksExtVar> = values
            .iter()
            .zip(&alpha_powers)
            .map(|(v, a)| v.mul(a))
            .collect::<std::result::Result<_, SynthesisError>>()?;
        Ok(ext_sum(&terms)?.reduce()?)
    };
    let reduced_openings = [reduce_ext(&openings0)?, reduce_ext(&openings1)?];
    let num_zs = common.config.num_challenges;

    // β^(2^l) for every folding step and level, once per proof.
    let mut betas = Vec::with_capacity(params.reduction_arity_bits.len());
    for (&arity_bits, beta) in params.reduction_arity_bits.iter().zip(&fri.fri_betas) {
        let mut powers = vec![beta.clone()];
        for _ in 1..arity_bits {
            let next = powers.last().expect("non-empty").square()?.reduce()?;
            powers.push(next);
        }
        betas.push(powers);
    }

    let lde_bits = params.lde_bits();
    for (round, index_bits) in proof.query_round_proofs.iter().zip(&fri.fri_query_indices) {
        if index_bits.len() != lde_bits || round.initial_trees.len() != 4 {
            return Err(Error::Unsupported("query shape".into()));
        }
        for (tree, cap) in round.initial_trees.iter().zip(caps) {
            verify_merkle_to_cap(leaf_hash(&tree.leaf)?, index_bits, &tree.siblings, cap)?;
        }

        // x = g_mult · ω^rev(index), ω of order 2^lde_bits.
        let rev: Vec<Boolean<Fr>> = index_bits.iter().rev().cloned().collect();
        let omega = F::primitive_root_of_unity(lde_bits);
        let mut x = pow_const_bits(omega, &rev)?.mul_const(F::MULTIPLICATIVE_GROUP_GENERATOR)?.reduce()?;

        // The DEEP combination: batch at ζ (every polynomial), then at g·ζ (the Z's).
        let evals0: Vec<&GoldilocksVar> = round.initial_trees.iter().flat_map(|t| t.leaf.iter()).collect();
        let evals1: Vec<&GoldilocksVar> = round.initial_trees[2].leaf[..num_zs].iter().collect();
        if evals0.len() != openings0.len() || evals1.len() != openings1.len() {
            return Err(Error::Unsupported("initial leaves do not match the openings".into()));
        }
        let combine = |evals: &[&GoldilocksVar], reduced_opening: &GoldilocksExtVar, point: &GoldilocksExtVar| {
            let terms: Vec<GoldilocksExtVar> = evals
                .iter()
                .zip(&alpha_powers)
                .map(|(e, a)| a.scalar_mul(e))
                .collect::<std::result::Result<_, SynthesisError>>()?;
            let numerator = ext_sum(&terms)?.sub(reduced_opening)?.reduce()?;
            let denominator = GoldilocksExtVar::from_base(x.clone()).sub(point)?.reduce()?;
            Ok::<_, Error>(numerator.mul(&denominator.inverse()?)?.reduce()?)
        };
        let q0 = combine(&evals0, &reduced_openings[0], zeta)?;
        let q1 = combine(&evals1, &reduced_openings[1], &zeta_next)?;
        // `old_eval` ≡ `old_scale` · (the value the next step must open to), mod p: a fold leaves
        // its power of two in rather than paying a reduction to take it out.
        let mut old_eval = q0.mul(&alpha_powers[openings1.len()])?.add(&q1)?.reduce()?;
        let mut old_scale = F::ONE;

        let mut offset = 0;
        for (i, (&arity_bits, step)) in params.reduction_arity_bits.iter().zip(&round.steps).enumerate() {
            let within = &index_bits[offset..offset + arity_bits];
            let betas = betas.get(i).ok_or_else(|| Error::Unsupported("betas".into()))?;
            select_ext(within, &step.evals)?
                .mul_const(<GoldilocksExt as FieldExtension<2>>::from_basefield(old_scale))?
                .enforce_equal(&old_eval)?;
            (old_eval, old_scale) = interpolate_coset(&x, within, &step.evals, betas)?;
            let flat: Vec<GoldilocksVar> = step.evals.iter().flat_map(|e| e.0.iter().cloned()).collect();
            let cap = proof.commit_phase_merkle_caps.get(i).ok_or_else(|| Error::Unsupported("caps".into()))?;
            verify_merkle_to_cap(leaf_hash(&flat)?, &index_bits[offset + arity_bits..], &step.siblings, cap)?;
            for _ in 0..arity_bits {
                x = x.square()?.reduce()?;
            }
            offset += arity_bits;
        }

        // The final polynomial at x.
        eval_final_poly(&proof.final_poly, &x)?
            .mul_const(<GoldilocksExt as FieldExtension<2>>::from_basefield(old_scale))?
            .enforce_equal(&old_eval)?;
    }
    Ok(())
}
