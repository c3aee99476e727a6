//! `RequantizeGate`: the requantization identities of docs/quantization.md for several elements
//! per row, with the element's fixed-point parameters as the row's constants.
//!
//! Built from plonky2's arithmetic operations the same identities take about 14 operations per
//! element, spread over rows keyed by their constants (multiplier, shift, clamp bounds), i.e.
//! about two-thirds of a row each. One operation of this gate takes `4 + excess_bytes +
//! remainder_bytes` wires, so a row holds 8–10 elements of one channel.
//!
//! Operation wires: `acc`, `y'` (output minus the low clamp), `σ` (sign of the clamp excess), the
//! excess magnitude bytes `a_j`, the remainder bytes `r_j`, and the output `u`. Row constants:
//! `M`, `offset = 2^(s-1) + (zp - lo)·2^s`, `2^s`, `high = 127 - lo`, `lo + 128` (for the 16-bit
//! scores of a `ScoresSoftmax`: `high = 32767 - lo`, `lo + 32768`). With
//! `a = Σ a_j·256^j` and `r = Σ r_j·256^j` the constraints are
//!
//! ```text
//! acc·M + offset = (y' + a - 2σa)·2^s + r
//! (a - σa)·(y' - high) = 0
//! σa·y' = 0
//! σ·(σ - 1) = 0
//! u = y' + lo + 128
//! ```
//!
//! The bytes, `y'` and `u` are range checked by lookups outside the gate; the hint generator of
//! the gadget fills `y'`, `σ`, `a_j`, `r_j`, and this gate's generator derives `u`.

use plonky2::field::extension::Extendable;
use plonky2::field::packed::PackedField;
use plonky2::field::types::Field;
use plonky2::gates::gate::Gate;
use plonky2::gates::packed_util::PackedEvaluableBase;
use plonky2::gates::util::StridedConstraintConsumer;
use plonky2::hash::hash_types::RichField;
use plonky2::iop::ext_target::ExtensionTarget;
use plonky2::iop::generator::{GeneratedValues, SimpleGenerator, WitnessGeneratorRef};
use plonky2::iop::target::Target;
use plonky2::iop::witness::{PartitionWitness, Witness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::CommonCircuitData;
use plonky2::plonk::vars::{
    EvaluationTargets, EvaluationVars, EvaluationVarsBase, EvaluationVarsBaseBatch, EvaluationVarsBasePacked,
};
use plonky2::util::serialization::{Buffer, IoResult, Read, Write};

/// Index of each row constant.
pub(crate) const CONST_MULTIPLIER: usize = 0;
pub(crate) const CONST_OFFSET: usize = 1;
pub(crate) const CONST_TWO_S: usize = 2;
pub(crate) const CONST_HIGH: usize = 3;
pub(crate) const CONST_LO_OFFSET: usize = 4;
const NUM_CONSTANTS: usize = 5;
const CONSTRAINTS_PER_OP: usize = 5;

/// Requantization of `num_ops` elements per row; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequantizeGate {
    /// Bytes of the clamp excess magnitude `a`.
    pub excess_bytes: usize,
    /// Bytes of the remainder `r`.
    pub remainder_bytes: usize,
    /// Operations per row.
    pub num_ops: usize,
}

impl RequantizeGate {
    /// The gate for the given byte counts, with as many operations as `routed_wires` hold.
    pub const fn new(excess_bytes: usize, remainder_bytes: usize, routed_wires: usize) -> Self {
        Self { excess_bytes, remainder_bytes, num_ops: routed_wires / (4 + excess_bytes + remainder_bytes) }
    }

    const fn wires_per_op(&self) -> usize {
        4 + self.excess_bytes + self.remainder_bytes
    }

    /// The accumulator input of operation `i`.
    pub const fn wire_acc(&self, i: usize) -> usize {
        i * self.wires_per_op()
    }

    /// `y' = y - lo` of operation `i`.
    pub const fn wire_y_prime(&self, i: usize) -> usize {
        i * self.wires_per_op() + 1
    }

    /// `σ` of operation `i`.
    pub const fn wire_sigma(&self, i: usize) -> usize {
        i * self.wires_per_op() + 2
    }

