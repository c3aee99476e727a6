//! Per-channel constants applied to a computed tensor: a scale that varies along one axis (`Mul`
//! or `Div` by a constant tensor: LayerScale, a normalizer's γ not fused into anything) and
//! `PRelu` with a slope per channel, `x + (α_c − 1)·min(x, 0)`. The scale is a depthwise 1×1
//! convolution over the tensor seen as `[1, C, rest, 1]`, its channel axis moved second.
//! (A scale or slope with one value is a table: elementwise.rs, activations.rs.)

use super::activations::clamp;
use super::Importer;
use crate::float::FloatOp;
use crate::node::Ctx;
use crate::tensor::{broadcast_to, Const, Tensor};
use crate::Result;

/// `Mul(x, C)` or `Div(x, C)` (`divide`) by a constant tensor broadcast to `x`.
pub(crate) fn scale_node(im: &mut Importer<'_>, cx: &Ctx<'_>, divide: bool) -> Result<()> {
    let (xk, ck) = if im.is_const(cx, 1) { (0, 1) } else { (1, 0) };
    if divide && ck == 0 {
        return Err(cx.unsupported("Div of a constant by a computed tensor of several values"));
    }
    let x = im.data_in(cx, xk)?;
    let c = im.konst(cx, ck)?.clone();
    let factors = per_element(im, cx, x, &c, "factor")?;
    let factors = if divide { factors.iter().map(|&v| 1.0 / v).collect::<Vec<f32>>() } else { factors };
    if let Some(v) = factors.iter().find(|v| !v.is_finite()) {
        return Err(cx.invalid(format!("a factor of {v}")));
    }
    let t = scale_along_one_axis(im, cx, x, &factors, "")?;
    im.alias(&cx.node.output[0], t);
    Ok(())
}

/// `PRelu(x, α)` with α varying along one axis.
pub(crate) fn per_channel_prelu(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<()> {
    let x = im.data_in(cx, 0)?;
    let full = im.full[x].clone();
    let slope = im.konst(cx, 1)?.clone();
    let factors: Vec<f32> = per_element(im, cx, x, &slope, "slope")?.iter().map(|a| a - 1.0).collect();
    let negative = im.push(
        format!("{}:negative part", cx.name()),
        FloatOp::Elementwise { f: clamp(f64::NEG_INFINITY, 0.0) },
        vec![x],
        full.clone(),
    );
    let scaled = scale_along_one_axis(im, cx, negative, &factors, ":slopes")?;
    let t = im.push(cx.name(), FloatOp::Add { relu: false, subtract: false }, vec![x, scaled], full);
    im.alias(&cx.node.output[0], t);
    Ok(())
}

/// Constant `c` broadcast to computed tensor `x`'s shape, every value finite.
fn per_element(im: &Importer<'_>, cx: &Ctx<'_>, x: usize, c: &Const, what: &str) -> Result<Vec<f32>> {
    let full = &im.full[x];
    let values = c.floats();
    if let Some(v) = values.iter().find(|v| !v.is_finite()) {
        return Err(cx.invalid(format!("a {what} of {v}")));
    }
    let spread = broadcast_to(&Tensor { dims: c.dims().to_vec(), data: values }, full)
        .map_err(|e| cx.unsupported(format!("a {what} of shape {:?} for {full:?}: {e}", c.dims())))?;
    Ok(spread.data)
}

/// `x · factors` elementwise, `factors` (one per element of `x`) varying along at most one axis:
/// a depthwise 1×1 Conv over `x` seen as `[1, C, rest, 1]`, that axis moved second and back.
/// The nodes are named after `cx`'s node, with `suffix` on the convolution.
fn scale_along_one_axis(im: &mut Importer<'_>, cx: &Ctx<'_>, x: usize, factors: &[f32], suffix: &str) -> Result<usize> {
    let full = im.full[x].clone();
    let rank = full.len();
    let strides = crate::tensor::strides(&full);
    let varies =
        |a: usize| (0..factors.len()).any(|i| factors[i] != factors[i - (i / strides[a] % full[a]) * strides[a]]);
    let axes: Vec<usize> = (0..rank).filter(|&a| varies(a)).collect();
    let axis = match axes[..] {
        [] => rank.saturating_sub(1),
        [a] => a,
        _ => {
            return Err(cx.unsupported(format!(
                "constants varying along axes {axes:?} of {full:?}: one channel axis is supported"
            )))
        }
    };
    let channels = full[axis];
    let weights: Vec<f32> = (0..channels).map(|c| factors[c * strides[axis]]).collect();
    let perm: Vec<i64> = std::iter::once(axis).chain((0..rank).filter(|&a| a != axis)).map(|a| a as i64).collect();
    let identity = perm.iter().enumerate().all(|(i, &p)| i as i64 == p);
    let moved = if identity {
        x
    } else {
        let map = Tensor::iota(&full).and_then(|m| m.transpose(&perm)).map_err(|e| cx.invalid(e))?;
        let source = map.data.iter().map(|&i| i as u32).collect();
        im.push(format!("{}:channels first", cx.name()), FloatOp::Gather { source }, vec![x], map.dims)
    };
    let rest = factors.len() / channels;
    let image = im.push(format!("{}:image", cx.name()), FloatOp::Reshape, vec![moved], vec![1, channels, rest, 1]);
    let conv = FloatOp::Conv {
        weights,
        bias: vec![0.0; channels],
        c_out: channels,
        kernel: [1, 1],
        stride: [1, 1],
        pads: [0; 4],
        groups: channels,
        relu: false,
    };
    let scaled = im.push(format!("{}{suffix}", cx.name()), conv, vec![image], vec![1, channels, rest, 1]);
    let moved_dims: Vec<usize> = perm.iter().map(|&p| full[p as usize]).collect();
    let back = im.push(format!("{}:unimage", cx.name()), FloatOp::Reshape, vec![scaled], moved_dims.clone());
    if identity {
        return Ok(back);
    }
    let mut inverse = vec![0i64; rank];
    for (i, &p) in perm.iter().enumerate() {
        inverse[p as usize] = i as i64;
    }
    let map = Tensor::iota(&moved_dims).and_then(|m| m.transpose(&inverse)).map_err(|e| cx.invalid(e))?;
    let source = map.data.iter().map(|&i| i as u32).collect();
    Ok(im.push(format!("{}:channels back", cx.name()), FloatOp::Gather { source }, vec![back], map.dims))
}
