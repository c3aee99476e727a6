//! The compiled int8 model: a topologically ordered graph of integer layers.
//!
//! Tensor 0 is the model input; node `i` produces tensor `i + 1`. Every tensor is int8 with its
//! own scale and zero point. The exact integer meaning of every op is in docs/quantization.md and
//! in [`crate::infer`]; the circuit proves exactly that meaning.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::codec::{Reader, Writer};
use crate::error::{Error, Result};

/// Version of the integer semantics and of the circuit layout. It is part of the model id, so a
/// change of either gives every model a new id.
pub const CIRCUIT_VERSION: u32 = 5;

/// Largest tensor (elements) and largest model (multiply-accumulates) we accept. They bound the
/// memory a malformed or hostile model file can make us allocate.
pub const MAX_TENSOR_LEN: usize = 1 << 22;
/// See [`MAX_TENSOR_LEN`].
pub const MAX_MACS: u64 = 1 << 32;
const MAX_NODES: usize = 4096;
const MAX_RANK: usize = 8;
const MAX_NAME_LEN: usize = 256;

/// Quantization parameters of one int8 tensor: `real = scale * (q - zero_point)`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct QParams {
    /// Positive, finite scale.
    pub scale: f32,
    /// Zero point in int8.
    pub zero_point: i8,
}

/// `y = clamp(zp_out + floor((acc * multiplier + 2^(shift-1)) / 2^shift), lo, 127)`; for
/// `shift == 0` the rounding term is 0. `shift` is a multiple of 8 so the circuit can range check
/// the remainder byte by byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requant {
    /// Fixed-point multiplier, `1 <= multiplier < 2^31`.
    pub multiplier: u32,
    /// Right shift, a multiple of 8, at most 56.
    pub shift: u8,
}

