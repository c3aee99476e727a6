//! The three SHA-256 rows: wire layouts, constraints and honest witnesses.

use super::algebra::{
    booleans, sigma_bit, sigma_native, weighted, Algebra, BIG_SIGMA0, BIG_SIGMA1, SMALL_SIGMA0, SMALL_SIGMA1,
};
use super::gate::ShaRow;

/// `v` as a word, if it is one.
fn word(v: u64) -> Option<u32> {
    u32::try_from(v).ok()
}

/// The 32 bits of a word, least significant first, on wires `start..start + 32`.
fn word_bits(value: u32, start: usize) -> impl Iterator<Item = (usize, u64)> {
    (0..32).map(move |i| (start + i, u64::from((value >> i) & 1)))
}

/// The bits at `start..start + 32`.
fn bits<V: Copy>(wires: &[V], start: usize) -> &[V] {
    &wires[start..start + 32]
}

/// `word − Σ 2^i bits[i]`.
fn recomposition<A: Algebra>(alg: &mut A, word: A::V, bits: &[A::V]) -> A::V {
    let sum = weighted(alg, bits);
    alg.sub(word, sum)
}

/// `Σ 2^i c_i` for the low `n` bits of a carry starting at wire `start`.
fn carry<A: Algebra>(alg: &mut A, wires: &[A::V], start: usize, n: usize) -> A::V {
    weighted(alg, &wires[start..start + n])
}

/// `t2 = Σ0(a) + Maj(a, b, c)`.
#[derive(Debug, Default, Clone, Copy)]
pub struct RoundA;

impl RoundA {
    /// Input words.
    pub const A: usize = 0;
    /// See [`Self::A`].
    pub const B: usize = 1;
    /// See [`Self::A`].
    pub const C: usize = 2;
    /// Output `t2`, below 2^33.
    pub const T2: usize = 3;
    const BITS_A: usize = 4;
    const BITS_B: usize = 36;
    const BITS_C: usize = 68;
}

impl ShaRow for RoundA {
    const NAME: &'static str = "RoundA";
    const NUM_WIRES: usize = 100;
    const NUM_CONSTANTS: usize = 0;
    const NUM_CONSTRAINTS: usize = 96 + 3 + 1;
    const INPUTS: &'static [usize] = &[Self::A, Self::B, Self::C];

    fn constraints<A: Algebra>(alg: &mut A, w: &[A::V], _constants: &[A::V]) -> Vec<A::V> {
        let (a, b, c) = (bits(w, Self::BITS_A), bits(w, Self::BITS_B), bits(w, Self::BITS_C));
        let mut out = Vec::with_capacity(Self::NUM_CONSTRAINTS);
        booleans(alg, &w[Self::BITS_A..Self::BITS_C + 32], &mut out);
        out.push(recomposition(alg, w[Self::A], a));
        out.push(recomposition(alg, w[Self::B], b));
        out.push(recomposition(alg, w[Self::C], c));
        let terms: Vec<A::V> = (0..32)
            .map(|i| {
                let sigma = sigma_bit(alg, BIG_SIGMA0, a, i);
                // Maj = ab + ac + bc − 2abc = ab + c(a + b − 2ab)
                let ab = alg.mul(a[i], b[i]);
                let a_plus_b = alg.add(a[i], b[i]);
                let two_ab = alg.scale(2, ab);
                let xor_ab = alg.sub(a_plus_b, two_ab);
                let c_xor = alg.mul(c[i], xor_ab);
                let maj = alg.add(ab, c_xor);
                alg.add(sigma, maj)
            })
            .collect();
        let t2 = weighted(alg, &terms);
        out.push(alg.sub(w[Self::T2], t2));
        out
    }

    fn witness(inputs: &[u64], _constants: &[u64]) -> Option<Vec<(usize, u64)>> {
        let (a, b, c) = (word(inputs[0])?, word(inputs[1])?, word(inputs[2])?);
        let maj = (a & b) ^ (a & c) ^ (b & c);
        let t2 = u64::from(sigma_native(BIG_SIGMA0, a)) + u64::from(maj);
        let mut out = vec![(Self::T2, t2)];
        out.extend(word_bits(a, Self::BITS_A).chain(word_bits(b, Self::BITS_B)).chain(word_bits(c, Self::BITS_C)));
        Some(out)
    }
}

