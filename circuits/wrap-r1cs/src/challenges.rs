//! [`get_challenges_var`]: plonky2 1.1.0's `ProofWithPublicInputs::get_challenges`
//! (`plonk/get_challenges.rs`, `fri/challenges.rs`, `fri/mod.rs`) replayed on a [`ProofVar`].

use ark_bn254::Fr;
use ark_r1cs_std::fields::fp::FpVar;
use ark_r1cs_std::prelude::*;
use plonky2::field::types::Field;
use tgrid_poseidon_bn254::Bn254HashOut;
use tgrid_r1cs_goldilocks::{GoldilocksExtVar, GoldilocksVar};

use crate::challenger::{ChallengerStats, ChallengerVar};
use crate::shape::ProofShape;
use crate::{Error, FinalCommon, ProofVar, Result, F};

/// The FRI challenges (`FriChallenges`).
#[derive(Clone, Debug)]
pub struct FriChallengesVar {
    /// α combining the opened polynomials.
    pub fri_alpha: GoldilocksExtVar,
    /// β of each reduction.
    pub fri_betas: Vec<GoldilocksExtVar>,
    /// The grinding response; the circuit already enforces its leading zeros.
    pub fri_pow_response: GoldilocksVar,
    /// Each query index as `lde_bits` little-endian bits: the low bits of a canonical challenge,
    /// i.e. plonky2's `challenge.to_canonical_u64() % lde_size`.
    pub fri_query_indices: Vec<Vec<Boolean<Fr>>>,
}

/// All Fiat-Shamir challenges of a proof (`ProofChallenges`), canonical.
#[derive(Clone, Debug)]
pub struct ChallengesVar {
    /// β of the permutation argument, one per challenge round.
    pub plonk_betas: Vec<GoldilocksVar>,
    /// γ of the permutation argument.
    pub plonk_gammas: Vec<GoldilocksVar>,
    /// α combining the constraints.
    pub plonk_alphas: Vec<GoldilocksVar>,
    /// Lookup challenges (empty without lookups): β, γ, then the extra ones, as plonky2.
    pub plonk_deltas: Vec<GoldilocksVar>,
    /// The opening point ζ.
    pub plonk_zeta: GoldilocksExtVar,
    /// The FRI challenges.
    pub fri_challenges: FriChallengesVar,
    /// What the transcript cost (diagnostics).
    pub stats: ChallengerStats,
}

/// Replays `proof.get_challenges(public_inputs_hash, circuit_digest, common)`:
///
/// FRI parameters (constants) → circuit digest (constant) → public-inputs hash → wires cap →
/// β, γ (→ extra δ with lookups) → Z/partial-products cap → α → quotient cap → ζ → openings at
/// ζ then g·ζ → FRI α → per commit-phase cap: the cap, β → final polynomial → PoW witness →
/// PoW response → query indices.
///
/// Also enforces the grinding check of `fri_verify_proof_of_work`: the response's top
/// `proof_of_work_bits` bits are zero. `public_inputs_hash` (the Goldilocks-Poseidon hash of the
/// public inputs, computed by the caller) must be canonical.
pub fn get_challenges_var(
    proof: &ProofVar,
    public_inputs_hash: &[GoldilocksVar; 4],
    circuit_digest: &Bn254HashOut,
    common: &FinalCommon,
) -> Result<ChallengesVar> {
    let shape = ProofShape::from_common(common)?;
    if *proof.shape() != shape {
        return Err(Error::Unsupported("the proof was allocated for another circuit shape".into()));
    }
    let config = &common.config;
    let fri_params = &common.fri_params;
    let mut challenger = ChallengerVar::new();

    // `FriParams::observe`: constants, so these duplexes fold.
    let fri_config = &fri_params.config;
    let mut params: Vec<F> = vec![
        F::from_canonical_usize(fri_config.rate_bits),
        F::from_canonical_usize(fri_config.cap_height),
        F::from_canonical_u32(fri_config.proof_of_work_bits),
    ];
    params.extend(fri_config.reduction_strategy.serialize::<F>());
    params.push(F::from_canonical_usize(fri_config.num_query_rounds));
    params.push(F::from_bool(fri_params.hiding));
    params.push(F::from_canonical_usize(fri_params.degree_bits));
    params.extend(fri_params.reduction_arity_bits.iter().map(|&b| F::from_canonical_usize(b)));
    challenger.observe_elements(&params.into_iter().map(GoldilocksVar::constant).collect::<Vec<_>>())?;

    challenger.observe_hash(&FpVar::Constant(circuit_digest.0))?;
    challenger.observe_elements(public_inputs_hash)?;

    challenger.observe_cap(&proof.wires_cap)?;
    let plonk_betas = challenger.get_n_challenges(config.num_challenges)?;
    let plonk_gammas = challenger.get_n_challenges(config.num_challenges)?;
    let plonk_deltas = if shape.num_deltas != 0 {
        let extra = challenger.get_n_challenges(shape.num_deltas - 2 * config.num_challenges)?;
        [plonk_betas.clone(), plonk_gammas.clone(), extra].concat()
    } else {
        Vec::new()
    };

    challenger.observe_cap(&proof.plonk_zs_partial_products_cap)?;
    let plonk_alphas = challenger.get_n_challenges(config.num_challenges)?;
    challenger.observe_cap(&proof.quotient_polys_cap)?;
    let plonk_zeta = challenger.get_extension_challenge()?;

    challenger.observe_extension_elements(proof.openings.zeta_batch())?;
    challenger.observe_extension_elements(proof.openings.zeta_next_batch())?;

    // `Challenger::fri_challenges` (no padding of caps or final polynomial: both `None` in
    // `get_challenges`).
    let fri_alpha = challenger.get_extension_challenge()?;
    let fri_betas = proof
        .commit_phase_merkle_caps
        .iter()
        .map(|cap| {
            challenger.observe_cap(cap)?;
            challenger.get_extension_challenge()
        })
        .collect::<Result<Vec<_>>>()?;
    challenger.observe_extension_elements(&proof.final_poly)?;

    challenger.observe_element(&proof.pow_witness)?;
    let fri_pow_response = challenger.get_challenge()?;
    // leading_zeros(response) ≥ proof_of_work_bits (Goldilocks has 64-bit order, so no offset).
    let response_bits = fri_pow_response.to_bits_le()?;
    for bit in &response_bits[64 - shape.proof_of_work_bits as usize..] {
        bit.enforce_equal(&Boolean::FALSE)?;
    }

    // `% lde_size` with lde_size = 2^(degree_bits + rate_bits) from `config.fri_config`.
    let fri_query_indices = (0..config.fri_config.num_query_rounds)
        .map(|_| {
            let bits = challenger.get_challenge()?.to_bits_le()?;
            Ok(bits[..shape.lde_bits].to_vec())
        })
        .collect::<Result<Vec<_>>>()?;

    Ok(ChallengesVar {
        plonk_betas,
        plonk_gammas,
        plonk_alphas,
        plonk_deltas,
        plonk_zeta,
        fri_challenges: FriChallengesVar { fri_alpha, fri_betas, fri_pow_response, fri_query_indices },
        stats: challenger.stats(),
    })
}
