//! Tensor commitments: Poseidon (Goldilocks) over the packed int8 tensor, length first.
//!
//! Each int8 `x` becomes the byte `u = x + 128`; seven bytes pack little-endian into one field
//! element (56 bits, so packing is injective); the element list is `[len, e_0, e_1, ...]` and the
//! commitment is `PoseidonHash::hash_no_pad` of it. As bytes32, the four output elements are
//! written in order, each as 8 big-endian bytes.

use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::field::types::{Field, Field64, PrimeField64};
use plonky2::hash::hash_types::HashOut;
use plonky2::hash::hashing::hash_n_to_m_no_pad;
use plonky2::hash::poseidon::{PoseidonHash, PoseidonPermutation};
use plonky2::plonk::config::Hasher;

use crate::codec::{Reader, Writer};
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

/// Added to the length element of the commitment of an encrypted output ([`EncryptedTensor`]).
pub const ENCRYPTED_FLAG: u64 = 2 << 40;
/// First element hashed with an input salt to derive the output key ([`OutputKey`]).
pub const OUTPUT_KEY_TAG: u64 = 3 << 40;
/// First element of the keystream sponge's input, before the output key.
pub const KEYSTREAM_TAG: u64 = 4 << 40;

/// The key a private task's output is encrypted under, derived from the salt of its input
/// commitment: `Poseidon(OUTPUT_KEY_TAG ‖ salt)`. The poster picked the salt and the signed
/// order commits to it (through the input commitment), so the proof that derives this key
/// in-circuit encrypts the output to the poster and no one else. Disclosing the key opens the
/// output only, not the input.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct OutputKey(Salt);

impl OutputKey {
    /// The output key of the private task whose input commitment is salted with `salt`.
    pub fn from_input_salt(salt: &Salt) -> Self {
        let mut inputs = vec![F::from_canonical_u64(OUTPUT_KEY_TAG)];
        inputs.extend(salt.to_elements());
        let h: HashOut<F> = PoseidonHash::hash_no_pad(&inputs);
        Self(Salt(Commitment::from_elements(h.elements).0))
    }

    /// From `0x` + 64 hex digits (four canonical field elements).
    pub fn from_hex(s: &str) -> Result<Self> {
        Salt::from_hex(s).map(Self).map_err(|_| Error::Format("an output key is 0x followed by 64 hex digits".into()))
    }

    /// `0x`-prefixed lowercase hex: a secret, for its owner and whoever it shows the output to.
    pub fn to_hex(&self) -> String {
        self.0.to_hex()
    }

    /// The four field elements.
    pub fn to_elements(&self) -> [F; 4] {
        self.0.to_elements()
    }

    /// `n` keystream elements: the Poseidon sponge of `KEYSTREAM_TAG ‖ key` squeezed `n` times.
    fn keystream(&self, n: usize) -> Vec<F> {
        if n == 0 {
            return Vec::new();
        }
        let mut inputs = vec![F::from_canonical_u64(KEYSTREAM_TAG)];
        inputs.extend(self.to_elements());
        hash_n_to_m_no_pad::<F, PoseidonPermutation<F>>(&inputs, n)
    }
}

impl std::fmt::Debug for OutputKey {
    // A key is a secret: debug output must not print it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutputKey(..)")
    }
}

/// Magic of encrypted tensor files.
pub const ENCRYPTED_MAGIC: &[u8; 8] = b"TGRIDENC";
const ENCRYPTED_VERSION: u16 = 1;

/// A private task's output, encrypted in the proof itself: each packed element plus a keystream
/// element of the [`OutputKey`], `c_j = e_j + k_j` in the field. The proof's output commitment is
/// the hash of `len + ENCRYPTED_FLAG` and these elements, so whoever holds the commitment can
/// check a ciphertext against it, and the poster can always decrypt what the proof committed to:
/// a provider cannot be paid for an output its poster cannot read.
///
/// File format: magic `TGRIDENC`, u16 version, u32 length (values), then
/// `ceil(length / 7)` elements as 8 big-endian bytes each. Decoding never trusts the length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncryptedTensor {
    len: usize,
    elements: Vec<F>,
}

impl EncryptedTensor {
    /// Encrypts `tensor` under `key`.
    pub fn encrypt(tensor: &[i8], key: &OutputKey) -> Self {
        let packed = &packed_elements(tensor)[1..];
        let stream = key.keystream(packed.len());
        Self { len: tensor.len(), elements: packed.iter().zip(stream).map(|(&e, k)| e + k).collect() }
    }

    /// Number of int8 values it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The commitment a proof exposes for it.
    pub fn commitment(&self) -> Commitment {
        let mut elements = vec![F::from_canonical_u64(self.len as u64 + ENCRYPTED_FLAG)];
        elements.extend(&self.elements);
        let h: HashOut<F> = PoseidonHash::hash_no_pad(&elements);
        Commitment::from_elements(h.elements)
    }

    /// Decrypts it with `key`. A wrong key is detected with high probability (a decrypted
    /// element above its chunk's byte range), not always: check the commitment first.
    pub fn decrypt(&self, key: &OutputKey) -> Result<Vec<i8>> {
        let stream = key.keystream(self.elements.len());
        let mut out = Vec::with_capacity(self.len);
        for (i, (&c, k)) in self.elements.iter().zip(stream).enumerate() {
            let v = (c - k).to_canonical_u64();
            let bytes = (self.len - i * BYTES_PER_ELEMENT).min(BYTES_PER_ELEMENT);
            if v >> (8 * bytes) != 0 {
                return Err(Error::InvalidInput("the encrypted output does not decrypt under this key".into()));
            }
            out.extend((0..bytes).map(|b| ((v >> (8 * b)) as u8 ^ 0x80) as i8));
        }
        Ok(out)
    }

    /// Encodes it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.raw(ENCRYPTED_MAGIC);
        w.u16(ENCRYPTED_VERSION);
        w.u32(self.len as u32);
        for e in &self.elements {
            w.raw(&e.to_canonical_u64().to_be_bytes());
        }
        w.into_bytes()
    }

    /// Decodes an encrypted tensor of at most `max_len` values.
    pub fn from_bytes(bytes: &[u8], max_len: usize) -> Result<Self> {
        let mut r = Reader::new(bytes);
        crate::codec::check_header(&mut r, ENCRYPTED_MAGIC, ENCRYPTED_VERSION, "encrypted tensor")?;
        let len = r.u32()? as usize;
        if len > max_len {
            return Err(Error::Format(format!("an encrypted tensor of {len} values is over the limit of {max_len}")));
        }
        let count = len.div_ceil(BYTES_PER_ELEMENT);
        if r.remaining() != 8 * count {
            return Err(Error::Format(format!(
                "an encrypted tensor of {len} values holds {count} elements, not {} bytes",
                r.remaining()
            )));
        }
        let mut elements = Vec::with_capacity(count);
        for _ in 0..count {
            let v = u64::from_be_bytes(r.raw::<8>()?);
            if v >= F::ORDER {
                return Err(Error::Format("an encrypted element is not a canonical field element".into()));
            }
            elements.push(F::from_canonical_u64(v));
        }
        r.finish()?;
        Ok(Self { len, elements })
    }
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
