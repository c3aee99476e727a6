//! The non-linear step of the argument for `Z` and the partial products
//! (docs/zero-knowledge.md): from the random wires of the copy-joined pairs to the row values of
//! `Z` and the partial products, then to their openings.
//!
//! On a pair `(a, b = a + 1)` the permutation's chunk products `c_1 … c_M` (ratios of the
//! pair's random routed wires) give the row values `Z(b) = Z(a)·P_M`, `pp_m(a) = Z(a)·P_m` and
//! `pp_m(b) = Z(a)·P_M / P_m`, with `P_m = c_1 ⋯ c_m`, and `Z(b + 1) = Z(a)`. The tests
//! rebuild `Z` and the partial products from a real trace with plonky2's formula, hold them
//! equal to what a real proof opens at ζ and gζ, check the pair structure on the real rows,
//! and then measure ranks: the wires to `P_1 … P_M` per pair (full: the randomness reaches
//! every chunk through the real copy constraints), and the `P`s to the openings at ζ, gζ and
//! the queries (full for `Z` and for every partial product), so the openings have as many
//! free values as they reveal. Rank is the local (Jacobian) form of the claim; uniformity of
//! the non-linear map itself is argued in the doc.

use plonky2::field::extension::quadratic::QuadraticExtension;
use plonky2::field::extension::FieldExtension;
use plonky2::field::polynomial::PolynomialValues;
use plonky2::field::types::{Field, Sample};
use plonky2::iop::generator::generate_partial_witness;
use plonky2::iop::target::Target;
use plonky2::iop::witness::{PartitionWitness, Witness};
use plonky2::plonk::circuit_data::CircuitData;
use plonky2::plonk::prover::prove_with_partition_witness;
use plonky2::util::timing::TimingTree;

use crate::zero_knowledge::tests::{circuit, query_points, rank, witness};
use crate::zero_knowledge::BlindingRows;
use crate::{C, D, F};

type FE = QuadraticExtension<F>;
const _: () = assert!(D == 2);

fn lift(x: F) -> FE {
    <FE as FieldExtension<2>>::from_basefield(x)
}

fn parts(v: FE) -> [F; 2] {
    <FE as FieldExtension<2>>::to_basefield_array(&v)
}

fn eval(coeffs: &[F], x: FE) -> FE {
    coeffs.iter().rev().fold(FE::ZERO, |acc, &c| acc * x + lift(c))
}

fn interpolate(values: &[F]) -> Vec<F> {
    PolynomialValues::new(values.to_vec()).ifft().coeffs
}

/// `Z` and the partial products of one challenge `(β, γ)`, row by row, by plonky2 1.1's formula
/// (`wires_permutation_partial_products_and_zs`): per row, the routed wires' ratios
/// `(w + β·k_j·x + γ) / (w + β·σ_j + γ)` in chunks of the quotient degree, `pp_m` the running
/// product from `Z(x)` through chunk `m`, and the last one `Z(g·x)`.
struct Permutation {
    z: Vec<F>,
    partial_products: Vec<Vec<F>>,
}

fn permutation(data: &CircuitData<F, C, D>, w: &PartitionWitness<'_, F>, beta: F, gamma: F) -> Permutation {
    let common = &data.common;
    let n = common.degree();
    let chunk = common.quotient_degree_factor;
    let mut z = vec![F::ONE; n + 1];
    let mut partial_products = vec![vec![F::ZERO; n]; common.num_partial_products];
    for row in 0..n {
        let x = data.prover_only.subgroup[row];
        let ratios: Vec<F> = (0..common.config.num_routed_wires)
            .map(|j| {
                let v = w.try_get_target(Target::wire(row, j)).unwrap_or(F::ZERO);
                (v + beta * common.k_is[j] * x + gamma) / (v + beta * data.prover_only.sigmas[row][j] + gamma)
            })
            .collect();
        let mut acc = z[row];
        for (m, c) in ratios.chunks(chunk).enumerate() {
            acc *= c.iter().copied().product::<F>();
            if let Some(pp) = partial_products.get_mut(m) {
                pp[row] = acc;
            }
        }
        z[row + 1] = acc;
    }
    assert_eq!(z.pop(), Some(F::ONE), "the running product closes");
    Permutation { z, partial_products }
}

