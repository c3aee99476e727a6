//! plonky2's Poseidon permutation in two rows that fit an 82-wire circuit: [`PoseidonHeadGate`]
//! (the first four full rounds and the 22 partial rounds) and [`PoseidonTailGate`] (the last
//! four full rounds).
//!
//! plonky2's `PoseidonGate` holds the whole permutation in one row of 135 wires, and a circuit
//! that uses it (a task circuit hashes its input and output and its public inputs) must be 135
//! wires wide everywhere. Every column is paid for in each proof: its low-degree extension, its
//! share of every Merkle leaf, its opening. The task circuits' own gates need the 80 routed
//! wires only, so splitting the permutation lets them drop 53 columns.
//!
//! Both gates constrain what `PoseidonGate` constrains: the input of every S-box that is not a
//! linear function of the row's inputs is a wire, equal to the value the previous rounds compute
//! from the wires before it, so every constraint has degree 7. The split point is where plonky2's
//! fast partial rounds have returned to the permutation's own basis: the head's outputs are the
//! S-box inputs of round 26 (the state after the partial rounds plus that round's constants),
//! which are the tail's inputs. Same function as `Poseidon::poseidon`, tested value for value.
//!
//! Wires, head (82): inputs 0..12, outputs 12..24 (both routed), S-box inputs of full rounds
//! 1..4 at 24..60, S-box inputs of the partial rounds at 60..82. Tail (60): inputs 0..12, outputs
//! 12..24, S-box inputs of full rounds 27..30 at 24..60.

use std::marker::PhantomData;

use plonky2::field::extension::{Extendable, FieldExtension};
use plonky2::field::types::Field;
use plonky2::gates::gate::Gate;
use plonky2::gates::poseidon_mds::PoseidonMdsGate;
use plonky2::gates::util::StridedConstraintConsumer;
use plonky2::hash::hash_types::RichField;
use plonky2::hash::poseidon::{Poseidon, HALF_N_FULL_ROUNDS, N_PARTIAL_ROUNDS, SPONGE_WIDTH};
use plonky2::iop::ext_target::ExtensionTarget;
use plonky2::iop::generator::{GeneratedValues, SimpleGenerator, WitnessGeneratorRef};
use plonky2::iop::target::Target;
use plonky2::iop::witness::{PartitionWitness, Witness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::CommonCircuitData;
use plonky2::plonk::vars::{EvaluationTargets, EvaluationVars, EvaluationVarsBase};
use plonky2::util::serialization::{Buffer, IoResult, Read, Write};

/// plonky2's number of the first round of the second full half.
const SECOND_HALF_FIRST_ROUND: usize = HALF_N_FULL_ROUNDS + N_PARTIAL_ROUNDS;

/// Wire of input element `i` (both gates).
pub const fn wire_input(i: usize) -> usize {
    i
}

/// Wire of output element `i` (both gates).
pub const fn wire_output(i: usize) -> usize {
    SPONGE_WIDTH + i
}

/// Wire of the S-box input of element `i` in full round `r` of the gate's half (`1 ≤ r < 4`;
/// round 0's S-box inputs are linear in the inputs).
pub const fn wire_full_sbox(r: usize, i: usize) -> usize {
    2 * SPONGE_WIDTH + (r - 1) * SPONGE_WIDTH + i
}

/// Wire of the S-box input of partial round `r` (head only).
pub const fn wire_partial_sbox(r: usize) -> usize {
    2 * SPONGE_WIDTH + (HALF_N_FULL_ROUNDS - 1) * SPONGE_WIDTH + r
}

/// Wires of [`PoseidonHeadGate`].
pub const HEAD_WIRES: usize = wire_partial_sbox(N_PARTIAL_ROUNDS);
/// Wires of [`PoseidonTailGate`].
pub const TAIL_WIRES: usize = wire_full_sbox(HALF_N_FULL_ROUNDS, 0);

/// A test fault: the generator writes this wire one too high (the gate and its constraints are
/// the honest ones, so the verifier's circuit is unchanged).
#[cfg(test)]
pub(crate) type Fault = Option<usize>;

/// Rounds 0..26 of the permutation: four full rounds and the partial rounds, ending with round
/// 26's round constants added, i.e. at the S-box inputs of the second half's first round.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoseidonHeadGate {
    #[cfg(test)]
    pub(crate) fault: Fault,
}

