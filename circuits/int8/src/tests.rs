//! Tests of the integer semantics alone: requantization, inputs, commitments, and the canonical
//! encoding and validation of every op (the circuits' tests check the circuits compute exactly
//! this).

use plonky2::field::types::Field;

use crate::testing::{
    grouped_conv_model, language_model, random_input, scores_attention_model, tiny_model, token_model,
};
use crate::{commit, infer, Error, Node, Op, QuantModel, Requant, F};

#[test]
fn model_encoding_round_trips_and_pins_the_id() {
    let model = tiny_model(17);
    let bytes = model.to_canonical_bytes();
    assert_eq!(QuantModel::from_canonical_bytes(&bytes).unwrap(), model);
    let mut other = model.clone();
    if let Op::Dense { weights, .. } = &mut other.nodes[6].op {
        weights[0] = weights[0].wrapping_add(1);
    }
    assert_ne!(other.model_id(), model.model_id());
}

#[test]
fn requantize_rounds_half_up_and_clamps() {
    let unit = Requant { multiplier: 1, shift: 8 };
    assert_eq!(infer::requantize(128, unit, 0, -128), 1); // 0.5 rounds up
    assert_eq!(infer::requantize(127, unit, 0, -128), 0);
    assert_eq!(infer::requantize(-128, unit, 0, -128), 0); // -0.5 rounds up to 0
    assert_eq!(infer::requantize(-129, unit, 0, -128), -1);
    assert_eq!(infer::requantize(1 << 20, unit, 0, -128), 127);
    assert_eq!(infer::requantize(-(1 << 20), unit, 0, -128), -128);
    assert_eq!(infer::requantize(-(1 << 10), unit, 5, 5), 5); // folded ReLU clamps at zp
}

#[test]
fn inputs_of_the_wrong_length_are_rejected() {
    let model = tiny_model(18);
    assert!(matches!(infer::run(&model, &[0; 3]), Err(Error::InvalidInput(_))));
    assert!(matches!(infer::quantize_input(&model, &[0.0; 3]), Err(Error::InvalidInput(_))));
    let mut x = vec![0.5f32; model.input_len()];
    x[2] = f32::NAN;
    assert!(matches!(infer::quantize_input(&model, &x), Err(Error::InvalidInput(_))));
    x[2] = f32::INFINITY;
    assert!(matches!(infer::quantize_input(&model, &x), Err(Error::InvalidInput(_))));
}

#[test]
fn commitment_packs_seven_bytes_and_absorbs_the_length() {
    let a = commit(&[0; 7]);
    assert_ne!(a, commit(&[0; 8]), "length must be absorbed");
    assert_ne!(commit(&[1, 2]), commit(&[2, 1]));
    let e = crate::commit::packed_elements(&[-128, 127, 0]);
    assert_eq!(e.len(), 2);
    assert_eq!(e[1], F::from_canonical_u64(0x80_ff_00));
}

#[test]
fn new_ops_round_trip_and_every_field_is_bound_by_the_id() {
    let model = token_model(8);
    assert_eq!(QuantModel::from_canonical_bytes(&model.to_canonical_bytes()).unwrap(), model);
    let changed = |edit: &dyn Fn(&mut Op)| -> QuantModel {
        let mut m = model.clone();
        m.nodes.iter_mut().for_each(|n| edit(&mut n.op));
        m
    };
    let variants = [
        changed(&|op| {
            if let Op::Table { table } = op {
                table[7] = table[7].wrapping_add(1)
            }
        }),
        changed(&|op| {
            if let Op::Gather { source } = op {
                source.swap(0, 1)
            }
        }),
        changed(&|op| {
            if let Op::AddConst { constants, .. } = op {
                constants[3] += 1
            }
        }),
        changed(&|op| {
            if let Op::Concat { constants, .. } = op {
                constants[1] += 1
            }
        }),
        changed(&|op| {
            if let Op::Concat { source, .. } = op {
                source.swap(5, 7)
            }
        }),
    ];
    for other in variants {
        other.validate().unwrap();
        assert_ne!(other.model_id(), model.model_id());
    }
}

