//! Measures plonky2's Poseidon permutation on this machine (one thread), and the share of its 8
//! full rounds: the only part a vectorised permutation could speed up (the 22 partial rounds
//! apply the S-box to one element each).
use std::time::Instant;

use plonky2::field::types::Field;
use plonky2::hash::poseidon::Poseidon;
use tgrid_circuits::F;

fn main() {
    let n = 200_000;
    let mut state = [F::ONE; 12];
    let t = Instant::now();
    for _ in 0..n {
        state = F::poseidon(state);
    }
    let us = t.elapsed().as_secs_f64() * 1e6 / n as f64;

    let mut full = [F::TWO; 12];
    let t = Instant::now();
    for _ in 0..n {
        let mut round = 0;
        F::full_rounds(&mut full, &mut round);
        F::full_rounds(&mut full, &mut round);
    }
    let full_us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    println!(
        "{{\"poseidon_us_per_permutation\": {us:.3}, \"full_rounds_us_per_permutation\": {full_us:.3}, \"check\": [{}, {}]}}",
        state[0], full[0]
    );
}