/// One integer operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// `y[o] = requant(bias[o] + sum_i w[o][i] * (x[i] - zp_in))`, weights row-major `[out][in]`.
    /// With an output of shape `[out]` the whole input is one row (a flattening Gemm); with an
    /// output of shape `[..., out]` each row of the input's last axis `[..., in]` is one row
    /// (a MatMul applied to every token).
    Dense {
        /// Weights, `out * in` values.
        weights: Vec<i8>,
        /// Bias at scale `s_in * s_w[o]`.
        bias: Vec<i32>,
        /// Per output channel.
        requant: Vec<Requant>,
        /// Clamp below at the output zero point (a folded ReLU).
        relu: bool,
    },
    /// 2-D convolution over `[C, H, W]`, weights `[c_out][c_in][kh][kw]`, zero padding (in real
    /// terms, i.e. padded inputs equal `zp_in`).
    Conv {
        /// Output channels.
        c_out: usize,
        /// Kernel height and width.
        kernel: [usize; 2],
        /// Strides (height, width).
        stride: [usize; 2],
        /// Padding: top, left, bottom, right.
        pads: [usize; 4],
        /// Weights.
        weights: Vec<i8>,
        /// Bias at scale `s_in * s_w[o]`.
        bias: Vec<i32>,
        /// Per output channel.
        requant: Vec<Requant>,
        /// Clamp below at the output zero point (a folded ReLU).
        relu: bool,
    },
    /// Max over each window; padded positions are ignored. Same quantization in and out.
    MaxPool {
        /// Window height and width.
        kernel: [usize; 2],
        /// Strides.
        stride: [usize; 2],
        /// Padding: top, left, bottom, right.
        pads: [usize; 4],
    },
    /// `y = requant(sum over the window of (x - zp_in))`; the divisor lives in the multiplier.
    /// Padded positions contribute zero (real zero).
    AvgPool {
        /// Window height and width.
        kernel: [usize; 2],
        /// Strides.
        stride: [usize; 2],
        /// Padding: top, left, bottom, right.
        pads: [usize; 4],
        /// One multiplier per distinct window population, indexed by the number of in-bounds
        /// cells minus one (so `count_include_pad` and border windows are both exact).
        requant: Vec<Requant>,
        /// Clamp below at the output zero point.
        relu: bool,
    },
    /// `y = requant(ka * (a - zp_a) + kb * (b - zp_b))` elementwise.
    Add {
        /// Integer weight of the first input.
        ka: i32,
        /// Integer weight of the second input.
        kb: i32,
        /// Requantization (multiplier 1: a pure rounding shift).
        requant: Requant,
        /// Clamp below at the output zero point.
        relu: bool,
    },
    /// `y = requant(ka * (x - zp_x) + constants[i])` elementwise: adding a constant tensor of the
    /// input's shape (a position embedding); the constants are at the output's scale times
    /// `2^shift`.
    AddConst {
        /// Integer weight of the input.
        ka: i32,
        /// One per element.
        constants: Vec<i32>,
        /// Requantization (multiplier 1: a pure rounding shift).
        requant: Requant,
    },
    /// `y = max(x, zp)`; same quantization in and out.
    Relu,
    /// Reinterprets the shape; the data is unchanged.
    Reshape,
    /// `y[i] = x[source[i]]`: any rearrangement or selection of the input's elements (Transpose,
    /// Slice, Split, Gather with constant indices). Same quantization in and out.
    Gather {
        /// For each output element, the flat index of the input element it copies.
        source: Vec<u32>,
    },
    /// `y[i] = pool[source[i]]`, `pool` the inputs laid end to end followed by `constants`:
    /// ONNX Concat of computed tensors and constants (a class token before the patches, two
    /// branches joined), or any copy out of several tensors. Every input already has the
    /// output's quantization (the compiler calibrates them together), so it is a copy of wires.
    Concat {
        /// For each output element, its flat index into the pool.
        source: Vec<u32>,
        /// Constant elements, at the output's quantization.
        constants: Vec<i8>,
    },
    /// `y[.., m, n] = requant(Σ_k (a[.., m, k] − zp_a) · (b[.., k, n] − zp_b))`: the product of
    /// two computed tensors (attention scores `Q·Kᵀ`, attention-weighted values), batched over
    /// the leading axes they share.
    MatMul {
        /// Requantization of every output element.
        requant: Requant,
    },
    /// Softmax over the last axis, exact in integers: per row, over its kept cells, the maximum
    /// `m`, `e_j = exp[m − x_j]`, `y_j = round(255 · e_j / Σe) − 128`; a masked cell is `−128`
    /// (probability 0). The output scale is 1/255 with zero point −128.
    Softmax {
        /// `exp[d] ≈ 65535 · e^(−s_in · d)` for the 256 distances `d` to the row maximum.
        exp: Vec<u16>,
        /// Which cells of the last two axes `[rows, n]` take part (a causal mask), the same for
        /// every leading index; empty for all.
        keep: Vec<bool>,
    },
    /// LayerNorm over the last axis, exact in integers (docs/quantization.md): per row of `n`
    /// centered values `c_i`, `D_i = n·c_i − Σc`, `V = Σ D_i² + eps`, the proven inverse square
    /// root `R = floor(2^31 / isqrt(V))`, and `y_i = requant(D_i · R · gamma[i] + beta[i])`.
    LayerNorm {
        /// Per channel (the last axis): `γ·√n / s_out` in fixed point.
        gamma: Vec<i32>,
        /// Per channel: `β / s_out` at the requantization's scale.
        beta: Vec<i64>,
        /// `n³·ε / s_in²`, at least 1.
        eps: u64,
        /// Requantization of every output (multiplier 1).
        requant: Requant,
    },
    /// `y[.., c] = table[u·dim + c]` for `u = x + 128` the token id at each input position: a
    /// token embedding (a model whose input is token ids takes them at scale 1, zero point −128,
    /// so `u` is the id). An id of `vocab = table.len() / dim` or more is invalid.
    Embedding {
        /// `vocab × dim` values, row `u` the embedding of token `u`.
        table: Vec<i8>,
        /// Channels per token.
        dim: usize,
    },
    /// `y = table[x + 128]`: an elementwise function of one int8 input (GELU, Erf, Tanh, Exp,
    /// scaling by a constant...), tabulated over the 256 input values at compile time.
    Table {
        /// 256 outputs, indexed by the input's offset form `x + 128`.
        table: Vec<i8>,
    },
}

