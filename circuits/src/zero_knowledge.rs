//! Zero knowledge for private task proofs, laid out by our circuits instead of plonky2's
//! `zero_knowledge` build.
//!
//! plonky2 1.1 blinds a zero-knowledge circuit with random rows counted as if every value a proof
//! reveals were a separate opening of every polynomial, FRI's folded layers and final polynomial
//! included (3,286 rows at 28 queries, so even the digits cnn's 738 rows prove at 2^12). Yet
//! its blinding of the permutation argument adds no randomness: its pairs of random rows are
//! copied by a witness generator but not joined by a copy constraint, so every routed wire's
//! factor in the running product is 1 and `Z` and the partial products stay functions of the
//! secret wires (plonky2 issue #1605 and Haböck's "A note on adding zero-knowledge to STARKs",
//! eprint 2024/1037, list what its treatment lacks). Here instead:
//!
//! - **Masking columns** ([`MASK_COLUMNS`] = `D + 1` wire columns random on every row, read only
//!   by the quotient-masking row): FRI's batch polynomial is a random combination of every
//!   committed polynomial, these included, so it is a uniformly random polynomial apart from
//!   the values the verifier computes from the openings, and the folded layers and final
//!   polynomial reveal nothing (the masking polynomial of the batching step in Haböck's note;
//!   `D` columns because the batch is over the degree-`D` extension, one more as the quotient
//!   mask's multiplier).
//! - **Per-polynomial blinding** counted by what each polynomial itself reveals: a wire or
//!   partial-product polynomial is opened at ζ (`D` base values) and at every query, so
//!   `D + queries` rows random in every wire; `Z` is opened at ζ, `gζ` and every query, and the
//!   quotient's value at a query `x` (which the verifier can sum from its chunks) is a function
//!   of `Z(g·x)`, so `2D + 2·queries` pairs of rows random in every routed wire *and* joined by
//!   copy constraints, which puts a random factor into each `Z` at every pair.
//! - **Quotient masking** ([`crate::gates::QuotientMaskGate`], one row): constraints of the
//!   circuit's largest degree, `v^(k−1)·m_j = image_j` over the masking columns, add to each
//!   quotient a polynomial spread over all its chunks and uniformly random at the opened points
//!   but for the one combination per point the verifier computes anyway (Haböck's second point,
//!   reached with plonky2's unchanged prover and verifier).
//! - Merkle leaves salted as plonky2 salts them: the circuit is built without plonky2's blinding
//!   and then marked zero-knowledge ([`mark_zero_knowledge`]), which is all plonky2's prover and
//!   verifier read (`config.zero_knowledge`, `fri_params.hiding`; the flag is observed by the
//!   Fiat-Shamir transcript).
//!
//! plonky2's lookup argument is kept out: its prover computes the lookup polynomials as
//! functions of the looked-up values and leaves them zero on every other row, with no place for
//! randomness a circuit could reach. A private circuit checks bytes with
//! [`crate::gates::ByteRangeGate`] and reads tables with [`crate::gates::ByteTableGate`], whose
//! limbs, bits and folds are ordinary (blinded) wires, and [`mark_zero_knowledge`] refuses any
//! circuit with a lookup table.

use std::ops::Range;

use plonky2::field::types::Sample;
use plonky2::gates::gate::GateRef;
use plonky2::gates::noop::NoopGate;
use plonky2::iop::generator::{GeneratedValues, SimpleGenerator};
use plonky2::iop::target::Target;
use plonky2::iop::witness::{PartitionWitness, Witness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitConfig, CircuitData, CommonCircuitData};
use plonky2::util::serialization::{Buffer, IoResult, Read, Write};

use crate::error::{Error, Result};
use crate::gates::QuotientMaskGate;
use crate::{C, D, F};

/// The witness generators of the blinding, by id (for the task circuit cache).
pub(crate) const GENERATORS: &[(&str, crate::gates::ReadGenerator)] = &[
    ("tgrid::RandomRows", crate::gates::reader::<RandomRows>),
    ("tgrid::MaskColumns", crate::gates::reader::<MaskColumns>),
];

pub use crate::gates::MASK_COLUMNS;

/// `config` for a private circuit built by [`blind`]: plonky2's blinding off (this module adds
/// its own), [`MASK_COLUMNS`] more wires.
pub(crate) fn private_config(mut config: CircuitConfig) -> CircuitConfig {
    config.zero_knowledge = false;
    config.num_wires += MASK_COLUMNS;
    config
}

/// Points of the extension field at which a proof opens each family of committed polynomials,
/// besides the value of each at every FRI query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OpenedPoints {
    /// Wire polynomials.
    pub(crate) wires: usize,
    /// Partial products of the permutation argument.
    pub(crate) partial_products: usize,
    /// The permutation argument's running products `Z`.
    pub(crate) zs: usize,
}

/// What plonky2 1.1 opens: every polynomial at ζ, `Z` also at gζ ([`opened_points`] reads it
/// off a proof, and a test holds the two equal). The blinding below is counted from it.
pub(crate) const OPENED_POINTS: OpenedPoints = OpenedPoints { wires: 1, partial_products: 1, zs: 2 };

/// The points at which `openings` opens each family. The destructuring names every field of
/// plonky2's `OpeningSet`, so a plonky2 that opens anything more does not compile until this
/// count, and with it the blinding, is revisited.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn opened_points(
    openings: &plonky2::plonk::proof::OpeningSet<F, D>,
    common: &CommonCircuitData<F, D>,
) -> OpenedPoints {
    let plonky2::plonk::proof::OpeningSet {
        constants: _,
        plonk_sigmas: _,
        wires,
        plonk_zs,
        plonk_zs_next,
        partial_products,
        quotient_polys: _,
        lookup_zs,
        lookup_zs_next,
    } = openings;
    // A private circuit has no lookups (`mark_zero_knowledge`): their openings would need
    // blinding of their own.
    assert!(lookup_zs.is_empty() && lookup_zs_next.is_empty(), "lookup polynomials in a private proof");
    let challenges = common.config.num_challenges;
    OpenedPoints {
        wires: wires.len() / common.config.num_wires,
        partial_products: partial_products.len() / (challenges * common.num_partial_products),
        zs: (plonk_zs.len() + plonk_zs_next.len()) / challenges,
    }
}

