//! The bit-level SHA-256 circuit.
//!
//! # Representation
//!
//! Every 32-bit word lives in a small arena ([`Sha256Circuit::words`]) and is described lazily:
//!
//! * `sum`: an affine combination of targets whose integer value is congruent to the word
//!   modulo 2^32 and bounded by `max` (a mod-2^32 sum is kept unreduced until someone needs it);
//! * `bits`: the 32 bits, either compile-time constants or limbs of a `BaseSumGate<2>` row (so
//!   booleanity is a gate constraint);
//! * `exact`: an affine combination equal to the word itself (`< 2^32`);
//! * `signs`: `1 - 2·bit` per position, made on demand (one arithmetic op each).
//!
//! # Cost model (`standard_recursion_config`: 20 arithmetic ops per row)
//!
//! * XOR of three bits: with signs `s = 1 - 2b`, `s(x ^ y ^ z) = s_x·s_y·s_z`, so a three-way XOR
//!   packed into a word costs two ops per bit: one product of two signs, one step of a Horner
//!   chain `acc' = c·p·s_z + 2^-gap·acc` that accumulates `Σ 2^i·term_i` directly (no bit of the
//!   result is ever materialized).
//! * A position that a word needs only as a bit in every triple (at most one per triple, tables
//!   below) enters the product as `s_x·(1 - 2y) = s_x - 2·y·s_x`, still one op, and never gets a
//!   sign: 8 of 32 signs saved per `e` word, 5–9 per schedule word.
//! * `Ch(e, f, g) = g + e·f - e·g` bitwise, so `Ch = G + Σ 2^i (e_i f_i - e_i g_i)`: two chain
//!   steps per bit and the packed `G`.
//! * `Maj(a, b, c) = (A + B + C - XOR3(a, b, c)) / 2`: one chain step per bit plus one sign
//!   product every other round, since `s_a·s_b` of round `t` is `s_b·s_c` of round `t + 1`.
//! * A mod-2^32 sum is computed in the field (each term one op, the constant is a shared
//!   constant wire), then split by one `BaseSumGate<2>` row into 32 result bits and 2–4 carry
//!   bits; unused limbs are copy-constrained to zero. The exact word is `S - 2^32·carry` (one op per
//!   carry bit), made only if needed.
//!
//! Every value is therefore fixed by gate constraints: the only witness generators involved are
//! plonky2's own (arithmetic, base-sum split, constants). Soundness of a split: all summands are
//! integers below 2^32 (bits are boolean by gate), so the field sum equals the integer sum, which
//! is far below the field order; its binary decomposition is then unique.

use std::collections::HashMap;

use plonky2::field::extension::Extendable;
use plonky2::field::types::Field;
use plonky2::gates::base_sum::BaseSumGate;
use plonky2::hash::hash_types::RichField;
use plonky2::iop::target::{BoolTarget, Target};
use plonky2::plonk::circuit_builder::CircuitBuilder;

use crate::native::{IV, K};
use crate::U32Target;

/// Wire of the sum in a `BaseSumGate` row (`BaseSumGate::WIRE_SUM`, crate-private upstream).
const SUM_WIRE: usize = 0;
/// Wire of the first limb in a `BaseSumGate` row (`BaseSumGate::START_LIMBS` upstream).
const FIRST_LIMB_WIRE: usize = 1;

/// Positions of a word used only through `Σ1` (an `e` word) that need no sign: no two share
/// a triple `{i+6, i+11, i+25}` (a maximum such set, found by exhaustive search).
const BIT_ONLY_SIGMA1_BIG: [usize; 8] = [0, 1, 2, 3, 4, 10, 11, 12];
/// Same for a schedule word used only by `σ0` (triples `{i+7, i+18, i+3}`, pairs excluded).
const BIT_ONLY_SIGMA0: [usize; 9] = [0, 1, 2, 7, 8, 14, 20, 26, 27];
/// Same for a schedule word used only by `σ1` (triples `{i+17, i+19, i+10}`, pairs excluded).
const BIT_ONLY_SIGMA1: [usize; 7] = [0, 1, 5, 6, 19, 22, 27];
/// Same for a schedule word used by both `σ0` and `σ1`.
const BIT_ONLY_SIGMA01: [usize; 5] = [0, 3, 19, 22, 27];

