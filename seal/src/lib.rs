//! Sealed tensors of private tasks: a private task's input travels sealed to its provider, its
//! output sealed to its poster, so the relay, the sequencer and the public hold ciphertext only.
//!
//! Sealing is HPKE (RFC 9180, base mode: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256,
//! ChaCha20-Poly1305) to the recipient's X25519 key. The plaintext is the commitment's salt, for
//! an input the poster's own sealing key (where the provider seals the output to), and the int8
//! tensor; the associated data is the task's model id (the private variant's) and the salted
//! commitment, so a ciphertext opens only for the commitment it was sealed for. Opening also
//! recomputes the commitment from what it decrypted: a poster who seals something else than
//! what it committed to is caught before the provider accepts (and can be slashed).
//!
//! The poster's key inside the sealed input needs no signature: only who knows the input and its
//! salt (the poster) can seal something that opens to the committed input, and the AEAD binds
//! the key to that plaintext.
//!
//! File format (`.tgs`): magic `TGRIDSEL`, u16 version, the role byte (0 input, 1 output), the
//! 32-byte encapsulated key, the length-prefixed ciphertext. Decoding never trusts a length.

use hpke::aead::ChaCha20Poly1305;
use hpke::kdf::HkdfSha256;
use hpke::kem::X25519HkdfSha256;
use hpke::{Deserializable, Kem as _, OpModeR, OpModeS, Serializable};
use tgrid_circuits::codec::{Reader, Writer};
use tgrid_circuits::{check_header, commit_salted, Commitment, Salt, MAX_TENSOR_LEN};

type Kem = X25519HkdfSha256;

/// Magic of sealed tensor files.
pub const SEALED_MAGIC: &[u8; 8] = b"TGRIDSEL";
const SEALED_VERSION: u16 = 2;
/// HPKE `info`: the scheme and its version; the role byte follows.
const INFO: &[u8] = b"tgrid/sealed-tensor/v1";
/// Salt, reply key (inputs), tensor length, and the AEAD tag around the tensor bytes.
const OVERHEAD: usize = 32 + 32 + 4 + 16;

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

/// Which of a task's tensors is sealed: it is part of what the ciphertext is bound to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The input, sealed by the poster to the provider.
    Input,
    /// The output, sealed by the provider to the poster.
    Output,
}

impl Role {
    fn byte(self) -> u8 {
        match self {
            Role::Input => 0,
            Role::Output => 1,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Role::Input => "input",
            Role::Output => "output",
        }
    }
}

/// A recipient's public key (X25519, 32 bytes): a provider publishes one for inputs, a poster
/// one for outputs.
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

/// A sealed tensor (with the salt of its commitment; an input also with the poster's key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sealed {
    /// Input or output.
    pub role: Role,
    encapped: [u8; 32],
    ciphertext: Vec<u8>,
}

/// What a sealed output holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opened {
    /// The int8 tensor.
    pub tensor: Vec<i8>,
    /// The salt of its commitment.
    pub salt: Salt,
}

/// What a sealed input holds: the tensor, its salt, and where the poster wants the output sealed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenedInput {
    /// The int8 input.
    pub tensor: Vec<i8>,
    /// The salt of its commitment.
    pub salt: Salt,
    /// The poster's sealing key: the provider seals the output to it.
    pub reply_to: SealingKey,
}

/// The associated data: the task's model id and the tensor's salted commitment.
fn aad(model_id: &[u8; 32], commitment: &Commitment) -> [u8; 64] {
    let mut out = [0u8; 64];
    out[..32].copy_from_slice(model_id);
    out[32..].copy_from_slice(&commitment.0);
    out
}

fn info(role: Role) -> Vec<u8> {
    let mut info = INFO.to_vec();
    info.push(role.byte());
    info
}

/// Seals a private task's `input` and its commitment salt to the provider's key `provider`, for
/// the task of model `model_id` (the private variant's id), with the poster's own key `reply_to`
/// for the output. Returns the sealed input and the salted commitment it is bound to (the
/// order's input commitment).
pub fn seal_input(
    provider: &SealingKey,
    model_id: &[u8; 32],
    input: &[i8],
    salt: &Salt,
    reply_to: &SealingKey,
) -> Result<(Sealed, Commitment)> {
    seal(provider, Role::Input, model_id, input, salt, Some(reply_to))
}

/// Seals a private task's `output` and its commitment salt to the poster's key `poster`.
/// Returns the sealed output and the salted commitment it is bound to (the proof's output
/// commitment).
pub fn seal_output(
    poster: &SealingKey,
    model_id: &[u8; 32],
    output: &[i8],
    salt: &Salt,
) -> Result<(Sealed, Commitment)> {
    seal(poster, Role::Output, model_id, output, salt, None)
}

