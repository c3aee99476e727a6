//! ONNX protobuf → [`FloatGraph`]. Every unsupported construct is an error that names the op
//! and the node.
//!
//! Several graph inputs are laid end to end into the one input tensor (each input a Gather of
//! its part), several outputs into the one output tensor (a final Concat): see
//! [`tgrid_int8::Ports`].
//!
//! Before the nodes, tract's type inference runs on the graph with the input shapes fixed
//! ([`tract_constants`]), and LayerNorms written out op by op are recognised ([`patterns`]).
//! Then nodes are handled in file order, each in the first way that applies:
//! 1. constants: `Constant`, `Shape` of a computed tensor, and any node whose inputs are all
//!    constants are evaluated now ([`crate::fold`]), or take the value tract found;
//! 2. elementwise functions of one tensor (`Erf`, `Mul` by a constant, GELU's whole chain...)
//!    are fused into a pending function of that tensor ([`crate::elementwise`]), which becomes
//!    one table node when something else reads it;
//! 3. data movement of an activation (`Transpose`, `Slice`, `Split`, `Gather` with constant
//!    indices...) becomes an index map ([`crate::layout`]);
//! 4. `Concat` and `Pad`: copies out of a pool of tensors and constants ([`concat`], [`pad`]);
//!    `Resize`: a copy, or interpolation matrices ([`resize`]);
//! 5. layers ([`layers`]).

use std::collections::HashMap;
use std::path::Path;

use tract_onnx::pb;
use tract_onnx::prelude::Framework;

mod activations;
mod channels;
mod concat;
mod conv_transpose;
mod layers;
mod pad;
mod patterns;
mod resize;
mod tract_constants;

use crate::elementwise::{Binary, Expr, Unary};
use crate::float::{FloatGraph, FloatNode, FloatOp};
use crate::fold::{fold, folds};
use crate::layout::{index_maps, DATA_MOVEMENT};
use crate::node::{read_tensor, Ctx};
use crate::tensor::{Const, Tensor};
use crate::{Error, Result};
use tgrid_int8::{Port, Ports, MAX_PORTS};

pub(crate) const SUPPORTED: &str = "Gemm, MatMul (constant weights, or of two computed tensors), Add, Sub and Mul \
(of two computed tensors, broadcast, or by constants), Div (by constants; of two computed tensors, an exact \
quotient), Conv (grouped and depthwise too), ConvTranspose, Relu, MaxPool, AveragePool, GlobalAveragePool, ReduceMean, ReduceSum and \
ReduceMax (any axes), BatchNormalization, InstanceNormalization, LayerNormalization (or written out: ReduceMean, Sub, Pow, ReduceMean, Add, \
Sqrt, Div), Pad (constant, reflect, edge), Resize and Upsample (nearest, linear), \
Softmax (last axis, with a causal mask), elementwise functions (Erf, Gelu, Tanh, Sigmoid, Exp, Log, Sqrt, \
Reciprocal, Neg, Abs, Softplus, Softsign, Mish, LeakyRelu, PRelu (one slope, or one per channel), Elu, Selu, Celu, HardSigmoid, \
HardSwish, ThresholdedRelu, Clip with constant bounds, and Add/Sub/Mul/Div/Pow by constants or of one tensor with \
itself), Flatten, Reshape, Transpose, \
Squeeze, Unsqueeze, Slice, Split, Expand, Tile, Concat, Gather (constant indices, or token ids into a constant table), \
Constant, \
Shape and anything computed from constants and shapes alone (evaluated at compile time), Identity, Dropout";

/// An elementwise function of a computed tensor, not yet a node.
#[derive(Clone, Debug)]
struct Pending {
    base: usize,
    f: Expr,
    /// The ONNX node that finished it (names the table node).
    name: String,
}

/// What a node's input is.
enum Operand<'a> {
    Const(&'a Const),
    /// `f(base)`, where `f` is the identity for a computed tensor.
    Value(usize, Expr),
}

