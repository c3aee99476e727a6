//! Groth16 proving with the keys of `ark-groth16` (its setup and libsnark R1CS-to-QAP
//! reduction) and every MSM/NTT through a [`ProverBackend`].

use std::time::Instant;

use ark_bn254::{Bn254, Fr, G1Projective};
use ark_ec::CurveGroup;
use ark_ff::{FftField, Field, UniformRand, Zero};
use ark_groth16::{Proof, ProvingKey};
use ark_relations::gr1cs::{ConstraintSynthesizer, SynthesisMode};
use rand::RngCore;
use rayon::prelude::*;

use crate::backend::{Domain, ProverBackend, Transform};
use crate::error::{Error, Result};
use crate::matrices::{constraint_system, R1csMatrices};

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

/// The full assignment `[1, public..., witness...]` of `circuit`, without building any matrix.
fn witness<C: ConstraintSynthesizer<Fr>>(circuit: C) -> Result<(Vec<Fr>, usize)> {
    let cs = constraint_system(SynthesisMode::Prove { construct_matrices: false, generate_lc_assignments: false });
    circuit.generate_constraints(cs.clone())?;
    let mut assignment = cs.instance_assignment()?;
    assignment.extend(cs.witness_assignment()?);
    Ok((assignment, cs.num_instance_variables()))
}

/// Coefficients of `h = (A·B − C) / Z_H`, libsnark's reduction (the public inputs are bound by
/// extra rows `a = x_i` after the constraints, as `ark-groth16`'s setup expects).
fn witness_map(m: &R1csMatrices, z: &[Fr], backend: &dyn ProverBackend) -> Result<Vec<Fr>> {
    let n = (m.num_constraints + m.num_instance).next_power_of_two();
    let mut a = vec![Fr::zero(); n];
    let mut b = vec![Fr::zero(); n];
    let mut c = vec![Fr::zero(); n];
    a[..m.num_constraints]
        .par_iter_mut()
        .zip(&mut b[..m.num_constraints])
        .zip(&mut c[..m.num_constraints])
        .enumerate()
        .for_each(|(i, ((a, b), c))| {
            *a = m.row_value(0, i, z);
            *b = m.row_value(1, i, z);
            *c = m.row_value(2, i, z);
        });
    // A false statement is refused here (in parallel, on values computed anyway), rather than by
    // arkworks' single-threaded `is_satisfied` pass or, later, by a proof that does not verify.
    if let Some(row) = (0..m.num_constraints).into_par_iter().find_first(|&i| a[i] * b[i] != c[i]) {
        return Err(Error::Unsatisfied(format!("R1CS row {row} of {}", m.num_constraints)));
    }
    a[m.num_constraints..m.num_constraints + m.num_instance].copy_from_slice(&z[..m.num_instance]);
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

/// Proves `circuit` with `pk`: a zero-knowledge proof (fresh `r`, `s` from `rng`). Builds the
/// circuit's matrices on the way; a prover of many statements of one circuit builds them once
/// ([`R1csMatrices::build`]) and calls [`prove_with_matrices`].
pub fn prove<C: ConstraintSynthesizer<Fr>>(
    pk: &ProvingKey<Bn254>,
    circuit: C,
    backend: &dyn ProverBackend,
    rng: &mut impl RngCore,
) -> Result<(Proof<Bn254>, ProveStats)> {
    let t = Instant::now();
    let cs = constraint_system(SynthesisMode::Prove { construct_matrices: true, generate_lc_assignments: false });
    circuit.generate_constraints(cs.clone())?;
    cs.finalize();
    let mut z = cs.instance_assignment()?;
    z.extend(cs.witness_assignment()?);
    let matrices = R1csMatrices::from_constraint_system(cs)?;
    let synthesis_seconds = t.elapsed().as_secs_f64();
    prove_assignment(pk, &matrices, &z, synthesis_seconds, backend, rng)
}

/// Proves `circuit` with `pk` and the circuit's prebuilt `matrices`: synthesis only computes the
/// witness. Matrices of another circuit are refused (sizes) or fail the satisfiability check.
pub fn prove_with_matrices<C: ConstraintSynthesizer<Fr>>(
    pk: &ProvingKey<Bn254>,
    matrices: &R1csMatrices,
    circuit: C,
    backend: &dyn ProverBackend,
    rng: &mut impl RngCore,
) -> Result<(Proof<Bn254>, ProveStats)> {
    let t = Instant::now();
    let (z, num_instance) = witness(circuit)?;
    if num_instance != matrices.num_instance || z.len() != matrices.num_instance + matrices.num_witness {
        return Err(Error::KeyMismatch(format!(
            "matrices for {} variables and {} public inputs, circuit has {} and {}",
            matrices.num_instance + matrices.num_witness,
            matrices.num_instance - 1,
            z.len(),
            num_instance.saturating_sub(1)
        )));
    }
    let synthesis_seconds = t.elapsed().as_secs_f64();
    prove_assignment(pk, matrices, &z, synthesis_seconds, backend, rng)
}

fn prove_assignment(
    pk: &ProvingKey<Bn254>,
    m: &R1csMatrices,
    z: &[Fr],
    synthesis_seconds: f64,
    backend: &dyn ProverBackend,
    rng: &mut impl RngCore,
) -> Result<(Proof<Bn254>, ProveStats)> {
    let num_variables = z.len();
    let mut stats = ProveStats {
        constraints: m.num_constraints,
        public_inputs: m.num_instance - 1,
        witness_variables: num_variables - m.num_instance,
        domain_size: (m.num_constraints + m.num_instance).next_power_of_two(),
        synthesis_seconds,
        ..ProveStats::default()
    };
    if pk.a_query.len() != num_variables
        || pk.b_g2_query.len() != num_variables
        || pk.l_query.len() != num_variables - m.num_instance
        || pk.vk.gamma_abc_g1.len() != m.num_instance
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
    let h = witness_map(m, z, backend)?;
    stats.witness_map_seconds = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let (r, sv) = (Fr::rand(rng), Fr::rand(rng));
    let aux = &z[m.num_instance..];
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
