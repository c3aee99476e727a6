//! Groth16 keys of the wrap circuit: the INSECURE devnet setup (toxic waste from a public seed),
//! cached on disk so it runs once per circuit, or a proving key from a ceremony.

use std::path::{Path, PathBuf};
use std::time::Instant;

use ark_bn254::Bn254;
use ark_groth16::ProvingKey;
use tgrid_groth16::evm::{verifying_key_digest, verifying_key_json};
use tgrid_groth16::keys::{insecure_devnet_setup, load_proving_key, save_proving_key};
use tracing::info;

use crate::error::{Error, Result};
use crate::file::hex0x;
use crate::wrapper::BatchWrapper;

/// Seed of the devnet setup. INSECURE: it is public, so anyone can compute the toxic waste and
/// forge proofs for keys made from it. Devnets and tests only.
pub const DEVNET_INSECURE_SEED: u64 = 0x7467_7269_645f_6465;

/// `VERIFYING_KEY_DIGEST`s of the public-seed wrap keys verifiers were generated for
/// (contracts/verifier/WrapVerifierDevnetInsecure.sol, production FRI; WrapVerifierInsecureTest.sol,
/// test FRI): anyone can forge proofs for them, whatever a file or a key id calls them.
pub const PUBLIC_SEED_KEY_DIGESTS: [&str; 2] = [
    "0xaffb4ca1947deff8b3837c80304f56068ddbad353ab98d11d361f0b05ada8ba6",
    "0x0f096934cb90bbf2bc50752e379f98765678f256180c7a9f2652ece407f98ad1",
];

/// Whether `digest` (sha256 of a verifying key's 18 EIP-197 words) is one of
/// [`PUBLIC_SEED_KEY_DIGESTS`].
pub fn is_public_seed_key_digest(digest: &[u8; 32]) -> bool {
    let hex = format!("0x{}", hex::encode(digest));
    PUBLIC_SEED_KEY_DIGESTS.contains(&hex.as_str())
}

/// Where the proving key comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeySource {
    /// INSECURE: the devnet setup from [`DEVNET_INSECURE_SEED`], cached in this directory as
    /// `<id>.pk` and `<id>.vk.json` (the id carries `insecure`).
    InsecureDevnet {
        /// Key directory (e.g. `.tgrid/keys`).
        dir: PathBuf,
    },
    /// A proving key from a ceremony, in `tgrid_groth16::keys` format; every point is
    /// validated on load.
    File(PathBuf),
}

/// Final-layer FRI parameters of the wrap, as the services' settings name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WrapFri {
    /// 100 conjectured bits: what a real verifier (and the default devnet one) expects.
    Production,
    /// INSECURE: 10 bits, for tests only (needs a verifier deployed for its key).
    InsecureTest,
}

impl WrapFri {
    /// The parameters.
    pub fn params(self) -> tgrid_wrap::FinalFri {
        match self {
            Self::Production => tgrid_wrap::FinalFri::PRODUCTION,
            Self::InsecureTest => tgrid_wrap::FinalFri::INSECURE_TEST,
        }
    }
}

/// A proving key ready for a [`BatchWrapper`].
pub struct WrapKey {
    /// The key.
    pub pk: ProvingKey<Bn254>,
    /// Name: the cache file stem, or the key file's stem.
    pub id: String,
    /// Whether anyone can forge proofs under it: a key from a public seed, or any key of a circuit
    /// with the test FRI parameters (10 bits: forgeable whatever the Groth16 key).
    pub insecure: bool,
    /// Digest of its verifying key (`VERIFYING_KEY_DIGEST` of the Solidity verifier).
    pub verifying_key_digest: [u8; 32],
    /// Seconds spent in the setup (`None`: loaded from disk).
    pub setup_seconds: Option<f64>,
    /// The verifying key JSON file written next to a cached key (`None` for a key file).
    pub verifying_key_path: Option<PathBuf>,
}

impl std::fmt::Debug for WrapKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WrapKey")
            .field("id", &self.id)
            .field("insecure", &self.insecure)
            .field("verifying_key_digest", &hex0x(&self.verifying_key_digest))
            .finish()
    }
}

/// The cache name of the devnet key of `wrapper`'s circuit: FRI parameters, final circuit
/// digest and the digest of the Groth16 constraint system (builds its matrices if not yet
/// built), so neither a changed final layer nor a changed R1CS verifier picks up a stale key.
pub fn insecure_devnet_key_id(wrapper: &BatchWrapper) -> Result<String> {
    let r1cs = wrapper.prepare_prover()?.digest();
    Ok(format!(
        "wrap-{}-{}-{}-insecure-devnet",
        wrapper.fri_label(),
        &hex::encode(wrapper.final_circuit_digest())[..16],
        &hex::encode(r1cs)[..8]
    ))
}

fn write_verifying_key(path: &Path, pk: &ProvingKey<Bn254>) -> Result<()> {
    let json = serde_json::to_string_pretty(&verifying_key_json(&pk.vk)?).expect("JSON values serialize") + "\n";
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, json).map_err(Error::io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(Error::io(path))
}

impl BatchWrapper {
    /// Loads the proving key, or (devnet) runs the INSECURE setup once and caches it.
    pub fn load_or_setup_key(&self, source: &KeySource) -> Result<WrapKey> {
        match source {
            KeySource::InsecureDevnet { dir } => {
                let id = insecure_devnet_key_id(self)?;
                let pk_path = dir.join(format!("{id}.pk"));
                let vk_path = dir.join(format!("{id}.vk.json"));
                let (pk, setup_seconds) = if pk_path.exists() {
                    (load_proving_key(&pk_path, false)?, None)
                } else {
                    std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
                    info!(key = %id, "INSECURE devnet Groth16 setup from a public seed");
                    let t = Instant::now();
                    let pk = insecure_devnet_setup(self.verifier_circuit(None), DEVNET_INSECURE_SEED)?;
                    let seconds = t.elapsed().as_secs_f64();
                    save_proving_key(&pk_path, &pk)?;
                    (pk, Some(seconds))
                };
                if !vk_path.exists() {
                    write_verifying_key(&vk_path, &pk)?;
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
                let pk = load_proving_key(path, true)?;
                let id = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                let verifying_key_digest = verifying_key_digest(&pk.vk)?;
                Ok(WrapKey {
                    pk,
                    id,
                    insecure: self.fri_label() != "production",
                    verifying_key_digest,
                    setup_seconds: None,
                    verifying_key_path: None,
                })
            }
        }
    }
}
