//! plonky2 gadgets for int8 inference: byte range checks by lookup, requantization with a
//! witnessed quotient/remainder and a proven clamp, max over a window, tensor commitments.
//!
//! Every hint computed by a generator here is constrained: bytes by the lookup table, the
//! division by a linear identity that cannot wrap (bounds in [`crate::lower::affine_layout`]),
//! the clamp by sign/zero products.

use std::collections::BTreeMap;
use std::sync::Arc;

use plonky2::field::types::{Field, Field64, PrimeField64};
use plonky2::hash::hash_types::HashOutTarget;
use plonky2::iop::generator::{GeneratedValues, SimpleGenerator};
use plonky2::iop::target::Target;
use plonky2::iop::witness::{PartitionWitness, Witness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::CommonCircuitData;
use plonky2::util::serialization::{Buffer, IoResult, Read, Write};

use crate::commit::BYTES_PER_ELEMENT;
use crate::gates::{RequantizeGate, WeightedSumGate};
use crate::lower::AffineLayout;
use crate::model::Requant;
use crate::{TgridPoseidonHash, D, F};

/// How an affine element's multiply-accumulates are laid out in rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MacLayout {
    /// plonky2's `ArithmeticGate`: one operation per MAC, 20 per row, rows shared by equal weights.
    Arithmetic,
    /// [`WeightedSumGate`]: `gate.terms` MACs per operation, the weights in the row's constants.
    WeightedSum(WeightedSumGate),
}

/// A target proven to hold a byte `u ∈ [0, 255]` (an int8 in offset form `x + 128`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteTarget(pub Target);

/// Deliberately wrong witnesses, to show that each constraint rejects them (tests only).
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The output is one more than the clamp of the quotient (breaks the clamp constraints).
    ClampOffByOne,
    /// The output is 256 − lo − 128 + 1 above the low clamp: outside int8.
    OutputOutOfRange,
    /// Quotient one lower, remainder 2^s higher: the remainder leaves its byte range.
    RemainderOverflow,
    /// The output is claimed as another value with a consistent excess.
    WrongOutput,
    /// Max: the claimed maximum is one above the true maximum.
    MaxTooLarge,
    /// Max: the claimed maximum is one below the true maximum.
    MaxTooSmall,
    /// Every weighted-sum operation of the circuit outputs one more than its sum.
    WeightedSumOffByOne,
    /// A product element's accumulator is claimed one more than its sum of products.
    ProductSumOffByOne,
    /// LayerNorm: the inverse square root one above its floor (`s·R` exceeds 2^31).
    InvSqrtHigh,
    /// LayerNorm: the inverse square root one below its floor (`s·(R+1)` stays within 2^31).
    InvSqrtLow,
    /// LayerNorm: the integer square root one above its floor (`s²` exceeds `V`).
    IsqrtHigh,
    /// LayerNorm: the integer square root one below its floor (`(s+1)²` stays within `V`).
    IsqrtLow,
    /// Softmax: a probability one above the rounded quotient (the remainder goes negative).
    SoftmaxQuotientHigh,
    /// Softmax: a probability one below the rounded quotient (the remainder reaches 2·Σe).
    SoftmaxQuotientLow,
}

/// Builder state shared by the gadgets: the byte lookup table and the models' function tables.
#[derive(Debug)]
pub(crate) struct Gadgets {
    byte_table: usize,
    /// Lookup table index of each distinct [`crate::Op::Table`] (offset form), so that layers
    /// with the same function share one table.
    function_tables: BTreeMap<[u8; 256], usize>,
    /// Lookup table index of each distinct embedding table (keyed by its values and width).
    embedding_tables: BTreeMap<(Vec<i8>, usize), usize>,
    /// Lookup table index of each distinct Softmax exponential table.
    exp_tables: BTreeMap<Vec<u16>, usize>,
    #[cfg(test)]
    pub(crate) fault: Option<(usize, Fault)>,
    /// Tests only: leave out the copy constraints the fault breaks (see `BuildOptions::cut`).
    #[cfg(test)]
    pub(crate) cut: bool,
    /// Running index of hinted elements, to aim a fault at one of them.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) hinted: usize,
    /// Every [`RequantizeGate`] row: its parameters and how many operations are used.
    requantize_rows: BTreeMap<usize, RequantizeRow>,
}

/// A [`RequantizeGate`] row's gate, parameters and used operations.
type RequantizeRow = (RequantizeGate, Requant, i8, i8, AffineLayout, usize);

