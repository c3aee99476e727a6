//! Standard circuit shapes.
//!
//! plonky2 fixes a verified circuit's `CommonCircuitData` when the verifying circuit is built;
//! only the verifier-only data (constants/sigmas cap and circuit digest) can be a witness. So
//! every circuit that a leaf, chunk or merge circuit verifies with witnessed verifier data is padded to
//! one standard shape: the same configuration, degree, gate set and public input count. A
//! [`Shape`] pads a builder to its standard and refuses a circuit that does not match.

use std::sync::OnceLock;

use plonky2::field::types::Field;
use plonky2::gates::base_sum::BaseSumGate;
use plonky2::gates::gate::GateRef;
use plonky2::gates::noop::NoopGate;
use plonky2::gates::poseidon::PoseidonGate;
use plonky2::hash::hash_types::{HashOut, HashOutTarget, MerkleCapTarget};
use plonky2::hash::merkle_tree::MerkleCap;
use plonky2::hash::poseidon::PoseidonHash;
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitConfig, CircuitData, CommonCircuitData};
use plonky2::plonk::config::Hasher;
use tgrid_circuit_cache::CircuitKey;
use tgrid_circuits::{C, D, F};
use tgrid_sha256::gates::{RoundAGate, RoundEGate, ScheduleGate};

use crate::error::{Error, Result};

/// A standard shape: configuration, degree, gate set and number of public inputs.
#[derive(Debug)]
pub struct Shape {
    name: &'static str,
    degree_bits: usize,
    num_public_inputs: usize,
    /// Whether the shape declares the SHA-256 gates (`tgrid_sha256::gates`).
    sha256_gates: bool,
    config: fn() -> CircuitConfig,
    common: OnceLock<CommonCircuitData<F, D>>,
}

/// Configuration of chunk and merge circuits: plonky2's standard recursion
/// configuration. No zero knowledge is needed above the task proofs: a private task's proof is
/// already zero-knowledge, and everything these circuits add (leaves, roots) is public.
pub fn aggregation_config() -> CircuitConfig {
    CircuitConfig::standard_recursion_config()
}

/// Configuration of leaf proofs: the aggregation configuration at FRI rate 1/16 with 21 queries
/// instead of 1/8 with 28 (4 × 21 + 16 bits of grinding = 100 conjectured bits, as 3 × 28 + 16).
/// A 2^13-row leaf then costs about what a 2^14-row proof at rate 1/8 costs to prove (the same
/// LDE size), but its verifier takes 3,510 rows instead of 4,230: four of them fit one 2^14-row
/// chunk circuit (docs/BENCHMARKS.md).
pub fn leaf_config() -> CircuitConfig {
    let mut config = CircuitConfig::standard_recursion_config();
    config.fri_config.rate_bits = 4;
    config.fri_config.num_query_rounds = 21;
    config
}

/// Number of public inputs of chunk and merge proofs.
pub const NUM_AGGREGATION_PUBLIC_INPUTS: usize = 21;

/// Number of public inputs of leaf proofs: the task leaf and the model id, 8 words each.
pub const NUM_LEAF_PUBLIC_INPUTS: usize = 16;

/// The shape of leaf proofs (one task's leaf, every model's [`crate::LeafCircuit`]), which only
/// chunk circuits verify: 2^13 rows at the cheaper-to-verify [`leaf_config`]. A model's task
/// proof must be verifiable in it beside the leaf's hashing (the character GPT's takes 6,909
/// rows; `tgrid_circuits` picks each segment's FRI rate so that it fits).
pub static LEAF: Shape = Shape::new("leaf", 13, NUM_LEAF_PUBLIC_INPUTS, true, leaf_config);

/// The shape shared by chunk and merge proofs, so a merge circuit verifies either. Both hash
/// with the SHA-256 gates.
pub static AGGREGATION: Shape = Shape::new("aggregation", 14, NUM_AGGREGATION_PUBLIC_INPUTS, true, aggregation_config);

impl Shape {
    const fn new(
        name: &'static str,
        degree_bits: usize,
        num_public_inputs: usize,
        sha256_gates: bool,
        config: fn() -> CircuitConfig,
    ) -> Self {
        Self { name, degree_bits, num_public_inputs, sha256_gates, config, common: OnceLock::new() }
    }

    /// The configuration of its circuits.
    pub fn config(&self) -> CircuitConfig {
        (self.config)()
    }

    /// log2 of the number of rows.
    pub fn degree_bits(&self) -> usize {
        self.degree_bits
    }

