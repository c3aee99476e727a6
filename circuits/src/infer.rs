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
    let s = u32::from(requant.shift);
    let v = i128::from(acc) * i128::from(requant.multiplier) + if s == 0 { 0 } else { 1i128 << (s - 1) };
    let z = v >> s; // arithmetic shift = floor division by 2^s
    (i128::from(zero_point) + z).clamp(i128::from(lo), 127) as i8
}

/// Runs the model on an int8 input.
pub fn run(model: &QuantModel, input: &[i8]) -> Result<Trace> {
    if input.len() != model.input_len() {
        return Err(Error::InvalidInput(format!("the model takes {} values, got {}", model.input_len(), input.len())));
    }
    // Offset representation u = x + 128, as the lowering expects.
    let mut u: Vec<Vec<u8>> = vec![input.iter().map(|&x| (x as u8) ^ 0x80).collect()];
    for i in 0..model.nodes.len() {
        let mut out = vec![0u8; crate::model::numel(&model.nodes[i].shape)];
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
                Element::Table { tensor, index, table } => table[usize::from(u[tensor][index])],
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