/// Index of a word in the arena.
pub(crate) type WordId = usize;

/// A field value known at build time or carried by a target.
#[derive(Clone, Copy, Debug)]
enum Val<F> {
    Const(F),
    Var(Target),
}

/// One bit of a word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bit {
    /// Known at build time.
    Const(bool),
    /// A target proven boolean (a `BaseSumGate<2>` limb or a caller's `BoolTarget`).
    Var(Target),
}

/// An affine combination `Σ c_i·t_i + constant`.
#[derive(Clone, Debug)]
struct Lin<F> {
    terms: Vec<(F, Target)>,
    constant: F,
}

impl<F: Field> Lin<F> {
    fn constant(c: F) -> Self {
        Self { terms: Vec::new(), constant: c }
    }

    fn var(t: Target) -> Self {
        Self { terms: vec![(F::ONE, t)], constant: F::ZERO }
    }

    fn scaled(mut self, k: F) -> Self {
        self.terms.iter_mut().for_each(|(c, _)| *c *= k);
        self.constant *= k;
        self
    }

    fn plus(mut self, other: Self) -> Self {
        for (c, t) in other.terms {
            match self.terms.iter_mut().find(|(_, u)| *u == t) {
                Some((d, _)) => *d += c,
                None => self.terms.push((c, t)),
            }
        }
        self.terms.retain(|(c, _)| *c != F::ZERO);
        self.constant += other.constant;
        self
    }
}

/// Where a `BaseSumGate` row of the SHA-256 circuit comes from (used by tests to aim faults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RowKind {
    /// Range check / bit split of message word `index`.
    Message { index: usize },
    /// Schedule word `W_t` of block `block`.
    Schedule { block: usize, t: usize },
    /// New `a` of round `t`.
    RoundA { block: usize, t: usize },
    /// New `e` of round `t`.
    RoundE { block: usize, t: usize },
    /// Chaining value word `i` after block `block`.
    Digest { block: usize, i: usize },
    /// A word made from caller bits (its packing row is plonky2's `le_sum`).
    Other,
}

struct Word<F> {
    sum: Option<Lin<F>>,
    max: u64,
    bits: Option<[Bit; 32]>,
    split: Option<(Target, Vec<Target>)>,
    exact: Option<Lin<F>>,
    signs: [Option<Target>; 32],
    kind: RowKind,
}

impl<F> Word<F> {
    fn new(kind: RowKind) -> Self {
        Self { sum: None, max: u32::MAX as u64, bits: None, split: None, exact: None, signs: [None; 32], kind }
    }
}

/// Accumulates `Σ coeff·2^pos·x·y` over bit positions in increasing order; see
/// [`Sha256Circuit::finish`].
struct Chain<F> {
    steps: Vec<(usize, F, Target, Target)>,
    constant: F,
}

impl<F: Field> Chain<F> {
    fn new() -> Self {
        Self { steps: Vec::new(), constant: F::ZERO }
    }

    /// Adds `coeff·2^pos·x·y`, folding constants.
    fn add(&mut self, pos: usize, coeff: F, x: Val<F>, y: Val<F>, one: Target) {
        debug_assert!(self.steps.last().is_none_or(|s| s.0 <= pos), "chain positions must not decrease");
        match (x, y) {
            (Val::Const(a), Val::Const(b)) => self.constant += coeff * a * b * pow2::<F>(pos),
            (Val::Const(a), Val::Var(v)) | (Val::Var(v), Val::Const(a)) => {
                if a != F::ZERO {
                    self.steps.push((pos, coeff * a, v, one));
                }
            }
            (Val::Var(v), Val::Var(w)) => self.steps.push((pos, coeff, v, w)),
        }
    }
}

type PairKey = ((usize, usize, usize), (usize, usize, usize));

