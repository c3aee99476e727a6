//! Loading the wrap circuit's Groth16 key for a [`BatchWrapper`]: the INSECURE devnet setup
//! run once and cached on disk, or a ceremony's key file, each checked against the circuit it
//! was made for.

use std::path::Path;
use std::time::Instant;

use ark_bn254::Bn254;
use ark_groth16::ProvingKey;
use tgrid_groth16::evm::{verifying_key_digest, verifying_key_json};
use tgrid_groth16::keys::{insecure_devnet_setup, load_proving_key, save_proving_key, KeyFile};
use tracing::info;

use crate::error::{Error, Result};
use crate::key_id::WrapKeyId;
use crate::keys::{is_public_seed_key_digest, KeySource, WrapKey, WrapVerifyingKey, DEVNET_INSECURE_SEED};
use crate::wrapper::BatchWrapper;

/// The id of the devnet key of `wrapper`'s circuit (builds its R1CS matrices if not yet built):
/// also its cache name, so neither a changed final layer nor a changed R1CS verifier picks up a
/// stale key.
pub fn insecure_devnet_key_id(wrapper: &BatchWrapper) -> Result<WrapKeyId> {
    wrapper.key_id(true)
}

/// Writes the snarkjs-format verifying key with the key id beside it (`tgrid_key_id`), which
/// `gen-verifier.js` copies into the contract's `VERIFYING_KEY_ID`.
fn write_verifying_key(path: &Path, id: &WrapKeyId, pk: &ProvingKey<Bn254>) -> Result<()> {
    let mut value = verifying_key_json(&pk.vk)?;
    value["tgrid_key_id"] = serde_json::Value::String(id.to_string());
    let json = serde_json::to_string_pretty(&value).expect("JSON values serialize") + "\n";
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, json).map_err(Error::io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(Error::io(path))
}

impl BatchWrapper {
    /// Loads the proving key, or (devnet) runs the INSECURE setup once and caches it. A key
    /// recorded for another circuit (FRI parameters, final circuit, R1CS) is refused.
    pub fn load_or_setup_key(&self, source: &KeySource) -> Result<WrapKey> {
        match source {
            KeySource::InsecureDevnet { dir } => {
                let id = self.key_id(true)?;
                let pk_path = dir.join(format!("{id}.pk"));
                let vk_path = dir.join(format!("{id}.vk.json"));
                let (pk, setup_seconds) = if pk_path.exists() {
                    let (recorded, pk) = load_proving_key(&pk_path, false)?;
                    check_record(&pk_path, &recorded, &id)?;
                    (pk, None)
                } else {
                    std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
                    info!(key = %id, "INSECURE devnet Groth16 setup from a public seed");
                    let t = Instant::now();
                    let pk = insecure_devnet_setup(self.verifier_circuit(None), DEVNET_INSECURE_SEED)?;
                    let seconds = t.elapsed().as_secs_f64();
                    save_proving_key(&pk_path, id.to_string().as_bytes(), &pk)?;
                    (pk, Some(seconds))
                };
                if !vk_path.exists() {
                    write_verifying_key(&vk_path, &id, &pk)?;
                }
                let verifying_key_digest = verifying_key_digest(&pk.vk)?;
                Ok(WrapKey {
                    pk,
                    id,
                    insecure: true,
                    verifying_key_digest,
                    setup_seconds,
                    verifying_key_path: Some(vk_path),
                })
            }
            KeySource::File(path) => {
                // The record first: a key for another circuit is refused before the point
                // validation, which takes a while for a large key.
                let file = KeyFile::read(path)?;
                let id = check_record(path, file.circuit_record(), &self.key_id(false)?)?;
                let pk = file.proving_key(true)?;
                let verifying_key_digest = verifying_key_digest(&pk.vk)?;
                Ok(WrapKey {
                    pk,
                    id,
                    insecure: is_insecure(&id, &verifying_key_digest),
                    verifying_key_digest,
                    setup_seconds: None,
                    verifying_key_path: None,
                })
            }
        }
    }

    /// The verifying side of the key [`load_or_setup_key`](Self::load_or_setup_key) would load,
    /// with the same checks (checksum, circuit record against this circuit, every point of the
    /// verifying key validated), without decoding or keeping the proving key. A devnet key not
    /// set up yet is set up and cached first (the workers load it from there).
    pub fn load_verifying_key(&self, source: &KeySource) -> Result<WrapVerifyingKey> {
        let (path, expected) = match source {
            KeySource::InsecureDevnet { dir } => {
                let id = self.key_id(true)?;
                let path = dir.join(format!("{id}.pk"));
                if !path.exists() {
                    return Ok(self.load_or_setup_key(source)?.verifying());
                }
                (path, id)
            }
            KeySource::File(path) => (path.clone(), self.key_id(false)?),
        };
        let file = KeyFile::read(&path)?;
        let id = check_record(&path, file.circuit_record(), &expected)?;
        let vk = file.verifying_key()?;
        let verifying_key_digest = verifying_key_digest(&vk)?;
        // Whatever its record says, a key found under the devnet path is treated as the devnet's.
        let insecure = matches!(source, KeySource::InsecureDevnet { .. }) || is_insecure(&id, &verifying_key_digest);
        Ok(WrapVerifyingKey { vk, id, insecure, verifying_key_digest })
    }
}

/// [`WrapKey::insecure`] of a key loaded from a file: its recorded circuit is forgeable (a
/// public-seed devnet id, test FRI parameters) or its verifying key is a known public-seed one.
fn is_insecure(id: &WrapKeyId, verifying_key_digest: &[u8; 32]) -> bool {
    id.insecure() || is_public_seed_key_digest(verifying_key_digest)
}

/// Parses a key file's circuit record and checks it names `expected`'s circuit.
fn check_record(path: &Path, recorded: &[u8], expected: &WrapKeyId) -> Result<WrapKeyId> {
    let text = std::str::from_utf8(recorded)
        .map_err(|_| Error::Malformed(format!("{}: the circuit record is not text", path.display())))?;
    let id: WrapKeyId = text.parse()?;
    if let Some(why) = id.mismatch(expected) {
        return Err(Error::KeyMismatch(format!("{} was set up for another circuit: {why}", path.display())));
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tgrid_wrap::FinalFri;

    #[test]
    fn a_key_recorded_for_another_circuit_is_refused() {
        let path = Path::new("k.pk");
        let circuit = WrapKeyId {
            fri: FinalFri::PRODUCTION,
            final_circuit_prefix: [1; 8],
            r1cs_digest: [2; 32],
            public_seed: false,
        };
        let record = |id: WrapKeyId| id.to_string().into_bytes();
        assert_eq!(check_record(path, &record(circuit), &circuit).unwrap(), circuit);
        let devnet = WrapKeyId { public_seed: true, ..circuit };
        assert!(check_record(path, &record(devnet), &circuit).unwrap().insecure(), "a devnet key stays insecure");
        for other in [
            WrapKeyId { fri: FinalFri::INSECURE_TEST, ..circuit },
            WrapKeyId { r1cs_digest: [3; 32], ..circuit },
            WrapKeyId { final_circuit_prefix: [4; 8], ..circuit },
        ] {
            assert!(matches!(check_record(path, &record(other), &circuit), Err(Error::KeyMismatch(_))), "{other}");
        }
        for garbage in [&b"k"[..], b"\xff\xfe", b""] {
            assert!(matches!(check_record(path, garbage, &circuit), Err(Error::Malformed(_))));
        }
    }
}