/// The test circuit (leaked: the trace borrows it), its blinding rows, `Z` and the partial
/// products of each challenge of a real proof, rebuilt from its trace and checked against what
/// the proof opens at ζ and gζ, and the trace.
fn rebuilt(
    join_pairs: bool,
) -> (&'static CircuitData<F, C, D>, BlindingRows, Vec<Permutation>, PartitionWitness<'static, F>) {
    let (data, x, rows) = circuit(join_pairs);
    let data: &'static CircuitData<F, C, D> = Box::leak(Box::new(data));
    let trace = generate_partial_witness(witness(x), &data.prover_only, &data.common).unwrap();
    let proof =
        prove_with_partition_witness(&data.prover_only, &data.common, trace.clone(), &mut TimingTree::default())
            .unwrap();
    let challenges =
        proof.get_challenges(proof.get_public_inputs_hash(), &data.verifier_only.circuit_digest, &data.common).unwrap();
    let zeta = challenges.plonk_zeta;
    let g = lift(F::primitive_root_of_unity(data.common.degree_bits()));
    let openings = &proof.proof.openings;
    let num_pp = data.common.num_partial_products;
    let permutations: Vec<Permutation> = (0..data.common.config.num_challenges)
        .map(|i| {
            let p = permutation(data, &trace, challenges.plonk_betas[i], challenges.plonk_gammas[i]);
            let z = interpolate(&p.z);
            assert_eq!(eval(&z, zeta), openings.plonk_zs[i], "Z at ζ, challenge {i}");
            assert_eq!(eval(&z, g * zeta), openings.plonk_zs_next[i], "Z at gζ, challenge {i}");
            for (m, pp) in p.partial_products.iter().enumerate() {
                assert_eq!(eval(&interpolate(pp), zeta), openings.partial_products[i * num_pp + m], "pp {m} at ζ");
            }
            p
        })
        .collect();
    (data, rows, permutations, trace)
}

/// `Z` and the partial products rebuilt from a real trace are the ones the proof opens, and on
/// every pair they have the shape the argument uses.
#[test]
fn z_and_partial_products_are_plonky2s_and_pairs_shape_them() {
    let (_, rows, permutations, _) = rebuilt(true);
    for p in &permutations {
        for &a in &rows.pairs {
            let (z_a, z_b) = (p.z[a], p.z[a + 1]);
            assert_eq!(p.z[a + 2], z_a, "Z returns after pair {a}");
            for pp in &p.partial_products {
                assert_eq!(pp[a] * pp[a + 1], z_a * z_b, "pp(a)·pp(b) = Z(a)·Z(b) on pair {a}");
            }
        }
    }
}

/// Per pair, the map from its routed wires to `P_1 … P_M` has full rank `M` through the real
/// copy constraints (σ from the circuit); with plonky2's own layout, pairs without copy
/// constraints, every ratio is 1 and the rank is 0.
#[test]
fn every_pair_reaches_every_chunk_through_its_copy_constraints() {
    let (beta, gamma) = (F::from_canonical_u64(0x1234_5678_9abc), F::from_canonical_u64(0x0fed_cba9_8765));
    let (data, rows, _, trace) = rebuilt(true);
    let chunks = data.common.num_partial_products + 1;
    let joined = wires_to_products_rank(data, &rows, &trace, beta, gamma);
    assert!(joined.iter().all(|&r| r == chunks), "every pair reaches all {chunks} chunks: {joined:?}");
    let (data, rows, _, trace) = rebuilt(false);
    let unjoined = wires_to_products_rank(data, &rows, &trace, beta, gamma);
    assert!(unjoined.iter().all(|&r| r == 0), "unjoined pairs give no freedom: {unjoined:?}");
}

