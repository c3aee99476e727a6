//! Two private proofs of different inputs for the same model, task and provider, compared by
//! what their wire openings can show (docs/zero-knowledge.md, point 1). Whatever two real
//! traces differ in, the second trace's random rows can be shifted so that every wire opens to
//! exactly the first trace's values at ζ (in the extension) and at the queries, and the shifted
//! trace still proves: each randomness of one proof has exactly one partner randomness of the
//! other with the same openings, so the openings are identically distributed for both inputs.
//! (The commitments differ, but are salted; `Z` and the partial products are the open part of
//! the argument.)

use std::collections::BTreeSet;

use plonky2::field::extension::quadratic::QuadraticExtension;
use plonky2::field::extension::FieldExtension;
use plonky2::field::polynomial::PolynomialValues;
use plonky2::field::types::{Field, Sample};
use plonky2::iop::generator::generate_partial_witness;
use plonky2::iop::target::Target;
use plonky2::iop::witness::{PartitionWitness, Witness};
use plonky2::plonk::prover::prove_with_partition_witness;
use plonky2::util::timing::TimingTree;

use crate::circuit::{BuildOptions, SegmentCircuit};
use crate::testing::{random_input, tiny_model};
use crate::{Privacy, Salt, Segment, D, F, MASK_COLUMNS};

type FE = QuadraticExtension<F>;
const _: () = assert!(D == 2);

const TASK: [u8; 32] = [0x57; 32];
const PROVIDER: [u8; 20] = [0x24; 20];

fn parts(v: FE) -> [F; 2] {
    <FE as FieldExtension<2>>::to_basefield_array(&v)
}

fn lift(x: F) -> FE {
    <FE as FieldExtension<2>>::from_basefield(x)
}

/// What a proof opens of a wire column: its interpolant at ζ (`D` base coordinates) and at
/// each query point.
fn openings(column: &[F], zeta: FE, xs: &[F]) -> Vec<F> {
    let coeffs = PolynomialValues::new(column.to_vec()).ifft().coeffs;
    let at = |x: FE| coeffs.iter().rev().fold(FE::ZERO, |acc, &c| acc * x + lift(c));
    let mut values = parts(at(zeta)).to_vec();
    values.extend(xs.iter().map(|&x| parts(at(lift(x)))[0]));
    values
}

/// `x` with `matrix · x = target` for a square matrix of full rank, by Gaussian elimination.
fn solve(mut matrix: Vec<Vec<F>>, mut target: Vec<F>) -> Vec<F> {
    let n = target.len();
    for col in 0..n {
        let pivot = (col..n).find(|&r| matrix[r][col] != F::ZERO).expect("a matrix of full rank");
        matrix.swap(col, pivot);
        target.swap(col, pivot);
        let inverse = matrix[col][col].inverse();
        for r in (0..n).filter(|&r| r != col) {
            let factor = matrix[r][col] * inverse;
            if factor != F::ZERO {
                let pivot_row = matrix[col].clone();
                for (cell, &v) in matrix[r].iter_mut().zip(&pivot_row).skip(col) {
                    *cell -= factor * v;
                }
                let t = target[col];
                target[r] -= factor * t;
            }
        }
    }
    (0..n).map(|i| target[i] / matrix[i][i]).collect()
}

fn wire_value(witness: &PartitionWitness<'_, F>, row: usize, column: usize) -> F {
    witness.try_get_target(Target::wire(row, column)).unwrap_or(F::ZERO)
}

#[test]
fn two_inputs_open_alike_once_the_random_rows_are_matched() {
    let model = tiny_model(48);
    let segment = Segment::new(&model, 0..model.nodes.len());
    let circuit = SegmentCircuit::build(&model, segment, BuildOptions::binding(true, Privacy::Private)).unwrap();
    let (data, rows) = (&circuit.data, circuit.blinding.clone().expect("a private circuit's blinding rows"));
    let (n, num_wires) = (data.common.degree(), data.common.config.num_wires);
    let gate_wires = num_wires - MASK_COLUMNS;
    let trace = |seed: u64| {
        let x = random_input(seed, model.input_len());
        let pw = circuit.witness(&[&x], Some((&TASK, &PROVIDER)), Some(&Salt::random())).unwrap();
        generate_partial_witness(pw, &data.prover_only, &data.common).unwrap()
    };
    let (first, mut second) = (trace(1), trace(2));
    let differing = (0..n).filter(|&r| (0..gate_wires).any(|c| wire_value(&first, r, c) != wire_value(&second, r, c)));
    let random: BTreeSet<usize> = rows.regular.iter().copied().collect();
    assert!(differing.filter(|r| !random.contains(r)).count() > n / 4, "the two inputs' traces differ widely");

    // A proof's opening points: ζ in the extension, and distinct points of the LDE coset.
    let queries = data.common.fri_params.config.num_query_rounds;
    let xs = crate::zero_knowledge::tests::query_points(&data.common);
    let zeta = FE::rand();

    // The random rows' map to the openings, one column per row.
    let unit = |row: usize| (0..n).map(|r| if r == row { F::ONE } else { F::ZERO }).collect::<Vec<_>>();
    // The rows the count needs (the margin's rows are left as drawn).
    let needed = &rows.regular[..D + queries];
    let by_row: Vec<Vec<F>> = needed.iter().map(|&r| openings(&unit(r), zeta, &xs)).collect();
    let matrix: Vec<Vec<F>> = (0..by_row[0].len()).map(|i| by_row.iter().map(|col| col[i]).collect()).collect();
    assert_eq!(matrix.len(), needed.len(), "as many random rows as opened values");

    let column = |w: &PartitionWitness<'_, F>, c: usize| (0..n).map(|r| wire_value(w, r, c)).collect::<Vec<_>>();
    let mut differed = 0;
    for c in 0..gate_wires {
        let (a, b) = (openings(&column(&first, c), zeta, &xs), openings(&column(&second, c), zeta, &xs));
        differed += usize::from(a != b);
        let shift = solve(matrix.clone(), a.iter().zip(&b).map(|(x, y)| *x - *y).collect());
        for (&row, delta) in needed.iter().zip(shift) {
            let index = Target::wire(row, c).index(num_wires, n);
            let cell = &mut second.values[second.representative_map[index]];
            *cell = Some(cell.expect("a random row's wire is set") + delta);
        }
        assert_eq!(openings(&column(&second, c), zeta, &xs), a, "wire {c} opens alike");
    }
    assert_eq!(differed, gate_wires, "every wire opened differently before the shift");
    // The shifted trace is still a witness of the circuit: its proof verifies.
    let proof = prove_with_partition_witness(&data.prover_only, &data.common, second, &mut TimingTree::default());
    data.verify(proof.unwrap()).unwrap();
}