pub(crate) struct Importer<'a> {
    pub g: FloatGraph,
    /// ONNX shape (batch dimension included) of each graph tensor.
    pub full: Vec<Vec<usize>>,
    pub tensor_of: HashMap<String, usize>,
    /// The tensor of each input of a model with several (a copy of its part of tensor 0).
    pub input_parts: Vec<usize>,
    pending: HashMap<String, Pending>,
    pub consts: HashMap<String, Const>,
    consumers: HashMap<&'a str, usize>,
    pub outputs: Vec<&'a str>,
    pub warnings: Vec<String>,
    /// Tensors a −∞ mask was applied to, waiting for the Softmax that reads them: the tensor
    /// and which of its cells are kept.
    pub masks: HashMap<String, (usize, Vec<bool>)>,
    /// Version of the default ONNX operator set the model imports.
    pub opset: i64,
    /// Values tract's type inference found for tensors computed from constants and shapes
    /// alone; taken for nodes the importer's own folding does not evaluate.
    tract_values: HashMap<String, Const>,
}

/// The operator set assumed when a model names none.
const DEFAULT_OPSET: i64 = 13;

/// The graph's shape of a tensor of ONNX shape `full`: without the batch dimension.
pub(crate) fn strip_batch(full: &[usize]) -> Vec<usize> {
    match full {
        [1, rest @ ..] if !rest.is_empty() => rest.to_vec(),
        [] => vec![1],
        _ => full.to_vec(),
    }
}

/// `TensorProto.DataLocation.EXTERNAL`: the values are in another file (PyTorch's exporter
/// writes `model.onnx.data` by default).
const EXTERNAL: i32 = 1;

/// A copy of `t` with its values read from the external file it names. The file must lie in
/// the model's directory (a hostile model could otherwise name any file on the machine), and
/// the range must lie in the file.
fn with_external_data(t: &pb::TensorProto, dir: &Path) -> Result<pb::TensorProto> {
    let err = |reason: String| Error::Read { path: dir.display().to_string(), reason };
    let entry = |key: &str| t.external_data.iter().find(|e| e.key == key).map(|e| e.value.as_str());
    let location =
        entry("location").ok_or_else(|| err(format!("tensor '{}' is external without a location", t.name)))?;
    let relative = Path::new(location);
    if !relative.components().all(|c| matches!(c, std::path::Component::Normal(_))) {
        return Err(err(format!("tensor '{}' names external data outside the model's directory: {location}", t.name)));
    }
    let number = |key: &str| -> Result<Option<u64>> {
        entry(key).map(|v| v.parse::<u64>().map_err(|_| err(format!("tensor '{}': {key}={v}", t.name)))).transpose()
    };
    let offset = number("offset")?.unwrap_or(0);
    let file = dir.join(relative);
    let size = std::fs::metadata(&file).map_err(|e| err(format!("{}: {e}", file.display())))?.len();
    let length = number("length")?.unwrap_or(size.saturating_sub(offset));
    let end = offset.checked_add(length).filter(|&e| e <= size).ok_or_else(|| {
        err(format!("tensor '{}' reads bytes {offset}..+{length} of {} ({size} bytes)", t.name, file.display()))
    })?;
    if length > MAX_EXTERNAL_BYTES {
        return Err(err(format!("tensor '{}' has {length} bytes of external data", t.name)));
    }
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(&file).map_err(|e| err(format!("{}: {e}", file.display())))?;
    let mut raw = vec![0u8; (end - offset) as usize];
    f.seek(SeekFrom::Start(offset))
        .and_then(|_| f.read_exact(&mut raw))
        .map_err(|e| err(format!("{}: {e}", file.display())))?;
    let mut copy = t.clone();
    copy.raw_data = raw;
    copy.data_location = None;
    copy.external_data.clear();
    Ok(copy)
}

