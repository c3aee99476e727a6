//! File formats. Each starts with an 8-byte magic and a little-endian u16 version; decoding
//! never trusts a length and never panics on arbitrary bytes.
//!
//! - `.tgm` (compiled model): magic `TGRIDMDL`, version, the canonical model bytes (length
//!   prefixed; their SHA-256 is the model id), the segment cuts, the final task circuit digest,
//!   the leaf circuit digest (what the registry lists; files compiled before leaf circuits
//!   replaced normalization hold the normalization circuit's), and a JSON report of the
//!   compilation. Verifiers rebuild circuits from the model and compare digests; they never
//!   trust the recorded ones.
//! - `.tgp` (task proof): magic `TGRIDPRF`, version, the model id, the plonky2 proof bytes.

use plonky2::field::types::PrimeField64;
use plonky2::hash::hash_types::HashOut;
use plonky2::plonk::circuit_data::CommonCircuitData;
use plonky2::plonk::proof::ProofWithPublicInputs;

use tgrid_int8::codec::{check_header, Reader, Writer};
use tgrid_int8::QuantModel;

use crate::error::{Error, Result};
use crate::plan::SegmentPlan;
use crate::{C, D, F};

/// Magic of `.tgm` files.
pub const MODEL_MAGIC: &[u8; 8] = b"TGRIDMDL";
/// Magic of `.tgp` files.
pub const PROOF_MAGIC: &[u8; 8] = b"TGRIDPRF";
const MODEL_VERSION: u16 = 2;
const PROOF_VERSION: u16 = 1;
/// Upper bounds that keep hostile files from costing memory or time.
const MAX_MODEL_BYTES: usize = 64 << 20;
const MAX_REPORT_BYTES: usize = 1 << 20;
const MAX_PROOF_BYTES: usize = 16 << 20;
const MAX_CUTS: usize = 4096;

/// A compiled model file.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelFile {
    /// The int8 model.
    pub model: QuantModel,
    /// How its circuit is cut into segments.
    pub plan: SegmentPlan,
    /// Digest of the final task circuit, as built at compile time.
    pub circuit_digest: [u8; 32],
    /// Digest of the model's leaf circuit (see `tgrid-aggregation`), as built at compile time.
    pub leaf_digest: [u8; 32],
    /// Free-form JSON report of the compilation (agreement, sizes); not part of the model id.
    pub report: String,
}

impl ModelFile {
    /// Encodes the file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.raw(MODEL_MAGIC);
        w.u16(MODEL_VERSION);
        w.bytes(&self.model.to_canonical_bytes());
        w.usizes(&self.plan.cuts);
        w.raw(&self.circuit_digest);
        w.raw(&self.leaf_digest);
        w.str(&self.report);
        w.into_bytes()
    }

    /// Decodes and validates a file.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        check_header(&mut r, MODEL_MAGIC, MODEL_VERSION, "TensorGrid model file (.tgm)")?;
        let model = QuantModel::from_canonical_bytes(r.bytes(MAX_MODEL_BYTES)?)?;
        let plan = SegmentPlan { cuts: r.usizes(MAX_CUTS)? };
        plan.validate(&model)?;
        let circuit_digest = r.raw()?;
        let leaf_digest = r.raw()?;
        let report = r.str(MAX_REPORT_BYTES)?;
        r.finish()?;
        Ok(Self { model, plan, circuit_digest, leaf_digest, report })
    }
}

/// A task proof file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskProof {
    /// The model the proof is for.
    pub model_id: [u8; 32],
    /// plonky2 proof with public inputs.
    pub proof: Vec<u8>,
}

impl TaskProof {
    /// Wraps proof bytes.
    pub fn new(model_id: [u8; 32], proof: Vec<u8>) -> Self {
        Self { model_id, proof }
    }

    /// Encodes the file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.raw(PROOF_MAGIC);
        w.u16(PROOF_VERSION);
        w.raw(&self.model_id);
        w.bytes(&self.proof);
        w.into_bytes()
    }

    /// Decodes the container (the proof itself is decoded against its circuit when verified).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        check_header(&mut r, PROOF_MAGIC, PROOF_VERSION, "TensorGrid proof file (.tgp)")?;
        let model_id = r.raw()?;
        let proof = r.bytes(MAX_PROOF_BYTES)?.to_vec();
        r.finish()?;
        Ok(Self { model_id, proof })
    }
}

/// 32 bytes of a Goldilocks hash: each element as 8 big-endian bytes.
pub fn hash_to_bytes(h: &HashOut<F>) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, e) in h.elements.iter().enumerate() {
        out[8 * i..8 * i + 8].copy_from_slice(&e.to_canonical_u64().to_be_bytes());
    }
    out
}

/// Decodes plonky2 proof bytes against the circuit's common data. plonky2 reads every size
/// from the common data (not from the bytes) but may panic on out-of-range field elements, so
/// the decoding is isolated, and the bytes must re-encode identically (no second encoding of
/// the same proof, e.g. a non-canonical field element, is accepted).
pub fn decode_plonky2_proof(bytes: &[u8], common: &CommonCircuitData<F, D>) -> Result<ProofWithPublicInputs<F, C, D>> {
    if bytes.len() > MAX_PROOF_BYTES {
        return Err(Error::Format("proof too large".into()));
    }
    let decoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ProofWithPublicInputs::<F, C, D>::from_bytes(bytes.to_vec(), common)
    }));
    let proof = match decoded {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => return Err(Error::Format(format!("proof bytes do not decode: {e}"))),
        Err(_) => return Err(Error::Format("proof bytes do not decode".into())),
    };
    if proof.to_bytes() != bytes {
        return Err(Error::Format("proof bytes are not in canonical form".into()));
    }
    Ok(proof)
}
