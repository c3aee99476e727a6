//! The wrap key id: what a Groth16 key of the wrap was set up for, as one string that key
//! files, `.vk.json` files, `.g16` files and deployed verifiers (`VERIFYING_KEY_ID`) carry.
//!
//! `wrap-<label>-r<rate bits>q<queries>g<grinding bits>-<final circuit digest, 16 hex>-<R1CS
//! digest, 64 hex>[-insecure-devnet]`. The FRI parameters say how sound the wrapped proof is
//! (a key for a 10-bit circuit is forgeable whatever its setup); the R1CS digest names the exact
//! constraint system the key belongs to; the suffix marks a key from the public devnet seed.
//! Whoever loads a key or a file parses the id and checks it: nothing is decided from a
//! substring of a name.

use std::fmt;
use std::str::FromStr;

use tgrid_wrap::FinalFri;

use crate::error::{Error, Result};

/// `VERIFYING_KEY_DIGEST`s of the public-seed wrap keys verifiers were generated for
/// (contracts/verifier/WrapVerifierDevnetInsecure.sol, production FRI; WrapVerifierInsecureTest.sol,
/// test FRI): anyone can forge proofs for them, whatever a file or a key id calls them.
pub const PUBLIC_SEED_KEY_DIGESTS: [&str; 2] = [
    "0x827112031abcb8017c32b9ad02a5b411034c26190379285827a5b259ba660d53",
    "0xc8f54b39a6e206c828ba84ec2fc5ccd316339f90e8d93fdc3cd13e2b6b07dca0",
];

/// Whether `digest` (sha256 of a verifying key's 18 EIP-197 words) is one of
/// [`PUBLIC_SEED_KEY_DIGESTS`].
pub fn is_public_seed_key_digest(digest: &[u8; 32]) -> bool {
    let hex = format!("0x{}", hex::encode(digest));
    PUBLIC_SEED_KEY_DIGESTS.contains(&hex.as_str())
}

/// Conjectured bits below which a key is reported insecure whatever its setup.
pub const MIN_SECURE_BITS: usize = 100;

const DEVNET_SUFFIX: &str = "-insecure-devnet";

/// A parsed wrap key id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrapKeyId {
    /// FRI parameters of the final plonky2 circuit the R1CS verifies.
    pub fri: FinalFri,
    /// The first 8 bytes of the final circuit's digest (for people; the R1CS digest covers it).
    pub final_circuit_prefix: [u8; 8],
    /// SHA-256 of the R1CS matrices (`R1csMatrices::digest`).
    pub r1cs_digest: [u8; 32],
    /// Whether the key comes from the public devnet seed (anyone can forge proofs).
    pub public_seed: bool,
}

impl WrapKeyId {
    /// `production` for the production parameters, `insecure-test` for any others.
    pub fn fri_label(&self) -> &'static str {
        fri_label(&self.fri)
    }

    /// Whether anyone can forge proofs under a key with this id: a public seed, or fewer than
    /// [`MIN_SECURE_BITS`] conjectured bits in the wrapped proof.
    pub fn insecure(&self) -> bool {
        self.public_seed || self.fri.conjectured_security_bits() < MIN_SECURE_BITS
    }

    /// Why a key with id `self` cannot serve a circuit whose id is `expected`, if it cannot
    /// (the seed flag aside: a ceremony key and a devnet key may serve the same circuit).
    pub fn mismatch(&self, expected: &WrapKeyId) -> Option<String> {
        if self.fri != expected.fri {
            return Some(format!(
                "FRI parameters {} (the circuit has {})",
                fri_part(&self.fri),
                fri_part(&expected.fri)
            ));
        }
        if self.final_circuit_prefix != expected.final_circuit_prefix {
            return Some(format!(
                "final circuit {} (the circuit is {})",
                hex::encode(self.final_circuit_prefix),
                hex::encode(expected.final_circuit_prefix)
            ));
        }
        if self.r1cs_digest != expected.r1cs_digest {
            return Some(format!(
                "R1CS digest {} (the circuit's is {})",
                hex::encode(self.r1cs_digest),
                hex::encode(expected.r1cs_digest)
            ));
        }
        None
    }
}

fn fri_label(fri: &FinalFri) -> &'static str {
    if *fri == FinalFri::PRODUCTION {
        "production"
    } else {
        "insecure-test"
    }
}