/// `T1 = h + Σ1(e) + Ch(e, f, g) + K_t + W_t`; `a' = T1 + t2`, `e' = d + T1` modulo 2^32.
#[derive(Debug, Default, Clone, Copy)]
pub struct RoundE;

impl RoundE {
    /// Input words.
    pub const E: usize = 0;
    /// See [`Self::E`].
    pub const F: usize = 1;
    /// See [`Self::E`].
    pub const G: usize = 2;
    /// See [`Self::E`].
    pub const H: usize = 3;
    /// The schedule word `W_t`.
    pub const W: usize = 4;
    /// See [`Self::E`].
    pub const D: usize = 5;
    /// `t2` of the round's [`RoundA`] row.
    pub const T2: usize = 6;
    /// Output: the next round's `a`.
    pub const A_NEXT: usize = 7;
    /// Output: the next round's `e`.
    pub const E_NEXT: usize = 8;
    const CARRY_A: usize = 9;
    const CARRY_E: usize = 12;
    const BITS_E: usize = 15;
    const BITS_F: usize = 47;
    const BITS_G: usize = 79;
}

impl ShaRow for RoundE {
    const NAME: &'static str = "RoundE";
    const NUM_WIRES: usize = 111;
    const NUM_CONSTANTS: usize = 1;
    const NUM_CONSTRAINTS: usize = 96 + 6 + 3 + 2;
    const INPUTS: &'static [usize] = &[Self::E, Self::F, Self::G, Self::H, Self::W, Self::D, Self::T2];

    fn constraints<A: Algebra>(alg: &mut A, w: &[A::V], constants: &[A::V]) -> Vec<A::V> {
        let (e, f, g) = (bits(w, Self::BITS_E), bits(w, Self::BITS_F), bits(w, Self::BITS_G));
        let mut out = Vec::with_capacity(Self::NUM_CONSTRAINTS);
        booleans(alg, &w[Self::BITS_E..Self::BITS_G + 32], &mut out);
        booleans(alg, &w[Self::CARRY_A..Self::CARRY_E + 3], &mut out);
        out.push(recomposition(alg, w[Self::E], e));
        out.push(recomposition(alg, w[Self::F], f));
        out.push(recomposition(alg, w[Self::G], g));
        let terms: Vec<A::V> = (0..32)
            .map(|i| {
                let sigma = sigma_bit(alg, BIG_SIGMA1, e, i);
                // Ch = g + e(f − g)
                let f_minus_g = alg.sub(f[i], g[i]);
                let e_f_minus_g = alg.mul(e[i], f_minus_g);
                let ch = alg.add(g[i], e_f_minus_g);
                alg.add(sigma, ch)
            })
            .collect();
        let mixed = weighted(alg, &terms);
        let h_k = alg.add(w[Self::H], constants[0]);
        let h_k_w = alg.add(h_k, w[Self::W]);
        let t1 = alg.add(mixed, h_k_w);
        for (next, carry_start, addend) in
            [(Self::A_NEXT, Self::CARRY_A, Self::T2), (Self::E_NEXT, Self::CARRY_E, Self::D)]
        {
            let c = carry(alg, w, carry_start, 3);
            let overflow = alg.scale(1 << 32, c);
            let lhs = alg.add(w[next], overflow);
            let rhs = alg.add(t1, w[addend]);
            out.push(alg.sub(lhs, rhs));
        }
        out
    }

    fn witness(inputs: &[u64], constants: &[u64]) -> Option<Vec<(usize, u64)>> {
        let [e, f, g, h, w, d, t2]: [u64; 7] = inputs.try_into().ok()?;
        let (e, f, g, h, w, d) = (word(e)?, word(f)?, word(g)?, word(h)?, word(w)?, word(d)?);
        if t2 >= 1 << 33 {
            return None;
        }
        let ch = (e & f) ^ (!e & g);
        let t1 = u64::from(h) + u64::from(sigma_native(BIG_SIGMA1, e)) + u64::from(ch) + constants[0] + u64::from(w);
        let (a_sum, e_sum) = (t1 + t2, t1 + u64::from(d));
        let mut out = vec![(Self::A_NEXT, a_sum & 0xffff_ffff), (Self::E_NEXT, e_sum & 0xffff_ffff)];
        for (start, sum) in [(Self::CARRY_A, a_sum), (Self::CARRY_E, e_sum)] {
            out.extend((0..3).map(|i| (start + i, (sum >> (32 + i)) & 1)));
        }
        out.extend(word_bits(e, Self::BITS_E).chain(word_bits(f, Self::BITS_F)).chain(word_bits(g, Self::BITS_G)));
        Some(out)
    }
}

