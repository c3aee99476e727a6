//! Activations with parameters (LeakyRelu, Elu, Selu, Celu, HardSigmoid, HardSwish, Clip,
//! ThresholdedRelu, PRelu with one slope) and the parameterless ones no single [`Unary`] names
//! (Softsign, Mish), each written as a function of its input: it fuses into the elementwise chain
//! around it and becomes one 256-entry table, like any other function of one int8 tensor.

use super::Importer;
use crate::elementwise::{Binary, Expr, Unary};
use crate::node::Ctx;
use crate::Result;

fn x() -> Expr {
    Expr::Input
}

fn c(v: f64) -> Expr {
    Expr::Const(v)
}

fn relu(e: Expr) -> Expr {
    e.unary(Unary::Relu)
}

/// `max(x, 0) − α·max(−x, 0)`.
fn leaky(alpha: f64) -> Expr {
    relu(x()).binary(Binary::Sub, c(alpha).binary(Binary::Mul, relu(x().unary(Unary::Neg))))
}

/// `max(x, 0) + α·(exp(min(x, 0)/s) − 1)`: ELU for `s = 1`, CELU for `s = α`.
fn elu(alpha: f64, s: f64) -> Expr {
    let negative_part = relu(x().unary(Unary::Neg)).binary(Binary::Div, c(s)).unary(Unary::Neg);
    let tail = negative_part.unary(Unary::Exp).binary(Binary::Sub, c(1.0));
    relu(x()).binary(Binary::Add, c(alpha).binary(Binary::Mul, tail))
}

/// `max(0, min(1, α·x + β))`, with `min(1, y) = 1 − max(1 − y, 0)`.
fn hard_sigmoid(alpha: f64, beta: f64) -> Expr {
    let y = x().binary(Binary::Mul, c(alpha)).binary(Binary::Add, c(beta));
    relu(c(1.0).binary(Binary::Sub, relu(c(1.0).binary(Binary::Sub, y))))
}

/// `min(max(x, lo), hi)`; an infinite bound is no bound.
pub(super) fn clamp(lo: f64, hi: f64) -> Expr {
    let mut e = x();
    if lo.is_finite() {
        e = c(lo).binary(Binary::Add, relu(e.binary(Binary::Sub, c(lo))));
    }
    if hi.is_finite() {
        e = c(hi).binary(Binary::Sub, relu(c(hi).binary(Binary::Sub, e)));
    }
    e
}

impl Importer<'_> {
    /// The function of its input that `cx` computes, if `cx` is one of these activations.
    /// Parameters come from attributes (ONNX's defaults when absent) or, for Clip's bounds
    /// (opset 11 on) and PRelu's slope, from constant inputs.
    pub(super) fn activation(&self, cx: &Ctx<'_>) -> Result<Option<Expr>> {
        let attr = |name: &str, default: f32| f64::from(cx.float(name, default));
        Ok(Some(match cx.op() {
            "LeakyRelu" => leaky(attr("alpha", 0.01)),
            "Elu" => elu(attr("alpha", 1.0), 1.0),
            "Selu" => c(attr("gamma", 1.050_701)).binary(Binary::Mul, elu(attr("alpha", 1.673_263_2), 1.0)),
            "Celu" => {
                let alpha = attr("alpha", 1.0);
                if alpha == 0.0 || !alpha.is_finite() {
                    return Err(cx.invalid(format!("Celu's alpha must be finite and non-zero, it is {alpha}")));
                }
                elu(alpha, alpha)
            }
            "Softsign" => x().binary(Binary::Div, c(1.0).binary(Binary::Add, x().unary(Unary::Abs))),
            "Mish" => x().binary(Binary::Mul, x().unary(Unary::Softplus).unary(Unary::Tanh)),
            "HardSigmoid" => hard_sigmoid(attr("alpha", 0.2), attr("beta", 0.5)),
            "HardSwish" => x().binary(Binary::Mul, hard_sigmoid(1.0 / 6.0, 0.5)),
            "ThresholdedRelu" => {
                x().binary(Binary::Mul, x().binary(Binary::Sub, c(attr("alpha", 1.0))).unary(Unary::Step))
            }
            "Clip" => {
                let bound = |k: usize, attribute: &str, default: f32| -> Result<f64> {
                    match cx.node.input.get(k).filter(|n| !n.is_empty()) {
                        None => Ok(attr(attribute, default)),
                        Some(name) => {
                            self.consts.get(name.as_str()).and_then(|v| v.uniform()).map(f64::from).ok_or_else(|| {
                                cx.unsupported(format!("Clip's bound '{name}' must be a constant scalar"))
                            })
                        }
                    }
                };
                let (lo, hi) = (bound(1, "min", f32::NEG_INFINITY)?, bound(2, "max", f32::INFINITY)?);
                if lo > hi {
                    return Err(cx.invalid(format!("Clip's min {lo} is above its max {hi}")));
                }
                clamp(lo, hi)
            }
            "PRelu" => {
                let slope = cx.node.input.get(1).and_then(|n| self.consts.get(n.as_str())).ok_or_else(|| {
                    cx.unsupported("PRelu's slope must be a constant (a learned parameter of the model)")
                })?;
                // A slope per channel is not one function of the input: prelu.rs.
                let Some(alpha) = slope.uniform() else { return Ok(None) };
                leaky(f64::from(alpha))
            }
            _ => return Ok(None),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each function against its ONNX definition written out.
    #[test]
    fn activations_follow_their_onnx_definitions() {
        for i in -24..=24 {
            let v = f64::from(i) / 8.0;
            let close = |e: Expr, expected: f64, what: &str| {
                assert!((e.eval(v) - expected).abs() < 1e-12, "{what} at {v}: {} vs {expected}", e.eval(v));
            };
            close(leaky(0.1), if v >= 0.0 { v } else { 0.1 * v }, "LeakyRelu");
            close(elu(0.7, 1.0), if v >= 0.0 { v } else { 0.7 * (v.exp() - 1.0) }, "Elu");
            close(elu(1.5, 1.5), v.max(0.0) + (1.5 * ((v / 1.5).exp() - 1.0)).min(0.0), "Celu");
            close(hard_sigmoid(0.3, 0.4), (0.3 * v + 0.4).clamp(0.0, 1.0), "HardSigmoid");
            close(clamp(-0.3, 0.5), v.clamp(-0.3, 0.5), "Clip");
            close(clamp(f64::NEG_INFINITY, 0.5), v.min(0.5), "Clip without a lower bound");
            let softplus = (1.0 + v.exp()).ln();
            close(x().unary(Unary::Softplus), softplus, "Softplus");
        }
    }
}
