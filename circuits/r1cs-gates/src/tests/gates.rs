//! Random openings: element-for-element equality with plonky2, satisfiability, and a negative
//! test per gate (the results must not match another opening's values).

use plonky2::field::types::Sample;
use plonky2::gates::exponentiation::ExponentiationGate;
use plonky2::gates::gate::GateRef;
use plonky2::plonk::circuit_data::CircuitConfig;

use super::*;
use crate::Error;

fn gate(name: &str) -> GateRef<F, 2> {
    let common = trivial_common();
    let gates = standard_gates(&common);
    gates.into_iter().find(|g| g.0.id().starts_with(name)).unwrap_or_else(|| panic!("no gate {name}"))
}

/// Differential check on `trials` random openings, plus one with edge values (0, 1, p − 1).
fn differential(g: &GateRef<F, 2>, trials: usize) {
    let mut openings: Vec<Opening> = (0..trials).map(|_| Opening::random(g)).collect();
    let mut edge = Opening::random(g);
    for (i, x) in edge.wires.iter_mut().chain(edge.consts.iter_mut()).enumerate() {
        *x = match i % 4 {
            0 => FE::ZERO,
            1 => FE::NEG_ONE,
            2 => QuadraticExtension([F::NEG_ONE, F::NEG_ONE]),
            _ => *x,
        };
    }
    openings.push(edge);
    for o in &openings {
        let expected = native(g, o);
        let cs = new_cs();
        let (got, _) = r1cs(&cs, g, o).unwrap();
        assert_eq!(got.len(), expected.len(), "{}: constraint count", g.0.id());
        assert_eq!(got.len(), g.0.num_constraints(), "{}: num_constraints", g.0.id());
        for (i, (a, b)) in values(&got).iter().zip(&expected).enumerate() {
            assert_eq!(a, b, "{}: constraint {i}", g.0.id());
        }
        assert!(cs.is_satisfied().unwrap(), "{}", g.0.id());
    }
}

/// The results, enforced equal to plonky2's values at a different opening, leave the system
/// unsatisfied (and equal to their own values, satisfied: the check itself is sound).
fn negative(g: &GateRef<F, 2>) {
    let o = Opening::random(g);
    let other = native(g, &Opening::random(g));

    let cs = new_cs();
    let (got, _) = r1cs(&cs, g, &o).unwrap();
    for (x, y) in got.iter().zip(alloc_ext(&cs, &native(g, &o))) {
        x.enforce_equal(&y).unwrap();
    }
    assert!(cs.is_satisfied().unwrap(), "{}: own values", g.0.id());

    let cs = new_cs();
    let (got, _) = r1cs(&cs, g, &o).unwrap();
    for (x, y) in got.iter().zip(alloc_ext(&cs, &other)) {
        x.enforce_equal(&y).unwrap();
    }
    assert!(!cs.is_satisfied().unwrap(), "{}: another opening's values accepted", g.0.id());

    // A single wrong value (the last one, off by one) is caught too.
    let cs = new_cs();
    let (got, _) = r1cs(&cs, g, &o).unwrap();
    let mut own = native(g, &o);
    if let Some(last) = own.last_mut() {
        *last += FE::ONE;
    }
    for (x, y) in got.iter().zip(alloc_ext(&cs, &own)) {
        x.enforce_equal(&y).unwrap();
    }
    assert!(!cs.is_satisfied().unwrap(), "{}: one wrong value accepted", g.0.id());
}

macro_rules! gate_tests {
    ($($test:ident: $name:literal, $trials:expr;)*) => {$(
        #[test]
        fn $test() {
            let g = gate($name);
            differential(&g, $trials);
            if g.0.num_constraints() > 0 {
                negative(&g);
            }
        }
    )*};
}

gate_tests! {
    noop: "NoopGate", 1;
    constant: "ConstantGate", 3;
    public_input: "PublicInputGate", 3;
    arithmetic: "ArithmeticGate", 3;
    arithmetic_extension: "ArithmeticExtensionGate", 3;
    mul_extension: "MulExtensionGate", 3;
    base_sum: "BaseSumGate", 3;
    reducing: "ReducingGate", 3;
    reducing_extension: "ReducingExtensionGate", 3;
    random_access: "RandomAccessGate", 3;
    poseidon_mds: "PoseidonMdsGate", 3;
    poseidon: "PoseidonGate", 2;
    coset_interpolation: "CosetInterpolationGate", 3;
}

