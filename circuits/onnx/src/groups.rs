//! Grouped and depthwise convolutions (MobileNet's, EfficientNet's) as one convolution per
//! group: each group's input channels copied out (a Gather), convolved alone, and the outputs
//! joined (a Concat). The proof then pays `c_in / groups` weights per output, as the float
//! model does, with the existing Conv, Gather and Concat circuits.
//!
//! The importer keeps a grouped convolution whole while it folds a BatchNormalization or a
//! ReLU into it, and splits it once the graph is complete.

use tgrid_int8::MAX_CONCAT_INPUTS;

use crate::float::{FloatGraph, FloatNode, FloatOp};

/// Most channel groups of one convolution: a Concat of Concats of the groups.
pub(crate) const MAX_GROUPS: usize = MAX_CONCAT_INPUTS * MAX_CONCAT_INPUTS;

/// `g` with every convolution of several groups split into one per group.
pub(crate) fn split_grouped_convs(g: FloatGraph) -> FloatGraph {
    if !g.nodes.iter().any(|n| matches!(n.op, FloatOp::Conv { groups, .. } if groups > 1)) {
        return g;
    }
    let FloatGraph { name, input_shape, tokens, nodes: old } = g;
    let mut out = FloatGraph { name, input_shape, tokens, nodes: Vec::with_capacity(old.len()) };
    // Tensor `t` of the old graph is tensor `renumbered[t]` of the new one.
    let mut renumbered = vec![0usize];
    for node in old {
        let inputs: Vec<usize> = node.inputs.iter().map(|&t| renumbered[t]).collect();
        let t = match node.op {
            FloatOp::Conv { weights, bias, c_out, kernel, stride, pads, groups, relu } if groups > 1 => {
                let x = inputs[0];
                let in_shape = out.shape(x).to_vec();
                let (c_in, plane) = (in_shape[0] / groups, in_shape[1] * in_shape[2]);
                let per_out = c_out / groups;
                let fan_in = c_in * kernel[0] * kernel[1];
                let parts: Vec<usize> = (0..groups)
                    .map(|k| {
                        let first = (k * c_in * plane) as u32;
                        let source = (first..first + (c_in * plane) as u32).collect();
                        let gathered = push(
                            &mut out,
                            format!("{}:group {k} input", node.name),
                            FloatOp::Gather { source },
                            vec![x],
                            vec![c_in, in_shape[1], in_shape[2]],
                        );
                        let conv = FloatOp::Conv {
                            weights: weights[k * per_out * fan_in..(k + 1) * per_out * fan_in].to_vec(),
                            bias: bias[k * per_out..(k + 1) * per_out].to_vec(),
                            c_out: per_out,
                            kernel,
                            stride,
                            pads,
                            groups: 1,
                            relu,
                        };
                        let shape = vec![per_out, node.shape[1], node.shape[2]];
                        push(&mut out, format!("{}:group {k}", node.name), conv, vec![gathered], shape)
                    })
                    .collect();
                join(&mut out, &node.name, parts, per_out, [node.shape[1], node.shape[2]])
            }
            op => push(&mut out, node.name, op, inputs, node.shape),
        };
        renumbered.push(t);
    }
    out
}

/// Appends a node; returns its tensor.
fn push(g: &mut FloatGraph, name: String, op: FloatOp, inputs: Vec<usize>, shape: Vec<usize>) -> usize {
    g.nodes.push(FloatNode { name, op, inputs, shape });
    g.nodes.len()
}

/// The channel-wise join of `parts` (each `[channels, h, w]`), in Concats of at most
/// [`MAX_CONCAT_INPUTS`] inputs.
fn join(g: &mut FloatGraph, name: &str, parts: Vec<usize>, channels: usize, [h, w]: [usize; 2]) -> usize {
    // Joining along the channel axis lays the inputs end to end: the pool, in order.
    let concat = |g: &mut FloatGraph, name: String, inputs: Vec<usize>, total: usize| {
        let source = (0..(total * h * w) as u32).collect();
        push(g, name, FloatOp::Concat { source, constants: Vec::new() }, inputs, vec![total, h, w])
    };
    if parts.len() <= MAX_CONCAT_INPUTS {
        let total = parts.len() * channels;
        return concat(g, name.to_string(), parts, total);
    }
    let tiers: Vec<usize> = parts
        .chunks(MAX_CONCAT_INPUTS)
        .enumerate()
        .map(|(i, c)| concat(g, format!("{name}:groups {}..", i * MAX_CONCAT_INPUTS), c.to_vec(), c.len() * channels))
        .collect();
    concat(g, name.to_string(), tiers, parts.len() * channels)
}
