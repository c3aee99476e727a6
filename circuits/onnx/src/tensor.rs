//! Constant tensors and the data-movement ops shared by constants and activations.
//!
//! PyTorch's exporter computes shapes at run time (`Shape`, `Gather`, `Concat`, `Unsqueeze` on
//! integers) and splits, transposes and slices activations. Shapes are fixed here, so the
//! integer arithmetic is evaluated at compile time; the data movement of an activation becomes
//! an index map (for each output element, the input element it copies), computed by running the
//! same op on the tensor of indices `0..n`.

/// A tensor of values `T` with its ONNX dimensions (the batch dimension included).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Tensor<T> {
    pub dims: Vec<usize>,
    pub data: Vec<T>,
}

/// A constant: floats or integers (int64, int32 and bool all read as integers).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Const {
    Floats(Tensor<f32>),
    Ints(Tensor<i64>),
}

/// Largest constant the importer materializes (values), against hostile shape arithmetic.
const MAX_CONST_LEN: usize = 1 << 24;

impl Const {
    pub fn dims(&self) -> &[usize] {
        match self {
            Const::Floats(t) => &t.dims,
            Const::Ints(t) => &t.dims,
        }
    }

    /// The values as floats (integers converted).
    pub fn floats(&self) -> Vec<f32> {
        match self {
            Const::Floats(t) => t.data.clone(),
            Const::Ints(t) => t.data.iter().map(|&v| v as f32).collect(),
        }
    }

    /// The values as integers, if they are integers.
    pub fn ints(&self) -> Option<&[i64]> {
        match self {
            Const::Ints(t) => Some(&t.data),
            Const::Floats(_) => None,
        }
    }

    /// The single value of a constant that holds one value (a scalar or any shape of one
    /// element), or of one whose values are all equal.
    pub fn uniform(&self) -> Option<f32> {
        let v = self.floats();
        let first = *v.first()?;
        v.iter().all(|&x| x == first).then_some(first)
    }

    /// Applies a data-movement op to the values.
    pub fn map_layout(&self, f: impl Fn(&[usize]) -> Result<Tensor<usize>, String>) -> Result<Const, String> {
        let index = f(self.dims())?;
        Ok(match self {
            Const::Floats(t) => Const::Floats(index.gather(&t.data)),
            Const::Ints(t) => Const::Ints(index.gather(&t.data)),
        })
    }
}

impl Tensor<usize> {
    /// The identity index map of `dims`.
    pub fn iota(dims: &[usize]) -> Result<Self, String> {
        let n = count(dims)?;
        Ok(Tensor { dims: dims.to_vec(), data: (0..n).collect() })
    }

    fn gather<T: Copy>(&self, values: &[T]) -> Tensor<T> {
        Tensor { dims: self.dims.clone(), data: self.data.iter().map(|&i| values[i]).collect() }
    }
}

/// Number of elements of `dims`, refusing absurd sizes.
pub(crate) fn count(dims: &[usize]) -> Result<usize, String> {
    dims.iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .filter(|&n| n <= MAX_CONST_LEN)
        .ok_or_else(|| format!("a tensor of shape {dims:?} is too large"))
}

/// Row-major strides of `dims`.
pub(crate) fn strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * dims[i + 1];
    }
    s
}

/// Normalizes an ONNX axis (negative counts from the end) for a tensor of rank `rank`.
pub(crate) fn axis(a: i64, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    let v = if a < 0 { a + r } else { a };
    if (0..r).contains(&v) {
        Ok(v as usize)
    } else {
        Err(format!("axis {a} is outside a tensor of rank {rank}"))
    }
}

impl<T: Copy> Tensor<T> {
    /// The element at each output position of a tensor of `out_dims`, from a function giving
    /// the input multi-index of an output multi-index.
    fn remap(&self, out_dims: Vec<usize>, source: impl Fn(&[usize], &mut [usize])) -> Result<Tensor<T>, String> {
        let n = count(&out_dims)?;
        let in_strides = strides(&self.dims);
        let mut out_index = vec![0usize; out_dims.len()];
        let mut in_index = vec![0usize; self.dims.len()];
        let mut data = Vec::with_capacity(n);
        for _ in 0..n {
            source(&out_index, &mut in_index);
            let flat: usize = in_index.iter().zip(&in_strides).map(|(i, s)| i * s).sum();
            data.push(self.data[flat]);
            // Next multi-index, row-major.
            for k in (0..out_dims.len()).rev() {
                out_index[k] += 1;
                if out_index[k] < out_dims[k] {
                    break;
                }
                out_index[k] = 0;
            }
        }
        Ok(Tensor { dims: out_dims, data })
    }

