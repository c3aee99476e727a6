//! A LayerNorm row: centered sums, a proven integer square root and inverse square root, and
//! range checks of a given bit width (docs/quantization.md).

use plonky2::field::types::{Field, PrimeField64};
use plonky2::iop::generator::{GeneratedValues, SimpleGenerator};
use plonky2::iop::target::Target;
use plonky2::iop::witness::{PartitionWitness, Witness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::CommonCircuitData;
use plonky2::util::serialization::{Buffer, IoResult, Read, Write};

#[cfg(test)]
use super::Fault;
use super::{pack_bytes, write_bytes, ByteTarget, Gadgets};
use crate::{D, F};

impl Gadgets {
    /// `D_i · R` for a LayerNorm row over the bytes `u`: `D_i = n·u_i − Σu` (the centered
    /// `n·c_i − Σc`), `V = Σ D_i² + eps`; a witnessed `s ∈ [0, 2^26)` with `s² ≤ V < (s+1)²` and
    /// a witnessed `R ∈ [0, 2^32)` with `s·R ≤ 2^31 < s·(R+1)`, every gap proven in `[0, 2^27)`: `s = isqrt(V)`, `R = floor(2^31 / s)`. Every product stays below
    /// 2^58 (`V < 2^50` by the model's bounds), so field identities are integer identities; a
    /// single check `R²·V ≤ 2^62` would not be (`R²·V` could wrap around the field).
    pub(crate) fn layer_norm_row(
        &mut self,
        builder: &mut CircuitBuilder<F, D>,
        u: &[ByteTarget],
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
        // `n·c_i − Σc = n·u_i − Σu` for the centered `c = u − offset`: the offset cancels, so
        // the bytes are not centered first.
        let n = F::from_canonical_usize(u.len());
        let bytes: Vec<Target> = u.iter().map(|b| b.0).collect();
        let sum = builder.add_many(&bytes);
        let one = builder.one();
        let d: Vec<Target> = bytes.iter().map(|&c| builder.arithmetic(n, F::NEG_ONE, c, one, sum)).collect();
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
        // s² ≤ V < (s+1)². Each gap is below 2s + 1 ≤ 2^27 for the true root, and a field value
        // in [0, 2^27) is that integer: V < 2^50 and s² < 2^52 keep a negative gap near p.
        let s_squared = builder.mul(s, s);
        let below = builder.sub(v, s_squared);
        self.range_check_bits(builder, below, 27);
        let two_s_one = builder.mul_const_add(F::TWO, s, one);
        let next_square = builder.add(s_squared, two_s_one);
        let next_minus_v = builder.sub(next_square, v);
        let above = builder.sub(next_minus_v, one);
        self.range_check_bits(builder, above, 27);
        // s·R ≤ 2^31 < s·(R+1): both gaps below s < 2^26 for the true quotient; s·R < 2^58.
        let limit = builder.constant(F::from_canonical_u64(1 << tgrid_int8::INV_SQRT_BITS));
        let s_r = builder.mul(s, r);
        let room = builder.sub(limit, s_r);
        self.range_check_bits(builder, room, 26);
        let s_r_s = builder.add(s_r, s);
        let past = builder.sub(s_r_s, limit);
        let past = builder.sub(past, one);
        self.range_check_bits(builder, past, 26);
        d.iter().map(|&x| builder.mul(x, r)).collect()
    }

    /// Proves `v ∈ [0, 2^bits)` (`bits ≤ 62`): bytes that pack to `v`, the top one scaled so
    /// that it is a byte only below its bit budget.
    pub(crate) fn range_check_bits(&mut self, builder: &mut CircuitBuilder<F, D>, v: Target, bits: usize) {
        let count = bits.div_ceil(8);
        let bytes = builder.add_virtual_targets(count);
        builder.add_simple_generator(BytesHint::new(v, bytes.clone()));
        let checked: Vec<ByteTarget> = bytes.iter().map(|&b| self.range_check_byte(builder, b)).collect();
        let spare = 8 * count - bits;
        if spare > 0 {
            let scaled = builder.mul_const(F::from_canonical_u64(1 << spare), bytes[count - 1]);
            self.range_check_byte(builder, scaled);
        }
        let packed = pack_bytes(builder, &checked);
        builder.connect(packed, v);
    }
}

/// Writes `s = isqrt(V)` and `R = floor(2^31 / s)` for a LayerNorm row.
#[derive(Debug, Clone)]
pub(super) struct InvSqrtHint {
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
        let mut s = tgrid_int8::infer::isqrt(v);
        #[cfg(test)]
        match self.fault {
            Some(Fault::IsqrtHigh) => s += 1,
            Some(Fault::IsqrtLow) => s -= 1,
            _ => {}
        }
        #[allow(unused_mut)]
        let mut r = (1u64 << tgrid_int8::INV_SQRT_BITS) / s.max(1);
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
pub(super) struct BytesHint {
    value: Target,
    bytes: Vec<Target>,
    /// Tests only: write the bytes of `value + 2^16` ([`Fault::ScoreExpOffByOne`]).
    #[cfg(test)]
    pub(super) fault: Option<Fault>,
}

impl BytesHint {
    pub(super) fn new(value: Target, bytes: Vec<Target>) -> Self {
        Self {
            value,
            bytes,
            #[cfg(test)]
            fault: None,
        }
    }
}

impl SimpleGenerator<F, D> for BytesHint {
    fn id(&self) -> String {
        "tgrid::BytesHint".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        vec![self.value]
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        #[allow(unused_mut)]
        let mut value = u128::from(witness.get_target(self.value).to_canonical_u64());
        #[cfg(test)]
        if self.fault == Some(Fault::ScoreExpOffByOne) {
            value += 1 << 16;
        }
        write_bytes(out, &self.bytes, value)
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_target(self.value)?;
        dst.write_target_vec(&self.bytes)
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        Ok(Self::new(src.read_target()?, src.read_target_vec()?))
    }
}