/// Rows of random wires each wire polynomial needs: `D` base values per opened point and one per
/// FRI query. (Partial products are opened as often, but these rows add nothing to them: their
/// factor in the permutation product is 1; the pairs randomize them.)
pub(crate) fn regular_blinding_rows(queries: usize) -> usize {
    D * OPENED_POINTS.wires.max(OPENED_POINTS.partial_products) + queries
}

/// Pairs of copy-joined random rows each `Z` needs: it is opened at ζ, gζ and every query `x`,
/// and the quotient at `x` reveals a value of `Z(g·x)`.
pub(crate) fn permutation_blinding_pairs(queries: usize) -> usize {
    D * OPENED_POINTS.zs + 2 * queries
}

/// Random rows beyond [`regular_blinding_rows`]: one more opened point of the extension field,
/// so that an opening the count above missed would still be hidden. Checked with the count.
pub(crate) const SPARE_ROWS: usize = D;

/// Pairs beyond [`permutation_blinding_pairs`], for the same reason as [`SPARE_ROWS`].
pub(crate) const SPARE_PAIRS: usize = D;

/// What a proof reveals of FRI's batch polynomial beyond what the verifier computes, against
/// what the masking columns can hide, in values of the extension field. `revealed` is an upper
/// bound (it ignores that a folded layer has a lower degree); `rank_tests` checks the
/// exact span on the map itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MaskFreedom {
    /// The masks' degrees of freedom in the batch polynomial: one value per row (`D` masks of
    /// `n` base values each, under `D` independent powers of α).
    pub(crate) available: usize,
    /// An upper bound on the values revealed: the masks at ζ (`D`); per query, the masks at `x`
    /// and the new values of every FRI layer's coset (`1 + Σ (arity − 1)`); the final
    /// polynomial's coefficients.
    pub(crate) revealed: usize,
}

/// [`MaskFreedom`] of a private circuit of `2^degree_bits` rows proven with `fri`.
pub(crate) fn mask_freedom(fri: &plonky2::fri::FriParams) -> MaskFreedom {
    let per_query = 1 + fri.reduction_arity_bits.iter().map(|&bits| (1 << bits) - 1).sum::<usize>();
    MaskFreedom {
        available: 1 << fri.degree_bits,
        revealed: D + fri.config.num_query_rounds * per_query + fri.final_poly_len(),
    }
}

/// The fewest rows (a power of two) whose masking columns hide what proofs under `config` reveal.
pub(crate) fn minimum_private_rows(config: &CircuitConfig) -> usize {
    (1..usize::BITS as usize)
        .map(|bits| config.fri_config.fri_params(bits, true))
        .find(|fri| {
            let freedom = mask_freedom(fri);
            freedom.revealed <= freedom.available
        })
        .map_or(usize::MAX, |fri| 1 << fri.degree_bits)
}

/// Adds the blinding rows and the masking columns to a circuit whose gates are all placed (the
/// rows plonky2's `build` adds later, its public-input and lookup rows, get masking values too).
/// `builder` must have been made with [`private_config`]; the rows returned go to
/// [`mark_zero_knowledge`], which checks them against the built circuit.
pub(crate) fn blind(builder: &mut CircuitBuilder<F, D>) -> BlindingRows {
    blind_with(builder, true, true)
}

/// The rows [`blind`] added.
#[derive(Debug, Clone)]
pub(crate) struct BlindingRows {
    /// Rows random in every wire a gate may use.
    pub(crate) regular: Vec<usize>,
    /// First rows of the copy-joined pairs (the second row of each follows it).
    pub(crate) pairs: Vec<usize>,
    /// The [`QuotientMaskGate`]'s row (read by the tests, which check what fills it).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) quotient_mask: usize,
}

/// [`blind`]; only tests leave the pairs unjoined (`join_pairs = false`, plonky2's layout, to
/// give a malicious prover the partition of a circuit without the copies) or the circuit
/// smaller than [`minimum_private_rows`] (`pad = false`).
fn blind_with(builder: &mut CircuitBuilder<F, D>, join_pairs: bool, pad: bool) -> BlindingRows {
    let num_wires = builder.config.num_wires;
    let routed = builder.config.num_routed_wires;
    let gate_wires = num_wires - MASK_COLUMNS;

    let queries = builder.config.fri_config.num_query_rounds;
    let regular: Vec<usize> =
        (0..regular_blinding_rows(queries) + SPARE_ROWS).map(|_| builder.add_gate(NoopGate, vec![])).collect();
    let mut pairs = Vec::new();
    for _ in 0..permutation_blinding_pairs(queries) + SPARE_PAIRS {
        let (a, b) = (builder.add_gate(NoopGate, vec![]), builder.add_gate(NoopGate, vec![]));
        for column in (0..routed).filter(|_| join_pairs) {
            builder.connect(Target::wire(a, column), Target::wire(b, column));
        }
        pairs.push(a);
    }
    let mask_gate = QuotientMaskGate::new(num_wires, MASK_COLUMNS - 1, builder.config.max_quotient_degree_factor);
    let quotient_mask = builder.add_gate(mask_gate, vec![]);
    // A circuit too small for its masks to hide what FRI reveals grows to the smallest size
    // that does: more than half of it in gates, so `build` pads it to at least that.
    let minimum = minimum_private_rows(&builder.config);
    while pad && builder.num_gates() <= minimum / 2 {
        builder.add_gate(NoopGate, vec![]);
    }
    // Registered before the rows' generator, whose first value it waits for: by then every
    // generator without inputs has run, plonky2's random public-input wires included, and the
    // masking generator leaves the cells they set alone.
    builder.add_simple_generator(MaskColumns { columns: gate_wires..num_wires, after: Target::wire(regular[0], 0) });
    builder.add_simple_generator(RandomRows { rows: regular.clone(), columns: 0..gate_wires });
    builder.add_simple_generator(RandomRows { rows: pairs.clone(), columns: 0..routed });
    BlindingRows { regular, pairs, quotient_mask }
}