/// Rounds 26..30: the last four full rounds, from the S-box inputs of round 26.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoseidonTailGate {
    #[cfg(test)]
    pub(crate) fault: Fault,
}

/// The wires of one gate row as the round functions read them: `get(w)` is wire `w`.
pub(super) fn wires<T: Copy, const N: usize>(first: usize, get: impl Fn(usize) -> T) -> [T; N] {
    std::array::from_fn(|i| get(first + i))
}

/// The layers of the permutation over one kind of value. The constraints are written once over
/// this; the base field uses plonky2's specialised native layers (the quotient evaluates every
/// gate at each point of the low-degree extension), extensions the generic ones.
pub(super) trait Layers: Copy + std::ops::Sub<Output = Self> + std::ops::Mul<Output = Self> {
    fn constant_layer(state: &mut [Self; SPONGE_WIDTH], round: usize);
    fn sbox_layer(state: &mut [Self; SPONGE_WIDTH]);
    fn mds_layer(state: &[Self; SPONGE_WIDTH]) -> [Self; SPONGE_WIDTH];
    fn partial_first_constant_layer(state: &mut [Self; SPONGE_WIDTH]);
    fn mds_partial_layer_init(state: &[Self; SPONGE_WIDTH]) -> [Self; SPONGE_WIDTH];
    /// `x^7` plus the fast partial round's constant.
    fn partial_sbox(x: Self, round: usize) -> Self;
    fn mds_partial_layer_fast(state: &[Self; SPONGE_WIDTH], round: usize) -> [Self; SPONGE_WIDTH];
    /// `x` plus the fast partial round's constant (what follows the S-box in the fast form).
    fn add_partial_constant(x: Self, round: usize) -> Self;
}

/// A value of the base field.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Base<F>(pub(super) F);

impl<F: Field> std::ops::Mul for Base<F> {
    type Output = Self;
    fn mul(self, rhs: Self) -> Self {
        Base(self.0 * rhs.0)
    }
}

impl<F: Field> std::ops::Sub for Base<F> {
    type Output = Self;
    fn sub(self, rhs: Self) -> Self {
        Base(self.0 - rhs.0)
    }
}

impl<F: RichField> Layers for Base<F> {
    fn constant_layer(state: &mut [Self; SPONGE_WIDTH], round: usize) {
        let mut s = state.map(|x| x.0);
        <F as Poseidon>::constant_layer(&mut s, round);
        *state = s.map(Base);
    }
    fn sbox_layer(state: &mut [Self; SPONGE_WIDTH]) {
        let mut s = state.map(|x| x.0);
        <F as Poseidon>::sbox_layer(&mut s);
        *state = s.map(Base);
    }
    fn mds_layer(state: &[Self; SPONGE_WIDTH]) -> [Self; SPONGE_WIDTH] {
        <F as Poseidon>::mds_layer(&state.map(|x| x.0)).map(Base)
    }
    fn partial_first_constant_layer(state: &mut [Self; SPONGE_WIDTH]) {
        let mut s = state.map(|x| x.0);
        <F as Poseidon>::partial_first_constant_layer(&mut s);
        *state = s.map(Base);
    }
    fn mds_partial_layer_init(state: &[Self; SPONGE_WIDTH]) -> [Self; SPONGE_WIDTH] {
        <F as Poseidon>::mds_partial_layer_init(&state.map(|x| x.0)).map(Base)
    }
    fn partial_sbox(x: Self, round: usize) -> Self {
        Base(
            <F as Poseidon>::sbox_monomial(x.0)
                + F::from_canonical_u64(<F as Poseidon>::FAST_PARTIAL_ROUND_CONSTANTS[round]),
        )
    }
    fn mds_partial_layer_fast(state: &[Self; SPONGE_WIDTH], round: usize) -> [Self; SPONGE_WIDTH] {
        <F as Poseidon>::mds_partial_layer_fast(&state.map(|x| x.0), round).map(Base)
    }
    fn add_partial_constant(x: Self, round: usize) -> Self {
        Base(x.0 + F::from_canonical_u64(<F as Poseidon>::FAST_PARTIAL_ROUND_CONSTANTS[round]))
    }
}

