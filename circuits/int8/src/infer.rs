//! Exact integer inference (docs/quantization.md): the reference the circuit is tested against.

use crate::error::{Error, Result};
use crate::lower::{for_each_element, Element};
use crate::model::{QParams, QuantModel, Requant};

/// All int8 tensors of one inference: `tensors[0]` is the input, `tensors[i + 1]` node `i`'s output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// The tensors, flattened row-major.
    pub tensors: Vec<Vec<i8>>,
}

impl Trace {
    /// The model output.
    pub fn output(&self) -> &[i8] {
        self.tensors.last().expect("a trace holds the input and at least one layer")
    }
}

/// `clamp(zp + floor((acc·M + 2^(s-1)) / 2^s), lo, 127)`, exactly.
pub fn requantize(acc: i64, requant: Requant, zero_point: i8, lo: i8) -> i8 {
    requantize_to(acc, requant, zero_point.into(), lo.into(), 127) as i8
}

/// `clamp(zp + floor((acc·M + 2^(s-1)) / 2^s), −32768, 32767)`, exactly: a 16-bit score of an
/// [`crate::Op::ScoresSoftmax`].
pub fn requantize_score(acc: i64, requant: Requant, zero_point: i16) -> i16 {
    requantize_to(acc, requant, zero_point.into(), i16::MIN.into(), i16::MAX.into()) as i16
}

fn requantize_to(acc: i64, requant: Requant, zero_point: i128, lo: i128, top: i128) -> i128 {
    let s = u32::from(requant.shift);
    let v = i128::from(acc) * i128::from(requant.multiplier) + if s == 0 { 0 } else { 1i128 << (s - 1) };
    let z = v >> s; // arithmetic shift = floor division by 2^s
    (zero_point + z).clamp(lo, top)
}

/// The exponential of a 16-bit score distance `d = 256·h + l` of an [`crate::Op::ScoresSoftmax`]:
/// `floor((exp_high[h] · exp_low[l] + 2^15) / 2^16)`.
pub fn score_exp(exp_high: &[u16], exp_low: &[u16], d: u16) -> u16 {
    let product = u64::from(exp_high[usize::from(d >> 8)]) * u64::from(exp_low[usize::from(d & 0xff)]);
    ((product + (1 << 15)) >> 16) as u16
}

/// The outputs (offset form) of a softmax row's kept cells `u` (offset form, 8 or 16 bits):
/// `q_j = floor((510·e_j + S) / 2S)` with `e_j = exp(max − u_j)`, `S = Σ e_j`.
pub fn softmax_row(u: &[u16], exp: impl Fn(u16) -> u16) -> Vec<u8> {
    let m = *u.iter().max().expect("a row keeps a cell");
    let e: Vec<u64> = u.iter().map(|&x| u64::from(exp(m - x))).collect();
    let s: u64 = e.iter().sum::<u64>().max(1);
    e.iter().map(|&e| ((510 * e + s) / (2 * s)) as u8).collect()
}

/// The quotient of an [`crate::Op::Div`] for centered int8 values `a` and `b`:
/// `floor(2^16 · a · sgn(b) / |b|)`, a zero `b` counting as 1.
pub fn quotient(a: i64, b: i64) -> i64 {
    let (sign, divisor) = if b < 0 { (-1, -b) } else { (1, b.max(1)) };
    (sign * a * (1 << crate::model::QUOTIENT_BITS)).div_euclid(divisor)
}

/// `floor(√v)`, exactly.
pub fn isqrt(v: u64) -> u64 {
    let mut s = (v as f64).sqrt() as u64;
    while s * s > v {
        s -= 1;
    }
    while (s + 1) * (s + 1) <= v {
        s += 1;
    }
    s
}

/// `R = floor(2^31 / isqrt(v))` (`v ≥ 1`): the LayerNorm's inverse square root.
pub fn inv_sqrt(v: u64) -> u64 {
    (1u64 << crate::model::INV_SQRT_BITS) / isqrt(v).max(1)
}

/// `D_i · R` for every cell of a LayerNorm row of centered values `c`: `D_i = n·c_i − Σc`,
/// `R = inv_sqrt(Σ D_i² + eps)`.
pub fn layer_norm_row(c: &[i64], eps: u64) -> Vec<i64> {
    let n = c.len() as i64;
    let sum: i64 = c.iter().sum();
    let d: Vec<i64> = c.iter().map(|&x| n * x - sum).collect();
    let v = d.iter().map(|&x| (x * x) as u64).sum::<u64>() + eps;
    let r = inv_sqrt(v) as i64;
    d.iter().map(|&x| x * r).collect()
}