/// An order-independent key for a pair of targets (`Target` has no ordering).
fn pair_key(x: Target, y: Target) -> PairKey {
    let k = |t: Target| match t {
        Target::Wire(w) => (0, w.row, w.column),
        Target::VirtualTarget { index } => (1, index, 0),
    };
    let (a, b) = (k(x), k(y));
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

fn pow2<F: Field>(k: usize) -> F {
    F::TWO.exp_u64(k as u64)
}

/// Builds SHA-256 over a sequence of message words inside a [`CircuitBuilder`].
pub(crate) struct Sha256Circuit<'a, F: RichField + Extendable<D>, const D: usize> {
    b: &'a mut CircuitBuilder<F, D>,
    one: Target,
    zero: Target,
    words: Vec<Word<F>>,
    /// Products of two sign targets, keyed by the unordered pair of factors.
    pairs: HashMap<PairKey, Target>,
    /// Every `BaseSumGate` row this circuit added, with its role.
    pub(crate) rows: Vec<(usize, RowKind)>,
}

impl<'a, F: RichField + Extendable<D>, const D: usize> Sha256Circuit<'a, F, D> {
    pub(crate) fn new(b: &'a mut CircuitBuilder<F, D>) -> Self {
        let one = b.one();
        let zero = b.zero();
        Self { b, one, zero, words: Vec::new(), pairs: HashMap::new(), rows: Vec::new() }
    }

    // ---------------------------------------------------------------- word constructors

    pub(crate) fn const_word(&mut self, value: u32) -> WordId {
        let mut w = Word::new(RowKind::Other);
        let c = Lin::constant(F::from_canonical_u32(value));
        w.sum = Some(c.clone());
        w.exact = Some(c);
        w.bits = Some(std::array::from_fn(|i| Bit::Const((value >> i) & 1 == 1)));
        self.push(w)
    }

    /// A message word from a target claimed to be a u32 whose `zero_low_bits` lowest bits must
    /// be zero; `pad_bit` (if any) is set to one as SHA-256 padding. One `BaseSumGate` row, which
    /// also proves the range and the zero bits.
    pub(crate) fn u32_word(&mut self, t: Target, zero_low_bits: usize, pad_bit: Option<usize>, index: usize) -> WordId {
        let (limbs, _) = self.split_row(t, zero_low_bits, 32, RowKind::Message { index });
        let mut w = Word::new(RowKind::Message { index });
        let mut bits: [Bit; 32] =
            std::array::from_fn(|i| if i < zero_low_bits { Bit::Const(false) } else { Bit::Var(limbs[i]) });
        let mut exact = Lin::var(t);
        if let Some(p) = pad_bit {
            assert!(p < zero_low_bits, "the padding bit must fall in the unused part");
            bits[p] = Bit::Const(true);
            exact.constant += pow2::<F>(p);
        }
        w.bits = Some(bits);
        w.sum = Some(exact.clone());
        w.exact = Some(exact);
        self.push(w)
    }

    /// A message word from up to 4 byte targets (big-endian), each proven `< 256`; unused low
    /// bytes are zero, `pad_bit` as in [`Self::u32_word`]. Costs one `BaseSumGate` row plus
    /// `len - 1` ops to pack and 7 ops per byte but the first to tie each byte to its bits.
    pub(crate) fn bytes_word(&mut self, bytes: &[Target], pad_bit: Option<usize>, index: usize) -> WordId {
        let r = bytes.len();
        assert!((1..=4).contains(&r));
        let mut acc = bytes[0];
        for &byte in &bytes[1..] {
            acc = self.b.arithmetic(F::ONE, F::from_canonical_u32(256), byte, self.one, acc);
        }
        // `acc = Σ b_j 256^(r-1-j)`; its limbs are the word's bits shifted by `8(4 - r)`.
        let shift = 8 * (4 - r);
        let (limbs, _) = self.split_row(acc, 0, 8 * r, RowKind::Message { index });
        for (j, &byte) in bytes.iter().enumerate().skip(1) {
            // Byte j holds limbs [8(r-1-j), 8(r-j)); the first byte follows from the packing.
            let lo = 8 * (r - 1 - j);
            let mut v = limbs[lo + 7];
            for k in (0..7).rev() {
                v = self.b.arithmetic(F::ONE, F::TWO, limbs[lo + k], self.one, v);
            }
            self.b.connect(v, byte);
        }
        let mut bits: [Bit; 32] =
            std::array::from_fn(|i| if i < shift { Bit::Const(false) } else { Bit::Var(limbs[i - shift]) });
        let mut exact = Lin::var(acc).scaled(pow2(shift));
        if let Some(p) = pad_bit {
            assert!(p < shift, "the padding bit must fall in the unused part");
            bits[p] = Bit::Const(true);
            exact.constant += pow2::<F>(p);
        }
        let mut w = Word::new(RowKind::Message { index });
        w.bits = Some(bits);
        w.sum = Some(exact.clone());
        w.exact = Some(exact);
        self.push(w)
    }

