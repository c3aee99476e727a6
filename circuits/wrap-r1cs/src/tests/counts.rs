//! Constraint counts of the allocation and the transcript: the INSECURE_TEST fixture measured
//! in prove mode, PRODUCTION (21 queries, 16 bits of grinding; same degree, gates and arities)
//! synthesized in setup mode from the fixture's circuit data with those FRI parameters.

use tgrid_wrap::FinalFri;

use super::*;
use crate::ChallengerStats;

/// (allocation, transcript, transcript stats)
fn measure(proof: Option<&FinalProof>, common: &FinalCommon) -> (usize, usize, ChallengerStats) {
    let s = synthesize(proof, common, &fixture().digest()).unwrap();
    if proof.is_some() {
        assert!(s.cs.is_satisfied().unwrap());
    }
    println!(
        "{} queries: allocation {}, transcript {} ({:?})",
        common.config.fri_config.num_query_rounds, s.alloc, s.transcript, s.challenges.stats
    );
    (s.alloc, s.transcript, s.challenges.stats)
}

/// The transcript is Poseidon permutations, unpacked rate elements, observed hashes and the
/// grinding check, nothing else. The first witness permutation starts from a constant
/// capacity, whose first S-box (3 constraints) folds.
fn transcript_formula(stats: &ChallengerStats, pow_bits: u32) -> usize {
    264 * stats.witness_duplexes - 3 + 328 * stats.unpacks + 316 * stats.hashes + pow_bits as usize
}

#[test]
fn insecure_test_counts() {
    let f = fixture();
    let (alloc, transcript, stats) = measure(Some(&f.proof), &f.common);
    assert_eq!(transcript, transcript_formula(&stats, 2));
    assert_eq!((alloc, transcript), (73_133, 75_543));
}

/// The fixture's circuit data with the PRODUCTION FRI parameters (same degree, gates and
/// arities; only the query count and grinding bits differ), for setup-mode counts.
fn production_common() -> FinalCommon {
    let mut common = fixture().common.clone();
    let fri = FinalFri::PRODUCTION.circuit_config().fri_config;
    common.config.fri_config = fri.clone();
    common.fri_params.config = fri;
    common
}

#[test]
fn production_counts() {
    let common = production_common();
    let (alloc, transcript, stats) = measure(None, &common);
    assert_eq!(transcript, transcript_formula(&stats, 16));
    assert_eq!((alloc, transcript), (423_949, 78_381));
}

/// FRI verification: (constraints for the fixture's 2 queries in prove mode, for PRODUCTION's
/// 21 in setup mode). Printed for docs/BENCHMARKS.md and pinned.
#[test]
fn fri_counts() {
    let f = fixture();
    let cap: Vec<FpVar<Fr>> = f.verifier_only.constants_sigmas_cap.0.iter().map(|h| FpVar::Constant(h.0)).collect();
    let count = |proof: Option<&FinalProof>, common: &FinalCommon| {
        let s = synthesize(proof, common, &f.digest()).unwrap();
        let before = s.cs.num_constraints();
        crate::verify_fri(&s.proof, &s.challenges, &cap, common).unwrap();
        s.cs.num_constraints() - before
    };
    let test = count(Some(&f.proof), &f.common);
    let common = production_common();
    let production = count(None, &common);
    let per_query = (production - test) / 19;
    println!("FRI: 2 queries {test}, 21 queries {production}, {per_query} per query");
    assert_eq!(production - test, 19 * per_query, "FRI cost is linear in the queries");
    assert_eq!((test, production), (154_847, 940_326));
}

/// The whole verifier circuit: the fixture (2 queries) in prove mode, PRODUCTION (21 queries)
/// in setup mode. Pinned; docs/BENCHMARKS.md records them.
#[test]
fn whole_verifier_counts() {
    use ark_relations::gr1cs::ConstraintSynthesizer;
    let f = fixture();
    let count = |proof: Option<&FinalProof>, common: &FinalCommon| {
        let cs = ConstraintSystem::<Fr>::new_ref();
        if proof.is_none() {
            cs.set_mode(SynthesisMode::Setup);
        }
        crate::FinalVerifierCircuit { common, verifier_only: &f.verifier_only, proof }
            .generate_constraints(cs.clone())
            .unwrap();
        cs.num_constraints()
    };
    let test = count(Some(&f.proof), &f.common);
    let common = production_common();
    let production = count(None, &common);
    println!("whole verifier: 2 queries {test}, 21 queries {production}");
    assert_eq!((test, production), (814_107, 1_953_240));
}
