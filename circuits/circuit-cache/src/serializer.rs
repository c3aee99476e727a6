//! Gate and witness-generator serializers for the circuits the cache holds: plonky2's own gates
//! and generators (the recursive verifier, hashing, arithmetic) and the SHA-256 gates of
//! `tgrid-sha256`. Serializing a circuit with anything else fails, and the cache then keeps
//! building that circuit instead of storing it.

use plonky2::field::extension::Extendable;
use plonky2::gadgets::arithmetic::EqualityGenerator;
use plonky2::gadgets::arithmetic_extension::QuotientGeneratorExtension;
use plonky2::gadgets::range_check::LowHighGenerator;
use plonky2::gadgets::split_base::BaseSumGenerator;
use plonky2::gadgets::split_join::{SplitGenerator, WireSplitGenerator};
use plonky2::gates::arithmetic_base::{ArithmeticBaseGenerator, ArithmeticGate};
use plonky2::gates::arithmetic_extension::{ArithmeticExtensionGate, ArithmeticExtensionGenerator};
use plonky2::gates::base_sum::{BaseSplitGenerator, BaseSumGate};
use plonky2::gates::constant::ConstantGate;
use plonky2::gates::coset_interpolation::{CosetInterpolationGate, InterpolationGenerator};
use plonky2::gates::exponentiation::{ExponentiationGate, ExponentiationGenerator};
use plonky2::gates::lookup::{LookupGate, LookupGenerator};
use plonky2::gates::lookup_table::{LookupTableGate, LookupTableGenerator};
use plonky2::gates::multiplication_extension::{MulExtensionGate, MulExtensionGenerator};
use plonky2::gates::noop::NoopGate;
use plonky2::gates::poseidon::{PoseidonGate, PoseidonGenerator};
use plonky2::gates::poseidon_mds::{PoseidonMdsGate, PoseidonMdsGenerator};
use plonky2::gates::public_input::PublicInputGate;
use plonky2::gates::random_access::{RandomAccessGate, RandomAccessGenerator};
use plonky2::gates::reducing::{ReducingGate, ReducingGenerator};
use plonky2::gates::reducing_extension::{ReducingExtensionGate, ReducingGenerator as ReducingExtensionGenerator};
use plonky2::hash::hash_types::RichField;
use plonky2::iop::generator::{ConstantGenerator, CopyGenerator, NonzeroTestGenerator, RandomValueGenerator};
use plonky2::util::serialization::{GateSerializer, WitnessGeneratorSerializer};
use plonky2::{get_gate_tag_impl, get_generator_tag_impl, impl_gate_serializer, impl_generator_serializer};
use plonky2::{read_gate_impl, read_generator_impl};
use tgrid_sha256::gates::{RoundA, RoundAGate, RoundE, RoundEGate, Schedule, ScheduleGate, ShaRowGenerator};

/// Serializes the gates of the cached circuits.
#[derive(Debug, Default, Clone, Copy)]
pub struct Gates;

impl<F: RichField + Extendable<D>, const D: usize> GateSerializer<F, D> for Gates {
    // Tags are positions in this list: appending keeps old files readable, and a file from
    // another executable is never read anyway (the cache key names the executable).
    impl_gate_serializer! {
        Gates,
        ArithmeticGate,
        ArithmeticExtensionGate<D>,
        BaseSumGate<2>,
        ConstantGate,
        CosetInterpolationGate<F, D>,
        ExponentiationGate<F, D>,
        LookupGate,
        LookupTableGate,
        MulExtensionGate<D>,
        NoopGate,
        PoseidonMdsGate<F, D>,
        PoseidonGate<F, D>,
        PublicInputGate,
        RandomAccessGate<F, D>,
        ReducingExtensionGate<D>,
        ReducingGate<D>,
        RoundAGate,
        RoundEGate,
        ScheduleGate
    }
}

/// Serializes the witness generators of the cached circuits (plonky2's dummy-proof generator
/// is left out: no cached circuit verifies proofs conditionally).
#[derive(Debug, Default, Clone, Copy)]
pub struct Generators;

impl<F: RichField + Extendable<D>, const D: usize> WitnessGeneratorSerializer<F, D> for Generators {
    impl_generator_serializer! {
        Generators,
        ArithmeticBaseGenerator<F, D>,
        ArithmeticExtensionGenerator<F, D>,
        BaseSplitGenerator<2>,
        BaseSumGenerator<2>,
        ConstantGenerator<F>,
        CopyGenerator,
        EqualityGenerator,
        ExponentiationGenerator<F, D>,
        InterpolationGenerator<F, D>,
        LookupGenerator,
        LookupTableGenerator,
        LowHighGenerator,
        MulExtensionGenerator<F, D>,
        NonzeroTestGenerator,
        PoseidonGenerator<F, D>,
        PoseidonMdsGenerator<D>,
        QuotientGeneratorExtension<D>,
        RandomAccessGenerator<F, D>,
        RandomValueGenerator,
        ReducingGenerator<D>,
        ReducingExtensionGenerator<D>,
        SplitGenerator,
        WireSplitGenerator,
        ShaRowGenerator<RoundA>,
        ShaRowGenerator<RoundE>,
        ShaRowGenerator<Schedule>
    }
}