    /// A word from 32 bits (LSB first); its packed value is made lazily with plonky2's `le_sum`.
    pub(crate) fn bits_word(&mut self, bits: [Bit; 32]) -> WordId {
        if bits.iter().all(|b| matches!(b, Bit::Const(_))) {
            let v = bits.iter().enumerate().fold(0u32, |v, (i, b)| v | (u32::from(*b == Bit::Const(true)) << i));
            return self.const_word(v);
        }
        let mut w = Word::new(RowKind::Other);
        w.bits = Some(bits);
        self.push(w)
    }

    /// A target's value as a constant bit, if it is a builder constant 0 or 1.
    pub(crate) fn as_bit(&self, t: BoolTarget) -> Bit {
        match self.b.target_as_constant(t.target) {
            Some(c) if c == F::ZERO => Bit::Const(false),
            Some(c) if c == F::ONE => Bit::Const(true),
            _ => Bit::Var(t.target),
        }
    }

    fn push(&mut self, w: Word<F>) -> WordId {
        self.words.push(w);
        self.words.len() - 1
    }

    /// A word congruent to `sum` mod 2^32, where `sum`'s integer value is at most `max`.
    fn sum_word(&mut self, sum: Lin<F>, max: u64, kind: RowKind) -> WordId {
        if sum.terms.is_empty() {
            let v = sum.constant.to_canonical_u64();
            debug_assert!(v <= max);
            return self.const_word(v as u32);
        }
        let mut w = Word::new(kind);
        w.sum = Some(sum);
        w.max = max;
        self.push(w)
    }

    // ---------------------------------------------------------------- low-level pieces

    /// Adds a `BaseSumGate<2>` row whose sum is `x`, with limbs below `zero_low` and from
    /// `num_bits` on copy-constrained to zero. Returns all limbs and the row index.
    fn split_row(&mut self, x: Target, zero_low: usize, num_bits: usize, kind: RowKind) -> (Vec<Target>, usize) {
        let gate = BaseSumGate::<2>::new_from_config::<F>(&self.b.config);
        assert!(
            num_bits <= gate.num_limbs,
            "a {num_bits}-bit split needs {} routed wires; the circuit config has {}",
            num_bits + 1,
            self.b.config.num_routed_wires
        );
        let row = self.b.add_gate(gate, vec![]);
        self.b.connect(x, Target::wire(row, SUM_WIRE));
        let limbs: Vec<Target> = (0..gate.num_limbs).map(|j| Target::wire(row, FIRST_LIMB_WIRE + j)).collect();
        for (j, &limb) in limbs.iter().enumerate() {
            if j < zero_low || j >= num_bits {
                self.b.assert_zero(limb);
            }
        }
        self.rows.push((row, kind));
        (limbs, row)
    }

    /// Materializes an affine combination: the constant (if any) is a shared constant wire, each
    /// term one arithmetic op.
    fn materialize(&mut self, lin: Lin<F>) -> Val<F> {
        if lin.terms.is_empty() {
            return Val::Const(lin.constant);
        }
        let mut terms = lin.terms;
        let mut acc = if lin.constant != F::ZERO {
            Some(self.b.constant(lin.constant))
        } else {
            terms.iter().position(|(c, _)| *c == F::ONE).map(|k| terms.remove(k).1)
        };
        for (c, t) in terms {
            let addend = acc.unwrap_or(self.zero);
            acc = Some(self.b.arithmetic(c, F::ONE, t, self.one, addend));
        }
        Val::Var(acc.expect("non-empty"))
    }

