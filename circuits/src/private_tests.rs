//! Private tasks: zero-knowledge proofs with a salted input commitment and an encrypted output
//! under the private model id, the output key bound to the input salt through every segment, and
//! neither mode's proof verifying as the other's.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::testing::tiny_model;
use crate::{
    commit, commit_salted, infer, EncryptedTensor, OutputKey, Privacy, QuantModel, Salt, SegmentPlan, TaskProof,
    TaskProver, TaskVerifier, MAX_TENSOR_LEN,
};

const TASK: [u8; 32] = [0x31; 32];
const PROVIDER: [u8; 20] = [0x42; 20];

fn input(model: &QuantModel, seed: u64) -> Vec<i8> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..model.input_len()).map(|_| rng.gen()).collect()
}

/// Proves a private task and checks its statement; with `cross_check`, also that neither mode's
/// verifier accepts the other's proofs (for one plan: building a chain's circuits is slow).
fn check_private_proof(model: &QuantModel, plan: SegmentPlan, cross_check: bool) {
    let x = input(model, 1);
    let salt = Salt::random();
    let prover = TaskProver::with_privacy(model.clone(), plan.clone(), Privacy::Private).unwrap();
    let (proof, trace, _) = prover.prove_private(&x, &salt, TASK, PROVIDER, &mut |_, _, _| {}).unwrap();
    let verifier = TaskVerifier::with_privacy(model, &plan, Privacy::Private).unwrap();
    let publics = verifier.verify(&proof).unwrap();
    let private_id = Privacy::Private.task_model_id(model.model_id());
    assert_ne!(private_id, model.model_id());
    assert_eq!((publics.model_id, proof.model_id), (private_id, private_id));
    assert_eq!((publics.task_id, publics.provider), (TASK, PROVIDER));
    // The circuit's commitments are the native ones, and hide the plain ones; the output's is
    // that of the output encrypted under the key of the input salt, which decrypts it.
    assert_eq!(publics.input_commitment, commit_salted(&x, &salt));
    let key = OutputKey::from_input_salt(&salt);
    let encrypted = EncryptedTensor::encrypt(trace.output(), &key);
    assert_eq!(publics.output_commitment, encrypted.commitment());
    assert_eq!(encrypted.decrypt(&key).unwrap(), trace.output());
    assert_ne!(publics.input_commitment, commit(&x));
    assert_ne!(publics.output_commitment, commit(trace.output()));
    if !cross_check {
        return;
    }
    // Neither mode's verifier accepts the other's proofs.
    let public_verifier = TaskVerifier::new(model, &plan).unwrap();
    assert!(public_verifier.verify(&proof).is_err(), "a private proof verified as a public one");
    let public = TaskProver::new(model.clone(), plan).unwrap();
    let (public_proof, _, _) = public.prove(&x, TASK, PROVIDER, &mut |_, _, _| {}).unwrap();
    assert!(verifier.verify(&public_proof).is_err(), "a public proof verified as a private one");
    let mut relabelled = public_proof.clone();
    relabelled.model_id = private_id;
    assert!(verifier.verify(&relabelled).is_err(), "a public proof relabelled with the private id verified");
}

#[test]
fn a_private_task_proof_verifies_with_salted_commitments_only_as_private() {
    check_private_proof(&tiny_model(40), SegmentPlan::default(), true);
}

#[test]
fn a_segmented_private_task_salts_the_model_input_and_output() {
    check_private_proof(&tiny_model(41), SegmentPlan { cuts: vec![3] }, false);
}

#[test]
fn the_same_input_under_two_salts_gives_unrelated_commitments() {
    let model = tiny_model(42);
    let x = input(&model, 2);
    let (a, b) = (Salt::random(), Salt::random());
    assert_ne!(a, b);
    assert_ne!(commit_salted(&x, &a), commit_salted(&x, &b));
    // The salted element list never equals an unsalted one (the length carries a flag).
    let zero = Salt::from_bytes([0; 32]).unwrap();
    assert_ne!(commit_salted(&x, &zero), commit(&x));
    assert_eq!(infer::run(&model, &x).unwrap().output().len(), model.output_len());
}

