//! Task proofs: one segment circuit for a model that fits, or a chain of segment circuits joined
//! by recursion into ONE proof, so peak memory depends on the segment size, not on the depth.
//!
//! Chain: `S_1 … S_k` prove segments (public inputs: commitments at their two cuts);
//! `J_2` verifies `S_1` and `S_2` and checks `S_1.out == S_2.in`; `J_i` verifies `J_{i-1}` and
//! `S_i` likewise. The last join carries the task binding and is the task proof.

use std::time::Instant;

use plonky2::iop::witness::{PartialWitness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitData, VerifierCircuitData};
use plonky2::plonk::proof::ProofWithPublicInputs;
use plonky2::plonk::prover::prove;
use plonky2::util::timing::TimingTree;
use serde::{Deserialize, Serialize};

use crate::circuit::{join_config, zk_join_config, BuildOptions, PublicInputs, Segment, SegmentCircuit};
use crate::commit::{EncryptedTensor, OutputKey, Salt};
use crate::error::{Error, Result};
use crate::files::TaskProof;
use crate::infer::{self, Trace};
use crate::model::QuantModel;
use crate::privacy::Privacy;
use crate::prover_cache::{fetch_or_build, TaskCircuitKey};
use crate::verifier_cache::{self, BuiltVerifier};
use crate::{C, D, F};

/// Where the model is cut: segment `i` covers nodes `cuts[i-1]..cuts[i]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentPlan {
    /// Node indices at which a new segment starts, strictly increasing, inside `1..nodes`.
    pub cuts: Vec<usize>,
}

/// Estimated gate rows of one node, used only to place cuts. The weights come from the gate
/// counts of the transformer fixtures (`RUST_LOG=plonky2=debug` prints them): a weighted-sum row
/// holds about 64 multiply-accumulates, a dot-product row 32–39 products, and each requantized
/// output costs about a third of a row (its share of a requantization row and of the byte
/// lookups of its remainder). The vit and gpt estimates land within 10 % of their real rows.
fn estimated_rows(model: &QuantModel, node: usize) -> usize {
    use crate::model::Op;
    let n = &model.nodes[node];
    let out = crate::model::numel(&n.shape);
    let requantized = out / 3;
    match &n.op {
        Op::Dense { weights, bias, .. } => out / bias.len() * weights.len() / 64 + requantized,
        Op::Conv { weights, c_out, .. } => out / c_out * weights.len() / 64 + requantized,
        Op::AvgPool { kernel, .. } => out * kernel[0] * kernel[1] / 64 + requantized,
        Op::MaxPool { kernel, .. } => out * kernel[0] * kernel[1] / 20 + out,
        Op::MatMul { .. } | Op::ScoresSoftmax { .. } => {
            let k = model.tensor_shape(n.inputs[0]).last().copied().unwrap_or(1);
            let (_, rows_per_sum) = crate::gates::DotProductGate::for_len(
                k,
                crate::segment_config(0, crate::Privacy::Public).num_routed_wires,
            );
            let products = (out as f64 * rows_per_sum).ceil() as usize + requantized;
            // The Softmax: per kept score its 16-bit range check, the two-table exponential
            // (six lookups, four arithmetic operations) and the quotient.
            let softmax = if matches!(n.op, Op::ScoresSoftmax { .. }) { out } else { 0 };
            products + softmax
        }
        Op::LayerNorm { .. } | Op::Softmax { .. } => out / 2 + requantized,
        Op::Add { .. } | Op::AddConst { .. } | Op::Relu => out / 10 + requantized,
        Op::Table { .. } => out / 40,
        Op::Embedding { .. } => out / 20 + out / 40,
        Op::Gather { .. } | Op::Concat { .. } | Op::Reshape => 0,
    }
}

impl SegmentPlan {
    /// Cuts the model greedily so no segment is estimated above `max_rows` gate rows (a single
    /// layer larger than that stays one segment). A segment's circuit has the next power of two
    /// of its rows, so `max_rows` a power of two wastes the least.
    pub fn auto(model: &QuantModel, max_rows: usize) -> Self {
        let mut cuts = Vec::new();
        let mut rows = 0;
        for i in 0..model.nodes.len() {
            let r = estimated_rows(model, i);
            if rows > 0 && rows + r > max_rows {
                cuts.push(i);
                rows = 0;
            }
            rows += r;
        }
        SegmentPlan { cuts }
    }

