//! Tests of the SHA-256 gates: plonky2's gate checks, digests against the reference, proofs, and
//! malicious row generators whose witnesses break one constraint and reach the verifier.

use anyhow::Result;
use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::field::types::{Field, PrimeField64};
use plonky2::gates::gate_testing::{test_eval_fns, test_low_degree};
use plonky2::iop::generator::{generate_partial_witness, GeneratedValues, WitnessGenerator, WitnessGeneratorRef};
use plonky2::iop::target::{BoolTarget, Target};
use plonky2::iop::witness::{PartialWitness, PartitionWitness, Witness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitConfig, CircuitData, CommonCircuitData};
use plonky2::plonk::config::PoseidonGoldilocksConfig;
use plonky2::plonk::prover::prove_with_partition_witness;
use plonky2::util::serialization::{Buffer, IoError, IoResult};
use plonky2::util::timing::TimingTree;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::algebra::Values;
use super::{RoundA, RoundAGate, RoundE, RoundEGate, Schedule, ScheduleGate, ShaRow};
use crate::tests::reference_sha256_bits;
use crate::{CircuitBuilderSha256, WitnessU32};

const D: usize = 2;
type C = PoseidonGoldilocksConfig;
type F = GoldilocksField;

#[test]
fn gates_are_low_degree_and_their_evaluations_agree() -> Result<()> {
    test_low_degree::<F, _, D>(RoundAGate::new());
    test_low_degree::<F, _, D>(RoundEGate::new());
    test_low_degree::<F, _, D>(ScheduleGate::new());
    test_eval_fns::<F, C, _, D>(RoundAGate::new())?;
    test_eval_fns::<F, C, _, D>(RoundEGate::new())?;
    test_eval_fns::<F, C, _, D>(ScheduleGate::new())?;
    Ok(())
}

fn bits_of(bytes: &[u8]) -> Vec<bool> {
    bytes.iter().flat_map(|&x| (0..8).rev().map(move |k| (x >> k) & 1 == 1)).collect()
}

/// A circuit hashing `len` message bits with the gates; the digest's words are public.
struct GatedCircuit {
    data: CircuitData<F, C, D>,
    message: Vec<BoolTarget>,
    digest: crate::Sha256DigestTarget,
}

impl GatedCircuit {
    fn new(len: usize) -> Self {
        let mut b = CircuitBuilder::<F, D>::new(CircuitConfig::standard_recursion_config());
        let message: Vec<BoolTarget> = (0..len).map(|_| b.add_virtual_bool_target_safe()).collect();
        let digest = b.sha256_bits_gated(&message);
        b.register_public_inputs(&digest.words.map(|w| w.0));
        Self { data: b.build::<C>(), message, digest }
    }

    fn witness(&self, message: &[bool]) -> Result<PartialWitness<F>> {
        let mut pw = PartialWitness::new();
        for (&t, &v) in self.message.iter().zip(message) {
            pw.set_bool_target(t, v)?;
        }
        Ok(pw)
    }

    /// The digest words and bits a witness yields, and whether its proof verifies.
    fn prove(&self, pw: PartialWitness<F>) -> Result<([u8; 32], Vec<bool>, bool)> {
        let witness = generate_partial_witness(pw, &self.data.prover_only, &self.data.common)?;
        let digest = witness.get_sha256_digest(&self.digest.words)?;
        let bits = self.digest.bits.iter().map(|b| witness.get_target(b.target) == F::ONE).collect();
        let verified = match prove_with_partition_witness(
            &self.data.prover_only,
            &self.data.common,
            witness,
            &mut TimingTree::default(),
        ) {
            Ok(proof) => self.data.verify(proof).is_ok(),
            Err(_) => false,
        };
        Ok((digest, bits, verified))
    }
}

#[test]
fn gated_sha256_matches_the_reference_on_any_length() -> Result<()> {
    let mut rng = StdRng::seed_from_u64(11);
    // Byte lengths around the padding edges, the RFC 6962 node (65 B) and the task leaf (149 B).
    for len_bits in [0, 1, 7, 8, 440, 447, 448, 504, 512, 513, 520, 1192] {
        let message: Vec<bool> = (0..len_bits).map(|_| rng.gen()).collect();
        let c = GatedCircuit::new(len_bits);
        let witness = generate_partial_witness(c.witness(&message)?, &c.data.prover_only, &c.data.common)?;
        let expected = reference_sha256_bits(&message);
        assert_eq!(witness.get_sha256_digest(&c.digest.words)?, expected, "{len_bits} bits");
        let bits: Vec<bool> = c.digest.bits.iter().map(|b| witness.get_target(b.target) == F::ONE).collect();
        assert_eq!(bits, bits_of(&expected), "digest bits of {len_bits} bits");
    }
    Ok(())
}

