//! `ByteTableGate`: `out = table[u]` for a byte `u` and a fixed table of 256 entries, with no
//! lookup argument, for private circuits (a function table, a Softmax's exponentials).
//!
//! plonky2's lookup argument cannot be blinded ([`super::byte_range`] says why), so a private
//! circuit evaluates the table's multilinear extension at the bits of `u` instead. With
//! `u = Σ 2^j·b_j` and `eq(x; b) = Π_j (b_j if bit j of x, else 1 − b_j)`, operation `i`
//! constrains
//!
//! ```text
//! u = Σ_j 2^j·b_j,  b_j·(b_j − 1) = 0                                  (u is a byte)
//! g_y = Σ_{x<16} table[16·y + x]·eq(x; b_0..b_3)         for y < 16     (degree 4)
//! h_z = Σ_{y'<8} g_{8·z + y'}·eq(y'; b_4..b_6)           for z < 2      (degree 4)
//! out = h_0 + b_7·(h_1 − h_0)                                           (degree 2)
//! ```
//!
//! so for bits `b`, `g_y = table[16·y + low nibble]`, `h_z = g_{8·z + b_4..b_6}`, and
//! `out = table[u]`. Every intermediate is an ordinary wire, blinded like every wire. The table
//! is part of the gate (its id names every entry), so each distinct table is its own gate,
//! alone in its selector group (degree 4): 28 wires per operation, three per row of 85.

use std::sync::Arc;

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

/// Entries of a table: one per byte.
pub const TABLE_ENTRIES: usize = 256;
/// Bits of the index.
const BITS: usize = 8;
/// Values after the first fold (over the low nibble).
const FIRST: usize = 16;
/// Values after the second fold (over bits 4–6).
const SECOND: usize = 2;
/// Wires of one operation: input, output, bits and both folds.
pub const WIRES_PER_OP: usize = 2 + BITS + FIRST + SECOND;

/// `num_ops` reads of `table`. Inputs and outputs of all operations come first (wires `2i`,
/// `2i + 1`, routed), then each operation's bits and folds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ByteTableGate {
    /// Reads per row.
    pub num_ops: usize,
    /// The 256 entries, below 2^32.
    pub table: Arc<[u32]>,
}

impl ByteTableGate {
    /// As many reads of `table` as `wires` hold (their inputs and outputs among the first
    /// `routed_wires`).
    ///
    /// # Panics
    /// If `table` does not have [`TABLE_ENTRIES`] entries or no read fits.
    pub fn new(table: Arc<[u32]>, wires: usize, routed_wires: usize) -> Self {
        assert_eq!(table.len(), TABLE_ENTRIES, "a byte table has 256 entries");
        let num_ops = (wires / WIRES_PER_OP).min(routed_wires / 2);
        assert!(num_ops > 0, "no table read fits {wires} wires");
        Self { num_ops, table }
    }

    /// The input wire of operation `i`.
    pub const fn wire_input(&self, i: usize) -> usize {
        2 * i
    }

    /// The output wire of operation `i`.
    pub const fn wire_output(&self, i: usize) -> usize {
        2 * i + 1
    }

    const fn advice(&self, i: usize) -> usize {
        2 * self.num_ops + i * (WIRES_PER_OP - 2)
    }

    /// Bit `j` of operation `i`'s input.
    pub const fn wire_bit(&self, i: usize, j: usize) -> usize {
        self.advice(i) + j
    }

    /// First-fold value `y` (the table's row `y` of 16 read at the low nibble).
    pub const fn wire_first(&self, i: usize, y: usize) -> usize {
        self.advice(i) + BITS + y
    }

    /// Second-fold value `z`.
    pub const fn wire_second(&self, i: usize, z: usize) -> usize {
        self.advice(i) + BITS + FIRST + z
    }

    /// `eq(x; bits)` for every `x < 2^bits.len()`, bit 0 of `x` the first bit.
    fn eq_table<T>(bits: &[T], one: T) -> Vec<T>
    where
        T: Copy + std::ops::Sub<Output = T> + std::ops::Mul<Output = T>,
    {
        let mut eq = vec![one];
        for &b in bits {
            let not_b = one - b;
            eq = eq.iter().map(|&e| e * not_b).chain(eq.iter().map(|&e| e * b)).collect();
        }
        eq
    }

