//! Post-training quantization of a [`FloatGraph`] (docs/quantization.md):
//! activations asymmetric int8 from calibration ranges, weights symmetric int8 per output
//! channel, bias int32 at `s_in · s_w`, fixed-point requantization multipliers.

use serde::{Deserialize, Serialize};
use tgrid_int8::{infer, requant_for, Node, Op, QParams, QuantModel, Requant};

use crate::elementwise::Expr;
use crate::float::{FloatGraph, FloatOp};
use crate::{Error, Result};

/// How the int8 model compares with the float reference on a sample set.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CalibrationReport {
    /// Samples compared.
    pub samples: usize,
    /// Fraction of samples whose int8 argmax equals the float argmax.
    pub argmax_agreement: f64,
    /// Largest absolute difference between dequantized int8 outputs and float outputs.
    pub max_abs_error: f64,
    /// Mean absolute difference.
    pub mean_abs_error: f64,
}

impl CalibrationReport {
    /// Compares int8 outputs (dequantized) with float outputs.
    pub fn compare(model: &QuantModel, inputs: &[Vec<f32>], float_outputs: &[Vec<f32>]) -> Result<Self> {
        let out_q = model.tensor_q(model.output_tensor());
        let (mut agree, mut max_err, mut sum_err, mut count) = (0usize, 0f64, 0f64, 0usize);
        for (x, f) in inputs.iter().zip(float_outputs) {
            let q = infer::quantize_input(model, x)?;
            let y = infer::dequantize(infer::run(model, &q)?.output(), out_q);
            if y.len() != f.len() {
                return Err(Error::Reference(format!("output lengths differ: {} vs {}", y.len(), f.len())));
            }
            agree += usize::from(argmax(&y) == argmax(f));
            for (a, b) in y.iter().zip(f) {
                let e = f64::from((a - b).abs());
                max_err = max_err.max(e);
                sum_err += e;
                count += 1;
            }
        }
        Ok(Self {
            samples: inputs.len(),
            argmax_agreement: agree as f64 / inputs.len().max(1) as f64,
            max_abs_error: max_err,
            mean_abs_error: sum_err / count.max(1) as f64,
        })
    }
}

/// Index of the largest value (first on ties).
pub fn argmax(v: &[f32]) -> usize {
    v.iter().enumerate().fold(0, |best, (i, &x)| if x > v[best] { i } else { best })
}

fn qparams(min: f32, max: f32) -> QParams {
    // The range must hold 0 so that real zero (padding, ReLU) is exact.
    let (min, max) = (min.min(0.0), max.max(0.0));
    let scale = ((max - min) / 255.0).max(1e-8);
    let zp = (-128.0 - min / scale).round().clamp(-128.0, 127.0);
    QParams { scale, zero_point: zp as i8 }
}

/// Quantizes weights `[channels][per]` symmetrically per channel; returns the int8 weights and
/// the channel scales. A channel whose weights are (nearly) dead gets a coarser scale, so that
/// its bias still fits in int32 at scale `s_in · s_w`.
fn quantize_weights(weights: &[f32], bias: &[f32], s_in: f64, channels: usize) -> (Vec<i8>, Vec<f64>) {
    let per = weights.len() / channels;
    let mut q = Vec::with_capacity(weights.len());
    let mut scales = Vec::with_capacity(channels);
    for (row, &b) in weights.chunks(per).zip(bias) {
        let max = row.iter().fold(0f32, |m, &w| m.max(w.abs()));
        let s = (f64::from(max) / 127.0).max(f64::from(b.abs()) / (s_in * 2f64.powi(30))).max(1e-12);
        q.extend(row.iter().map(|&w| (f64::from(w) / s).round().clamp(-127.0, 127.0) as i8));
        scales.push(s);
    }
    (q, scales)
}