    /// ONNX Transpose.
    pub fn transpose(&self, perm: &[i64]) -> Result<Self, String> {
        let rank = self.dims.len();
        let perm: Vec<usize> = if perm.is_empty() {
            (0..rank).rev().collect()
        } else {
            perm.iter().map(|&p| axis(p, rank)).collect::<Result<_, _>>()?
        };
        let mut seen = vec![false; rank];
        if perm.len() != rank || perm.iter().any(|&p| std::mem::replace(&mut seen[p], true)) {
            return Err(format!("perm {perm:?} is not a permutation of {rank} axes"));
        }
        let out_dims = perm.iter().map(|&p| self.dims[p]).collect();
        self.remap(out_dims, |o, i| perm.iter().enumerate().for_each(|(k, &p)| i[p] = o[k]))
    }

    /// ONNX Slice with already-read starts, ends, axes and steps.
    pub fn slice(
        &self,
        starts: &[i64],
        ends: &[i64],
        axes: Option<&[i64]>,
        steps: Option<&[i64]>,
    ) -> Result<Self, String> {
        let rank = self.dims.len();
        let axes: Vec<usize> = match axes {
            Some(a) => a.iter().map(|&a| axis(a, rank)).collect::<Result<_, _>>()?,
            None => (0..starts.len()).collect(),
        };
        if starts.len() != axes.len() || ends.len() != axes.len() || steps.is_some_and(|s| s.len() != axes.len()) {
            return Err("starts, ends, axes and steps differ in length".into());
        }
        // Per axis: first index and step; output length.
        let mut first = vec![0i64; rank];
        let mut step = vec![1i64; rank];
        let mut out_dims = self.dims.clone();
        for (k, &a) in axes.iter().enumerate() {
            let d = self.dims[a] as i64;
            let s = steps.map_or(1, |s| s[k]);
            if s == 0 {
                return Err("a Slice step of 0".into());
            }
            let clampi = |v: i64, lo: i64, hi: i64| if v < 0 { (v + d).max(lo) } else { v.min(hi) };
            let (b, e, len) = if s > 0 {
                let (b, e) = (clampi(starts[k], 0, d), clampi(ends[k], 0, d));
                (b, e, if e > b { (e - b + s - 1) / s } else { 0 })
            } else {
                let (b, e) = (clampi(starts[k], -1, d - 1), clampi(ends[k], -1, d - 1));
                (b, e, if b > e { (b - e - s - 1) / -s } else { 0 })
            };
            let _ = e;
            if len == 0 {
                return Err(format!("Slice leaves axis {a} empty"));
            }
            first[a] = b;
            step[a] = s;
            out_dims[a] = len as usize;
        }
        self.remap(out_dims, |o, i| {
            for k in 0..rank {
                i[k] = (first[k] + step[k] * o[k] as i64) as usize;
            }
        })
    }

    /// ONNX Gather along `axis` with constant `indices` (negative indices count from the end).
    pub fn gather_axis(&self, axis_: i64, indices: &Tensor<i64>) -> Result<Self, String> {
        let rank = self.dims.len();
        let a = axis(axis_, rank)?;
        let d = self.dims[a] as i64;
        let idx: Vec<usize> = indices
            .data
            .iter()
            .map(|&i| {
                let v = if i < 0 { i + d } else { i };
                if (0..d).contains(&v) {
                    Ok(v as usize)
                } else {
                    Err(format!("Gather index {i} is outside an axis of {d}"))
                }
            })
            .collect::<Result<_, _>>()?;
        let q = indices.dims.len();
        let out_dims: Vec<usize> =
            self.dims[..a].iter().chain(&indices.dims).chain(&self.dims[a + 1..]).copied().collect();
        let idx_strides = strides(&indices.dims);
        self.remap(out_dims, |o, i| {
            i[..a].copy_from_slice(&o[..a]);
            let flat: usize = o[a..a + q].iter().zip(&idx_strides).map(|(x, s)| x * s).sum();
            i[a] = idx[flat];
            i[a + 1..].copy_from_slice(&o[a + q..]);
        })
    }

    /// The same data under another shape.
    pub fn reshaped(&self, dims: Vec<usize>) -> Result<Self, String> {
        if count(&dims)? != self.data.len() {
            return Err(format!("shape {dims:?} does not hold {} values", self.data.len()));
        }
        Ok(Tensor { dims, data: self.data.clone() })
    }
}

