//! The structural invariants of a compiled model, checked before it runs or becomes a circuit,
//! and the shape arithmetic they share with the lowering.

use crate::error::{Error, Result};
use crate::model::{
    chw, dense_dims, matmul_dims, numel, Node, Op, QParams, QuantModel, Requant, MAX_CONCAT_INPUTS, MAX_LAYER_NORM_EPS,
    MAX_LAYER_NORM_ROW, MAX_LOOKUP_ENTRIES, MAX_MACS, MAX_NAME_LEN, MAX_NODES, MAX_PORTS, MAX_RANK, MAX_SOFTMAX_ROW,
    MAX_TENSOR_LEN, SOFTMAX_Q, TABLE_LEN,
};

impl QuantModel {
    /// Checks every structural invariant the inference and the circuit rely on. Decoding calls
    /// it, so a model that decodes is safe to run and to build a circuit for.
    pub fn validate(&self) -> Result<()> {
        let bad = |node: &str, why: String| Error::InvalidModel(format!("node '{node}': {why}"));
        check_shape(&self.input_shape).map_err(|e| bad("<input>", e))?;
        check_q(self.input_q).map_err(|e| bad("<input>", e))?;
        if self.nodes.is_empty() {
            return Err(Error::InvalidModel("the model has no layers".into()));
        }
        if self.nodes.len() > MAX_NODES {
            return Err(Error::InvalidModel(format!("more than {MAX_NODES} layers")));
        }
        let mut macs: u64 = 0;
        for (i, n) in self.nodes.iter().enumerate() {
            let own = i + 1;
            let name = n.name.as_str();
            check_shape(&n.shape).map_err(|e| bad(name, e))?;
            check_q(n.q).map_err(|e| bad(name, e))?;
            let arity = match n.op {
                Op::Add { .. } | Op::MatMul { .. } | Op::ScoresSoftmax { .. } | Op::Div { .. } => 2..=2,
                Op::Concat { .. } => 1..=MAX_CONCAT_INPUTS,
                _ => 1..=1,
            };
            if !arity.contains(&n.inputs.len()) || n.inputs.iter().any(|&t| t >= own) {
                let count = match (arity.start(), arity.end()) {
                    (a, b) if a == b => a.to_string(),
                    (a, b) => format!("{a} to {b}"),
                };
                return Err(bad(name, format!("expects {count} earlier input tensor(s), has {:?}", n.inputs)));
            }
            let in_shape = self.tensor_shape(n.inputs[0]);
            let in_q = self.tensor_q(n.inputs[0]);
            match &n.op {
                Op::Dense { weights, bias, requant, .. } => {
                    let [rows, fan_in, out] = dense_dims(in_shape, &n.shape).map_err(|e| bad(name, e))?;
                    if weights.len() != fan_in * out || bias.len() != out || requant.len() != out {
                        return Err(bad(name, "weight, bias or multiplier count does not match the shapes".into()));
                    }
                    requant.iter().try_for_each(|r| check_requant(*r)).map_err(|e| bad(name, e))?;
                    macs += (weights.len() * rows) as u64;
                }
                Op::Conv { c_out, groups, kernel, stride, pads, weights, bias, requant, .. } => {
                    let [c_in, h, w] = chw(in_shape).map_err(|e| bad(name, e))?;
                    if *groups == 0 || c_in % groups != 0 || c_out % groups != 0 {
                        return Err(bad(name, format!("{groups} groups of {c_in} input and {c_out} output channels")));
                    }
                    let c_in = c_in / groups;
                    let (oh, ow) = window_out(h, w, *kernel, *stride, *pads).map_err(|e| bad(name, e))?;
                    if n.shape != [*c_out, oh, ow] {
                        return Err(bad(name, format!("output shape {:?} should be {:?}", n.shape, [*c_out, oh, ow])));
                    }
                    let k = c_in * kernel[0] * kernel[1];
                    if weights.len() != c_out * k || bias.len() != *c_out || requant.len() != *c_out {
                        return Err(bad(name, "weight, bias or multiplier count does not match the shapes".into()));
                    }
                    requant.iter().try_for_each(|r| check_requant(*r)).map_err(|e| bad(name, e))?;
                    macs += (numel(&n.shape) * k) as u64;
                }
                Op::MaxPool { kernel, stride, pads } | Op::AvgPool { kernel, stride, pads, .. } => {
                    let [c, h, w] = chw(in_shape).map_err(|e| bad(name, e))?;
                    let (oh, ow) = window_out(h, w, *kernel, *stride, *pads).map_err(|e| bad(name, e))?;
                    if n.shape != [c, oh, ow] {
                        return Err(bad(name, format!("output shape {:?} should be {:?}", n.shape, [c, oh, ow])));
                    }
                    if pads[0] >= kernel[0] || pads[2] >= kernel[0] || pads[1] >= kernel[1] || pads[3] >= kernel[1] {
                        return Err(bad(name, "padding must be smaller than the window".into()));
                    }
                    match &n.op {
                        Op::MaxPool { .. } => {
                            if n.q != in_q {
                                return Err(bad(name, "MaxPool must keep the quantization".into()));
                            }
                        }
                        Op::AvgPool { requant, .. } => {
                            if requant.len() != kernel[0] * kernel[1] {
                                return Err(bad(name, "one multiplier per window population is required".into()));
                            }
                            requant.iter().try_for_each(|r| check_requant(*r)).map_err(|e| bad(name, e))?;
                        }
                        _ => unreachable!(),
                    }
                    macs += (numel(&n.shape) * kernel[0] * kernel[1]) as u64;
                }
                Op::Add { requant, .. } => {
                    let other = self.tensor_shape(n.inputs[1]);
                    if in_shape != other || n.shape != in_shape {
                        return Err(bad(name, format!("Add needs equal shapes, got {in_shape:?} and {other:?}")));
                    }
                    check_requant(*requant).map_err(|e| bad(name, e))?;
                }
                Op::Div { requant } => {
                    let other = self.tensor_shape(n.inputs[1]);
                    if in_shape != other || n.shape != in_shape {
                        return Err(bad(name, format!("Div needs equal shapes, got {in_shape:?} and {other:?}")));
                    }
                    check_requant(*requant).map_err(|e| bad(name, e))?;
                }
                Op::AddConst { constants, requant, .. } => {
                    if n.shape != in_shape || constants.len() != numel(in_shape) {
                        return Err(bad(name, "AddConst needs one constant per element and keeps the shape".into()));
                    }
                    check_requant(*requant).map_err(|e| bad(name, e))?;
                }
                Op::Relu => {
                    if n.shape != in_shape || n.q != in_q {
                        return Err(bad(name, "Relu must keep shape and quantization".into()));
                    }
                }
                Op::Reshape => {
                    if numel(&n.shape) != numel(in_shape) || n.q != in_q {
                        return Err(bad(name, "Reshape must keep the element count and quantization".into()));
                    }
                }
                Op::Gather { source } => {
                    let len = numel(in_shape);
                    if source.len() != numel(&n.shape) || n.q != in_q {
                        return Err(bad(name, "Gather needs one source per output and keeps the quantization".into()));
                    }
                    if let Some(&i) = source.iter().find(|&&i| i as usize >= len) {
                        return Err(bad(name, format!("Gather source {i} is outside the input's {len} values")));
                    }
                }
                Op::Concat { source, constants } => {
                    if n.inputs.iter().any(|&t| self.tensor_q(t) != n.q) {
                        return Err(bad(name, "every Concat input must have the output's quantization".into()));
                    }
                    let pool = n.inputs.iter().map(|&t| numel(self.tensor_shape(t))).sum::<usize>() + constants.len();
                    if source.len() != numel(&n.shape) {
                        return Err(bad(name, "Concat needs one source per output".into()));
                    }
                    if let Some(&i) = source.iter().find(|&&i| i as usize >= pool) {
                        return Err(bad(name, format!("Concat source {i} is outside the {pool} values it joins")));
                    }
                }
                Op::MatMul { requant } => {
                    macs += check_matmul(self, n, *requant).map_err(|e| bad(name, e))?;
                }
                Op::Softmax { exp, keep } => {
                    if n.shape != in_shape {
                        return Err(bad(name, "Softmax keeps the shape".into()));
                    }
                    if exp.len() != TABLE_LEN || exp[0] == 0 {
                        return Err(bad(name, format!("Softmax needs {TABLE_LEN} exponentials, the first positive")));
                    }
                    check_softmax(n, keep).map_err(|e| bad(name, e))?;
                }
                Op::ScoresSoftmax { requant, exp_high, exp_low, keep, .. } => {
                    macs += check_matmul(self, n, *requant).map_err(|e| bad(name, e))?;
                    if exp_high.len() != TABLE_LEN
                        || exp_low.len() != TABLE_LEN
                        || crate::infer::score_exp(exp_high, exp_low, 0) == 0
                    {
                        return Err(bad(
                            name,
                            format!("ScoresSoftmax needs two tables of {TABLE_LEN} exponentials, exp(0) positive"),
                        ));
                    }
                    check_softmax(n, keep).map_err(|e| bad(name, e))?;
                }
                Op::LayerNorm { gamma, beta, eps, requant } => {
                    let row = *in_shape.last().expect("checked shape");
                    if n.shape != in_shape || gamma.len() != row || beta.len() != row {
                        return Err(bad(name, "LayerNorm keeps the shape, with one gamma and beta per channel".into()));
                    }
                    if row > MAX_LAYER_NORM_ROW || *eps == 0 || *eps > MAX_LAYER_NORM_EPS {
                        return Err(bad(
                            name,
                            format!("LayerNorm rows of {row} (at most {MAX_LAYER_NORM_ROW}), eps {eps}"),
                        ));
                    }
                    check_requant(*requant).map_err(|e| bad(name, e))?;
                }
                Op::Embedding { table, dim } => {
                    let vocab = if *dim == 0 { 0 } else { table.len() / dim };
                    if vocab == 0 || vocab * dim != table.len() || vocab > TABLE_LEN || table.len() > 1 << 16 {
                        return Err(bad(
                            name,
                            format!(
                                "an embedding of {} values in rows of {dim}: at most 256 tokens and 65536 values",
                                table.len()
                            ),
                        ));
                    }
                    let mut expected = in_shape.to_vec();
                    expected.push(*dim);
                    if n.shape != expected {
                        return Err(bad(name, format!("output shape {:?} should be {expected:?}", n.shape)));
                    }
                }
                Op::Table { table } => {
                    if table.len() != TABLE_LEN || n.shape != in_shape {
                        return Err(bad(name, format!("Table needs {TABLE_LEN} entries and keeps the shape")));
                    }
                }
            }
            if macs > MAX_MACS {
                return Err(Error::InvalidModel(format!("more than {MAX_MACS} multiply-accumulates")));
            }
        }
        let lookup_entries: usize = self.nodes.iter().map(|n| lookup_entries(&n.op)).sum();
        if lookup_entries > MAX_LOOKUP_ENTRIES {
            return Err(Error::InvalidModel(format!(
                "{lookup_entries} lookup-table entries (exponential, function and embedding tables); at most \
                 {MAX_LOOKUP_ENTRIES}"
            )));
        }
        crate::lower::check_bounds(self)?;
        self.check_ports()
    }

