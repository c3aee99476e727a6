//! `PRelu` with a slope per channel: `y = x + (α_c − 1)·min(x, 0)`, i.e. a table for
//! `min(x, 0)`, a depthwise 1×1 convolution by `α_c − 1` (the channel axis moved to second
//! place, the rest flattened), and a sum with `x`. (A single slope is one table:
//! activations.rs.)

use super::activations::clamp;
use super::Importer;
use crate::float::FloatOp;
use crate::node::Ctx;
use crate::tensor::{broadcast_to, Tensor};
use crate::Result;

pub(crate) fn per_channel_prelu(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<()> {
    let x = im.data_in(cx, 0)?;
    let full = im.full[x].clone();
    let slope = im.konst(cx, 1)?.clone();
    let slope_values = slope.floats();
    if let Some(v) = slope_values.iter().find(|v| !v.is_finite()) {
        return Err(cx.invalid(format!("a slope of {v}")));
    }
    // α per element, then the one axis along which it varies.
    let alpha = broadcast_to(&Tensor { dims: slope.dims().to_vec(), data: slope_values }, &full)
        .map_err(|e| cx.invalid(format!("slope of shape {:?} for {full:?}: {e}", slope.dims())))?;
    let rank = full.len();
    let mut strides = vec![1usize; rank];
    for a in (0..rank.saturating_sub(1)).rev() {
        strides[a] = strides[a + 1] * full[a + 1];
    }
    let varies = |a: usize| {
        (0..alpha.data.len()).any(|i| alpha.data[i] != alpha.data[i - (i / strides[a] % full[a]) * strides[a]])
    };
    let axes: Vec<usize> = (0..rank).filter(|&a| varies(a)).collect();
    let [axis] = axes[..] else {
        return Err(cx.unsupported(format!("PRelu slopes varying along axes {axes:?}: one channel axis is supported")));
    };
    let channels = full[axis];
    let factors: Vec<f32> = (0..channels).map(|c| alpha.data[c * strides[axis]] - 1.0).collect();
    // min(x, 0), then the channel axis second and everything else flattened after it.
    let negative = im.push(
        format!("{}:negative part", cx.name()),
        FloatOp::Elementwise { f: clamp(f64::NEG_INFINITY, 0.0) },
        vec![x],
        full.clone(),
    );
    let perm: Vec<i64> = std::iter::once(axis).chain((0..rank).filter(|&a| a != axis)).map(|a| a as i64).collect();
    let moved = if perm.iter().enumerate().all(|(i, &p)| i as i64 == p) {
        negative
    } else {
        let map = Tensor::iota(&full).and_then(|m| m.transpose(&perm)).map_err(|e| cx.invalid(e))?;
        let source = map.data.iter().map(|&i| i as u32).collect();
        im.push(format!("{}:channels first", cx.name()), FloatOp::Gather { source }, vec![negative], map.dims)
    };
    let rest = alpha.data.len() / channels;
    let image = im.push(format!("{}:image", cx.name()), FloatOp::Reshape, vec![moved], vec![1, channels, rest, 1]);
    let conv = FloatOp::Conv {
        weights: factors,
        bias: vec![0.0; channels],
        c_out: channels,
        kernel: [1, 1],
        stride: [1, 1],
        pads: [0; 4],
        groups: channels,
        relu: false,
    };
    let scaled = im.push(format!("{}:slopes", cx.name()), conv, vec![image], vec![1, channels, rest, 1]);
    // Back to x's layout: the moved shape, then the inverse permutation.
    let mut moved_dims: Vec<usize> = perm.iter().map(|&p| full[p as usize]).collect();
    let mut back = im.push(format!("{}:unimage", cx.name()), FloatOp::Reshape, vec![scaled], moved_dims.clone());
    if moved != negative {
        let mut inverse = vec![0i64; rank];
        for (i, &p) in perm.iter().enumerate() {
            inverse[p as usize] = i as i64;
        }
        let map = Tensor::iota(&moved_dims).and_then(|m| m.transpose(&inverse)).map_err(|e| cx.invalid(e))?;
        let source = map.data.iter().map(|&i| i as u32).collect();
        moved_dims = map.dims;
        back = im.push(format!("{}:channels back", cx.name()), FloatOp::Gather { source }, vec![back], moved_dims);
    }
    let t = im.push(cx.name(), FloatOp::Add { relu: false, subtract: false }, vec![x, back], full);
    im.alias(&cx.node.output[0], t);
    Ok(())
}