/// Most inputs of an [`Op::Concat`].
pub const MAX_CONCAT_INPUTS: usize = 64;

/// Entries of an [`Op::Table`]: one per int8 input value.
pub const TABLE_LEN: usize = 256;

/// Output quantization of every [`Op::Softmax`]: probabilities `(y + 128) / 255`.
pub const SOFTMAX_Q: QParams = QParams { scale: 1.0 / 255.0, zero_point: -128 };

/// Longest LayerNorm row: keeps `Σ D_i² + eps` below 2^50 (see [`Op::LayerNorm`]).
pub const MAX_LAYER_NORM_ROW: usize = 1024;
/// Largest LayerNorm `eps` (integer form).
pub const MAX_LAYER_NORM_EPS: u64 = 1 << 49;
/// Bits of the LayerNorm inverse square root: `R = floor(2^31 / isqrt(V))`, so `|D_i·R| ≤ 2^31`.
pub const INV_SQRT_BITS: u32 = 31;

/// Longest Softmax row: keeps the row sum of 16-bit exponentials and twice it below 2^32.
pub const MAX_SOFTMAX_ROW: usize = 1 << 14;

impl Op {
    /// Short op name for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Op::Dense { .. } => "Dense",
            Op::Conv { .. } => "Conv",
            Op::MaxPool { .. } => "MaxPool",
            Op::AvgPool { .. } => "AvgPool",
            Op::Add { .. } => "Add",
            Op::AddConst { .. } => "AddConst",
            Op::Relu => "Relu",
            Op::Reshape => "Reshape",
            Op::Gather { .. } => "Gather",
            Op::Concat { .. } => "Concat",
            Op::MatMul { .. } => "MatMul",
            Op::Softmax { .. } => "Softmax",
            Op::Embedding { .. } => "Embedding",
            Op::LayerNorm { .. } => "LayerNorm",
            Op::Table { .. } => "Table",
        }
    }
}

/// One node of the integer graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// Name of the ONNX node it came from (for messages).
    pub name: String,
    /// The operation.
    pub op: Op,
    /// Indices of input tensors (all smaller than this node's own tensor index).
    pub inputs: Vec<usize>,
    /// Output shape, without a batch dimension.
    pub shape: Vec<usize>,
    /// Output quantization.
    pub q: QParams,
}

/// A compiled int8 model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuantModel {
    /// Human-readable name.
    pub name: String,
    /// Input shape, without a batch dimension.
    pub input_shape: Vec<usize>,
    /// Input quantization.
    pub input_q: QParams,
    /// Nodes in topological order; the last node's tensor is the model output.
    pub nodes: Vec<Node>,
}

/// Number of elements of a shape.
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

impl QuantModel {
    /// Shape of tensor `t`.
    pub fn tensor_shape(&self, t: usize) -> &[usize] {
        if t == 0 {
            &self.input_shape
        } else {
            &self.nodes[t - 1].shape
        }
    }

    /// Quantization of tensor `t`.
    pub fn tensor_q(&self, t: usize) -> QParams {
        if t == 0 {
            self.input_q
        } else {
            self.nodes[t - 1].q
        }
    }

    /// Number of int8 values of the input.
    pub fn input_len(&self) -> usize {
        numel(&self.input_shape)
    }

    /// Index of the output tensor.
    pub fn output_tensor(&self) -> usize {
        self.nodes.len()
    }

