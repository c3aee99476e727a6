//! Gate-level tests: low degree, native/packed/in-circuit evaluations agree (plonky2's own gate
//! checks), and each constraint is non-zero on a witness that breaks it and only then.

use plonky2::field::extension::quadratic::QuadraticExtension;
use plonky2::field::extension::FieldExtension;
use plonky2::field::types::{Field, Sample};
use plonky2::gates::gate::Gate;
use plonky2::gates::gate_testing::{test_eval_fns, test_low_degree};
use plonky2::hash::hash_types::HashOut;
use plonky2::plonk::vars::EvaluationVars;

use super::{RequantizeGate, WeightedSumGate};
use crate::{C, D, F};

type FE = QuadraticExtension<F>;

fn ext(v: i64) -> FE {
    <FE as FieldExtension<D>>::from_basefield(crate::gadgets::field_of(v))
}

#[test]
fn weighted_sum_gate_is_low_degree_and_its_evaluations_agree() {
    for terms in [1, 8, 38] {
        let gate = WeightedSumGate::new(terms, 80);
        test_low_degree::<F, _, D>(gate);
        test_eval_fns::<F, C, _, D>(gate).unwrap();
    }
}

#[test]
fn requantize_gate_is_low_degree_and_its_evaluations_agree() {
    for (excess, remainder) in [(1, 0), (1, 3), (2, 4), (4, 7)] {
        let gate = RequantizeGate::new(excess, remainder, 80);
        test_low_degree::<F, _, D>(gate);
        test_eval_fns::<F, C, _, D>(gate).unwrap();
    }
}

fn eval<G: Gate<F, D>>(gate: &G, wires: &[FE], constants: &[FE]) -> Vec<FE> {
    let hash = HashOut::rand();
    gate.eval_unfiltered(EvaluationVars { local_constants: constants, local_wires: wires, public_inputs_hash: &hash })
}

#[test]
fn weighted_sum_constraint_rejects_a_wrong_output_in_any_operation() {
    let gate = WeightedSumGate::new(3, 80);
    let weights = [ext(5), ext(-7), ext(2)];
    let mut wires = vec![FE::ZERO; Gate::<F, D>::num_wires(&gate)];
    for op in 0..gate.num_ops {
        let xs = [ext(op as i64), ext(100), ext(-3)];
        let acc = ext(1000);
        for (j, x) in xs.iter().enumerate() {
            wires[gate.wire_x(op, j)] = *x;
        }
        wires[gate.wire_acc(op)] = acc;
        wires[gate.wire_out(op)] = acc + weights.iter().zip(&xs).map(|(&w, &x)| w * x).sum::<FE>();
    }
    assert!(eval(&gate, &wires, &weights).iter().all(|c| *c == FE::ZERO));
    for op in 0..gate.num_ops {
        let mut bad = wires.clone();
        bad[gate.wire_out(op)] += FE::ONE;
        let constraints = eval(&gate, &bad, &weights);
        for (i, c) in constraints.iter().enumerate() {
            assert_eq!(*c == FE::ZERO, i != op, "operation {op}, constraint {i}");
        }
    }
}

/// A satisfying witness of one requantization (operation 0 of `gate`) with its constants:
/// acc·M + offset = (y' + a - 2σa)·2^s + r.
fn requantize_witness(gate: &RequantizeGate, acc: i64, y: i64, sigma: i64, a: u64, r: u64) -> (Vec<FE>, Vec<FE>) {
    let (multiplier, s, lo) = (3i64, 8u32, -20i64);
    let z = y + a as i64 - 2 * sigma * a as i64;
    let offset = (z << s) + r as i64 - acc * multiplier;
    let constants = vec![ext(multiplier), ext(offset), ext(1 << s), ext(127 - lo), ext(lo + 128)];
    let mut wires = vec![FE::ZERO; Gate::<F, D>::num_wires(gate)];
    wires[gate.wire_acc(0)] = ext(acc);
    wires[gate.wire_y_prime(0)] = ext(y);
    wires[gate.wire_sigma(0)] = ext(sigma);
    for j in 0..gate.excess_bytes {
        wires[gate.wire_excess(0, j)] = ext(((a >> (8 * j)) & 0xff) as i64);
    }
    for j in 0..gate.remainder_bytes {
        wires[gate.wire_remainder(0, j)] = ext(((r >> (8 * j)) & 0xff) as i64);
    }
    wires[gate.wire_output(0)] = ext(y + lo + 128);
    (wires, constants)
}

#[test]
fn requantize_constraints_each_reject_the_witness_that_breaks_them() {
    let gate = RequantizeGate { num_ops: 1, ..RequantizeGate::new(2, 1, 80) };
    let nonzero = |wires: &[FE], constants: &[FE]| -> Vec<usize> {
        eval(&gate, wires, constants).iter().enumerate().filter(|(_, c)| **c != FE::ZERO).map(|(i, _)| i).collect()
    };
    // Satisfying: inside the clamp (a = 0), clamped high (σ = 0, y' = high), clamped low (σ = 1, y' = 0).
    for (y, sigma, a) in [(40, 0, 0), (147, 0, 300), (0, 1, 5)] {
        let (w, c) = requantize_witness(&gate, 1234, y, sigma, a, 77);
        assert_eq!(nonzero(&w, &c), Vec::<usize>::new(), "y'={y} σ={sigma} a={a}");
    }
    // 0: the division identity (remainder off by one).
    let (mut w, c) = requantize_witness(&gate, 1234, 40, 0, 0, 77);
    w[gate.wire_remainder(0, 0)] += FE::ONE;
    assert_eq!(nonzero(&w, &c), vec![0]);
    // 1: an excess above without the output at the high clamp (y' = 40, a = 300 satisfies the
    // identity with its own offset, so only the clamp constraint breaks).
    let (w, c) = requantize_witness(&gate, 1234, 40, 0, 300, 77);
    assert_eq!(nonzero(&w, &c), vec![1]);
    // 2: an excess below without the output at the low clamp.
    let (w, c) = requantize_witness(&gate, 1234, 3, 1, 5, 77);
    assert_eq!(nonzero(&w, &c), vec![2]);
    // 3: σ = 2 with no excess satisfies every other identity.
    let (w, c) = requantize_witness(&gate, 1234, 40, 2, 0, 77);
    assert_eq!(nonzero(&w, &c), vec![3]);
    // 4: the output byte is not y' + lo + 128.
    let (mut w, c) = requantize_witness(&gate, 1234, 40, 0, 0, 77);
    w[gate.wire_output(0)] += FE::ONE;
    assert_eq!(nonzero(&w, &c), vec![4]);
}
