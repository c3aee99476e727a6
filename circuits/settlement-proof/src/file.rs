//! The settlement proof file (`.g16`, JSON): everything `Settlement.submitBatch` takes (the
//! ordered leaves and the Groth16 proof words), what they commit to (batch root, registry root,
//! count, public input) and which key proved it. An auditor re-checks all of it with
//! [`SettlementProofFile::verify`]; nothing in the file is trusted, the recomputed values are
//! compared with the claimed ones.

use alloy_primitives::U256;
use ark_bn254::Bn254;
use ark_groth16::VerifyingKey;
use serde::{Deserialize, Serialize};
use tgrid_aggregation::batch::MAX_BATCH_TASKS;
use tgrid_aggregation::batch::{batch_root, settlement_public_input};
use tgrid_aggregation::{check_leaves, TaskLeaf};
use tgrid_groth16::evm::{proof_from_calldata, public_input_scalar, verifying_key_digest};

use crate::error::{Error, Result};
use crate::key_id::WrapKeyId;

/// The `format` field of version 2 (version 1 named keys freely; version 2 names them by
/// [`WrapKeyId`], checked on load).
pub const FORMAT: &str = "tgrid-settlement-proof/2";

/// Largest file accepted: a maximal batch's leaves as JSON hex (about 400 bytes each) plus slack.
pub const MAX_FILE_BYTES: usize = MAX_BATCH_TASKS * 512 + (1 << 20);

/// One task of the batch, as hex strings (the calldata the contract receives).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeafJson {
    /// Task id (bytes32).
    pub task_id: String,
    /// Model id (bytes32).
    pub model_id: String,
    /// Input commitment (bytes32).
    pub input_commitment: String,
    /// Output commitment (bytes32).
    pub output_commitment: String,
    /// Provider (address).
    pub provider: String,
}

impl LeafJson {
    /// The JSON form of a leaf.
    pub fn of(leaf: &TaskLeaf) -> Self {
        Self {
            task_id: hex0x(&leaf.task_id),
            model_id: hex0x(&leaf.model_id),
            input_commitment: hex0x(&leaf.input_commitment),
            output_commitment: hex0x(&leaf.output_commitment),
            provider: hex0x(&leaf.provider),
        }
    }

    /// Parses the hex fields.
    pub fn leaf(&self, index: usize) -> Result<TaskLeaf> {
        let what = |field: &str| format!("leaves[{index}].{field}");
        Ok(TaskLeaf {
            task_id: parse_hex(&self.task_id, &what("task_id"))?,
            model_id: parse_hex(&self.model_id, &what("model_id"))?,
            input_commitment: parse_hex(&self.input_commitment, &what("input_commitment"))?,
            output_commitment: parse_hex(&self.output_commitment, &what("output_commitment"))?,
            provider: parse_hex(&self.provider, &what("provider"))?,
        })
    }
}

/// Which Groth16 key proved the batch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyJson {
    /// The key's [`WrapKeyId`]: FRI parameters, final circuit, R1CS digest, devnet seed.
    pub id: String,
    /// Whether anyone can forge proofs under the key (public seed or < 100 bits); never false
    /// when the id says otherwise.
    pub insecure: bool,
    /// `VERIFYING_KEY_DIGEST` of the generated Solidity verifier.
    pub verifying_key_digest: String,
}

/// A settlement proof file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettlementProofFile {
    /// Always [`FORMAT`].
    pub format: String,
    /// The proving key.
    pub key: KeyJson,
    /// Final-layer FRI parameters (`production` or `insecure-test`).
    pub fri: String,
    /// Digest of the final plonky2 circuit the Groth16 circuit verifies.
    pub final_circuit_digest: String,
    /// RFC 6962 root of the leaves.
    pub batch_root: String,
    /// Registry root the batch was proven against.
    pub registry_root: String,
    /// Number of tasks.
    pub count: u64,
    /// The Groth16 public input: sha256(batch root ‖ registry root ‖ count) with the top 3 bits
    /// cleared.
    pub public_input: String,
    /// The proof as `uint256[8]` calldata words (docs/encodings.md).
    pub proof: Vec<String>,
    /// The tasks, in batch order.
    pub leaves: Vec<LeafJson>,
}

/// What a verified settlement proof file proves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedSettlement {
    /// The Groth16 public input.
    pub public_input: [u8; 32],
    /// The batch root recomputed from the leaves.
    pub batch_root: [u8; 32],
    /// The registry root.
    pub registry_root: [u8; 32],
    /// The tasks, in order.
    pub leaves: Vec<TaskLeaf>,
    /// The proof words.
    pub proof: [U256; 8],
}

pub(crate) fn hex0x(bytes: &[u8]) -> String {
    format!("0x{}", hex::encode(bytes))
}

/// Parses `0x` + exactly `2N` hex digits.
pub fn parse_hex<const N: usize>(s: &str, what: &str) -> Result<[u8; N]> {
    let digits = s.strip_prefix("0x").ok_or_else(|| Error::Malformed(format!("{what} must start with 0x")))?;
    if digits.len() != 2 * N {
        return Err(Error::Malformed(format!("{what} must have {} hex digits, has {}", 2 * N, digits.len())));
    }
    let mut out = [0u8; N];
    hex::decode_to_slice(digits, &mut out).map_err(|e| Error::Malformed(format!("{what}: {e}")))?;
    Ok(out)
}