/// A value of an extension of the base field `F` (degree `DE`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Ext<F, T, const DE: usize>(pub(super) T, pub(super) PhantomData<F>);

impl<F, T: std::ops::Mul<Output = T>, const DE: usize> std::ops::Mul for Ext<F, T, DE> {
    type Output = Self;
    fn mul(self, rhs: Self) -> Self {
        Ext(self.0 * rhs.0, PhantomData)
    }
}

impl<F, T: std::ops::Sub<Output = T>, const DE: usize> std::ops::Sub for Ext<F, T, DE> {
    type Output = Self;
    fn sub(self, rhs: Self) -> Self {
        Ext(self.0 - rhs.0, PhantomData)
    }
}

impl<F: RichField, T: FieldExtension<DE, BaseField = F>, const DE: usize> Layers for Ext<F, T, DE> {
    fn constant_layer(state: &mut [Self; SPONGE_WIDTH], round: usize) {
        let mut s = state.map(|x| x.0);
        <F as Poseidon>::constant_layer_field(&mut s, round);
        *state = s.map(|x| Ext(x, PhantomData));
    }
    fn sbox_layer(state: &mut [Self; SPONGE_WIDTH]) {
        let mut s = state.map(|x| x.0);
        <F as Poseidon>::sbox_layer_field(&mut s);
        *state = s.map(|x| Ext(x, PhantomData));
    }
    fn mds_layer(state: &[Self; SPONGE_WIDTH]) -> [Self; SPONGE_WIDTH] {
        <F as Poseidon>::mds_layer_field(&state.map(|x| x.0)).map(|x| Ext(x, PhantomData))
    }
    fn partial_first_constant_layer(state: &mut [Self; SPONGE_WIDTH]) {
        let mut s = state.map(|x| x.0);
        <F as Poseidon>::partial_first_constant_layer(&mut s);
        *state = s.map(|x| Ext(x, PhantomData));
    }
    fn mds_partial_layer_init(state: &[Self; SPONGE_WIDTH]) -> [Self; SPONGE_WIDTH] {
        <F as Poseidon>::mds_partial_layer_init(&state.map(|x| x.0)).map(|x| Ext(x, PhantomData))
    }
    fn partial_sbox(x: Self, round: usize) -> Self {
        let c = T::from_canonical_u64(<F as Poseidon>::FAST_PARTIAL_ROUND_CONSTANTS[round]);
        Ext(<F as Poseidon>::sbox_monomial(x.0) + c, PhantomData)
    }
    fn mds_partial_layer_fast(state: &[Self; SPONGE_WIDTH], round: usize) -> [Self; SPONGE_WIDTH] {
        <F as Poseidon>::mds_partial_layer_fast_field(&state.map(|x| x.0), round).map(|x| Ext(x, PhantomData))
    }
    fn add_partial_constant(x: Self, round: usize) -> Self {
        let c = T::from_canonical_u64(<F as Poseidon>::FAST_PARTIAL_ROUND_CONSTANTS[round]);
        Ext(x.0 + c, PhantomData)
    }
}

