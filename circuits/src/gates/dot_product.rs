//! `DotProductGate`: `out = acc + Σ_j (a_j − c_a)·(b_j − c_b)` over wire pairs, with the two
//! zero-point offsets `c_a`, `c_b` as the row's constants.
//!
//! A product of two activations (attention scores `q·kᵀ`, weights times values) has no constant
//! to put in a row, so plonky2's `ArithmeticGate` spends four wires per product (20 per row), plus
//! one operation per factor to subtract its zero point. This gate takes `2·terms + 2` wires per
//! operation and centers the factors in the constraint itself: 36–39 products per row of 80
//! routed wires, and no centering operations.

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

/// Index of the row constant subtracted from every `a_j`.
pub(crate) const CONST_OFFSET_A: usize = 0;
/// Index of the row constant subtracted from every `b_j`.
pub(crate) const CONST_OFFSET_B: usize = 1;

/// Widths (products per operation) a product may use: 3, 2 and 1 operations per 80 routed wires.
pub const DOT_PRODUCT_TERMS: [usize; 3] = [12, 19, 39];

/// `num_ops` independent operations `out_i = acc_i + Σ_{j<terms} (a_{i,j} − c_a)·(b_{i,j} − c_b)`
/// sharing the row's two offsets. Wires of operation `i`: `a_{i,0..terms}`, `b_{i,0..terms}`,
/// `acc_i`, `out_i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DotProductGate {
    /// Products per operation.
    pub terms: usize,
    /// Operations per row.
    pub num_ops: usize,
    /// Tests only: the generator writes `out + 1`, a witness that breaks the constraint. The
    /// gate's id and constraints are unchanged, so the verifier's circuit is the honest one.
    #[cfg(test)]
    pub(crate) faulty: bool,
}

impl DotProductGate {
    /// The gate with `terms` products per operation and as many operations as `routed_wires`
    /// hold.
    pub const fn new(terms: usize, routed_wires: usize) -> Self {
        Self {
            terms,
            num_ops: routed_wires / (2 * terms + 2),
            #[cfg(test)]
            faulty: false,
        }
    }

    /// The width of [`DOT_PRODUCT_TERMS`] that proves sums of `len` products in the fewest rows
    /// (chunks of one sum chained through `acc`), and those rows per sum.
    pub fn for_len(len: usize, routed_wires: usize) -> (Self, f64) {
        DOT_PRODUCT_TERMS
            .iter()
            .map(|&terms| {
                let gate = Self::new(terms, routed_wires);
                (gate, len.max(1).div_ceil(terms) as f64 / gate.num_ops as f64)
            })
            .min_by(|x, y| x.1.total_cmp(&y.1))
            .expect("widths are listed")
    }

    const fn wires_per_op(&self) -> usize {
        2 * self.terms + 2
    }

    /// Wire of the first factor of product `j` of operation `i`.
    pub const fn wire_a(&self, i: usize, j: usize) -> usize {
        i * self.wires_per_op() + j
    }

    /// Wire of the second factor of product `j` of operation `i`.
    pub const fn wire_b(&self, i: usize, j: usize) -> usize {
        i * self.wires_per_op() + self.terms + j
    }

    /// Wire of the accumulator input of operation `i`.
    pub const fn wire_acc(&self, i: usize) -> usize {
        i * self.wires_per_op() + 2 * self.terms
    }

    /// Wire of the output of operation `i`.
    pub const fn wire_out(&self, i: usize) -> usize {
        i * self.wires_per_op() + 2 * self.terms + 1
    }

    /// `out − acc − Σ (a_j − c_a)(b_j − c_b)` of operation `i` over any field-like values (one
    /// definition for the native and packed evaluations).
    fn constraint<T>(&self, i: usize, wire: impl Fn(usize) -> T, c_a: T, c_b: T) -> T
    where
        T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + std::ops::Mul<Output = T>,
    {
        let sum = (0..self.terms)
            .fold(wire(self.wire_acc(i)), |s, j| s + (wire(self.wire_a(i, j)) - c_a) * (wire(self.wire_b(i, j)) - c_b));
        wire(self.wire_out(i)) - sum
    }
}

impl<F: RichField + Extendable<D>, const D: usize> Gate<F, D> for DotProductGate {
    fn id(&self) -> String {
        format!("DotProductGate {{ terms: {}, num_ops: {} }}", self.terms, self.num_ops)
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_usize(self.terms)?;
        dst.write_usize(self.num_ops)
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        read_gate(src)
    }