impl Gadgets {
    pub(crate) fn new(builder: &mut CircuitBuilder<F, D>) -> Self {
        let table: Vec<(u16, u16)> = (0..256u16).map(|v| (v, v)).collect();
        let byte_table = builder.add_lookup_table_from_pairs(Arc::new(table));
        Self {
            byte_table,
            function_tables: BTreeMap::new(),
            exp_tables: BTreeMap::new(),
            embedding_tables: BTreeMap::new(),
            #[cfg(test)]
            fault: None,
            #[cfg(test)]
            cut: false,
            hinted: 0,
            requantize_rows: BTreeMap::new(),
        }
    }

    /// Proves `t ∈ [0, 255]`.
    pub(crate) fn range_check_byte(&self, builder: &mut CircuitBuilder<F, D>, t: Target) -> ByteTarget {
        builder.add_lookup_from_index(t, self.byte_table);
        ByteTarget(t)
    }

    /// `table[u]`, proven by a lookup into the table of the 256 pairs `(u, table[u])`: the pair
    /// must be a row of it, so the output is the function's value and a byte.
    pub(crate) fn lookup(
        &mut self,
        builder: &mut CircuitBuilder<F, D>,
        u: ByteTarget,
        table: &[u8; 256],
    ) -> ByteTarget {
        let index = *self.function_tables.entry(*table).or_insert_with(|| {
            let pairs: Vec<(u16, u16)> = (0..256u16).map(|v| (v, u16::from(table[usize::from(v)]))).collect();
            builder.add_lookup_table_from_pairs(Arc::new(pairs))
        });
        ByteTarget(builder.add_lookup_from_index(u.0, index))
    }

    /// `table[u·dim + channel]` by a lookup of the key `u·dim + channel` into the table of the
    /// pairs `(id·dim + c, table[id·dim + c] + 128)` for ids below the vocabulary: a token id
    /// outside it has no row, and each key names one (id, channel).
    pub(crate) fn embedding(
        &mut self,
        builder: &mut CircuitBuilder<F, D>,
        u: ByteTarget,
        channel: usize,
        dim: usize,
        table: &[i8],
    ) -> ByteTarget {
        let index = *self.embedding_tables.entry((table.to_vec(), dim)).or_insert_with(|| {
            let pairs: Vec<(u16, u16)> =
                table.iter().enumerate().map(|(k, &v)| (k as u16, u16::from((v as u8) ^ 0x80))).collect();
            builder.add_lookup_table_from_pairs(Arc::new(pairs))
        });
        let one = builder.one();
        let offset = builder.constant(F::from_canonical_usize(channel));
        let key = builder.arithmetic(F::from_canonical_usize(dim), F::ONE, u.0, one, offset);
        ByteTarget(builder.add_lookup_from_index(key, index))
    }

    #[cfg(test)]
    fn take_fault(&mut self) -> Option<Fault> {
        let i = self.hinted;
        self.hinted += 1;
        self.fault.filter(|(at, _)| *at == i).map(|(_, f)| f)
    }

    #[cfg(not(test))]
    fn take_fault(&mut self) -> Option<()> {
        self.hinted += 1;
        None
    }

    /// `acc = constant + Σ weight·u`, laid out as `layout` says.
    pub(crate) fn affine(
        &self,
        builder: &mut CircuitBuilder<F, D>,
        layout: MacLayout,
        constant: i64,
        terms: &[(i64, Target)],
    ) -> Target {
        let mut acc = builder.constant(field_of(constant));
        match layout {
            MacLayout::Arithmetic => {
                for &(w, u) in terms {
                    acc = builder.mul_const_add(field_of(w), u, acc);
                }
            }
            MacLayout::WeightedSum(gate) => {
                #[cfg(test)]
                let gate =
                    WeightedSumGate { faulty: matches!(self.fault, Some((_, Fault::WeightedSumOffByOne))), ..gate };
                let zero = builder.zero();
                for chunk in terms.chunks(gate.terms) {
                    // The weights are the row's constants and the key under which operations
                    // with the same weights share a row; a short chunk is padded with zero weights.
                    let mut weights: Vec<F> = chunk.iter().map(|&(w, _)| field_of(w)).collect();
                    weights.resize(gate.terms, F::ZERO);
                    let (row, op) = builder.find_slot(gate, &weights, &weights);
                    for j in 0..gate.terms {
                        let x = chunk.get(j).map_or(zero, |&(_, u)| u);
                        builder.connect(Target::wire(row, gate.wire_x(op, j)), x);
                    }
                    builder.connect(Target::wire(row, gate.wire_acc(op)), acc);
                    acc = Target::wire(row, gate.wire_out(op));
                }
            }
        }
        acc
    }

