//! Small deterministic models and inputs for tests of this and downstream crates (the
//! aggregation tests need task proofs of several models that prove in well under a second).

use crate::lower::{requant_for, requant_for_scores};
use crate::model::{Node, Op, QParams, QuantModel, Requant, INV_SQRT_BITS, SOFTMAX_Q};

/// SplitMix64: a tiny deterministic generator, enough for test weights.
#[derive(Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// `n` random int8 values drawn from `seed`.
pub fn random_input(seed: u64, n: usize) -> Vec<i8> {
    let mut rng = SplitMix64(seed);
    (0..n).map(|_| rng.next_u64() as u8 as i8).collect()
}

fn q(scale: f32, zero_point: i8) -> QParams {
    QParams { scale, zero_point }
}

fn weights(rng: &mut SplitMix64, n: usize) -> Vec<i8> {
    // Symmetric int8 weights: -127..=127.
    (0..n).map(|_| ((rng.next_u64() % 255) as i16 - 127) as i8).collect()
}

/// A small model using every op, with weights drawn from `seed`:
/// Conv+ReLU → MaxPool → AvgPool (padded) → Add (residual) → Relu → Reshape → Dense.
pub fn tiny_model(seed: u64) -> QuantModel {
    let mut rng = SplitMix64(seed);
    let rq = |m: f64, bound: u128| requant_for(m, bound).expect("multiplier fits");
    let conv_w = weights(&mut rng, 2 * 9);
    let dense_w = weights(&mut rng, 3 * 8);
    let nodes = vec![
        Node {
            name: "conv".into(),
            op: Op::Conv {
                c_out: 2,
                groups: 1,
                kernel: [3, 3],
                stride: [1, 1],
                pads: [1, 1, 1, 1],
                weights: conv_w,
                bias: vec![300, -200],
                requant: vec![rq(0.0031, 400_000), rq(0.0047, 400_000)],
                relu: true,
            },
            inputs: vec![0],
            shape: vec![2, 4, 4],
            q: q(0.05, -128),
        },
        Node {
            name: "maxpool".into(),
            op: Op::MaxPool { kernel: [2, 2], stride: [2, 2], pads: [0; 4] },
            inputs: vec![1],
            shape: vec![2, 2, 2],
            q: q(0.05, -128),
        },
        Node {
            name: "avgpool".into(),
            op: Op::AvgPool {
                kernel: [2, 2],
                stride: [1, 1],
                pads: [0, 0, 1, 1],
                requant: (1..=4).map(|c| rq(0.9 / c as f64, 4 * 510)).collect(),
                relu: false,
            },
            inputs: vec![2],
            shape: vec![2, 2, 2],
            q: q(0.06, -100),
        },
        Node {
            name: "add".into(),
            op: Op::Add { ka: 50_000, kb: 70_000, requant: Requant { multiplier: 1, shift: 16 }, relu: false },
            inputs: vec![2, 3],
            shape: vec![2, 2, 2],
            q: q(0.07, 10),
        },
        Node { name: "relu".into(), op: Op::Relu, inputs: vec![4], shape: vec![2, 2, 2], q: q(0.07, 10) },
        Node { name: "flatten".into(), op: Op::Reshape, inputs: vec![5], shape: vec![8], q: q(0.07, 10) },
        Node {
            name: "dense".into(),
            op: Op::Dense {
                weights: dense_w,
                bias: vec![1000, -5000, 77],
                requant: vec![rq(0.002, 600_000), rq(0.0013, 600_000), rq(0.0021, 600_000)],
                relu: false,
            },
            inputs: vec![6],
            shape: vec![3],
            q: q(0.1, 3),
        },
    ];
    let model = QuantModel {
        name: "tiny".into(),
        input_shape: vec![1, 4, 4],
        input_q: q(1.0 / 255.0, -128),
        nodes,
        ports: Default::default(),
    };
    model.validate().expect("tiny model is valid");
    model
}

