//! Groth16 setup and proving time on this machine for a synthetic circuit of chained BN254
//! Poseidon permutations (dense rows, like the wrapper's hashing), with the INSECURE devnet
//! setup. Prints one JSON line.
//!
//! `cargo run --release -p tgrid-groth16 --example groth16_bench -- [CONSTRAINTS]` (default 2^20).

use std::time::Instant;

use ark_bn254::Fr;
use ark_r1cs_std::fields::fp::FpVar;
use ark_r1cs_std::prelude::*;
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystemRef, SynthesisError};
use rand::SeedableRng;
use tgrid_groth16::keys::insecure_devnet_setup;
use tgrid_groth16::{prove, verify, CpuBackend};
use tgrid_poseidon_bn254::POSEIDON_T3;

#[derive(Clone)]
struct Chain {
    permutations: usize,
    seed: Fr,
}

impl Chain {
    fn output(&self) -> Fr {
        let mut s = [Fr::from(0u64), self.seed, self.seed];
        for _ in 0..self.permutations {
            POSEIDON_T3.permute(&mut s);
        }
        s[0]
    }
}

impl ConstraintSynthesizer<Fr> for Chain {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let out = FpVar::new_input(cs.clone(), || Ok(self.output()))?;
        let seed = FpVar::new_witness(cs, || Ok(self.seed))?;
        let mut s = [FpVar::Constant(Fr::from(0u64)), seed.clone(), seed];
        for _ in 0..self.permutations {
            POSEIDON_T3.permute_var(&mut s)?;
        }
        s[0].enforce_equal(&out)
    }
}

fn peak_rss_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|kb| kb.parse::<u64>().ok()))
        .map_or(0, |kb| kb / 1024)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let target: usize = std::env::args().nth(1).map(|s| s.parse()).transpose()?.unwrap_or(1 << 20);
    let circuit = Chain { permutations: target / 243, seed: Fr::from(7u64) };
    let t = Instant::now();
    let pk = insecure_devnet_setup(circuit.clone(), 1)?;
    let setup = t.elapsed().as_secs_f64();
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    let t = Instant::now();
    let (proof, stats) = prove(&pk, circuit.clone(), &CpuBackend, &mut rng)?;
    let prove_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    assert!(verify(&pk.vk, circuit.output(), &proof)?);
    let verify_s = t.elapsed().as_secs_f64();
    println!(
        "{{\"setup\":\"insecure-devnet\",\"constraints\":{},\"domain_size\":{},\"setup_s\":{setup:.1},\"prove_s\":{prove_s:.1},\"synthesis_s\":{:.1},\"witness_map_s\":{:.1},\"msm_s\":{:.1},\"verify_s\":{verify_s:.3},\"peak_rss_mib\":{}}}",
        stats.constraints,
        stats.domain_size,
        stats.synthesis_seconds,
        stats.witness_map_seconds,
        stats.msm_seconds,
        peak_rss_mib()
    );
    Ok(())
}