    /// The estimated gate rows of each segment (before padding to a power of two).
    pub fn estimated_rows(&self, model: &QuantModel) -> Vec<usize> {
        let mut bounds = vec![0];
        bounds.extend(&self.cuts);
        bounds.push(model.nodes.len());
        bounds.windows(2).map(|w| (w[0]..w[1]).map(|i| estimated_rows(model, i)).sum()).collect()
    }

    /// Checks the cuts against a model.
    pub fn validate(&self, model: &QuantModel) -> Result<()> {
        let n = model.nodes.len();
        let increasing = self.cuts.windows(2).all(|w| w[0] < w[1]);
        if !increasing || self.cuts.iter().any(|&c| c == 0 || c >= n) {
            return Err(Error::InvalidModel(format!("invalid segment cuts {:?} for {n} layers", self.cuts)));
        }
        Ok(())
    }

    /// The segments in order.
    pub fn segments(&self, model: &QuantModel) -> Vec<Segment> {
        let mut bounds = vec![0];
        bounds.extend(&self.cuts);
        bounds.push(model.nodes.len());
        bounds.windows(2).map(|w| Segment::new(model, w[0]..w[1])).collect()
    }
}

/// Size and timing figures of a proof, for reports and benchmarks.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CircuitStats {
    /// Segments the model was cut into.
    pub segments: usize,
    /// Largest segment's padded row count.
    pub max_segment_rows: usize,
    /// Sum of all segment row counts.
    pub total_rows: usize,
    /// Seconds spent building circuits.
    pub build_seconds: f64,
    /// Seconds spent proving (segments and joins).
    pub prove_seconds: f64,
}

/// Progress callback: (stage description, steps done, steps total).
pub type Progress<'a> = &'a mut dyn FnMut(&str, usize, usize);

/// A proof with the data needed to verify it recursively.
struct Proven {
    proof: ProofWithPublicInputs<F, C, D>,
    verifier: VerifierCircuitData<F, C, D>,
}

/// Proves tasks for one model.
pub struct TaskProver {
    model: QuantModel,
    /// The id the proofs expose: the model id (SHA-256 of the model bytes) for a public task,
    /// its private variant for a private one ([`Privacy::task_model_id`]).
    model_id: [u8; 32],
    plan: SegmentPlan,
    privacy: Privacy,
    /// Kept only for a single-segment model (its memory is bounded by the segment size anyway).
    pub(crate) single: Option<SegmentCircuit>,
    /// Where a segmented model's segment and join circuits are kept between proofs (one in
    /// memory at a time), if a cache is in use.
    cache: Option<tgrid_circuit_cache::CircuitCache>,
    build_seconds: f64,
}

impl std::fmt::Debug for TaskProver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskProver").field("model", &self.model.name).field("plan", &self.plan).finish()
    }
}

/// Proves `data` with witness `pw`. plonky2 panics on some unsatisfiable witnesses; this
/// returns [`Error::Proving`] instead, so a bad witness never crashes a prover or a service.
pub fn prove_circuit(data: &CircuitData<F, C, D>, pw: PartialWitness<F>) -> Result<ProofWithPublicInputs<F, C, D>> {
    // plonky2's witness generation panics on some unsatisfiable witnesses (e.g. a lookup
    // outside its table); treat that as a proving failure, not a crash.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        prove::<F, C, D>(&data.prover_only, &data.common, pw, &mut TimingTree::default())
    }));
    match result {
        Ok(Ok(p)) => Ok(p),
        Ok(Err(e)) => Err(Error::Proving(e.to_string())),
        Err(_) => Err(Error::Proving("the witness does not satisfy the circuit".into())),
    }
}

impl TaskProver {
    /// Prepares proving public tasks for `model` cut by `plan`; builds the circuit now for a
    /// one-segment model.
    pub fn new(model: QuantModel, plan: SegmentPlan) -> Result<Self> {
        Self::with_privacy(model, plan, Privacy::Public)
    }

    /// Prepares proving tasks of mode `privacy` for `model` cut by `plan`, with the circuit cache
    /// of the process if one is enabled (see [`with_cache`](Self::with_cache)).
    pub fn with_privacy(model: QuantModel, plan: SegmentPlan, privacy: Privacy) -> Result<Self> {
        Self::with_cache(model, plan, privacy, tgrid_circuit_cache::installed())
    }

