//! Normalization: a per-model recursion step that verifies the model's task proof (its
//! verifier data are constants) and re-exposes the same 29 public inputs, padded to the one
//! [`NORMALIZED`] shape shared by every model. The leaf circuit can then
//! verify a normalized proof of any model, with the verifier data as a witness.

use std::sync::Arc;

use plonky2::iop::witness::PartialWitness;
use plonky2::iop::witness::WitnessWrite;
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitData, VerifierCircuitData};
use plonky2::plonk::proof::{ProofWithPublicInputs, ProofWithPublicInputsTarget};
use tgrid_circuit_cache::CircuitKey;
use tgrid_circuits::{TaskProof, TaskVerifier, C, D, F, NUM_PUBLIC_INPUTS};

use crate::error::{Error, Result};
use crate::shape::{aggregation_config, NORMALIZED};

/// The normalization circuit of one model.
pub struct Normalizer {
    task: Arc<TaskVerifier>,
    data: CircuitData<F, C, D>,
    proof: ProofWithPublicInputsTarget<D>,
}

impl std::fmt::Debug for Normalizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Normalizer").field("model_id", &hex::encode(self.task.model_id())).finish()
    }
}

impl Normalizer {
    /// Builds the normalization circuit for the model that `task` verifies (owned or shared
    /// with whoever checks the model's task proofs).
    pub fn new(task: impl Into<Arc<TaskVerifier>>) -> Result<Self> {
        let task = task.into();
        let inner = task.verifier_data();
        if inner.common.num_public_inputs != NUM_PUBLIC_INPUTS {
            return Err(Error::Shape("the task circuit does not expose the task public inputs".into()));
        }
        let mut builder = CircuitBuilder::<F, D>::new(aggregation_config());
        let proof = builder.add_virtual_proof_with_pis(&inner.common);
        let vd = builder.constant_verifier_data(&inner.verifier_only);
        builder.verify_proof::<C>(&proof, &vd, &inner.common);
        builder.register_public_inputs(&proof.public_inputs);
        // The task circuit is a runtime input: its digest and common data name the build.
        let key = CircuitKey::new("normalize")
            .with(tgrid_circuits::hash_to_bytes(&inner.verifier_only.circuit_digest))
            .with(format!("{:?}", inner.common));
        let data = NORMALIZED.build(builder, key)?;
        Ok(Self { task, data, proof })
    }

    /// The task-proof verifier of the model.
    pub fn task_verifier(&self) -> &TaskVerifier {
        &self.task
    }

    /// The task-proof verifier of the model, shared.
    pub fn shared_task_verifier(&self) -> Arc<TaskVerifier> {
        self.task.clone()
    }

    /// The model id.
    pub fn model_id(&self) -> [u8; 32] {
        self.task.model_id()
    }

    /// The digest the registry pairs with the model id.
    pub fn digest(&self) -> [u8; 32] {
        tgrid_circuits::hash_to_bytes(&self.data.verifier_only.circuit_digest)
    }

    /// Verifier data of the normalization circuit.
    pub fn verifier_data(&self) -> VerifierCircuitData<F, C, D> {
        self.data.verifier_data()
    }

    /// Checks a task proof natively (clear errors for bad submissions) and normalizes it.
    pub fn normalize(&self, proof: &TaskProof) -> Result<(tgrid_circuits::PublicInputs, NormalizedProof)> {
        let (publics, decoded) = self.task.verify_decoded(proof)?;
        let mut pw = PartialWitness::new();
        pw.set_proof_with_pis_target(&self.proof, &decoded).map_err(|e| Error::Proving(e.to_string()))?;
        let proof = crate::shape::prove_checked(&self.data, pw)?;
        Ok((publics, NormalizedProof { proof, verifier: self.data.verifier_only.clone() }))
    }
}

/// A normalized proof together with the verifier data of its circuit (which the leaf circuit
/// takes as a witness and checks against the registry).
#[derive(Clone, Debug)]
pub struct NormalizedProof {
    /// The proof; public inputs as in a task proof.
    pub proof: ProofWithPublicInputs<F, C, D>,
    /// Verifier-only data of the model's normalization circuit.
    pub verifier: plonky2::plonk::circuit_data::VerifierOnlyCircuitData<C, D>,
}
