//! Shape arithmetic shared by validation, the integer inference and the lowering.

use super::numel;

/// Rows, inputs per row and outputs per row of a [`super::Op::Dense`] from its input and output
/// shapes: one row of the whole input for an output `[out]`, else one row per position of the
/// leading axes, which input and output share.
pub fn dense_dims(in_shape: &[usize], out_shape: &[usize]) -> std::result::Result<[usize; 3], String> {
    match out_shape {
        [out] => Ok([1, numel(in_shape), *out]),
        [lead @ .., out] if in_shape.len() == out_shape.len() && in_shape[..lead.len()] == *lead => {
            Ok([numel(lead), in_shape[lead.len()], *out])
        }
        _ => Err(format!("a Dense from {in_shape:?} to {out_shape:?} must keep the leading axes")),
    }
}

/// `[batch, m, k, n]` of a product of tensors of shapes `[.., m, k]` and `[.., k, n]` with
/// equal leading axes.
pub fn matmul_dims(a: &[usize], b: &[usize]) -> std::result::Result<[usize; 4], String> {
    let rank = a.len();
    if rank < 2 || b.len() != rank || a[..rank - 2] != b[..rank - 2] || a[rank - 1] != b[rank - 2] {
        return Err(format!("cannot multiply {a:?} by {b:?}: shapes [.., m, k] and [.., k, n] are required"));
    }
    Ok([numel(&a[..rank - 2]), a[rank - 2], a[rank - 1], b[rank - 1]])
}

/// Rows of a [`super::Op::Dense`] with output shape `out_shape` (positions of its leading axes).
pub fn dense_rows(out_shape: &[usize]) -> usize {
    numel(&out_shape[..out_shape.len() - 1])
}

/// `[C, H, W]` of a rank-3 shape.
pub fn chw(shape: &[usize]) -> std::result::Result<[usize; 3], String> {
    match shape {
        [c, h, w] => Ok([*c, *h, *w]),
        _ => Err(format!("expects a [C, H, W] input, got {shape:?}")),
    }
}
