//! Leaf, chunk and merge circuits.
//!
//! A leaf proof ([`LEAF`] shape) proves one task's leaf; each model has its own leaf circuit
//! ([`LeafCircuit`]: the model's task proof is verified with constant verifier data) and the
//! registry pairs the model id with that circuit's digest. Its public inputs:
//!
//! | index | content |
//! | --- | --- |
//! | 0..8 | task leaf (SHA-256, 8 big-endian u32 words) |
//! | 8..16 | model id (8 big-endian u32 words) |
//!
//! A chunk proof verifies one to four consecutive leaf proofs, taking each leaf circuit's
//! constants cap as a witness, deriving its digest and checking `(model id, digest)` against the
//! registry root; it proves the RFC 6962 root over them. Merge proofs verify chunk or merge
//! proofs and prove the nodes above. Chunks and merges share the [`AGGREGATION`] shape and public
//! inputs, so a merge circuit verifies either kind of child with the child's verifier data as a
//! witness:
//!
//! | index | content |
//! | --- | --- |
//! | 0..8 | subtree root (SHA-256, 8 big-endian u32 words): an RFC 6962 node or a lone leaf |
//! | 8..12 | registry root (4 Goldilocks elements) |
//! | 12 | number of tasks under the subtree |
//! | 13..17 | circuit digest of the chunk circuit |
//! | 17..21 | circuit digest of the merge circuit |
//!
//! A merge circuit accepts a child only if the digest it derives from the child's constants cap
//! is one of the two digests in its own public inputs, and the child carries the same two
//! digests and the same registry root. Whoever checks the root proof checks that the two digests
//! are the real ones ([`AggregationCircuits::verify_root`]); by induction every proof in the tree
//! is then a genuine chunk or merge proof. The digests travel as public inputs rather than
//! constants because the merge circuit cannot contain its own digest.
//!
//! Why chunks: four leaves verified by one 2^14-row proof instead of three merges of two. A leaf
//! proven at FRI rate 1/16 ([`crate::shape::leaf_config`]) takes 3,510 rows to verify against
//! 4,230 at rate 1/8, so four fit; a 64-task batch takes 16 chunk and 10 merge proofs instead of
//! 42 merges (docs/BENCHMARKS.md). Why a leaf circuit per model rather than a normalization
//! step before one shared leaf circuit: a task then costs one recursive proof below the chunk
//! instead of two (docs/aggregation.md).

use std::sync::{Arc, Mutex, PoisonError};

use plonky2::field::types::{Field, Field64, PrimeField64};
use plonky2::hash::hash_types::HashOut;
use plonky2::hash::merkle_tree::MerkleCap;
use plonky2::iop::target::{BoolTarget, Target};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitData, VerifierCircuitData, VerifierOnlyCircuitData};
use plonky2::plonk::proof::ProofWithPublicInputs;
use tgrid_circuit_cache::CircuitKey;
use tgrid_circuits::{C, D, F};
use tgrid_sha256::{CircuitBuilderSha256, U32Target};

use crate::error::{Error, Result};
use crate::leaves::AggregationPublicInputs;
use crate::registry::Registry;
use crate::shape::{AGGREGATION, LEAF};

mod chunk;
mod leaf;
mod merge;

use chunk::ChunkCircuit;
#[cfg(test)]
pub(crate) use chunk::ChunkCut;
pub use leaf::LeafCircuit;
use merge::MergeCircuit;
#[cfg(test)]
pub(crate) use merge::MergeCut;
pub use merge::MergeShape;

pub use crate::shape::{NUM_AGGREGATION_PUBLIC_INPUTS, NUM_LEAF_PUBLIC_INPUTS};

/// Most leaves one chunk proof covers: the batch tree's tasks `4i..4i+4` form chunk `i` (the
/// last chunk may hold fewer), and the RFC 6962 tree of the tasks is the tree of the chunks'
/// roots, since every split of a tree over more than four tasks is at a multiple of four.
pub const CHUNK_LEAVES: usize = 4;

/// Which circuit produced a [`SubtreeProof`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SubtreeKind {
    /// A task's leaf ([`LEAF`] shape, the model's [`LeafCircuit`]): only a chunk verifies it.
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

/// The constants cap of a leaf circuit (the rest of its verifier data is derived from it).
pub type LeafCircuitCap = MerkleCap<F, tgrid_circuits::TgridPoseidonHash>;

/// A leaf, chunk or merge proof.
#[derive(Clone, Debug)]
pub struct SubtreeProof {
    /// The plonky2 proof (public inputs as in the module tables).
    pub proof: ProofWithPublicInputs<F, C, D>,
    /// The circuit that produced it.
    pub kind: SubtreeKind,
    /// A leaf's circuit (each model has its own), `None` for chunks and merges.
    pub(crate) leaf_circuit: Option<LeafCircuitCap>,
}