    /// Prepares proving tasks of mode `privacy` for `model` cut by `plan`, its circuits taken
    /// from `cache` when it holds them (and stored there otherwise): a one-segment model's
    /// circuit now (the character GPT's 65,536 rows: 11–16 s of building), a segmented model's
    /// segment and join circuits at each proof, one at a time.
    pub fn with_cache(
        model: QuantModel,
        plan: SegmentPlan,
        privacy: Privacy,
        cache: Option<&tgrid_circuit_cache::CircuitCache>,
    ) -> Result<Self> {
        plan.validate(&model)?;
        let start = Instant::now();
        let model_id = privacy.task_model_id(model.model_id());
        let single = if plan.cuts.is_empty() {
            let build = || whole_model_circuit(&model, privacy);
            Some(fetch_or_build(cache, model_id, privacy, TaskCircuitKey::Whole, build)?)
        } else {
            None
        };
        let cache = cache.cloned();
        Ok(Self { model_id, model, plan, privacy, single, cache, build_seconds: start.elapsed().as_secs_f64() })
    }

    /// Whether this prover proves public or private tasks.
    pub fn privacy(&self) -> Privacy {
        self.privacy
    }

    /// The model id the proofs expose (the private variant's for a private prover).
    pub fn task_model_id(&self) -> [u8; 32] {
        self.model_id
    }

    /// The model.
    pub fn model(&self) -> &QuantModel {
        &self.model
    }

    /// Padded rows of the single circuit (None for a segmented model).
    pub fn single_rows(&self) -> Option<usize> {
        self.single.as_ref().map(|c| c.rows())
    }

    /// Runs the integer inference and proves it for `task_id` and `provider` (a public task).
    pub fn prove(
        &self,
        input: &[i8],
        task_id: [u8; 32],
        provider: [u8; 20],
        progress: Progress<'_>,
    ) -> Result<(TaskProof, Trace, CircuitStats)> {
        if self.privacy != Privacy::Public {
            return Err(Error::InvalidInput("a private task is proven with its input salt (prove_private)".into()));
        }
        self.prove_with(input, None, task_id, provider, progress)
    }

    /// Proves a private task: as [`prove`](Self::prove), with the input commitment salted by
    /// `input_salt` and the output encrypted under its [`OutputKey`] (the proof's output
    /// commitment is that of [`EncryptedTensor::encrypt`]`(output, key)`).
    pub fn prove_private(
        &self,
        input: &[i8],
        input_salt: &Salt,
        task_id: [u8; 32],
        provider: [u8; 20],
        progress: Progress<'_>,
    ) -> Result<(TaskProof, Trace, CircuitStats)> {
        if self.privacy != Privacy::Private {
            return Err(Error::InvalidInput(
                "an input salt is for private tasks; this prover proves public ones".into(),
            ));
        }
        self.prove_with(input, Some(input_salt), task_id, provider, progress)
    }

    fn prove_with(
        &self,
        input: &[i8],
        salt: Option<&Salt>,
        task_id: [u8; 32],
        provider: [u8; 20],
        progress: Progress<'_>,
    ) -> Result<(TaskProof, Trace, CircuitStats)> {
        let trace = infer::run(&self.model, input)?;
        let mut stats = CircuitStats { build_seconds: self.build_seconds, ..Default::default() };
        let task = (&task_id, &provider);
        let proof = match self.prove_verified(input, &trace, salt, task, false, &mut stats, progress) {
            // Only circuits taken from a cache can be at fault for a proof that does not verify
            // (a freshly built circuit proves whatever witness satisfies it): prove once more
            // with circuits built now rather than hand out a proof no one accepts.
            Err(Error::Proving(reason)) if self.cache.is_some() => {
                tracing::warn!(%reason, "proving again with circuits built now instead of the cached ones");
                stats = CircuitStats { build_seconds: self.build_seconds, ..Default::default() };
                self.prove_verified(input, &trace, salt, task, true, &mut stats, progress)?
            }
            other => other?,
        };
        let (input_commitment, output_commitment) = match salt {
            Some(salt) => (
                crate::commit::commit_salted(input, salt),
                EncryptedTensor::encrypt(trace.output(), &OutputKey::from_input_salt(salt)).commitment(),
            ),
            None => (crate::commit::commit(input), crate::commit::commit(trace.output())),
        };
        let expected = PublicInputs { task_id, provider, model_id: self.model_id, input_commitment, output_commitment };
        let claimed = PublicInputs::from_fields(&proof.public_inputs)?;
        if claimed != expected {
            return Err(Error::Proving("the proof's public inputs differ from the integer inference".into()));
        }
        Ok((TaskProof::new(self.model_id, proof.to_bytes()), trace, stats))
    }

