//! Where a model is cut into segments: a greedy plan from estimated gate rows, so a segment's
//! circuit (and the prover's memory) stays below a bound whatever the model's depth.

use serde::{Deserialize, Serialize};
use tgrid_int8::{Privacy, QuantModel};

use crate::circuit::{segment_config, Segment};
use crate::error::{Error, Result};
use crate::gates::DotProductGate;

/// Where the model is cut: segment `i` covers nodes `cuts[i-1]..cuts[i]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentPlan {
    /// Node indices at which a new segment starts, strictly increasing, inside `1..nodes`.
    pub cuts: Vec<usize>,
}

/// Estimated gate rows of one node, used only to place cuts. The weights come from the gate
/// counts of the transformer fixtures (`RUST_LOG=plonky2=debug` prints them): a weighted-sum row
/// holds about 64 multiply-accumulates, a dot-product row 32–39 products, and each requantized
/// output costs about a third of a row (its share of a requantization row and of the byte
/// lookups of its remainder). The vit and gpt estimates land within 10 % of their real rows.
fn estimated_rows(model: &QuantModel, node: usize) -> usize {
    use tgrid_int8::Op;
    let n = &model.nodes[node];
    let out = tgrid_int8::numel(&n.shape);
    let requantized = out / 3;
    match &n.op {
        Op::Dense { weights, bias, .. } => out / bias.len() * weights.len() / 64 + requantized,
        Op::Conv { weights, c_out, .. } => out / c_out * weights.len() / 64 + requantized,
        Op::AvgPool { kernel, .. } => out * kernel[0] * kernel[1] / 64 + requantized,
        Op::MaxPool { kernel, .. } => out * kernel[0] * kernel[1] / 20 + out,
        Op::MatMul { .. } | Op::ScoresSoftmax { .. } => {
            let k = model.tensor_shape(n.inputs[0]).last().copied().unwrap_or(1);
            let (_, rows_per_sum) = DotProductGate::for_len(k, segment_config(0, Privacy::Public).num_routed_wires);
            let products = (out as f64 * rows_per_sum).ceil() as usize + requantized;
            // The Softmax: per kept score its 16-bit range check, the two-table exponential
            // (six lookups, four arithmetic operations) and the quotient.
            let softmax = if matches!(n.op, Op::ScoresSoftmax { .. }) { out } else { 0 };
            products + softmax
        }
        Op::LayerNorm { .. } | Op::Softmax { .. } => out / 2 + requantized,
        Op::Add { .. } | Op::AddConst { .. } | Op::Relu => out / 10 + requantized,
        // Seven byte checks and a dozen arithmetic operations per quotient.
        Op::Div { .. } => out / 2 + requantized,
        Op::Table { .. } => out / 40,
        Op::Embedding { .. } => out / 20 + out / 40,
        Op::Gather { .. } | Op::Concat { .. } | Op::Reshape => 0,
    }
}

impl SegmentPlan {
    /// Cuts the model greedily so no segment is estimated above `max_rows` gate rows (a single
    /// layer larger than that stays one segment). A segment's circuit has the next power of two
    /// of its rows, so `max_rows` a power of two wastes the least.
    pub fn auto(model: &QuantModel, max_rows: usize) -> Self {
        let mut cuts = Vec::new();
        let mut rows = 0;
        for i in 0..model.nodes.len() {
            let r = estimated_rows(model, i);
            if rows > 0 && rows + r > max_rows {
                cuts.push(i);
                rows = 0;
            }
            rows += r;
        }
        SegmentPlan { cuts }
    }

    /// The estimated gate rows of each segment (before padding to a power of two).
    pub fn estimated_rows(&self, model: &QuantModel) -> Vec<usize> {
        let mut bounds = vec![0];
        bounds.extend(&self.cuts);
        bounds.push(model.nodes.len());
        bounds.windows(2).map(|w| (w[0]..w[1]).map(|i| estimated_rows(model, i)).sum()).collect()
    }

    /// Checks the cuts against a model.
    pub fn validate(&self, model: &QuantModel) -> Result<()> {
        let n = model.nodes.len();
        let increasing = self.cuts.windows(2).all(|w| w[0] < w[1]);
        if !increasing || self.cuts.iter().any(|&c| c == 0 || c >= n) {
            return Err(Error::InvalidModel(format!("invalid segment cuts {:?} for {n} layers", self.cuts)));
        }
        Ok(())
    }

    /// The segments in order.
    pub fn segments(&self, model: &QuantModel) -> Vec<Segment> {
        let mut bounds = vec![0];
        bounds.extend(&self.cuts);
        bounds.push(model.nodes.len());
        bounds.windows(2).map(|w| Segment::new(model, w[0]..w[1])).collect()
    }
}
