//! SHA-256 of a bit string with the custom gates: padding, compressions and the digest's bits.

use plonky2::field::extension::Extendable;
use plonky2::hash::hash_types::RichField;
use plonky2::iop::target::{BoolTarget, Target};
use plonky2::plonk::circuit_builder::CircuitBuilder;

use super::{RoundA, RoundAGate, RoundE, RoundEGate, Schedule, ScheduleGate};
use crate::native::{IV, K};
use crate::{Sha256DigestTarget, U32Target};

/// SHA-256 of `message` (bits, most significant bit of each byte first, any length).
pub(crate) fn sha256_bits<F: RichField + Extendable<D>, const D: usize>(
    builder: &mut CircuitBuilder<F, D>,
    message: &[BoolTarget],
) -> Sha256DigestTarget {
    let mut padded = message.to_vec();
    padded.push(builder._true());
    while padded.len() % 512 != 448 {
        padded.push(builder._false());
    }
    let len = message.len() as u64;
    for i in (0..64).rev() {
        padded.push(builder.constant_bool((len >> i) & 1 == 1));
    }
    let words: Vec<Target> = padded
        .chunks(32)
        .map(|chunk| {
            if let Some(value) = constant_word(builder, chunk) {
                builder.constant(F::from_canonical_u32(value))
            } else {
                // Most significant bit first; `le_sum` proves each bit boolean again.
                builder.le_sum(chunk.iter().rev())
            }
        })
        .collect();
    let mut state: [Target; 8] = IV.map(|v| builder.constant(F::from_canonical_u32(v)));
    let mut bits = Vec::new();
    for (n, block) in words.chunks(16).enumerate() {
        let last = n + 1 == words.len() / 16;
        let (next, next_bits) = compress(builder, state, block.try_into().expect("16 words"), last);
        state = next;
        bits = next_bits;
    }
    Sha256DigestTarget {
        words: state.map(U32Target),
        bits: bits.try_into().expect("the last compression returns 256 bits"),
    }
}

/// The value of a word whose bits are all builder constants.
fn constant_word<F: RichField + Extendable<D>, const D: usize>(
    builder: &CircuitBuilder<F, D>,
    bits: &[BoolTarget],
) -> Option<u32> {
    bits.iter().try_fold(0u32, |acc, b| {
        let bit = builder.target_as_constant(b.target)?;
        Some(acc << 1 | u32::from(bit == F::ONE))
    })
}

/// One compression of `block` (16 words below 2^32) into `state` (8 words below 2^32). Returns
/// the new state, each word split into 32 bits and a carry (so below 2^32), and, if
/// `want_bits`, the 256 bits of the new state in message order.
fn compress<F: RichField + Extendable<D>, const D: usize>(
    builder: &mut CircuitBuilder<F, D>,
    state: [Target; 8],
    block: [Target; 16],
    want_bits: bool,
) -> ([Target; 8], Vec<BoolTarget>) {
    let mut w: Vec<Target> = block.to_vec();
    for t in 16..64 {
        let row = builder.add_gate(ScheduleGate::new(), vec![]);
        for (wire, source) in
            [(Schedule::W2, t - 2), (Schedule::W7, t - 7), (Schedule::W15, t - 15), (Schedule::W16, t - 16)]
        {
            builder.connect(w[source], Target::wire(row, wire));
        }
        w.push(Target::wire(row, Schedule::OUT));
    }
    // a, b, c, d and e, f, g, h of the running state.
    let (mut a, mut e) = ([state[0], state[1], state[2], state[3]], [state[4], state[5], state[6], state[7]]);
    for (t, &k) in K.iter().enumerate() {
        let row_a = builder.add_gate(RoundAGate::new(), vec![]);
        for (wire, source) in [(RoundA::A, a[0]), (RoundA::B, a[1]), (RoundA::C, a[2])] {
            builder.connect(source, Target::wire(row_a, wire));
        }
        let row_e = builder.add_gate(RoundEGate::new(), vec![F::from_canonical_u32(k)]);
        for (wire, source) in [
            (RoundE::E, e[0]),
            (RoundE::F, e[1]),
            (RoundE::G, e[2]),
            (RoundE::H, e[3]),
            (RoundE::W, w[t]),
            (RoundE::D, a[3]),
            (RoundE::T2, Target::wire(row_a, RoundA::T2)),
        ] {
            builder.connect(source, Target::wire(row_e, wire));
        }
        a = [Target::wire(row_e, RoundE::A_NEXT), a[0], a[1], a[2]];
        e = [Target::wire(row_e, RoundE::E_NEXT), e[0], e[1], e[2]];
    }
    let working = [a[0], a[1], a[2], a[3], e[0], e[1], e[2], e[3]];
    let mut next = state;
    let mut bits = Vec::new();
    for i in 0..8 {
        let sum = builder.add(state[i], working[i]);
        // The working words of the last round are not range checked by a gate, but they equal
        // the true ones modulo 2^32 and are small integers (module documentation), so the low
        // 32 bits of this sum are right whatever carry the prover picked.
        let (low, _carry) = builder.split_low_high(sum, 32, 36);
        next[i] = low;
        if want_bits {
            let mut word_bits = builder.split_le(low, 32);
            word_bits.reverse();
            bits.extend(word_bits);
        }
    }
    (next, bits)
}
