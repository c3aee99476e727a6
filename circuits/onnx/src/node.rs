//! One ONNX node being imported: its attributes, and errors that name the op and the node.

use tract_onnx::pb::{AttributeProto, NodeProto, TensorProto};

use crate::tensor::{count, Const, Tensor};
use crate::Error;

pub(crate) struct Ctx<'a> {
    pub node: &'a NodeProto,
}

impl Ctx<'_> {
    pub fn op(&self) -> &str {
        &self.node.op_type
    }

    pub fn name(&self) -> String {
        if self.node.name.is_empty() {
            format!("<{} producing {}>", self.node.op_type, self.node.output.first().map(String::as_str).unwrap_or("?"))
        } else {
            self.node.name.clone()
        }
    }

    pub fn invalid(&self, reason: impl Into<String>) -> Error {
        Error::InvalidNode { op: self.node.op_type.clone(), node: self.name(), reason: reason.into() }
    }

    pub fn unsupported(&self, reason: impl Into<String>) -> Error {
        Error::Unsupported { op: self.node.op_type.clone(), node: self.name(), reason: reason.into() }
    }

    pub fn attr(&self, name: &str) -> Option<&AttributeProto> {
        self.node.attribute.iter().find(|a| a.name == name)
    }

    pub fn ints(&self, name: &str) -> Option<Vec<i64>> {
        self.attr(name).map(|a| a.ints.clone())
    }

    pub fn int(&self, name: &str, default: i64) -> i64 {
        self.attr(name).map(|a| a.i).unwrap_or(default)
    }

    pub fn float(&self, name: &str, default: f32) -> f32 {
        self.attr(name).map(|a| a.f).unwrap_or(default)
    }

    pub fn string(&self, name: &str) -> Option<String> {
        self.attr(name).map(|a| String::from_utf8_lossy(&a.s).into_owned())
    }

    pub fn pair(&self, name: &str, default: [usize; 2]) -> crate::Result<[usize; 2]> {
        match self.ints(name) {
            None => Ok(default),
            Some(v) if v.len() == 2 && v.iter().all(|&x| x > 0 && x <= 1024) => Ok([v[0] as usize, v[1] as usize]),
            Some(v) => Err(self.unsupported(format!("{name}={v:?}: only 2-D windows are supported"))),
        }
    }

    pub fn pads(&self) -> crate::Result<[usize; 4]> {
        if let Some(s) = self.string("auto_pad") {
            if s != "NOTSET" && s != "VALID" && !s.is_empty() {
                return Err(self.unsupported(format!("auto_pad={s}: give explicit pads")));
            }
        }
        match self.ints("pads") {
            None => Ok([0; 4]),
            // ONNX order: begin_h, begin_w, end_h, end_w
            Some(v) if v.len() == 4 && v.iter().all(|&x| (0..=1024).contains(&x)) => {
                Ok([v[0] as usize, v[1] as usize, v[2] as usize, v[3] as usize])
            }
            Some(v) => Err(self.invalid(format!("pads={v:?}"))),
        }
    }

    /// The value of a `Constant` node.
    pub fn constant_value(&self) -> crate::Result<Const> {
        let a = self.node.attribute.first().ok_or_else(|| self.invalid("a Constant without a value"))?;
        Ok(match a.name.as_str() {
            "value" => read_tensor(a.t.as_ref().ok_or_else(|| self.invalid("value is not a tensor"))?)
                .map_err(|e| self.invalid(e))?,
            "value_float" => Const::Floats(Tensor { dims: vec![], data: vec![a.f] }),
            "value_floats" => Const::Floats(Tensor { dims: vec![a.floats.len()], data: a.floats.clone() }),
            "value_int" => Const::Ints(Tensor { dims: vec![], data: vec![a.i] }),
            "value_ints" => Const::Ints(Tensor { dims: vec![a.ints.len()], data: a.ints.clone() }),
            other => return Err(self.unsupported(format!("a Constant given as {other}"))),
        })
    }
}

/// Reads an initializer or a `Constant`'s tensor. Lengths are checked against the dimensions.
pub(crate) fn read_tensor(t: &TensorProto) -> Result<Const, String> {
    let dims: Vec<usize> = t
        .dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("negative dim {d}")))
        .collect::<Result<_, _>>()?;
    let n = count(&dims)?;
    let raw = !t.raw_data.is_empty();
    let check = |len: usize| {
        if len == n {
            Ok(())
        } else {
            Err(format!("tensor '{}' has {len} values for dims {dims:?}", t.name))
        }
    };
    let value = match t.data_type {
        // float32, float64
        1 | 11 => {
            let floats: Vec<f32> = match (t.data_type, raw) {
                (1, true) => t.raw_data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
                (1, false) => t.float_data.clone(),
                (_, true) => t
                    .raw_data
                    .chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")) as f32)
                    .collect(),
                (_, false) => t.double_data.iter().map(|&v| v as f32).collect(),
            };
            check(floats.len())?;
            // Infinities are allowed (a −∞ attention mask); layers refuse them where they compute.
            if floats.iter().any(|v| v.is_nan()) {
                return Err(format!("tensor '{}' holds NaN", t.name));
            }
            Const::Floats(Tensor { dims, data: floats })
        }
        // int64, int32, bool
        7 | 6 | 9 => {
            let ints: Vec<i64> = match (t.data_type, raw) {
                (7, true) => {
                    t.raw_data.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()
                }
                (7, false) => t.int64_data.clone(),
                (6, true) => t
                    .raw_data
                    .chunks_exact(4)
                    .map(|c| i64::from(i32::from_le_bytes(c.try_into().expect("4 bytes"))))
                    .collect(),
                (_, true) => t.raw_data.iter().map(|&b| i64::from(b != 0)).collect(),
                (_, false) => t.int32_data.iter().map(|&v| i64::from(v)).collect(),
            };
            check(ints.len())?;
            Const::Ints(Tensor { dims, data: ints })
        }
        dt => {
            return Err(format!(
                "tensor '{}' has data type {dt}; only float32/64, int32/64 and bool are supported",
                t.name
            ))
        }
    };
    Ok(value)
}
