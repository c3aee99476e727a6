//! The leaf circuit of one model: a task proof of that model in (its verifier data are
//! constants), its task leaf and model id out, in the one [`LEAF`] shape shared by every model
//! (for a model whose task proof is too large to verify there beside the leaf's hashing, through
//! a per-model normalization step first).
//! The chunk circuit verifies a leaf proof of any model with the leaf circuit's verifier data as
//! a witness and checks `(model id, leaf circuit digest)` against the registry.

use std::sync::Arc;

use plonky2::iop::witness::{PartialWitness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitData, VerifierCircuitData};
use plonky2::plonk::proof::ProofWithPublicInputsTarget;
use tgrid_circuit_cache::CircuitKey;
use tgrid_circuits::{TaskProof, TaskVerifier, C, D, F, NUM_PUBLIC_INPUTS};
use tgrid_sha256::CircuitBuilderSha256;

use super::{byte_bits, element_bits_be, word_bits, SubtreeProof};
use crate::error::{Error, Result};
use crate::leaves::TaskLeaf;
use crate::shape::{aggregation_config, LEAF};

/// The leaf circuit of one model (public or private task circuit). Its digest is what the
/// registry pairs with the model id.
pub struct LeafCircuit {
    task: Arc<TaskVerifier>,
    data: CircuitData<F, C, D>,
    /// The proof the leaf circuit verifies: the task proof, or the normalizer's proof.
    proof: ProofWithPublicInputsTarget<D>,
    pub(crate) normalizer: Option<Normalizer>,
}

/// For a model whose task proof takes too many rows to verify beside the leaf's hashing in the
/// leaf shape (the character GPT's 2^16-row proof: 6,900 rows), a first step that verifies the
/// task proof and re-exposes its public inputs in a small circuit; the leaf circuit verifies
/// that step's proof (its verifier data are constants of the leaf circuit, so the registered
/// leaf digest pins it). Such a task costs two recursive proofs below the chunk instead of one.
pub(crate) struct Normalizer {
    data: CircuitData<F, C, D>,
    task_proof: ProofWithPublicInputsTarget<D>,
}

/// Rows (before the constants plonky2 adds at build) from which a direct leaf circuit is
/// checked to fit the leaf shape before it is built (below, it always fits).
const DIRECT_LEAF_CHECKED_ROWS: usize = 6_500;

impl std::fmt::Debug for LeafCircuit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeafCircuit")
            .field("model_id", &hex::encode(self.task.model_id()))
            .field("digest", &hex::encode(self.digest()))
            .field("normalized", &self.normalizer.is_some())
            .finish()
    }
}

/// The leaf circuit's builder over a proof of `inner` (the task circuit or a normalizer): it
/// verifies the proof with constant verifier data and outputs the task leaf and the model id.
fn leaf_builder(inner: &VerifierCircuitData<F, C, D>) -> (CircuitBuilder<F, D>, ProofWithPublicInputsTarget<D>) {
    let mut b = CircuitBuilder::<F, D>::new(LEAF.config());
    let proof = b.add_virtual_proof_with_pis(&inner.common);
    let vd = b.constant_verifier_data(&inner.verifier_only);
    b.verify_proof::<C>(&proof, &vd, &inner.common);
    let pis = proof.public_inputs.clone();

    // leaf = sha256(0x00 ‖ task id ‖ model id ‖ input ‖ output ‖ provider); splitting the
    // words into bits also proves each is a u32.
    let mut bits = byte_bits(&mut b, 0x00);
    bits.extend(word_bits(&mut b, &pis[0..8]));
    bits.extend(word_bits(&mut b, &pis[13..21]));
    for &e in &pis[21..29] {
        bits.extend(element_bits_be(&mut b, e));
    }
    bits.extend(word_bits(&mut b, &pis[8..13]));
    debug_assert_eq!(bits.len(), 8 * TaskLeaf::PREIMAGE_LEN);
    let leaf = b.sha256_bits_gated(&bits);
    b.register_public_inputs(&leaf.words.map(|w| w.0));
    b.register_public_inputs(&pis[13..21]);
    (b, proof)
}