fn fri_part(fri: &FinalFri) -> String {
    format!("r{}q{}g{}", fri.rate_bits, fri.num_query_rounds, fri.proof_of_work_bits)
}

impl fmt::Display for WrapKeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "wrap-{}-{}-{}-{}{}",
            self.fri_label(),
            fri_part(&self.fri),
            hex::encode(self.final_circuit_prefix),
            hex::encode(self.r1cs_digest),
            if self.public_seed { DEVNET_SUFFIX } else { "" }
        )
    }
}

/// Longest id accepted (the longest well-formed one is well below).
const MAX_ID_LEN: usize = 160;

impl FromStr for WrapKeyId {
    type Err = Error;

    fn from_str(id: &str) -> Result<Self> {
        let bad = |why: &str| Error::Malformed(format!("key id {id:?}: {why} (expected {})", Self::FORMAT));
        if id.len() > MAX_ID_LEN || !id.is_ascii() {
            return Err(bad("too long or not ASCII"));
        }
        let (body, public_seed) = match id.strip_suffix(DEVNET_SUFFIX) {
            Some(body) => (body, true),
            None => (id, false),
        };
        let body = body.strip_prefix("wrap-").ok_or_else(|| bad("no wrap- prefix"))?;
        // The label may itself contain a dash; the last three parts never do.
        let mut parts = body.rsplitn(4, '-');
        let (r1cs, final_prefix, fri, label) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(r), Some(f), Some(p), Some(l)) => (r, f, p, l),
            _ => return Err(bad("missing parts")),
        };
        let fri = parse_fri(fri).ok_or_else(|| bad("FRI parameters are not r<rate>q<queries>g<grinding>"))?;
        if label != fri_label(&fri) {
            return Err(bad(&format!("label {label:?} does not match the FRI parameters")));
        }
        let mut final_circuit_prefix = [0u8; 8];
        let mut r1cs_digest = [0u8; 32];
        if final_prefix.len() != 16 || hex::decode_to_slice(final_prefix, &mut final_circuit_prefix).is_err() {
            return Err(bad("the final circuit digest is not 16 hex digits"));
        }
        if r1cs.len() != 64 || hex::decode_to_slice(r1cs, &mut r1cs_digest).is_err() {
            return Err(bad("the R1CS digest is not 64 hex digits"));
        }
        let parsed = Self { fri, final_circuit_prefix, r1cs_digest, public_seed };
        // One spelling per key: upper-case hex or leading zeros would let two ids name it.
        if parsed.to_string() != id {
            return Err(bad("not in canonical form"));
        }
        Ok(parsed)
    }
}

impl WrapKeyId {
    /// The format, for error messages.
    pub const FORMAT: &'static str =
        "wrap-<production|insecure-test>-r<rate>q<queries>g<grinding>-<16 hex>-<64 hex>[-insecure-devnet]";
}

fn parse_fri(s: &str) -> Option<FinalFri> {
    let rest = s.strip_prefix('r')?;
    let (rate, rest) = rest.split_once('q')?;
    let (queries, grinding) = rest.split_once('g')?;
    Some(FinalFri {
        rate_bits: small_number(rate)?,
        num_query_rounds: small_number(queries)?,
        proof_of_work_bits: small_number(grinding)?,
    })
}