    /// Requantizes `acc`: returns `u = y + 128` with
    /// `y = clamp(zp + floor((acc·M + 2^(s-1)) / 2^s), lo, 127)`.
    ///
    /// One [`RequantizeGate`] operation (constraints in its module documentation) on a row shared
    /// with the elements of the same fixed-point parameters. Witness: `y' = y - lo`, the clamp
    /// excess `d = z - y'` as magnitude `a` (bytes) and sign `σ`, the remainder `r` (bytes);
    /// `y'`, `u` and every byte are range checked here.
    pub(crate) fn requantize(
        &mut self,
        builder: &mut CircuitBuilder<F, D>,
        acc: Target,
        requant: Requant,
        zero_point: i8,
        lo: i8,
        layout: AffineLayout,
    ) -> ByteTarget {
        let fault = self.take_fault();
        let (gate, op, row) = self.requantize_slot(builder, requant, zero_point, lo, layout);
        let wire = |w: usize| Target::wire(row, w);
        builder.connect(wire(gate.wire_acc(op)), acc);
        let y_prime = wire(gate.wire_y_prime(op));
        let a_bytes: Vec<Target> = (0..gate.excess_bytes).map(|j| wire(gate.wire_excess(op, j))).collect();
        let r_bytes: Vec<Target> = (0..gate.remainder_bytes).map(|j| wire(gate.wire_remainder(op, j))).collect();
        for &t in [y_prime].iter().chain(&a_bytes).chain(&r_bytes) {
            self.range_check_byte(builder, t);
        }
        builder.add_simple_generator(RequantHint {
            acc,
            multiplier: requant.multiplier,
            shift: requant.shift,
            zero_point,
            lo,
            y_prime,
            sigma: wire(gate.wire_sigma(op)),
            a_bytes,
            r_bytes,
            #[cfg(test)]
            fault,
        });
        let _ = fault;
        // u = y' + lo + 128 must be a byte too: y = y' + lo ≤ 127.
        self.range_check_byte(builder, wire(gate.wire_output(op)))
    }

    /// The next free operation of a [`RequantizeGate`] row with these parameters:
    /// `(gate, operation, row)`.
    fn requantize_slot(
        &mut self,
        builder: &mut CircuitBuilder<F, D>,
        requant: Requant,
        zero_point: i8,
        lo: i8,
        layout: AffineLayout,
    ) -> (RequantizeGate, usize, usize) {
        let gate = RequantizeGate::new(layout.excess_bytes, layout.remainder_bytes, builder.config.num_routed_wires);
        let s = u32::from(requant.shift);
        let rounding = if s == 0 { 0 } else { 1i64 << (s - 1) };
        let offset = rounding + (i64::from(zero_point) - i64::from(lo)) * (1i64 << s);
        let constants = [
            F::from_canonical_u32(requant.multiplier),
            field_of(offset),
            F::from_canonical_u64(1u64 << s),
            field_of(127 - i64::from(lo)),
            field_of(i64::from(lo) + 128),
        ];
        let (row, op) = builder.find_slot(gate, &constants, &constants);
        let used = self.requantize_rows.entry(row).or_insert((gate, requant, zero_point, lo, layout, 0));
        used.5 += 1;
        (gate, op, row)
    }

    /// Completes the circuit's partly used [`RequantizeGate`] rows. An unused operation's
    /// all-zero wires would not satisfy its constraints (the offset and `lo + 128` constants are
    /// not zero), so each free operation requantizes a constant zero; nothing reads its output.
    pub(crate) fn finish(&mut self, builder: &mut CircuitBuilder<F, D>) {
        let partial: Vec<_> = self
            .requantize_rows
            .values()
            .filter(|r| r.5 < r.0.num_ops)
            .map(|&(g, rq, zp, lo, l, used)| (g, rq, zp, lo, l, used))
            .collect();
        let zero = builder.zero();
        for (gate, requant, zero_point, lo, layout, used) in partial {
            for _ in used..gate.num_ops {
                let (gate, op, row) = self.requantize_slot(builder, requant, zero_point, lo, layout);
                let wire = |w: usize| Target::wire(row, w);
                builder.connect(wire(gate.wire_acc(op)), zero);
                builder.add_simple_generator(RequantHint {
                    acc: zero,
                    multiplier: requant.multiplier,
                    shift: requant.shift,
                    zero_point,
                    lo,
                    y_prime: wire(gate.wire_y_prime(op)),
                    sigma: wire(gate.wire_sigma(op)),
                    a_bytes: (0..gate.excess_bytes).map(|j| wire(gate.wire_excess(op, j))).collect(),
                    r_bytes: (0..gate.remainder_bytes).map(|j| wire(gate.wire_remainder(op, j))).collect(),
                    #[cfg(test)]
                    fault: None,
                });
            }
        }
    }

