//! The chunk circuit: one to four consecutive leaf proofs of registered models in, the RFC 6962
//! root over them out.

use plonky2::hash::hash_types::{HashOut, HashOutTarget, MerkleCapTarget};
use plonky2::hash::merkle_proofs::MerkleProofTarget;
use plonky2::hash::poseidon::PoseidonHash;
use plonky2::iop::target::{BoolTarget, Target};
use plonky2::iop::witness::{PartialWitness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitData, VerifierCircuitTarget};
use plonky2::plonk::proof::ProofWithPublicInputsTarget;
use tgrid_circuits::{C, D, F};

use super::cache_key;
#[cfg(test)]
use super::prove_with_cut;
use super::{node_words, select_words, AggregationCircuits, SubtreeKind, SubtreeProof, CHUNK_LEAVES};
use crate::error::{Error, Result};
use crate::registry::{Membership, Registry, REGISTRY_DEPTH};
use crate::shape::{aggregation_config, circuit_digest_target, AGGREGATION, LEAF};

/// One leaf slot of the chunk circuit: the leaf proof, its circuit's constants cap (the digest
/// is derived from it) and the registry path of `(model id, digest)`.
struct LeafSlot {
    proof: ProofWithPublicInputsTarget<D>,
    cap: MerkleCapTarget,
    index_bits: Vec<BoolTarget>,
    siblings: MerkleProofTarget,
    /// The registry entry's digest in a [`ChunkCut::CircuitDigest`] build (tests only).
    #[cfg_attr(not(test), allow(dead_code))]
    free_digest: Option<HashOutTarget>,
}

/// The chunk circuit: verifies [`CHUNK_LEAVES`] leaf proofs, each against the leaf circuit the
/// registry lists for its model, and outputs the RFC 6962 root over the first one to four of
/// them (the unused slots hold copies of the last leaf and are ignored).
pub(super) struct ChunkCircuit {
    pub(super) data: CircuitData<F, C, D>,
    slots: [LeafSlot; CHUNK_LEAVES],
    registry_root: HashOutTarget,
    /// `holds[i]`: slot `i + 1` belongs to the chunk (slot 0 always does).
    holds: [BoolTarget; CHUNK_LEAVES - 1],
    digests: [Target; 8],
}

/// A copy constraint the chunk circuit leaves out in a malicious build (soundness tests: the
/// honest verifier must reject what a prover with such a wiring proves).
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChunkCut {
    /// The last slot's registry path is checked against a free root, not the registry root.
    RegistryRoot,
    /// The last slot's registry entry names a free digest, not the one of the verified cap.
    CircuitDigest,
    /// A slot may belong to the chunk while the slot before it does not.
    SlotOrder,
}

impl ChunkCircuit {
    pub(super) fn build() -> Result<Self> {
        Self::build_cut(None)
    }