    /// The constraints of operation `i` over any field-like values; `constant` embeds a table
    /// entry or a small integer.
    fn constraints<T>(&self, i: usize, wire: impl Fn(usize) -> T, constant: impl Fn(u64) -> T) -> Vec<T>
    where
        T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + std::ops::Mul<Output = T>,
    {
        let bits: Vec<T> = (0..BITS).map(|j| wire(self.wire_bit(i, j))).collect();
        let one = constant(1);
        let mut out = Vec::with_capacity(1 + BITS + FIRST + SECOND + 1);
        let packed = (0..BITS).rev().fold(constant(0), |acc, j| acc + acc + bits[j]);
        out.push(wire(self.wire_input(i)) - packed);
        out.extend(bits.iter().map(|&b| b * b - b));
        let eq_low = Self::eq_table(&bits[..4], one);
        for y in 0..FIRST {
            let read = eq_low
                .iter()
                .enumerate()
                .fold(constant(0), |acc, (x, &e)| acc + constant(u64::from(self.table[FIRST * y + x])) * e);
            out.push(wire(self.wire_first(i, y)) - read);
        }
        let eq_mid = Self::eq_table(&bits[4..7], one);
        for z in 0..SECOND {
            let read = eq_mid
                .iter()
                .enumerate()
                .fold(constant(0), |acc, (y, &e)| acc + wire(self.wire_first(i, 8 * z + y)) * e);
            out.push(wire(self.wire_second(i, z)) - read);
        }
        let (h0, h1) = (wire(self.wire_second(i, 0)), wire(self.wire_second(i, 1)));
        out.push(wire(self.wire_output(i)) - (h0 + bits[7] * (h1 - h0)));
        out
    }
}

impl<F: RichField + Extendable<D>, const D: usize> Gate<F, D> for ByteTableGate {
    fn id(&self) -> String {
        format!("ByteTableGate {{ num_ops: {}, table: {:?} }}", self.num_ops, &self.table[..])
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        write_gate(dst, self)
    }

    fn deserialize(src: &mut Buffer<'_>, common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        read_gate(src, common.config.num_wires)
    }

    fn eval_unfiltered(&self, vars: EvaluationVars<'_, F, D>) -> Vec<F::Extension> {
        let constant = |v: u64| F::Extension::from(F::from_canonical_u64(v));
        (0..self.num_ops).flat_map(|i| self.constraints(i, |w| vars.local_wires[w], constant)).collect()
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
        let one = builder.one_extension();
        let two = F::TWO;
        let mut out = Vec::with_capacity(self.num_ops * (1 + BITS + FIRST + SECOND + 1));
        for i in 0..self.num_ops {
            let wire = |w: usize| vars.local_wires[w];
            let bits: Vec<ExtensionTarget<D>> = (0..BITS).map(|j| wire(self.wire_bit(i, j))).collect();
            let mut packed = bits[BITS - 1];
            for j in (0..BITS - 1).rev() {
                packed = builder.mul_const_add_extension(two, packed, bits[j]);
            }
            out.push(builder.sub_extension(wire(self.wire_input(i)), packed));
            for &b in &bits {
                out.push(builder.mul_sub_extension(b, b, b));
            }
            let eq = |builder: &mut CircuitBuilder<F, D>, bits: &[ExtensionTarget<D>]| {
                let mut eq = vec![one];
                for &b in bits {
                    let not_b = builder.sub_extension(one, b);
                    let low: Vec<_> = eq.iter().map(|&e| builder.mul_extension(e, not_b)).collect();
                    let high: Vec<_> = eq.iter().map(|&e| builder.mul_extension(e, b)).collect();
                    eq = low.into_iter().chain(high).collect();
                }
                eq
            };
            let eq_low = eq(builder, &bits[..4]);
            for y in 0..FIRST {
                let mut read = builder.zero_extension();
                for (x, &e) in eq_low.iter().enumerate() {
                    let entry = F::from_canonical_u32(self.table[FIRST * y + x]);
                    read = builder.mul_const_add_extension(entry, e, read);
                }
                out.push(builder.sub_extension(wire(self.wire_first(i, y)), read));
            }
            let eq_mid = eq(builder, &bits[4..7]);
            for z in 0..SECOND {
                let mut read = builder.zero_extension();
                for (y, &e) in eq_mid.iter().enumerate() {
                    read = builder.mul_add_extension(wire(self.wire_first(i, 8 * z + y)), e, read);
                }
                out.push(builder.sub_extension(wire(self.wire_second(i, z)), read));
            }
            let (h0, h1) = (wire(self.wire_second(i, 0)), wire(self.wire_second(i, 1)));
            let step = builder.sub_extension(h1, h0);
            let read = builder.mul_add_extension(bits[7], step, h0);
            out.push(builder.sub_extension(wire(self.wire_output(i)), read));
        }
        out
    }

    fn generators(&self, row: usize, _local_constants: &[F]) -> Vec<WitnessGeneratorRef<F, D>> {
        (0..self.num_ops)
            .map(|op| {
                let generator = ByteTableGenerator {
                    gate: self.clone(),
                    row,
                    op,
                    #[cfg(test)]
                    faulty: false,
                };
                WitnessGeneratorRef::new(generator.adapter())
            })
            .collect()
    }

    fn num_wires(&self) -> usize {
        self.num_ops * WIRES_PER_OP
    }

    fn num_constants(&self) -> usize {
        0
    }