    /// Byte `j` of the excess magnitude of operation `i`.
    pub const fn wire_excess(&self, i: usize, j: usize) -> usize {
        i * self.wires_per_op() + 3 + j
    }

    /// Byte `j` of the remainder of operation `i`.
    pub const fn wire_remainder(&self, i: usize, j: usize) -> usize {
        i * self.wires_per_op() + 3 + self.excess_bytes + j
    }

    /// The output byte `u = y + 128` of operation `i`.
    pub const fn wire_output(&self, i: usize) -> usize {
        i * self.wires_per_op() + 3 + self.excess_bytes + self.remainder_bytes
    }

    /// The five constraints of operation `i` over any field-like values (one definition for the
    /// native, packed and extension evaluations).
    fn constraints<T>(
        &self,
        i: usize,
        wire: impl Fn(usize) -> T,
        c: impl Fn(usize) -> T,
        byte: impl Fn(u64) -> T,
    ) -> [T; 5]
    where
        T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + std::ops::Mul<Output = T>,
    {
        let packed = |wires: &mut dyn Iterator<Item = usize>| {
            let mut acc: Option<T> = None;
            for (j, w) in wires.enumerate() {
                let term = wire(w) * byte(1 << (8 * j));
                acc = Some(acc.map_or(term, |a| a + term));
            }
            acc
        };
        let a = packed(&mut (0..self.excess_bytes).map(|j| self.wire_excess(i, j)));
        let r = packed(&mut (0..self.remainder_bytes).map(|j| self.wire_remainder(i, j)));
        let (y, sigma) = (wire(self.wire_y_prime(i)), wire(self.wire_sigma(i)));
        let zero = byte(0);
        let a = a.unwrap_or(zero);
        let r = r.unwrap_or(zero);
        let sigma_a = sigma * a;
        let z = y + a - sigma_a - sigma_a;
        [
            wire(self.wire_acc(i)) * c(CONST_MULTIPLIER) + c(CONST_OFFSET) - z * c(CONST_TWO_S) - r,
            (a - sigma_a) * (y - c(CONST_HIGH)),
            sigma_a * y,
            sigma * sigma - sigma,
            wire(self.wire_output(i)) - y - c(CONST_LO_OFFSET),
        ]
    }
}

impl<F: RichField + Extendable<D>, const D: usize> Gate<F, D> for RequantizeGate {
    fn id(&self) -> String {
        format!("{self:?}")
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_usize(self.excess_bytes)?;
        dst.write_usize(self.remainder_bytes)?;
        dst.write_usize(self.num_ops)
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        Ok(Self { excess_bytes: src.read_usize()?, remainder_bytes: src.read_usize()?, num_ops: src.read_usize()? })
    }

    fn eval_unfiltered(&self, vars: EvaluationVars<'_, F, D>) -> Vec<F::Extension> {
        (0..self.num_ops)
            .flat_map(|i| {
                self.constraints(
                    i,
                    |w| vars.local_wires[w],
                    |k| vars.local_constants[k],
                    F::Extension::from_canonical_u64,
                )
            })
            .collect()
    }

    fn eval_unfiltered_base_one(
        &self,
        _vars: EvaluationVarsBase<'_, F>,
        _yield_constr: StridedConstraintConsumer<'_, F>,
    ) {
        unreachable!("eval_unfiltered_base_batch is overridden by the packed evaluation")
    }

    fn eval_unfiltered_base_batch(&self, vars_base: EvaluationVarsBaseBatch<'_, F>) -> Vec<F> {
        self.eval_unfiltered_base_batch_packed(vars_base)
    }

