//! Proving tasks of one model: the integer inference, then its proof (the single circuit of a
//! one-segment model, or each segment and join in turn), checked by its own verifier.

use std::time::Instant;

use plonky2::plonk::proof::ProofWithPublicInputs;
use tgrid_int8::commit::{EncryptedTensor, OutputKey, Salt};
use tgrid_int8::infer::{self, Trace};
use tgrid_int8::{Privacy, QuantModel};

use super::{CircuitStats, Progress};
use crate::circuit::{prove_circuit, BuildOptions, PublicInputs, Segment, SegmentCircuit};
use crate::error::{Error, Result};
use crate::files::TaskProof;
use crate::join::{JoinCircuit, Proven};
use crate::plan::SegmentPlan;
use crate::prover_cache::{fetch_or_build, TaskCircuitKey};
use crate::{C, D, F};

/// Proves tasks for one model.
pub struct TaskProver {
    pub(super) model: QuantModel,
    /// The id the proofs expose: the model id (SHA-256 of the model bytes) for a public task,
    /// its private variant for a private one ([`Privacy::task_model_id`]).
    pub(super) model_id: [u8; 32],
    pub(super) plan: SegmentPlan,
    pub(super) privacy: Privacy,
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
                tgrid_int8::commit::commit_salted(input, salt),
                EncryptedTensor::encrypt(trace.output(), &OutputKey::from_input_salt(salt)).commitment(),
            ),
            None => (tgrid_int8::commit::commit(input), tgrid_int8::commit::commit(trace.output())),
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
}

/// The circuit of a one-segment model, bound to the task.
fn whole_model_circuit(model: &QuantModel, privacy: Privacy) -> Result<SegmentCircuit> {
    let segment = Segment::new(model, 0..model.nodes.len());
    SegmentCircuit::build(model, segment, BuildOptions::binding(true, privacy))
}
