//! Tests: digests against the `sha2` crate, full proofs, and soundness (wrong outputs, bad
//! inputs, and a malicious witness generator aimed at single `BaseSumGate` rows).

use std::panic::{catch_unwind, AssertUnwindSafe};

use anyhow::Result;
use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::field::types::{Field, PrimeField64};
use plonky2::iop::generator::{generate_partial_witness, GeneratedValues, WitnessGenerator, WitnessGeneratorRef};
use plonky2::iop::target::{BoolTarget, Target};
use plonky2::iop::witness::{PartialWitness, PartitionWitness, Witness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitConfig, CircuitData, CommonCircuitData};
use plonky2::plonk::config::PoseidonGoldilocksConfig;
use plonky2::plonk::prover::prove_with_partition_witness;
use plonky2::util::serialization::{Buffer, IoError, IoResult};
use plonky2::util::timing::TimingTree;
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sha2::{Digest, Sha256};

use crate::core::RowKind;
use crate::gadget::sha256_words_inner;
use crate::{digest_from_fields, words_be, CircuitBuilderSha256, U32Target, WitnessU32};

const D: usize = 2;
type C = PoseidonGoldilocksConfig;
type F = GoldilocksField;
type Data = CircuitData<F, C, D>;

fn builder() -> CircuitBuilder<F, D> {
    CircuitBuilder::new(CircuitConfig::standard_recursion_config())
}

fn sha2(message: &[u8]) -> [u8; 32] {
    Sha256::digest(message).into()
}

fn random_message(rng: &mut StdRng, len: usize) -> Vec<u8> {
    (0..len).map(|_| rng.gen()).collect()
}

/// A `sha256_words` circuit for a fixed length: inputs are range-checked virtual words, the
/// digest is also registered as public inputs.
struct WordsCircuit {
    data: Data,
    inputs: Vec<U32Target>,
    digest: [U32Target; 8],
    rows: Vec<(usize, RowKind)>,
}

fn words_circuit(len: usize) -> WordsCircuit {
    words_circuit_with(len, true, true)
}

/// A circuit for witness generation only: skipping the commitment to the constant and sigma
/// polynomials makes building several times faster.
fn words_circuit_unprovable(len: usize) -> WordsCircuit {
    words_circuit_with(len, true, false)
}

/// `range_checked = false` feeds raw targets, so that only the gadget's own checks apply.
fn words_circuit_with(len: usize, range_checked: bool, provable: bool) -> WordsCircuit {
    let mut b = builder();
    let inputs = if range_checked {
        b.add_virtual_u32s(len.div_ceil(4))
    } else {
        (0..len.div_ceil(4)).map(|_| U32Target(b.add_virtual_target())).collect()
    };
    let (digest, rows) = sha256_words_inner(&mut b, &inputs, len);
    for w in digest.words {
        b.register_public_input(w.0);
    }
    WordsCircuit { data: b.build_with_options::<C>(provable), inputs, digest: digest.words, rows }
}

impl WordsCircuit {
    fn witness(&self, message: &[u8]) -> PartialWitness<F> {
        let mut pw = PartialWitness::new();
        pw.set_u32s(&self.inputs, &words_be(message)).expect("fresh witness");
        pw
    }

    /// Digest computed by witness generation alone.
    fn generated_digest(&self, pw: PartialWitness<F>) -> Result<[u8; 32]> {
        let witness = generate_partial_witness(pw, &self.data.prover_only, &self.data.common)?;
        Ok(witness.get_sha256_digest(&self.digest)?)
    }

    fn row(&self, kind: RowKind) -> usize {
        self.rows.iter().find(|(_, k)| *k == kind).unwrap_or_else(|| panic!("no row {kind:?}")).0
    }
}

/// True if witness generation refuses the inputs (an error, or a plonky2 debug assertion).
fn generation_rejects(data: &Data, pw: PartialWitness<F>) -> bool {
    !matches!(
        catch_unwind(AssertUnwindSafe(|| generate_partial_witness(pw, &data.prover_only, &data.common).is_ok())),
        Ok(true)
    )
}

