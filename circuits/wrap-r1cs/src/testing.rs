//! The committed test fixture (`fixtures/`): a real final-layer proof with the INSECURE test
//! FRI parameters, its common data and verifier data. Used by this crate's tests, the Groth16
//! fixture example and the end-to-end Groth16 test.

use plonky2::plonk::circuit_data::VerifierOnlyCircuitData;
use plonky2::util::serialization::DefaultGateSerializer;

use crate::{Error, FinalCommon, FinalProof, PoseidonBn254GoldilocksConfig, D};

/// Seed of the INSECURE devnet Groth16 setup of the fixture's verifier circuit: public, so
/// anyone can forge proofs for that key. Tests only.
pub const WRAP_TEST_INSECURE_SEED: u64 = 0x7467_7269_645f_7773;

/// The decoded fixture.
pub struct Fixture {
    /// The final-layer proof.
    pub proof: FinalProof,
    /// Its circuit's common data.
    pub common: FinalCommon,
    /// Its circuit's verifier data.
    pub verifier_only: VerifierOnlyCircuitData<PoseidonBn254GoldilocksConfig, D>,
}

impl Fixture {
    /// The final circuit's digest.
    pub fn digest(&self) -> tgrid_poseidon_bn254::Bn254HashOut {
        self.verifier_only.circuit_digest
    }
}

fn decode(what: &str) -> impl Fn(plonky2::util::serialization::IoError) -> Error + '_ {
    move |e| Error::Unsupported(format!("fixture {what}: {e:?}"))
}

/// Decodes the committed fixture (embedded in the binary).
pub fn fixture() -> Result<Fixture, Error> {
    decode_fixture(
        include_bytes!("../fixtures/final_common.bin"),
        include_bytes!("../fixtures/final_verifier_only.bin"),
        include_bytes!("../fixtures/final_proof.bin"),
    )
}

/// Decodes a fixture from its three files' bytes.
pub(crate) fn decode_fixture(common: &[u8], verifier_only: &[u8], proof: &[u8]) -> Result<Fixture, Error> {
    let common = FinalCommon::from_bytes(common.to_vec(), &DefaultGateSerializer).map_err(decode("common data"))?;
    let verifier_only = VerifierOnlyCircuitData::from_bytes(verifier_only.to_vec())
        .map_err(|e| Error::Unsupported(format!("fixture verifier data: {e}")))?;
    let proof = FinalProof::from_bytes(proof.to_vec(), &common)
        .map_err(|e| Error::Unsupported(format!("fixture proof: {e}")))?;
    Ok(Fixture { proof, common, verifier_only })
}
