//! The leaf circuit: one normalized task proof of a registered model in, its task leaf out.

use plonky2::hash::hash_types::{HashOut, HashOutTarget, MerkleCapTarget};
use plonky2::hash::merkle_proofs::MerkleProofTarget;
use plonky2::hash::poseidon::PoseidonHash;
use plonky2::iop::target::{BoolTarget, Target};
use plonky2::iop::witness::{PartialWitness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitData, VerifierCircuitTarget};
use plonky2::plonk::proof::ProofWithPublicInputsTarget;
use tgrid_circuits::{C, D, F};
use tgrid_sha256::CircuitBuilderSha256;

use super::cache_key;
#[cfg(test)]
use super::prove_with_cut;
use super::{byte_bits, element_bits_be, word_bits, AggregationCircuits, SubtreeKind, SubtreeProof};
use crate::batch::TaskLeaf;
use crate::error::{Error, Result};
use crate::normalize::NormalizedProof;
use crate::registry::{Membership, Registry, REGISTRY_DEPTH};
use crate::shape::{circuit_digest_target, LEAF, NORMALIZED};

/// The leaf circuit: verifies one normalized proof of any registered model and outputs its task
/// leaf.
pub(super) struct LeafCircuit {
    pub(super) data: CircuitData<F, C, D>,
    proof: ProofWithPublicInputsTarget<D>,
    cap: MerkleCapTarget,
    registry_root: HashOutTarget,
    index_bits: Vec<BoolTarget>,
    siblings: MerkleProofTarget,
    digests: [Target; 8],
    /// The registry entry's digest in a [`LeafCut::CircuitDigest`] build (tests only).
    #[cfg_attr(not(test), allow(dead_code))]
    free_digest: Option<HashOutTarget>,
}

/// A copy constraint the leaf circuit leaves out in a malicious build (soundness tests: the
/// honest verifier must reject what a prover with such a wiring proves).
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LeafCut {
    /// The registry path's computed root is not tied to the registry root public input.
    RegistryRoot,
    /// The registry entry's circuit digest is not tied to the digest of the verified cap.
    CircuitDigest,
}

impl LeafCircuit {
    pub(super) fn build() -> Result<Self> {
        Self::build_cut(None)
    }

    fn build_cut(cut: Option<LeafCut>) -> Result<Self> {
        let common = NORMALIZED.common();
        let mut b = CircuitBuilder::<F, D>::new(LEAF.config());
        let proof = b.add_virtual_proof_with_pis(common);
        let cap = b.add_virtual_cap(common.config.fri_config.cap_height);
        let digest = circuit_digest_target(&mut b, &cap, common.degree_bits());
        let vd = VerifierCircuitTarget { constants_sigmas_cap: cap.clone(), circuit_digest: digest };
        b.verify_proof::<C>(&proof, &vd, common);
        let pis = proof.public_inputs.clone();

        // (model id, digest of the verified circuit) must be in the registry.
        let registry_root = b.add_virtual_hash();
        let index_bits: Vec<BoolTarget> = (0..REGISTRY_DEPTH).map(|_| b.add_virtual_bool_target_safe()).collect();
        let siblings = MerkleProofTarget { siblings: b.add_virtual_hashes(REGISTRY_DEPTH) };
        // A cut build checks the path with a free digest or against a free root instead (the
        // same gates, one copy constraint fewer).
        let free_digest = (cut == Some(LeafCut::CircuitDigest)).then(|| b.add_virtual_hash());
        let path_root = if cut == Some(LeafCut::RegistryRoot) { b.add_virtual_hash() } else { registry_root };
        let mut entry: Vec<Target> = pis[13..21].to_vec();
        entry.extend(free_digest.unwrap_or(digest).elements);
        b.verify_merkle_proof::<PoseidonHash>(entry, &index_bits, path_root, &siblings);

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
        b.register_public_inputs(&registry_root.elements);
        let one = b.one();
        b.register_public_input(one);
        let digests: [Target; 8] = std::array::from_fn(|_| b.add_virtual_target());
        b.register_public_inputs(&digests);
        let data = LEAF.build(b, cache_key("leaf", cut))?;
        Ok(Self { data, proof, cap, registry_root, index_bits, siblings, digests, free_digest })
    }
}