    fn target_of(&mut self, lin: Lin<F>) -> Target {
        match self.materialize(lin) {
            Val::Const(c) => self.b.constant(c),
            Val::Var(t) => t,
        }
    }

    /// Splits a word's unreduced sum into bits and carries (one `BaseSumGate` row).
    fn split(&mut self, id: WordId) {
        if self.words[id].bits.is_some() {
            return;
        }
        let sum = self.words[id].sum.clone().expect("a word without bits has a sum");
        let max = self.words[id].max;
        let num_bits = (64 - max.leading_zeros() as usize).max(32);
        let s = match self.materialize(sum) {
            Val::Var(t) => t,
            Val::Const(_) => unreachable!("constant words are built with their bits"),
        };
        let kind = self.words[id].kind;
        let (limbs, _) = self.split_row(s, 0, num_bits, kind);
        let w = &mut self.words[id];
        w.bits = Some(std::array::from_fn(|i| Bit::Var(limbs[i])));
        w.split = Some((s, limbs[32..num_bits].to_vec()));
    }

    fn bits(&mut self, id: WordId) -> [Bit; 32] {
        self.split(id);
        self.words[id].bits.expect("split")
    }

    fn bit(&mut self, id: WordId, i: usize) -> Val<F> {
        match self.bits(id)[i] {
            Bit::Const(b) => Val::Const(F::from_bool(b)),
            Bit::Var(t) => Val::Var(t),
        }
    }

    /// `1 - 2·bit` (one op per variable bit, cached).
    fn sign(&mut self, id: WordId, i: usize) -> Val<F> {
        match self.bits(id)[i] {
            Bit::Const(b) => Val::Const(if b { F::NEG_ONE } else { F::ONE }),
            Bit::Var(t) => {
                if let Some(s) = self.words[id].signs[i] {
                    return Val::Var(s);
                }
                let s = self.b.arithmetic(-F::TWO, F::ONE, t, self.one, self.one);
                self.words[id].signs[i] = Some(s);
                Val::Var(s)
            }
        }
    }

    /// The exact packed word (`< 2^32`).
    fn exact(&mut self, id: WordId) -> Lin<F> {
        if let Some(e) = &self.words[id].exact {
            return e.clone();
        }
        let w = &self.words[id];
        let exact = if w.max <= u32::MAX as u64 && w.sum.is_some() {
            w.sum.clone().expect("checked")
        } else if w.sum.is_some() {
            self.split(id);
            let (s, carries) = self.words[id].split.clone().expect("split");
            let mut acc = s;
            for (j, c) in carries.into_iter().enumerate() {
                acc = self.b.arithmetic(-pow2::<F>(32 + j), F::ONE, c, self.one, acc);
            }
            Lin::var(acc)
        } else {
            // A word made of caller bits: pack them with one `BaseSumGate` row (plonky2's le_sum).
            let bits = w.bits.expect("a word without a sum has bits");
            let mut constant = F::ZERO;
            let limbs: Vec<BoolTarget> = bits
                .iter()
                .enumerate()
                .map(|(i, b)| match *b {
                    Bit::Const(v) => {
                        if v {
                            constant += pow2::<F>(i);
                        }
                        BoolTarget::new_unsafe(self.zero)
                    }
                    Bit::Var(t) => BoolTarget::new_unsafe(t),
                })
                .collect();
            let packed = self.b.le_sum(limbs.into_iter());
            let mut lin = Lin::var(packed);
            lin.constant = constant;
            lin
        };
        self.words[id].exact = Some(exact.clone());
        exact
    }

    /// The word as a summand of a mod-2^32 sum: the exact value if it exists or is cheap
    /// (bits already split), the unreduced sum otherwise. Returns the summand and its maximum.
    fn addend(&mut self, id: WordId) -> (Lin<F>, u64) {
        let w = &self.words[id];
        if w.exact.is_some() || w.bits.is_some() || w.sum.is_none() {
            (self.exact(id), u32::MAX as u64)
        } else {
            (w.sum.clone().expect("checked"), w.max)
        }
    }

