//! Soundness: every hint is forged through the fault-injection hook while the claimed output
//! (and, where possible, every linear relation) is kept, and the constraint kind that must
//! reject the forgery is the first one to fail. `BitCarry` lets a forged out-of-range value be
//! "decomposed" (bit 0 absorbs the excess), so those forgeries reach the booleanity checks.

use rand::Rng;

use super::*;
use crate::bits::{H, M32};
use crate::ext::GoldilocksExt;
use crate::{hash_limbs, unpack_rate, GoldilocksExtVar};
use Fault::*;

type Cs = ConstraintSystemRef<Fr>;

fn product(cs: &Cs, a: u64, b: u64) -> GoldilocksVar {
    witness(cs, a).mul(&witness(cs, b)).unwrap()
}

fn fr_witness(cs: &Cs, x: Fr) -> FpVar<Fr> {
    FpVar::new_witness(cs.clone(), || Ok(x)).unwrap()
}

// ---- canonical witnesses -------------------------------------------------------------------

#[test]
fn alias_v_plus_p_is_not_canonical() {
    for v in [0, 1, 7, (1 << 31) + 5, (1 << 32) - 2] {
        // The alias is injected inside new_witness_canonical itself.
        let cs = new_cs();
        fault::with(&[CanonicalAlias], || witness(&cs, v));
        assert_eq!(first_failure(&cs), Some("canon"), "alias of {v}");
    }
}

#[test]
fn canonicity_hint_is_checked() {
    // (When hi32 = 2^32 − 1, i.e. v ≥ 2^64 − 2^32, the constraint reads 0 = lo32 and w is
    // irrelevant, so those values are not forgeries.)
    for v in [12345, (1 << 32) - 1, 1 << 32, 0, P - (1 << 32) - 1] {
        let cs = new_cs();
        fault::with(&[CanonicityHint], || witness(&cs, v));
        assert_eq!(first_failure(&cs), Some("canon"));
    }
}

#[test]
fn non_boolean_bits_are_rejected() {
    // bit0 + 2, bit1 − 1 keeps every sum: only booleanity notices.
    let cs = new_cs();
    fault::with(&[BitNonBoolean], || witness_u64(&cs, 0b10));
    assert_eq!(first_failure(&cs), Some("bool"));
    let cs = new_cs();
    fault::with(&[BitNonBoolean], || witness(&cs, 0b1110));
    assert_eq!(first_failure(&cs), Some("bool"));
}

// ---- reduce ---------------------------------------------------------------------------------

/// (p − 1)(p − 5) = 5 mod p: a product with quotient ≥ 1 and a remainder below 2^32 − 1,
/// whose alias rem + p still fits in 64 bits.
#[test]
fn reduce_rejects_a_non_canonical_remainder() {
    assert_caught(&[ReduceQuotientDown], "canon", |cs| product(cs, P - 1, P - 5), |x| x.reduce().map(drop));
}

#[test]
fn reduce_rejects_a_remainder_above_2_64() {
    // rem + p ≥ 2^64 for a typical remainder: only representable with a non-boolean bit.
    assert_caught(
        &[ReduceQuotientDown, BitCarry],
        "bool",
        |cs| product(cs, 1 << 40, (1 << 40) + 3),
        |x| x.reduce().map(drop),
    );
}

#[test]
fn reduce_rejects_a_negative_remainder() {
    assert_caught(&[ReduceQuotientUp, BitCarry], "bool", |cs| product(cs, P - 1, P - 5), |x| x.reduce().map(drop));
}

#[test]
fn reduce_rejects_a_wrong_remainder() {
    assert_caught(&[ReduceRemainder], "link", |cs| product(cs, P - 1, 1 << 50), |x| x.reduce().map(drop));
}

#[test]
fn reduce_rejects_a_field_quotient() {
    // Any remainder satisfies x = q·p + rem over Fr with q = (x − rem)/p: only q's range check
    // stops it.
    assert_caught(&[ReduceFieldQuotient, BitCarry], "bool", |cs| product(cs, 3, P - 1), |x| x.reduce().map(drop));
    assert_caught(&[ReduceFieldQuotient], "link", |cs| product(cs, 3, P - 1), |x| x.reduce().map(drop));
}

#[test]
fn reduce_rejects_non_boolean_quotient_bits() {
    assert_caught(&[BitNonBoolean], "bool", |cs| product(cs, P - 1, P - 1), |x| x.reduce().map(drop));
}

// ---- equality mod p -------------------------------------------------------------------------

