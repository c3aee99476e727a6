//! The per-model plonky2 circuit: one segment of the model's layers, with weights as constants.
//!
//! A segment takes the tensors live at its first cut (range checked), runs its layers with the
//! gadgets of [`crate::gadgets`], and commits to the tensors live at its last cut. A segment that
//! covers the whole model also binds the task: its public inputs are [`PublicInputs`].

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::ops::Range;

use plonky2::field::types::{Field, PrimeField64};
use plonky2::fri::reduction_strategies::FriReductionStrategy;
use plonky2::iop::target::Target;
use plonky2::iop::witness::{PartialWitness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitConfig, CircuitData};
use plonky2::plonk::proof::ProofWithPublicInputs;
use plonky2::plonk::prover::prove;
use plonky2::util::timing::TimingTree;

use crate::error::{Error, Result};
use crate::gadgets::{
    commit_bytes, commit_encrypted_bytes, embedding_weights, field_of, output_key, ByteTarget, ExpTable, Gadgets,
    MacLayout,
};
use crate::gates::WeightedSumGate;
use crate::zero_knowledge;
use crate::{C, D, F};
use tgrid_int8::commit::{Commitment, OutputKey, Salt};
use tgrid_int8::Privacy;
use tgrid_int8::{affine_layout, for_each_element, layer_norm_layout, product_layout, quotient_layout, Element, Width};
use tgrid_int8::{numel, QuantModel};

/// Public inputs of a task proof, in circuit order: task id (8 × u32, big-endian words),
/// provider (5 × u32), model id (8 × u32), input commitment (4), output commitment (4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicInputs {
    /// Task id assigned by the escrow contract.
    pub task_id: [u8; 32],
    /// Address of the provider that accepted the task.
    pub provider: [u8; 20],
    /// Id of the compiled model.
    pub model_id: [u8; 32],
    /// Commitment to the int8 input.
    pub input_commitment: Commitment,
    /// Commitment to the int8 output.
    pub output_commitment: Commitment,
}

/// Number of field elements in [`PublicInputs`].
pub const NUM_PUBLIC_INPUTS: usize = 8 + 5 + 8 + 4 + 4;

fn words(bytes: &[u8]) -> impl Iterator<Item = F> + '_ {
    bytes.chunks(4).map(|w| F::from_canonical_u32(u32::from_be_bytes(w.try_into().expect("4 bytes"))))
}

fn unwords<const N: usize>(fields: &[F]) -> Result<[u8; N]> {
    let mut out = [0u8; N];
    for (chunk, f) in out.chunks_mut(4).zip(fields) {
        let v = u32::try_from(f.to_canonical_u64())
            .map_err(|_| Error::InvalidProof("a public input word exceeds 32 bits".into()))?;
        chunk.copy_from_slice(&v.to_be_bytes());
    }
    Ok(out)
}

impl PublicInputs {
    /// As field elements, in circuit order.
    pub fn to_fields(&self) -> Vec<F> {
        let mut v: Vec<F> = words(&self.task_id).chain(words(&self.provider)).chain(words(&self.model_id)).collect();
        v.extend(self.input_commitment.to_elements());
        v.extend(self.output_commitment.to_elements());
        v
    }

    /// Parses field elements, rejecting a wrong count or out-of-range words.
    pub fn from_fields(v: &[F]) -> Result<Self> {
        if v.len() != NUM_PUBLIC_INPUTS {
            return Err(Error::InvalidProof(format!("{} public inputs, expected {NUM_PUBLIC_INPUTS}", v.len())));
        }
        let elems = |s: &[F]| -> [F; 4] { [s[0], s[1], s[2], s[3]] };
        Ok(Self {
            task_id: unwords(&v[0..8])?,
            provider: unwords(&v[8..13])?,
            model_id: unwords(&v[13..21])?,
            input_commitment: Commitment::from_elements(elems(&v[21..25])),
            output_commitment: Commitment::from_elements(elems(&v[25..29])),
        })
    }
}