/// Largest external tensor read (bytes): 64 Mi float32 values.
const MAX_EXTERNAL_BYTES: u64 = 1 << 28;

/// The ONNX element type of a graph input (1 float, 6 int32, 7 int64...).
fn input_elem_type(vi: &pb::ValueInfoProto) -> Option<i32> {
    use tract_onnx::pb::type_proto::Value;
    let Some(Value::TensorType(tt)) = vi.r#type.as_ref()?.value.as_ref() else { return None };
    Some(tt.elem_type)
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

    let mut consts: HashMap<String, Const> = HashMap::new();
    let dir = path.parent().unwrap_or(Path::new("."));
    for t in &graph.initializer {
        let value =
            if t.data_location == Some(EXTERNAL) { read_tensor(&with_external_data(t, dir)?) } else { read_tensor(t) };
        consts.insert(t.name.clone(), value.map_err(read_err)?);
    }
    let inputs: Vec<&pb::ValueInfoProto> =
        graph.input.iter().filter(|i| !consts.contains_key(i.name.as_str())).collect();
    if inputs.is_empty() {
        return Err(read_err("the model has no input (every graph input is an initializer)".into()));
    }
    if inputs.len() > MAX_PORTS {
        return Err(read_err(format!("the model has {} inputs; at most {MAX_PORTS}", inputs.len())));
    }
    let mut input_dims = Vec::with_capacity(inputs.len());
    let mut input_len = 0usize;
    for input in &inputs {
        let dims = dims_of(input).ok_or_else(|| read_err(format!("input '{}' has no tensor shape", input.name)))?;
        // A hostile file's dimensions bound nothing: the inputs together must fit one tensor.
        input_len = dims
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .and_then(|n| input_len.checked_add(n))
            .filter(|&n| n <= tgrid_int8::MAX_TENSOR_LEN)
            .ok_or_else(|| {
                read_err(format!(
                    "input '{}' of shape {dims:?}: the inputs together exceed {} values",
                    input.name,
                    tgrid_int8::MAX_TENSOR_LEN
                ))
            })?;
        input_dims.push(dims);
    }
    let outputs: Vec<&str> = graph.output.iter().map(|o| o.name.as_str()).collect();
    if outputs.is_empty() || outputs.len() > MAX_PORTS {
        return Err(read_err(format!("the model has {} outputs; 1 to {MAX_PORTS} are supported", outputs.len())));
    }
    // Token ids and real values cannot share the one input quantization of several inputs.
    let is_ids = |vi: &pb::ValueInfoProto| matches!(input_elem_type(vi), Some(6 | 7));
    let tokens = is_ids(inputs[0]);
    if let Some(other) = inputs.iter().find(|i| is_ids(i) != tokens) {
        let (ids, real) = if tokens { (inputs[0], *other) } else { (*other, inputs[0]) };
        return Err(read_err(format!(
            "input '{}' holds integers (token ids) and input '{}' real values: a model's inputs share one \
             quantization, so they must be all token ids or all real values",
            ids.name, real.name
        )));
    }

    let mut warnings = Vec::new();
    let tract = {
        use tract_onnx::prelude::{Datum, DatumType};
        let facts: Vec<tract_constants::InputFact<'_>> = inputs
            .iter()
            .zip(&input_dims)
            .map(|(input, dims)| {
                let elem_type: DatumType = match input_elem_type(input) {
                    Some(6) => i32::datum_type(),
                    Some(7) => i64::datum_type(),
                    _ => f32::datum_type(),
                };
                tract_constants::InputFact { name: &input.name, dims, elem_type }
            })
            .collect();
        // tract reads the weights kept in external files only through our checked reader.
        let resolved;
        let proto = if graph.initializer.iter().any(|t| t.data_location == Some(EXTERNAL)) {
            let mut copy = proto.clone();
            if let Some(g) = copy.graph.as_mut() {
                for t in g.initializer.iter_mut().filter(|t| t.data_location == Some(EXTERNAL)) {
                    *t = with_external_data(t, dir)?;
                }
            }
            resolved = copy;
            &resolved
        } else {
            &proto
        };
        // A hostile graph can make tract panic: that is tract failing, not the import.
        let analysed =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tract_constants::tract_constants(proto, &facts)))
                .unwrap_or_else(|_| Err("tract panicked".into()));
        match analysed {
            Ok(facts) => facts,
            Err(reason) => {
                warnings.push(format!(
                    "tract could not analyse the graph ({reason}): only the importer's own rules fold constants"
                ));
                tract_constants::TractFacts::default()
            }
        }
    };
    let nodes = {
        let constant_nodes: HashMap<&str, Const> = graph
            .node
            .iter()
            .filter(|n| n.op_type == "Constant" && n.output.len() == 1)
            .filter_map(|n| Some((n.output[0].as_str(), Ctx { node: n }.constant_value().ok()?)))
            .collect();
        let constant = |name: &str| {
            consts.get(name).or_else(|| tract.values.get(name)).or_else(|| constant_nodes.get(name)).cloned()
        };
        let rank = |name: &str| tract.shapes.get(name).map(Vec::len);
        let known = patterns::Known { constant: &constant, rank: &rank, outputs: &outputs };
        let (nodes, fused) = patterns::fuse_written_layer_norms(&graph.node, &known);
        if fused > 0 {
            warnings.push(format!("{fused} LayerNorm(s) written out op by op recognised and proven whole"));
        }
        nodes
    };
    // Consumers per tensor name, for folding decisions.
    let mut consumers: HashMap<&str, usize> = HashMap::new();
    for n in &nodes {
        for i in &n.input {
            *consumers.entry(i.as_str()).or_default() += 1;
        }
    }
    // The default opset's version decides a few attribute defaults (Softmax's axis).
    let opset = proto
        .opset_import
        .iter()
        .find(|o| o.domain.is_empty() || o.domain == "ai.onnx")
        .map_or(DEFAULT_OPSET, |o| o.version);
    // Several inputs are one flat input tensor, laid end to end; each is a copy of its part.
    let (input_full, input_ports) = match input_dims.as_slice() {
        [one] => (one.clone(), Vec::new()),
        several => {
            let total = input_len;
            let ports =
                inputs.iter().zip(several).map(|(i, d)| Port { name: i.name.clone(), shape: strip_batch(d) }).collect();
            (vec![1, total], ports)
        }
    };
    let mut im = Importer {
        g: FloatGraph {
            name,
            input_shape: strip_batch(&input_full),
            tokens,
            nodes: Vec::new(),
            ports: Ports { inputs: input_ports, outputs: Vec::new() },
        },
        full: vec![input_full],
        tensor_of: HashMap::new(),
        input_parts: Vec::new(),
        pending: HashMap::new(),
        consts,
        consumers,
        outputs: outputs.clone(),
        warnings,
        masks: HashMap::new(),
        opset,
        tract_values: tract.values,
    };
    if inputs.len() == 1 {
        im.tensor_of.insert(inputs[0].name.clone(), 0);
    } else {
        let mut offset = 0u32;
        for (input, dims) in inputs.iter().zip(&input_dims) {
            let len = dims.iter().product::<usize>() as u32;
            let source = (offset..offset + len).collect();
            let t = im.push(format!("input {}", input.name), FloatOp::Gather { source }, vec![0], dims.clone());
            im.tensor_of.insert(input.name.clone(), t);
            im.input_parts.push(t);
            offset += len;
        }
    }
    for (ni, node) in nodes.iter().enumerate() {
        let cx = Ctx { node };
        if !node.domain.is_empty() && node.domain != "ai.onnx" {
            return Err(
                cx.unsupported(format!("domain '{}' is not supported; supported ops: {SUPPORTED}", node.domain))
            );
        }
        if node.output.is_empty() {
            return Err(cx.invalid("no output"));
        }
        let is_last = ni + 1 == nodes.len();
        im.node(&cx, is_last)?;
    }
    let mut produced = Vec::with_capacity(outputs.len());
    for &output in &outputs {
        im.materialize(output);
        let t = im
            .tensor_of
            .get(output)
            .copied()
            .ok_or_else(|| read_err(format!("output '{output}' is never produced from the input")))?;
        if t == 0 || im.input_parts.contains(&t) {
            return Err(read_err(format!("output '{output}' is an input: there is nothing to prove")));
        }
        produced.push(t);
    }
    // Several outputs are one flat output tensor, laid end to end: a copy of each.
    let out = match produced.as_slice() {
        [one] => *one,
        several => {
            let total: usize = several.iter().map(|&t| im.g.shape(t).iter().product::<usize>()).sum();
            if total > tgrid_int8::MAX_TENSOR_LEN {
                return Err(read_err(format!(
                    "the outputs together hold {total} values, more than {}",
                    tgrid_int8::MAX_TENSOR_LEN
                )));
            }
            im.g.ports.outputs = outputs
                .iter()
                .zip(several)
                .map(|(name, &t)| Port { name: name.to_string(), shape: im.g.shape(t).to_vec() })
                .collect();
            let concat = FloatOp::Concat { source: (0..total as u32).collect(), constants: Vec::new() };
            im.push("outputs".into(), concat, several.to_vec(), vec![1, total])
        }
    };
    // The output need not be the last node (an exporter may leave computations nothing reads, or
    // name an earlier tensor the output through an Identity): keep what it reads.
    let (g, dropped) = live_graph(im.g, out);
    if dropped > 0 {
        im.warnings.push(format!("{dropped} node(s) compute nothing the outputs {outputs:?} read: left out"));
    }
    Ok((crate::prune::prune_rows(g), im.warnings))
}

