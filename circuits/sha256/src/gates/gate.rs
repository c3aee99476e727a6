//! The plonky2 [`Gate`] and witness generator shared by the three SHA-256 rows.

use std::fmt::Debug;
use std::marker::PhantomData;

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

use super::algebra::{Targets, Values};
use super::Algebra;

/// One kind of SHA-256 row: its wires, constraints and honest witness.
pub trait ShaRow: 'static + Send + Sync + Debug + Default + Copy {
    /// Name in the gate's id.
    const NAME: &'static str;
    /// Wires of one row.
    const NUM_WIRES: usize;
    /// Row constants (the round constant `K_t`).
    const NUM_CONSTANTS: usize;
    /// Constraints of one row.
    const NUM_CONSTRAINTS: usize;
    /// The wires a row's witness is computed from (the rest are derived).
    const INPUTS: &'static [usize];

    /// Every constraint of one row; zero exactly on a valid row.
    #[doc(hidden)]
    fn constraints<A: Algebra>(alg: &mut A, wires: &[A::V], constants: &[A::V]) -> Vec<A::V>;

    /// The derived wires of an honest row, from the input wires and the row constants; `None`
    /// if an input that must be a word is not below 2^32.
    fn witness(inputs: &[u64], constants: &[u64]) -> Option<Vec<(usize, u64)>>;
}

/// A gate holding one SHA-256 operation `R` per row.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Sha256Gate<R> {
    _row: PhantomData<R>,
}

impl<R: ShaRow> Sha256Gate<R> {
    /// The gate.
    pub const fn new() -> Self {
        Self { _row: PhantomData }
    }
}

impl<F: RichField + Extendable<D>, const D: usize, R: ShaRow> Gate<F, D> for Sha256Gate<R> {
    fn id(&self) -> String {
        format!("tgrid::Sha256Gate<{}>", R::NAME)
    }

    fn serialize(&self, _dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        Ok(())
    }

    fn deserialize(_src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        Ok(Self::new())
    }

    fn eval_unfiltered(&self, vars: EvaluationVars<'_, F, D>) -> Vec<F::Extension> {
        let mut alg = Values::new(F::Extension::from_canonical_u64);
        R::constraints(&mut alg, vars.local_wires, vars.local_constants)
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
        let mut alg = Targets { builder };
        R::constraints(&mut alg, vars.local_wires, vars.local_constants)
    }

    fn generators(&self, row: usize, local_constants: &[F]) -> Vec<WitnessGeneratorRef<F, D>> {
        let constants = local_constants[..R::NUM_CONSTANTS].iter().map(|c| c.to_canonical_u64()).collect();
        vec![WitnessGeneratorRef::new(ShaRowGenerator::<R> { row, constants, _row: PhantomData }.adapter())]
    }

    fn num_wires(&self) -> usize {
        R::NUM_WIRES
    }

    fn num_constants(&self) -> usize {
        R::NUM_CONSTANTS
    }

    fn degree(&self) -> usize {
        3
    }

    fn num_constraints(&self) -> usize {
        R::NUM_CONSTRAINTS
    }
}

impl<F: RichField + Extendable<D>, const D: usize, R: ShaRow> PackedEvaluableBase<F, D> for Sha256Gate<R> {
    fn eval_unfiltered_base_packed<P: PackedField<Scalar = F>>(
        &self,
        vars: EvaluationVarsBasePacked<'_, P>,
        mut yield_constr: StridedConstraintConsumer<'_, P>,
    ) {
        let wires: Vec<P> = (0..R::NUM_WIRES).map(|i| vars.local_wires[i]).collect();
        let constants: Vec<P> = (0..R::NUM_CONSTANTS).map(|i| vars.local_constants[i]).collect();
        let mut alg = Values::new(|c| P::from(F::from_canonical_u64(c)));
        yield_constr.many(R::constraints(&mut alg, &wires, &constants));
    }
}

/// Fills a row's derived wires once its inputs are known. Public so that serializers of
/// circuit data can name it; the default value only identifies the type.
#[derive(Debug, Clone)]
pub struct ShaRowGenerator<R> {
    row: usize,
    constants: Vec<u64>,
    _row: PhantomData<R>,
}

impl<R> Default for ShaRowGenerator<R> {
    fn default() -> Self {
        Self { row: 0, constants: Vec::new(), _row: PhantomData }
    }
}

impl<F: RichField + Extendable<D>, const D: usize, R: ShaRow> SimpleGenerator<F, D> for ShaRowGenerator<R> {
    fn id(&self) -> String {
        format!("tgrid::Sha256RowGenerator<{}>", R::NAME)
    }

    fn dependencies(&self) -> Vec<Target> {
        R::INPUTS.iter().map(|&w| Target::wire(self.row, w)).collect()
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        let inputs: Vec<u64> =
            R::INPUTS.iter().map(|&w| witness.get_target(Target::wire(self.row, w)).to_canonical_u64()).collect();
        let derived = R::witness(&inputs, &self.constants)
            .ok_or_else(|| anyhow::anyhow!("SHA-256 {} row {}: an input word is not below 2^32", R::NAME, self.row))?;
        for (wire, value) in derived {
            out.set_target(Target::wire(self.row, wire), F::from_canonical_u64(value))?;
        }
        Ok(())
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_usize(self.row)?;
        dst.write_usize(self.constants.len())?;
        for &c in &self.constants {
            dst.write_usize(c as usize)?;
        }
        Ok(())
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        let row = src.read_usize()?;
        let len = src.read_usize()?;
        if len != R::NUM_CONSTANTS {
            return Err(plonky2::util::serialization::IoError);
        }
        let constants = (0..len).map(|_| src.read_usize().map(|c| c as u64)).collect::<IoResult<_>>()?;
        Ok(Self { row, constants, _row: PhantomData })
    }
}