    /// The outputs (offset-form probabilities) of a softmax row over the bytes `u`:
    /// - a witnessed maximum `m` with `d_j = m − u_j` a row of the exponential table (so
    ///   `d_j ∈ [0, 255]`, `m ≥ u_j`) and `Π d_j = 0` (`m` is one of the `u_j`);
    /// - `e_j = exp[d_j]` by that lookup, `S = Σ e_j`;
    /// - per cell a witnessed `q_j` (a byte) and remainder `r_j` with
    ///   `510·e_j + S = 2S·q_j + r_j` and `r_j`, `2S − 1 − r_j` both in 4 bytes, i.e.
    ///   `q_j = floor((510·e_j + S) / 2S)`, the rounded `255·e_j/S`.
    pub(crate) fn softmax_row(
        &mut self,
        builder: &mut CircuitBuilder<F, D>,
        u: &[ByteTarget],
        exp: &[u16],
    ) -> Vec<ByteTarget> {
        let table = *self.exp_tables.entry(exp.to_vec()).or_insert_with(|| {
            let pairs: Vec<(u16, u16)> = (0..256u16).map(|d| (d, exp[usize::from(d)])).collect();
            builder.add_lookup_table_from_pairs(Arc::new(pairs))
        });
        // A fault aimed at the row's first cell may also hit the maximum.
        #[cfg(test)]
        let max_fault = self.fault.filter(|(at, _)| *at == self.hinted).map(|(_, f)| f);
        #[cfg(test)]
        let row_cut = self.cut && matches!(max_fault, Some(Fault::MaxTooLarge | Fault::MaxTooSmall));
        #[cfg(not(test))]
        let row_cut = false;
        let m = builder.add_virtual_target();
        let inputs: Vec<Target> = u.iter().map(|b| b.0).collect();
        builder.add_simple_generator(MaxHint {
            inputs: inputs.clone(),
            output: m,
            #[cfg(test)]
            fault: max_fault.filter(|f| matches!(f, Fault::MaxTooLarge | Fault::MaxTooSmall)),
        });
        let mut product = builder.one();
        let mut e = Vec::with_capacity(u.len());
        for &x in &inputs {
            let d = builder.sub(m, x);
            e.push(builder.add_lookup_from_index(d, table));
            product = builder.mul(product, d);
        }
        if !row_cut {
            let zero = builder.zero();
            builder.connect(product, zero);
        }
        let sum = builder.add_many(&e);
        let two_sum = builder.add(sum, sum);
        let one = builder.one();
        e.iter()
            .map(|&e_j| {
                let fault = self.take_fault();
                let q = builder.add_virtual_target();
                let r_bytes = builder.add_virtual_targets(4);
                let t_bytes = builder.add_virtual_targets(4);
                builder.add_simple_generator(SoftmaxHint {
                    e: e_j,
                    sum,
                    q,
                    r_bytes: r_bytes.clone(),
                    t_bytes: t_bytes.clone(),
                    #[cfg(test)]
                    fault,
                });
                let _ = fault;
                let r_checked: Vec<ByteTarget> = r_bytes.iter().map(|&t| self.range_check_byte(builder, t)).collect();
                let t_checked: Vec<ByteTarget> = t_bytes.iter().map(|&t| self.range_check_byte(builder, t)).collect();
                let r = pack_bytes(builder, &r_checked);
                let t = pack_bytes(builder, &t_checked);
                let lhs = builder.mul_const_add(F::from_canonical_u64(510), e_j, sum);
                let rhs = builder.mul_add(two_sum, q, r);
                // r + t + 1 = 2S: with both in [0, 2^32), r < 2S.
                let r_t = builder.add(r, t);
                let total = builder.add(r_t, one);
                // A wrong maximum can leave the row sum at 0, where no quotient is consistent:
                // the malicious prover then ignores the whole row's quotient identities too.
                #[cfg(test)]
                let cut = row_cut
                    || self.cut && matches!(fault, Some(Fault::SoftmaxQuotientHigh | Fault::SoftmaxQuotientLow));
                #[cfg(not(test))]
                let cut = row_cut;
                if !cut {
                    builder.connect(lhs, rhs);
                    builder.connect(total, two_sum);
                }
                self.range_check_byte(builder, q)
            })
            .collect()
    }