/// Marks a circuit built with [`private_config`] and [`blind`] zero-knowledge: its prover salts
/// every Merkle leaf of the witness, `Z` and quotient commitments, and its verifier expects it.
/// Refuses a circuit one of whose gates, other than the quotient-masking row, reads a masking
/// column (some of plonky2's gates size themselves by the configured width; none of a
/// segment's does), that has no quotient-masking row, that uses plonky2's lookup argument, or
/// whose randomness falls short of what its proofs open ([`check_blinding`]).
pub(crate) fn mark_zero_knowledge(data: &mut CircuitData<F, C, D>, rows: &BlindingRows) -> Result<()> {
    let gate_wires = data.common.config.num_wires - MASK_COLUMNS;
    let mask_gate = data.common.gates.iter().find_map(|g| g.0.as_any().downcast_ref::<QuotientMaskGate>().copied());
    let Some(mask_gate) = mask_gate else {
        return Err(Error::InvalidModel("a private circuit without its quotient-masking row".into()));
    };
    let is_mask = |g: &GateRef<F, D>| g.0.as_any().downcast_ref::<QuotientMaskGate>().is_some();
    if let Some(gate) = data.common.gates.iter().find(|g| !is_mask(g) && g.0.num_wires() > gate_wires) {
        return Err(Error::InvalidModel(format!("gate {} reads the masking columns", gate.0.id())));
    }
    if !data.common.luts.is_empty() {
        return Err(Error::InvalidModel(
            "a private circuit with lookups: plonky2's lookup polynomials cannot be blinded".into(),
        ));
    }
    check_blinding(&data.common, rows, &mask_gate)?;
    data.common.config.zero_knowledge = true;
    data.common.fri_params.hiding = true;
    Ok(())
}

/// The randomness a private circuit needs, counted from its built configuration (FRI queries,
/// challenges, folding arities, size) rather than assumed: the blinding rows against
/// [`OPENED_POINTS`] and the queries, the masks against the quotients and FRI's extension
/// field, and the circuit's size against what FRI's layers reveal ([`mask_freedom`]). Rows and
/// pairs must also leave their margins ([`SPARE_ROWS`], [`SPARE_PAIRS`]); the masks are a
/// structural count with none (docs/zero-knowledge.md). More queries or challenges than the
/// blinding was built for refuse here, naming the shortfall.
fn check_blinding(common: &CommonCircuitData<F, D>, rows: &BlindingRows, mask_gate: &QuotientMaskGate) -> Result<()> {
    let queries = common.fri_params.config.num_query_rounds;
    let short = |what: &str, have: usize, need: usize, margin: usize| {
        let margin = if margin > 0 { format!(", {margin} of them a margin") } else { String::new() };
        Error::InvalidModel(format!(
            "a private circuit with {have} {what} where its proofs need {need} ({queries} FRI queries, {} \
             challenges{margin})",
            common.config.num_challenges
        ))
    };
    let need = regular_blinding_rows(queries) + SPARE_ROWS;
    if rows.regular.len() < need {
        return Err(short("random rows", rows.regular.len(), need, SPARE_ROWS));
    }
    let need = permutation_blinding_pairs(queries) + SPARE_PAIRS;
    if rows.pairs.len() < need {
        return Err(short("copy-joined random pairs", rows.pairs.len(), need, SPARE_PAIRS));
    }
    // Each challenge's quotient takes the masks under its own powers of α: independent masks
    // need one per quotient; FRI's batch over the degree-`D` extension needs `D`.
    let need = common.config.num_challenges.max(D);
    if mask_gate.masks < need {
        return Err(short("quotient masks", mask_gate.masks, need, 0));
    }
    let freedom = mask_freedom(&common.fri_params);
    if freedom.revealed > freedom.available {
        return Err(Error::InvalidModel(format!(
            "a private circuit of {} rows, whose masking columns hide {} values of FRI's batch polynomial where its \
             proofs reveal up to {} ({queries} FRI queries): it needs {} rows",
            freedom.available,
            freedom.available,
            freedom.revealed,
            minimum_private_rows(&common.config)
        )));
    }
    Ok(())
}

/// Random values in `columns` of every row of `rows`.
#[derive(Debug, Clone)]
struct RandomRows {
    rows: Vec<usize>,
    columns: Range<usize>,
}

impl SimpleGenerator<F, D> for RandomRows {
    fn id(&self) -> String {
        "tgrid::RandomRows".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        Vec::new()
    }

    fn run_once(&self, _witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        for &row in &self.rows {
            for column in self.columns.clone() {
                out.set_target(Target::wire(row, column), F::rand())?;
            }
        }
        Ok(())
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_usize_vec(&self.rows)?;
        dst.write_usize(self.columns.start)?;
        dst.write_usize(self.columns.end)
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        let rows = src.read_usize_vec()?;
        let columns = src.read_usize()?..src.read_usize()?;
        Ok(Self { rows, columns })
    }
}

/// Random values in `columns` on every row of the padded circuit, except cells already set.
#[derive(Debug, Clone)]
struct MaskColumns {
    columns: Range<usize>,
    after: Target,
}

