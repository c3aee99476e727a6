//! The exact quotient of two computed tensors ([`tgrid_int8::Op::Div`]): the circuit computes
//! [`tgrid_int8::infer::quotient`] for every sign of the divisor and for a zero divisor, in public
//! and private circuits, and each of its constraints rejects, at the verifier, a witness that
//! breaks it.

use crate::gadgets::Fault;
use crate::testing::div_model;
use crate::tests::{PROVIDER, TASK};
use crate::{commit, infer, Privacy, Salt, SegmentPlan, TaskProver, TaskVerifier};

/// Dividends then divisors: element 0 divides by 5, element 1 by −7, element 2 by 0, element 3
/// by −1 (the largest quotient), the rest by mixed values; the dividends cover both signs.
fn input() -> Vec<i8> {
    let a = [100, -50, 77, -128, 127, 0, -3, 64];
    let b = [5, -7, 0, -1, 1, 127, -128, 3];
    a.into_iter().chain(b).collect()
}

#[test]
fn quotients_are_exact_for_every_sign_and_a_zero_divisor() {
    assert_eq!(infer::quotient(100, 5), 20 << 16);
    assert_eq!(infer::quotient(-50, -7), (50 << 16) / 7);
    assert_eq!(infer::quotient(-50, 7), -((50 << 16) / 7) - 1, "the floor, not the truncation");
    assert_eq!(infer::quotient(77, 0), 77 << 16, "a zero divisor counts as one step");
    assert_eq!(infer::quotient(-128, -1), 128 << 16);
    let model = div_model();
    let x = input();
    let expected = infer::run(&model, &x).unwrap();
    // 100/5 = 20 and −128/−1 = 128 saturate at the top (8); −50/−7 = 7.14 is 114 steps of
    // 16/255; 0/127 is 0.
    assert_eq!(&expected.output()[..6], &[127, 114, 127, 127, 127, 0]);
    for privacy in [Privacy::Public, Privacy::Private] {
        let prover = TaskProver::with_privacy(model.clone(), SegmentPlan::default(), privacy).unwrap();
        assert_eq!(prover.circuit_trace(&x).unwrap(), expected, "{privacy:?}");
        let (proof, trace, _) = match privacy {
            Privacy::Public => prover.prove(&x, TASK, PROVIDER, &mut |_, _, _| {}),
            Privacy::Private => prover.prove_private(&x, &Salt::random(), TASK, PROVIDER, &mut |_, _, _| {}),
        }
        .unwrap();
        assert_eq!(trace, expected);
        let publics = TaskVerifier::with_privacy(&model, &SegmentPlan::default(), privacy).unwrap().verify(&proof);
        let publics = publics.unwrap();
        if privacy == Privacy::Public {
            assert_eq!(publics.output_commitment, commit(trace.output()));
        }
    }
}

/// Each fault breaks one constraint of the quotient (see [`Fault`]); the malicious prover
/// proves it anyway and the verifier refuses the proof.
#[test]
fn each_quotient_constraint_rejects_the_witness_that_breaks_it() {
    let model = div_model();
    let x = input();
    // The Div node's elements are its output indices (the gathers before it are not hinted).
    let cases = [
        (0, Fault::QuotientHigh),
        (1, Fault::QuotientHigh),
        (0, Fault::QuotientLow),
        (1, Fault::QuotientLow),
        (0, Fault::QuotientUnbalanced),
        (2, Fault::ZeroDivisorMissed),
        (0, Fault::QuotientWrapped),
        (1, Fault::QuotientWrapped),
        (0, Fault::DivisorNegated),
        (1, Fault::DivisorNegated),
        (0, Fault::ZeroDivisorFlagged),
        (2, Fault::ZeroDivisorSigned),
    ];
    for privacy in [Privacy::Public, Privacy::Private] {
        let prover = TaskProver::with_privacy(model.clone(), SegmentPlan::default(), privacy).unwrap();
        let verifier = TaskVerifier::with_privacy(&model, &SegmentPlan::default(), privacy).unwrap();
        for (element, fault) in cases {
            let proof = prover
                .prove_with_fault(&x, (element, fault))
                .unwrap_or_else(|e| panic!("{privacy:?} {fault:?} at {element}: {e}"));
            assert!(
                verifier.verify(&proof).is_err(),
                "{privacy:?} {fault:?} at element {element} produced a valid proof"
            );
        }
    }
}