/// The public inputs of a leaf proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeafPublicInputs {
    /// The task leaf `sha256(0x00 ‖ task ‖ model ‖ input ‖ output ‖ provider)`.
    pub leaf: [u8; 32],
    /// The task's model id.
    pub model_id: [u8; 32],
}

/// Bytes of a leaf circuit's cap in a leaf proof's encoding: 2^cap_height hashes of 4
/// elements, 8 bytes each.
fn leaf_cap_bytes() -> usize {
    (1 << LEAF.config().fri_config.cap_height) * 4 * 8
}

impl SubtreeProof {
    /// A leaf proof of the leaf circuit with constants cap `leaf_circuit`.
    pub fn leaf(proof: ProofWithPublicInputs<F, C, D>, leaf_circuit: LeafCircuitCap) -> Self {
        Self { proof, kind: SubtreeKind::Leaf, leaf_circuit: Some(leaf_circuit) }
    }

    /// A chunk or merge proof.
    pub(crate) fn node(proof: ProofWithPublicInputs<F, C, D>, kind: SubtreeKind) -> Self {
        debug_assert_ne!(kind, SubtreeKind::Leaf);
        Self { proof, kind, leaf_circuit: None }
    }

    /// A leaf's circuit (`None` for chunks and merges).
    pub fn leaf_circuit(&self) -> Option<&LeafCircuitCap> {
        self.leaf_circuit.as_ref()
    }

    /// The digest of a leaf's circuit, derived from its cap (what the registry lists for the
    /// model); `None` for chunks and merges.
    pub fn leaf_circuit_digest(&self) -> Option<[u8; 32]> {
        let cap = self.leaf_circuit.as_ref()?;
        Some(tgrid_circuits::hash_to_bytes(&crate::shape::circuit_digest(cap, LEAF.degree_bits())))
    }

    /// The decoded public inputs of a chunk or merge proof.
    pub fn public_inputs(&self) -> Result<AggregationPublicInputs> {
        if self.kind == SubtreeKind::Leaf {
            return Err(Error::InvalidBatch("a leaf proof carries a task leaf, not a subtree".into()));
        }
        AggregationPublicInputs::from_fields(&self.proof.public_inputs)
    }

    /// The decoded public inputs of a leaf proof.
    pub fn leaf_public_inputs(&self) -> Result<LeafPublicInputs> {
        let pis = &self.proof.public_inputs;
        if self.kind != SubtreeKind::Leaf || pis.len() != NUM_LEAF_PUBLIC_INPUTS {
            return Err(Error::InvalidBatch(format!("a {} proof is no task leaf", self.kind.name())));
        }
        let words = |range: std::ops::Range<usize>| -> Result<[u8; 32]> {
            let mut out = [0u8; 32];
            for (chunk, x) in out.chunks_mut(4).zip(&pis[range]) {
                let w = u32::try_from(x.to_canonical_u64())
                    .map_err(|_| Error::InvalidProof("a leaf public input is not a u32 word".into()))?;
                chunk.copy_from_slice(&w.to_be_bytes());
            }
            Ok(out)
        };
        Ok(LeafPublicInputs { leaf: words(0..8)?, model_id: words(8..16)? })
    }

    /// The bytes a batch file, provider or worker carries: for a leaf its circuit's cap, then
    /// the plonky2 proof.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(cap) = &self.leaf_circuit {
            for e in cap.0.iter().flat_map(|h| h.elements) {
                out.extend(e.to_canonical_u64().to_le_bytes());
            }
        }
        out.extend(self.proof.to_bytes());
        out
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

/// The chunk and merge circuits, built once (a few seconds) and reused for every batch. (Leaf
/// circuits are per model: [`LeafCircuit`].)
pub struct AggregationCircuits {
    chunk: ChunkCircuit,
    merge: MergeCircuit,
}

impl std::fmt::Debug for AggregationCircuits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AggregationCircuits")
            .field("chunk_digest", &hex::encode(self.chunk_digest_bytes()))
            .field("merge_digest", &hex::encode(self.merge_digest_bytes()))
            .finish()
    }
}