/// A 3x3 convolution (1 → `c_out` channels, padding 1) over a `hw`x`hw` input followed by a
/// separate Relu: big enough that its convolution is laid out in weighted-sum rows.
pub fn conv_model(seed: u64, c_out: usize, hw: usize) -> QuantModel {
    let mut rng = SplitMix64(seed);
    let nodes = vec![
        Node {
            name: "conv".into(),
            op: Op::Conv {
                c_out,
                groups: 1,
                kernel: [3, 3],
                stride: [1, 1],
                pads: [1, 1, 1, 1],
                weights: weights(&mut rng, c_out * 9),
                bias: (0..c_out).map(|c| 100 * c as i32 - 400).collect(),
                requant: (0..c_out).map(|c| requant_for(0.002 + 0.0001 * c as f64, 400_000).expect("fits")).collect(),
                relu: false,
            },
            inputs: vec![0],
            shape: vec![c_out, hw, hw],
            q: q(0.05, -3),
        },
        Node { name: "relu".into(), op: Op::Relu, inputs: vec![1], shape: vec![c_out, hw, hw], q: q(0.05, -3) },
    ];
    let model = QuantModel {
        name: "conv".into(),
        input_shape: vec![1, hw, hw],
        input_q: q(1.0 / 255.0, -128),
        nodes,
        ports: Default::default(),
    };
    model.validate().expect("conv model is valid");
    model
}

/// A grouped 3×3 convolution (`channels` → `channels` in `groups` groups, padding 1) over a
/// `hw`×`hw` input, then a depthwise 1×1 one (one group per channel): MobileNet's layers.
pub fn grouped_conv_model(seed: u64, channels: usize, groups: usize, hw: usize) -> QuantModel {
    let mut rng = SplitMix64(seed);
    let conv = |rng: &mut SplitMix64, groups: usize, kernel: usize, pads: usize| Op::Conv {
        c_out: channels,
        groups,
        kernel: [kernel, kernel],
        stride: [1, 1],
        pads: [pads; 4],
        weights: weights(rng, channels * channels / groups * kernel * kernel),
        bias: (0..channels).map(|c| 50 * c as i32 - 200).collect(),
        requant: (0..channels).map(|c| requant_for(0.003 + 0.0002 * c as f64, 400_000).expect("fits")).collect(),
        relu: false,
    };
    let shape = vec![channels, hw, hw];
    let nodes = vec![
        Node {
            name: "grouped".into(),
            op: conv(&mut rng, groups, 3, 1),
            inputs: vec![0],
            shape: shape.clone(),
            q: q(0.05, -3),
        },
        Node {
            name: "depthwise".into(),
            op: conv(&mut rng, channels, 1, 0),
            inputs: vec![1],
            shape: shape.clone(),
            q: q(0.04, 2),
        },
    ];
    let model = QuantModel {
        name: "grouped".into(),
        input_shape: shape,
        input_q: q(1.0 / 255.0, -128),
        nodes,
        ports: Default::default(),
    };
    model.validate().expect("grouped conv model is valid");
    model
}