/// Affine layer parameters: int8 weights, int32 bias, one requantization per channel.
fn quantize_affine(
    node: &str,
    weights: &[f32],
    bias: &[f32],
    channels: usize,
    in_q: QParams,
    out_q: QParams,
) -> Result<(Vec<i8>, Vec<i32>, Vec<Requant>)> {
    let s_in = f64::from(in_q.scale);
    let (qw, scales) = quantize_weights(weights, bias, s_in, channels);
    let per = qw.len() / channels;
    let offset = (i64::from(in_q.zero_point) + 128).unsigned_abs() as u128;
    let mut qb = Vec::with_capacity(channels);
    let mut requant = Vec::with_capacity(channels);
    for ch in 0..channels {
        let b = (f64::from(bias[ch]) / (s_in * scales[ch])).round();
        if b.abs() >= 2f64.powi(31) {
            return Err(Error::InvalidNode {
                op: "Gemm/Conv".into(),
                node: node.into(),
                reason: format!("bias {} overflows int32 after quantization", bias[ch]),
            });
        }
        qb.push(b as i32);
        let abs_w: u128 = qw[ch * per..(ch + 1) * per].iter().map(|&w| u128::from(w.unsigned_abs())).sum();
        let bound = b.abs() as u128 + abs_w * offset + abs_w * 255;
        let m = s_in * scales[ch] / f64::from(out_q.scale);
        requant.push(requant_for(m, bound).map_err(|why| Error::InvalidNode {
            op: "Gemm/Conv".into(),
            node: node.into(),
            reason: why,
        })?);
    }
    Ok((qw, qb, requant))
}

/// Fraction bits of the integer weights of an addition (`ka`, `kb` and added constants).
const ADD_SHIFT: u8 = 16;

/// The int8 output of `f` at each of the 256 int8 inputs: `table[x + 128] =
/// clamp(round(f(s_in·(x − zp_in)) / s_out) + zp_out)`. An infinite value saturates; an undefined
/// one (NaN) is an error naming the input.
fn tabulate(f: &Expr, in_q: QParams, out_q: QParams) -> std::result::Result<Vec<i8>, String> {
    (-128i16..=127)
        .map(|x| {
            let real = f64::from(in_q.scale) * f64::from(x - i16::from(in_q.zero_point));
            let y = f.eval(real);
            if y.is_nan() {
                return Err(format!("the function is undefined at {real} (int8 {x})"));
            }
            let q = (y / f64::from(out_q.scale)).round() + f64::from(out_q.zero_point);
            Ok(q.clamp(-128.0, 127.0) as i8)
        })
        .collect()
}

/// The integer LayerNorm (docs/quantization.md): `eps` as `n³·ε/s_in²`, `gamma` as
/// `γ·√n/s_out·2^(shift−31)`, `beta` as `β/s_out·2^shift`, with the finest shift the circuit's
/// bounds allow.
fn quantize_layer_norm(
    gamma: &[f32],
    beta: &[f32],
    eps: f32,
    in_q: QParams,
    out_q: QParams,
) -> std::result::Result<Op, String> {
    let n = gamma.len() as f64;
    let eps = (n.powi(3) * f64::from(eps) / f64::from(in_q.scale).powi(2)).round().max(1.0);
    if eps > tgrid_int8::MAX_LAYER_NORM_EPS as f64 {
        return Err(format!("epsilon {eps} is too large for the input scale {}", in_q.scale));
    }
    let s_out = f64::from(out_q.scale);
    let mut last = String::new();
    for shift in [48u8, 40, 32] {
        let fraction = 2f64.powi(i32::from(shift) - tgrid_int8::INV_SQRT_BITS as i32);
        let g: Vec<f64> = gamma.iter().map(|&v| (f64::from(v) * n.sqrt() / s_out * fraction).round()).collect();
        let b: Vec<f64> = beta.iter().map(|&v| (f64::from(v) / s_out * 2f64.powi(shift.into())).round()).collect();
        if g.iter().any(|v| v.abs() >= 2f64.powi(31)) || b.iter().any(|v| v.abs() >= 2f64.powi(62)) {
            last = format!("gamma or beta out of range at shift {shift}");
            continue;
        }
        let gamma: Vec<i32> = g.iter().map(|&v| v as i32).collect();
        let beta: Vec<i64> = b.iter().map(|&v| v as i64).collect();
        let requant = Requant { multiplier: 1, shift };
        match tgrid_int8::check_layer_norm(&gamma, &beta, requant) {
            Ok(()) => return Ok(Op::LayerNorm { gamma, beta, eps: eps as u64, requant }),
            Err(why) => last = why,
        }
    }
    Err(last)
}

