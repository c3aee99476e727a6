//! The gate set of a real standard-recursion circuit (a verifier of a standard proof): every
//! gate is supported and matches plonky2 on a random opening.

use plonky2::field::types::Field;
use plonky2::iop::target::Target;

use super::*;

#[test]
fn every_gate_of_a_recursion_circuit_is_supported() {
    let config = CircuitConfig::standard_recursion_config();
    // Inner circuit: large enough (2^8 rows) that its FRI uses arity 16, as in the real chain.
    let mut inner = CircuitBuilder::<F, 2>::new(config.clone());
    let mut x: Target = inner.add_virtual_target();
    inner.register_public_input(x);
    for i in 0..1 << 12 {
        let c = inner.constant(F::from_canonical_usize(i + 1));
        x = inner.mul_add(x, x, c);
    }
    inner.register_public_input(x);
    let inner = inner.build::<C>();

    let mut outer = CircuitBuilder::<F, 2>::new(config);
    let proof = outer.add_virtual_proof_with_pis(&inner.common);
    let vd = outer.add_virtual_verifier_data(inner.common.config.fri_config.cap_height);
    outer.verify_proof::<C>(&proof, &vd, &inner.common);
    let outer = outer.build::<C>();

    let ids: Vec<String> = outer.common.gates.iter().map(|g| g.0.id()).collect();
    println!("recursion circuit gates: {ids:#?}");
    // Whether a ConstantGate appears depends on the circuit (constants may all fit other gates'
    // constant wires); the others must be exactly those of `standard_gates`, same parameters.
    let common = trivial_common();
    let ours: Vec<String> = standard_gates(&common).iter().map(|g| g.0.id()).collect();
    assert!((12..=13).contains(&ids.len()), "{ids:#?}");
    for id in &ids {
        assert!(ours.contains(id), "{id} not among the standard gates");
    }
    for g in &outer.common.gates {
        let o = Opening::random(g);
        let cs = new_cs();
        let (got, _) = r1cs(&cs, g, &o).unwrap_or_else(|e| panic!("{}: {e}", g.0.id()));
        assert_eq!(values(&got), native(g, &o), "{}", g.0.id());
        assert!(cs.is_satisfied().unwrap());
    }
}