impl SimpleGenerator<F, D> for MaskColumns {
    fn id(&self) -> String {
        "tgrid::MaskColumns".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        vec![self.after]
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        for row in 0..witness.degree {
            for column in self.columns.clone() {
                let cell = Target::wire(row, column);
                if witness.try_get_target(cell).is_none() {
                    out.set_target(cell, F::rand())?;
                }
            }
        }
        Ok(())
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_usize(self.columns.start)?;
        dst.write_usize(self.columns.end)?;
        dst.write_target(self.after)
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        let columns = src.read_usize()?..src.read_usize()?;
        Ok(Self { columns, after: src.read_target()? })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use plonky2::field::polynomial::{PolynomialCoeffs, PolynomialValues};
    use plonky2::field::types::Field;
    use plonky2::iop::generator::generate_partial_witness;
    use plonky2::iop::witness::PartialWitness;
    use plonky2::plonk::prover::prove_with_partition_witness;
    use plonky2::util::timing::TimingTree;

    use super::*;
    use crate::{public_segment_fri, segment_config, Privacy};

    /// `common`'s number of FRI queries, drawn at random on its low-degree-extension coset as a
    /// proof draws them, with every `x` and `g·x` distinct (a proof whose points meet reveals
    /// less, so the rank tests take the worst case).
    pub(crate) fn query_points(common: &CommonCircuitData<F, D>) -> Vec<F> {
        use plonky2::field::types::PrimeField64;
        let g = F::primitive_root_of_unity(common.degree_bits());
        let omega = F::primitive_root_of_unity(common.fri_params.lde_bits());
        let lde = common.fri_params.lde_size() as u64;
        let mut seen = std::collections::BTreeSet::new();
        let mut xs = Vec::new();
        while xs.len() < common.fri_params.config.num_query_rounds {
            let x = F::coset_shift() * omega.exp_u64(rand::random::<u64>() % lde);
            let (a, b) = (x.to_canonical_u64(), (g * x).to_canonical_u64());
            if !seen.contains(&a) && !seen.contains(&b) {
                seen.extend([a, b]);
                xs.push(x);
            }
        }
        xs
    }

    /// A small private circuit: `y = x·x + 3`, `y` public, its gates blinded by [`blind_with`].
    pub(crate) fn circuit(join_pairs: bool) -> (CircuitData<F, C, D>, Target, BlindingRows) {
        let mut b =
            CircuitBuilder::<F, D>::new(private_config(public_segment_fri(segment_config(0, Privacy::Private))));
        let x = b.add_virtual_target();
        let three = b.constant(F::from_canonical_u64(3));
        let y = b.mul_add(x, x, three);
        b.register_public_input(y);
        let rows = blind_with(&mut b, join_pairs, true);
        let mut data = b.build::<C>();
        mark_zero_knowledge(&mut data, &rows).unwrap();
        (data, x, rows)
    }

    pub(crate) fn witness(x: Target) -> PartialWitness<F> {
        let mut pw = PartialWitness::new();
        pw.set_target(x, F::from_canonical_u64(5)).unwrap();
        pw
    }

    /// The wire columns of one witness generation, `[column][row]`.
    fn wires(data: &CircuitData<F, C, D>, x: Target) -> Vec<Vec<F>> {
        let w = generate_partial_witness(witness(x), &data.prover_only, &data.common).unwrap();
        (0..w.num_wires)
            .map(|c| (0..w.degree).map(|r| w.try_get_target(Target::wire(r, c)).unwrap_or(F::ZERO)).collect())
            .collect()
    }

    #[test]
    fn blinding_randomizes_every_column_and_joins_its_pairs() {
        let (data, x, rows) = circuit(true);
        let config = &data.common.config;
        assert_eq!(rows.regular.len(), D + config.fri_config.num_query_rounds + SPARE_ROWS);
        assert_eq!(rows.pairs.len(), 2 * D + 2 * config.fri_config.num_query_rounds + SPARE_PAIRS);
        let (first, second) = (wires(&data, x), wires(&data, x));
        let degree = data.common.degree();
        // The masking columns: every row of the padded circuit, fresh in each generation.
        for column in config.num_wires - MASK_COLUMNS..config.num_wires {
            assert!((0..degree).all(|row| first[column][row] != second[column][row]), "column {column}");
        }
        // Regular rows: every wire a gate may use is fresh.
        for &row in &rows.regular {
            assert!((0..config.num_wires).all(|c| first[c][row] != second[c][row]), "row {row}");
        }
        // Pairs: fresh routed values, equal within the pair.
        for &row in &rows.pairs {
            for c in 0..config.num_routed_wires {
                assert_ne!(first[c][row], second[c][row]);
                assert_eq!(first[c][row], first[c][row + 1]);
            }
        }
        // The quotient-masking row's images follow its masking cells, fresh in each generation.
        let exponent = data.common.quotient_degree_factor as u64 - 1;
        let r = rows.quotient_mask;
        for (j, column) in (config.num_wires - MASK_COLUMNS..config.num_wires - 1).enumerate() {
            for w in [&first, &second] {
                assert_eq!(w[j][r], w[column][r] * w[config.num_wires - 1][r].exp_u64(exponent));
            }
            assert_ne!(first[j][r], second[j][r]);
        }
        // Both generations prove, and the proof's leaves are salted.
        for _ in 0..2 {
            let proof = crate::prove_circuit(&data, witness(x)).unwrap();
            let leaf = &proof.proof.opening_proof.query_round_proofs[0].initial_trees_proof.evals_proofs[1].0;
            assert_eq!(leaf.len(), config.num_wires + plonky2::fri::oracle::SALT_SIZE);
            assert_eq!(proof.public_inputs, vec![F::from_canonical_u64(28)]);
            data.verify(proof).unwrap();
        }
    }

    /// The pairs' copy constraints are in the committed permutation: a prover whose pair rows
    /// differ (the partition of a build without the copies, plonky2's own layout) is rejected
    /// by the honest verifier.
    #[test]
    fn pair_rows_that_differ_are_rejected_by_the_verifier() {
        let (mut honest, _, _) = circuit(true);
        let (cut, x, rows) = circuit(false);
        let unjoined = wires(&cut, x);
        assert!(rows.pairs.iter().all(|&r| unjoined[0][r] != unjoined[0][r + 1]), "the cut build leaves pairs apart");
        crate::testing::cut_copy_constraints(&mut honest, cut);
        let w = generate_partial_witness(witness(x), &honest.prover_only, &honest.common).unwrap();
        let proof =
            prove_with_partition_witness::<F, C, D>(&honest.prover_only, &honest.common, w, &mut TimingTree::default());
        let proof = proof.expect("the malicious prover proves");
        assert!(honest.verify(proof).is_err(), "a proof with unjoined pairs verified");
    }

    /// A quotient-masking row whose image is not `c^e·mask` gives a proof the honest verifier
    /// rejects: the constraint is checked by the verifier, not only satisfied by the generator.
    #[test]
    fn a_wrong_quotient_mask_image_is_rejected_by_the_verifier() {
        for faulty in [false, true] {
            let (mut data, x, rows) = circuit(true);
            let k = data.common.quotient_degree_factor;
            let gate = QuotientMaskGate::new(data.common.config.num_wires, MASK_COLUMNS - 1, k);
            let generator = crate::gates::QuotientMaskGenerator { gate, row: rows.quotient_mask, faulty };
            let slot = data.prover_only.generators.iter_mut().find(|g| g.0.id() == "tgrid::QuotientMaskGenerator");
            *slot.expect("the row has a generator") =
                plonky2::iop::generator::WitnessGeneratorRef::new(generator.adapter());
            let w = generate_partial_witness(witness(x), &data.prover_only, &data.common).unwrap();
            let proof =
                prove_with_partition_witness::<F, C, D>(&data.prover_only, &data.common, w, &mut TimingTree::default());
            let verdict = data.verify(proof.expect("the prover proves"));
            assert_eq!(verdict.is_ok(), !faulty, "faulty: {faulty}");
        }
    }

    /// The quotient-masking row is alone in its selector group, so its constraint has the
    /// circuit's largest degree `k + 1` and reaches every chunk; a circuit without it is refused.
    #[test]
    fn the_quotient_mask_has_the_largest_degree_and_is_required() {
        let (data, _, _) = circuit(true);
        let k = data.common.quotient_degree_factor;
        let gate = data.common.gates.iter().find(|g| g.0.id().starts_with("QuotientMaskGate")).unwrap();
        assert_eq!(gate.0.degree(), k);
        assert!(data.common.selectors_info.num_selectors() > 1);
        assert!(mask_selector(&data).is_some(), "the row has a selector of its own");

        let mut b =
            CircuitBuilder::<F, D>::new(private_config(public_segment_fri(segment_config(0, Privacy::Private))));
        let x = b.add_virtual_target();
        b.register_public_input(x);
        let mut unmasked = b.build::<C>();
        let no_rows = BlindingRows { regular: Vec::new(), pairs: Vec::new(), quotient_mask: 0 };
        assert!(mark_zero_knowledge(&mut unmasked, &no_rows).is_err());
    }

    /// The blinding is counted from [`OPENED_POINTS`]: a proof opens exactly that.
    #[test]
    fn plonky2_opens_what_the_blinding_counts() {
        let (data, x, _) = circuit(true);
        let proof = crate::prove_circuit(&data, witness(x)).unwrap();
        assert_eq!(opened_points(&proof.proof.openings, &data.common), OPENED_POINTS);
    }

    /// A private circuit whose randomness falls short of what its proofs open refuses to build,
    /// naming the shortfall: more challenges than quotient masks, more FRI queries than its
    /// random rows were counted for, a pair missing.
    #[test]
    fn too_little_randomness_refuses_to_build_naming_the_shortfall() {
        let build = |challenges: usize| {
            let mut config = private_config(public_segment_fri(segment_config(0, Privacy::Private)));
            config.num_challenges = challenges;
            let mut b = CircuitBuilder::<F, D>::new(config);
            let x = b.add_virtual_target();
            let y = b.mul(x, x);
            b.register_public_input(y);
            let rows = blind(&mut b);
            (b.build::<C>(), rows)
        };
        let (mut data, rows) = build(3);
        let err = mark_zero_knowledge(&mut data, &rows).unwrap_err().to_string();
        assert!(err.contains("2 quotient masks where its proofs need 3") && err.contains("3 challenges"), "{err}");
        assert!(!data.common.config.zero_knowledge);

        let (mut data, rows) = build(2);
        data.common.fri_params.config.num_query_rounds += 1;
        let err = mark_zero_knowledge(&mut data, &rows).unwrap_err().to_string();
        assert!(err.contains("random rows where its proofs need"), "{err}");

        let (mut data, mut rows) = build(2);
        rows.pairs.pop();
        let err = mark_zero_knowledge(&mut data, &rows).unwrap_err().to_string();
        assert!(err.contains("copy-joined random pairs") && err.contains("2 of them a margin"), "{err}");
        let (mut data, rows) = build(2);
        mark_zero_knowledge(&mut data, &rows).unwrap();

        // Left at its natural 2^8 rows, the same circuit is too small for its masks.
        let mut b =
            CircuitBuilder::<F, D>::new(private_config(public_segment_fri(segment_config(0, Privacy::Private))));
        let x = b.add_virtual_target();
        b.register_public_input(x);
        let rows = blind_with(&mut b, true, false);
        let mut small = b.build::<C>();
        assert_eq!(small.common.degree(), 256);
        let err = mark_zero_knowledge(&mut small, &rows).unwrap_err().to_string();
        assert!(err.contains("of 256 rows") && err.contains("it needs 512 rows"), "{err}");
    }

    /// The masks' budget at the private segment configuration (42 queries, folding by 4 down to
    /// a final polynomial of at most 4 coefficients, Merkle caps of 16): 2^8 rows fall short,
    /// 2^9 suffice, and a blinded circuit is padded to that.
    #[test]
    fn the_masks_budget_sets_the_smallest_private_circuit() {
        let config = private_config(public_segment_fri(segment_config(0, Privacy::Private)));
        let at = |bits| mask_freedom(&config.fri_config.fri_params(bits, true));
        // 2 at ζ, 42 queries × (1 + 3 reductions × 3 new values), the final polynomial.
        assert_eq!(at(8), MaskFreedom { available: 256, revealed: 2 + 42 * 10 + 4 });
        assert_eq!(at(9), MaskFreedom { available: 512, revealed: 2 + 42 * 10 + 8 });
        assert_eq!(minimum_private_rows(&config), 512);
        let (data, _, _) = circuit(true);
        assert_eq!(data.common.degree(), 512, "the one-multiplication circuit is padded");
    }

    /// The selector polynomial of the quotient-masking row: `UNUSED` on every row but that one.
    fn mask_selector(data: &CircuitData<F, C, D>) -> Option<PolynomialCoeffs<F>> {
        let unused = F::from_canonical_u64(u64::from(u32::MAX));
        let polys = &data.prover_only.constants_sigmas_commitment.polynomials;
        polys[..data.common.selectors_info.num_selectors()]
            .iter()
            .find(|p| (*p).clone().fft().values.iter().filter(|&&v| v != unused).count() == 1)
            .cloned()
    }

    /// The chunks of `filter·(v^e·m − image) / Z_H` for a mask column `m` and a multiplier `v`
    /// (the image's value on the masking row follows them; what other gates leave in its column
    /// is a constant offset and left out), computed on a coset as plonky2's prover computes
    /// quotients.
    fn mask_chunks(data: &CircuitData<F, C, D>, mask: &[F], multiplier: &[F]) -> Vec<PolynomialCoeffs<F>> {
        let (n, k) = (data.common.degree(), data.common.quotient_degree_factor);
        let selector = mask_selector(data).unwrap();
        let unused = F::from_canonical_u64(u64::from(u32::MAX));
        let row = selector.clone().fft().values.iter().position(|&v| v != unused).unwrap();
        let exponent = (k - 1) as u64;
        let mut image = vec![F::ZERO; n];
        image[row] = mask[row] * multiplier[row].exp_u64(exponent);
        let interpolate = |values: &[F]| PolynomialValues::new(values.to_vec()).ifft();
        let big = 8 * n;
        assert!((k + 1) * n <= big);
        let shift = F::coset_shift();
        let on_coset = |p: &PolynomialCoeffs<F>| p.padded(big).coset_fft(shift).values;
        let s = on_coset(&selector);
        let (v, m, i) =
            (on_coset(&interpolate(multiplier)), on_coset(&interpolate(mask)), on_coset(&interpolate(&image)));
        let root = F::primitive_root_of_unity(big.trailing_zeros() as usize);
        let mut x = shift;
        let values = (0..big)
            .map(|j| {
                let z_h = x.exp_u64(n as u64) - F::ONE;
                x *= root;
                (unused - s[j]) * (v[j].exp_u64(exponent) * m[j] - i[j]) / z_h
            })
            .collect();
        let quotient = PolynomialValues::new(values).coset_ifft(shift);
        assert!(quotient.coeffs[k * n..].iter().all(|c| c.is_zero()), "the mask's quotient has degree below k·n");
        quotient.coeffs[..k * n].chunks(n).map(|c| PolynomialCoeffs::new(c.to_vec())).collect()
    }

    /// Rank of `rows` over F (Gaussian elimination).
    pub(crate) fn rank(mut rows: Vec<Vec<F>>) -> usize {
        let mut rank = 0;
        for col in 0..rows.first().map_or(0, Vec::len) {
            let Some(p) = (rank..rows.len()).find(|&r| !rows[r][col].is_zero()) else { continue };
            rows.swap(rank, p);
            let inv = rows[rank][col].inverse();
            let pivot: Vec<F> = rows[rank].iter().map(|&v| v * inv).collect();
            for row in &mut rows[rank + 1..] {
                let factor = row[col];
                if !factor.is_zero() {
                    for (v, &p) in row.iter_mut().zip(&pivot) {
                        *v -= factor * p;
                    }
                }
            }
            rank += 1;
        }
        rank
    }

    /// What a proof opens of a mask column and of the mask it adds to the quotient chunks (at ζ,
    /// counted as `D` points, and at every query) is uniformly random, apart from the one
    /// combination per point the verifier computes from the openings: for a random multiplier,
    /// the map from the random column to its value at each point and the first `k − 1` chunks
    /// there has full rank, and adding the last chunk adds a single dimension (the masking row's
    /// own value). A sparse multiplier (a row constant) would not do: see the second half.
    #[test]
    fn the_quotient_mask_is_uniform_at_every_opened_point() {
        let (data, _, _) = circuit(true);
        let (n, k) = (data.common.degree(), data.common.quotient_degree_factor);
        let points: Vec<F> = (0..D + data.common.config.fri_config.num_query_rounds).map(|_| F::rand()).collect();
        let observed = points.len() * k;
        assert!(observed < n, "{observed} values from a column of {n}");
        // Each sample: the column's values at the points, then chunk after chunk at the points.
        let sample = |multiplier: &[F]| -> Vec<F> {
            let mask = F::rand_vec(n);
            let column = PolynomialValues::new(mask.clone()).ifft();
            let chunks = mask_chunks(&data, &mask, multiplier);
            let at_points = |p: &PolynomialCoeffs<F>| points.iter().map(|&x| p.eval(x)).collect::<Vec<_>>();
            at_points(&column).into_iter().chain(chunks.iter().flat_map(at_points)).collect()
        };
        let multiplier = F::rand_vec(n);
        let samples: Vec<Vec<F>> = (0..observed + 8).map(|_| sample(&multiplier)).collect();
        let without_last = samples.iter().map(|s| s[..observed].to_vec()).collect();
        assert_eq!(rank(without_last), observed, "the column and k − 1 chunks are uniform at the points");
        assert_eq!(rank(samples), observed + 1, "the last chunk adds only what the verifier computes");

        // A multiplier nonzero on a few rows only leaves the chunks nearly proportional.
        let mut sparse = vec![F::ZERO; n];
        sparse[..4].copy_from_slice(&F::rand_vec(4));
        let samples: Vec<Vec<F>> = (0..observed + 8).map(|_| sample(&sparse)[..observed].to_vec()).collect();
        assert!(rank(samples) < observed, "a sparse multiplier masks the chunks");
    }
}

/// The blinding checked on the linear maps themselves: each polynomial's openings against the
/// random rows that blind it, and FRI's openings of the batch polynomial against the masks
/// (the budget behind [`minimum_private_rows`]).
#[cfg(test)]
mod rank_tests {
    use std::collections::BTreeSet;

