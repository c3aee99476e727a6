//! The plonky2 layers between the aggregation root and the Groth16 wrapper:
//!
//! 1. **settle** (Goldilocks, standard recursion config): verifies the batch's root proof, a
//!    chunk or merge proof, with the real chunk and merge circuit digests as constants (the check
//!    `AggregationCircuits::verify_root` makes natively), and outputs the settlement public input
//!    `SHA-256(batch root ‖ registry root ‖ task count as u64 BE)` with its top 3 bits cleared,
//!    as 8 big-endian u32 words.
//! 2. **shrink** (Goldilocks, standard): re-verifies until the proof is small enough that the
//!    final layer fits 2^12 rows.
//! 3. **final** ([`PoseidonBn254GoldilocksConfig`]): verifies the last shrink proof and forwards
//!    the 8 words. Its Merkle trees and transcript use Poseidon over BN254, which the Groth16
//!    R1CS checks natively.
//!
//! Every layer verifies its child with constant verifier data, so the final circuit (pinned by
//! the Groth16 key) transitively pins the settle circuit, the leaf, chunk and merge circuits, and
//! through the registry root every model's leaf circuit.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use plonky2::field::types::{Field, PrimeField64};
use plonky2::fri::reduction_strategies::FriReductionStrategy;
use plonky2::fri::FriConfig;
use plonky2::iop::target::BoolTarget;
use plonky2::iop::witness::{PartialWitness, WitnessWrite};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitConfig, CircuitData};
use plonky2::plonk::config::GenericConfig;
use plonky2::plonk::proof::{ProofWithPublicInputs, ProofWithPublicInputsTarget};
use plonky2::plonk::prover::prove;
use plonky2::util::timing::TimingTree;
use tgrid_aggregation::shape::{circuit_digest_target, AGGREGATION};
use tgrid_aggregation::tree::element_bits_be;
use tgrid_aggregation::{AggregationCircuits, SubtreeKind, SubtreeProof};
use tgrid_circuit_cache::CircuitKey;
use tgrid_circuits::{C, D, F};
use tgrid_poseidon_bn254::PoseidonBn254GoldilocksConfig;
use tgrid_sha256::{CircuitBuilderSha256, U32Target};
use tracing::debug;

use crate::error::{Error, Result};

/// The final layer's configuration.
pub type FinalConfig = PoseidonBn254GoldilocksConfig;
/// A final-layer proof.
pub type FinalProof = ProofWithPublicInputs<F, FinalConfig, D>;

/// Number of public inputs of the settle, shrink and final layers: the settlement public input
/// as 8 big-endian u32 words.
pub const NUM_WRAP_PUBLIC_INPUTS: usize = 8;

/// Largest degree of the final circuit: the Groth16 wrapper's size grows with it.
pub const FINAL_DEGREE_BITS: usize = 12;

/// FRI parameters of the final (BN254-hashed) layer; see docs/wrap.md for the security
/// computation: conjectured bits = `rate_bits · num_query_rounds + proof_of_work_bits`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FinalFri {
    /// log2 of the blowup.
    pub rate_bits: usize,
    /// FRI queries.
    pub num_query_rounds: usize,
    /// Grinding bits.
    pub proof_of_work_bits: u32,
}

impl FinalFri {
    /// Production: rate 4, 21 queries, 16 bits of grinding = 100 conjectured bits.
    pub const PRODUCTION: Self = Self { rate_bits: 4, num_query_rounds: 21, proof_of_work_bits: 16 };

    /// Tests only (INSECURE, 10 bits): the same code paths, shape and arities with 2 queries and
    /// 2 bits of grinding, so the R1CS tests stay cheap.
    pub const INSECURE_TEST: Self = Self { rate_bits: 4, num_query_rounds: 2, proof_of_work_bits: 2 };

    /// Conjectured security in bits.
    pub fn conjectured_security_bits(&self) -> usize {
        self.rate_bits * self.num_query_rounds + self.proof_of_work_bits as usize
    }