    /// Product of two sign targets (one op, cached).
    fn pair(&mut self, x: Target, y: Target) -> Target {
        let key = pair_key(x, y);
        if let Some(&p) = self.pairs.get(&key) {
            return p;
        }
        let p = self.b.arithmetic(F::ONE, F::ZERO, x, y, self.zero);
        self.pairs.insert(key, p);
        p
    }

    /// Adds `coeff·2^pos·XOR(bits)` given the bits' signs: `XOR = (1 - Π s)/2`.
    fn xor_term(&mut self, chain: &mut Chain<F>, pos: usize, signs: &[Val<F>], coeff: F) {
        let half = F::TWO.inverse();
        chain.constant += coeff * half * pow2::<F>(pos);
        let mut k = -coeff * half;
        let mut vars = Vec::with_capacity(3);
        for s in signs {
            match *s {
                Val::Const(c) => k *= c,
                Val::Var(t) => vars.push(t),
            }
        }
        let one = self.one;
        match vars[..] {
            [] => chain.constant += k * pow2::<F>(pos),
            [x] => chain.add(pos, k, Val::Var(x), Val::Const(F::ONE), one),
            [x, y] => chain.add(pos, k, Val::Var(x), Val::Var(y), one),
            [x, y, z] => {
                // Reuse a cached product if one exists (Maj: s_a·s_b of the previous round),
                // else multiply the first two.
                let (p, rest) = if self.pairs.contains_key(&pair_key(y, z)) {
                    (self.pair(y, z), x)
                } else if self.pairs.contains_key(&pair_key(x, z)) {
                    (self.pair(x, z), y)
                } else {
                    (self.pair(x, y), z)
                };
                chain.add(pos, k, Val::Var(p), Val::Var(rest), one);
            }
            _ => unreachable!("at most three inputs"),
        }
    }

    /// Adds `coeff·2^pos·XOR` of bits `positions` of word `id` (a rotation/shift function).
    ///
    /// Positions listed in `bit_only` never get a sign: when one of them is in a triple of
    /// variable bits, the product of signs is formed as `s_x·(1 - 2y) = s_x - 2·y·s_x` from
    /// the bit `y` itself (one op, like a product of two signs). `bit_only` must contain at most
    /// one position of any triple and none of a pair, which the tables in `compress` satisfy.
    fn xor_word_term(
        &mut self,
        chain: &mut Chain<F>,
        pos: usize,
        id: WordId,
        positions: &[usize],
        bit_only: &[usize],
        coeff: F,
    ) {
        let bits = self.bits(id);
        let y = positions.iter().position(|p| bit_only.contains(p));
        let all_var = positions.iter().all(|&p| matches!(bits[p], Bit::Var(_)));
        match (y, positions.len(), all_var) {
            (Some(k), 3, true) => {
                let half = F::TWO.inverse();
                chain.constant += coeff * half * pow2::<F>(pos);
                let others: Vec<usize> = (0..3).filter(|&j| j != k).map(|j| positions[j]).collect();
                let (Val::Var(sx), Val::Var(sz)) = (self.sign(id, others[0]), self.sign(id, others[1])) else {
                    unreachable!("variable bits have variable signs")
                };
                let Bit::Var(yb) = bits[positions[k]] else { unreachable!("checked") };
                let p = self.b.arithmetic(-F::TWO, F::ONE, yb, sx, sx);
                chain.add(pos, -coeff * half, Val::Var(p), Val::Var(sz), self.one);
            }
            _ => {
                debug_assert!(y.is_none() || !all_var || positions.len() == 3, "bit-only position in a pair");
                let signs: Vec<Val<F>> = positions.iter().map(|&p| self.sign(id, p)).collect();
                self.xor_term(chain, pos, &signs, coeff);
            }
        }
    }

