//! The builder extension trait: u32 targets and SHA-256 entry points.

use plonky2::field::extension::Extendable;
use plonky2::hash::hash_types::RichField;
use plonky2::iop::target::{BoolTarget, Target};
use plonky2::plonk::circuit_builder::CircuitBuilder;

use crate::core::{Bit, RowKind, Sha256Circuit, WordId};
use crate::targets::{Sha256DigestTarget, U32Target};

/// SHA-256 and u32 gadgets for a plonky2 [`CircuitBuilder`].
///
/// Costs below are rows of `CircuitConfig::standard_recursion_config()` (20 arithmetic ops or
/// one 63-limb `BaseSumGate` per row) as measured by the crate's `costs` test; see the crate
/// documentation for the measured totals. Constant wires (round constants, IV, offsets) are
/// shared across every hash in a circuit and are added at build time, two per `ConstantGate` row.
pub trait CircuitBuilderSha256<F: RichField + Extendable<D>, const D: usize> {
    /// A new virtual target, range checked to 32 bits. Cost: one row.
    fn add_virtual_u32(&mut self) -> U32Target;

    /// `n` new range-checked virtual targets. Cost: `n` rows.
    fn add_virtual_u32s(&mut self, n: usize) -> Vec<U32Target>;

    /// A constant u32. Cost: a shared constant wire.
    fn constant_u32(&mut self, value: u32) -> U32Target;

    /// Proves `x < 2^32` (one `BaseSumGate` row) and returns it as a [`U32Target`].
    fn range_check_u32(&mut self, x: Target) -> U32Target;

    /// Copy-constrains two u32 targets to be equal. Free (permutation argument).
    fn connect_u32(&mut self, x: U32Target, y: U32Target);

    /// The 32 bits of `x`, most significant first. Cost: one row; also proves `x < 2^32`.
    fn split_u32_be(&mut self, x: U32Target) -> [BoolTarget; 32];

    /// SHA-256 of a message of `message_len_bytes` bytes given as big-endian 32-bit words.
    ///
    /// `message` must have `message_len_bytes.div_ceil(4)` words. The last word may be partial:
    /// its unused low-order bytes are constrained to zero. Every word is split again into bits
    /// (one row each), which also proves it is a u32 whatever the caller did. The length is
    /// static, so the padding is constant and folded into the circuit.
    ///
    /// Cost: about 1,510 rows per 64-byte block plus one row per message word (measured
    /// figures in the crate documentation).
    ///
    /// # Panics
    /// If `message.len() != message_len_bytes.div_ceil(4)`.
    fn sha256_words(&mut self, message: &[U32Target], message_len_bytes: usize) -> [U32Target; 8];

    /// SHA-256 of a message given as byte targets; each byte is proven `< 256`.
    ///
    /// Cost: as [`sha256_words`](Self::sha256_words) plus about 24 ops (1.2 rows) per 4 bytes to
    /// pack the bytes into words and tie each byte to its bits.
    fn sha256_bytes(&mut self, message: &[Target]) -> [U32Target; 8];

    /// SHA-256 of a bit string (any length, most significant bit of each byte first), returning
    /// the digest's words and bits.
    ///
    /// The bits must be boolean: `BoolTarget`s from plonky2 gadgets, from
    /// [`split_u32_be`](Self::split_u32_be) or from an earlier digest are; builder constants
    /// (`_true()`, `_false()`) are folded into the circuit. Each message word costs one row to
    /// pack its bits (instead of one row to split it in [`sha256_words`](Self::sha256_words)).
    fn sha256_bits(&mut self, message: &[BoolTarget]) -> Sha256DigestTarget;

    /// [`sha256_bits`](Self::sha256_bits) with this crate's custom gates ([`crate::gates`]): the
    /// same digest in about 180 rows per 64-byte block instead of ~1,510, for circuits that
    /// declare the three gates (each gate type also adds its constraints to every recursive
    /// verifier of the circuit).
    fn sha256_bits_gated(&mut self, message: &[BoolTarget]) -> Sha256DigestTarget;
}

impl<F: RichField + Extendable<D>, const D: usize> CircuitBuilderSha256<F, D> for CircuitBuilder<F, D> {
    fn add_virtual_u32(&mut self) -> U32Target {
        let t = self.add_virtual_target();
        self.range_check_u32(t)
    }

    fn add_virtual_u32s(&mut self, n: usize) -> Vec<U32Target> {
        (0..n).map(|_| self.add_virtual_u32()).collect()
    }