    /// The full circuit configuration: plonky2's standard recursion configuration with these FRI
    /// parameters, Merkle caps of height 4 and FRI arity 4 down to a 16-coefficient final
    /// polynomial (the cheapest folding in R1CS, WRAP_NOTES §2.3).
    pub fn circuit_config(&self) -> CircuitConfig {
        CircuitConfig {
            // plonky2 refuses configurations below their declared security; the test
            // configuration declares what it has.
            security_bits: self.conjectured_security_bits().min(100),
            fri_config: FriConfig {
                rate_bits: self.rate_bits,
                cap_height: 4,
                proof_of_work_bits: self.proof_of_work_bits,
                reduction_strategy: FriReductionStrategy::ConstantArityBits(2, 4),
                num_query_rounds: self.num_query_rounds,
            },
            ..CircuitConfig::standard_recursion_config()
        }
    }
}

/// Proves with plonky2, turning its panics on unsatisfiable witnesses into errors, then verifies
/// (plonky2's prover does not check the constraints itself).
fn prove_checked<Cfg: GenericConfig<D, F = F>>(
    data: &CircuitData<F, Cfg, D>,
    pw: PartialWitness<F>,
) -> Result<ProofWithPublicInputs<F, Cfg, D>> {
    let proof = catch_unwind(AssertUnwindSafe(|| {
        prove::<F, Cfg, D>(&data.prover_only, &data.common, pw, &mut TimingTree::default())
    }))
    .map_err(|_| Error::Proving("the witness does not satisfy the circuit".into()))?
    .map_err(|e| Error::Proving(e.to_string()))?;
    data.verify(proof.clone())
        .map_err(|e| Error::Proving(format!("the witness does not satisfy the circuit ({e})")))?;
    Ok(proof)
}

fn set<T>(r: anyhow::Result<T>) -> Result<T> {
    r.map_err(|e| Error::Proving(e.to_string()))
}

/// The settle circuit (module docs, step 1).
struct SettleCircuit {
    data: CircuitData<F, C, D>,
    root: ProofWithPublicInputsTarget<D>,
    cap: plonky2::hash::hash_types::MerkleCapTarget,
    is_merge: BoolTarget,
}

impl SettleCircuit {
    fn build(aggregation: &AggregationCircuits) -> Result<Self> {
        let common = AGGREGATION.common();
        let mut b = CircuitBuilder::<F, D>::new(CircuitConfig::standard_recursion_config());
        let root = b.add_virtual_proof_with_pis(common);
        let cap = b.add_virtual_cap(common.config.fri_config.cap_height);
        let is_merge = b.add_virtual_bool_target_safe();

        // The root's circuit is the chunk or the merge circuit: its digest, derived from the
        // witnessed cap, must be the real one, and so must the digests it carries.
        let digests = aggregation.digests();
        let digest = circuit_digest_target(&mut b, &cap, common.degree_bits());
        for j in 0..4 {
            let chunk = b.constant(digests[j]);
            let merge = b.constant(digests[4 + j]);
            let expected = b.select(is_merge, merge, chunk);
            b.connect(digest.elements[j], expected);
        }
        for (&carried, &real) in root.public_inputs[13..21].iter().zip(&digests) {
            let real = b.constant(real);
            b.connect(carried, real);
        }
        let vd = plonky2::plonk::circuit_data::VerifierCircuitTarget {
            constants_sigmas_cap: cap.clone(),
            circuit_digest: digest,
        };
        b.verify_proof::<C>(&root, &vd, common);

        // sha256(batch root ‖ registry root ‖ count as u64 BE): 72 bytes. The word and element
        // splits also prove the words are u32 and the elements canonical.
        let pis = root.public_inputs.clone();
        let mut bits: Vec<BoolTarget> = pis[0..8].iter().flat_map(|&w| b.split_u32_be(U32Target(w))).collect();
        for &e in &pis[8..13] {
            bits.extend(element_bits_be(&mut b, e));
        }
        let digest = b.sha256_bits(&bits);

        // Clear the top 3 bits so the value is below the BN254 scalar field order.
        let mut words = digest.words.map(|w| w.0);
        let top = b.split_u32_be(digest.words[0]);
        let mut cleared = words[0];
        for (i, bit) in top.iter().take(3).enumerate() {
            let weight = b.constant(F::from_canonical_u64(1 << (31 - i)));
            let minus = b.mul(bit.target, weight);
            cleared = b.sub(cleared, minus);
        }
        words[0] = cleared;
        b.register_public_inputs(&words);
        // The chunk and merge digests are its constants: they name the build in the cache.
        let digests: Vec<u8> = aggregation.digests().iter().flat_map(|d| d.to_canonical_u64().to_le_bytes()).collect();
        let data = tgrid_circuit_cache::build::<F, C, D>(&CircuitKey::new("settle").with(digests), b);
        debug!(degree_bits = data.common.degree_bits(), "settle circuit built");
        Ok(Self { data, root, cap, is_merge })
    }
}

