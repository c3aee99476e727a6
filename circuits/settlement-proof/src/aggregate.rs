//! Batch aggregation: task proofs → leaf proofs (each model's leaf circuit) → chunk proofs (four
//! leaves each) → one root proof, the input of [`crate::BatchWrapper`]. Used by the sequencer for its batches and by a provider settling
//! its own results.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use tgrid_aggregation::batch::split_point;
use tgrid_aggregation::{
    check_leaves, AggregationCircuits, BatchFile, LeafCircuit, LeafPublicInputs, MergeShape, Registry, RegistryFile,
    SubtreeKind, SubtreeProof, TaskLeaf, CHUNK_LEAVES,
};
use tgrid_circuits::{ModelFile, Privacy, TaskProof, TaskVerifier};

/// What can go wrong while aggregating.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AggregateError {
    /// Leaf, chunk or merge proving, registry or batch rules.
    #[error(transparent)]
    Aggregation(#[from] tgrid_aggregation::Error),
    /// A task proof or model file is invalid.
    #[error(transparent)]
    Task(#[from] tgrid_circuits::Error),
    /// A submitted proof is for a model the registry does not list.
    #[error("model 0x{} is not in the registry", hex::encode(.0))]
    UnknownModel([u8; 32]),
    /// A leaf proof made elsewhere (by the task's provider) that does not prove this task's leaf
    /// with these circuits.
    #[error("the leaf proof is not this task's: {0}")]
    InvalidLeaf(String),
    /// A leaf proof made elsewhere is of another leaf circuit than the one the registry lists
    /// for the task's model (built by another version of the code, or the model was registered
    /// again since): not this batch's, and no fault of the task.
    #[error("the leaf proof is of leaf circuit 0x{}, the registry lists 0x{} for this model", hex::encode(.proven), hex::encode(.registered))]
    LeafOfOtherCircuit {
        /// The digest of the leaf proof's circuit.
        proven: [u8; 32],
        /// The digest the registry lists.
        registered: [u8; 32],
    },
    /// The registry's model file does not produce the registered circuit, or a model this
    /// aggregator holds no leaf circuit for.
    #[error("{path}: {reason}")]
    ModelFile {
        /// The model file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
}

type Error = AggregateError;
type Result<T, E = AggregateError> = std::result::Result<T, E>;

/// A unit of work finished, for progress reporting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A task's leaf was proven.
    Leaf,
    /// Up to four leaves were proven as one chunk.
    Chunk,
    /// Two or three subtrees were merged.
    Merge,
}

/// A registered model's circuits, each built on first use from its model file: the task
/// verifier (checking a task proof natively, the task circuit only) and the leaf circuit
/// (proving its leaf), which a batch whose leaves its providers proved never needs.
#[derive(Default)]
struct ModelCircuits {
    verifier: OnceLock<std::result::Result<Arc<TaskVerifier>, String>>,
    leaf: OnceLock<std::result::Result<Arc<LeafCircuit>, String>>,
}

impl ModelCircuits {
    fn built(leaf: LeafCircuit) -> Self {
        Self { verifier: OnceLock::from(Ok(leaf.shared_task_verifier())), leaf: OnceLock::from(Ok(Arc::new(leaf))) }
    }
}

type Slot = Arc<ModelCircuits>;

/// Aggregates task proofs of registered models into batch proofs.
pub struct Aggregator {
    file: RegistryFile,
    registry: Registry,
    /// Shared with the aggregators of later registries ([`Aggregator::for_registry_file`]).
    circuits: Arc<AggregationCircuits>,
    /// Each registered model's circuits built so far.
    models: Mutex<HashMap<[u8; 32], Slot>>,
}

impl std::fmt::Debug for Aggregator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Aggregator").field("registry_root", &hex::encode(self.registry.root())).finish()
    }
}

