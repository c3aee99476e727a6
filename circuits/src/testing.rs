//! Test helpers of this and downstream crates: the int8 crate's small deterministic models and
//! inputs, and a malicious prover's rewiring for soundness tests.

pub use tgrid_int8::testing::*;

use plonky2::plonk::circuit_data::CircuitData;

use crate::{C, D, F};

/// A malicious prover for soundness tests of this and downstream crates: makes `honest`'s
/// prover use everything that follows from the wiring of `cut`, a build of the same gates with
/// some copy constraints left out (its wire partition, witness generators and public-input and
/// lookup targets), while the committed permutation (sigmas), constants and verifier data stay
/// `honest`'s. Values the honest circuit connects may then differ in a proof, which the honest
/// verifier must reject. Set the witness with `cut`'s targets.
pub fn cut_copy_constraints(honest: &mut CircuitData<F, C, D>, cut: CircuitData<F, C, D>) {
    assert_eq!(honest.common.gates, cut.common.gates, "the cut build must have the same gates");
    assert_eq!(honest.common.degree_bits(), cut.common.degree_bits());
    let (h, c) = (&mut honest.prover_only, cut.prover_only);
    h.representative_map = c.representative_map;
    h.generator_indices_by_watches = c.generator_indices_by_watches;
    h.generators = c.generators;
    h.public_inputs = c.public_inputs;
    h.lookup_rows = c.lookup_rows;
    h.lut_to_lookups = c.lut_to_lookups;
}