    /// Number of int8 values of the output.
    pub fn output_len(&self) -> usize {
        numel(self.tensor_shape(self.output_tensor()))
    }

    /// Multiply-accumulates of one inference (Dense and Conv only).
    pub fn macs(&self) -> u64 {
        self.nodes
            .iter()
            .map(|n| match &n.op {
                Op::Dense { weights, .. } => (weights.len() * dense_rows(&n.shape)) as u64,
                Op::Conv { weights, c_out, .. } => (numel(&n.shape) / c_out * weights.len()) as u64,
                Op::MatMul { .. } => {
                    let a = self.tensor_shape(n.inputs[0]);
                    (numel(&n.shape) * a[a.len() - 1]) as u64
                }
                _ => 0,
            })
            .sum()
    }

    /// The model id: SHA-256 over the canonical encoding (which includes [`CIRCUIT_VERSION`]).
    pub fn model_id(&self) -> [u8; 32] {
        Sha256::digest(self.to_canonical_bytes()).into()
    }

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
                Op::Add { .. } | Op::MatMul { .. } => 2..=2,
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
                Op::Conv { c_out, kernel, stride, pads, weights, bias, requant, .. } => {
                    let [c_in, h, w] = chw(in_shape).map_err(|e| bad(name, e))?;
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
                    let [batch, m, k, n_] =
                        matmul_dims(in_shape, self.tensor_shape(n.inputs[1])).map_err(|e| bad(name, e))?;
                    let mut expected = in_shape[..in_shape.len() - 1].to_vec();
                    expected.push(n_);
                    if n.shape != expected {
                        return Err(bad(name, format!("output shape {:?} should be {expected:?}", n.shape)));
                    }
                    check_requant(*requant).map_err(|e| bad(name, e))?;
                    macs += (batch * m * k * n_) as u64;
                }
                Op::Softmax { exp, keep } => {
                    if n.shape != in_shape || n.q != SOFTMAX_Q {
                        return Err(bad(
                            name,
                            "Softmax keeps the shape and outputs at scale 1/255, zero point -128".into(),
                        ));
                    }
                    if exp.len() != TABLE_LEN || exp[0] == 0 {
                        return Err(bad(name, format!("Softmax needs {TABLE_LEN} exponentials, the first positive")));
                    }
                    let row = *n.shape.last().expect("checked shape");
                    if row > MAX_SOFTMAX_ROW {
                        return Err(bad(name, format!("Softmax rows of {row} exceed {MAX_SOFTMAX_ROW}")));
                    }
                    let pattern = if n.shape.len() >= 2 { row * n.shape[n.shape.len() - 2] } else { row };
                    if !keep.is_empty() && (keep.len() != pattern || keep.chunks(row).any(|r| !r.contains(&true))) {
                        return Err(bad(
                            name,
                            "a Softmax mask covers the last two axes and keeps a cell of every row".into(),
                        ));
                    }
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
        crate::lower::check_bounds(self)?;
        Ok(())
    }