    fn constant_u32(&mut self, value: u32) -> U32Target {
        U32Target(self.constant(F::from_canonical_u32(value)))
    }

    fn range_check_u32(&mut self, x: Target) -> U32Target {
        self.split_u32_be(U32Target(x));
        U32Target(x)
    }

    fn connect_u32(&mut self, x: U32Target, y: U32Target) {
        self.connect(x.0, y.0);
    }

    fn split_u32_be(&mut self, x: U32Target) -> [BoolTarget; 32] {
        let mut bits = self.split_le(x.0, 32);
        bits.reverse();
        bits.try_into().expect("32 bits")
    }

    fn sha256_words(&mut self, message: &[U32Target], message_len_bytes: usize) -> [U32Target; 8] {
        sha256_words_inner(self, message, message_len_bytes).0.words
    }

    fn sha256_bytes(&mut self, message: &[Target]) -> [U32Target; 8] {
        let mut c = Sha256Circuit::new(self);
        let words: Vec<WordId> = message
            .chunks(4)
            .enumerate()
            .map(|(index, bytes)| {
                let pad = (bytes.len() < 4).then(|| 8 * (4 - bytes.len()) - 1);
                c.bytes_word(bytes, pad, index)
            })
            .collect();
        hash_padded(&mut c, words, 8 * message.len()).words
    }

    fn sha256_bits(&mut self, message: &[BoolTarget]) -> Sha256DigestTarget {
        let mut c = Sha256Circuit::new(self);
        let words: Vec<WordId> = message
            .chunks(32)
            .map(|chunk| {
                let r = chunk.len();
                let mut bits = [Bit::Const(false); 32];
                for (j, &b) in chunk.iter().enumerate() {
                    bits[31 - j] = c.as_bit(b);
                }
                if r < 32 {
                    bits[31 - r] = Bit::Const(true);
                }
                c.bits_word(bits)
            })
            .collect();
        hash_padded(&mut c, words, message.len())
    }

    fn sha256_bits_gated(&mut self, message: &[BoolTarget]) -> Sha256DigestTarget {
        crate::gates::sha256_bits(self, message)
    }
}

/// [`CircuitBuilderSha256::sha256_words`], also returning the roles of the `BaseSumGate` rows
/// it added (tests aim faults at them).
pub(crate) fn sha256_words_inner<F: RichField + Extendable<D>, const D: usize>(
    builder: &mut CircuitBuilder<F, D>,
    message: &[U32Target],
    message_len_bytes: usize,
) -> (Sha256DigestTarget, Vec<(usize, RowKind)>) {
    assert_eq!(
        message.len(),
        message_len_bytes.div_ceil(4),
        "a {message_len_bytes}-byte message takes {} words",
        message_len_bytes.div_ceil(4)
    );
    let mut c = Sha256Circuit::new(builder);
    let words: Vec<WordId> = message
        .iter()
        .enumerate()
        .map(|(index, w)| {
            let used = (message_len_bytes - 4 * index).min(4);
            let zero_low = 8 * (4 - used);
            let pad = (used < 4).then(|| zero_low - 1);
            c.u32_word(w.0, zero_low, pad, index)
        })
        .collect();
    let digest = hash_padded(&mut c, words, 8 * message_len_bytes);
    (digest, c.rows)
}

/// Completes the padding of a message whose data words (with the `1` bit already placed if the
/// length is not a multiple of 32 bits) are `words`, hashes it and exports the digest.
fn hash_padded<F: RichField + Extendable<D>, const D: usize>(
    c: &mut Sha256Circuit<'_, F, D>,
    mut words: Vec<WordId>,
    len_bits: usize,
) -> Sha256DigestTarget {
    if len_bits % 32 == 0 {
        words.push(c.const_word(0x8000_0000));
    }
    while words.len() % 16 != 14 {
        words.push(c.const_word(0));
    }
    let len = len_bits as u64;
    words.push(c.const_word((len >> 32) as u32));
    words.push(c.const_word(len as u32));
    debug_assert_eq!(words.len(), 16 * crate::native::num_blocks(len_bits));

    let digest = c.hash(&words);
    let mut out_words = [U32Target(Target::VirtualTarget { index: 0 }); 8];
    let mut out_bits = Vec::with_capacity(256);
    for (i, &id) in digest.iter().enumerate() {
        let (word, bits) = c.export(id);
        out_words[i] = word;
        out_bits.extend(bits.iter().rev());
    }
    Sha256DigestTarget { words: out_words, bits: out_bits.try_into().expect("256 bits") }
}
