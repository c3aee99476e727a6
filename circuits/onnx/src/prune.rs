//! Row pruning: computes only the rows of each tensor that the model's output depends on.
//!
//! A language model's exported graph computes every position and then keeps the last
//! position's logits (`x[:, -1, :]`), so its last block would prove 31 rows of queries, MLP and
//! head for nothing. Walking back from the output, each tensor of rank ≥ 2 keeps only the
//! rows (indices of its second-to-last axis, the token axis) that some consumer needs: a
//! row-wise op needs the same rows of its input, `a · b` needs those rows of `a` and all of `b`,
//! an index map needs the rows its kept elements read. Every other op needs its whole input.
//! The pruned graph computes the same output values with fewer elements; where a tensor keeps
//! more rows than one consumer needs, that consumer reads its rows through an index map (a copy
//! of wires, no constraint).

use crate::float::{FloatGraph, FloatNode, FloatOp};

/// The rows of a tensor's second-to-last axis that are kept, ascending.
type Rows = Vec<usize>;

/// Whether `op` computes each row of its output from the same row of its first input alone
/// (for `MatMul`, of its first factor).
fn row_wise(op: &FloatOp, in_shape: &[usize], out_shape: &[usize]) -> bool {
    let same_rank = in_shape.len() == out_shape.len() && out_shape.len() >= 2;
    let same_rows = same_rank && in_shape[..in_shape.len() - 1] == out_shape[..out_shape.len() - 1];
    match op {
        FloatOp::Dense { .. } | FloatOp::MatMul { .. } => same_rows,
        FloatOp::Elementwise { .. }
        | FloatOp::AddConst { .. }
        | FloatOp::Relu
        | FloatOp::LayerNorm { .. }
        | FloatOp::Softmax { .. }
        | FloatOp::Add { .. }
        | FloatOp::Div => same_rank && in_shape == out_shape,
        _ => false,
    }
}

fn rows_axis(shape: &[usize]) -> Option<(usize, usize)> {
    // (rows, elements per row) of a shape [.., rows, cols]; rank < 2 (or an empty axis) has no
    // row axis to prune.
    match shape {
        [.., rows, cols] if *rows > 0 && *cols > 0 => Some((*rows, *cols)),
        _ => None,
    }
}

/// The row of flat index `i` in `shape` (rank ≥ 2).
fn row_of(shape: &[usize], i: usize) -> usize {
    let (rows, cols) = rows_axis(shape).expect("rank ≥ 2");
    (i / cols) % rows
}

/// The flat indices of the elements of `shape` in the kept `rows`, in order.
fn kept_elements(shape: &[usize], rows: &[usize]) -> Vec<usize> {
    let Some((all_rows, cols)) = rows_axis(shape) else { return (0..shape.iter().product()).collect() };
    let groups: usize = shape[..shape.len() - 2].iter().product();
    let mut out = Vec::with_capacity(groups * rows.len() * cols);
    for g in 0..groups {
        for &r in rows {
            out.extend((0..cols).map(|c| (g * all_rows + r) * cols + c));
        }
    }
    out
}

fn full(shape: &[usize]) -> Rows {
    rows_axis(shape).map_or_else(Vec::new, |(rows, _)| (0..rows).collect())
}

fn is_full(shape: &[usize], rows: &[usize]) -> bool {
    rows_axis(shape).is_none_or(|(n, _)| rows.len() == n)
}

fn compacted(shape: &[usize], rows: &[usize]) -> Vec<usize> {
    let mut s = shape.to_vec();
    if s.len() >= 2 {
        let axis = s.len() - 2;
        s[axis] = rows.len();
    }
    s
}

/// Composes an index map that reads another one, when nothing else reads the inner one: the
/// heads' `[32, 4, 16]` between a split and a transpose has no token axis at `-2`, the composed
/// map from `[32, 192]` to `[4, 32, 16]` does.
fn compose_index_maps(mut graph: FloatGraph) -> FloatGraph {
    let mut readers = vec![0usize; graph.nodes.len() + 1];
    for n in &graph.nodes {
        for &i in &n.inputs {
            readers[i] += 1;
        }
    }
    readers[graph.nodes.len()] += 1;
    let is_map = |op: &FloatOp| matches!(op, FloatOp::Gather { .. } | FloatOp::Reshape);
    for i in 0..graph.nodes.len() {
        let inner = graph.nodes[i].inputs[0];
        if !is_map(&graph.nodes[i].op) || inner == 0 || readers[inner] != 1 || !is_map(&graph.nodes[inner - 1].op) {
            continue;
        }
        let (m, n) = (&graph.nodes[inner - 1], &graph.nodes[i]);
        let inner_sources = sources_of(m, graph.shape(m.inputs[0]));
        let source: Vec<u32> = sources_of(n, &m.shape).into_iter().map(|e| inner_sources[e] as u32).collect();
        let identity = source.len() == graph.shape(m.inputs[0]).iter().product::<usize>()
            && source.iter().enumerate().all(|(e, &s)| s as usize == e);
        let op = if identity { FloatOp::Reshape } else { FloatOp::Gather { source } };
        let input = m.inputs[0];
        readers[inner] = 0;
        graph.nodes[i].op = op;
        graph.nodes[i].inputs = vec![input];
    }
    graph
}