    /// `D_i · R` for a LayerNorm row over the bytes `u` (centered by `offset`):
    /// `D_i = n·c_i − Σc`, `V = Σ D_i² + eps`; a witnessed `s ∈ [0, 2^26)` with
    /// `s² ≤ V < (s+1)²` and a witnessed `R ∈ [0, 2^32)` with `s·R ≤ 2^31 < s·(R+1)`, every gap
    /// proven in `[0, 2^62)`: `s = isqrt(V)`, `R = floor(2^31 / s)`. Every product stays below
    /// 2^58 (`V < 2^50` by the model's bounds), so field identities are integer identities; a
    /// single check `R²·V ≤ 2^62` would not be (`R²·V` could wrap around the field).
    pub(crate) fn layer_norm_row(
        &mut self,
        builder: &mut CircuitBuilder<F, D>,
        u: &[ByteTarget],
        offset: i64,
        eps: u64,
    ) -> Vec<Target> {
        #[cfg(test)]
        let fault = self
            .fault
            .filter(|(at, f)| {
                *at == self.hinted
                    && matches!(f, Fault::InvSqrtHigh | Fault::InvSqrtLow | Fault::IsqrtHigh | Fault::IsqrtLow)
            })
            .map(|(_, f)| f);
        let n = F::from_canonical_usize(u.len());
        let centered: Vec<Target> = u.iter().map(|b| builder.add_const(b.0, field_of(-offset))).collect();
        let sum = builder.add_many(&centered);
        let one = builder.one();
        let d: Vec<Target> = centered.iter().map(|&c| builder.arithmetic(n, F::NEG_ONE, c, one, sum)).collect();
        let mut squares = builder.zero();
        for &x in &d {
            squares = builder.mul_add(x, x, squares);
        }
        let v = builder.add_const(squares, F::from_canonical_u64(eps));
        let (s, r) = (builder.add_virtual_target(), builder.add_virtual_target());
        builder.add_simple_generator(InvSqrtHint {
            v,
            s,
            r,
            #[cfg(test)]
            fault,
        });
        self.range_check_bits(builder, s, 26);
        self.range_check_bits(builder, r, 32);
        // s² ≤ V < (s+1)²
        let s_squared = builder.mul(s, s);
        let below = builder.sub(v, s_squared);
        self.range_check_bits(builder, below, 62);
        let two_s_one = builder.mul_const_add(F::TWO, s, one);
        let next_square = builder.add(s_squared, two_s_one);
        let next_minus_v = builder.sub(next_square, v);
        let above = builder.sub(next_minus_v, one);
        self.range_check_bits(builder, above, 62);
        // s·R ≤ 2^31 < s·(R+1)
        let limit = builder.constant(F::from_canonical_u64(1 << crate::model::INV_SQRT_BITS));
        let s_r = builder.mul(s, r);
        let room = builder.sub(limit, s_r);
        self.range_check_bits(builder, room, 62);
        let s_r_s = builder.add(s_r, s);
        let past = builder.sub(s_r_s, limit);
        let past = builder.sub(past, one);
        self.range_check_bits(builder, past, 62);
        d.iter().map(|&x| builder.mul(x, r)).collect()
    }

    /// Proves `v ∈ [0, 2^bits)` (`bits ≤ 62`): bytes that pack to `v`, the top one scaled so
    /// that it is a byte only below its bit budget.
    fn range_check_bits(&mut self, builder: &mut CircuitBuilder<F, D>, v: Target, bits: usize) {
        let count = bits.div_ceil(8);
        let bytes = builder.add_virtual_targets(count);
        builder.add_simple_generator(BytesHint { value: v, bytes: bytes.clone() });
        let checked: Vec<ByteTarget> = bytes.iter().map(|&b| self.range_check_byte(builder, b)).collect();
        let spare = 8 * count - bits;
        if spare > 0 {
            let scaled = builder.mul_const(F::from_canonical_u64(1 << spare), bytes[count - 1]);
            self.range_check_byte(builder, scaled);
        }
        let packed = pack_bytes(builder, &checked);
        builder.connect(packed, v);
    }

