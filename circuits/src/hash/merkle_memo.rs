//! Parallel hashing of a proof's Merkle openings ahead of plonky2's verifier.
//!
//! plonky2 verifies a proof on one thread, and three quarters of that time is Poseidon: the
//! leaves and paths of every FRI query's openings (42 queries of a public task proof, each
//! opening four trees and every FRI layer). Those hashes do not depend on each other, only on
//! the query indices, which Fiat-Shamir fixes from the proof alone. So [`verify_proof_parallel`]
//! derives the indices, hashes every opened leaf and path node on all cores, and then runs
//! plonky2's unchanged verifier with a memo of those hashes on its thread: when
//! [`TgridPoseidonHash`](super::TgridPoseidonHash) is asked for a hash whose input is in the
//! memo, it returns the memoized output.
//!
//! The memo is keyed by the whole input (leaf elements, or both children of a node) and filled
//! with outputs of the same hash function, so it can only ever answer what hashing would: it
//! changes when a hash is computed, never what the verifier computes or checks. A proof the
//! precomputation cannot read (or any mistake in mirroring plonky2's query order) only leaves
//! hashes out of the memo, which the verifier then computes itself.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher as StdHasher};

use plonky2::field::extension::flatten;
use plonky2::hash::hash_types::HashOut;
use plonky2::hash::merkle_proofs::MerkleProof;
use plonky2::hash::poseidon::PoseidonHash;
use plonky2::plonk::circuit_data::VerifierCircuitData;
use plonky2::plonk::config::Hasher;
use plonky2::plonk::proof::ProofWithPublicInputs;
use rayon::prelude::*;

use super::TgridPoseidonHash;
use crate::{C, D, F};

/// A fast multiplicative hasher for the memo's keys (field elements and hashes). The maps compare
/// keys in full, so a collision costs a comparison, never a wrong answer; the per-process random
/// seed keeps a hostile proof from choosing siblings that all collide.
struct FoldHasher(u64);

impl StdHasher for FoldHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

/// Builds [`FoldHasher`]s from this process's seed.
#[derive(Clone, Copy)]
struct Fold(u64);

impl Default for Fold {
    fn default() -> Self {
        static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        Self(*SEED.get_or_init(|| std::collections::hash_map::RandomState::new().build_hasher().finish()))
    }
}

impl BuildHasher for Fold {
    type Hasher = FoldHasher;

    fn build_hasher(&self) -> FoldHasher {
        FoldHasher(self.0)
    }
}

type Path = MerkleProof<F, TgridPoseidonHash>;

/// A path node: (left, right) and their compression.
type Node = ((HashOut<F>, HashOut<F>), HashOut<F>);

/// An opened leaf, its path, and how far the query index is shifted right to index it (0 for
/// the initial trees, the arity bits folded so far for a FRI layer's coset).
struct Opening<'a> {
    leaf: Vec<F>,
    path: &'a Path,
    shift: usize,
}

/// Hash outputs by input: sponge hashes of leaves, and two-to-one compressions of path nodes.
#[derive(Default)]
struct Memo {
    leaves: HashMap<Vec<F>, HashOut<F>, Fold>,
    nodes: HashMap<(HashOut<F>, HashOut<F>), HashOut<F>, Fold>,
}

thread_local! {
    static MEMO: RefCell<Option<Memo>> = const { RefCell::new(None) };
}

/// The memoized sponge hash of `input`, if this thread verifies under a memo that holds it.
pub(super) fn memoized_leaf(input: &[F]) -> Option<HashOut<F>> {
    MEMO.with(|memo| {
        let found = memo.borrow().as_ref()?.leaves.get(input).copied();
        #[cfg(test)]
        tests::count(0, found.is_some());
        found
    })
}

/// The memoized compression of (`left`, `right`), if this thread verifies under a memo that
/// holds it.
pub(super) fn memoized_node(left: HashOut<F>, right: HashOut<F>) -> Option<HashOut<F>> {
    MEMO.with(|memo| {
        let found = memo.borrow().as_ref()?.nodes.get(&(left, right)).copied();
        #[cfg(test)]
        tests::count(1, found.is_some());
        found
    })
}