    fn build_cut(cut: Option<ChunkCut>) -> Result<Self> {
        let common = LEAF.common();
        let mut b = CircuitBuilder::<F, D>::new(aggregation_config());
        let registry_root = b.add_virtual_hash();
        let slots = std::array::from_fn(|slot| {
            let last = slot == CHUNK_LEAVES - 1;
            let proof = b.add_virtual_proof_with_pis(common);
            // The digest is derived from the cap: a digest taken as its own witness would let a
            // prover pair a registered digest with any circuit's cap.
            let cap = b.add_virtual_cap(common.config.fri_config.cap_height);
            let digest = circuit_digest_target(&mut b, &cap, common.degree_bits());
            let vd = VerifierCircuitTarget { constants_sigmas_cap: cap.clone(), circuit_digest: digest };
            b.verify_proof::<C>(&proof, &vd, common);

            // (model id, leaf circuit digest) must be in the registry. A cut build checks the
            // last slot's path with a free digest or against a free root instead (the same
            // gates, one copy constraint fewer).
            let index_bits: Vec<BoolTarget> = (0..REGISTRY_DEPTH).map(|_| b.add_virtual_bool_target_safe()).collect();
            let siblings = MerkleProofTarget { siblings: b.add_virtual_hashes(REGISTRY_DEPTH) };
            let free_digest = (last && cut == Some(ChunkCut::CircuitDigest)).then(|| b.add_virtual_hash());
            let path_root =
                if last && cut == Some(ChunkCut::RegistryRoot) { b.add_virtual_hash() } else { registry_root };
            let mut entry: Vec<Target> = proof.public_inputs[8..16].to_vec();
            entry.extend(free_digest.unwrap_or(digest).elements);
            b.verify_merkle_proof::<PoseidonHash>(entry, &index_bits, path_root, &siblings);
            LeafSlot { proof, cap, index_bits, siblings, free_digest }
        });
        let holds = [(); CHUNK_LEAVES - 1].map(|_| b.add_virtual_bool_target_safe());
        // The chunk's slots are a prefix: one encoding per leaf count.
        for pair in holds.windows(2) {
            let stray = b.mul_sub(pair[0].target, pair[1].target, pair[1].target);
            if cut != Some(ChunkCut::SlotOrder) {
                b.assert_zero(stray);
            }
        }

        let leaf = |slot: usize| slots[slot].proof.public_inputs[0..8].to_vec();
        let ab = node_words(&mut b, &leaf(0), &leaf(1));
        let cd = node_words(&mut b, &leaf(2), &leaf(3));
        // Three leaves: node(node(a, b), c); four: node(node(a, b), node(c, d)).
        let right = select_words(&mut b, holds[2], &cd, &leaf(2));
        let top = node_words(&mut b, &ab, &right);
        let below = select_words(&mut b, holds[0], &ab, &leaf(0));
        let root = select_words(&mut b, holds[1], &top, &below);
        let mut count = b.one();
        for hold in holds {
            count = b.add(count, hold.target);
        }

        b.register_public_inputs(&root);
        b.register_public_inputs(&registry_root.elements);
        b.register_public_input(count);
        let digests: [Target; 8] = std::array::from_fn(|_| b.add_virtual_target());
        b.register_public_inputs(&digests);
        let data = AGGREGATION.build(b, cache_key("chunk", cut))?;
        Ok(Self { data, slots, registry_root, holds, digests })
    }
}

impl AggregationCircuits {
    /// Proves the chunk over one to [`CHUNK_LEAVES`] consecutive leaf proofs (in task order)
    /// of models `registry` lists with these leaf circuits.
    pub fn prove_chunk(&self, leaves: &[SubtreeProof], registry: &Registry) -> Result<SubtreeProof> {
        let memberships = leaves.iter().map(|leaf| registered_leaf(leaf, registry)).collect::<Result<Vec<_>>>()?;
        let holds = std::array::from_fn(|i| i + 1 < leaves.len());
        let pw = self.chunk_witness(&self.chunk, leaves, &memberships, registry.root_hash(), holds)?;
        let proof = crate::shape::prove_checked(&self.chunk.data, pw)?;
        Ok(SubtreeProof::node(proof, SubtreeKind::Chunk))
    }

    /// The witness of chunk circuit `c` over `leaves` with their registry paths under
    /// `registry_root` and the slot bits `holds` (raw, so that tests can set bits no leaf count
    /// has).
    fn chunk_witness(
        &self,
        c: &ChunkCircuit,
        leaves: &[SubtreeProof],
        memberships: &[Membership],
        registry_root: HashOut<F>,
        holds: [bool; CHUNK_LEAVES - 1],
    ) -> Result<PartialWitness<F>> {
        if leaves.is_empty() || leaves.len() > CHUNK_LEAVES || memberships.len() != leaves.len() {
            return Err(Error::InvalidBatch(format!("a chunk holds 1 to {CHUNK_LEAVES} leaves, not {}", leaves.len())));
        }
        let mut pw = PartialWitness::new();
        let err = |e: anyhow::Error| Error::Proving(e.to_string());
        pw.set_hash_target(c.registry_root, registry_root).map_err(err)?;
        let last = leaves.len() - 1;
        for (i, slot) in c.slots.iter().enumerate() {
            let (leaf, membership) = (&leaves[i.min(last)], &memberships[i.min(last)]);
            let cap = leaf.leaf_circuit().ok_or_else(|| {
                Error::InvalidBatch(format!("a chunk's children are leaf proofs, not a {} proof", leaf.kind.name()))
            })?;
            pw.set_proof_with_pis_target(&slot.proof, &leaf.proof).map_err(err)?;
            pw.set_cap_target(&slot.cap, cap).map_err(err)?;
            for (d, &bit) in slot.index_bits.iter().enumerate() {
                pw.set_bool_target(bit, membership.index >> d & 1 == 1).map_err(err)?;
            }
            for (&t, &h) in slot.siblings.siblings.iter().zip(&membership.siblings) {
                pw.set_hash_target(t, h).map_err(err)?;
            }
        }
        for (&target, hold) in c.holds.iter().zip(holds) {
            pw.set_bool_target(target, hold).map_err(err)?;
        }
        pw.set_target_arr(&c.digests, &self.digests()).map_err(err)?;
        Ok(pw)
    }