    /// A model's several inputs (outputs) tile its flat input (output) tensor exactly.
    fn check_ports(&self) -> Result<()> {
        let lists =
            [("input", &self.ports.inputs, self.input_len()), ("output", &self.ports.outputs, self.output_len())];
        for (what, ports, len) in lists {
            if ports.is_empty() {
                continue;
            }
            let bad = |why: String| Error::InvalidModel(format!("the model's {what}s: {why}"));
            if ports.len() < 2 || ports.len() > MAX_PORTS {
                return Err(bad(format!("{} named {what}s; a model names 2 to {MAX_PORTS}, or none", ports.len())));
            }
            let mut total = 0usize;
            for (i, port) in ports.iter().enumerate() {
                if ports[..i].iter().any(|p| p.name == port.name) {
                    return Err(bad(format!("two {what}s named '{}'", port.name)));
                }
                check_shape(&port.shape).map_err(|e| bad(format!("'{}': {e}", port.name)))?;
                if port.name.len() > MAX_NAME_LEN {
                    return Err(bad(format!("a name longer than {MAX_NAME_LEN} bytes")));
                }
                total += numel(&port.shape);
            }
            if total != len {
                return Err(bad(format!("their sizes add up to {total}, the {what} tensor holds {len}")));
            }
        }
        Ok(())
    }
}

