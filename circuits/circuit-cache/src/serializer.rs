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
use plonky2::gates::arithmetic_base::ArithmeticBaseGenerator;
use plonky2::gates::arithmetic_extension::ArithmeticExtensionGenerator;
use plonky2::gates::base_sum::BaseSplitGenerator;
use plonky2::gates::coset_interpolation::InterpolationGenerator;
use plonky2::gates::exponentiation::ExponentiationGenerator;
use plonky2::gates::lookup::LookupGenerator;
use plonky2::gates::lookup_table::LookupTableGenerator;
use plonky2::gates::multiplication_extension::MulExtensionGenerator;
use plonky2::gates::poseidon::PoseidonGenerator;
use plonky2::gates::poseidon_mds::PoseidonMdsGenerator;
use plonky2::gates::random_access::RandomAccessGenerator;
use plonky2::gates::reducing::ReducingGenerator;
use plonky2::gates::reducing_extension::ReducingGenerator as ReducingExtensionGenerator;
use plonky2::hash::hash_types::RichField;
use plonky2::iop::generator::{ConstantGenerator, CopyGenerator, NonzeroTestGenerator, RandomValueGenerator};
use plonky2::read_generator_impl;
use plonky2::util::serialization::WitnessGeneratorSerializer;
use plonky2::{get_generator_tag_impl, impl_generator_serializer};
use tgrid_sha256::gates::{RoundA, RoundE, Schedule, ShaRowGenerator};

/// Implements plonky2's `GateSerializer` for the unit struct `$name`: plonky2's own gates (the
/// recursive verifier, lookups, arithmetic), the SHA-256 gates of `tgrid-sha256`, then the
/// gates listed after the name. One list for every cache user, so a gate added here reaches all.
#[macro_export]
macro_rules! gate_serializer {
    ($name:ident $(, $extra:ty)* $(,)?) => {
        const _: () = {
            use $crate::__plonky2::field::extension::Extendable;
            use $crate::__plonky2::gates::arithmetic_base::ArithmeticGate;
            use $crate::__plonky2::gates::arithmetic_extension::ArithmeticExtensionGate;
            use $crate::__plonky2::gates::base_sum::BaseSumGate;
            use $crate::__plonky2::gates::constant::ConstantGate;
            use $crate::__plonky2::gates::coset_interpolation::CosetInterpolationGate;
            use $crate::__plonky2::gates::exponentiation::ExponentiationGate;
            use $crate::__plonky2::gates::lookup::LookupGate;
            use $crate::__plonky2::gates::lookup_table::LookupTableGate;
            use $crate::__plonky2::gates::multiplication_extension::MulExtensionGate;
            use $crate::__plonky2::gates::noop::NoopGate;
            use $crate::__plonky2::gates::poseidon::PoseidonGate;
            use $crate::__plonky2::gates::poseidon_mds::PoseidonMdsGate;
            use $crate::__plonky2::gates::public_input::PublicInputGate;
            use $crate::__plonky2::gates::random_access::RandomAccessGate;
            use $crate::__plonky2::gates::reducing::ReducingGate;
            use $crate::__plonky2::gates::reducing_extension::ReducingExtensionGate;
            use $crate::__plonky2::hash::hash_types::RichField;
            use $crate::__plonky2::util::serialization::GateSerializer;
            use $crate::__plonky2::{get_gate_tag_impl, impl_gate_serializer, read_gate_impl};
            use $crate::__sha256_gates::{RoundAGate, RoundEGate, ScheduleGate};

            impl<F: RichField + Extendable<D>, const D: usize> GateSerializer<F, D> for $name {
                // Tags are positions in this list; an entry is only ever read by the executable
                // that wrote it (its key names the executable), so the list may change between
                // builds.
                impl_gate_serializer! {
                    $name,
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
                    $(, $extra)*
                }
            }
        };
    };
}

/// Serializes the gates of the cached circuits.
#[derive(Debug, Default, Clone, Copy)]
pub struct Gates;

gate_serializer!(Gates);

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
