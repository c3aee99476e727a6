//! Groth16 proving with the keys of `ark-groth16` (its setup and libsnark R1CS-to-QAP
//! reduction) and every MSM/NTT through a [`ProverBackend`].

use std::time::Instant;

use ark_bn254::{Bn254, Fr, G1Projective};
use ark_ec::CurveGroup;
use ark_ff::{FftField, Field, UniformRand, Zero};
use ark_groth16::{Proof, ProvingKey};
use ark_relations::gr1cs::{
    ConstraintSynthesizer, ConstraintSystem, Matrix, OptimizationGoal, SynthesisMode, R1CS_PREDICATE_LABEL,
};
use rand::RngCore;
use rayon::prelude::*;

use crate::backend::{Domain, ProverBackend, Transform};
use crate::error::{Error, Result};

/// Sizes and seconds of one proof.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct ProveStats {
    /// R1CS constraints.
    pub constraints: usize,
    /// Witness variables.
    pub witness_variables: usize,
    /// Public inputs (without the constant one).
    pub public_inputs: usize,
    /// QAP domain size.
    pub domain_size: usize,
    /// Constraint synthesis and witness generation.
    pub synthesis_seconds: f64,
    /// R1CS-to-QAP witness map (NTTs).
    pub witness_map_seconds: f64,
    /// The MSMs.
    pub msm_seconds: f64,
}

/// A synthesized circuit: matrices and the full assignment `[1, public..., witness...]`.
struct Synthesized {
    matrices: Vec<Matrix<Fr>>,
    assignment: Vec<Fr>,
    num_inputs: usize,
    num_constraints: usize,
}

fn synthesize<C: ConstraintSynthesizer<Fr>>(circuit: C) -> Result<Synthesized> {
    let cs = ConstraintSystem::<Fr>::new_ref();
    cs.set_optimization_goal(OptimizationGoal::Constraints);
    cs.set_mode(SynthesisMode::Prove { construct_matrices: true, generate_lc_assignments: false });
    circuit.generate_constraints(cs.clone())?;
    cs.finalize();
    // Satisfaction is checked on the matrix rows in `witness_map` (in parallel, on values it
    // computes anyway) rather than by `cs.is_satisfied()`, a second single-threaded pass.
    let mut all = cs.to_matrices()?;
    let matrices = all
        .remove(R1CS_PREDICATE_LABEL)
        .ok_or_else(|| Error::KeyMismatch("the circuit has no R1CS constraints".into()))?;
    let mut assignment = cs.instance_assignment()?;
    assignment.extend(cs.witness_assignment()?);
    Ok(Synthesized {
        matrices,
        assignment,
        num_inputs: cs.num_instance_variables(),
        num_constraints: cs.num_constraints(),
    })
}

fn row_value(row: &[(Fr, usize)], z: &[Fr]) -> Fr {
    row.iter().map(|(c, i)| *c * z[*i]).sum()
}

