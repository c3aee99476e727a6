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

const KEY_MAGIC: &[u8; 8] = b"TGRIDG16";

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |cause| Error::Io { path: path.display().to_string(), cause }
}

/// Writes `pk` to `path` (magic, sha256 of the body, uncompressed body), atomically.
pub fn save_proving_key(path: &Path, pk: &ProvingKey<Bn254>) -> Result<()> {
    let mut body = Vec::new();
    pk.serialize_uncompressed(&mut body).map_err(|e| Error::malformed("proving key", e))?;
    let mut bytes = KEY_MAGIC.to_vec();
    bytes.extend_from_slice(&Sha256::digest(&body));
    bytes.extend_from_slice(&body);
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, &bytes).map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}

/// Reads a proving key written by [`save_proving_key`]. With `validate`, every curve point is
/// checked to be on the curve and in the subgroup (use it for keys from elsewhere); without, the
/// checksum alone guards a key this machine wrote.
pub fn load_proving_key(path: &Path, validate: bool) -> Result<ProvingKey<Bn254>> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    if bytes.len() < 40 || &bytes[..8] != KEY_MAGIC {
        return Err(Error::malformed("proving key", format!("{} is not a TensorGrid Groth16 key", path.display())));
    }
    let body = &bytes[40..];
    if Sha256::digest(body).as_slice() != &bytes[8..40] {
        return Err(Error::malformed("proving key", format!("{}: checksum mismatch", path.display())));
    }
    let validate = if validate { Validate::Yes } else { Validate::No };
    ProvingKey::deserialize_with_mode(body, Compress::No, validate).map_err(|e| Error::malformed("proving key", e))
}

/// Serializes a verifying key (compressed points).
pub fn verifying_key_bytes(vk: &VerifyingKey<Bn254>) -> Vec<u8> {
    let mut out = Vec::new();
    vk.serialize_compressed(&mut out).expect("writing to a Vec cannot fail");
    out
}