/// A small token model using the ops of transformer-style exports, with weights drawn from
/// `seed`: a per-token Dense over `[4 tokens, 6]` → a function table → a transpose (Gather) →
/// a constant added per element → a per-row Dense → another table → a selection of the first
/// row (Gather) → a Dense to 3 outputs.
pub fn token_model(seed: u64) -> QuantModel {
    let mut rng = SplitMix64(seed);
    let rq = |m: f64, bound: u128| requant_for(m, bound).expect("multiplier fits");
    let table = |rng: &mut SplitMix64| -> Vec<i8> {
        // A monotone, GELU-like curve with a random offset: any 256 bytes are a valid table.
        let shift = (rng.next_u64() % 16) as i32;
        (0..256).map(|u: i32| ((u - 128).max(-16 - shift) + shift).clamp(-128, 127) as i8).collect()
    };
    let transpose: Vec<u32> = (0..8).flat_map(|c| (0..4).map(move |t| t * 8 + c)).collect();
    let nodes = vec![
        Node {
            name: "embed".into(),
            op: Op::Dense {
                weights: weights(&mut rng, 8 * 6),
                bias: (0..8).map(|o| 40 * o - 150).collect(),
                requant: (0..8).map(|o| rq(0.004 + 0.0002 * o as f64, 300_000)).collect(),
                relu: false,
            },
            inputs: vec![0],
            shape: vec![4, 8],
            q: q(0.05, 0),
        },
        Node {
            name: "gelu".into(),
            op: Op::Table { table: table(&mut rng) },
            inputs: vec![1],
            shape: vec![4, 8],
            q: q(0.05, -20),
        },
        Node {
            name: "transpose".into(),
            op: Op::Gather { source: transpose },
            inputs: vec![2],
            shape: vec![8, 4],
            q: q(0.05, -20),
        },
        Node {
            name: "position".into(),
            op: Op::AddConst {
                ka: 60_000,
                constants: (0..32).map(|_| (rng.next_u64() % 400_000) as i32 - 200_000).collect(),
                requant: Requant { multiplier: 1, shift: 16 },
            },
            inputs: vec![3],
            shape: vec![8, 4],
            q: q(0.055, 5),
        },
        Node {
            name: "mix".into(),
            op: Op::Dense {
                weights: weights(&mut rng, 5 * 4),
                bias: vec![100, -100, 0, 50, -50],
                requant: (0..5).map(|_| rq(0.006, 200_000)).collect(),
                relu: false,
            },
            inputs: vec![4],
            shape: vec![8, 5],
            q: q(0.06, 3),
        },
        Node {
            name: "tanh".into(),
            op: Op::Table { table: table(&mut rng) },
            inputs: vec![5],
            shape: vec![8, 5],
            q: q(0.06, 3),
        },
        Node {
            name: "first".into(),
            op: Op::Gather { source: (0..5).collect() },
            inputs: vec![6],
            shape: vec![5],
            q: q(0.06, 3),
        },
        Node {
            // The first row, two constants (a class token) and the last row of `tanh`: the
            // pool is `first` (5 values), `tanh` (40), then the constants.
            name: "join".into(),
            op: Op::Concat { source: (0..5).chain([45, 46]).chain(40..45).collect(), constants: vec![-77, 101] },
            inputs: vec![7, 6],
            shape: vec![12],
            q: q(0.06, 3),
        },
        Node {
            name: "head".into(),
            op: Op::Dense {
                weights: weights(&mut rng, 3 * 12),
                bias: vec![10, 20, 30],
                requant: (0..3).map(|_| rq(0.01, 300_000)).collect(),
                relu: false,
            },
            inputs: vec![8],
            shape: vec![3],
            q: q(0.1, 0),
        },
    ];
    let model = QuantModel {
        name: "tokens".into(),
        input_shape: vec![4, 6],
        input_q: q(1.0 / 64.0, 0),
        nodes,
        ports: Default::default(),
    };
    model.validate().expect("token model is valid");
    model
}

