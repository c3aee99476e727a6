//! `ByteRangeGate`: proves that wires hold bytes by four base-4 limbs each, with no lookup.
//!
//! A public task checks bytes with plonky2's lookup argument (40 per row). A private task
//! cannot: plonky2's prover computes the lookup argument's polynomials from the looked-up values
//! and their multiplicities and leaves them zero on every other row, so no blinding a circuit
//! adds reaches them, and their openings are functions of the secret activations. This gate's
//! limbs are ordinary wires, blinded like every wire ([`crate::zero_knowledge`]). Operation `i`
//! constrains
//!
//! ```text
//! value_i = l_i0 + 4·l_i1 + 16·l_i2 + 64·l_i3,   l·(l − 1)·(l − 2)·(l − 3) = 0 for each limb
//! ```
//!
//! so `value_i ∈ [0, 255]`. The limb constraints have degree 4, the largest at FRI rate 1/4, so
//! the gate is alone in its selector group; five wires per byte give 17 bytes per row of 85.

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
use plonky2::util::serialization::{Buffer, IoError, IoResult, Read, Write};

/// Base-4 limbs per byte.
pub const LIMBS: usize = 4;

/// `num_ops` byte checks. Value `i` is wire `i` (routed, so other gates' wires connect to it);
/// its limbs follow all the values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteRangeGate {
    /// Bytes checked per row.
    pub num_ops: usize,
}

impl ByteRangeGate {
    /// As many checks as `wires` hold, their values among the first `routed_wires`.
    pub const fn new(wires: usize, routed_wires: usize) -> Self {
        let by_wires = wires / (LIMBS + 1);
        Self { num_ops: if by_wires < routed_wires { by_wires } else { routed_wires } }
    }

    /// The wire of value `i`.
    pub const fn wire_value(&self, i: usize) -> usize {
        i
    }

    /// The wire of limb `j` (weight `4^j`) of value `i`.
    pub const fn wire_limb(&self, i: usize, j: usize) -> usize {
        self.num_ops + LIMBS * i + j
    }

    /// `value − Σ 4^j·l_j`, written with additions only so that one definition serves every
    /// field-like type.
    fn recomposition<T>(&self, i: usize, wire: impl Fn(usize) -> T) -> T
    where
        T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T>,
    {
        let times_four = |x: T| {
            let twice = x + x;
            twice + twice
        };
        let packed = (0..LIMBS - 1)
            .rev()
            .fold(wire(self.wire_limb(i, LIMBS - 1)), |acc, j| times_four(acc) + wire(self.wire_limb(i, j)));
        wire(self.wire_value(i)) - packed
    }

    /// `l·(l − 1)·(l − 2)·(l − 3) = s·(s + 2)` with `s = l² − 3l`: zero exactly on `{0, 1, 2, 3}`.
    fn limb_range<T>(l: T) -> T
    where
        T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + std::ops::Mul<Output = T>,
    {
        let s = l * l - l - l - l;
        s * s + s + s
    }

    /// Every constraint of operation `i`: the recomposition, then one per limb.
    fn constraints<T>(&self, i: usize, wire: impl Fn(usize) -> T) -> impl Iterator<Item = T>
    where
        T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + std::ops::Mul<Output = T>,
    {
        let limbs: Vec<T> = (0..LIMBS).map(|j| wire(self.wire_limb(i, j))).collect();
        std::iter::once(self.recomposition(i, &wire)).chain(limbs.into_iter().map(Self::limb_range))
    }
}

impl<F: RichField + Extendable<D>, const D: usize> Gate<F, D> for ByteRangeGate {
    fn id(&self) -> String {
        format!("{self:?}")
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_usize(self.num_ops)
    }

    fn deserialize(src: &mut Buffer<'_>, common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        read_gate(src, common.config.num_wires)
    }

    fn eval_unfiltered(&self, vars: EvaluationVars<'_, F, D>) -> Vec<F::Extension> {
        (0..self.num_ops).flat_map(|i| self.constraints(i, |w| vars.local_wires[w])).collect()
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
        let four = F::from_canonical_u64(4);
        let three = F::from_canonical_u64(3);
        let mut out = Vec::with_capacity(self.num_ops * (LIMBS + 1));
        for i in 0..self.num_ops {
            let limb = |j| vars.local_wires[self.wire_limb(i, j)];
            let mut packed = limb(LIMBS - 1);
            for j in (0..LIMBS - 1).rev() {
                packed = builder.mul_const_add_extension(four, packed, limb(j));
            }
            out.push(builder.sub_extension(vars.local_wires[self.wire_value(i)], packed));
            for j in 0..LIMBS {
                let l = limb(j);
                // s = l·l − 3·l; s·(s + 2) = s·s + 2·s.
                let s = builder.arithmetic_extension(F::ONE, -three, l, l, l);
                let two_s = builder.add_extension(s, s);
                out.push(builder.mul_add_extension(s, s, two_s));
            }
        }
        out
    }

