//! The EVM side of a Groth16 proof: calldata layout, public-input range, verifying-key JSON
//! (snarkjs format, which `scripts/foundry/gen-verifier.js` renders into Solidity) and its
//! digest, all as in docs/encodings.md.

use alloy_primitives::U256;
use ark_bn254::{Bn254, Fq, Fq2, Fr, G1Affine, G2Affine};
use ark_ec::AffineRepr;
use ark_ff::{BigInteger, PrimeField};
use ark_groth16::{Proof, VerifyingKey};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

alloy_sol_types::sol! {
    /// The verifier interface of contracts/interfaces/IGroth16Verifier.sol.
    interface IGroth16Verifier {
        /// Checks a proof against the single public input.
        function verifyProof(uint256[8] calldata proof, uint256 publicInput) external view returns (bool);
    }
}

fn fq_u256(x: Fq) -> U256 {
    U256::from_be_slice(&x.into_bigint().to_bytes_be())
}

fn u256_fq(x: U256, what: &'static str) -> Result<Fq> {
    Fq::from_bigint(ark_ff::BigInt(x.into_limbs())).ok_or_else(|| Error::malformed(what, "coordinate not below p"))
}

/// The proof as `uint256[8]`: `[A.x, A.y, B.x.c1, B.x.c0, B.y.c1, B.y.c0, C.x, C.y]` (G2
/// imaginary part first, as EIP-197 wants).
pub fn proof_calldata(proof: &Proof<Bn254>) -> [U256; 8] {
    let (a, b, c) = (proof.a, proof.b, proof.c);
    [
        fq_u256(a.x),
        fq_u256(a.y),
        fq_u256(b.x.c1),
        fq_u256(b.x.c0),
        fq_u256(b.y.c1),
        fq_u256(b.y.c0),
        fq_u256(c.x),
        fq_u256(c.y),
    ]
}

/// Parses calldata words back into a proof, rejecting coordinates out of range and points off
/// the curve or outside the prime-order subgroup.
pub fn proof_from_calldata(words: &[U256; 8]) -> Result<Proof<Bn254>> {
    let f = |i: usize| u256_fq(words[i], "proof");
    let a = G1Affine::new_unchecked(f(0)?, f(1)?);
    let b = G2Affine::new_unchecked(Fq2::new(f(3)?, f(2)?), Fq2::new(f(5)?, f(4)?));
    let c = G1Affine::new_unchecked(f(6)?, f(7)?);
    let ok_g1 = |p: &G1Affine| p.is_on_curve() && p.is_in_correct_subgroup_assuming_on_curve();
    if !(ok_g1(&a) && ok_g1(&c) && b.is_on_curve() && b.is_in_correct_subgroup_assuming_on_curve()) {
        return Err(Error::malformed("proof", "a point is not on the curve or not in the subgroup"));
    }
    if a.is_zero() || b.is_zero() || c.is_zero() {
        return Err(Error::malformed("proof", "a point is the identity"));
    }
    Ok(Proof { a, b, c })
}

/// The public input as a scalar; 32 big-endian bytes that must be below the field order `r`.
pub fn public_input_scalar(bytes: &[u8; 32]) -> Result<Fr> {
    let x = U256::from_be_bytes(*bytes);
    Fr::from_bigint(ark_ff::BigInt(x.into_limbs())).ok_or_else(|| Error::malformed("public input", "not below r"))
}

fn dec(x: Fq) -> String {
    x.into_bigint().to_string()
}

fn g1_json(p: &G1Affine) -> Value {
    json!([dec(p.x), dec(p.y), "1"])
}

fn g2_json(p: &G2Affine) -> Value {
    json!([[dec(p.x.c0), dec(p.x.c1)], [dec(p.y.c0), dec(p.y.c1)], ["1", "0"]])
}

/// The verifying key in snarkjs's JSON format (one public input).
pub fn verifying_key_json(vk: &VerifyingKey<Bn254>) -> Result<Value> {
    if vk.gamma_abc_g1.len() != 2 {
        return Err(Error::malformed(
            "verifying key",
            format!("{} public inputs, expected 1", vk.gamma_abc_g1.len() - 1),
        ));
    }
    Ok(json!({
        "protocol": "groth16",
        "curve": "bn128",
        "nPublic": 1,
        "vk_alpha_1": g1_json(&vk.alpha_g1),
        "vk_beta_2": g2_json(&vk.beta_g2),
        "vk_gamma_2": g2_json(&vk.gamma_g2),
        "vk_delta_2": g2_json(&vk.delta_g2),
        "IC": vk.gamma_abc_g1.iter().map(g1_json).collect::<Vec<_>>(),
    }))
}

