//! ONNX Concat of computed tensors: one gather over a pool of its distinct inputs and constants.

use super::Importer;
use crate::float::FloatOp;
use crate::node::Ctx;
use crate::tensor::{concat, Tensor};
use crate::Result;

/// ONNX Concat with at least one computed input (an all-constant one is folded): a
/// [`FloatOp::Concat`] reading each distinct computed tensor once, the constants after them.
pub(crate) fn concat_node(im: &mut Importer<'_>, cx: &Ctx<'_>) -> Result<()> {
    enum Part {
        Computed(usize),
        Constant(Vec<f32>),
    }
    let mut parts: Vec<(Vec<usize>, Part)> = Vec::new();
    for (k, name) in cx.node.input.iter().enumerate().filter(|(_, n)| !n.is_empty()) {
        if let Some(c) = im.consts.get(name.as_str()) {
            let values = c.floats();
            if let Some(i) = values.iter().position(|v| !v.is_finite()) {
                return Err(cx.invalid(format!("constant input {k} holds {} at {i}", values[i])));
            }
            parts.push((c.dims().to_vec(), Part::Constant(values)));
        } else {
            let t = im.data_in(cx, k)?;
            parts.push((im.full[t].clone(), Part::Computed(t)));
        }
    }
    // The pool: each distinct computed tensor once, in order of first use, then the constants.
    let mut inputs: Vec<usize> = Vec::new();
    let mut starts: Vec<usize> = Vec::new();
    let mut pool = 0usize;
    for (dims, part) in &parts {
        if let Part::Computed(t) = part {
            if !inputs.contains(t) {
                inputs.push(*t);
                starts.push(pool);
                pool += dims.iter().product::<usize>();
            }
        }
    }
    if inputs.len() > tgrid_int8::MAX_CONCAT_INPUTS {
        return Err(cx.unsupported(format!(
            "a Concat of {} computed tensors; at most {} are supported",
            inputs.len(),
            tgrid_int8::MAX_CONCAT_INPUTS
        )));
    }
    let mut constants: Vec<f32> = Vec::new();
    let mut indexed: Vec<Tensor<usize>> = Vec::with_capacity(parts.len());
    for (dims, part) in parts {
        let start = match part {
            Part::Computed(t) => starts[inputs.iter().position(|&i| i == t).expect("listed above")],
            Part::Constant(values) => {
                let start = pool + constants.len();
                constants.extend(values);
                start
            }
        };
        let iota = Tensor::iota(&dims).map_err(|e| cx.invalid(e))?;
        indexed.push(Tensor { dims, data: iota.data.into_iter().map(|i| i + start).collect() });
    }
    if pool + constants.len() > tgrid_int8::MAX_TENSOR_LEN {
        return Err(cx.invalid(format!("joins {} values, more than a tensor may hold", pool + constants.len())));
    }
    let joined = concat(&indexed, cx.int("axis", 0)).map_err(|e| cx.invalid(e))?;
    let source = joined.data.iter().map(|&i| i as u32).collect();
    let t = im.push(cx.name(), FloatOp::Concat { source, constants }, inputs, joined.dims);
    im.alias(&cx.node.output[0], t);
    Ok(())
}