impl Aggregator {
    /// An aggregator for `file`'s registry, over the process's aggregation circuits (built on
    /// first use, a few seconds: [`AggregationCircuits::shared`]).
    pub fn new(file: RegistryFile) -> Result<Self> {
        let registry = file.registry()?;
        Ok(Self { file, registry, circuits: AggregationCircuits::shared()?, models: Mutex::default() })
    }

    /// An aggregator for another registry file (governance moved the root) that shares these
    /// circuits and keeps the verifiers and leaf circuits already built for models the new
    /// registry lists with the same digest, so nothing is rebuilt that did not change.
    pub fn for_registry_file(&self, file: RegistryFile) -> Result<Self> {
        let registry = file.registry()?;
        let kept: HashMap<[u8; 32], Slot> = self
            .models
            .lock()
            .expect("model circuits lock")
            .iter()
            .filter(|(id, slot)| {
                let unchanged = registry
                    .entry(id)
                    .zip(self.registry.entry(id))
                    .is_some_and(|(new, old)| new.leaf_digest == old.leaf_digest);
                unchanged && matches!(slot.verifier.get(), Some(Ok(_))) && !matches!(slot.leaf.get(), Some(Err(_)))
            })
            .map(|(id, slot)| (*id, slot.clone()))
            .collect();
        Ok(Self { file, registry, circuits: self.circuits.clone(), models: Mutex::new(kept) })
    }

    /// An aggregator for models whose leaf circuits are already built (no registry file; the
    /// registry lists exactly these models). Used by benchmarks and tests.
    pub fn with_leaf_circuits(leaf_circuits: Vec<LeafCircuit>) -> Result<Self> {
        let registry = Registry::new(
            leaf_circuits
                .iter()
                .map(|l| tgrid_aggregation::RegistryEntry { model_id: l.model_id(), leaf_digest: l.digest() }),
        )?;
        Self::with_registry(registry, leaf_circuits)
    }

