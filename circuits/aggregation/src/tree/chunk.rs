//! The chunk circuit: one to four consecutive leaf proofs in, the RFC 6962 root over them out.

use plonky2::iop::target::{BoolTarget, Target};
use plonky2::iop::witness::{PartialWitness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitData, VerifierOnlyCircuitData};
use plonky2::plonk::proof::ProofWithPublicInputsTarget;
use tgrid_circuits::{C, D, F};

use super::cache_key;
#[cfg(test)]
use super::prove_with_cut;
use super::{
    node_words, same_registry_root, select_words, AggregationCircuits, SubtreeKind, SubtreeProof, CHUNK_LEAVES,
};
use crate::error::{Error, Result};
use crate::shape::{aggregation_config, AGGREGATION, LEAF};

/// The chunk circuit: verifies [`CHUNK_LEAVES`] leaf proofs and outputs the RFC 6962 root over
/// the first one to four of them (the unused slots hold copies of the last leaf and are
/// ignored).
pub(super) struct ChunkCircuit {
    pub(super) data: CircuitData<F, C, D>,
    leaves: [ProofWithPublicInputsTarget<D>; CHUNK_LEAVES],
    /// `holds[i]`: slot `i + 1` belongs to the chunk (slot 0 always does).
    holds: [BoolTarget; CHUNK_LEAVES - 1],
    digests: [Target; 8],
}

/// A copy constraint the chunk circuit leaves out in a malicious build (soundness tests).
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChunkCut {
    /// The last slot's registry root is not tied to the first slot's.
    LastRegistryRoot,
    /// A slot may belong to the chunk while the slot before it does not.
    SlotOrder,
}

impl ChunkCircuit {
    pub(super) fn build(leaf: &VerifierOnlyCircuitData<C, D>) -> Result<Self> {
        Self::build_cut(leaf, None)
    }

    fn build_cut(leaf: &VerifierOnlyCircuitData<C, D>, cut: Option<ChunkCut>) -> Result<Self> {
        let common = LEAF.common();
        let mut b = CircuitBuilder::<F, D>::new(aggregation_config());
        let vd = b.constant_verifier_data(leaf);
        let leaves = [(); CHUNK_LEAVES].map(|_| {
            let proof = b.add_virtual_proof_with_pis(common);
            b.verify_proof::<C>(&proof, &vd, common);
            proof
        });
        let pis: Vec<&[Target]> = leaves.iter().map(|l| l.public_inputs.as_slice()).collect();
        for (slot, leaf) in pis.iter().enumerate().skip(1) {
            if cut == Some(ChunkCut::LastRegistryRoot) && slot == CHUNK_LEAVES - 1 {
                continue;
            }
            for j in 8..12 {
                b.connect(pis[0][j], leaf[j]);
            }
        }
        let holds = [(); CHUNK_LEAVES - 1].map(|_| b.add_virtual_bool_target_safe());
        // The chunk's slots are a prefix: one encoding per leaf count.
        for pair in holds.windows(2) {
            let stray = b.mul_sub(pair[0].target, pair[1].target, pair[1].target);
            if cut != Some(ChunkCut::SlotOrder) {
                b.assert_zero(stray);
            }
        }

        let ab = node_words(&mut b, &pis[0][0..8], &pis[1][0..8]);
        let cd = node_words(&mut b, &pis[2][0..8], &pis[3][0..8]);
        // Three leaves: node(node(a, b), c); four: node(node(a, b), node(c, d)).
        let right = select_words(&mut b, holds[2], &cd, &pis[2][0..8]);
        let top = node_words(&mut b, &ab, &right);
        let below = select_words(&mut b, holds[0], &ab, &pis[0][0..8]);
        let root = select_words(&mut b, holds[1], &top, &below);
        let mut count = pis[0][12];
        for (hold, leaf) in holds.iter().zip(&pis[1..]) {
            count = b.mul_add(hold.target, leaf[12], count);
        }

        b.register_public_inputs(&root);
        b.register_public_inputs(&pis[0][8..12]);
        b.register_public_input(count);
        let digests: [Target; 8] = std::array::from_fn(|_| b.add_virtual_target());
        b.register_public_inputs(&digests);
        let data =
            AGGREGATION.build(b, cache_key("chunk", cut).with(tgrid_circuits::hash_to_bytes(&leaf.circuit_digest)))?;
        Ok(Self { data, leaves, holds, digests })
    }
}

impl AggregationCircuits {
    /// Proves the chunk over one to [`CHUNK_LEAVES`] consecutive leaf proofs (in task order),
    /// all under one registry root.
    pub fn prove_chunk(&self, leaves: &[SubtreeProof]) -> Result<SubtreeProof> {
        same_registry_root(leaves.iter())?;
        let holds = std::array::from_fn(|i| i + 1 < leaves.len());
        let pw = self.chunk_witness(&self.chunk, leaves, holds)?;
        let proof = crate::shape::prove_checked(&self.chunk.data, pw)?;
        Ok(SubtreeProof { proof, kind: SubtreeKind::Chunk })
    }

    /// The witness of chunk circuit `c` over `leaves` with the slot bits `holds` (raw, so that
    /// tests can set bits no leaf count has).
    fn chunk_witness(
        &self,
        c: &ChunkCircuit,
        leaves: &[SubtreeProof],
        holds: [bool; CHUNK_LEAVES - 1],
    ) -> Result<PartialWitness<F>> {
        if leaves.is_empty() || leaves.len() > CHUNK_LEAVES {
            return Err(Error::InvalidBatch(format!("a chunk holds 1 to {CHUNK_LEAVES} leaves, not {}", leaves.len())));
        }
        if let Some(other) = leaves.iter().find(|l| l.kind != SubtreeKind::Leaf) {
            return Err(Error::InvalidBatch(format!(
                "a chunk's children are leaf proofs, not a {} proof",
                other.kind.name()
            )));
        }
        let mut pw = PartialWitness::new();
        let err = |e: anyhow::Error| Error::Proving(e.to_string());
        let last = &leaves[leaves.len() - 1];
        for (slot, target) in c.leaves.iter().enumerate() {
            pw.set_proof_with_pis_target(target, &leaves.get(slot).unwrap_or(last).proof).map_err(err)?;
        }
        for (&target, hold) in c.holds.iter().zip(holds) {
            pw.set_bool_target(target, hold).map_err(err)?;
        }
        pw.set_target_arr(&c.digests, &self.digests()).map_err(err)?;
        Ok(pw)
    }

    /// Tests only: proves a chunk with a malicious prover wired as the `cut` build, with the raw
    /// slot bits `holds`. The proof is not checked.
    #[cfg(test)]
    pub(crate) fn prove_chunk_with_cut(
        &self,
        cut: ChunkCut,
        leaves: &[SubtreeProof],
        holds: [bool; CHUNK_LEAVES - 1],
    ) -> Result<SubtreeProof> {
        let mut honest = ChunkCircuit::build(&self.leaf.data.verifier_only)?;
        let wired = ChunkCircuit::build_cut(&self.leaf.data.verifier_only, Some(cut))?;
        let pw = self.chunk_witness(&wired, leaves, holds)?;
        assert_eq!(honest.data.verifier_only.circuit_digest, self.chunk.data.verifier_only.circuit_digest);
        let proof = prove_with_cut(&mut honest.data, wired.data, pw)?;
        Ok(SubtreeProof { proof, kind: SubtreeKind::Chunk })
    }
}
