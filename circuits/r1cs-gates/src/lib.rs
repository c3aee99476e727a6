#![doc = r#"
plonky2 1.1.0 gate constraints evaluated at the opening point ζ, in BN254 R1CS (arkworks 0.6),
for the Groth16 wrapper's check of the vanishing identity.

[`eval_gate_unfiltered`] returns exactly the values of plonky2's
`gate.0.eval_unfiltered(EvaluationVars { local_constants, local_wires, public_inputs_hash })`
(same order, same count) as [`GoldilocksExtVar`]s, for the 13 gates of plonky2's standard
recursion configuration. Gates are identified by downcasting `gate.0.as_any()`; any other gate
type is an [`Error::UnsupportedGate`], never an empty constraint list.

The results are lazily reduced (bounds below 2^215, see the table): the caller reduces or
combines them as it needs. Inputs may be any tracked values; the counts below are for canonical
wire and constant openings (as allocated from a proof).

# Constraint counts (measured by `tests::counts`, gates as in `standard_recursion_config`)

| gate | plonky2 constraints | R1CS constraints | largest result bound (bits) |
|---|---|---|---|
| `NoopGate` | 0 | 0 | – |
| `ConstantGate { num_consts: 2 }` | 2 | 0 | 65 |
| `PublicInputGate` | 4 | 0 | 65 |
| `ArithmeticGate { num_ops: 20 }` | 20 | 180 | 203 |
| `ArithmeticExtensionGate { num_ops: 10 }` | 20 | 210 | 207 |
| `MulExtensionGate { num_ops: 13 }` | 26 | 195 | 206 |
| `BaseSumGate<2> { num_limbs: 63 }` | 64 | 189 | 134 |
| `ReducingGate { num_coeffs: 43 }` | 86 | 387 | 138 |
| `ReducingExtensionGate { num_coeffs: 32 }` | 64 | 288 | 138 |
| `RandomAccessGate { bits: 4, num_copies: 4, num_extra_constants: 2 }` | 26 | 5,276 | 208 |
| `PoseidonMdsGate` | 24 | 0 | 76 |
| `PoseidonGate` | 123 | 73,951 | 214 |
| `CosetInterpolationGate { subgroup_bits: 4, degree: 6 }` | 12 | 4,149 | 211 |

All 13 together: 84,825 constraints per evaluation point.

Almost all of it is reductions (≈ `bits − 63 + 66` constraints per reduced Goldilocks value), not
products: `PoseidonGate` has 118 S-boxes `x^7` over GF(p²), each needing `x²` and `x³` reduced
(~550 constraints), and 34 of them (the last first-half full round and the partial rounds,
whose outputs meet 64-bit constants) also `x⁴` (~820). `RandomAccessGate` folds 16 items with
4 index bits that are arbitrary extension elements at ζ, so the fold's degree-5 terms need the
last two levels' differences reduced (~1,300 per copy).

# Cost design

* GF(p²) and algebra products use Karatsuba (3 and 9 constraints instead of 4 and 16); operands
  are reduced up front only when a product could overflow the gadgets' 252-bit bound, and a
  value used in several products is reduced once, not per use.
* `PoseidonGate` keeps the state as constant linear forms over the S-box outputs (see
  `poseidon.rs`), so the 64-bit constants of plonky2's fast partial rounds cost nothing.
* `CosetInterpolationGate` evaluates each chunk's barycentric recurrence in closed form over
  precomputed powers of the evaluation point (see `coset.rs`).

# Tests