/// ONNX Concat of tensors along `axis` (every other dimension equal).
pub(crate) fn concat<T: Copy>(parts: &[Tensor<T>], axis_: i64) -> Result<Tensor<T>, String> {
    let first = parts.first().ok_or("Concat of nothing")?;
    let rank = first.dims.len();
    let a = axis(axis_, rank)?;
    let mut dims = first.dims.clone();
    dims[a] = 0;
    for p in parts {
        let same = p.dims.len() == rank && (0..rank).all(|k| k == a || p.dims[k] == first.dims[k]);
        if !same {
            return Err(format!("Concat of shapes {:?} and {:?} along axis {a}", first.dims, p.dims));
        }
        dims[a] += p.dims[a];
    }
    count(&dims)?;
    let outer: usize = dims[..a].iter().product();
    let mut data = Vec::new();
    for o in 0..outer {
        for p in parts {
            let block: usize = p.dims[a..].iter().product();
            data.extend_from_slice(&p.data[o * block..(o + 1) * block]);
        }
    }
    Ok(Tensor { dims, data })
}

/// ONNX Reshape semantics (`0` copies the input dimension, `-1` infers one).
pub(crate) fn reshape_dims(current: &[usize], spec: &[i64], allow_zero: bool) -> Result<Vec<usize>, String> {
    let total = count(current)?;
    let mut out = Vec::with_capacity(spec.len());
    let mut infer = None;
    for (i, &d) in spec.iter().enumerate() {
        match d {
            0 if !allow_zero => out.push(*current.get(i).ok_or("0 in a shape beyond the input rank")?),
            -1 if infer.is_none() => {
                infer = Some(i);
                out.push(1);
            }
            d if d > 0 => out.push(usize::try_from(d).map_err(|_| format!("shape {spec:?}"))?),
            _ => return Err(format!("invalid shape {spec:?}")),
        }
    }
    let known = out.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).ok_or("shape overflows")?;
    if let Some(i) = infer {
        if known == 0 || total % known != 0 {
            return Err(format!("cannot infer shape {spec:?} for {total} values"));
        }
        out[i] = total / known;
    }
    if count(&out)? != total {
        return Err(format!("shape {spec:?} does not hold {total} values"));
    }
    Ok(out)
}

/// Numpy broadcasting of two shapes.
pub(crate) fn broadcast_dims(a: &[usize], b: &[usize]) -> Result<Vec<usize>, String> {
    let rank = a.len().max(b.len());
    let at = |s: &[usize], k: usize| if k + s.len() >= rank { s[k + s.len() - rank] } else { 1 };
    (0..rank)
        .map(|k| match (at(a, k), at(b, k)) {
            (x, y) if x == y || y == 1 => Ok(x),
            (1, y) => Ok(y),
            (x, y) => Err(format!("shapes {a:?} and {b:?} do not broadcast ({x} vs {y})")),
        })
        .collect()
}

/// `values` (of shape `dims`) broadcast to `to`.
pub(crate) fn broadcast_to<T: Copy>(t: &Tensor<T>, to: &[usize]) -> Result<Tensor<T>, String> {
    if broadcast_dims(&t.dims, to)? != to {
        return Err(format!("shape {:?} does not broadcast to {to:?}", t.dims));
    }
    let pad = to.len() - t.dims.len();
    let mut full = vec![1; pad];
    full.extend_from_slice(&t.dims);
    let expanded = Tensor { dims: full.clone(), data: t.data.clone() };
    expanded.remap(to.to_vec(), |o, i| {
        for k in 0..o.len() {
            i[k] = if full[k] == 1 { 0 } else { o[k] };
        }
    })
}

