//! Prints the rows and timings of `sha256_words` circuits:
//! `cargo run -p tgrid-sha256 --example costs [len ...]`.

use std::time::Instant;

use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::iop::generator::generate_partial_witness;
use plonky2::iop::witness::PartialWitness;
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::CircuitConfig;
use plonky2::plonk::config::PoseidonGoldilocksConfig;
use tgrid_sha256::{words_be, CircuitBuilderSha256, U32Target, WitnessU32};

type F = GoldilocksField;
type C = PoseidonGoldilocksConfig;
const D: usize = 2;

fn main() -> anyhow::Result<()> {
    let lens: Vec<usize> = std::env::args().skip(1).map(|a| a.parse()).collect::<Result<_, _>>()?;
    let lens = if lens.is_empty() { vec![55, 119, 149] } else { lens };
    for len in lens {
        let mut b = CircuitBuilder::<F, D>::new(CircuitConfig::standard_recursion_config());
        let inputs: Vec<U32Target> = (0..len.div_ceil(4)).map(|_| U32Target(b.add_virtual_target())).collect();
        let start = Instant::now();
        let digest = b.sha256_words(&inputs, len);
        let gadget_rows = b.num_gates();
        for w in digest {
            b.register_public_input(w.0);
        }
        let t_gadget = start.elapsed();
        let start = Instant::now();
        let data = b.build::<C>();
        let t_build = start.elapsed();
        let message: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let mut pw = PartialWitness::new();
        pw.set_u32s(&inputs, &words_be(&message))?;
        let start = Instant::now();
        generate_partial_witness(pw.clone(), &data.prover_only, &data.common)?;
        let t_witness = start.elapsed();
        let start = Instant::now();
        let proof = data.prove(pw)?;
        let t_prove = start.elapsed();
        let start = Instant::now();
        data.verify(proof)?;
        let t_verify = start.elapsed();
        println!(
            "len {len:>4} B, {} blocks: gadget rows {gadget_rows}, degree 2^{} | gadget {t_gadget:.2?}, build {t_build:.2?}, witness {t_witness:.2?}, prove {t_prove:.2?}, verify {t_verify:.2?}",
            tgrid_sha256::num_blocks(8 * len),
            data.common.degree_bits(),
        );
    }
    // An RFC 6962 node, sha256(0x01 ‖ l ‖ r), over digest bits: 65 bytes, two blocks.
    let mut b = CircuitBuilder::<F, D>::new(CircuitConfig::standard_recursion_config());
    let mut bits: Vec<_> = (0..8).map(|i| b.constant_bool(i == 7)).collect();
    bits.extend((0..512).map(|_| b.add_virtual_bool_target_unsafe()));
    let before = b.num_gates();
    b.sha256_bits(&bits);
    println!("RFC 6962 node (sha256_bits, 65 B, 2 blocks): gadget rows {}", b.num_gates() - before);
    Ok(())
}
