//! Custom gates that compute SHA-256 in about 180 rows per compression instead of ~1,510.
//!
//! A row holds one of three operations, each on the 32 bits of the words it mixes (boolean,
//! recomposed into the words, least significant first) so that every bitwise function is a
//! polynomial of degree at most 3 in the bits:
//!
//! * [`RoundAGate`]: `t2 = Σ0(a) + Maj(a, b, c)` (an integer below 2^33, not reduced);
//! * [`RoundEGate`]: `T1 = h + Σ1(e) + Ch(e, f, g) + K_t + W_t`, then the next round's
//!   `a' = T1 + t2 mod 2^32` and `e' = d + T1 mod 2^32` with their carries as bits;
//! * [`ScheduleGate`]: `W_t = σ1(W_{t-2}) + W_{t-7} + σ0(W_{t-15}) + W_{t-16} mod 2^32`, with the
//!   bits of `W_t` too.
//!
//! A round is two rows (`RoundAGate`, `RoundEGate`), the message schedule one row per word.
//! Bitwise XOR of bits is `x + y − 2xy`, `Maj = ab + ac + bc − 2abc`, `Ch = g + e(f − g)`.
//!
//! Ranges: a word is below 2^32 once a gate has decomposed it. `a'` and `e'` are decomposed by
//! the next round's gates (as `a` and `e`), every schedule word by its own gate, so a carry is
//! unique; the words of the last round feed only the final `H + state` additions, which are
//! split into 32 bits and a carry (see `compress`), and so are right modulo 2^32 whatever carry
//! a prover chose for them. All sums stay below 2^36, far below the field order.

mod algebra;
mod compress;
mod gate;
mod rows;
#[cfg(test)]
mod tests;

pub use gate::{Sha256Gate, ShaRowGenerator};
pub use rows::{RoundA, RoundE, Schedule};

/// `t2 = Σ0(a) + Maj(a, b, c)`.
pub type RoundAGate = Sha256Gate<RoundA>;
/// `T1`, then `a'` and `e'`.
pub type RoundEGate = Sha256Gate<RoundE>;
/// One message schedule word.
pub type ScheduleGate = Sha256Gate<Schedule>;

#[doc(hidden)]
pub use algebra::Algebra;
pub(crate) use compress::sha256_bits;
pub use gate::ShaRow;