/// The configuration of the join circuits that chain a cut model's segments (recursive
/// verifiers, hence plonky2's full-width `PoseidonGate` for Merkle paths): plonky2's standard
/// recursion configuration without zero knowledge, FRI folding by 4 instead of 16. A private
/// task's join is then widened and blinded by [`crate::zero_knowledge`] ([`crate::join`]).
///
/// A public task hides nothing: its input is published, the weights are in the `.tgm` and the
/// output is served with the result, so anyone can recompute every activation. Blinding would
/// cost rows and hide nothing: plonky2 blinds with random rows in proportion to the values a
/// proof opens, which padded the digits cnn from 777 used rows to 2^12 (2^10 without).
/// Soundness does not depend on it. The folding arity is that of [`zk_join_config`], so one
/// aggregation circuit shape verifies task proofs of either kind.
pub fn join_config() -> CircuitConfig {
    CircuitConfig { zero_knowledge: false, ..zk_join_config() }
}

/// [`join_config`] with zero knowledge: the base of the configuration of private segments, which
/// [`crate::zero_knowledge`] builds with its own blinding and masking columns instead of
/// plonky2's. Folding by 4 instead of plonky2's 16 (the FRI shape the aggregation verifies).
pub fn zk_join_config() -> CircuitConfig {
    let mut config = CircuitConfig::standard_recursion_zk_config();
    config.fri_config.reduction_strategy = FriReductionStrategy::ConstantArityBits(2, 2);
    config
}

/// Wires of a segment circuit: the 80 routed wires its gates use, plus the two more that the
/// narrow Poseidon rows need ([`crate::gates::PoseidonHeadGate`]). plonky2's `PoseidonGate` would
/// force 135 on every row.
pub const SEGMENT_WIRES: usize = crate::gates::HEAD_WIRES;

/// Wires the gates of a private segment may use (its masking columns come on top): 17 byte
/// checks of five wires ([`crate::gates::ByteRangeGate`], which replaces the lookups a public
/// segment checks 40 bytes per row with). Three wires more than [`SEGMENT_WIRES`] widen every
/// row by 4% and put 17 checks on a byte row instead of 16, which keeps the private LeNet at
/// 2^13 rows and FRI rate 1/4 (docs/BENCHMARKS.md).
pub const PRIVATE_SEGMENT_WIRES: usize = 17 * (crate::gates::BYTE_LIMBS + 1);

const _: () = assert!(PRIVATE_SEGMENT_WIRES >= SEGMENT_WIRES);

/// The configuration of a segment circuit (every task circuit of a model that fits one segment)
/// of a task of mode `privacy`: [`join_config`] or [`zk_join_config`] narrowed to
/// [`SEGMENT_WIRES`] or [`PRIVATE_SEGMENT_WIRES`] wires, with room in the row constants for the
/// circuit's custom gates: the five fixed-point constants of a [`crate::gates::RequantizeGate`]
/// and the weights of its widest [`WeightedSumGate`] (`weighted_sum_terms`). A public segment of
/// at most [`QUARTER_RATE_MAX_ROWS`] rows is then proven at [`public_segment_fri`].
pub fn segment_config(weighted_sum_terms: usize, privacy: Privacy) -> CircuitConfig {
    let mut config = if privacy.zero_knowledge() { zk_join_config() } else { join_config() };
    config.num_wires = if privacy.zero_knowledge() { PRIVATE_SEGMENT_WIRES } else { SEGMENT_WIRES };
    config.num_constants = weighted_sum_terms.max(REQUANTIZE_CONSTANTS);
    config
}

