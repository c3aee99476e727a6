//! plonky2's Goldilocks Poseidon (width 12, x^7, 8 full and 22 partial rounds, its circulant
//! MDS matrix) emulated in R1CS. The wrapper needs it once: the final proof's public-input hash
//! (`PoseidonHash::hash_no_pad` of the public inputs), which enters both the transcript and the
//! `PublicInputGate` constraint.

use ark_relations::gr1cs::SynthesisError;
use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::field::types::Field;
use plonky2::hash::poseidon::{
    Poseidon, ALL_ROUND_CONSTANTS, HALF_N_FULL_ROUNDS, N_PARTIAL_ROUNDS, SPONGE_RATE, SPONGE_WIDTH,
};

use crate::base::GoldilocksVar;

/// x^7 with explicit reductions (each value reduced once, not once per use): the input and
/// x² canonical, x⁴ reduced before the last product; output below 2^192.
fn sbox(x: &GoldilocksVar) -> Result<GoldilocksVar, SynthesisError> {
    let x = x.reduce()?;
    let x2 = x.square()?.reduce()?;
    let x3 = x2.mul(&x)?;
    let x4 = x2.square()?.reduce()?;
    x4.mul(&x3)
}

/// Largest lane entering the MDS layer unreduced: products by the ≤ 6-bit constants and 13-term
/// sums (4 bits) stay below `MAX_BITS`.
const MAX_LANE_BITS: u32 = crate::base::MAX_BITS - 10;

fn mds(state: &[GoldilocksVar; SPONGE_WIDTH]) -> Result<[GoldilocksVar; SPONGE_WIDTH], SynthesisError> {
    let circ = <GoldilocksField as Poseidon>::MDS_MATRIX_CIRC;
    let diag = <GoldilocksField as Poseidon>::MDS_MATRIX_DIAG;
    // Each lane feeds every row: reduce a large lane once here rather than once per row inside
    // the products (the constants have at most 6 bits, the 13-term sums add 4).
    let lanes: Vec<GoldilocksVar> = state
        .iter()
        .map(|x| if x.bits() > MAX_LANE_BITS { x.reduce() } else { Ok(x.clone()) })
        .collect::<Result<_, _>>()?;
    let state = &lanes;
    let mut out = Vec::with_capacity(SPONGE_WIDTH);
    for r in 0..SPONGE_WIDTH {
        let mut terms = Vec::with_capacity(SPONGE_WIDTH + 1);
        for (i, &c) in circ.iter().enumerate() {
            terms.push(state[(i + r) % SPONGE_WIDTH].mul_const(GoldilocksField::from_canonical_u64(c))?);
        }
        if diag[r] != 0 {
            terms.push(state[r].mul_const(GoldilocksField::from_canonical_u64(diag[r]))?);
        }
        out.push(GoldilocksVar::sum(&terms)?);
    }
    Ok(out.try_into().unwrap_or_else(|_| unreachable!("SPONGE_WIDTH rows")))
}

/// The Poseidon permutation of plonky2 1.1 over Goldilocks, in place. Outputs are lazily
/// reduced; call `reduce` on what leaves the gadget canonically.
pub fn poseidon_permute(state: &mut [GoldilocksVar; SPONGE_WIDTH]) -> Result<(), SynthesisError> {
    let rounds = 2 * HALF_N_FULL_ROUNDS + N_PARTIAL_ROUNDS;
    for round in 0..rounds {
        for (i, x) in state.iter_mut().enumerate() {
            let c = ALL_ROUND_CONSTANTS[i + SPONGE_WIDTH * round];
            *x = x.add_const(GoldilocksField::from_canonical_u64(c))?;
        }
        let full = !(HALF_N_FULL_ROUNDS..HALF_N_FULL_ROUNDS + N_PARTIAL_ROUNDS).contains(&round);
        if full {
            for x in state.iter_mut() {
                *x = sbox(x)?;
            }
        } else {
            state[0] = sbox(&state[0])?;
        }
        *state = mds(state)?;
    }
    Ok(())
}