#[test]
fn modes_and_salts_are_checked_before_proving() {
    let model = tiny_model(43);
    let x = input(&model, 3);
    let private = TaskProver::with_privacy(model.clone(), SegmentPlan::default(), Privacy::Private).unwrap();
    assert!(private.prove(&x, TASK, PROVIDER, &mut |_, _, _| {}).is_err(), "a private task without its salt");
    let public = TaskProver::new(model, SegmentPlan::default()).unwrap();
    assert!(public.prove_private(&x, &Salt::random(), TASK, PROVIDER, &mut |_, _, _| {}).is_err());
}

#[test]
fn encrypted_outputs_round_trip_bind_their_bytes_and_decode_without_trusting_lengths() {
    let key = OutputKey::from_input_salt(&Salt::random());
    for len in [0, 1, 6, 7, 8, 10, 39, 100] {
        let tensor: Vec<i8> = (0..len).map(|i| (i as u8).wrapping_mul(37) as i8).collect();
        let encrypted = EncryptedTensor::encrypt(&tensor, &key);
        assert_eq!(encrypted.len(), len);
        let bytes = encrypted.to_bytes();
        let back = EncryptedTensor::from_bytes(&bytes, MAX_TENSOR_LEN).unwrap();
        assert_eq!(back, encrypted);
        assert_eq!(back.commitment(), encrypted.commitment());
        assert_eq!(back.decrypt(&key).unwrap(), tensor);
        // Neither the plain nor the salted commitment of the tensor equals the encrypted one.
        assert_ne!(encrypted.commitment(), commit(&tensor));
        // Every byte of the ciphertext is bound by the commitment or refused by the decoder.
        for i in 14..bytes.len() {
            let mut changed = bytes.clone();
            changed[i] ^= 1;
            if let Ok(other) = EncryptedTensor::from_bytes(&changed, MAX_TENSOR_LEN) {
                assert_ne!(other.commitment(), encrypted.commitment(), "byte {i} of {len}");
            }
        }
    }
    let tensor = vec![5i8; 10];
    let encrypted = EncryptedTensor::encrypt(&tensor, &key);
    // Another key: refused or a different tensor, never the output.
    let other = OutputKey::from_input_salt(&Salt::random());
    assert_ne!(encrypted.decrypt(&other).ok(), Some(tensor.clone()));
    // Hostile encodings: lengths that disagree with the elements, over the limit, non-canonical
    // elements, truncation, trailing bytes, another magic.
    let bytes = encrypted.to_bytes();
    let with_len = |len: u32| {
        let mut b = bytes.clone();
        b[10..14].copy_from_slice(&len.to_be_bytes());
        b
    };
    for bad in [
        with_len(15),
        with_len(u32::MAX),
        bytes[..bytes.len() - 1].to_vec(),
        [bytes.as_slice(), &[0]].concat(),
        [b"TGRIDSEL".as_slice(), &bytes[8..]].concat(),
        {
            let mut b = bytes.clone();
            b[14..22].copy_from_slice(&u64::MAX.to_be_bytes());
            b
        },
    ] {
        assert!(EncryptedTensor::from_bytes(&bad, MAX_TENSOR_LEN).is_err());
    }
    assert!(EncryptedTensor::from_bytes(&bytes, 9).is_err(), "over the caller's limit");
    assert_eq!(format!("{key:?}"), "OutputKey(..)");
    assert_eq!(OutputKey::from_hex(&key.to_hex()).unwrap(), key);
}

/// A malicious prover that encrypts the output under a key of its choice instead of the one
/// derived from the input salt (the circuit's key wiring cut, [`crate::testing::cut_copy_constraints`])
/// makes a proof the honest verifier rejects; with the honest wiring the same prover's proof verifies.
#[test]
fn an_output_encrypted_under_another_key_is_rejected_by_the_verifier() {
    let model = tiny_model(44);
    let x = input(&model, 4);
    let salt = Salt::random();
    let verifier = TaskVerifier::with_privacy(&model, &SegmentPlan::default(), Privacy::Private).unwrap();
    let prover = TaskProver::with_privacy(model.clone(), SegmentPlan::default(), Privacy::Private).unwrap();
    let honest = prover.prove_with_output_key(&x, &salt, None).unwrap();
    verifier.verify(&honest).unwrap();
    let chosen = OutputKey::from_input_salt(&Salt::random());
    let forged = prover.prove_with_output_key(&x, &salt, Some(&chosen)).unwrap();
    assert!(verifier.verify(&forged).is_err(), "an output encrypted under a key of the prover's choice verified");
}