/// 1–3 decimal digits (parameters are small; the canonical-form check refuses leading zeros).
fn small_number<T: FromStr>(t: &str) -> Option<T> {
    if t.is_empty() || t.len() > 3 || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// Why a key (a deployed verifier's, or the one a file names) must be treated as forgeable, or
/// `None`: a public-seed verifying key digest, an id that says so (public seed or fewer than
/// [`MIN_SECURE_BITS`]), or an id that does not say its parameters at all.
pub fn insecurity(key_id: Option<&str>, verifying_key_digest: Option<&[u8; 32]>) -> Option<String> {
    if verifying_key_digest.is_some_and(is_public_seed_key_digest) {
        return Some("a public-seed devnet key: anyone can forge proofs for it".into());
    }
    match key_id.map(str::parse::<WrapKeyId>) {
        None => Some("the key does not say what it was set up for (no key id)".into()),
        Some(Err(_)) => Some("the key id does not say its FRI parameters and R1CS (not a wrap key id)".into()),
        Some(Ok(id)) if id.public_seed => Some("a public-seed devnet key: anyone can forge proofs for it".into()),
        Some(Ok(id)) if id.insecure() => Some(format!(
            "the wrapped proof has {} conjectured bits (below {MIN_SECURE_BITS}): forgeable whatever the key",
            id.fri.conjectured_security_bits()
        )),
        Some(Ok(_)) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(fri: FinalFri, public_seed: bool) -> WrapKeyId {
        WrapKeyId { fri, final_circuit_prefix: [0x5e; 8], r1cs_digest: [0xab; 32], public_seed }
    }

    #[test]
    fn ids_round_trip_and_say_what_is_insecure() {
        for (fri, seed, insecure) in [
            (FinalFri::PRODUCTION, false, false),
            (FinalFri::PRODUCTION, true, true),
            (FinalFri::INSECURE_TEST, false, true),
            (FinalFri { rate_bits: 3, num_query_rounds: 28, proof_of_work_bits: 16 }, false, false),
            (FinalFri { rate_bits: 3, num_query_rounds: 27, proof_of_work_bits: 16 }, false, true),
        ] {
            let key = id(fri, seed);
            let text = key.to_string();
            assert_eq!(text.parse::<WrapKeyId>().unwrap(), key, "{text}");
            assert_eq!(key.insecure(), insecure, "{text}");
        }
        let production = id(FinalFri::PRODUCTION, false).to_string();
        assert!(production.starts_with("wrap-production-r4q21g16-5e5e5e5e5e5e5e5e-abab"), "{production}");
    }

    #[test]
    fn malformed_and_mislabelled_ids_are_refused() {
        let good = id(FinalFri::PRODUCTION, false).to_string();
        let cases = [
            String::new(),
            "wrap-production-5ef98bd092609bcb-ff9c623f-insecure-devnet".to_string(),
            good.replace("wrap-production", "wrap-insecure-test"),
            id(FinalFri::INSECURE_TEST, false).to_string().replace("insecure-test", "production"),
            good.replace("r4q21g16", "r4q21"),
            good.replace("r4q21g16", "r4q0021g16"),
            good.replace("abab", "ABAB"),
            good[..good.len() - 2].to_string(),
            format!("{good}-insecure"),
            format!("{good}{}", "0".repeat(200)),
            good.replace("wrap-", "key-"),
        ];
        for bad in cases {
            assert!(matches!(bad.parse::<WrapKeyId>(), Err(Error::Malformed(_))), "{bad:?}");
        }
    }

    #[test]
    fn insecurity_comes_from_the_digest_and_the_parsed_id() {
        let secure = id(FinalFri::PRODUCTION, false).to_string();
        assert_eq!(insecurity(Some(&secure), Some(&[7; 32])), None);
        let public_digest: [u8; 32] = hex::decode(&PUBLIC_SEED_KEY_DIGESTS[0][2..]).unwrap().try_into().unwrap();
        assert!(insecurity(Some(&secure), Some(&public_digest)).unwrap().contains("public-seed"));
        assert!(insecurity(Some(&id(FinalFri::PRODUCTION, true).to_string()), None).unwrap().contains("public-seed"));
        assert!(insecurity(Some(&id(FinalFri::INSECURE_TEST, false).to_string()), None)
            .unwrap()
            .contains("10 conjectured"));
        assert!(insecurity(Some("ceremony-2026"), Some(&[7; 32])).is_some(), "a free-form name proves nothing");
        assert!(insecurity(None, Some(&[7; 32])).is_some());
    }

    #[test]
    fn mismatch_names_the_differing_part() {
        let a = id(FinalFri::PRODUCTION, false);
        assert_eq!(a.mismatch(&id(FinalFri::PRODUCTION, true)), None);
        assert!(a.mismatch(&id(FinalFri::INSECURE_TEST, false)).unwrap().contains("FRI"));
        let other_r1cs = WrapKeyId { r1cs_digest: [1; 32], ..a };
        assert!(a.mismatch(&other_r1cs).unwrap().contains("R1CS"));
        let other_final = WrapKeyId { final_circuit_prefix: [1; 8], ..a };
        assert!(a.mismatch(&other_final).unwrap().contains("final circuit"));
    }
}
