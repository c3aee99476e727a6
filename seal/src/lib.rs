//! Sealed inputs of private tasks: a private task's input travels sealed to its provider, so the
//! relay, the input store and the public hold ciphertext only. (Its output needs no sealing: the
//! proof itself encrypts it under a key derived from the input's salt,
//! [`tgrid_int8::EncryptedTensor`], so only the poster and the provider can read it.)
//!
//! Sealing is HPKE (RFC 9180, base mode: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256,
//! ChaCha20-Poly1305) to the provider's X25519 key. The plaintext is the commitment's salt and
//! the int8 tensor; the associated data is the task's model id (the private variant's) and the
//! salted commitment, so a ciphertext opens only for the commitment it was sealed for. Opening
//! also recomputes the commitment from what it decrypted: a poster who seals something else than
//! what it committed to is caught before the provider accepts (and can be slashed).
//!
//! File format (`.tgs`): magic `TGRIDSEL`, u16 version, the 32-byte encapsulated key, the
//! length-prefixed ciphertext. Decoding never trusts a length.

use hpke::aead::ChaCha20Poly1305;
use hpke::kdf::HkdfSha256;
use hpke::kem::X25519HkdfSha256;
use hpke::{Deserializable, Kem as _, OpModeR, OpModeS, Serializable};
use tgrid_int8::codec::{Reader, Writer};
use tgrid_int8::{check_header, commit_salted, Commitment, Salt, MAX_TENSOR_LEN};

type Kem = X25519HkdfSha256;

/// Magic of sealed tensor files.
pub const SEALED_MAGIC: &[u8; 8] = b"TGRIDSEL";
const SEALED_VERSION: u16 = 3;
/// HPKE `info`: the scheme and its version.
const INFO: &[u8] = b"tgrid/sealed-input/v2";
/// Salt, tensor length, and the AEAD tag around the tensor bytes.
const OVERHEAD: usize = 32 + 4 + 16;

/// Everything that can go wrong when sealing or opening.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Not a sealed tensor or key (bad magic, version, length, encoding).
    #[error("malformed sealed data: {0}")]
    Format(String),
    /// The ciphertext does not open with this key for this task's commitment: sealed to someone
    /// else, for another commitment, or altered.
    #[error("the sealed tensor does not open with this key for this commitment")]
    Open,
    /// It opens, but what it holds is not what the commitment commits to: the sender sealed
    /// another tensor or salt than it committed to.
    #[error("the sealed tensor does not match its commitment {0}")]
    CommitmentMismatch(Commitment),
    /// The tensor is larger than any model accepts.
    #[error("a tensor of {0} values is larger than the limit of {MAX_TENSOR_LEN}")]
    TooLarge(usize),
    /// HPKE could not seal (an invalid recipient key).
    #[error("cannot seal: {0}")]
    Seal(String),
    /// A key file cannot be read, created or parsed.
    #[error("key file {0}")]
    KeyFile(String),
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A provider's public key (X25519, 32 bytes), published for the inputs sealed to it.
#[derive(Clone, PartialEq, Eq)]
pub struct SealingKey(<Kem as hpke::Kem>::PublicKey);

/// The private key that opens what was sealed to the matching [`SealingKey`].
pub struct OpeningKey(<Kem as hpke::Kem>::PrivateKey);

impl SealingKey {
    /// From 32 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        <Kem as hpke::Kem>::PublicKey::from_bytes(bytes)
            .map(Self)
            .map_err(|_| Error::Format("a sealing key is 32 bytes of an X25519 public key".into()))
    }

    /// From `0x` + 64 hex digits.
    pub fn from_hex(s: &str) -> Result<Self> {
        Self::from_bytes(&decode_hex32(s, "sealing key")?)
    }

    /// `0x`-prefixed lowercase hex.
    pub fn to_hex(&self) -> String {
        format!("0x{}", hex::encode(self.0.to_bytes()))
    }

    /// The 32 bytes.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.0.to_bytes().as_slice().try_into().expect("an X25519 public key is 32 bytes")
    }
}

impl std::fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SealingKey({})", self.to_hex())
    }
}

impl OpeningKey {
    /// A fresh key pair from the operating system's random source.
    pub fn generate() -> (OpeningKey, SealingKey) {
        let (sk, pk) = Kem::gen_keypair();
        (OpeningKey(sk), SealingKey(pk))
    }

    /// From 32 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        <Kem as hpke::Kem>::PrivateKey::from_bytes(bytes)
            .map(Self)
            .map_err(|_| Error::Format("an opening key is 32 bytes of an X25519 private key".into()))
    }

    /// From `0x` + 64 hex digits.
    pub fn from_hex(s: &str) -> Result<Self> {
        Self::from_bytes(&decode_hex32(s, "opening key")?)
    }

    /// `0x`-prefixed lowercase hex: a secret, for the owner's key file only.
    pub fn to_hex(&self) -> String {
        format!("0x{}", hex::encode(self.0.to_bytes()))
    }

    /// The public key that seals to this key.
    pub fn sealing_key(&self) -> SealingKey {
        SealingKey(Kem::sk_to_pk(&self.0))
    }
}