/// Returns `graph` computing only what its output depends on (unchanged when it already does).
pub fn prune_rows(graph: FloatGraph) -> FloatGraph {
    let graph = compose_index_maps(graph);
    let tensors = graph.nodes.len() + 1;
    // needed[t]: rows of tensor t some consumer needs (None: nobody needs it).
    let mut needed: Vec<Option<std::collections::BTreeSet<usize>>> = vec![None; tensors];
    needed[tensors - 1] = Some(full(graph.shape(tensors - 1)).into_iter().collect());
    for t in (1..tensors).rev() {
        let n = &graph.nodes[t - 1];
        let Some(rows) = needed[t].clone() else { continue };
        let mut need = |input: usize, rows: Rows| {
            needed[input].get_or_insert_with(Default::default).extend(rows);
        };
        let in_shape = graph.shape(n.inputs[0]);
        let rows: Rows = rows.into_iter().collect();
        match &n.op {
            op if row_wise(op, in_shape, &n.shape) => {
                need(n.inputs[0], rows.clone());
                if let Some(&b) = n.inputs.get(1) {
                    let b_rows = if matches!(op, FloatOp::MatMul { .. }) { full(graph.shape(b)) } else { rows };
                    need(b, b_rows);
                }
            }
            FloatOp::Gather { .. } | FloatOp::Reshape if rows_axis(in_shape).is_some() => {
                let sources = sources_of(n, in_shape);
                let wanted: std::collections::BTreeSet<usize> =
                    kept_elements(&n.shape, &rows).into_iter().map(|i| row_of(in_shape, sources[i])).collect();
                need(n.inputs[0], wanted.into_iter().collect());
            }
            _ => {
                for &i in &n.inputs {
                    need(i, full(graph.shape(i)));
                }
            }
        }
    }
    // The input and every op that cannot compute part of its output stay whole.
    let kept: Vec<Rows> = (0..tensors)
        .map(|t| {
            let shape = graph.shape(t);
            match (&needed[t], t) {
                (_, 0) => full(shape),
                (Some(rows), _) if can_shrink(&graph, t) => rows.iter().copied().collect(),
                (Some(_), _) => full(shape),
                (None, _) => Vec::new(),
            }
        })
        .collect();
    if (0..tensors).all(|t| needed[t].is_some() && is_full(graph.shape(t), &kept[t])) {
        return graph;
    }
    rebuild(graph, &needed, &kept)
}

/// Whether node output `t` may be computed in part (the demand of the pass above is exactly
/// what row-wise ops and index maps can honour).
fn can_shrink(graph: &FloatGraph, t: usize) -> bool {
    let n = &graph.nodes[t - 1];
    let in_shape = graph.shape(n.inputs[0]);
    row_wise(&n.op, in_shape, &n.shape)
        || (matches!(n.op, FloatOp::Gather { .. } | FloatOp::Reshape) && rows_axis(&n.shape).is_some())
}

/// Flat input index of each output element of an index map (a reshape reads in order).
fn sources_of(n: &FloatNode, in_shape: &[usize]) -> Vec<usize> {
    match &n.op {
        FloatOp::Gather { source } => source.iter().map(|&s| s as usize).collect(),
        _ => (0..in_shape.iter().product()).collect(),
    }
}

