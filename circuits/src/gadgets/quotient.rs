//! The exact quotient of two int8 values ([`tgrid_int8::Op::Div`]): a witnessed sign, zero flag,
//! magnitude, quotient and remainder, every one constrained (docs/quantization.md).

use plonky2::field::types::Field;
use plonky2::iop::generator::{GeneratedValues, SimpleGenerator};
use plonky2::iop::target::Target;
use plonky2::iop::witness::{PartitionWitness, Witness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::CommonCircuitData;
use plonky2::util::serialization::{Buffer, IoResult, Read, Write};

#[cfg(test)]
use super::Fault;
use super::{field_of, signed_of, ByteTarget, Gadgets};
use crate::{D, F};
use tgrid_int8::{QUOTIENT_BITS, QUOTIENT_BOUND};

/// Bits of `Q + 255·2^16`, which lies in `[0, 2^25)`.
const SHIFTED_QUOTIENT_BITS: usize = QUOTIENT_BITS as usize + 9;

impl Gadgets {
    /// `Q = floor(2^16 · A · sgn(B) / |B|)` for `A = u_a − offsets[0]`, `B = u_b − offsets[1]`
    /// (a zero `B` counting as 1), as [`tgrid_int8::infer::quotient`]. Witnessed: `σ` (B < 0),
    /// `z` (B = 0), `m = |B|`, an inverse of `B` when it is not zero, `Q` and `r`. Constraints:
    /// `σ, z` bits; `m` a byte with `B = (1 − 2σ)·m` (only `|B|` is a byte of the two roots);
    /// `z·B = 0` and `B·inv = 1 − z` (`z = 1` exactly when `B = 0`); `σ·z = 0`; with
    /// `d = m + z ∈ [1, 255]`, `r` and `d − 1 − r` bytes, `Q + 255·2^16 ∈ [0, 2^25)`, and
    /// `2^16·A·(1 − 2σ) = Q·d + r`. Every term is below 2^34 in magnitude, so the field identity
    /// is the integer one, and `r ∈ [0, d)` makes `Q` the floor.
    pub(crate) fn quotient(
        &mut self,
        builder: &mut CircuitBuilder<F, D>,
        a: ByteTarget,
        b: ByteTarget,
        offsets: [i64; 2],
    ) -> Target {
        #[cfg(test)]
        let fault = self
            .fault
            .filter(|(at, f)| {
                *at == self.hinted
                    && matches!(
                        f,
                        Fault::QuotientHigh
                            | Fault::QuotientLow
                            | Fault::QuotientUnbalanced
                            | Fault::ZeroDivisorMissed
                            | Fault::QuotientWrapped
                            | Fault::DivisorNegated
                            | Fault::ZeroDivisorFlagged
                            | Fault::ZeroDivisorSigned
                    )
            })
            .map(|(_, f)| f);
        let centered_a = builder.add_const(a.0, -field_of(offsets[0]));
        let centered_b = builder.add_const(b.0, -field_of(offsets[1]));
        let [sigma, zero, inverse, magnitude, q, r] = std::array::from_fn(|_| builder.add_virtual_target());
        builder.add_simple_generator(QuotientHint {
            a: centered_a,
            b: centered_b,
            outputs: [sigma, zero, inverse, magnitude, q, r],
            #[cfg(test)]
            fault,
        });
        // The identities, connected at the end (a malicious prover's build leaves them out).
        let mut equal: Vec<(Target, Target)> = Vec::new();
        let zero_t = builder.zero();
        for bit in [sigma, zero] {
            let not_bit = builder.mul_sub(bit, bit, bit);
            equal.push((not_bit, zero_t));
        }
        // B = (1 − 2σ)·m, m a byte.
        self.range_check_byte(builder, magnitude);
        let sigma_m = builder.mul(sigma, magnitude);
        let two_sigma_m = builder.mul_const(F::TWO, sigma_m);
        let signed = builder.sub(magnitude, two_sigma_m);
        equal.push((signed, centered_b));
        // z = [B = 0]: z·B = 0, and B·inv = 1 − z has no solution for B = 0 unless z = 1.
        let zero_b = builder.mul(zero, centered_b);
        equal.push((zero_b, zero_t));
        let b_inv = builder.mul(centered_b, inverse);
        let one = builder.one();
        let not_zero = builder.sub(one, zero);
        equal.push((b_inv, not_zero));
        // A zero divisor is +1: its sign bit is 0.
        let signed_zero = builder.mul(sigma, zero);
        equal.push((signed_zero, zero_t));
        // d = m + z ∈ [1, 255]; r ∈ [0, d).
        let divisor = builder.add(magnitude, zero);
        self.range_check_byte(builder, r);
        let room = builder.sub(divisor, r);
        let room = builder.add_const(room, F::NEG_ONE);
        self.range_check_byte(builder, room);
        // |Q| ≤ 255·2^16.
        let shifted = builder.add_const(q, field_of(QUOTIENT_BOUND));
        self.range_check_bits(builder, shifted, SHIFTED_QUOTIENT_BITS);
        // 2^16·A·(1 − 2σ) = Q·d + r.
        let scale = F::from_canonical_u64(1 << QUOTIENT_BITS);
        let scaled_a = builder.mul_const(scale, centered_a);
        let sigma_a = builder.mul(sigma, scaled_a);
        let signed_a = builder.mul_const_add(-F::TWO, sigma_a, scaled_a);
        let product = builder.mul_add(q, divisor, r);
        equal.push((product, signed_a));
        #[cfg(test)]
        let cut = self.cut && fault.is_some();
        #[cfg(not(test))]
        let cut = false;
        if !cut {
            for (x, y) in equal {
                builder.connect(x, y);
            }
        }
        // The element's requantization counts it as hinted (its faults aim at the same index).
        q
    }
}

/// Writes `σ, z, inv, m, Q, r` for centered `A` and `B` ([`Gadgets::quotient`]).
#[derive(Debug, Clone)]
pub(super) struct QuotientHint {
    a: Target,
    b: Target,
    outputs: [Target; 6],
    #[cfg(test)]
    fault: Option<Fault>,
}

impl SimpleGenerator<F, D> for QuotientHint {
    fn id(&self) -> String {
        "tgrid::QuotientHint".into()
    }

    fn dependencies(&self) -> Vec<Target> {
        vec![self.a, self.b]
    }

    fn run_once(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> anyhow::Result<()> {
        let (a, b) = (signed_of(witness.get_target(self.a)), signed_of(witness.get_target(self.b)));
        #[allow(unused_mut)]
        let (mut sigma, mut zero, mut magnitude) = (i64::from(b < 0), i64::from(b == 0), b.abs());
        #[allow(unused_mut)]
        let mut q = tgrid_int8::infer::quotient(a, b);
        #[cfg(test)]
        match self.fault {
            // The remainder goes negative: `r` leaves its byte.
            Some(Fault::QuotientHigh) => q += 1,
            // The remainder reaches the divisor: `d − 1 − r` leaves its byte.
            Some(Fault::QuotientLow) => q -= 1,
            // A zero divisor unflagged: `d = 0`, so `r` must be all of `2^16·A`.
            Some(Fault::ZeroDivisorMissed) if b == 0 => zero = 0,
            // The divisor's other root: the sign flipped and `m = −|B|`, which is no byte (the
            // remainder then makes the main identity hold).
            Some(Fault::DivisorNegated) if b != 0 => {
                sigma = 1 - sigma;
                magnitude = -b.abs();
            }
            // A nonzero divisor flagged zero: `z·B ≠ 0`.
            Some(Fault::ZeroDivisorFlagged) if b != 0 => {
                zero = 1;
                q = (a << QUOTIENT_BITS).div_euclid(magnitude + 1);
            }
            // A zero divisor counted as −1: the quotient's sign flips, `σ·z ≠ 0`.
            Some(Fault::ZeroDivisorSigned) if b == 0 => {
                sigma = 1;
                q = -(a << QUOTIENT_BITS);
            }
            _ => {}
        }
        let divisor = magnitude + zero;
        let scaled = (1 - 2 * sigma) * (a << QUOTIENT_BITS);
        #[allow(unused_mut)]
        let mut r = scaled - q * divisor;
        #[cfg(test)]
        if self.fault == Some(Fault::QuotientUnbalanced) {
            q += 1;
        }
        #[allow(unused_mut)]
        let mut q_field = field_of(q);
        // Another remainder in [0, d) and the field's quotient for it: far outside 2^25.
        #[cfg(test)]
        if self.fault == Some(Fault::QuotientWrapped) && divisor > 1 {
            // r' = r + 1 (mod d), Q' = (2^16·A·(1−2σ) − r') / d in the field.
            r = (r + 1) % divisor;
            q_field = (field_of(scaled) - field_of(r)) * field_of(divisor).inverse();
        }
        // 0 has no inverse: any value, `B·inv = 1 − z` holds by `z = 1` alone.
        let inverse = if b == 0 { F::ZERO } else { field_of(b).inverse() };
        let [sigma_t, zero_t, inverse_t, magnitude_t, q_t, r_t] = self.outputs;
        out.set_target(sigma_t, field_of(sigma))?;
        out.set_target(zero_t, field_of(zero))?;
        out.set_target(inverse_t, inverse)?;
        out.set_target(magnitude_t, field_of(magnitude))?;
        out.set_target(q_t, q_field)?;
        out.set_target(r_t, field_of(r))
    }

    fn serialize(&self, dst: &mut Vec<u8>, _common: &CommonCircuitData<F, D>) -> IoResult<()> {
        dst.write_target(self.a)?;
        dst.write_target(self.b)?;
        dst.write_target_vec(&self.outputs)
    }

    fn deserialize(src: &mut Buffer<'_>, _common: &CommonCircuitData<F, D>) -> IoResult<Self> {
        let (a, b) = (src.read_target()?, src.read_target()?);
        let outputs = src.read_target_vec()?;
        let outputs: [Target; 6] = outputs.try_into().map_err(|_| plonky2::util::serialization::IoError)?;
        Ok(Self {
            a,
            b,
            outputs,
            #[cfg(test)]
            fault: None,
        })
    }
}
