//! Prints the rows and timings of SHA-256 circuits, the arithmetic gadget (`sha256_words`,
//! `sha256_bits`) against the custom gates (`sha256_bits_gated`):
//! `cargo run --release -p tgrid-sha256 --example costs [len ...]`.

use std::time::{Duration, Instant};

use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::iop::generator::generate_partial_witness;
use plonky2::iop::target::BoolTarget;
use plonky2::iop::witness::{PartialWitness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::CircuitConfig;
use plonky2::plonk::config::PoseidonGoldilocksConfig;
use tgrid_sha256::{words_be, CircuitBuilderSha256, U32Target, WitnessU32};

type F = GoldilocksField;
type C = PoseidonGoldilocksConfig;
const D: usize = 2;

/// Gadget rows, degree bits, and build / witness / prove / verify times.
struct Costs {
    rows: usize,
    degree_bits: usize,
    times: [Duration; 4],
}

fn measure(
    mut b: CircuitBuilder<F, D>,
    rows: usize,
    digest: [U32Target; 8],
    pw: PartialWitness<F>,
) -> anyhow::Result<Costs> {
    for w in digest {
        b.register_public_input(w.0);
    }
    let start = Instant::now();
    let data = b.build::<C>();
    let build = start.elapsed();
    let start = Instant::now();
    generate_partial_witness(pw.clone(), &data.prover_only, &data.common)?;
    let witness = start.elapsed();
    let start = Instant::now();
    let proof = data.prove(pw)?;
    let prove = start.elapsed();
    let start = Instant::now();
    data.verify(proof)?;
    let verify = start.elapsed();
    Ok(Costs { rows, degree_bits: data.common.degree_bits(), times: [build, witness, prove, verify] })
}

fn words(len: usize) -> anyhow::Result<Costs> {
    let mut b = CircuitBuilder::<F, D>::new(CircuitConfig::standard_recursion_config());
    let inputs: Vec<U32Target> = (0..len.div_ceil(4)).map(|_| U32Target(b.add_virtual_target())).collect();
    let digest = b.sha256_words(&inputs, len);
    let rows = b.num_gates();
    let message: Vec<u8> = (0..len).map(|i| i as u8).collect();
    let mut pw = PartialWitness::new();
    pw.set_u32s(&inputs, &words_be(&message))?;
    measure(b, rows, digest, pw)
}

fn bits(len: usize, gated: bool) -> anyhow::Result<Costs> {
    let mut b = CircuitBuilder::<F, D>::new(CircuitConfig::standard_recursion_config());
    let inputs: Vec<BoolTarget> = (0..8 * len).map(|_| b.add_virtual_bool_target_safe()).collect();
    let before = b.num_gates();
    let digest = if gated { b.sha256_bits_gated(&inputs) } else { b.sha256_bits(&inputs) };
    let rows = b.num_gates() - before;
    let mut pw = PartialWitness::new();
    for (i, &t) in inputs.iter().enumerate() {
        pw.set_bool_target(t, (i * 7 + i / 3) % 5 < 2)?;
    }
    measure(b, rows, digest.words, pw)
}

fn main() -> anyhow::Result<()> {
    let lens: Vec<usize> = std::env::args().skip(1).map(|a| a.parse()).collect::<Result<_, _>>()?;
    let lens = if lens.is_empty() { vec![55, 65, 119, 149] } else { lens };
    for len in lens {
        for (name, costs) in
            [("sha256_words", words(len)?), ("sha256_bits", bits(len, false)?), ("sha256_bits_gated", bits(len, true)?)]
        {
            let [build, witness, prove, verify] = costs.times;
            println!(
                "{len:>4} B, {} blocks, {name:<17}: {:>5} rows, degree 2^{} | build {build:.2?}, witness {witness:.2?}, prove {prove:.2?}, verify {verify:.2?}",
                tgrid_sha256::num_blocks(8 * len),
                costs.rows,
                costs.degree_bits,
            );
        }
    }
    Ok(())
}