/// Removes the memo when verification ends, by return or by unwinding.
struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        MEMO.with(|memo| memo.borrow_mut().take());
    }
}

/// plonky2's verification of `proof` against `verifier`, with the Merkle openings' hashes
/// computed beforehand on all cores (see the module documentation). Same result as
/// `verifier.verify(proof)`.
pub fn verify_proof_parallel(
    verifier: &VerifierCircuitData<F, C, D>,
    proof: ProofWithPublicInputs<F, C, D>,
) -> anyhow::Result<()> {
    // A proof the precomputation cannot read gets no memo: the verifier rejects it on its own.
    let memo = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| precompute(verifier, &proof)))
        .ok()
        .flatten()
        .unwrap_or_default();
    MEMO.with(|slot| *slot.borrow_mut() = Some(memo));
    let _installed = Installed;
    verifier.verify(proof)
}

/// The hashes of every leaf and path node the verifier of `proof` will compute, or `None` if the
/// query indices cannot be derived. The leaves' hashes do not depend on the indices: they are
/// computed while one thread derives them.
fn precompute(verifier: &VerifierCircuitData<F, C, D>, proof: &ProofWithPublicInputs<F, C, D>) -> Option<Memo> {
    let common = &verifier.common;
    let rounds = &proof.proof.opening_proof.query_round_proofs;
    let arities = &common.fri_params.reduction_arity_bits;
    // Each query's opened leaves, in the verifier's order: the initial trees', then each FRI
    // layer's coset (its extension elements flattened).
    let openings: Vec<Vec<Opening<'_>>> = rounds
        .iter()
        .map(|round| {
            let initial = round.initial_trees_proof.evals_proofs.iter().map(|(leaf, path)| Opening {
                leaf: leaf.clone(),
                path,
                shift: 0,
            });
            let mut shift = 0;
            let layers = round.steps.iter().zip(arities).map(|(step, &arity_bits)| {
                shift += arity_bits;
                Opening { leaf: flatten::<F, D>(&step.evals), path: &step.merkle_proof, shift }
            });
            initial.chain(layers).collect()
        })
        .collect();
    let (challenges, leaf_digests) = rayon::join(
        || proof.get_challenges(proof.get_public_inputs_hash(), &verifier.verifier_only.circuit_digest, common),
        || {
            openings
                .par_iter()
                .map(|query| query.iter().map(|o| PoseidonHash::hash_or_noop(&o.leaf)).collect::<Vec<_>>())
                .collect::<Vec<_>>()
        },
    );
    let indices = challenges.ok()?.fri_challenges.fri_query_indices;
    let paths: Vec<Vec<Node>> = indices
        .par_iter()
        .zip(&openings)
        .zip(&leaf_digests)
        .map(|((&x_index, query), digests)| {
            let mut nodes = Vec::new();
            for (opening, &digest) in query.iter().zip(digests) {
                path_nodes(digest, x_index >> opening.shift, opening.path, &mut nodes);
            }
            nodes
        })
        .collect();
    let mut memo = Memo::default();
    memo.nodes.reserve(paths.iter().map(Vec::len).sum());
    memo.nodes.extend(paths.into_iter().flatten());
    for (query, digests) in openings.into_iter().zip(leaf_digests) {
        // Leaves of at most four elements are not hashed (`hash_or_noop`).
        let hashed = query.into_iter().zip(digests).filter(|(o, _)| o.leaf.len() > 4);
        memo.leaves.extend(hashed.map(|(o, digest)| (o.leaf, digest)));
    }
    Some(memo)
}