/// Widens the ranges of tensors that must share one quantization to the union of their ranges:
/// the inputs and output of a Concat (a copy cannot rescale), together with the copies and
/// pass-through ops (Reshape, Gather, MaxPool, Relu) between them and the layers that produce
/// them, which take their input's quantization. A tensor outside every Concat keeps its range
/// (a pass-through's output range lies within its input's).
fn shared_ranges(graph: &FloatGraph, lo: &mut [f32], hi: &mut [f32]) {
    fn root(parent: &mut [usize], mut t: usize) -> usize {
        while parent[t] != t {
            parent[t] = parent[parent[t]];
            t = parent[t];
        }
        t
    }
    let mut parent: Vec<usize> = (0..lo.len()).collect();
    for (i, n) in graph.nodes.iter().enumerate() {
        let joined: &[usize] = match n.op {
            FloatOp::Concat { .. } => &n.inputs,
            FloatOp::Reshape | FloatOp::Gather { .. } | FloatOp::MaxPool { .. } | FloatOp::Relu => &n.inputs[..1],
            _ => &[],
        };
        for &t in joined {
            let (a, b) = (root(&mut parent, t), root(&mut parent, i + 1));
            parent[a] = b;
        }
    }
    let (mut class_lo, mut class_hi) = (lo.to_vec(), hi.to_vec());
    for t in 0..lo.len() {
        let r = root(&mut parent, t);
        class_lo[r] = class_lo[r].min(lo[t]);
        class_hi[r] = class_hi[r].max(hi[t]);
    }
    for t in 0..lo.len() {
        let r = root(&mut parent, t);
        lo[t] = class_lo[r];
        hi[t] = class_hi[r];
    }
}

/// The mask of tensor `t` when every node that reads it is a Softmax with the same causal mask
/// (attention scores): the masked cells never reach the output, so only the kept cells are
/// calibrated. Calibrating them too widened the character GPT's first attention scores from
/// 35.8 to 39.3 at the top, a coarser step for every score that counts.
fn masked_cells(graph: &FloatGraph, t: usize) -> Option<&[bool]> {
    let mut mask: Option<&[bool]> = None;
    for n in graph.nodes.iter().filter(|n| n.inputs.contains(&t)) {
        match &n.op {
            FloatOp::Softmax { keep } if !keep.is_empty() && mask.is_none_or(|m| m == keep.as_slice()) => {
                mask = Some(keep)
            }
            _ => return None,
        }
    }
    mask
}

/// Choices the compiler leaves to the model's owner.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuantizeOptions {
    /// Keep attention scores at 16 bits: a MatMul of two computed tensors whose only reader is
    /// a Softmax becomes one [`Op::ScoresSoftmax`] with the product requantized to 16 bits, so
    /// the Softmax sees its logits 256 times finer. It costs two 256-entry exponential tables
    /// per distinct score scale and a few lookups per score, about what skipping the masked
    /// scores saves. The character GPT needs it to agree with its float model on 95 % of next
    /// characters (docs/quantization.md).
    pub wide_attention_scores: bool,
}

/// Quantizes `graph` with ranges observed on the calibration samples.
pub fn quantize_model(graph: &FloatGraph, calibration: &[Vec<f32>]) -> Result<QuantModel> {
    quantize_model_with(graph, calibration, QuantizeOptions::default())
}