/// `config` proven at FRI rate 1/4: 42 queries and 16 bits of proof of work, so the conjectured
/// security is that of rate 1/8 with 28 queries, `2·42 + 16 = 3·28 + 16 = 100` bits. The
/// low-degree extension of every column is half as long, which roughly halves a proof's
/// hashing and FFTs (docs/BENCHMARKS.md); verification opens 42 queries instead of 28. At this
/// rate plonky2 allows constraints of degree 4 at most (with their selector, the quotient's
/// degree factor 4), so the circuit's Poseidon takes the degree-3 rows
/// ([`crate::gates::PoseidonLowDegreeGate`]).
pub fn public_segment_fri(mut config: CircuitConfig) -> CircuitConfig {
    config.fri_config.rate_bits = 2;
    config.fri_config.num_query_rounds = 42;
    config.max_quotient_degree_factor = 4;
    config
}

/// The largest public segment proven at FRI rate 1/4. A task proof is verified inside its
/// model's leaf circuit, in the fixed 2^13-row leaf shape beside ~750 rows of leaf hashing, and
/// verifying a rate-1/4 proof (42 queries) takes more rows than a rate-1/8 one, growing with the
/// proof's degree: a 2^13-row LeNet or vit fits, the GPT's 2^16 rows needed 9,212. Larger
/// segments keep rate 1/8. Private segments take the same rule:
/// their blinding ([`crate::zero_knowledge`]) is 227 rows at 42 queries.
pub const QUARTER_RATE_MAX_ROWS: usize = 1 << 13;

/// Row constants of a requantization gate.
const REQUANTIZE_CONSTANTS: usize = 5;

/// Weighted-sum gate widths a layer may use: `terms` per operation such that `num_ops`
/// operations fill 78–80 of the 80 routed wires. Not wider than 38: every constant column is
/// hashed into each FRI query's leaf, and a verifier (the sequencer's ingest, every model's leaf
/// circuit) pays for it whatever the layer. Two terms fit a residual `Add` (`ka·a + kb·b`):
/// 20 per row, where plonky2's arithmetic operations take two per element.
const WEIGHTED_SUM_TERMS: [usize; 7] = [2, 8, 11, 14, 18, 24, 38];

/// The cheapest layout of node `node`'s multiply-accumulates: rows of plonky2 arithmetic
/// operations (20 per row), or rows of a [`WeightedSumGate`] whose operations are shared by
/// every output element with the same weight chunk (all positions of a convolution channel).
/// Counted exactly per chunk, estimated for arithmetic rows (which share rows by weight value
/// across the whole circuit). In a private circuit an embedding is such a sum too, over the
/// token's one-hot vector ([`Gadgets::embedding`]).
pub(crate) fn choose_layout(model: &QuantModel, node: usize, routed_wires: usize, privacy: Privacy) -> MacLayout {
    // Per width: operations per distinct weight chunk, keyed by a fingerprint of the chunk so a
    // large layer's weights are not copied. A collision can only misjudge the layout (and
    // deterministically, so the verifier's rebuild agrees); every layout proves the same sum.
    let mut ops_per_chunk: Vec<HashMap<u64, usize>> = vec![HashMap::new(); WEIGHTED_SUM_TERMS.len()];
    let mut macs = 0usize;
    let mut tally = |weights: &[i64]| {
        macs += weights.len();
        for (counts, width) in ops_per_chunk.iter_mut().zip(WEIGHTED_SUM_TERMS) {
            for chunk in weights.chunks(width) {
                let mut h = std::hash::DefaultHasher::new();
                for w in chunk {
                    w.hash(&mut h);
                }
                *counts.entry(h.finish()).or_default() += 1;
            }
        }
    };
    for_each_element(model, node, |_, e| match e {
        Element::Affine { terms, .. } => tally(&terms.iter().map(|t| t.weight).collect::<Vec<_>>()),
        Element::Embedding { channel, dim, table, .. } if privacy.zero_knowledge() => {
            tally(&embedding_weights(table, dim, channel));
        }
        _ => {}
    });
    let mut best = (macs.div_ceil(20), MacLayout::Arithmetic);
    for (counts, width) in ops_per_chunk.iter().zip(WEIGHTED_SUM_TERMS) {
        let gate = WeightedSumGate::new(width, routed_wires);
        let rows = counts.values().map(|ops| ops.div_ceil(gate.num_ops)).sum();
        if rows < best.0 {
            best = (rows, MacLayout::WeightedSum(gate));
        }
    }
    best.1
}

