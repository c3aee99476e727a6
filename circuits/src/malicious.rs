//! A malicious prover for soundness tests: prover-side code that produces the proofs plonky2's
//! honest prover refuses to produce, so a test shows that the *verifier* rejects a witness, not
//! only that witness generation refuses it.
//!
//! - Lookups: plonky2's lookup generator fails on an input outside its table and its multiplicity
//!   count panics on one, so no out-of-range value ever reaches a proof.
//!   [`prove_admitting_any_byte`] writes an arbitrary output for such an input and counts the
//!   lookup as if it had read an honest table entry, then runs plonky2's own proving steps.
//! - Limbs: a private circuit's [`crate::gates::ByteRangeGate`] generator refuses a non-byte;
//!   [`prove_admitting_any_byte`] also swaps it for one that writes limbs recomposing to any
//!   value, the top limb out of its range.
//! - Copy constraints: [`crate::testing::cut_copy_constraints`] gives the prover the wire
//!   partition of another build of the same gates (one without some `connect`), so connected
//!   wires may hold different values while the proof is checked against the honest circuit's
//!   permutation.

use std::collections::HashSet;

use plonky2::field::types::{Field, PrimeField64};
use plonky2::gates::lookup::LookupGate;
use plonky2::iop::generator::{generate_partial_witness, GeneratedValues, SimpleGenerator, WitnessGeneratorRef};
use plonky2::iop::target::Target;
use plonky2::iop::witness::{PartialWitness, PartitionWitness, Witness, WitnessWrite};
use plonky2::plonk::circuit_data::{CircuitData, CommonCircuitData};
use plonky2::plonk::proof::ProofWithPublicInputs;
use plonky2::plonk::prover::prove_with_partition_witness;
use plonky2::util::serialization::{Buffer, IoError, IoResult};
use plonky2::util::timing::TimingTree;

use crate::gates::{ByteRangeGenerator, ByteTableGenerator};
use crate::{C, D, F};

/// A lookup slot's generator that writes the table's output for an input in the table and 0 for
/// any other input (plonky2's refuses the latter).
#[derive(Debug)]
struct AnyInputLookup {
    row: usize,
    slot: usize,
    table: Vec<(u16, u16)>,
}

impl SimpleGenerator<F, D> for AnyInputLookup {
    fn id(&self) -> String {
        "tgrid::test::AnyInputLookup".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        vec![Target::wire(self.row, LookupGate::wire_ith_looking_inp(self.slot))]
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        let input = witness.get_target(self.dependencies()[0]).to_canonical_u64();
        let output = self.table.iter().find(|(i, _)| u64::from(*i) == input).map_or(0, |&(_, o)| o);
        out.set_target(
            Target::wire(self.row, LookupGate::wire_ith_looking_out(self.slot)),
            F::from_canonical_u16(output),
        )
    }

    fn serialize(&self, _dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        Err(IoError)
    }

    fn deserialize(_src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        Err(IoError)
    }
}

/// Replaces plonky2's lookup generators of `data` by [`AnyInputLookup`].
fn admit_any_lookup_input(data: &mut CircuitData<F, C, D>) {
    let rows = data.prover_only.lookup_rows.clone();
    for generator in &mut data.prover_only.generators {
        if generator.0.id() != "LookupGenerator" {
            continue;
        }
        let Target::Wire(wire) = generator.0.watch_list()[0] else { panic!("a lookup generator watches a wire") };
        let lut = rows
            .iter()
            .position(|r| (r.last_lu_gate..r.last_lut_gate).contains(&wire.row))
            .expect("a lookup row belongs to a table");
        let table = data.common.luts[lut].iter().copied().collect();
        let slot = wire.column / 2;
        assert_eq!(LookupGate::wire_ith_looking_inp(slot), wire.column);
        *generator = WitnessGeneratorRef::new(AnyInputLookup { row: wire.row, slot, table }.adapter());
    }
}

/// Replaces the generators of `data`'s [`crate::gates::ByteRangeGate`] rows by ones that admit
/// any value.
fn admit_any_byte_range(data: &mut CircuitData<F, C, D>) {
    let common = &data.common;
    for generator in data.prover_only.generators.iter_mut().filter(|g| g.0.id() == "tgrid::ByteRangeGenerator") {
        let mut admitting: ByteRangeGenerator = decoded(generator, common);
        admitting.admit_any = true;
        *generator = WitnessGeneratorRef::new(admitting.adapter());
    }
}

/// A copy of `generator`, a `G`, rebuilt from its own encoding (which names its gate, row and
/// operation), so that a test can set the copy's fault flag.
fn decoded<G: SimpleGenerator<F, D>>(generator: &WitnessGeneratorRef<F, D>, common: &CommonCircuitData<F, D>) -> G {
    let mut bytes = Vec::new();
    generator.0.serialize(&mut bytes, common).expect("a task generator encodes");
    G::deserialize(&mut Buffer::new(&bytes), common).expect("a task generator decodes its own encoding")
}