    /// Canonical binary encoding (the model section of a .tgm file and the model id preimage).
    pub fn to_canonical_bytes(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.u32(CIRCUIT_VERSION);
        w.str(&self.name);
        w.usizes(&self.input_shape);
        put_q(&mut w, self.input_q);
        w.u32(self.nodes.len() as u32);
        for n in &self.nodes {
            w.str(&n.name);
            w.usizes(&n.inputs);
            w.usizes(&n.shape);
            put_q(&mut w, n.q);
            match &n.op {
                Op::Dense { weights, bias, requant, relu } => {
                    w.u8(0);
                    put_affine(&mut w, weights, bias, requant, *relu);
                }
                Op::Conv { c_out, kernel, stride, pads, weights, bias, requant, relu } => {
                    w.u8(1);
                    w.u32(*c_out as u32);
                    put_window(&mut w, kernel, stride, pads);
                    put_affine(&mut w, weights, bias, requant, *relu);
                }
                Op::MaxPool { kernel, stride, pads } => {
                    w.u8(2);
                    put_window(&mut w, kernel, stride, pads);
                }
                Op::AvgPool { kernel, stride, pads, requant, relu } => {
                    w.u8(3);
                    put_window(&mut w, kernel, stride, pads);
                    w.u32(requant.len() as u32);
                    requant.iter().for_each(|r| put_requant(&mut w, *r));
                    w.u8(*relu as u8);
                }
                Op::Add { ka, kb, requant, relu } => {
                    w.u8(4);
                    w.i32(*ka);
                    w.i32(*kb);
                    put_requant(&mut w, *requant);
                    w.u8(*relu as u8);
                }
                Op::Relu => w.u8(5),
                Op::Reshape => w.u8(6),
                Op::Gather { source } => {
                    w.u8(7);
                    w.u32(source.len() as u32);
                    source.iter().for_each(|&i| w.u32(i));
                }
                Op::Concat { source, constants } => {
                    w.u8(14);
                    w.u32(source.len() as u32);
                    source.iter().for_each(|&i| w.u32(i));
                    w.bytes(&constants.iter().map(|&v| v as u8).collect::<Vec<_>>());
                }
                Op::Table { table } => {
                    w.u8(8);
                    w.bytes(&table.iter().map(|&v| v as u8).collect::<Vec<_>>());
                }
                Op::MatMul { requant } => {
                    w.u8(10);
                    put_requant(&mut w, *requant);
                }
                Op::LayerNorm { gamma, beta, eps, requant } => {
                    w.u8(12);
                    w.u32(gamma.len() as u32);
                    gamma.iter().for_each(|&g| w.i32(g));
                    w.u32(beta.len() as u32);
                    beta.iter().for_each(|&b| w.i64(b));
                    w.i64(*eps as i64);
                    put_requant(&mut w, *requant);
                }
                Op::Embedding { table, dim } => {
                    w.u8(13);
                    w.u32(*dim as u32);
                    w.bytes(&table.iter().map(|&v| v as u8).collect::<Vec<_>>());
                }
                Op::Softmax { exp, keep } => {
                    w.u8(11);
                    exp.iter().for_each(|&e| w.u16(e));
                    w.bytes(&keep.iter().map(|&k| u8::from(k)).collect::<Vec<_>>());
                }
                Op::AddConst { ka, constants, requant } => {
                    w.u8(9);
                    w.i32(*ka);
                    w.u32(constants.len() as u32);
                    constants.iter().for_each(|&c| w.i32(c));
                    put_requant(&mut w, *requant);
                }
            }
        }
        w.into_bytes()
    }

