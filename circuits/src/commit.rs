//! Tensor commitments: Poseidon (Goldilocks) over the packed int8 tensor, length first.
//!
//! Each int8 `x` becomes the byte `u = x + 128`; seven bytes pack little-endian into one field
//! element (56 bits, so packing is injective); the element list is `[len, e_0, e_1, ...]` and the
//! commitment is `PoseidonHash::hash_no_pad` of it. As bytes32, the four output elements are
//! written in order, each as 8 big-endian bytes.

use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::field::types::{Field, Field64, PrimeField64};
use plonky2::hash::hash_types::HashOut;
use plonky2::hash::poseidon::PoseidonHash;
use plonky2::plonk::config::Hasher;

use crate::error::{Error, Result};

type F = GoldilocksField;

/// Bytes packed per field element.
pub const BYTES_PER_ELEMENT: usize = 7;

/// A 32-byte commitment to an int8 tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Commitment(pub [u8; 32]);

impl Commitment {
    /// The four field elements.
    pub fn to_elements(&self) -> [F; 4] {
        std::array::from_fn(|i| {
            F::from_canonical_u64(u64::from_be_bytes(self.0[8 * i..8 * i + 8].try_into().expect("8 bytes")))
        })
    }

    /// From four canonical field elements.
    pub fn from_elements(e: [F; 4]) -> Self {
        let mut out = [0u8; 32];
        for (i, x) in e.iter().enumerate() {
            out[8 * i..8 * i + 8].copy_from_slice(&x.to_canonical_u64().to_be_bytes());
        }
        Commitment(out)
    }

    /// From field elements given as u64, rejecting non-canonical values.
    pub fn from_u64s(v: [u64; 4]) -> Result<Self> {
        if v.iter().any(|&x| x >= F::ORDER) {
            return Err(Error::Format("commitment element is not a canonical field element".into()));
        }
        Ok(Self::from_elements(v.map(F::from_canonical_u64)))
    }

    /// `0x`-prefixed lowercase hex.
    pub fn to_hex(&self) -> String {
        format!("0x{}", hex::encode(self.0))
    }
}

impl std::fmt::Display for Commitment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// The field elements hashed for a tensor: its length, then the packed bytes.
pub fn packed_elements(tensor: &[i8]) -> Vec<F> {
    let mut out = Vec::with_capacity(1 + tensor.len().div_ceil(BYTES_PER_ELEMENT));
    out.push(F::from_canonical_usize(tensor.len()));
    for chunk in tensor.chunks(BYTES_PER_ELEMENT) {
        let v = chunk.iter().rev().fold(0u64, |acc, &x| (acc << 8) | u64::from((x as u8) ^ 0x80));
        out.push(F::from_canonical_u64(v));
    }
    out
}

/// Commits to an int8 tensor.
pub fn commit(tensor: &[i8]) -> Commitment {
    let h: HashOut<F> = PoseidonHash::hash_no_pad(&packed_elements(tensor));
    Commitment::from_elements(h.elements)
}

/// Added to the length element of a salted commitment, so that no salted commitment hashes the
/// same element list as an unsalted one (tensor lengths are far below it).
pub const SALTED_FLAG: u64 = 1 << 40;

/// The field elements hashed for a salted tensor commitment: the length plus [`SALTED_FLAG`],
/// the salt's four elements, then the packed bytes.
pub fn salted_elements(tensor: &[i8], salt: &Salt) -> Vec<F> {
    let mut out = packed_elements(tensor);
    out[0] += F::from_canonical_u64(SALTED_FLAG);
    out.splice(1..1, salt.to_elements());
    out
}

/// The hiding commitment of a private task's input or output: without the salt (256 random
/// bits), a guessed tensor cannot be checked against it.
pub fn commit_salted(tensor: &[i8], salt: &Salt) -> Commitment {
    let h: HashOut<F> = PoseidonHash::hash_no_pad(&salted_elements(tensor, salt));
    Commitment::from_elements(h.elements)
}

/// The secret salt of a hiding commitment: four canonical Goldilocks elements, written as 32
/// bytes (8 big-endian bytes each), like a [`Commitment`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Salt([u8; 32]);

impl Salt {
    /// A fresh salt from the operating system's random source.
    pub fn random() -> Self {
        use rand::RngCore;
        let mut rng = rand::rngs::OsRng;
        let elements = std::array::from_fn(|_| loop {
            // Rejection keeps every element uniform over the field (a draw is rejected with
            // probability 2^-32).
            let v = rng.next_u64();
            if v < F::ORDER {
                break F::from_canonical_u64(v);
            }
        });
        Self(Commitment::from_elements(elements).0)
    }

    /// From 32 bytes, rejecting an element that is not canonical.
    pub fn from_bytes(bytes: [u8; 32]) -> Result<Self> {
        let words: [u64; 4] =
            std::array::from_fn(|i| u64::from_be_bytes(bytes[8 * i..8 * i + 8].try_into().expect("8 bytes")));
        if words.iter().any(|&w| w >= F::ORDER) {
            return Err(Error::Format("a salt element is not a canonical field element".into()));
        }
        Ok(Self(bytes))
    }

    /// From `0x` + 64 hex digits.
    pub fn from_hex(s: &str) -> Result<Self> {
        let digits = s.strip_prefix("0x").unwrap_or(s);
        let bytes: [u8; 32] = hex::decode(digits)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| Error::Format("a salt is 0x followed by 64 hex digits".into()))?;
        Self::from_bytes(bytes)
    }

    /// The 32 bytes.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.0
    }

    /// `0x`-prefixed lowercase hex.
    pub fn to_hex(&self) -> String {
        format!("0x{}", hex::encode(self.0))
    }

    /// The four field elements.
    pub fn to_elements(&self) -> [F; 4] {
        Commitment(self.0).to_elements()
    }
}

impl std::fmt::Debug for Salt {
    // A salt is a secret: debug output must not print it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Salt(..)")
    }
}
