//! plonky2's Poseidon permutation in five rows of degree-3 constraints, for circuits proven at
//! FRI rate 1/4.
//!
//! At rate 1/4 plonky2 allows a gate of degree 4 at most (a constraint times its selector must
//! stay within the quotient's degree factor, 4), and the S-box `x^7` of [`super::PoseidonHeadGate`]
//! is one degree-7 constraint. Here every S-box keeps its cube `c = x^3` in a wire, so
//! `x^7 = c²·x` and every constraint has degree 3. Where the S-box input is not linear in the
//! row's inputs it is a wire too, as in plonky2's `PoseidonGate`. Two wires per S-box make the
//! permutation 5 rows of at most 67 wires instead of 2; what the rate buys (half the low-degree
//! extension of every column) is worth far more than 3 rows per permutation (docs/BENCHMARKS.md).
//!
//! Rows, each from the state before its first round to the state after its last one (inputs at
//! wires 0..12, outputs at 12..24, both routed):
//! - [`LowDegreeRow::Full`]`(a)`: full rounds `a` and `a + 1` (`a` ∈ {0, 2, 26, 28}); cubes of
//!   round `a` at 24..36, S-box inputs of round `a + 1` at 36..48, their cubes at 48..60;
//! - [`LowDegreeRow::Partial`]: the 22 partial rounds in plonky2's fast form; cubes at 24..46, the
//!   S-box inputs of partial rounds 1..22 at 46..67 (round 4's is linear in the inputs).
//!
//! Same function as `Poseidon::poseidon`, tested value for value.

use std::marker::PhantomData;

use plonky2::field::extension::Extendable;
use plonky2::field::types::Field;
use plonky2::gates::gate::Gate;
use plonky2::gates::poseidon_mds::PoseidonMdsGate;
use plonky2::gates::util::StridedConstraintConsumer;
use plonky2::hash::hash_types::RichField;
use plonky2::hash::poseidon::{Poseidon, HALF_N_FULL_ROUNDS, N_PARTIAL_ROUNDS, SPONGE_WIDTH};
use plonky2::iop::ext_target::ExtensionTarget;
use plonky2::iop::generator::{GeneratedValues, SimpleGenerator, WitnessGeneratorRef};
use plonky2::iop::target::Target;
use plonky2::iop::witness::PartitionWitness;
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::CommonCircuitData;
use plonky2::plonk::vars::{EvaluationTargets, EvaluationVars, EvaluationVarsBase};
use plonky2::util::serialization::{Buffer, IoError, IoResult, Read, Write};

use super::poseidon::{fill_row, row_inputs, wire_input, wire_output, wires, Base, Ext, Layers};

/// One of the five rows of the permutation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LowDegreeRow {
    /// Full rounds `a` and `a + 1`.
    Full(u8),
    /// The 22 partial rounds.
    Partial,
}

impl LowDegreeRow {
    /// The rows of one permutation, in order.
    pub const ALL: [LowDegreeRow; 5] = [
        LowDegreeRow::Full(0),
        LowDegreeRow::Full(2),
        LowDegreeRow::Partial,
        LowDegreeRow::Full((HALF_N_FULL_ROUNDS + N_PARTIAL_ROUNDS) as u8),
        LowDegreeRow::Full((HALF_N_FULL_ROUNDS + N_PARTIAL_ROUNDS + 2) as u8),
    ];

    /// Wires the row uses.
    pub const fn num_wires(self) -> usize {
        match self {
            LowDegreeRow::Full(_) => FULL_WIRES,
            LowDegreeRow::Partial => PARTIAL_WIRES,
        }
    }

    const fn num_constraints(self) -> usize {
        match self {
            // Cubes of both rounds, the second round's S-box inputs, the outputs.
            LowDegreeRow::Full(_) => 4 * SPONGE_WIDTH,
            LowDegreeRow::Partial => N_PARTIAL_ROUNDS + (N_PARTIAL_ROUNDS - 1) + SPONGE_WIDTH,
        }
    }

    fn tag(self) -> u8 {
        match self {
            LowDegreeRow::Full(a) => a,
            LowDegreeRow::Partial => u8::MAX,
        }
    }

    fn from_tag(tag: u8) -> IoResult<Self> {
        let row = if tag == u8::MAX { LowDegreeRow::Partial } else { LowDegreeRow::Full(tag) };
        if Self::ALL.contains(&row) {
            Ok(row)
        } else {
            Err(IoError)
        }
    }
}

/// Wire of the cube of element `i`'s S-box in the first (`second = false`) or second full round
/// of a full row.
pub const fn wire_full_cube(second: bool, i: usize) -> usize {
    2 * SPONGE_WIDTH + if second { 2 * SPONGE_WIDTH } else { 0 } + i
}