#[test]
fn unsupported_gate_is_an_error() {
    let config = CircuitConfig::standard_recursion_config();
    let g = GateRef::<F, 2>::new(ExponentiationGate::<F, 2>::new_from_config(&config));
    let o = Opening::random(&g);
    let cs = new_cs();
    match r1cs(&cs, &g, &o) {
        Err(Error::UnsupportedGate(id)) => assert_eq!(id, g.0.id()),
        other => panic!("expected UnsupportedGate, got {:?}", other.map(|(v, n)| (v.len(), n))),
    }
}

#[test]
fn short_inputs_are_errors_not_panics() {
    let common = trivial_common();
    for g in standard_gates(&common) {
        let o = Opening::random(&g);
        if !o.wires.is_empty() {
            let mut short = o.clone();
            short.wires.pop();
            let cs = new_cs();
            assert!(
                matches!(r1cs(&cs, &g, &short), Err(Error::TooFewInputs { what: "local_wires", .. })),
                "{}",
                g.0.id()
            );
        }
        if !o.consts.is_empty() {
            let mut short = o.clone();
            short.consts.pop();
            let cs = new_cs();
            assert!(
                matches!(r1cs(&cs, &g, &short), Err(Error::TooFewInputs { what: "local_constants", .. })),
                "{}",
                g.0.id()
            );
        }
        // Longer inputs (all 135 wires, all constants) are fine, as plonky2 passes them.
        let mut long = o.clone();
        long.wires.extend(FE::rand_vec(3));
        long.consts.extend(FE::rand_vec(2));
        let cs = new_cs();
        let (got, _) = r1cs(&cs, &g, &long).unwrap();
        assert_eq!(values(&got), native(&g, &long), "{}", g.0.id());
    }
}

#[test]
fn malformed_coset_gate_is_an_error() {
    let common = trivial_common();
    let mut g = coset_gate(4, 8, &common);
    g.barycentric_weights.pop();
    let g = GateRef::new(g);
    let cs = new_cs();
    let o = Opening { consts: vec![], wires: FE::rand_vec(200), pih: HashOut::rand() };
    assert!(matches!(r1cs(&cs, &g, &o), Err(Error::MalformedGate { .. })));

    let mut g = coset_gate(4, 8, &common);
    g.degree = 1;
    let g = GateRef::new(g);
    assert!(matches!(r1cs(&cs, &g, &o), Err(Error::MalformedGate { .. })));
}

/// Inputs that are lazy products (~2^129) rather than canonical witnesses, as a caller may pass:
/// the same values, a satisfied system (exercises the operand-fitting paths).
#[test]
fn lazy_inputs_match() {
    let common = trivial_common();
    for g in standard_gates(&common) {
        let o = Opening::random(&g);
        let cs = new_cs();
        let one = GoldilocksVar::new_witness(cs.clone(), || Ok(F::ONE)).unwrap();
        let lazy = |v: &[FE]| -> Vec<GoldilocksExtVar> {
            alloc_ext(&cs, v).iter().map(|x| x.scalar_mul(&one).unwrap()).collect()
        };
        let (consts, wires) = (lazy(&o.consts), lazy(&o.wires));
        assert!(wires.iter().all(|w| w.bits() > 64));
        let pih = o.pih.elements.map(|x| GoldilocksVar::new_witness(cs.clone(), || Ok(x)).unwrap().mul(&one).unwrap());
        let got = eval_gate_unfiltered(&g, &consts, &wires, &pih).unwrap_or_else(|e| panic!("{}: {e}", g.0.id()));
        assert_eq!(values(&got), native(&g, &o), "{}", g.0.id());
        assert!(max_bits(&got) <= tgrid_r1cs_goldilocks::MAX_BITS);
        assert!(cs.is_satisfied().unwrap(), "{}", g.0.id());
    }
}