/// The nodes of `g` tensor `out` depends on, renumbered, `out` last; and how many were dropped.
fn live_graph(mut g: FloatGraph, out: usize) -> (FloatGraph, usize) {
    let mut live = vec![false; out + 1];
    live[out] = true;
    for t in (1..=out).rev() {
        if live[t] {
            for &i in &g.nodes[t - 1].inputs {
                live[i] = true;
            }
        }
    }
    let total = g.nodes.len();
    let mut renumbered = vec![0usize; out + 1];
    let mut kept = Vec::new();
    for (t, node) in g.nodes.drain(..).take(out).enumerate().map(|(i, n)| (i + 1, n)) {
        if live[t] {
            let inputs = node.inputs.iter().map(|&i| renumbered[i]).collect();
            kept.push(FloatNode { inputs, ..node });
            renumbered[t] = kept.len();
        }
    }
    g.nodes = kept;
    let dropped = total - g.nodes.len();
    (g, dropped)
}

impl<'a> Importer<'a> {
    /// Softmax's axis: opset 13 and later default to the last axis; before, to axis 1, over which
    /// the input was flattened — the same thing only when axis 1 is the last.
    pub fn softmax_axis(&self, cx: &Ctx<'_>, rank: usize) -> Result<usize> {
        let last = rank as i64 - 1;
        let axis = cx.int("axis", if self.opset >= 13 { -1 } else { 1 });
        let axis = if axis < 0 { axis + rank as i64 } else { axis };
        if axis != last {
            return Err(cx.unsupported(format!("Softmax over axis {axis} of a rank-{rank} tensor: only the last axis")));
        }
        Ok(axis as usize)
    }