    fn eval_unfiltered_circuit(
        &self,
        builder: &mut CircuitBuilder<F, D>,
        vars: EvaluationTargets<'_, D>,
    ) -> Vec<ExtensionTarget<D>> {
        let mut constraints = Vec::with_capacity(self.num_ops * CONSTRAINTS_PER_OP);
        for i in 0..self.num_ops {
            let w = |k: usize| vars.local_wires[k];
            let c = |k: usize| vars.local_constants[k];
            let mut packed = |wires: Vec<usize>| {
                let mut acc = builder.zero_extension();
                for (j, k) in wires.into_iter().enumerate() {
                    acc = builder.mul_const_add_extension(F::from_canonical_u64(1 << (8 * j)), w(k), acc);
                }
                acc
            };
            let a = packed((0..self.excess_bytes).map(|j| self.wire_excess(i, j)).collect());
            let r = packed((0..self.remainder_bytes).map(|j| self.wire_remainder(i, j)).collect());
            let (y, sigma) = (w(self.wire_y_prime(i)), w(self.wire_sigma(i)));
            let sigma_a = builder.mul_extension(sigma, a);
            // z = y + a - 2σa
            let y_plus_a = builder.add_extension(y, a);
            let z = builder.arithmetic_extension(-F::TWO, F::ONE, sigma, a, y_plus_a);
            let lhs = builder.mul_add_extension(w(self.wire_acc(i)), c(CONST_MULTIPLIER), c(CONST_OFFSET));
            let rhs = builder.mul_add_extension(z, c(CONST_TWO_S), r);
            constraints.push(builder.sub_extension(lhs, rhs));
            let not_sigma_a = builder.sub_extension(a, sigma_a);
            let y_minus_high = builder.sub_extension(y, c(CONST_HIGH));
            constraints.push(builder.mul_extension(not_sigma_a, y_minus_high));
            constraints.push(builder.mul_extension(sigma_a, y));
            constraints.push(builder.mul_sub_extension(sigma, sigma, sigma));
            let y_lo = builder.add_extension(y, c(CONST_LO_OFFSET));
            constraints.push(builder.sub_extension(w(self.wire_output(i)), y_lo));
        }
        constraints
    }

    fn generators(&self, row: usize, local_constants: &[F]) -> Vec<WitnessGeneratorRef<F, D>> {
        (0..self.num_ops)
            .map(|op| {
                WitnessGeneratorRef::new(
                    RequantizeOutputGenerator { gate: *self, row, op, lo_offset: local_constants[CONST_LO_OFFSET] }
                        .adapter(),
                )
            })
            .collect()
    }

    fn num_wires(&self) -> usize {
        self.num_ops * self.wires_per_op()
    }

    fn num_constants(&self) -> usize {
        NUM_CONSTANTS
    }

    fn degree(&self) -> usize {
        3
    }

    fn num_constraints(&self) -> usize {
        self.num_ops * CONSTRAINTS_PER_OP
    }
}

impl<F: RichField + Extendable<D>, const D: usize> PackedEvaluableBase<F, D> for RequantizeGate {
    fn eval_unfiltered_base_packed<P: PackedField<Scalar = F>>(
        &self,
        vars: EvaluationVarsBasePacked<'_, P>,
        mut yield_constr: StridedConstraintConsumer<'_, P>,
    ) {
        for i in 0..self.num_ops {
            yield_constr.many(self.constraints(
                i,
                |w| vars.local_wires[w],
                |k| vars.local_constants[k],
                |b| P::from(F::from_canonical_u64(b)),
            ));
        }
    }
}

/// Derives the output byte `u = y' + lo + 128` of one operation.
#[derive(Clone, Debug)]
pub(super) struct RequantizeOutputGenerator<F> {
    gate: RequantizeGate,
    row: usize,
    op: usize,
    lo_offset: F,
}

impl<F: RichField + Extendable<D>, const D: usize> SimpleGenerator<F, D> for RequantizeOutputGenerator<F> {
    fn id(&self) -> String {
        "tgrid::RequantizeOutputGenerator".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        vec![Target::wire(self.row, self.gate.wire_y_prime(self.op))]
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        let y = witness.get_target(Target::wire(self.row, self.gate.wire_y_prime(self.op)));
        out.set_target(Target::wire(self.row, self.gate.wire_output(self.op)), y + self.lo_offset)
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_usize(self.gate.excess_bytes)?;
        dst.write_usize(self.gate.remainder_bytes)?;
        dst.write_usize(self.gate.num_ops)?;
        dst.write_usize(self.row)?;
        dst.write_usize(self.op)?;
        dst.write_field(self.lo_offset)
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        let gate = RequantizeGate {
            excess_bytes: src.read_usize()?,
            remainder_bytes: src.read_usize()?,
            num_ops: src.read_usize()?,
        };
        let (row, op) = (src.read_usize()?, src.read_usize()?);
        Ok(Self { gate, row, op, lo_offset: src.read_field()? })
    }
}