/// A contiguous run of layers and the tensors live at its two cuts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Node indices.
    pub nodes: Range<usize>,
    /// Tensors produced before the segment and used by it or later, in index order.
    pub live_in: Vec<usize>,
    /// Tensors produced up to the segment's end and used later (or the model output).
    pub live_out: Vec<usize>,
}

impl Segment {
    /// The segment of nodes `range` of `model`.
    pub fn new(model: &QuantModel, nodes: Range<usize>) -> Self {
        let last_use = last_uses(model);
        let n = model.nodes.len();
        let live = |cut: usize| -> Vec<usize> {
            // Tensors 0..=cut exist at the cut (before node `cut`); live if used by node >= cut.
            (0..=cut).filter(|&t| last_use[t] >= cut || (t == n && cut == n)).collect()
        };
        Segment { live_in: live(nodes.start), live_out: live(nodes.end), nodes }
    }

    /// Total int8 values entering the segment.
    pub fn input_len(&self, model: &QuantModel) -> usize {
        self.live_in.iter().map(|&t| numel(model.tensor_shape(t))).sum()
    }
}

/// For each tensor, the index of the last node that reads it (or `usize::MAX` for none).
fn last_uses(model: &QuantModel) -> Vec<usize> {
    let mut last = vec![usize::MAX; model.nodes.len() + 1];
    for (i, node) in model.nodes.iter().enumerate() {
        for &t in &node.inputs {
            last[t] = if last[t] == usize::MAX { i } else { last[t].max(i) };
        }
    }
    last.iter().map(|&l| if l == usize::MAX { 0 } else { l }).collect()
}

/// Targets that bind a whole-model proof to its task.
#[derive(Clone, Debug)]
pub(crate) struct BindingTargets {
    pub task_id: [Target; 8],
    pub provider: [Target; 5],
}

/// A built segment circuit and the targets the prover fills.
#[derive(Debug)]
pub struct SegmentCircuit {
    pub(crate) data: CircuitData<F, C, D>,
    /// Live-in tensors, in `segment.live_in` order.
    pub(crate) inputs: Vec<Vec<Target>>,
    /// Every tensor computed inside, by tensor index (for witness inspection in tests).
    pub(crate) tensors: BTreeMap<usize, Vec<Target>>,
    pub(crate) binding: Option<BindingTargets>,
    /// A private task's secret witness: its input salt in the first segment, its output key in
    /// every other ([`SecretTargets`]).
    pub(crate) secret: Option<SecretTargets>,
    /// Tests only: the fresh targets the output is encrypted under with `cut_output_key`.
    #[cfg(test)]
    pub(crate) cut_key: Option<[Target; 4]>,
    /// Tests only: a private segment's blinding rows.
    #[cfg(test)]
    pub(crate) blinding: Option<zero_knowledge::BlindingRows>,
}

/// The secret a private task's segment takes as witness. The first segment derives the
/// [`OutputKey`] from the input salt in-circuit; every other segment takes the key itself, and
/// the commitments at every cut are salted with it, so the joins' equal commitments force one
/// key through the chain and the last segment encrypts the output under the key of the order's
/// input salt.
#[derive(Clone, Copy, Debug)]
pub(crate) enum SecretTargets {
    /// The salt of the model input's commitment.
    InputSalt([Target; 4]),
    /// The output key.
    OutputKey([Target; 4]),
}