Per gate: random extension openings (and one with 0, −1, (−1, −1) entries) equal plonky2's
`eval_unfiltered` element for element in a satisfied system; satisfying rows (by hand in the
extension, or filled by plonky2's own generators for Poseidon and coset interpolation) give
zeros; results enforced equal to another opening's values, or with one value off by one, leave
the system unsatisfied. Every gate of a real recursion circuit (a verifier of a standard
proof) is supported; an unsupported gate, short inputs and malformed parameters are errors.
"#]

mod arith;
mod coset;
mod poseidon;
mod simple;

#[cfg(test)]
mod tests;

use ark_relations::gr1cs::SynthesisError;
use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::gates::arithmetic_base::ArithmeticGate;
use plonky2::gates::arithmetic_extension::ArithmeticExtensionGate;
use plonky2::gates::base_sum::BaseSumGate;
use plonky2::gates::constant::ConstantGate;
use plonky2::gates::coset_interpolation::CosetInterpolationGate;
use plonky2::gates::gate::GateRef;
use plonky2::gates::multiplication_extension::MulExtensionGate;
use plonky2::gates::noop::NoopGate;
use plonky2::gates::poseidon::PoseidonGate;
use plonky2::gates::poseidon_mds::PoseidonMdsGate;
use plonky2::gates::public_input::PublicInputGate;
use plonky2::gates::random_access::RandomAccessGate;
use plonky2::gates::reducing::ReducingGate;
use plonky2::gates::reducing_extension::ReducingExtensionGate;
pub use tgrid_r1cs_goldilocks::{GoldilocksExtVar, GoldilocksVar};

type F = GoldilocksField;

/// Why a gate could not be evaluated.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The gate is not one of the 13 gates of the standard recursion configuration (its id).
    #[error("unsupported gate: {0}")]
    UnsupportedGate(String),
    /// Fewer wires or constants than the gate reads.
    #[error("gate {gate}: {what} has {got} elements, the gate reads {needed}")]
    TooFewInputs {
        /// The gate's id.
        gate: String,
        /// `"local_wires"` or `"local_constants"`.
        what: &'static str,
        /// How many the gate reads.
        needed: usize,
        /// How many were given.
        got: usize,
    },
    /// The gate's parameters are outside what plonky2 can build (e.g. a deserialized gate with
    /// inconsistent fields).
    #[error("gate {gate}: malformed parameters ({why})")]
    MalformedGate {
        /// The gate's id.
        gate: String,
        /// What is wrong.
        why: &'static str,
    },
    /// The constraint system failed.
    #[error("constraint synthesis: {0}")]
    Synthesis(#[from] SynthesisError),
}

/// Largest `RandomAccessGate::bits` accepted (plonky2 builds 4 in the standard configuration).
const MAX_RANDOM_ACCESS_BITS: usize = 16;
/// Largest `CosetInterpolationGate::subgroup_bits` accepted (FRI arities up to 2^10).
const MAX_COSET_BITS: usize = 10;

/// Evaluates `gate`'s unfiltered constraints at one point, in R1CS: the same values, in the same
/// order, as plonky2's `gate.0.eval_unfiltered(EvaluationVars { local_constants, local_wires,
/// public_inputs_hash })`.
///
/// `local_constants` are the constant openings after the selector prefix (as plonky2 passes
/// them), `local_wires` the wire openings; both may be longer than the gate reads.
///
/// # Errors
/// [`Error::UnsupportedGate`] for a gate outside the standard recursion set,
/// [`Error::TooFewInputs`] / [`Error::MalformedGate`] for inputs or parameters the gate cannot be
/// evaluated on, [`Error::Synthesis`] if the constraint system fails.
pub fn eval_gate_unfiltered(
    gate: &GateRef<F, 2>,
    local_constants: &[GoldilocksExtVar],
    local_wires: &[GoldilocksExtVar],
    public_inputs_hash: &[GoldilocksVar; 4],
) -> Result<Vec<GoldilocksExtVar>, Error> {
    let any = gate.0.as_any();
    let id = || gate.0.id();
    let need = |wires: usize, consts: usize| -> Result<(), Error> {
        if local_wires.len() < wires {
            return Err(Error::TooFewInputs { gate: id(), what: "local_wires", needed: wires, got: local_wires.len() });
        }
        if local_constants.len() < consts {
            return Err(Error::TooFewInputs {
                gate: id(),
                what: "local_constants",
                needed: consts,
                got: local_constants.len(),
            });
        }
        Ok(())
    };
    let (c, w) = (local_constants, local_wires);

    if any.is::<NoopGate>() {
        return Ok(Vec::new());
    }
    if any.is::<ConstantGate>() {
        // `num_consts` is crate-private in plonky2; it is the gate's constraint count.
        let n = gate.0.num_constraints();
        need(n, n)?;
        return Ok(simple::constant(n, c, w)?);
    }
    if any.is::<PublicInputGate>() {
        need(4, 0)?;
        return Ok(simple::public_input(w, public_inputs_hash)?);
    }
    if let Some(g) = any.downcast_ref::<ArithmeticGate>() {
        need(4 * g.num_ops, 2)?;
        return Ok(simple::arithmetic(g.num_ops, c, w)?);
    }
    if let Some(g) = any.downcast_ref::<ArithmeticExtensionGate<2>>() {
        need(8 * g.num_ops, 2)?;
        return Ok(simple::arithmetic_extension(g.num_ops, c, w)?);
    }
    if let Some(g) = any.downcast_ref::<MulExtensionGate<2>>() {
        need(6 * g.num_ops, 1)?;
        return Ok(simple::mul_extension(g.num_ops, c, w)?);
    }
    if let Some(g) = any.downcast_ref::<BaseSumGate<2>>() {
        need(1 + g.num_limbs, 0)?;
        return Ok(simple::base_sum_2(g.num_limbs, w)?);
    }
    if let Some(g) = any.downcast_ref::<ReducingGate<2>>() {
        if g.num_coeffs == 0 {
            // plonky2 evaluates no constraint (and reads nothing) for an empty reduction.
            return Ok(Vec::new());
        }
        need(simple::reducing_wires(g.num_coeffs, false), 0)?;
        return Ok(simple::reducing(g.num_coeffs, false, w)?);
    }
    if let Some(g) = any.downcast_ref::<ReducingExtensionGate<2>>() {
        if g.num_coeffs == 0 {
            return Ok(Vec::new());
        }
        need(simple::reducing_wires(g.num_coeffs, true), 0)?;
        return Ok(simple::reducing(g.num_coeffs, true, w)?);
    }
    if let Some(g) = any.downcast_ref::<RandomAccessGate<F, 2>>() {
        if g.bits > MAX_RANDOM_ACCESS_BITS || g.num_copies > 1 << 16 || g.num_extra_constants > 1 << 16 {
            return Err(Error::MalformedGate { gate: id(), why: "RandomAccessGate parameters too large" });
        }
        let layout = simple::RandomAccessLayout {
            bits: g.bits,
            num_copies: g.num_copies,
            num_extra_constants: g.num_extra_constants,
        };
        need(layout.num_wires(), g.num_extra_constants)?;
        return Ok(simple::random_access(&layout, c, w)?);
    }
    if any.is::<PoseidonMdsGate<F, 2>>() {
        need(4 * plonky2::hash::poseidon::SPONGE_WIDTH, 0)?;
        return Ok(simple::poseidon_mds(w)?);
    }
    if any.is::<PoseidonGate<F, 2>>() {
        need(poseidon::NUM_WIRES, 0)?;
        return Ok(poseidon::poseidon(w)?);
    }
    if let Some(g) = any.downcast_ref::<CosetInterpolationGate<F, 2>>() {
        let malformed = |why| Err(Error::MalformedGate { gate: id(), why });
        if g.subgroup_bits == 0 || g.subgroup_bits > MAX_COSET_BITS {
            return malformed("subgroup_bits must be in 1..=10");
        }
        let layout =
            coset::CosetLayout { subgroup_bits: g.subgroup_bits, degree: g.degree, weights: &g.barycentric_weights };
        if g.degree < 2 || g.degree > layout.num_points() {
            return malformed("degree must be in 2..=2^subgroup_bits");
        }
        if g.barycentric_weights.len() != layout.num_points() {
            return malformed("one barycentric weight per point");
        }
        let Some(chunks) = layout.chunks() else {
            return malformed("interpolation chunks do not cover the domain");
        };
        need(layout.num_wires(), 0)?;
        return Ok(coset::coset_interpolation(&layout, &chunks, w)?);
    }
    Err(Error::UnsupportedGate(id()))
}