    /// An aggregator for a registry whose full list of models comes from elsewhere (the chain),
    /// holding leaf circuits only for some of them: a provider settling its own results proves
    /// membership in the whole on-chain registry, but only ever proves its own models' leaves.
    pub fn with_registry(registry: Registry, leaf_circuits: Vec<LeafCircuit>) -> Result<Self> {
        for l in &leaf_circuits {
            match registry.entry(&l.model_id()) {
                Some(e) if e.leaf_digest == l.digest() => {}
                _ => {
                    return Err(Error::ModelFile {
                        path: format!("model 0x{}", hex::encode(l.model_id())),
                        reason: "its leaf circuit is not the one the registry lists".into(),
                    })
                }
            }
        }
        let slots = leaf_circuits.into_iter().map(|l| (l.model_id(), Arc::new(ModelCircuits::built(l)))).collect();
        Ok(Self {
            file: RegistryFile::empty(Default::default()),
            registry,
            circuits: AggregationCircuits::shared()?,
            models: Mutex::new(slots),
        })
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The registry file it was built from.
    pub fn registry_file(&self) -> &RegistryFile {
        &self.file
    }

    /// The chunk and merge circuits.
    pub fn circuits(&self) -> &AggregationCircuits {
        &self.circuits
    }

    /// The task verifier of a registered model, built on first use from its model file (which
    /// must hold the model of that id).
    pub fn task_verifier(&self, model_id: &[u8; 32]) -> Result<Arc<TaskVerifier>> {
        let slot = self.slot(model_id)?;
        let built = slot.verifier.get_or_init(|| {
            let bytes =
                std::fs::read(self.model_path(model_id)).map_err(|e| format!("cannot read the model file: {e}"))?;
            task_verifier_from_model_file(&bytes, model_id).map(Arc::new)
        });
        built.clone().map_err(|reason| Error::ModelFile { path: self.model_path(model_id), reason })
    }

    /// The leaf circuit of a registered model, built on first use and checked against the
    /// registered digest.
    pub fn leaf_circuit(&self, model_id: &[u8; 32]) -> Result<Arc<LeafCircuit>> {
        let digest = self.registry.entry(model_id).ok_or(Error::UnknownModel(*model_id))?.leaf_digest;
        let verifier = self.task_verifier(model_id)?;
        let slot = self.slot(model_id)?;
        let built = slot.leaf.get_or_init(|| leaf_circuit_of(verifier, &digest).map(Arc::new));
        built.clone().map_err(|reason| Error::ModelFile { path: self.model_path(model_id), reason })
    }

    /// Whether the model's leaf circuit has been built (tests).
    #[cfg(test)]
    pub(crate) fn leaf_circuit_built(&self, model_id: &[u8; 32]) -> bool {
        let models = self.models.lock().expect("model circuits lock");
        models.get(model_id).is_some_and(|slot| slot.leaf.get().is_some())
    }

    fn slot(&self, model_id: &[u8; 32]) -> Result<Slot> {
        self.registry.entry(model_id).ok_or(Error::UnknownModel(*model_id))?;
        Ok(self.models.lock().expect("model circuits lock").entry(*model_id).or_default().clone())
    }

    fn model_path(&self, model_id: &[u8; 32]) -> String {
        self.file.model_path_of(model_id).map(|p| p.display().to_string()).unwrap_or_default()
    }

    /// Checks a task proof natively and returns its leaf (cheap: no recursion). A model's first
    /// check also builds its leaf circuit against the registered digest, so a model file that
    /// does not give the registered circuit is refused before anything is proven.
    pub fn check(&self, proof: &TaskProof) -> Result<TaskLeaf> {
        self.leaf_circuit(&proof.model_id)?;
        self.verify_task(proof)
    }

    /// [`check`](Self::check) without the leaf circuit, for a task whose leaf proof is at hand:
    /// a model's first proof builds only its task circuit.
    pub fn verify_task(&self, proof: &TaskProof) -> Result<TaskLeaf> {
        let publics = self.task_verifier(&proof.model_id)?.verify(proof)?;
        Ok(TaskLeaf::from_publics(&publics))
    }

    /// Checks a task proof and proves its leaf with its model's leaf circuit.
    pub fn prove_leaf(&self, proof: &TaskProof) -> Result<(TaskLeaf, SubtreeProof)> {
        let (publics, leaf) = self.leaf_circuit(&proof.model_id)?.prove(proof)?;
        Ok((TaskLeaf::from_publics(&publics), leaf))
    }

    /// Takes the leaf proof of `proof` that someone else proved (the task's provider, with
    /// [`prove_leaf`](Self::prove_leaf) under the same registry), so the caller need not prove it:
    /// checks the task proof natively, then that `leaf_bytes` decode to a proof of the leaf
    /// circuit the registry lists for the task's model (plonky2 verifies it) whose leaf is this
    /// task's. Milliseconds, against
    /// seconds for proving the leaf; what it returns is what [`prove_leaf`](Self::prove_leaf)
    /// would, up to the proof's randomness.
    pub fn adopt_leaf(&self, proof: &TaskProof, leaf_bytes: &[u8]) -> Result<(TaskLeaf, SubtreeProof)> {
        let leaf = self.verify_task(proof)?;
        let subtree = self.adopt_leaf_of(&leaf, leaf_bytes)?;
        Ok((leaf, subtree))
    }

    /// The public inputs of `leaf`'s leaf proof.
    pub fn leaf_public_inputs(leaf: &TaskLeaf) -> LeafPublicInputs {
        LeafPublicInputs { leaf: leaf.hash(), model_id: leaf.model_id }
    }

    /// Whether `proof`, a leaf proof adopted earlier ([`adopt_leaf_of`](Self::adopt_leaf_of)),
    /// is still `leaf`'s under this registry: its public inputs, and its circuit the one the
    /// registry lists for the model (which may have changed since). No plonky2 verification.
    pub fn still_fits(&self, leaf: &TaskLeaf, proof: &SubtreeProof) -> bool {
        let registered = self.registry.entry(&leaf.model_id).map(|e| e.leaf_digest);
        proof.leaf_public_inputs().is_ok_and(|p| p == Self::leaf_public_inputs(leaf))
            && proof.leaf_circuit_digest() == registered
    }

    /// [`adopt_leaf`](Self::adopt_leaf) for a task proof already checked: `leaf` must be what
    /// [`check`](Self::check) returned for it.
    pub fn adopt_leaf_of(&self, leaf: &TaskLeaf, leaf_bytes: &[u8]) -> Result<SubtreeProof> {
        let invalid = |reason: String| Error::InvalidLeaf(reason);
        let subtree = self.circuits.decode(leaf_bytes, SubtreeKind::Leaf).map_err(|e| invalid(e.to_string()))?;
        let registered = self.registry.entry(&leaf.model_id).ok_or(Error::UnknownModel(leaf.model_id))?.leaf_digest;
        let proven = subtree.leaf_circuit_digest().expect("a decoded leaf has its circuit");
        if proven != registered {
            return Err(Error::LeafOfOtherCircuit { proven, registered });
        }
        let publics = self.circuits.verify_leaf(&subtree, &self.registry).map_err(|e| invalid(e.to_string()))?;
        if publics.leaf != leaf.hash() || publics.model_id != leaf.model_id {
            return Err(invalid(format!(
                "it proves leaf 0x{}, this task's leaf is 0x{}",
                hex::encode(publics.leaf),
                hex::encode(leaf.hash())
            )));
        }
        Ok(subtree)
    }

    /// Aggregates task proofs, in this order, into a batch: checks every proof and rejects
    /// duplicated task ids before any recursion, then proves the leaves and the chunks in
    /// parallel and merges independent subtrees in parallel.
    pub fn aggregate(&self, proofs: &[TaskProof], progress: &(dyn Fn(Step) + Sync)) -> Result<BatchFile> {
        self.aggregate_with(proofs, &[], progress)
    }

    /// [`aggregate`](Self::aggregate), taking the leaf proofs already at hand: `provided[i]`, if
    /// present, is task `i`'s leaf as [`adopt_leaf`](Self::adopt_leaf) returned it (only checked
    /// again for being this task's leaf of the circuit this registry lists: its public inputs
    /// and circuit digest).
    pub fn aggregate_with(
        &self,
        proofs: &[TaskProof],
        provided: &[Option<SubtreeProof>],
        progress: &(dyn Fn(Step) + Sync),
    ) -> Result<BatchFile> {
        // In parallel; a model's first check builds its circuits, the leaf circuit only where a
        // leaf is to be proven here.
        let indexed: Vec<usize> = (0..proofs.len()).collect();
        let leaves = rayon_map(&indexed, |&i| match provided.get(i).and_then(Option::as_ref) {
            Some(_) => self.verify_task(&proofs[i]),
            None => self.check(&proofs[i]),
        })?;
        check_leaves(&leaves)?;
        let subtrees = rayon_map(&indexed, |&i| {
            let given = provided.get(i).and_then(Option::as_ref).filter(|proof| self.still_fits(&leaves[i], proof));
            let leaf = match given {
                Some(leaf) => leaf.clone(),
                None => self.prove_leaf(&proofs[i])?.1,
            };
            progress(Step::Leaf);
            Ok(leaf)
        })?;
        let chunks = self.prove_chunks(&subtrees, progress)?;
        let root = self.merge_all(chunks, progress)?;
        Ok(self.circuits.batch_file(leaves, &root)?)
    }

    /// The chunk proofs of ordered leaf proofs: tasks `4i..4i + 4` in chunk `i`, in parallel.
    pub fn prove_chunks(&self, leaves: &[SubtreeProof], progress: &(dyn Fn(Step) + Sync)) -> Result<Vec<SubtreeProof>> {
        let chunks: Vec<&[SubtreeProof]> = leaves.chunks(CHUNK_LEAVES).collect();
        rayon_map(&chunks, |chunk| {
            let proof = self.circuits.prove_chunk(chunk, &self.registry)?;
            progress(Step::Chunk);
            Ok(proof)
        })
    }

    /// Merges ordered chunk proofs along the RFC 6962 shape (left subtree: the largest power of
    /// two below the count), both halves in parallel. Where a node's child is a node over two
    /// proofs, one merge proves both levels ([`MergeShape`]): [`merge_proofs`] of them in all.
    pub fn merge_all(&self, subtrees: Vec<SubtreeProof>, progress: &(dyn Fn(Step) + Sync)) -> Result<SubtreeProof> {
        let partial = self.merge_partial(subtrees, progress)?;
        self.close(partial, progress)
    }

    fn merge_partial(&self, mut subtrees: Vec<SubtreeProof>, progress: &(dyn Fn(Step) + Sync)) -> Result<Partial> {
        match subtrees.len() {
            0 => Err(tgrid_aggregation::Error::InvalidBatch("a batch needs at least one task".into()).into()),
            1 => Ok(Partial::Proven(subtrees.pop().expect("one"))),
            n => {
                let right = subtrees.split_off(split_point(n));
                let (l, r) =
                    rayon::join(|| self.merge_partial(subtrees, progress), || self.merge_partial(right, progress));
                self.combine(l?, r?, progress)
            }
        }
    }

    /// The node over two adjacent subtrees (`left` holds the earlier tasks): proven together
    /// with a pending child, or left pending when both children are proven.
    fn combine(&self, left: Partial, right: Partial, progress: &(dyn Fn(Step) + Sync)) -> Result<Partial> {
        let merged = match (left, right) {
            (Partial::Pending(pair), right) => {
                let c = self.close(right, progress)?;
                self.circuits.prove_merge3(MergeShape::LeftDeep, &pair[0], &pair[1], &c)?
            }
            (Partial::Proven(a), Partial::Pending(pair)) => {
                self.circuits.prove_merge3(MergeShape::RightDeep, &a, &pair[0], &pair[1])?
            }
            (Partial::Proven(a), Partial::Proven(b)) => return Ok(Partial::Pending(Box::new([a, b]))),
        };
        progress(Step::Merge);
        Ok(Partial::Proven(merged))
    }

    /// The proof of a subtree, proving a pending node on its own.
    fn close(&self, partial: Partial, progress: &(dyn Fn(Step) + Sync)) -> Result<SubtreeProof> {
        match partial {
            Partial::Proven(proof) => Ok(proof),
            Partial::Pending(pair) => {
                let merged = self.circuits.prove_merge(&pair[0], &pair[1])?;
                progress(Step::Merge);
                Ok(merged)
            }
        }
    }
}

/// A subtree on its way up the tree: proven, or a node over two proofs that is not proven yet,
/// so that its parent can prove both levels in one merge.
// A handful live at a time (one per tree level in progress): their size does not matter.
#[allow(clippy::large_enum_variant)]
enum Partial {
    Proven(SubtreeProof),
    Pending(Box<[SubtreeProof; 2]>),
}

/// How many chunk proofs a batch of `n` tasks takes.
pub fn chunk_proofs(n: usize) -> usize {
    n.div_ceil(CHUNK_LEAVES)
}

/// How many chunk and merge proofs [`Aggregator::aggregate`] and [`IncrementalTree`] take for
/// `n` tasks above their leaves (26 for 64 tasks: 16 chunks, 10 merges).
pub fn aggregation_proofs(n: usize) -> usize {
    chunk_proofs(n) + merge_proofs(chunk_proofs(n))
}

/// How many merge proofs [`Aggregator::merge_all`] takes for `n` chunks (42 for 64; `n - 1`
/// with two-child merges only).
pub fn merge_proofs(n: usize) -> usize {
    /// (merge proofs so far, whether the subtree's top node is pending) of `n > 0` tasks.
    fn walk(n: usize) -> (usize, bool) {
        if n == 1 {
            return (0, false);
        }
        let k = split_point(n);
        let ((l, l_pending), (r, r_pending)) = (walk(k), walk(n - k));
        match (l_pending, r_pending) {
            (true, true) => (l + r + 2, false),
            (true, false) | (false, true) => (l + r + 1, false),
            (false, false) => (l + r, true),
        }
    }
    match n {
        0 => 0,
        n => {
            let (merges, pending) = walk(n);
            merges + usize::from(pending)
        }
    }
}

/// Builds the leaf circuit of the registry entry (`model_id`, `digest`) from a model file's
/// bytes: the file must hold the model whose public or private task id is `model_id`, and its
/// leaf circuit must have `digest`. The error says which of the two is wrong.
pub fn leaf_circuit_from_model_file(
    bytes: &[u8],
    model_id: &[u8; 32],
    digest: &[u8; 32],
) -> std::result::Result<LeafCircuit, String> {
    leaf_circuit_of(Arc::new(task_verifier_from_model_file(bytes, model_id)?), digest)
}

/// The task verifier of `model_id` from a model file's bytes, which must hold the model whose
/// public or private task id is `model_id`.
pub fn task_verifier_from_model_file(bytes: &[u8], model_id: &[u8; 32]) -> std::result::Result<TaskVerifier, String> {
    let file = ModelFile::from_bytes(bytes).map_err(|e| e.to_string())?;
    // The registry lists a model's public and private circuits under two ids, one file.
    let Some(privacy) = Privacy::of_task_model_id(file.model.model_id(), model_id) else {
        return Err(format!(
            "the file holds model 0x{}, whose public and private task ids are not 0x{}",
            hex::encode(file.model.model_id()),
            hex::encode(model_id)
        ));
    };
    TaskVerifier::with_privacy(&file.model, &file.plan, privacy).map_err(|e| e.to_string())
}

/// The leaf circuit over `verifier`, which must have the registered `digest`.
fn leaf_circuit_of(verifier: Arc<TaskVerifier>, digest: &[u8; 32]) -> std::result::Result<LeafCircuit, String> {
    let leaf = LeafCircuit::new(verifier).map_err(|e| e.to_string())?;
    if &leaf.digest() != digest {
        return Err(format!(
            "the model's leaf circuit has digest 0x{}, the registry lists 0x{}",
            hex::encode(leaf.digest()),
            hex::encode(digest)
        ));
    }
    Ok(leaf)
}

fn rayon_map<T: Sync, U: Send>(items: &[T], f: impl Fn(&T) -> Result<U> + Sync + Send) -> Result<Vec<U>> {
    use rayon::prelude::*;
    items.par_iter().map(f).collect()
}

/// A batch tree built as leaf proofs arrive: every fourth leaf completes a chunk, proven at
/// once; equal-sized perfect subtrees of chunks merge as soon as both exist (like a binary
/// counter), so at most log2(n / 4) levels remain when the batch closes. Folding the remaining
/// subtrees from the right yields exactly the RFC 6962 shape. Merges are planned as in
/// [`Aggregator::merge_all`]: a node over two proofs waits for its parent, which proves both
/// levels at once.
pub struct IncrementalTree<'a> {
    aggregator: &'a Aggregator,
    /// Perfect subtrees, largest (earliest) first, with their chunk counts.
    stack: Vec<(usize, Partial)>,
    /// Leaf proofs of the chunk being filled.
    open_chunk: Vec<SubtreeProof>,
    leaves: Vec<TaskLeaf>,
}

