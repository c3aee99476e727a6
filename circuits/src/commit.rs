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
