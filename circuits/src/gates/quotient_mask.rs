//! `QuotientMaskGate`: randomizes every chunk of a private circuit's quotient polynomials.
//!
//! plonky2 splits each quotient `t = V/Z_H` into `k` chunks of degree below `n` and opens each
//! chunk at ζ and at every FRI query. The split of a given `t` is unique, so a prover cannot
//! blind the chunks; but `t` itself changes with every constraint the circuit adds. This gate,
//! alone in its selector group on one row, adds for each masking column `m_j` the constraint
//!
//! ```text
//! v^e · m_j − image_j = 0        (v: one more masking column, image_j: a wire it fills)
//! ```
//!
//! of degree `e + 1 = k`, so with its selector factor it reaches the circuit's largest
//! constraint degree `k + 1`. Its selector factor is a multiple of the row's Lagrange
//! polynomial, so the gate adds `λ·(v^e·m_j − image_j)/(X − ω^r)` to the quotient: a polynomial
//! of degree about `k·n` spread over all `k` chunks and, for any fixed `v` random on every row,
//! linear in the uniformly random column `m_j`. The multiplier must be dense: a row constant
//! (zero on most rows) would give `v^e = Z_H^e·h^e` with few poles in `h`, and the chunks of
//! such a product are nearly proportional to one another. Each challenge's quotient takes the
//! `D` masks under its own powers of α, so what a proof opens of the chunks is uniformly random
//! apart from one combination per point, the one the verifier computes from the masking
//! columns' openings (`zero_knowledge::tests` checks the rank of that map on a circuit).

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

/// One constraint `v^exponent · mask_j − image_j` per mask `j`. The circuit's wires end in the
/// `masks` mask columns and then the multiplier `v`; image `j` is wire `j`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuotientMaskGate {
    /// The circuit's wire count (the masking columns end it).
    pub num_wires: usize,
    /// Masks (the multiplier is one more column).
    pub masks: usize,
    /// `e`: the gate's degree is `e + 1`.
    pub exponent: usize,
}

impl QuotientMaskGate {
    /// The gate for a circuit of `num_wires` wires ending in `masks` masks and the multiplier,
    /// whose quotient has `quotient_degree_factor` chunks: degree `quotient_degree_factor`, so
    /// the gate is alone in its selector group and its filtered degree is the largest allowed.
    pub const fn new(num_wires: usize, masks: usize, quotient_degree_factor: usize) -> Self {
        Self { num_wires, masks, exponent: quotient_degree_factor - 1 }
    }

    /// The mask read by constraint `j`.
    pub const fn wire_mask(&self, j: usize) -> usize {
        self.num_wires - 1 - self.masks + j
    }

    /// The multiplier `v`.
    pub const fn wire_multiplier(&self) -> usize {
        self.num_wires - 1
    }

    /// The image wire of constraint `j`.
    pub const fn wire_image(&self, j: usize) -> usize {
        j
    }

    /// `v^e · mask`: the image the constraint asks for.
    fn image<T: Copy + std::ops::Mul<Output = T>>(&self, mask: T, v: T) -> T {
        (0..self.exponent).fold(mask, |acc, _| acc * v)
    }

    /// `v^e · mask_j − image_j` over any field-like values.
    fn constraint<T>(&self, j: usize, wire: impl Fn(usize) -> T) -> T
    where
        T: Copy + std::ops::Sub<Output = T> + std::ops::Mul<Output = T>,
    {
        self.image(wire(self.wire_mask(j)), wire(self.wire_multiplier())) - wire(self.wire_image(j))
    }
}

impl<F: RichField + Extendable<D>, const D: usize> Gate<F, D> for QuotientMaskGate {
    fn id(&self) -> String {
        format!("{self:?}")
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_usize(self.num_wires)?;
        dst.write_usize(self.masks)?;
        dst.write_usize(self.exponent)
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        read_gate(src)
    }

