//! Verifying task proofs of one model against circuits rebuilt from its weights.

use plonky2::plonk::circuit_data::VerifierCircuitData;
use plonky2::plonk::proof::ProofWithPublicInputs;
use tgrid_int8::{Privacy, QuantModel};

use crate::circuit::{BuildOptions, PublicInputs, SegmentCircuit};
use crate::error::{Error, Result};
use crate::files::{decode_plonky2_proof, hash_to_bytes, TaskProof};
use crate::join::JoinCircuit;
use crate::plan::SegmentPlan;
use crate::verifier_cache::{self, BuiltVerifier};
use crate::{C, D, F};

/// Verifies task proofs of one model. Building it rebuilds the model's circuits from the
/// weights (so a verifier never trusts circuit data from a file) and keeps only the final
/// verifier data.
pub struct TaskVerifier {
    model_id: [u8; 32],
    privacy: Privacy,
    verifier: VerifierCircuitData<F, C, D>,
    segment_rows: Vec<usize>,
}

impl std::fmt::Debug for TaskVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskVerifier").field("model_id", &hex::encode(self.model_id)).finish()
    }
}

impl TaskVerifier {
    /// Rebuilds the verifier of public tasks of `model` cut by `plan`.
    pub fn new(model: &QuantModel, plan: &SegmentPlan) -> Result<Self> {
        Self::with_privacy(model, plan, Privacy::Public)
    }

    /// Rebuilds the verifier of tasks of mode `privacy` of `model` cut by `plan`, or loads its
    /// verifier data from the process's circuit cache if a binary enabled one
    /// ([`tgrid_circuit_cache::enable`]; the auditor's tools do not).
    pub fn with_privacy(model: &QuantModel, plan: &SegmentPlan, privacy: Privacy) -> Result<Self> {
        Self::with_cache(model, plan, privacy, tgrid_circuit_cache::installed())
    }

    /// [`with_privacy`](Self::with_privacy) with the verifier data kept in `cache` (none:
    /// always rebuilt).
    pub fn with_cache(
        model: &QuantModel,
        plan: &SegmentPlan,
        privacy: Privacy,
        cache: Option<&tgrid_circuit_cache::CircuitCache>,
    ) -> Result<Self> {
        plan.validate(model)?;
        let built = verifier_cache::fetch_or_build(cache, model.model_id(), plan, privacy, || {
            let segments = plan.segments(model);
            let bind = segments.len() == 1;
            let mut acc: Option<VerifierCircuitData<F, C, D>> = None;
            let mut segment_rows = Vec::new();
            let k = segments.len();
            for (i, segment) in segments.into_iter().enumerate() {
                let circuit = SegmentCircuit::build(model, segment, BuildOptions::binding(bind, privacy))?;
                segment_rows.push(circuit.rows());
                let seg = circuit.data.verifier_data();
                drop(circuit);
                acc = Some(match acc {
                    None => seg,
                    Some(prev) => JoinCircuit::build(model, &prev, &seg, i + 1 == k, privacy)?.data.verifier_data(),
                });
            }
            Ok(BuiltVerifier { verifier: acc.expect("at least one segment"), segment_rows })
        })?;
        let model_id = privacy.task_model_id(model.model_id());
        Ok(Self { model_id, privacy, verifier: built.verifier, segment_rows: built.segment_rows })
    }

    /// Whether it verifies public or private tasks.
    pub fn privacy(&self) -> Privacy {
        self.privacy
    }

    /// The model id the proofs expose: the model's own for public tasks, its private variant's
    /// ([`Privacy::task_model_id`]) for private ones.
    pub fn model_id(&self) -> [u8; 32] {
        self.model_id
    }

    /// Padded rows of each segment circuit.
    pub fn segment_rows(&self) -> &[usize] {
        &self.segment_rows
    }

    /// The digest of the final circuit (the model's leaf circuit, whose digest the registry pins, verifies it).
    pub fn circuit_digest(&self) -> [u8; 32] {
        hash_to_bytes(&self.verifier.verifier_only.circuit_digest)
    }

    /// The final circuit's verifier data (what a recursive verifier of task proofs needs).
    pub fn verifier_data(&self) -> &VerifierCircuitData<F, C, D> {
        &self.verifier
    }

    /// Checks a proof; on success returns its public inputs (bound to this model).
    pub fn verify(&self, proof: &TaskProof) -> Result<PublicInputs> {
        let (publics, decoded) = self.decode(proof)?;
        self.check(decoded)?;
        Ok(publics)
    }

    /// As [`verify`](Self::verify), also returning the decoded plonky2 proof (for recursion).
    pub fn verify_decoded(&self, proof: &TaskProof) -> Result<(PublicInputs, ProofWithPublicInputs<F, C, D>)> {
        let (publics, decoded) = self.decode(proof)?;
        self.check(decoded.clone())?;
        Ok((publics, decoded))
    }

    /// Decodes a proof of this model (bounded by the circuit's shape) and its public inputs.
    fn decode(&self, proof: &TaskProof) -> Result<(PublicInputs, ProofWithPublicInputs<F, C, D>)> {
        if proof.model_id != self.model_id {
            return Err(Error::InvalidProof(format!(
                "the proof is for model 0x{}, not 0x{}",
                hex::encode(proof.model_id),
                hex::encode(self.model_id)
            )));
        }
        let decoded = decode_plonky2_proof(&proof.proof, &self.verifier.common)?;
        let publics = PublicInputs::from_fields(&decoded.public_inputs)?;
        if publics.model_id != self.model_id {
            return Err(Error::InvalidProof("the proof's model id public input does not match".into()));
        }
        Ok((publics, decoded))
    }

    /// plonky2's verification; it takes the proof by value, and [`verify`](Self::verify) has no
    /// further use for it, so only [`verify_decoded`](Self::verify_decoded) copies it.
    fn check(&self, decoded: ProofWithPublicInputs<F, C, D>) -> Result<()> {
        crate::hash::verify_proof_parallel(&self.verifier, decoded)
            .map_err(|e| Error::InvalidProof(format!("plonky2 verification failed: {e}")))
    }
}