/// `PoseidonHash::hash_no_pad(inputs)`: overwrite-mode sponge of rate 8 from the zero state,
/// four canonical output elements.
pub fn poseidon_hash_no_pad(inputs: &[GoldilocksVar]) -> Result<[GoldilocksVar; 4], SynthesisError> {
    let mut state: [GoldilocksVar; SPONGE_WIDTH] = std::array::from_fn(|_| GoldilocksVar::zero());
    for chunk in inputs.chunks(SPONGE_RATE) {
        for (slot, x) in state.iter_mut().zip(chunk) {
            *slot = x.clone();
        }
        poseidon_permute(&mut state)?;
    }
    Ok([state[0].reduce()?, state[1].reduce()?, state[2].reduce()?, state[3].reduce()?])
}

#[cfg(test)]
mod tests {
    use ark_bn254::Fr;
    use ark_r1cs_std::prelude::*;
    use ark_relations::gr1cs::ConstraintSystem;
    use plonky2::field::types::Sample;
    use plonky2::hash::poseidon::PoseidonHash;
    use plonky2::plonk::config::Hasher;

    use super::*;

    type F = GoldilocksField;

    fn witnesses(cs: &ark_relations::gr1cs::ConstraintSystemRef<Fr>, v: &[F]) -> Vec<GoldilocksVar> {
        v.iter().map(|&x| GoldilocksVar::new_witness(cs.clone(), || Ok(x)).unwrap()).collect()
    }

    #[test]
    fn permutation_matches_plonky2() {
        for input in [[F::ZERO; 12], [F::NEG_ONE; 12], F::rand_array()] {
            let cs = ConstraintSystem::<Fr>::new_ref();
            let mut state: [GoldilocksVar; 12] = witnesses(&cs, &input).try_into().unwrap();
            poseidon_permute(&mut state).unwrap();
            let expected = F::poseidon(input);
            for (s, e) in state.iter().zip(expected) {
                assert_eq!(s.value().unwrap(), e);
            }
            assert!(cs.is_satisfied().unwrap());
        }
    }

    /// The public-input hash of a final proof: 8 u32 words, one permutation. Also reports the
    /// constraint count, and a wrong claimed hash must break satisfiability.
    #[test]
    fn hash_of_eight_public_inputs_matches_and_binds() {
        let pis: Vec<F> = (0..8u64).map(|i| F::from_canonical_u64(0x9e37_79b9 ^ (i * 0x1234_5677))).collect();
        let cs = ConstraintSystem::<Fr>::new_ref();
        let vars = witnesses(&cs, &pis);
        let before = cs.num_constraints();
        let hash = poseidon_hash_no_pad(&vars).unwrap();
        let cost = cs.num_constraints() - before;
        let expected = PoseidonHash::hash_no_pad(&pis);
        for (h, e) in hash.iter().zip(expected.elements) {
            assert_eq!(h.value().unwrap(), e);
        }
        assert!(cs.is_satisfied().unwrap());
        assert!(cost < 70_000, "one permutation costs {cost} constraints");
        println!("poseidon hash_no_pad of 8 elements: {cost} constraints");

        let wrong = GoldilocksVar::new_witness(cs.clone(), || Ok(expected.elements[0] + F::ONE)).unwrap();
        hash[0].enforce_equal_mod_p(&wrong).unwrap();
        assert!(!cs.is_satisfied().unwrap());
    }

    #[test]
    fn longer_inputs_absorb_in_chunks_of_eight() {
        let v: Vec<F> = F::rand_vec(13);
        let cs = ConstraintSystem::<Fr>::new_ref();
        let hash = poseidon_hash_no_pad(&witnesses(&cs, &v)).unwrap();
        let expected = PoseidonHash::hash_no_pad(&v);
        assert_eq!(hash.map(|h| h.value().unwrap()), expected.elements);
        assert!(cs.is_satisfied().unwrap());
    }
}
