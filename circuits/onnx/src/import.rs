//! ONNX protobuf → [`FloatGraph`], with folding. Every unsupported construct is an error that
//! names the op and the node.

use std::collections::HashMap;
use std::path::Path;

use tract_onnx::pb::{self, AttributeProto, NodeProto, TensorProto};
use tract_onnx::prelude::Framework;

use crate::float::{FloatGraph, FloatNode, FloatOp};
use crate::{Error, Result};

const SUPPORTED: &str = "Gemm, MatMul, Add, Conv, Relu, MaxPool, AveragePool, GlobalAveragePool, Flatten, Reshape, \
BatchNormalization (after Conv/Gemm), Softmax (last node only)";

/// A constant tensor from the initializers.
#[derive(Clone, Debug)]
struct Const {
    dims: Vec<usize>,
    floats: Vec<f32>,
    ints: Vec<i64>,
}

struct Ctx<'a> {
    node: &'a NodeProto,
}

impl Ctx<'_> {
    fn name(&self) -> String {
        if self.node.name.is_empty() {
            format!("<{} producing {}>", self.node.op_type, self.node.output.first().map(String::as_str).unwrap_or("?"))
        } else {
            self.node.name.clone()
        }
    }
    fn invalid(&self, reason: impl Into<String>) -> Error {
        Error::InvalidNode { op: self.node.op_type.clone(), node: self.name(), reason: reason.into() }
    }
    fn unsupported(&self, reason: impl Into<String>) -> Error {
        Error::Unsupported { op: self.node.op_type.clone(), node: self.name(), reason: reason.into() }
    }
    fn attr(&self, name: &str) -> Option<&AttributeProto> {
        self.node.attribute.iter().find(|a| a.name == name)
    }
    fn ints(&self, name: &str) -> Option<Vec<i64>> {
        self.attr(name).map(|a| a.ints.clone())
    }
    fn int(&self, name: &str, default: i64) -> i64 {
        self.attr(name).map(|a| a.i).unwrap_or(default)
    }
    fn float(&self, name: &str, default: f32) -> f32 {
        self.attr(name).map(|a| a.f).unwrap_or(default)
    }
    fn pair(&self, name: &str, default: [usize; 2]) -> Result<[usize; 2]> {
        match self.ints(name) {
            None => Ok(default),
            Some(v) if v.len() == 2 && v.iter().all(|&x| x > 0 && x <= 1024) => Ok([v[0] as usize, v[1] as usize]),
            Some(v) => Err(self.unsupported(format!("{name}={v:?}: only 2-D windows are supported"))),
        }
    }
    fn pads(&self) -> Result<[usize; 4]> {
        if let Some(a) = self.attr("auto_pad") {
            let s = String::from_utf8_lossy(&a.s);
            if s != "NOTSET" && s != "VALID" && !s.is_empty() {
                return Err(self.unsupported(format!("auto_pad={s}: give explicit pads")));
            }
        }
        match self.ints("pads") {
            None => Ok([0; 4]),
            // ONNX order: begin_h, begin_w, end_h, end_w
            Some(v) if v.len() == 4 && v.iter().all(|&x| (0..=1024).contains(&x)) => {
                Ok([v[0] as usize, v[1] as usize, v[2] as usize, v[3] as usize])
            }
            Some(v) => Err(self.invalid(format!("pads={v:?}"))),
        }
    }
}

fn read_tensor(t: &TensorProto) -> std::result::Result<Const, String> {
    let dims: Vec<usize> = t
        .dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("negative dim {d}")))
        .collect::<std::result::Result<_, _>>()?;
    let n: usize = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).ok_or("tensor too large")?;
    let (mut floats, mut ints) = (Vec::new(), Vec::new());
    match t.data_type {
        1 => {
            floats = if !t.raw_data.is_empty() {
                t.raw_data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
            } else {
                t.float_data.clone()
            };
            if floats.len() != n {
                return Err(format!("tensor '{}' has {} values for dims {dims:?}", t.name, floats.len()));
            }
            if floats.iter().any(|v| !v.is_finite()) {
                return Err(format!("tensor '{}' holds non-finite values", t.name));
            }
        }
        7 => {
            ints = if !t.raw_data.is_empty() {
                t.raw_data.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()
            } else {
                t.int64_data.clone()
            };
            if ints.len() != n {
                return Err(format!("tensor '{}' has {} values for dims {dims:?}", t.name, ints.len()));
            }
        }
        dt => return Err(format!("tensor '{}' has data type {dt}; only float32 and int64 are supported", t.name)),
    }
    Ok(Const { dims, floats, ints })
}

