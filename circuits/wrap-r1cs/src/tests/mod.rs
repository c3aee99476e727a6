//! Tests on the fixture (a real final-layer proof, `examples/make_fixture.rs`): the R1CS
//! transcript equals plonky2's `get_challenges` bit for bit, and tampering either changes the
//! challenges or breaks satisfiability.

mod challenger;
mod circuit;
mod counts;
mod fixture;
mod fri;
mod groth16;
mod malformed;
mod production;
mod small_proofs;
mod transcript;
mod vanishing;

use std::sync::OnceLock;

use ark_bn254::Fr;
use ark_r1cs_std::fields::fp::FpVar;
use ark_r1cs_std::prelude::*;
use ark_relations::gr1cs::{ConstraintSystem, ConstraintSystemRef, SynthesisMode, Variable};
use plonky2::field::types::{Field as _, PrimeField64};
use plonky2::plonk::proof::ProofChallenges;
use tgrid_poseidon_bn254::Bn254HashOut;
use tgrid_r1cs_goldilocks::GoldilocksVar;

use crate::{
    get_challenges_var, ChallengesVar, FinalCommon, FinalProof, PoseidonBn254GoldilocksConfig, ProofVar, D, F,
};

pub(crate) use crate::testing::Fixture;

pub(crate) fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| crate::testing::fixture().expect("the committed fixture decodes"))
}

/// A synthesized proof and transcript, with the constraints each part added.
pub(crate) struct Synth {
    pub cs: ConstraintSystemRef<Fr>,
    pub proof: ProofVar,
    pub challenges: ChallengesVar,
    /// Constraints of `ProofVar::new_witness`.
    pub alloc: usize,
    /// Constraints of `get_challenges_var`.
    pub transcript: usize,
}

/// Allocates `proof` (None: setup mode), its public-inputs hash as canonical witnesses, and
/// replays the transcript.
pub(crate) fn synthesize(
    proof: Option<&FinalProof>,
    common: &FinalCommon,
    digest: &Bn254HashOut,
) -> crate::Result<Synth> {
    let cs = ConstraintSystem::<Fr>::new_ref();
    if proof.is_none() {
        cs.set_mode(SynthesisMode::Setup);
    }
    let proof_var = ProofVar::new_witness(cs.clone(), proof, common)?;
    let alloc = cs.num_constraints();
    let pi_hash = proof.map(|p| p.get_public_inputs_hash().elements);
    let pi_hash: [GoldilocksVar; 4] = std::array::from_fn(|i| {
        GoldilocksVar::new_witness_canonical(cs.clone(), || {
            pi_hash.map(|h| h[i]).ok_or(ark_relations::gr1cs::SynthesisError::AssignmentMissing)
        })
        .unwrap()
    });
    let before = cs.num_constraints();
    let challenges = get_challenges_var(&proof_var, &pi_hash, digest, common)?;
    let transcript = cs.num_constraints() - before;
    Ok(Synth { cs, proof: proof_var, challenges, alloc, transcript })
}

/// plonky2's challenges for `proof`.
pub(crate) fn native(proof: &FinalProof, common: &FinalCommon, digest: &Bn254HashOut) -> ProofChallenges<F, D> {
    proof.get_challenges(proof.get_public_inputs_hash(), digest, common).expect("native challenges")
}

/// Whether plonky2's grinding check accepts the response.
pub(crate) fn pow_ok(native: &ProofChallenges<F, D>, common: &FinalCommon) -> bool {
    native.fri_challenges.fri_pow_response.to_canonical_u64().leading_zeros()
        >= common.config.fri_config.proof_of_work_bits
}

/// The integer of little-endian bits.
pub(crate) fn bits_value(bits: &[Boolean<Fr>]) -> u64 {
    bits.iter().enumerate().map(|(i, b)| (b.value().unwrap() as u64) << i).sum()
}

/// Every challenge of `s` equals plonky2's, every challenge is canonical, and the system is
/// satisfied exactly when plonky2's grinding check passes.
pub(crate) fn assert_matches_native(s: &Synth, native: &ProofChallenges<F, D>, common: &FinalCommon) {
    let c = &s.challenges;
    let base = |vars: &[GoldilocksVar]| {
        vars.iter()
            .map(|v| {
                assert!(v.is_canonical());
                v.value().unwrap()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(base(&c.plonk_betas), native.plonk_betas, "betas");
    assert_eq!(base(&c.plonk_gammas), native.plonk_gammas, "gammas");
    assert_eq!(base(&c.plonk_alphas), native.plonk_alphas, "alphas");
    assert_eq!(base(&c.plonk_deltas), native.plonk_deltas, "deltas");
    assert!(c.plonk_zeta.is_canonical());
    assert_eq!(c.plonk_zeta.value().unwrap(), native.plonk_zeta, "zeta");
    let (fri, nfri) = (&c.fri_challenges, &native.fri_challenges);
    assert_eq!(fri.fri_alpha.value().unwrap(), nfri.fri_alpha, "fri alpha");
    let betas: Vec<_> = fri.fri_betas.iter().map(|b| b.value().unwrap()).collect();
    assert_eq!(betas, nfri.fri_betas, "fri betas");
    assert!(fri.fri_pow_response.is_canonical());
    assert_eq!(fri.fri_pow_response.value().unwrap(), nfri.fri_pow_response, "pow response");
    let lde_bits = common.degree_bits() + common.config.fri_config.rate_bits;
    let indices: Vec<usize> = fri
        .fri_query_indices
        .iter()
        .map(|bits| {
            assert_eq!(bits.len(), lde_bits);
            bits_value(bits) as usize
        })
        .collect();
    assert_eq!(indices, nfri.fri_query_indices, "query indices");
    assert_eq!(s.cs.is_satisfied().unwrap(), pow_ok(native, common), "satisfied iff the grinding check passes");
}

/// The witness variable behind a bit.
pub(crate) fn bit_variable(b: &Boolean<Fr>) -> Variable {
    match b {
        Boolean::Var(v) => v.variable(),
        Boolean::Constant(_) => panic!("a constant bit"),
    }
}

/// A malicious prover's edit: set witness variables, then re-evaluate every cached linear
/// combination so that constraints see the new values (later hints are NOT recomputed).
pub(crate) fn patch_witness(cs: &ConstraintSystemRef<Fr>, changes: &[(Variable, Fr)]) {
    let mut inner = cs.borrow_mut().unwrap();
    for (var, value) in changes {
        assert!(var.is_witness());
        inner.assignments.witness_assignment[var.index().unwrap()] = *value;
    }
    for i in 1..inner.lc_map.num_lcs() {
        let lc = inner.get_lc(Variable::symbolic_lc(i));
        let value = lc.0.iter().map(|(c, v)| *c * inner.assigned_value(*v).unwrap()).sum();
        inner.assignments.lc_assignment[i] = value;
    }
}

/// The index of the first unsatisfied constraint (R1CS is the only predicate).
pub(crate) fn first_unsatisfied(cs: &ConstraintSystemRef<Fr>) -> Option<usize> {
    let inner = cs.borrow().unwrap();
    inner.predicate_constraint_systems.values().find_map(|p| p.which_constraint_is_unsatisfied(&inner))
}