/// Entries of the lookup table an op adds to its circuit (before equal tables are shared).
fn lookup_entries(op: &Op) -> usize {
    match op {
        Op::Softmax { exp, .. } => exp.len(),
        Op::ScoresSoftmax { exp_high, exp_low, .. } => exp_high.len() + exp_low.len(),
        Op::Table { table } => table.len(),
        Op::Embedding { table, .. } => table.len(),
        _ => 0,
    }
}

fn check_shape(shape: &[usize]) -> std::result::Result<(), String> {
    if shape.is_empty() || shape.len() > MAX_RANK || shape.contains(&0) {
        return Err(format!("unsupported shape {shape:?}"));
    }
    let mut n: usize = 1;
    for &d in shape {
        n = n.checked_mul(d).filter(|&n| n <= MAX_TENSOR_LEN).ok_or(format!("tensor {shape:?} is too large"))?;
    }
    Ok(())
}

fn check_q(q: QParams) -> std::result::Result<(), String> {
    if !(q.scale.is_finite() && q.scale > 0.0) {
        return Err(format!("invalid scale {}", q.scale));
    }
    Ok(())
}

fn check_requant(r: Requant) -> std::result::Result<(), String> {
    if r.multiplier == 0 || r.multiplier >= 1 << 31 || r.shift % 8 != 0 || r.shift > 56 {
        return Err(format!("invalid requantization {r:?}"));
    }
    Ok(())
}

