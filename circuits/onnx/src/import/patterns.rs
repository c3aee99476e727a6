//! Patterns of several ONNX nodes that compute one thing the circuit proves whole.
//!
//! LayerNorm written out: exporters before opset 17 (and many at 17) write
//! `LayerNormalization` as `ReduceMean → Sub → Pow 2 → ReduceMean → Add ε → Sqrt → Div`
//! (or `Reciprocal → Mul`), often followed by `Mul γ → Add β`. Proven op by op, it would
//! divide by a computed tensor and square int8 deviations through a table; recognised here,
//! it becomes one `LayerNormalization` node and uses the exact integer LayerNorm (its
//! variance over the deviations at full width, its inverse square root proven).

use std::collections::{HashMap, HashSet};

use tract_onnx::pb::{AttributeProto, NodeProto};

use crate::tensor::Const;

/// What the recognizer knows about the graph's tensors besides its nodes.
pub(super) struct Known<'a> {
    /// A constant's value (an initializer, a `Constant`, a value tract folded).
    pub constant: &'a dyn Fn(&str) -> Option<Const>,
    /// A tensor's rank, where known.
    pub rank: &'a dyn Fn(&str) -> Option<usize>,
    /// The graph's outputs: never fused away.
    pub outputs: &'a [&'a str],
}

/// `nodes` with every written-out LayerNorm replaced by one `LayerNormalization` node, in the
/// place of the pattern's last node; and how many were fused.
pub(super) fn fuse_written_layer_norms(nodes: &[NodeProto], known: &Known<'_>) -> (Vec<NodeProto>, usize) {
    let graph = Graph::new(nodes);
    let mut removed: HashSet<usize> = HashSet::new();
    let mut replacements: HashMap<usize, NodeProto> = HashMap::new();
    for (i, node) in nodes.iter().enumerate() {
        if node.op_type != "ReduceMean" || removed.contains(&i) {
            continue;
        }
        if let Some(found) = graph.layer_norm_at(i, known) {
            if found.nodes.iter().any(|n| removed.contains(n)) {
                continue;
            }
            let last = *found.nodes.iter().max().expect("a pattern has nodes");
            removed.extend(found.nodes.iter().copied());
            replacements.insert(last, found.node);
        }
    }
    let fused = replacements.len();
    let out = nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| match replacements.remove(&i) {
            Some(r) => Some(r),
            None if removed.contains(&i) => None,
            None => Some(n.clone()),
        })
        .collect();
    (out, fused)
}

/// A recognised pattern: the nodes it replaces and the node replacing them.
struct Found {
    nodes: Vec<usize>,
    node: NodeProto,
}