/// A Goldilocks layer called `name` that verifies a proof of `inner` and forwards its public
/// inputs.
fn forwarding_circuit<Cfg: GenericConfig<D, F = F>>(
    name: &str,
    inner: &CircuitData<F, C, D>,
    config: CircuitConfig,
) -> (CircuitData<F, Cfg, D>, ProofWithPublicInputsTarget<D>) {
    let mut b = CircuitBuilder::<F, D>::new(config);
    let proof = b.add_virtual_proof_with_pis(&inner.common);
    let vd = b.constant_verifier_data(&inner.verifier_only);
    b.verify_proof::<C>(&proof, &vd, &inner.common);
    b.register_public_inputs(&proof.public_inputs);
    // The inner circuit (a constant here) and the configuration name the build in the cache.
    let key = CircuitKey::new(name)
        .with(tgrid_circuits::hash_to_bytes(&inner.verifier_only.circuit_digest))
        .with(format!("{:?}", b.config));
    (tgrid_circuit_cache::build::<F, Cfg, D>(&key, b), proof)
}

/// The settle, shrink and final circuits, built once per set of aggregation circuits.
pub struct WrapCircuits {
    settle: SettleCircuit,
    shrink: Vec<(CircuitData<F, C, D>, ProofWithPublicInputsTarget<D>)>,
    last: CircuitData<F, FinalConfig, D>,
    last_proof: ProofWithPublicInputsTarget<D>,
    fri: FinalFri,
}

impl std::fmt::Debug for WrapCircuits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WrapCircuits")
            .field("settle_degree_bits", &self.settle.data.common.degree_bits())
            .field("shrink_layers", &self.shrink.len())
            .field("final_degree_bits", &self.last.common.degree_bits())
            .field("fri", &self.fri)
            .finish()
    }
}

/// Timings of one wrap (seconds).
#[derive(Clone, Copy, Debug, Default)]
pub struct WrapTimings {
    /// The settle layer.
    pub settle: f64,
    /// All shrink layers.
    pub shrink: f64,
    /// The BN254-hashed final layer.
    pub last: f64,
}

/// The result of wrapping a batch's root proof.
#[derive(Clone, Debug)]
pub struct WrappedBatch {
    /// The final-layer proof; its public inputs are the settlement public input's 8 words.
    pub proof: FinalProof,
    /// Seconds per layer.
    pub timings: WrapTimings,
}

impl WrappedBatch {
    /// The settlement public input (32 bytes, big-endian, top 3 bits clear).
    pub fn public_input(&self) -> Result<[u8; 32]> {
        settlement_input_from_fields(&self.proof.public_inputs)
    }
}

/// Reads the settlement public input off a layer's public inputs.
pub fn settlement_input_from_fields(fields: &[F]) -> Result<[u8; 32]> {
    if fields.len() != NUM_WRAP_PUBLIC_INPUTS {
        return Err(Error::InvalidProof(format!("{} public inputs, expected {NUM_WRAP_PUBLIC_INPUTS}", fields.len())));
    }
    let bytes = tgrid_sha256::digest_from_fields(fields).map_err(|e| Error::InvalidProof(e.to_string()))?;
    if bytes[0] & 0xe0 != 0 {
        return Err(Error::InvalidProof("the settlement input's top 3 bits are set".into()));
    }
    Ok(bytes)
}