/// Proves `pw` like plonky2's prover, except that a byte check may hold any value: a lookup
/// may read a value outside its table (counted in the multiplicities as a read of an in-table
/// value read by another lookup of the same table), and a [`crate::gates::ByteRangeGate`]'s
/// limbs recompose any value. Every other step is plonky2's.
pub(crate) fn prove_admitting_any_byte(
    data: &mut CircuitData<F, C, D>,
    pw: PartialWitness<F>,
) -> anyhow::Result<ProofWithPublicInputs<F, C, D>> {
    admit_any_lookup_input(data);
    admit_any_byte_range(data);
    // Which lookups read outside their table, and an honest lookup of that table to count instead.
    let recount: Vec<Vec<(usize, (Target, Target))>> = {
        let witness = generate_partial_witness(pw.clone(), &data.prover_only, &data.common)?;
        data.prover_only
            .lut_to_lookups
            .iter()
            .enumerate()
            .map(|(lut, lookups)| {
                let table: HashSet<u64> = data.common.luts[lut].iter().map(|&(i, _)| u64::from(i)).collect();
                let in_table = |t: Target| table.contains(&witness.get_target(t).to_canonical_u64());
                let Some(&honest) = lookups.iter().find(|(i, _)| in_table(*i)) else { return Vec::new() };
                lookups.iter().enumerate().filter(|(_, (i, _))| !in_table(*i)).map(|(k, _)| (k, honest)).collect()
            })
            .collect()
    };
    for (lut, entries) in recount.into_iter().enumerate() {
        for (k, honest) in entries {
            data.prover_only.lut_to_lookups[lut][k] = honest;
        }
    }
    let witness = generate_partial_witness(pw, &data.prover_only, &data.common)?;
    prove_with_partition_witness(&data.prover_only, &data.common, witness, &mut TimingTree::default())
}

/// A lookup slot's generator that writes a byte other than the table's output for its input,
/// while the multiplicities still count the input as an honest read.
#[derive(Debug)]
struct WrongOutputLookup {
    row: usize,
    slot: usize,
    table: Vec<(u16, u16)>,
}

impl SimpleGenerator<F, D> for WrongOutputLookup {
    fn id(&self) -> String {
        "tgrid::test::WrongOutputLookup".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        vec![Target::wire(self.row, LookupGate::wire_ith_looking_inp(self.slot))]
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        let input = witness.get_target(self.dependencies()[0]).to_canonical_u64();
        let honest = self.table.iter().find(|(i, _)| u64::from(*i) == input).map_or(0, |&(_, o)| o);
        out.set_target(
            Target::wire(self.row, LookupGate::wire_ith_looking_out(self.slot)),
            F::from_canonical_u16(honest ^ 1),
        )
    }

    fn serialize(&self, _dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        Err(IoError)
    }

    fn deserialize(_src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        Err(IoError)
    }
}

/// Proves `pw` like plonky2's prover, except that one lookup into table `lut` outputs a byte
/// other than the table's (another byte, so every range the circuit checks still holds).
pub(crate) fn prove_with_a_wrong_lookup_output(
    data: &mut CircuitData<F, C, D>,
    pw: PartialWitness<F>,
    lut: usize,
) -> anyhow::Result<ProofWithPublicInputs<F, C, D>> {
    let rows = data.prover_only.lookup_rows[lut].clone();
    let table: Vec<(u16, u16)> = data.common.luts[lut].iter().copied().collect();
    let generator = data
        .prover_only
        .generators
        .iter_mut()
        .find(|g| {
            g.0.id() == "LookupGenerator"
                && matches!(g.0.watch_list()[0], Target::Wire(w) if (rows.last_lu_gate..rows.last_lut_gate).contains(&w.row))
        })
        .expect("the table is read by a lookup");
    let Target::Wire(wire) = generator.0.watch_list()[0] else { unreachable!("matched a wire") };
    *generator = WitnessGeneratorRef::new(WrongOutputLookup { row: wire.row, slot: wire.column / 2, table }.adapter());
    let witness = generate_partial_witness(pw, &data.prover_only, &data.common)?;
    prove_with_partition_witness(&data.prover_only, &data.common, witness, &mut TimingTree::default())
}

/// Proves `pw` like plonky2's prover, except that with `wrong` the `nth` table read of a private
/// circuit (an operation of a [`crate::gates::ByteTableGate`]) writes an output one above the
/// table's entry, its bits and folds honest. Without `wrong` the swapped generator is honest.
pub(crate) fn prove_with_table_read(
    data: &mut CircuitData<F, C, D>,
    pw: PartialWitness<F>,
    nth: usize,
    wrong: bool,
) -> anyhow::Result<ProofWithPublicInputs<F, C, D>> {
    let common = &data.common;
    let generator = data
        .prover_only
        .generators
        .iter_mut()
        .filter(|g| g.0.id() == "tgrid::ByteTableGenerator")
        .nth(nth)
        .expect("the circuit reads a table");
    let mut faulty: ByteTableGenerator = decoded(generator, common);
    faulty.faulty = wrong;
    *generator = WitnessGeneratorRef::new(faulty.adapter());
    let witness = generate_partial_witness(pw, &data.prover_only, &data.common)?;
    prove_with_partition_witness(&data.prover_only, &data.common, witness, &mut TimingTree::default())
}