fn seal(
    recipient: &SealingKey,
    role: Role,
    model_id: &[u8; 32],
    tensor: &[i8],
    salt: &Salt,
    reply_to: Option<&SealingKey>,
) -> Result<(Sealed, Commitment)> {
    if tensor.len() > MAX_TENSOR_LEN {
        return Err(Error::TooLarge(tensor.len()));
    }
    let commitment = commit_salted(tensor, salt);
    let mut plaintext = Vec::with_capacity(OVERHEAD + tensor.len());
    plaintext.extend_from_slice(&salt.to_bytes());
    if let Some(key) = reply_to {
        plaintext.extend_from_slice(&key.0.to_bytes());
    }
    plaintext.extend_from_slice(&(tensor.len() as u32).to_le_bytes());
    plaintext.extend(tensor.iter().map(|&x| x as u8));
    let (encapped, ciphertext) = hpke::single_shot_seal::<ChaCha20Poly1305, HkdfSha256, Kem>(
        &OpModeS::Base,
        &recipient.0,
        &info(role),
        &plaintext,
        &aad(model_id, &commitment),
    )
    .map_err(|e| Error::Seal(e.to_string()))?;
    let encapped: [u8; 32] = encapped.to_bytes().as_slice().try_into().expect("an X25519 share is 32 bytes");
    Ok((Sealed { role, encapped, ciphertext }, commitment))
}

/// Opens a sealed input with the provider's `key` for the task of model `model_id` whose input
/// commits to `commitment`, and checks that what it holds commits to exactly that.
pub fn open_input(
    key: &OpeningKey,
    sealed: &Sealed,
    model_id: &[u8; 32],
    commitment: &Commitment,
) -> Result<OpenedInput> {
    let (tensor, salt, reply_to) = open(key, Role::Input, sealed, model_id, commitment)?;
    Ok(OpenedInput { tensor, salt, reply_to: reply_to.expect("inputs carry a reply key") })
}

/// Opens a sealed output with the poster's `key` for the task of model `model_id` whose output
/// commits to `commitment` (the settled output commitment), and checks that what it holds
/// commits to exactly that.
pub fn open_output(key: &OpeningKey, sealed: &Sealed, model_id: &[u8; 32], commitment: &Commitment) -> Result<Opened> {
    let (tensor, salt, _) = open(key, Role::Output, sealed, model_id, commitment)?;
    Ok(Opened { tensor, salt })
}

fn open(
    key: &OpeningKey,
    role: Role,
    sealed: &Sealed,
    model_id: &[u8; 32],
    commitment: &Commitment,
) -> Result<(Vec<i8>, Salt, Option<SealingKey>)> {
    if sealed.role != role {
        return Err(Error::Format(format!(
            "a sealed {} where a sealed {} was expected",
            sealed.role.name(),
            role.name()
        )));
    }
    let encapped = <Kem as hpke::Kem>::EncappedKey::from_bytes(&sealed.encapped).map_err(|_| Error::Open)?;
    let plaintext = hpke::single_shot_open::<ChaCha20Poly1305, HkdfSha256, Kem>(
        &OpModeR::Base,
        &key.0,
        &encapped,
        &info(sealed.role),
        &sealed.ciphertext,
        &aad(model_id, commitment),
    )
    .map_err(|_| Error::Open)?;
    // Authenticated, but written by the sender: decoded as carefully as any input.
    let mut r = Reader::new(&plaintext);
    let salt = Salt::from_bytes(r.raw::<32>().map_err(format)?).map_err(format)?;
    let reply_to = match role {
        Role::Input => Some(SealingKey::from_bytes(&r.raw::<32>().map_err(format)?)?),
        Role::Output => None,
    };
    let len = r.u32().map_err(format)? as usize;
    if len != r.remaining() || len > MAX_TENSOR_LEN {
        return Err(Error::Format(format!("the sealed tensor claims {len} values and holds {}", r.remaining())));
    }
    let tensor: Vec<i8> = plaintext[plaintext.len() - len..].iter().map(|&b| b as i8).collect();
    if commit_salted(&tensor, &salt) != *commitment {
        return Err(Error::CommitmentMismatch(*commitment));
    }
    Ok((tensor, salt, reply_to))
}

fn format(e: tgrid_circuits::Error) -> Error {
    Error::Format(e.to_string())
}

impl Sealed {
    /// Encodes the sealed tensor (`.tgs`).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.raw(SEALED_MAGIC);
        w.u16(SEALED_VERSION);
        w.u8(self.role.byte());
        w.raw(&self.encapped);
        w.bytes(&self.ciphertext);
        w.into_bytes()
    }

    /// Decodes a sealed tensor, bounded by the largest tensor a model accepts.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        check_header(&mut r, SEALED_MAGIC, SEALED_VERSION, "sealed tensor").map_err(format)?;
        let role = match r.u8().map_err(format)? {
            0 => Role::Input,
            1 => Role::Output,
            other => return Err(Error::Format(format!("unknown role {other}"))),
        };
        let encapped = r.raw::<32>().map_err(format)?;
        let ciphertext = r.bytes(MAX_TENSOR_LEN + OVERHEAD).map_err(format)?.to_vec();
        r.finish().map_err(format)?;
        Ok(Self { role, encapped, ciphertext })
    }
}

pub mod keyfile;

#[cfg(test)]
mod tests;
