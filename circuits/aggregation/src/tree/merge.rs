//! The merge circuit: three chunk or merge proofs in, the RFC 6962 node over two or three of them
//! out.

use plonky2::hash::hash_types::MerkleCapTarget;
use plonky2::iop::target::{BoolTarget, Target};
use plonky2::iop::witness::{PartialWitness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitData, VerifierCircuitTarget};
use plonky2::plonk::proof::ProofWithPublicInputsTarget;
use tgrid_circuits::{C, D, F};

use super::cache_key;
#[cfg(test)]
use super::prove_with_cut;
use super::{node_words, same_registry_root, select_words, AggregationCircuits, SubtreeKind, SubtreeProof};
use crate::error::{Error, Result};
use crate::shape::{aggregation_config, circuit_digest_target, AGGREGATION};

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
pub(super) struct MergeCircuit {
    pub(super) data: CircuitData<F, C, D>,
    children: [ChildTargets; 3],
    /// Two levels (`LeftDeep` or `RightDeep`) rather than `Pair`.
    deep: BoolTarget,
    /// `RightDeep` (only with `deep`).
    right_deep: BoolTarget,
    digests: [Target; 8],
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
    pub(super) fn build() -> Result<Self> {
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
        let data = AGGREGATION.build(b, cache_key("merge", cut))?;
        Ok(Self { data, children, deep, right_deep, digests })
    }
}

impl AggregationCircuits {
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
        Ok(SubtreeProof::node(proof, SubtreeKind::Merge))
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
            let vd = self.verifier_only(child.kind)?;
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
        Ok(SubtreeProof::node(proof, SubtreeKind::Merge))
    }
}