    /// Decodes and validates the canonical encoding. Never panics; lengths are checked against
    /// the remaining bytes before anything is allocated.
    pub fn from_canonical_bytes(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        let version = r.u32()?;
        if version != CIRCUIT_VERSION {
            return Err(Error::Format(format!(
                "model uses circuit version {version}, this build supports {CIRCUIT_VERSION}"
            )));
        }
        let name = r.str(MAX_NAME_LEN)?;
        let input_shape = r.usizes(MAX_RANK)?;
        let input_q = get_q(&mut r)?;
        let count = r.len_prefix(MAX_NODES, 16)?;
        let mut nodes = Vec::with_capacity(count);
        for _ in 0..count {
            let name = r.str(MAX_NAME_LEN)?;
            let inputs = r.usizes(MAX_CONCAT_INPUTS)?;
            let shape = r.usizes(MAX_RANK)?;
            let q = get_q(&mut r)?;
            let op = match r.u8()? {
                0 => {
                    let (weights, bias, requant, relu) = get_affine(&mut r)?;
                    Op::Dense { weights, bias, requant, relu }
                }
                1 => {
                    let c_out = r.u32()? as usize;
                    let (kernel, stride, pads) = get_window(&mut r)?;
                    let (weights, bias, requant, relu) = get_affine(&mut r)?;
                    Op::Conv { c_out, kernel, stride, pads, weights, bias, requant, relu }
                }
                2 => {
                    let (kernel, stride, pads) = get_window(&mut r)?;
                    Op::MaxPool { kernel, stride, pads }
                }
                3 => {
                    let (kernel, stride, pads) = get_window(&mut r)?;
                    let n = r.len_prefix(1 << 16, 5)?;
                    let requant = (0..n).map(|_| get_requant(&mut r)).collect::<Result<_>>()?;
                    let relu = r.bool()?;
                    Op::AvgPool { kernel, stride, pads, requant, relu }
                }
                4 => {
                    let ka = r.i32()?;
                    let kb = r.i32()?;
                    let requant = get_requant(&mut r)?;
                    let relu = r.bool()?;
                    Op::Add { ka, kb, requant, relu }
                }
                5 => Op::Relu,
                6 => Op::Reshape,
                7 => {
                    let n = r.len_prefix(MAX_TENSOR_LEN, 4)?;
                    Op::Gather { source: (0..n).map(|_| r.u32()).collect::<Result<_>>()? }
                }
                14 => {
                    let n = r.len_prefix(MAX_TENSOR_LEN, 4)?;
                    let source = (0..n).map(|_| r.u32()).collect::<Result<_>>()?;
                    let constants = r.bytes(MAX_TENSOR_LEN)?.iter().map(|&b| b as i8).collect();
                    Op::Concat { source, constants }
                }
                8 => Op::Table { table: r.bytes(TABLE_LEN)?.iter().map(|&b| b as i8).collect() },
                9 => {
                    let ka = r.i32()?;
                    let n = r.len_prefix(MAX_TENSOR_LEN, 4)?;
                    let constants = (0..n).map(|_| r.i32()).collect::<Result<_>>()?;
                    Op::AddConst { ka, constants, requant: get_requant(&mut r)? }
                }
                10 => Op::MatMul { requant: get_requant(&mut r)? },
                11 => {
                    let exp = (0..TABLE_LEN).map(|_| r.u16()).collect::<Result<_>>()?;
                    let keep = r
                        .bytes(MAX_TENSOR_LEN)?
                        .iter()
                        .map(|&b| match b {
                            0 | 1 => Ok(b == 1),
                            _ => Err(Error::Format(format!("mask byte {b} is not 0 or 1"))),
                        })
                        .collect::<Result<_>>()?;
                    Op::Softmax { exp, keep }
                }
                13 => {
                    let dim = r.u32()? as usize;
                    let table = r.bytes(1 << 16)?.iter().map(|&b| b as i8).collect();
                    Op::Embedding { table, dim }
                }
                12 => {
                    let n = r.len_prefix(MAX_LAYER_NORM_ROW, 4)?;
                    let gamma = (0..n).map(|_| r.i32()).collect::<Result<_>>()?;
                    let n = r.len_prefix(MAX_LAYER_NORM_ROW, 8)?;
                    let beta = (0..n).map(|_| r.i64()).collect::<Result<_>>()?;
                    let eps = r.i64()? as u64;
                    Op::LayerNorm { gamma, beta, eps, requant: get_requant(&mut r)? }
                }
                tag => return Err(Error::Format(format!("unknown op tag {tag}"))),
            };
            nodes.push(Node { name, op, inputs, shape, q });
        }
        r.finish()?;
        let model = QuantModel { name, input_shape, input_q, nodes };
        model.validate()?;
        Ok(model)
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

/// Rows, inputs per row and outputs per row of a [`Op::Dense`] from its input and output
/// shapes: one row of the whole input for an output `[out]`, else one row per position of the
/// leading axes, which input and output share.
pub(crate) fn dense_dims(in_shape: &[usize], out_shape: &[usize]) -> std::result::Result<[usize; 3], String> {
    match out_shape {
        [out] => Ok([1, numel(in_shape), *out]),
        [lead @ .., out] if in_shape.len() == out_shape.len() && in_shape[..lead.len()] == *lead => {
            Ok([numel(lead), in_shape[lead.len()], *out])
        }
        _ => Err(format!("a Dense from {in_shape:?} to {out_shape:?} must keep the leading axes")),
    }
}

/// `[batch, m, k, n]` of a product of tensors of shapes `[.., m, k]` and `[.., k, n]` with
/// equal leading axes.
pub(crate) fn matmul_dims(a: &[usize], b: &[usize]) -> std::result::Result<[usize; 4], String> {
    let rank = a.len();
    if rank < 2 || b.len() != rank || a[..rank - 2] != b[..rank - 2] || a[rank - 1] != b[rank - 2] {
        return Err(format!("cannot multiply {a:?} by {b:?}: shapes [.., m, k] and [.., k, n] are required"));
    }
    Ok([numel(&a[..rank - 2]), a[rank - 2], a[rank - 1], b[rank - 1]])
}

fn dense_rows(out_shape: &[usize]) -> usize {
    numel(&out_shape[..out_shape.len() - 1])
}

/// `[C, H, W]` of a rank-3 shape.
pub(crate) fn chw(shape: &[usize]) -> std::result::Result<[usize; 3], String> {
    match shape {
        [c, h, w] => Ok([*c, *h, *w]),
        _ => Err(format!("expects a [C, H, W] input, got {shape:?}")),
    }
}

/// Output height and width of a sliding window.
pub(crate) fn window_out(
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

fn put_q(w: &mut Writer, q: QParams) {
    w.u32(q.scale.to_bits());
    w.u8(q.zero_point as u8);
}

fn get_q(r: &mut Reader<'_>) -> Result<QParams> {
    Ok(QParams { scale: f32::from_bits(r.u32()?), zero_point: r.u8()? as i8 })
}

fn put_requant(w: &mut Writer, q: Requant) {
    w.u32(q.multiplier);
    w.u8(q.shift);
}

fn get_requant(r: &mut Reader<'_>) -> Result<Requant> {
    Ok(Requant { multiplier: r.u32()?, shift: r.u8()? })
}

fn put_window(w: &mut Writer, kernel: &[usize; 2], stride: &[usize; 2], pads: &[usize; 4]) {
    kernel.iter().chain(stride).chain(pads).for_each(|&v| w.u32(v as u32));
}

type Window = ([usize; 2], [usize; 2], [usize; 4]);

fn get_window(r: &mut Reader<'_>) -> Result<Window> {
    let mut v = [0usize; 8];
    for x in v.iter_mut() {
        *x = r.u32()? as usize;
    }
    Ok(([v[0], v[1]], [v[2], v[3]], [v[4], v[5], v[6], v[7]]))
}

fn put_affine(w: &mut Writer, weights: &[i8], bias: &[i32], requant: &[Requant], relu: bool) {
    w.bytes(&weights.iter().map(|&v| v as u8).collect::<Vec<_>>());
    w.u32(bias.len() as u32);
    bias.iter().for_each(|&b| w.i32(b));
    w.u32(requant.len() as u32);
    requant.iter().for_each(|&q| put_requant(w, q));
    w.u8(relu as u8);
}

type Affine = (Vec<i8>, Vec<i32>, Vec<Requant>, bool);

fn get_affine(r: &mut Reader<'_>) -> Result<Affine> {
    let weights = r.bytes(MAX_TENSOR_LEN)?.iter().map(|&b| b as i8).collect();
    let n = r.len_prefix(MAX_TENSOR_LEN, 4)?;
    let bias = (0..n).map(|_| r.i32()).collect::<Result<_>>()?;
    let n = r.len_prefix(MAX_TENSOR_LEN, 5)?;
    let requant = (0..n).map(|_| get_requant(r)).collect::<Result<_>>()?;
    let relu = r.bool()?;
    Ok((weights, bias, requant, relu))
}
