//! Gate-level tests: low degree, native/packed/in-circuit evaluations agree (plonky2's own gate
//! checks), and each constraint is non-zero on a witness that breaks it and only then.

use plonky2::field::extension::quadratic::QuadraticExtension;
use plonky2::field::extension::FieldExtension;
use plonky2::field::types::{Field, Sample};
use plonky2::gates::gate::Gate;
use plonky2::gates::gate_testing::{test_eval_fns, test_low_degree};
use plonky2::hash::hash_types::HashOut;
use plonky2::plonk::vars::EvaluationVars;

use super::{ByteRangeGate, ByteTableGate, DotProductGate, RequantizeGate, WeightedSumGate};
use crate::{C, D, F};

type FE = QuadraticExtension<F>;

fn ext(v: i64) -> FE {
    <FE as FieldExtension<D>>::from_basefield(crate::gadgets::field_of(v))
}

#[test]
fn weighted_sum_gate_is_low_degree_and_its_evaluations_agree() {
    for terms in [1, 2, 8, 38] {
        let gate = WeightedSumGate::new(terms, 80);
        test_low_degree::<F, _, D>(gate);
        test_eval_fns::<F, C, _, D>(gate).unwrap();
    }
}

#[test]
fn dot_product_gate_is_low_degree_and_its_evaluations_agree() {
    for terms in [1, 12, 19, 39] {
        let gate = DotProductGate::new(terms, 80);
        test_low_degree::<F, _, D>(gate);
        test_eval_fns::<F, C, _, D>(gate).unwrap();
    }
}

