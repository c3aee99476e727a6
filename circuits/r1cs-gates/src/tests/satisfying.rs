//! Satisfying rows: plonky2's values are all zero, and so must be ours (in a satisfied system).
//! Extension-valued rows are built by hand from the gate's relation; the Poseidon and
//! coset-interpolation rows come from plonky2's own witness generators (base-field values).

use plonky2::field::extension::algebra::ExtensionAlgebra;
use plonky2::field::types::Sample;
use plonky2::hash::poseidon::Poseidon;
use plonky2::iop::generator::generate_partial_witness;
use plonky2::iop::target::Target;
use plonky2::iop::wire::Wire;
use plonky2::iop::witness::{PartialWitness, Witness, WitnessWrite};

use super::*;

type Alg = ExtensionAlgebra<FE, 2>;

fn alg(w: &[FE], start: usize) -> Alg {
    Alg::from_basefield_array([w[start], w[start + 1]])
}

fn put(w: &mut [FE], start: usize, a: Alg) {
    w[start..start + 2].copy_from_slice(&a.0);
}

fn assert_zero(g: &GateRef<F, 2>, o: &Opening) {
    let expected = native(g, o);
    assert!(expected.iter().all(|x| *x == FE::ZERO), "{}: the row does not satisfy plonky2", g.0.id());
    let cs = new_cs();
    let (got, _) = r1cs(&cs, g, o).unwrap();
    assert_eq!(got.len(), expected.len());
    assert!(values(&got).iter().all(|x| *x == FE::ZERO), "{}", g.0.id());
    // Zero results can be enforced equal to zero.
    for x in &got {
        x.enforce_equal(&GoldilocksExtVar::zero()).unwrap();
    }
    assert!(cs.is_satisfied().unwrap(), "{}", g.0.id());
}

/// A satisfying row for each gate whose relation is easy to solve in the extension.
fn satisfying_by_hand(g: &GateRef<F, 2>) -> Option<Opening> {
    let mut o = Opening::random(g);
    let id = g.0.id();
    let (c, w) = (o.consts.clone(), &mut o.wires);
    if id.starts_with("NoopGate") {
    } else if id.starts_with("ConstantGate") {
        w[..c.len()].copy_from_slice(&c);
    } else if id.starts_with("PublicInputGate") {
        for (wi, h) in w.iter_mut().zip(o.pih.elements) {
            *wi = h.into();
        }
    } else if id.starts_with("ArithmeticGate") {
        for i in 0..w.len() / 4 {
            w[4 * i + 3] = w[4 * i] * w[4 * i + 1] * c[0] + w[4 * i + 2] * c[1];
        }
    } else if id.starts_with("ArithmeticExtensionGate") {
        for i in 0..w.len() / 8 {
            let b = 8 * i;
            let out = (alg(w, b) * alg(w, b + 2)).scalar_mul(c[0]) + alg(w, b + 4).scalar_mul(c[1]);
            put(w, b + 6, out);
        }
    } else if id.starts_with("MulExtensionGate") {
        for i in 0..w.len() / 6 {
            let b = 6 * i;
            let out = (alg(w, b) * alg(w, b + 2)).scalar_mul(c[0]);
            put(w, b + 4, out);
        }
    } else if id.starts_with("BaseSumGate") {
        let mut sum = FE::ZERO;
        for i in (1..w.len()).rev() {
            w[i] = FE::from_bool(rand::random::<bool>());
            sum = sum.double() + w[i];
        }
        w[0] = sum;
    } else if id.starts_with("ReducingGate") || id.starts_with("ReducingExtensionGate") {
        let ext = id.starts_with("ReducingExtensionGate");
        let n = g.0.num_constraints() / 2;
        let width = if ext { 2 } else { 1 };
        let start_accs = 6 + width * n;
        let alpha = alg(w, 2);
        let mut acc = alg(w, 4);
        for i in 0..n {
            let coeff = if ext { alg(w, 6 + 2 * i) } else { Alg::from(w[6 + i]) };
            acc = acc * alpha + coeff;
            put(w, if i == n - 1 { 0 } else { start_accs + 2 * i }, acc);
        }
    } else if id.starts_with("RandomAccessGate") {
        // bits 4, 4 copies, 2 extra constants (standard configuration).
        let (bits, copies, extra) = (4, 4, 2);
        let routed = 18 * copies + extra;
        for copy in 0..copies {
            let index = (5 * copy + 3) % 16;
            w[18 * copy] = FE::from_canonical_usize(index);
            w[18 * copy + 1] = w[18 * copy + 2 + index];
            for b in 0..bits {
                w[routed + copy * bits + b] = FE::from_bool((index >> b) & 1 == 1);
            }
        }
        for i in 0..extra {
            w[18 * copies + i] = c[i];
        }
    } else if id.starts_with("PoseidonMdsGate") {
        for coord in 0..2 {
            let state: [FE; 12] = std::array::from_fn(|i| w[2 * i + coord]);
            let out = <F as Poseidon>::mds_layer_field::<FE, 2>(&state);
            for (i, x) in out.into_iter().enumerate() {
                w[2 * (12 + i) + coord] = x;
            }
        }
    } else {
        return None;
    }
    Some(o)
}

/// A row filled by plonky2's generator for `g`, from the given routed inputs.
fn generated_row(g: &GateRef<F, 2>, inputs: &[(usize, F)]) -> Opening {
    let mut builder = CircuitBuilder::<F, 2>::new(CircuitConfig::standard_recursion_config());
    let row = builder.num_gates();
    add_gate_dyn(&mut builder, g);
    let data = builder.build_prover::<C>();
    let mut pw = PartialWitness::new();
    for &(col, v) in inputs {
        pw.set_target(Target::wire(row, col), v).unwrap();
    }
    let witness = generate_partial_witness(pw, &data.prover_only, &data.common).unwrap();
    let wires = (0..g.0.num_wires()).map(|column| FE::from(witness.get_wire(Wire { row, column }))).collect();
    Opening { consts: vec![], wires, pih: HashOut::rand() }
}

fn add_gate_dyn(builder: &mut CircuitBuilder<F, 2>, g: &GateRef<F, 2>) {
    use plonky2::gates::coset_interpolation::CosetInterpolationGate;
    use plonky2::gates::poseidon::PoseidonGate;
    if let Some(c) = g.0.as_any().downcast_ref::<CosetInterpolationGate<F, 2>>() {
        builder.add_gate(c.clone(), vec![]);
    } else if g.0.as_any().is::<PoseidonGate<F, 2>>() {
        builder.add_gate(PoseidonGate::<F, 2>::new(), vec![]);
    } else {
        unreachable!("only used for the generated gates");
    }
}

#[test]
fn satisfying_rows_give_zero() {
    let common = trivial_common();
    for g in standard_gates(&common) {
        let id = g.0.id();
        let o = if let Some(o) = satisfying_by_hand(&g) {
            o
        } else if id.starts_with("PoseidonGate") {
            for swap in [F::ZERO, F::ONE] {
                let mut inputs: Vec<(usize, F)> = (0..12).map(|i| (i, F::rand())).collect();
                inputs.push((24, swap));
                assert_zero(&g, &generated_row(&g, &inputs));
            }
            continue;
        } else if id.starts_with("CosetInterpolationGate") {
            // shift, 16 extension values, the evaluation point.
            let inputs: Vec<(usize, F)> = (0..1 + 2 * 16 + 2).map(|i| (i, F::rand())).collect();
            generated_row(&g, &inputs)
        } else {
            panic!("no satisfying row for {id}");
        };
        assert_zero(&g, &o);
    }
}
