//! Leaf, chunk and merge circuits.
//!
//! A leaf proof ([`LEAF`] shape) proves one task's leaf. A chunk proof verifies one to four
//! consecutive leaf proofs and proves the RFC 6962 root over them; merge proofs verify chunk or
//! merge proofs and prove the nodes above. Chunks and merges share the [`AGGREGATION`] shape and
//! public inputs, so a merge circuit verifies either kind of child with the child's verifier data
//! as a witness; leaves have the same public inputs:
//!
//! | index | content |
//! | --- | --- |
//! | 0..8 | subtree root (SHA-256, 8 big-endian u32 words): a task leaf or an RFC 6962 node |
//! | 8..12 | registry root (4 Goldilocks elements) |
//! | 12 | number of tasks under the subtree |
//! | 13..17 | circuit digest of the chunk circuit |
//! | 17..21 | circuit digest of the merge circuit |
//!
//! A chunk circuit verifies its leaves against the leaf circuit's verifier data, a constant. A
//! merge circuit accepts a child only if the digest it derives from the child's constants cap is
//! one of the two digests in its own public inputs, and the child carries the same two digests
//! and the same registry root. Whoever checks the root proof checks that the two digests are
//! the real ones ([`AggregationCircuits::verify_root`]); by induction every proof in the tree is
//! then a genuine chunk or merge proof. The digests travel as public inputs rather than constants
//! because the merge circuit cannot contain its own digest.
//!
//! Why chunks: four leaves verified by one 2^14-row proof instead of three merges of two. A leaf
//! proven at FRI rate 1/16 ([`crate::shape::leaf_config`]) takes 3,510 rows to verify against
//! 4,230 at rate 1/8, so four fit; a 64-task batch takes 16 chunk and 10 merge proofs instead of
//! 42 merges (docs/BENCHMARKS.md).

use plonky2::field::types::Field;
use plonky2::hash::hash_types::{HashOut, HashOutTarget, MerkleCapTarget};
use plonky2::hash::merkle_proofs::MerkleProofTarget;
use plonky2::hash::poseidon::PoseidonHash;
use plonky2::iop::target::{BoolTarget, Target};
use plonky2::iop::witness::{PartialWitness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitData, VerifierCircuitTarget, VerifierOnlyCircuitData};
use plonky2::plonk::proof::{ProofWithPublicInputs, ProofWithPublicInputsTarget};
use tgrid_circuits::{C, D, F};
use tgrid_sha256::{CircuitBuilderSha256, U32Target};

use crate::batch::{AggregationPublicInputs, TaskLeaf};
use crate::error::{Error, Result};
use crate::normalize::NormalizedProof;
use crate::registry::{Membership, Registry, REGISTRY_DEPTH};
use crate::shape::{aggregation_config, circuit_digest_target, AGGREGATION, LEAF, NORMALIZED};

/// Number of public inputs of leaf, chunk and merge proofs.
pub const NUM_AGGREGATION_PUBLIC_INPUTS: usize = 21;

/// Most leaves one chunk proof covers: the batch tree's tasks `4i..4i+4` form chunk `i` (the
/// last chunk may hold fewer), and the RFC 6962 tree of the tasks is the tree of the chunks'
/// roots, since every split of a tree over more than four tasks is at a multiple of four.
pub const CHUNK_LEAVES: usize = 4;

/// Which circuit produced a [`SubtreeProof`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SubtreeKind {
    /// A task's leaf ([`LEAF`] shape): only a chunk verifies it.
    Leaf,
    /// One to [`CHUNK_LEAVES`] leaves ([`AGGREGATION`] shape).
    Chunk,
    /// A node over chunks or merges ([`AGGREGATION`] shape).
    Merge,
}

impl SubtreeKind {
    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Leaf => "leaf",
            Self::Chunk => "chunk",
            Self::Merge => "merge",
        }
    }
}

/// A leaf, chunk or merge proof.
#[derive(Clone, Debug)]
pub struct SubtreeProof {
    /// The plonky2 proof (public inputs as in the module table).
    pub proof: ProofWithPublicInputs<F, C, D>,
    /// The circuit that produced it.
    pub kind: SubtreeKind,
}

impl SubtreeProof {
    /// The decoded public inputs.
    pub fn public_inputs(&self) -> Result<AggregationPublicInputs> {
        AggregationPublicInputs::from_fields(&self.proof.public_inputs)
    }
}