/// Options for [`SegmentCircuit::build`].
#[derive(Clone, Debug, Default)]
pub(crate) struct BuildOptions {
    /// Bind to a task (only for a segment covering the whole model).
    pub bind_task: bool,
    /// A private task's segment is zero-knowledge and salts the commitment of the model's input
    /// (first segment) and output (last segment).
    pub privacy: Privacy,
    #[cfg(test)]
    pub fault: Option<(usize, crate::gadgets::Fault)>,
    /// Tests only: lay out every affine node this way instead of the cheapest way.
    #[cfg(test)]
    pub layout: Option<MacLayout>,
    /// Tests only: leave out the copy constraints that `fault` breaks, to give a malicious
    /// prover the wire partition of a circuit without them
    /// ([`crate::testing::cut_copy_constraints`]).
    #[cfg(test)]
    pub cut: bool,
    /// Tests only: encrypt the output under a key of fresh targets instead of the one derived
    /// from the input salt (the wiring a malicious prover is given with `cut`).
    #[cfg(test)]
    pub cut_output_key: bool,
}

impl BuildOptions {
    /// Options binding (or not) a segment of a task of mode `privacy` to the task; test builds
    /// add no fault.
    // The update fills the test-only fields; outside tests it has nothing to fill.
    #[allow(clippy::needless_update)]
    pub(crate) fn binding(bind_task: bool, privacy: Privacy) -> Self {
        Self { bind_task, privacy, ..Default::default() }
    }
}

impl SegmentCircuit {
    /// Builds the circuit of `segment`: at FRI rate 1/4 if it has at most
    /// [`QUARTER_RATE_MAX_ROWS`] rows, at rate 1/8 otherwise. The choice depends on the model
    /// alone, so every party rebuilds the same circuit.
    pub(crate) fn build(model: &QuantModel, segment: Segment, options: BuildOptions) -> Result<Self> {
        let quarter = Self::build_at(model, segment.clone(), options.clone(), Some(QUARTER_RATE_MAX_ROWS))?;
        // Building pads; a circuit whose gates fit may still not (rare: then it is built twice).
        if let Some(circuit) = quarter.filter(|c| c.rows() <= QUARTER_RATE_MAX_ROWS) {
            return Ok(circuit);
        }
        Self::build_at(model, segment, options, None)?
            .ok_or_else(|| Error::InvalidModel("a segment at FRI rate 1/8 has no row limit".into()))
    }