    fn eval_unfiltered(&self, vars: EvaluationVars<'_, F, D>) -> Vec<F::Extension> {
        let (c_a, c_b) = (vars.local_constants[CONST_OFFSET_A], vars.local_constants[CONST_OFFSET_B]);
        (0..self.num_ops).map(|i| self.constraint(i, |w| vars.local_wires[w], c_a, c_b)).collect()
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
        let (c_a, c_b) = (vars.local_constants[CONST_OFFSET_A], vars.local_constants[CONST_OFFSET_B]);
        (0..self.num_ops)
            .map(|i| {
                let mut sum = vars.local_wires[self.wire_acc(i)];
                for j in 0..self.terms {
                    let a = builder.sub_extension(vars.local_wires[self.wire_a(i, j)], c_a);
                    let b = builder.sub_extension(vars.local_wires[self.wire_b(i, j)], c_b);
                    sum = builder.mul_add_extension(a, b, sum);
                }
                builder.sub_extension(vars.local_wires[self.wire_out(i)], sum)
            })
            .collect()
    }

    fn generators(&self, row: usize, local_constants: &[F]) -> Vec<WitnessGeneratorRef<F, D>> {
        (0..self.num_ops)
            .map(|op| {
                let offsets = [local_constants[CONST_OFFSET_A], local_constants[CONST_OFFSET_B]];
                WitnessGeneratorRef::new(DotProductGenerator { gate: *self, row, op, offsets }.adapter())
            })
            .collect()
    }

    fn num_wires(&self) -> usize {
        self.num_ops * self.wires_per_op()
    }

    fn num_constants(&self) -> usize {
        2
    }

    fn degree(&self) -> usize {
        2
    }

    fn num_constraints(&self) -> usize {
        self.num_ops
    }
}

impl<F: RichField + Extendable<D>, const D: usize> PackedEvaluableBase<F, D> for DotProductGate {
    fn eval_unfiltered_base_packed<P: PackedField<Scalar = F>>(
        &self,
        vars: EvaluationVarsBasePacked<'_, P>,
        mut yield_constr: StridedConstraintConsumer<'_, P>,
    ) {
        let (c_a, c_b) = (vars.local_constants[CONST_OFFSET_A], vars.local_constants[CONST_OFFSET_B]);
        for i in 0..self.num_ops {
            yield_constr.one(self.constraint(i, |w| vars.local_wires[w], c_a, c_b));
        }
    }
}

/// Computes the output wire of one operation.
#[derive(Clone, Debug)]
pub(super) struct DotProductGenerator<F> {
    gate: DotProductGate,
    row: usize,
    op: usize,
    offsets: [F; 2],
}

impl<F: RichField + Extendable<D>, const D: usize> SimpleGenerator<F, D> for DotProductGenerator<F> {
    fn id(&self) -> String {
        "tgrid::DotProductGenerator".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        let (g, op) = (self.gate, self.op);
        (0..g.terms)
            .flat_map(|j| [g.wire_a(op, j), g.wire_b(op, j)])
            .chain([g.wire_acc(op)])
            .map(|w| Target::wire(self.row, w))
            .collect()
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        let wire = |w: usize| witness.get_target(Target::wire(self.row, w));
        let [c_a, c_b] = self.offsets;
        #[allow(unused_mut)]
        let mut sum = (0..self.gate.terms).fold(wire(self.gate.wire_acc(self.op)), |s, j| {
            s + (wire(self.gate.wire_a(self.op, j)) - c_a) * (wire(self.gate.wire_b(self.op, j)) - c_b)
        });
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
        dst.write_field_vec(&self.offsets)
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        let gate = read_gate(src)?;
        let (row, op) = (src.read_usize()?, src.read_usize()?);
        let offsets = src.read_field_vec(2)?;
        Ok(Self { gate, row, op, offsets: [offsets[0], offsets[1]] })
    }
}

fn read_gate(src: &mut Buffer<'_>) -> IoResult<DotProductGate> {
    let (terms, num_ops) = (src.read_usize()?, src.read_usize()?);
    Ok(DotProductGate {
        terms,
        num_ops,
        #[cfg(test)]
        faulty: false,
    })
}