    /// Evaluates `addend + chain` with the chain's ops, least significant position first: the
    /// step at position `q` after position `p` is `acc' = 2^31·c·x·y + 2^(p-q)·acc`, keeping
    /// `acc = 2^(31-p)·(Σ_{j<=p} c_j·x_j·y_j·2^j + addend)`, and the addend rides on the first
    /// step for free. Returns the value as an affine combination.
    fn finish(&mut self, chain: Chain<F>, mut addend: Lin<F>) -> Lin<F> {
        addend.constant += chain.constant;
        let Some(&(first_pos, ..)) = chain.steps.first() else {
            return addend;
        };
        let two31 = pow2::<F>(31);
        let (z, c1) = match self.materialize(addend) {
            Val::Const(c) if c == F::ZERO => (self.zero, F::TWO.inverse()),
            Val::Const(c) => (self.b.constant(c), pow2::<F>(31 - first_pos)),
            Val::Var(t) => (t, pow2::<F>(31 - first_pos)),
        };
        let mut acc = z;
        let mut prev = None;
        for (pos, coeff, x, y) in chain.steps {
            let c1 = match prev {
                None => c1,
                Some(p) => F::inverse_2exp(pos - p),
            };
            acc = self.b.arithmetic(two31 * coeff, c1, x, y, acc);
            prev = Some(pos);
        }
        let last = prev.expect("non-empty");
        Lin { terms: vec![(F::inverse_2exp(31 - last), acc)], constant: F::ZERO }
    }

    // ---------------------------------------------------------------- SHA-256

    /// Hashes an already padded message (a multiple of 16 words). Returns the 8 digest words.
    pub(crate) fn hash(&mut self, message: &[WordId]) -> [WordId; 8] {
        assert!(!message.is_empty() && message.len() % 16 == 0, "a padded message is a positive number of blocks");
        let mut h: [WordId; 8] = IV.map(|v| self.const_word(v));
        for (block, m) in message.chunks(16).enumerate() {
            h = self.compress(block, h, m);
        }
        h
    }

    fn compress(&mut self, block: usize, h_in: [WordId; 8], m: &[WordId]) -> [WordId; 8] {
        const MAX32: u64 = u32::MAX as u64;
        let half = F::TWO.inverse();
        let mut w: Vec<WordId> = m.to_vec();
        for t in 16..64 {
            let mut chain = Chain::new();
            // Roles of a schedule word: W_k feeds σ0 (as W[t-15]) for k <= 48 and σ1 (as
            // W[t-2]) for k >= 14; the positions that need no sign depend on the roles.
            let bit_only = |k: usize| match (k <= 48, k >= 14) {
                (true, true) => &BIT_ONLY_SIGMA01[..],
                (true, false) => &BIT_ONLY_SIGMA0[..],
                _ => &BIT_ONLY_SIGMA1[..],
            };
            let (w15, w2) = (w[t - 15], w[t - 2]);
            for i in 0..32 {
                // σ0(W[t-15]) = ROTR7 ^ ROTR18 ^ SHR3, σ1(W[t-2]) = ROTR17 ^ ROTR19 ^ SHR10.
                let mut p0 = vec![(i + 7) % 32, (i + 18) % 32];
                if i + 3 < 32 {
                    p0.push(i + 3);
                }
                self.xor_word_term(&mut chain, i, w15, &p0, bit_only(t - 15), F::ONE);
                let mut p1 = vec![(i + 17) % 32, (i + 19) % 32];
                if i + 10 < 32 {
                    p1.push(i + 10);
                }
                self.xor_word_term(&mut chain, i, w2, &p1, bit_only(t - 2), F::ONE);
            }
            let (l7, m7) = self.addend(w[t - 7]);
            let (l16, m16) = self.addend(w[t - 16]);
            let sum = self.finish(chain, l7.plus(l16));
            let id = self.sum_word(sum, m7 + m16 + 2 * MAX32, RowKind::Schedule { block, t });
            w.push(id);
        }

        let mut st = h_in;
        for (t, &k) in K.iter().enumerate() {
            let [a, b, c, d, e, f, g, h] = st;
            // T1 = h + Σ1(e) + Ch(e, f, g) + K_t + W_t.
            let mut chain = Chain::new();
            for i in 0..32 {
                let p = [(i + 6) % 32, (i + 11) % 32, (i + 25) % 32];
                self.xor_word_term(&mut chain, i, e, &p, &BIT_ONLY_SIGMA1_BIG, F::ONE);
                let (eb, fb, gb) = (self.bit(e, i), self.bit(f, i), self.bit(g, i));
                chain.add(i, F::ONE, eb, fb, self.one);
                chain.add(i, F::NEG_ONE, eb, gb, self.one);
            }
            let (lh, mh) = self.addend(h);
            let (lg, mg) = self.addend(g);
            let (lw, mw) = self.addend(w[t]);
            let t1 = self.finish(chain, lh.plus(lg).plus(lw).plus(Lin::constant(F::from_canonical_u32(k))));
            // Σ1 < 2^32; Ch with an unreduced G is at most max(G) + 2^32 - 1.
            let t1_max = mh + mg + mw + k as u64 + 2 * MAX32;
            let (ld, md) = self.addend(d);
            let e_new = self.sum_word(t1.clone().plus(ld), t1_max + md, RowKind::RoundE { block, t });

            // T2 = Σ0(a) + Maj(a, b, c), Maj = (A + B + C - XOR3(a, b, c)) / 2.
            let mut chain = Chain::new();
            for i in 0..32 {
                // a's signs are all needed by Maj anyway: no bit-only positions.
                let p = [(i + 2) % 32, (i + 13) % 32, (i + 22) % 32];
                self.xor_word_term(&mut chain, i, a, &p, &[], F::ONE);
                let s = [self.sign(a, i), self.sign(b, i), self.sign(c, i)];
                self.xor_term(&mut chain, i, &s, -half);
            }
            let abc = self.exact(a).plus(self.exact(b)).plus(self.exact(c)).scaled(half);
            let s_a = self.finish(chain, t1.plus(abc));
            let a_new = self.sum_word(s_a, t1_max + 2 * MAX32, RowKind::RoundA { block, t });
            st = [a_new, a, b, c, e_new, e, f, g];
        }

        std::array::from_fn(|i| {
            let (l0, m0) = self.addend(h_in[i]);
            let (l1, m1) = self.addend(st[i]);
            self.sum_word(l0.plus(l1), m0 + m1, RowKind::Digest { block, i })
        })
    }

