//! The heavy arithmetic of the Groth16 prover (multi-scalar multiplications and number-theoretic
//! transforms) behind one small trait, so a GPU backend can be added without touching circuits
//! or the prover's algebra.

use ark_bn254::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};
use ark_ec::VariableBaseMSM;
use ark_ff::FftField;
use ark_poly::{EvaluationDomain, Radix2EvaluationDomain};

use crate::error::{Error, Result};

/// Direction of a number-theoretic transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transform {
    /// Coefficients to evaluations.
    Forward,
    /// Evaluations to coefficients.
    Inverse,
}

/// Where a transform evaluates: the subgroup `H` of size `n`, or its coset `g·H` (`g` the
/// field's multiplicative generator, as arkworks' Groth16 setup assumes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Domain {
    /// `H`.
    Subgroup,
    /// `g·H`.
    Coset,
}

/// MSMs and NTTs over BN254. Implementations must be deterministic functions of their inputs.
pub trait ProverBackend: Send + Sync {
    /// A short name for logs and benchmarks.
    fn name(&self) -> &'static str;
    /// `Σ scalars[i]·bases[i]` over G1 (`bases.len() == scalars.len()`).
    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Fr]) -> Result<G1Projective>;
    /// `Σ scalars[i]·bases[i]` over G2.
    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Fr]) -> Result<G2Projective>;
    /// An in-place NTT of size `values.len()` (a power of two).
    fn ntt(&self, values: &mut Vec<Fr>, transform: Transform, domain: Domain) -> Result<()>;
}

/// The CPU backend: arkworks' Pippenger MSM and radix-2 FFT, multi-threaded with rayon.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuBackend;

fn check_lengths(bases: usize, scalars: usize) -> Result<()> {
    if bases != scalars {
        return Err(Error::Backend(format!("MSM over {bases} bases and {scalars} scalars")));
    }
    Ok(())
}

impl ProverBackend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu-arkworks"
    }

    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Fr]) -> Result<G1Projective> {
        check_lengths(bases.len(), scalars.len())?;
        G1Projective::msm(bases, scalars).map_err(|n| Error::Backend(format!("MSM length mismatch ({n})")))
    }

    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Fr]) -> Result<G2Projective> {
        check_lengths(bases.len(), scalars.len())?;
        G2Projective::msm(bases, scalars).map_err(|n| Error::Backend(format!("MSM length mismatch ({n})")))
    }

    fn ntt(&self, values: &mut Vec<Fr>, transform: Transform, domain: Domain) -> Result<()> {
        let n = values.len();
        let subgroup = Radix2EvaluationDomain::<Fr>::new(n)
            .filter(|d| d.size() == n)
            .ok_or_else(|| Error::Backend(format!("no radix-2 domain of size {n}")))?;
        let d = match domain {
            Domain::Subgroup => subgroup,
            Domain::Coset => {
                subgroup.get_coset(Fr::GENERATOR).ok_or_else(|| Error::Backend("no coset for the generator".into()))?
            }
        };
        match transform {
            Transform::Forward => d.fft_in_place(values),
            Transform::Inverse => d.ifft_in_place(values),
        }
        Ok(())
    }
}