    fn generators(&self, row: usize, _local_constants: &[F]) -> Vec<WitnessGeneratorRef<F, D>> {
        (0..self.num_ops)
            .map(|op| {
                let generator = ByteRangeGenerator {
                    gate: *self,
                    row,
                    op,
                    #[cfg(test)]
                    admit_any: false,
                };
                WitnessGeneratorRef::new(generator.adapter())
            })
            .collect()
    }

    fn num_wires(&self) -> usize {
        self.num_ops * (LIMBS + 1)
    }

    fn num_constants(&self) -> usize {
        0
    }

    fn degree(&self) -> usize {
        4
    }

    fn num_constraints(&self) -> usize {
        self.num_ops * (LIMBS + 1)
    }
}

impl<F: RichField + Extendable<D>, const D: usize> PackedEvaluableBase<F, D> for ByteRangeGate {
    fn eval_unfiltered_base_packed<P: PackedField<Scalar = F>>(
        &self,
        vars: EvaluationVarsBasePacked<'_, P>,
        mut yield_constr: StridedConstraintConsumer<'_, P>,
    ) {
        for i in 0..self.num_ops {
            for c in self.constraints(i, |w| vars.local_wires[w]) {
                yield_constr.one(c);
            }
        }
    }
}

/// Writes the limbs of one value. An honest prover refuses a value outside `[0, 255]`; the
/// test-only `admit_any` writes limbs that recompose to any value, the top one out of range, so
/// that a proof of a non-byte reaches the verifier ([`crate::malicious`]).
#[derive(Clone, Debug)]
pub(crate) struct ByteRangeGenerator {
    pub(crate) gate: ByteRangeGate,
    pub(crate) row: usize,
    pub(crate) op: usize,
    #[cfg(test)]
    pub(crate) admit_any: bool,
}

impl<F: RichField + Extendable<D>, const D: usize> SimpleGenerator<F, D> for ByteRangeGenerator {
    fn id(&self) -> String {
        "tgrid::ByteRangeGenerator".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        vec![Target::wire(self.row, self.gate.wire_value(self.op))]
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        let value = witness.get_target(Target::wire(self.row, self.gate.wire_value(self.op)));
        let v = value.to_canonical_u64();
        #[cfg(test)]
        let admit = self.admit_any;
        #[cfg(not(test))]
        let admit = false;
        if v > 255 && !admit {
            anyhow::bail!("byte range check: {v} is not a byte (row {}, check {})", self.row, self.op);
        }
        let limb = |j: usize| Target::wire(self.row, self.gate.wire_limb(self.op, j));
        for j in 0..LIMBS - 1 {
            out.set_target(limb(j), F::from_canonical_u64((v >> (2 * j)) & 3))?;
        }
        // For a byte, `v >> 6`; otherwise the field element that still recomposes to `value`.
        let low = F::from_canonical_u64(v & 63);
        let top = (value - low) * F::from_canonical_u64(64).inverse();
        out.set_target(limb(LIMBS - 1), top)
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_usize(self.gate.num_ops)?;
        dst.write_usize(self.row)?;
        dst.write_usize(self.op)
    }

    fn deserialize(src: &mut Buffer<'_>, common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        let gate = read_gate(src, common.config.num_wires)?;
        let (row, op) = (src.read_usize()?, src.read_usize()?);
        if op >= gate.num_ops {
            return Err(IoError);
        }
        Ok(Self {
            gate,
            row,
            op,
            #[cfg(test)]
            admit_any: false,
        })
    }
}

/// Reads a gate, refusing shapes no circuit builds: no checks, or more wires than the circuit's.
fn read_gate(src: &mut Buffer<'_>, num_wires: usize) -> IoResult<ByteRangeGate> {
    let num_ops = src.read_usize()?;
    if num_ops == 0 || num_ops.checked_mul(LIMBS + 1).is_none_or(|w| w > num_wires) {
        return Err(IoError);
    }
    Ok(ByteRangeGate { num_ops })
}