impl WrapCircuits {
    /// Builds the layers above `aggregation`'s root proofs with the final layer's FRI
    /// parameters `fri`.
    pub fn build(aggregation: &AggregationCircuits, fri: FinalFri) -> Result<Self> {
        let start = Instant::now();
        let settle = SettleCircuit::build(aggregation)?;
        let mut shrink = Vec::new();
        loop {
            let inner = shrink.last().map(|(d, _)| d).unwrap_or(&settle.data);
            let (last, last_proof) = forwarding_circuit::<FinalConfig>("final", inner, fri.circuit_config());
            if last.common.degree_bits() <= FINAL_DEGREE_BITS {
                debug!(shrink_layers = shrink.len(), seconds = start.elapsed().as_secs_f64(), "wrap circuits built");
                return Ok(Self { settle, shrink, last, last_proof, fri });
            }
            if shrink.len() == 3 {
                return Err(Error::Build(format!(
                    "final layer still has 2^{} rows after {} shrink layers",
                    last.common.degree_bits(),
                    shrink.len()
                )));
            }
            let layer = forwarding_circuit::<C>("shrink", inner, CircuitConfig::standard_recursion_config());
            shrink.push(layer);
        }
    }

    /// The final layer's FRI parameters.
    pub fn fri(&self) -> FinalFri {
        self.fri
    }

    /// The final circuit (its common data and verifier data define the Groth16 circuit).
    pub fn final_circuit(&self) -> &CircuitData<F, FinalConfig, D> {
        &self.last
    }

    /// Degrees (log2 rows) of the settle layer, each shrink layer and the final layer.
    pub fn degree_bits(&self) -> Vec<usize> {
        let mut v = vec![self.settle.data.common.degree_bits()];
        v.extend(self.shrink.iter().map(|(d, _)| d.common.degree_bits()));
        v.push(self.last.common.degree_bits());
        v
    }

    /// Proves the settle, shrink and final layers over a verified root proof.
    pub fn wrap(&self, aggregation: &AggregationCircuits, root: &SubtreeProof) -> Result<WrappedBatch> {
        aggregation.verify_root(root)?;
        self.wrap_unchecked(aggregation, root)
    }

    /// [`wrap`](Self::wrap) after the native check.
    fn wrap_unchecked(&self, aggregation: &AggregationCircuits, root: &SubtreeProof) -> Result<WrappedBatch> {
        let mut timings = WrapTimings::default();
        let t = Instant::now();
        let mut proof = self.prove_settle(aggregation, root)?;
        timings.settle = t.elapsed().as_secs_f64();

        let t = Instant::now();
        for (data, target) in &self.shrink {
            let mut pw = PartialWitness::new();
            set(pw.set_proof_with_pis_target(target, &proof))?;
            proof = prove_checked(data, pw)?;
        }
        timings.shrink = t.elapsed().as_secs_f64();

        let t = Instant::now();
        let mut pw = PartialWitness::new();
        set(pw.set_proof_with_pis_target(&self.last_proof, &proof))?;
        let last = prove_checked(&self.last, pw)?;
        timings.last = t.elapsed().as_secs_f64();
        Ok(WrappedBatch { proof: last, timings })
    }

    /// The settle layer alone, without the native check of the root (tests aim bad roots at
    /// the circuit with it); its public inputs are those of every layer above it.
    pub(crate) fn prove_settle(
        &self,
        aggregation: &AggregationCircuits,
        root: &SubtreeProof,
    ) -> Result<ProofWithPublicInputs<F, C, D>> {
        let mut pw = PartialWitness::new();
        let s = &self.settle;
        set(pw.set_proof_with_pis_target(&s.root, &root.proof))?;
        if root.kind == SubtreeKind::Leaf {
            return Err(Error::Proving("a batch's root proof is a chunk or merge proof, not a leaf proof".into()));
        }
        let vd = aggregation.verifier_only(root.kind).map_err(|e| Error::Proving(e.to_string()))?;
        set(pw.set_cap_target(&s.cap, &vd.constants_sigmas_cap))?;
        set(pw.set_bool_target(s.is_merge, root.kind == SubtreeKind::Merge))?;
        prove_checked(&s.data, pw)
    }

    /// Verifies a final-layer proof natively and returns its settlement public input.
    pub fn verify(&self, proof: &FinalProof) -> Result<[u8; 32]> {
        self.last
            .verify(proof.clone())
            .map_err(|e| Error::InvalidProof(format!("final-layer verification failed: {e}")))?;
        settlement_input_from_fields(&proof.public_inputs)
    }
}