    /// The task's proof, checked by the verifier of the circuit that produced it (milliseconds):
    /// plonky2's prover checks no constraint, so a witness that does not satisfy the circuit, or
    /// a damaged cached circuit, would otherwise yield a proof that only fails at the sequencer.
    /// With `fresh`, every circuit is built now, none taken from the cache.
    #[allow(clippy::too_many_arguments)]
    fn prove_verified(
        &self,
        input: &[i8],
        trace: &Trace,
        salt: Option<&Salt>,
        task: (&[u8; 32], &[u8; 20]),
        fresh: bool,
        stats: &mut CircuitStats,
        progress: Progress<'_>,
    ) -> Result<ProofWithPublicInputs<F, C, D>> {
        let cache = if fresh { None } else { self.cache.as_ref() };
        let proven = match &self.single {
            Some(loaded) => {
                let built;
                let circuit = if fresh {
                    let start = Instant::now();
                    built = whole_model_circuit(&self.model, self.privacy)?;
                    stats.build_seconds = start.elapsed().as_secs_f64();
                    &built
                } else {
                    loaded
                };
                progress("proving", 0, 1);
                let start = Instant::now();
                let pw = circuit.witness(&[input], Some(task), salt)?;
                let proof = prove_circuit(&circuit.data, pw)?;
                stats.prove_seconds = start.elapsed().as_secs_f64();
                stats.segments = 1;
                stats.max_segment_rows = circuit.rows();
                stats.total_rows = circuit.rows();
                progress("proving", 1, 1);
                Proven { proof, verifier: circuit.data.verifier_data() }
            }
            None => self.prove_chain(trace, salt, *task.0, *task.1, cache, stats, progress)?,
        };
        crate::hash::verify_proof_parallel(&proven.verifier, proven.proof.clone())
            .map_err(|e| Error::Proving(format!("the proof does not verify under its own circuit ({e})")))?;
        Ok(proven.proof)
    }

    #[allow(clippy::too_many_arguments)]
    fn prove_chain(
        &self,
        trace: &Trace,
        salt: Option<&Salt>,
        task_id: [u8; 32],
        provider: [u8; 20],
        cache: Option<&tgrid_circuit_cache::CircuitCache>,
        stats: &mut CircuitStats,
        progress: Progress<'_>,
    ) -> Result<Proven> {
        let segments = self.plan.segments(&self.model);
        let k = segments.len();
        let total_steps = 2 * k - 1;
        let mut done = 0;
        let mut acc: Option<Proven> = None;
        stats.segments = k;
        for (i, segment) in segments.into_iter().enumerate() {
            progress(&format!("segment {}/{k}", i + 1), done, total_steps);
            let start = Instant::now();
            let build =
                || SegmentCircuit::build(&self.model, segment.clone(), BuildOptions::binding(false, self.privacy));
            let which = TaskCircuitKey::Segment(segment.nodes.clone());
            let circuit = fetch_or_build(cache, self.model_id, self.privacy, which, build)?;
            stats.build_seconds += start.elapsed().as_secs_f64();
            stats.max_segment_rows = stats.max_segment_rows.max(circuit.rows());
            stats.total_rows += circuit.rows();
            let live: Vec<&[i8]> = segment.live_in.iter().map(|&t| trace.tensors[t].as_slice()).collect();
            let start = Instant::now();
            let proof = prove_circuit(&circuit.data, circuit.witness(&live, None, salt)?)?;
            stats.prove_seconds += start.elapsed().as_secs_f64();
            done += 1;
            let seg = Proven { proof, verifier: circuit.data.verifier_data() };
            drop(circuit);
            acc = Some(match acc {
                None => seg,
                Some(prev) => {
                    progress(&format!("join {}/{}", i, k - 1), done, total_steps);
                    let last = i + 1 == k;
                    let start = Instant::now();
                    let which = TaskCircuitKey::Join {
                        prev: &prev.verifier.verifier_only.circuit_digest.elements,
                        seg: &seg.verifier.verifier_only.circuit_digest.elements,
                        last,
                    };
                    let build = || JoinCircuit::build(&self.model, &prev.verifier, &seg.verifier, last, self.privacy);
                    let join = fetch_or_build(cache, self.model_id, self.privacy, which, build)?;
                    stats.build_seconds += start.elapsed().as_secs_f64();
                    let start = Instant::now();
                    let proven = join.prove(&prev, &seg, last.then_some((&task_id, &provider)))?;
                    stats.prove_seconds += start.elapsed().as_secs_f64();
                    done += 1;
                    proven
                }
            });
        }
        progress("done", total_steps, total_steps);
        acc.ok_or_else(|| Error::InvalidModel("a segmented model has at least two segments".into()))
    }