    /// Builds the circuit of `segment` at FRI rate 1/4 if `quarter_rate_rows` is given (`None`
    /// when its gates already exceed that many rows), at rate 1/8 otherwise.
    fn build_at(
        model: &QuantModel,
        segment: Segment,
        options: BuildOptions,
        quarter_rate_rows: Option<usize>,
    ) -> Result<Option<Self>> {
        let routed_wires = segment_config(0, options.privacy).num_routed_wires;
        #[allow(unused_mut)]
        let mut layouts: Vec<MacLayout> =
            segment.nodes.clone().map(|i| choose_layout(model, i, routed_wires, options.privacy)).collect();
        #[cfg(test)]
        if let Some(layout) = options.layout {
            layouts.fill(layout);
        }
        let widest = layouts.iter().map(|l| if let MacLayout::WeightedSum(g) = l { g.terms } else { 0 }).max();
        let mut config = segment_config(widest.unwrap_or(0), options.privacy);
        if quarter_rate_rows.is_some() {
            config = public_segment_fri(config);
        }
        if options.privacy.zero_knowledge() {
            config = zero_knowledge::private_config(config);
        }
        let mut builder = CircuitBuilder::<F, D>::new(config);
        let mut gadgets = Gadgets::new(&mut builder, options.privacy);
        #[cfg(test)]
        {
            gadgets.fault = options.fault;
            gadgets.cut = options.cut;
        }
        let mut values: BTreeMap<usize, Vec<ByteTarget>> = BTreeMap::new();
        let mut inputs = Vec::new();
        for &t in &segment.live_in {
            let targets = builder.add_virtual_targets(numel(model.tensor_shape(t)));
            values.insert(t, targets.iter().map(|&x| gadgets.range_check_byte(&mut builder, x)).collect());
            inputs.push(targets);
        }
        for i in segment.nodes.clone() {
            let mut out = vec![None; numel(&model.nodes[i].shape)];
            // The softmax row being built, by its first kept cell.
            let mut softmax_row: Option<(usize, Vec<ByteTarget>)> = None;
            let mut norm_row: Option<(usize, Vec<Target>)> = None;
            let mut failure = None;
            for_each_element(model, i, |o, e| {
                let value = match e {
                    Element::Affine { constant, terms, requant, zero_point, lo } => {
                        let layout = match affine_layout(constant, terms, requant) {
                            Ok(l) => l,
                            Err(why) => {
                                failure.get_or_insert(why);
                                return;
                            }
                        };
                        let terms: Vec<(i64, Target)> =
                            terms.iter().map(|t| (t.weight, values[&t.tensor][t.index].0)).collect();
                        let acc = gadgets.affine(&mut builder, layouts[i - segment.nodes.start], constant, &terms);
                        gadgets.requantize(&mut builder, acc, requant, zero_point, lo, layout)
                    }
                    Element::Max { tensor, indices } => {
                        let xs: Vec<Target> = indices.iter().map(|&k| values[&tensor][k].0).collect();
                        gadgets.max(&mut builder, &xs)
                    }
                    Element::Copy { tensor, index } => values[&tensor][index],
                    Element::Constant { u } => ByteTarget(builder.constant(F::from_canonical_u8(u))),
                    Element::Table { tensor, index, table } => {
                        gadgets.lookup(&mut builder, values[&tensor][index], table)
                    }
                    Element::LayerNorm { tensor, row, at, gamma, beta, eps, requant, zero_point, .. } => {
                        let layout = match layer_norm_layout(gamma, beta, requant) {
                            Ok(l) => l,
                            Err(why) => {
                                failure.get_or_insert(why);
                                return;
                            }
                        };
                        if norm_row.as_ref().map(|r| r.0) != Some(row[0]) {
                            let cells: Vec<ByteTarget> = row.iter().map(|&k| values[&tensor][k]).collect();
                            norm_row = Some((row[0], gadgets.layer_norm_row(&mut builder, &cells, eps)));
                        }
                        let scaled = norm_row.as_ref().expect("just built").1[at];
                        let beta = builder.constant(field_of(beta));
                        let acc = builder.mul_const_add(field_of(gamma), scaled, beta);
                        gadgets.requantize(&mut builder, acc, requant, zero_point, i8::MIN, layout)
                    }
                    Element::Embedding { tensor, index, channel, dim, table } => {
                        let layout = layouts[i - segment.nodes.start];
                        gadgets.embedding(&mut builder, values[&tensor][index], channel, dim, table, layout)
                    }
                    Element::Softmax { at: None, .. } => ByteTarget(builder.zero()),
                    Element::Softmax { tensor, kept, at: Some(p), exp } => {
                        if softmax_row.as_ref().map(|r| r.0) != Some(kept[0]) {
                            let cells: Vec<Target> = kept.iter().map(|&k| values[&tensor][k].0).collect();
                            let exp = ExpTable::Direct(exp);
                            softmax_row = Some((kept[0], gadgets.softmax_row(&mut builder, &cells, exp)));
                        }
                        softmax_row.as_ref().expect("just built").1[p]
                    }
                    Element::ScoresSoftmax { at: None, .. } => ByteTarget(builder.zero()),
                    Element::ScoresSoftmax {
                        a,
                        b,
                        offsets,
                        pairs,
                        k,
                        at: Some(p),
                        requant,
                        zero_point,
                        exp_high,
                        exp_low,
                        row,
                    } => {
                        if softmax_row.as_ref().map(|r| r.0) != Some(row) {
                            let layout = match product_layout(k, requant, Width::Int16) {
                                Ok(l) => l,
                                Err(why) => {
                                    failure.get_or_insert(why);
                                    return;
                                }
                            };
                            let scores: Vec<Target> = pairs
                                .chunks(k)
                                .map(|cell| {
                                    let factors: Vec<(Target, Target)> =
                                        cell.iter().map(|&(i, j)| (values[&a][i].0, values[&b][j].0)).collect();
                                    let acc = gadgets.product_sum(&mut builder, &factors, offsets);
                                    gadgets.requantize_score(&mut builder, acc, requant, zero_point, layout)
                                })
                                .collect();
                            let exp = ExpTable::Split { high: exp_high, low: exp_low };
                            softmax_row = Some((row, gadgets.softmax_row(&mut builder, &scores, exp)));
                        }
                        softmax_row.as_ref().expect("just built").1[p]
                    }
                    Element::Quotient { a, b, index, offsets, requant, zero_point } => {
                        let layout = match quotient_layout(requant) {
                            Ok(l) => l,
                            Err(why) => {
                                failure.get_or_insert(why);
                                return;
                            }
                        };
                        let q = gadgets.quotient(&mut builder, values[&a][index], values[&b][index], offsets);
                        gadgets.requantize(&mut builder, q, requant, zero_point, i8::MIN, layout)
                    }
                    Element::Product { a, b, offsets, pairs, requant, zero_point } => {
                        let layout = match product_layout(pairs.len(), requant, Width::Int8) {
                            Ok(l) => l,
                            Err(why) => {
                                failure.get_or_insert(why);
                                return;
                            }
                        };
                        let factors: Vec<(Target, Target)> =
                            pairs.iter().map(|&(i, j)| (values[&a][i].0, values[&b][j].0)).collect();
                        let acc = gadgets.product_sum(&mut builder, &factors, offsets);
                        gadgets.requantize(&mut builder, acc, requant, zero_point, i8::MIN, layout)
                    }
                };
                out[o] = Some(value);
            });
            if let Some(why) = failure {
                return Err(Error::InvalidModel(format!("node '{}': {why}", model.nodes[i].name)));
            }
            values.insert(i + 1, out.into_iter().map(|v| v.expect("every element visited")).collect());
        }

        let concat = |ts: &[usize]| -> Vec<ByteTarget> { ts.iter().flat_map(|t| values[t].iter().copied()).collect() };
        gadgets.finish(&mut builder);
        // A private task's secret: the input salt where the model's input is committed, the
        // output key everywhere else; every commitment is salted, the model's output encrypted.
        let (first, last) = (segment.nodes.start == 0, segment.nodes.end == model.nodes.len());
        let secret = (options.privacy == Privacy::Private).then(|| {
            let targets = builder.add_virtual_target_arr::<4>();
            if first {
                SecretTargets::InputSalt(targets)
            } else {
                SecretTargets::OutputKey(targets)
            }
        });
        let key = secret.map(|s| match s {
            SecretTargets::InputSalt(salt) => output_key(&mut builder, salt),
            SecretTargets::OutputKey(key) => key,
        });
        // The live-in commitment's salt: the input salt at the model's input, the key at a cut.
        let live_in_salt = secret.map(|s| match s {
            SecretTargets::InputSalt(salt) | SecretTargets::OutputKey(salt) => salt,
        });
        let input_commitment = commit_bytes(&mut builder, &concat(&segment.live_in), live_in_salt);
        #[cfg(test)]
        let cut_key = options.cut_output_key.then(|| builder.add_virtual_target_arr::<4>());
        let output_commitment = match key {
            Some(key) if last => {
                #[cfg(test)]
                let key = cut_key.unwrap_or(key);
                commit_encrypted_bytes(&mut builder, &concat(&segment.live_out), key)
            }
            key => commit_bytes(&mut builder, &concat(&segment.live_out), key),
        };

        let binding = if options.bind_task {
            let task_id: [Target; 8] = std::array::from_fn(|_| builder.add_virtual_public_input());
            let provider: [Target; 5] = std::array::from_fn(|_| builder.add_virtual_public_input());
            for w in model_id_words(model, options.privacy) {
                let c = builder.constant(w);
                builder.register_public_input(c);
            }
            Some(BindingTargets { task_id, provider })
        } else {
            None
        };
        builder.register_public_inputs(&input_commitment.elements);
        builder.register_public_inputs(&output_commitment.elements);

        // Rows per gate kind at debug level (`RUST_LOG=plonky2=debug`): where a segment's rows go.
        // Counting walks every gate, so only when someone will read it.
        if tracing::enabled!(target: "plonky2::plonk::circuit_builder", tracing::Level::DEBUG) {
            builder.print_gate_counts(0);
        }
        if quarter_rate_rows.is_some_and(|max| builder.num_gates() > max) {
            return Ok(None);
        }
        let blinding = options.privacy.zero_knowledge().then(|| zero_knowledge::blind(&mut builder));
        let mut data = builder.build::<C>();
        if let Some(rows) = &blinding {
            zero_knowledge::mark_zero_knowledge(&mut data, rows)?;
        }
        let tensors = values
            .into_iter()
            .filter(|(t, _)| !segment.live_in.contains(t))
            .map(|(t, v)| (t, v.into_iter().map(|b| b.0).collect()))
            .collect();
        Ok(Some(SegmentCircuit {
            data,
            inputs,
            tensors,
            binding,
            secret,
            #[cfg(test)]
            cut_key,
            #[cfg(test)]
            blinding,
        }))
    }