impl std::fmt::Debug for IncrementalTree<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IncrementalTree").field("tasks", &self.leaves.len()).finish()
    }
}

impl<'a> IncrementalTree<'a> {
    /// An empty batch.
    pub fn new(aggregator: &'a Aggregator) -> Self {
        Self { aggregator, stack: Vec::new(), open_chunk: Vec::new(), leaves: Vec::new() }
    }

    /// The aggregator it proves with.
    pub fn aggregator(&self) -> &'a Aggregator {
        self.aggregator
    }

    /// Number of tasks pushed.
    pub fn len(&self) -> usize {
        self.leaves.len()
    }

    /// Whether no task was pushed.
    pub fn is_empty(&self) -> bool {
        self.leaves.is_empty()
    }

    /// Appends a proven leaf and proves what can be proven now: its chunk if the leaf completes
    /// it, and the merges that chunk completes.
    pub fn push(&mut self, leaf: TaskLeaf, proof: SubtreeProof) -> Result<()> {
        if self.leaves.iter().any(|l| l.task_id == leaf.task_id) {
            return Err(tgrid_aggregation::Error::InvalidBatch(format!(
                "task 0x{} is already in the batch",
                hex::encode(leaf.task_id)
            ))
            .into());
        }
        if proof.kind != SubtreeKind::Leaf {
            return Err(tgrid_aggregation::Error::InvalidBatch(format!(
                "a {} proof is no task leaf",
                proof.kind.name()
            ))
            .into());
        }
        self.open_chunk.push(proof);
        if self.open_chunk.len() == CHUNK_LEAVES {
            self.close_chunk()?;
        }
        self.leaves.push(leaf);
        Ok(())
    }

    /// Proves the open chunk and merges the perfect subtrees it completes.
    fn close_chunk(&mut self) -> Result<()> {
        let chunk = self.aggregator.circuits.prove_chunk(&self.open_chunk, &self.aggregator.registry)?;
        self.open_chunk.clear();
        self.stack.push((1, Partial::Proven(chunk)));
        while self.stack.len() >= 2 && self.stack[self.stack.len() - 1].0 == self.stack[self.stack.len() - 2].0 {
            let (n, right) = self.stack.pop().expect("two");
            let (_, left) = self.stack.pop().expect("two");
            self.stack.push((2 * n, self.aggregator.combine(left, right, &|_| {})?));
        }
        Ok(())
    }

    /// Closes the batch: proves the last chunk if it is not full, then merges the remaining
    /// subtrees from the right.
    pub fn finish(mut self) -> Result<BatchFile> {
        if !self.open_chunk.is_empty() {
            self.close_chunk()?;
        }
        let (_, mut acc) = self
            .stack
            .pop()
            .ok_or_else(|| tgrid_aggregation::Error::InvalidBatch("a batch needs at least one task".into()))?;
        while let Some((_, left)) = self.stack.pop() {
            acc = self.aggregator.combine(left, acc, &|_| {})?;
        }
        let root = self.aggregator.close(acc, &|_| {})?;
        Ok(self.aggregator.circuits.batch_file(self.leaves, &root)?)
    }
}

#[cfg(test)]
mod plan_tests {
    use super::{aggregation_proofs, merge_proofs};

    #[test]
    fn chunks_of_four_leave_26_proofs_for_64_tasks() {
        let counts: Vec<usize> = (0..=9).map(aggregation_proofs).collect();
        assert_eq!(counts, [0, 1, 1, 1, 1, 3, 3, 3, 3, 4]);
        assert_eq!(aggregation_proofs(64), 16 + 10);
        assert_eq!(aggregation_proofs(256), 64 + 42);
    }

    #[test]
    fn two_level_merges_cut_the_proof_count_by_a_third() {
        let counts: Vec<usize> = (0..=8).map(merge_proofs).collect();
        assert_eq!(counts, [0, 0, 1, 1, 2, 3, 3, 4, 5]);
        assert_eq!(merge_proofs(64), 42);
        assert_eq!(merge_proofs(256), 170);
        // Never more than the n - 1 of one-level merges, and at least half of them.
        for n in 2..300 {
            let m = merge_proofs(n);
            assert!(m < n && 2 * m >= n - 1, "{n} tasks: {m} merges");
        }
    }
}