    /// Runs the circuits' witness generation (no proving) and reads back every tensor the
    /// circuits compute, in int8: the circuit's own view of the inference. Tests compare it
    /// with [`infer::run`] bit for bit.
    pub fn circuit_trace(&self, input: &[i8]) -> Result<Trace> {
        let trace = infer::run(&self.model, input)?;
        let mut tensors: Vec<Option<Vec<i8>>> = vec![None; self.model.nodes.len() + 1];
        tensors[0] = Some(input.to_vec());
        for segment in self.plan.segments(&self.model) {
            let owned;
            let circuit = match &self.single {
                Some(c) => c,
                None => {
                    owned = SegmentCircuit::build(
                        &self.model,
                        segment.clone(),
                        BuildOptions::binding(false, self.privacy),
                    )?;
                    &owned
                }
            };
            // Live-in tensors come from the circuit's own earlier segments.
            let live: Vec<&[i8]> =
                segment.live_in.iter().map(|&t| tensors[t].as_deref().unwrap_or(&trace.tensors[t])).collect();
            // Any salt does: only the commitments depend on it.
            let zero = Salt::from_bytes([0; 32])?;
            let pw = circuit.witness(&live, Some((&[0; 32], &[0; 20])), Some(&zero))?;
            let witness =
                plonky2::iop::generator::generate_partial_witness(pw, &circuit.data.prover_only, &circuit.data.common)
                    .map_err(|e| Error::Proving(e.to_string()))?;
            for (&t, targets) in &circuit.tensors {
                let values = targets
                    .iter()
                    .map(|&x| {
                        use plonky2::field::types::PrimeField64;
                        use plonky2::iop::witness::Witness;
                        let v = witness.try_get_target(x).map(|f| f.to_canonical_u64()).unwrap_or(u64::MAX);
                        u8::try_from(v)
                            .map(|u| (u ^ 0x80) as i8)
                            .map_err(|_| Error::Proving(format!("tensor {t} holds a non-byte value")))
                    })
                    .collect::<Result<Vec<i8>>>()?;
                tensors[t] = Some(values);
            }
        }
        let tensors = tensors
            .into_iter()
            .enumerate()
            .map(|(t, v)| v.ok_or_else(|| Error::Proving(format!("tensor {t} not computed"))))
            .collect::<Result<_>>()?;
        Ok(Trace { tensors })
    }

    /// Proves a single-segment model with a deliberately wrong witness (soundness tests), with
    /// a malicious prover ([`crate::malicious`]) that lets a lookup read outside its table and
    /// connected wires differ where the fault needs it, so that the verifier sees the proof.
    ///
    /// A private prover's proof is private (a random input salt), its bytes checked by limbs.
    #[cfg(test)]
    pub(crate) fn prove_with_fault(&self, input: &[i8], fault: (usize, crate::gadgets::Fault)) -> Result<TaskProof> {
        let segment = Segment::new(&self.model, 0..self.model.nodes.len());
        let build = |cut| {
            let options =
                BuildOptions { bind_task: true, fault: Some(fault), cut, privacy: self.privacy, ..Default::default() };
            SegmentCircuit::build(&self.model, segment.clone(), options)
        };
        let mut circuit = build(false)?;
        crate::testing::cut_copy_constraints(&mut circuit.data, build(true)?.data);
        let salt = crate::Salt::random();
        let salt = self.privacy.zero_knowledge().then_some(&salt);
        let pw = circuit.witness(&[input], Some((&[1; 32], &[2; 20])), salt)?;
        let proof = crate::malicious::prove_admitting_any_byte(&mut circuit.data, pw)
            .map_err(|e| Error::Proving(e.to_string()))?;
        Ok(TaskProof::new(self.model_id, proof.to_bytes()))
    }
}

/// Soundness tests of the chain: proofs a malicious prover could build.
#[cfg(test)]
impl TaskProver {
    /// Proves a two-segment model whose second segment ran on the first segment's output with
    /// one value changed when `tamper` is set, and joins the two with a malicious prover that
    /// ignores the join's commitment link ([`crate::testing::cut_copy_constraints`]).
    pub(crate) fn prove_with_link_fault(&self, input: &[i8], tamper: bool) -> Result<TaskProof> {
        let trace = infer::run(&self.model, input)?;
        let segments = self.plan.segments(&self.model);
        assert_eq!(segments.len(), 2, "a two-segment plan");
        let mut live: Vec<Vec<Vec<i8>>> =
            segments.iter().map(|s| s.live_in.iter().map(|&t| trace.tensors[t].clone()).collect()).collect();
        if tamper {
            live[1][0][0] = live[1][0][0].wrapping_add(1);
        }
        let mut proven = Vec::new();
        for (segment, live) in segments.into_iter().zip(&live) {
            let circuit = SegmentCircuit::build(&self.model, segment, BuildOptions::default())?;
            let live: Vec<&[i8]> = live.iter().map(Vec::as_slice).collect();
            let proof = prove_circuit(&circuit.data, circuit.witness(&live, None, None)?)?;
            proven.push(Proven { proof, verifier: circuit.data.verifier_data() });
        }
        let (first, second) = (&proven[0], &proven[1]);
        let public = Privacy::Public;
        let mut join = JoinCircuit::build_linked(&self.model, &first.verifier, &second.verifier, true, public, true)?;
        let cut = JoinCircuit::build_linked(&self.model, &first.verifier, &second.verifier, true, public, false)?;
        crate::testing::cut_copy_constraints(&mut join.data, cut.data);
        let joined = join.prove(first, second, Some((&[1; 32], &[2; 20])))?;
        Ok(TaskProof::new(self.model_id, joined.proof.to_bytes()))
    }
}