/// The 64 bits of a canonical Goldilocks element, most significant first. Splits the element
/// into two u32 halves and rejects the non-canonical encoding `x + p` (possible for
/// `x < 2^32 - 1`): the high half may be `2^32 - 1` only when the low half is zero.
pub fn element_bits_be(builder: &mut CircuitBuilder<F, D>, x: Target) -> Vec<BoolTarget> {
    let (lo, hi) = builder.split_low_high(x, 32, 64);
    canonical_halves_bits_be(builder, lo, hi)
}

/// The canonicity check and bits of [`element_bits_be`], given halves already tied to the
/// element (`x = lo + 2^32 hi`, each half a u32).
pub(crate) fn canonical_halves_bits_be(builder: &mut CircuitBuilder<F, D>, lo: Target, hi: Target) -> Vec<BoolTarget> {
    let max = builder.constant(F::from_canonical_u32(u32::MAX));
    let hi_is_max = builder.is_equal(hi, max);
    let must_be_zero = builder.mul(hi_is_max.target, lo);
    builder.assert_zero(must_be_zero);
    let mut bits = builder.split_u32_be(U32Target(hi)).to_vec();
    bits.extend(builder.split_u32_be(U32Target(lo)));
    bits
}

fn word_bits(builder: &mut CircuitBuilder<F, D>, words: &[Target]) -> Vec<BoolTarget> {
    words.iter().flat_map(|&w| builder.split_u32_be(U32Target(w))).collect()
}

fn byte_bits(builder: &mut CircuitBuilder<F, D>, byte: u8) -> Vec<BoolTarget> {
    (0..8).rev().map(|i| builder.constant_bool(byte >> i & 1 == 1)).collect()
}

/// The leaf circuit: verifies one normalized proof of any registered model and outputs its task
/// leaf.
struct LeafCircuit {
    data: CircuitData<F, C, D>,
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
    fn build() -> Result<Self> {
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
        let data = LEAF.build(b)?;
        Ok(Self { data, proof, cap, registry_root, index_bits, siblings, digests, free_digest })
    }
}

/// The chunk circuit: verifies [`CHUNK_LEAVES`] leaf proofs and outputs the RFC 6962 root over
/// the first one to four of them (the unused slots hold copies of the last leaf and are
/// ignored).
struct ChunkCircuit {
    data: CircuitData<F, C, D>,
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
    fn build(leaf: &VerifierOnlyCircuitData<C, D>) -> Result<Self> {
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
        let data = AGGREGATION.build(b)?;
        Ok(Self { data, leaves, holds, digests })
    }
}

/// One child slot of the merge circuit (a chunk or merge proof).
struct ChildTargets {
    proof: ProofWithPublicInputsTarget<D>,
    cap: MerkleCapTarget,
    is_merge: BoolTarget,
}

/// Which RFC 6962 nodes a merge proves over its children `a`, `b`, `c` (in task order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeShape {
    /// `node(a, b)`; the third slot holds a copy of `b` and is ignored.
    Pair,
    /// `node(node(a, b), c)`: the left child is a node over two proofs.
    LeftDeep,
    /// `node(a, node(b, c))`: the right child is a node over two proofs.
    RightDeep,
}

/// The merge circuit: verifies three chunk or merge proofs and outputs the RFC 6962 node of two
/// of them or of all three (see [`MergeShape`]). Proving two tree levels in one proof where the
/// tree allows it cuts a 64-task tree from 63 merge proofs to 42 (docs/BENCHMARKS.md).
struct MergeCircuit {
    data: CircuitData<F, C, D>,
    children: [ChildTargets; 3],
    /// Two levels (`LeftDeep` or `RightDeep`) rather than `Pair`.
    deep: BoolTarget,
    /// `RightDeep` (only with `deep`).
    right_deep: BoolTarget,
    digests: [Target; 8],
}

/// `sha256(0x01 ‖ left ‖ right)` of two subtree roots given as 8 words each.
fn node_words(b: &mut CircuitBuilder<F, D>, left: &[Target], right: &[Target]) -> Vec<Target> {
    let mut bits = byte_bits(b, 0x01);
    bits.extend(word_bits(b, left));
    bits.extend(word_bits(b, right));
    b.sha256_bits_gated(&bits).words.map(|w| w.0).to_vec()
}