/// One attention head, with weights drawn from `seed`: from `[4 tokens, 6]`, per-token Dense
/// projections q, k, v `[4, 4]`, scores `q·kᵀ` (a MatMul of two computed tensors, kᵀ a
/// Gather), a Softmax over each row (with a causal mask if `causal`), `softmax·v`, then a
/// Dense to 3 outputs.
pub fn attention_model(seed: u64, causal: bool) -> QuantModel {
    let mut rng = SplitMix64(seed);
    let rq = |m: f64, bound: u128| requant_for(m, bound).expect("multiplier fits");
    let mut projection = |name: &str, q: QParams| Node {
        name: name.into(),
        op: Op::Dense {
            weights: weights(&mut rng, 4 * 6),
            bias: vec![30, -30, 60, 0],
            requant: (0..4).map(|o| rq(0.005 + 0.0003 * o as f64, 300_000)).collect(),
            relu: false,
        },
        inputs: vec![0],
        shape: vec![4, 4],
        q,
    };
    let (query, key, value) = (projection("q", q(0.05, 2)), projection("k", q(0.04, -3)), projection("v", q(0.06, 0)));
    let transpose: Vec<u32> = (0..4).flat_map(|c| (0..4).map(move |t| t * 4 + c)).collect();
    let nodes = vec![
        query,
        key,
        Node {
            name: "kT".into(),
            op: Op::Gather { source: transpose },
            inputs: vec![2],
            shape: vec![4, 4],
            q: q(0.04, -3),
        },
        Node {
            name: "scores".into(),
            op: Op::MatMul { requant: rq(0.05 * 0.04 / 0.3, 4 * 65025) },
            inputs: vec![1, 3],
            shape: vec![4, 4],
            q: q(0.3, -10),
        },
        Node {
            name: "softmax".into(),
            op: Op::Softmax {
                exp: (0..256).map(|d| (65535.0 * (-0.3 * f64::from(d)).exp()).round() as u16).collect(),
                keep: if causal { (0..16).map(|i| i % 4 <= i / 4).collect() } else { Vec::new() },
            },
            inputs: vec![4],
            shape: vec![4, 4],
            q: SOFTMAX_Q,
        },
        value,
        Node {
            name: "weighted".into(),
            op: Op::MatMul { requant: rq(0.06 / 255.0 / 1.5, 4 * 65025) },
            inputs: vec![5, 6],
            shape: vec![4, 4],
            q: q(1.5, 4),
        },
        Node {
            name: "head".into(),
            op: Op::Dense {
                weights: weights(&mut rng, 3 * 16),
                bias: vec![5, -5, 0],
                requant: (0..3).map(|_| rq(0.01, 1_000_000)).collect(),
                relu: false,
            },
            inputs: vec![7],
            shape: vec![3],
            q: q(0.2, 0),
        },
    ];
    let model = QuantModel {
        name: "attention".into(),
        input_shape: vec![4, 6],
        input_q: q(1.0 / 64.0, 0),
        nodes,
        ports: Default::default(),
    };
    model.validate().expect("attention model is valid");
    model
}

/// [`attention_model`] with its scores and Softmax as one [`Op::ScoresSoftmax`]: the scores
/// `q·kᵀ` at 16 bits (the 8-bit model's range, 256 times finer), then the Softmax over them.
pub fn scores_attention_model(seed: u64, causal: bool) -> QuantModel {
    let mut model = attention_model(seed, causal);
    let score_scale = 0.3 / 256.0;
    let Op::Softmax { keep, .. } = model.nodes[4].op.clone() else { unreachable!("node 4 is the softmax") };
    model.nodes[3] = Node {
        name: "scores_softmax".into(),
        op: Op::ScoresSoftmax {
            requant: requant_for_scores(0.05 * 0.04 / score_scale, 4 * 65025).expect("multiplier fits"),
            score_zero_point: -2560,
            exp_high: (0..256)
                .map(|h| (65535.0 * (-score_scale * 256.0 * f64::from(h)).exp()).round() as u16)
                .collect(),
            exp_low: (0..256).map(|l| (65535.0 * (-score_scale * f64::from(l)).exp()).round() as u16).collect(),
            keep,
        },
        inputs: vec![1, 3],
        shape: vec![4, 4],
        q: SOFTMAX_Q,
    };
    model.nodes.remove(4);
    // Tensors after the removed Softmax move down by one.
    for node in &mut model.nodes[4..] {
        node.inputs.iter_mut().filter(|t| **t >= 5).for_each(|t| *t -= 1);
    }
    model.validate().expect("scores attention model is valid");
    model
}