fn dims_of(vi: &pb::ValueInfoProto) -> Option<Vec<usize>> {
    use tract_onnx::pb::tensor_shape_proto::dimension::Value as Dim;
    use tract_onnx::pb::type_proto::Value;
    let Some(Value::TensorType(tt)) = vi.r#type.as_ref()?.value.as_ref() else { return None };
    tt.shape
        .as_ref()?
        .dim
        .iter()
        .map(|d| match d.value {
            Some(Dim::DimValue(v)) if v > 0 => Some(v as usize),
            // A symbolic or missing batch dimension counts as 1.
            _ => Some(1),
        })
        .collect()
}

/// Reads an ONNX file and returns the folded float graph plus warnings (e.g. a dropped Softmax).
pub fn import_onnx(path: &Path) -> Result<(FloatGraph, Vec<String>)> {
    let read_err = |reason: String| Error::Read { path: path.display().to_string(), reason };
    let bytes = std::fs::read(path).map_err(|e| read_err(e.to_string()))?;
    let proto = tract_onnx::onnx()
        .proto_model_for_read(&mut bytes.as_slice())
        .map_err(|e| read_err(format!("not an ONNX protobuf: {e}")))?;
    let graph = proto.graph.as_ref().ok_or_else(|| read_err("no graph".into()))?;
    let name = if graph.name.is_empty() {
        path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
    } else {
        graph.name.clone()
    };

    let mut consts: HashMap<&str, Const> = HashMap::new();
    for t in &graph.initializer {
        consts.insert(t.name.as_str(), read_tensor(t).map_err(read_err)?);
    }
    let inputs: Vec<&pb::ValueInfoProto> =
        graph.input.iter().filter(|i| !consts.contains_key(i.name.as_str())).collect();
    let [input] = inputs.as_slice() else {
        return Err(read_err(format!("the model must have exactly one input, it has {}", inputs.len())));
    };
    let mut input_shape =
        dims_of(input).ok_or_else(|| read_err(format!("input '{}' has no tensor shape", input.name)))?;
    if input_shape.first() == Some(&1) && input_shape.len() > 1 {
        input_shape.remove(0);
    }
    let outputs: Vec<&str> = graph.output.iter().map(|o| o.name.as_str()).collect();
    if outputs.len() != 1 {
        return Err(read_err(format!("the model must have exactly one output, it has {}", outputs.len())));
    }

    // Consumers per tensor name, for folding decisions.
    let mut consumers: HashMap<&str, usize> = HashMap::new();
    for n in &graph.node {
        for i in &n.input {
            *consumers.entry(i.as_str()).or_default() += 1;
        }
    }

    let mut g = FloatGraph { name, input_shape, nodes: Vec::new() };
    let mut tensor_of: HashMap<String, usize> = HashMap::new();
    tensor_of.insert(input.name.clone(), 0);
    let mut warnings = Vec::new();

    for (ni, node) in graph.node.iter().enumerate() {
        let cx = Ctx { node };
        let op = node.op_type.as_str();
        if !node.domain.is_empty() && node.domain != "ai.onnx" {
            return Err(
                cx.unsupported(format!("domain '{}' is not supported; supported ops: {SUPPORTED}", node.domain))
            );
        }
        let out_name = node.output.first().ok_or_else(|| cx.invalid("no output"))?.clone();
        let data_in = |k: usize| -> Result<usize> {
            let name = node.input.get(k).ok_or_else(|| cx.invalid(format!("missing input {k}")))?;
            tensor_of
                .get(name)
                .copied()
                .ok_or_else(|| cx.unsupported(format!("input '{name}' must be a computed tensor")))
        };
        let konst = |k: usize| -> Result<&Const> {
            let name = node.input.get(k).ok_or_else(|| cx.invalid(format!("missing input {k}")))?;
            consts
                .get(name.as_str())
                .ok_or_else(|| cx.unsupported(format!("input '{name}' must be an initializer (constant)")))
        };
        // Producer node of tensor t, if it is a node we may fold into (its output used once).
        let foldable = |g: &FloatGraph, t: usize, name: &str| -> bool {
            t > 0 && consumers.get(name) == Some(&1) && !outputs.contains(&name) && g.nodes.len() == t
        };
        let input_name = node.input.first().cloned().unwrap_or_default();

        let new_node: Option<FloatNode> = match op {
            "Gemm" | "MatMul" => {
                let x = data_in(0)?;
                let in_len: usize = g.shape(x).iter().product();
                let w = konst(1)?;
                if w.dims.len() != 2 {
                    return Err(
                        cx.unsupported(format!("weights of shape {:?}: only 2-D weights are supported", w.dims))
                    );
                }
                let (alpha, beta) = (cx.float("alpha", 1.0), cx.float("beta", 1.0));
                if op == "Gemm" && cx.int("transA", 0) != 0 {
                    return Err(cx.unsupported("transA=1"));
                }
                let trans_b = op == "Gemm" && cx.int("transB", 0) != 0;
                let (k, out) = if trans_b { (w.dims[1], w.dims[0]) } else { (w.dims[0], w.dims[1]) };
                if k != in_len {
                    return Err(cx.invalid(format!("weights {:?} do not fit an input of {in_len} values", w.dims)));
                }
                let mut weights = vec![0f32; out * k];
                for o in 0..out {
                    for i in 0..k {
                        let v = if trans_b { w.floats[o * k + i] } else { w.floats[i * out + o] };
                        weights[o * k + i] = alpha * v;
                    }
                }
                let mut bias = vec![0f32; out];
                if op == "Gemm" && node.input.len() > 2 && !node.input[2].is_empty() {
                    let c = konst(2)?;
                    if c.floats.len() == out {
                        bias.iter_mut().zip(&c.floats).for_each(|(b, &v)| *b = beta * v);
                    } else if c.floats.len() == 1 {
                        bias.iter_mut().for_each(|b| *b = beta * c.floats[0]);
                    } else {
                        return Err(cx.unsupported(format!("bias of shape {:?}", c.dims)));
                    }
                }
                Some(FloatNode {
                    name: cx.name(),
                    op: FloatOp::Dense { weights, bias, out, relu: false },
                    inputs: vec![x],
                    shape: vec![out],
                })
            }
            "Conv" => {
                let x = data_in(0)?;
                let s = g.shape(x).to_vec();
                if s.len() != 3 {
                    return Err(cx.unsupported(format!("input shape {s:?}: only [N=1, C, H, W] inputs are supported")));
                }
                if cx.int("group", 1) != 1 {
                    return Err(cx.unsupported("group != 1: only group=1 convolutions are supported"));
                }
                if cx.ints("dilations").is_some_and(|d| d.iter().any(|&v| v != 1)) {
                    return Err(cx.unsupported("dilation != 1: only dilation 1 is supported"));
                }
                let w = konst(1)?;
                if w.dims.len() != 4 || w.dims[1] != s[0] {
                    return Err(cx.invalid(format!("weights {:?} do not fit input {s:?}", w.dims)));
                }
                let (c_out, kernel) = (w.dims[0], [w.dims[2], w.dims[3]]);
                let kernel = cx.pair("kernel_shape", kernel)?;
                let stride = cx.pair("strides", [1, 1])?;
                let pads = cx.pads()?;
                let (oh, ow) = out_hw(&cx, &s, kernel, stride, pads)?;
                let bias = if node.input.len() > 2 && !node.input[2].is_empty() {
                    konst(2)?.floats.clone()
                } else {
                    vec![0.0; c_out]
                };
                if bias.len() != c_out {
                    return Err(cx.invalid("bias length differs from the output channels"));
                }
                Some(FloatNode {
                    name: cx.name(),
                    op: FloatOp::Conv { weights: w.floats.clone(), bias, c_out, kernel, stride, pads, relu: false },
                    inputs: vec![x],
                    shape: vec![c_out, oh, ow],
                })
            }
            "BatchNormalization" => {
                let x = data_in(0)?;
                let [scale, b, mean, var] = [konst(1)?, konst(2)?, konst(3)?, konst(4)?];
                let eps = cx.float("epsilon", 1e-5);
                if !foldable(&g, x, &input_name) {
                    return Err(cx.unsupported(
                        "BatchNormalization is supported only right after a Conv or Gemm whose output it alone uses",
                    ));
                }
                let last = g.nodes.last_mut().expect("foldable implies a producer");
                let channels = scale.floats.len();
                let ok = [&b.floats, &mean.floats, &var.floats].iter().all(|v| v.len() == channels);
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
                    let f = scale.floats[ch] / (var.floats[ch] + eps).sqrt();
                    weights[ch * per..(ch + 1) * per].iter_mut().for_each(|w| *w *= f);
                    bias[ch] = (bias[ch] - mean.floats[ch]) * f + b.floats[ch];
                }
                tensor_of.insert(out_name.clone(), x);
                None
            }
            "Add" => {
                let is_const = |k: usize| node.input.get(k).is_some_and(|n| consts.contains_key(n.as_str()));
                if is_const(0) || is_const(1) {
                    let (xk, ck) = if is_const(1) { (0, 1) } else { (1, 0) };
                    let x = data_in(xk)?;
                    let c = konst(ck)?;
                    let name = node.input[xk].clone();
                    let last = if foldable(&g, x, &name) { g.nodes.last_mut() } else { None };
                    match last.map(|n| &mut n.op) {
                        Some(FloatOp::Dense { bias, relu: false, .. })
                            if c.floats.len() == bias.len() || c.floats.len() == 1 =>
                        {
                            for (i, b) in bias.iter_mut().enumerate() {
                                *b += c.floats[if c.floats.len() == 1 { 0 } else { i }];
                            }
                        }
                        Some(FloatOp::Conv { bias, relu: false, .. })
                            if c.floats.len() == bias.len() && c.dims.iter().rev().take(2).all(|&d| d == 1) =>
                        {
                            bias.iter_mut().zip(&c.floats).for_each(|(b, &v)| *b += v);
                        }
                        _ => {
                            return Err(cx.unsupported(
                                "adding a constant is supported only as the bias of a preceding MatMul/Gemm/Conv",
                            ))
                        }
                    }
                    tensor_of.insert(out_name.clone(), x);
                    None
                } else {
                    let (a, b) = (data_in(0)?, data_in(1)?);
                    if g.shape(a) != g.shape(b) {
                        return Err(cx.unsupported(format!(
                            "broadcasting {:?} + {:?}: only equal shapes are supported",
                            g.shape(a),
                            g.shape(b)
                        )));
                    }
                    Some(FloatNode {
                        name: cx.name(),
                        op: FloatOp::Add { relu: false },
                        inputs: vec![a, b],
                        shape: g.shape(a).to_vec(),
                    })
                }
            }
            "Relu" => {
                let x = data_in(0)?;
                let folded = foldable(&g, x, &input_name)
                    && match &mut g.nodes.last_mut().expect("producer").op {
                        FloatOp::Dense { relu, .. }
                        | FloatOp::Conv { relu, .. }
                        | FloatOp::AvgPool { relu, .. }
                        | FloatOp::Add { relu } => {
                            *relu = true;
                            true
                        }
                        _ => false,
                    };
                if folded {
                    tensor_of.insert(out_name.clone(), x);
                    None
                } else {
                    Some(FloatNode { name: cx.name(), op: FloatOp::Relu, inputs: vec![x], shape: g.shape(x).to_vec() })
                }
            }
            "MaxPool" | "AveragePool" => {
                let x = data_in(0)?;
                let s = g.shape(x).to_vec();
                if s.len() != 3 {
                    return Err(cx.unsupported(format!("input shape {s:?}: only [N=1, C, H, W] inputs are supported")));
                }
                if cx.int("ceil_mode", 0) != 0 {
                    return Err(cx.unsupported("ceil_mode=1"));
                }
                if cx.ints("dilations").is_some_and(|d| d.iter().any(|&v| v != 1)) {
                    return Err(cx.unsupported("dilation != 1"));
                }
                if node.output.len() > 1 && !node.output[1].is_empty() {
                    return Err(cx.unsupported("the Indices output of MaxPool"));
                }
                let kernel = cx.pair("kernel_shape", [0, 0])?;
                if kernel.contains(&0) {
                    return Err(cx.invalid("kernel_shape is required"));
                }
                let stride = cx.pair("strides", [1, 1])?;
                let pads = cx.pads()?;
                let (oh, ow) = out_hw(&cx, &s, kernel, stride, pads)?;
                let op = if op == "MaxPool" {
                    FloatOp::MaxPool { kernel, stride, pads }
                } else {
                    FloatOp::AvgPool {
                        kernel,
                        stride,
                        pads,
                        count_include_pad: cx.int("count_include_pad", 0) != 0,
                        relu: false,
                    }
                };
                Some(FloatNode { name: cx.name(), op, inputs: vec![x], shape: vec![s[0], oh, ow] })
            }
            "GlobalAveragePool" => {
                let x = data_in(0)?;
                let s = g.shape(x).to_vec();
                if s.len() != 3 {
                    return Err(cx.unsupported(format!("input shape {s:?}: only [N=1, C, H, W] inputs are supported")));
                }
                let op = FloatOp::AvgPool {
                    kernel: [s[1], s[2]],
                    stride: [1, 1],
                    pads: [0; 4],
                    count_include_pad: false,
                    relu: false,
                };
                Some(FloatNode { name: cx.name(), op, inputs: vec![x], shape: vec![s[0], 1, 1] })
            }
            "Flatten" | "Reshape" => {
                let x = data_in(0)?;
                let total: usize = g.shape(x).iter().product();
                let shape = if op == "Flatten" {
                    if cx.int("axis", 1) != 1 {
                        return Err(cx.unsupported("Flatten with axis != 1"));
                    }
                    vec![total]
                } else {
                    let spec = &konst(1)?.ints;
                    reshape_target(&cx, g.shape(x), spec)?
                };
                Some(FloatNode { name: cx.name(), op: FloatOp::Reshape, inputs: vec![x], shape })
            }
            "Softmax" => {
                let is_last = ni + 1 == graph.node.len() && outputs.contains(&out_name.as_str());
                if !is_last {
                    return Err(cx.unsupported(
                        "Softmax is supported only as the last node (it is dropped: the proof covers the logits)",
                    ));
                }
                let x = data_in(0)?;
                warnings.push(format!(
                    "dropped trailing Softmax '{}': the model output is the logits (argmax unchanged)",
                    cx.name()
                ));
                tensor_of.insert(out_name.clone(), x);
                None
            }
            "Identity" | "Dropout" => {
                let x = data_in(0)?;
                tensor_of.insert(out_name.clone(), x);
                None
            }
            other => return Err(cx.unsupported(format!("'{other}' is not supported; supported ops: {SUPPORTED}"))),
        };
        if let Some(n) = new_node {
            g.nodes.push(n);
            tensor_of.insert(out_name, g.nodes.len());
        }
    }
    let out = tensor_of
        .get(outputs[0])
        .copied()
        .ok_or_else(|| read_err(format!("output '{}' is never produced", outputs[0])))?;
    if out != g.nodes.len() || out == 0 {
        return Err(read_err("the graph output must be the last computed tensor".into()));
    }
    Ok((g, warnings))
}