impl AggregationCircuits {
    /// Proves the leaf of one normalized proof, checking its model against `registry`.
    pub fn prove_leaf(&self, normalized: &NormalizedProof, registry: &Registry) -> Result<SubtreeProof> {
        let publics = tgrid_circuits::PublicInputs::from_fields(&normalized.proof.public_inputs)?;
        let (entry, membership) = registry.membership(&publics.model_id)?;
        let digest = tgrid_circuits::hash_to_bytes(&normalized.verifier.circuit_digest);
        if entry.normalized_digest != digest {
            return Err(Error::Registry(format!(
                "model 0x{} is registered with circuit digest 0x{}, the proof is of circuit 0x{}",
                hex::encode(publics.model_id),
                hex::encode(entry.normalized_digest),
                hex::encode(digest)
            )));
        }
        self.prove_leaf_unchecked(normalized, registry.root_hash(), &membership)
    }

    /// [`prove_leaf`](Self::prove_leaf) without the native registry check (tests aim invalid
    /// witnesses at the circuit with it).
    pub(crate) fn prove_leaf_unchecked(
        &self,
        normalized: &NormalizedProof,
        registry_root: HashOut<F>,
        membership: &Membership,
    ) -> Result<SubtreeProof> {
        let pw = self.leaf_witness(&self.leaf, normalized, registry_root, membership)?;
        let proof = crate::shape::prove_checked(&self.leaf.data, pw)?;
        Ok(SubtreeProof { proof, kind: SubtreeKind::Leaf })
    }

    fn leaf_witness(
        &self,
        c: &LeafCircuit,
        normalized: &NormalizedProof,
        registry_root: HashOut<F>,
        membership: &Membership,
    ) -> Result<PartialWitness<F>> {
        let mut pw = PartialWitness::new();
        let err = |e: anyhow::Error| Error::Proving(e.to_string());
        pw.set_proof_with_pis_target(&c.proof, &normalized.proof).map_err(err)?;
        pw.set_cap_target(&c.cap, &normalized.verifier.constants_sigmas_cap).map_err(err)?;
        pw.set_hash_target(c.registry_root, registry_root).map_err(err)?;
        for (i, &bit) in c.index_bits.iter().enumerate() {
            pw.set_bool_target(bit, membership.index >> i & 1 == 1).map_err(err)?;
        }
        for (&t, &h) in c.siblings.siblings.iter().zip(&membership.siblings) {
            pw.set_hash_target(t, h).map_err(err)?;
        }
        pw.set_target_arr(&c.digests, &self.digests()).map_err(err)?;
        Ok(pw)
    }

    /// Tests only: proves a leaf with a malicious prover wired as the `cut` build (see
    /// [`tgrid_circuits::testing::cut_copy_constraints`]), which takes `entry_digest` as the
    /// registry entry's circuit digest when the cut frees it. The proof is not checked.
    #[cfg(test)]
    pub(crate) fn prove_leaf_with_cut(
        &self,
        cut: LeafCut,
        normalized: &NormalizedProof,
        registry_root: HashOut<F>,
        membership: &Membership,
        entry_digest: HashOut<F>,
    ) -> Result<SubtreeProof> {
        let mut honest = LeafCircuit::build()?;
        let wired = LeafCircuit::build_cut(Some(cut))?;
        let mut pw = self.leaf_witness(&wired, normalized, registry_root, membership)?;
        if let Some(free) = wired.free_digest {
            pw.set_hash_target(free, entry_digest).map_err(|e| Error::Proving(e.to_string()))?;
        }
        let proof = prove_with_cut(&mut honest.data, wired.data, pw)?;
        Ok(SubtreeProof { proof, kind: SubtreeKind::Leaf })
    }
}