impl std::fmt::Debug for OpeningKey {
    // A private key must not reach logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OpeningKey(..)")
    }
}

fn decode_hex32(s: &str, what: &str) -> Result<[u8; 32]> {
    hex::decode(s.strip_prefix("0x").unwrap_or(s))
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| Error::Format(format!("a {what} is 0x followed by 64 hex digits")))
}

/// A sealed input (with the salt of its commitment).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sealed {
    encapped: [u8; 32],
    ciphertext: Vec<u8>,
}

/// What a sealed input holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenedInput {
    /// The int8 input.
    pub tensor: Vec<i8>,
    /// The salt of its commitment (the output key derives from it).
    pub salt: Salt,
}

/// The associated data: the task's model id and the tensor's salted commitment.
fn aad(model_id: &[u8; 32], commitment: &Commitment) -> [u8; 64] {
    let mut out = [0u8; 64];
    out[..32].copy_from_slice(model_id);
    out[32..].copy_from_slice(&commitment.0);
    out
}

/// Seals a private task's `input` and its commitment salt to the provider's key `provider`, for
/// the task of model `model_id` (the private variant's id). Returns the sealed input and the
/// salted commitment it is bound to (the order's input commitment).
pub fn seal_input(
    provider: &SealingKey,
    model_id: &[u8; 32],
    input: &[i8],
    salt: &Salt,
) -> Result<(Sealed, Commitment)> {
    if input.len() > MAX_TENSOR_LEN {
        return Err(Error::TooLarge(input.len()));
    }
    let commitment = commit_salted(input, salt);
    let mut plaintext = Vec::with_capacity(OVERHEAD + input.len());
    plaintext.extend_from_slice(&salt.to_bytes());
    plaintext.extend_from_slice(&(input.len() as u32).to_le_bytes());
    plaintext.extend(input.iter().map(|&x| x as u8));
    let (encapped, ciphertext) = hpke::single_shot_seal::<ChaCha20Poly1305, HkdfSha256, Kem>(
        &OpModeS::Base,
        &provider.0,
        INFO,
        &plaintext,
        &aad(model_id, &commitment),
    )
    .map_err(|e| Error::Seal(e.to_string()))?;
    let encapped: [u8; 32] = encapped.to_bytes().as_slice().try_into().expect("an X25519 share is 32 bytes");
    Ok((Sealed { encapped, ciphertext }, commitment))
}

/// Opens a sealed input with the provider's `key` for the task of model `model_id` whose input
/// commits to `commitment`, and checks that what it holds commits to exactly that.
pub fn open_input(
    key: &OpeningKey,
    sealed: &Sealed,
    model_id: &[u8; 32],
    commitment: &Commitment,
) -> Result<OpenedInput> {
    let encapped = <Kem as hpke::Kem>::EncappedKey::from_bytes(&sealed.encapped).map_err(|_| Error::Open)?;
    let plaintext = hpke::single_shot_open::<ChaCha20Poly1305, HkdfSha256, Kem>(
        &OpModeR::Base,
        &key.0,
        &encapped,
        INFO,
        &sealed.ciphertext,
        &aad(model_id, commitment),
    )
    .map_err(|_| Error::Open)?;
    // Authenticated, but written by the sender: decoded as carefully as any input.
    let mut r = Reader::new(&plaintext);
    let salt = Salt::from_bytes(r.raw::<32>().map_err(format)?).map_err(format)?;
    let len = r.u32().map_err(format)? as usize;
    if len != r.remaining() || len > MAX_TENSOR_LEN {
        return Err(Error::Format(format!("the sealed tensor claims {len} values and holds {}", r.remaining())));
    }
    let tensor: Vec<i8> = plaintext[plaintext.len() - len..].iter().map(|&b| b as i8).collect();
    if commit_salted(&tensor, &salt) != *commitment {
        return Err(Error::CommitmentMismatch(*commitment));
    }
    Ok(OpenedInput { tensor, salt })
}

fn format(e: tgrid_int8::Error) -> Error {
    Error::Format(e.to_string())
}

impl Sealed {
    /// Encodes the sealed input (`.tgs`).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.raw(SEALED_MAGIC);
        w.u16(SEALED_VERSION);
        w.raw(&self.encapped);
        w.bytes(&self.ciphertext);
        w.into_bytes()
    }

    /// Decodes a sealed input, bounded by the largest tensor a model accepts.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        check_header(&mut r, SEALED_MAGIC, SEALED_VERSION, "sealed input").map_err(format)?;
        let encapped = r.raw::<32>().map_err(format)?;
        let ciphertext = r.bytes(MAX_TENSOR_LEN + OVERHEAD).map_err(format)?.to_vec();
        r.finish().map_err(format)?;
        Ok(Self { encapped, ciphertext })
    }
}

pub mod keyfile;

#[cfg(test)]
mod tests;