    fn eval_unfiltered(&self, vars: EvaluationVars<'_, F, D>) -> Vec<F::Extension> {
        (0..self.masks).map(|j| self.constraint(j, |w| vars.local_wires[w])).collect()
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
        let v = vars.local_wires[self.wire_multiplier()];
        (0..self.masks)
            .map(|j| {
                let mut scaled = vars.local_wires[self.wire_mask(j)];
                for _ in 0..self.exponent {
                    scaled = builder.mul_extension(scaled, v);
                }
                builder.sub_extension(scaled, vars.local_wires[self.wire_image(j)])
            })
            .collect()
    }

    fn generators(&self, row: usize, _local_constants: &[F]) -> Vec<WitnessGeneratorRef<F, D>> {
        let generator = QuotientMaskGenerator {
            gate: *self,
            row,
            #[cfg(test)]
            faulty: false,
        };
        vec![WitnessGeneratorRef::new(generator.adapter())]
    }

    fn num_wires(&self) -> usize {
        self.num_wires
    }

    fn num_constants(&self) -> usize {
        0
    }

    fn degree(&self) -> usize {
        self.exponent + 1
    }

    fn num_constraints(&self) -> usize {
        self.masks
    }
}

impl<F: RichField + Extendable<D>, const D: usize> PackedEvaluableBase<F, D> for QuotientMaskGate {
    fn eval_unfiltered_base_packed<P: PackedField<Scalar = F>>(
        &self,
        vars: EvaluationVarsBasePacked<'_, P>,
        mut yield_constr: StridedConstraintConsumer<'_, P>,
    ) {
        for j in 0..self.masks {
            yield_constr.one(self.constraint(j, |w| vars.local_wires[w]));
        }
    }
}

/// Fills the image wires from the masking columns of the gate's row.
#[derive(Clone, Debug)]
pub(crate) struct QuotientMaskGenerator {
    pub(crate) gate: QuotientMaskGate,
    pub(crate) row: usize,
    /// Tests only: writes `image + 1`, a witness that breaks the constraint.
    #[cfg(test)]
    pub(crate) faulty: bool,
}

impl<F: RichField + Extendable<D>, const D: usize> SimpleGenerator<F, D> for QuotientMaskGenerator {
    fn id(&self) -> String {
        "tgrid::QuotientMaskGenerator".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        (0..self.gate.masks)
            .map(|j| self.gate.wire_mask(j))
            .chain([self.gate.wire_multiplier()])
            .map(|w| Target::wire(self.row, w))
            .collect()
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        let wire = |w: usize| witness.get_target(Target::wire(self.row, w));
        for j in 0..self.gate.masks {
            #[allow(unused_mut)]
            let mut image = self.gate.image(wire(self.gate.wire_mask(j)), wire(self.gate.wire_multiplier()));
            #[cfg(test)]
            if self.faulty {
                image += F::ONE;
            }
            out.set_target(Target::wire(self.row, self.gate.wire_image(j)), image)?;
        }
        Ok(())
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_usize(self.gate.num_wires)?;
        dst.write_usize(self.gate.masks)?;
        dst.write_usize(self.gate.exponent)?;
        dst.write_usize(self.row)
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        let gate = read_gate(src)?;
        Ok(Self {
            gate,
            row: src.read_usize()?,
            #[cfg(test)]
            faulty: false,
        })
    }
}

/// Reads a gate, refusing shapes no circuit builds (a degree below 2, no masks, images that
/// overlap the masking columns) so a damaged cache entry cannot make a vacuous constraint.
fn read_gate(src: &mut Buffer<'_>) -> IoResult<QuotientMaskGate> {
    let (num_wires, masks, exponent) = (src.read_usize()?, src.read_usize()?, src.read_usize()?);
    if masks == 0 || 2 * masks + 1 > num_wires || exponent == 0 {
        return Err(plonky2::util::serialization::IoError);
    }
    Ok(QuotientMaskGate { num_wires, masks, exponent })
}