#[test]
fn gated_sha256_proves_a_two_block_message_and_agrees_with_the_gadget() -> Result<()> {
    let message = bits_of(&[0x5au8; 65]);
    let c = GatedCircuit::new(message.len());
    let (digest, _, verified) = c.prove(c.witness(&message)?)?;
    assert!(verified);
    assert_eq!(digest, reference_sha256_bits(&message));
    // The same digest as the arithmetic gadget on the same bits.
    let mut b = CircuitBuilder::<F, D>::new(CircuitConfig::standard_recursion_config());
    let bits: Vec<BoolTarget> = message.iter().map(|&v| b.constant_bool(v)).collect();
    let plain = b.sha256_bits(&bits);
    let data = b.build_with_options::<C>(false);
    let witness = generate_partial_witness(PartialWitness::new(), &data.prover_only, &data.common)?;
    assert_eq!(witness.get_sha256_digest(&plain.words)?, digest);
    Ok(())
}

/// Rows added by `sha256_bits_gated` on `len` virtual message bits.
fn gated_rows(len: usize) -> usize {
    let mut b = CircuitBuilder::<F, D>::new(CircuitConfig::standard_recursion_config());
    let message: Vec<BoolTarget> = (0..len).map(|_| b.add_virtual_bool_target_safe()).collect();
    let before = b.num_gates();
    b.sha256_bits_gated(&message);
    b.num_gates() - before
}

#[test]
fn gated_rows_per_compression_stay_within_budget() {
    let (node, leaf) = (gated_rows(65 * 8), gated_rows(149 * 8));
    eprintln!("sha256_bits_gated rows: 65 B (2 blocks) {node}, 149 B (3 blocks) {leaf}");
    // 176 gate rows a block (2 a round, 1 a schedule word), the message packing (a row per
    // word) and the final additions. Measured 411 / 625; the arithmetic gadget takes 2,983 /
    // 4,588.
    assert!(node <= 420, "RFC 6962 node: {node} rows");
    assert!(leaf <= 640, "task leaf: {leaf} rows");
}

/// Rows of a circuit that verifies one proof of a 2^12-row circuit with the given extra gates.
fn verifier_rows(extra: &[plonky2::gates::gate::GateRef<F, D>]) -> usize {
    use plonky2::gates::noop::NoopGate;
    use plonky2::plonk::circuit_data::VerifierCircuitTarget;
    let config = CircuitConfig::standard_recursion_config();
    let mut inner = CircuitBuilder::<F, D>::new(config.clone());
    inner.add_virtual_public_input();
    for gate in extra {
        inner.add_gate_to_gate_set(gate.clone());
    }
    while inner.num_gates() < 1 << 11 {
        inner.add_gate(NoopGate, vec![]);
    }
    let common = inner.mock_build::<C>().common;
    let mut outer = CircuitBuilder::<F, D>::new(config);
    let proof = outer.add_virtual_proof_with_pis(&common);
    let vd: VerifierCircuitTarget = outer.add_virtual_verifier_data(common.config.fri_config.cap_height);
    outer.verify_proof::<C>(&proof, &vd, &common);
    outer.num_gates()
}

#[test]
fn the_gates_add_little_to_a_recursive_verifier() {
    use plonky2::gates::gate::GateRef;
    let without = verifier_rows(&[]);
    let with = verifier_rows(&[
        GateRef::new(RoundAGate::new()),
        GateRef::new(RoundEGate::new()),
        GateRef::new(ScheduleGate::new()),
    ]);
    eprintln!("recursive verifier: {without} rows, {with} with the SHA-256 gates in the verified circuit");
    // Each gate's constraints are evaluated once, at the challenge point, in the verifier.
    assert!(with - without <= 400, "{} more rows", with - without);
}

// ------------------------------------------------------------- malicious rows