/// Soundness tests of private tasks: proofs whose output key is not the input salt's.
#[cfg(test)]
impl TaskProver {
    /// Proves a single-segment private task; with `chosen`, a malicious prover encrypts the
    /// output under that key instead of the input salt's (the build's key wiring cut,
    /// [`crate::testing::cut_copy_constraints`]).
    pub(crate) fn prove_with_output_key(
        &self,
        input: &[i8],
        salt: &Salt,
        chosen: Option<&OutputKey>,
    ) -> Result<TaskProof> {
        let segment = Segment::new(&self.model, 0..self.model.nodes.len());
        let build = |cut_output_key| {
            let options =
                BuildOptions { bind_task: true, privacy: Privacy::Private, cut_output_key, ..Default::default() };
            SegmentCircuit::build(&self.model, segment.clone(), options)
        };
        let mut circuit = build(false)?;
        let task = Some((&[1u8; 32], &[2u8; 20]));
        let pw = match chosen {
            None => circuit.witness(&[input], task, Some(salt))?,
            Some(key) => {
                let cut = build(true)?;
                let mut pw = cut.witness(&[input], task, Some(salt))?;
                for (t, v) in cut.cut_key.expect("a cut key").into_iter().zip(key.to_elements()) {
                    pw.set_target(t, v).map_err(|e| Error::Proving(e.to_string()))?;
                }
                crate::testing::cut_copy_constraints(&mut circuit.data, cut.data);
                pw
            }
        };
        let proof = prove_circuit(&circuit.data, pw)?;
        Ok(TaskProof::new(self.model_id, proof.to_bytes()))
    }

    /// Proves a two-segment private task whose second segment takes the output key of
    /// `second_salt` (the first derives it from `salt`) and joins them, with the join's
    /// commitment link (`link`) or a malicious prover without it.
    pub(crate) fn prove_private_chain(
        &self,
        input: &[i8],
        salt: &Salt,
        second_salt: &Salt,
        link: bool,
    ) -> Result<TaskProof> {
        let trace = infer::run(&self.model, input)?;
        let segments = self.plan.segments(&self.model);
        assert_eq!(segments.len(), 2, "a two-segment plan");
        let mut proven = Vec::new();
        for (segment, salt) in segments.into_iter().zip([salt, second_salt]) {
            let live: Vec<&[i8]> = segment.live_in.iter().map(|&t| trace.tensors[t].as_slice()).collect();
            let circuit = SegmentCircuit::build(&self.model, segment, BuildOptions::binding(false, Privacy::Private))?;
            let proof = prove_circuit(&circuit.data, circuit.witness(&live, None, Some(salt))?)?;
            proven.push(Proven { proof, verifier: circuit.data.verifier_data() });
        }
        let (first, second) = (&proven[0], &proven[1]);
        let private = Privacy::Private;
        let mut join = JoinCircuit::build_linked(&self.model, &first.verifier, &second.verifier, true, private, true)?;
        if !link {
            let cut = JoinCircuit::build_linked(&self.model, &first.verifier, &second.verifier, true, private, false)?;
            crate::testing::cut_copy_constraints(&mut join.data, cut.data);
        }
        let joined = join.prove(first, second, Some((&[1; 32], &[2; 20])))?;
        Ok(TaskProof::new(self.model_id, joined.proof.to_bytes()))
    }
}

/// The circuit of a one-segment model, bound to the task.
fn whole_model_circuit(model: &QuantModel, privacy: Privacy) -> Result<SegmentCircuit> {
    let segment = Segment::new(model, 0..model.nodes.len());
    SegmentCircuit::build(model, segment, BuildOptions::binding(true, privacy))
}

