//! The compiled int8 model: a topologically ordered graph of integer layers.
//!
//! Tensor 0 is the model input; node `i` produces tensor `i + 1`. Every tensor is int8 with its
//! own scale and zero point. The exact integer meaning of every op is in docs/quantization.md and
//! in [`crate::infer`]; the circuit proves exactly that meaning.

use serde::{Deserialize, Serialize};

mod shapes;

pub use shapes::{chw, dense_dims, dense_rows, matmul_dims};

/// Version of the integer semantics and of the circuit layout. It is part of the model id, so a
/// change of either gives every model a new id.
pub const CIRCUIT_VERSION: u32 = 5;

/// Largest tensor (elements) and largest model (multiply-accumulates) we accept. They bound the
/// memory a malformed or hostile model file can make us allocate.
pub const MAX_TENSOR_LEN: usize = 1 << 22;
/// See [`MAX_TENSOR_LEN`].
pub const MAX_MACS: u64 = 1 << 32;
/// Most layers a model may have.
pub const MAX_NODES: usize = 4096;
/// Most lookup-table entries a model's ops may add to its circuit (up to 65,536 per embedding,
/// 256 per function or exponential table): bounds what a hostile model file can make a circuit
/// build allocate, about 155,000 table rows.
pub const MAX_LOOKUP_ENTRIES: usize = 1 << 22;
/// Largest tensor rank.
pub const MAX_RANK: usize = 8;
/// Longest model or layer name, in bytes.
pub const MAX_NAME_LEN: usize = 256;

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
    /// 2-D convolution over `[C, H, W]`, weights `[c_out][c_in / groups][kh][kw]`, zero padding
    /// (in real terms, i.e. padded inputs equal `zp_in`). With `groups > 1` (a grouped or
    /// depthwise convolution) output channel `o` reads only the input channels of its group,
    /// `[g · c_in/groups, (g + 1) · c_in/groups)` for `g = o / (c_out / groups)`.
    Conv {
        /// Output channels.
        c_out: usize,
        /// Channel groups (1: every output reads every input channel).
        groups: usize,
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
    /// Softmax over the last axis of the product of two computed tensors, the product kept at 16
    /// bits: attention scores `Q·Kᵀ` and their Softmax in one op, so that the wide scores never
    /// become a tensor (every tensor stays int8). Per kept cell of a row (masked cells are not
    /// computed), `s = requant16(Σ_k (a[.., m, k] − zp_a) · (b[.., k, n] − zp_b))`, the
    /// requantization of [`Requant`] clamped to `[−32768, 32767]` around `score_zero_point`;
    /// then as [`Op::Softmax`] over the 16-bit scores, the exponential of a distance
    /// `d = 256·h + l` being [`crate::infer::score_exp`]`= floor((exp_high[h] · exp_low[l] +
    /// 2^15) / 2^16)`: two tables of 256 entries, since a recursive verifier pays for every
    /// entry of a lookup table. Eight-bit scores step by 1/255 of their range (0.3 in the
    /// exponent for a typical attention layer); sixteen-bit ones by 1/65535
    /// (docs/quantization.md).
    ScoresSoftmax {
        /// Requantization of every score to 16 bits.
        requant: Requant,
        /// Zero point of the 16-bit scores.
        score_zero_point: i16,
        /// `exp_high[h] ≈ 65535 · e^(−s_score · 256·h)`.
        exp_high: Vec<u16>,
        /// `exp_low[l] ≈ 65535 · e^(−s_score · l)`.
        exp_low: Vec<u16>,
        /// As [`Op::Softmax`]'s mask.
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
    /// `y = requant(Q)`, elementwise, for `Q` the exact quotient of two computed tensors of one
    /// shape at [`QUOTIENT_BITS`] fractional bits: with `A = a − zp_a` and `B = b − zp_b`,
    /// `Q = floor(2^16 · A · sgn(B) / |B|)`, where a zero `B` counts as `+1` (one step of `b`'s
    /// scale: the quotient saturates at the clamp, as the real division does at an infinity).
    /// Proven by a witnessed quotient and remainder (docs/quantization.md).
    Div {
        /// Requantization of every quotient.
        requant: Requant,
    },
    /// `y = table[x + 128]`: an elementwise function of one int8 input (GELU, Erf, Tanh, Exp,
    /// scaling by a constant...), tabulated over the 256 input values at compile time.
    Table {
        /// 256 outputs, indexed by the input's offset form `x + 128`.
        table: Vec<i8>,
    },
}

/// Fractional bits of the quotient of an [`Op::Div`]: `|Q| ≤ 255 · 2^16 < 2^24`.
pub const QUOTIENT_BITS: u32 = 16;

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
            Op::ScoresSoftmax { .. } => "ScoresSoftmax",
            Op::Embedding { .. } => "Embedding",
            Op::LayerNorm { .. } => "LayerNorm",
            Op::Table { .. } => "Table",
            Op::Div { .. } => "Div",
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
    /// The ONNX inputs and outputs the input and output tensors are made of, for a model with
    /// several of either; empty for a model with one input and one output.
    #[serde(default)]
    pub ports: Ports,
}

/// One named ONNX input or output: a contiguous, row-major part of the model's flat input or
/// output tensor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Port {
    /// The ONNX name.
    pub name: String,
    /// Its shape, without a batch dimension.
    pub shape: Vec<usize>,
}

/// How a model with several ONNX inputs or outputs lays them out. The circuit sees one input
/// tensor and one output tensor (one commitment each, docs/encodings.md): the inputs laid end to
/// end in the order of `inputs`, the outputs likewise. Either list is empty when the model has
/// one input (output), and otherwise has at least two parts, whose sizes add up to the flat
/// tensor's length.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ports {
    /// The ONNX inputs, in the order they are laid out; empty for one input.
    pub inputs: Vec<Port>,
    /// The ONNX outputs, in the order they are laid out; empty for one output.
    pub outputs: Vec<Port>,
}

/// Most ONNX inputs (or outputs) a model may have.
pub const MAX_PORTS: usize = 64;

impl Ports {
    /// No ports: one input and one output.
    pub fn is_single(&self) -> bool {
        self.inputs.is_empty() && self.outputs.is_empty()
    }
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
                Op::MatMul { .. } | Op::ScoresSoftmax { .. } => {
                    let a = self.tensor_shape(n.inputs[0]);
                    (numel(&n.shape) * a[a.len() - 1]) as u64
                }
                _ => 0,
            })
            .sum()
    }
}
