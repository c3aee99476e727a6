//! From a batch file (`.tgb`) to its settlement proof: the plonky2 wrap layers, then a Groth16
//! proof of the R1CS verifier of the final layer.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use alloy_primitives::U256;
use ark_bn254::Bn254;
use ark_groth16::VerifyingKey;
use plonky2::plonk::config::GenericHashOut;
use rand::SeedableRng;
use serde::Serialize;
use tgrid_aggregation::batch::{batch_root, settlement_public_input};
use tgrid_aggregation::{AggregationCircuits, BatchFile, SubtreeKind, TaskLeaf};
use tgrid_circuit_cache::CircuitKey;
use tgrid_groth16::evm::proof_calldata;
use tgrid_groth16::{CpuBackend, ProveStats, ProverBackend, R1csMatrices};
use tgrid_wrap::{FinalFri, FinalProof, WrapCircuits};
use tgrid_wrap_r1cs::{settlement_input, FinalVerifierCircuit};

use crate::error::{Error, Result};
use crate::file::{hex0x, KeyJson, LeafJson, SettlementProofFile, FORMAT};
use crate::key_id::WrapKeyId;
use crate::keys::{WrapKey, WrapVerifyingKey};

/// A stage of [`BatchWrapper::prove`], for progress reporting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Checking the batch and proving the settle and final plonky2 layers.
    Layers,
    /// Proving the R1CS verifier with Groth16.
    Groth16,
}

/// Seconds and sizes of one wrap.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct WrapStats {
    /// The settle layer.
    pub settle_seconds: f64,
    /// The BN254-hashed final layer.
    pub final_layer_seconds: f64,
    /// The Groth16 proof, in total.
    pub groth16_seconds: f64,
    /// The Groth16 proof's parts.
    pub groth16: ProveStats,
}

/// The aggregation and wrap circuits of one FRI configuration.
pub struct BatchWrapper {
    /// The process's aggregation circuits, shared with its aggregators.
    aggregation: Arc<AggregationCircuits>,
    wrap: WrapCircuits,
    /// The Groth16 circuit's R1CS matrices, built on first need (see
    /// [`prepare_prover`](Self::prepare_prover)).
    matrices: OnceLock<R1csMatrices>,
}

impl std::fmt::Debug for BatchWrapper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchWrapper").field("wrap", &self.wrap).finish()
    }
}

impl BatchWrapper {
    /// Builds the wrap layers (seconds) over the process's aggregation circuits (built first if
    /// no aggregator has: [`AggregationCircuits::shared`]).
    pub fn build(fri: FinalFri) -> Result<Self> {
        let aggregation = AggregationCircuits::shared()?;
        let wrap = WrapCircuits::build(&aggregation, fri)?;
        Ok(Self { aggregation, wrap, matrices: OnceLock::new() })
    }

    /// Builds the Groth16 circuit's R1CS matrices now (a setup-mode synthesis, seconds, or a load
    /// from the process's circuit cache) rather than in the first proof. Call it before loading
    /// the proving key: the synthesis' transient memory then does not add to the key's, which
    /// keeps a prover's peak RSS lower.
    pub fn prepare_prover(&self) -> Result<&R1csMatrices> {
        if let Some(m) = self.matrices.get() {
            return Ok(m);
        }
        let t = Instant::now();
        // The matrices follow from the code and the final circuit, so a process with a circuit
        // cache keeps them beside that circuit (~0.25 GB; loading takes a fraction of the ten
        // seconds a synthesis does). Decoding checks them in full and recomputes their digest,
        // which the proving key's id must then match.
        let last = self.wrap.final_circuit();
        let key =
            CircuitKey::new("groth16-matrices").with(self.final_circuit_digest()).with(format!("{:?}", last.common));
        let built = tgrid_circuit_cache::try_fetch_or_make(
            "Groth16 R1CS matrices",
            &key,
            |bytes| R1csMatrices::from_bytes(bytes).map_err(|e| e.to_string()),
            || R1csMatrices::build(self.verifier_circuit(None)),
            |matrices| matrices.to_bytes().map_err(|e| e.to_string()),
        )?;
        tracing::info!(matrices = ?built, seconds = t.elapsed().as_secs_f64(), "Groth16 constraint matrices ready");
        Ok(self.matrices.get_or_init(|| built))
    }

