//! plonky2 gadgets for int8 inference: byte range checks (by lookup in public circuits, by
//! base-4 limbs in private ones), requantization with a
//! witnessed quotient/remainder and a proven clamp, max over a window, function and embedding
//! tables, sums of products, tensor commitments; Softmax and LayerNorm rows in their own
//! modules.
//!
//! Every hint computed by a generator here is constrained: bytes by the lookup table, the
//! division by a linear identity that cannot wrap (bounds in [`tgrid_int8::affine_layout`]),
//! the clamp by sign/zero products.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use plonky2::field::types::{Field, Field64, PrimeField64};
use plonky2::hash::hash_types::HashOutTarget;
use plonky2::iop::generator::{GeneratedValues, SimpleGenerator};
use plonky2::iop::target::Target;
use plonky2::iop::witness::{PartitionWitness, Witness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::CommonCircuitData;
use plonky2::util::serialization::{Buffer, IoResult, Read, Write};

use crate::gates::{ByteRangeGate, ByteTableGate, DotProductGate, RequantizeGate, WeightedSumGate};
use crate::{TgridPoseidonHash, D, F};
use tgrid_int8::commit::BYTES_PER_ELEMENT;
use tgrid_int8::Privacy;
use tgrid_int8::Requant;
use tgrid_int8::{AffineLayout, Width};

mod layer_norm;
mod quotient;
mod softmax;

pub(crate) use softmax::ExpTable;

/// The witness generators of these gadgets, by id (for the task circuit cache).
pub(crate) const GENERATORS: &[(&str, crate::gates::ReadGenerator)] = &[
    ("tgrid::RequantHint", crate::gates::reader::<RequantHint>),
    ("tgrid::MaxHint", crate::gates::reader::<MaxHint>),
    ("tgrid::OneHotHint", crate::gates::reader::<OneHotHint>),
    ("tgrid::InvSqrtHint", crate::gates::reader::<layer_norm::InvSqrtHint>),
    ("tgrid::BytesHint", crate::gates::reader::<layer_norm::BytesHint>),
    ("tgrid::SoftmaxHint", crate::gates::reader::<softmax::SoftmaxHint>),
    ("tgrid::QuotientHint", crate::gates::reader::<quotient::QuotientHint>),
];

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
    /// Every dot-product operation of the circuit outputs one more than its sum.
    DotProductOffByOne,
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
    /// ScoresSoftmax: a cell's exponential one above `floor((high·low + 2^15) / 2^16)`.
    ScoreExpOffByOne,
    /// Div: the quotient one above its floor (the remainder goes negative).
    QuotientHigh,
    /// Div: the quotient one below its floor (the remainder reaches the divisor).
    QuotientLow,
    /// Div: the quotient one above its floor with the true remainder (only `Q·d + r` breaks).
    QuotientUnbalanced,
    /// Div: a zero divisor not flagged (no inverse of 0; the divisor `d` is then 0).
    ZeroDivisorMissed,
    /// Div: another remainder in `[0, d)` and the field's quotient for it (far outside its
    /// 25-bit range).
    QuotientWrapped,
    /// Div: a divisor claimed of the other sign, its magnitude then `−|B|` (no byte).
    DivisorNegated,
    /// Div: a nonzero divisor flagged zero (`z·B ≠ 0`), the quotient over `|B| + 1`.
    ZeroDivisorFlagged,
    /// Div: a zero divisor counted as −1 (`σ·z ≠ 0`), the quotient negated.
    ZeroDivisorSigned,
    /// A private embedding's one-hot vector sets the bit after the token id's (bit 0 for an id
    /// outside the vocabulary), a witness that breaks `Σ k·b_k = id`.
    OneHotWrongId,
}

