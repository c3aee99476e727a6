//! Groth16 keys of the wrap circuit: the INSECURE devnet setup (toxic waste from a public seed),
//! cached on disk so it runs once per circuit, or a proving key from a ceremony. Loading them
//! for a wrapper is [`crate::setup`]'s job.

use std::path::PathBuf;

use ark_bn254::Bn254;
use ark_groth16::{ProvingKey, VerifyingKey};

use crate::file::hex0x;
use crate::key_id::WrapKeyId;
pub use crate::key_id::{is_public_seed_key_digest, PUBLIC_SEED_KEY_DIGESTS};

/// Seed of the devnet setup. INSECURE: it is public, so anyone can compute the toxic waste and
/// forge proofs for keys made from it. Devnets and tests only.
pub const DEVNET_INSECURE_SEED: u64 = 0x7467_7269_645f_6465;

/// Where the proving key comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeySource {
    /// INSECURE: the devnet setup from [`DEVNET_INSECURE_SEED`], cached in this directory as
    /// `<id>.pk` and `<id>.vk.json` (the id ends in `-insecure-devnet`).
    InsecureDevnet {
        /// Key directory (e.g. `.tgrid/keys`).
        dir: PathBuf,
    },
    /// A proving key from a ceremony, in `tgrid_groth16::keys` format with its [`WrapKeyId`] as
    /// the circuit record; every point is validated and the record checked against the circuit
    /// on load.
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

/// A proving key ready for a [`crate::BatchWrapper`].
pub struct WrapKey {
    /// The key.
    pub pk: ProvingKey<Bn254>,
    /// What it was set up for, as recorded in the key file and checked against the circuit.
    pub id: WrapKeyId,
    /// Whether anyone can forge proofs under it: a key from a public seed (by its id or by its
    /// verifying key digest), or any key of a circuit below 100 conjectured bits (the test FRI
    /// parameters: forgeable whatever the Groth16 key).
    pub insecure: bool,
    /// Digest of its verifying key (`VERIFYING_KEY_DIGEST` of the Solidity verifier).
    pub verifying_key_digest: [u8; 32],
    /// Seconds spent in the setup (`None`: loaded from disk).
    pub setup_seconds: Option<f64>,
    /// The verifying key JSON file written next to a cached key (`None` for a key file).
    pub verifying_key_path: Option<PathBuf>,
}

/// The verifying side of a wrap key: what a sequencer whose wraps run on queue workers needs to
/// check their proofs, without the proving key resident (hundreds of MB).
#[derive(Clone)]
pub struct WrapVerifyingKey {
    /// The verifying key.
    pub vk: VerifyingKey<Bn254>,
    /// What the proving key was set up for, as recorded in its file and checked against the circuit.
    pub id: WrapKeyId,
    /// As [`WrapKey::insecure`].
    pub insecure: bool,
    /// Digest of the verifying key (`VERIFYING_KEY_DIGEST` of the Solidity verifier).
    pub verifying_key_digest: [u8; 32],
}

impl std::fmt::Debug for WrapVerifyingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WrapVerifyingKey")
            .field("id", &self.id.to_string())
            .field("insecure", &self.insecure)
            .field("verifying_key_digest", &hex0x(&self.verifying_key_digest))
            .finish()
    }
}

impl WrapKey {
    /// Its verifying side.
    pub fn verifying(&self) -> WrapVerifyingKey {
        WrapVerifyingKey {
            vk: self.pk.vk.clone(),
            id: self.id,
            insecure: self.insecure,
            verifying_key_digest: self.verifying_key_digest,
        }
    }
}

impl std::fmt::Debug for WrapKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WrapKey")
            .field("id", &self.id.to_string())
            .field("insecure", &self.insecure)
            .field("verifying_key_digest", &hex0x(&self.verifying_key_digest))
            .finish()
    }
}