#[test]
fn dot_product_constraint_rejects_a_wrong_output_in_any_operation() {
    let gate = DotProductGate::new(12, 80);
    let offsets = [ext(-128), ext(5)];
    let mut wires = vec![FE::ZERO; Gate::<F, D>::num_wires(&gate)];
    for op in 0..gate.num_ops {
        let acc = ext(1000 + op as i64);
        let mut sum = acc;
        for j in 0..gate.terms {
            let (a, b) = (ext((j * 7 + op) as i64 % 256), ext((j * 13) as i64 % 256));
            wires[gate.wire_a(op, j)] = a;
            wires[gate.wire_b(op, j)] = b;
            sum += (a - offsets[0]) * (b - offsets[1]);
        }
        wires[gate.wire_acc(op)] = acc;
        wires[gate.wire_out(op)] = sum;
    }
    assert!(eval(&gate, &wires, &offsets).iter().all(|c| *c == FE::ZERO));
    for op in 0..gate.num_ops {
        // A wrong output, or an uncentered factor: only that operation's constraint breaks.
        for wire in [gate.wire_out(op), gate.wire_a(op, 3), gate.wire_b(op, gate.terms - 1)] {
            let mut bad = wires.clone();
            bad[wire] += FE::ONE;
            let constraints = eval(&gate, &bad, &offsets);
            for (i, c) in constraints.iter().enumerate() {
                assert_eq!(*c == FE::ZERO, i != op, "operation {op}, wire {wire}, constraint {i}");
            }
        }
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

#[test]
fn byte_range_gate_is_low_degree_and_its_evaluations_agree() {
    let gate = ByteRangeGate::new(82, 80);
    assert_eq!(gate.num_ops, 16);
    test_low_degree::<F, _, D>(gate);
    test_eval_fns::<F, C, _, D>(gate).unwrap();
}

/// Every byte satisfies its check with its base-4 limbs; a limb outside `{0, 1, 2, 3}` (even one
/// that still recomposes the value) breaks that limb's constraint, and a value other than its
/// limbs' breaks the recomposition, each in exactly that operation and constraint.
#[test]
fn byte_range_constraints_each_reject_the_witness_that_breaks_them() {
    let gate = ByteRangeGate::new(82, 80);
    let per_op = super::byte_range::LIMBS + 1;
    let witness = |values: &[u64]| {
        let mut wires = vec![FE::ZERO; Gate::<F, D>::num_wires(&gate)];
        for (op, &v) in values.iter().enumerate() {
            wires[gate.wire_value(op)] = ext(v as i64);
            for j in 0..super::byte_range::LIMBS {
                wires[gate.wire_limb(op, j)] = ext(((v >> (2 * j)) & 3) as i64);
            }
        }
        wires
    };
    let values: Vec<u64> = (0..gate.num_ops as u64).map(|op| op * 17).collect();
    assert!(values.contains(&255) && values.contains(&0));
    let honest = witness(&values);
    assert!(eval(&gate, &honest, &[]).iter().all(|c| *c == FE::ZERO));
    let only = |bad: &[FE], broken: usize| {
        for (i, c) in eval(&gate, bad, &[]).iter().enumerate() {
            assert_eq!(*c == FE::ZERO, i != broken, "constraint {i} (expected only {broken} broken)");
        }
    };
    for op in 0..gate.num_ops {
        // 256 = 4·64: limbs (0, 0, 0, 4) recompose it, the top limb is out of range.
        let mut bad = honest.clone();
        bad[gate.wire_value(op)] = ext(256);
        for j in 0..3 {
            bad[gate.wire_limb(op, j)] = FE::ZERO;
        }
        bad[gate.wire_limb(op, 3)] = ext(4);
        only(&bad, op * per_op + 4);
        // A negative limb: 12 = 7·4 − 1·16.
        let mut bad = honest.clone();
        bad[gate.wire_value(op)] = ext(12);
        bad[gate.wire_limb(op, 0)] = FE::ZERO;
        bad[gate.wire_limb(op, 1)] = ext(7);
        bad[gate.wire_limb(op, 2)] = ext(-1);
        bad[gate.wire_limb(op, 3)] = FE::ZERO;
        for (i, c) in eval(&gate, &bad, &[]).iter().enumerate() {
            let broken = [op * per_op + 2, op * per_op + 3].contains(&i);
            assert_eq!(*c == FE::ZERO, !broken, "operation {op}, constraint {i}");
        }
        // A value its limbs do not recompose.
        let mut bad = honest.clone();
        bad[gate.wire_value(op)] += FE::ONE;
        only(&bad, op * per_op);
    }
}

/// A table of 256 distinct 16-bit entries.
fn sample_table() -> std::sync::Arc<[u32]> {
    (0..256u32).map(|u| (u * 40_503 + 17) % 65_536).collect()
}

#[test]
fn byte_table_gate_is_low_degree_and_its_evaluations_agree() {
    let gate = ByteTableGate::new(sample_table(), 85, 80);
    assert_eq!(gate.num_ops, 3);
    test_low_degree::<F, _, D>(gate.clone());
    test_eval_fns::<F, C, _, D>(gate).unwrap();
}

/// The honest witness of every read of `gate` at `inputs`, as its generator writes it.
fn table_witness(gate: &ByteTableGate, inputs: &[usize]) -> Vec<FE> {
    let mut wires = vec![FE::ZERO; Gate::<F, D>::num_wires(gate)];
    let value = |v: u32| ext(i64::from(v));
    for (op, &u) in inputs.iter().enumerate() {
        wires[gate.wire_input(op)] = ext(u as i64);
        for j in 0..8 {
            wires[gate.wire_bit(op, j)] = ext(((u >> j) & 1) as i64);
        }
        for y in 0..16 {
            wires[gate.wire_first(op, y)] = value(gate.table[16 * y + u % 16]);
        }
        for z in 0..2 {
            wires[gate.wire_second(op, z)] = value(gate.table[16 * (8 * z + ((u >> 4) & 7)) + u % 16]);
        }
        wires[gate.wire_output(op)] = value(gate.table[u]);
    }
    wires
}

/// Every read of every index satisfies the gate; each kind of wrong wire (output, a fold value,
/// a bit that is not a bit, an input its bits do not make) breaks exactly its own constraint.
#[test]
fn byte_table_constraints_each_reject_the_witness_that_breaks_them() {
    let gate = ByteTableGate::new(sample_table(), 85, 80);
    let per_op = 28;
    for first in (0..256).step_by(3) {
        let inputs = [first, (first + 1) % 256, (first + 2) % 256];
        assert!(eval(&gate, &table_witness(&gate, &inputs), &[]).iter().all(|c| *c == FE::ZERO), "{inputs:?}");
    }
    let inputs = [0, 0xa7, 0xff];
    let honest = table_witness(&gate, &inputs);
    let broken = |bad: &[FE]| -> Vec<usize> {
        eval(&gate, bad, &[]).iter().enumerate().filter(|(_, c)| **c != FE::ZERO).map(|(i, _)| i).collect()
    };
    for op in 0..gate.num_ops {
        let base = op * per_op;
        // Another entry as the output: only the output constraint.
        let mut bad = honest.clone();
        bad[gate.wire_output(op)] = ext(i64::from(gate.table[(inputs[op] + 1) % 256]));
        assert_eq!(broken(&bad), vec![base + 27], "output of read {op}");
        // A first-fold value of another entry: its own constraint, and the second fold reading it
        // if it lies on the path of the index.
        for y in [0, 9] {
            let mut bad = honest.clone();
            bad[gate.wire_first(op, y)] += FE::ONE;
            let on_path = y % 8 == (inputs[op] >> 4) & 7;
            let mut expected = vec![base + 9 + y];
            if on_path {
                expected.push(base + 25 + y / 8);
            }
            assert_eq!(broken(&bad), expected, "first fold {y} of read {op}");
        }
        // A second-fold value changed: its constraint, and the output's if it is the one read.
        let mut bad = honest.clone();
        bad[gate.wire_second(op, 0)] += FE::ONE;
        let mut expected = vec![base + 25];
        if inputs[op] >> 7 == 0 {
            expected.push(base + 27);
        }
        assert_eq!(broken(&bad), expected, "second fold of read {op}");
        // An input its bits do not make: only the recomposition.
        let mut bad = honest.clone();
        bad[gate.wire_input(op)] += FE::ONE;
        assert_eq!(broken(&bad), vec![base], "input of read {op}");
        // A bit of 2 with the input adjusted to match: the bit's own constraint is broken
        // (the folds then read outside the table, and break too).
        let mut bad = honest.clone();
        bad[gate.wire_bit(op, 0)] = ext(2);
        bad[gate.wire_input(op)] = ext(inputs[op] as i64 - (inputs[op] & 1) as i64 + 2);
        let b = broken(&bad);
        assert!(b.contains(&(base + 1)) && !b.contains(&base), "bit of read {op}: {b:?}");
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

mod poseidon {
    use plonky2::hash::hashing::PlonkyPermutation;
    use plonky2::hash::poseidon::{Poseidon, PoseidonHash, PoseidonPermutation, SPONGE_WIDTH};
    use plonky2::iop::target::Target;
    use plonky2::iop::witness::{PartialWitness, WitnessWrite};
    use plonky2::plonk::circuit_builder::CircuitBuilder;
    use plonky2::plonk::circuit_data::{CircuitConfig, CircuitData};
    use plonky2::plonk::config::{AlgebraicHasher, Hasher};
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::gates::poseidon::{
        head_witness, tail_witness, wire_full_sbox, wire_input, wire_output, wire_partial_sbox, TAIL_WIRES,
    };
    use crate::gates::{permute_rows, PoseidonHeadGate, PoseidonTailGate, HEAD_WIRES};
    use crate::{segment_config, TgridPoseidonHash, SEGMENT_WIRES};

    pub(super) fn random_state(rng: &mut impl Rng) -> [F; SPONGE_WIDTH] {
        std::array::from_fn(|_| F::from_noncanonical_u64(rng.gen()))
    }

    #[test]
    fn poseidon_gates_are_low_degree_and_their_evaluations_agree() {
        test_low_degree::<F, _, D>(PoseidonHeadGate::default());
        test_low_degree::<F, _, D>(PoseidonTailGate::default());
        test_eval_fns::<F, C, _, D>(PoseidonHeadGate::default()).unwrap();
        test_eval_fns::<F, C, _, D>(PoseidonTailGate::default()).unwrap();
    }

    #[test]
    fn the_two_rows_compute_plonky2_poseidon() {
        assert_eq!(HEAD_WIRES, 82);
        assert_eq!(TAIL_WIRES, 60);
        assert_eq!(SEGMENT_WIRES, HEAD_WIRES);
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for _ in 0..200 {
            let input = random_state(&mut rng);
            let head = head_witness(input);
            let middle: [F; SPONGE_WIDTH] = std::array::from_fn(|i| head[wire_output(i)]);
            let tail = tail_witness(middle);
            let output: [F; SPONGE_WIDTH] = std::array::from_fn(|i| tail[wire_output(i)]);
            assert_eq!(output, F::poseidon(input));
        }
    }

    fn nonzero<G: Gate<F, D>>(gate: &G, wires: &[FE]) -> Vec<usize> {
        eval(gate, wires, &[]).iter().enumerate().filter(|(_, c)| **c != FE::ZERO).map(|(i, _)| i).collect()
    }

    /// Every wire is bound: on the honest witness every constraint is zero, and changing any one
    /// wire (an input, an S-box input, an output) makes at least one constraint non-zero; a
    /// changed S-box input or output breaks its own constraint.
    #[test]
    fn each_poseidon_constraint_rejects_a_changed_wire() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        let input = random_state(&mut rng);
        let head: Vec<FE> = head_witness(input).iter().map(|&x| <FE as FieldExtension<D>>::from_basefield(x)).collect();
        let middle: [F; SPONGE_WIDTH] =
            std::array::from_fn(|i| <FE as FieldExtension<D>>::to_basefield_array(&head[wire_output(i)])[0]);
        let tail: Vec<FE> =
            tail_witness(middle).iter().map(|&x| <FE as FieldExtension<D>>::from_basefield(x)).collect();
        let full_sbox = (1..4).flat_map(|r| (0..SPONGE_WIDTH).map(move |i| wire_full_sbox(r, i)));
        let outputs = (0..SPONGE_WIDTH).map(wire_output);
        let head_order = full_sbox.clone().chain((0..22).map(wire_partial_sbox)).chain(outputs.clone());
        assert_every_wire_binds("head", &PoseidonHeadGate::default(), &head, head_order.collect());
        assert_every_wire_binds("tail", &PoseidonTailGate::default(), &tail, full_sbox.chain(outputs).collect());
    }

    /// `witness` satisfies `gate`; `order[k]` is the wire constraint `k` compares against, one per
    /// constraint. Changing any wire alone breaks a constraint, that wire's own if it has one;
    /// only the inputs have none.
    fn assert_every_wire_binds<G: Gate<F, D>>(name: &str, gate: &G, witness: &[FE], order: Vec<usize>) {
        assert_eq!(nonzero(gate, witness), Vec::<usize>::new(), "{name}");
        assert_eq!(order.len(), gate.num_constraints(), "{name}");
        for w in 0..witness.len() {
            let mut bad = witness.to_vec();
            bad[w] += FE::ONE;
            let broken = nonzero(gate, &bad);
            assert!(!broken.is_empty(), "{name} wire {w}");
            match order.iter().position(|&o| o == w) {
                Some(own) => assert!(broken.contains(&own), "{name} wire {w}: {broken:?}"),
                None => assert!(w < wire_input(SPONGE_WIDTH), "{name} wire {w} has no constraint of its own"),
            }
        }
    }

    /// A narrow circuit (no room for `PoseidonGate`) that permutes `inputs` with the given rows.
    fn narrow_permutation(
        head: PoseidonHeadGate,
        tail: PoseidonTailGate,
    ) -> (CircuitData<F, C, D>, [Target; SPONGE_WIDTH]) {
        let config = CircuitConfig { zero_knowledge: false, ..segment_config(0, crate::Privacy::Private) };
        let mut b = CircuitBuilder::<F, D>::new(config);
        let inputs: [Target; SPONGE_WIDTH] = std::array::from_fn(|_| b.add_virtual_target());
        let out = permute_rows(&mut b, inputs, head, tail);
        b.register_public_inputs(&out);
        (b.build::<C>(), inputs)
    }

    #[test]
    fn a_narrow_circuit_proves_the_permutation() {
        let (data, inputs) = narrow_permutation(PoseidonHeadGate::default(), PoseidonTailGate::default());
        assert!(data.common.config.num_wires < 135);
        assert_proves_poseidon_and_recursion_checks_it(&data, &inputs, 5);
    }

    /// `data` permutes `inputs` into its public inputs: it proves plonky2's Poseidon of a random
    /// state (seeded by `seed`), and a wide recursive verifier (plonky2's `PoseidonGate`) checks
    /// the proof.
    pub(super) fn assert_proves_poseidon_and_recursion_checks_it(
        data: &CircuitData<F, C, D>,
        inputs: &[Target; SPONGE_WIDTH],
        seed: u64,
    ) {
        let input = random_state(&mut rand::rngs::StdRng::seed_from_u64(seed));
        let mut pw = PartialWitness::new();
        for (&t, &x) in inputs.iter().zip(&input) {
            pw.set_target(t, x).unwrap();
        }
        let proof = data.prove(pw).unwrap();
        assert_eq!(proof.public_inputs, F::poseidon(input).to_vec());
        data.verify(proof.clone()).unwrap();

        let mut outer = CircuitBuilder::<F, D>::new(CircuitConfig::standard_recursion_config());
        let pt = outer.add_virtual_proof_with_pis(&data.common);
        let vd = outer.constant_verifier_data(&data.verifier_only);
        outer.verify_proof::<C>(&pt, &vd, &data.common);
        let outer = outer.build::<C>();
        let mut pw = PartialWitness::new();
        pw.set_proof_with_pis_target(&pt, &proof).unwrap();
        outer.verify(outer.prove(pw).unwrap()).unwrap();
    }

    /// `data` (a permutation circuit built with one faulty generator, `what`) has `honest`'s
    /// digest, and `honest`'s verifier rejects whatever it proves.
    pub(super) fn assert_faulty_permutation_is_rejected(
        what: &str,
        honest: &CircuitData<F, C, D>,
        data: &CircuitData<F, C, D>,
        inputs: &[Target; SPONGE_WIDTH],
    ) {
        assert_eq!(data.verifier_only.circuit_digest, honest.verifier_only.circuit_digest, "{what}");
        let mut pw = PartialWitness::new();
        for (i, &t) in inputs.iter().enumerate() {
            pw.set_target(t, F::from_canonical_usize(i)).unwrap();
        }
        let verified = crate::prove_circuit(data, pw)
            .and_then(|p| honest.verify(p).map_err(|e| crate::Error::InvalidProof(e.to_string())));
        assert!(verified.is_err(), "{what}: a faulty witness verified");
    }

    /// A prover who writes any one wrong value into a head or tail row (the generator's fault;
    /// the circuit is the honest one) gets no valid proof.
    #[test]
    fn a_wrong_value_in_any_kind_of_poseidon_wire_is_rejected() {
        let faults: [(&str, Option<usize>, Option<usize>); 5] = [
            ("head full-round S-box input", Some(wire_full_sbox(2, 5)), None),
            ("head partial-round S-box input", Some(wire_partial_sbox(11)), None),
            ("head output", Some(wire_output(7)), None),
            ("tail full-round S-box input", None, Some(wire_full_sbox(3, 0))),
            ("tail output", None, Some(wire_output(11))),
        ];
        let (honest, _) = narrow_permutation(PoseidonHeadGate::default(), PoseidonTailGate::default());
        for (what, head_fault, tail_fault) in faults {
            let (data, inputs) =
                narrow_permutation(PoseidonHeadGate { fault: head_fault }, PoseidonTailGate { fault: tail_fault });
            assert_faulty_permutation_is_rejected(what, &honest, &data, &inputs);
        }
    }

    /// The hasher: plonky2's hashes in narrow and wide circuits, the swap of a Merkle step
    /// included, with the narrow rows only where `PoseidonGate` does not fit.
    #[test]
    fn the_hasher_matches_plonky2_poseidon_in_narrow_and_wide_circuits() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(6);
        for (config, narrow) in [
            (CircuitConfig { zero_knowledge: false, ..segment_config(0, crate::Privacy::Private) }, true),
            (CircuitConfig::standard_recursion_config(), false),
        ] {
            let gates = assert_hasher_matches_plonky2(config, &mut rng);
            assert_eq!(gates.iter().any(|id| id == "tgrid::PoseidonHeadGate"), narrow);
        }
    }

    /// In a circuit of `config`, the hasher's sponge (19 elements) and a `permute_swapped` with a
    /// witnessed swap bit, both ways, give plonky2's hashes; returns the circuit's gate ids.
    pub(super) fn assert_hasher_matches_plonky2(config: CircuitConfig, rng: &mut impl Rng) -> Vec<String> {
        let mut b = CircuitBuilder::<F, D>::new(config);
        let message = b.add_virtual_targets(19);
        let hash = b.hash_n_to_hash_no_pad::<TgridPoseidonHash>(message.clone());
        b.register_public_inputs(&hash.elements);
        let state: [Target; SPONGE_WIDTH] = std::array::from_fn(|_| b.add_virtual_target());
        let swap = b.add_virtual_bool_target_safe();
        let out = TgridPoseidonHash::permute_swapped(PoseidonPermutation::new(state), swap, &mut b);
        b.register_public_inputs(out.as_ref());
        let data = b.build::<C>();
        for swapped in [false, true] {
            let values: Vec<F> = (0..19).map(|_| F::from_noncanonical_u64(rng.gen())).collect();
            let s = random_state(rng);
            let mut pw = PartialWitness::new();
            for (&t, &v) in message.iter().zip(&values) {
                pw.set_target(t, v).unwrap();
            }
            for (&t, &v) in state.iter().zip(&s) {
                pw.set_target(t, v).unwrap();
            }
            pw.set_bool_target(swap, swapped).unwrap();
            let proof = data.prove(pw).unwrap();
            data.verify(proof.clone()).unwrap();
            let mut expected_in = s;
            if swapped {
                for i in 0..4 {
                    expected_in.swap(i, i + 4);
                }
            }
            let mut expected = PoseidonHash::hash_no_pad(&values).elements.to_vec();
            expected.extend(F::poseidon(expected_in));
            assert_eq!(proof.public_inputs, expected, "swapped {swapped}");
        }
        data.common.gates.iter().map(|g| g.0.id()).collect()
    }
}

mod poseidon_low_degree {
    use plonky2::hash::poseidon::{Poseidon, SPONGE_WIDTH};
    use plonky2::iop::target::Target;
    use plonky2::plonk::circuit_builder::CircuitBuilder;
    use plonky2::plonk::circuit_data::CircuitData;
    use rand::SeedableRng;

    use super::poseidon::{
        assert_faulty_permutation_is_rejected, assert_hasher_matches_plonky2,
        assert_proves_poseidon_and_recursion_checks_it, random_state,
    };
    use super::*;
    use crate::gates::poseidon::{wire_input, wire_output};
    use crate::gates::poseidon_low_degree::{
        low_degree_rows, permute_low_degree_rows, row_witness, wire_full_cube, wire_full_sbox, wire_partial_cube,
        wire_partial_sbox, FULL_WIRES, PARTIAL_WIRES,
    };
    use crate::gates::{LowDegreeRow, PoseidonLowDegreeGate};
    use crate::{public_segment_fri, segment_config, Privacy};

    /// The witnesses of the five rows, each fed the previous row's outputs.
    fn rows_witness(input: [F; SPONGE_WIDTH]) -> Vec<Vec<F>> {
        let mut state = input;
        LowDegreeRow::ALL
            .iter()
            .map(|&row| {
                let w = row_witness(row, state);
                state = std::array::from_fn(|i| w[wire_output(i)]);
                w
            })
            .collect()
    }

    #[test]
    fn low_degree_rows_have_degree_three_and_their_evaluations_agree() {
        for row in LowDegreeRow::ALL {
            let gate = PoseidonLowDegreeGate::new(row);
            assert_eq!(<PoseidonLowDegreeGate as Gate<F, D>>::degree(&gate), 3);
            test_low_degree::<F, _, D>(gate);
            test_eval_fns::<F, C, _, D>(gate).unwrap();
        }
    }

    #[test]
    fn the_five_rows_compute_plonky2_poseidon() {
        assert_eq!((FULL_WIRES, PARTIAL_WIRES), (60, 67));
        let mut rng = rand::rngs::StdRng::seed_from_u64(13);
        for _ in 0..200 {
            let input = random_state(&mut rng);
            let last = rows_witness(input).pop().unwrap();
            let output: [F; SPONGE_WIDTH] = std::array::from_fn(|i| last[wire_output(i)]);
            assert_eq!(output, F::poseidon(input));
        }
    }

    /// The wire each constraint compares against, in the gate's constraint order.
    fn constraint_wires(row: LowDegreeRow) -> Vec<usize> {
        let outputs = (0..SPONGE_WIDTH).map(wire_output);
        match row {
            LowDegreeRow::Full(_) => (0..SPONGE_WIDTH)
                .map(|i| wire_full_cube(false, i))
                .chain((0..SPONGE_WIDTH).flat_map(|i| [wire_full_sbox(i), wire_full_cube(true, i)]))
                .chain(outputs)
                .collect(),
            LowDegreeRow::Partial => std::iter::once(wire_partial_cube(0))
                .chain((1..22).flat_map(|r| [wire_partial_sbox(r), wire_partial_cube(r)]))
                .chain(outputs)
                .collect(),
        }
    }

    /// On the honest witness every constraint is zero; changing any wire but an input breaks
    /// its own constraint, and changing an input breaks some constraint.
    #[test]
    fn each_low_degree_constraint_rejects_a_changed_wire() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(14);
        for (row, witness) in LowDegreeRow::ALL.into_iter().zip(rows_witness(random_state(&mut rng))) {
            let gate = PoseidonLowDegreeGate::new(row);
            let witness: Vec<FE> = witness.iter().map(|&x| <FE as FieldExtension<D>>::from_basefield(x)).collect();
            let nonzero = |wires: &[FE]| -> Vec<usize> {
                eval(&gate, wires, &[]).iter().enumerate().filter(|(_, c)| **c != FE::ZERO).map(|(i, _)| i).collect()
            };
            assert_eq!(nonzero(&witness), Vec::<usize>::new(), "{row:?}");
            let order = constraint_wires(row);
            assert_eq!(order.len(), <PoseidonLowDegreeGate as Gate<F, D>>::num_constraints(&gate), "{row:?}");
            for w in 0..witness.len() {
                let mut bad = witness.clone();
                bad[w] += FE::ONE;
                let broken = nonzero(&bad);
                assert!(!broken.is_empty(), "{row:?} wire {w}");
                match order.iter().position(|&o| o == w) {
                    Some(own) => assert!(broken.contains(&own), "{row:?} wire {w}: {broken:?}"),
                    None => assert!(w < wire_input(SPONGE_WIDTH), "{row:?} wire {w} has no constraint of its own"),
                }
            }
        }
    }

    /// A public segment's configuration (rate 1/4) that permutes `inputs` with the given rows.
    fn rate_quarter_permutation(gates: [PoseidonLowDegreeGate; 5]) -> (CircuitData<F, C, D>, [Target; SPONGE_WIDTH]) {
        let mut b = CircuitBuilder::<F, D>::new(public_segment_fri(segment_config(0, Privacy::Public)));
        let inputs: [Target; SPONGE_WIDTH] = std::array::from_fn(|_| b.add_virtual_target());
        let out = permute_low_degree_rows(&mut b, inputs, gates);
        b.register_public_inputs(&out);
        (b.build::<C>(), inputs)
    }

    #[test]
    fn a_rate_quarter_circuit_proves_the_permutation_and_a_recursive_verifier_checks_it() {
        let (data, inputs) = rate_quarter_permutation(low_degree_rows());
        assert_eq!(data.common.config.fri_config.rate_bits, 2);
        assert_proves_poseidon_and_recursion_checks_it(&data, &inputs, 15);
    }

    /// A prover who writes one wrong value into any kind of wire of any row (the generator's
    /// fault; the circuit is the honest one) gets no valid proof.
    #[test]
    fn a_wrong_value_in_any_kind_of_low_degree_wire_is_rejected() {
        let faults: [(&str, usize, usize); 8] = [
            ("first full row, first round's cube", 0, wire_full_cube(false, 3)),
            ("second full row, second round's S-box input", 1, wire_full_sbox(8)),
            ("second full row, second round's cube", 1, wire_full_cube(true, 0)),
            ("partial row, round 0's cube", 2, wire_partial_cube(0)),
            ("partial row, an S-box input", 2, wire_partial_sbox(17)),
            ("partial row, a cube", 2, wire_partial_cube(9)),
            ("partial row, an output", 2, wire_output(4)),
            ("last full row, an output", 4, wire_output(11)),
        ];
        let (honest, _) = rate_quarter_permutation(low_degree_rows());
        for (what, row, wire) in faults {
            let mut gates = low_degree_rows();
            gates[row].fault = Some(wire);
            let (data, inputs) = rate_quarter_permutation(gates);
            assert_faulty_permutation_is_rejected(what, &honest, &data, &inputs);
        }
    }

    /// The hasher takes the low-degree rows exactly where degree 7 is not allowed, with
    /// plonky2's hashes, the swap of a Merkle step included.
    #[test]
    fn the_hasher_matches_plonky2_poseidon_at_rate_one_quarter() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(16);
        let ids = assert_hasher_matches_plonky2(public_segment_fri(segment_config(0, Privacy::Public)), &mut rng);
        assert!(ids.iter().any(|id| id.starts_with("tgrid::PoseidonLowDegreeGate")), "{ids:?}");
        assert!(!ids.iter().any(|id| id == "tgrid::PoseidonHeadGate"), "{ids:?}");
    }
}