/// [`quantize_model`] with `options`.
pub fn quantize_model_with(
    graph: &FloatGraph,
    calibration: &[Vec<f32>],
    options: QuantizeOptions,
) -> Result<QuantModel> {
    quantize_model_adjusted(graph, calibration, options, |_, _, _| {})
}

/// [`quantize_model_with`] with each tensor's calibrated range `[lo, hi]` passed through
/// `adjust(tensor, lo, hi)` before it is quantized: a quantization study (how much does the int8
/// model's accuracy depend on one tensor's scale?).
pub fn quantize_model_adjusted(
    graph: &FloatGraph,
    calibration: &[Vec<f32>],
    options: QuantizeOptions,
    adjust: impl Fn(usize, &mut f32, &mut f32),
) -> Result<QuantModel> {
    let input_len: usize = graph.input_shape.iter().product();
    if calibration.is_empty() {
        return Err(Error::Data("calibration needs at least one sample".into()));
    }
    let masks: Vec<Option<&[bool]>> = (0..=graph.nodes.len()).map(|t| masked_cells(graph, t)).collect();
    let mut lo = vec![f32::INFINITY; graph.nodes.len() + 1];
    let mut hi = vec![f32::NEG_INFINITY; graph.nodes.len() + 1];
    for (i, sample) in calibration.iter().enumerate() {
        if sample.len() != input_len {
            return Err(Error::Data(format!(
                "calibration sample {i} has {} values, the model takes {input_len}",
                sample.len()
            )));
        }
        if graph.tokens {
            if let Some(j) = sample.iter().position(|&v| !(0.0..256.0).contains(&v) || v.fract() != 0.0) {
                return Err(Error::Data(format!(
                    "calibration sample {i} value {j} is {}: the model takes token ids 0..=255",
                    sample[j]
                )));
            }
        }
        for (t, values) in graph.run(sample).iter().enumerate() {
            for (e, &v) in values.iter().enumerate() {
                // A masked cell never reaches the output; a division by a zero divisor saturates
                // at the clamp (docs/quantization.md) and does not stretch the range.
                if masks[t].is_some_and(|keep| !keep[e % keep.len()]) || !v.is_finite() {
                    continue;
                }
                lo[t] = lo[t].min(v);
                hi[t] = hi[t].max(v);
            }
        }
    }
    shared_ranges(graph, &mut lo, &mut hi);
    for (t, (lo, hi)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
        adjust(t, lo, hi);
    }
    // Token ids are carried exactly: at scale 1 and zero point −128 the offset form is the id.
    let input_q = if graph.tokens { QParams { scale: 1.0, zero_point: -128 } } else { qparams(lo[0], hi[0]) };
    let mut qs: Vec<QParams> = vec![input_q];
    let mut nodes = Vec::with_capacity(graph.nodes.len());
    for (i, n) in graph.nodes.iter().enumerate() {
        let in_q = qs[n.inputs[0]];
        let observed = qparams(lo[i + 1], hi[i + 1]);
        let (op, q) = match &n.op {
            FloatOp::Dense { weights, bias, out, relu } => {
                let (weights, bias, requant) = quantize_affine(&n.name, weights, bias, *out, in_q, observed)?;
                (Op::Dense { weights, bias, requant, relu: *relu }, observed)
            }
            FloatOp::Conv { weights, bias, c_out, kernel, stride, pads, groups, relu } => {
                let (weights, bias, requant) = quantize_affine(&n.name, weights, bias, *c_out, in_q, observed)?;
                (
                    Op::Conv {
                        c_out: *c_out,
                        groups: *groups,
                        kernel: *kernel,
                        stride: *stride,
                        pads: *pads,
                        weights,
                        bias,
                        requant,
                        relu: *relu,
                    },
                    observed,
                )
            }
            FloatOp::MaxPool { kernel, stride, pads } => {
                (Op::MaxPool { kernel: *kernel, stride: *stride, pads: *pads }, in_q)
            }
            FloatOp::AvgPool { kernel, stride, pads, count_include_pad, relu } => {
                let cells = kernel[0] * kernel[1];
                let requant = (1..=cells)
                    .map(|count| {
                        let divisor = if *count_include_pad { cells } else { count };
                        let m = f64::from(in_q.scale) / (f64::from(observed.scale) * divisor as f64);
                        requant_for(m, 255 * 2 * count as u128)
                    })
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|why| Error::InvalidNode {
                        op: "AveragePool".into(),
                        node: n.name.clone(),
                        reason: why,
                    })?;
                (Op::AvgPool { kernel: *kernel, stride: *stride, pads: *pads, requant, relu: *relu }, observed)
            }
            FloatOp::Add { relu, subtract } => {
                let qb = qs[n.inputs[1]];
                const SHIFT: u8 = ADD_SHIFT;
                let k =
                    |q: QParams| (f64::from(q.scale) / f64::from(observed.scale) * f64::from(1u32 << SHIFT)).round();
                let (ka, kb) = (k(in_q), if *subtract { -k(qb) } else { k(qb) });
                if ka.abs() >= 2f64.powi(24) || kb.abs() >= 2f64.powi(24) {
                    return Err(Error::InvalidNode {
                        op: "Add".into(),
                        node: n.name.clone(),
                        reason: "input and output scales differ too much".into(),
                    });
                }
                let requant = Requant { multiplier: 1, shift: SHIFT };
                (Op::Add { ka: ka as i32, kb: kb as i32, requant, relu: *relu }, observed)
            }
            FloatOp::Relu => (Op::Relu, in_q),
            FloatOp::Reshape => (Op::Reshape, in_q),
            FloatOp::Gather { source } => (Op::Gather { source: source.clone() }, in_q),
            FloatOp::Concat { source, constants } => {
                if let Some(k) = n.inputs.iter().position(|&t| qs[t] != observed) {
                    let outputs = &graph.ports.outputs;
                    let reason = if i + 1 == graph.nodes.len() && outputs.len() == n.inputs.len() {
                        format!(
                            "output '{}' has a fixed quantization (token ids or a Softmax's probabilities) that the \
                             model's other outputs cannot share: several outputs are laid end to end at one \
                             quantization (export the logits instead of the probabilities)",
                            outputs[k].name
                        )
                    } else {
                        format!(
                            "input tensor {} has a fixed quantization (token ids or a Softmax output) that the \
                             other parts cannot share",
                            n.inputs[k]
                        )
                    };
                    return Err(Error::InvalidNode { op: "Concat".into(), node: n.name.clone(), reason });
                }
                let constants = tgrid_int8::infer::quantize(constants, observed).map_err(|e| Error::InvalidNode {
                    op: "Concat".into(),
                    node: n.name.clone(),
                    reason: e.to_string(),
                })?;
                (Op::Concat { source: source.clone(), constants }, observed)
            }
            FloatOp::Embedding { table, dim } => {
                let table = tgrid_int8::infer::quantize(table, observed).map_err(|e| Error::InvalidNode {
                    op: "Gather".into(),
                    node: n.name.clone(),
                    reason: e.to_string(),
                })?;
                (Op::Embedding { table, dim: *dim }, observed)
            }
            FloatOp::LayerNorm { gamma, beta, eps } => {
                let op = quantize_layer_norm(gamma, beta, *eps, in_q, observed).map_err(|reason| {
                    Error::InvalidNode { op: "LayerNormalization".into(), node: n.name.clone(), reason }
                })?;
                (op, observed)
            }
            FloatOp::Softmax { keep } => match wide_scores_of(graph, options, n.inputs[0]) {
                Some(scores) => {
                    let (op, inputs) = scores_softmax(graph, scores, &qs, lo[n.inputs[0]], hi[n.inputs[0]], keep)?;
                    qs.push(tgrid_int8::SOFTMAX_Q);
                    nodes.push(Node { name: n.name.clone(), op, inputs, shape: n.shape.clone(), q: qs[i + 1] });
                    continue;
                }
                None => {
                    let exp = (0..256)
                        .map(|d| (65535.0 * (-f64::from(in_q.scale) * f64::from(d)).exp()).round() as u16)
                        .collect();
                    (Op::Softmax { exp, keep: keep.clone() }, tgrid_int8::SOFTMAX_Q)
                }
            },
            FloatOp::MatMul { alpha } => {
                let qb = qs[n.inputs[1]];
                let a_shape = graph.shape(n.inputs[0]);
                let k = a_shape[a_shape.len() - 1] as u128;
                let m = f64::from(in_q.scale) * f64::from(qb.scale) * f64::from(*alpha) / f64::from(observed.scale);
                if !(m.is_finite() && m > 0.0) {
                    return Err(Error::InvalidNode {
                        op: "MatMul".into(),
                        node: n.name.clone(),
                        reason: format!("scaling by {alpha} is not a positive finite factor"),
                    });
                }
                let requant = requant_for(m, k * 255 * 255).map_err(|why| Error::InvalidNode {
                    op: "MatMul".into(),
                    node: n.name.clone(),
                    reason: why,
                })?;
                (Op::MatMul { requant }, observed)
            }
            FloatOp::Div => {
                // Q carries 2^16 times the quotient of the centered values: y = Q · s_a / (s_b · 2^16 · s_y).
                let qb = qs[n.inputs[1]];
                let m = f64::from(in_q.scale)
                    / (f64::from(qb.scale) * f64::from(1u32 << tgrid_int8::QUOTIENT_BITS) * f64::from(observed.scale));
                let requant = requant_for(m, tgrid_int8::QUOTIENT_BOUND as u128).map_err(|why| Error::InvalidNode {
                    op: "Div".into(),
                    node: n.name.clone(),
                    reason: why,
                })?;
                (Op::Div { requant }, observed)
            }
            FloatOp::Elementwise { f } => {
                let table = tabulate(f, in_q, observed).map_err(|reason| Error::InvalidNode {
                    op: "elementwise".into(),
                    node: n.name.clone(),
                    reason,
                })?;
                (Op::Table { table }, observed)
            }
            FloatOp::AddConst { values } => {
                let invalid = |reason: String| Error::InvalidNode { op: "Add".into(), node: n.name.clone(), reason };
                let unit = f64::from(1u32 << ADD_SHIFT) / f64::from(observed.scale);
                let ka = (f64::from(in_q.scale) * unit).round();
                if ka.abs() >= 2f64.powi(24) {
                    return Err(invalid("input and output scales differ too much".into()));
                }
                let constants = values
                    .iter()
                    .map(|&v| {
                        let c = (f64::from(v) * unit).round();
                        if c.abs() < 2f64.powi(31) {
                            Ok(c as i32)
                        } else {
                            Err(invalid(format!("the constant {v} is far outside the output's range")))
                        }
                    })
                    .collect::<Result<_>>()?;
                let requant = Requant { multiplier: 1, shift: ADD_SHIFT };
                (Op::AddConst { ka: ka as i32, constants, requant }, observed)
            }
        };
        qs.push(q);
        nodes.push(Node { name: n.name.clone(), op, inputs: n.inputs.clone(), shape: n.shape.clone(), q });
    }
    let model = QuantModel {
        name: graph.name.clone(),
        input_shape: graph.input_shape.clone(),
        input_q: qs[0],
        nodes,
        ports: graph.ports.clone(),
    };
    let model = without_unread_nodes(model);
    model.validate()?;
    Ok(model)
}

