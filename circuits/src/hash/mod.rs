//! The hasher and plonky2 configuration of every TensorGrid circuit: plonky2's Poseidon over
//! Goldilocks, unchanged natively and in wide circuits, and laid out in two narrow rows
//! ([`crate::gates::PoseidonHeadGate`], [`crate::gates::PoseidonTailGate`]) in circuits too
//! narrow for plonky2's 135-wire `PoseidonGate` (the task circuits, see [`crate::segment_config`]).
//!
//! A circuit proven at FRI rate 1/4 (a public task's segment of at most 2^13 rows, see
//! [`crate::public_segment_fri`]) allows no constraint of degree 7: there the permutation takes
//! five rows of degree 3 ([`crate::gates::PoseidonLowDegreeGate`]).
//!
//! The choice is made per circuit by its width and degree bound, so a wide circuit (a recursive
//! verifier, every aggregation and wrap layer) is gate for gate what `PoseidonGoldilocksConfig`
//! builds, with the same digests; and a narrow circuit computes the same hashes. A recursive verifier of a narrow
//! proof hashes that proof's public inputs with `PoseidonGate`: the permutation is one function,
//! whatever rows it occupies.
//!
//! Natively, while [`verify_proof_parallel`] verifies a proof, the hasher answers from a memo of
//! that proof's Merkle hashes computed beforehand on all cores ([`merkle_memo`]).

use plonky2::field::extension::quadratic::QuadraticExtension;
use plonky2::field::extension::Extendable;
use plonky2::gates::gate::Gate;
use plonky2::gates::poseidon::PoseidonGate;
use plonky2::hash::hash_types::{HashOut, RichField};
use plonky2::hash::hashing::PlonkyPermutation;
use plonky2::hash::poseidon::{PoseidonHash, PoseidonPermutation, SPONGE_WIDTH};
use plonky2::iop::target::{BoolTarget, Target};
use plonky2::plonk::circuit_builder::CircuitBuilder;
use plonky2::plonk::config::{AlgebraicHasher, GenericConfig, Hasher};

mod merkle_memo;

pub use merkle_memo::verify_proof_parallel;

use crate::gates::{low_degree_rows, permute_low_degree_rows, permute_rows, PoseidonHeadGate, PoseidonTailGate};
use crate::F;

/// plonky2's Poseidon hash; in a circuit narrower than `PoseidonGate`, two narrow rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TgridPoseidonHash;

impl Hasher<F> for TgridPoseidonHash {
    const HASH_SIZE: usize = <PoseidonHash as Hasher<F>>::HASH_SIZE;
    type Hash = HashOut<F>;
    type Permutation = PoseidonPermutation<F>;

    fn hash_no_pad(input: &[F]) -> Self::Hash {
        merkle_memo::memoized_leaf(input).unwrap_or_else(|| PoseidonHash::hash_no_pad(input))
    }

    fn two_to_one(left: Self::Hash, right: Self::Hash) -> Self::Hash {
        merkle_memo::memoized_node(left, right).unwrap_or_else(|| PoseidonHash::two_to_one(left, right))
    }
}

impl AlgebraicHasher<F> for TgridPoseidonHash {
    type AlgebraicPermutation = PoseidonPermutation<Target>;

    fn permute_swapped<const D: usize>(
        inputs: Self::AlgebraicPermutation,
        swap: BoolTarget,
        builder: &mut CircuitBuilder<F, D>,
    ) -> Self::AlgebraicPermutation
    where
        F: RichField + Extendable<D>,
    {
        // A degree-7 gate needs a quotient degree factor of 7 or more (FRI rate 1/8).
        let degree_seven = builder.config.max_quotient_degree_factor >= 7;
        if degree_seven && builder.config.num_wires >= PoseidonGate::<F, D>::new().num_wires() {
            return <PoseidonHash as AlgebraicHasher<F>>::permute_swapped(inputs, swap, builder);
        }
        let mut state: [Target; SPONGE_WIDTH] =
            inputs.as_ref().try_into().expect("a Poseidon state has SPONGE_WIDTH elements");
        // `PoseidonGate` swaps the two four-element halves of the rate when `swap` is set (a
        // Merkle path step); sponges pass the constant false, which needs nothing.
        if swap.target != builder._false().target {
            for i in 0..4 {
                let (left, right) = (state[i], state[i + 4]);
                state[i] = builder.select(swap, right, left);
                state[i + 4] = builder.select(swap, left, right);
            }
        }
        let out = if degree_seven {
            permute_rows(builder, state, PoseidonHeadGate::default(), PoseidonTailGate::default())
        } else {
            permute_low_degree_rows(builder, state, low_degree_rows())
        };
        PoseidonPermutation::new(out)
    }
}

/// plonky2's `PoseidonGoldilocksConfig` with [`TgridPoseidonHash`]: the same proofs and digests
/// for wide circuits, and narrow task circuits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TgridPoseidonConfig;

impl GenericConfig<2> for TgridPoseidonConfig {
    type F = F;
    type FE = QuadraticExtension<F>;
    type Hasher = TgridPoseidonHash;
    type InnerHasher = TgridPoseidonHash;
}

/// plonky2 configuration of every circuit: Poseidon over Goldilocks, narrow in task circuits
/// ([`TgridPoseidonConfig`]).
pub type C = TgridPoseidonConfig;
