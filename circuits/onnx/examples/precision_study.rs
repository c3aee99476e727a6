//! Which activations need more than 8 bits? Simulates round-to-grid activations on the float
//! graph (weights stay float) with some tensor groups at 16 bits, and reports the argmax
//! agreement with the unrounded graph on held-out inputs, over several draws of the rounding
//! noise: draw 0 takes the calibrated ranges as they are, each other draw scales every tensor's
//! range by its own factor in [0.98, 1.02] (docs/quantization.md, "The figure is chaotic").
//!
//!     cargo run --release -p tgrid-onnx --example precision_study -- fixtures/gpt
//!
//! The directory holds `model.onnx`, `calibration.json` and `test_set.json` (its `inputs`).

use std::path::PathBuf;

use rayon::prelude::*;
use tgrid_onnx::{argmax, import_onnx, FloatGraph, FloatOp, InputData};

const DRAWS: u64 = 8;

/// Grid of `levels + 1` points over `[lo, hi]` widened to hold 0, zero on a grid point.
#[derive(Clone, Copy)]
struct Grid {
    step: f32,
    zero: f32,
    half: f32,
}

impl Grid {
    fn new(lo: f32, hi: f32, bits: u32) -> Self {
        let (lo, hi) = (lo.min(0.0), hi.max(0.0));
        let levels = (2f32).powi(bits as i32) - 1.0;
        let half = (levels + 1.0) / 2.0;
        let step = ((hi - lo) / levels).max(1e-12);
        Self { step, zero: (-half - lo / step).round().clamp(-half, half - 1.0), half }
    }

    fn round(&self, v: f32) -> f32 {
        self.step * (((v / self.step).round() + self.zero).clamp(-self.half, self.half - 1.0) - self.zero)
    }
}

/// A factor in [0.98, 1.02] for tensor `t` in draw `draw` (1.0 in draw 0).
fn factor(t: usize, draw: u64) -> f32 {
    if draw == 0 {
        return 1.0;
    }
    let mut x = (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ draw.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 31;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 29;
    0.98 + 0.04 * (x % 10_000) as f32 / 10_000.0
}

/// The mask of the Softmax that alone reads tensor `t` (attention scores; empty: nothing masked).
fn softmax_reading(graph: &FloatGraph, t: usize) -> Option<&[bool]> {
    let mut readers = graph.nodes.iter().filter(|n| n.inputs.contains(&t));
    match (readers.next().map(|n| &n.op), readers.next()) {
        (Some(FloatOp::Softmax { keep }), None) => Some(keep),
        _ => None,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(std::env::args().nth(1).ok_or("usage: precision_study <fixture directory>")?);
    let (graph, _) = import_onnx(&dir.join("model.onnx"))?;
    let calibration = InputData::from_path(&dir.join("calibration.json"))?.input_data;
    #[derive(serde::Deserialize)]
    struct TestSet {
        inputs: Vec<Vec<f32>>,
    }
    let inputs = serde_json::from_str::<TestSet>(&std::fs::read_to_string(dir.join("test_set.json"))?)?.inputs;
    let n = graph.nodes.len() + 1;
    let op = |t: usize| (t > 0).then(|| &graph.nodes[t - 1].op);

    let (mut lo, mut hi) = (vec![f32::INFINITY; n], vec![f32::NEG_INFINITY; n]);
    for sample in &calibration {
        for (t, values) in graph.run(sample).iter().enumerate() {
            // Masked cells never reach the output: they are not calibrated (as in quantize_model).
            let mask = softmax_reading(&graph, t).filter(|keep| !keep.is_empty());
            for (e, &v) in values.iter().enumerate() {
                if mask.is_none_or(|keep| keep[e % keep.len()]) {
                    (lo[t], hi[t]) = (lo[t].min(v), hi[t].max(v));
                }
            }
        }
    }
    // Copies keep their input's grid.
    let copy = |t: usize| matches!(op(t), Some(FloatOp::Reshape | FloatOp::Gather { .. }));
    for t in 1..n {
        if copy(t) {
            let source = graph.nodes[t - 1].inputs[0];
            (lo[t], hi[t]) = (lo[source], hi[source]);
        }
    }
    let source_of = |mut t: usize| {
        while copy(t) {
            t = graph.nodes[t - 1].inputs[0];
        }
        t
    };
    let scores: Vec<usize> = (0..n).filter(|&t| softmax_reading(&graph, t).is_some()).collect();
    let residual: Vec<usize> =
        (1..n).filter(|&t| matches!(op(source_of(t)), Some(FloatOp::Add { .. } | FloatOp::AddConst { .. }))).collect();
    let normalized: Vec<usize> =
        (1..n).filter(|&t| matches!(op(source_of(t)), Some(FloatOp::LayerNorm { .. }))).collect();
    let feeds_table =
        |t: usize| graph.nodes.iter().any(|m| m.inputs.contains(&t) && matches!(m.op, FloatOp::Elementwise { .. }));
    let products: Vec<usize> = (1..n)
        .filter(|&t| {
            matches!(op(source_of(t)), Some(FloatOp::Dense { .. } | FloatOp::MatMul { .. })) && !feeds_table(t)
        })
        .collect();
    let union = |sets: &[&[usize]]| sets.concat();
    let groups: Vec<(&str, Vec<usize>)> = vec![
        ("8 bits everywhere", vec![]),
        ("attention scores", scores.clone()),
        ("residual stream", residual.clone()),
        ("scores + residual", union(&[&scores, &residual])),
        ("scores + residual + LayerNorm outputs", union(&[&scores, &residual, &normalized])),
        ("all but table inputs and Softmax outputs", union(&[&scores, &residual, &normalized, &products])),
    ];

    let reference: Vec<usize> = inputs.par_iter().map(|x| argmax(graph.run(x).last().expect("an output"))).collect();
    for (name, wide) in &groups {
        let draws: Vec<f64> = (0..DRAWS)
            .map(|draw| {
                let grids: Vec<Grid> = (0..n)
                    .map(|t| {
                        Grid::new(
                            lo[t] * factor(t, draw),
                            hi[t] * factor(t, draw),
                            if wide.contains(&t) { 16 } else { 8 },
                        )
                    })
                    .collect();
                let agree = inputs
                    .par_iter()
                    .zip(&reference)
                    .filter(|(x, &expected)| {
                        let out = graph.run_with(x, |i, values| {
                            let t = i + 1;
                            if matches!(op(t), Some(FloatOp::Softmax { .. })) {
                                // Probabilities: the fixed int8 grid of step 1/255.
                                values.iter_mut().for_each(|v| *v = (*v * 255.0).round() / 255.0);
                            } else if !copy(t) {
                                values.iter_mut().for_each(|v| *v = grids[t].round(*v));
                            }
                        });
                        argmax(out.last().expect("an output")) == expected
                    })
                    .count();
                100.0 * agree as f64 / inputs.len() as f64
            })
            .collect();
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        let min = draws.iter().copied().fold(f64::INFINITY, f64::min);
        let draws: Vec<String> = draws.iter().map(|d| format!("{d:.2}")).collect();
        println!(
            "{name:45} tensors {:2}  agreement mean {mean:.2} %  min {min:.2} %  draws {}",
            wide.len(),
            draws.join(" ")
        );
    }
    Ok(())
}