impl SettlementProofFile {
    /// Parses a file; bounded in size, strict in fields.
    pub fn from_json_bytes(bytes: &[u8]) -> Result<Self> {
        if bytes.len() > MAX_FILE_BYTES {
            return Err(Error::Malformed(format!("{} bytes, the limit is {MAX_FILE_BYTES}", bytes.len())));
        }
        let file: Self = serde_json::from_slice(bytes).map_err(|e| Error::Malformed(e.to_string()))?;
        if file.format != FORMAT {
            return Err(Error::Malformed(format!("format {:?}, expected {FORMAT:?}", file.format)));
        }
        file.check_key_claims()?;
        Ok(file)
    }

    /// The parsed key id.
    pub fn key_id(&self) -> Result<WrapKeyId> {
        self.key.id.parse()
    }

    /// The key id parses, and the file's other claims about the circuit agree with it.
    fn check_key_claims(&self) -> Result<()> {
        let id = self.key_id()?;
        if self.fri != id.fri_label() {
            return Err(Error::Malformed(format!("fri {:?} but the key id says {:?}", self.fri, id.fri_label())));
        }
        let prefix = hex0x(&id.final_circuit_prefix);
        if !self.final_circuit_digest.starts_with(&prefix) {
            return Err(Error::Malformed(format!(
                "final circuit digest {} but the key id names {prefix}…",
                self.final_circuit_digest
            )));
        }
        if id.insecure() && !self.key.insecure {
            return Err(Error::Malformed(format!("the key is marked secure but its id {} is insecure", self.key.id)));
        }
        Ok(())
    }

    /// The file as pretty JSON.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("plain strings and numbers serialize");
        bytes.push(b'\n');
        bytes
    }

    /// The proof words, parsed.
    pub fn proof_words(&self) -> Result<[U256; 8]> {
        if self.proof.len() != 8 {
            return Err(Error::Malformed(format!("proof has {} words, expected 8", self.proof.len())));
        }
        let mut words = [U256::ZERO; 8];
        for (i, (w, s)) in words.iter_mut().zip(&self.proof).enumerate() {
            *w = U256::from_be_bytes(parse_hex::<32>(s, &format!("proof[{i}]"))?);
        }
        Ok(words)
    }

    /// The leaves, parsed.
    pub fn task_leaves(&self) -> Result<Vec<TaskLeaf>> {
        if self.leaves.len() > MAX_BATCH_TASKS {
            return Err(Error::Malformed(format!("{} leaves, the limit is {MAX_BATCH_TASKS}", self.leaves.len())));
        }
        self.leaves.iter().enumerate().map(|(i, l)| l.leaf(i)).collect()
    }

    /// Checks the file against `vk` as the settlement contract would, from the leaves up:
    /// recomputes the batch root and the public input from the ordered leaves, compares them
    /// (and the count) with the file's claims, then verifies the Groth16 proof for that input.
    /// `Err(Invalid)` for a false claim or a proof that does not verify.
    pub fn verify(&self, vk: &VerifyingKey<Bn254>) -> Result<VerifiedSettlement> {
        let digest = hex0x(&verifying_key_digest(vk)?);
        if !self.key.verifying_key_digest.eq_ignore_ascii_case(&digest) {
            return Err(Error::KeyMismatch(format!(
                "the file was proven with key {} (digest {}), the given verifying key has digest {digest}",
                self.key.id, self.key.verifying_key_digest
            )));
        }
        let leaves = self.task_leaves()?;
        check_leaves(&leaves).map_err(|e| Error::Invalid(e.to_string()))?;
        let words = self.proof_words()?;
        let claimed_root = parse_hex::<32>(&self.batch_root, "batch_root")?;
        let registry_root = parse_hex::<32>(&self.registry_root, "registry_root")?;
        let claimed_input = parse_hex::<32>(&self.public_input, "public_input")?;

        let hashes: Vec<[u8; 32]> = leaves.iter().map(TaskLeaf::hash).collect();
        let root = batch_root(&hashes).expect("check_leaves rejects an empty batch");
        if root != claimed_root {
            return Err(Error::Invalid(format!(
                "the leaves hash to batch root {}, the file claims {}",
                hex0x(&root),
                self.batch_root
            )));
        }
        if self.count != leaves.len() as u64 {
            return Err(Error::Invalid(format!("count {} but {} leaves", self.count, leaves.len())));
        }
        let input = settlement_public_input(&root, &registry_root, self.count);
        if input != claimed_input {
            return Err(Error::Invalid(format!(
                "the public input of these leaves is {}, the file claims {}",
                hex0x(&input),
                self.public_input
            )));
        }
        let proof = proof_from_calldata(&words).map_err(|e| Error::Invalid(e.to_string()))?;
        if !tgrid_groth16::verify(vk, public_input_scalar(&input)?, &proof)? {
            return Err(Error::Invalid("the Groth16 proof does not verify for this public input".into()));
        }
        Ok(VerifiedSettlement { public_input: input, batch_root: root, registry_root, leaves, proof: words })
    }
}