    /// `Σ x·y` over `pairs`, one plonky2 arithmetic operation (`acc ← x·y + acc`) per product.
    pub(crate) fn product_sum(&mut self, builder: &mut CircuitBuilder<F, D>, pairs: &[(Target, Target)]) -> Target {
        let mut acc = builder.zero();
        for &(x, y) in pairs {
            acc = builder.mul_add(x, y, acc);
        }
        // The fault is aimed at the element whose requantization comes next.
        #[cfg(test)]
        if matches!(self.fault, Some((at, Fault::ProductSumOffByOne)) if at == self.hinted) {
            let claimed = builder.add_virtual_target();
            builder.add_simple_generator(OffByOneHint { from: acc, to: claimed });
            if !self.cut {
                builder.connect(claimed, acc);
            }
            return claimed;
        }
        acc
    }

    /// `max(inputs)`: `max - x_i ∈ [0, 255]` for every i and `Π (max - x_i) = 0`.
    pub(crate) fn max(&mut self, builder: &mut CircuitBuilder<F, D>, inputs: &[Target]) -> ByteTarget {
        let out = builder.add_virtual_target();
        let fault = self.take_fault();
        builder.add_simple_generator(MaxHint {
            inputs: inputs.to_vec(),
            output: out,
            #[cfg(test)]
            fault,
        });
        #[cfg(test)]
        let cut = self.cut && fault.is_some();
        #[cfg(not(test))]
        let cut = false;
        let _ = fault;
        let mut product = builder.one();
        for &x in inputs {
            let diff = builder.sub(out, x);
            self.range_check_byte(builder, diff);
            product = builder.mul(product, diff);
        }
        let zero = builder.zero();
        if !cut {
            builder.connect(product, zero);
        }
        // Implied by the two constraints above, since the inputs are bytes.
        ByteTarget(out)
    }
}

/// Tests only: writes `from + 1` into `to` (a claimed sum one above the real one).
#[cfg(test)]
#[derive(Debug)]
struct OffByOneHint {
    from: Target,
    to: Target,
}

#[cfg(test)]
impl SimpleGenerator<F, D> for OffByOneHint {
    fn id(&self) -> String {
        "tgrid::test::OffByOneHint".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        vec![self.from]
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        out.set_target(self.to, witness.get_target(self.from) + F::ONE)
    }

    fn serialize(&self, _dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        Err(plonky2::util::serialization::IoError)
    }

    fn deserialize(_src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        Err(plonky2::util::serialization::IoError)
    }
}

/// Σ bytes[j]·256^j.
fn pack_bytes(builder: &mut CircuitBuilder<F, D>, bytes: &[ByteTarget]) -> Target {
    let mut acc = builder.zero();
    for (j, b) in bytes.iter().enumerate() {
        acc = builder.mul_const_add(F::from_canonical_u64(1u64 << (8 * j)), b.0, acc);
    }
    acc
}

/// The commitment of [`crate::commit`] over byte targets (offset form), or with a `salt` (secret
/// witness) that of [`crate::commit::commit_salted`].
pub(crate) fn commit_bytes(
    builder: &mut CircuitBuilder<F, D>,
    values: &[ByteTarget],
    salt: Option<[Target; 4]>,
) -> HashOutTarget {
    let flag = if salt.is_some() { crate::commit::SALTED_FLAG } else { 0 };
    let mut elements = vec![builder.constant(F::from_canonical_u64(values.len() as u64 + flag))];
    elements.extend(salt.into_iter().flatten());
    for chunk in values.chunks(BYTES_PER_ELEMENT) {
        elements.push(pack_bytes(builder, chunk));
    }
    builder.hash_n_to_hash_no_pad::<TgridPoseidonHash>(elements)
}

/// A signed integer as a field element.
pub(crate) fn field_of(v: i64) -> F {
    if v >= 0 {
        F::from_canonical_u64(v as u64)
    } else {
        -F::from_canonical_u64(v.unsigned_abs())
    }
}

/// A field element holding a small signed integer back as `i64` (values above p/2 are negative).
pub(crate) fn signed_of(v: F) -> i64 {
    let c = v.to_canonical_u64();
    if c > F::ORDER / 2 {
        -((F::ORDER - c) as i64)
    } else {
        c as i64
    }
}

