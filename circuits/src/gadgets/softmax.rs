//! A Softmax row: a proven maximum, exponentials by table reads, and rounded division by
//! their sum (docs/quantization.md).

use plonky2::field::types::{Field, PrimeField64};
use plonky2::iop::generator::{GeneratedValues, SimpleGenerator};
use plonky2::iop::target::Target;
use plonky2::iop::witness::{PartitionWitness, Witness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::CommonCircuitData;
use plonky2::util::serialization::{Buffer, IoResult, Read, Write};

use super::layer_norm::BytesHint;
#[cfg(test)]
use super::Fault;
use super::MaxHint;
use super::{field_of, pack_bytes, write_bytes, ByteTable, ByteTarget, Gadgets};
use crate::{D, F};

/// The exponential of a Softmax row's distances to its maximum.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ExpTable<'a> {
    /// `exp[d]` for a byte `d`: one table read (proving `d ∈ [0, 255]`).
    Direct(&'a [u16]),
    /// `floor((high[h]·low[l] + 2^15) / 2^16)` for a 16-bit `d = 256·h + l`
    /// ([`tgrid_int8::infer::score_exp`]).
    Split { high: &'a [u16], low: &'a [u16] },
}

impl Gadgets {
    /// The outputs (offset-form probabilities) of a softmax row over the range-checked values
    /// `u` (bytes, or the 16-bit scores of a `ScoresSoftmax`):
    /// - a witnessed maximum `m` with `d_j = m − u_j` in the exponential's domain (a row of
    ///   the byte table, or two bytes with `d_j = l + 256·h` whose reads check them), so
    ///   `m ≥ u_j`, and `Π d_j = 0` (`m` is one of the `u_j`);
    /// - `e_j = exp(d_j)` by those reads (for the split table, `high[h]·low[l] + 2^15` as four
    ///   checked bytes, the top two being `e_j`), `S = Σ e_j`;
    /// - per cell a witnessed `q_j` (a byte) and remainder `r_j` with
    ///   `510·e_j + S = 2S·q_j + r_j` and `r_j`, `2S − 1 − r_j` both in the bytes that
    ///   `2·n·max(exp)` needs (3 up to 128 cells), i.e.
    ///   `q_j = floor((510·e_j + S) / 2S)`, the rounded `255·e_j/S`.
    pub(crate) fn softmax_row(
        &mut self,
        builder: &mut CircuitBuilder<F, D>,
        u: &[Target],
        exp: ExpTable<'_>,
    ) -> Vec<ByteTarget> {
        let (table, low_table) = match exp {
            ExpTable::Direct(exp) => (self.byte_table(builder, exp), None),
            ExpTable::Split { high, low } => (self.byte_table(builder, high), Some(self.byte_table(builder, low))),
        };
        // A fault aimed at the row's first cell may also hit the maximum.
        #[cfg(test)]
        let max_fault = self.fault.filter(|(at, _)| *at == self.hinted).map(|(_, f)| f);
        #[cfg(test)]
        let row_cut = self.cut && matches!(max_fault, Some(Fault::MaxTooLarge | Fault::MaxTooSmall));
        #[cfg(not(test))]
        let row_cut = false;
        let m = builder.add_virtual_target();
        let inputs: Vec<Target> = u.to_vec();
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
            e.push(match low_table {
                None => self.read_byte_table(builder, table, d),
                Some(low_table) => self.split_exp(builder, d, table, low_table),
            });
            product = builder.mul(product, d);
        }
        if !row_cut {
            let zero = builder.zero();
            builder.connect(product, zero);
        }
        let sum = builder.add_many(&e);
        let two_sum = builder.add(sum, sum);
        // r and t are below 2S ≤ 2·n·max(exp): as many bytes as that bound needs (3 for rows of
        // up to 128 cells), at most 4 (rows of at most 2^14 cells, `exp` of 16 bits).
        let max_exp = match exp {
            ExpTable::Direct(exp) => exp.iter().copied().max().map_or(1, u64::from),
            ExpTable::Split { .. } => u64::from(u16::MAX),
        };
        let bound = 2 * u.len() as u64 * max_exp;
        let gap_bytes = (u64::BITS - bound.leading_zeros()).div_ceil(8).max(1) as usize;
        let one = builder.one();
        e.iter()
            .map(|&e_j| {
                let fault = self.take_fault();
                let q = builder.add_virtual_target();
                let r_bytes = builder.add_virtual_targets(gap_bytes);
                let t_bytes = builder.add_virtual_targets(gap_bytes);
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
}

impl Gadgets {
    /// `floor((high[h]·low[l] + 2^15) / 2^16)` for `d = l + 256·h`: witnessed digits `l`, `h`
    /// (their reads of the two 256-entry tables prove them bytes, so `d ∈ [0, 2^16)`), and
    /// `high[h]·low[l] + 2^15 < 2^32` as four range-checked bytes, the top two the result.
    fn split_exp(&mut self, builder: &mut CircuitBuilder<F, D>, d: Target, high: ByteTable, low: ByteTable) -> Target {
        #[cfg(test)]
        let fault = self.fault.filter(|(at, f)| *at == self.hinted && *f == Fault::ScoreExpOffByOne).map(|(_, f)| f);
        let digits = builder.add_virtual_targets(2);
        builder.add_simple_generator(BytesHint::new(d, digits.clone()));
        let l = self.read_byte_table(builder, low, digits[0]);
        let h = self.read_byte_table(builder, high, digits[1]);
        let packed = pack_bytes(builder, &[ByteTarget(digits[0]), ByteTarget(digits[1])]);
        builder.connect(packed, d);
        let product = builder.mul(h, l);
        let rounded = builder.add_const(product, F::from_canonical_u64(1 << 15));
        let bytes = builder.add_virtual_targets(4);
        #[allow(unused_mut)]
        let mut hint = BytesHint::new(rounded, bytes.clone());
        #[cfg(test)]
        {
            hint.fault = fault;
        }
        builder.add_simple_generator(hint);
        let checked: Vec<ByteTarget> = bytes.iter().map(|&b| self.range_check_byte(builder, b)).collect();
        let packed = pack_bytes(builder, &checked);
        #[cfg(test)]
        let cut = self.cut && fault.is_some();
        #[cfg(not(test))]
        let cut = false;
        if !cut {
            builder.connect(packed, rounded);
        }
        pack_bytes(builder, &checked[2..])
    }
}

/// Writes a softmax cell's rounded quotient `q = floor((510·e + S) / 2S)`, its remainder
/// `r` and `2S − 1 − r` as bytes.
#[derive(Debug, Clone)]
pub(super) struct SoftmaxHint {
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
        // A faulty remainder outside the bytes' range is written as its low bytes: the
        // identities above then fail, which is what the fault tests show.
        let mask = (1u128 << (8 * self.r_bytes.len())) - 1;
        out.set_target(self.q, field_of(q as i64))?;
        write_bytes(out, &self.r_bytes, (r as u128) & mask)?;
        write_bytes(out, &self.t_bytes, (t as u128) & mask)
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