fn select_words(b: &mut CircuitBuilder<F, D>, condition: BoolTarget, x: &[Target], y: &[Target]) -> Vec<Target> {
    x.iter().zip(y).map(|(&x, &y)| b.select(condition, x, y)).collect()
}

/// A copy constraint the merge circuit leaves out in a malicious build (soundness tests).
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MergeCut {
    /// The third child's registry root is not tied to the first child's.
    ThirdRegistryRoot,
    /// `right_deep` is allowed without `deep`.
    ShapeEncoding,
}

impl MergeCircuit {
    fn build() -> Result<Self> {
        Self::build_cut(None)
    }

    fn build_cut(cut: Option<MergeCut>) -> Result<Self> {
        let common = AGGREGATION.common();
        let mut b = CircuitBuilder::<F, D>::new(aggregation_config());
        let digests: [Target; 8] = std::array::from_fn(|_| b.add_virtual_target());
        let children = [(); 3].map(|_| {
            let proof = b.add_virtual_proof_with_pis(common);
            let cap = b.add_virtual_cap(common.config.fri_config.cap_height);
            let digest = circuit_digest_target(&mut b, &cap, common.degree_bits());
            let is_merge = b.add_virtual_bool_target_safe();
            for j in 0..4 {
                let allowed = b.select(is_merge, digests[4 + j], digests[j]);
                b.connect(digest.elements[j], allowed);
            }
            let vd = VerifierCircuitTarget { constants_sigmas_cap: cap.clone(), circuit_digest: digest };
            b.verify_proof::<C>(&proof, &vd, common);
            for (&child, &own) in proof.public_inputs[13..21].iter().zip(&digests) {
                b.connect(child, own);
            }
            ChildTargets { proof, cap, is_merge }
        });
        let [a, bb, c] = [0, 1, 2].map(|i| children[i].proof.public_inputs.clone());
        for j in 8..12 {
            b.connect(a[j], bb[j]);
            if cut != Some(MergeCut::ThirdRegistryRoot) {
                b.connect(a[j], c[j]);
            }
        }
        let deep = b.add_virtual_bool_target_safe();
        let right_deep = b.add_virtual_bool_target_safe();
        // `right_deep` only with `deep`: one encoding per shape.
        let stray = b.mul_sub(deep.target, right_deep.target, right_deep.target);
        if cut != Some(MergeCut::ShapeEncoding) {
            b.assert_zero(stray);
        }

        // First node: node(b, c) right-deep, node(a, b) otherwise.
        let left = select_words(&mut b, right_deep, &bb[0..8], &a[0..8]);
        let right = select_words(&mut b, right_deep, &c[0..8], &bb[0..8]);
        let first = node_words(&mut b, &left, &right);
        // Second node: node(a, first) right-deep, node(first, c) left-deep.
        let left = select_words(&mut b, right_deep, &a[0..8], &first);
        let right = select_words(&mut b, right_deep, &first, &c[0..8]);
        let second = node_words(&mut b, &left, &right);
        let root = select_words(&mut b, deep, &second, &first);
        let pair_count = b.add(a[12], bb[12]);
        let count = b.mul_add(deep.target, c[12], pair_count);

        b.register_public_inputs(&root);
        b.register_public_inputs(&a[8..12]);
        b.register_public_input(count);
        b.register_public_inputs(&digests);
        let data = AGGREGATION.build(b)?;
        Ok(Self { data, children, deep, right_deep, digests })
    }
}

/// The leaf, chunk and merge circuits, built once (a few seconds) and reused for every batch.
pub struct AggregationCircuits {
    leaf: LeafCircuit,
    chunk: ChunkCircuit,
    merge: MergeCircuit,
}

impl std::fmt::Debug for AggregationCircuits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AggregationCircuits")
            .field("leaf_digest", &hex::encode(self.leaf_digest_bytes()))
            .field("chunk_digest", &hex::encode(self.chunk_digest_bytes()))
            .field("merge_digest", &hex::encode(self.merge_digest_bytes()))
            .finish()
    }
}