#[test]
fn sha256_words_matches_sha2_on_padding_edge_lengths() -> Result<()> {
    let mut rng = StdRng::seed_from_u64(1);
    for len in [0, 1, 3, 32, 55, 56, 63, 64, 65, 119, 120, 148, 149, 200] {
        let message = random_message(&mut rng, len);
        let c = words_circuit_unprovable(len);
        assert_eq!(c.generated_digest(c.witness(&message))?, sha2(&message), "length {len}");
    }
    Ok(())
}

#[test]
fn sha256_words_proves_and_verifies_the_task_leaf_length() -> Result<()> {
    let mut rng = StdRng::seed_from_u64(2);
    for len in [0, 149] {
        let message = random_message(&mut rng, len);
        let c = words_circuit(len);
        let proof = c.data.prove(c.witness(&message))?;
        assert_eq!(digest_from_fields(&proof.public_inputs)?, sha2(&message), "length {len}");
        c.data.verify(proof)?;
    }
    Ok(())
}

#[test]
fn sha256_bytes_matches_sha2_and_proves() -> Result<()> {
    let mut rng = StdRng::seed_from_u64(3);
    for (len, full_proof) in [(0, false), (5, false), (63, false), (64, false), (149, true)] {
        let message = random_message(&mut rng, len);
        let mut b = builder();
        let bytes = b.add_virtual_targets(len);
        let digest = b.sha256_bytes(&bytes);
        for w in digest {
            b.register_public_input(w.0);
        }
        let data = b.build_with_options::<C>(full_proof);
        let mut pw = PartialWitness::new();
        pw.set_bytes(&bytes, &message)?;
        if full_proof {
            let proof = data.prove(pw)?;
            assert_eq!(digest_from_fields(&proof.public_inputs)?, sha2(&message));
            data.verify(proof)?;
        } else {
            let witness = generate_partial_witness(pw, &data.prover_only, &data.common)?;
            assert_eq!(witness.get_sha256_digest(&digest)?, sha2(&message), "length {len}");
        }
    }
    Ok(())
}

#[test]
fn sha256_bytes_rejects_a_value_above_255() {
    let mut b = builder();
    let bytes = b.add_virtual_targets(8);
    b.sha256_bytes(&bytes);
    let data = b.build_with_options::<C>(false);
    // Bytes (7, 0, 256, 0) pack to the same word as the valid (7, 1, 0, 0): only the per-byte
    // checks can tell.
    let mut values = [7u64, 1, 0, 0, 1, 2, 3, 4].map(F::from_canonical_u64);
    values[1] = F::ZERO;
    values[2] = F::from_canonical_u64(256);
    let mut pw = PartialWitness::new();
    for (&t, &v) in bytes.iter().zip(&values) {
        pw.set_target(t, v).expect("fresh witness");
    }
    assert!(generation_rejects(&data, pw));
}