/// Wire of the S-box input of element `i` in the second full round of a full row.
pub const fn wire_full_sbox(i: usize) -> usize {
    3 * SPONGE_WIDTH + i
}

/// Wire of the cube of partial round `r`'s S-box.
pub const fn wire_partial_cube(r: usize) -> usize {
    2 * SPONGE_WIDTH + r
}

/// Wire of the S-box input of partial round `r ≥ 1`.
pub const fn wire_partial_sbox(r: usize) -> usize {
    2 * SPONGE_WIDTH + N_PARTIAL_ROUNDS + r - 1
}

/// Wires of a full row.
pub const FULL_WIRES: usize = wire_full_cube(true, SPONGE_WIDTH);
/// Wires of the partial row.
pub const PARTIAL_WIRES: usize = wire_partial_sbox(N_PARTIAL_ROUNDS);

// Every row fits a segment circuit's width (the head row's), inputs and outputs routed.
const _: () = assert!(PARTIAL_WIRES <= super::HEAD_WIRES && FULL_WIRES <= PARTIAL_WIRES);

/// A row of the permutation whose constraints have degree 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoseidonLowDegreeGate {
    /// Which rounds the row holds: one of [`LowDegreeRow::ALL`].
    pub(crate) row: LowDegreeRow,
    #[cfg(test)]
    pub(crate) fault: super::poseidon::Fault,
}

impl PoseidonLowDegreeGate {
    /// The gate of `row` (one of [`LowDegreeRow::ALL`]).
    pub(crate) fn new(row: LowDegreeRow) -> Self {
        debug_assert!(LowDegreeRow::ALL.contains(&row));
        Self {
            row,
            #[cfg(test)]
            fault: None,
        }
    }

    /// Which rounds the row holds.
    pub fn row(&self) -> LowDegreeRow {
        self.row
    }
}

/// `x^7` from the S-box input `x` and its cube wire `c`, pushing `c − x³`: degree 3 in both.
fn sbox_from_cube<L: Layers>(x: L, cube: L, push: &mut impl FnMut(L)) -> L {
    push(cube - x * x * x);
    cube * cube * x
}

/// The constraints of `row`, in order: for a full row the first round's cubes, the second
/// round's S-box inputs and cubes (interleaved per element), the outputs; for the partial row
/// round 0's cube, then per later round its S-box input and cube, the outputs.
fn constraints<L: Layers>(row: LowDegreeRow, w: impl Fn(usize) -> L, mut push: impl FnMut(L)) {
    let mut state: [L; SPONGE_WIDTH] = wires(wire_input(0), &w);
    match row {
        LowDegreeRow::Full(a) => {
            let a = a as usize;
            L::constant_layer(&mut state, a);
            for (i, s) in state.iter_mut().enumerate() {
                *s = sbox_from_cube(*s, w(wire_full_cube(false, i)), &mut push);
            }
            state = L::mds_layer(&state);
            L::constant_layer(&mut state, a + 1);
            for (i, s) in state.iter_mut().enumerate() {
                let sbox_in = w(wire_full_sbox(i));
                push(*s - sbox_in);
                *s = sbox_from_cube(sbox_in, w(wire_full_cube(true, i)), &mut push);
            }
            state = L::mds_layer(&state);
        }
        LowDegreeRow::Partial => {
            L::partial_first_constant_layer(&mut state);
            state = L::mds_partial_layer_init(&state);
            for r in 0..N_PARTIAL_ROUNDS {
                let sbox_in = if r == 0 {
                    state[0]
                } else {
                    let x = w(wire_partial_sbox(r));
                    push(state[0] - x);
                    x
                };
                let out = sbox_from_cube(sbox_in, w(wire_partial_cube(r)), &mut push);
                state[0] = L::add_partial_constant(out, r);
                state = L::mds_partial_layer_fast(&state, r);
            }
        }
    }
    for (i, s) in state.iter().enumerate() {
        push(*s - w(wire_output(i)));
    }
}

/// `x^7` in a recursive verifier, pushing `c − x³`.
fn sbox_from_cube_circuit<F: RichField + Extendable<D>, const D: usize>(
    builder: &mut CircuitBuilder<F, D>,
    x: ExtensionTarget<D>,
    cube: ExtensionTarget<D>,
    constraints: &mut Vec<ExtensionTarget<D>>,
) -> ExtensionTarget<D> {
    let x3 = builder.cube_extension(x);
    constraints.push(builder.sub_extension(cube, x3));
    let c2 = builder.mul_extension(cube, cube);
    builder.mul_extension(c2, x)
}