/// A malicious replacement for the generator of one SHA-256 row of kind `R`: it computes the
/// honest row, then lets `tamper` rewrite the derived wires (the inputs are fixed by copy
/// constraints). Everything after the row is generated honestly from what it wrote.
/// Rewrites a row's wires.
type Tamper = Box<dyn Fn(&mut [F]) + Send + Sync>;

struct EvilRow<R> {
    row: usize,
    constants: Vec<u64>,
    tamper: Tamper,
    _row: std::marker::PhantomData<R>,
}

impl<R> std::fmt::Debug for EvilRow<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EvilRow({})", self.row)
    }
}

impl<R: ShaRow> WitnessGenerator<F, D> for EvilRow<R> {
    fn id(&self) -> String {
        "EvilRow".into()
    }

    fn watch_list(&self) -> Vec<Target> {
        R::INPUTS.iter().map(|&w| Target::wire(self.row, w)).collect()
    }

    fn run(&self, witness: &PartitionWitness<'_, F>, out: &mut GeneratedValues<F>) -> bool {
        let Some(inputs) = R::INPUTS
            .iter()
            .map(|&w| witness.try_get_target(Target::wire(self.row, w)).map(|v| v.to_canonical_u64()))
            .collect::<Option<Vec<u64>>>()
        else {
            return false;
        };
        let mut wires = vec![F::ZERO; R::NUM_WIRES];
        for (&w, &v) in R::INPUTS.iter().zip(&inputs) {
            wires[w] = F::from_canonical_u64(v);
        }
        let derived = R::witness(&inputs, &self.constants).expect("honest inputs");
        for &(w, v) in &derived {
            wires[w] = F::from_canonical_u64(v);
        }
        (self.tamper)(&mut wires);
        for &(w, _) in &derived {
            out.set_target(Target::wire(self.row, w), wires[w]).expect("buffer");
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

/// The row's constraints on `wires`, the row's constants being `constants`.
fn residuals<R: ShaRow>(wires: &[F], constants: &[F]) -> Vec<F> {
    R::constraints(&mut Values::new(F::from_canonical_u64), wires, constants)
}

/// Builds the circuit of a 3-byte message, swaps the generator of the `nth` row of kind `R` for
/// an [`EvilRow`], and returns (honest digest, tampered digest, tampered proof verifies).
fn run_evil<R: ShaRow + 'static>(
    nth: usize,
    tamper: impl Fn(&mut [F]) + Send + Sync + 'static,
) -> Result<([u8; 32], [u8; 32], bool)> {
    let message = bits_of(b"abc");
    let mut c = GatedCircuit::new(message.len());
    let honest = reference_sha256_bits(&message);
    let id = format!("tgrid::Sha256RowGenerator<{}>", R::NAME);
    let generators = &mut c.data.prover_only.generators;
    let index = generators.iter().enumerate().filter(|(_, g)| g.0.id() == id).map(|(i, _)| i).nth(nth).expect("row");
    let row = match generators[index].0.watch_list()[0] {
        Target::Wire(w) => w.row,
        Target::VirtualTarget { .. } => unreachable!("gate wires"),
    };
    let constants = if R::NUM_CONSTANTS == 1 { vec![u64::from(crate::K[nth])] } else { vec![] };
    generators[index] = WitnessGeneratorRef::new(EvilRow::<R> {
        row,
        constants,
        tamper: Box::new(tamper),
        _row: std::marker::PhantomData,
    });
    let (digest, _, verified) = c.prove(c.witness(&message)?)?;
    Ok((honest, digest, verified))
}

/// Re-derives a tampered row's outputs from its (tampered) bits, as a prover that wants every
/// constraint but the targeted one to hold would: the row's sums are recomputed from its
/// constraints and split again. Returns false if a sum leaves the range the next rows accept.
trait Rederive: ShaRow {
    fn rederive(wires: &mut [F], constants: &[F]) -> bool;
}

/// `next + 2^32·carry = S`: recomputes `S` from the constraint's residual and splits it again.
fn resplit(wires: &mut [F], residual: F, next: usize, carry_start: usize, carry_bits: usize) -> bool {
    let carry = (0..carry_bits).fold(F::ZERO, |acc, i| acc + wires[carry_start + i] * F::from_canonical_u64(1 << i));
    let sum = (wires[next] + carry * F::from_canonical_u64(1 << 32) - residual).to_canonical_u64();
    if sum >> 32 >= 1 << carry_bits {
        return false;
    }
    wires[next] = F::from_canonical_u64(sum & 0xffff_ffff);
    for i in 0..carry_bits {
        wires[carry_start + i] = F::from_canonical_u64((sum >> (32 + i)) & 1);
    }
    true
}

impl Rederive for RoundA {
    fn rederive(wires: &mut [F], constants: &[F]) -> bool {
        let r = residuals::<RoundA>(wires, constants);
        wires[RoundA::T2] -= r[99];
        wires[RoundA::T2].to_canonical_u64() < 1 << 33
    }
}

impl Rederive for RoundE {
    fn rederive(wires: &mut [F], constants: &[F]) -> bool {
        let r = residuals::<RoundE>(wires, constants);
        resplit(wires, r[105], RoundE::A_NEXT, 9, 3) && resplit(wires, r[106], RoundE::E_NEXT, 12, 3)
    }
}

impl Rederive for Schedule {
    fn rederive(wires: &mut [F], constants: &[F]) -> bool {
        let r = residuals::<Schedule>(wires, constants);
        let before = wires[Schedule::OUT];
        if !resplit(wires, r[101], Schedule::OUT, 5, 2) {
            return false;
        }
        let out = wires[Schedule::OUT].to_canonical_u64();
        if wires[Schedule::OUT] == before {
            return true;
        }
        for i in 0..32 {
            wires[71 + i] = F::from_canonical_u64((out >> i) & 1);
        }
        true
    }
}

/// A fault in the 32 bits of a word.
#[derive(Clone, Copy, Debug)]
enum BitFault {
    /// One bit flipped: the bits no longer recompose to the word.
    Flip,
    /// Bits `(0, 1)` at positions `(i, i + 1)` rewritten as `(2, 0)`: the same word, one
    /// non-boolean bit.
    NonBoolean,
}

/// Applies `fault` to the bits at `start..start + 32` of an honest row, at the first position
/// where the re-derived row stays within the ranges the next rows accept, and checks that
/// exactly one constraint of the row is then violated. False if no position works.
fn apply_fault<R: Rederive>(wires: &mut [F], constants: &[F], start: usize, fault: BitFault) -> bool {
    for i in 0..31 {
        let mut w = wires.to_vec();
        match fault {
            BitFault::Flip => w[start + i] = F::ONE - w[start + i],
            BitFault::NonBoolean => {
                if !(w[start + i] == F::ZERO && w[start + i + 1] == F::ONE) {
                    continue;
                }
                w[start + i] = F::TWO;
                w[start + i + 1] = F::ZERO;
            }
        }
        if R::rederive(&mut w, constants) {
            let broken = residuals::<R>(&w, constants).iter().filter(|v| **v != F::ZERO).count();
            assert_eq!(broken, 1, "{fault:?} at bit {i} of the word at wire {start}: one constraint breaks");
            wires.copy_from_slice(&w);
            return true;
        }
    }
    false
}

/// Every fault of every bit group of a row of kind `R` gives a proof the verifier rejects. The
/// rows `rows` are tried in turn until the fault applies (see [`apply_fault`]).
fn bit_faults_are_rejected<R: Rederive>(
    rows: std::ops::Range<usize>,
    groups: &[usize],
    constants: impl Fn(usize) -> Vec<F>,
) -> Result<()> {
    for &start in groups {
        for fault in [BitFault::Flip, BitFault::NonBoolean] {
            let mut tested = false;
            for nth in rows.clone() {
                let applied = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
                let (flag, constants) = (applied.clone(), constants(nth));
                let (_, _, verified) = run_evil::<R>(nth, move |w| {
                    let ok = apply_fault::<R>(w, &constants, start, fault);
                    flag.store(ok, std::sync::atomic::Ordering::SeqCst);
                })?;
                if applied.load(std::sync::atomic::Ordering::SeqCst) {
                    assert!(!verified, "{} row {nth}: {fault:?} in the bits at wire {start}", R::NAME);
                    tested = true;
                    break;
                }
            }
            assert!(tested, "{fault:?} at wire {start} applies to some {} row", R::NAME);
        }
    }
    Ok(())
}

#[test]
fn round_a_output_off_by_one_is_rejected() -> Result<()> {
    let (honest, digest, verified) = run_evil::<RoundA>(10, |w| w[RoundA::T2] += F::ONE)?;
    assert_ne!(honest, digest, "the tampered row changes the digest");
    assert!(!verified);
    Ok(())
}

#[test]
fn round_a_bit_faults_are_rejected() -> Result<()> {
    bit_faults_are_rejected::<RoundA>(20..64, &[4, 36, 68], |_| vec![])
}

#[test]
fn round_e_wrong_next_word_is_rejected() -> Result<()> {
    for wire in [RoundE::A_NEXT, RoundE::E_NEXT] {
        let (honest, digest, verified) = run_evil::<RoundE>(30, move |w| w[wire] += F::ONE)?;
        assert_ne!(honest, digest);
        assert!(!verified, "wire {wire}");
    }
    Ok(())
}

#[test]
fn round_e_bit_faults_are_rejected() -> Result<()> {
    // The last round: its outputs feed only the final additions, which accept any re-split.
    bit_faults_are_rejected::<RoundE>(63..64, &[15, 47, 79], |round| vec![F::from_canonical_u32(crate::K[round])])
}

#[test]
fn round_e_non_boolean_carry_is_rejected() -> Result<()> {
    // Carry bits (1, 0) rewritten as (−1, 1): the same carry, so every sum still holds.
    for start in [9, 12] {
        let mut rejected = false;
        for round in 0..64 {
            let (honest, digest, verified) = run_evil::<RoundE>(round, move |w| {
                if w[start] == F::ONE && w[start + 1] == F::ZERO {
                    w[start] = F::NEG_ONE;
                    w[start + 1] = F::ONE;
                    let r = residuals::<RoundE>(w, &[F::from_canonical_u32(crate::K[round])]);
                    assert_eq!(r.iter().filter(|v| **v != F::ZERO).count(), 1, "only booleanity breaks");
                }
            })?;
            if !verified {
                assert_eq!(honest, digest, "the carry's value is unchanged");
                rejected = true;
                break;
            }
        }
        assert!(rejected, "some round has carry bits (1, 0) at wire {start}");
    }
    Ok(())
}

#[test]
fn schedule_wrong_word_is_rejected() -> Result<()> {
    let (honest, digest, verified) = run_evil::<Schedule>(5, |w| w[Schedule::OUT] += F::ONE)?;
    assert_ne!(honest, digest);
    assert!(!verified);
    Ok(())
}

#[test]
fn schedule_bit_faults_are_rejected() -> Result<()> {
    bit_faults_are_rejected::<Schedule>(5..48, &[7, 39, 71], |_| vec![])
}

#[test]
fn schedule_non_boolean_carry_is_rejected() -> Result<()> {
    let mut rejected = false;
    for row in 0..48 {
        let (_, _, verified) = run_evil::<Schedule>(row, |w| {
            if w[5] == F::ONE && w[6] == F::ZERO {
                w[5] = F::NEG_ONE;
                w[6] = F::ONE;
                let broken = residuals::<Schedule>(w, &[]).iter().filter(|v| **v != F::ZERO).count();
                assert_eq!(broken, 1, "only booleanity breaks");
            }
        })?;
        if !verified {
            rejected = true;
            break;
        }
    }
    assert!(rejected, "some schedule row has carry bits (1, 0)");
    Ok(())
}

#[test]
fn a_carry_moved_into_the_last_rounds_word_leaves_the_digest_right() -> Result<()> {
    // The last round's `a'` feeds only the final `H0 + a` addition, so it is not range checked
    // by a gate: a prover may take 2^32 from the carry and add it to `a'`. The digest is the
    // same (the addition keeps the low 32 bits), which is why no check is needed.
    let (honest, digest, verified) = run_evil::<RoundE>(63, |w| {
        let carry = (0..3).map(|i| w[9 + i].to_canonical_u64() << i).sum::<u64>();
        if carry > 0 {
            let carry = carry - 1;
            for i in 0..3 {
                w[9 + i] = F::from_canonical_u64((carry >> i) & 1);
            }
            w[RoundE::A_NEXT] += F::from_canonical_u64(1 << 32);
        }
    })?;
    assert_eq!(honest, digest);
    assert!(verified);
    Ok(())
}