/// RFC 6962 shape: two leaves hashed with `sha256_words`, the node `sha256(0x01 ‖ l ‖ r)` from
/// the leaves' digest bits with constant prefix bits (65 bytes: two blocks).
#[test]
fn sha256_bits_composes_a_merkle_node() -> Result<()> {
    let mut rng = StdRng::seed_from_u64(4);
    let (l_msg, r_msg) = (random_message(&mut rng, 149), random_message(&mut rng, 33));
    let mut b = builder();
    let l_in = b.add_virtual_u32s(38);
    let r_in = b.add_virtual_u32s(9);
    let (l, _) = sha256_words_inner(&mut b, &l_in, 149);
    let (r, _) = sha256_words_inner(&mut b, &r_in, 33);
    let mut bits: Vec<BoolTarget> = (0..8).map(|i| b.constant_bool(i == 7)).collect();
    bits.extend(l.bits);
    bits.extend(r.bits);
    let node = b.sha256_bits(&bits);
    // A second entry point over the same node bits but given as witness bits.
    let free_bits: Vec<BoolTarget> = (0..8 * 65).map(|_| b.add_virtual_bool_target_safe()).collect();
    let node2 = b.sha256_bits(&free_bits);
    let data = b.build_with_options::<C>(false);

    let mut pw = PartialWitness::new();
    pw.set_u32s(&l_in, &words_be(&l_msg))?;
    pw.set_u32s(&r_in, &words_be(&r_msg))?;
    let mut node_msg = vec![1u8];
    node_msg.extend(sha2(&l_msg));
    node_msg.extend(sha2(&r_msg));
    pw.set_bits_from_bytes(&free_bits, &node_msg)?;
    let witness = generate_partial_witness(pw, &data.prover_only, &data.common)?;
    let expected = sha2(&node_msg);
    assert_eq!(witness.get_sha256_digest(&node.words)?, expected);
    assert_eq!(witness.get_sha256_digest(&node2.words)?, expected);
    for (k, bit) in node.bits.iter().enumerate() {
        let value = witness.get_target(bit.target).to_canonical_u64();
        assert_eq!(value, u64::from((expected[k / 8] >> (7 - k % 8)) & 1), "digest bit {k}");
    }
    Ok(())
}

/// Textbook SHA-256 of a bit string (FIPS 180-4), the reference for lengths `sha2` cannot take.
pub(crate) fn reference_sha256_bits(message: &[bool]) -> [u8; 32] {
    let mut bits = message.to_vec();
    bits.push(true);
    while bits.len() % 512 != 448 {
        bits.push(false);
    }
    bits.extend((0..64).rev().map(|k| (message.len() as u64 >> k) & 1 == 1));
    let mut h = crate::IV;
    for block in bits.chunks(512) {
        let mut w: Vec<u32> = block.chunks(32).map(|c| c.iter().fold(0, |v, &b| (v << 1) | u32::from(b))).collect();
        for t in 16..64 {
            let s0 = w[t - 15].rotate_right(7) ^ w[t - 15].rotate_right(18) ^ (w[t - 15] >> 3);
            let s1 = w[t - 2].rotate_right(17) ^ w[t - 2].rotate_right(19) ^ (w[t - 2] >> 10);
            w.push(w[t - 16].wrapping_add(s0).wrapping_add(w[t - 7]).wrapping_add(s1));
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for (&k, &wt) in crate::K.iter().zip(&w) {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh.wrapping_add(s1).wrapping_add(ch).wrapping_add(k).wrapping_add(wt);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let t2 = s0.wrapping_add((a & b) ^ (a & c) ^ (b & c));
            (hh, g, f, e, d, c, b, a) = (g, f, e, d.wrapping_add(t1), c, b, a, t1.wrapping_add(t2));
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *x = x.wrapping_add(y);
        }
    }
    crate::digest_bytes(&h)
}

#[test]
fn sha256_bits_matches_the_reference_on_any_bit_length() -> Result<()> {
    let mut rng = StdRng::seed_from_u64(5);
    // The reference agrees with sha2 on whole bytes.
    let bytes = random_message(&mut rng, 77);
    let as_bits: Vec<bool> = bytes.iter().flat_map(|&x| (0..8).rev().map(move |k| (x >> k) & 1 == 1)).collect();
    assert_eq!(reference_sha256_bits(&as_bits), sha2(&bytes));
    for len in [1, 7, 31, 33, 447, 448, 511, 513] {
        let message: Vec<bool> = (0..len).map(|_| rng.gen()).collect();
        let mut b = builder();
        let bits: Vec<BoolTarget> = (0..len).map(|_| b.add_virtual_bool_target_safe()).collect();
        let digest = b.sha256_bits(&bits);
        let data = b.build_with_options::<C>(false);
        let mut pw = PartialWitness::new();
        for (&t, &v) in bits.iter().zip(&message) {
            pw.set_bool_target(t, v)?;
        }
        let witness = generate_partial_witness(pw, &data.prover_only, &data.common)?;
        assert_eq!(witness.get_sha256_digest(&digest.words)?, reference_sha256_bits(&message), "{len} bits");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10, ..ProptestConfig::default() })]

    /// Witness generation only (a proof per case would take seconds).
    #[test]
    fn sha256_words_matches_sha2_on_random_messages(message in prop::collection::vec(any::<u8>(), 0..=260)) {
        let c = words_circuit_unprovable(message.len());
        prop_assert_eq!(c.generated_digest(c.witness(&message)).expect("witness"), sha2(&message));
    }
}