fn rebuild(graph: FloatGraph, needed: &[Option<std::collections::BTreeSet<usize>>], kept: &[Rows]) -> FloatGraph {
    let old_shape = |t: usize| graph.shape(t).to_vec();
    // new_index[t]: the tensor in the new graph that holds tensor t's kept rows.
    let mut new_index: Vec<usize> = vec![0; kept.len()];
    let mut nodes: Vec<FloatNode> = Vec::new();
    for (i, n) in graph.nodes.iter().enumerate() {
        let t = i + 1;
        if needed[t].is_none() {
            continue;
        }
        let out_rows = &kept[t];
        let out_shape = compacted(&n.shape, out_rows);
        let in_shape = old_shape(n.inputs[0]);
        let op = match &n.op {
            FloatOp::Gather { .. } | FloatOp::Reshape
                if !is_full(&n.shape, out_rows) || !is_full(&in_shape, &kept[n.inputs[0]]) =>
            {
                let position = positions(&in_shape, &kept[n.inputs[0]]);
                let sources = sources_of(n, &in_shape);
                let source = kept_elements(&n.shape, out_rows).into_iter().map(|e| position[sources[e]]).collect();
                FloatOp::Gather { source }
            }
            FloatOp::AddConst { values } => {
                FloatOp::AddConst { values: kept_elements(&n.shape, out_rows).into_iter().map(|e| values[e]).collect() }
            }
            // A mask covers the last two axes (one row for a rank-1 input): keep its kept rows.
            FloatOp::Softmax { keep } if !keep.is_empty() && !is_full(&n.shape, out_rows) => {
                let cols = n.shape[n.shape.len() - 1];
                let rows = keep.len() / cols;
                let keep = kept_elements(&[rows, cols], out_rows).into_iter().map(|e| keep[e]).collect();
                FloatOp::Softmax { keep }
            }
            op => op.clone(),
        };
        // Inputs of a row-wise op must hold exactly its rows; MatMul's second factor and whole
        // ops read whole tensors, index maps read through `position`.
        let row_wise_op = row_wise(&n.op, &in_shape, &n.shape);
        let inputs = n
            .inputs
            .iter()
            .enumerate()
            .map(|(j, &input)| {
                let have = &kept[input];
                let want = if row_wise_op && !(j == 1 && matches!(n.op, FloatOp::MatMul { .. })) {
                    out_rows.clone()
                } else if matches!(op, FloatOp::Gather { .. }) {
                    have.clone()
                } else {
                    full(&old_shape(input))
                };
                if *have == want {
                    return new_index[input];
                }
                // Select `want` out of the rows the tensor keeps.
                let shape = old_shape(input);
                let position = positions(&shape, have);
                let source = kept_elements(&shape, &want).into_iter().map(|e| position[e]).collect();
                nodes.push(FloatNode {
                    name: format!("{}/rows", n.name),
                    op: FloatOp::Gather { source },
                    inputs: vec![new_index[input]],
                    shape: compacted(&shape, &want),
                });
                nodes.len()
            })
            .collect();
        nodes.push(FloatNode { name: n.name.clone(), op, inputs, shape: out_shape });
        new_index[t] = nodes.len();
    }
    FloatGraph { nodes, ..graph }
}

