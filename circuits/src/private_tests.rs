//! Private tasks: zero-knowledge proofs with salted commitments under the private model id, and
//! neither mode's proof verifying as the other's.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::testing::tiny_model;
use crate::{
    commit, commit_salted, infer, Privacy, QuantModel, Salt, SegmentPlan, TaskProver, TaskSalts, TaskVerifier,
};

const TASK: [u8; 32] = [0x31; 32];
const PROVIDER: [u8; 20] = [0x42; 20];

fn input(model: &QuantModel, seed: u64) -> Vec<i8> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..model.input_len()).map(|_| rng.gen()).collect()
}

fn salts() -> TaskSalts {
    TaskSalts { input: Salt::random(), output: Salt::random() }
}

/// Proves a private task and checks its statement; with `cross_check`, also that neither mode's
/// verifier accepts the other's proofs (for one plan: building a chain's circuits is slow).
fn check_private_proof(model: &QuantModel, plan: SegmentPlan, cross_check: bool) {
    let x = input(model, 1);
    let salts = salts();
    let prover = TaskProver::with_privacy(model.clone(), plan.clone(), Privacy::Private).unwrap();
    let (proof, trace, _) = prover.prove_private(&x, &salts, TASK, PROVIDER, &mut |_, _, _| {}).unwrap();
    let verifier = TaskVerifier::with_privacy(model, &plan, Privacy::Private).unwrap();
    let publics = verifier.verify(&proof).unwrap();
    let private_id = Privacy::Private.task_model_id(model.model_id());
    assert_ne!(private_id, model.model_id());
    assert_eq!((publics.model_id, proof.model_id), (private_id, private_id));
    assert_eq!((publics.task_id, publics.provider), (TASK, PROVIDER));
    // The circuit's salted commitments are the native ones, and hide the plain ones.
    assert_eq!(publics.input_commitment, commit_salted(&x, &salts.input));
    assert_eq!(publics.output_commitment, commit_salted(trace.output(), &salts.output));
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
    assert!(private.prove(&x, TASK, PROVIDER, &mut |_, _, _| {}).is_err(), "a private task without salts");
    let public = TaskProver::new(model, SegmentPlan::default()).unwrap();
    assert!(public.prove_private(&x, &salts(), TASK, PROVIDER, &mut |_, _, _| {}).is_err());
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

/// Public segments of at most 2^13 rows are proven at FRI rate 1/4 (42 queries), larger ones
/// and every private one at rate 1/8 (28 queries): 100 conjectured bits each way.
#[test]
fn public_segments_up_to_2_13_rows_take_rate_one_quarter_larger_and_private_ones_one_eighth() {
    let fri = |model: &QuantModel, privacy: Privacy| {
        let verifier = TaskVerifier::with_privacy(model, &SegmentPlan::default(), privacy).unwrap();
        let common = &verifier.verifier_data().common;
        let fri = &common.config.fri_config;
        assert_eq!(fri.rate_bits * fri.num_query_rounds + fri.proof_of_work_bits as usize, 100);
        (fri.rate_bits, fri.num_query_rounds, common.degree())
    };
    let small = tiny_model(41);
    assert_eq!(fri(&small, Privacy::Public).0, 2);
    assert_eq!(fri(&small, Privacy::Private).0, 3);
    let (rate, queries, rows) = fri(&crate::testing::conv_model(43, 24, 32), Privacy::Public);
    assert!(rows > crate::QUARTER_RATE_MAX_ROWS, "{rows} rows");
    assert_eq!((rate, queries), (3, 28));
}