/// Elementwise arithmetic of two constants with broadcasting, integers staying integers.
pub(crate) fn arithmetic(op: &str, a: &Const, b: &Const) -> Result<Const, String> {
    let dims = broadcast_dims(a.dims(), b.dims())?;
    match (a, b) {
        (Const::Ints(x), Const::Ints(y)) => {
            let (x, y) = (broadcast_to(x, &dims)?, broadcast_to(y, &dims)?);
            let f = |p: i64, q: i64| -> Result<i64, String> {
                match op {
                    "Add" => p.checked_add(q),
                    "Sub" => p.checked_sub(q),
                    "Mul" => p.checked_mul(q),
                    "Div" => p.checked_div(q),
                    "Equal" => Some(i64::from(p == q)),
                    _ => None,
                }
                .ok_or_else(|| format!("{op} of integers {p} and {q} is not representable"))
            };
            let data = x.data.iter().zip(&y.data).map(|(&p, &q)| f(p, q)).collect::<Result<_, _>>()?;
            Ok(Const::Ints(Tensor { dims, data }))
        }
        _ => {
            let fa = Tensor { dims: a.dims().to_vec(), data: a.floats() };
            let fb = Tensor { dims: b.dims().to_vec(), data: b.floats() };
            let (x, y) = (broadcast_to(&fa, &dims)?, broadcast_to(&fb, &dims)?);
            if op == "Equal" {
                let data = x.data.iter().zip(&y.data).map(|(&p, &q)| i64::from(p == q)).collect();
                return Ok(Const::Ints(Tensor { dims, data }));
            }
            let f = |p: f32, q: f32| match op {
                "Add" => p + q,
                "Sub" => p - q,
                "Mul" => p * q,
                "Div" => p / q,
                "Pow" => p.powf(q),
                _ => f32::NAN,
            };
            let data: Vec<f32> = x.data.iter().zip(&y.data).map(|(&p, &q)| f(p, q)).collect();
            if data.iter().any(|v| !v.is_finite()) {
                return Err(format!("{op} of constants gives a non-finite value"));
            }
            Ok(Const::Floats(Tensor { dims, data }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(dims: &[usize]) -> Tensor<usize> {
        Tensor::iota(dims).unwrap()
    }

    #[test]
    fn transpose_swaps_axes_like_numpy() {
        let x = t(&[2, 3]);
        let y = x.transpose(&[1, 0]).unwrap();
        assert_eq!(y.dims, [3, 2]);
        assert_eq!(y.data, [0, 3, 1, 4, 2, 5]);
        let z = t(&[1, 2, 2, 3]).transpose(&[0, 2, 1, 3]).unwrap();
        assert_eq!(z.data, [0, 1, 2, 6, 7, 8, 3, 4, 5, 9, 10, 11]);
        assert!(x.transpose(&[0, 0]).is_err());
    }

    #[test]
    fn slice_handles_negative_and_clamped_bounds_and_steps() {
        let x = t(&[1, 6]);
        assert_eq!(x.slice(&[2], &[i64::MAX], Some(&[1]), None).unwrap().data, [2, 3, 4, 5]);
        assert_eq!(x.slice(&[-2], &[6], Some(&[-1]), None).unwrap().data, [4, 5]);
        assert_eq!(x.slice(&[0], &[6], Some(&[1]), Some(&[2])).unwrap().data, [0, 2, 4]);
        assert_eq!(x.slice(&[-1], &[i64::MIN], Some(&[1]), Some(&[-2])).unwrap().data, [5, 3, 1]);
        assert!(x.slice(&[3], &[3], Some(&[1]), None).is_err(), "empty slices are refused");
    }

    #[test]
    fn gather_with_scalar_and_vector_indices() {
        let x = t(&[2, 3]);
        let scalar = Tensor { dims: vec![], data: vec![-1i64] };
        let y = x.gather_axis(1, &scalar).unwrap();
        assert_eq!((y.dims.as_slice(), y.data.as_slice()), (&[2usize][..], &[2usize, 5][..]));
        let v = Tensor { dims: vec![2], data: vec![1i64, 0] };
        assert_eq!(x.gather_axis(0, &v).unwrap().data, [3, 4, 5, 0, 1, 2]);
        assert!(x.gather_axis(0, &Tensor { dims: vec![1], data: vec![2] }).is_err());
    }

    #[test]
    fn concat_reshape_and_broadcast() {
        let a = Tensor { dims: vec![2, 1], data: vec![1, 2] };
        let b = Tensor { dims: vec![2, 2], data: vec![3, 4, 5, 6] };
        assert_eq!(concat(&[a.clone(), b], 1).unwrap().data, [1, 3, 4, 2, 5, 6]);
        assert_eq!(reshape_dims(&[1, 4, 6], &[0, -1], false).unwrap(), [1, 24]);
        assert!(reshape_dims(&[1, 4, 6], &[5, -1], false).is_err());
        assert_eq!(broadcast_to(&a, &[3, 2, 2]).unwrap().data, [1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2]);
        assert!(broadcast_dims(&[2, 3], &[4, 3]).is_err());
    }

    #[test]
    fn absurd_shapes_are_refused() {
        assert!(count(&[1 << 20, 1 << 20]).is_err());
        assert!(count(&[usize::MAX, 2]).is_err());
    }
}