// ------------------------------------------------------------------ soundness

#[test]
fn wrong_expected_digest_is_rejected() -> Result<()> {
    let message = b"tensorgrid".to_vec();
    let mut b = builder();
    let inputs = b.add_virtual_u32s(3);
    let digest = b.sha256_words(&inputs, message.len());
    let expected = b.add_virtual_u32s(8);
    for (&d, &e) in digest.iter().zip(&expected) {
        b.connect_u32(d, e);
    }
    let data = b.build_with_options::<C>(false);
    let mut right = sha2(&message);
    for (flip, should_pass) in [(false, true), (true, false)] {
        if flip {
            right[31] ^= 1;
        }
        let mut pw = PartialWitness::new();
        pw.set_u32s(&inputs, &words_be(&message))?;
        pw.set_u32s(&expected, &words_be(&right))?;
        assert_eq!(!generation_rejects(&data, pw), should_pass);
    }
    Ok(())
}

#[test]
fn tampered_public_digest_fails_verification() -> Result<()> {
    let c = words_circuit(64);
    let message = vec![0xa5; 64];
    let mut proof = c.data.prove(c.witness(&message))?;
    c.data.verify(proof.clone())?;
    proof.public_inputs[3] += F::ONE;
    assert!(c.data.verify(proof).is_err());
    Ok(())
}

#[test]
fn non_u32_message_word_is_rejected() {
    // Bypass `add_virtual_u32`: the gadget must range check its inputs itself.
    let mut b = builder();
    let inputs: Vec<U32Target> = (0..2).map(|_| U32Target(b.add_virtual_target())).collect();
    b.sha256_words(&inputs, 8);
    let data = b.build_with_options::<C>(false);
    let mut pw = PartialWitness::new();
    pw.set_target(inputs[0].0, F::from_canonical_u64((1 << 32) + 5)).expect("fresh");
    pw.set_target(inputs[1].0, F::from_canonical_u64(9)).expect("fresh");
    assert!(generation_rejects(&data, pw));
}

#[test]
fn nonzero_unused_byte_of_last_word_is_rejected() {
    let c = words_circuit_unprovable(149);
    let message = vec![0x11; 149];
    assert!(!generation_rejects(&c.data, c.witness(&message)));
    let mut words = words_be(&message);
    *words.last_mut().expect("38 words") |= 0xab;
    let mut pw = PartialWitness::new();
    pw.set_u32s(&c.inputs, &words).expect("fresh");
    assert!(generation_rejects(&c.data, pw));
}

/// A malicious replacement for plonky2's `BaseSplitGenerator` of one row: it writes the honest
/// limbs of the row's sum, then applies `tamper`. Everything else in the witness is generated
/// honestly from these limbs, so the only constraints the resulting witness can violate are
/// those of this row — which is what the tests below show to be enforced.
#[derive(Debug)]
struct EvilSplit {
    row: usize,
    num_limbs: usize,
    tamper: fn(&mut [F]),
}

impl WitnessGenerator<F, D> for EvilSplit {
    fn id(&self) -> String {
        "EvilSplit".into()
    }

    fn watch_list(&self) -> Vec<Target> {
        vec![Target::wire(self.row, 0)]
    }