/// For each flat index of `shape`, its flat index in the tensor compacted to `rows` (only the
/// kept elements' entries are meaningful).
fn positions(shape: &[usize], rows: &[usize]) -> Vec<u32> {
    let mut position = vec![u32::MAX; shape.iter().product()];
    for (p, e) in kept_elements(shape, rows).into_iter().enumerate() {
        position[e] = p as u32;
    }
    position
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elementwise::{Expr, Unary};

    fn node(name: &str, op: FloatOp, inputs: Vec<usize>, shape: Vec<usize>) -> FloatNode {
        FloatNode { name: name.into(), op, inputs, shape }
    }

    fn dense(fan_in: usize, out: usize, seed: f32) -> FloatOp {
        let weights = (0..fan_in * out).map(|i| ((i as f32 * 0.37 + seed).sin()) * 0.5).collect();
        FloatOp::Dense { weights, bias: (0..out).map(|o| o as f32 * 0.01).collect(), out, relu: false }
    }

    /// A one-head causal attention over 4 positions of width 3 whose output is the last
    /// position's two logits, the shape of a language model's export.
    fn last_token_model() -> FloatGraph {
        let (t, d) = (4, 3);
        let transpose: Vec<u32> = (0..d).flat_map(|c| (0..t).map(move |r| (r * d + c) as u32)).collect();
        let keep = (0..t * t).map(|i| i % t <= i / t).collect();
        let nodes = vec![
            node("q", dense(d, d, 0.1), vec![0], vec![t, d]), // 1
            node("k", dense(d, d, 0.2), vec![0], vec![t, d]), // 2
            node("v", dense(d, d, 0.3), vec![0], vec![t, d]), // 3
            node("kt", FloatOp::Gather { source: transpose }, vec![2], vec![d, t]), // 4
            node("scores", FloatOp::MatMul { alpha: 0.5 }, vec![1, 4], vec![t, t]), // 5
            node("softmax", FloatOp::Softmax { keep }, vec![5], vec![t, t]), // 6
            node("mixed", FloatOp::MatMul { alpha: 1.0 }, vec![6, 3], vec![t, d]), // 7
            node("residual", FloatOp::Add { relu: false, subtract: false }, vec![7, 0], vec![t, d]), // 8
            node(
                "ln",
                FloatOp::LayerNorm { gamma: vec![1.0, 0.5, 2.0], beta: vec![0.0, 0.1, -0.1], eps: 1e-5 },
                vec![8],
                vec![t, d],
            ), // 9
            node(
                "gelu",
                FloatOp::Elementwise { f: Expr::Unary(Unary::Tanh, Box::new(Expr::Input)) },
                vec![9],
                vec![t, d],
            ), // 10
            node(
                "pos",
                FloatOp::AddConst { values: (0..t * d).map(|i| i as f32 * 0.1).collect() },
                vec![10],
                vec![t, d],
            ), // 11
            node("head", dense(d, 2, 0.4), vec![11], vec![t, 2]), // 12
            node("last", FloatOp::Gather { source: vec![6, 7] }, vec![12], vec![2]), // 13
        ];
        FloatGraph {
            name: "last-token".into(),
            input_shape: vec![t, d],
            tokens: false,
            nodes,
            ports: Default::default(),
        }
    }

    fn macs(g: &FloatGraph) -> usize {
        g.nodes
            .iter()
            .map(|n| match &n.op {
                FloatOp::Dense { weights, out, .. } => n.shape.iter().product::<usize>() / out * weights.len(),
                FloatOp::MatMul { .. } => n.shape.iter().product::<usize>() * g.shape(n.inputs[0]).last().unwrap(),
                _ => 0,
            })
            .sum()
    }

    #[test]
    fn the_last_token_model_computes_one_row_after_attention_and_the_same_output() {
        let g = last_token_model();
        let pruned = prune_rows(g.clone());
        let input: Vec<f32> = (0..12).map(|i| (i as f32 * 0.7).cos()).collect();
        let (before, after) = (g.run(&input), pruned.run(&input));
        assert_eq!(before.last(), after.last());
        assert!(macs(&pruned) < macs(&g), "{} vs {}", macs(&pruned), macs(&g));
        // Queries, scores, softmax, mixing and everything after keep one row; keys and values
        // keep all four.
        let shape_of = |name: &str| pruned.nodes.iter().find(|n| n.name == name).unwrap().shape.clone();
        assert_eq!(shape_of("q"), vec![1, 3]);
        assert_eq!(shape_of("k"), vec![4, 3]);
        assert_eq!(shape_of("v"), vec![4, 3]);
        assert_eq!(shape_of("softmax"), vec![1, 4]);
        assert_eq!(shape_of("head"), vec![1, 2]);
        // The residual reads the input's last row through an index map.
        assert!(pruned.nodes.iter().any(|n| n.name == "residual/rows"));
    }

    #[test]
    fn a_masked_softmax_of_the_last_row_keeps_its_mask() {
        let mut g = last_token_model();
        g.nodes.truncate(9);
        // ln (tensor 9) → its last row → a masked softmax over it.
        g.nodes.push(node("last", FloatOp::Gather { source: vec![9, 10, 11] }, vec![9], vec![3]));
        g.nodes.push(node("softmax1", FloatOp::Softmax { keep: vec![true, false, true] }, vec![10], vec![3]));
        let pruned = prune_rows(g.clone());
        assert_ne!(pruned, g, "the layer norm computes one row");
        let input: Vec<f32> = (0..12).map(|i| (i as f32 * 0.3).sin()).collect();
        let out = pruned.run(&input).pop().unwrap();
        assert_eq!(g.run(&input).last(), Some(&out));
        assert_eq!(out[1], 0.0, "the masked cell stays masked");
    }

    #[test]
    fn a_graph_whose_output_needs_everything_is_unchanged() {
        let mut g = last_token_model();
        g.nodes.truncate(12);
        assert_eq!(prune_rows(g.clone()), g);
    }

    #[test]
    fn an_unused_tensor_is_dropped() {
        let mut g = last_token_model();
        // A dead branch: nothing reads tensor 13.
        g.nodes.insert(12, node("dead", dense(3, 5, 0.9), vec![11], vec![4, 5]));
        let pruned = prune_rows(g.clone());
        assert!(pruned.nodes.iter().all(|n| n.name != "dead"));
        let input: Vec<f32> = (0..12).map(|i| i as f32 * 0.1).collect();
        assert_eq!(g.run(&input).last(), pruned.run(&input).last());
    }
}
