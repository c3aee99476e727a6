//! The float graph after folding, and a float executor for calibration.
//!
//! Tensor 0 is the input; node `i` produces tensor `i + 1` (the same indexing as
//! [`tgrid_int8::QuantModel`], which the quantizer produces node for node).

use crate::elementwise::Expr;

/// One float operation (shapes without the batch dimension).
#[derive(Clone, Debug, PartialEq)]
pub enum FloatOp {
    /// `y = W x + b`, `W` row-major `[out][in]`: over the whole input for an output `[out]`,
    /// over each row of the input's last axis for an output `[..., out]`.
    Dense {
        /// Weights.
        weights: Vec<f32>,
        /// Bias.
        bias: Vec<f32>,
        /// Output size.
        out: usize,
        /// Folded ReLU.
        relu: bool,
    },
    /// Convolution over `[C, H, W]`.
    Conv {
        /// Weights `[c_out][c_in][kh][kw]`.
        weights: Vec<f32>,
        /// Bias.
        bias: Vec<f32>,
        /// Output channels.
        c_out: usize,
        /// Kernel.
        kernel: [usize; 2],
        /// Strides.
        stride: [usize; 2],
        /// Pads top, left, bottom, right.
        pads: [usize; 4],
        /// Channel groups: output channel `o` reads the `c_in / groups` input channels of group
        /// `o / (c_out / groups)` (a grouped or depthwise convolution when above 1).
        groups: usize,
        /// Folded ReLU.
        relu: bool,
    },
    /// Max pooling (padding ignored).
    MaxPool {
        /// Kernel.
        kernel: [usize; 2],
        /// Strides.
        stride: [usize; 2],
        /// Pads.
        pads: [usize; 4],
    },
    /// Average pooling.
    AvgPool {
        /// Kernel.
        kernel: [usize; 2],
        /// Strides.
        stride: [usize; 2],
        /// Pads.
        pads: [usize; 4],
        /// Divide by the full window even at borders.
        count_include_pad: bool,
        /// Folded ReLU.
        relu: bool,
    },
    /// Elementwise sum of two tensors of one shape, or their difference `a − b`.
    Add {
        /// Folded ReLU.
        relu: bool,
        /// `a − b` instead of `a + b`.
        subtract: bool,
    },
    /// `a / b` elementwise, of two computed tensors of one shape.
    Div,
    /// max(x, 0).
    Relu,
    /// New shape, same data.
    Reshape,
    /// `y[i] = x[source[i]]` (transpose, slice, split, gather with constant indices).
    Gather {
        /// Flat input index of each output element.
        source: Vec<u32>,
    },
    /// `y[i] = pool[source[i]]`, `pool` the inputs laid end to end followed by `constants`
    /// (ONNX Concat of computed tensors and constants).
    Concat {
        /// Flat pool index of each output element.
        source: Vec<u32>,
        /// Constant values after the inputs in the pool.
        constants: Vec<f32>,
    },
    /// `y = alpha · (a · b)` of two computed tensors `[.., m, k]` and `[.., k, n]` (`alpha`: a
    /// folded scaling, such as attention's `1/√d`).
    MatMul {
        /// Constant factor.
        alpha: f32,
    },
    /// Softmax over the last axis; `keep` (over the last two axes, empty for all) masks cells
    /// out (probability 0).
    Softmax {
        /// Kept cells of the last two axes.
        keep: Vec<bool>,
    },
    /// LayerNorm over the last axis: `(x − mean)/√(var + eps)·gamma + beta`.
    LayerNorm {
        /// Per channel.
        gamma: Vec<f32>,
        /// Per channel.
        beta: Vec<f32>,
        /// Added to the variance.
        eps: f32,
    },
    /// `y[.., c] = table[id·dim + c]` for each token id of the input.
    Embedding {
        /// `vocab × dim` values.
        table: Vec<f32>,
        /// Channels per token.
        dim: usize,
    },
    /// `y = f(x)` elementwise (tabulated when quantized).
    Elementwise {
        /// The function.
        f: Expr,
    },
    /// `y = x + c` with a constant of the input's shape.
    AddConst {
        /// One value per element.
        values: Vec<f32>,
    },
}

/// One float node.
#[derive(Clone, Debug, PartialEq)]
pub struct FloatNode {
    /// ONNX node name.
    pub name: String,
    /// Operation.
    pub op: FloatOp,
    /// Input tensor indices.
    pub inputs: Vec<usize>,
    /// Output shape.
    pub shape: Vec<usize>,
}

