//! The PLONK identity at ζ, in R1CS: plonky2 1.1's `eval_vanishing_poly` (gate constraints
//! under their selector filters, `L₀(ζ)·(Z(ζ) − 1)`, the permutation argument's partial
//! products), combined with the α challenges, must equal `Z_H(ζ) · t(ζ)` with the quotient
//! `t(ζ)` rebuilt from its chunks, for every challenge round. Lookup arguments are refused:
//! the final layer has no lookup tables.

use std::ops::Range;

use ark_relations::gr1cs::SynthesisError;
use plonky2::field::extension::FieldExtension;
use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::field::types::Field;
use plonky2::gates::gate::GateRef;
use plonky2::plonk::circuit_data::CommonCircuitData;
use tgrid_r1cs_goldilocks::{GoldilocksExt, GoldilocksExtVar, GoldilocksVar};

type F = GoldilocksField;

/// plonky2's marker for "no gate in this selector group" (`gates/selectors.rs`, crate-private
/// there; pinned by a test).
pub const UNUSED_SELECTOR: u64 = u32::MAX as u64;

/// Why the identity cannot be checked.
#[derive(Debug, thiserror::Error)]
pub enum VanishingError {
    /// The circuit shape is not one this verifier handles.
    #[error("unsupported circuit: {0}")]
    Unsupported(String),
    /// The openings do not have the circuit's lengths.
    #[error("openings do not fit the circuit: {0}")]
    Shape(String),
    /// Constraint synthesis failed.
    #[error(transparent)]
    Synthesis(#[from] SynthesisError),
}

impl From<VanishingError> for crate::Error {
    fn from(e: VanishingError) -> Self {
        match e {
            VanishingError::Synthesis(e) => crate::Error::Synthesis(e),
            other => crate::Error::Unsupported(other.to_string()),
        }
    }
}

/// The opened values at ζ (and `Z` at g·ζ) that the identity reads, as allocated witnesses.
pub struct Openings<'a> {
    /// Constant polynomials (selectors first).
    pub constants: &'a [GoldilocksExtVar],
    /// σ polynomials of the routed wires.
    pub plonk_sigmas: &'a [GoldilocksExtVar],
    /// Wires.
    pub wires: &'a [GoldilocksExtVar],
    /// `Z_i(ζ)`, one per challenge round.
    pub plonk_zs: &'a [GoldilocksExtVar],
    /// `Z_i(g·ζ)`.
    pub plonk_zs_next: &'a [GoldilocksExtVar],
    /// Partial products, `num_partial_products` per challenge round.
    pub partial_products: &'a [GoldilocksExtVar],
    /// Quotient chunks, `quotient_degree_factor` per challenge round.
    pub quotient_polys: &'a [GoldilocksExtVar],
}

impl<'a> Openings<'a> {
    /// The openings of an allocated proof.
    pub fn of(set: &'a crate::OpeningSetVar) -> Self {
        Self {
            constants: &set.constants,
            plonk_sigmas: &set.plonk_sigmas,
            wires: &set.wires,
            plonk_zs: &set.plonk_zs,
            plonk_zs_next: &set.plonk_zs_next,
            partial_products: &set.partial_products,
            quotient_polys: &set.quotient_polys,
        }
    }
}

/// The PLONK challenges (from the transcript replay).
pub struct Challenges<'a> {
    /// Permutation β, one per round.
    pub betas: &'a [GoldilocksVar],
    /// Permutation γ, one per round.
    pub gammas: &'a [GoldilocksVar],
    /// Constraint combination α, one per round.
    pub alphas: &'a [GoldilocksVar],
    /// The opening point ζ (canonical).
    pub zeta: &'a GoldilocksExtVar,
}

impl<'a> Challenges<'a> {
    /// The PLONK challenges of a replayed transcript.
    pub fn of(c: &'a crate::ChallengesVar) -> Self {
        Self { betas: &c.plonk_betas, gammas: &c.plonk_gammas, alphas: &c.plonk_alphas, zeta: &c.plonk_zeta }
    }
}

/// Evaluates one gate's unfiltered constraints from the constants (selectors removed), the
/// wires and the public-inputs hash.
pub type GateEvaluator<'a> = dyn Fn(
        &GateRef<F, 2>,
        &[GoldilocksExtVar],
        &[GoldilocksExtVar],
        &[GoldilocksVar; 4],
    ) -> Result<Vec<GoldilocksExtVar>, VanishingError>
    + 'a;