/// Per pair, the rank of `∂(log P_1, …, log P_M) / ∂(w_0, …)` at the pair's first row: `log P_m`
/// is the sum of `log r_j` over the chunks up to `m`, and `∂ log r_j / ∂w_j = 1/num_j − 1/den_j`.
fn wires_to_products_rank(
    data: &CircuitData<F, C, D>,
    rows: &BlindingRows,
    trace: &PartitionWitness<'_, F>,
    beta: F,
    gamma: F,
) -> Vec<usize> {
    let common = &data.common;
    let routed = common.config.num_routed_wires;
    let chunk = common.quotient_degree_factor;
    rows.pairs
        .iter()
        .map(|&a| {
            let x = data.prover_only.subgroup[a];
            let d: Vec<F> = (0..routed)
                .map(|j| {
                    let v = trace.try_get_target(Target::wire(a, j)).unwrap_or(F::ZERO);
                    let num = v + beta * common.k_is[j] * x + gamma;
                    let den = v + beta * data.prover_only.sigmas[a][j] + gamma;
                    num.inverse() - den.inverse()
                })
                .collect();
            let matrix: Vec<Vec<F>> = (0..routed.div_ceil(chunk))
                .map(|m| (0..routed).map(|j| if j / chunk <= m { d[j] } else { F::ZERO }).collect())
                .collect();
            rank(matrix)
        })
        .collect()
}

/// The pairs' free values `P` to the openings, at the real trace's values: `Z`'s openings at ζ,
/// gζ, the queries `x` and their `g·x` in the `P_M`s (rank `2D + 2q`, one pair fewer short),
/// and each partial product's at ζ and the queries in its own `P_m`s with the `P_M`s fixed
/// (rank `D + q`), for both challenges. The Jacobian is block-triangular in this order, so
/// these ranks add up to full rank over everything the openings reveal.
#[test]
fn the_pairs_free_values_span_every_opening() {
    let (data, rows, permutations, _) = rebuilt(true);
    let common = &data.common;
    let n = common.degree();
    let queries = common.fri_params.config.num_query_rounds;
    let g = F::primitive_root_of_unity(common.degree_bits());
    let xs = query_points(common);
    let zeta = FE::rand();
    // The Lagrange basis polynomial of `row` at `point`: `ω^row·(X^n − 1) / (n·(X − ω^row))`.
    let lagrange = |row: usize, point: FE| {
        let w = lift(g.exp_u64(row as u64));
        w * (point.exp_u64(n as u64) - FE::ONE) / (lift(F::from_canonical_usize(n)) * (point - w))
    };
    let opened = |row: usize, ext: &[FE], base: &[F]| -> Vec<F> {
        let mut v: Vec<F> = ext.iter().flat_map(|&p| parts(lagrange(row, p))).collect();
        v.extend(base.iter().map(|&x| parts(lagrange(row, lift(x)))[0]));
        v
    };
    let z_points: (Vec<FE>, Vec<F>) = (vec![zeta, lift(g) * zeta], xs.iter().flat_map(|&x| [x, g * x]).collect());
    let z_need = 2 * D + 2 * queries;
    for p in &permutations {
        // Z: ∂Z(b)/∂P_M = Z(a), then the Lagrange map of the rows b.
        let z_block: Vec<Vec<F>> = rows
            .pairs
            .iter()
            .map(|&a| opened(a + 1, &z_points.0, &z_points.1).into_iter().map(|v| v * p.z[a]).collect())
            .collect();
        assert_eq!(rank(z_block.clone()), z_need, "Z's openings");
        assert_eq!(rank(z_block[..z_need - 1].to_vec()), z_need - 1, "one pair fewer than the count");
        // pp_m: ∂pp_m(a)/∂P_m = Z(a), ∂pp_m(b)/∂P_m = −Z(a)·P_M/P_m².
        for (m, pp) in p.partial_products.iter().enumerate() {
            let block: Vec<Vec<F>> = rows
                .pairs
                .iter()
                .map(|&a| {
                    let z_a = p.z[a];
                    let (p_m, p_last) = (pp[a] / z_a, p.z[a + 1] / z_a);
                    let at_b = -z_a * p_last / (p_m * p_m);
                    let (la, lb) = (opened(a, &[zeta], &xs), opened(a + 1, &[zeta], &xs));
                    la.iter().zip(&lb).map(|(&u, &v)| u * z_a + v * at_b).collect()
                })
                .collect();
            assert_eq!(rank(block), D + queries, "partial product {m}'s openings");
        }
    }
}