    /// The word as a range-checked [`U32Target`] and its bits, least significant first.
    pub(crate) fn export(&mut self, id: WordId) -> (U32Target, [BoolTarget; 32]) {
        let bits = self.bits(id);
        let exact = self.exact(id);
        let word = U32Target(self.target_of(exact));
        let bits = bits.map(|b| match b {
            Bit::Const(v) => self.b.constant_bool(v),
            Bit::Var(t) => BoolTarget::new_unsafe(t),
        });
        (word, bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hyperedges of a XOR of rotations/shifts: for each output bit, the input positions.
    fn edges(rot: [usize; 2], third: (usize, bool)) -> Vec<Vec<usize>> {
        (0..32)
            .map(|i| {
                let mut e = vec![(i + rot[0]) % 32, (i + rot[1]) % 32];
                match third {
                    (r, true) => e.push((i + r) % 32),
                    (s, false) if i + s < 32 => e.push(i + s),
                    _ => {}
                }
                e
            })
            .collect()
    }

    /// The bit-only tables are sound to use: at most one bit-only position per triple, none in
    /// a pair (a pair's product must come from two signs).
    #[test]
    fn bit_only_positions_are_valid() {
        let sigma0 = edges([7, 18], (3, false));
        let sigma1 = edges([17, 19], (10, false));
        let big_sigma1 = edges([6, 11], (25, true));
        let cases: [(&[usize], Vec<Vec<usize>>); 4] = [
            (&BIT_ONLY_SIGMA1_BIG, big_sigma1),
            (&BIT_ONLY_SIGMA0, sigma0.clone()),
            (&BIT_ONLY_SIGMA1, sigma1.clone()),
            (&BIT_ONLY_SIGMA01, [sigma0, sigma1].concat()),
        ];
        for (bit_only, edges) in cases {
            for e in edges {
                let n = e.iter().filter(|p| bit_only.contains(p)).count();
                assert!(n == 0 || (n == 1 && e.len() == 3), "{bit_only:?} vs {e:?}");
            }
        }
    }
}