/// In a chain, every segment after the first takes the output key as a witness; the commitments
/// at the cuts are salted with it, so a last segment run under another key does not join: the
/// honest join refuses it, and a malicious join that skips the commitment link is rejected.
#[test]
fn a_segment_under_another_output_key_does_not_join() {
    let model = tiny_model(45);
    let plan = SegmentPlan { cuts: vec![3] };
    let x = input(&model, 5);
    let (salt, other) = (Salt::random(), Salt::random());
    let verifier = TaskVerifier::with_privacy(&model, &plan, Privacy::Private).unwrap();
    let prover = TaskProver::with_privacy(model.clone(), plan, Privacy::Private).unwrap();
    verifier.verify(&prover.prove_private_chain(&x, &salt, &salt, true).unwrap()).unwrap();
    assert!(prover.prove_private_chain(&x, &salt, &other, true).is_err(), "the honest join refuses it");
    let forged = prover.prove_private_chain(&x, &salt, &other, false).unwrap();
    assert!(verifier.verify(&forged).is_err(), "a chain under two output keys verified");
}

#[test]
fn salts_parse_canonically_and_never_print() {
    let salt = Salt::random();
    assert_eq!(Salt::from_hex(&salt.to_hex()).unwrap(), salt);
    assert_eq!(format!("{salt:?}"), "Salt(..)");
    // An element at or above the Goldilocks modulus is refused, as are bad lengths.
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&u64::MAX.to_be_bytes());
    assert!(Salt::from_bytes(bytes).is_err());
    assert!(Salt::from_hex("0x1234").is_err());
    assert!(Salt::from_hex(&"zz".repeat(32)).is_err());
}

/// Segments of at most 2^13 rows are proven at FRI rate 1/4 (42 queries), larger ones at rate
/// 1/8 (28 queries): 100 conjectured bits each way. A private segment is built with our own
/// blinding and masking columns, and marked zero-knowledge so that its Merkle leaves are salted.
#[test]
fn segments_up_to_2_13_rows_take_rate_one_quarter_and_private_ones_are_hiding() {
    let fri = |model: &QuantModel, privacy: Privacy| {
        let verifier = TaskVerifier::with_privacy(model, &SegmentPlan::default(), privacy).unwrap();
        let common = &verifier.verifier_data().common;
        let fri = &common.config.fri_config;
        assert_eq!(fri.rate_bits * fri.num_query_rounds + fri.proof_of_work_bits as usize, 100);
        let hiding = privacy == Privacy::Private;
        assert_eq!((common.config.zero_knowledge, common.fri_params.hiding), (hiding, hiding));
        let wires = if hiding { crate::PRIVATE_SEGMENT_WIRES + crate::MASK_COLUMNS } else { crate::SEGMENT_WIRES };
        assert_eq!(common.config.num_wires, wires);
        (fri.rate_bits, fri.num_query_rounds, common.degree())
    };
    let small = tiny_model(41);
    assert_eq!(fri(&small, Privacy::Public).0, 2);
    assert_eq!(fri(&small, Privacy::Private).0, 2);
    let (rate, queries, rows) = fri(&crate::testing::conv_model(43, 24, 32), Privacy::Public);
    assert!(rows > crate::QUARTER_RATE_MAX_ROWS, "{rows} rows");
    assert_eq!((rate, queries), (3, 28));
}

/// A private segment at rate 1/8 has eight quotient chunks, so its quotient-masking row is of
/// degree 8 (9 with its selector, plonky2's largest there); its proofs verify.
#[test]
fn a_private_segment_at_rate_one_eighth_masks_eight_chunks_and_proves() {
    let model = crate::testing::conv_model(43, 24, 32);
    let verifier = TaskVerifier::with_privacy(&model, &SegmentPlan::default(), Privacy::Private).unwrap();
    let common = &verifier.verifier_data().common;
    assert_eq!(common.config.fri_config.rate_bits, 3);
    assert_eq!(common.quotient_degree_factor, 8);
    let mask = common.gates.iter().find(|g| g.0.id().starts_with("QuotientMaskGate")).expect("a masking row");
    assert_eq!(mask.0.degree(), 8);
    check_private_proof(&model, SegmentPlan::default(), false);
}