#[derive(Debug, Clone)]
struct RequantHint {
    acc: Target,
    multiplier: u32,
    shift: u8,
    zero_point: i8,
    lo: i8,
    y_prime: Target,
    sigma: Target,
    a_bytes: Vec<Target>,
    r_bytes: Vec<Target>,
    #[cfg(test)]
    fault: Option<Fault>,
}

impl SimpleGenerator<F, D> for RequantHint {
    fn id(&self) -> String {
        "tgrid::RequantHint".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        vec![self.acc]
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        let acc = i128::from(signed_of(witness.get_target(self.acc)));
        let s = u32::from(self.shift);
        let rounding = if s == 0 { 0 } else { 1i128 << (s - 1) };
        let w = acc * i128::from(self.multiplier)
            + rounding
            + (i128::from(self.zero_point) - i128::from(self.lo)) * (1i128 << s);
        #[allow(unused_mut)]
        let mut z = w >> s;
        #[allow(unused_mut)]
        let mut r = w - (z << s);
        let high = 127 - i128::from(self.lo);
        #[allow(unused_mut)]
        let mut y_prime = z.clamp(0, high);
        #[cfg(test)]
        match self.fault {
            Some(Fault::ClampOffByOne) => y_prime += 1,
            Some(Fault::OutputOutOfRange) => y_prime = high + 1,
            Some(Fault::RemainderOverflow) => {
                z -= 1;
                r += 1i128 << s;
                y_prime = z.clamp(0, high);
            }
            Some(Fault::WrongOutput) => {
                y_prime = if y_prime > 0 { y_prime - 1 } else { y_prime + 1 };
            }
            _ => {}
        }
        let d = z - y_prime;
        out.set_target(self.y_prime, F::from_canonical_u64(y_prime as u64))?;
        out.set_target(self.sigma, F::from_bool(d < 0))?;
        write_bytes(out, &self.a_bytes, d.unsigned_abs())?;
        write_bytes(out, &self.r_bytes, r as u128)?;
        Ok(())
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_target(self.acc)?;
        dst.write_u32(self.multiplier)?;
        dst.write_u8(self.shift)?;
        dst.write_u8(self.zero_point as u8)?;
        dst.write_u8(self.lo as u8)?;
        dst.write_target(self.y_prime)?;
        dst.write_target(self.sigma)?;
        dst.write_target_vec(&self.a_bytes)?;
        dst.write_target_vec(&self.r_bytes)
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        Ok(Self {
            acc: src.read_target()?,
            multiplier: src.read_u32()?,
            shift: src.read_u8()?,
            zero_point: src.read_u8()? as i8,
            lo: src.read_u8()? as i8,
            y_prime: src.read_target()?,
            sigma: src.read_target()?,
            a_bytes: src.read_target_vec()?,
            r_bytes: src.read_target_vec()?,
            #[cfg(test)]
            fault: None,
        })
    }
}

/// Writes `value` little-endian into byte targets. A value that does not fit is written with an
/// oversized top "byte", which the lookup then rejects (that is what fault tests exercise).
fn write_bytes(out: &mut GeneratedValues<F>, targets: &[Target], mut value: u128) -> anyhow::Result<()> {
    for (j, &t) in targets.iter().enumerate() {
        let byte = if j + 1 == targets.len() { value } else { value & 0xff };
        out.set_target(t, F::from_canonical_u64(u64::try_from(byte).unwrap_or(u64::MAX) % F::ORDER))?;
        value >>= 8;
    }
    Ok(())
}

/// Writes `s = isqrt(V)` and `R = floor(2^31 / s)` for a LayerNorm row.
#[derive(Debug, Clone)]
struct InvSqrtHint {
    v: Target,
    s: Target,
    r: Target,
    #[cfg(test)]
    fault: Option<Fault>,
}

impl SimpleGenerator<F, D> for InvSqrtHint {
    fn id(&self) -> String {
        "tgrid::InvSqrtHint".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        vec![self.v]
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        let v = witness.get_target(self.v).to_canonical_u64().max(1);
        #[allow(unused_mut)]
        let mut s = crate::infer::isqrt(v);
        #[cfg(test)]
        match self.fault {
            Some(Fault::IsqrtHigh) => s += 1,
            Some(Fault::IsqrtLow) => s -= 1,
            _ => {}
        }
        #[allow(unused_mut)]
        let mut r = (1u64 << crate::model::INV_SQRT_BITS) / s.max(1);
        #[cfg(test)]
        match self.fault {
            Some(Fault::InvSqrtHigh) => r += 1,
            Some(Fault::InvSqrtLow) => r -= 1,
            _ => {}
        }
        out.set_target(self.s, F::from_canonical_u64(s))?;
        out.set_target(self.r, F::from_canonical_u64(r))
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_target(self.v)?;
        dst.write_target(self.s)?;
        dst.write_target(self.r)
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        Ok(Self {
            v: src.read_target()?,
            s: src.read_target()?,
            r: src.read_target()?,
            #[cfg(test)]
            fault: None,
        })
    }
}