/// How a circuit proves that a value is a byte.
#[derive(Clone, Copy, Debug)]
enum ByteChecks {
    /// A lookup into this table of the 256 pairs `(v, v)`: 40 per row, the public tasks' way.
    Lookup(usize),
    /// [`ByteRangeGate`] rows (17 per row of a private segment), with the number of checks
    /// placed so far: private tasks, whose witness must not reach plonky2's unblinded lookup
    /// polynomials.
    Limbs(ByteRangeGate, usize),
}

/// A table of 256 entries read by byte.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ByteTable {
    /// A plonky2 lookup table (public circuits).
    Lookup(usize),
    /// The [`ByteTableGate`] at this index of [`Gadgets::table_gates`] (private circuits).
    Gate(usize),
}

/// Builder state shared by the gadgets: how bytes are checked and the models' function tables.
#[derive(Debug)]
pub(crate) struct Gadgets {
    byte_checks: ByteChecks,
    /// Each distinct table read by byte ([`crate::Op::Table`] in offset form, a Softmax's
    /// exponentials), so that layers with the same function share one table.
    byte_tables: BTreeMap<Vec<u16>, ByteTable>,
    /// A private circuit's [`ByteTableGate`]s, with the reads placed on each.
    table_gates: Vec<(ByteTableGate, usize)>,
    /// Lookup table index of each distinct embedding table (keyed by its values and width).
    embedding_tables: BTreeMap<(Vec<i8>, usize), usize>,
    /// A private circuit's one-hot vectors of token ids, by the id's target and vocabulary.
    one_hots: HashMap<(Target, usize), Vec<Target>>,
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
    /// Every [`DotProductGate`] row: its gate, offsets and how many operations are used.
    dot_product_rows: BTreeMap<usize, (DotProductGate, [i64; 2], usize)>,
}

/// A [`RequantizeGate`] row's gate, parameters and used operations.
type RequantizeRow = (RequantizeGate, Requant, Clamp, AffineLayout, usize);

/// The clamp of a requantization: `y = clamp(zp + z, lo, top)` with `top` 127 (int8 tensors) or
/// 32767 (the 16-bit scores of a `ScoresSoftmax`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Clamp {
    zero_point: i64,
    lo: i64,
    width: Width,
}

impl Clamp {
    fn int8(zero_point: i8, lo: i8) -> Self {
        Self { zero_point: zero_point.into(), lo: lo.into(), width: Width::Int8 }
    }

    fn int16(zero_point: i16) -> Self {
        Self { zero_point: zero_point.into(), lo: i16::MIN.into(), width: Width::Int16 }
    }

    /// `top − lo`: the largest `y'`.
    fn high(self) -> i64 {
        self.width.top() - self.lo
    }

    /// `lo + 2^(bits−1)`: `u = y' + lo_offset` is the output in offset form.
    fn lo_offset(self) -> i64 {
        self.lo + self.width.top() + 1
    }
}

impl Gadgets {
    /// The gadgets of a circuit of mode `privacy`; a private circuit's builder must leave
    /// [`crate::gates::MASK_COLUMNS`] wires to the masking.
    pub(crate) fn new(builder: &mut CircuitBuilder<F, D>, privacy: Privacy) -> Self {
        let byte_checks = if privacy.zero_knowledge() {
            let gate_wires = builder.config.num_wires - crate::gates::MASK_COLUMNS;
            ByteChecks::Limbs(ByteRangeGate::new(gate_wires, builder.config.num_routed_wires), 0)
        } else {
            let table: Vec<(u16, u16)> = (0..256u16).map(|v| (v, v)).collect();
            ByteChecks::Lookup(builder.add_lookup_table_from_pairs(Arc::new(table)))
        };
        Self {
            byte_checks,
            byte_tables: BTreeMap::new(),
            table_gates: Vec::new(),
            embedding_tables: BTreeMap::new(),
            one_hots: HashMap::new(),
            #[cfg(test)]
            fault: None,
            #[cfg(test)]
            cut: false,
            hinted: 0,
            requantize_rows: BTreeMap::new(),
            dot_product_rows: BTreeMap::new(),
        }
    }

