//! The transcript on the fixture: equal to plonky2's challenges, and tampering with what the
//! transcript absorbs changes the challenges from that point on or breaks satisfiability.

use plonky2::field::extension::quadratic::QuadraticExtension;
use plonky2::plonk::circuit_data::VerifierCircuitData;
use plonky2::plonk::proof::ProofChallenges;
use tgrid_r1cs_goldilocks::P;

use super::*;

/// Synthesizes `proof`, checks it against plonky2 and returns both.
fn run(proof: &FinalProof) -> (Synth, ProofChallenges<F, D>) {
    let f = fixture();
    let s = synthesize(Some(proof), &f.common, &f.digest()).unwrap();
    let n = native(proof, &f.common, &f.digest());
    assert_matches_native(&s, &n, &f.common);
    (s, n)
}

fn honest() -> &'static ProofChallenges<F, D> {
    static HONEST: OnceLock<ProofChallenges<F, D>> = OnceLock::new();
    HONEST.get_or_init(|| {
        let (s, n) = run(&fixture().proof);
        assert!(s.cs.is_satisfied().unwrap());
        n
    })
}

fn ext_plus_one(x: &mut QuadraticExtension<F>) {
    x.0[0] += F::ONE;
}

#[test]
fn honest_transcript_matches_plonky2() {
    let n = honest();
    assert_eq!(n.plonk_betas.len(), 2);
    assert_eq!(n.fri_challenges.fri_betas.len(), 4);
    assert_eq!(n.fri_challenges.fri_query_indices.len(), 2);
}

#[test]
fn tampered_wires_cap_changes_every_challenge() {
    let mut proof = fixture().proof.clone();
    proof.proof.wires_cap.0[3] = Bn254HashOut(proof.proof.wires_cap.0[3].0 + Fr::from(1u8));
    let (_, n) = run(&proof);
    let h = honest();
    assert_ne!(n.plonk_betas, h.plonk_betas);
    assert_ne!(n.plonk_gammas, h.plonk_gammas);
    assert_ne!(n.plonk_zeta, h.plonk_zeta);
    assert_ne!(n.fri_challenges.fri_pow_response, h.fri_challenges.fri_pow_response);
}

#[test]
fn tampered_public_inputs_change_every_challenge() {
    let mut proof = fixture().proof.clone();
    proof.public_inputs[5] += F::ONE;
    let (_, n) = run(&proof);
    assert_ne!(n.plonk_betas, honest().plonk_betas);
}

#[test]
fn tampered_opening_changes_the_fri_challenges() {
    let h = honest();
    for which in 0..3 {
        let mut proof = fixture().proof.clone();
        let o = &mut proof.proof.openings;
        match which {
            0 => ext_plus_one(&mut o.wires[7]),
            1 => ext_plus_one(&mut o.quotient_polys[0]),
            _ => ext_plus_one(&mut o.plonk_zs_next[1]),
        }
        let (_, n) = run(&proof);
        // Openings are observed after ζ.
        assert_eq!((&n.plonk_alphas, n.plonk_zeta), (&h.plonk_alphas, h.plonk_zeta));
        assert_ne!(n.fri_challenges.fri_alpha, h.fri_challenges.fri_alpha);
        assert_ne!(n.fri_challenges.fri_betas, h.fri_challenges.fri_betas);
    }
}

#[test]
fn tampered_commit_phase_cap_changes_later_betas() {
    let mut proof = fixture().proof.clone();
    let cap = &mut proof.proof.opening_proof.commit_phase_merkle_caps[2].0[15];
    *cap = Bn254HashOut(cap.0 + cap.0);
    let (_, n) = run(&proof);
    let (nf, hf) = (&n.fri_challenges, &honest().fri_challenges);
    assert_eq!(nf.fri_betas[..2], hf.fri_betas[..2]);
    assert_ne!(nf.fri_betas[2], hf.fri_betas[2]);
    assert_ne!(nf.fri_betas[3], hf.fri_betas[3]);
}

#[test]
fn tampered_final_poly_changes_pow_response_and_queries() {
    let mut proof = fixture().proof.clone();
    ext_plus_one(&mut proof.proof.opening_proof.final_poly.coeffs[9]);
    let (_, n) = run(&proof);
    let (nf, hf) = (&n.fri_challenges, &honest().fri_challenges);
    assert_eq!(nf.fri_betas, hf.fri_betas);
    assert_ne!(nf.fri_pow_response, hf.fri_pow_response);
    assert_ne!(nf.fri_query_indices, hf.fri_query_indices);
}