/// The single-segment circuit of `model` for tasks of mode `privacy`, with `fault` in its witness
/// generation and then without the copy constraints the fault breaks in its prover's wiring.
fn whole_circuit(
    model: &QuantModel,
    privacy: Privacy,
    fault: Option<crate::gadgets::Fault>,
) -> crate::circuit::SegmentCircuit {
    let build = |cut| {
        let segment = crate::Segment::new(model, 0..model.nodes.len());
        let binding = crate::circuit::BuildOptions::binding(true, privacy);
        let options = crate::circuit::BuildOptions { fault: fault.map(|f| (0, f)), cut, ..binding };
        crate::circuit::SegmentCircuit::build(model, segment, options).unwrap()
    };
    let mut circuit = build(false);
    if fault.is_some() {
        // The malicious prover gets the wiring without the copies the fault breaks.
        crate::testing::cut_copy_constraints(&mut circuit.data, build(true).data);
    }
    circuit
}

/// A private circuit checks its bytes with limbs and has no lookup: plonky2's lookup
/// polynomials would carry its activations unblinded. The public one keeps its lookups.
#[test]
fn a_private_circuit_checks_bytes_by_limbs_and_has_no_lookup() {
    let model = tiny_model(46);
    let private = whole_circuit(&model, Privacy::Private, None);
    let common = &private.data.common;
    assert!(common.luts.is_empty() && common.num_lookup_polys == 0);
    let ids: Vec<String> = common.gates.iter().map(|g| g.0.id()).collect();
    assert!(ids.iter().any(|id| id.starts_with("ByteRangeGate")), "{ids:?}");
    assert!(!ids.iter().any(|id| id.contains("Lookup")), "{ids:?}");
    let public = whole_circuit(&model, Privacy::Public, None);
    assert!(!public.data.common.luts.is_empty());
    assert!(!public.data.common.gates.iter().any(|g| g.0.id().starts_with("ByteRangeGate")));
}

/// Each family of byte checks (an activation, a requantization remainder, a window's
/// differences to its maximum) rejects a non-byte in a private circuit at the verifier: the
/// malicious prover writes limbs that recompose the value, one of them out of range.
#[test]
fn private_byte_checks_reject_non_bytes_at_the_verifier() {
    use crate::gadgets::Fault;
    use crate::tests::assert_fault_rejected_in;
    let private = Privacy::Private;
    assert_fault_rejected_in(private, &tiny_model(12), 0, 0, Fault::OutputOutOfRange);
    assert_fault_rejected_in(private, &tiny_model(12), 6, 0, Fault::OutputOutOfRange);
    assert_fault_rejected_in(private, &tiny_model(13), 0, 1, Fault::RemainderOverflow);
    assert_fault_rejected_in(private, &tiny_model(13), 3, 1, Fault::RemainderOverflow);
    assert_fault_rejected_in(private, &tiny_model(15), 1, 0, Fault::MaxTooLarge);
    assert_fault_rejected_in(private, &tiny_model(15), 1, 5, Fault::MaxTooSmall);
}

/// The malicious prover of the tests above proves an honest private witness, which verifies:
/// their rejections come from the constraints, not from the machinery.
#[test]
fn the_admitting_prover_proves_an_honest_private_witness() {
    let model = tiny_model(47);
    let mut circuit = whole_circuit(&model, Privacy::Private, None);
    let x = input(&model, 3);
    let pw = circuit.witness(&[&x], Some((&TASK, &PROVIDER)), Some(&Salt::random())).unwrap();
    let proof = crate::malicious::prove_admitting_any_byte(&mut circuit.data, pw).unwrap();
    circuit.data.verify(proof).unwrap();
}

/// A private task's input that is not a byte (256 in offset form) gives a proof the verifier
/// rejects.
#[test]
fn a_private_input_outside_int8_is_rejected_at_the_verifier() {
    use plonky2::field::types::Field;
    use plonky2::iop::witness::WitnessWrite;
    let model = tiny_model(16);
    let mut circuit = whole_circuit(&model, Privacy::Private, None);
    let x = input(&model, 4);
    let mut pw = plonky2::iop::witness::PartialWitness::new();
    for (i, &t) in circuit.inputs[0].iter().enumerate() {
        let v = if i == 3 { 256 } else { u64::from((x[i] as u8) ^ 0x80) };
        pw.set_target(t, crate::F::from_canonical_u64(v)).unwrap();
    }
    crate::circuit::set_binding(&mut pw, circuit.binding.as_ref().unwrap(), &TASK, &PROVIDER).unwrap();
    let crate::circuit::SecretTargets::InputSalt(salt) = circuit.secret.unwrap() else { panic!("a whole model") };
    for (t, v) in salt.into_iter().zip(Salt::random().to_elements()) {
        pw.set_target(t, v).unwrap();
    }
    let proof =
        crate::malicious::prove_admitting_any_byte(&mut circuit.data, pw).expect("a proof reaches the verifier");
    assert!(circuit.data.verify(proof).is_err(), "a private input of 256 produced a valid proof");
}