    use plonky2::field::extension::quadratic::QuadraticExtension;
    use plonky2::field::extension::FieldExtension;
    use plonky2::field::types::{Field, PrimeField64, Sample};

    use super::*;
    use crate::{public_segment_fri, segment_config, Privacy};

    type FE = QuadraticExtension<F>;
    const _: () = assert!(D == 2);

    fn lift(x: F) -> FE {
        <FE as FieldExtension<2>>::from_basefield(x)
    }

    fn parts(v: &FE) -> [F; 2] {
        <FE as FieldExtension<2>>::to_basefield_array(v)
    }

    fn eval(coeffs: &[FE], x: F) -> FE {
        eval_ext(coeffs, lift(x))
    }

    /// `(p(X) − p(z)) / (X − z)`.
    fn divide_out(p: &[FE], z: FE) -> Vec<FE> {
        let mut quotient = vec![FE::ZERO; p.len() - 1];
        let mut carry = FE::ZERO;
        for i in (1..p.len()).rev() {
            carry = p[i] + z * carry;
            quotient[i - 1] = carry;
        }
        quotient
    }

    /// FRI's folding by `arity`: `Σ_j β^j P_j(Y)` for `P(X) = Σ_j X^j P_j(X^arity)`.
    fn fold(p: &[FE], arity: usize, beta: FE) -> Vec<FE> {
        p.chunks(arity).map(|c| c.iter().rev().fold(FE::ZERO, |acc, &v| acc * beta + v)).collect()
    }

