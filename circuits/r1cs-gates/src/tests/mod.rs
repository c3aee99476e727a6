//! Differential tests against plonky2's own `eval_unfiltered`.

mod counts;
mod gates;
mod recursion;
mod satisfying;

use ark_bn254::Fr;
use ark_r1cs_std::prelude::*;
use ark_relations::gr1cs::{ConstraintSystem, ConstraintSystemRef};
use plonky2::field::extension::quadratic::QuadraticExtension;
use plonky2::field::types::{Field, Sample};
use plonky2::gates::arithmetic_base::ArithmeticGate;
use plonky2::gates::arithmetic_extension::ArithmeticExtensionGate;
use plonky2::gates::base_sum::BaseSumGate;
use plonky2::gates::constant::ConstantGate;
use plonky2::gates::coset_interpolation::CosetInterpolationGate;
use plonky2::gates::gate::{Gate, GateRef};
use plonky2::gates::multiplication_extension::MulExtensionGate;
use plonky2::gates::noop::NoopGate;
use plonky2::gates::poseidon::PoseidonGate;
use plonky2::gates::poseidon_mds::PoseidonMdsGate;
use plonky2::gates::public_input::PublicInputGate;
use plonky2::gates::random_access::RandomAccessGate;
use plonky2::gates::reducing::ReducingGate;
use plonky2::gates::reducing_extension::ReducingExtensionGate;
use plonky2::hash::hash_types::HashOut;
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::circuit_data::{CircuitConfig, CommonCircuitData};
use plonky2::plonk::config::PoseidonGoldilocksConfig;
use plonky2::plonk::vars::EvaluationVars;
use plonky2::util::serialization::{Buffer, Write};

use crate::{eval_gate_unfiltered, GoldilocksExtVar, GoldilocksVar, F};

pub(crate) type FE = QuadraticExtension<F>;
pub(crate) type C = PoseidonGoldilocksConfig;

/// Openings of one gate row at a point.
#[derive(Clone)]
pub(crate) struct Opening {
    pub consts: Vec<FE>,
    pub wires: Vec<FE>,
    pub pih: HashOut<F>,
}

impl Opening {
    pub(crate) fn random(gate: &GateRef<F, 2>) -> Self {
        Self {
            consts: FE::rand_vec(gate.0.num_constants()),
            wires: FE::rand_vec(gate.0.num_wires()),
            pih: HashOut::rand(),
        }
    }
}

/// A trivial circuit's common data (only needed as an argument of `Gate::deserialize`).
pub(crate) fn trivial_common() -> CommonCircuitData<F, 2> {
    CircuitBuilder::<F, 2>::new(CircuitConfig::standard_recursion_config()).build::<C>().common
}

/// `CosetInterpolationGate` as plonky2's FRI verifier builds it for arity 2^bits with
/// `max_quotient_degree_factor` 8 (`with_max_degree` is crate-private: rebuilt through the
/// gate's public deserializer, with the weights of `new(bits)`).
pub(crate) fn coset_gate(
    bits: usize,
    max_degree: usize,
    common: &CommonCircuitData<F, 2>,
) -> CosetInterpolationGate<F, 2> {
    let n_points = 1usize << bits;
    let n_intermediates = (n_points - 2) / (max_degree - 1);
    let degree = (n_points - 2) / (n_intermediates + 1) + 2;
    let weights = CosetInterpolationGate::<F, 2>::new(bits).barycentric_weights;
    let mut bytes = Vec::new();
    bytes.write_usize(bits).unwrap();
    bytes.write_usize(degree).unwrap();
    bytes.write_usize(weights.len()).unwrap();
    bytes.write_field_vec(&weights).unwrap();
    CosetInterpolationGate::<F, 2>::deserialize(&mut Buffer::new(&bytes), common).unwrap()
}

/// The 13 gates of `standard_recursion_config`, with their parameters there, cheapest first.
pub(crate) fn standard_gates(common: &CommonCircuitData<F, 2>) -> Vec<GateRef<F, 2>> {
    let config = CircuitConfig::standard_recursion_config();
    vec![
        GateRef::new(NoopGate),
        GateRef::new(ConstantGate::new(config.num_constants)),
        GateRef::new(PublicInputGate),
        GateRef::new(ArithmeticGate::new_from_config(&config)),
        GateRef::new(ArithmeticExtensionGate::<2>::new_from_config(&config)),
        GateRef::new(MulExtensionGate::<2>::new_from_config(&config)),
        GateRef::new(BaseSumGate::<2>::new_from_config::<F>(&config)),
        GateRef::new(ReducingGate::<2>::new(ReducingGate::<2>::max_coeffs_len(
            config.num_wires,
            config.num_routed_wires,
        ))),
        GateRef::new(ReducingExtensionGate::<2>::new(ReducingExtensionGate::<2>::max_coeffs_len(
            config.num_wires,
            config.num_routed_wires,
        ))),
        GateRef::new(RandomAccessGate::<F, 2>::new_from_config(&config, 4)),
        GateRef::new(PoseidonMdsGate::<F, 2>::new()),
        GateRef::new(PoseidonGate::<F, 2>::new()),
        GateRef::new(coset_gate(4, config.max_quotient_degree_factor, common)),
    ]
}

/// plonky2's values.
pub(crate) fn native(gate: &GateRef<F, 2>, o: &Opening) -> Vec<FE> {
    gate.0.eval_unfiltered(EvaluationVars {
        local_constants: &o.consts,
        local_wires: &o.wires,
        public_inputs_hash: &o.pih,
    })
}

pub(crate) fn alloc_ext(cs: &ConstraintSystemRef<Fr>, v: &[FE]) -> Vec<GoldilocksExtVar> {
    v.iter().map(|&x| GoldilocksExtVar::new_witness(cs.clone(), || Ok(x)).unwrap()).collect()
}

/// Allocates the opening as canonical witnesses and evaluates the gate in R1CS; returns the
/// results and the number of constraints of the evaluation alone.
pub(crate) fn r1cs(
    cs: &ConstraintSystemRef<Fr>,
    gate: &GateRef<F, 2>,
    o: &Opening,
) -> Result<(Vec<GoldilocksExtVar>, usize), crate::Error> {
    let consts = alloc_ext(cs, &o.consts);
    let wires = alloc_ext(cs, &o.wires);
    let pih = o.pih.elements.map(|x| GoldilocksVar::new_witness(cs.clone(), || Ok(x)).unwrap());
    let before = cs.num_constraints();
    let out = eval_gate_unfiltered(gate, &consts, &wires, &pih)?;
    Ok((out, cs.num_constraints() - before))
}

pub(crate) fn new_cs() -> ConstraintSystemRef<Fr> {
    ConstraintSystem::<Fr>::new_ref()
}

pub(crate) fn values(v: &[GoldilocksExtVar]) -> Vec<FE> {
    v.iter().map(|x| x.value().unwrap()).collect()
}

/// The largest bound among the results.
pub(crate) fn max_bits(v: &[GoldilocksExtVar]) -> u32 {
    v.iter().map(GoldilocksExtVar::bits).max().unwrap_or(0)
}

#[allow(dead_code)]
pub(crate) fn ext(x: u64) -> FE {
    FE::from_canonical_u64(x)
}