/// The head's constraints, in order: S-box inputs of full rounds 1..4, of the partial rounds,
/// then the outputs.
fn head_constraints<L: Layers>(w: impl Fn(usize) -> L, mut push: impl FnMut(L)) {
    let mut state: [L; SPONGE_WIDTH] = wires(wire_input(0), &w);
    for r in 0..HALF_N_FULL_ROUNDS {
        L::constant_layer(&mut state, r);
        if r != 0 {
            for (i, s) in state.iter_mut().enumerate() {
                let sbox_in = w(wire_full_sbox(r, i));
                push(*s - sbox_in);
                *s = sbox_in;
            }
        }
        L::sbox_layer(&mut state);
        state = L::mds_layer(&state);
    }
    L::partial_first_constant_layer(&mut state);
    state = L::mds_partial_layer_init(&state);
    for r in 0..N_PARTIAL_ROUNDS {
        let sbox_in = w(wire_partial_sbox(r));
        push(state[0] - sbox_in);
        state[0] = L::partial_sbox(sbox_in, r);
        state = L::mds_partial_layer_fast(&state, r);
    }
    L::constant_layer(&mut state, SECOND_HALF_FIRST_ROUND);
    for (i, s) in state.iter().enumerate() {
        push(*s - w(wire_output(i)));
    }
}

/// The tail's constraints, in order: S-box inputs of full rounds 27..30, then the outputs.
fn tail_constraints<L: Layers>(w: impl Fn(usize) -> L, mut push: impl FnMut(L)) {
    let mut state: [L; SPONGE_WIDTH] = wires(wire_input(0), &w);
    for r in 0..HALF_N_FULL_ROUNDS {
        if r != 0 {
            L::constant_layer(&mut state, SECOND_HALF_FIRST_ROUND + r);
            for (i, s) in state.iter_mut().enumerate() {
                let sbox_in = w(wire_full_sbox(r, i));
                push(*s - sbox_in);
                *s = sbox_in;
            }
        }
        L::sbox_layer(&mut state);
        state = L::mds_layer(&state);
    }
    for (i, s) in state.iter().enumerate() {
        push(*s - w(wire_output(i)));
    }
}

/// The head's constraints in a recursive verifier. The partial rounds take the plain form
/// (round constants, one S-box, the MDS layer) where `PoseidonMdsGate` fits, as plonky2's own
/// `PoseidonGate` does: it computes the same S-box inputs and final state as the fast form.
fn head_constraints_circuit<F: RichField + Extendable<D>, const D: usize>(
    builder: &mut CircuitBuilder<F, D>,
    vars: &EvaluationTargets<'_, D>,
) -> Vec<ExtensionTarget<D>> {
    let w = |i: usize| vars.local_wires[i];
    let mut constraints = Vec::with_capacity(HEAD_CONSTRAINTS);
    let mut state: [ExtensionTarget<D>; SPONGE_WIDTH] = wires(wire_input(0), w);
    for r in 0..HALF_N_FULL_ROUNDS {
        <F as Poseidon>::constant_layer_circuit(builder, &mut state, r);
        if r != 0 {
            for (i, s) in state.iter_mut().enumerate() {
                let sbox_in = w(wire_full_sbox(r, i));
                constraints.push(builder.sub_extension(*s, sbox_in));
                *s = sbox_in;
            }
        }
        <F as Poseidon>::sbox_layer_circuit(builder, &mut state);
        state = <F as Poseidon>::mds_layer_circuit(builder, &state);
    }
    if builder.config.num_routed_wires >= PoseidonMdsGate::<F, D>::new().num_wires() {
        for r in 0..N_PARTIAL_ROUNDS {
            <F as Poseidon>::constant_layer_circuit(builder, &mut state, HALF_N_FULL_ROUNDS + r);
            let sbox_in = w(wire_partial_sbox(r));
            constraints.push(builder.sub_extension(state[0], sbox_in));
            state[0] = <F as Poseidon>::sbox_monomial_circuit(builder, sbox_in);
            state = <F as Poseidon>::mds_layer_circuit(builder, &state);
        }
    } else {
        <F as Poseidon>::partial_first_constant_layer_circuit(builder, &mut state);
        state = <F as Poseidon>::mds_partial_layer_init_circuit(builder, &state);
        for r in 0..N_PARTIAL_ROUNDS {
            let sbox_in = w(wire_partial_sbox(r));
            constraints.push(builder.sub_extension(state[0], sbox_in));
            state[0] = <F as Poseidon>::sbox_monomial_circuit(builder, sbox_in);
            let c = <F as Poseidon>::FAST_PARTIAL_ROUND_CONSTANTS[r];
            if c != 0 {
                let c = builder.constant_extension(F::Extension::from_canonical_u64(c));
                state[0] = builder.add_extension(state[0], c);
            }
            state = <F as Poseidon>::mds_partial_layer_fast_circuit(builder, &state, r);
        }
    }
    <F as Poseidon>::constant_layer_circuit(builder, &mut state, SECOND_HALF_FIRST_ROUND);
    for (i, s) in state.iter().enumerate() {
        constraints.push(builder.sub_extension(*s, w(wire_output(i))));
    }
    constraints
}