/// The node producing tensor `t` if `options` keeps its scores at 16 bits: a MatMul read by
/// one Softmax only (the caller's), not the model's output.
fn wide_scores_of(graph: &FloatGraph, options: QuantizeOptions, t: usize) -> Option<usize> {
    let producer = t.checked_sub(1)?;
    let is_matmul = matches!(graph.nodes[producer].op, FloatOp::MatMul { .. });
    let readers = graph.nodes.iter().filter(|m| m.inputs.contains(&t)).count();
    (options.wide_attention_scores && is_matmul && readers == 1 && t != graph.nodes.len()).then_some(producer)
}

/// The [`Op::ScoresSoftmax`] of the MatMul node `scores` (calibrated to `[lo, hi]`) and the
/// Softmax over it, and its inputs (the MatMul's).
fn scores_softmax(
    graph: &FloatGraph,
    scores: usize,
    qs: &[QParams],
    lo: f32,
    hi: f32,
    keep: &[bool],
) -> Result<(Op, Vec<usize>)> {
    let n = &graph.nodes[scores];
    let FloatOp::MatMul { alpha } = n.op else { unreachable!("wide_scores_of picks MatMul nodes") };
    let invalid = |reason: String| Error::InvalidNode { op: "MatMul".into(), node: n.name.clone(), reason };
    // The 16-bit grid over twice the calibrated range, holding 0 (as `qparams` does for 8
    // bits): held-out scores beyond the calibration's are then rarely clamped, at a step still
    // 128 times finer than 8 bits over the bare range (docs/quantization.md).
    let (lo, hi) = (2.0 * f64::from(lo.min(0.0)), 2.0 * f64::from(hi.max(0.0)));
    let score_scale = ((hi - lo) / 65535.0).max(1e-12);
    let score_zero_point = (-32768.0 - lo / score_scale).round().clamp(-32768.0, 32767.0) as i16;
    let (qa, qb) = (qs[n.inputs[0]], qs[n.inputs[1]]);
    let a_shape = graph.shape(n.inputs[0]);
    let k = a_shape[a_shape.len() - 1] as u128;
    let m = f64::from(qa.scale) * f64::from(qb.scale) * f64::from(alpha) / score_scale;
    if !(m.is_finite() && m > 0.0) {
        return Err(invalid(format!("scaling by {alpha} is not a positive finite factor")));
    }
    let requant = tgrid_int8::requant_for_scores(m, k * 255 * 255).map_err(invalid)?;
    // exp(d) for d = 256·h + l is the rounded product of two tables (`infer::score_exp`).
    let table =
        |step: f64| (0..256).map(move |i| (65535.0 * (-score_scale * step * f64::from(i)).exp()).round() as u16);
    let (exp_high, exp_low) = (table(256.0).collect(), table(1.0).collect());
    Ok((Op::ScoresSoftmax { requant, score_zero_point, exp_high, exp_low, keep: keep.to_vec() }, n.inputs.clone()))
}