    /// The gates every circuit of this shape declares, whether it uses them or not.
    fn gates(&self) -> Vec<GateRef<F, D>> {
        let mut gates = standard_gates().to_vec();
        if self.sha256_gates {
            gates.push(GateRef::new(RoundAGate::new()));
            gates.push(GateRef::new(RoundEGate::new()));
            gates.push(GateRef::new(ScheduleGate::new()));
        }
        gates
    }

    /// Declares `gates` and pads `builder` with no-op rows so that building it yields exactly
    /// `2^degree_bits` rows (building adds a public-input row and constant rows).
    fn pad(&self, builder: &mut CircuitBuilder<F, D>, gates: Vec<GateRef<F, D>>) {
        for gate in gates {
            builder.add_gate_to_gate_set(gate.clone());
        }
        while builder.num_gates() < 1 << (self.degree_bits - 1) {
            builder.add_gate(NoopGate, vec![]);
        }
    }

    /// Pads and builds `builder` (through the process's circuit cache, if enabled, under `key`),
    /// failing unless the result has exactly this shape.
    pub fn build(&self, mut builder: CircuitBuilder<F, D>, key: CircuitKey) -> Result<CircuitData<F, C, D>> {
        if builder.num_public_inputs() != self.num_public_inputs {
            return Err(Error::Shape(format!(
                "{} circuit registers {} public inputs, the shape has {}",
                self.name,
                builder.num_public_inputs(),
                self.num_public_inputs
            )));
        }
        if builder.num_gates() >= 1 << self.degree_bits {
            return Err(Error::Shape(format!(
                "{} circuit needs {} rows before padding, more than the shape's 2^{}",
                self.name,
                builder.num_gates(),
                self.degree_bits
            )));
        }
        tracing::debug!(shape = self.name, rows = builder.num_gates(), "rows before padding");
        // The standard's gates are those declared below (the gate probes run only for the
        // standard's first computation, which the circuit cache may spare a process).
        self.pad(&mut builder, self.common().gates.clone());
        let data = tgrid_circuit_cache::build::<F, C, D>(&key.with(self.name), builder);
        self.check(&data.common)?;
        Ok(data)
    }

    /// Whether `builder` pads and builds to exactly this shape (its common data without the
    /// commitments: a fraction of a build). For circuits near the shape's size, where the
    /// constants plonky2 adds at build decide.
    pub fn fits(&self, mut builder: CircuitBuilder<F, D>) -> bool {
        if builder.num_public_inputs() != self.num_public_inputs || builder.num_gates() >= 1 << self.degree_bits {
            return false;
        }
        self.pad(&mut builder, self.common().gates.clone());
        &builder.mock_build::<C>().common == self.common()
    }

    /// The common circuit data of every circuit of this shape.
    pub fn common(&self) -> &CommonCircuitData<F, D> {
        self.common.get_or_init(|| {
            tgrid_circuit_cache::common(&CircuitKey::new(format!("shape-{}", self.name)), || {
                let mut builder = CircuitBuilder::<F, D>::new(self.config());
                for _ in 0..self.num_public_inputs {
                    builder.add_virtual_public_input();
                }
                self.pad(&mut builder, self.gates());
                // Common data does not depend on the constants/sigmas commitment, the costly
                // part of a build: skip it (real circuits are built in full and compared with
                // this).
                builder.mock_build::<C>().common
            })
        })
    }

    fn check(&self, common: &CommonCircuitData<F, D>) -> Result<()> {
        let standard = self.common();
        if common == standard {
            return Ok(());
        }
        let ids = |c: &CommonCircuitData<F, D>| c.gates.iter().map(|g| g.0.id()).collect::<Vec<_>>();
        let (got, want) = (ids(common), ids(standard));
        let extra: Vec<_> = got.iter().filter(|g| !want.contains(g)).collect();
        Err(Error::Shape(format!(
            "{} circuit does not match its standard shape: degree 2^{} (standard 2^{}), {} public inputs \
             (standard {}), gates not in the standard set: {extra:?}",
            self.name,
            common.degree_bits(),
            standard.degree_bits(),
            common.num_public_inputs,
            standard.num_public_inputs
        )))
    }
}

/// The circuit digest plonky2 assigns to a circuit with constants/sigmas cap `cap`, the default
/// domain separator and `degree_bits` (as plonky2's `CircuitBuilder::build` computes it).
pub fn circuit_digest(cap: &MerkleCap<F, tgrid_circuits::TgridPoseidonHash>, degree_bits: usize) -> HashOut<F> {
    type H = tgrid_circuits::TgridPoseidonHash;
    let domain_separator_digest: HashOut<F> = H::hash_pad(&[]);
    let mut parts: Vec<F> = cap.0.iter().flat_map(|h| h.elements).collect();
    parts.extend(domain_separator_digest.elements);
    parts.push(F::from_canonical_usize(degree_bits));
    H::hash_no_pad(&parts)
}

