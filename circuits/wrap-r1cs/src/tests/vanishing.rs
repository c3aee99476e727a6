//! The PLONK identity at ζ on the fixture. Gate constraint values come from plonky2's native
//! `eval_unfiltered`, allocated as witnesses (TEST ONLY: the production evaluator computes them
//! in R1CS, tgrid-r1cs-gates); this checks the assembly around them: selector filters,
//! `L₀`, the permutation argument's partial products, the α combination and the quotient.

use ark_relations::gr1cs::SynthesisError;
use plonky2::field::extension::quadratic::QuadraticExtension;
use plonky2::field::types::Field;
use plonky2::gates::gate::GateRef;
use plonky2::hash::hash_types::HashOut;
use plonky2::plonk::vars::EvaluationVars;
use tgrid_r1cs_goldilocks::{GoldilocksExtVar, GoldilocksVar};

use super::{fixture, synthesize};
use crate::{enforce_vanishing_identity, Challenges, FinalProof, Openings, VanishingError, F};

fn num_selectors(common: &crate::FinalCommon) -> usize {
    common.selectors_info.num_selectors()
}

/// Checks the identity for `proof` (openings possibly tampered); returns whether the system is
/// satisfied.
fn identity_holds(proof: &FinalProof) -> bool {
    let fx = fixture();
    let s = synthesize(Some(proof), &fx.common, &fx.digest()).unwrap();
    let cs = s.cs.clone();
    let pi_hash_native = proof.get_public_inputs_hash();
    let pi_hash: [GoldilocksVar; 4] = std::array::from_fn(|i| GoldilocksVar::constant(pi_hash_native.elements[i]));
    let openings = &proof.proof.openings;
    let constants = &openings.constants[num_selectors(&fx.common)..];
    let native_gate = |gate: &GateRef<F, 2>,
                       _: &[GoldilocksExtVar],
                       _: &[GoldilocksExtVar],
                       _: &[GoldilocksVar; 4]|
     -> Result<Vec<GoldilocksExtVar>, VanishingError> {
        let vars = EvaluationVars {
            local_constants: constants,
            local_wires: &openings.wires,
            public_inputs_hash: &HashOut { elements: pi_hash_native.elements },
        };
        gate.0
            .eval_unfiltered(vars)
            .into_iter()
            .map(|v| GoldilocksExtVar::new_witness_canonical(cs.clone(), || Ok(v)))
            .collect::<Result<Vec<_>, SynthesisError>>()
            .map_err(VanishingError::from)
    };
    enforce_vanishing_identity(
        &fx.common,
        &Openings::of(&s.proof.openings),
        &Challenges::of(&s.challenges),
        &pi_hash,
        &native_gate,
    )
    .unwrap();
    cs.is_satisfied().unwrap()
}

#[test]
fn the_identity_holds_for_the_fixture() {
    assert!(identity_holds(&fixture().proof));
}

#[test]
fn tampered_openings_break_the_identity() {
    let one = QuadraticExtension([F::ONE, F::ZERO]);
    type Tamper = fn(&mut FinalProof, QuadraticExtension<F>);
    let cases: [(&str, Tamper); 5] = [
        ("quotient chunk", |p, d| p.proof.openings.quotient_polys[0] += d),
        ("Z(ζ)", |p, d| p.proof.openings.plonk_zs[0] += d),
        ("Z(gζ)", |p, d| p.proof.openings.plonk_zs_next[1] += d),
        ("partial product", |p, d| p.proof.openings.partial_products[3] += d),
        ("sigma", |p, d| p.proof.openings.plonk_sigmas[5] += d),
    ];
    for (what, tamper) in cases {
        let mut proof = fixture().proof.clone();
        tamper(&mut proof, one);
        assert!(!identity_holds(&proof), "{what}");
    }
}

#[test]
fn unused_selector_is_plonky2s() {
    // Pinned: plonky2 keeps the constant crate-private (gates/selectors.rs).
    assert_eq!(crate::UNUSED_SELECTOR, u64::from(u32::MAX));
    assert!(num_selectors(&fixture().common) > 1, "the fixture exercises the many-selector filter");
}
