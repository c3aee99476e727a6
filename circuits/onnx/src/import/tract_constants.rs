//! Constants as tract sees them. With the model input's shape fixed, tract-onnx's type
//! inference evaluates every tensor that depends only on initializers and shapes, whatever op
//! computes it and whatever the opset: the causal masks exporters build from `Shape`, `Range`,
//! `Less`, `NonZero`, `Trilu`, `Equal`, `Where`; position ids; `ConstantOfShape`; `Cast`s. The
//! importer takes these values for the nodes its own folding ([`crate::fold`]) does not
//! evaluate, so that shape arithmetic disappears before any circuit is built.

use std::collections::HashMap;

use tract_onnx::pb;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::Factoid;
use tract_onnx::tract_hir::internal::DimLike;

use crate::tensor::{count, Const, Tensor as Values};

/// What tract's inference found out about the tensors of a graph.
#[derive(Default)]
pub(super) struct TractFacts {
    /// The value of every non-initializer tensor computed from constants and shapes alone.
    pub values: HashMap<String, Const>,
    /// The shape of every tensor whose shape it determined.
    pub shapes: HashMap<String, Vec<usize>>,
}

/// One graph input as tract is told it: its name, shape (batch included) and element type.
pub(super) struct InputFact<'a> {
    pub name: &'a str,
    pub dims: &'a [usize],
    pub elem_type: DatumType,
}

/// The facts tract's inference determines about `proto`'s tensors, with every graph input's
/// shape and element type fixed. An error is tract's reason for stopping; the caller goes on
/// without tract's facts then, so a graph tract cannot analyse imports as before.
pub(super) fn tract_constants(proto: &pb::ModelProto, inputs: &[InputFact<'_>]) -> Result<TractFacts, String> {
    let parsed = tract_onnx::onnx().parse(proto, None).map_err(|e| format!("{e:#}"))?;
    let mut model = parsed.model;
    for input in inputs {
        let source = *parsed.outlets_by_name.get(input.name).ok_or_else(|| format!("no input '{}'", input.name))?;
        let fact = InferenceFact::dt_shape(input.elem_type, input.dims);
        model.set_outlet_fact(source, fact).map_err(|e| format!("{e:#}"))?;
    }
    // Obstinate: a node tract cannot analyse (an op it lacks) stops no other node's analysis.
    let stopped = model.analyse(true).err().map(|e| format!("{e:#}"));
    let initializers: std::collections::HashSet<&str> =
        proto.graph.as_ref().map(|g| g.initializer.iter().map(|t| t.name.as_str()).collect()).unwrap_or_default();
    let mut facts = TractFacts::default();
    for (name, outlet) in &parsed.outlets_by_name {
        let Ok(fact) = model.outlet_fact(*outlet) else { continue };
        let shape = fact.shape.concretize().and_then(|dims| dims.iter().map(|d| d.to_usize().ok()).collect());
        if let Some(shape) = shape {
            facts.shapes.insert(name.clone(), shape);
        }
        if inputs.iter().any(|i| i.name == name) || initializers.contains(name.as_str()) {
            continue;
        }
        let Some(tensor) = fact.value.concretize() else { continue };
        // A value tract holds but we cannot read (strings, a huge tensor) stays unknown: the
        // node it comes from is then imported as before, or refused naming its op.
        if let Ok(value) = to_const(&tensor) {
            facts.values.insert(name.clone(), value);
        }
    }
    if facts.values.is_empty() && facts.shapes.len() <= inputs.len() {
        if let Some(reason) = stopped {
            return Err(reason);
        }
    }
    Ok(facts)
}

/// A tract tensor as an importer constant: floats, or integers (bool and shape values too).
fn to_const(t: &Tensor) -> Result<Const, String> {
    let dims = t.shape().to_vec();
    count(&dims)?;
    let dt = t.datum_type();
    if dt.is_float() {
        let floats = t.cast_to::<f32>().map_err(|e| format!("{e:#}"))?;
        let data: Vec<f32> =
            floats.to_plain_array_view::<f32>().map_err(|e| format!("{e:#}"))?.iter().copied().collect();
        if data.iter().any(|v| v.is_nan()) {
            return Err("NaN".into());
        }
        Ok(Const::Floats(Values { dims, data }))
    } else if dt.is_integer() || dt == bool::datum_type() || dt == TDim::datum_type() {
        let ints = t.cast_to::<i64>().map_err(|e| format!("{e:#}"))?;
        Ok(Const::Ints(Values {
            dims,
            data: ints.to_plain_array_view::<i64>().map_err(|e| format!("{e:#}"))?.iter().copied().collect(),
        }))
    } else {
        Err(format!("{dt:?} values"))
    }
}
