//! The Goldilocks ↔ BN254 encodings of `tgrid_poseidon_bn254::hasher` as gadgets: absorbing
//! ([`pack3`] = `hasher::pack`), squeezing ([`unpack_rate`] = `hasher::unpack`) and observing a
//! hash ([`hash_limbs`] = `Bn254HashOut::limbs`).

use ark_bn254::Fr;
use ark_ff::{AdditiveGroup, Field, PrimeField};
use ark_r1cs_std::fields::fp::FpVar;
use ark_r1cs_std::prelude::*;
use ark_relations::gr1cs::SynthesisError;
use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::field::types::Field as _;
use tgrid_poseidon_bn254::hasher::{self, HASH_LIMB_BITS, PACK};
use tgrid_poseidon_bn254::Bn254HashOut;

use crate::bits::{add_int, enforce_product, int, u, Bits, H, M32, P};
use crate::fault::{self, Fault};
use crate::GoldilocksVar;

fn two_pow(n: u64) -> Fr {
    Fr::from(2u8).pow([n])
}

/// `g0 + 2^64·g1 + 2^128·g2` (missing values are zero), as `hasher::pack`. Free for canonical
/// inputs; others are reduced first, since canonicity is what makes the packing injective.
/// More than 3 values is an error (`Unsatisfiable`).
pub fn pack3(values: &[GoldilocksVar]) -> Result<FpVar<Fr>, SynthesisError> {
    if values.len() > PACK {
        return Err(SynthesisError::Unsatisfiable);
    }
    let mut acc = FpVar::zero();
    for (i, v) in values.iter().enumerate() {
        acc += v.reduce()?.var() * two_pow(64 * i as u64);
    }
    Ok(acc)
}

/// The three canonical Goldilocks values of a squeezed rate element, as `hasher::unpack`: the
/// low 192 bits of `x`'s canonical integer as three 64-bit limbs, each reduced mod p.
///
/// Witnesses `x = L0 + 2^64·L1 + 2^128·L2 + 2^192·hi` with `hi < 2^62`, `hi ≤ H − 1`
/// (H = floor(r / 2^192)), so the integer is below r and the split unique; each
/// `L = g + b·p` with `g` canonical, `b` boolean and `b ⇒ g < 2^32 − 1`, so `L < 2^64`.
///
/// Completeness gap: an honest `x` with `hi = H` (probability < 2^-61 for a pseudorandom `x`)
/// has no such witness; the prover then fails with `SynthesisError::Unsatisfiable`.
pub fn unpack_rate(x: &FpVar<Fr>) -> Result<[GoldilocksVar; 3], SynthesisError> {
    if let FpVar::Constant(c) = x {
        return Ok(hasher::unpack(*c).map(GoldilocksVar::constant));
    }
    let cs = x.cs();
    let hint = x.value().and_then(|v| {
        let mut n = int(v);
        if fault::on(Fault::UnpackAlias) {
            n = add_int(n, <Fr as PrimeField>::MODULUS.0);
        } else if n[3] >= H {
            return Err(SynthesisError::Unsatisfiable);
        }
        let mut l = [n[0] as u128, n[1] as u128, n[2] as u128];
        let mut hi = n[3];
        // Test faults: move a unit between adjacent limbs (x unchanged, a limb ≥ 2^64).
        if fault::on(Fault::UnpackLimbBorrow) {
            l[0] += 1 << 64;
            l[1] = l[1].wrapping_sub(1);
        }
        if fault::on(Fault::UnpackHiBorrow) {
            l[2] += 1 << 64;
            hi = hi.wrapping_sub(1);
        }
        Ok((l, hi))
    });

    let mut sum = FpVar::zero();
    let mut out = Vec::with_capacity(3);
    for i in 0..3 {
        let limb = hint.map(|(l, _)| {
            let mut b = l[i] >= P as u128;
            if i == 0 && fault::on(Fault::UnpackFlag) {
                b = !b;
            }
            let g = Fr::from(l[i]) - if b { Fr::from(P) } else { Fr::ZERO };
            (int(g), b)
        });
        let bits = Bits::alloc(&cs, limb.map(|l| l.0), 64)?;
        bits.enforce_canonical()?;
        let g = GoldilocksVar::from_canonical_bits(&bits)?;
        fault::mark(&cs, "bool");
        let b = FpVar::from(Boolean::new_witness(cs.clone(), || limb.map(|l| l.1))?);

        // b ⇒ g < 2^32 − 1 (so L = g + b·p < 2^64): b·hi32 = 0, and (lo32 − (2^32−1))·w = b,
        // which has a solution w exactly when b = 0 or lo32 ≠ 2^32 − 1.
        let hi32 = bits.lc(32..64)?;
        let lo32 = bits.lc(0..32)? - Fr::from(M32);
        let w = FpVar::new_witness(cs.clone(), || {
            let w = if b.value()? == Fr::ONE { lo32.value()?.inverse().unwrap_or(Fr::ZERO) } else { Fr::ZERO };
            Ok(if i == 0 && fault::on(Fault::UnpackFlagHint) { w + Fr::ONE } else { w })
        })?;
        fault::mark(&cs, "flag");
        enforce_product(&b, &hi32, &FpVar::zero())?;
        enforce_product(&lo32, &w, &b)?;

        sum += (g.var() + b * Fr::from(P)) * two_pow(64 * i as u64);
        out.push(g);
    }

    let hi = Bits::alloc(&cs, hint.map(|h| u(h.1)), 62)?;
    hi.enforce_at_most(0..62, H - 1)?;
    sum += hi.all()? * two_pow(192);
    fault::mark(&cs, "link");
    sum.enforce_equal(x)?;
    out.try_into().map_err(|_| SynthesisError::Unsatisfiable)
}

/// The five limbs plonky2 observes for a BN254 hash, as `Bn254HashOut::limbs`: the canonical
/// 254-bit decomposition of `x` regrouped into 56, 56, 56, 56 and 30 bits (canonical values).
///
/// Uniqueness uses the same bound as [`unpack_rate`]: the top 62 bits are at most H − 1, so an
/// honest hash with top limb exactly H (probability < 2^-61) makes the prover fail with
/// `SynthesisError::Unsatisfiable`.
pub fn hash_limbs(x: &FpVar<Fr>) -> Result<[GoldilocksVar; 5], SynthesisError> {
    if let FpVar::Constant(c) = x {
        return Ok(Bn254HashOut(*c).limbs().map(|l| GoldilocksVar::constant(GoldilocksField::from_canonical_u64(l))));
    }
    let cs = x.cs();
    let hint = x.value().and_then(|v| {
        let n = int(v);
        if fault::on(Fault::HashAlias) {
            Ok(add_int(n, <Fr as PrimeField>::MODULUS.0))
        } else if n[3] >= H {
            Err(SynthesisError::Unsatisfiable)
        } else {
            Ok(n)
        }
    });
    let bits = Bits::alloc(&cs, hint, 254)?;
    bits.enforce_at_most(192..254, H - 1)?;
    fault::mark(&cs, "link");
    bits.all()?.enforce_equal(x)?;

    let mut out = Vec::with_capacity(HASH_LIMB_BITS.len());
    let mut at = 0;
    for width in HASH_LIMB_BITS {
        let r = at..at + width as usize;
        out.push(GoldilocksVar::from_short_bits(bits.lc(r.clone())?, &bits.bools[r]));
        at += width as usize;
    }
    out.try_into().map_err(|_| SynthesisError::Unsatisfiable)
}