/// Token ids in offset form (int8 `id − 128`).
fn tokens(ids: &[u8]) -> Vec<i8> {
    ids.iter().map(|&id| (id ^ 0x80) as i8).collect()
}

/// Every op that reads a table proves privately with no lookup, exactly as the integer
/// inference: function tables, a Softmax's exponentials (direct, and split for 16-bit scores),
/// a token embedding by one-hot vectors.
#[test]
fn private_models_with_tables_prove_exactly_without_lookups() {
    use crate::testing::{attention_model, language_model, scores_attention_model, token_model};
    let models = [
        (token_model(50), None),
        (attention_model(51, true), None),
        (scores_attention_model(52, false), None),
        (language_model(53), Some(tokens(&[3, 1, 4, 1, 5, 9]))),
    ];
    for (model, x) in models {
        let x = x.unwrap_or_else(|| input(&model, 5));
        let prover = TaskProver::with_privacy(model.clone(), SegmentPlan::default(), Privacy::Private).unwrap();
        let salt = Salt::random();
        let (proof, trace, _) = prover.prove_private(&x, &salt, TASK, PROVIDER, &mut |_, _, _| {}).unwrap();
        assert_eq!(trace, infer::run(&model, &x).unwrap());
        let verifier = TaskVerifier::with_privacy(&model, &SegmentPlan::default(), Privacy::Private).unwrap();
        assert!(verifier.verifier_data().common.luts.is_empty());
        let publics = verifier.verify(&proof).unwrap();
        assert_eq!(publics.input_commitment, commit_salted(&x, &salt));
    }
}

/// A table read whose output is not the table's entry (bits and folds honest) gives a proof the
/// verifier rejects, in each of a model's tables; the same malicious prover without the fault
/// is accepted.
#[test]
fn a_wrong_private_table_read_is_rejected_by_the_verifier() {
    let model = crate::testing::token_model(54);
    let x = input(&model, 6);
    let build = || whole_circuit(&model, Privacy::Private, None);
    let reads = build().data.prover_only.generators.iter().filter(|g| g.0.id() == "tgrid::ByteTableGenerator").count();
    assert!(reads >= 6, "two tables, three reads a row");
    for (nth, wrong) in [(0, false), (0, true), (reads / 2, true), (reads - 1, true)] {
        let mut circuit = build();
        let pw = circuit.witness(&[&x], Some((&TASK, &PROVIDER)), Some(&Salt::random())).unwrap();
        let proof = crate::malicious::prove_with_table_read(&mut circuit.data, pw, nth, wrong).unwrap();
        assert_eq!(circuit.data.verify(proof).is_ok(), !wrong, "read {nth}, wrong: {wrong}");
    }
}

/// A private embedding whose one-hot vector marks another id than the token's, or any id for a
/// token outside the vocabulary, gives a proof the verifier rejects.
#[test]
fn a_private_embedding_of_a_wrong_or_unknown_token_is_rejected_by_the_verifier() {
    use plonky2::iop::generator::generate_partial_witness;
    use plonky2::plonk::prover::prove_with_partition_witness;
    use plonky2::util::timing::TimingTree;

    use crate::gadgets::Fault;
    let model = crate::testing::language_model(55);
    let mut unknown = tokens(&[1, 2, 3, 4, 5, 6]);
    unknown[2] = tokens(&[10])[0]; // the vocabulary has 10 ids
    for x in [tokens(&[1, 2, 3, 4, 5, 6]), unknown] {
        let circuit = whole_circuit(&model, Privacy::Private, Some(Fault::OneHotWrongId));
        let pw = circuit.witness(&[&x], Some((&TASK, &PROVIDER)), Some(&Salt::random())).unwrap();
        let (prover, common) = (&circuit.data.prover_only, &circuit.data.common);
        let witness = generate_partial_witness(pw, prover, common).expect("the malicious prover writes a witness");
        let proof = prove_with_partition_witness::<crate::F, crate::C, { crate::D }>(
            prover,
            common,
            witness,
            &mut TimingTree::default(),
        )
        .expect("plonky2's prover proves the faulty witness");
        assert!(circuit.data.verify(proof).is_err(), "a wrong one-hot vector produced a valid proof for {x:?}");
    }
}