impl AggregationCircuits {
    /// Builds the three circuits, the merge beside the leaf and chunk: much of a build is
    /// sequential (gates, permutation), and the chunk circuit needs the leaf's verifier data.
    pub fn build() -> Result<Self> {
        let (leaf_and_chunk, merge) = std::thread::scope(|scope| {
            let merge = scope.spawn(MergeCircuit::build);
            let leaf_and_chunk = LeafCircuit::build().and_then(|leaf| {
                let chunk = ChunkCircuit::build(&leaf.data.verifier_only)?;
                Ok((leaf, chunk))
            });
            (leaf_and_chunk, merge.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
        });
        let (leaf, chunk) = leaf_and_chunk?;
        Ok(Self { leaf, chunk, merge: merge? })
    }

    /// The chunk circuit digest (4 elements) then the merge circuit digest (4 elements), as the
    /// public inputs 13..21 of every genuine leaf, chunk or merge proof carry them.
    pub fn digests(&self) -> [F; 8] {
        let c = self.chunk.data.verifier_only.circuit_digest.elements;
        let m = self.merge.data.verifier_only.circuit_digest.elements;
        std::array::from_fn(|i| if i < 4 { c[i] } else { m[i - 4] })
    }

    /// Digest of the leaf circuit.
    pub fn leaf_digest_bytes(&self) -> [u8; 32] {
        tgrid_circuits::hash_to_bytes(&self.leaf.data.verifier_only.circuit_digest)
    }

    /// Digest of the chunk circuit.
    pub fn chunk_digest_bytes(&self) -> [u8; 32] {
        tgrid_circuits::hash_to_bytes(&self.chunk.data.verifier_only.circuit_digest)
    }

    /// Digest of the merge circuit.
    pub fn merge_digest_bytes(&self) -> [u8; 32] {
        tgrid_circuits::hash_to_bytes(&self.merge.data.verifier_only.circuit_digest)
    }

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

    /// Merges two adjacent subtrees (`left` holds the earlier tasks): `node(left, right)`.
    pub fn prove_merge(&self, left: &SubtreeProof, right: &SubtreeProof) -> Result<SubtreeProof> {
        self.prove_merge_shaped(MergeShape::Pair, [left, right, right])
    }

    /// Merges three adjacent subtrees over two tree levels: `node(node(a, b), c)` for
    /// [`MergeShape::LeftDeep`], `node(a, node(b, c))` for [`MergeShape::RightDeep`].
    pub fn prove_merge3(
        &self,
        shape: MergeShape,
        a: &SubtreeProof,
        b: &SubtreeProof,
        c: &SubtreeProof,
    ) -> Result<SubtreeProof> {
        if shape == MergeShape::Pair {
            return Err(Error::InvalidBatch("a three-child merge spans two tree levels".into()));
        }
        self.prove_merge_shaped(shape, [a, b, c])
    }

    fn prove_merge_shaped(&self, shape: MergeShape, children: [&SubtreeProof; 3]) -> Result<SubtreeProof> {
        same_registry_root(children.into_iter())?;
        let pw =
            self.merge_witness(&self.merge, children, shape != MergeShape::Pair, shape == MergeShape::RightDeep)?;
        let proof = crate::shape::prove_checked(&self.merge.data, pw)?;
        Ok(SubtreeProof { proof, kind: SubtreeKind::Merge })
    }

    /// The witness of merge circuit `c` over `children` with the shape bits `deep` and
    /// `right_deep` (raw, so that tests can set an encoding no [`MergeShape`] has).
    fn merge_witness(
        &self,
        c: &MergeCircuit,
        children: [&SubtreeProof; 3],
        deep: bool,
        right_deep: bool,
    ) -> Result<PartialWitness<F>> {
        let mut pw = PartialWitness::new();
        let err = |e: anyhow::Error| Error::Proving(e.to_string());
        for (slot, child) in c.children.iter().zip(children) {
            if child.kind == SubtreeKind::Leaf {
                return Err(Error::InvalidBatch(
                    "a merge's children are chunk or merge proofs, not leaf proofs".into(),
                ));
            }
            let vd = self.verifier_only(child.kind);
            pw.set_proof_with_pis_target(&slot.proof, &child.proof).map_err(err)?;
            pw.set_cap_target(&slot.cap, &vd.constants_sigmas_cap).map_err(err)?;
            pw.set_bool_target(slot.is_merge, child.kind == SubtreeKind::Merge).map_err(err)?;
        }
        pw.set_bool_target(c.deep, deep).map_err(err)?;
        pw.set_bool_target(c.right_deep, right_deep).map_err(err)?;
        pw.set_target_arr(&c.digests, &self.digests()).map_err(err)?;
        Ok(pw)
    }

    /// Tests only: proves a merge with a malicious prover wired as the `cut` build, with the raw
    /// shape bits `deep` and `right_deep`. The proof is not checked.
    #[cfg(test)]
    pub(crate) fn prove_merge_with_cut(
        &self,
        cut: MergeCut,
        children: [&SubtreeProof; 3],
        deep: bool,
        right_deep: bool,
    ) -> Result<SubtreeProof> {
        let mut honest = MergeCircuit::build()?;
        let wired = MergeCircuit::build_cut(Some(cut))?;
        let pw = self.merge_witness(&wired, children, deep, right_deep)?;
        // The honest circuit's digest must be the one the children carry: prove with it.
        assert_eq!(honest.data.verifier_only.circuit_digest, self.merge.data.verifier_only.circuit_digest);
        let proof = prove_with_cut(&mut honest.data, wired.data, pw)?;
        Ok(SubtreeProof { proof, kind: SubtreeKind::Merge })
    }

    fn data(&self, kind: SubtreeKind) -> &CircuitData<F, C, D> {
        match kind {
            SubtreeKind::Leaf => &self.leaf.data,
            SubtreeKind::Chunk => &self.chunk.data,
            SubtreeKind::Merge => &self.merge.data,
        }
    }

    /// Verifier data of the circuit of `kind`.
    pub fn verifier_only(&self, kind: SubtreeKind) -> &VerifierOnlyCircuitData<C, D> {
        &self.data(kind).verifier_only
    }

    /// Verifies a leaf, chunk or merge proof (the root of a batch tree, or a proof made
    /// elsewhere) and returns its public inputs. Checks that the circuit digests it carries are
    /// those of these circuits (see the module docs).
    pub fn verify_root(&self, root: &SubtreeProof) -> Result<AggregationPublicInputs> {
        let publics = root.public_inputs()?;
        if publics.digests != self.digests() {
            return Err(Error::InvalidProof("the proof was aggregated with other chunk or merge circuits".into()));
        }
        self.data(root.kind)
            .verify(root.proof.clone())
            .map_err(|e| Error::InvalidProof(format!("plonky2 verification failed: {e}")))?;
        Ok(publics)
    }

    /// Decodes the bytes of a proof of the circuit of `kind` (as stored in a batch file or
    /// sent by a provider or worker).
    pub fn decode(&self, bytes: &[u8], kind: SubtreeKind) -> Result<SubtreeProof> {
        let shape = if kind == SubtreeKind::Leaf { &LEAF } else { &AGGREGATION };
        let proof = tgrid_circuits::decode_plonky2_proof(bytes, shape.common())?;
        Ok(SubtreeProof { proof, kind })
    }
}

/// Refuses children proven against different registry roots (the circuits would reject them:
/// this says why before proving).
fn same_registry_root<'a>(children: impl Iterator<Item = &'a SubtreeProof>) -> Result<()> {
    let roots: Vec<[u8; 32]> =
        children.map(|child| child.public_inputs().map(|p| p.registry_root)).collect::<Result<_>>()?;
    if let Some(other) = roots.iter().find(|r| **r != roots[0]) {
        return Err(Error::InvalidBatch(format!(
            "children proven against different registry roots (0x{} and 0x{})",
            hex::encode(roots[0]),
            hex::encode(other)
        )));
    }
    Ok(())
}

/// Tests only: proves with `honest`'s commitments and `wired`'s wiring (see
/// [`tgrid_circuits::testing::cut_copy_constraints`]), the witness set with `wired`'s targets.
/// The proof is not checked.
#[cfg(test)]
fn prove_with_cut(
    honest: &mut CircuitData<F, C, D>,
    wired: CircuitData<F, C, D>,
    pw: PartialWitness<F>,
) -> Result<ProofWithPublicInputs<F, C, D>> {
    use plonky2::iop::generator::generate_partial_witness;
    use plonky2::plonk::prover::prove_with_partition_witness;
    use plonky2::util::timing::TimingTree;

    tgrid_circuits::testing::cut_copy_constraints(honest, wired);
    let err = |e: anyhow::Error| Error::Proving(e.to_string());
    let witness = generate_partial_witness(pw, &honest.prover_only, &honest.common).map_err(err)?;
    prove_with_partition_witness(&honest.prover_only, &honest.common, witness, &mut TimingTree::default()).map_err(err)
}
