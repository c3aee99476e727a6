//! TensorGrid's int8 model semantics, the bottom layer every other crate builds on: the compiled
//! model ([`QuantModel`]), its canonical encoding (whose SHA-256 is the model id) and
//! validation, the exact integer inference ([`infer::run`]), the lowering of every op to
//! per-element forms that both the inference and the circuits use, and native tensor
//! commitments. Nothing here builds a circuit; the integer meaning of every op is written down
//! in docs/quantization.md.
//!
//! Modules, bottom-up (each imports only those before it): `error`, `codec`, `model` (types,
//! bounds, shape arithmetic), `lower`, `infer`, `validate`, `encoding`; `commit` and `privacy`
//! beside them; `testing` on top.

pub mod codec;
pub mod commit;
mod encoding;
mod error;
pub mod infer;
mod lower;
mod model;
mod privacy;
pub mod testing;
#[cfg(test)]
mod tests;
mod validate;

pub use codec::check_header;
pub use commit::{commit, commit_salted, Commitment, EncryptedTensor, OutputKey, Salt};
pub use error::{Error, Result};
pub use lower::{
    affine_layout, check_layer_norm, for_each_element, layer_norm_layout, product_layout, quotient_layout, requant_for,
    requant_for_scores, window_indices, AffineLayout, Element, Term, Width, QUOTIENT_BOUND,
};
pub use model::{
    chw, dense_dims, dense_rows, matmul_dims, numel, Node, Op, Port, Ports, QParams, QuantModel, Requant,
    CIRCUIT_VERSION, INV_SQRT_BITS, MAX_CONCAT_INPUTS, MAX_LAYER_NORM_EPS, MAX_LAYER_NORM_ROW, MAX_LOOKUP_ENTRIES,
    MAX_MACS, MAX_NAME_LEN, MAX_NODES, MAX_PORTS, MAX_RANK, MAX_SOFTMAX_ROW, MAX_TENSOR_LEN, QUOTIENT_BITS, SOFTMAX_Q,
    TABLE_LEN,
};
pub use privacy::Privacy;

/// The base field of commitments and circuits (Goldilocks).
pub type F = plonky2::field::goldilocks_field::GoldilocksField;
