//! Prints the native permutation's speed (µs per call) for widths 3 and 4, as JSON.

use std::time::Instant;

use ark_bn254::Fr;
use tgrid_poseidon_bn254::{POSEIDON_T3, POSEIDON_T4};

fn main() {
    const N: u32 = 20_000;
    let mut s3 = [Fr::from(1u64), Fr::from(2u64), Fr::from(3u64)];
    let mut s4 = [Fr::from(1u64), Fr::from(2u64), Fr::from(3u64), Fr::from(4u64)];
    POSEIDON_T4.permute(&mut s4);
    let t = Instant::now();
    for _ in 0..N {
        POSEIDON_T3.permute(&mut s3);
    }
    let t3 = t.elapsed().as_secs_f64() * 1e6 / f64::from(N);
    let t = Instant::now();
    for _ in 0..N {
        POSEIDON_T4.permute(&mut s4);
    }
    let t4 = t.elapsed().as_secs_f64() * 1e6 / f64::from(N);
    let mut x = Fr::from(3u64);
    let y = Fr::from(5u64) - Fr::from(7u64);
    let t = Instant::now();
    for _ in 0..1_000_000 {
        x *= y;
    }
    let mul_ns = t.elapsed().as_secs_f64() * 1e3;
    println!("{{\"t3_us\":{t3:.2},\"t4_us\":{t4:.2},\"fr_mul_ns\":{mul_ns:.1},\"check\":\"{}\"}}", s3[0] + s4[0] + x);
}