    /// Appends a node with ONNX shape `full`; returns its tensor.
    pub fn push(&mut self, name: String, op: FloatOp, inputs: Vec<usize>, full: Vec<usize>) -> usize {
        let shape = strip_batch(&full);
        self.g.nodes.push(FloatNode { name, op, inputs, shape });
        self.full.push(full);
        self.g.nodes.len()
    }

    /// Names `out` the tensor `t`.
    pub fn alias(&mut self, out: &str, t: usize) {
        self.tensor_of.insert(out.to_string(), t);
    }

    /// Turns a pending function into a node, so that `name` is a computed tensor.
    fn materialize(&mut self, name: &str) {
        let Some(p) = self.pending.remove(name) else { return };
        let t = if p.f == Expr::Input {
            p.base
        } else {
            let full = self.full[p.base].clone();
            self.push(p.name, FloatOp::Elementwise { f: p.f }, vec![p.base], full)
        };
        self.alias(name, t);
    }

    /// Computed tensor `k` of the node.
    pub fn data_in(&self, cx: &Ctx<'_>, k: usize) -> Result<usize> {
        let name = cx.node.input.get(k).ok_or_else(|| cx.invalid(format!("missing input {k}")))?;
        self.tensor_of.get(name).copied().ok_or_else(|| {
            if self.masks.contains_key(name) {
                cx.unsupported(format!(
                    "input '{name}' carries a −∞ mask, which is supported only right before a Softmax"
                ))
            } else if self.consts.contains_key(name) {
                cx.unsupported(format!("input '{name}' must be computed from the model input, not a constant"))
            } else {
                cx.invalid(format!("input '{name}' is not produced before this node"))
            }
        })
    }

