//! ONNX `Pad` of a computed tensor: a copy out of a pool of its elements and the padding
//! value ([`FloatOp::Concat`] with one constant), so no new circuit is needed.

use super::Importer;
use crate::float::FloatOp;
use crate::node::Ctx;
use crate::tensor::count;
use crate::Result;

/// `Pad` in `constant`, `reflect` or `edge` mode; negative pads crop.
pub(crate) fn pad_node(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<()> {
    let x = im.data_in(cx, 0)?;
    let dims = im.full[x].clone();
    let rank = dims.len();
    let given = |k: usize| cx.node.input.get(k).filter(|n| !n.is_empty()).is_some();
    let pads: Vec<i64> = if given(1) {
        im.konst(cx, 1)?.ints().map(<[i64]>::to_vec).ok_or_else(|| cx.invalid("pads must be integers"))?
    } else {
        cx.ints("pads").ok_or_else(|| cx.invalid("no pads"))?
    };
    let value = if given(2) {
        let v = im.konst(cx, 2)?.floats();
        match v.as_slice() {
            [v] if v.is_finite() => *v,
            _ => return Err(cx.invalid(format!("constant_value {v:?}: one finite value"))),
        }
    } else {
        cx.float("value", 0.0)
    };
    if !value.is_finite() {
        return Err(cx.invalid(format!("value {value}")));
    }
    // Opset 18: the axes the pads are for (all of them otherwise).
    let axes: Vec<usize> = if given(3) {
        let ints = im.konst(cx, 3)?.ints().map(<[i64]>::to_vec).ok_or_else(|| cx.invalid("axes must be integers"))?;
        ints.iter().map(|&a| crate::tensor::axis(a, rank).map_err(|e| cx.invalid(e))).collect::<Result<_>>()?
    } else {
        (0..rank).collect()
    };
    if pads.len() != 2 * axes.len() {
        return Err(cx.invalid(format!("{} pads for {} axes", pads.len(), axes.len())));
    }
    let mut begin = vec![0i64; rank];
    let mut end = vec![0i64; rank];
    for (k, &a) in axes.iter().enumerate() {
        begin[a] = pads[k];
        end[a] = pads[k + axes.len()];
    }
    let mode = cx.string("mode").unwrap_or_else(|| "constant".into());
    let out_dims: Vec<usize> = (0..rank)
        .map(|a| {
            let d = dims[a] as i64 + begin[a] + end[a];
            usize::try_from(d)
                .ok()
                .filter(|&d| d > 0)
                .ok_or_else(|| cx.invalid(format!("pads {pads:?} empty axis {a}")))
        })
        .collect::<Result<_>>()?;
    if mode == "reflect" && (0..rank).any(|a| begin[a].max(end[a]) >= dims[a] as i64) {
        return Err(cx.invalid(format!("reflect pads {pads:?} as wide as the axis they pad")));
    }
    if !matches!(mode.as_str(), "constant" | "reflect" | "edge") {
        return Err(cx.unsupported(format!("mode '{mode}': constant, reflect and edge are supported")));
    }
    count(&out_dims).map_err(|e| cx.invalid(e))?;
    let n = count(&dims).map_err(|e| cx.invalid(e))?;
    let sources = pad_sources(&dims, &begin, &out_dims, &mode);
    let padded = sources.iter().any(Option::is_none);
    let source = sources.into_iter().map(|s| s.unwrap_or(n) as u32).collect();
    let constants = if padded { vec![value] } else { Vec::new() };
    let t = im.push(cx.name(), FloatOp::Concat { source, constants }, vec![x], out_dims);
    im.alias(&cx.node.output[0], t);
    Ok(())
}

/// For each cell of the padded tensor of shape `out_dims`, the flat index of the element of the
/// `dims`-shaped input it copies, or `None` for the padding value. `begin` holds the pads
/// before each axis (negative: cropped).
fn pad_sources(dims: &[usize], begin: &[i64], out_dims: &[usize], mode: &str) -> Vec<Option<usize>> {
    let rank = dims.len();
    let along = |a: usize, o: usize| -> Option<usize> {
        let d = dims[a] as i64;
        let p = o as i64 - begin[a];
        let p = match mode {
            _ if (0..d).contains(&p) => p,
            "reflect" if p < 0 => -p,
            "reflect" => 2 * (d - 1) - p,
            "edge" => p.clamp(0, d - 1),
            _ => return None,
        };
        Some(p as usize)
    };
    let strides = crate::tensor::strides(dims);
    let total: usize = out_dims.iter().product();
    (0..total)
        .map(|flat| {
            let mut rest = flat;
            let mut index = Some(0usize);
            for a in (0..rank).rev() {
                let o = rest % out_dims[a];
                rest /= out_dims[a];
                index = index.and_then(|i| along(a, o).map(|p| i + p * strides[a]));
            }
            index
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::pad_sources;

    /// The first channel of `0..18` of shape [1, 2, 3, 3] padded by (1, 2) rows and (2, 1)
    /// columns, as onnxruntime 1.32 pads it.
    #[test]
    fn pads_copy_the_cells_onnxruntime_copies() {
        let dims = [1, 2, 3, 3];
        let out = [1, 2, 6, 6];
        let first_channel =
            |mode: &str| -> Vec<Option<usize>> { pad_sources(&dims, &[0, 0, 1, 2], &out, mode)[..36].to_vec() };
        let reflect = [
            5, 4, 3, 4, 5, 4, 2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4, 8, 7, 6, 7, 8, 7, 5, 4, 3, 4, 5, 4, 2, 1, 0, 1, 2, 1,
        ];
        let edge = [
            0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 2, 2, 3, 3, 3, 4, 5, 5, 6, 6, 6, 7, 8, 8, 6, 6, 6, 7, 8, 8, 6, 6, 6, 7, 8, 8,
        ];
        assert_eq!(first_channel("reflect"), reflect.map(Some));
        assert_eq!(first_channel("edge"), edge.map(Some));
        let constant = first_channel("constant");
        assert_eq!(constant[..8], [None, None, None, None, None, None, None, None]);
        assert_eq!(constant[8..12], [Some(0), Some(1), Some(2), None]);
        // A negative pad crops: the second row and column onward.
        assert_eq!(pad_sources(&[3, 3], &[-1, -1], &[2, 2], "constant"), [Some(4), Some(5), Some(7), Some(8)]);
    }
}