struct Graph<'a> {
    nodes: &'a [NodeProto],
    /// The nodes that read each tensor (a node reading it twice counted once).
    readers: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Graph<'a> {
    fn new(nodes: &'a [NodeProto]) -> Self {
        let mut readers: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, n) in nodes.iter().enumerate() {
            for input in n.input.iter().filter(|s| !s.is_empty()) {
                let r = readers.entry(input.as_str()).or_default();
                if r.last() != Some(&i) {
                    r.push(i);
                }
            }
        }
        Self { nodes, readers }
    }

    /// The one node reading `tensor`, if it is read by exactly one and is not a graph output.
    fn sole_reader(&self, tensor: &str, known: &Known<'_>) -> Option<usize> {
        match self.readers.get(tensor).map(Vec::as_slice) {
            Some([r]) if !known.outputs.contains(&tensor) => Some(*r),
            _ => None,
        }
    }

    fn out(&self, i: usize) -> &'a str {
        self.nodes[i].output.first().map(String::as_str).unwrap_or("")
    }

    /// The other input of binary node `i`, when one of its inputs is `x`.
    fn other_input(&self, i: usize, x: &str) -> Option<&'a str> {
        match self.nodes[i].input.as_slice() {
            [a, b] if a == x => Some(b),
            [a, b] if b == x => Some(a),
            _ => None,
        }
    }

    /// Whether node `i` is `ReduceMean` of `x` over its last axis, keeping it.
    fn mean_over_last_axis(&self, i: usize, x: &str, known: &Known<'_>) -> bool {
        let n = &self.nodes[i];
        if n.op_type != "ReduceMean" || n.input.first().map(String::as_str) != Some(x) {
            return false;
        }
        let attr = |name: &str| n.attribute.iter().find(|a| a.name == name);
        if attr("keepdims").is_some_and(|a| a.i == 0) {
            return false;
        }
        let axes = match n.input.get(1).filter(|s| !s.is_empty()) {
            Some(name) => match (known.constant)(name) {
                Some(c) => c.ints().map(<[i64]>::to_vec),
                None => None,
            },
            None => attr("axes").map(|a| a.ints.clone()),
        };
        match axes.as_deref() {
            Some([-1]) => true,
            Some([a]) => (known.rank)(x).is_some_and(|r| *a >= 0 && *a as usize + 1 == r),
            _ => false,
        }
    }

    /// The scalar value of constant `name`.
    fn scalar(name: &str, known: &Known<'_>) -> Option<f32> {
        (known.constant)(name).filter(|c| c.floats().len() == 1).map(|c| c.floats()[0])
    }

    /// Whether constant `name` holds one value per channel of the last axis (or one value).
    fn per_channel(name: &str, known: &Known<'_>) -> bool {
        (known.constant)(name).is_some_and(|c| c.dims().iter().rev().skip(1).all(|&d| d == 1))
    }

    /// The written-out LayerNorm whose first `ReduceMean` is node `m`.
    fn layer_norm_at(&self, m: usize, known: &Known<'_>) -> Option<Found> {
        let x = self.nodes[m].input.first()?.as_str();
        if !self.mean_over_last_axis(m, x, known) {
            return None;
        }
        let mean = self.out(m);
        // d = x − mean
        let sub = self.sole_reader(mean, known)?;
        let s = &self.nodes[sub];
        if s.op_type != "Sub" || s.input.as_slice() != [x.to_string(), mean.to_string()] {
            return None;
        }
        let d = self.out(sub);
        if known.outputs.contains(&d) {
            return None;
        }
        let [first, second] = self.readers.get(d)?.as_slice() else { return None };
        // One reader squares d, the other divides it by the deviation.
        let squares = |i: usize| {
            let n = &self.nodes[i];
            (n.op_type == "Pow"
                && n.input.first().map(String::as_str) == Some(d)
                && n.input.get(1).and_then(|e| Self::scalar(e, known)) == Some(2.0))
                || (n.op_type == "Mul" && n.input.iter().all(|v| v == d))
        };
        let (square, divide) = if squares(*first) { (*first, *second) } else { (*second, *first) };
        if !squares(square) {
            return None;
        }
        let variance = self.sole_reader(self.out(square), known)?;
        if !self.mean_over_last_axis(variance, self.out(square), known) {
            return None;
        }
        let add_eps = self.sole_reader(self.out(variance), known)?;
        if self.nodes[add_eps].op_type != "Add" {
            return None;
        }
        let eps = Self::scalar(self.other_input(add_eps, self.out(variance))?, known)?;
        if !(eps.is_finite() && eps >= 0.0) {
            return None;
        }
        let sqrt = self.sole_reader(self.out(add_eps), known)?;
        if self.nodes[sqrt].op_type != "Sqrt" {
            return None;
        }
        let mut nodes = vec![m, sub, square, variance, add_eps, sqrt];
        let dn = &self.nodes[divide];
        let normalized = if dn.op_type == "Div" && dn.input.as_slice() == [d.to_string(), self.out(sqrt).to_string()] {
            self.sole_reader(self.out(sqrt), known).filter(|&r| r == divide)?;
            divide
        } else {
            let reciprocal = self.sole_reader(self.out(sqrt), known)?;
            if self.nodes[reciprocal].op_type != "Reciprocal" {
                return None;
            }
            let mul = self.sole_reader(self.out(reciprocal), known).filter(|&r| r == divide)?;
            if dn.op_type != "Mul" || self.other_input(mul, d) != Some(self.out(reciprocal)) {
                return None;
            }
            nodes.push(reciprocal);
            mul
        };
        nodes.push(normalized);
        // The affine part, where it follows: `· γ`, then `+ β`.
        let mut last = normalized;
        let mut scale = String::new();
        let mut bias = String::new();
        if let Some(mul) = self.sole_reader(self.out(last), known) {
            let gamma = self.other_input(mul, self.out(last));
            if self.nodes[mul].op_type == "Mul" && gamma.is_some_and(|g| Self::per_channel(g, known)) {
                scale = gamma.expect("checked").to_string();
                nodes.push(mul);
                last = mul;
            }
        }
        if let Some(add) = self.sole_reader(self.out(last), known) {
            let beta = self.other_input(add, self.out(last));
            if self.nodes[add].op_type == "Add" && beta.is_some_and(|b| Self::per_channel(b, known)) {
                bias = beta.expect("checked").to_string();
                nodes.push(add);
                last = add;
            }
        }
        let first_name = &self.nodes[m].name;
        let node = NodeProto {
            op_type: "LayerNormalization".into(),
            name: if first_name.is_empty() {
                format!("LayerNorm written out, producing {}", self.out(last))
            } else {
                format!("{first_name} (LayerNorm written out)")
            },
            input: vec![x.to_string(), scale, bias],
            output: vec![self.out(last).to_string()],
            attribute: vec![
                AttributeProto { name: "axis".into(), r#type: 2, i: -1, ..Default::default() },
                AttributeProto { name: "epsilon".into(), r#type: 1, f: eps, ..Default::default() },
            ],
            ..Default::default()
        };
        Some(Found { nodes, node })
    }
}