/// [`constraints`] in a recursive verifier, in the same order. The partial rounds take the plain
/// form where `PoseidonMdsGate` fits, as in [`super::PoseidonHeadGate`]: the same S-box inputs and
/// final state as the fast form.
fn constraints_circuit<F: RichField + Extendable<D>, const D: usize>(
    row: LowDegreeRow,
    builder: &mut CircuitBuilder<F, D>,
    vars: &EvaluationTargets<'_, D>,
) -> Vec<ExtensionTarget<D>> {
    let w = |i: usize| vars.local_wires[i];
    let mut constraints = Vec::with_capacity(row.num_constraints());
    let mut state: [ExtensionTarget<D>; SPONGE_WIDTH] = wires(wire_input(0), w);
    match row {
        LowDegreeRow::Full(a) => {
            let a = a as usize;
            <F as Poseidon>::constant_layer_circuit(builder, &mut state, a);
            for (i, s) in state.iter_mut().enumerate() {
                *s = sbox_from_cube_circuit(builder, *s, w(wire_full_cube(false, i)), &mut constraints);
            }
            state = <F as Poseidon>::mds_layer_circuit(builder, &state);
            <F as Poseidon>::constant_layer_circuit(builder, &mut state, a + 1);
            for (i, s) in state.iter_mut().enumerate() {
                let sbox_in = w(wire_full_sbox(i));
                constraints.push(builder.sub_extension(*s, sbox_in));
                *s = sbox_from_cube_circuit(builder, sbox_in, w(wire_full_cube(true, i)), &mut constraints);
            }
            state = <F as Poseidon>::mds_layer_circuit(builder, &state);
        }
        LowDegreeRow::Partial => {
            let plain = builder.config.num_routed_wires >= PoseidonMdsGate::<F, D>::new().num_wires();
            if !plain {
                <F as Poseidon>::partial_first_constant_layer_circuit(builder, &mut state);
                state = <F as Poseidon>::mds_partial_layer_init_circuit(builder, &state);
            }
            for r in 0..N_PARTIAL_ROUNDS {
                if plain {
                    <F as Poseidon>::constant_layer_circuit(builder, &mut state, HALF_N_FULL_ROUNDS + r);
                }
                let sbox_in = if r == 0 {
                    state[0]
                } else {
                    let x = w(wire_partial_sbox(r));
                    constraints.push(builder.sub_extension(state[0], x));
                    x
                };
                state[0] = sbox_from_cube_circuit(builder, sbox_in, w(wire_partial_cube(r)), &mut constraints);
                if plain {
                    state = <F as Poseidon>::mds_layer_circuit(builder, &state);
                } else {
                    let c = <F as Poseidon>::FAST_PARTIAL_ROUND_CONSTANTS[r];
                    if c != 0 {
                        let c = builder.constant_extension(F::Extension::from_canonical_u64(c));
                        state[0] = builder.add_extension(state[0], c);
                    }
                    state = <F as Poseidon>::mds_partial_layer_fast_circuit(builder, &state, r);
                }
            }
        }
    }
    for (i, s) in state.iter().enumerate() {
        constraints.push(builder.sub_extension(*s, w(wire_output(i))));
    }
    constraints
}

/// Every wire of `row` from its inputs (the generator's computation).
pub(crate) fn row_witness<F: RichField>(row: LowDegreeRow, input: [F; SPONGE_WIDTH]) -> Vec<F> {
    let mut out = vec![F::ZERO; row.num_wires()];
    out[..SPONGE_WIDTH].copy_from_slice(&input);
    let mut state = input;
    match row {
        LowDegreeRow::Full(a) => {
            let a = a as usize;
            for (round, second) in [(a, false), (a + 1, true)] {
                <F as Poseidon>::constant_layer(&mut state, round);
                for (i, s) in state.iter_mut().enumerate() {
                    if second {
                        out[wire_full_sbox(i)] = *s;
                    }
                    out[wire_full_cube(second, i)] = s.cube();
                    *s = <F as Poseidon>::sbox_monomial(*s);
                }
                state = <F as Poseidon>::mds_layer(&state);
            }
        }
        LowDegreeRow::Partial => {
            <F as Poseidon>::partial_first_constant_layer(&mut state);
            state = <F as Poseidon>::mds_partial_layer_init(&state);
            for r in 0..N_PARTIAL_ROUNDS {
                if r != 0 {
                    out[wire_partial_sbox(r)] = state[0];
                }
                out[wire_partial_cube(r)] = state[0].cube();
                state[0] = <F as Poseidon>::sbox_monomial(state[0])
                    + F::from_canonical_u64(<F as Poseidon>::FAST_PARTIAL_ROUND_CONSTANTS[r]);
                state = <F as Poseidon>::mds_partial_layer_fast(&state, r);
            }
        }
    }
    out[wire_output(0)..wire_output(SPONGE_WIDTH)].copy_from_slice(&state);
    out
}

