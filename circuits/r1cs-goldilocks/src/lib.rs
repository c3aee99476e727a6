#![doc = r#"
Goldilocks (p = 2^64 − 2^32 + 1) and plonky2's quadratic extension emulated in BN254 R1CS
(arkworks 0.6), plus the Goldilocks ↔ BN254 encodings of the Groth16 wrapper's outer hasher.

# Bound tracking

A [`GoldilocksVar`] is **one** native `Fr` variable holding a non-negative integer below
`2^bits`; the element it stands for is that integer mod p. The bound lives in the Rust value, not
in the circuit. Additions, subtractions (`a + k·p − b`, with `k·p` above `b`'s bound) and products
by constants are free linear combinations; a variable product is one constraint. Before any
operation whose result could exceed 2^[`MAX_BITS`] (= 2^252), an operand is reduced: witness a
quotient below `2^(bits−63)` and a canonical remainder, check `x = q·p + rem`. Every integer stays
far enough below r ≈ 2^253.6 that no relation wraps mod r, so each check holds over the integers.

Canonical form (value < p: 64 bits + one canonicity constraint) is only paid where it matters:
values that are packed into the transcript, bit-decomposed, or returned by [`GoldilocksVar::reduce`].
Equality mod p ([`GoldilocksVar::enforce_equal_mod_p`]) needs only a range-checked quotient.

Every hint (quotient, remainder, inverse, bit, flag, limb split) is range-checked or multiplied
into a check; the crate's tests forge each one through a test-only fault-injection hook and
assert which constraint rejects it.

# Constraint counts (measured by `tests::counts`)

| operation | constraints |
|---|---|
| canonical witness (`new_witness_canonical`) | 65 |
| `u64` witness (range check only) | 64 |
| base `mul` (no reduction) | 1 |
| `reduce` of a 128-bit product | 131 |
| `reduce` of a 252-bit value | 255 |
| `enforce_equal_mod_p` of a 128-bit product and a canonical value | 67 |
| base `inverse` | 133 |
| base `mul` chain `acc·x` with canonical `x`, amortized (a 192-bit `acc` is reduced every other step) | 98 |
| ext `mul` (lazy) / `square` | 4 / 3 |
| ext `mul` chain `acc·x` with canonical `x`, amortized (reduce both components every other step) | 204 |
| ext `mul` + `reduce` (canonical inputs) | 271 |
| ext `inverse` | 273 |
| `pack3` (canonical inputs) | 0 |
| `unpack_rate` (62 + 61 for `hi`, 3 × 68 per limb, 1 link) | 328 |
| `hash_limbs` (254 bits, 61 for the top 62 bits ≤ H − 1, 1 link) | 316 |
| `poseidon_hash_no_pad` of 8 elements (one plonky2 Poseidon permutation, canonical output) | 65,211 |
"#]

mod base;
mod bits;
mod encoding;
mod ext;
mod fault;
mod poseidon;

#[cfg(test)]
mod tests;

pub use base::{GoldilocksVar, MAX_BITS};
pub use bits::P;
pub use encoding::{hash_limbs, pack3, unpack_rate};
pub use ext::{GoldilocksExt, GoldilocksExtVar};
pub use poseidon::{poseidon_hash_no_pad, poseidon_permute};
