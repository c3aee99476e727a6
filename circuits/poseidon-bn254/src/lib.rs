//! Poseidon over the BN254 scalar field (x^5, circom's parameters) for the last plonky2 layer,
//! the one the Groth16 wrapper verifies: the native permutation ([`params`]), its R1CS gadget
//! ([`r1cs`]), and plonky2's `Hasher`/`GenericConfig` built on them ([`hasher`]).

pub mod hasher;
pub mod params;
pub mod r1cs;

pub use hasher::{Bn254Duplex, Bn254HashOut, Bn254PoseidonHash, PoseidonBn254GoldilocksConfig};
pub use params::{PoseidonParams, POSEIDON_T3, POSEIDON_T4};
