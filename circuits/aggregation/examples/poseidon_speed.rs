//! Measures plonky2's Poseidon permutation throughput on this machine (one thread).
use std::time::Instant;

use plonky2::field::types::Field;
use plonky2::hash::poseidon::Poseidon;
use tgrid_circuits::F;

fn main() {
    let mut state = [F::ONE; 12];
    let n = 200_000;
    let t = Instant::now();
    for _ in 0..n {
        state = F::poseidon(state);
    }
    let us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    println!("{{\"poseidon_us_per_permutation\": {us:.3}, \"check\": {}}}", state[0]);
}