    /// One proof's FRI openings at a private circuit of `2^degree_bits` rows: the queries' points,
    /// the points opened on each layer (the queries' cosets there, less the queries themselves
    /// on the first, whose values the verifier computes from the other openings), the
    /// challenges.
    struct Openings {
        n: usize,
        xs: Vec<F>,
        layers: Vec<Vec<F>>,
        arities: Vec<usize>,
        betas: Vec<FE>,
        final_len: usize,
        zeta: FE,
        alpha: FE,
    }

    impl Openings {
        fn draw(degree_bits: usize) -> Self {
            let config = private_config(public_segment_fri(segment_config(0, Privacy::Private)));
            let fri = config.fri_config.fri_params(degree_bits, true);
            let arities: Vec<usize> = fri.reduction_arity_bits.iter().map(|&b| 1 << b).collect();
            let omega = F::primitive_root_of_unity(fri.lde_bits());
            let xs: Vec<F> = (0..fri.config.num_query_rounds)
                .map(|_| {
                    (F::coset_shift() * omega.exp_u64(rand::random::<u64>() % (1 << fri.lde_bits()))).to_canonical_u64()
                })
                .collect::<BTreeSet<_>>()
                .into_iter()
                .map(F::from_canonical_u64)
                .collect();
            let mut layers = Vec::new();
            let mut points = xs.clone();
            for &arity in &arities {
                let root = F::primitive_root_of_unity(arity.trailing_zeros() as usize);
                let coset: BTreeSet<u64> = points
                    .iter()
                    .flat_map(|&p| (0..arity).map(move |j| (p * root.exp_u64(j as u64)).to_canonical_u64()))
                    .collect();
                let first = layers.is_empty();
                let coset = coset.into_iter().map(F::from_canonical_u64);
                layers.push(coset.filter(|p| !first || !xs.contains(p)).collect::<Vec<_>>());
                points = points.iter().map(|&p| p.exp_u64(arity as u64)).collect();
            }
            Self {
                n: 1 << degree_bits,
                xs,
                layers,
                betas: arities.iter().map(|_| FE::rand()).collect(),
                arities,
                final_len: fri.final_poly_len(),
                zeta: FE::rand(),
                alpha: FE::rand(),
            }
        }