/// LayerNorm parameters for `n` channels with output scale `s_out`, the integer form of
/// `γ_i = 1 + 0.1·i`, `β_i = 0.05·i − 0.1` (requantization multiplier 1, shift 40).
pub fn layer_norm_op(n: usize, input: QParams, s_out: f64) -> Op {
    let fraction = (1u64 << (40 - INV_SQRT_BITS)) as f64;
    let gamma =
        (0..n).map(|i| ((1.0 + 0.1 * i as f64) * (n as f64).sqrt() / s_out * fraction).round() as i32).collect();
    let beta = (0..n).map(|i| ((0.05 * i as f64 - 0.1) / s_out * 2f64.powi(40)).round() as i64).collect();
    let eps = ((n as f64).powi(3) * 1e-5 / f64::from(input.scale).powi(2)).round().max(1.0) as u64;
    Op::LayerNorm { gamma, beta, eps, requant: Requant { multiplier: 1, shift: 40 } }
}

/// LayerNorm over `[3 rows, 8]` → a per-row Dense to `[3, 4]` → LayerNorm → a Dense to 2
/// outputs, with weights drawn from `seed`.
pub fn layer_norm_model(seed: u64) -> QuantModel {
    let mut rng = SplitMix64(seed);
    let rq = |m: f64, bound: u128| requant_for(m, bound).expect("multiplier fits");
    let input_q = q(1.0 / 32.0, -5);
    let nodes = vec![
        Node {
            name: "ln1".into(),
            op: layer_norm_op(8, input_q, 0.03),
            inputs: vec![0],
            shape: vec![3, 8],
            q: q(0.03, 0),
        },
        Node {
            name: "dense".into(),
            op: Op::Dense {
                weights: weights(&mut rng, 4 * 8),
                bias: vec![50, -50, 20, 0],
                requant: (0..4).map(|_| rq(0.004, 300_000)).collect(),
                relu: false,
            },
            inputs: vec![1],
            shape: vec![3, 4],
            q: q(0.05, 7),
        },
        Node {
            name: "ln2".into(),
            op: layer_norm_op(4, q(0.05, 7), 0.04),
            inputs: vec![2],
            shape: vec![3, 4],
            q: q(0.04, -3),
        },
        Node {
            name: "head".into(),
            op: Op::Dense {
                weights: weights(&mut rng, 2 * 12),
                bias: vec![0, 0],
                requant: (0..2).map(|_| rq(0.01, 600_000)).collect(),
                relu: false,
            },
            inputs: vec![3],
            shape: vec![2],
            q: q(0.1, 0),
        },
    ];
    let model =
        QuantModel { name: "layer-norm".into(), input_shape: vec![3, 8], input_q, nodes, ports: Default::default() };
    model.validate().expect("layer norm model is valid");
    model
}