    fn run(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> bool {
        let Some(sum) = witness.try_get_target(Target::wire(self.row, 0)) else {
            return false;
        };
        let sum = sum.to_canonical_u64();
        let mut limbs: Vec<F> = (0..self.num_limbs).map(|j| F::from_canonical_u64((sum >> j) & 1)).collect();
        (self.tamper)(&mut limbs);
        for (j, v) in limbs.into_iter().enumerate() {
            out.set_target(Target::wire(self.row, 1 + j), v).expect("buffer");
        }
        true
    }

    fn serialize(&self, _: &mut Vec<u8>, _: &CommonCircuitData<F, D>) -> IoResult<()> {
        Err(IoError)
    }

    fn deserialize(_: &mut Buffer<'_>, _: &CommonCircuitData<F, D>) -> IoResult<Self> {
        Err(IoError)
    }
}

/// Swaps the split generator of `row` for an [`EvilSplit`], generates the witness, and returns
/// the digest it yields and whether the resulting proof verifies.
fn run_with_evil_split(
    c: &mut WordsCircuit,
    row: usize,
    tamper: fn(&mut [F]),
    pw: PartialWitness<F>,
) -> Result<([u8; 32], bool)> {
    let watch = vec![Target::wire(row, 0)];
    let generators = &mut c.data.prover_only.generators;
    let index = generators
        .iter()
        .position(|g| g.0.id() == "BaseSplitGenerator + Base: 2" && g.0.watch_list() == watch)
        .expect("split generator of the row");
    generators[index] = WitnessGeneratorRef::new(EvilSplit { row, num_limbs: 63, tamper });
    let witness = generate_partial_witness(pw, &c.data.prover_only, &c.data.common)?;
    let digest = witness.get_sha256_digest(&c.digest)?;
    let verified =
        match prove_with_partition_witness(&c.data.prover_only, &c.data.common, witness, &mut TimingTree::default()) {
            Ok(proof) => c.data.verify(proof).is_ok(),
            Err(_) => false,
        };
    Ok((digest, verified))
}

/// Adds one to the 32 result bits and takes it back from the first carry limb, which becomes
/// `c0 - 2^-32`: the row's sum constraint still holds, only the carry's booleanity is violated.
fn shift_one_into_carry(limbs: &mut [F]) {
    let low = (0..32).fold(0u64, |v, j| v | (limbs[j].to_canonical_u64() << j));
    let low = (low + 1) & 0xffff_ffff;
    assert_ne!(low, 0, "pick a row whose low word is not all ones");
    for (j, limb) in limbs.iter_mut().enumerate().take(32) {
        *limb = F::from_canonical_u64((low >> j) & 1);
    }
    limbs[32] -= F::inverse_2exp(32);
}

#[test]
fn bad_carry_in_a_round_is_rejected_by_the_split_constraint() -> Result<()> {
    let message = b"abc".to_vec();
    let mut c = words_circuit(3);
    let honest = sha2(&message);
    let row = c.row(RowKind::RoundE { block: 0, t: 20 });
    let pw = c.witness(&message);
    let (digest, verified) = run_with_evil_split(&mut c, row, shift_one_into_carry, pw)?;
    assert_ne!(digest, honest, "the forged carry changes the digest: the attack is real");
    assert!(!verified, "a non-boolean carry must not verify");
    Ok(())
}

#[test]
fn bad_carry_in_the_output_word_is_rejected() -> Result<()> {
    let message = vec![0x42; 100];
    let mut c = words_circuit(100);
    let honest = sha2(&message);
    let row = c.row(RowKind::Digest { block: 1, i: 0 });
    let pw = c.witness(&message);
    let (digest, verified) = run_with_evil_split(&mut c, row, shift_one_into_carry, pw)?;
    let word0 = |d: [u8; 32]| u32::from_be_bytes(d[..4].try_into().expect("4 bytes"));
    assert_eq!(word0(digest), word0(honest).wrapping_add(1), "the forged digest is honest word 0 plus one");
    assert_eq!(digest[4..], honest[4..]);
    assert!(!verified);
    Ok(())
}

#[test]
fn non_boolean_digest_bit_is_rejected() -> Result<()> {
    let message = vec![0x42; 10];
    let mut c = words_circuit(10);
    let row = c.row(RowKind::Digest { block: 0, i: 5 });
    // Limb 4 gains 2 (worth 2^5) and limb 5 loses 1: the sum holds, booleanity does not.
    fn tamper(limbs: &mut [F]) {
        limbs[4] += F::TWO;
        limbs[5] -= F::ONE;
    }
    let pw = c.witness(&message);
    let (_, verified) = run_with_evil_split(&mut c, row, tamper, pw)?;
    assert!(!verified);
    Ok(())
}

#[test]
fn non_u32_message_word_with_forged_limbs_is_rejected() -> Result<()> {
    // Word 0's bits are never used by SHA-256 (only its packed value), and `w + 2^32` hashes
    // exactly like `w`: the forged split keeps every limb from 32 on zero and hides 2^32 in limb 0.
    let message = vec![0x33; 20];
    let mut c = words_circuit_with(20, false, true);
    let honest = sha2(&message);
    let row = c.row(RowKind::Message { index: 0 });
    let mut pw = PartialWitness::new();
    let mut words: Vec<F> = words_be(&message).into_iter().map(F::from_canonical_u32).collect();
    words[0] += F::from_canonical_u64(1 << 32);
    for (&t, &v) in c.inputs.iter().zip(&words) {
        pw.set_target(t.0, v)?;
    }
    // The honest split generator cannot represent the value (limb 32 is tied to zero).
    assert!(generation_rejects(&c.data, pw.clone()));
    fn tamper(limbs: &mut [F]) {
        limbs[32] = F::ZERO;
        limbs[0] += F::from_canonical_u64(1 << 32);
    }
    let (digest, verified) = run_with_evil_split(&mut c, row, tamper, pw)?;
    assert_eq!(digest, honest, "the out-of-range input would be accepted as its low 32 bits");
    assert!(!verified);
    Ok(())
}

#[test]
fn nonzero_unused_byte_with_forged_limbs_is_rejected() -> Result<()> {
    // 65 bytes: the partial word is word 0 of block 1, whose bits are unused by the schedule.
    let message = vec![0x5a; 65];
    let mut c = words_circuit_with(65, false, true);
    let honest = sha2(&message);
    let row = c.row(RowKind::Message { index: 16 });
    let mut words = words_be(&message);
    words[16] |= 0xab;
    let pw = {
        let mut pw = PartialWitness::new();
        pw.set_u32s(&c.inputs, &words)?;
        pw
    };
    // Keep the zero-tied limbs 0..24 at zero and hide 0xab in limb 24.
    fn tamper(limbs: &mut [F]) {
        for limb in limbs.iter_mut().take(8) {
            *limb = F::ZERO;
        }
        limbs[24] += F::from_canonical_u64(0xab) * F::inverse_2exp(24);
    }
    let (digest, verified) = run_with_evil_split(&mut c, row, tamper, pw)?;
    assert_ne!(digest, honest, "the hidden byte changes the digest");
    assert!(!verified);
    Ok(())
}

// ------------------------------------------------------------------ costs

/// Rows (gates before constants, public inputs and padding) added by one `sha256_words` call.
fn sha256_rows(len: usize) -> usize {
    let mut b = builder();
    let inputs: Vec<U32Target> = (0..len.div_ceil(4)).map(|_| U32Target(b.add_virtual_target())).collect();
    let before = b.num_gates();
    b.sha256_words(&inputs, len);
    b.num_gates() - before
}

#[test]
fn rows_per_compression_stay_within_budget() {
    let one = sha256_rows(55);
    let two = sha256_rows(119);
    let three = sha256_rows(149);
    eprintln!("sha256_words rows: 1 block {one}, 2 blocks {two}, 3 blocks (149 bytes) {three}");
    // Measured 1,526 / 3,079 / 4,588 (README); a regression guard with a little slack.
    assert!(one <= 1_550, "one block: {one} rows");
    assert!(two <= 3_110, "two blocks: {two} rows");
    assert!(three <= 4_630, "three blocks: {three} rows");
}