    fn degree(&self) -> usize {
        4
    }

    fn num_constraints(&self) -> usize {
        self.num_ops * (1 + BITS + FIRST + SECOND + 1)
    }
}

impl<F: RichField + Extendable<D>, const D: usize> PackedEvaluableBase<F, D> for ByteTableGate {
    fn eval_unfiltered_base_packed<P: PackedField<Scalar = F>>(
        &self,
        vars: EvaluationVarsBasePacked<'_, P>,
        mut yield_constr: StridedConstraintConsumer<'_, P>,
    ) {
        let constant = |v: u64| P::from(F::from_canonical_u64(v));
        for i in 0..self.num_ops {
            yield_constr.many(self.constraints(i, |w| vars.local_wires[w], constant));
        }
    }
}

/// Writes the bits, folds and output of one read. An honest prover refuses an input that is not
/// a byte; the test-only `faulty` writes an output one above the table's, everything else
/// honest, so that the output constraint alone is broken.
#[derive(Clone, Debug)]
pub(crate) struct ByteTableGenerator {
    pub(crate) gate: ByteTableGate,
    pub(crate) row: usize,
    pub(crate) op: usize,
    #[cfg(test)]
    pub(crate) faulty: bool,
}

impl<F: RichField + Extendable<D>, const D: usize> SimpleGenerator<F, D> for ByteTableGenerator {
    fn id(&self) -> String {
        "tgrid::ByteTableGenerator".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        vec![Target::wire(self.row, self.gate.wire_input(self.op))]
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        let (gate, op) = (&self.gate, self.op);
        let u = witness.get_target(Target::wire(self.row, gate.wire_input(op))).to_canonical_u64();
        let u = usize::try_from(u)
            .ok()
            .filter(|&u| u < TABLE_ENTRIES)
            .ok_or_else(|| anyhow::anyhow!("table read: {u} is not a byte (row {}, read {op})", self.row))?;
        let set = |out: &mut GeneratedValues<F>, w: usize, v: u64| {
            out.set_target(Target::wire(self.row, w), F::from_canonical_u64(v))
        };
        for j in 0..BITS {
            set(out, gate.wire_bit(op, j), (u >> j) as u64 & 1)?;
        }
        let low = u % FIRST;
        for y in 0..FIRST {
            set(out, gate.wire_first(op, y), u64::from(gate.table[FIRST * y + low]))?;
        }
        let mid = (u >> 4) & 7;
        for z in 0..SECOND {
            set(out, gate.wire_second(op, z), u64::from(gate.table[FIRST * (8 * z + mid) + low]))?;
        }
        #[allow(unused_mut)]
        let mut value = u64::from(gate.table[u]);
        #[cfg(test)]
        if self.faulty {
            value += 1;
        }
        set(out, gate.wire_output(op), value)
    }

    /// The gate by its index among the circuit's gates: a circuit reads a table thousands of
    /// times, and each read's generator would otherwise repeat its 256 entries.
    fn serialize(&self, dst: &mut Vec<u8>, common: &CommonCircuitData<F, D>) -> IoResult<()> {
        let index = common
            .gates
            .iter()
            .position(|g| g.0.as_any().downcast_ref::<ByteTableGate>() == Some(&self.gate))
            .ok_or(IoError)?;
        dst.write_usize(index)?;
        dst.write_usize(self.row)?;
        dst.write_usize(self.op)
    }

    fn deserialize(src: &mut Buffer<'_>, common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        let gate = common.gates.get(src.read_usize()?).ok_or(IoError)?;
        let gate = gate.0.as_any().downcast_ref::<ByteTableGate>().ok_or(IoError)?.clone();
        let (row, op) = (src.read_usize()?, src.read_usize()?);
        if op >= gate.num_ops {
            return Err(IoError);
        }
        Ok(Self {
            gate,
            row,
            op,
            #[cfg(test)]
            faulty: false,
        })
    }
}

fn write_gate(dst: &mut Vec<u8>, gate: &ByteTableGate) -> IoResult<()> {
    dst.write_usize(gate.num_ops)?;
    for &v in gate.table.iter() {
        dst.write_u32(v)?;
    }
    Ok(())
}

/// Reads a gate, refusing shapes no circuit builds (no reads, more wires than the circuit's);
/// the table is exactly 256 entries, so its length is never read from the input.
fn read_gate(src: &mut Buffer<'_>, num_wires: usize) -> IoResult<ByteTableGate> {
    let num_ops = src.read_usize()?;
    if num_ops == 0 || num_ops.checked_mul(WIRES_PER_OP).is_none_or(|w| w > num_wires) {
        return Err(IoError);
    }
    let table = (0..TABLE_ENTRIES).map(|_| src.read_u32()).collect::<IoResult<Vec<u32>>>()?;
    Ok(ByteTableGate { num_ops, table: table.into() })
}