/// A one-block causal language model over a vocabulary of 10 tokens and a context of 6, with
/// weights drawn from `seed`: token embedding (dim 4) + position constants → LayerNorm → one
/// causal attention head → per-token logits `[6, 10]` → the last position's logits `[10]`.
/// Its input is token ids (scale 1, zero point −128: the offset form is the id).
pub fn language_model(seed: u64) -> QuantModel {
    let mut rng = SplitMix64(seed);
    let rq = |m: f64, bound: u128| requant_for(m, bound).expect("multiplier fits");
    let (t, d, vocab) = (6usize, 4usize, 10usize);
    let mut projection = |name: &str, input: usize, q: QParams| Node {
        name: name.into(),
        op: Op::Dense {
            weights: weights(&mut rng, d * d),
            bias: vec![20, -20, 10, 0],
            requant: (0..d).map(|_| rq(0.004, 200_000)).collect(),
            relu: false,
        },
        inputs: vec![input],
        shape: vec![t, d],
        q,
    };
    let (query, key, value) =
        (projection("q", 3, q(0.05, 0)), projection("k", 3, q(0.05, 1)), projection("v", 3, q(0.05, -1)));
    let transpose: Vec<u32> = (0..d as u32).flat_map(|c| (0..t as u32).map(move |p| p * d as u32 + c)).collect();
    let mut embedding_rng = SplitMix64(seed ^ 0x5eed);
    let nodes = vec![
        Node {
            name: "embed".into(),
            op: Op::Embedding { table: weights(&mut embedding_rng, vocab * d), dim: d },
            inputs: vec![0],
            shape: vec![t, d],
            q: q(0.04, 0),
        },
        Node {
            name: "position".into(),
            op: Op::AddConst {
                ka: 60_000,
                constants: (0..t * d).map(|i| (i as i32 * 7919) % 200_000 - 100_000).collect(),
                requant: Requant { multiplier: 1, shift: 16 },
            },
            inputs: vec![1],
            shape: vec![t, d],
            q: q(0.045, 2),
        },
        Node {
            name: "ln".into(),
            op: layer_norm_op(d, q(0.045, 2), 0.03),
            inputs: vec![2],
            shape: vec![t, d],
            q: q(0.03, 0),
        },
        query,
        key,
        Node {
            name: "kT".into(),
            op: Op::Gather { source: transpose },
            inputs: vec![5],
            shape: vec![d, t],
            q: q(0.05, 1),
        },
        Node {
            name: "scores".into(),
            op: Op::MatMul { requant: rq(0.05 * 0.05 / 0.2, d as u128 * 65025) },
            inputs: vec![4, 6],
            shape: vec![t, t],
            q: q(0.2, 0),
        },
        Node {
            name: "softmax".into(),
            op: Op::Softmax {
                exp: (0..256).map(|x| (65535.0 * (-0.2 * f64::from(x)).exp()).round() as u16).collect(),
                keep: (0..t * t).map(|i| i % t <= i / t).collect(),
            },
            inputs: vec![7],
            shape: vec![t, t],
            q: SOFTMAX_Q,
        },
        value,
        Node {
            name: "attend".into(),
            op: Op::MatMul { requant: rq(0.05 / 255.0 / 0.05, t as u128 * 65025) },
            inputs: vec![8, 9],
            shape: vec![t, d],
            q: q(0.05, 0),
        },
        Node {
            name: "logits".into(),
            op: Op::Dense {
                weights: weights(&mut rng, vocab * d),
                bias: vec![0; vocab],
                requant: (0..vocab).map(|_| rq(0.003, 200_000)).collect(),
                relu: false,
            },
            inputs: vec![10],
            shape: vec![t, vocab],
            q: q(0.08, 0),
        },
        Node {
            name: "last".into(),
            op: Op::Gather { source: ((t - 1) * vocab..t * vocab).map(|i| i as u32).collect() },
            inputs: vec![11],
            shape: vec![vocab],
            q: q(0.08, 0),
        },
    ];
    let model = QuantModel {
        name: "language".into(),
        input_shape: vec![t],
        input_q: q(1.0, -128),
        nodes,
        ports: Default::default(),
    };
    model.validate().expect("language model is valid");
    model
}

/// `y = a / b` of the two halves of its input (16 values at scale 1/16), exact quotients
/// ([`Op::Div`]) requantized to `[−8, 8]`: a test input picks every sign of the divisor and zero.
pub fn div_model() -> QuantModel {
    let gather = |name: &str, from: u32| Node {
        name: name.into(),
        op: Op::Gather { source: (from..from + 8).collect() },
        inputs: vec![0],
        shape: vec![8],
        q: q(1.0 / 16.0, 0),
    };
    let out_q = q(16.0 / 255.0, 0);
    // y = Q · s_a / (s_b · 2^16 · s_y), the scales of a and b equal.
    let m = 1.0 / (f64::from(1u32 << crate::model::QUOTIENT_BITS) * f64::from(out_q.scale));
    let requant = requant_for(m, crate::lower::QUOTIENT_BOUND as u128).expect("multiplier fits");
    let nodes = vec![
        gather("a", 0),
        gather("b", 8),
        Node { name: "div".into(), op: Op::Div { requant }, inputs: vec![1, 2], shape: vec![8], q: out_q },
    ];
    let model = QuantModel {
        name: "div".into(),
        input_shape: vec![16],
        input_q: q(1.0 / 16.0, 0),
        nodes,
        ports: Default::default(),
    };
    model.validate().expect("div model is valid");
    model
}