/// Output height and width of a sliding window.
fn window_out(
    h: usize,
    w: usize,
    kernel: [usize; 2],
    stride: [usize; 2],
    pads: [usize; 4],
) -> std::result::Result<(usize, usize), String> {
    if kernel.contains(&0) || stride.contains(&0) || kernel.iter().chain(&stride).chain(&pads).any(|&v| v > 1024) {
        return Err(format!("invalid window kernel {kernel:?} stride {stride:?} pads {pads:?}"));
    }
    let (ph, pw) = (h + pads[0] + pads[2], w + pads[1] + pads[3]);
    if ph < kernel[0] || pw < kernel[1] {
        return Err(format!("window {kernel:?} larger than the padded input {ph}x{pw}"));
    }
    Ok(((ph - kernel[0]) / stride[0] + 1, (pw - kernel[1]) / stride[1] + 1))
}

/// The shapes and multiplier of a product of two computed tensors (MatMul, ScoresSoftmax);
/// returns its multiply-accumulates.
fn check_matmul(model: &QuantModel, n: &Node, requant: Requant) -> std::result::Result<u64, String> {
    let in_shape = model.tensor_shape(n.inputs[0]);
    let [batch, m, k, n_] = matmul_dims(in_shape, model.tensor_shape(n.inputs[1]))?;
    let mut expected = in_shape[..in_shape.len() - 1].to_vec();
    expected.push(n_);
    if n.shape != expected {
        return Err(format!("output shape {:?} should be {expected:?}", n.shape));
    }
    check_requant(requant)?;
    Ok((batch * m * k * n_) as u64)
}

/// A Softmax's output quantization, row length and mask.
fn check_softmax(n: &Node, keep: &[bool]) -> std::result::Result<(), String> {
    if n.q != SOFTMAX_Q {
        return Err("a Softmax outputs at scale 1/255, zero point -128".into());
    }
    let row = *n.shape.last().expect("checked shape");
    if row > MAX_SOFTMAX_ROW {
        return Err(format!("Softmax rows of {row} exceed {MAX_SOFTMAX_ROW}"));
    }
    let pattern = if n.shape.len() >= 2 { row * n.shape[n.shape.len() - 2] } else { row };
    if !keep.is_empty() && (keep.len() != pattern || keep.chunks(row).any(|r| !r.contains(&true))) {
        return Err("a Softmax mask covers the last two axes and keeps a cell of every row".into());
    }
    Ok(())
}