/// `model` without the nodes nothing reads (a MatMul whose scores a `ScoresSoftmax` took over),
/// tensors renumbered. The output node always stays.
fn without_unread_nodes(mut model: QuantModel) -> QuantModel {
    loop {
        let last = model.nodes.len();
        let read = |t: usize| t == last || model.nodes.iter().any(|m| m.inputs.contains(&t));
        let Some(dead) = (0..last).find(|&i| !read(i + 1)) else { return model };
        model.nodes.remove(dead);
        for node in &mut model.nodes[dead..] {
            node.inputs.iter_mut().filter(|t| **t > dead + 1).for_each(|t| *t -= 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::float::FloatNode;

    /// A 2×2 input read by a causally masked Softmax and, in the second graph, by a Relu too.
    fn graph(also_relu: bool) -> FloatGraph {
        let node = |name: &str, op| FloatNode { name: name.into(), op, inputs: vec![0], shape: vec![2, 2] };
        let mut nodes = vec![node("softmax", FloatOp::Softmax { keep: vec![true, false, true, true] })];
        if also_relu {
            nodes.insert(0, node("relu", FloatOp::Relu));
        }
        FloatGraph { name: "masked".into(), input_shape: vec![2, 2], tokens: false, nodes, ports: Default::default() }
    }

    #[test]
    fn masked_cells_do_not_widen_the_range_of_what_only_a_masked_softmax_reads() {
        // The masked cell (row 0, column 1) holds 100; the kept cells span [−1, 2].
        let sample = vec![vec![1.0, 100.0, -1.0, 2.0]];
        let masked_only = quantize_model(&graph(false), &sample).unwrap();
        assert!((masked_only.input_q.scale - 3.0 / 255.0).abs() < 1e-6, "{:?}", masked_only.input_q);
        // Read by another node as well, every cell counts.
        let also_read = quantize_model(&graph(true), &sample).unwrap();
        assert!((also_read.input_q.scale - 101.0 / 255.0).abs() < 1e-5, "{:?}", also_read.input_q);
    }

    /// `x·xᵀ` ([2, 3] by its transpose) then a causal Softmax; if `reread`, a Relu of the scores
    /// as well, added to the Softmax.
    fn attention(reread: bool) -> FloatGraph {
        let transpose = FloatNode {
            name: "xT".into(),
            op: FloatOp::Gather { source: vec![0, 3, 1, 4, 2, 5] },
            inputs: vec![0],
            shape: vec![3, 2],
        };
        let scores = FloatNode {
            name: "scores".into(),
            op: FloatOp::MatMul { alpha: 0.5 },
            inputs: vec![0, 1],
            shape: vec![2, 2],
        };
        let softmax = FloatNode {
            name: "softmax".into(),
            op: FloatOp::Softmax { keep: vec![true, false, true, true] },
            inputs: vec![2],
            shape: vec![2, 2],
        };
        let mut nodes = vec![transpose, scores, softmax];
        if reread {
            nodes.push(FloatNode { name: "relu".into(), op: FloatOp::Relu, inputs: vec![2], shape: vec![2, 2] });
            let add = FloatOp::Add { relu: false, subtract: false };
            nodes.push(FloatNode { name: "add".into(), op: add, inputs: vec![3, 4], shape: vec![2, 2] });
        }
        FloatGraph {
            name: "attention".into(),
            input_shape: vec![2, 3],
            tokens: false,
            nodes,
            ports: Default::default(),
        }
    }

    #[test]
    fn wide_scores_fuse_a_matmul_read_only_by_a_softmax() {
        let samples = vec![vec![0.5, -1.0, 2.0, 1.5, 0.25, -0.75], vec![-2.0, 1.0, 0.0, 0.5, 3.0, -1.5]];
        let wide = QuantizeOptions { wide_attention_scores: true };
        let kinds = |m: &QuantModel| m.nodes.iter().map(|n| n.op.kind()).collect::<Vec<_>>();
        let fused = quantize_model_with(&attention(false), &samples, wide).unwrap();
        assert_eq!(kinds(&fused), ["Gather", "ScoresSoftmax"]);
        assert_eq!(fused.nodes[1].inputs, [0, 1]);
        assert_eq!(kinds(&quantize_model(&attention(false), &samples).unwrap()), ["Gather", "MatMul", "Softmax"]);
        // Scores another node reads too stay a tensor (at 8 bits).
        let reread = quantize_model_with(&attention(true), &samples, wide).unwrap();
        assert_eq!(kinds(&reread), ["Gather", "MatMul", "Softmax", "Relu", "Add"]);
        // The fused op computes the float softmax to within a step of 1/255 (plus the table's
        // rounding) on the kept cells, and 0 on the masked one.
        let graph = attention(false);
        for x in &samples {
            let float = graph.run(x).pop().unwrap();
            let y = infer::run(&fused, &infer::quantize_input(&fused, x).unwrap()).unwrap();
            let probabilities = infer::dequantize(y.output(), fused.tensor_q(2));
            for (p, f) in probabilities.iter().zip(&float) {
                assert!((p - f).abs() <= 1.5 / 255.0 + 0.02, "{probabilities:?} against {float:?}");
            }
            assert_eq!(probabilities[1], 0.0);
        }
    }
}
