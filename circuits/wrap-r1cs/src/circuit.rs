//! The whole R1CS verifier of a final-layer proof, as the circuit a Groth16 proof is about.
//! ONE public input: the settlement public input `SHA-256(batch root ‖ registry root ‖ count)`
//! with its top 3 bits cleared (computed by the settle layer), which the final proof carries as
//! 8 big-endian u32 public inputs; here they are range checked (the first word below 2^29, so
//! the packed value is below 2^253 < r and packing is injective), packed into one `Fr` and bound
//! to the Groth16 input, hashed (Goldilocks Poseidon) into the public-inputs hash that both the
//! transcript and the `PublicInputGate` use, and the proof is verified in full: transcript,
//! PLONK identity at ζ, FRI.

use ark_bn254::Fr;
use ark_r1cs_std::fields::fp::FpVar;
use ark_r1cs_std::prelude::*;
use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystemRef, SynthesisError};
use plonky2::field::types::PrimeField64;
use plonky2::plonk::circuit_data::VerifierOnlyCircuitData;
use tgrid_r1cs_goldilocks::poseidon_hash_no_pad;

use crate::vanishing::{enforce_vanishing_identity, Challenges, Openings, VanishingError};
use crate::{
    get_challenges_var, verify_fri, Error, FinalCommon, FinalProof, PoseidonBn254GoldilocksConfig, ProofVar, D,
};

/// Public inputs of a final-layer proof: the settlement input's 8 big-endian u32 words.
pub const NUM_FINAL_PUBLIC_INPUTS: usize = 8;

/// Bits of the settlement public input: SHA-256 with its top 3 bits cleared, so every value
/// is below the BN254 scalar field and the Groth16 input names exactly one final public input.
pub const SETTLEMENT_INPUT_BITS: u32 = 253;

/// The settlement public input of a final proof, as the Groth16 public input. Refuses words
/// above 32 bits and a value of 2^253 or more (the circuit rejects both).
pub fn settlement_input(proof: &FinalProof) -> Result<Fr, Error> {
    let words = public_input_words(proof)?;
    if words[0] >> (SETTLEMENT_INPUT_BITS - 7 * 32) != 0 {
        return Err(Error::Unsupported(format!("a settlement public input of 2^{SETTLEMENT_INPUT_BITS} or more")));
    }
    Ok(pack_words(&words))
}

fn public_input_words(proof: &FinalProof) -> Result<[u64; NUM_FINAL_PUBLIC_INPUTS], Error> {
    let pis = &proof.public_inputs;
    if pis.len() != NUM_FINAL_PUBLIC_INPUTS {
        return Err(Error::Shape { what: "public inputs".into(), expected: NUM_FINAL_PUBLIC_INPUTS, got: pis.len() });
    }
    let words: [u64; NUM_FINAL_PUBLIC_INPUTS] = std::array::from_fn(|i| pis[i].to_canonical_u64());
    if words.iter().any(|w| w >> 32 != 0) {
        return Err(Error::Unsupported("a public input word above 32 bits".into()));
    }
    Ok(words)
}

/// Σ words[i]·2^(32·(7−i)) reduced mod r: what the circuit packs, whatever the range.
fn pack_words(words: &[u64]) -> Fr {
    words.iter().fold(Fr::from(0u64), |acc, &w| acc * Fr::from(1u64 << 32) + Fr::from(w))
}

/// The verifier circuit of one final-layer circuit (fixed by `common` and `verifier_only`).
/// `proof: None` synthesizes the same constraints without values (Groth16 setup).
pub struct FinalVerifierCircuit<'a> {
    /// The final circuit's common data (its whole shape is pinned by this R1CS).
    pub common: &'a FinalCommon,
    /// The final circuit's constants/sigmas cap and digest (constants of this R1CS).
    pub verifier_only: &'a VerifierOnlyCircuitData<PoseidonBn254GoldilocksConfig, D>,
    /// The proof to verify, or `None` in setup.
    pub proof: Option<&'a FinalProof>,
}

/// The production gate evaluator (tgrid-r1cs-gates).
fn standard_gates(
    gate: &plonky2::gates::gate::GateRef<crate::F, D>,
    constants: &[tgrid_r1cs_goldilocks::GoldilocksExtVar],
    wires: &[tgrid_r1cs_goldilocks::GoldilocksExtVar],
    pi_hash: &[tgrid_r1cs_goldilocks::GoldilocksVar; 4],
) -> Result<Vec<tgrid_r1cs_goldilocks::GoldilocksExtVar>, VanishingError> {
    tgrid_r1cs_gates::eval_gate_unfiltered(gate, constants, wires, pi_hash).map_err(|e| match e {
        tgrid_r1cs_gates::Error::Synthesis(e) => VanishingError::Synthesis(e),
        other => VanishingError::Unsupported(other.to_string()),
    })
}

impl FinalVerifierCircuit<'_> {
    /// Synthesizes the verifier into `cs`, returning the public input variable.
    pub fn synthesize(self, cs: ConstraintSystemRef<Fr>) -> Result<FpVar<Fr>, Error> {
        if self.common.num_public_inputs != NUM_FINAL_PUBLIC_INPUTS {
            return Err(Error::Unsupported(format!(
                "{} public inputs, the wrap expects {NUM_FINAL_PUBLIC_INPUTS}",
                self.common.num_public_inputs
            )));
        }
        // The witness is the packing as is (not `settlement_input`, which refuses out-of-range
        // values): the range checks below must reject such a proof, not the witness generator.
        let expected = self.proof.map(|p| public_input_words(p).map(|w| pack_words(&w))).transpose()?;
        let public_input = FpVar::new_input(cs.clone(), || expected.ok_or(SynthesisError::AssignmentMissing))?;
        let proof = ProofVar::new_witness(cs.clone(), self.proof, self.common)?;

        // 8 u32 words, big-endian, packed into the one public input; the first word's top 3
        // bits are zero too, so the integer is below 2^253 < r and no two inputs share a packing.
        let mut packed = FpVar::zero();
        for (i, word) in proof.public_inputs.iter().enumerate() {
            let bits = word.to_bits_le()?;
            let width = if i == 0 { SETTLEMENT_INPUT_BITS as usize - 7 * 32 } else { 32 };
            for high in &bits[width..] {
                high.enforce_equal(&Boolean::FALSE)?;
            }
            packed = packed * Fr::from(1u64 << 32) + word.var();
        }
        packed.enforce_equal(&public_input)?;

        let pi_hash = poseidon_hash_no_pad(&proof.public_inputs)?;
        let challenges = get_challenges_var(&proof, &pi_hash, &self.verifier_only.circuit_digest, self.common)?;
        enforce_vanishing_identity(
            self.common,
            &Openings::of(&proof.openings),
            &Challenges::of(&challenges),
            &pi_hash,
            &standard_gates,
        )?;
        let cap: Vec<FpVar<Fr>> =
            self.verifier_only.constants_sigmas_cap.0.iter().map(|h| FpVar::Constant(h.0)).collect();
        verify_fri(&proof, &challenges, &cap, self.common)?;
        Ok(public_input)
    }
}

impl ConstraintSynthesizer<Fr> for FinalVerifierCircuit<'_> {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        self.synthesize(cs).map(|_| ()).map_err(SynthesisError::from)
    }
}