    /// Constant input `k` of the node.
    pub fn konst(&self, cx: &Ctx<'_>, k: usize) -> Result<&Const> {
        let name = cx.node.input.get(k).ok_or_else(|| cx.invalid(format!("missing input {k}")))?;
        self.consts
            .get(name.as_str())
            .ok_or_else(|| cx.unsupported(format!("input '{name}' must be an initializer (constant)")))
    }

    /// Constant input `k` as floats, every one finite (weights, biases, norms).
    pub fn finite(&self, cx: &Ctx<'_>, k: usize) -> Result<Vec<f32>> {
        let values = self.konst(cx, k)?.floats();
        match values.iter().position(|v| !v.is_finite()) {
            Some(i) => Err(cx.invalid(format!("input {k} holds {} at {i}", values[i]))),
            None => Ok(values),
        }
    }

    pub fn is_const(&self, cx: &Ctx<'_>, k: usize) -> bool {
        cx.node.input.get(k).is_some_and(|n| self.consts.contains_key(n.as_str()))
    }

    /// Whether tensor `t` named `name` is the last node's output and read only by this node, so
    /// this node may be folded into it.
    pub fn foldable(&self, t: usize, name: &str) -> bool {
        t > 0 && self.consumers.get(name) == Some(&1) && !self.outputs.contains(&name) && self.g.nodes.len() == t
    }