/// The proof with another PoW witness, and plonky2's challenges for it.
fn with_pow_witness(w: u64) -> (FinalProof, ProofChallenges<F, D>) {
    let f = fixture();
    let mut proof = f.proof.clone();
    proof.proof.opening_proof.pow_witness = F::from_canonical_u64(w);
    let n = native(&proof, &f.common, &f.digest());
    (proof, n)
}

#[test]
fn pow_witness_with_too_few_leading_zeros_is_unsatisfiable() {
    let f = fixture();
    let honest_w = f.proof.proof.opening_proof.pow_witness.to_canonical_u64();
    let (proof, n) = (0..1000u64)
        .filter(|&w| w != honest_w)
        .map(with_pow_witness)
        .find(|(_, n)| !pow_ok(n, &f.common))
        .expect("3/4 of the witnesses fail 2 bits of grinding");
    let data = VerifierCircuitData { verifier_only: f.verifier_only.clone(), common: f.common.clone() };
    assert!(data.verify(proof.clone()).is_err(), "plonky2 rejects it too");

    let (s, _) = run(&proof);
    assert!(!s.cs.is_satisfied().unwrap());
    // Every hint was computed honestly, so what fails is the leading-zero check: it sits in the
    // transcript section, on a bit of the response among its top `proof_of_work_bits`.
    let at = first_unsatisfied(&s.cs).unwrap();
    assert!(at >= s.cs.num_constraints() - s.transcript, "constraint {at}");
    let bits = s.challenges.fri_challenges.fri_pow_response.to_bits_le().unwrap();
    let top = n.fri_challenges.fri_pow_response.to_canonical_u64().leading_zeros();
    assert!(top < 2 && bits[63 - top as usize].value().unwrap());

    // A different witness that does grind enough passes the transcript (its queries then
    // differ, which the query rounds, not the transcript, reject).
    let (proof, n) =
        (0..1000u64).filter(|&w| w != honest_w).map(with_pow_witness).find(|(_, n)| pow_ok(n, &f.common)).unwrap();
    let (s, _) = run(&proof);
    assert!(s.cs.is_satisfied().unwrap());
    assert_ne!(n.fri_challenges.fri_query_indices, honest().fri_challenges.fri_query_indices);
}

/// A malicious prover encodes the (small) PoW witness v as v + p < 2^64, which would pack to
/// another `Fr` and so give another transcript: the allocation's canonicity constraint rejects
/// it whatever the other hints are (`(hi32 − (2^32 − 1))·w = lo32` has 0 on the left and
/// v + 1 ≠ 0 on the right).
#[test]
fn non_canonical_observed_value_is_rejected() {
    let f = fixture();
    let s = synthesize(Some(&f.proof), &f.common, &f.digest()).unwrap();
    assert!(s.cs.is_satisfied().unwrap());
    let v = f.proof.proof.opening_proof.pow_witness.to_canonical_u64();
    assert!(v < (1 << 32) - 1, "an alias below 2^64 exists");
    let alias = v + P;
    let bits = s.proof.pow_witness.to_bits_le().unwrap();
    let changes: Vec<_> = bits.iter().enumerate().map(|(i, b)| (bit_variable(b), Fr::from((alias >> i) & 1))).collect();
    patch_witness(&s.cs, &changes);
    // The patched variable now holds the alias.
    let var = s.proof.pow_witness.var().clone();
    let patched = var_value(&s.cs, &var);
    assert_eq!(patched, Fr::from(alias));
    // The PoW witness is allocated last: its 64 booleanity constraints (still satisfied), then
    // its canonicity constraint, the last one of the allocation. That is the first to fail.
    assert_eq!(first_unsatisfied(&s.cs), Some(s.alloc - 1));
}

fn var_value(cs: &ConstraintSystemRef<Fr>, x: &FpVar<Fr>) -> Fr {
    match x {
        FpVar::Constant(c) => *c,
        FpVar::Var(v) => cs.assigned_value(v.variable).unwrap(),
    }
}
