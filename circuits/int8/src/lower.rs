//! Lowers every node to per-output-element integer forms, the one description that both the
//! integer inference and the circuit consume, so they cannot drift apart.
//!
//! Values are carried in the *offset* representation `u = x + 128 ∈ [0, 255]` of an int8 `x`,
//! which is what the circuit range checks and what the commitments pack.

use crate::model::{chw, dense_dims, matmul_dims, numel, Node, Op, QuantModel, Requant};

/// One input term `weight * u[tensor][index]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Term {
    /// The constant weight.
    pub weight: i64,
    /// The tensor read.
    pub tensor: usize,
    /// The flat index of the element read.
    pub index: usize,
}

/// How one output element is computed. Each variant's formula names its fields.
#[derive(Debug)]
#[allow(missing_docs)]
pub enum Element<'a> {
    /// `acc = constant + Σ weight·u`, then
    /// `y = clamp(zp + floor((acc·M + 2^(s-1)) / 2^s), lo, 127)`.
    Affine { constant: i64, terms: &'a [Term], requant: Requant, zero_point: i8, lo: i8 },
    /// `y = max(u[tensor][i] for i in indices)`.
    Max { tensor: usize, indices: &'a [usize] },
    /// `y = u[tensor][index]` (reshape, gather, concat).
    Copy { tensor: usize, index: usize },
    /// `y = u`, a constant (offset form) joined by a concat.
    Constant { u: u8 },
    /// `acc = Σ (u[a][i] − offsets[0]) · (u[b][j] − offsets[1])` over `pairs` of `(i, j)`, then
    /// requantized as an affine element.
    Product { a: usize, b: usize, offsets: [i64; 2], pairs: &'a [(usize, usize)], requant: Requant, zero_point: i8 },
    /// One output of a softmax row: the row's kept cells `kept` of `tensor` (flat indices),
    /// this output's position among them (`None`: masked, output 0 in offset form), and the
    /// exponential table.
    Softmax { tensor: usize, kept: &'a [usize], at: Option<usize>, exp: &'a [u16] },
    /// One output of a softmax row over 16-bit scores ([`Op::ScoresSoftmax`]): the row's kept
    /// cells are sums of products of `a` and `b`, `k` pairs each (`pairs` holds them cell after
    /// cell), each requantized to 16 bits around `zero_point`; this output's position among them
    /// (`None`: masked, output 0 in offset form); the exponential's two tables; `row` is the
    /// row's first output index.
    ScoresSoftmax {
        a: usize,
        b: usize,
        offsets: [i64; 2],
        pairs: &'a [(usize, usize)],
        k: usize,
        at: Option<usize>,
        requant: Requant,
        zero_point: i16,
        exp_high: &'a [u16],
        exp_low: &'a [u16],
        row: usize,
    },
    /// One output of a LayerNorm row: the row's cells `row` of `tensor` (flat indices), centered
    /// by `offset`; this output's position `at` in it, its channel's `gamma` and `beta`.
    LayerNorm {
        tensor: usize,
        row: &'a [usize],
        at: usize,
        offset: i64,
        gamma: i64,
        beta: i64,
        eps: u64,
        requant: Requant,
        zero_point: i8,
    },
    /// `y = table[u[tensor][index]·dim + channel]` (offset form), a token embedding; `u` must be
    /// below `table.len() / dim`.
    Embedding { tensor: usize, index: usize, channel: usize, dim: usize, table: &'a [i8] },
    /// `y = table[u[tensor][index]]`, the table in offset form too.
    Table { tensor: usize, index: usize, table: &'a [u8; 256] },
    /// `acc = quotient(u[a][index] − offsets[0], u[b][index] − offsets[1])`
    /// ([`crate::infer::quotient`]), then requantized as an affine element.
    Quotient { a: usize, b: usize, index: usize, offsets: [i64; 2], requant: Requant, zero_point: i8 },
}

/// Calls `f(output_index, element)` for every output element of node `node_index`, in order.
pub fn for_each_element(model: &QuantModel, node_index: usize, mut f: impl FnMut(usize, Element<'_>)) {
    let node: &Node = &model.nodes[node_index];
    let input = node.inputs[0];
    let in_shape = model.tensor_shape(input);
    let in_zp = i64::from(model.tensor_q(input).zero_point);
    let zp = node.q.zero_point;
    let clamp_lo = |relu: bool| if relu { zp } else { i8::MIN };
    // x - zp_in = u - (zp_in + 128)
    let offset = in_zp + 128;
    let mut terms: Vec<Term> = Vec::new();
    match &node.op {
        Op::Dense { weights, bias, requant, relu } => {
            let [rows, fan_in, out] = dense_dims(in_shape, &node.shape).expect("validated");
            for r in 0..rows {
                for (o, row) in weights.chunks(fan_in).enumerate() {
                    terms.clear();
                    let mut constant = i64::from(bias[o]);
                    for (i, &w) in row.iter().enumerate() {
                        if w != 0 {
                            terms.push(Term { weight: w.into(), tensor: input, index: r * fan_in + i });
                            constant -= i64::from(w) * offset;
                        }
                    }
                    f(
                        r * out + o,
                        Element::Affine {
                            constant,
                            terms: &terms,
                            requant: requant[o],
                            zero_point: zp,
                            lo: clamp_lo(*relu),
                        },
                    );
                }
            }
        }
        Op::Conv { c_out, groups, kernel, stride, pads, weights, bias, requant, relu } => {
            let [c_all, h, w] = chw(in_shape).expect("validated");
            let c_in = c_all / groups;
            let [_, oh, ow] = [*c_out, node.shape[1], node.shape[2]];
            let k = c_in * kernel[0] * kernel[1];
            for co in 0..*c_out {
                let kw = &weights[co * k..(co + 1) * k];
                // The first input channel of this output's group.
                let first = co / (c_out / groups) * c_in;
                for oy in 0..oh {
                    for ox in 0..ow {
                        terms.clear();
                        let mut constant = i64::from(bias[co]);
                        for ci in 0..c_in {
                            for ky in 0..kernel[0] {
                                for kx in 0..kernel[1] {
                                    let wv = kw[(ci * kernel[0] + ky) * kernel[1] + kx];
                                    let (iy, ix) = (oy * stride[0] + ky, ox * stride[1] + kx);
                                    // Padding is real zero, i.e. contributes nothing.
                                    if wv == 0 || iy < pads[0] || ix < pads[1] || iy - pads[0] >= h || ix - pads[1] >= w
                                    {
                                        continue;
                                    }
                                    let index = ((first + ci) * h + iy - pads[0]) * w + ix - pads[1];
                                    terms.push(Term { weight: wv.into(), tensor: input, index });
                                    constant -= i64::from(wv) * offset;
                                }
                            }
                        }
                        let out = (co * oh + oy) * ow + ox;
                        f(
                            out,
                            Element::Affine {
                                constant,
                                terms: &terms,
                                requant: requant[co],
                                zero_point: zp,
                                lo: clamp_lo(*relu),
                            },
                        );
                    }
                }
            }
        }
        Op::MaxPool { kernel, stride, pads } | Op::AvgPool { kernel, stride, pads, .. } => {
            let [c, h, w] = chw(in_shape).expect("validated");
            let [_, oh, ow] = [c, node.shape[1], node.shape[2]];
            let mut indices = Vec::with_capacity(kernel[0] * kernel[1]);
            for ch in 0..c {
                for oy in 0..oh {
                    for ox in 0..ow {
                        window_indices(ch, [h, w], *kernel, *stride, *pads, [oy, ox], &mut indices);
                        let out = (ch * oh + oy) * ow + ox;
                        match &node.op {
                            Op::MaxPool { .. } => f(out, Element::Max { tensor: input, indices: &indices }),
                            Op::AvgPool { requant, relu, .. } => {
                                terms.clear();
                                terms.extend(indices.iter().map(|&index| Term { weight: 1, tensor: input, index }));
                                let constant = -(indices.len() as i64) * offset;
                                f(
                                    out,
                                    Element::Affine {
                                        constant,
                                        terms: &terms,
                                        requant: requant[indices.len() - 1],
                                        zero_point: zp,
                                        lo: clamp_lo(*relu),
                                    },
                                );
                            }
                            _ => unreachable!(),
                        }
                    }
                }
            }
        }
        Op::Add { ka, kb, requant, relu } => {
            let b = node.inputs[1];
            let b_offset = i64::from(model.tensor_q(b).zero_point) + 128;
            let constant = -i64::from(*ka) * offset - i64::from(*kb) * b_offset;
            for i in 0..numel(&node.shape) {
                let pair = [
                    Term { weight: (*ka).into(), tensor: input, index: i },
                    Term { weight: (*kb).into(), tensor: b, index: i },
                ];
                f(
                    i,
                    Element::Affine { constant, terms: &pair, requant: *requant, zero_point: zp, lo: clamp_lo(*relu) },
                );
            }
        }
        Op::Div { requant } => {
            let b = node.inputs[1];
            let offsets = [offset, i64::from(model.tensor_q(b).zero_point) + 128];
            for index in 0..numel(&node.shape) {
                f(index, Element::Quotient { a: input, b, index, offsets, requant: *requant, zero_point: zp });
            }
        }
        Op::AddConst { ka, constants, requant } => {
            for (i, &c) in constants.iter().enumerate() {
                let t = [Term { weight: (*ka).into(), tensor: input, index: i }];
                let constant = i64::from(c) - i64::from(*ka) * offset;
                f(i, Element::Affine { constant, terms: &t, requant: *requant, zero_point: zp, lo: i8::MIN });
            }
        }
        Op::Relu => {
            // max(x, zp) == clamp(zp + (x - zp), zp, 127)
            let unit = Requant { multiplier: 1, shift: 0 };
            for i in 0..numel(&node.shape) {
                let t = [Term { weight: 1, tensor: input, index: i }];
                f(i, Element::Affine { constant: -offset, terms: &t, requant: unit, zero_point: zp, lo: zp });
            }
        }
        Op::Reshape => {
            for i in 0..numel(&node.shape) {
                f(i, Element::Copy { tensor: input, index: i });
            }
        }
        Op::MatMul { requant } => {
            let b = node.inputs[1];
            let [batch, m, k, n] = matmul_dims(in_shape, model.tensor_shape(b)).expect("validated");
            let offsets = [offset, i64::from(model.tensor_q(b).zero_point) + 128];
            let mut pairs = Vec::with_capacity(k);
            for g in 0..batch {
                for row in 0..m {
                    for col in 0..n {
                        pairs.clear();
                        pairs.extend((0..k).map(|j| ((g * m + row) * k + j, (g * k + j) * n + col)));
                        let element =
                            Element::Product { a: input, b, offsets, pairs: &pairs, requant: *requant, zero_point: zp };
                        f((g * m + row) * n + col, element);
                    }
                }
            }
        }
        Op::ScoresSoftmax { requant, score_zero_point, exp_high, exp_low, keep } => {
            let b = node.inputs[1];
            let [batch, m, k, n] = matmul_dims(in_shape, model.tensor_shape(b)).expect("validated");
            let offsets = [offset, i64::from(model.tensor_q(b).zero_point) + 128];
            let pattern = if keep.is_empty() { n } else { keep.len() };
            let mut pairs = Vec::with_capacity(n * k);
            for g in 0..batch {
                for row in 0..m {
                    let row_start = (g * m + row) * n;
                    let mask_row: &[bool] = keep.get(row_start % pattern..row_start % pattern + n).unwrap_or(&[]);
                    let keeps = |j: usize| mask_row.is_empty() || mask_row[j];
                    pairs.clear();
                    for col in (0..n).filter(|&j| keeps(j)) {
                        pairs.extend((0..k).map(|j| ((g * m + row) * k + j, (g * k + j) * n + col)));
                    }
                    let mut position = 0;
                    for col in 0..n {
                        let at = keeps(col).then(|| {
                            position += 1;
                            position - 1
                        });
                        let element = Element::ScoresSoftmax {
                            a: input,
                            b,
                            offsets,
                            pairs: &pairs,
                            k,
                            at,
                            requant: *requant,
                            zero_point: *score_zero_point,
                            exp_high,
                            exp_low,
                            row: row_start,
                        };
                        f(row_start + col, element);
                    }
                }
            }
        }
        Op::Embedding { table, dim } => {
            for index in 0..numel(in_shape) {
                for channel in 0..*dim {
                    f(index * dim + channel, Element::Embedding { tensor: input, index, channel, dim: *dim, table });
                }
            }
        }
        Op::LayerNorm { gamma, beta, eps, requant } => {
            let n = gamma.len();
            let mut row = Vec::with_capacity(n);
            for start in (0..numel(&node.shape)).step_by(n) {
                row.clear();
                row.extend(start..start + n);
                for at in 0..n {
                    let element = Element::LayerNorm {
                        tensor: input,
                        row: &row,
                        at,
                        offset,
                        gamma: gamma[at].into(),
                        beta: beta[at],
                        eps: *eps,
                        requant: *requant,
                        zero_point: zp,
                    };
                    f(start + at, element);
                }
            }
        }
        Op::Softmax { exp, keep } => {
            let n = *node.shape.last().expect("validated");
            let pattern = if keep.is_empty() { n } else { keep.len() };
            let mut kept = Vec::with_capacity(n);
            for row_start in (0..numel(&node.shape)).step_by(n) {
                let mask_row: &[bool] = keep.get(row_start % pattern..row_start % pattern + n).unwrap_or(&[]);
                let keeps = |j: usize| mask_row.is_empty() || mask_row[j];
                kept.clear();
                kept.extend((0..n).filter(|&j| keeps(j)).map(|j| row_start + j));
                let mut position = 0;
                for j in 0..n {
                    let at = keeps(j).then(|| {
                        position += 1;
                        position - 1
                    });
                    f(row_start + j, Element::Softmax { tensor: input, kept: &kept, at, exp });
                }
            }
        }
        Op::Gather { source } => {
            for (i, &index) in source.iter().enumerate() {
                f(i, Element::Copy { tensor: input, index: index as usize });
            }
        }
        Op::Concat { source, constants } => {
            // The pool: each input's elements in turn, then the constants.
            let mut starts = Vec::with_capacity(node.inputs.len());
            let mut end = 0;
            for &t in &node.inputs {
                starts.push(end);
                end += numel(model.tensor_shape(t));
            }
            for (i, &s) in source.iter().enumerate() {
                let s = s as usize;
                let element = if s < end {
                    // The last input starting at or before `s` (every input holds values).
                    let j = starts.partition_point(|&start| start <= s) - 1;
                    Element::Copy { tensor: node.inputs[j], index: s - starts[j] }
                } else {
                    Element::Constant { u: (constants[s - end] as u8) ^ 0x80 }
                };
                f(i, element);
            }
        }
        Op::Table { table } => {
            let table = offset_table(table);
            for i in 0..numel(&node.shape) {
                f(i, Element::Table { tensor: input, index: i, table: &table });
            }
        }
    }
}

/// A table of int8 outputs indexed by `x + 128`, as offset-form outputs.
fn offset_table(table: &[i8]) -> [u8; 256] {
    std::array::from_fn(|u| (table[u] as u8) ^ 0x80)
}

/// Fills `out` with the flat indices into a `[C, H, W]` tensor of the in-bounds cells of the
/// pooling window at output position `[oy, ox]` of channel `ch`; padded cells are skipped.
pub fn window_indices(
    ch: usize,
    [h, w]: [usize; 2],
    kernel: [usize; 2],
    stride: [usize; 2],
    pads: [usize; 4],
    [oy, ox]: [usize; 2],
    out: &mut Vec<usize>,
) {
    out.clear();
    for ky in 0..kernel[0] {
        for kx in 0..kernel[1] {
            let (iy, ix) = (oy * stride[0] + ky, ox * stride[1] + kx);
            if iy >= pads[0] && ix >= pads[1] && iy - pads[0] < h && ix - pads[1] < w {
                out.push((ch * h + iy - pads[0]) * w + ix - pads[1]);
            }
        }
    }
}

/// Static bounds of one affine element, in bits, as the circuit lays them out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AffineLayout {
    /// Bytes of the remainder `r ∈ [0, 2^s)`.
    pub remainder_bytes: usize,
    /// Bytes of the clamp excess `|d| < 2^(8·excess_bytes)`.
    pub excess_bytes: usize,
}

/// 2^62: every integer the circuit equates stays below this in absolute value, far from the
/// Goldilocks modulus p ≈ 2^64, so field equalities are integer equalities.
const LIMIT: u128 = 1 << 62;

/// Checks that one affine element cannot wrap around the field and returns its layout.
pub fn affine_layout(constant: i64, terms: &[Term], requant: Requant) -> Result<AffineLayout, String> {
    affine_layout_of(constant, terms, requant, Width::Int8)
}

/// [`affine_layout`] of an element requantized to `width`.
fn affine_layout_of(constant: i64, terms: &[Term], requant: Requant, width: Width) -> Result<AffineLayout, String> {
    let acc_max: u128 =
        constant.unsigned_abs() as u128 + terms.iter().map(|t| t.weight.unsigned_abs() as u128 * 255).sum::<u128>();
    let s = u32::from(requant.shift);
    // w = acc·M + 2^(s-1) + (zp - lo)·2^s, with 0 <= zp - lo < span.
    let span = width.span();
    let w_max = acc_max * u128::from(requant.multiplier) + (span << s);
    if w_max >= LIMIT {
        return Err(format!(
            "accumulator bound {acc_max} times multiplier {} exceeds 2^62; lower the multiplier precision",
            requant.multiplier
        ));
    }
    let z_max = (w_max >> s) + 2;
    let bits = 128 - z_max.leading_zeros();
    let excess_bytes = bits.div_ceil(8).max(1) as usize;
    if ((1u128 << (8 * excess_bytes)) + span + 1) << s >= LIMIT {
        return Err(format!("clamp excess of {bits} bits with shift {s} exceeds 2^62"));
    }
    Ok(AffineLayout { remainder_bytes: (s / 8) as usize, excess_bytes })
}

/// The layout of a product element of `k` pairs requantized to `width`: each centered factor
/// is in `[−255, 255]`.
pub fn product_layout(k: usize, requant: Requant, width: Width) -> Result<AffineLayout, String> {
    let bound = i64::try_from(k as u128 * 255 * 255).map_err(|_| "too many products".to_string())?;
    affine_layout_of(bound, &[], requant, width)
}

/// How many bits a requantized value keeps: every tensor is int8; the scores inside an
/// [`Op::ScoresSoftmax`] are int16.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Width {
    /// Every tensor.
    Int8,
    /// The attention scores inside an [`Op::ScoresSoftmax`].
    Int16,
}

impl Width {
    /// Number of values: `2^bits`.
    pub fn span(self) -> u128 {
        match self {
            Self::Int8 => 1 << 8,
            Self::Int16 => 1 << 16,
        }
    }

    /// Bits of a value.
    pub fn bits(self) -> usize {
        match self {
            Self::Int8 => 8,
            Self::Int16 => 16,
        }
    }

    /// Largest value: 127 or 32767.
    pub fn top(self) -> i64 {
        (self.span() / 2) as i64 - 1
    }
}

/// The layout of a LayerNorm element: `|D_i · R| ≤ 2^31` (`D_i² ≤ V`, so `|D_i| ≤ isqrt(V) = s`,
/// and `s·R ≤ 2^31`), so the accumulator
/// `D_i·R·gamma + beta` is bounded by `2^31·|gamma| + |beta|`.
pub fn layer_norm_layout(gamma: i64, beta: i64, requant: Requant) -> Result<AffineLayout, String> {
    let bound =
        (1u128 << crate::model::INV_SQRT_BITS) * u128::from(gamma.unsigned_abs()) + u128::from(beta.unsigned_abs());
    let bound = i64::try_from(bound).map_err(|_| "LayerNorm gamma or beta too large".to_string())?;
    affine_layout(bound, &[], requant)
}

/// The layout of a quotient element: `|Q| ≤ 255 · 2^16` ([`Op::Div`]).
pub fn quotient_layout(requant: Requant) -> Result<AffineLayout, String> {
    affine_layout(QUOTIENT_BOUND, &[], requant)
}

/// The largest `|Q|` of an [`Op::Div`]: a centered dividend of at most 255 over a divisor of 1.
pub const QUOTIENT_BOUND: i64 = 255 << crate::model::QUOTIENT_BITS;

/// Checks LayerNorm parameters against the circuit's no-wrap bounds (for the compiler's choice
/// of fixed-point precision).
pub fn check_layer_norm(gamma: &[i32], beta: &[i64], requant: Requant) -> Result<(), String> {
    let g = gamma.iter().map(|&g| i64::from(g).abs()).max().unwrap_or(0);
    let b = beta.iter().map(|&b| b.checked_abs().unwrap_or(i64::MAX)).max().unwrap_or(0);
    layer_norm_layout(g, b, requant).map(|_| ())
}

/// Rejects a model any of whose affine or product elements could wrap around the field.
pub(crate) fn check_bounds(model: &QuantModel) -> crate::error::Result<()> {
    for (i, node) in model.nodes.iter().enumerate() {
        let mut failure = None;
        for_each_element(model, i, |_, e| {
            if failure.is_some() {
                return;
            }
            match e {
                Element::Affine { constant, terms, requant, .. } => {
                    failure = affine_layout(constant, terms, requant).err()
                }
                Element::Product { pairs, requant, .. } => {
                    failure = product_layout(pairs.len(), requant, Width::Int8).err()
                }
                Element::ScoresSoftmax { k, requant, .. } => failure = product_layout(k, requant, Width::Int16).err(),
                Element::LayerNorm { gamma, beta, requant, .. } => {
                    failure = layer_norm_layout(gamma, beta, requant).err()
                }
                Element::Quotient { requant, .. } => failure = quotient_layout(requant).err(),
                _ => {}
            }
        });
        if let Some(why) = failure {
            return Err(crate::error::Error::InvalidModel(format!("node '{}' ({}): {why}", node.name, node.op.kind())));
        }
    }
    Ok(())
}

/// Multipliers at least this large are precise to 2^-16 relative, far below an int8 output step.
const PRECISE_MULTIPLIER: f64 = (1u64 << 15) as f64;

/// Chooses the fixed-point form of a real multiplier for an element whose accumulator is
/// bounded by `acc_bound` in absolute value: the smallest shift (a multiple of 8) that makes
/// `2^15 ≤ M < 2^31` and keeps the element inside the no-wrap bound, since every byte of shift is
/// a remainder byte the circuit range checks per output; failing that, the largest shift with
/// `1 ≤ M < 2^31`.
pub fn requant_for(multiplier: f64, acc_bound: u128) -> Result<Requant, String> {
    requant_for_width(multiplier, acc_bound, Width::Int8)
}

/// [`requant_for`] of a product sum requantized to 16 bits ([`Op::ScoresSoftmax`]'s scores).
pub fn requant_for_scores(multiplier: f64, acc_bound: u128) -> Result<Requant, String> {
    requant_for_width(multiplier, acc_bound, Width::Int16)
}

fn requant_for_width(multiplier: f64, acc_bound: u128, width: Width) -> Result<Requant, String> {
    if !(multiplier.is_finite() && multiplier > 0.0) {
        return Err(format!("invalid real multiplier {multiplier}"));
    }
    let precise = (0..=56u8).step_by(8).map(|s| (s, PRECISE_MULTIPLIER));
    let coarse = (0..=56u8).rev().step_by(8).map(|s| (s, 1.0));
    for (shift, min) in precise.chain(coarse) {
        let m = (multiplier * 2f64.powi(i32::from(shift))).round();
        if !(min..(1u64 << 31) as f64).contains(&m) {
            continue;
        }
        let requant = Requant { multiplier: m as u32, shift };
        let probe = [Term { weight: 1, tensor: 0, index: 0 }];
        // A single term of weight 1 spans 255; fold the rest of the bound into the constant.
        let constant =
            i64::try_from(acc_bound.saturating_sub(255)).map_err(|_| "accumulator bound too large".to_string())?;
        if affine_layout_of(constant, &probe, requant, width).is_ok() {
            return Ok(requant);
        }
    }
    Err(format!("no fixed-point form of multiplier {multiplier} fits accumulator bound {acc_bound}"))
}