#[test]
fn equal_mod_p_rejects_a_wrong_quotient() {
    assert_caught(
        &[EqQuotient],
        "link",
        |cs| (product(cs, P - 1, 9), witness(cs, P - 9)),
        |(a, b)| a.enforce_equal_mod_p(b),
    );
}

#[test]
fn equal_mod_p_rejects_unequal_values() {
    // Honest prover, unequal values: the floor quotient fails the linear check...
    let cs = new_cs();
    product(&cs, P - 1, 9).enforce_equal_mod_p(&witness(&cs, P - 8)).unwrap();
    assert_eq!(first_failure(&cs), Some("link"));
    // ... and the exact field quotient d/p, which satisfies it, fails the range check.
    let cs = new_cs();
    let (a, b) = (product(&cs, P - 1, 9), witness(&cs, P - 8));
    fault::with(&[EqFieldQuotient, BitCarry], || a.enforce_equal_mod_p(&b)).unwrap();
    assert_eq!(first_failure(&cs), Some("bool"));
    // Two canonical values: plain equality.
    let cs = new_cs();
    witness(&cs, 5).enforce_equal_mod_p(&witness(&cs, 6)).unwrap();
    assert_eq!(first_failure(&cs), Some("link"));
    // A plain 64-bit value and its residue are equal mod p; a neighbour is not.
    for (v, ok) in [(P + 3, true), (P + 4, false)] {
        let cs = new_cs();
        witness_u64(&cs, v).enforce_equal_mod_p(&witness(&cs, 3)).unwrap();
        assert_eq!(cs.is_satisfied().unwrap(), ok);
    }
}

// ---- inverses -------------------------------------------------------------------------------

#[test]
fn inverse_hint_is_checked() {
    assert_caught(&[Inverse], "link", |cs| witness(cs, 0xabcdef), |x| x.inverse().map(drop));
    assert_caught(&[Inverse], "link", |cs| product(cs, P - 1, u64::MAX), |x| x.inverse().map(drop));
    assert_caught(
        &[Inverse],
        "link",
        |cs| {
            GoldilocksExtVar::new_witness_canonical(cs.clone(), || {
                Ok(plonky2::field::extension::quadratic::QuadraticExtension([F::from_canonical_u64(3), F::NEG_ONE]))
            })
            .unwrap()
        },
        |x| x.inverse().map(drop),
    );
}

#[test]
fn extension_zero_has_no_inverse() {
    let cs = new_cs();
    let z = GoldilocksExtVar::new_witness_canonical(cs.clone(), || Ok(GoldilocksExt::ZERO)).unwrap();
    assert_eq!(z.inverse().unwrap_err(), SynthesisError::DivisionByZero);
    assert_eq!(GoldilocksExtVar::zero().inverse().unwrap_err(), SynthesisError::DivisionByZero);
}

// ---- unpack_rate ----------------------------------------------------------------------------

/// A random x whose alias x + r stays below 2^254 (so the forged decomposition is boolean).
fn small_fr(seed: u64) -> Fr {
    let mut r = rng(seed);
    fr_limbs([r.gen(), r.gen(), r.gen(), r.gen::<u64>() >> 4])
}

#[test]
fn unpack_rejects_the_r_alias() {
    for seed in 0..4 {
        assert_caught(&[UnpackAlias], "cmp", |cs| fr_witness(cs, small_fr(seed)), |x| unpack_rate(x).map(drop));
    }
    // The alias changes the limbs mod p: it would be a different squeeze.
    let x = small_fr(0);
    let mut alias = crate::bits::add_int(int(x), <Fr as PrimeField>::MODULUS.0);
    alias[3] = 0;
    assert_ne!(tgrid_poseidon_bn254::hasher::unpack(x), tgrid_poseidon_bn254::hasher::unpack(fr_limbs(alias)));
}

#[test]
fn unpack_rejects_a_flipped_flag() {
    // b: 0 → 1 makes g = L − p negative (only decomposable with a non-boolean bit).
    assert_caught(&[UnpackFlag, BitCarry], "bool", |cs| fr_witness(cs, small_fr(9)), |x| unpack_rate(x).map(drop));
    // b: 1 → 0 (L ≥ p) leaves g = L ≥ p: not canonical.
    assert_caught(
        &[UnpackFlag],
        "canon",
        |cs| fr_witness(cs, fr_limbs([u64::MAX, 5, 6, 7])),
        |x| unpack_rate(x).map(drop),
    );
    assert_caught(&[UnpackFlag], "canon", |cs| fr_witness(cs, fr_limbs([P, 5, 6, 7])), |x| unpack_rate(x).map(drop));
}