/// A circuit's runtime input, as part of a cache key: its digest and common data.
fn inner_key(name: &str, inner: &VerifierCircuitData<F, C, D>) -> CircuitKey {
    CircuitKey::new(name)
        .with(tgrid_circuits::hash_to_bytes(&inner.verifier_only.circuit_digest))
        .with(format!("{:?}", inner.common))
}

impl LeafCircuit {
    /// Builds the leaf circuit of the model whose task proofs `task` verifies (owned or shared
    /// with whoever checks the model's task proofs).
    pub fn new(task: impl Into<Arc<TaskVerifier>>) -> Result<Self> {
        Self::build(task.into(), false)
    }

    /// Tests only: the leaf circuit through a normalization step whatever the task circuit's
    /// size.
    #[cfg(test)]
    pub(crate) fn with_normalizer(task: impl Into<Arc<TaskVerifier>>) -> Result<Self> {
        Self::build(task.into(), true)
    }

    fn build(task: Arc<TaskVerifier>, force_normalizer: bool) -> Result<Self> {
        let inner = task.verifier_data();
        if inner.common.num_public_inputs != NUM_PUBLIC_INPUTS {
            return Err(Error::Shape("the task circuit does not expose the task public inputs".into()));
        }
        let (b, proof) = leaf_builder(inner);
        let direct =
            !force_normalizer && (b.num_gates() < DIRECT_LEAF_CHECKED_ROWS || LEAF.fits(leaf_builder(inner).0));
        let shape_error = |e| match e {
            Error::Shape(m) => Error::Shape(format!("model 0x{}: {m}", hex::encode(task.model_id()))),
            other => other,
        };
        if direct {
            let data = LEAF.build(b, inner_key("leaf", inner)).map_err(shape_error)?;
            return Ok(Self { task, data, proof, normalizer: None });
        }
        drop(b);
        let mut n = CircuitBuilder::<F, D>::new(aggregation_config());
        let task_proof = n.add_virtual_proof_with_pis(&inner.common);
        let vd = n.constant_verifier_data(&inner.verifier_only);
        n.verify_proof::<C>(&task_proof, &vd, &inner.common);
        n.register_public_inputs(&task_proof.public_inputs);
        let normalizer =
            Normalizer { data: tgrid_circuit_cache::build(&inner_key("leaf-normalizer", inner), n), task_proof };
        let normalized = normalizer.data.verifier_data();
        let (b, proof) = leaf_builder(&normalized);
        let data = LEAF.build(b, inner_key("leaf-of-normalized", &normalized)).map_err(shape_error)?;
        Ok(Self { task, data, proof, normalizer: Some(normalizer) })
    }

    /// The task-proof verifier of the model.
    pub fn task_verifier(&self) -> &TaskVerifier {
        &self.task
    }

    /// The task-proof verifier of the model, shared.
    pub fn shared_task_verifier(&self) -> Arc<TaskVerifier> {
        self.task.clone()
    }

    /// The model id (public or private task id).
    pub fn model_id(&self) -> [u8; 32] {
        self.task.model_id()
    }

    /// The digest the registry pairs with the model id.
    pub fn digest(&self) -> [u8; 32] {
        tgrid_circuits::hash_to_bytes(&self.data.verifier_only.circuit_digest)
    }

    /// Verifier data of the leaf circuit.
    pub fn verifier_data(&self) -> VerifierCircuitData<F, C, D> {
        self.data.verifier_data()
    }

    /// Checks a task proof natively (clear errors for bad submissions) and proves its leaf.
    pub fn prove(&self, proof: &TaskProof) -> Result<(tgrid_circuits::PublicInputs, SubtreeProof)> {
        let (publics, decoded) = self.task.verify_decoded(proof)?;
        let err = |e: anyhow::Error| Error::Proving(e.to_string());
        let inner = match &self.normalizer {
            None => decoded,
            Some(n) => {
                let mut pw = PartialWitness::new();
                pw.set_proof_with_pis_target(&n.task_proof, &decoded).map_err(err)?;
                crate::shape::prove_checked(&n.data, pw)?
            }
        };
        let mut pw = PartialWitness::new();
        pw.set_proof_with_pis_target(&self.proof, &inner).map_err(err)?;
        let proof = crate::shape::prove_checked(&self.data, pw)?;
        Ok((publics, SubtreeProof::leaf(proof, self.data.verifier_only.constants_sigmas_cap.clone())))
    }
}