fn parse_fq(v: &Value, what: &'static str) -> Result<Fq> {
    let s = v.as_str().ok_or_else(|| Error::malformed(what, "expected a decimal string"))?;
    if s.is_empty() || s.len() > 78 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::malformed(what, "expected a decimal string"));
    }
    let x = U256::from_str_radix(s, 10).map_err(|e| Error::malformed(what, e))?;
    u256_fq(x, what)
}

fn parse_g1(v: &Value, what: &'static str) -> Result<G1Affine> {
    let a = v
        .as_array()
        .filter(|a| a.len() == 3 && a[2] == "1")
        .ok_or_else(|| Error::malformed(what, "expected [x, y, \"1\"]"))?;
    let p = G1Affine::new_unchecked(parse_fq(&a[0], what)?, parse_fq(&a[1], what)?);
    if !p.is_on_curve() || !p.is_in_correct_subgroup_assuming_on_curve() {
        return Err(Error::malformed(what, "not a G1 point"));
    }
    Ok(p)
}

fn parse_g2(v: &Value, what: &'static str) -> Result<G2Affine> {
    let pair = |v: &Value| -> Result<Fq2> {
        let a = v.as_array().filter(|a| a.len() == 2).ok_or_else(|| Error::malformed(what, "expected [c0, c1]"))?;
        Ok(Fq2::new(parse_fq(&a[0], what)?, parse_fq(&a[1], what)?))
    };
    let a = v
        .as_array()
        .filter(|a| a.len() == 3 && a[2] == json!(["1", "0"]))
        .ok_or_else(|| Error::malformed(what, "expected [[x.c0, x.c1], [y.c0, y.c1], [\"1\", \"0\"]]"))?;
    let p = G2Affine::new_unchecked(pair(&a[0])?, pair(&a[1])?);
    if !p.is_on_curve() || !p.is_in_correct_subgroup_assuming_on_curve() {
        return Err(Error::malformed(what, "not a G2 point"));
    }
    Ok(p)
}

/// Parses a snarkjs-format verifying key with one public input (e.g. from a ceremony).
pub fn verifying_key_from_json(v: &Value) -> Result<VerifyingKey<Bn254>> {
    const WHAT: &str = "verifying key";
    if v["protocol"] != "groth16" || !(v["curve"] == "bn128" || v["curve"] == "bn254") || v["nPublic"] != 1 {
        return Err(Error::malformed(WHAT, "expected protocol groth16, curve bn128 and nPublic 1"));
    }
    let ic =
        v["IC"].as_array().filter(|a| a.len() == 2).ok_or_else(|| Error::malformed(WHAT, "IC must hold 2 points"))?;
    Ok(VerifyingKey {
        alpha_g1: parse_g1(&v["vk_alpha_1"], WHAT)?,
        beta_g2: parse_g2(&v["vk_beta_2"], WHAT)?,
        gamma_g2: parse_g2(&v["vk_gamma_2"], WHAT)?,
        delta_g2: parse_g2(&v["vk_delta_2"], WHAT)?,
        gamma_abc_g1: vec![parse_g1(&ic[0], WHAT)?, parse_g1(&ic[1], WHAT)?],
    })
}

/// The 18 verifying-key words in EIP-197 order (alpha; beta, gamma, delta with the imaginary
/// coefficient first; IC0, IC1): the constructor argument of `Groth16KeyedVerifier.sol` and the
/// preimage of [`verifying_key_digest`].
pub fn verifying_key_words(vk: &VerifyingKey<Bn254>) -> Result<[U256; 18]> {
    if vk.gamma_abc_g1.len() != 2 {
        return Err(Error::malformed("verifying key", "expected exactly one public input"));
    }
    let g2 = |p: &G2Affine| [p.x.c1, p.x.c0, p.y.c1, p.y.c0];
    let mut words = vec![vk.alpha_g1.x, vk.alpha_g1.y];
    for p in [&vk.beta_g2, &vk.gamma_g2, &vk.delta_g2] {
        words.extend(g2(p));
    }
    for p in &vk.gamma_abc_g1 {
        words.extend([p.x, p.y]);
    }
    let words: Vec<U256> = words.into_iter().map(fq_u256).collect();
    Ok(words.try_into().expect("2 + 3 * 4 + 2 * 2 = 18 words"))
}

/// The digest the generated Solidity verifier exposes as `VERIFYING_KEY_DIGEST`: sha256 of the
/// 18 key coordinates as 32-byte big-endian words in EIP-197 order.
pub fn verifying_key_digest(vk: &VerifyingKey<Bn254>) -> Result<[u8; 32]> {
    let mut h = Sha256::new();
    for w in verifying_key_words(vk)? {
        h.update(w.to_be_bytes::<32>());
    }
    Ok(h.finalize().into())
}