    /// Proves `t ∈ [0, 255]`.
    pub(crate) fn range_check_byte(&mut self, builder: &mut CircuitBuilder<F, D>, t: Target) -> ByteTarget {
        match &mut self.byte_checks {
            ByteChecks::Lookup(table) => {
                builder.add_lookup_from_index(t, *table);
            }
            ByteChecks::Limbs(gate, placed) => {
                let (row, op) = builder.find_slot(*gate, &[], &[]);
                builder.connect(Target::wire(row, gate.wire_value(op)), t);
                *placed += 1;
            }
        }
        ByteTarget(t)
    }

    /// `table[u]`: a read of the table of the 256 pairs `(u, table[u])`, so the output is the
    /// function's value and a byte.
    pub(crate) fn lookup(
        &mut self,
        builder: &mut CircuitBuilder<F, D>,
        u: ByteTarget,
        table: &[u8; 256],
    ) -> ByteTarget {
        let entries: Vec<u16> = table.iter().map(|&v| u16::from(v)).collect();
        let table = self.byte_table(builder, &entries);
        ByteTarget(self.read_byte_table(builder, table, u.0))
    }

    /// The table of the 256 `entries`, made on its first use: a lookup table of the pairs
    /// `(i, entries[i])` in a public circuit, a [`ByteTableGate`] in a private one.
    pub(crate) fn byte_table(&mut self, builder: &mut CircuitBuilder<F, D>, entries: &[u16]) -> ByteTable {
        if let Some(&table) = self.byte_tables.get(entries) {
            return table;
        }
        let table = match self.byte_checks {
            ByteChecks::Lookup(_) => {
                let pairs: Vec<(u16, u16)> = entries.iter().enumerate().map(|(i, &e)| (i as u16, e)).collect();
                ByteTable::Lookup(builder.add_lookup_table_from_pairs(Arc::new(pairs)))
            }
            ByteChecks::Limbs(..) => {
                let wires = builder.config.num_wires - crate::gates::MASK_COLUMNS;
                let table: Vec<u32> = entries.iter().map(|&e| u32::from(e)).collect();
                let gate = ByteTableGate::new(table.into(), wires, builder.config.num_routed_wires);
                self.table_gates.push((gate, 0));
                ByteTable::Gate(self.table_gates.len() - 1)
            }
        };
        self.byte_tables.insert(entries.to_vec(), table);
        table
    }

    /// `table[index]`, which also proves `index ∈ [0, 255]`.
    pub(crate) fn read_byte_table(
        &mut self,
        builder: &mut CircuitBuilder<F, D>,
        table: ByteTable,
        index: Target,
    ) -> Target {
        match table {
            ByteTable::Lookup(lut) => builder.add_lookup_from_index(index, lut),
            ByteTable::Gate(k) => {
                let (gate, placed) = &mut self.table_gates[k];
                let (row, op) = builder.find_slot(gate.clone(), &[], &[]);
                *placed += 1;
                builder.connect(Target::wire(row, gate.wire_input(op)), index);
                Target::wire(row, gate.wire_output(op))
            }
        }
    }