/// The tail's constraints in a recursive verifier.
fn tail_constraints_circuit<F: RichField + Extendable<D>, const D: usize>(
    builder: &mut CircuitBuilder<F, D>,
    vars: &EvaluationTargets<'_, D>,
) -> Vec<ExtensionTarget<D>> {
    let w = |i: usize| vars.local_wires[i];
    let mut constraints = Vec::with_capacity(TAIL_CONSTRAINTS);
    let mut state: [ExtensionTarget<D>; SPONGE_WIDTH] = wires(wire_input(0), w);
    for r in 0..HALF_N_FULL_ROUNDS {
        if r != 0 {
            <F as Poseidon>::constant_layer_circuit(builder, &mut state, SECOND_HALF_FIRST_ROUND + r);
            for (i, s) in state.iter_mut().enumerate() {
                let sbox_in = w(wire_full_sbox(r, i));
                constraints.push(builder.sub_extension(*s, sbox_in));
                *s = sbox_in;
            }
        }
        <F as Poseidon>::sbox_layer_circuit(builder, &mut state);
        state = <F as Poseidon>::mds_layer_circuit(builder, &state);
    }
    for (i, s) in state.iter().enumerate() {
        constraints.push(builder.sub_extension(*s, w(wire_output(i))));
    }
    constraints
}

/// Constraints of [`PoseidonHeadGate`]: three full rounds' S-box inputs, the partial rounds'
/// S-box inputs, the outputs.
const HEAD_CONSTRAINTS: usize = (HALF_N_FULL_ROUNDS - 1) * SPONGE_WIDTH + N_PARTIAL_ROUNDS + SPONGE_WIDTH;
/// Constraints of [`PoseidonTailGate`].
const TAIL_CONSTRAINTS: usize = (HALF_N_FULL_ROUNDS - 1) * SPONGE_WIDTH + SPONGE_WIDTH;

/// Every wire of a head row from its inputs (the generator's computation).
pub(crate) fn head_witness<F: RichField>(input: [F; SPONGE_WIDTH]) -> [F; HEAD_WIRES] {
    let mut out = [F::ZERO; HEAD_WIRES];
    out[..SPONGE_WIDTH].copy_from_slice(&input);
    let mut state = input;
    for r in 0..HALF_N_FULL_ROUNDS {
        <F as Poseidon>::constant_layer(&mut state, r);
        if r != 0 {
            out[wire_full_sbox(r, 0)..wire_full_sbox(r, SPONGE_WIDTH)].copy_from_slice(&state);
        }
        <F as Poseidon>::sbox_layer(&mut state);
        state = <F as Poseidon>::mds_layer(&state);
    }
    <F as Poseidon>::partial_first_constant_layer(&mut state);
    state = <F as Poseidon>::mds_partial_layer_init(&state);
    for r in 0..N_PARTIAL_ROUNDS {
        out[wire_partial_sbox(r)] = state[0];
        state[0] = <F as Poseidon>::sbox_monomial(state[0])
            + F::from_canonical_u64(<F as Poseidon>::FAST_PARTIAL_ROUND_CONSTANTS[r]);
        state = <F as Poseidon>::mds_partial_layer_fast(&state, r);
    }
    <F as Poseidon>::constant_layer(&mut state, SECOND_HALF_FIRST_ROUND);
    out[wire_output(0)..wire_output(SPONGE_WIDTH)].copy_from_slice(&state);
    out
}

