//! The circuit values of this crate: u32 targets and digests.

use plonky2::iop::target::{BoolTarget, Target};

/// A target proven to hold a value below 2^32.
///
/// The invariant is carried by construction: [`crate::CircuitBuilderSha256::add_virtual_u32`],
/// [`range_check_u32`](crate::CircuitBuilderSha256::range_check_u32) and
/// [`constant_u32`](crate::CircuitBuilderSha256::constant_u32) establish it, and the digest words returned
/// by the SHA-256 methods satisfy it because they are sums of 32 boolean limbs. Wrapping a raw
/// target with `U32Target(t)` asserts the invariant without proving it; the SHA-256 methods do not
/// rely on it (they split every input word again), other users may.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct U32Target(pub Target);

/// A SHA-256 digest inside a circuit: its words and its bits.
#[derive(Clone, Copy, Debug)]
pub struct Sha256DigestTarget {
    /// The 8 digest words, big-endian (word 0 holds bytes 0..4).
    pub words: [U32Target; 8],
    /// The 256 digest bits in message order: byte 0 first, most significant bit first. They are
    /// `BaseSumGate` limbs (or constants), hence boolean, and can be fed straight into
    /// [`crate::CircuitBuilderSha256::sha256_bits`] (e.g. for a Merkle node `sha256(0x01 ‖ l ‖ r)`).
    pub bits: [BoolTarget; 256],
}