impl AggregationCircuits {
    /// Builds the two circuits side by side: much of a build is sequential (gates, permutation).
    pub fn build() -> Result<Self> {
        let (chunk, merge) = std::thread::scope(|scope| {
            let merge = scope.spawn(MergeCircuit::build);
            let chunk = ChunkCircuit::build();
            (chunk, merge.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
        });
        Ok(Self { chunk: chunk?, merge: merge? })
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
    /// public inputs 13..21 of every genuine chunk or merge proof carry them.
    pub fn digests(&self) -> [F; 8] {
        let c = self.chunk.data.verifier_only.circuit_digest.elements;
        let m = self.merge.data.verifier_only.circuit_digest.elements;
        std::array::from_fn(|i| if i < 4 { c[i] } else { m[i - 4] })
    }

    /// Digest of the chunk circuit.
    pub fn chunk_digest_bytes(&self) -> [u8; 32] {
        tgrid_circuits::hash_to_bytes(&self.chunk.data.verifier_only.circuit_digest)
    }

    /// Digest of the merge circuit.
    pub fn merge_digest_bytes(&self) -> [u8; 32] {
        tgrid_circuits::hash_to_bytes(&self.merge.data.verifier_only.circuit_digest)
    }

    fn data(&self, kind: SubtreeKind) -> Result<&CircuitData<F, C, D>> {
        match kind {
            SubtreeKind::Leaf => Err(Error::InvalidBatch("a leaf proof is checked against its model's entry".into())),
            SubtreeKind::Chunk => Ok(&self.chunk.data),
            SubtreeKind::Merge => Ok(&self.merge.data),
        }
    }

    /// Verifier data of the chunk or merge circuit.
    pub fn verifier_only(&self, kind: SubtreeKind) -> Result<&VerifierOnlyCircuitData<C, D>> {
        Ok(&self.data(kind)?.verifier_only)
    }

    /// Verifies a chunk or merge proof (the root of a batch tree, or a proof made elsewhere)
    /// and returns its public inputs. Checks that the circuit digests it carries are those of
    /// these circuits (see the module docs).
    pub fn verify_root(&self, root: &SubtreeProof) -> Result<AggregationPublicInputs> {
        let data = self.data(root.kind)?;
        let publics = root.public_inputs()?;
        if publics.digests != self.digests() {
            return Err(Error::InvalidProof("the proof was aggregated with other chunk or merge circuits".into()));
        }
        data.verify(root.proof.clone())
            .map_err(|e| Error::InvalidProof(format!("plonky2 verification failed: {e}")))?;
        Ok(publics)
    }

    /// Verifies a leaf proof made elsewhere (by a provider or a worker): its leaf circuit is the
    /// one `registry` lists for the model it names, and plonky2 verifies it. Returns its public
    /// inputs.
    pub fn verify_leaf(&self, leaf: &SubtreeProof, registry: &Registry) -> Result<LeafPublicInputs> {
        chunk::registered_leaf(leaf, registry)?;
        let cap = leaf.leaf_circuit().expect("checked by registered_leaf").clone();
        let circuit_digest = crate::shape::circuit_digest(&cap, LEAF.degree_bits());
        let verifier = VerifierCircuitData {
            verifier_only: VerifierOnlyCircuitData { constants_sigmas_cap: cap, circuit_digest },
            common: LEAF.common().clone(),
        };
        verifier
            .verify(leaf.proof.clone())
            .map_err(|e| Error::InvalidProof(format!("plonky2 verification failed: {e}")))?;
        leaf.leaf_public_inputs()
    }

    /// Decodes the bytes of a proof of `kind` ([`SubtreeProof::to_bytes`], as stored in a batch
    /// file or sent by a provider or worker).
    pub fn decode(&self, bytes: &[u8], kind: SubtreeKind) -> Result<SubtreeProof> {
        if kind != SubtreeKind::Leaf {
            let proof = tgrid_circuits::decode_plonky2_proof(bytes, AGGREGATION.common())?;
            return Ok(SubtreeProof::node(proof, kind));
        }
        if bytes.len() < leaf_cap_bytes() {
            return Err(Error::Format(format!(
                "a leaf proof of {} bytes is shorter than its circuit's cap",
                bytes.len()
            )));
        }
        let (cap_bytes, proof_bytes) = bytes.split_at(leaf_cap_bytes());
        let elements = cap_bytes
            .chunks(8)
            .map(|b| {
                let v = u64::from_le_bytes(b.try_into().expect("8 bytes"));
                (v < F::ORDER).then(|| F::from_canonical_u64(v))
            })
            .collect::<Option<Vec<F>>>()
            .ok_or_else(|| Error::Format("a leaf circuit's cap holds a non-canonical element".into()))?;
        let cap =
            MerkleCap(elements.chunks(4).map(|h| HashOut { elements: h.try_into().expect("4 elements") }).collect());
        let proof = tgrid_circuits::decode_plonky2_proof(proof_bytes, LEAF.common())?;
        Ok(SubtreeProof::leaf(proof, cap))
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
