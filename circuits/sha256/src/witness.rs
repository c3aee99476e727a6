//! Typed witness access for u32 targets and digests.

use plonky2::field::types::PrimeField64;
use plonky2::hash::hash_types::RichField;
use plonky2::iop::target::{BoolTarget, Target};
use plonky2::iop::witness::Witness;

use crate::{digest_bytes, Sha256Error, U32Target};

/// Reads and writes u32 values and digests in any plonky2 witness ([`PartialWitness`] before
/// proving, `PartitionWitness` after witness generation).
///
/// [`PartialWitness`]: plonky2::iop::witness::PartialWitness
pub trait WitnessU32<F: RichField>: Witness<F> {
    /// Sets a u32 target.
    fn set_u32(&mut self, target: U32Target, value: u32) -> Result<(), Sha256Error> {
        self.set_target(target.0, F::from_canonical_u32(value)).map_err(|e| Sha256Error::Witness(e.to_string()))
    }

    /// Sets u32 targets from values of the same length.
    fn set_u32s(&mut self, targets: &[U32Target], values: &[u32]) -> Result<(), Sha256Error> {
        check_len(targets.len(), values.len())?;
        targets.iter().zip(values).try_for_each(|(&t, &v)| self.set_u32(t, v))
    }

    /// Sets byte targets (for [`sha256_bytes`](crate::CircuitBuilderSha256::sha256_bytes)).
    fn set_bytes(&mut self, targets: &[Target], bytes: &[u8]) -> Result<(), Sha256Error> {
        check_len(targets.len(), bytes.len())?;
        targets.iter().zip(bytes).try_for_each(|(&t, &b)| {
            self.set_target(t, F::from_canonical_u8(b)).map_err(|e| Sha256Error::Witness(e.to_string()))
        })
    }

    /// Sets bit targets from bytes, most significant bit first (for
    /// [`sha256_bits`](crate::CircuitBuilderSha256::sha256_bits)); `targets` has `8 · bytes.len()`
    /// entries.
    fn set_bits_from_bytes(&mut self, targets: &[BoolTarget], bytes: &[u8]) -> Result<(), Sha256Error> {
        check_len(targets.len(), 8 * bytes.len())?;
        targets.iter().enumerate().try_for_each(|(k, &t)| {
            let bit = (bytes[k / 8] >> (7 - k % 8)) & 1 == 1;
            self.set_bool_target(t, bit).map_err(|e| Sha256Error::Witness(e.to_string()))
        })
    }

    /// Reads a u32 target, checking that it is set and below 2^32.
    fn get_u32(&self, target: U32Target) -> Result<u32, Sha256Error> {
        let value = self.try_get_target(target.0).ok_or(Sha256Error::Unset { target: target.0 })?.to_canonical_u64();
        u32::try_from(value).map_err(|_| Sha256Error::NotU32 { value })
    }

    /// Reads a digest (8 big-endian words) as its 32 bytes.
    fn get_sha256_digest(&self, digest: &[U32Target; 8]) -> Result<[u8; 32], Sha256Error> {
        let mut words = [0u32; 8];
        for (w, &t) in words.iter_mut().zip(digest) {
            *w = self.get_u32(t)?;
        }
        Ok(digest_bytes(&words))
    }
}

impl<F: RichField, W: Witness<F> + ?Sized> WitnessU32<F> for W {}

/// Reads a digest from 8 field elements holding its big-endian words (e.g. a proof's public
/// inputs), checking that each is a u32.
pub fn digest_from_fields<F: PrimeField64>(elements: &[F]) -> Result<[u8; 32], Sha256Error> {
    check_len(8, elements.len())?;
    let mut words = [0u32; 8];
    for (w, e) in words.iter_mut().zip(elements) {
        let value = e.to_canonical_u64();
        *w = u32::try_from(value).map_err(|_| Sha256Error::NotU32 { value })?;
    }
    Ok(digest_bytes(&words))
}

fn check_len(expected: usize, actual: usize) -> Result<(), Sha256Error> {
    if expected == actual {
        Ok(())
    } else {
        Err(Sha256Error::LengthMismatch { expected, actual })
    }
}