/// Writes the canonical value of `value` as little-endian bytes (the last takes the rest).
#[derive(Debug, Clone)]
struct BytesHint {
    value: Target,
    bytes: Vec<Target>,
}

impl SimpleGenerator<F, D> for BytesHint {
    fn id(&self) -> String {
        "tgrid::BytesHint".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        vec![self.value]
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        write_bytes(out, &self.bytes, u128::from(witness.get_target(self.value).to_canonical_u64()))
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_target(self.value)?;
        dst.write_target_vec(&self.bytes)
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        Ok(Self { value: src.read_target()?, bytes: src.read_target_vec()? })
    }
}

/// Writes a softmax cell's rounded quotient `q = floor((510·e + S) / 2S)`, its remainder
/// `r` and `2S − 1 − r` as bytes.
#[derive(Debug, Clone)]
struct SoftmaxHint {
    e: Target,
    sum: Target,
    q: Target,
    r_bytes: Vec<Target>,
    t_bytes: Vec<Target>,
    #[cfg(test)]
    fault: Option<Fault>,
}

impl SimpleGenerator<F, D> for SoftmaxHint {
    fn id(&self) -> String {
        "tgrid::SoftmaxHint".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        vec![self.e, self.sum]
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        let e = i128::from(witness.get_target(self.e).to_canonical_u64());
        let s = i128::from(witness.get_target(self.sum).to_canonical_u64()).max(1);
        let numerator = 510 * e + s;
        #[allow(unused_mut)]
        let (mut q, mut r) = (numerator / (2 * s), numerator % (2 * s));
        #[cfg(test)]
        match self.fault {
            Some(Fault::SoftmaxQuotientHigh) => (q, r) = (q + 1, r - 2 * s),
            Some(Fault::SoftmaxQuotientLow) => (q, r) = (q - 1, r + 2 * s),
            _ => {}
        }
        let t = 2 * s - 1 - r;
        // A faulty remainder outside [0, 2^32) is written as its low 32 bits: the identities
        // above then fail, which is what the fault tests show.
        out.set_target(self.q, field_of(q as i64))?;
        write_bytes(out, &self.r_bytes, (r as u128) & 0xffff_ffff)?;
        write_bytes(out, &self.t_bytes, (t as u128) & 0xffff_ffff)
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_target(self.e)?;
        dst.write_target(self.sum)?;
        dst.write_target(self.q)?;
        dst.write_target_vec(&self.r_bytes)?;
        dst.write_target_vec(&self.t_bytes)
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        Ok(Self {
            e: src.read_target()?,
            sum: src.read_target()?,
            q: src.read_target()?,
            r_bytes: src.read_target_vec()?,
            t_bytes: src.read_target_vec()?,
            #[cfg(test)]
            fault: None,
        })
    }
}

#[derive(Debug, Clone)]
struct MaxHint {
    inputs: Vec<Target>,
    output: Target,
    #[cfg(test)]
    fault: Option<Fault>,
}

impl SimpleGenerator<F, D> for MaxHint {
    fn id(&self) -> String {
        "tgrid::MaxHint".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        self.inputs.clone()
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        #[allow(unused_mut)]
        let mut max = self.inputs.iter().map(|&t| witness.get_target(t).to_canonical_u64()).max().unwrap_or(0);
        #[cfg(test)]
        match self.fault {
            Some(Fault::MaxTooLarge) => max += 1,
            Some(Fault::MaxTooSmall) => max = max.wrapping_sub(1),
            _ => {}
        }
        out.set_target(self.output, F::from_canonical_u64(max % F::ORDER))
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_target_vec(&self.inputs)?;
        dst.write_target(self.output)
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        Ok(Self {
            inputs: src.read_target_vec()?,
            output: src.read_target()?,
            #[cfg(test)]
            fault: None,
        })
    }
}