/// Every wire of a tail row from its inputs.
pub(crate) fn tail_witness<F: RichField>(input: [F; SPONGE_WIDTH]) -> [F; TAIL_WIRES] {
    let mut out = [F::ZERO; TAIL_WIRES];
    out[..SPONGE_WIDTH].copy_from_slice(&input);
    let mut state = input;
    for r in 0..HALF_N_FULL_ROUNDS {
        if r != 0 {
            <F as Poseidon>::constant_layer(&mut state, SECOND_HALF_FIRST_ROUND + r);
            out[wire_full_sbox(r, 0)..wire_full_sbox(r, SPONGE_WIDTH)].copy_from_slice(&state);
        }
        <F as Poseidon>::sbox_layer(&mut state);
        state = <F as Poseidon>::mds_layer(&state);
    }
    out[wire_output(0)..wire_output(SPONGE_WIDTH)].copy_from_slice(&state);
    out
}

/// The two gates differ only in their rounds; this names them for the shared plumbing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Head,
    Tail,
}

impl Part {
    const fn wires(self) -> usize {
        match self {
            Part::Head => HEAD_WIRES,
            Part::Tail => TAIL_WIRES,
        }
    }

    fn witness<F: RichField>(self, input: [F; SPONGE_WIDTH]) -> Vec<F> {
        match self {
            Part::Head => head_witness(input).to_vec(),
            Part::Tail => tail_witness(input).to_vec(),
        }
    }
}

macro_rules! poseidon_part_gate {
    ($gate:ident, $part:expr, $constraints:ident, $constraints_circuit:ident, $count:ident, $name:literal) => {
        impl<F: RichField + Extendable<D>, const D: usize> Gate<F, D> for $gate {
            fn id(&self) -> String {
                $name.into()
            }

            fn serialize(&self, _dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
                Ok(())
            }

            fn deserialize(_src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
                Ok(Self::default())
            }

            fn eval_unfiltered(&self, vars: EvaluationVars<'_, F, D>) -> Vec<F::Extension> {
                let mut constraints = Vec::with_capacity($count);
                $constraints::<Ext<F, F::Extension, D>>(
                    |i| Ext(vars.local_wires[i], PhantomData),
                    |c| constraints.push(c.0),
                );
                constraints
            }

            fn eval_unfiltered_base_one(
                &self,
                vars: EvaluationVarsBase<'_, F>,
                mut yield_constr: StridedConstraintConsumer<'_, F>,
            ) {
                $constraints::<Base<F>>(|i| Base(vars.local_wires[i]), |c| yield_constr.one(c.0));
            }

            fn eval_unfiltered_circuit(
                &self,
                builder: &mut CircuitBuilder<F, D>,
                vars: EvaluationTargets<'_, D>,
            ) -> Vec<ExtensionTarget<D>> {
                $constraints_circuit(builder, &vars)
            }

            fn generators(&self, row: usize, _local_constants: &[F]) -> Vec<WitnessGeneratorRef<F, D>> {
                let generator = PoseidonPartGenerator::<F, D> {
                    part: $part,
                    row,
                    #[cfg(test)]
                    fault: self.fault,
                    _field: PhantomData,
                };
                vec![WitnessGeneratorRef::new(generator.adapter())]
            }

            fn num_wires(&self) -> usize {
                $part.wires()
            }

            fn num_constants(&self) -> usize {
                0
            }

            fn degree(&self) -> usize {
                7
            }

            fn num_constraints(&self) -> usize {
                $count
            }
        }
    };
}

