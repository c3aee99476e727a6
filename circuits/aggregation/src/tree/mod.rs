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

use std::sync::{Arc, Mutex, PoisonError};

use plonky2::field::types::Field;
use plonky2::iop::target::{BoolTarget, Target};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitData, VerifierOnlyCircuitData};
use plonky2::plonk::proof::ProofWithPublicInputs;
use tgrid_circuit_cache::CircuitKey;
use tgrid_circuits::{C, D, F};
use tgrid_sha256::{CircuitBuilderSha256, U32Target};

use crate::batch::AggregationPublicInputs;
use crate::error::{Error, Result};
use crate::shape::{AGGREGATION, LEAF};

mod chunk;
mod leaf;
mod merge;

use chunk::ChunkCircuit;
#[cfg(test)]
pub(crate) use chunk::ChunkCut;
use leaf::LeafCircuit;
#[cfg(test)]
pub(crate) use leaf::LeafCut;
use merge::MergeCircuit;
#[cfg(test)]
pub(crate) use merge::MergeCut;
pub use merge::MergeShape;

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

/// The circuit-cache key of a tree circuit: its name and, for a malicious test build, the cut
/// (a cut circuit is never taken for the honest one, nor the reverse).
fn cache_key(name: &str, cut: Option<impl std::fmt::Debug>) -> CircuitKey {
    match cut {
        None => CircuitKey::new(name),
        Some(cut) => CircuitKey::new(format!("{name}-cut-{cut:?}")),
    }
}

fn word_bits(builder: &mut CircuitBuilder<F, D>, words: &[Target]) -> Vec<BoolTarget> {
    words.iter().flat_map(|&w| builder.split_u32_be(U32Target(w))).collect()
}

fn byte_bits(builder: &mut CircuitBuilder<F, D>, byte: u8) -> Vec<BoolTarget> {
    (0..8).rev().map(|i| builder.constant_bool(byte >> i & 1 == 1)).collect()
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

    /// The circuits of this process, built on first call. They depend on nothing but this code,
    /// so every user in one process can share one build: a sequencer's aggregator and its
    /// wrapper, or a provider's leaf prover and its self-settler, would otherwise each spend
    /// seconds of CPU and hundreds of MB on an identical copy. Callers that arrive during the
    /// first build wait for it rather than start another.
    pub fn shared() -> Result<Arc<Self>> {
        static SHARED: Mutex<Option<Arc<AggregationCircuits>>> = Mutex::new(None);
        let mut slot = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(circuits) = slot.as_ref() {
            return Ok(circuits.clone());
        }
        let built = Arc::new(Self::build()?);
        *slot = Some(built.clone());
        Ok(built)
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
    pw: plonky2::iop::witness::PartialWitness<F>,
) -> Result<ProofWithPublicInputs<F, C, D>> {
    use plonky2::iop::generator::generate_partial_witness;
    use plonky2::plonk::prover::prove_with_partition_witness;
    use plonky2::util::timing::TimingTree;

    tgrid_circuits::testing::cut_copy_constraints(honest, wired);
    let err = |e: anyhow::Error| Error::Proving(e.to_string());
    let witness = generate_partial_witness(pw, &honest.prover_only, &honest.common).map_err(err)?;
    prove_with_partition_witness(&honest.prover_only, &honest.common, witness, &mut TimingTree::default()).map_err(err)
}