    fn operand(&self, name: &str) -> Option<Operand<'_>> {
        if let Some(c) = self.consts.get(name) {
            return Some(Operand::Const(c));
        }
        if let Some(p) = self.pending.get(name) {
            return Some(Operand::Value(p.base, p.f.clone()));
        }
        self.tensor_of.get(name).map(|&t| Operand::Value(t, Expr::Input))
    }

    fn node(&mut self, cx: &Ctx<'_>, is_last: bool) -> Result<()> {
        let node = cx.node;
        let op = cx.op();
        let out = node.output[0].as_str();
        if op == "Constant" {
            let value = cx.constant_value()?;
            self.consts.insert(out.to_string(), value);
            return Ok(());
        }
        let given: Vec<&String> = node.input.iter().filter(|n| !n.is_empty()).collect();
        if op == "Shape" {
            if let Some(t) = self.operand(&node.input[0]).and_then(|o| match o {
                Operand::Value(base, _) => Some(base),
                Operand::Const(_) => None,
            }) {
                let dims: Vec<i64> = self.full[t].iter().map(|&d| d as i64).collect();
                let rank = dims.len() as i64;
                let clampi = |v: i64| (if v < 0 { v + rank } else { v }).clamp(0, rank) as usize;
                let (s, e) = (clampi(cx.int("start", 0)), clampi(cx.int("end", rank)));
                let part = dims[s..e.max(s)].to_vec();
                self.consts.insert(out.to_string(), Const::Ints(Tensor { dims: vec![part.len()], data: part }));
                return Ok(());
            }
        }
        let all_const = !given.is_empty() && given.iter().all(|n| self.consts.contains_key(n.as_str()));
        // What tract evaluated and our own folding does not (a NonZero, a Less building a mask,
        // a Shape read through ops we do not fold) is a constant too. Our folding keeps the
        // nodes it evaluates, so every model it imported keeps its model id.
        let outputs: Vec<&String> = node.output.iter().filter(|o| !o.is_empty()).collect();
        if !(all_const && folds(op)) && outputs.iter().all(|o| self.tract_values.contains_key(o.as_str())) {
            for o in outputs {
                let value = self.tract_values.remove(o.as_str()).expect("checked above");
                self.consts.insert(o.clone(), value);
            }
            return Ok(());
        }
        if all_const {
            if !folds(op) {
                return Err(cx.unsupported(format!("'{op}' on constants is not supported; supported ops: {SUPPORTED}")));
            }
            let inputs: Vec<Option<&Const>> =
                node.input.iter().map(|n| if n.is_empty() { None } else { self.consts.get(n.as_str()) }).collect();
            // Where our rule fails and tract evaluated the node, tract's value stands.
            let values = match fold(cx, &inputs) {
                Ok(values) => values,
                Err(e) => match node.output.iter().map(|o| self.tract_values.remove(o.as_str())).collect() {
                    Some(values) => values,
                    None => return Err(e),
                },
            };
            for (name, value) in node.output.iter().zip(values) {
                self.consts.insert(name.clone(), value);
            }
            return Ok(());
        }
        if self.fuse_elementwise(cx)? {
            return Ok(());
        }
        for name in &node.input {
            self.materialize(name);
        }
        if op == "Gather" && self.is_const(cx, 0) {
            return layers::embedding(self, cx);
        }
        if DATA_MOVEMENT.contains(&op) {
            return self.move_data(cx);
        }
        if op == "Concat" {
            return concat::concat_node(self, cx);
        }
        if op == "Pad" {
            return pad::pad_node(self, cx);
        }
        if op == "ConvTranspose" {
            return conv_transpose::conv_transpose_node(self, cx);
        }
        if op == "Resize" || op == "Upsample" {
            return resize::resize_node(self, cx);
        }
        layers::layer(self, cx, is_last)
    }

    /// Fuses an elementwise op into a pending function; false if the node is not one.
    fn fuse_elementwise(&mut self, cx: &Ctx<'_>) -> Result<bool> {
        let op = cx.op();
        let out = cx.node.output[0].clone();
        let input = |k: usize| cx.node.input.get(k).map(String::as_str).unwrap_or("");
        if let Some(activation) = self.activation(cx)? {
            let Some(Operand::Value(base, f)) = self.operand(input(0)) else {
                return Err(cx.invalid(format!("input '{}' is not produced before this node", input(0))));
            };
            self.pending.insert(out, Pending { base, f: activation.compose(&f), name: cx.name() });
            return Ok(true);
        }
        let unary = match op {
            "Gelu" => {
                Some(if cx.string("approximate").as_deref() == Some("tanh") { Unary::GeluTanh } else { Unary::Gelu })
            }
            // A Relu of a computed tensor is folded into its producer instead (layers.rs).
            "Relu" if self.pending.contains_key(input(0)) => Some(Unary::Relu),
            _ => Unary::from_onnx(op),
        };
        if let Some(u) = unary {
            let Some(Operand::Value(base, f)) = self.operand(input(0)) else {
                return Err(cx.invalid(format!("input '{}' is not produced before this node", input(0))));
            };
            self.pending.insert(out, Pending { base, f: f.unary(u), name: cx.name() });
            return Ok(true);
        }
        let Some(b) = Binary::from_onnx(op) else { return Ok(false) };
        let (Some(x), Some(y)) = (self.operand(input(0)), self.operand(input(1))) else {
            return Err(cx.invalid("an input is not produced before this node"));
        };
        let fused = match (x, y) {
            (Operand::Value(a, f), Operand::Value(b_, g)) if a == b_ => Some((a, f.binary(b, g))),
            (Operand::Value(a, f), Operand::Const(c)) => c.uniform().map(|v| (a, f.binary(b, Expr::Const(v.into())))),
            (Operand::Const(c), Operand::Value(a, g)) => c.uniform().map(|v| (a, Expr::Const(v.into()).binary(b, g))),
            _ => None,
        };
        let Some((base, f)) = fused else { return Ok(false) };
        // The computed operand is the last layer's own output, read only here (`foldable` implies
        // `base > 0`: the model input has no producer to fold into).
        let operand = if self.is_const(cx, 0) { input(1) } else { input(0) };
        let on_layer =
            self.tensor_of.get(operand).is_some_and(|&t| self.foldable(t, operand)) && base == self.g.nodes.len();
        // A positive scaling right after a product of two tensors folds into its requantization
        // (one rounding instead of two).
        if let Some(factor) = Self::positive_scaling(&f) {
            if on_layer {
                if let FloatOp::MatMul { alpha } = &mut self.g.nodes[base - 1].op {
                    *alpha *= factor as f32;
                    self.alias(&out, base);
                    return Ok(true);
                }
            }
        }
        // A bias added right after a layer folds into the layer (layers.rs), not into a table.
        if b == Binary::Add && on_layer && layers::takes_bias(&self.g.nodes[base - 1].op) {
            return Ok(false);
        }
        self.pending.insert(out, Pending { base, f, name: cx.name() });
        Ok(true)
    }

    /// The factor of `x · c` or `x / c` with a positive finite result, if `f` is one.
    fn positive_scaling(f: &Expr) -> Option<f64> {
        let factor = match f {
            Expr::Binary(Binary::Mul, a, b) => match (a.as_ref(), b.as_ref()) {
                (Expr::Input, Expr::Const(c)) | (Expr::Const(c), Expr::Input) => *c,
                _ => return None,
            },
            Expr::Binary(Binary::Div, a, b) => match (a.as_ref(), b.as_ref()) {
                (Expr::Input, Expr::Const(c)) => 1.0 / c,
                _ => return None,
            },
            _ => return None,
        };
        (factor.is_finite() && factor > 0.0).then_some(factor)
    }

    /// A data-movement op on an activation: the identity keeps the tensor, a pure reshape
    /// becomes a Reshape node, anything else a Gather node.
    fn move_data(&mut self, cx: &Ctx<'_>) -> Result<()> {
        let x = self.data_in(cx, 0)?;
        let dims = self.full[x].clone();
        let consts = &self.consts;
        let maps = index_maps(cx, &dims, |k| cx.node.input.get(k).and_then(|n| consts.get(n.as_str())))?;
        if maps.len() != cx.node.output.len() {
            return Err(cx.invalid(format!("{} outputs for {} results", cx.node.output.len(), maps.len())));
        }
        for (k, (map, out)) in maps.into_iter().zip(&cx.node.output).enumerate() {
            let input_len: usize = dims.iter().product();
            let identity = map.data.len() == input_len && map.data.iter().enumerate().all(|(i, &s)| i == s);
            let name = if k == 0 { cx.name() } else { format!("{}:{k}", cx.name()) };
            let t = if identity && map.dims == dims {
                x
            } else if identity {
                self.push(name, FloatOp::Reshape, vec![x], map.dims)
            } else {
                let source = map.data.iter().map(|&i| i as u32).collect();
                self.push(name, FloatOp::Gather { source }, vec![x], map.dims)
            };
            self.alias(out, t);
        }
        Ok(())
    }
}