poseidon_part_gate!(
    PoseidonHeadGate,
    Part::Head,
    head_constraints,
    head_constraints_circuit,
    HEAD_CONSTRAINTS,
    "tgrid::PoseidonHeadGate"
);
poseidon_part_gate!(
    PoseidonTailGate,
    Part::Tail,
    tail_constraints,
    tail_constraints_circuit,
    TAIL_CONSTRAINTS,
    "tgrid::PoseidonTailGate"
);

/// Fills a head or tail row from its twelve inputs.
#[derive(Clone, Debug)]
pub(super) struct PoseidonPartGenerator<F, const D: usize> {
    part: Part,
    row: usize,
    #[cfg(test)]
    fault: Fault,
    _field: PhantomData<F>,
}

impl<F: RichField + Extendable<D>, const D: usize> SimpleGenerator<F, D> for PoseidonPartGenerator<F, D> {
    fn id(&self) -> String {
        match self.part {
            Part::Head => "tgrid::PoseidonHeadGenerator".into(),
            Part::Tail => "tgrid::PoseidonTailGenerator".into(),
        }
    }

    fn dependencies(&self) -> Vec<Target> {
        row_inputs(self.row)
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        fill_row(
            self.row,
            witness,
            out,
            |input| self.part.witness(input),
            #[cfg(test)]
            self.fault,
        )
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_bool(self.part == Part::Tail)?;
        dst.write_usize(self.row)
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        let part = if src.read_bool()? { Part::Tail } else { Part::Head };
        Ok(Self {
            part,
            row: src.read_usize()?,
            #[cfg(test)]
            fault: None,
            _field: PhantomData,
        })
    }
}

/// The twelve input wires of a Poseidon row of either family: what its generator waits for.
pub(super) fn row_inputs(row: usize) -> Vec<Target> {
    (0..SPONGE_WIDTH).map(|i| Target::wire(row, wire_input(i))).collect()
}

/// Fills Poseidon row `row` from its twelve inputs: every later wire as `compute` gives it (a
/// test `fault` adds one to that wire).
pub(super) fn fill_row<F: RichField>(
    row: usize,
    witness: &PartitionWitness<'_, F>,
    out: &mut GeneratedValues<F>,
    compute: impl FnOnce([F; SPONGE_WIDTH]) -> Vec<F>,
    #[cfg(test)] fault: Fault,
) -> anyhow::Result<()> {
    let input: [F; SPONGE_WIDTH] = std::array::from_fn(|i| witness.get_target(Target::wire(row, wire_input(i))));
    #[allow(unused_mut)]
    let mut values = compute(input);
    #[cfg(test)]
    if let Some(w) = fault {
        values[w] += F::ONE;
    }
    for (w, v) in values.into_iter().enumerate().skip(SPONGE_WIDTH) {
        out.set_target(Target::wire(row, w), v)?;
    }
    Ok(())
}

/// The permutation of `inputs` in two narrow rows (`head` then `tail`; tests pass faulty ones).
pub(crate) fn permute_rows<F: RichField + Extendable<D>, const D: usize>(
    builder: &mut CircuitBuilder<F, D>,
    inputs: [Target; SPONGE_WIDTH],
    head: PoseidonHeadGate,
    tail: PoseidonTailGate,
) -> [Target; SPONGE_WIDTH] {
    let head_row = builder.add_gate(head, vec![]);
    let tail_row = builder.add_gate(tail, vec![]);
    for (i, &x) in inputs.iter().enumerate() {
        builder.connect(x, Target::wire(head_row, wire_input(i)));
        builder.connect(Target::wire(head_row, wire_output(i)), Target::wire(tail_row, wire_input(i)));
    }
    std::array::from_fn(|i| Target::wire(tail_row, wire_output(i)))
}
