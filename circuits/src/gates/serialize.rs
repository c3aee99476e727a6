//! Witness generators read back from a circuit cache entry: each generator type of this crate
//! names a reader, kept in a list keyed by id (`GENERATORS` of each layer).

use plonky2::iop::generator::{SimpleGenerator, WitnessGeneratorRef};
use plonky2::plonk::circuit_data::CommonCircuitData;
use plonky2::util::serialization::{Buffer, IoResult};

use crate::{D, F};

/// Reads one of this crate's witness generators.
pub(crate) type ReadGenerator = fn(&mut Buffer<'_>, &CommonCircuitData<F, D>) -> IoResult<WitnessGeneratorRef<F, D>>;

/// The reader of generator type `G` (what plonky2's serializer macro does per type; ours is
/// keyed by id because one type may carry several ids).
pub(crate) fn reader<G: SimpleGenerator<F, D>>(
    src: &mut Buffer<'_>,
    common: &CommonCircuitData<F, D>,
) -> IoResult<WitnessGeneratorRef<F, D>> {
    Ok(WitnessGeneratorRef::new(G::deserialize(src, common)?.adapter()))
}