/// A join step of the chain.
pub(crate) struct JoinCircuit {
    pub(crate) data: CircuitData<F, C, D>,
    pub(crate) prev: plonky2::plonk::proof::ProofWithPublicInputsTarget<D>,
    pub(crate) seg: plonky2::plonk::proof::ProofWithPublicInputsTarget<D>,
    pub(crate) binding: Option<crate::circuit::BindingTargets>,
}

impl JoinCircuit {
    fn build(
        model: &QuantModel,
        prev: &VerifierCircuitData<F, C, D>,
        seg: &VerifierCircuitData<F, C, D>,
        last: bool,
        privacy: Privacy,
    ) -> Result<Self> {
        Self::build_linked(model, prev, seg, last, privacy, true)
    }

    /// [`Self::build`]; only soundness tests leave out the link (`link = false`), to give a
    /// malicious prover the partition of a join without it.
    fn build_linked(
        model: &QuantModel,
        prev: &VerifierCircuitData<F, C, D>,
        seg: &VerifierCircuitData<F, C, D>,
        last: bool,
        privacy: Privacy,
        link: bool,
    ) -> Result<Self> {
        let config = if privacy.zero_knowledge() { zk_join_config() } else { join_config() };
        let mut builder = CircuitBuilder::<F, D>::new(config);
        let prev_t = builder.add_virtual_proof_with_pis(&prev.common);
        let prev_vd = builder.constant_verifier_data(&prev.verifier_only);
        builder.verify_proof::<C>(&prev_t, &prev_vd, &prev.common);
        let seg_t = builder.add_virtual_proof_with_pis(&seg.common);
        let seg_vd = builder.constant_verifier_data(&seg.verifier_only);
        builder.verify_proof::<C>(&seg_t, &seg_vd, &seg.common);
        // Both children expose [in (4), out (4)] (a join that is not the last one does too).
        let (p, s) = (&prev_t.public_inputs, &seg_t.public_inputs);
        if p.len() != 8 || s.len() != 8 {
            return Err(Error::InvalidModel("segment proofs must expose two commitments".into()));
        }
        for j in (0..4).filter(|_| link) {
            builder.connect(p[4 + j], s[j]);
        }
        let binding = if last {
            let task_id: [_; 8] = std::array::from_fn(|_| builder.add_virtual_public_input());
            let provider: [_; 5] = std::array::from_fn(|_| builder.add_virtual_public_input());
            for w in crate::circuit::model_id_words(model, privacy) {
                let c = builder.constant(w);
                builder.register_public_input(c);
            }
            Some(crate::circuit::BindingTargets { task_id, provider })
        } else {
            None
        };
        builder.register_public_inputs(&p[0..4]);
        builder.register_public_inputs(&s[4..8]);
        Ok(Self { data: builder.build::<C>(), prev: prev_t, seg: seg_t, binding })
    }

    fn prove(&self, prev: &Proven, seg: &Proven, task: Option<(&[u8; 32], &[u8; 20])>) -> Result<Proven> {
        let mut pw = PartialWitness::new();
        let err = |e: anyhow::Error| Error::Proving(e.to_string());
        pw.set_proof_with_pis_target(&self.prev, &prev.proof).map_err(err)?;
        pw.set_proof_with_pis_target(&self.seg, &seg.proof).map_err(err)?;
        if let (Some(b), Some((task_id, provider))) = (&self.binding, task) {
            crate::circuit::set_binding(&mut pw, b, task_id, provider)?;
        }
        let proof = prove_circuit(&self.data, pw)?;
        Ok(Proven { proof, verifier: self.data.verifier_data() })
    }
}

/// Verifies task proofs of one model. Building it rebuilds the model's circuits from the
/// weights (so a verifier never trusts circuit data from a file) and keeps only the final
/// verifier data.
pub struct TaskVerifier {
    model_id: [u8; 32],
    privacy: Privacy,
    verifier: VerifierCircuitData<F, C, D>,
    segment_rows: Vec<usize>,
}

impl std::fmt::Debug for TaskVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskVerifier").field("model_id", &hex::encode(self.model_id)).finish()
    }
}

impl TaskVerifier {
    /// Rebuilds the verifier of public tasks of `model` cut by `plan`.
    pub fn new(model: &QuantModel, plan: &SegmentPlan) -> Result<Self> {
        Self::with_privacy(model, plan, Privacy::Public)
    }

