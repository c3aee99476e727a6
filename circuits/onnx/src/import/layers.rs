//! Layers: the nodes that compute (Gemm/MatMul, Conv, pooling, additions, ReduceMean), with
//! BatchNormalization, bias additions and ReLU folded into the layer before them.

use super::{Importer, SUPPORTED};
use crate::float::FloatOp;
use crate::node::Ctx;
use crate::tensor::{axis, broadcast_dims, broadcast_to, Tensor};
use crate::Result;

/// Whether a constant added right after `op` is its bias.
pub(crate) fn takes_bias(op: &FloatOp) -> bool {
    matches!(op, FloatOp::Dense { relu: false, .. } | FloatOp::Conv { relu: false, .. })
}

pub(crate) fn layer(im: &mut Importer<'_>, cx: &Ctx<'_>, is_last: bool) -> Result<()> {
    let out = cx.node.output[0].as_str();
    let input_name = cx.node.input.first().cloned().unwrap_or_default();
    match cx.op() {
        "Gemm" | "MatMul" => dense(im, cx),
        "Conv" => conv(im, cx),
        "BatchNormalization" => batch_norm(im, cx),
        "Add" => add(im, cx),
        "Relu" => {
            let x = im.data_in(cx, 0)?;
            let folded = im.foldable(x, &input_name)
                && match &mut im.g.nodes.last_mut().expect("producer").op {
                    FloatOp::Dense { relu, .. }
                    | FloatOp::Conv { relu, .. }
                    | FloatOp::AvgPool { relu, .. }
                    | FloatOp::Add { relu, .. } => {
                        *relu = true;
                        true
                    }
                    _ => false,
                };
            if folded {
                im.alias(out, x);
            } else {
                let full = im.full[x].clone();
                let t = im.push(cx.name(), FloatOp::Relu, vec![x], full);
                im.alias(out, t);
            }
            Ok(())
        }
        "MaxPool" | "AveragePool" => pool(im, cx),
        "GlobalAveragePool" => {
            let x = im.data_in(cx, 0)?;
            let s = spatial(im, cx, x)?;
            let op = FloatOp::AvgPool {
                kernel: [s[1], s[2]],
                stride: [1, 1],
                pads: [0; 4],
                count_include_pad: false,
                relu: false,
            };
            let t = im.push(cx.name(), op, vec![x], vec![1, s[0], 1, 1]);
            im.alias(out, t);
            Ok(())
        }
        "ReduceMean" | "ReduceSum" | "ReduceMax" => reduce(im, cx),
        "Softmax" => {
            if let Some((x, keep)) = im.masks.remove(&input_name) {
                return masked_softmax(im, cx, x, keep);
            }
            let x = im.data_in(cx, 0)?;
            // Only the one output of a model may be left as logits: beside other outputs, an
            // output named probabilities must be probabilities.
            if !(is_last && im.outputs == [out]) {
                let full = im.full[x].clone();
                im.softmax_axis(cx, full.len())?;
                let t = im.push(cx.name(), FloatOp::Softmax { keep: Vec::new() }, vec![x], full);
                im.alias(out, t);
                return Ok(());
            }
            im.warnings.push(format!(
                "dropped trailing Softmax '{}': the model output is the logits (argmax unchanged)",
                cx.name()
            ));
            im.alias(out, x);
            Ok(())
        }
        "Dropout" => {
            if cx.node.output.get(1).is_some_and(|m| !m.is_empty()) {
                return Err(cx.unsupported("the mask output of Dropout"));
            }
            let x = im.data_in(cx, 0)?;
            im.alias(out, x);
            Ok(())
        }
        "LayerNormalization" => layer_norm(im, cx),
        "InstanceNormalization" => instance_norm(im, cx),
        "PRelu" => super::channels::per_channel_prelu(im, cx),
        "Where" => masked(im, cx),
        "Sub" => add(im, cx),
        "Mul" if im.is_const(cx, 0) || im.is_const(cx, 1) => super::channels::scale_node(im, cx, false),
        "Mul" => elementwise_product(im, cx),
        "Div" if im.is_const(cx, 1) => super::channels::scale_node(im, cx, true),
        "Div" if !im.is_const(cx, 0) => quotient(im, cx),
        "Div" | "Pow" => Err(cx.unsupported(
            "only by a constant with one value, or of one tensor with a function of itself (elementwise); \
             a power of two computed tensors, or a constant divided by a computed tensor of several values, \
             is not supported",
        )),
        other => Err(cx.unsupported(format!("'{other}' is not supported; supported ops: {SUPPORTED}"))),
    }
}