#[test]
fn unpack_flag_hint_is_checked() {
    assert_caught(&[UnpackFlagHint], "flag", |cs| fr_witness(cs, small_fr(10)), |x| unpack_rate(x).map(drop));
}

#[test]
fn unpack_rejects_limbs_of_2_64_and_above() {
    // L0 = 2^64 (= p + 2^32 − 1): g = 2^32 − 1 is canonical, b = 1; only `b ⇒ lo32 ≠ 2^32 − 1`
    // stops it.
    assert_caught(
        &[UnpackLimbBorrow],
        "flag",
        |cs| fr_witness(cs, fr_limbs([0, 9, 10, 11])),
        |x| unpack_rate(x).map(drop),
    );
    // L0 = 2^64 + 2^40: g has a non-zero high half; `b·hi32 = 0` stops it.
    assert_caught(
        &[UnpackLimbBorrow],
        "flag",
        |cs| fr_witness(cs, fr_limbs([1 << 40, 9, 10, 11])),
        |x| unpack_rate(x).map(drop),
    );
    // Borrowing from hi into limb 2.
    assert_caught(&[UnpackHiBorrow], "flag", |cs| fr_witness(cs, small_fr(11)), |x| unpack_rate(x).map(drop));
}

#[test]
fn unpack_rejects_non_boolean_bits() {
    assert_caught(&[BitNonBoolean], "bool", |cs| fr_witness(cs, small_fr(12)), |x| unpack_rate(x).map(drop));
}

#[test]
fn unpack_output_is_bound_to_x() {
    // A decomposition of another element does not satisfy the link to x.
    let cs = new_cs();
    let x = fr_witness(&cs, small_fr(13));
    let limbs = unpack_rate(&x).unwrap();
    let other = unpack_rate(&fr_witness(&cs, small_fr(14))).unwrap();
    assert_satisfied(&cs);
    limbs[1].enforce_equal_mod_p(&other[1]).unwrap();
    assert_eq!(first_failure(&cs), Some("link"));
}

// ---- hash_limbs -----------------------------------------------------------------------------

#[test]
fn hash_limbs_rejects_the_r_alias() {
    for seed in 20..24 {
        assert_caught(&[HashAlias], "cmp", |cs| fr_witness(cs, small_fr(seed)), |x| hash_limbs(x).map(drop));
    }
}

#[test]
fn hash_limbs_rejects_non_boolean_bits() {
    assert_caught(&[BitNonBoolean], "bool", |cs| fr_witness(cs, small_fr(30)), |x| hash_limbs(x).map(drop));
}

/// The run-scan comparison with a constant, exhaustively on 8 bits, and around H − 1.
#[test]
fn comparison_with_a_constant_is_exact() {
    use crate::bits::{u, Bits};
    for bound in [0u64, 1, 0x80, 0x7f, 0xff, 0xa5, 0x5a, 0x28, 0xfe, 0x01] {
        for x in 0..256u64 {
            let cs = new_cs();
            let b = Bits::alloc(&cs, Ok(u(x)), 8).unwrap();
            b.enforce_at_most(0..8, bound).unwrap();
            assert_eq!(cs.is_satisfied().unwrap(), x <= bound, "{x} <= {bound}");
        }
    }
    let mut r = rng(50);
    let around = [0, 1, H - 2, H - 1, H, H + 1, (1 << 62) - 1, 1 << 61, (1 << 61) - 1];
    for x in around.into_iter().chain((0..50).map(|_| r.gen::<u64>() >> 2)) {
        let cs = new_cs();
        let b = Bits::alloc(&cs, Ok(u(x)), 62).unwrap();
        b.enforce_at_most(0..62, H - 1).unwrap();
        assert_eq!(cs.is_satisfied().unwrap(), x < H, "{x:#x}");
    }
}

#[test]
fn comparison_products_are_checked() {
    assert_caught(&[CompareAnd], "cmp", |cs| fr_witness(cs, small_fr(31)), |x| unpack_rate(x).map(drop));
    assert_caught(&[CompareAnd], "cmp", |cs| fr_witness(cs, small_fr(32)), |x| hash_limbs(x).map(drop));
}

/// The constants the checks rely on.
#[test]
fn constants() {
    assert_eq!(P, 0xFFFF_FFFF_0000_0001);
    assert_eq!(M32, (1 << 32) - 1);
    // H·2^192 ≤ r < (H + 1)·2^192, and H − 1 needs all 62 bits.
    let m = <Fr as PrimeField>::MODULUS.0;
    assert_eq!(m[3], H);
    assert!(m[..3].iter().any(|&l| l != 0));
    assert_eq!(64 - (H - 1).leading_zeros(), 62);
}
