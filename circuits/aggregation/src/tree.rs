//! Leaf and merge circuits.
//!
//! Both have the [`AGGREGATION`] shape and the same public inputs, so a merge circuit verifies
//! either kind of child with the child's verifier data as a witness:
//!
//! | index | content |
//! | --- | --- |
//! | 0..8 | subtree root (SHA-256, 8 big-endian u32 words): a task leaf or an RFC 6962 node |
//! | 8..12 | registry root (4 Goldilocks elements) |
//! | 12 | number of tasks under the subtree |
//! | 13..17 | circuit digest of the leaf circuit |
//! | 17..21 | circuit digest of the merge circuit |
//!
//! A merge circuit accepts a child only if the digest it derives from the child's constants cap is
//! one of the two digests in its own public inputs, and the child carries the same two digests
//! and the same registry root. Whoever checks the root proof checks that the two digests are
//! the real ones ([`AggregationCircuits::verify_root`]); by induction every proof in the tree is
//! then a genuine leaf or merge proof. The digests travel as public inputs rather than constants
//! because the merge circuit cannot contain its own digest.

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
use crate::shape::{aggregation_config, circuit_digest_target, AGGREGATION, NORMALIZED};

/// Number of public inputs of leaf and merge proofs.
pub const NUM_AGGREGATION_PUBLIC_INPUTS: usize = 21;

/// A leaf or merge proof.
#[derive(Clone, Debug)]
pub struct SubtreeProof {
    /// The plonky2 proof (public inputs as in the module table).
    pub proof: ProofWithPublicInputs<F, C, D>,
    /// Whether a merge circuit (rather than the leaf circuit) produced it.
    pub is_merge: bool,
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
        let mut b = CircuitBuilder::<F, D>::new(aggregation_config());
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
        let data = AGGREGATION.build(b)?;
        Ok(Self { data, proof, cap, registry_root, index_bits, siblings, digests, free_digest })
    }
}

/// One child slot of the merge circuit.
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

/// The merge circuit: verifies three leaf or merge proofs and outputs the RFC 6962 node of two
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

/// The leaf and merge circuits, built once (a few seconds) and reused for every batch.
pub struct AggregationCircuits {
    leaf: LeafCircuit,
    merge: MergeCircuit,
}

impl std::fmt::Debug for AggregationCircuits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AggregationCircuits")
            .field("leaf_digest", &hex::encode(self.leaf_digest_bytes()))
            .field("merge_digest", &hex::encode(self.merge_digest_bytes()))
            .finish()
    }
}

impl AggregationCircuits {
    /// Builds both circuits, side by side: much of a build is sequential (gates, permutation).
    pub fn build() -> Result<Self> {
        let (leaf, merge) = std::thread::scope(|scope| {
            let leaf = scope.spawn(LeafCircuit::build);
            let merge = MergeCircuit::build();
            (leaf.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)), merge)
        });
        Ok(Self { leaf: leaf?, merge: merge? })
    }

    /// The leaf circuit digest (4 elements) then the merge circuit digest (4 elements), as the
    /// public inputs 13..21 of every genuine leaf or merge proof carry them.
    pub fn digests(&self) -> [F; 8] {
        let l = self.leaf.data.verifier_only.circuit_digest.elements;
        let m = self.merge.data.verifier_only.circuit_digest.elements;
        std::array::from_fn(|i| if i < 4 { l[i] } else { m[i - 4] })
    }

    /// Digest of the leaf circuit.
    pub fn leaf_digest_bytes(&self) -> [u8; 32] {
        tgrid_circuits::hash_to_bytes(&self.leaf.data.verifier_only.circuit_digest)
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
        Ok(SubtreeProof { proof, is_merge: false })
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
        Ok(SubtreeProof { proof, is_merge: false })
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
        let roots: Vec<[u8; 32]> =
            children.iter().map(|child| child.public_inputs().map(|p| p.registry_root)).collect::<Result<_>>()?;
        if let Some(other) = roots.iter().find(|r| **r != roots[0]) {
            return Err(Error::InvalidBatch(format!(
                "children proven against different registry roots (0x{} and 0x{})",
                hex::encode(roots[0]),
                hex::encode(other)
            )));
        }
        let pw =
            self.merge_witness(&self.merge, children, shape != MergeShape::Pair, shape == MergeShape::RightDeep)?;
        let proof = crate::shape::prove_checked(&self.merge.data, pw)?;
        Ok(SubtreeProof { proof, is_merge: true })
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
            let vd = self.verifier_only(child.is_merge);
            pw.set_proof_with_pis_target(&slot.proof, &child.proof).map_err(err)?;
            pw.set_cap_target(&slot.cap, &vd.constants_sigmas_cap).map_err(err)?;
            pw.set_bool_target(slot.is_merge, child.is_merge).map_err(err)?;
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
        Ok(SubtreeProof { proof, is_merge: true })
    }

    /// Verifier data of the merge (`true`) or leaf circuit.
    pub fn verifier_only(&self, is_merge: bool) -> &VerifierOnlyCircuitData<C, D> {
        if is_merge {
            &self.merge.data.verifier_only
        } else {
            &self.leaf.data.verifier_only
        }
    }

    /// Verifies the proof at the root of a batch tree and returns its public inputs. Checks
    /// that the circuit digests it carries are those of these circuits (see the module docs).
    pub fn verify_root(&self, root: &SubtreeProof) -> Result<AggregationPublicInputs> {
        let publics = root.public_inputs()?;
        if publics.digests != self.digests() {
            return Err(Error::InvalidProof("the proof was aggregated with other leaf or merge circuits".into()));
        }
        let data = if root.is_merge { &self.merge.data } else { &self.leaf.data };
        data.verify(root.proof.clone())
            .map_err(|e| Error::InvalidProof(format!("plonky2 verification failed: {e}")))?;
        Ok(publics)
    }

    /// Decodes root proof bytes (as stored in a batch file).
    pub fn decode(&self, bytes: &[u8], is_merge: bool) -> Result<SubtreeProof> {
        let proof = tgrid_circuits::decode_plonky2_proof(bytes, AGGREGATION.common())?;
        Ok(SubtreeProof { proof, is_merge })
    }
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
