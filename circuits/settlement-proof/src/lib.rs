//! A batch's settlement proof, end to end: [`Aggregator`] folds task proofs into one root proof;
//! [`BatchWrapper`] proves the plonky2 wrap layers over
//! a batch's root proof (tgrid-wrap), then a Groth16 proof over BN254 of the R1CS verifier of
//! the final layer (tgrid-wrap-r1cs, tgrid-groth16) with a key from [`KeySource`] (a ceremony
//! file, or the INSECURE devnet setup cached on disk), and writes a [`SettlementProofFile`]
//! (`.g16`): the calldata of `Settlement.submitBatch` and what it commits to. Auditors check a
//! file with [`SettlementProofFile::verify`] and a verifying key.

pub mod aggregate;
pub mod error;
pub mod file;
pub mod key_id;
pub mod keys;
pub mod setup;
pub mod wrapper;

#[cfg(test)]
mod adopt_leaf_tests;
#[cfg(test)]
mod tests;

pub use aggregate::{
    aggregation_proofs, chunk_proofs, merge_proofs, AggregateError, Aggregator, IncrementalTree, Step,
};
pub use error::{Error, Result};
pub use file::{SettlementProofFile, VerifiedSettlement};
pub use key_id::{insecurity, WrapKeyId, MIN_SECURE_BITS};
pub use keys::{
    is_public_seed_key_digest, KeySource, WrapFri, WrapKey, WrapVerifyingKey, DEVNET_INSECURE_SEED,
    PUBLIC_SEED_KEY_DIGESTS,
};
pub use setup::insecure_devnet_key_id;
pub use wrapper::{BatchWrapper, Stage, WrapStats};
