//! Custom plonky2 gates of the task circuits. The three arithmetic gates keep their parameters
//! (weights, fixed-point constants, zero points) in the row's constants, which are preprocessed
//! and cost nothing per proof; the Poseidon gates hold plonky2's permutation in two narrow rows
//! (degree 7, FRI rate 1/8) or five rows of degree 3 (FRI rate 1/4); a private circuit checks
//! bytes by base-4 limbs and reads tables by the bits of their index instead of plonky2's
//! lookups, and its quotient-masking row randomizes its quotient chunks. Each is evaluated
//! natively and in-circuit from one definition so recursion checks exactly the constraints the
//! prover satisfies.

mod byte_range;
mod byte_table;
mod dot_product;
mod poseidon;
mod poseidon_low_degree;
mod quotient_mask;
mod requantize;
mod serialize;
mod weighted_sum;

#[cfg(test)]
pub(crate) use byte_range::ByteRangeGenerator;
pub use byte_range::{ByteRangeGate, LIMBS as BYTE_LIMBS};
pub use byte_table::ByteTableGate;
#[cfg(test)]
pub(crate) use byte_table::ByteTableGenerator;
pub use dot_product::DotProductGate;
pub(crate) use poseidon::permute_rows;
pub use poseidon::{PoseidonHeadGate, PoseidonTailGate, HEAD_WIRES};
pub(crate) use poseidon_low_degree::{low_degree_rows, permute_low_degree_rows};
pub use poseidon_low_degree::{LowDegreeRow, PoseidonLowDegreeGate};
pub use quotient_mask::QuotientMaskGate;
#[cfg(test)]
pub(crate) use quotient_mask::QuotientMaskGenerator;
pub use requantize::RequantizeGate;
pub use weighted_sum::WeightedSumGate;

pub(crate) use serialize::{reader, ReadGenerator};

/// Wire columns random on every row of a private circuit, read only by its quotient-masking row
/// ([`QuotientMaskGate`]): `D` masks and their multiplier. The last columns of every private
/// circuit; the gadgets leave them to the masking.
pub const MASK_COLUMNS: usize = D + 1;

use crate::{D, F};

/// The witness generators of these gates, by id (for the task circuit cache).
pub(crate) const GENERATORS: &[(&str, ReadGenerator)] = &[
    ("tgrid::ByteRangeGenerator", reader::<byte_range::ByteRangeGenerator>),
    ("tgrid::ByteTableGenerator", reader::<byte_table::ByteTableGenerator>),
    ("tgrid::DotProductGenerator", reader::<dot_product::DotProductGenerator<F>>),
    ("tgrid::PoseidonHeadGenerator", reader::<poseidon::PoseidonPartGenerator<F, D>>),
    ("tgrid::PoseidonTailGenerator", reader::<poseidon::PoseidonPartGenerator<F, D>>),
    ("tgrid::PoseidonLowDegreeGenerator", reader::<poseidon_low_degree::LowDegreeRowGenerator<F, D>>),
    ("tgrid::QuotientMaskGenerator", reader::<quotient_mask::QuotientMaskGenerator>),
    ("tgrid::RequantizeOutputGenerator", reader::<requantize::RequantizeOutputGenerator<F>>),
    ("tgrid::WeightedSumGenerator", reader::<weighted_sum::WeightedSumGenerator<F>>),
];

#[cfg(test)]
mod tests;