fn out_hw(
    cx: &Ctx<'_>,
    s: &[usize],
    kernel: [usize; 2],
    stride: [usize; 2],
    pads: [usize; 4],
) -> Result<(usize, usize)> {
    let (ph, pw) = (s[1] + pads[0] + pads[2], s[2] + pads[1] + pads[3]);
    if ph < kernel[0] || pw < kernel[1] {
        return Err(cx.invalid(format!("window {kernel:?} is larger than the padded input {ph}x{pw}")));
    }
    Ok(((ph - kernel[0]) / stride[0] + 1, (pw - kernel[1]) / stride[1] + 1))
}

/// ONNX Reshape semantics (0 copies, -1 infers) on shapes that include the batch dimension 1.
fn reshape_target(cx: &Ctx<'_>, current: &[usize], spec: &[i64]) -> Result<Vec<usize>> {
    let mut with_batch = vec![1usize];
    with_batch.extend_from_slice(current);
    let total: usize = current.iter().product();
    let mut out = Vec::new();
    let mut infer = None;
    for (i, &d) in spec.iter().enumerate() {
        match d {
            0 => out.push(*with_batch.get(i).ok_or_else(|| cx.invalid("0 in shape beyond the input rank"))?),
            -1 if infer.is_none() => {
                infer = Some(i);
                out.push(1);
            }
            d if d > 0 => out.push(d as usize),
            _ => return Err(cx.invalid(format!("shape {spec:?}"))),
        }
    }
    let known: usize = out.iter().product();
    if let Some(i) = infer {
        if known == 0 || total % known != 0 {
            return Err(cx.invalid(format!("cannot infer shape {spec:?} for {total} values")));
        }
        out[i] = total / known;
    }
    if out.iter().product::<usize>() != total {
        return Err(cx.invalid(format!("shape {spec:?} does not hold {total} values")));
    }
    if out.first() == Some(&1) && out.len() > 1 {
        out.remove(0);
    } else {
        return Err(cx.unsupported(format!("reshape to {spec:?} changes the batch dimension")));
    }
    Ok(out)
}
