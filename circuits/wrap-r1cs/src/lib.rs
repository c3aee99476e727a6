#![doc = r#"
The BN254 R1CS side of the Groth16 wrap: a final-layer plonky2 proof
([`PoseidonBn254GoldilocksConfig`]) as R1CS witnesses, and its Fiat-Shamir transcript replayed
inside R1CS bit for bit.

- [`ProofShape`]: every length of a proof, derived from the `CommonCircuitData` alone (never
  from the proof), so the circuit has one fixed shape.
- [`ProofVar`]: the allocated proof (WRAP_NOTES §1.4): hashes as `FpVar<Fr>`; openings, FRI step
  evaluations, final polynomial, PoW witness and public inputs as canonical Goldilocks values;
  initial-tree leaf values only range-checked to 64 bits.
- [`ChallengerVar`]: plonky2's `Challenger` over the BN254 duplex (`Bn254Duplex`), same buffers,
  same pop order, with lazy unpacking of squeezed rate elements.
- [`get_challenges_var`]: `ProofWithPublicInputs::get_challenges` replayed, with the
  proof-of-work check and the query indices as bits.

# Constraint counts (final layer at degree 2^12, pinned by `tests::counts`)

| part | INSECURE_TEST (2 queries, fixture) | PRODUCTION (21 queries, setup mode) |
|---|---|---|
| [`ProofVar`] allocation | 73,133 | 423,949 |
| transcript ([`get_challenges_var`]) | 75,543 | 78,381 |

- Allocation: 36,205 once (8 public inputs, 258 openings, 16 final-polynomial coefficients, the
  PoW witness, canonical: 65 per base value) plus 18,464 per query (256 leaf values × 64,
  4 FRI steps × 4 canonical extension evaluations × 130). Hashes are free to allocate.
- Transcript: 264 per duplex with a witness state (one t=4 permutation; the first one is 3
  cheaper, its capacity is still constant), 328 per unpacked rate element, 316 per observed
  hash, 1 per grinding bit. INSECURE_TEST: 126 witness duplexes (of 128), 21 unpacks, 112
  hashes (3 + 4 caps of 16), 2 bits. PRODUCTION: 128 witness duplexes, 28 unpacks, 112 hashes,
  16 bits. The FRI parameters and circuit digest fold to constants.

Completeness gap (inherited from `unpack_rate` / `hash_limbs`): an honest squeezed rate element
or observed hash whose top 62 bits equal floor(r / 2^192) has no witness, and synthesis fails
with `Unsatisfiable` (probability below 2^-61 per element).
"#]

mod challenger;
mod challenges;
mod circuit;
mod fri;
mod proof;
mod shape;
pub mod testing;
mod vanishing;

#[cfg(test)]
mod tests;

use ark_relations::gr1cs::SynthesisError;
use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::plonk::proof::ProofWithPublicInputs;
pub use tgrid_poseidon_bn254::PoseidonBn254GoldilocksConfig;

pub use challenger::{ChallengerStats, ChallengerVar};
pub use challenges::{get_challenges_var, ChallengesVar, FriChallengesVar};
pub use circuit::{settlement_input, FinalVerifierCircuit, NUM_FINAL_PUBLIC_INPUTS, SETTLEMENT_INPUT_BITS};
pub use fri::{compress, leaf_hash, verify_fri, verify_merkle_to_cap};
pub use proof::{FriQueryRoundVar, FriQueryStepVar, InitialTreeVar, OpeningSetVar, ProofVar};
pub use shape::ProofShape;
pub use vanishing::{enforce_vanishing_identity, Challenges, GateEvaluator, Openings, VanishingError, UNUSED_SELECTOR};

/// The extension degree of the final layer.
pub const D: usize = 2;

/// The field of the final layer.
pub type F = GoldilocksField;

/// A final-layer proof: Goldilocks arithmetic, BN254-Poseidon Merkle trees and transcript.
pub type FinalProof = ProofWithPublicInputs<F, PoseidonBn254GoldilocksConfig, D>;

/// The final layer's `CommonCircuitData`.
pub type FinalCommon = plonky2::plonk::circuit_data::CommonCircuitData<F, D>;

/// Why a proof could not be allocated or its transcript replayed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The proof does not have the shape the circuit data prescribes.
    #[error("malformed proof: {what} has length {got}, the circuit expects {expected}")]
    Shape {
        /// Which part (e.g. `query 1 step 0 siblings`).
        what: String,
        /// Length required by the `CommonCircuitData`.
        expected: usize,
        /// Length found in the proof.
        got: usize,
    },
    /// The `CommonCircuitData` describes something this verifier does not handle.
    #[error("unsupported circuit: {0}")]
    Unsupported(String),
    /// A value given to the transcript is not known to be canonical (below p): packing it
    /// would not be injective.
    #[error("a value observed by the transcript is not canonical")]
    NotCanonical,
    /// The constraint system failed (e.g. a missing assignment outside setup mode).
    #[error("synthesis: {0}")]
    Synthesis(#[from] SynthesisError),
}

impl From<Error> for SynthesisError {
    /// For `ConstraintSynthesizer` implementations: synthesis errors pass through, anything
    /// else means the proof or circuit is unusable (`Unsatisfiable`).
    fn from(e: Error) -> Self {
        match e {
            Error::Synthesis(e) => e,
            _ => SynthesisError::Unsatisfiable,
        }
    }
}

/// Crate result type.
pub type Result<T> = std::result::Result<T, Error>;
