//! `WeightedSumGate`: `out = acc + Σ_j c_j · x_j` with the weights `c_j` as gate constants.
//!
//! plonky2's `ArithmeticGate` spends four wires per multiply-accumulate (two multiplicands, the
//! addend, the output) and shares its two constants across the row, so a row holds 20 MACs of
//! one weight value. A layer with constant weights does better with the weights in the row's
//! constants: one operation then covers `terms` MACs in `terms + 2` wires, and every output that
//! uses the same weight chunk (all positions of a convolution channel) shares rows, `num_ops`
//! operations per row. Constants are preprocessed polynomials, so they cost nothing per proof.

use plonky2::field::extension::Extendable;
use plonky2::field::packed::PackedField;
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

/// `num_ops` independent operations `out_i = acc_i + Σ_{j<terms} c_j · x_{i,j}` sharing the
/// row's `terms` constants. Wires of operation `i`: `x_{i,0..terms}`, `acc_i`, `out_i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WeightedSumGate {
    /// Products per operation (= constants per row).
    pub terms: usize,
    /// Operations per row.
    pub num_ops: usize,
    /// Tests only: the generator writes `out + 1`, a witness that breaks the constraint. The
    /// gate's id and constraints are unchanged, so the verifier's circuit is the honest one.
    #[cfg(test)]
    pub(crate) faulty: bool,
}

impl WeightedSumGate {
    /// The gate with `terms` products per operation and as many operations as `routed_wires`
    /// hold.
    pub const fn new(terms: usize, routed_wires: usize) -> Self {
        Self {
            terms,
            num_ops: routed_wires / (terms + 2),
            #[cfg(test)]
            faulty: false,
        }
    }

    const fn wires_per_op(&self) -> usize {
        self.terms + 2
    }

    /// Wire of term `j` of operation `i`.
    pub const fn wire_x(&self, i: usize, j: usize) -> usize {
        i * self.wires_per_op() + j
    }

    /// Wire of the accumulator input of operation `i`.
    pub const fn wire_acc(&self, i: usize) -> usize {
        i * self.wires_per_op() + self.terms
    }

    /// Wire of the output of operation `i`.
    pub const fn wire_out(&self, i: usize) -> usize {
        i * self.wires_per_op() + self.terms + 1
    }
}

impl<F: RichField + Extendable<D>, const D: usize> Gate<F, D> for WeightedSumGate {
    fn id(&self) -> String {
        format!("WeightedSumGate {{ terms: {}, num_ops: {} }}", self.terms, self.num_ops)
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_usize(self.terms)?;
        dst.write_usize(self.num_ops)
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        read_gate(src)
    }

    fn eval_unfiltered(&self, vars: EvaluationVars<'_, F, D>) -> Vec<F::Extension> {
        (0..self.num_ops)
            .map(|i| {
                let sum = (0..self.terms).fold(vars.local_wires[self.wire_acc(i)], |s, j| {
                    s + vars.local_constants[j] * vars.local_wires[self.wire_x(i, j)]
                });
                vars.local_wires[self.wire_out(i)] - sum
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
        (0..self.num_ops)
            .map(|i| {
                let mut sum = vars.local_wires[self.wire_acc(i)];
                for j in 0..self.terms {
                    sum = builder.mul_add_extension(vars.local_constants[j], vars.local_wires[self.wire_x(i, j)], sum);
                }
                builder.sub_extension(vars.local_wires[self.wire_out(i)], sum)
            })
            .collect()
    }

    fn generators(&self, row: usize, local_constants: &[F]) -> Vec<WitnessGeneratorRef<F, D>> {
        (0..self.num_ops)
            .map(|op| {
                WitnessGeneratorRef::new(
                    WeightedSumGenerator { gate: *self, row, op, weights: local_constants[..self.terms].to_vec() }
                        .adapter(),
                )
            })
            .collect()
    }

    fn num_wires(&self) -> usize {
        self.num_ops * self.wires_per_op()
    }

    fn num_constants(&self) -> usize {
        self.terms
    }

    fn degree(&self) -> usize {
        2
    }

    fn num_constraints(&self) -> usize {
        self.num_ops
    }
}

impl<F: RichField + Extendable<D>, const D: usize> PackedEvaluableBase<F, D> for WeightedSumGate {
    fn eval_unfiltered_base_packed<P: PackedField<Scalar = F>>(
        &self,
        vars: EvaluationVarsBasePacked<'_, P>,
        mut yield_constr: StridedConstraintConsumer<'_, P>,
    ) {
        for i in 0..self.num_ops {
            let mut sum = vars.local_wires[self.wire_acc(i)];
            for j in 0..self.terms {
                sum += vars.local_constants[j] * vars.local_wires[self.wire_x(i, j)];
            }
            yield_constr.one(vars.local_wires[self.wire_out(i)] - sum);
        }
    }
}

/// Computes the output wire of one operation.
#[derive(Clone, Debug)]
pub(super) struct WeightedSumGenerator<F> {
    gate: WeightedSumGate,
    row: usize,
    op: usize,
    weights: Vec<F>,
}

impl<F: RichField + Extendable<D>, const D: usize> SimpleGenerator<F, D> for WeightedSumGenerator<F> {
    fn id(&self) -> String {
        "tgrid::WeightedSumGenerator".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        (0..self.gate.terms)
            .map(|j| self.gate.wire_x(self.op, j))
            .chain([self.gate.wire_acc(self.op)])
            .map(|w| Target::wire(self.row, w))
            .collect()
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        let wire = |w: usize| witness.get_target(Target::wire(self.row, w));
        #[allow(unused_mut)]
        let mut sum = self
            .weights
            .iter()
            .enumerate()
            .fold(wire(self.gate.wire_acc(self.op)), |s, (j, &c)| s + c * wire(self.gate.wire_x(self.op, j)));
        #[cfg(test)]
        if self.gate.faulty {
            sum += F::ONE;
        }
        out.set_target(Target::wire(self.row, self.gate.wire_out(self.op)), sum)
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_usize(self.gate.terms)?;
        dst.write_usize(self.gate.num_ops)?;
        dst.write_usize(self.row)?;
        dst.write_usize(self.op)?;
        dst.write_field_vec(&self.weights[..self.gate.terms])
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        let gate = read_gate(src)?;
        let (row, op) = (src.read_usize()?, src.read_usize()?);
        Ok(Self { gate, row, op, weights: src.read_field_vec(gate.terms)? })
    }
}

fn read_gate(src: &mut Buffer<'_>) -> IoResult<WeightedSumGate> {
    let (terms, num_ops) = (src.read_usize()?, src.read_usize()?);
    Ok(WeightedSumGate {
        terms,
        num_ops,
        #[cfg(test)]
        faulty: false,
    })
}