/// `W_t = σ1(W_{t-2}) + W_{t-7} + σ0(W_{t-15}) + W_{t-16}` modulo 2^32.
#[derive(Debug, Default, Clone, Copy)]
pub struct Schedule;

impl Schedule {
    /// `W_{t-2}`.
    pub const W2: usize = 0;
    /// `W_{t-7}`.
    pub const W7: usize = 1;
    /// `W_{t-15}`.
    pub const W15: usize = 2;
    /// `W_{t-16}`.
    pub const W16: usize = 3;
    /// Output `W_t`, decomposed in this row.
    pub const OUT: usize = 4;
    const CARRY: usize = 5;
    const BITS_W2: usize = 7;
    const BITS_W15: usize = 39;
    const BITS_OUT: usize = 71;
}

impl ShaRow for Schedule {
    const NAME: &'static str = "Schedule";
    const NUM_WIRES: usize = 103;
    const NUM_CONSTANTS: usize = 0;
    const NUM_CONSTRAINTS: usize = 96 + 2 + 3 + 1;
    const INPUTS: &'static [usize] = &[Self::W2, Self::W7, Self::W15, Self::W16];

    fn constraints<A: Algebra>(alg: &mut A, w: &[A::V], _constants: &[A::V]) -> Vec<A::V> {
        let (w2, w15, out_bits) = (bits(w, Self::BITS_W2), bits(w, Self::BITS_W15), bits(w, Self::BITS_OUT));
        let mut out = Vec::with_capacity(Self::NUM_CONSTRAINTS);
        booleans(alg, &w[Self::BITS_W2..Self::BITS_OUT + 32], &mut out);
        booleans(alg, &w[Self::CARRY..Self::CARRY + 2], &mut out);
        out.push(recomposition(alg, w[Self::W2], w2));
        out.push(recomposition(alg, w[Self::W15], w15));
        out.push(recomposition(alg, w[Self::OUT], out_bits));
        let terms: Vec<A::V> = (0..32)
            .map(|i| {
                let s1 = sigma_bit(alg, SMALL_SIGMA1, w2, i);
                let s0 = sigma_bit(alg, SMALL_SIGMA0, w15, i);
                alg.add(s1, s0)
            })
            .collect();
        let sigmas = weighted(alg, &terms);
        let words = alg.add(w[Self::W7], w[Self::W16]);
        let sum = alg.add(sigmas, words);
        let c = carry(alg, w, Self::CARRY, 2);
        let overflow = alg.scale(1 << 32, c);
        let lhs = alg.add(w[Self::OUT], overflow);
        out.push(alg.sub(lhs, sum));
        out
    }

    fn witness(inputs: &[u64], _constants: &[u64]) -> Option<Vec<(usize, u64)>> {
        let [w2, w7, w15, w16]: [u64; 4] = inputs.try_into().ok()?;
        let (w2, w7, w15, w16) = (word(w2)?, word(w7)?, word(w15)?, word(w16)?);
        let sum = u64::from(sigma_native(SMALL_SIGMA1, w2))
            + u64::from(w7)
            + u64::from(sigma_native(SMALL_SIGMA0, w15))
            + u64::from(w16);
        let sum_word = (sum & 0xffff_ffff) as u32;
        let mut out = vec![(Self::OUT, u64::from(sum_word))];
        out.extend((0..2).map(|i| (Self::CARRY + i, (sum >> (32 + i)) & 1)));
        out.extend(
            word_bits(w2, Self::BITS_W2)
                .chain(word_bits(w15, Self::BITS_W15))
                .chain(word_bits(sum_word, Self::BITS_OUT)),
        );
        Some(out)
    }
}