/// A private model cut into three segments. Every join is blinded like a segment (masking
/// columns, random rows, joined pairs, salted leaves): the last join is the proof the task
/// publishes, and its witness is every earlier proof of the chain. Two witness generations of
/// that join differ in every blinding cell, and the chain verifies under the private id.
#[test]
fn a_private_chain_of_three_segments_blinds_every_join() {
    use plonky2::iop::generator::generate_partial_witness;
    use plonky2::iop::target::Target;
    use plonky2::iop::witness::Witness;

    use crate::circuit::{BuildOptions, SegmentCircuit};
    use crate::join::{JoinCircuit, Proven};

    let model = tiny_model(47);
    let plan = SegmentPlan { cuts: vec![2, 5] };
    let (x, salt) = (input(&model, 7), Salt::random());
    let trace = infer::run(&model, &x).unwrap();
    let segments = plan.segments(&model);
    assert_eq!(segments.len(), 3);
    let last_index = segments.len() - 1;
    let mut acc: Option<Proven> = None;
    for (i, segment) in segments.into_iter().enumerate() {
        let live: Vec<&[i8]> = segment.live_in.iter().map(|&t| trace.tensors[t].as_slice()).collect();
        let circuit = SegmentCircuit::build(&model, segment, BuildOptions::binding(false, Privacy::Private)).unwrap();
        let proof = crate::prove_circuit(&circuit.data, circuit.witness(&live, None, Some(&salt)).unwrap()).unwrap();
        let seg = Proven { proof, verifier: circuit.data.verifier_data() };
        let Some(prev) = acc.take() else {
            acc = Some(seg);
            continue;
        };
        let last = i == last_index;
        let join = JoinCircuit::build(&model, &prev.verifier, &seg.verifier, last, Privacy::Private).unwrap();
        let common = &join.data.common;
        let config = &common.config;
        assert!(config.zero_knowledge && common.fri_params.hiding, "join {i} is marked hiding");
        assert_eq!(
            config.num_wires,
            plonky2::plonk::circuit_data::CircuitConfig::standard_recursion_config().num_wires + crate::MASK_COLUMNS
        );
        assert!(common.gates.iter().any(|g| g.0.id().starts_with("QuotientMaskGate")), "join {i} masks its quotient");
        let rows = join.blinding.clone().expect("a private join's blinding rows");
        let task = last.then_some((&TASK, &PROVIDER));
        let wires = || {
            let w = generate_partial_witness(join.witness(&prev, &seg, task).unwrap(), &join.data.prover_only, common)
                .unwrap();
            move |row: usize, column: usize| w.try_get_target(Target::wire(row, column))
        };
        let (first, second) = (wires(), wires());
        for column in config.num_wires - crate::MASK_COLUMNS..config.num_wires {
            assert!((0..common.degree()).all(|row| first(row, column) != second(row, column)), "mask column {column}");
        }
        for &row in &rows.regular {
            assert!((0..config.num_wires).all(|c| first(row, c) != second(row, c)), "random row {row}");
        }
        for &row in &rows.pairs {
            for c in 0..config.num_routed_wires {
                assert_ne!(first(row, c), second(row, c), "pair row {row}");
                assert_eq!(first(row, c), first(row + 1, c), "pair row {row} joined");
            }
        }
        let proven = join.prove(&prev, &seg, task).unwrap();
        let leaf = &proven.proof.proof.opening_proof.query_round_proofs[0].initial_trees_proof.evals_proofs[1].0;
        assert_eq!(leaf.len(), config.num_wires + plonky2::fri::oracle::SALT_SIZE, "join {i}'s leaves are salted");
        acc = Some(proven);
    }
    let private_id = Privacy::Private.task_model_id(model.model_id());
    let proof = TaskProof::new(private_id, acc.unwrap().proof.to_bytes());
    let publics = TaskVerifier::with_privacy(&model, &plan, Privacy::Private).unwrap().verify(&proof).unwrap();
    assert_eq!((publics.model_id, publics.task_id, publics.provider), (private_id, TASK, PROVIDER));
    assert_eq!(publics.input_commitment, commit_salted(&x, &salt));
}
