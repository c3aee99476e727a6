//! ONNX `Resize` (opsets 10 to 19) and `Upsample` (before 10) of a computed tensor.
//!
//! `nearest`: every output cell copies one input cell, so the whole resize is one index map
//! (a Gather). `linear`: separable, so each resized axis is moved last and multiplied by a
//! constant `[out, in]` interpolation matrix (a per-row Dense, the matrix's entries quantized
//! as weights), then moved back. `cubic` is refused.

use super::Importer;
use crate::float::FloatOp;
use crate::node::Ctx;
use crate::tensor::{count, Tensor};
use crate::Result;

/// How an output coordinate maps to an input coordinate along one axis.
#[derive(Clone, Copy)]
enum Transform {
    HalfPixel,
    PytorchHalfPixel,
    AlignCorners,
    Asymmetric,
    TfHalfPixelForNn,
}

impl Transform {
    fn parse(cx: &Ctx<'_>, default: &str) -> Result<Self> {
        let mode = cx.string("coordinate_transformation_mode").unwrap_or_else(|| default.into());
        Ok(match mode.as_str() {
            "half_pixel" => Self::HalfPixel,
            "pytorch_half_pixel" => Self::PytorchHalfPixel,
            "align_corners" => Self::AlignCorners,
            "asymmetric" => Self::Asymmetric,
            "tf_half_pixel_for_nn" => Self::TfHalfPixelForNn,
            other => return Err(cx.unsupported(format!("coordinate_transformation_mode '{other}'"))),
        })
    }

    /// The input coordinate of output index `x` along an axis of `len_in` → `len_out`, scale
    /// `scale`.
    fn source(self, x: usize, len_in: usize, len_out: usize, scale: f64) -> f64 {
        let x = x as f64;
        match self {
            Self::HalfPixel => (x + 0.5) / scale - 0.5,
            Self::PytorchHalfPixel if len_out > 1 => (x + 0.5) / scale - 0.5,
            Self::PytorchHalfPixel => 0.0,
            Self::AlignCorners if len_out > 1 => x * (len_in as f64 - 1.0) / (len_out as f64 - 1.0),
            Self::AlignCorners => 0.0,
            Self::Asymmetric => x / scale,
            Self::TfHalfPixelForNn => (x + 0.5) / scale,
        }
    }
}

