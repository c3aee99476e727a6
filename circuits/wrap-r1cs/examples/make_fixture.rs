//! Regenerates `fixtures/`: a final-layer proof of a small inner circuit, with the INSECURE test
//! FRI parameters (2 queries, 2 bits of grinding) and otherwise the production final-layer
//! configuration, so the R1CS tests run on the real shape without re-proving. With
//! `--production`, `fixtures/production/`: the same with the production FRI parameters (21
//! queries, 16 bits of grinding), for the tests that must see the production query count.
//!
//! ```text
//! cargo run -p tgrid-wrap-r1cs --example make_fixture [-- --production]
//! ```
//!
//! Files (plonky2 1.1.0's own byte encodings):
//! - `final_proof.bin`: `ProofWithPublicInputs::to_bytes`;
//! - `final_common.bin`: `CommonCircuitData::to_bytes(&DefaultGateSerializer)`;
//! - `final_verifier_only.bin`: `VerifierOnlyCircuitData::to_bytes` (constants_sigmas_cap height,
//!   its hashes, then the circuit digest; a hash is the canonical 32-byte little-endian `Fr`).

use std::path::PathBuf;
use std::time::Instant;

use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::field::types::Field;
use plonky2::iop::witness::{PartialWitness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::CircuitConfig;
use plonky2::plonk::config::PoseidonGoldilocksConfig;
use plonky2::util::serialization::DefaultGateSerializer;
use tgrid_poseidon_bn254::PoseidonBn254GoldilocksConfig;
use tgrid_wrap::FinalFri;

type F = GoldilocksField;
const D: usize = 2;

fn main() -> anyhow::Result<()> {
    let production = std::env::args().skip(1).any(|a| a == "--production");
    let (fri, dir) = match production {
        true => (FinalFri::PRODUCTION, PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/production")),
        false => (FinalFri::INSECURE_TEST, PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")),
    };
    std::fs::create_dir_all(&dir)?;

    // Inner circuit (Goldilocks Poseidon, standard recursion config): 8 public inputs below
    // 2^32 tied together by a few arithmetic constraints.
    let mut b = CircuitBuilder::<F, D>::new(CircuitConfig::standard_recursion_config());
    let x = b.add_virtual_target();
    let y = b.add_virtual_target();
    b.range_check(x, 15);
    b.range_check(y, 15);
    let sum = b.add(x, y);
    let prod = b.mul(x, y);
    let x2 = b.square(x);
    let y2 = b.square(y);
    let prod_plus_x = b.add(prod, x);
    let five = b.constant(F::from_canonical_u64(5));
    let lin = b.mul_const_add(F::from_canonical_u64(3), x, five);
    b.register_public_inputs(&[x, y, sum, prod, x2, y2, prod_plus_x, lin]);
    let inner = b.build::<PoseidonGoldilocksConfig>();
    let mut pw = PartialWitness::new();
    pw.set_target(x, F::from_canonical_u64(12_345))?;
    pw.set_target(y, F::from_canonical_u64(23_456))?;
    let inner_proof = inner.prove(pw)?;
    inner.verify(inner_proof.clone())?;
    println!("inner: degree 2^{}", inner.common.degree_bits());

    // Final circuit: verifies the inner proof against constant verifier data and forwards its
    // public inputs; Merkle trees and transcript over BN254 Poseidon.
    let mut b = CircuitBuilder::<F, D>::new(fri.circuit_config());
    let pt = b.add_virtual_proof_with_pis(&inner.common);
    let vd = b.constant_verifier_data(&inner.verifier_only);
    b.verify_proof::<PoseidonGoldilocksConfig>(&pt, &vd, &inner.common);
    b.register_public_inputs(&pt.public_inputs);
    let final_data = b.build::<PoseidonBn254GoldilocksConfig>();
    println!("final: degree 2^{}", final_data.common.degree_bits());
    let mut pw = PartialWitness::new();
    pw.set_proof_with_pis_target(&pt, &inner_proof)?;
    let start = Instant::now();
    let proof = final_data.prove(pw)?;
    println!("final: proved in {:.1} s", start.elapsed().as_secs_f64());
    final_data.verify(proof.clone())?;

    let gates = DefaultGateSerializer;
    let files = [
        ("final_proof.bin", proof.to_bytes()),
        ("final_common.bin", final_data.common.to_bytes(&gates).map_err(|e| anyhow::anyhow!("{e:?}"))?),
        ("final_verifier_only.bin", final_data.verifier_only.to_bytes().map_err(|e| anyhow::anyhow!("{e:?}"))?),
    ];
    for (name, bytes) in files {
        std::fs::write(dir.join(name), &bytes)?;
        println!("{name}: {} bytes", bytes.len());
    }
    Ok(())
}
