//! ONNX `ConvTranspose` (GAN generators, U-Net decoders) as the convolution it equals: the
//! input spread out by its strides with zeros between (and around: `kernel − 1 − pad`), a copy
//! with one constant (a Concat), then a stride-1 Conv with the kernel flipped and its
//! input and output channels swapped. Exact, at the price of the zeros' multiply-accumulates
//! (about `stride²` times the transposed convolution's own).

use super::Importer;
use crate::float::FloatOp;
use crate::node::Ctx;
use crate::tensor::count;
use crate::Result;

pub(crate) fn conv_transpose_node(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<()> {
    let x = im.data_in(cx, 0)?;
    let dims = im.full[x].clone();
    let [1, c_in, h, w] = dims[..] else {
        return Err(cx.unsupported(format!("input shape {dims:?}: only [N=1, C, H, W] inputs are supported")));
    };
    if cx.ints("dilations").is_some_and(|d| d.iter().any(|&v| v != 1)) {
        return Err(cx.unsupported("dilation != 1: only dilation 1 is supported"));
    }
    if cx.ints("output_shape").is_some() {
        return Err(cx.unsupported("output_shape: give pads and output_padding instead"));
    }
    let w_dims = im.konst(cx, 1)?.dims().to_vec();
    let groups = usize::try_from(cx.int("group", 1)).ok().filter(|&g| g >= 1 && c_in % g == 0);
    let groups = groups.ok_or_else(|| cx.invalid(format!("group {} for {c_in} channels", cx.int("group", 1))))?;
    let [w_in, per_group_out, kh, kw] = w_dims[..] else {
        return Err(cx.invalid(format!("weights {w_dims:?}: [C_in, C_out / group, kH, kW] expected")));
    };
    if w_in != c_in {
        return Err(cx.invalid(format!("weights {w_dims:?} do not fit {c_in} input channels")));
    }
    let kernel = cx.pair("kernel_shape", [kh, kw])?;
    if kernel != [kh, kw] {
        return Err(cx.invalid(format!("kernel_shape {kernel:?} differs from the weights' {:?}", [kh, kw])));
    }
    let stride = cx.pair("strides", [1, 1])?;
    let pads = cx.pads()?;
    let extra = match cx.ints("output_padding") {
        None => [0, 0],
        Some(v) if v.len() == 2 && v.iter().zip(&stride).all(|(&p, &s)| p >= 0 && (p as usize) < s) => {
            [v[0] as usize, v[1] as usize]
        }
        Some(v) => return Err(cx.invalid(format!("output_padding {v:?}"))),
    };
    let weights = im.finite(cx, 1)?;
    let c_out = per_group_out * groups;
    let bias = if cx.node.input.get(2).is_some_and(|n| !n.is_empty()) { im.finite(cx, 2)? } else { vec![0.0; c_out] };
    if bias.len() != c_out {
        return Err(cx.invalid("bias length differs from the output channels"));
    }
    // The spread input: `x[c][i][j]` at `(b_h + s_h·i, b_w + s_w·j)`, zeros elsewhere, with
    // `b = k − 1 − pad_begin` before and `k − 1 − pad_end + output_padding` after (negative:
    // cropped).
    let begin = [kh as i64 - 1 - pads[0] as i64, kw as i64 - 1 - pads[1] as i64];
    let end = [kh as i64 - 1 - pads[2] as i64 + extra[0] as i64, kw as i64 - 1 - pads[3] as i64 + extra[1] as i64];
    let spread = [stride[0] * (h - 1) + 1, stride[1] * (w - 1) + 1];
    let size = |a: usize| spread[a] as i64 + begin[a] + end[a];
    let (sh, sw) = (size(0), size(1));
    if sh < kh as i64 || sw < kw as i64 {
        return Err(cx.invalid(format!("pads {pads:?} leave no output")));
    }
    let (sh, sw) = (sh as usize, sw as usize);
    count(&[c_in, sh, sw]).map_err(|e| cx.invalid(e))?;
    let zero = (c_in * h * w) as u32;
    let along = |a: usize, o: usize, s: usize, len: usize| -> Option<usize> {
        let p = o as i64 - begin[a];
        (p >= 0 && p % s as i64 == 0 && ((p / s as i64) as usize) < len).then(|| (p / s as i64) as usize)
    };
    let mut source = Vec::with_capacity(c_in * sh * sw);
    for c in 0..c_in {
        for oy in 0..sh {
            for ox in 0..sw {
                source.push(match (along(0, oy, stride[0], h), along(1, ox, stride[1], w)) {
                    (Some(i), Some(j)) => ((c * h + i) * w + j) as u32,
                    _ => zero,
                });
            }
        }
    }
    let spread_t = im.push(
        format!("{}:spread", cx.name()),
        FloatOp::Concat { source, constants: vec![0.0] },
        vec![x],
        vec![1, c_in, sh, sw],
    );
    // Conv weights `[c_out][c_in / group][kh][kw]`, flipped: within group `g`, output `o` and
    // input `i` take `W[g·(c_in/group) + i][o][kh − 1 − y][kw − 1 − x]`.
    let in_group = c_in / groups;
    let mut flipped = vec![0f32; c_out * in_group * kh * kw];
    for g in 0..groups {
        for o in 0..per_group_out {
            for i in 0..in_group {
                for y in 0..kh {
                    for xk in 0..kw {
                        let from = (((g * in_group + i) * per_group_out + o) * kh + (kh - 1 - y)) * kw + (kw - 1 - xk);
                        let to = (((g * per_group_out + o) * in_group + i) * kh + y) * kw + xk;
                        flipped[to] = weights[from];
                    }
                }
            }
        }
    }
    let (oh, ow) = (sh - kh + 1, sw - kw + 1);
    let conv = FloatOp::Conv {
        weights: flipped,
        bias,
        c_out,
        kernel: [kh, kw],
        stride: [1, 1],
        pads: [0; 4],
        groups,
        relu: false,
    };
    let t = im.push(cx.name(), conv, vec![spread_t], vec![1, c_out, oh, ow]);
    im.alias(&cx.node.output[0], t);
    Ok(())
}