        /// What the FRI layers and the final polynomial reveal of a batch polynomial.
        fn batch_values(&self, batch: Vec<FE>) -> Vec<F> {
            let mut values = Vec::new();
            let mut poly = batch;
            for ((layer, &arity), &beta) in self.layers.iter().zip(&self.arities).zip(&self.betas) {
                values.extend(layer.iter().map(|&p| eval(&poly, p)));
                poly = fold(&poly, arity, beta);
            }
            poly.resize(self.final_len, FE::ZERO);
            values.extend(poly);
            values.iter().flat_map(parts).collect()
        }

        /// `count` random masks: their values at ζ and at the queries, then what FRI reveals of
        /// their part of the batch polynomial, `Σ_j α^j (m_j(X) − m_j(ζ)) / (X − ζ)`.
        fn masks_sample(&self, count: usize) -> Vec<F> {
            let masks: Vec<Vec<FE>> = (0..count).map(|_| F::rand_vec(self.n).into_iter().map(lift).collect()).collect();
            let mut values: Vec<F> = masks.iter().flat_map(|m| parts(&eval_ext(m, self.zeta))).collect();
            for &x in &self.xs {
                values.extend(masks.iter().map(|m| parts(&eval(m, x))[0]));
            }
            let mut batch = vec![FE::ZERO; self.n - 1];
            for (j, m) in masks.iter().enumerate() {
                let weight = self.alpha.exp_u64(j as u64);
                for (b, q) in batch.iter_mut().zip(divide_out(m, self.zeta)) {
                    *b += weight * q;
                }
            }
            values.extend(self.batch_values(batch));
            values
        }