/// The nodes plonky2's `verify_merkle_proof_to_cap` compresses on the path of the leaf with
/// digest `current` at `index`.
fn path_nodes(mut current: HashOut<F>, mut index: usize, path: &Path, nodes: &mut Vec<Node>) {
    for &sibling in &path.siblings {
        let pair = if index & 1 == 1 { (sibling, current) } else { (current, sibling) };
        index >>= 1;
        current = PoseidonHash::two_to_one(pair.0, pair.1);
        nodes.push((pair, current));
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use plonky2::field::types::Field;

    use super::*;
    use crate::testing::{random_input, tiny_model};
    use crate::{Privacy, Salt, SegmentPlan, TaskProver, TaskVerifier};

    thread_local! {
        /// Memo lookups on this thread: [leaf, node] × [hit, miss].
        static LOOKUPS: Cell<[[u32; 2]; 2]> = const { Cell::new([[0; 2]; 2]) };
    }

    pub(super) fn count(kind: usize, hit: bool) {
        LOOKUPS.with(|c| {
            let mut counts = c.get();
            counts[kind][usize::from(!hit)] += 1;
            c.set(counts);
        });
    }

    /// A task proof of a small model: public (FRI rate 1/4) or private (rate 1/8, blinded and
    /// salted leaves).
    fn proof(privacy: Privacy) -> (VerifierCircuitData<F, C, D>, ProofWithPublicInputs<F, C, D>) {
        let model = tiny_model(5);
        let plan = SegmentPlan::default();
        let prover = TaskProver::with_privacy(model.clone(), plan.clone(), privacy).unwrap();
        let input = random_input(6, model.input_len());
        let (proof, _, _) = match privacy {
            Privacy::Public => prover.prove(&input, [7; 32], [9; 20], &mut |_, _, _| {}),
            Privacy::Private => prover.prove_private(&input, &Salt::random(), [7; 32], [9; 20], &mut |_, _, _| {}),
        }
        .unwrap();
        let verifier = TaskVerifier::with_privacy(&model, &plan, privacy).unwrap();
        let (_, decoded) = verifier.verify_decoded(&proof).unwrap();
        (verifier.verifier_data().clone(), decoded)
    }

    fn memo_removed() -> bool {
        MEMO.with(|m| m.borrow().is_none())
    }

    #[test]
    fn the_memo_holds_every_merkle_hash_the_verifier_computes() {
        for privacy in [Privacy::Public, Privacy::Private] {
            let (verifier, proof) = proof(privacy);
            LOOKUPS.with(|c| c.set([[0; 2]; 2]));
            verify_proof_parallel(&verifier, proof).unwrap();
            let [[leaf_hits, leaf_misses], [node_hits, node_misses]] = LOOKUPS.with(Cell::get);
            // The one hash outside the openings: the public inputs'.
            assert_eq!((leaf_misses, node_misses), (1, 0), "{privacy:?}");
            let queries = verifier.common.config.fri_config.num_query_rounds as u32;
            assert!(leaf_hits >= 4 * queries && node_hits >= 4 * queries, "{leaf_hits} leaves, {node_hits} nodes");
            assert!(memo_removed());
        }
    }

    #[test]
    fn tampered_openings_are_rejected_as_plonky2_rejects_them() {
        let (verifier, proof) = proof(Privacy::Public);
        type Tamper = fn(&mut ProofWithPublicInputs<F, C, D>);
        let tampers: [(&str, Tamper); 5] = [
            ("an initial tree's leaf", |p| {
                p.proof.opening_proof.query_round_proofs[3].initial_trees_proof.evals_proofs[1].0[2] += F::ONE
            }),
            ("an initial tree's sibling", |p| {
                p.proof.opening_proof.query_round_proofs[0].initial_trees_proof.evals_proofs[0].1.siblings[1]
                    .elements[0] += F::ONE
            }),
            ("a FRI layer's coset", |p| p.proof.opening_proof.query_round_proofs[5].steps[0].evals[1] += F::ONE.into()),
            ("a FRI layer's sibling", |p| {
                p.proof.opening_proof.query_round_proofs[2].steps[0].merkle_proof.siblings[0].elements[3] += F::ONE
            }),
            ("a public input", |p| p.public_inputs[0] += F::ONE),
        ];
        for (what, tamper) in tampers {
            let mut bad = proof.clone();
            tamper(&mut bad);
            assert!(verifier.verify(bad.clone()).is_err(), "plonky2 accepts a changed {what}");
            assert!(verify_proof_parallel(&verifier, bad).is_err(), "accepted with a changed {what}");
            assert!(memo_removed());
        }
        verify_proof_parallel(&verifier, proof).unwrap();
    }
}