/// Coefficients of `h = (A·B − C) / Z_H`, libsnark's reduction (the public inputs are bound by
/// extra rows `a = x_i` after the constraints, as `ark-groth16`'s setup expects).
fn witness_map(s: &Synthesized, backend: &dyn ProverBackend) -> Result<Vec<Fr>> {
    let n = (s.num_constraints + s.num_inputs).next_power_of_two();
    let z = &s.assignment;
    if s.matrices.len() != 3 {
        return Err(Error::KeyMismatch(format!("{} R1CS matrices", s.matrices.len())));
    }
    let mut a = vec![Fr::zero(); n];
    let mut b = vec![Fr::zero(); n];
    let mut c = vec![Fr::zero(); n];
    a[..s.num_constraints]
        .par_iter_mut()
        .zip(&mut b[..s.num_constraints])
        .zip(&mut c[..s.num_constraints])
        .enumerate()
        .for_each(|(i, ((a, b), c))| {
            *a = row_value(&s.matrices[0][i], z);
            *b = row_value(&s.matrices[1][i], z);
            *c = row_value(&s.matrices[2][i], z);
        });
    // A false statement is refused here: plonky2-style "prove anyway" would only fail later.
    if let Some(row) = (0..s.num_constraints).into_par_iter().find_first(|&i| a[i] * b[i] != c[i]) {
        return Err(Error::Unsatisfied(format!("R1CS row {row} of {}", s.num_constraints)));
    }
    a[s.num_constraints..s.num_constraints + s.num_inputs].copy_from_slice(&z[..s.num_inputs]);
    for v in [&mut a, &mut b, &mut c] {
        backend.ntt(v, Transform::Inverse, Domain::Subgroup)?;
        backend.ntt(v, Transform::Forward, Domain::Coset)?;
    }
    // Z_H(x) = x^n − 1 is the constant g^n − 1 on the coset g·H.
    let z_inv = (Fr::GENERATOR.pow([n as u64]) - Fr::ONE)
        .inverse()
        .ok_or_else(|| Error::Backend("Z_H vanishes on the coset".into()))?;
    a.par_iter_mut().zip(&b).zip(&c).for_each(|((a, b), c)| *a = (*a * b - c) * z_inv);
    drop((b, c));
    backend.ntt(&mut a, Transform::Inverse, Domain::Coset)?;
    Ok(a)
}

/// Proves `circuit` with `pk`: a zero-knowledge proof (fresh `r`, `s` from `rng`).
pub fn prove<C: ConstraintSynthesizer<Fr>>(
    pk: &ProvingKey<Bn254>,
    circuit: C,
    backend: &dyn ProverBackend,
    rng: &mut impl RngCore,
) -> Result<(Proof<Bn254>, ProveStats)> {
    let mut stats = ProveStats::default();
    let t = Instant::now();
    let s = synthesize(circuit)?;
    stats.synthesis_seconds = t.elapsed().as_secs_f64();
    let num_variables = s.assignment.len();
    stats.constraints = s.num_constraints;
    stats.public_inputs = s.num_inputs - 1;
    stats.witness_variables = num_variables - s.num_inputs;
    stats.domain_size = (s.num_constraints + s.num_inputs).next_power_of_two();
    if pk.a_query.len() != num_variables
        || pk.b_g2_query.len() != num_variables
        || pk.l_query.len() != num_variables - s.num_inputs
        || pk.vk.gamma_abc_g1.len() != s.num_inputs
        || pk.h_query.len() + 1 != stats.domain_size
    {
        return Err(Error::KeyMismatch(format!(
            "key for {} variables and {} public inputs, circuit has {num_variables} and {}",
            pk.a_query.len(),
            pk.vk.gamma_abc_g1.len().saturating_sub(1),
            stats.public_inputs
        )));
    }

    let t = Instant::now();
    let h = witness_map(&s, backend)?;
    stats.witness_map_seconds = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let (r, sv) = (Fr::rand(rng), Fr::rand(rng));
    let z = &s.assignment;
    let aux = &z[s.num_inputs..];
    // A = α + Σ z_i·A_i(τ)/… + r·δ ; B likewise with β and s; C gathers the rest.
    let a = pk.vk.alpha_g1 + backend.msm_g1(&pk.a_query, z)? + pk.delta_g1 * r;
    let b_g1 = pk.beta_g1 + backend.msm_g1(&pk.b_g1_query, z)? + pk.delta_g1 * sv;
    let b_g2 = pk.vk.beta_g2 + backend.msm_g2(&pk.b_g2_query, z)? + pk.vk.delta_g2 * sv;
    let h_acc = backend.msm_g1(&pk.h_query, &h[..pk.h_query.len()])?;
    let l_acc = backend.msm_g1(&pk.l_query, aux)?;
    let c: G1Projective = a * sv + b_g1 * r - pk.delta_g1 * (r * sv) + h_acc + l_acc;
    stats.msm_seconds = t.elapsed().as_secs_f64();
    Ok((Proof { a: a.into_affine(), b: b_g2.into_affine(), c: c.into_affine() }, stats))
}