#[test]
fn malformed_new_ops_are_refused() {
    let model = token_model(9);
    let broken = |node: usize, edit: &dyn Fn(&mut Node)| {
        let mut m = model.clone();
        edit(&mut m.nodes[node]);
        let err = m.validate().expect_err("a malformed node must be refused").to_string();
        // Decoding validates too: the bytes of a malformed model do not decode.
        assert!(QuantModel::from_canonical_bytes(&m.to_canonical_bytes()).is_err());
        err
    };
    let short_table = broken(1, &|n| n.op = Op::Table { table: vec![0; 255] });
    assert!(short_table.contains("256"), "{short_table}");
    let outside = broken(2, &|n| n.op = Op::Gather { source: (0..32).map(|i| if i == 9 { 32 } else { i }).collect() });
    assert!(outside.contains("outside"), "{outside}");
    broken(2, &|n| n.q.zero_point += 1);
    broken(3, &|n| {
        if let Op::AddConst { constants, .. } = &mut n.op {
            constants.pop();
        }
    });
    let rows = broken(4, &|n| n.shape = vec![4, 5]);
    assert!(rows.contains("leading axes") || rows.contains("count"), "{rows}");
    // The Concat (node 7): a source past its pool, a part of another quantization, one source
    // missing, more inputs than allowed.
    let past = broken(7, &|n| {
        if let Op::Concat { source, .. } = &mut n.op {
            source[6] = 47;
        }
    });
    assert!(past.contains("outside the 47 values"), "{past}");
    let scales = broken(7, &|n| n.inputs = vec![7, 4]);
    assert!(scales.contains("quantization"), "{scales}");
    broken(7, &|n| {
        if let Op::Concat { source, .. } = &mut n.op {
            source.pop();
        }
    });
    let many = broken(7, &|n| n.inputs = vec![6; crate::MAX_CONCAT_INPUTS + 1]);
    assert!(many.contains("input tensor"), "{many}");
}

#[test]
fn sixteen_bit_scores_follow_the_integer_semantics() {
    // The fused op computes what a 16-bit MatMul then a Softmax over it would: checked against
    // a direct evaluation of its definition on one row.
    let model = scores_attention_model(33, false);
    let x = random_input(34, model.input_len());
    let trace = infer::run(&model, &x).unwrap();
    let Op::ScoresSoftmax { requant, score_zero_point, exp_high, exp_low, .. } = &model.nodes[3].op else {
        unreachable!()
    };
    let (q, kt) = (&trace.tensors[1], &trace.tensors[3]);
    let (zq, zk) = (i64::from(model.tensor_q(1).zero_point), i64::from(model.tensor_q(3).zero_point));
    for row in 0..4 {
        let scores: Vec<i64> = (0..4)
            .map(|col| {
                let acc = (0..4).map(|j| (i64::from(q[row * 4 + j]) - zq) * (i64::from(kt[j * 4 + col]) - zk)).sum();
                i64::from(infer::requantize_score(acc, *requant, *score_zero_point))
            })
            .collect();
        let m = *scores.iter().max().unwrap();
        let e: Vec<i64> = scores
            .iter()
            .map(|&s| {
                let d = (m - s) as u64;
                let product = u64::from(exp_high[(d / 256) as usize]) * u64::from(exp_low[(d % 256) as usize]);
                ((product + 32768) / 65536) as i64
            })
            .collect();
        let sum: i64 = e.iter().sum();
        let expected: Vec<i8> = e.iter().map(|&e| ((510 * e + sum) / (2 * sum) - 128) as i8).collect();
        assert_eq!(&trace.tensors[4][row * 4..row * 4 + 4], &expected[..], "row {row}");
    }
}

#[test]
fn a_sixteen_bit_score_model_round_trips_and_rejects_a_short_table() {
    let model = scores_attention_model(36, true);
    assert_eq!(QuantModel::from_canonical_bytes(&model.to_canonical_bytes()).unwrap(), model);
    let mut short = model.clone();
    let Op::ScoresSoftmax { exp_low, .. } = &mut short.nodes[3].op else { unreachable!() };
    exp_low.truncate(255);
    let why = short.validate().unwrap_err().to_string();
    assert!(why.contains("two tables of 256 exponentials"), "{why}");
    let bytes = model.to_canonical_bytes();
    for cut in [bytes.len() / 2, bytes.len() - 1] {
        assert!(QuantModel::from_canonical_bytes(&bytes[..cut]).is_err());
    }
}

#[test]
fn a_model_may_not_add_more_than_its_share_of_lookup_entries() {
    // Sixty-five embeddings of 256 tokens × 256 channels would add 65 · 2^16 > 2^22 table
    // entries to the circuit, each a row of a lookup table every build allocates.
    let mut model = language_model(37);
    let embed = &model.nodes[0];
    let wide = Node {
        name: "wide".into(),
        op: Op::Embedding { table: vec![1; 1 << 16], dim: 256 },
        inputs: vec![0],
        shape: vec![embed.shape[0], 256],
        q: embed.q,
    };
    let extra = crate::MAX_LOOKUP_ENTRIES / (1 << 16) + 1;
    for i in 0..extra {
        model.nodes.insert(1, Node { name: format!("wide_{i}"), ..wide.clone() });
    }
    for node in &mut model.nodes[1 + extra..] {
        node.inputs.iter_mut().filter(|t| **t >= 2).for_each(|t| *t += extra);
    }
    let why = model.validate().unwrap_err().to_string();
    assert!(why.contains("lookup-table entries"), "{why}");
    model.nodes.drain(1..3);
    for node in &mut model.nodes[extra - 1..] {
        node.inputs.iter_mut().filter(|t| **t >= 2).for_each(|t| *t -= 2);
    }
    model.validate().expect("63 such embeddings are within the limit");
}