/// Selector layout, read through `CommonCircuitData`'s serde form (its fields are
/// crate-private in plonky2 1.1).
struct Selectors {
    indices: Vec<usize>,
    groups: Vec<Range<usize>>,
}

fn selectors(common: &CommonCircuitData<F, 2>) -> Result<Selectors, VanishingError> {
    let bad = |m: &str| VanishingError::Unsupported(format!("selectors: {m}"));
    let json = serde_json::to_value(&common.selectors_info).map_err(|e| bad(&e.to_string()))?;
    let indices = json["selector_indices"]
        .as_array()
        .ok_or_else(|| bad("no selector_indices"))?
        .iter()
        .map(|v| v.as_u64().map(|x| x as usize).ok_or_else(|| bad("index")))
        .collect::<Result<Vec<_>, _>>()?;
    let groups = json["groups"]
        .as_array()
        .ok_or_else(|| bad("no groups"))?
        .iter()
        .map(|g| match (g["start"].as_u64(), g["end"].as_u64()) {
            (Some(s), Some(e)) if s <= e => Ok(s as usize..e as usize),
            _ => Err(bad("group")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if indices.len() != common.gates.len() || indices.iter().any(|&i| i >= groups.len()) {
        return Err(bad("indices do not fit the gates"));
    }
    Ok(Selectors { indices, groups })
}

fn ext_const(x: u64) -> GoldilocksExtVar {
    GoldilocksExtVar::constant(GoldilocksExt::from_canonical_u64(x))
}

fn product(items: &[GoldilocksExtVar]) -> Result<GoldilocksExtVar, SynthesisError> {
    let mut acc = GoldilocksExtVar::one();
    for x in items {
        acc = acc.mul(x)?;
    }
    Ok(acc)
}

/// `Σ terms[j]·α^j` by Horner's rule (plonky2's `reduce_with_powers`).
fn reduce_with_powers(terms: &[GoldilocksExtVar], alpha: &GoldilocksVar) -> Result<GoldilocksExtVar, SynthesisError> {
    let mut acc = GoldilocksExtVar::zero();
    for t in terms.iter().rev() {
        acc = acc.scalar_mul(alpha)?.add(t)?;
    }
    Ok(acc)
}

fn reduce_with_ext_powers(
    terms: &[GoldilocksExtVar],
    alpha: &GoldilocksExtVar,
) -> Result<GoldilocksExtVar, SynthesisError> {
    let mut acc = GoldilocksExtVar::zero();
    for t in terms.iter().rev() {
        acc = acc.mul(alpha)?.add(t)?;
    }
    Ok(acc)
}

fn check_lengths(common: &CommonCircuitData<F, 2>, o: &Openings<'_>, c: &Challenges<'_>) -> Result<(), VanishingError> {
    let rounds = common.config.num_challenges;
    let expect = [
        ("constants", o.constants.len(), common.num_constants),
        ("plonk_sigmas", o.plonk_sigmas.len(), common.config.num_routed_wires),
        ("wires", o.wires.len(), common.config.num_wires),
        ("plonk_zs", o.plonk_zs.len(), rounds),
        ("plonk_zs_next", o.plonk_zs_next.len(), rounds),
        ("partial_products", o.partial_products.len(), rounds * common.num_partial_products),
        ("quotient_polys", o.quotient_polys.len(), rounds * common.quotient_degree_factor),
        ("betas", c.betas.len(), rounds),
        ("gammas", c.gammas.len(), rounds),
        ("alphas", c.alphas.len(), rounds),
    ];
    for (what, got, want) in expect {
        if got != want {
            return Err(VanishingError::Shape(format!("{got} {what}, expected {want}")));
        }
    }
    if common.num_lookup_polys != 0 || common.num_lookup_selectors != 0 {
        return Err(VanishingError::Unsupported("lookup arguments".into()));
    }
    Ok(())
}

/// Enforces the PLONK identity at ζ for every challenge round.
pub fn enforce_vanishing_identity(
    common: &CommonCircuitData<F, 2>,
    openings: &Openings<'_>,
    challenges: &Challenges<'_>,
    public_inputs_hash: &[GoldilocksVar; 4],
    eval_gate: &GateEvaluator<'_>,
) -> Result<(), VanishingError> {
    check_lengths(common, openings, challenges)?;
    let sel = selectors(common)?;
    let num_selectors = sel.groups.len();
    let zeta = challenges.zeta;

    // Gate constraints, each under its selector filter, summed per constraint index.
    let mut constraints = vec![GoldilocksExtVar::zero(); common.num_gate_constraints];
    let unfiltered_constants = &openings.constants[num_selectors..];
    for (row, gate) in common.gates.iter().enumerate() {
        let index = sel.indices[row];
        let s = &openings.constants[index];
        let mut factors: Vec<GoldilocksExtVar> = sel.groups[index]
            .clone()
            .filter(|&i| i != row)
            .map(|i| ext_const(i as u64).sub(s))
            .collect::<Result<_, _>>()?;
        if num_selectors > 1 {
            factors.push(ext_const(UNUSED_SELECTOR).sub(s)?);
        }
        let filter = product(&factors)?.reduce()?;
        let values = eval_gate(gate, unfiltered_constants, openings.wires, public_inputs_hash)?;
        if values.len() > constraints.len() {
            return Err(VanishingError::Unsupported(format!(
                "gate {} has {} constraints, the circuit {}",
                gate.0.id(),
                values.len(),
                constraints.len()
            )));
        }
        for (acc, v) in constraints.iter_mut().zip(values) {
            *acc = acc.add(&filter.mul(&v)?)?;
        }
    }

    // ζ^n, Z_H(ζ) and L₀(ζ) = Z_H(ζ) / (n·(ζ − 1)).
    let mut zeta_n = zeta.clone();
    for _ in 0..common.degree_bits() {
        zeta_n = zeta_n.square()?.reduce()?;
    }
    let z_h = zeta_n.sub(&GoldilocksExtVar::one())?.reduce()?;
    let n = common.degree() as u64;
    let denominator = zeta.sub(&GoldilocksExtVar::one())?.mul_const(GoldilocksExt::from_canonical_u64(n))?;
    let l_0 = z_h.mul(&denominator.inverse()?)?.reduce()?;

    let max_degree = common.quotient_degree_factor;
    let num_prods = common.num_partial_products;
    let routed = common.config.num_routed_wires;
    let mut z_1_terms = Vec::new();
    let mut partial_product_terms = Vec::new();
    for i in 0..common.config.num_challenges {
        let (z_x, z_gx) = (&openings.plonk_zs[i], &openings.plonk_zs_next[i]);
        z_1_terms.push(l_0.mul(&z_x.sub(&GoldilocksExtVar::one())?)?);
        let gamma = GoldilocksExtVar::from_base(challenges.gammas[i].clone());
        let beta = &challenges.betas[i];
        let mut numerators = Vec::with_capacity(routed);
        let mut denominators = Vec::with_capacity(routed);
        for j in 0..routed {
            let wire = &openings.wires[j];
            let s_id = zeta.mul_const(<GoldilocksExt as FieldExtension<2>>::from_basefield(common.k_is[j]))?;
            numerators.push(wire.add(&s_id.scalar_mul(beta)?)?.add(&gamma)?.reduce()?);
            let s_sigma = &openings.plonk_sigmas[j];
            denominators.push(wire.add(&s_sigma.scalar_mul(beta)?)?.add(&gamma)?.reduce()?);
        }
        // Z(x), the partial products, Z(g·x): consecutive accumulators, one chunk of
        // `max_degree` factors between each pair.
        let mut accs = vec![z_x.clone()];
        accs.extend_from_slice(&openings.partial_products[i * num_prods..(i + 1) * num_prods]);
        accs.push(z_gx.clone());
        let chunks = numerators.chunks(max_degree).zip(denominators.chunks(max_degree));
        if chunks.len() + 1 != accs.len() {
            return Err(VanishingError::Unsupported("partial product count".into()));
        }
        for ((num, den), pair) in chunks.zip(accs.windows(2)) {
            let lhs = pair[0].mul(&product(num)?)?;
            let rhs = pair[1].mul(&product(den)?)?;
            partial_product_terms.push(lhs.sub(&rhs)?);
        }
    }
    let mut terms = z_1_terms;
    terms.extend(partial_product_terms);
    terms.extend(constraints);
    let terms: Vec<GoldilocksExtVar> = terms.iter().map(GoldilocksExtVar::reduce).collect::<Result<_, _>>()?;

    for (i, chunk) in openings.quotient_polys.chunks(max_degree).enumerate() {
        let vanishing = reduce_with_powers(&terms, &challenges.alphas[i])?;
        let quotient = reduce_with_ext_powers(chunk, &zeta_n)?;
        vanishing.enforce_equal(&z_h.mul(&quotient)?)?;
    }
    Ok(())
}
