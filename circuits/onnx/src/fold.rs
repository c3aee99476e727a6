//! Compile-time evaluation of nodes whose inputs are all constants: the shape arithmetic
//! PyTorch's exporter emits (`Shape` → `Gather` → `Unsqueeze` → `Concat` → `Reshape`),
//! `Constant` nodes, and arithmetic on weights (`Pow`, `Reciprocal`, a transposed weight).

use crate::elementwise::Unary;
use crate::layout::{index_maps, DATA_MOVEMENT};
use crate::node::{read_tensor, Ctx};
use crate::tensor::{arithmetic, broadcast_dims, broadcast_to, concat, count, Const, Tensor};
use crate::Result;

/// Ops this module evaluates on constants (besides [`DATA_MOVEMENT`]).
const FOLDED: &[&str] =
    &["Concat", "Cast", "Add", "Sub", "Mul", "Div", "Pow", "Equal", "ConstantOfShape", "Where", "Range"];

/// Whether [`fold`] evaluates `op`.
pub(crate) fn folds(op: &str) -> bool {
    DATA_MOVEMENT.contains(&op) || FOLDED.contains(&op) || Unary::from_onnx(op).is_some()
}

/// The outputs of `cx`'s node, all of whose inputs are the constants `inputs` (`None` for an
/// omitted optional input).
pub(crate) fn fold(cx: &Ctx<'_>, inputs: &[Option<&Const>]) -> Result<Vec<Const>> {
    let bad = |e: String| cx.invalid(e);
    let input = |k: usize| inputs.get(k).copied().flatten().ok_or_else(|| cx.invalid(format!("missing input {k}")));
    let op = cx.op();
    if DATA_MOVEMENT.contains(&op) {
        let x = input(0)?;
        let maps = index_maps(cx, x.dims(), |k| inputs.get(k).copied().flatten())?;
        return maps.into_iter().map(|m| x.map_layout(|_| Ok(m.clone())).map_err(bad)).collect();
    }
    if let Some(f) = Unary::from_onnx(op) {
        let x = input(0)?;
        let data: Vec<f32> = x.floats().iter().map(|&v| f.apply(f64::from(v)) as f32).collect();
        if data.iter().any(|v| !v.is_finite()) {
            return Err(cx.invalid("a constant becomes non-finite"));
        }
        return Ok(vec![Const::Floats(Tensor { dims: x.dims().to_vec(), data })]);
    }
    let out = match op {
        "Concat" => {
            let parts: Vec<&Const> = (0..inputs.len()).map(input).collect::<Result<_>>()?;
            let a = cx.int("axis", 0);
            if parts.iter().all(|p| matches!(p, Const::Ints(_))) {
                let ts: Vec<Tensor<i64>> = parts
                    .iter()
                    .map(|p| Tensor { dims: p.dims().to_vec(), data: p.ints().expect("ints").to_vec() })
                    .collect();
                Const::Ints(concat(&ts, a).map_err(bad)?)
            } else {
                let ts: Vec<Tensor<f32>> =
                    parts.iter().map(|p| Tensor { dims: p.dims().to_vec(), data: p.floats() }).collect();
                Const::Floats(concat(&ts, a).map_err(bad)?)
            }
        }
        "Cast" => {
            let x = input(0)?;
            let dims = x.dims().to_vec();
            match cx.int("to", 1) {
                1 | 11 => Const::Floats(Tensor { dims, data: x.floats() }),
                6 | 7 => Const::Ints(Tensor { dims, data: x.floats().iter().map(|&v| v.trunc() as i64).collect() }),
                9 => Const::Ints(Tensor { dims, data: x.floats().iter().map(|&v| i64::from(v != 0.0)).collect() }),
                to => return Err(cx.unsupported(format!("Cast to data type {to}"))),
            }
        }
        "Add" | "Sub" | "Mul" | "Div" | "Pow" | "Equal" => arithmetic(op, input(0)?, input(1)?).map_err(bad)?,
        "ConstantOfShape" => {
            let dims = shape_of(cx, input(0)?)?;
            let n = count(&dims).map_err(bad)?;
            match cx.attr("value").and_then(|a| a.t.as_ref()) {
                None => Const::Floats(Tensor { dims, data: vec![0.0; n] }),
                Some(t) => match read_tensor(t).map_err(bad)? {
                    Const::Floats(v) if v.data.len() == 1 => Const::Floats(Tensor { dims, data: vec![v.data[0]; n] }),
                    Const::Ints(v) if v.data.len() == 1 => Const::Ints(Tensor { dims, data: vec![v.data[0]; n] }),
                    _ => return Err(cx.invalid("value must hold one element")),
                },
            }
        }
        "Where" => {
            let (c, a, b) = (input(0)?, input(1)?, input(2)?);
            let dims = broadcast_dims(&broadcast_dims(c.dims(), a.dims()).map_err(bad)?, b.dims()).map_err(bad)?;
            let cond = broadcast_to(&Tensor { dims: c.dims().to_vec(), data: c.floats() }, &dims).map_err(bad)?;
            match (a, b) {
                (Const::Ints(x), Const::Ints(y)) => {
                    let (x, y) = (broadcast_to(x, &dims).map_err(bad)?, broadcast_to(y, &dims).map_err(bad)?);
                    let data = (0..cond.data.len()).map(|i| if cond.data[i] != 0.0 { x.data[i] } else { y.data[i] });
                    Const::Ints(Tensor { dims, data: data.collect() })
                }
                _ => {
                    let x = broadcast_to(&Tensor { dims: a.dims().to_vec(), data: a.floats() }, &dims).map_err(bad)?;
                    let y = broadcast_to(&Tensor { dims: b.dims().to_vec(), data: b.floats() }, &dims).map_err(bad)?;
                    let data = (0..cond.data.len()).map(|i| if cond.data[i] != 0.0 { x.data[i] } else { y.data[i] });
                    Const::Floats(Tensor { dims, data: data.collect() })
                }
            }
        }
        "Range" => {
            let scalar = |k: usize| -> Result<Const> { Ok(input(k)?.clone()) };
            let (start, limit, delta) = (scalar(0)?, scalar(1)?, scalar(2)?);
            match (start.ints(), limit.ints(), delta.ints()) {
                (Some([s]), Some([l]), Some([d])) if *d != 0 => {
                    let span = l.checked_sub(*s).ok_or_else(|| cx.invalid("Range bounds overflow"))?;
                    let n = (span as f64 / *d as f64).ceil().max(0.0) as usize;
                    count(&[n]).map_err(bad)?;
                    let values = (0..n as i64)
                        .map(|i| i.checked_mul(*d).and_then(|x| s.checked_add(x)))
                        .collect::<Option<Vec<i64>>>()
                        .ok_or_else(|| cx.invalid("Range values overflow"))?;
                    Const::Ints(Tensor { dims: vec![n], data: values })
                }
                _ => return Err(cx.unsupported("Range of anything but integer scalars")),
            }
        }
        other => return Err(cx.unsupported(format!("'{other}' on constants"))),
    };
    Ok(vec![out])
}

/// A shape given as a 1-D constant of non-negative integers.
fn shape_of(cx: &Ctx<'_>, c: &Const) -> Result<Vec<usize>> {
    let ints = c.ints().ok_or_else(|| cx.invalid("a shape must be integers"))?;
    ints.iter().map(|&d| usize::try_from(d).map_err(|_| cx.invalid(format!("shape {ints:?}")))).collect()
}