/// `Resize` or `Upsample` of a computed tensor.
pub(crate) fn resize_node(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<()> {
    let x = im.data_in(cx, 0)?;
    let dims = im.full[x].clone();
    let rank = dims.len();
    let given = |k: usize| cx.node.input.get(k).filter(|n| !n.is_empty()).is_some();
    let floats = |k: usize| -> Result<Vec<f32>> { Ok(im.konst(cx, k)?.floats()) };
    // Where the scales or sizes are: Upsample (opset 7: attribute; 9: input 1); Resize 10:
    // input 1; Resize 11+: input 2 (scales) or 3 (sizes), input 1 being the unused roi.
    let upsample = cx.op() == "Upsample";
    let (scales, sizes) = if upsample {
        (if given(1) { Some(floats(1)?) } else { cx.attr("scales").map(|a| a.floats.clone()) }, None)
    } else if im.opset < 11 {
        (Some(floats(1)?), None)
    } else if given(3) {
        let s = im.konst(cx, 3)?.ints().map(<[i64]>::to_vec).ok_or_else(|| cx.invalid("sizes must be integers"))?;
        (None, Some(s))
    } else if given(2) {
        (Some(floats(2)?), None)
    } else {
        return Err(cx.invalid("neither scales nor sizes"));
    };
    if cx.ints("axes").is_some() {
        return Err(cx.unsupported("Resize with axes: give scales or sizes for every axis"));
    }
    let (out_dims, scale): (Vec<usize>, Vec<f64>) = match (scales, sizes) {
        (Some(s), _) if s.len() == rank && s.iter().all(|v| v.is_finite() && *v > 0.0) => {
            let out = dims.iter().zip(&s).map(|(&d, &f)| (d as f64 * f64::from(f)).floor() as usize).collect();
            (out, s.iter().map(|&f| f64::from(f)).collect())
        }
        (_, Some(z)) if z.len() == rank && z.iter().all(|&v| v > 0) => {
            let out: Vec<usize> = z.iter().map(|&v| v as usize).collect();
            let scale = out.iter().zip(&dims).map(|(&o, &d)| o as f64 / d as f64).collect();
            (out, scale)
        }
        (s, z) => return Err(cx.invalid(format!("scales {s:?} / sizes {z:?} for a rank-{rank} tensor"))),
    };
    if out_dims.contains(&0) {
        return Err(cx.invalid(format!("an empty output {out_dims:?}")));
    }
    count(&out_dims).map_err(|e| cx.invalid(e))?;
    let mode = cx.string("mode").unwrap_or_else(|| "nearest".into());
    // Upsample and opset-10 Resize place samples asymmetrically; opset 11+ defaults to
    // half_pixel.
    let default = if upsample || im.opset < 11 { "asymmetric" } else { "half_pixel" };
    let transform = Transform::parse(cx, default)?;
    let t = match mode.as_str() {
        "nearest" => {
            let nearest = cx
                .string("nearest_mode")
                .unwrap_or_else(|| if upsample || im.opset < 11 { "floor" } else { "round_prefer_floor" }.into());
            let pick = |v: f64| -> Result<f64> {
                Ok(match nearest.as_str() {
                    "round_prefer_floor" if v.fract() == 0.5 => v.floor(),
                    "round_prefer_ceil" if v.fract() == 0.5 => v.ceil(),
                    "round_prefer_floor" | "round_prefer_ceil" => v.round(),
                    "floor" => v.floor(),
                    "ceil" => v.ceil(),
                    other => return Err(cx.unsupported(format!("nearest_mode '{other}'"))),
                })
            };
            let mut per_axis: Vec<Vec<usize>> = Vec::with_capacity(rank);
            for a in 0..rank {
                let along = (0..out_dims[a])
                    .map(|o| {
                        let v = pick(transform.source(o, dims[a], out_dims[a], scale[a]))?;
                        Ok(v.clamp(0.0, dims[a] as f64 - 1.0) as usize)
                    })
                    .collect::<Result<Vec<usize>>>()?;
                per_axis.push(along);
            }
            let source = gather_map(&dims, &out_dims, &per_axis);
            im.push(cx.name(), FloatOp::Gather { source }, vec![x], out_dims)
        }
        "linear" => {
            let mut t = x;
            for a in (0..rank).filter(|&a| out_dims[a] != dims[a] || transform_moves(transform, scale[a])) {
                t = interpolate_axis(im, cx, t, a, out_dims[a], |o| {
                    transform.source(o, dims[a], out_dims[a], scale[a]).clamp(0.0, dims[a] as f64 - 1.0)
                })?;
            }
            t
        }
        other => return Err(cx.unsupported(format!("mode '{other}': nearest and linear are supported"))),
    };
    im.alias(&cx.node.output[0], t);
    Ok(())
}

/// Whether an axis of unchanged length still moves its samples (a scale of 1 under
/// tf_half_pixel_for_nn does; under the others it maps every index to itself).
fn transform_moves(transform: Transform, scale: f64) -> bool {
    matches!(transform, Transform::TfHalfPixelForNn) || scale != 1.0
}

/// The flat input index of every output cell, `per_axis[a][o]` the input index along axis `a`.
fn gather_map(dims: &[usize], out_dims: &[usize], per_axis: &[Vec<usize>]) -> Vec<u32> {
    let rank = dims.len();
    let strides = crate::tensor::strides(dims);
    let total: usize = out_dims.iter().product();
    (0..total)
        .map(|flat| {
            let (mut rest, mut index) = (flat, 0usize);
            for a in (0..rank).rev() {
                index += per_axis[a][rest % out_dims[a]] * strides[a];
                rest /= out_dims[a];
            }
            index as u32
        })
        .collect()
}

/// Tensor `t` with axis `a` resampled to `len_out` by linear interpolation at input coordinate
/// `source(o)` for output `o`: the axis moved last, a Dense by the interpolation matrix, moved
/// back.
fn interpolate_axis(
    im: &mut Importer<'_>,
    cx: &Ctx<'_>,
    t: usize,
    a: usize,
    len_out: usize,
    source: impl Fn(usize) -> f64,
) -> Result<usize> {
    let dims = im.full[t].clone();
    let rank = dims.len();
    let len_in = dims[a];
    let mut weights = vec![0f32; len_out * len_in];
    for o in 0..len_out {
        let s = source(o);
        let lo = s.floor() as usize;
        let hi = (lo + 1).min(len_in - 1);
        let f = s - lo as f64;
        weights[o * len_in + lo] += (1.0 - f) as f32;
        weights[o * len_in + hi] += f as f32;
    }
    let perm: Vec<i64> = (0..rank).filter(|&k| k != a).chain([a]).map(|k| k as i64).collect();
    let moved = move_axes(im, cx, t, &perm, &format!("axis {a} last"))?;
    let mut out = im.full[moved].clone();
    *out.last_mut().expect("rank >= 1") = len_out;
    let dense = FloatOp::Dense { weights, bias: vec![0.0; len_out], out: len_out, relu: false };
    let resized = im.push(format!("{}:axis {a}", cx.name()), dense, vec![moved], out);
    // Back: the inverse permutation.
    let mut inverse = vec![0i64; rank];
    for (i, &p) in perm.iter().enumerate() {
        inverse[p as usize] = i as i64;
    }
    move_axes(im, cx, resized, &inverse, &format!("axis {a} back"))
}

/// `t` transposed by `perm` (itself if `perm` is the identity).
fn move_axes(im: &mut Importer<'_>, cx: &Ctx<'_>, t: usize, perm: &[i64], what: &str) -> Result<usize> {
    if perm.iter().enumerate().all(|(i, &p)| i as i64 == p) {
        return Ok(t);
    }
    let map = Tensor::iota(&im.full[t]).and_then(|m| m.transpose(perm)).map_err(|e| cx.invalid(e))?;
    let source = map.data.iter().map(|&i| i as u32).collect();
    Ok(im.push(format!("{}:{what}", cx.name()), FloatOp::Gather { source }, vec![t], map.dims))
}