    /// Rebuilds the verifier of tasks of mode `privacy` of `model` cut by `plan`, or loads its
    /// verifier data from the process's circuit cache if a binary enabled one
    /// ([`tgrid_circuit_cache::enable`]; the auditor's tools do not).
    pub fn with_privacy(model: &QuantModel, plan: &SegmentPlan, privacy: Privacy) -> Result<Self> {
        Self::with_cache(model, plan, privacy, tgrid_circuit_cache::installed())
    }

    /// [`with_privacy`](Self::with_privacy) with the verifier data kept in `cache` (none:
    /// always rebuilt).
    pub fn with_cache(
        model: &QuantModel,
        plan: &SegmentPlan,
        privacy: Privacy,
        cache: Option<&tgrid_circuit_cache::CircuitCache>,
    ) -> Result<Self> {
        plan.validate(model)?;
        let built = verifier_cache::fetch_or_build(cache, model.model_id(), plan, privacy, || {
            let segments = plan.segments(model);
            let bind = segments.len() == 1;
            let mut acc: Option<VerifierCircuitData<F, C, D>> = None;
            let mut segment_rows = Vec::new();
            let k = segments.len();
            for (i, segment) in segments.into_iter().enumerate() {
                let circuit = SegmentCircuit::build(model, segment, BuildOptions::binding(bind, privacy))?;
                segment_rows.push(circuit.rows());
                let seg = circuit.data.verifier_data();
                drop(circuit);
                acc = Some(match acc {
                    None => seg,
                    Some(prev) => JoinCircuit::build(model, &prev, &seg, i + 1 == k, privacy)?.data.verifier_data(),
                });
            }
            Ok(BuiltVerifier { verifier: acc.expect("at least one segment"), segment_rows })
        })?;
        let model_id = privacy.task_model_id(model.model_id());
        Ok(Self { model_id, privacy, verifier: built.verifier, segment_rows: built.segment_rows })
    }

    /// Whether it verifies public or private tasks.
    pub fn privacy(&self) -> Privacy {
        self.privacy
    }

    /// The model id the proofs expose: the model's own for public tasks, its private variant's
    /// ([`Privacy::task_model_id`]) for private ones.
    pub fn model_id(&self) -> [u8; 32] {
        self.model_id
    }

    /// Padded rows of each segment circuit.
    pub fn segment_rows(&self) -> &[usize] {
        &self.segment_rows
    }

    /// The digest of the final circuit (the model's leaf circuit, whose digest the registry pins, verifies it).
    pub fn circuit_digest(&self) -> [u8; 32] {
        crate::files::hash_to_bytes(&self.verifier.verifier_only.circuit_digest)
    }

    /// The final circuit's verifier data (what a recursive verifier of task proofs needs).
    pub fn verifier_data(&self) -> &VerifierCircuitData<F, C, D> {
        &self.verifier
    }

    /// Checks a proof; on success returns its public inputs (bound to this model).
    pub fn verify(&self, proof: &TaskProof) -> Result<PublicInputs> {
        let (publics, decoded) = self.decode(proof)?;
        self.check(decoded)?;
        Ok(publics)
    }

    /// As [`verify`](Self::verify), also returning the decoded plonky2 proof (for recursion).
    pub fn verify_decoded(&self, proof: &TaskProof) -> Result<(PublicInputs, ProofWithPublicInputs<F, C, D>)> {
        let (publics, decoded) = self.decode(proof)?;
        self.check(decoded.clone())?;
        Ok((publics, decoded))
    }

    /// Decodes a proof of this model (bounded by the circuit's shape) and its public inputs.
    fn decode(&self, proof: &TaskProof) -> Result<(PublicInputs, ProofWithPublicInputs<F, C, D>)> {
        if proof.model_id != self.model_id {
            return Err(Error::InvalidProof(format!(
                "the proof is for model 0x{}, not 0x{}",
                hex::encode(proof.model_id),
                hex::encode(self.model_id)
            )));
        }
        let decoded = crate::files::decode_plonky2_proof(&proof.proof, &self.verifier.common)?;
        let publics = PublicInputs::from_fields(&decoded.public_inputs)?;
        if publics.model_id != self.model_id {
            return Err(Error::InvalidProof("the proof's model id public input does not match".into()));
        }
        Ok((publics, decoded))
    }

    /// plonky2's verification; it takes the proof by value, and [`verify`](Self::verify) has no
    /// further use for it, so only [`verify_decoded`](Self::verify_decoded) copies it.
    fn check(&self, decoded: ProofWithPublicInputs<F, C, D>) -> Result<()> {
        crate::verify_proof_parallel(&self.verifier, decoded)
            .map_err(|e| Error::InvalidProof(format!("plonky2 verification failed: {e}")))
    }
}
