//! The permutation as an R1CS gadget: 3 constraints per S-box (x², x⁴, x⁵); round constants and
//! the MDS matrix are free linear combinations. Width 3: 243 constraints, width 4: 264.

use ark_bn254::Fr;
use ark_r1cs_std::fields::{fp::FpVar, FieldVar};
use ark_relations::gr1cs::SynthesisError;

use crate::params::PoseidonParams;

impl<const T: usize> PoseidonParams<T> {
    /// The permutation of `state`, constrained. Constant inputs fold to constants.
    pub fn permute_var(&self, state: &mut [FpVar<Fr>; T]) -> Result<(), SynthesisError> {
        for (round, constants) in self.round_constants.iter().enumerate() {
            for (x, c) in state.iter_mut().zip(constants) {
                *x += *c;
            }
            if self.is_full_round(round) {
                for x in state.iter_mut() {
                    *x = sbox_var(x)?;
                }
            } else {
                state[0] = sbox_var(&state[0])?;
            }
            let mixed: [FpVar<Fr>; T] = std::array::from_fn(|i| {
                let mut acc = FpVar::zero();
                for (m, x) in self.mds[i].iter().zip(state.iter()) {
                    acc += x * *m;
                }
                acc
            });
            *state = mixed;
        }
        Ok(())
    }
}

fn sbox_var(x: &FpVar<Fr>) -> Result<FpVar<Fr>, SynthesisError> {
    let x2 = x.square()?;
    let x4 = x2.square()?;
    Ok(x4 * x)
}

#[cfg(test)]
mod tests {
    use ark_ff::UniformRand;
    use ark_r1cs_std::prelude::*;
    use ark_relations::gr1cs::ConstraintSystem;
    use rand::SeedableRng;

    use super::*;
    use crate::params::{POSEIDON_T3, POSEIDON_T4};

    fn check<const T: usize>(params: &PoseidonParams<T>, expected_constraints: usize) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(T as u64);
        let input: [Fr; T] = std::array::from_fn(|_| Fr::rand(&mut rng));
        let cs = ConstraintSystem::<Fr>::new_ref();
        let mut vars = input.map(|x| FpVar::new_witness(cs.clone(), || Ok(x)).unwrap());
        params.permute_var(&mut vars).unwrap();
        let mut native = input;
        params.permute(&mut native);
        for (v, n) in vars.iter().zip(native) {
            assert_eq!(v.value().unwrap(), n);
        }
        assert!(cs.is_satisfied().unwrap());
        assert_eq!(cs.num_constraints(), expected_constraints);

        // The output is forced: claiming another value breaks a constraint.
        let wrong = FpVar::new_witness(cs.clone(), || Ok(native[0] + Fr::from(1u64))).unwrap();
        vars[0].enforce_equal(&wrong).unwrap();
        assert!(!cs.is_satisfied().unwrap());
    }

    #[test]
    fn gadget_matches_native_t3() {
        check(&POSEIDON_T3, 3 * (8 * 3 + 57));
    }

    #[test]
    fn gadget_matches_native_t4() {
        check(&POSEIDON_T4, 3 * (8 * 4 + 56) + 1 - 1);
    }
}
