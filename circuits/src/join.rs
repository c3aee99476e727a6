//! The join step of a segmented model's chain: verifies the previous proof (a segment's or a
//! join's) and the next segment's, links the first's output commitment to the second's input
//! commitment, and, as the last join, binds the task.
//!
//! A private task's joins are blinded like its segments ([`crate::zero_knowledge`]): the last
//! join is the proof a private task publishes, and its witness holds every earlier proof of the
//! chain and the salted commitments at the cuts (docs/zero-knowledge.md).

use plonky2::iop::witness::{PartialWitness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitData, VerifierCircuitData};
use plonky2::plonk::proof::{ProofWithPublicInputs, ProofWithPublicInputsTarget};
use tgrid_int8::{Privacy, QuantModel};

use crate::circuit::{join_config, model_id_words, prove_circuit, set_binding, BindingTargets};
use crate::error::{Error, Result};
use crate::zero_knowledge;
#[cfg(test)]
use crate::zero_knowledge::BlindingRows;
use crate::{C, D, F};

/// A proof with the data needed to verify it recursively.
pub(crate) struct Proven {
    pub(crate) proof: ProofWithPublicInputs<F, C, D>,
    pub(crate) verifier: VerifierCircuitData<F, C, D>,
}

/// A join step of the chain.
pub(crate) struct JoinCircuit {
    pub(crate) data: CircuitData<F, C, D>,
    pub(crate) prev: ProofWithPublicInputsTarget<D>,
    pub(crate) seg: ProofWithPublicInputsTarget<D>,
    pub(crate) binding: Option<BindingTargets>,
    /// Tests only: a private join's blinding rows.
    #[cfg(test)]
    pub(crate) blinding: Option<BlindingRows>,
}

impl JoinCircuit {
    pub(crate) fn build(
        model: &QuantModel,
        prev: &VerifierCircuitData<F, C, D>,
        seg: &VerifierCircuitData<F, C, D>,
        last: bool,
        privacy: Privacy,
    ) -> Result<Self> {
        Self::build_linked(model, prev, seg, last, privacy, true)
    }

    /// [`Self::build`]; only soundness tests leave out the link (`link = false`), to give a
    /// malicious prover the partition of a join without it.
    pub(crate) fn build_linked(
        model: &QuantModel,
        prev: &VerifierCircuitData<F, C, D>,
        seg: &VerifierCircuitData<F, C, D>,
        last: bool,
        privacy: Privacy,
        link: bool,
    ) -> Result<Self> {
        let mut builder = CircuitBuilder::<F, D>::new(join_config());
        let prev_t = builder.add_virtual_proof_with_pis(&prev.common);
        let prev_vd = builder.constant_verifier_data(&prev.verifier_only);
        builder.verify_proof::<C>(&prev_t, &prev_vd, &prev.common);
        let seg_t = builder.add_virtual_proof_with_pis(&seg.common);
        let seg_vd = builder.constant_verifier_data(&seg.verifier_only);
        builder.verify_proof::<C>(&seg_t, &seg_vd, &seg.common);
        // Both children expose [in (4), out (4)] (a join that is not the last one does too).
        let (p, s) = (&prev_t.public_inputs, &seg_t.public_inputs);
        if p.len() != 8 || s.len() != 8 {
            return Err(Error::InvalidModel("segment proofs must expose two commitments".into()));
        }
        for j in (0..4).filter(|_| link) {
            builder.connect(p[4 + j], s[j]);
        }
        let binding = if last {
            let task_id: [_; 8] = std::array::from_fn(|_| builder.add_virtual_public_input());
            let provider: [_; 5] = std::array::from_fn(|_| builder.add_virtual_public_input());
            for w in model_id_words(model, privacy) {
                let c = builder.constant(w);
                builder.register_public_input(c);
            }
            Some(BindingTargets { task_id, provider })
        } else {
            None
        };
        builder.register_public_inputs(&p[0..4]);
        builder.register_public_inputs(&s[4..8]);
        let blinding = privacy.zero_knowledge().then(|| {
            // Widened only now: plonky2's recursion gates (`ReducingExtensionGate`) size
            // themselves to the configuration's width when placed, and must leave the masking
            // columns to the quotient-masking row.
            builder.config = zero_knowledge::private_config(builder.config.clone());
            zero_knowledge::blind(&mut builder)
        });
        let mut data = builder.build::<C>();
        if let Some(rows) = &blinding {
            zero_knowledge::mark_zero_knowledge(&mut data, rows)?;
        }
        Ok(Self {
            data,
            prev: prev_t,
            seg: seg_t,
            binding,
            #[cfg(test)]
            blinding,
        })
    }

    pub(crate) fn prove(&self, prev: &Proven, seg: &Proven, task: Option<(&[u8; 32], &[u8; 20])>) -> Result<Proven> {
        let proof = prove_circuit(&self.data, self.witness(prev, seg, task)?)?;
        Ok(Proven { proof, verifier: self.data.verifier_data() })
    }

    /// The join's whole witness: its two children's proofs and, for the last join, the task
    /// binding (public). Nothing of the task's input or activations comes in any other way.
    pub(crate) fn witness(
        &self,
        prev: &Proven,
        seg: &Proven,
        task: Option<(&[u8; 32], &[u8; 20])>,
    ) -> Result<PartialWitness<F>> {
        let mut pw = PartialWitness::new();
        let err = |e: anyhow::Error| Error::Proving(e.to_string());
        pw.set_proof_with_pis_target(&self.prev, &prev.proof).map_err(err)?;
        pw.set_proof_with_pis_target(&self.seg, &seg.proof).map_err(err)?;
        if let (Some(b), Some((task_id, provider))) = (&self.binding, task) {
            set_binding(&mut pw, b, task_id, provider)?;
        }
        Ok(pw)
    }
}