/// A float model.
#[derive(Clone, Debug, PartialEq)]
pub struct FloatGraph {
    /// Model name.
    pub name: String,
    /// Input shape without the batch dimension.
    pub input_shape: Vec<usize>,
    /// The input is token ids (an integer ONNX input read by an embedding), not real values.
    pub tokens: bool,
    /// Nodes in topological order.
    pub nodes: Vec<FloatNode>,
    /// The ONNX inputs and outputs of a model with several (see [`tgrid_int8::Ports`]).
    pub ports: tgrid_int8::Ports,
}

impl FloatGraph {
    /// Shape of tensor `t`.
    pub fn shape(&self, t: usize) -> &[usize] {
        if t == 0 {
            &self.input_shape
        } else {
            &self.nodes[t - 1].shape
        }
    }

    /// Runs the graph, returning every tensor (index as above).
    pub fn run(&self, input: &[f32]) -> Vec<Vec<f32>> {
        self.run_with(input, |_, _| {})
    }

    /// Runs the graph, letting `after(i, values)` change node `i`'s output before the nodes
    /// after it read it (e.g. to round it as int8 would: a quantization study).
    pub fn run_with(&self, input: &[f32], mut after: impl FnMut(usize, &mut Vec<f32>)) -> Vec<Vec<f32>> {
        let mut ts: Vec<Vec<f32>> = vec![input.to_vec()];
        for (index, n) in self.nodes.iter().enumerate() {
            let x = &ts[n.inputs[0]];
            let in_shape = self.shape(n.inputs[0]);
            let relu = |v: f32, on: bool| if on { v.max(0.0) } else { v };
            let y: Vec<f32> = match &n.op {
                FloatOp::Dense { weights, bias, out, relu: r } => {
                    let fan_in = weights.len() / out;
                    x.chunks(fan_in)
                        .flat_map(|row| {
                            (0..*out).map(move |o| {
                                let w = &weights[o * fan_in..(o + 1) * fan_in];
                                let s: f64 = w.iter().zip(row).map(|(&w, &v)| f64::from(w) * f64::from(v)).sum();
                                relu(s as f32 + bias[o], *r)
                            })
                        })
                        .collect()
                }
                FloatOp::Conv { weights, bias, c_out, kernel, stride, pads, groups, relu: r } => {
                    let (c_in, h, w) = (in_shape[0] / groups, in_shape[1], in_shape[2]);
                    let (oh, ow) = (n.shape[1], n.shape[2]);
                    let mut y = vec![0f32; c_out * oh * ow];
                    for co in 0..*c_out {
                        let first_in = co / (c_out / groups) * c_in;
                        for oy in 0..oh {
                            for ox in 0..ow {
                                let mut s = f64::from(bias[co]);
                                for ci in 0..c_in {
                                    for ky in 0..kernel[0] {
                                        for kx in 0..kernel[1] {
                                            let (iy, ix) = (oy * stride[0] + ky, ox * stride[1] + kx);
                                            if iy < pads[0] || ix < pads[1] || iy - pads[0] >= h || ix - pads[1] >= w {
                                                continue;
                                            }
                                            let wv = weights[((co * c_in + ci) * kernel[0] + ky) * kernel[1] + kx];
                                            s += f64::from(wv)
                                                * f64::from(x[((first_in + ci) * h + iy - pads[0]) * w + ix - pads[1]]);
                                        }
                                    }
                                }
                                y[(co * oh + oy) * ow + ox] = relu(s as f32, *r);
                            }
                        }
                    }
                    y
                }
                FloatOp::MaxPool { kernel, stride, pads } => {
                    pool(x, in_shape, &n.shape, *kernel, *stride, *pads, |vals, _| {
                        vals.iter().copied().fold(f32::NEG_INFINITY, f32::max)
                    })
                }
                FloatOp::AvgPool { kernel, stride, pads, count_include_pad, relu: r } => {
                    let full = (kernel[0] * kernel[1]) as f32;
                    pool(x, in_shape, &n.shape, *kernel, *stride, *pads, |vals, _| {
                        let div = if *count_include_pad { full } else { vals.len() as f32 };
                        relu(vals.iter().sum::<f32>() / div, *r)
                    })
                }
                FloatOp::Add { relu: r, subtract } => {
                    let b = &ts[n.inputs[1]];
                    let sign = if *subtract { -1.0 } else { 1.0 };
                    x.iter().zip(b).map(|(&a, &b)| relu(a + sign * b, *r)).collect()
                }
                FloatOp::Div => x.iter().zip(&ts[n.inputs[1]]).map(|(&a, &b)| a / b).collect(),
                FloatOp::Relu => x.iter().map(|&v| v.max(0.0)).collect(),
                FloatOp::Reshape => x.clone(),
                FloatOp::MatMul { alpha } => {
                    let (a_shape, b) = (in_shape, &ts[n.inputs[1]]);
                    let rank = a_shape.len();
                    let (m, k) = (a_shape[rank - 2], a_shape[rank - 1]);
                    let cols = n.shape[rank - 1];
                    let mut y = vec![0f32; n.shape.iter().product()];
                    for g in 0..y.len() / (m * cols) {
                        for r in 0..m {
                            for c in 0..cols {
                                let s: f64 = (0..k)
                                    .map(|j| f64::from(x[(g * m + r) * k + j]) * f64::from(b[(g * k + j) * cols + c]))
                                    .sum();
                                y[(g * m + r) * cols + c] = (s * f64::from(*alpha)) as f32;
                            }
                        }
                    }
                    y
                }
                FloatOp::Softmax { keep } => {
                    let n_ = *n.shape.last().expect("a shape");
                    let pattern = if keep.is_empty() { n_ } else { keep.len() };
                    let mut y = vec![0f32; x.len()];
                    for start in (0..x.len()).step_by(n_) {
                        let mask = keep.get(start % pattern..start % pattern + n_).unwrap_or(&[]);
                        let kept = |j: usize| mask.is_empty() || mask[j];
                        let m = (0..n_).filter(|&j| kept(j)).map(|j| x[start + j]).fold(f32::NEG_INFINITY, f32::max);
                        let e: Vec<f64> =
                            (0..n_).map(|j| if kept(j) { f64::from(x[start + j] - m).exp() } else { 0.0 }).collect();
                        let total: f64 = e.iter().sum();
                        for j in 0..n_ {
                            y[start + j] = (e[j] / total) as f32;
                        }
                    }
                    y
                }
                FloatOp::LayerNorm { gamma, beta, eps } => {
                    let mut y = Vec::with_capacity(x.len());
                    for row in x.chunks(gamma.len()) {
                        let n = row.len() as f64;
                        let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
                        let var = row.iter().map(|&v| (f64::from(v) - mean).powi(2)).sum::<f64>() / n;
                        let inv = 1.0 / (var + f64::from(*eps)).sqrt();
                        for (i, &v) in row.iter().enumerate() {
                            y.push(((f64::from(v) - mean) * inv * f64::from(gamma[i]) + f64::from(beta[i])) as f32);
                        }
                    }
                    y
                }
                FloatOp::Embedding { table, dim } => x
                    .iter()
                    .flat_map(|&id| {
                        let row = (id >= 0.0 && id.fract() == 0.0).then(|| id as usize * dim);
                        (0..*dim).map(move |c| row.and_then(|r| table.get(r + c).copied()).unwrap_or(f32::NAN))
                    })
                    .collect(),
                FloatOp::Gather { source } => source.iter().map(|&i| x[i as usize]).collect(),
                FloatOp::Concat { source, constants } => {
                    let pool: Vec<f32> =
                        n.inputs.iter().flat_map(|&t| ts[t].iter().copied()).chain(constants.iter().copied()).collect();
                    source.iter().map(|&i| pool[i as usize]).collect()
                }
                FloatOp::Elementwise { f } => x.iter().map(|&v| f.eval(f64::from(v)) as f32).collect(),
                FloatOp::AddConst { values } => x.iter().zip(values).map(|(&a, &c)| a + c).collect(),
            };
            let mut y = y;
            after(index, &mut y);
            ts.push(y);
        }
        ts
    }
}

fn pool(
    x: &[f32],
    in_shape: &[usize],
    out_shape: &[usize],
    kernel: [usize; 2],
    stride: [usize; 2],
    pads: [usize; 4],
    f: impl Fn(&[f32], usize) -> f32,
) -> Vec<f32> {
    let (c, h, w) = (in_shape[0], in_shape[1], in_shape[2]);
    let (oh, ow) = (out_shape[1], out_shape[2]);
    let mut y = Vec::with_capacity(c * oh * ow);
    let mut cells = Vec::with_capacity(kernel[0] * kernel[1]);
    let mut vals = Vec::with_capacity(kernel[0] * kernel[1]);
    for ch in 0..c {
        for oy in 0..oh {
            for ox in 0..ow {
                tgrid_int8::window_indices(ch, [h, w], kernel, stride, pads, [oy, ox], &mut cells);
                vals.clear();
                vals.extend(cells.iter().map(|&i| x[i]));
                y.push(f(&vals, ch));
            }
        }
    }
    y
}
