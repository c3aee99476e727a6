//! Data-movement ops (Reshape, Transpose, Slice, Split, Gather, Expand, Tile...) as index maps: for each
//! output element, the flat index of the input element it copies. The same maps move the
//! values of constants (shape arithmetic) and become [`crate::FloatOp::Gather`] nodes on
//! activations.

use crate::node::Ctx;
use crate::tensor::{axis, broadcast_dims, broadcast_to, concat, count, reshape_dims, Const, Tensor};
use crate::Result;

/// Ops this module interprets.
pub(crate) const DATA_MOVEMENT: &[&str] = &[
    "Identity",
    "Reshape",
    "Flatten",
    "Squeeze",
    "Unsqueeze",
    "Transpose",
    "Slice",
    "Split",
    "Gather",
    "Expand",
    "Tile",
];

/// The index maps of `cx`'s op applied to a tensor of ONNX shape `dims`, one per output.
/// `konst(k)` is input `k` if it is a constant.
pub(crate) fn index_maps<'c>(
    cx: &Ctx<'_>,
    dims: &[usize],
    konst: impl Fn(usize) -> Option<&'c Const>,
) -> Result<Vec<Tensor<usize>>> {
    let iota = Tensor::iota(dims).map_err(|e| cx.invalid(e))?;
    let rank = dims.len();
    let ints = |k: usize, what: &str| -> Result<Vec<i64>> {
        let c = konst(k).ok_or_else(|| cx.unsupported(format!("{what} (input {k}) must be a constant")))?;
        c.ints().map(<[i64]>::to_vec).ok_or_else(|| cx.invalid(format!("{what} must be integers")))
    };
    let opt_ints = |k: usize, what: &str| -> Result<Option<Vec<i64>>> {
        match cx.node.input.get(k) {
            Some(name) if !name.is_empty() => ints(k, what).map(Some),
            _ => Ok(None),
        }
    };
    let bad = |e: String| cx.invalid(e);
    let one = |t: std::result::Result<Tensor<usize>, String>| t.map(|t| vec![t]).map_err(bad);
    match cx.op() {
        "Identity" => Ok(vec![iota]),
        "Reshape" => {
            let spec = ints(1, "the shape")?;
            let allow_zero = cx.int("allowzero", 0) != 0;
            one(reshape_dims(dims, &spec, allow_zero).and_then(|d| iota.reshaped(d)))
        }
        "Flatten" => {
            let a = if cx.int("axis", 1) == rank as i64 { rank } else { axis(cx.int("axis", 1), rank).map_err(bad)? };
            let outer = dims[..a].iter().product();
            one(iota.reshaped(vec![outer, dims[a..].iter().product()]))
        }
        "Squeeze" => {
            let axes = match opt_ints(1, "the axes")? {
                Some(a) => Some(a),
                None => cx.ints("axes"),
            };
            let mut keep = vec![true; rank];
            match axes {
                None => dims.iter().enumerate().for_each(|(k, &d)| keep[k] = d != 1),
                Some(axes) => {
                    for a in axes {
                        let a = axis(a, rank).map_err(bad)?;
                        if dims[a] != 1 {
                            return Err(cx.invalid(format!("cannot squeeze axis {a} of size {}", dims[a])));
                        }
                        keep[a] = false;
                    }
                }
            }
            let out = dims.iter().zip(&keep).filter(|(_, &k)| k).map(|(&d, _)| d).collect();
            one(iota.reshaped(out))
        }
        "Unsqueeze" => {
            let axes = match opt_ints(1, "the axes")? {
                Some(a) => a,
                None => cx.ints("axes").ok_or_else(|| cx.invalid("Unsqueeze without axes"))?,
            };
            let out_rank = rank + axes.len();
            let mut inserted = vec![false; out_rank];
            for a in axes {
                let a = axis(a, out_rank).map_err(bad)?;
                if std::mem::replace(&mut inserted[a], true) {
                    return Err(cx.invalid(format!("axis {a} repeated")));
                }
            }
            let mut rest = dims.iter();
            let out = inserted.iter().map(|&i| if i { 1 } else { *rest.next().expect("rank adds up") }).collect();
            one(iota.reshaped(out))
        }
        "Transpose" => one(iota.transpose(&cx.ints("perm").unwrap_or_default())),
        "Slice" => {
            // Opset 10+: starts, ends, axes, steps are inputs; before, attributes.
            let (starts, ends, axes, steps) = if cx.node.input.len() > 1 {
                (ints(1, "starts")?, ints(2, "ends")?, opt_ints(3, "axes")?, opt_ints(4, "steps")?)
            } else {
                let get = |n: &str| cx.ints(n).ok_or_else(|| cx.invalid(format!("Slice without {n}")));
                (get("starts")?, get("ends")?, cx.ints("axes"), None)
            };
            one(iota.slice(&starts, &ends, axes.as_deref(), steps.as_deref()))
        }
        "Split" => {
            let a = axis(cx.int("axis", 0), rank).map_err(bad)?;
            let outputs = cx.node.output.len();
            let sizes: Vec<i64> = match opt_ints(1, "the split sizes")?.or_else(|| cx.ints("split")) {
                Some(s) => s,
                None => {
                    // Equal parts; with num_outputs (opset 18) the last part may be smaller.
                    let parts = cx.int("num_outputs", outputs as i64).max(1) as usize;
                    let each = dims[a].div_ceil(parts);
                    (0..parts).map(|k| each.min(dims[a].saturating_sub(k * each)) as i64).collect()
                }
            };
            if sizes.len() != outputs || sizes.iter().any(|&s| s <= 0) || sizes.iter().sum::<i64>() != dims[a] as i64 {
                return Err(cx.invalid(format!("split sizes {sizes:?} do not cut an axis of {}", dims[a])));
            }
            let mut start = 0i64;
            sizes
                .iter()
                .map(|&s| {
                    let part = iota.slice(&[start], &[start + s], Some(&[a as i64]), None);
                    start += s;
                    part.map_err(bad)
                })
                .collect()
        }
        "Gather" => {
            let indices = konst(1).ok_or_else(|| {
                cx.unsupported(
                    "Gather with computed indices (a token lookup) is not supported yet; indices must be a constant",
                )
            })?;
            let Const::Ints(indices) = indices else { return Err(cx.invalid("Gather indices must be integers")) };
            one(iota.gather_axis(cx.int("axis", 0), indices))
        }
        "Expand" => {
            let spec = ints(1, "the shape")?;
            let spec = spec
                .iter()
                .map(|&d| usize::try_from(d).map_err(|_| cx.invalid(format!("shape {spec:?}"))))
                .collect::<Result<Vec<usize>>>()?;
            let out = broadcast_dims(dims, &spec).map_err(bad)?;
            count(&out).map_err(bad)?;
            one(broadcast_to(&iota, &out))
        }
        "Tile" => {
            let repeats = ints(1, "the repeats")?;
            if repeats.len() != rank {
                return Err(cx.invalid(format!("{} repeats for a rank-{rank} tensor", repeats.len())));
            }
            let repeats = repeats
                .iter()
                .map(|&r| {
                    usize::try_from(r).ok().filter(|&r| r > 0).ok_or_else(|| cx.invalid(format!("repeats {repeats:?}")))
                })
                .collect::<Result<Vec<usize>>>()?;
            let out: Vec<usize> = dims.iter().zip(&repeats).map(|(&d, &r)| d.saturating_mul(r)).collect();
            count(&out).map_err(bad)?;
            let mut tiled = iota;
            for (a, &r) in repeats.iter().enumerate().filter(|(_, &r)| r > 1) {
                tiled = concat(&vec![tiled; r], a as i64).map_err(bad)?;
            }
            Ok(vec![tiled])
        }
        other => Err(cx.unsupported(format!("'{other}' is not a data-movement op"))),
    }
}