impl<F: RichField + Extendable<D>, const D: usize> Gate<F, D> for PoseidonLowDegreeGate {
    fn id(&self) -> String {
        match self.row {
            LowDegreeRow::Full(a) => format!("tgrid::PoseidonLowDegreeGate(full rounds {a}, {})", a + 1),
            LowDegreeRow::Partial => "tgrid::PoseidonLowDegreeGate(partial rounds)".into(),
        }
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_u8(self.row.tag())
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        Ok(Self::new(LowDegreeRow::from_tag(src.read_u8()?)?))
    }

    fn eval_unfiltered(&self, vars: EvaluationVars<'_, F, D>) -> Vec<F::Extension> {
        let mut out = Vec::with_capacity(self.row.num_constraints());
        constraints::<Ext<F, F::Extension, D>>(self.row, |i| Ext(vars.local_wires[i], PhantomData), |c| out.push(c.0));
        out
    }

    fn eval_unfiltered_base_one(
        &self,
        vars: EvaluationVarsBase<'_, F>,
        mut yield_constr: StridedConstraintConsumer<'_, F>,
    ) {
        constraints::<Base<F>>(self.row, |i| Base(vars.local_wires[i]), |c| yield_constr.one(c.0));
    }

    fn eval_unfiltered_circuit(
        &self,
        builder: &mut CircuitBuilder<F, D>,
        vars: EvaluationTargets<'_, D>,
    ) -> Vec<ExtensionTarget<D>> {
        constraints_circuit(self.row, builder, &vars)
    }

    fn generators(&self, row: usize, _local_constants: &[F]) -> Vec<WitnessGeneratorRef<F, D>> {
        let generator = LowDegreeRowGenerator::<F, D> {
            kind: self.row,
            row,
            #[cfg(test)]
            fault: self.fault,
            _field: PhantomData,
        };
        vec![WitnessGeneratorRef::new(generator.adapter())]
    }

    fn num_wires(&self) -> usize {
        self.row.num_wires()
    }

    fn num_constants(&self) -> usize {
        0
    }

    fn degree(&self) -> usize {
        3
    }

    fn num_constraints(&self) -> usize {
        self.row.num_constraints()
    }
}

/// Fills a row from its twelve inputs.
#[derive(Clone, Debug)]
pub(super) struct LowDegreeRowGenerator<F, const D: usize> {
    kind: LowDegreeRow,
    row: usize,
    #[cfg(test)]
    fault: super::poseidon::Fault,
    _field: PhantomData<F>,
}

impl<F: RichField + Extendable<D>, const D: usize> SimpleGenerator<F, D> for LowDegreeRowGenerator<F, D> {
    fn id(&self) -> String {
        "tgrid::PoseidonLowDegreeGenerator".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        row_inputs(self.row)
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        fill_row(
            self.row,
            witness,
            out,
            |input| row_witness(self.kind, input),
            #[cfg(test)]
            self.fault,
        )
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_u8(self.kind.tag())?;
        dst.write_usize(self.row)
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        Ok(Self {
            kind: LowDegreeRow::from_tag(src.read_u8()?)?,
            row: src.read_usize()?,
            #[cfg(test)]
            fault: None,
            _field: PhantomData,
        })
    }
}

/// The permutation of `inputs` in the five low-degree rows (tests pass faulty gates).
pub(crate) fn permute_low_degree_rows<F: RichField + Extendable<D>, const D: usize>(
    builder: &mut CircuitBuilder<F, D>,
    inputs: [Target; SPONGE_WIDTH],
    gates: [PoseidonLowDegreeGate; 5],
) -> [Target; SPONGE_WIDTH] {
    let mut state = inputs;
    for gate in gates {
        let row = builder.add_gate(gate, vec![]);
        for (i, &x) in state.iter().enumerate() {
            builder.connect(x, Target::wire(row, wire_input(i)));
        }
        state = std::array::from_fn(|i| Target::wire(row, wire_output(i)));
    }
    state
}

/// The five honest rows of one permutation.
pub(crate) fn low_degree_rows() -> [PoseidonLowDegreeGate; 5] {
    LowDegreeRow::ALL.map(PoseidonLowDegreeGate::new)
}