    /// Number of gate rows (the padded circuit degree).
    pub fn rows(&self) -> usize {
        self.data.common.degree()
    }

    /// The witness for the given live-in tensors (int8), for a bound circuit the task, and for a
    /// private task's segment the salt of its input commitment (the segment takes the salt or
    /// the output key derived from it).
    pub(crate) fn witness(
        &self,
        live_in: &[&[i8]],
        task: Option<(&[u8; 32], &[u8; 20])>,
        input_salt: Option<&Salt>,
    ) -> Result<PartialWitness<F>> {
        let mut pw = PartialWitness::new();
        let set = |pw: &mut PartialWitness<F>, t: Target, v: F| {
            pw.set_target(t, v).map_err(|e| Error::Proving(e.to_string()))
        };
        for (targets, values) in self.inputs.iter().zip(live_in) {
            if targets.len() != values.len() {
                return Err(Error::InvalidInput(format!("expected {} values, got {}", targets.len(), values.len())));
            }
            for (&t, &x) in targets.iter().zip(values.iter()) {
                set(&mut pw, t, F::from_canonical_u8((x as u8) ^ 0x80))?;
            }
        }
        if let (Some(b), Some((task_id, provider))) = (&self.binding, task) {
            set_binding(&mut pw, b, task_id, provider)?;
        }
        if let Some(secret) = self.secret {
            let salt =
                input_salt.ok_or_else(|| Error::InvalidInput("a private task needs the salt of its input".into()))?;
            let (targets, values) = match secret {
                SecretTargets::InputSalt(t) => (t, salt.to_elements()),
                SecretTargets::OutputKey(t) => (t, OutputKey::from_input_salt(salt).to_elements()),
            };
            for (t, v) in targets.into_iter().zip(values) {
                set(&mut pw, t, v)?;
            }
        }
        Ok(pw)
    }
}

/// The id a task of mode `privacy` names for `model`, as the eight 32-bit words the circuits
/// expose.
pub(crate) fn model_id_words(model: &QuantModel, privacy: Privacy) -> Vec<F> {
    words(&privacy.task_model_id(model.model_id())).collect()
}

/// Sets the task binding targets.
pub(crate) fn set_binding(
    pw: &mut PartialWitness<F>,
    b: &BindingTargets,
    task_id: &[u8; 32],
    provider: &[u8; 20],
) -> Result<()> {
    let targets = b.task_id.iter().chain(&b.provider);
    for (&t, v) in targets.zip(words(task_id).chain(words(provider))) {
        pw.set_target(t, v).map_err(|e| Error::Proving(e.to_string()))?;
    }
    Ok(())
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