    /// Tests only: [`prove_chunk`](Self::prove_chunk) with the given registry paths and root,
    /// without the native registry check (tests aim invalid witnesses at the circuit with it).
    #[cfg(test)]
    pub(crate) fn prove_chunk_unchecked(
        &self,
        leaves: &[SubtreeProof],
        memberships: &[Membership],
        registry_root: HashOut<F>,
    ) -> Result<SubtreeProof> {
        let holds = std::array::from_fn(|i| i + 1 < leaves.len());
        let pw = self.chunk_witness(&self.chunk, leaves, memberships, registry_root, holds)?;
        let proof = crate::shape::prove_checked(&self.chunk.data, pw)?;
        Ok(SubtreeProof::node(proof, SubtreeKind::Chunk))
    }

    /// Tests only: proves a chunk with a malicious prover wired as the `cut` build, with the
    /// given registry paths and root, the raw slot bits `holds` and, where the cut frees it,
    /// `entry_digest` as the last slot's registry entry digest. The proof is not checked.
    #[cfg(test)]
    pub(crate) fn prove_chunk_with_cut(
        &self,
        cut: ChunkCut,
        leaves: &[SubtreeProof],
        memberships: &[Membership],
        registry_root: HashOut<F>,
        holds: [bool; CHUNK_LEAVES - 1],
        entry_digest: Option<HashOut<F>>,
    ) -> Result<SubtreeProof> {
        let mut honest = ChunkCircuit::build()?;
        let wired = ChunkCircuit::build_cut(Some(cut))?;
        let mut pw = self.chunk_witness(&wired, leaves, memberships, registry_root, holds)?;
        if let (Some(free), Some(digest)) = (wired.slots[CHUNK_LEAVES - 1].free_digest, entry_digest) {
            pw.set_hash_target(free, digest).map_err(|e| Error::Proving(e.to_string()))?;
        }
        assert_eq!(honest.data.verifier_only.circuit_digest, self.chunk.data.verifier_only.circuit_digest);
        let proof = prove_with_cut(&mut honest.data, wired.data, pw)?;
        Ok(SubtreeProof::node(proof, SubtreeKind::Chunk))
    }
}

/// The registry path of a leaf proof's model, after checking natively what the chunk circuit
/// checks (a clear error rather than an unsatisfiable witness): the leaf circuit is the one the
/// registry lists for the model.
pub(crate) fn registered_leaf(leaf: &SubtreeProof, registry: &Registry) -> Result<Membership> {
    let digest = leaf.leaf_circuit_digest().ok_or_else(|| {
        Error::InvalidBatch(format!("a chunk's children are leaf proofs, not a {} proof", leaf.kind.name()))
    })?;
    let publics = leaf.leaf_public_inputs()?;
    let (entry, membership) = registry.membership(&publics.model_id)?;
    if entry.leaf_digest != digest {
        return Err(Error::Registry(format!(
            "model 0x{} is registered with leaf circuit 0x{}, the leaf proof is of circuit 0x{}",
            hex::encode(publics.model_id),
            hex::encode(entry.leaf_digest),
            hex::encode(digest)
        )));
    }
    Ok(membership)
}