fn dense(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<()> {
    let op = cx.op();
    if op == "MatMul" && !im.is_const(cx, 1) {
        return product(im, cx);
    }
    let x = im.data_in(cx, 0)?;
    let (full, stored) = (im.full[x].clone(), im.g.shape(x).to_vec());
    let in_len: usize = stored.iter().product();
    let w_dims = im.konst(cx, 1)?.dims().to_vec();
    let w_values = im.finite(cx, 1)?;
    if w_dims.len() != 2 {
        return Err(cx.unsupported(format!("weights of shape {w_dims:?}: only 2-D weights are supported")));
    }
    let (alpha, beta) = (cx.float("alpha", 1.0), cx.float("beta", 1.0));
    if op == "Gemm" && cx.int("transA", 0) != 0 {
        return Err(cx.unsupported("transA=1"));
    }
    let trans_b = op == "Gemm" && cx.int("transB", 0) != 0;
    let (k, out) = if trans_b { (w_dims[1], w_dims[0]) } else { (w_dims[0], w_dims[1]) };
    // A MatMul applies to each row of the last axis, a Gemm to each row of its `[M, K]` input
    // (the tokens of a sequence flattened by the exporter); a one-row input is all of it.
    let out_full = if op == "MatMul" && stored.len() >= 2 && stored.last() == Some(&k) {
        let mut f = full[..full.len() - 1].to_vec();
        f.push(out);
        f
    } else if op == "Gemm" && full.len() == 2 && full[1] == k {
        vec![full[0], out]
    } else if k == in_len {
        vec![1, out]
    } else {
        return Err(cx.invalid(format!("weights {w_dims:?} do not fit an input of shape {full:?}")));
    };
    let mut weights = vec![0f32; out * k];
    for o in 0..out {
        for i in 0..k {
            let v = if trans_b { w_values[o * k + i] } else { w_values[i * out + o] };
            weights[o * k + i] = alpha * v;
        }
    }
    let mut bias = vec![0f32; out];
    if op == "Gemm" && cx.node.input.get(2).is_some_and(|n| !n.is_empty()) {
        let c = im.finite(cx, 2)?;
        if c.len() == out {
            bias.iter_mut().zip(&c).for_each(|(b, &v)| *b = beta * v);
        } else if c.len() == 1 {
            bias.iter_mut().for_each(|b| *b = beta * c[0]);
        } else {
            return Err(cx.unsupported(format!("bias of {} values for {out} outputs", c.len())));
        }
    }
    let t = im.push(cx.name(), FloatOp::Dense { weights, bias, out, relu: false }, vec![x], out_full);
    im.alias(&cx.node.output[0], t);
    Ok(())
}

/// A token embedding: `Gather` of rows of a constant table `[vocab, dim]` by the model's token
/// ids (its integer input).
pub(crate) fn embedding(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<()> {
    let ids = im.data_in(cx, 1)?;
    if !(ids == 0 || im.input_parts.contains(&ids)) || !im.g.tokens {
        return Err(
            cx.unsupported("a Gather of a constant table is supported only by the model's integer inputs (token ids)")
        );
    }
    if cx.int("axis", 0) != 0 {
        return Err(cx.unsupported("an embedding Gather along an axis other than 0"));
    }
    let dims = im.konst(cx, 0)?.dims().to_vec();
    let [vocab, dim] = dims[..] else {
        return Err(cx.unsupported(format!("an embedding table of shape {dims:?}: [vocab, dim] is supported")));
    };
    if vocab == 0 || vocab > 256 || vocab * dim > 1 << 16 {
        return Err(
            cx.unsupported(format!("an embedding of {vocab} tokens of {dim}: at most 256 tokens and 65536 values"))
        );
    }
    let table = im.finite(cx, 0)?;
    let mut full = im.full[ids].clone();
    full.push(dim);
    let t = im.push(cx.name(), FloatOp::Embedding { table, dim }, vec![ids], full);
    im.alias(&cx.node.output[0], t);
    Ok(())
}

/// `Where(cond, a, b)` with a constant condition and −∞ (or the lowest float) on one side: an
/// attention mask (PyTorch's `masked_fill(mask == 0, -inf)`), recorded for the next Softmax.
fn masked(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<()> {
    let cond = im
        .konst(cx, 0)
        .map_err(|_| cx.unsupported("Where is supported only as an attention mask with a constant condition"))?;
    let cond = Tensor { dims: cond.dims().to_vec(), data: cond.floats().iter().map(|&v| v != 0.0).collect() };
    let is_minus_infinity = |k: usize| {
        im.is_const(cx, k)
            && im.konst(cx, k).is_ok_and(|c| c.floats().iter().all(|&v| v == f32::NEG_INFINITY || v <= f32::MIN / 2.0))
    };
    let (x, keep_where) = if is_minus_infinity(1) && !im.is_const(cx, 2) {
        (im.data_in(cx, 2)?, false)
    } else if is_minus_infinity(2) && !im.is_const(cx, 1) {
        (im.data_in(cx, 1)?, true)
    } else {
        return Err(
            cx.unsupported("Where is supported only as an attention mask: a constant condition, −∞ on one side")
        );
    };
    let keep = Tensor { dims: cond.dims, data: cond.data.iter().map(|&c| c == keep_where).collect() };
    record_mask(im, cx, x, keep)
}

/// Records that output 0 of `cx` is tensor `x` with the cells `keep` (broadcast) kept.
fn record_mask(im: &mut Importer<'_>, cx: &Ctx<'_>, x: usize, keep: Tensor<bool>) -> Result<()> {
    let full = im.full[x].clone();
    let keep =
        broadcast_to(&keep, &full).map_err(|e| cx.unsupported(format!("a mask that does not fit {full:?}: {e}")))?;
    im.masks.insert(cx.node.output[0].clone(), (x, keep.data));
    Ok(())
}

/// A Softmax over the last axis of a masked tensor: the mask must repeat over the leading axes
/// (it covers the last two) and keep a cell of every row.
fn masked_softmax(im: &mut Importer<'_>, cx: &Ctx<'_>, x: usize, keep: Vec<bool>) -> Result<()> {
    let full = im.full[x].clone();
    im.softmax_axis(cx, full.len())?;
    let n = *full.last().expect("rank >= 1");
    let pattern = if full.len() >= 2 { n * full[full.len() - 2] } else { n };
    if keep.iter().enumerate().any(|(i, &k)| k != keep[i % pattern]) {
        return Err(cx.unsupported("a mask that differs between heads or batch entries"));
    }
    let keep: Vec<bool> = keep[..pattern].to_vec();
    if keep.chunks(n).any(|row| !row.contains(&true)) {
        return Err(cx.invalid("the mask hides every cell of a row"));
    }
    let keep = if keep.iter().all(|&k| k) { Vec::new() } else { keep };
    let t = im.push(cx.name(), FloatOp::Softmax { keep }, vec![x], full);
    im.alias(&cx.node.output[0], t);
    Ok(())
}

/// LayerNormalization over the last axis, with constant scale and bias.
fn layer_norm(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<()> {
    let x = im.data_in(cx, 0)?;
    let full = im.full[x].clone();
    let rank = full.len() as i64;
    let a = cx.int("axis", -1);
    if a != -1 && a != rank - 1 {
        return Err(cx.unsupported(format!("LayerNormalization over axis {a} of {full:?}: only the last axis")));
    }
    if cx.node.output.iter().skip(1).any(|o| !o.is_empty()) {
        return Err(cx.unsupported("the Mean and InvStdDev outputs of LayerNormalization"));
    }
    let n = *full.last().expect("rank >= 1");
    let per_channel = |k: usize, default: f32| -> Result<Vec<f32>> {
        match cx.node.input.get(k).filter(|i| !i.is_empty()) {
            None => Ok(vec![default; n]),
            Some(_) => {
                let v = im.finite(cx, k)?;
                match v.len() {
                    1 => Ok(vec![v[0]; n]),
                    len if len == n => Ok(v),
                    len => Err(cx.invalid(format!("{len} values for {n} channels"))),
                }
            }
        }
    };
    let (gamma, beta) = (per_channel(1, 1.0)?, per_channel(2, 0.0)?);
    let eps = cx.float("epsilon", 1e-5);
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(cx.invalid(format!("epsilon {eps}")));
    }
    let t = im.push(cx.name(), FloatOp::LayerNorm { gamma, beta, eps }, vec![x], full);
    im.alias(&cx.node.output[0], t);
    Ok(())
}

/// A MatMul of two computed tensors `[.., m, k]` and `[.., k, n]` (attention).
fn product(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<()> {
    let (a, b) = (im.data_in(cx, 0)?, im.data_in(cx, 1)?);
    let (fa, fb) = (im.full[a].clone(), im.full[b].clone());
    let rank = fa.len();
    if rank < 2 || fb.len() != rank || fa[..rank - 2] != fb[..rank - 2] || fa[rank - 1] != fb[rank - 2] {
        return Err(cx.unsupported(format!(
            "MatMul of {fa:?} by {fb:?}: shapes [.., m, k] and [.., k, n] with equal leading axes are supported"
        )));
    }
    let mut out = fa[..rank - 1].to_vec();
    out.push(fb[rank - 1]);
    if super::strip_batch(&fa).len() < 2 {
        return Err(cx.unsupported(format!("MatMul of {fa:?}: the batch axis cannot be a matrix axis")));
    }
    let t = im.push(cx.name(), FloatOp::MatMul { alpha: 1.0 }, vec![a, b], out);
    im.alias(&cx.node.output[0], t);
    Ok(())
}

/// `[C, H, W]` of a computed tensor, or an error naming the node.
fn spatial(im: &Importer<'_>, cx: &Ctx<'_>, x: usize) -> Result<[usize; 3]> {
    match im.g.shape(x) {
        [c, h, w] if im.full[x].len() == 4 => Ok([*c, *h, *w]),
        s => Err(cx.unsupported(format!("input shape {s:?}: only [N=1, C, H, W] inputs are supported"))),
    }
}

fn out_hw(cx: &Ctx<'_>, s: [usize; 3], kernel: [usize; 2], stride: [usize; 2], pads: [usize; 4]) -> Result<[usize; 2]> {
    let (ph, pw) = (s[1] + pads[0] + pads[2], s[2] + pads[1] + pads[3]);
    if ph < kernel[0] || pw < kernel[1] {
        return Err(cx.invalid(format!("window {kernel:?} is larger than the padded input {ph}x{pw}")));
    }
    Ok([(ph - kernel[0]) / stride[0] + 1, (pw - kernel[1]) / stride[1] + 1])
}

fn conv(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<()> {
    let x = im.data_in(cx, 0)?;
    let s = spatial(im, cx, x)?;
    if cx.ints("dilations").is_some_and(|d| d.iter().any(|&v| v != 1)) {
        return Err(cx.unsupported("dilation != 1: only dilation 1 is supported"));
    }
    let w = im.konst(cx, 1)?;
    let w_dims = w.dims().to_vec();
    let groups = usize::try_from(cx.int("group", 1)).ok().filter(|&g| g >= 1 && s[0] % g == 0).ok_or_else(|| {
        cx.invalid(format!("group {} does not divide the {} input channels", cx.int("group", 1), s[0]))
    })?;
    if w_dims.len() != 4 || w_dims[1] * groups != s[0] || w_dims[0] % groups != 0 {
        return Err(cx.invalid(format!("weights {w_dims:?} do not fit input {s:?} in {groups} group(s)")));
    }
    let weights = im.finite(cx, 1)?;
    let c_out = w_dims[0];
    let kernel = cx.pair("kernel_shape", [w_dims[2], w_dims[3]])?;
    let stride = cx.pair("strides", [1, 1])?;
    let pads = cx.pads()?;
    let [oh, ow] = out_hw(cx, s, kernel, stride, pads)?;
    let bias = if cx.node.input.get(2).is_some_and(|n| !n.is_empty()) { im.finite(cx, 2)? } else { vec![0.0; c_out] };
    if bias.len() != c_out {
        return Err(cx.invalid("bias length differs from the output channels"));
    }
    let op = FloatOp::Conv { weights, bias, c_out, kernel, stride, pads, groups, relu: false };
    let t = im.push(cx.name(), op, vec![x], vec![1, c_out, oh, ow]);
    im.alias(&cx.node.output[0], t);
    Ok(())
}

fn batch_norm(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<()> {
    let x = im.data_in(cx, 0)?;
    let [scale, b, mean, var] = [1, 2, 3, 4].map(|k| im.finite(cx, k));
    let (scale, b, mean, var) = (scale?, b?, mean?, var?);
    let eps = cx.float("epsilon", 1e-5);
    let folds_into_producer = im.foldable(x, &cx.node.input[0])
        && matches!(
            im.g.nodes.last().map(|n| &n.op),
            Some(FloatOp::Conv { relu: false, .. } | FloatOp::Dense { relu: false, .. })
        );
    if !folds_into_producer {
        return batch_norm_alone(im, cx, x, [scale, b, mean, var], eps);
    }
    let last = im.g.nodes.last_mut().expect("foldable implies a producer");
    let channels = scale.len();
    let ok = [&b, &mean, &var].iter().all(|v| v.len() == channels);
    let (weights, bias, c) = match &mut last.op {
        FloatOp::Conv { weights, bias, c_out, relu: false, .. } => (weights, bias, *c_out),
        FloatOp::Dense { weights, bias, out, relu: false } => (weights, bias, *out),
        _ => return Err(cx.unsupported("BatchNormalization is supported only right after a Conv or Gemm")),
    };
    if !ok || c != channels {
        return Err(cx.invalid("parameter lengths differ from the channel count"));
    }
    let per = weights.len() / c;
    for ch in 0..c {
        let f = scale[ch] / (var[ch] + eps).sqrt();
        weights[ch * per..(ch + 1) * per].iter_mut().for_each(|w| *w *= f);
        bias[ch] = (bias[ch] - mean[ch]) * f + b[ch];
    }
    im.alias(&cx.node.output[0], x);
    Ok(())
}

/// Tensor `t` broadcast (numpy rules) to ONNX shape `to`: itself when it has that shape, else a
/// copy of its elements (a Gather).
fn broadcast(im: &mut Importer<'_>, cx: &Ctx<'_>, t: usize, to: &[usize]) -> Result<usize> {
    let from = im.full[t].clone();
    if super::strip_batch(&from) == super::strip_batch(to) {
        return Ok(t);
    }
    let map = Tensor::iota(&from).and_then(|i| broadcast_to(&i, to)).map_err(|e| cx.invalid(e))?;
    let source = map.data.iter().map(|&i| i as u32).collect();
    Ok(im.push(format!("{}:broadcast {t}", cx.name()), FloatOp::Gather { source }, vec![t], to.to_vec()))
}

/// The two computed inputs of a binary elementwise node, broadcast to their common shape.
fn computed_pair(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<(usize, usize, Vec<usize>)> {
    let (a, b) = (im.data_in(cx, 0)?, im.data_in(cx, 1)?);
    pair_of(im, cx, a, b)
}

/// Tensors `a` and `b` broadcast to their common shape.
fn pair_of(im: &mut Importer<'_>, cx: &Ctx<'_>, a: usize, b: usize) -> Result<(usize, usize, Vec<usize>)> {
    let full = broadcast_dims(&im.full[a], &im.full[b])
        .map_err(|e| cx.invalid(format!("{:?} and {:?} do not broadcast: {e}", im.full[a], im.full[b])))?;
    Ok((broadcast(im, cx, a, &full)?, broadcast(im, cx, b, &full)?, full))
}

/// `a · b` of two computed tensors, elementwise: a batch of 1×1 matrix products, one per element
/// (the product of two int8 values at full width, then one requantization).
fn elementwise_product(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<()> {
    let (a, b, full) = computed_pair(im, cx)?;
    product_of(im, cx, a, b, full)
}

/// The elementwise product of `a` and `b`, both of ONNX shape `full`, as `cx`'s output.
fn product_of(im: &mut Importer<'_>, cx: &Ctx<'_>, a: usize, b: usize, full: Vec<usize>) -> Result<()> {
    let n: usize = full.iter().product();
    let cells = vec![1, n, 1, 1];
    let a = im.push(format!("{}:a", cx.name()), FloatOp::Reshape, vec![a], cells.clone());
    let b = im.push(format!("{}:b", cx.name()), FloatOp::Reshape, vec![b], cells.clone());
    let mut t = im.push(cx.name(), FloatOp::MatMul { alpha: 1.0 }, vec![a, b], cells);
    if super::strip_batch(&full) != super::strip_batch(&im.full[t]) {
        t = im.push(format!("{}:reshape", cx.name()), FloatOp::Reshape, vec![t], full);
    }
    im.alias(&cx.node.output[0], t);
    Ok(())
}

/// `a / b` of two computed tensors, broadcast: one exact quotient per element
/// ([`tgrid_int8::Op::Div`]), proven by a witnessed quotient and remainder.
fn quotient(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<()> {
    let (a, b, full) = computed_pair(im, cx)?;
    let t = im.push(cx.name(), FloatOp::Div, vec![a, b], full);
    im.alias(&cx.node.output[0], t);
    Ok(())
}

/// InstanceNormalization of `[N, C, ...]`: each channel normalized over its own positions, which
/// is a LayerNorm (without scale) over the last axis of the `[C, positions]` view, then the
/// per-channel scale and bias as a depthwise 1×1 convolution.
fn instance_norm(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<()> {
    let x = im.data_in(cx, 0)?;
    let full = im.full[x].clone();
    if full.len() < 3 || full[0] != 1 {
        return Err(cx.unsupported(format!("InstanceNormalization of {full:?}: [N=1, C, ...] is supported")));
    }
    let (c, positions) = (full[1], full[2..].iter().product::<usize>());
    let (scale, bias) = (im.finite(cx, 1)?, im.finite(cx, 2)?);
    if scale.len() != c || bias.len() != c {
        return Err(cx.invalid(format!("{} scales and {} biases for {c} channels", scale.len(), bias.len())));
    }
    let eps = cx.float("epsilon", 1e-5);
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(cx.invalid(format!("epsilon {eps}")));
    }
    let rows = vec![1, c, positions];
    let mut t = x;
    if full != rows {
        t = im.push(format!("{}:rows", cx.name()), FloatOp::Reshape, vec![t], rows.clone());
    }
    let norm = FloatOp::LayerNorm { gamma: vec![1.0; positions], beta: vec![0.0; positions], eps };
    t = im.push(format!("{}:normalized", cx.name()), norm, vec![t], rows);
    let image = vec![1, c, positions, 1];
    t = im.push(format!("{}:image", cx.name()), FloatOp::Reshape, vec![t], image.clone());
    let conv = FloatOp::Conv {
        weights: scale,
        bias,
        c_out: c,
        kernel: [1, 1],
        stride: [1, 1],
        pads: [0; 4],
        groups: c,
        relu: false,
    };
    t = im.push(cx.name(), conv, vec![t], image);
    t = im.push(format!("{}:reshape", cx.name()), FloatOp::Reshape, vec![t], full);
    im.alias(&cx.node.output[0], t);
    Ok(())
}

/// A BatchNormalization with no layer to fold into (after a pool, a ReLU, a sum): the affine map
/// `γ·(x − μ)/√(σ² + ε) + β` per channel, as a depthwise 1×1 convolution (one weight per
/// channel). An `[N, C]` input is seen as `[N, C, 1, 1]` for it.
fn batch_norm_alone(im: &mut Importer<'_>, cx: &Ctx<'_>, x: usize, params: [Vec<f32>; 4], eps: f32) -> Result<()> {
    let [scale, b, mean, var] = params;
    let full = im.full[x].clone();
    let c = *full.get(1).ok_or_else(|| cx.invalid(format!("input shape {full:?} has no channel axis")))?;
    if [&scale, &b, &mean, &var].iter().any(|v| v.len() != c) {
        return Err(cx.invalid(format!("parameter lengths differ from the {c} channels")));
    }
    let weights: Vec<f32> = (0..c).map(|ch| scale[ch] / (var[ch] + eps).sqrt()).collect();
    let bias: Vec<f32> = (0..c).map(|ch| b[ch] - mean[ch] * weights[ch]).collect();
    if weights.iter().chain(&bias).any(|v| !v.is_finite()) {
        return Err(cx.invalid("the affine map it computes is not finite (a variance of −ε?)"));
    }
    let image = match full.len() {
        4 => x,
        2 => im.push(format!("{}:image", cx.name()), FloatOp::Reshape, vec![x], vec![1, c, 1, 1]),
        _ => {
            return Err(cx.unsupported(format!(
                "BatchNormalization of shape {full:?} not after a Conv or Gemm: [N, C, H, W] and [N, C] are supported"
            )))
        }
    };
    let mut out = im.full[image].clone();
    out[0] = 1;
    let op =
        FloatOp::Conv { weights, bias, c_out: c, kernel: [1, 1], stride: [1, 1], pads: [0; 4], groups: c, relu: false };
    let mut t = im.push(cx.name(), op, vec![image], out);
    if full.len() == 2 {
        t = im.push(format!("{}:reshape", cx.name()), FloatOp::Reshape, vec![t], full);
    }
    im.alias(&cx.node.output[0], t);
    Ok(())
}

fn add(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<()> {
    let out = cx.node.output[0].as_str();
    let subtract = cx.op() == "Sub";
    if !(im.is_const(cx, 0) || im.is_const(cx, 1)) {
        let (a, b, full) = computed_pair(im, cx)?;
        let t = im.push(cx.name(), FloatOp::Add { relu: false, subtract }, vec![a, b], full);
        im.alias(out, t);
        return Ok(());
    }
    if subtract && im.is_const(cx, 0) {
        return Err(cx.unsupported("Sub of a computed tensor from a constant tensor of several values"));
    }
    let (xk, ck) = if im.is_const(cx, 1) { (0, 1) } else { (1, 0) };
    let x = im.data_in(cx, xk)?;
    let c = im.konst(cx, ck)?.clone();
    let name = cx.node.input[xk].clone();
    // `x − C` is `x + (−C)`.
    let values: Vec<f32> = if subtract { c.floats().iter().map(|v| -v).collect() } else { c.floats() };
    // An additive attention mask: 0 where a cell is kept, −∞ where it is not.
    if values.contains(&f32::NEG_INFINITY) {
        if values.iter().any(|&v| v != 0.0 && v != f32::NEG_INFINITY) {
            return Err(cx.unsupported("an added constant mixing −∞ with values other than 0"));
        }
        let keep = Tensor { dims: c.dims().to_vec(), data: values.iter().map(|&v| v == 0.0).collect() };
        return record_mask(im, cx, x, keep);
    }
    if let Some(i) = values.iter().position(|v| !v.is_finite()) {
        return Err(cx.invalid(format!("the added constant holds {} at {i}", values[i])));
    }
    // A bias right after a layer: per output channel (or one value).
    if im.foldable(x, &name) {
        match &mut im.g.nodes.last_mut().expect("foldable implies a producer").op {
            FloatOp::Dense { bias, relu: false, .. } if values.len() == bias.len() || values.len() == 1 => {
                for (i, b) in bias.iter_mut().enumerate() {
                    *b += values[if values.len() == 1 { 0 } else { i }];
                }
                im.alias(out, x);
                return Ok(());
            }
            FloatOp::Conv { bias, relu: false, .. }
                if values.len() == bias.len() && c.dims().iter().rev().take(2).all(|&d| d == 1) =>
            {
                bias.iter_mut().zip(&values).for_each(|(b, &v)| *b += v);
                im.alias(out, x);
                return Ok(());
            }
            _ => {}
        }
    }
    // Otherwise a constant tensor added elementwise (a position embedding).
    let full = im.full[x].clone();
    let spread = broadcast_to(&Tensor { dims: c.dims().to_vec(), data: values }, &full)
        .map_err(|e| cx.unsupported(format!("adding a constant of shape {:?} to {full:?}: {e}", c.dims())))?;
    let t = im.push(cx.name(), FloatOp::AddConst { values: spread.data }, vec![x], full);
    im.alias(out, t);
    Ok(())
}

fn pool(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<()> {
    let x = im.data_in(cx, 0)?;
    let s = spatial(im, cx, x)?;
    if cx.int("ceil_mode", 0) != 0 {
        return Err(cx.unsupported("ceil_mode=1"));
    }
    if cx.ints("dilations").is_some_and(|d| d.iter().any(|&v| v != 1)) {
        return Err(cx.unsupported("dilation != 1"));
    }
    if cx.node.output.get(1).is_some_and(|o| !o.is_empty()) {
        return Err(cx.unsupported("the Indices output of MaxPool"));
    }
    let kernel = cx.pair("kernel_shape", [0, 0])?;
    if kernel.contains(&0) {
        return Err(cx.invalid("kernel_shape is required"));
    }
    let stride = cx.pair("strides", [1, 1])?;
    let pads = cx.pads()?;
    let [oh, ow] = out_hw(cx, s, kernel, stride, pads)?;
    let op = if cx.op() == "MaxPool" {
        FloatOp::MaxPool { kernel, stride, pads }
    } else {
        FloatOp::AvgPool { kernel, stride, pads, count_include_pad: cx.int("count_include_pad", 0) != 0, relu: false }
    };
    let t = im.push(cx.name(), op, vec![x], vec![1, s[0], oh, ow]);
    im.alias(&cx.node.output[0], t);
    Ok(())
}

/// `ReduceMean`, `ReduceSum` or `ReduceMax` over any set of axes (all of them when none are
/// given): the reduced axes moved last and merged into one (a Gather, a Reshape), then a Dense
/// of one output with equal weights (`1/n` for the mean, 1 for the sum) or a max pool over each
/// row, then the requested shape.
fn reduce(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<()> {
    let x = im.data_in(cx, 0)?;
    let full = im.full[x].clone();
    let rank = full.len();
    let given = match cx.node.input.get(1).filter(|n| !n.is_empty()) {
        Some(_) => im.konst(cx, 1)?.ints().map(<[i64]>::to_vec).ok_or_else(|| cx.invalid("axes must be integers"))?,
        None => cx.ints("axes").unwrap_or_default(),
    };
    if given.is_empty() && cx.int("noop_with_empty_axes", 0) != 0 {
        im.alias(&cx.node.output[0], x);
        return Ok(());
    }
    let mut axes: Vec<usize> = if given.is_empty() {
        (0..rank).collect()
    } else {
        given.iter().map(|&a| axis(a, rank).map_err(|e| cx.invalid(e))).collect::<Result<_>>()?
    };
    axes.sort_unstable();
    axes.dedup();
    if axes.len() != given.len() && !given.is_empty() {
        return Err(cx.invalid(format!("axes {given:?} repeat an axis")));
    }
    let kept: Vec<usize> = (0..rank).filter(|k| !axes.contains(k)).collect();
    let n: usize = axes.iter().map(|&a| full[a]).product();
    // The reduced axes last, merged into one of `n` elements.
    let perm: Vec<usize> = kept.iter().chain(&axes).copied().collect();
    let mut rows = x;
    if perm.iter().enumerate().any(|(i, &p)| i != p) {
        let perm: Vec<i64> = perm.iter().map(|&k| k as i64).collect();
        let map = Tensor::iota(&full).and_then(|t| t.transpose(&perm)).map_err(|e| cx.invalid(e))?;
        let source = map.data.iter().map(|&i| i as u32).collect();
        rows = im.push(format!("{}:transpose", cx.name()), FloatOp::Gather { source }, vec![x], map.dims);
    }
    let leading: Vec<usize> = kept.iter().map(|&k| full[k]).collect();
    let row_count: usize = leading.iter().product();
    let t = if cx.op() == "ReduceMax" {
        // A max pool over a [1, rows, n] image with an n-wide window.
        let image = vec![1, 1, row_count, n];
        let t = im.push(format!("{}:rows", cx.name()), FloatOp::Reshape, vec![rows], image);
        let pool = FloatOp::MaxPool { kernel: [1, n], stride: [1, n], pads: [0; 4] };
        im.push(cx.name(), pool, vec![t], vec![1, 1, row_count, 1])
    } else {
        let mut merged = leading.clone();
        merged.push(n);
        if im.full[rows] != merged {
            rows = im.push(format!("{}:rows", cx.name()), FloatOp::Reshape, vec![rows], merged.clone());
        }
        let weight = if cx.op() == "ReduceMean" { 1.0 / n as f32 } else { 1.0 };
        let dense = FloatOp::Dense { weights: vec![weight; n], bias: vec![0.0], out: 1, relu: false };
        *merged.last_mut().expect("rank >= 1") = 1;
        im.push(cx.name(), dense, vec![rows], merged)
    };
    let wanted: Vec<usize> = if cx.int("keepdims", 1) != 0 {
        (0..rank).map(|k| if axes.contains(&k) { 1 } else { full[k] }).collect()
    } else {
        leading
    };
    let t = if super::strip_batch(&wanted) != super::strip_batch(&im.full[t]) {
        im.push(format!("{}:reshape", cx.name()), FloatOp::Reshape, vec![t], wanted)
    } else {
        t
    };
    im.alias(&cx.node.output[0], t);
    Ok(())
}
