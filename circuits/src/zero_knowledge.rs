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
//! - **Masking columns** ([`MASK_COLUMNS`] = `D` wire columns that no gate reads, random on every
//!   row): FRI's batch polynomial is a random combination of every committed polynomial, these
//!   two included, so it is a uniformly random polynomial apart from the values the verifier
//!   computes from the openings, and the folded layers and final polynomial reveal nothing (the
//!   masking polynomial of the batching step in Haböck's note; `D` columns because the batch is
//!   over the degree-`D` extension).
//! - **Per-polynomial blinding** counted by what each polynomial itself opens: a wire, partial
//!   product or quotient polynomial is opened at ζ (`D` base values) and at every query, so
//!   `D + queries` rows random in every wire; `Z` is also opened at `gζ`, so `2D + queries`
//!   pairs of rows random in every routed wire *and* joined by copy constraints, which puts a
//!   random factor into each `Z` at every pair.
//! - Merkle leaves salted as plonky2 salts them: the circuit is built without plonky2's blinding
//!   and then marked zero-knowledge ([`mark_zero_knowledge`]), which is all plonky2's prover and
//!   verifier read (`config.zero_knowledge`, `fri_params.hiding`; the flag is observed by the
//!   Fiat-Shamir transcript).
//!
//! What this does not cover, as plonky2's own treatment does not: the quotient's chunks are not
//! randomized separately (Haböck's second point; that needs plonky2's prover), and the lookup
//! argument's polynomials carry no blinding. docs/SECURITY.md says what that leaves.

use std::ops::Range;

use plonky2::field::types::Sample;
use plonky2::gates::noop::NoopGate;
use plonky2::iop::generator::{GeneratedValues, SimpleGenerator};
use plonky2::iop::target::Target;
use plonky2::iop::witness::{PartitionWitness, Witness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitConfig, CircuitData, CommonCircuitData};
use plonky2::util::serialization::{Buffer, IoResult, Read, Write};

use crate::error::{Error, Result};
use crate::{C, D, F};

/// The witness generators of the blinding, by id (for the task circuit cache).
pub(crate) const GENERATORS: &[(&str, crate::prover_cache::ReadGenerator)] = &[
    ("tgrid::RandomRows", crate::prover_cache::reader::<RandomRows>),
    ("tgrid::MaskColumns", crate::prover_cache::reader::<MaskColumns>),
];

/// Wire columns that no gate reads, random on every row of a private circuit.
pub const MASK_COLUMNS: usize = D;

/// `config` for a private circuit built by [`blind`]: plonky2's blinding off (this module adds
/// its own), [`MASK_COLUMNS`] more wires.
pub(crate) fn private_config(mut config: CircuitConfig) -> CircuitConfig {
    config.zero_knowledge = false;
    config.num_wires += MASK_COLUMNS;
    config
}

/// Rows of random wires each polynomial opened at ζ and every query needs.
pub(crate) fn regular_blinding_rows(config: &CircuitConfig) -> usize {
    D + config.fri_config.num_query_rounds
}

/// Pairs of copy-joined random rows each `Z` (opened at ζ, gζ and every query) needs.
pub(crate) fn permutation_blinding_pairs(config: &CircuitConfig) -> usize {
    2 * D + config.fri_config.num_query_rounds
}

/// Adds the blinding rows and the masking columns to a circuit whose gates are all placed (the
/// rows plonky2's `build` adds later, its public-input and lookup rows, get masking values too).
/// `builder` must have been made with [`private_config`].
pub(crate) fn blind(builder: &mut CircuitBuilder<F, D>) -> BlindingRows {
    blind_with(builder, true)
}

/// The rows [`blind`] added (read by the tests, which check what fills them).
#[derive(Debug, Clone)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct BlindingRows {
    /// Rows random in every wire a gate may use.
    pub(crate) regular: Vec<usize>,
    /// First rows of the copy-joined pairs (the second row of each follows it).
    pub(crate) pairs: Vec<usize>,
}

/// [`blind`]; only a soundness test leaves the pairs unjoined (`join_pairs = false`, plonky2's
/// layout), to give a malicious prover the partition of a circuit without the copies.
fn blind_with(builder: &mut CircuitBuilder<F, D>, join_pairs: bool) -> BlindingRows {
    let num_wires = builder.config.num_wires;
    let routed = builder.config.num_routed_wires;
    let gate_wires = num_wires - MASK_COLUMNS;

    let regular: Vec<usize> =
        (0..regular_blinding_rows(&builder.config)).map(|_| builder.add_gate(NoopGate, vec![])).collect();
    let mut pairs = Vec::new();
    for _ in 0..permutation_blinding_pairs(&builder.config) {
        let (a, b) = (builder.add_gate(NoopGate, vec![]), builder.add_gate(NoopGate, vec![]));
        for column in (0..routed).filter(|_| join_pairs) {
            builder.connect(Target::wire(a, column), Target::wire(b, column));
        }
        pairs.push(a);
    }
    // Registered before the rows' generator, whose first value it waits for: by then every
    // generator without inputs has run, plonky2's random public-input wires included, and the
    // masking generator leaves the cells they set alone.
    builder.add_simple_generator(MaskColumns { columns: gate_wires..num_wires, after: Target::wire(regular[0], 0) });
    builder.add_simple_generator(RandomRows { rows: regular.clone(), columns: 0..gate_wires });
    builder.add_simple_generator(RandomRows { rows: pairs.clone(), columns: 0..routed });
    BlindingRows { regular, pairs }
}

/// Marks a circuit built with [`private_config`] and [`blind`] zero-knowledge: its prover salts
/// every Merkle leaf of the witness, `Z` and quotient commitments, and its verifier expects it.
/// Refuses a circuit one of whose gates reads a masking column (some of plonky2's gates size
/// themselves by the configured width; none of a segment's does).
pub(crate) fn mark_zero_knowledge(data: &mut CircuitData<F, C, D>) -> Result<()> {
    let gate_wires = data.common.config.num_wires - MASK_COLUMNS;
    if let Some(gate) = data.common.gates.iter().find(|g| g.0.num_wires() > gate_wires) {
        return Err(Error::InvalidModel(format!("gate {} reads the masking columns", gate.0.id())));
    }
    data.common.config.zero_knowledge = true;
    data.common.fri_params.hiding = true;
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
mod tests {
    use plonky2::field::types::Field;
    use plonky2::iop::generator::generate_partial_witness;
    use plonky2::iop::witness::PartialWitness;
    use plonky2::plonk::prover::prove_with_partition_witness;
    use plonky2::util::timing::TimingTree;

    use super::*;
    use crate::{public_segment_fri, segment_config, Privacy};

    /// A small private circuit: `y = x·x + 3`, `y` public, its gates blinded by [`blind_with`].
    fn circuit(join_pairs: bool) -> (CircuitData<F, C, D>, Target, BlindingRows) {
        let mut b =
            CircuitBuilder::<F, D>::new(private_config(public_segment_fri(segment_config(0, Privacy::Private))));
        let x = b.add_virtual_target();
        let three = b.constant(F::from_canonical_u64(3));
        let y = b.mul_add(x, x, three);
        b.register_public_input(y);
        let rows = blind_with(&mut b, join_pairs);
        let mut data = b.build::<C>();
        mark_zero_knowledge(&mut data).unwrap();
        (data, x, rows)
    }

    fn witness(x: Target) -> PartialWitness<F> {
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
        assert_eq!(rows.regular.len(), D + config.fri_config.num_query_rounds);
        assert_eq!(rows.pairs.len(), 2 * D + config.fri_config.num_query_rounds);
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
}