/// [`circuit_digest`], computed inside a circuit.
///
/// A recursive verifier with witnessed verifier data must derive the digest from the cap: the
/// digest only seeds Fiat-Shamir, so a digest taken as a separate witness would let a prover
/// pair an allowed digest with the cap of any circuit of the same shape.
pub fn circuit_digest_target(
    builder: &mut CircuitBuilder<F, D>,
    cap: &MerkleCapTarget,
    degree_bits: usize,
) -> HashOutTarget {
    let domain_separator_digest: HashOut<F> = PoseidonHash::hash_pad(&[]);
    let mut parts: Vec<_> = cap.0.iter().flat_map(|h| h.elements).collect();
    for e in domain_separator_digest.elements {
        parts.push(builder.constant(e));
    }
    parts.push(builder.constant(F::from_canonical_usize(degree_bits)));
    builder.hash_n_to_hash_no_pad::<PoseidonHash>(parts)
}

/// The union of the gates used by recursive verification of a task proof (public or
/// zero-knowledge, FRI arity 4) and of an aggregation-configured proof (FRI arity 16), by the SHA-256 and Merkle
/// gadgets, and plonky2's structural gates. Some of these gates (coset interpolation with a given
/// arity) can only be obtained from plonky2 by using them, so they are read off two small probe
/// circuits, built once per process.
fn standard_gates() -> &'static [GateRef<F, D>] {
    static GATES: OnceLock<Vec<GateRef<F, D>>> = OnceLock::new();
    GATES.get_or_init(|| {
        let mut gates: Vec<GateRef<F, D>> = vec![GateRef::new(NoopGate), GateRef::new(PoseidonGate::<F, D>::new())];
        gates.push(GateRef::new(BaseSumGate::<2>::new_from_config::<F>(&aggregation_config())));
        // Probes built side by side, their gates merged in a fixed order.
        let probes: Vec<Vec<GateRef<F, D>>> = std::thread::scope(|scope| {
            let handles: Vec<_> =
                [tgrid_circuits::zk_join_config(), tgrid_circuits::join_config(), aggregation_config(), leaf_config()]
                    .into_iter()
                    .map(|inner_config| scope.spawn(move || recursion_gates(inner_config)))
                    .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
        });
        for gate in probes.into_iter().flatten() {
            if !gates.iter().any(|g| g.0.id() == gate.0.id()) {
                gates.push(gate);
            }
        }
        gates
    })
}

/// The gates of an aggregation-configured circuit that verifies a proof of a small circuit
/// with `inner_config`.
fn recursion_gates(inner_config: CircuitConfig) -> Vec<GateRef<F, D>> {
    let mut inner = CircuitBuilder::<F, D>::new(inner_config);
    inner.add_virtual_public_input();
    // As large as the smallest real inner circuit, so FRI folds with the full arity.
    while inner.num_gates() < 1 << 11 {
        inner.add_gate(NoopGate, vec![]);
    }
    // Only the gate sets are read here: no commitment needed (see `Shape::common`).
    let inner = inner.mock_build::<C>();
    let mut outer = CircuitBuilder::<F, D>::new(aggregation_config());
    let proof = outer.add_virtual_proof_with_pis(&inner.common);
    let vd = outer.add_virtual_verifier_data(inner.common.config.fri_config.cap_height);
    outer.verify_proof::<C>(&proof, &vd, &inner.common);
    outer.mock_build::<C>().common.gates
}

/// Proves and checks the proof before handing it on. plonky2's prover does not check gate
/// constraints, so an unsatisfying witness (a bad child proof, a wrong registry path) would
/// otherwise surface only when someone verifies the batch; the check costs milliseconds.
pub(crate) fn prove_checked(
    data: &CircuitData<F, C, D>,
    pw: plonky2::iop::witness::PartialWitness<F>,
) -> Result<plonky2::plonk::proof::ProofWithPublicInputs<F, C, D>> {
    let proof = tgrid_circuits::prove_circuit(data, pw).map_err(|e| match e {
        tgrid_circuits::Error::Proving(m) => Error::Proving(m),
        other => Error::Task(other),
    })?;
    data.verify(proof.clone())
        .map_err(|e| Error::Proving(format!("the witness does not satisfy the circuit ({e})")))?;
    Ok(proof)
}
