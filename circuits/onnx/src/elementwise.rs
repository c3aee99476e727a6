//! Elementwise functions of one tensor, fused from chains of ONNX ops.
//!
//! PyTorch exports GELU as `x * 0.5 * (1 + erf(x / √2))`, scaling as `Mul`/`Div` by a constant,
//! and so on: several ops that each read one value of one tensor. A chain like that is one
//! function of an int8 input, so it is tabulated over the 256 input values (an
//! [`tgrid_int8::Op::Table`]) and proven by one lookup per element, whatever its length.

/// A function of one real input `x`.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// The input itself.
    Input,
    /// A constant.
    Const(f64),
    /// A function of one argument.
    Unary(Unary, Box<Expr>),
    /// Arithmetic of two functions of the same input.
    Binary(Binary, Box<Expr>, Box<Expr>),
}

/// Functions of one argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unary {
    /// The Gauss error function.
    Erf,
    /// Hyperbolic tangent.
    Tanh,
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// `e^x`.
    Exp,
    /// Square root.
    Sqrt,
    /// `1 / x`.
    Reciprocal,
    /// `-x`.
    Neg,
    /// `max(x, 0)`.
    Relu,
    /// `|x|`.
    Abs,
    /// GELU, exact (`x·Φ(x)`).
    Gelu,
    /// GELU, tanh approximation.
    GeluTanh,
    /// Natural logarithm.
    Log,
    /// `ln(1 + e^x)`, computed as `max(x, 0) + ln(1 + e^-|x|)` (no overflow for large `x`).
    Softplus,
    /// `1` for `x > 0`, else `0` (the gate of `ThresholdedRelu`).
    Step,
}

/// Arithmetic of two arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binary {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a · b`.
    Mul,
    /// `a / b`.
    Div,
    /// `a ^ b`.
    Pow,
}

impl Unary {
    /// The unary ONNX op `op`, if it is one.
    pub fn from_onnx(op: &str) -> Option<Self> {
        Some(match op {
            "Erf" => Unary::Erf,
            "Tanh" => Unary::Tanh,
            "Sigmoid" => Unary::Sigmoid,
            "Exp" => Unary::Exp,
            "Sqrt" => Unary::Sqrt,
            "Reciprocal" => Unary::Reciprocal,
            "Neg" => Unary::Neg,
            "Abs" => Unary::Abs,
            "Log" => Unary::Log,
            "Softplus" => Unary::Softplus,
            _ => return None,
        })
    }

    pub(crate) fn apply(self, x: f64) -> f64 {
        match self {
            Unary::Erf => libm::erf(x),
            Unary::Tanh => x.tanh(),
            Unary::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Unary::Exp => x.exp(),
            Unary::Sqrt => x.sqrt(),
            Unary::Reciprocal => 1.0 / x,
            Unary::Neg => -x,
            Unary::Relu => x.max(0.0),
            Unary::Abs => x.abs(),
            Unary::Gelu => 0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2)),
            Unary::GeluTanh => {
                let c = (2.0 / std::f64::consts::PI).sqrt();
                0.5 * x * (1.0 + (c * (x + 0.044_715 * x * x * x)).tanh())
            }
            Unary::Log => x.ln(),
            Unary::Softplus => x.max(0.0) + (-x.abs()).exp().ln_1p(),
            Unary::Step => {
                if x > 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
        }
    }
}

impl Binary {
    /// The binary ONNX op `op`, if it is one.
    pub fn from_onnx(op: &str) -> Option<Self> {
        Some(match op {
            "Add" => Binary::Add,
            "Sub" => Binary::Sub,
            "Mul" => Binary::Mul,
            "Div" => Binary::Div,
            "Pow" => Binary::Pow,
            _ => return None,
        })
    }

    fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            Binary::Add => a + b,
            Binary::Sub => a - b,
            Binary::Mul => a * b,
            Binary::Div => a / b,
            Binary::Pow => a.powf(b),
        }
    }
}

impl Expr {
    /// `op(self)`.
    pub fn unary(self, op: Unary) -> Self {
        Expr::Unary(op, Box::new(self))
    }

    /// `op(self, other)`.
    pub fn binary(self, op: Binary, other: Expr) -> Self {
        Expr::Binary(op, Box::new(self), Box::new(other))
    }

    /// `self(inner(x))`: `inner` in place of the input.
    pub fn compose(&self, inner: &Expr) -> Expr {
        match self {
            Expr::Input => inner.clone(),
            Expr::Const(c) => Expr::Const(*c),
            Expr::Unary(op, a) => a.compose(inner).unary(*op),
            Expr::Binary(op, a, b) => a.compose(inner).binary(*op, b.compose(inner)),
        }
    }

    /// The value at `x` (NaN or infinite where the function is undefined).
    pub fn eval(&self, x: f64) -> f64 {
        match self {
            Expr::Input => x,
            Expr::Const(c) => *c,
            Expr::Unary(op, a) => op.apply(a.eval(x)),
            Expr::Binary(op, a, b) => op.apply(a.eval(x), b.eval(x)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exported_gelu_chain_equals_gelu() {
        // x * 0.5 * (1 + erf(x / 1.4142135))  (PyTorch's decomposition, √2 as the f32 it writes)
        let sqrt2_as_exported = f64::from(std::f32::consts::SQRT_2);
        let chain = Expr::Input
            .binary(
                Binary::Mul,
                Expr::Input
                    .binary(Binary::Div, Expr::Const(sqrt2_as_exported))
                    .unary(Unary::Erf)
                    .binary(Binary::Add, Expr::Const(1.0)),
            )
            .binary(Binary::Mul, Expr::Const(0.5));
        let gelu = Expr::Input.unary(Unary::Gelu);
        for i in -40..=40 {
            let x = f64::from(i) / 8.0;
            assert!((chain.eval(x) - gelu.eval(x)).abs() < 1e-6, "at {x}");
        }
        assert!((gelu.eval(1.0) - 0.841_344_746).abs() < 1e-8);
    }

    #[test]
    fn undefined_points_are_not_finite() {
        assert!(!Expr::Input.unary(Unary::Reciprocal).eval(0.0).is_finite());
        assert!(Expr::Input.unary(Unary::Sqrt).eval(-1.0).is_nan());
    }
}