        /// An arbitrary batch polynomial (the worst secret part): its values at the queries, which
        /// the verifier computes from the other openings, then what FRI reveals of it.
        fn generic_sample(&self) -> Vec<F> {
            let batch: Vec<FE> = (0..self.n - 1).map(|_| FE::rand()).collect();
            let mut values: Vec<F> = self.xs.iter().flat_map(|&x| parts(&eval(&batch, x))).collect();
            values.extend(self.batch_values(batch));
            values
        }

        /// Dimensions of what FRI reveals beyond what the verifier knows anyway: for random
        /// masks, beyond their own openings; for an arbitrary batch polynomial, beyond its values
        /// at the queries. Equal, the masks make it uniform over everything a secret could show.
        fn dimensions(&self, masks: usize) -> (usize, usize) {
            let own = masks * D + masks * self.xs.len();
            let columns = self.generic_sample().len();
            let generic = tests::rank((0..columns + 8).map(|_| self.generic_sample()).collect()) - D * self.xs.len();
            let masked = tests::rank((0..own + generic + 8).map(|_| self.masks_sample(masks)).collect());
            (masked - own, generic)
        }
    }

    fn eval_ext(coeffs: &[FE], x: FE) -> FE {
        coeffs.iter().rev().fold(FE::ZERO, |acc, &c| acc * x + c)
    }

    /// At the private segment configuration (42 queries, folding by 4) and the size
    /// [`minimum_private_rows`] requires, 2^9 rows, the `D` masks leave what FRI reveals of the
    /// batch polynomial as random as any polynomial could make it, so the secret part shows
    /// through nowhere. One mask, base-field values under a single power of α, cannot: the
    /// test tells the two apart.
    #[test]
    fn what_fri_reveals_is_uniform_at_the_minimum_size() {
        let openings = Openings::draw(9);
        let (masked, generic) = openings.dimensions(D);
        assert_eq!(masked, generic, "2^9 rows: masks span {masked} of {generic}");
        let (masked, generic) = openings.dimensions(1);
        assert!(masked < generic, "one mask spans {masked} of {generic}");
    }

    /// The rows that blind a polynomial's openings, as linear maps: a wire's `D + q` random rows
    /// to its value at ζ (an extension element: `D` base coordinates) and at `q` points of the
    /// low-degree extension; `Z`'s one random value per pair (at the pair's second row) to its
    /// values at ζ, gζ, the points and their `g·x`. Both have full rank on the real circuit's
    /// rows, so the openings are uniform whatever the other rows hold (point 1 of
    /// docs/zero-knowledge.md); a row fewer leaves them short.
    #[test]
    fn openings_are_uniform_in_the_random_rows() {
        let (data, _, rows) = tests::circuit(true);
        let n = data.common.degree();
        let queries = data.common.fri_params.config.num_query_rounds;
        let g = F::primitive_root_of_unity(data.common.degree_bits());
        let xs = tests::query_points(&data.common);
        let zeta = FE::rand();
        // The interpolant of a column that is 1 on `row` and 0 elsewhere.
        let lagrange = |row: usize| -> Vec<FE> {
            let mut unit = vec![F::ZERO; n];
            unit[row] = F::ONE;
            plonky2::field::polynomial::PolynomialValues::new(unit).ifft().coeffs.into_iter().map(lift).collect()
        };
        let columns = |rows: &[usize], at: &[FE], at_base: &[F]| -> Vec<Vec<F>> {
            rows.iter()
                .map(|&r| {
                    let l = lagrange(r);
                    let mut column: Vec<F> = at.iter().flat_map(|&z| parts(&eval_ext(&l, z))).collect();
                    column.extend(at_base.iter().map(|&x| parts(&eval(&l, x))[0]));
                    column
                })
                .collect()
        };
        // The rows the count needs; the margin's rows add only more freedom.
        let wires = columns(&rows.regular[..D + queries], &[zeta], &xs);
        assert_eq!(tests::rank(wires.clone()), D + queries, "a wire's openings");
        assert_eq!(tests::rank(wires[1..].to_vec()), D + queries - 1, "one row fewer");
        let pair_values: Vec<usize> = rows.pairs[..2 * D + 2 * queries].iter().map(|&a| a + 1).collect();
        let shifted: Vec<F> = xs.iter().flat_map(|&x| [x, g * x]).collect();
        let z = columns(&pair_values, &[zeta, zeta * lift(g)], &shifted);
        assert_eq!(tests::rank(z.clone()), 2 * D + 2 * queries, "Z's openings");
        assert_eq!(tests::rank(z[1..].to_vec()), 2 * D + 2 * queries - 1, "one pair fewer");
    }
}
