//! Groth16 keys: the devnet setup (INSECURE: toxic waste derived from a public seed), and key
//! files with a checksum so a cached key is never used half-written or for another circuit.

use std::path::Path;

use ark_bn254::{Bn254, Fr};
use ark_groth16::{Groth16, ProvingKey, VerifyingKey};
use ark_relations::gr1cs::ConstraintSynthesizer;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize, Compress, Validate};
use ark_snark::SNARK;
use rand::SeedableRng;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// A circuit-specific setup whose randomness comes from `seed`. INSECURE: anyone who knows the
/// seed knows the toxic waste and can forge proofs. For devnets and tests only; production
/// keys come from a ceremony ([`load_proving_key`]).
pub fn insecure_devnet_setup<C: ConstraintSynthesizer<Fr>>(circuit: C, seed: u64) -> Result<ProvingKey<Bn254>> {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let (pk, _) = Groth16::<Bn254>::circuit_specific_setup(circuit, &mut rng)?;
    Ok(pk)
}

/// Version 2: the body follows a record of the circuit the key was set up for.
const KEY_MAGIC: &[u8; 8] = b"TGRIDGK2";
/// Version 1 (no circuit record): refused with a message that says what to do.
const KEY_MAGIC_V1: &[u8; 8] = b"TGRIDG16";
/// Largest circuit record accepted: an id, not a document.
pub const MAX_CIRCUIT_RECORD_BYTES: usize = 1024;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |cause| Error::Io { path: path.display().to_string(), cause }
}

/// Writes `pk` to `path`, atomically: magic, sha256 of the rest, the length (u16 LE) and bytes
/// of `circuit` (what the key was set up for: the owner's record, checked by the owner when it
/// loads the key), then the uncompressed key.
pub fn save_proving_key(path: &Path, circuit: &[u8], pk: &ProvingKey<Bn254>) -> Result<()> {
    if circuit.len() > MAX_CIRCUIT_RECORD_BYTES {
        return Err(Error::malformed("proving key", format!("circuit record of {} bytes", circuit.len())));
    }
    let mut rest = (circuit.len() as u16).to_le_bytes().to_vec();
    rest.extend_from_slice(circuit);
    pk.serialize_uncompressed(&mut rest).map_err(|e| Error::malformed("proving key", e))?;
    let mut bytes = KEY_MAGIC.to_vec();
    bytes.extend_from_slice(&Sha256::digest(&rest));
    bytes.extend_from_slice(&rest);
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, &bytes).map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}

/// A key file read and checksummed, its key not decoded yet: the owner checks the circuit
/// record first, so a key for another circuit is refused before the costly point validation.
pub struct KeyFile {
    path: String,
    bytes: Vec<u8>,
    record_len: usize,
}

impl KeyFile {
    /// Reads a file written by [`save_proving_key`] and checks its magic, checksum and lengths.
    pub fn read(path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(io(path))?;
        let malformed = |reason: String| Error::malformed("proving key", format!("{}: {reason}", path.display()));
        if bytes.len() >= 8 && &bytes[..8] == KEY_MAGIC_V1 {
            return Err(malformed(
                "a version 1 key file, which does not record its circuit: run the setup again".into(),
            ));
        }
        if bytes.len() < 42 || &bytes[..8] != KEY_MAGIC {
            return Err(malformed("not a TensorGrid Groth16 key".into()));
        }
        if Sha256::digest(&bytes[40..]).as_slice() != &bytes[8..40] {
            return Err(malformed("checksum mismatch".into()));
        }
        let record_len = u16::from_le_bytes([bytes[40], bytes[41]]) as usize;
        if record_len > MAX_CIRCUIT_RECORD_BYTES || bytes.len() < 42 + record_len {
            return Err(malformed(format!("circuit record of {record_len} bytes")));
        }
        Ok(Self { path: path.display().to_string(), bytes, record_len })
    }

    /// What the key was set up for, as its owner recorded it.
    pub fn circuit_record(&self) -> &[u8] {
        &self.bytes[42..42 + self.record_len]
    }

    /// Decodes the key. With `validate`, every curve point is checked to be on the curve and in
    /// the subgroup (use it for keys from elsewhere); without, the checksum alone guards a key
    /// this machine wrote.
    pub fn proving_key(&self, validate: bool) -> Result<ProvingKey<Bn254>> {
        let body = &self.bytes[42 + self.record_len..];
        let validate = if validate { Validate::Yes } else { Validate::No };
        ProvingKey::deserialize_with_mode(body, Compress::No, validate)
            .map_err(|e| Error::malformed("proving key", format!("{}: {e}", self.path)))
    }

    /// Decodes only the verifying key, its points validated: what checking this key's proofs
    /// needs, without the proving key's hundreds of MB. (A proving key serializes its verifying
    /// key first.)
    pub fn verifying_key(&self) -> Result<VerifyingKey<Bn254>> {
        let body = &self.bytes[42 + self.record_len..];
        VerifyingKey::deserialize_with_mode(body, Compress::No, Validate::Yes)
            .map_err(|e| Error::malformed("proving key", format!("{}: {e}", self.path)))
    }
}

/// Reads a proving key written by [`save_proving_key`]: its circuit record and the key (see
/// [`KeyFile`] to check the record before decoding).
pub fn load_proving_key(path: &Path, validate: bool) -> Result<(Vec<u8>, ProvingKey<Bn254>)> {
    let file = KeyFile::read(path)?;
    let pk = file.proving_key(validate)?;
    Ok((file.circuit_record().to_vec(), pk))
}

/// Serializes a verifying key (compressed points).
pub fn verifying_key_bytes(vk: &VerifyingKey<Bn254>) -> Vec<u8> {
    let mut out = Vec::new();
    vk.serialize_compressed(&mut out).expect("writing to a Vec cannot fail");
    out
}
