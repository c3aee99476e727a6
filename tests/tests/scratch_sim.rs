use std::path::Path;
use tgrid_onnx::{argmax, import_onnx, FloatOp, InputData};
#[derive(serde::Deserialize)]
struct TextTestSet {
    inputs: Vec<Vec<f32>>,
    float_outputs: Vec<Vec<f32>>,
}

fn grid(lo: f32, hi: f32, levels: f32) -> (f32, f32, f32) {
    let (lo, hi) = (lo.min(0.0), hi.max(0.0));
    let s = ((hi - lo) / levels).max(1e-12);
    let half = (levels + 1.0) / 2.0;
    let zp = (-half - lo / s).round().clamp(-half, half - 1.0);
    (s, zp, half)
}
fn round_to(v: f32, (s, zp, half): (f32, f32, f32)) -> f32 {
    s * ((v / s).round() + zp).clamp(-half, half - 1.0) - s * zp
}

#[test]
fn sim() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/gpt");
    let (graph, _) = import_onnx(&dir.join("model.onnx")).unwrap();
    let cal = InputData::from_path(&dir.join("calibration.json")).unwrap();
    let set: TextTestSet = serde_json::from_str(&std::fs::read_to_string(dir.join("test_set.json")).unwrap()).unwrap();
    let n = graph.nodes.len() + 1;
    let mut lo = vec![f32::INFINITY; n];
    let mut hi = vec![f32::NEG_INFINITY; n];
    for s in &cal.input_data {
        for (t, v) in graph.run(s).iter().enumerate() {
            let mask = graph.nodes.iter().find(|m| m.inputs.contains(&t)).and_then(|m| match &m.op {
                FloatOp::Softmax { keep } if !keep.is_empty() => Some(keep.clone()),
                _ => None,
            });
            for (e, &x) in v.iter().enumerate() {
                if let Some(k) = &mask {
                    if !k[e % k.len()] {
                        continue;
                    }
                }
                lo[t] = lo[t].min(x);
                hi[t] = hi[t].max(x);
            }
        }
    }
    // copies take their input's range
    for t in 1..n {
        if matches!(graph.nodes[t - 1].op, FloatOp::Gather { .. } | FloatOp::Reshape) {
            let i = graph.nodes[t - 1].inputs[0];
            lo[t] = lo[i];
            hi[t] = hi[i];
        }
    }
    let is_softmax: Vec<bool> =
        (0..n).map(|t| t > 0 && matches!(graph.nodes[t - 1].op, FloatOp::Softmax { .. })).collect();
    let sets: Vec<(&str, Vec<usize>)> = vec![
        ("none", vec![]),
        ("scores", vec![8, 24]),
        ("residual", vec![2, 13, 18, 29, 30, 35]),
        ("scores+residual", vec![8, 24, 2, 13, 18, 29, 30, 35]),
        ("scores+residual+logits", vec![8, 24, 2, 13, 18, 29, 30, 35, 37]),
        ("scores+residual+ln", vec![8, 24, 2, 13, 18, 29, 30, 35, 3, 14, 19, 31, 36]),
        (
            "scores+residual+ln+dense(no fc1)+attn",
            vec![
                8, 24, 2, 13, 18, 29, 30, 35, 3, 14, 19, 31, 36, 4, 5, 6, 7, 20, 21, 22, 23, 10, 11, 26, 27, 12, 28,
                17, 34, 37,
            ],
        ),
    ];
    for (name, wide) in &sets {
        let mut results = vec![];
        for seed in 0..8u64 {
            let f = |t: usize| -> f32 {
                let mut x =
                    (t as u64 + 1).wrapping_mul(0x9E3779B97F4A7C15) ^ (seed + 1).wrapping_mul(0xBF58476D1CE4E5B9);
                x ^= x >> 31;
                x = x.wrapping_mul(0x94D049BB133111EB);
                x ^= x >> 29;
                if seed == 0 {
                    1.0
                } else {
                    0.98 + 0.04 * ((x % 10000) as f32 / 10000.0)
                }
            };
            let mut agree = 0;
            for (x, fo) in set.inputs.iter().zip(&set.float_outputs) {
                let out = graph.run_with(x, |i, v| {
                    let t = i + 1;
                    if is_softmax[t] {
                        for y in v.iter_mut() {
                            *y = (*y * 255.0).round() / 255.0;
                        }
                        return;
                    }
                    let levels = if wide.contains(&t) { 65535.0 } else { 255.0 };
                    let g = grid(lo[t] * f(t), hi[t] * f(t), levels);
                    for y in v.iter_mut() {
                        *y = round_to(*y, g);
                    }
                });
                agree += usize::from(argmax(out.last().unwrap()) == argmax(fo));
            }
            results.push(agree as f64 / 4.0);
        }
        let mean = results.iter().sum::<f64>() / results.len() as f64;
        let min = results.iter().cloned().fold(100.0, f64::min);
        eprintln!("{name}: {results:?} mean {mean:.2} min {min:.2}");
    }
}
