//! Groth16 over BN254 for the batch wrap: the prover ([`prover::prove`]) with every MSM and NTT
//! behind [`ProverBackend`] ([`CpuBackend`] today), keys ([`keys`], including the INSECURE
//! devnet setup), verification, and the EVM encodings ([`evm`]).

pub mod backend;
pub mod error;
pub mod evm;
pub mod keys;
pub mod matrices;
pub mod prover;

#[cfg(test)]
mod tests;

use ark_bn254::{Bn254, Fr};
use ark_groth16::{Groth16, Proof, VerifyingKey};

pub use backend::{CpuBackend, Domain, ProverBackend, Transform};
pub use error::{Error, Result};
pub use matrices::R1csMatrices;
pub use prover::{prove, prove_with_matrices, ProveStats};

/// Verifies `proof` for the single public input `public_input`.
pub fn verify(vk: &VerifyingKey<Bn254>, public_input: Fr, proof: &Proof<Bn254>) -> Result<bool> {
    let pvk = ark_groth16::prepare_verifying_key(vk);
    Ok(Groth16::<Bn254>::verify_proof(&pvk, proof, &[public_input])?)
}