    /// `table[u·dim + channel]`: in a public circuit a lookup of the key `u·dim + channel` into
    /// the table of the pairs `(id·dim + c, table[id·dim + c] + 128)` for ids below the
    /// vocabulary (an id outside it has no row, and each key names one (id, channel)); in a
    /// private one `Σ_k (table[k·dim + channel] + 128)·b_k` over the one-hot vector `b` of `u`,
    /// laid out as `layout` says.
    pub(crate) fn embedding(
        &mut self,
        builder: &mut CircuitBuilder<F, D>,
        u: ByteTarget,
        channel: usize,
        dim: usize,
        table: &[i8],
        layout: MacLayout,
    ) -> ByteTarget {
        if let ByteChecks::Limbs(..) = self.byte_checks {
            let one_hot = self.one_hot(builder, u, table.len() / dim);
            let weights = embedding_weights(table, dim, channel);
            let terms: Vec<(i64, Target)> = weights.into_iter().zip(one_hot).collect();
            return ByteTarget(self.affine(builder, layout, 0, &terms));
        }
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

    /// The one-hot vector `b` of the token id `u` over `vocab` ids, made once per id and
    /// vocabulary (embeddings of one token with other vocabularies refuse other ids): every
    /// `b_k ∈ {0, 1}`, `Σ b_k = 1` and `Σ k·b_k = u`, so `b_u` is the one set bit, and an id of
    /// `vocab` or more has no witness.
    fn one_hot(&mut self, builder: &mut CircuitBuilder<F, D>, u: ByteTarget, vocab: usize) -> Vec<Target> {
        if let Some(bits) = self.one_hots.get(&(u.0, vocab)) {
            return bits.clone();
        }
        let bits = builder.add_virtual_targets(vocab);
        builder.add_simple_generator(OneHotHint {
            id: u.0,
            bits: bits.clone(),
            #[cfg(test)]
            wrong_id: matches!(self.fault, Some((_, Fault::OneHotWrongId))),
        });
        for &b in &bits {
            builder.assert_bool(plonky2::iop::target::BoolTarget::new_unsafe(b));
        }
        let count = self.affine(builder, MacLayout::Arithmetic, 0, &bits.iter().map(|&b| (1, b)).collect::<Vec<_>>());
        let one = builder.one();
        builder.connect(count, one);
        let id = self.affine(
            builder,
            MacLayout::Arithmetic,
            0,
            &bits.iter().enumerate().map(|(k, &b)| (k as i64, b)).collect::<Vec<_>>(),
        );
        // Tests only: a malicious prover's wiring without the id constraint (`cut`).
        #[cfg(test)]
        let cut = self.cut && matches!(self.fault, Some((_, Fault::OneHotWrongId)));
        #[cfg(not(test))]
        let cut = false;
        if !cut {
            builder.connect(id, u.0);
        }
        self.one_hots.insert((u.0, vocab), bits.clone());
        bits
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
        ByteTarget(self.requantize_to(builder, acc, requant, Clamp::int8(zero_point, lo), layout))
    }

    /// [`Self::requantize`] to a 16-bit score `y ∈ [−32768, 32767]` around `zero_point`:
    /// returns `u = y + 32768`, range checked as two bytes.
    pub(crate) fn requantize_score(
        &mut self,
        builder: &mut CircuitBuilder<F, D>,
        acc: Target,
        requant: Requant,
        zero_point: i16,
        layout: AffineLayout,
    ) -> Target {
        self.requantize_to(builder, acc, requant, Clamp::int16(zero_point), layout)
    }

    fn requantize_to(
        &mut self,
        builder: &mut CircuitBuilder<F, D>,
        acc: Target,
        requant: Requant,
        clamp: Clamp,
        layout: AffineLayout,
    ) -> Target {
        let fault = self.take_fault();
        let (gate, op, row) = self.requantize_slot(builder, requant, clamp, layout);
        let wire = |w: usize| Target::wire(row, w);
        builder.connect(wire(gate.wire_acc(op)), acc);
        let y_prime = wire(gate.wire_y_prime(op));
        let a_bytes: Vec<Target> = (0..gate.excess_bytes).map(|j| wire(gate.wire_excess(op, j))).collect();
        let r_bytes: Vec<Target> = (0..gate.remainder_bytes).map(|j| wire(gate.wire_remainder(op, j))).collect();
        // Without a folded ReLU (`lo` the width's minimum) the gate makes `u = y'`, so the range
        // check of `u` below is also that of `y'`: one check per output fewer.
        if clamp.lo_offset() != 0 {
            self.range_check_width(builder, y_prime, clamp.width);
        }
        for &t in a_bytes.iter().chain(&r_bytes) {
            self.range_check_byte(builder, t);
        }
        builder.add_simple_generator(RequantHint {
            acc,
            multiplier: requant.multiplier,
            shift: requant.shift,
            clamp,
            y_prime,
            sigma: wire(gate.wire_sigma(op)),
            a_bytes,
            r_bytes,
            #[cfg(test)]
            fault,
        });
        let _ = fault;
        // u = y' + lo + 2^(bits-1) must be in range too: y = y' + lo ≤ top.
        let u = wire(gate.wire_output(op));
        self.range_check_width(builder, u, clamp.width);
        u
    }

    /// Proves `t ∈ [0, 2^bits)` for a value of `width`.
    fn range_check_width(&mut self, builder: &mut CircuitBuilder<F, D>, t: Target, width: Width) {
        match width {
            Width::Int8 => {
                self.range_check_byte(builder, t);
            }
            Width::Int16 => self.range_check_bits(builder, t, width.bits()),
        }
    }

    /// The next free operation of a [`RequantizeGate`] row with these parameters:
    /// `(gate, operation, row)`.
    fn requantize_slot(
        &mut self,
        builder: &mut CircuitBuilder<F, D>,
        requant: Requant,
        clamp: Clamp,
        layout: AffineLayout,
    ) -> (RequantizeGate, usize, usize) {
        let gate = RequantizeGate::new(layout.excess_bytes, layout.remainder_bytes, builder.config.num_routed_wires);
        let s = u32::from(requant.shift);
        let rounding = if s == 0 { 0 } else { 1i64 << (s - 1) };
        let offset = rounding + (clamp.zero_point - clamp.lo) * (1i64 << s);
        let constants = [
            F::from_canonical_u32(requant.multiplier),
            field_of(offset),
            F::from_canonical_u64(1u64 << s),
            field_of(clamp.high()),
            field_of(clamp.lo_offset()),
        ];
        let (row, op) = builder.find_slot(gate, &constants, &constants);
        let used = self.requantize_rows.entry(row).or_insert((gate, requant, clamp, layout, 0));
        used.4 += 1;
        (gate, op, row)
    }

    /// Completes the circuit's partly used [`RequantizeGate`] rows. An unused operation's
    /// all-zero wires would not satisfy its constraints (the offset and `lo + 128` constants are
    /// not zero), so each free operation requantizes a constant zero; nothing reads its output.
    ///
    /// Likewise a [`DotProductGate`] row's free operations: all-zero wires give
    /// `Σ (0 − o_a)(0 − o_b) ≠ 0`, so each sums padding pairs onto a zero accumulator.
    ///
    /// A [`ByteTableGate`] or [`ByteRangeGate`] row's free operations read zero, so that their
    /// generators run and (for a table) their wires satisfy the row's constraints.
    pub(crate) fn finish(&mut self, builder: &mut CircuitBuilder<F, D>) {
        let zero = builder.zero();
        let partial: Vec<_> = self.dot_product_rows.values().filter(|r| r.2 < r.0.num_ops).copied().collect();
        for (gate, offsets, used) in partial {
            for _ in used..gate.num_ops {
                self.dot_product_op(builder, gate, offsets, &[], zero);
            }
        }
        let partial: Vec<_> = self.requantize_rows.values().filter(|r| r.4 < r.0.num_ops).copied().collect();
        for (gate, requant, clamp, layout, used) in partial {
            for _ in used..gate.num_ops {
                let (gate, op, row) = self.requantize_slot(builder, requant, clamp, layout);
                let wire = |w: usize| Target::wire(row, w);
                builder.connect(wire(gate.wire_acc(op)), zero);
                builder.add_simple_generator(RequantHint {
                    acc: zero,
                    multiplier: requant.multiplier,
                    shift: requant.shift,
                    clamp,
                    y_prime: wire(gate.wire_y_prime(op)),
                    sigma: wire(gate.wire_sigma(op)),
                    a_bytes: (0..gate.excess_bytes).map(|j| wire(gate.wire_excess(op, j))).collect(),
                    r_bytes: (0..gate.remainder_bytes).map(|j| wire(gate.wire_remainder(op, j))).collect(),
                    #[cfg(test)]
                    fault: None,
                });
            }
        }
        for k in 0..self.table_gates.len() {
            let (gate, placed) = &self.table_gates[k];
            for _ in 0..(gate.num_ops - placed % gate.num_ops) % gate.num_ops {
                self.read_byte_table(builder, ByteTable::Gate(k), zero);
            }
        }
        if let ByteChecks::Limbs(gate, placed) = self.byte_checks {
            for _ in 0..(gate.num_ops - placed % gate.num_ops) % gate.num_ops {
                self.range_check_byte(builder, zero);
            }
        }
    }

    /// `Σ (x − o_a)·(y − o_b)` over `pairs` of bytes in offset form, in [`DotProductGate`]
    /// operations (the width that takes the fewest rows for this length, chunks chained through
    /// the accumulator) on rows shared by every product sum with the same offsets.
    pub(crate) fn product_sum(
        &mut self,
        builder: &mut CircuitBuilder<F, D>,
        pairs: &[(Target, Target)],
        offsets: [i64; 2],
    ) -> Target {
        let (gate, _) = DotProductGate::for_len(pairs.len(), builder.config.num_routed_wires);
        #[cfg(test)]
        let gate = DotProductGate { faulty: matches!(self.fault, Some((_, Fault::DotProductOffByOne))), ..gate };
        let mut acc = builder.zero();
        for chunk in pairs.chunks(gate.terms) {
            acc = self.dot_product_op(builder, gate, offsets, chunk, acc);
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

    /// One [`DotProductGate`] operation `acc + Σ (x − o_a)·(y − o_b)` over `chunk` (at most
    /// `gate.terms` pairs), on the next free operation of a row with these offsets.
    fn dot_product_op(
        &mut self,
        builder: &mut CircuitBuilder<F, D>,
        gate: DotProductGate,
        offsets: [i64; 2],
        chunk: &[(Target, Target)],
        acc: Target,
    ) -> Target {
        let constants = offsets.map(field_of);
        let (row, op) = builder.find_slot(gate, &constants, &constants);
        self.dot_product_rows.entry(row).or_insert((gate, offsets, 0)).2 += 1;
        // A short chunk is padded with the offsets themselves: (o_a − o_a)·(o_b − o_b) = 0.
        let padding = constants.map(|c| builder.constant(c));
        for j in 0..gate.terms {
            let (x, y) = chunk.get(j).copied().unwrap_or((padding[0], padding[1]));
            builder.connect(Target::wire(row, gate.wire_a(op, j)), x);
            builder.connect(Target::wire(row, gate.wire_b(op, j)), y);
        }
        builder.connect(Target::wire(row, gate.wire_acc(op)), acc);
        Target::wire(row, gate.wire_out(op))
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

/// Writes the one-hot vector of a token id: 1 at the id, 0 elsewhere (an id outside the
/// vocabulary is refused).
#[derive(Debug, Clone)]
struct OneHotHint {
    id: Target,
    bits: Vec<Target>,
    /// Tests only: [`Fault::OneHotWrongId`].
    #[cfg(test)]
    wrong_id: bool,
}

impl SimpleGenerator<F, D> for OneHotHint {
    fn id(&self) -> String {
        "tgrid::OneHotHint".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        vec![self.id]
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        #[allow(unused_mut)]
        let mut id = witness.get_target(self.id).to_canonical_u64();
        let vocab = self.bits.len() as u64;
        #[cfg(test)]
        if self.wrong_id {
            id = if id < vocab { (id + 1) % vocab } else { 0 };
        }
        if id >= vocab {
            anyhow::bail!("token id {id} is outside the vocabulary of {vocab}");
        }
        for (k, &b) in self.bits.iter().enumerate() {
            out.set_target(b, F::from_bool(k as u64 == id))?;
        }
        Ok(())
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_target(self.id)?;
        dst.write_target_vec(&self.bits)
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        Ok(Self {
            id: src.read_target()?,
            bits: src.read_target_vec()?,
            #[cfg(test)]
            wrong_id: false,
        })
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
/// witness) that of [`tgrid_int8::commit::commit_salted`].
pub(crate) fn commit_bytes(
    builder: &mut CircuitBuilder<F, D>,
    values: &[ByteTarget],
    salt: Option<[Target; 4]>,
) -> HashOutTarget {
    let flag = if salt.is_some() { tgrid_int8::commit::SALTED_FLAG } else { 0 };
    let mut elements = vec![builder.constant(F::from_canonical_u64(values.len() as u64 + flag))];
    elements.extend(salt.into_iter().flatten());
    for chunk in values.chunks(BYTES_PER_ELEMENT) {
        elements.push(pack_bytes(builder, chunk));
    }
    builder.hash_n_to_hash_no_pad::<TgridPoseidonHash>(elements)
}

/// The [`tgrid_int8::commit::OutputKey`] of an input salt, in-circuit.
pub(crate) fn output_key(builder: &mut CircuitBuilder<F, D>, salt: [Target; 4]) -> [Target; 4] {
    let mut inputs = vec![builder.constant(F::from_canonical_u64(tgrid_int8::commit::OUTPUT_KEY_TAG))];
    inputs.extend(salt);
    builder.hash_n_to_hash_no_pad::<TgridPoseidonHash>(inputs).elements
}

/// The commitment of [`tgrid_int8::commit::EncryptedTensor`] over byte targets encrypted under `key`:
/// each packed element plus a keystream element, hashed after the length and
/// [`tgrid_int8::commit::ENCRYPTED_FLAG`].
pub(crate) fn commit_encrypted_bytes(
    builder: &mut CircuitBuilder<F, D>,
    values: &[ByteTarget],
    key: [Target; 4],
) -> HashOutTarget {
    let packed: Vec<Target> = values.chunks(BYTES_PER_ELEMENT).map(|chunk| pack_bytes(builder, chunk)).collect();
    let mut elements =
        vec![builder.constant(F::from_canonical_u64(values.len() as u64 + tgrid_int8::commit::ENCRYPTED_FLAG))];
    if !packed.is_empty() {
        let mut stream_inputs = vec![builder.constant(F::from_canonical_u64(tgrid_int8::commit::KEYSTREAM_TAG))];
        stream_inputs.extend(key);
        let stream = builder.hash_n_to_m_no_pad::<TgridPoseidonHash>(stream_inputs, packed.len());
        elements.extend(packed.iter().zip(stream).map(|(&e, k)| builder.add(e, k)));
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
    clamp: Clamp,
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
            + i128::from(self.clamp.zero_point - self.clamp.lo) * (1i128 << s);
        #[allow(unused_mut)]
        let mut z = w >> s;
        #[allow(unused_mut)]
        let mut r = w - (z << s);
        let high = i128::from(self.clamp.high());
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
        dst.write_u32(self.clamp.zero_point as i32 as u32)?;
        dst.write_u32(self.clamp.lo as i32 as u32)?;
        dst.write_bool(self.clamp.width == Width::Int16)?;
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
            clamp: Clamp {
                zero_point: i64::from(src.read_u32()? as i32),
                lo: i64::from(src.read_u32()? as i32),
                width: if src.read_bool()? { Width::Int16 } else { Width::Int8 },
            },
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

#[derive(Debug, Clone)]
pub(super) struct MaxHint {
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

/// The weights of channel `channel` of a private embedding's sum over the one-hot vector:
/// `E[k][channel] + 128` for every token id `k`.
pub(crate) fn embedding_weights(table: &[i8], dim: usize, channel: usize) -> Vec<i64> {
    table.iter().skip(channel).step_by(dim).map(|&v| i64::from((v as u8) ^ 0x80)).collect()
}