    /// `production` or, for any other parameters, `insecure-test`.
    pub fn fri_label(&self) -> &'static str {
        if self.wrap.fri() == FinalFri::PRODUCTION {
            "production"
        } else {
            "insecure-test"
        }
    }

    /// The id of a key for this circuit (builds the R1CS matrices if not yet built).
    pub fn key_id(&self, public_seed: bool) -> Result<WrapKeyId> {
        let final_digest = self.final_circuit_digest();
        Ok(WrapKeyId {
            fri: self.wrap.fri(),
            final_circuit_prefix: final_digest[..8].try_into().expect("8 of 32 bytes"),
            r1cs_digest: self.prepare_prover()?.digest(),
            public_seed,
        })
    }

    /// The final plonky2 circuit's digest (32 bytes).
    pub fn final_circuit_digest(&self) -> [u8; 32] {
        let bytes = self.wrap.final_circuit().verifier_only.circuit_digest.to_bytes();
        bytes.try_into().expect("a BN254 hash is 32 bytes")
    }

    /// The aggregation circuits.
    pub fn aggregation(&self) -> &AggregationCircuits {
        &self.aggregation
    }

    /// The wrap layers.
    pub fn wrap_circuits(&self) -> &WrapCircuits {
        &self.wrap
    }

    /// The Groth16 circuit: the R1CS verifier of this final circuit (`None`: setup).
    pub fn verifier_circuit<'a>(&'a self, proof: Option<&'a FinalProof>) -> FinalVerifierCircuit<'a> {
        let last = self.wrap.final_circuit();
        FinalVerifierCircuit { common: &last.common, verifier_only: &last.verifier_only, proof }
    }

    /// Proves a batch for settlement with the CPU backend; see [`prove_with`](Self::prove_with).
    pub fn prove(
        &self,
        key: &WrapKey,
        batch: &BatchFile,
        on_stage: &dyn Fn(Stage),
    ) -> Result<(SettlementProofFile, WrapStats)> {
        self.prove_with(key, batch, &CpuBackend, on_stage)
    }

    /// Verifies the batch file natively (root proof, leaves, count), proves the wrap layers and
    /// the Groth16 proof, and checks that proof with the key's verifying key before returning
    /// it (a stale or foreign key fails here, not on-chain).
    pub fn prove_with(
        &self,
        key: &WrapKey,
        batch: &BatchFile,
        backend: &dyn ProverBackend,
        on_stage: &dyn Fn(Stage),
    ) -> Result<(SettlementProofFile, WrapStats)> {
        on_stage(Stage::Layers);
        let verified = self.aggregation.verify_batch(batch, &batch.registry_root)?;
        let kind = if batch.root_is_merge { SubtreeKind::Merge } else { SubtreeKind::Chunk };
        let root = self.aggregation.decode(&batch.proof, kind)?;
        let wrapped = self.wrap.wrap(&self.aggregation, &root)?;
        if wrapped.public_input()? != verified.public_input {
            return Err(Error::Invalid("the wrap layers output another public input than the batch's".into()));
        }
        let mut stats = WrapStats {
            settle_seconds: wrapped.timings.settle + wrapped.timings.shrink,
            final_layer_seconds: wrapped.timings.last,
            ..WrapStats::default()
        };

        on_stage(Stage::Groth16);
        let t = Instant::now();
        let x = settlement_input(&wrapped.proof)?;
        let mut rng = rand::rngs::StdRng::from_entropy();
        let matrices = self.prepare_prover()?;
        let (proof, groth16) = tgrid_groth16::prove_with_matrices(
            &key.pk,
            matrices,
            self.verifier_circuit(Some(&wrapped.proof)),
            backend,
            &mut rng,
        )?;
        if !tgrid_groth16::verify(&key.pk.vk, x, &proof)? {
            return Err(Error::KeyMismatch(format!(
                "the proof made with key {} does not verify under its own verifying key: the key was made \
                 for another circuit (delete it to redo the setup)",
                key.id
            )));
        }
        stats.groth16 = groth16;
        stats.groth16_seconds = t.elapsed().as_secs_f64();

        let key = key_json(&key.id, key.insecure, &key.verifying_key_digest);
        let file = self.settlement_file(key, &verified.leaves, &verified.registry_root, proof_calldata(&proof))?;
        Ok((file, stats))
    }

    /// The settlement proof file of `batch` from a Groth16 proof made elsewhere (a queue worker),
    /// as calldata `words`: everything in the file but the proof is derived here from the
    /// batch's leaves and registry root and from the key, and the proof must verify under the key
    /// for the batch's public input. So a hostile prover can at worst make this fail.
    pub fn adopt_proof(
        &self,
        key: &WrapVerifyingKey,
        batch: &BatchFile,
        words: [U256; 8],
    ) -> Result<SettlementProofFile> {
        let key_json = key_json(&key.id, key.insecure, &key.verifying_key_digest);
        self.adopt(&key.vk, key_json, &batch.leaves, &batch.registry_root, words)
    }

    pub(crate) fn adopt(
        &self,
        vk: &VerifyingKey<Bn254>,
        key: KeyJson,
        leaves: &[TaskLeaf],
        registry_root: &[u8; 32],
        words: [U256; 8],
    ) -> Result<SettlementProofFile> {
        let file = self.settlement_file(key, leaves, registry_root, words)?;
        file.verify(vk)?;
        Ok(file)
    }

    fn settlement_file(
        &self,
        key: KeyJson,
        leaves: &[TaskLeaf],
        registry_root: &[u8; 32],
        words: [U256; 8],
    ) -> Result<SettlementProofFile> {
        let hashes: Vec<[u8; 32]> = leaves.iter().map(TaskLeaf::hash).collect();
        let root = batch_root(&hashes).ok_or_else(|| Error::Invalid("a batch without tasks".into()))?;
        let count = leaves.len() as u64;
        Ok(SettlementProofFile {
            format: FORMAT.into(),
            key,
            fri: self.fri_label().into(),
            final_circuit_digest: hex0x(&self.final_circuit_digest()),
            batch_root: hex0x(&root),
            registry_root: hex0x(registry_root),
            count,
            public_input: hex0x(&settlement_public_input(&root, registry_root, count)),
            proof: words.iter().map(|w| format!("{w:#066x}")).collect(),
            leaves: leaves.iter().map(LeafJson::of).collect(),
        })
    }
}

fn key_json(id: &WrapKeyId, insecure: bool, verifying_key_digest: &[u8; 32]) -> KeyJson {
    KeyJson { id: id.to_string(), insecure, verifying_key_digest: hex0x(verifying_key_digest) }
}