/// A grouped convolution reads only its group's channels: changing the input channels of the
/// second group leaves the first group's outputs alone. Its encoding round-trips under its own
/// tag, binds `groups`, and malformed groups are refused.
#[test]
fn a_grouped_convolution_reads_its_groups_channels_only() {
    let model = grouped_conv_model(3, 4, 2, 5);
    let x = random_input(4, model.input_len());
    let plane = 25;
    let mut other = x.clone();
    for v in &mut other[2 * plane..] {
        *v = v.wrapping_add(37);
    }
    let (a, b) = (infer::run(&model, &x).unwrap(), infer::run(&model, &other).unwrap());
    let first = |t: &infer::Trace| t.tensors[1][..2 * plane].to_vec();
    assert_eq!(first(&a), first(&b), "outputs 0 and 1 read input channels 0 and 1 only");
    assert_ne!(a.tensors[1][2 * plane..], b.tensors[1][2 * plane..]);

    let bytes = model.to_canonical_bytes();
    assert_eq!(QuantModel::from_canonical_bytes(&bytes).unwrap(), model);
    let broken = |groups: usize| {
        let mut m = model.clone();
        if let Op::Conv { groups: g, .. } = &mut m.nodes[0].op {
            *g = groups;
        }
        m
    };
    assert!(broken(3).validate().unwrap_err().to_string().contains("groups"));
    assert!(broken(0).validate().is_err());
    // One group: every output would read all 4 channels, so the weights no longer fit.
    assert!(broken(1).validate().is_err());
    assert!(QuantModel::from_canonical_bytes(&broken(3).to_canonical_bytes()).is_err());
}

/// Several inputs and outputs are a section after the nodes: a model without them keeps its
/// bytes, and a section whose parts do not tile the tensors, or that is empty, is refused.
#[test]
fn several_inputs_and_outputs_round_trip_and_must_tile_their_tensors() {
    use crate::{Port, MAX_PORTS};
    let single = tiny_model(3);
    let plain = single.to_canonical_bytes();
    let port = |name: &str, shape: Vec<usize>| Port { name: name.into(), shape };
    let mut model = single.clone();
    let out = model.output_len();
    model.ports.inputs = vec![port("image", vec![2, 4]), port("features", vec![8])];
    model.ports.outputs = vec![port("logits", vec![1]), port("embedding", vec![out - 1])];
    let bytes = model.to_canonical_bytes();
    assert_eq!(bytes[..plain.len()], plain[..], "the section only appends");
    assert_eq!(QuantModel::from_canonical_bytes(&bytes).unwrap(), model);
    assert_ne!(model.model_id(), single.model_id());
    for cut in plain.len() + 1..bytes.len() {
        assert!(QuantModel::from_canonical_bytes(&bytes[..cut]).is_err(), "cut at {cut}");
    }

    let refused = |edit: &dyn Fn(&mut QuantModel), why: &str| {
        let mut broken = model.clone();
        edit(&mut broken);
        let err = QuantModel::from_canonical_bytes(&broken.to_canonical_bytes()).unwrap_err().to_string();
        assert!(err.contains(why), "{why}: {err}");
    };
    refused(&|m| m.ports.inputs[1].shape = vec![9], "their sizes add up to 17, the input tensor holds 16");
    refused(
        &|m| m.ports.outputs[1].shape = vec![out],
        &format!("add up to {}, the output tensor holds {out}", out + 1),
    );
    refused(&|m| m.ports.inputs.truncate(1), "1 named inputs; a model names 2 to 64, or none");
    refused(&|m| m.ports.inputs[0].shape = vec![0, 8], "unsupported shape [0, 8]");
    refused(&|m| m.ports.inputs = vec![port("x", vec![1]); 16], "two inputs named 'x'");
    let many = vec![port("x", vec![1]); MAX_PORTS + 1];
    let mut too_many = model.clone();
    too_many.ports.inputs = many;
    assert!(QuantModel::from_canonical_bytes(&too_many.to_canonical_bytes()).is_err());

    // An empty section, an unknown section and trailing bytes after the section.
    let mut empty = plain.clone();
    empty.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, 0]);
    let err = QuantModel::from_canonical_bytes(&empty).unwrap_err().to_string();
    assert!(err.contains("an empty ports section"), "{err}");
    let mut unknown = plain.clone();
    unknown.push(2);
    let err = QuantModel::from_canonical_bytes(&unknown).unwrap_err().to_string();
    assert!(err.contains("unknown model section tag 2"), "{err}");
    let mut trailing = bytes.clone();
    trailing.push(0);
    assert!(QuantModel::from_canonical_bytes(&trailing).unwrap_err().to_string().contains("1 trailing bytes"));
}
