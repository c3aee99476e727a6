//! Imports a float ONNX model and calibration data into a TensorGrid int8 [`QuantModel`].
//!
//! Steps: parse the protobuf (tract-onnx's decoder), map supported nodes to a float graph
//! (evaluating constants and shape arithmetic, folding BatchNormalization into the preceding
//! Conv/Gemm, bias Adds into MatMul, ReLU into the producing layer, fusing chains of
//! elementwise functions into one, turning transposes, slices and splits into index maps,
//! dropping a trailing Softmax with a warning), run the float graph on the calibration inputs
//! to collect tensor ranges, then quantize per docs/quantization.md.
//! tract runs the original ONNX file as the float reference the report compares against.

mod elementwise;
mod float;
mod fold;
mod import;
mod input;
mod layout;
mod node;
mod prune;
mod quantize;
mod tensor;

pub use elementwise::{Binary, Expr, Unary};
pub use float::{FloatGraph, FloatNode, FloatOp};
pub use import::import_onnx;
pub use input::{named_outputs_json, InputData};
pub use prune::prune_rows;
pub use quantize::{
    argmax, quantize_model, quantize_model_adjusted, quantize_model_with, CalibrationReport, QuantizeOptions,
};

use std::path::Path;

/// Import errors. Each names what to fix: the op and node, the file, the value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file is not a readable ONNX model.
    #[error("cannot read ONNX model {path}: {reason}")]
    Read {
        /// File path.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// An operator we cannot quantize and prove.
    #[error("unsupported ONNX op '{op}' at node '{node}': {reason}")]
    Unsupported {
        /// ONNX op type.
        op: String,
        /// Node name.
        node: String,
        /// Why, and what is supported.
        reason: String,
    },
    /// A node is malformed (missing attribute, wrong shape).
    #[error("invalid ONNX node '{node}' ({op}): {reason}")]
    InvalidNode {
        /// ONNX op type.
        op: String,
        /// Node name.
        node: String,
        /// What is wrong.
        reason: String,
    },
    /// Calibration or input data is unusable.
    #[error("invalid input data: {0}")]
    Data(String),
    /// The quantized model violates a circuit bound.
    #[error(transparent)]
    Model(#[from] tgrid_int8::Error),
    /// The float reference (tract) failed.
    #[error("float reference failed: {0}")]
    Reference(String),
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Runs the original ONNX file with tract (the float reference) on each sample; a token model
/// gets its samples as int64 ids. A model with several inputs gets each sample split into them
/// and answers its outputs laid end to end, as the int8 model does ([`tgrid_int8::Ports`]).
pub fn tract_reference(path: &Path, graph: &FloatGraph, samples: &[Vec<f32>]) -> Result<Vec<Vec<f32>>> {
    use tract_onnx::prelude::*;
    let err = |e: TractError| Error::Reference(format!("{e:#}"));
    let shapes: Vec<Vec<usize>> = if graph.ports.inputs.is_empty() {
        vec![graph.input_shape.clone()]
    } else {
        graph.ports.inputs.iter().map(|p| p.shape.clone()).collect()
    };
    let shapes: Vec<Vec<usize>> = shapes.into_iter().map(|s| [&[1usize][..], &s].concat()).collect();
    let mut model = tract_onnx::onnx().model_for_path(path).map_err(err)?;
    for (i, shape) in shapes.iter().enumerate() {
        let fact: InferenceFact = if graph.tokens { i64::fact(shape).into() } else { f32::fact(shape).into() };
        model = model.with_input_fact(i, fact).map_err(err)?;
    }
    let model = model.into_optimized().map_err(err)?.into_runnable().map_err(err)?;
    let input_len: usize = graph.input_shape.iter().product();
    samples
        .iter()
        .map(|s| {
            if s.len() != input_len {
                return Err(Error::Data(format!("a sample of {} values, the model takes {input_len}", s.len())));
            }
            let mut inputs = TVec::new();
            let mut rest = s.as_slice();
            for shape in &shapes {
                let (part, after) = rest.split_at(shape.iter().product());
                rest = after;
                let shape_error =
                    |e: tract_ndarray::ShapeError| Error::Data(format!("sample does not fit shape {shape:?}: {e}"));
                let input: Tensor = if graph.tokens {
                    let ids: Vec<i64> = part.iter().map(|&v| v as i64).collect();
                    tract_ndarray::ArrayD::from_shape_vec(shape.clone(), ids).map_err(shape_error)?.into()
                } else {
                    tract_ndarray::ArrayD::from_shape_vec(shape.clone(), part.to_vec()).map_err(shape_error)?.into()
                };
                inputs.push(input.into());
            }
            // A malformed graph can make tract panic (negative pads in 0.23.9): an error, not a crash.
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| model.run(inputs)));
            let out = run.map_err(|_| Error::Reference("tract panicked running the model".into()))?.map_err(err)?;
            let mut flat = Vec::new();
            for tensor in out.iter() {
                flat.extend(tensor.to_plain_array_view::<f32>().map_err(err)?.iter().copied());
            }
            Ok(flat)
        })
        .collect()
}