/// Runs the model on an int8 input.
pub fn run(model: &QuantModel, input: &[i8]) -> Result<Trace> {
    if input.len() != model.input_len() {
        return Err(Error::InvalidInput(format!("the model takes {} values, got {}", model.input_len(), input.len())));
    }
    // Offset representation u = x + 128, as the lowering expects.
    let mut u: Vec<Vec<u8>> = vec![input.iter().map(|&x| (x as u8) ^ 0x80).collect()];
    for i in 0..model.nodes.len() {
        if let crate::model::Op::Embedding { table, dim } = &model.nodes[i].op {
            let vocab = table.len() / dim;
            if let Some(&id) = u[model.nodes[i].inputs[0]].iter().find(|&&id| usize::from(id) >= vocab) {
                return Err(Error::InvalidInput(format!("token id {id} is outside the vocabulary of {vocab}")));
            }
        }
        let mut out = vec![0u8; crate::model::numel(&model.nodes[i].shape)];
        // The last softmax row computed, by its first kept cell; the last LayerNorm row.
        let mut row: Option<(usize, Vec<u8>)> = None;
        let mut norm: Option<(usize, Vec<i64>)> = None;
        for_each_element(model, i, |o, e| {
            out[o] = match e {
                Element::Affine { constant, terms, requant, zero_point, lo } => {
                    let acc = terms.iter().fold(constant, |a, t| a + t.weight * i64::from(u[t.tensor][t.index]));
                    (requantize(acc, requant, zero_point, lo) as u8) ^ 0x80
                }
                Element::Max { tensor, indices } => {
                    indices.iter().map(|&k| u[tensor][k]).max().expect("non-empty window")
                }
                Element::Copy { tensor, index } => u[tensor][index],
                Element::Constant { u } => u,
                Element::Table { tensor, index, table } => table[usize::from(u[tensor][index])],
                Element::Quotient { a, b, index, offsets, requant, zero_point } => {
                    let q = quotient(i64::from(u[a][index]) - offsets[0], i64::from(u[b][index]) - offsets[1]);
                    (requantize(q, requant, zero_point, i8::MIN) as u8) ^ 0x80
                }
                Element::Product { a, b, offsets, pairs, requant, zero_point } => {
                    let acc = pairs.iter().fold(0i64, |acc, &(i, j)| {
                        acc + (i64::from(u[a][i]) - offsets[0]) * (i64::from(u[b][j]) - offsets[1])
                    });
                    (requantize(acc, requant, zero_point, i8::MIN) as u8) ^ 0x80
                }
                Element::LayerNorm { tensor, row: cells, at, offset, gamma, beta, eps, requant, zero_point } => {
                    if norm.as_ref().map(|r| r.0) != Some(cells[0]) {
                        let c: Vec<i64> = cells.iter().map(|&k| i64::from(u[tensor][k]) - offset).collect();
                        norm = Some((cells[0], layer_norm_row(&c, eps)));
                    }
                    let acc = norm.as_ref().expect("just computed").1[at] * gamma + beta;
                    (requantize(acc, requant, zero_point, i8::MIN) as u8) ^ 0x80
                }
                Element::Embedding { tensor, index, channel, dim, table } => {
                    (table[usize::from(u[tensor][index]) * dim + channel] as u8) ^ 0x80
                }
                Element::Softmax { at: None, .. } => 0,
                Element::Softmax { tensor, kept, at: Some(p), exp } => {
                    if row.as_ref().map(|r| r.0) != Some(kept[0]) {
                        let cells: Vec<u16> = kept.iter().map(|&k| u16::from(u[tensor][k])).collect();
                        row = Some((kept[0], softmax_row(&cells, |d| exp[usize::from(d)])));
                    }
                    row.as_ref().expect("just computed").1[p]
                }
                Element::ScoresSoftmax { at: None, .. } => 0,
                Element::ScoresSoftmax {
                    a,
                    b,
                    offsets,
                    pairs,
                    k,
                    at: Some(p),
                    requant,
                    zero_point,
                    exp_high,
                    exp_low,
                    row: start,
                } => {
                    if row.as_ref().map(|r| r.0) != Some(start) {
                        let scores: Vec<u16> = pairs
                            .chunks(k)
                            .map(|cell| {
                                let acc = cell.iter().fold(0i64, |acc, &(i, j)| {
                                    acc + (i64::from(u[a][i]) - offsets[0]) * (i64::from(u[b][j]) - offsets[1])
                                });
                                (requantize_score(acc, requant, zero_point) as u16) ^ 0x8000
                            })
                            .collect();
                        row = Some((start, softmax_row(&scores, |d| score_exp(exp_high, exp_low, d))));
                    }
                    row.as_ref().expect("just computed").1[p]
                }
            }
        });
        u.push(out);
    }
    Ok(Trace { tensors: u.into_iter().map(|t| t.into_iter().map(|v| (v ^ 0x80) as i8).collect()).collect() })
}

/// Quantizes a float input: `clamp(round_half_away(x / scale) + zp, -128, 127)`. NaN and
/// infinite values are rejected.
pub fn quantize_input(model: &QuantModel, values: &[f32]) -> Result<Vec<i8>> {
    if values.len() != model.input_len() {
        return Err(Error::InvalidInput(format!("the model takes {} values, got {}", model.input_len(), values.len())));
    }
    quantize(values, model.input_q)
}

/// Quantizes floats with the given parameters (see [`quantize_input`]).
pub fn quantize(values: &[f32], q: QParams) -> Result<Vec<i8>> {
    values
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            if !x.is_finite() {
                return Err(Error::InvalidInput(format!("value {i} is {x}; inputs must be finite")));
            }
            let v = (f64::from(x) / f64::from(q.scale)).round() + f64::from(q.zero_point);
            Ok(v.clamp(-128.0, 127.0) as i8)
        })
        .collect()
}

/// Dequantizes an int8 tensor: `scale · (q - zp)`.
pub fn dequantize(values: &[i8], q: QParams) -> Vec<f32> {
    values.iter().map(|&v| q.scale * (f32::from(v) - f32::from(q.zero_point))).collect()
}
