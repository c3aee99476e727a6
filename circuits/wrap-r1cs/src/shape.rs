//! [`ProofShape`]: the lengths of every part of a proof, from the `CommonCircuitData` alone, as
//! plonky2's own shape validation (`plonk/validate_shape.rs`, `fri/validate_shape.rs`) computes
//! them.

use plonky2::fri::oracle::SALT_SIZE;
use plonky2::plonk::circuit_builder::NUM_COINS_LOOKUP;

use crate::{Error, FinalCommon, FinalProof, Result};

/// Whether each initial FRI oracle is blinded (salted when `hiding`): constants/sigmas, wires,
/// Z/partial products, quotient. plonky2 keeps `PlonkOracle::blinding` crate-private; these are
/// its 1.1.0 values (`plonk/plonk_common.rs`).
const ORACLE_BLINDING: [bool; 4] = [false, true, true, true];

/// The shape of a final-layer proof. Two proofs of one circuit always have the same shape, so
/// the R1CS built from it is fixed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProofShape {
    /// Public inputs.
    pub num_public_inputs: usize,
    /// Hashes per Merkle cap (`2^cap_height`).
    pub cap_len: usize,
    /// `num_challenges` (β, γ, α, Z polynomials).
    pub num_challenges: usize,
    /// Constant polynomials opened at ζ.
    pub num_constants: usize,
    /// Sigma polynomials opened at ζ (= routed wires).
    pub num_sigmas: usize,
    /// Wires opened at ζ.
    pub num_wires: usize,
    /// Partial-product polynomials opened at ζ (all challenges).
    pub num_partial_products: usize,
    /// Quotient chunks opened at ζ.
    pub num_quotient_polys: usize,
    /// Lookup polynomials opened at ζ and at g·ζ (all challenges; 0 without lookups).
    pub num_lookup_polys: usize,
    /// Lookup challenges δ (0 without lookups).
    pub num_deltas: usize,
    /// Leaf length of each initial oracle (salt included when hiding).
    pub initial_leaf_lens: Vec<usize>,
    /// Siblings of each initial Merkle path (`lde_bits − cap_height`).
    pub initial_path_len: usize,
    /// log2 of each FRI reduction's arity.
    pub arity_bits: Vec<usize>,
    /// Siblings of each FRI step's Merkle path.
    pub step_path_lens: Vec<usize>,
    /// Coefficients of the final polynomial.
    pub final_poly_len: usize,
    /// FRI query rounds.
    pub num_query_rounds: usize,
    /// log2 of the LDE size: bits of a query index.
    pub lde_bits: usize,
    /// Grinding bits.
    pub proof_of_work_bits: u32,
}

impl ProofShape {
    /// The shape prescribed by `common`; an error for configurations this verifier does not
    /// handle (inconsistent FRI parameters, a cap taller than the tree, grinding above 64 bits).
    pub fn from_common(common: &FinalCommon) -> Result<Self> {
        let config = &common.config;
        let fri = &common.fri_params;
        // `get_challenges` takes the query count and rate from `config.fri_config` but the
        // observed parameters from `fri_params.config`; they are clones of one another.
        if fri.config != config.fri_config {
            return Err(Error::Unsupported("fri_params.config differs from config.fri_config".into()));
        }
        let cap_height = fri.config.cap_height;
        let lde_bits = common.degree_bits() + fri.config.rate_bits;
        let initial_path_len = lde_bits
            .checked_sub(cap_height)
            .ok_or_else(|| Error::Unsupported(format!("cap height {cap_height} above LDE bits {lde_bits}")))?;
        let mut codeword_bits = lde_bits;
        let mut step_path_lens = Vec::with_capacity(fri.reduction_arity_bits.len());
        for &bits in &fri.reduction_arity_bits {
            codeword_bits = codeword_bits
                .checked_sub(bits)
                .filter(|&c| c >= cap_height)
                .ok_or_else(|| Error::Unsupported("FRI reductions exceed the LDE".into()))?;
            step_path_lens.push(codeword_bits - cap_height);
        }
        let final_poly_bits = common
            .degree_bits()
            .checked_sub(fri.total_arities())
            .ok_or_else(|| Error::Unsupported("FRI reductions exceed the degree".into()))?;
        // Query indices are read off a challenge's 64 bits.
        if lde_bits > 64 {
            return Err(Error::Unsupported(format!("{lde_bits} LDE bits")));
        }
        if fri.config.proof_of_work_bits > 64 {
            return Err(Error::Unsupported("more than 64 bits of grinding".into()));
        }

        let num_challenges = config.num_challenges;
        let num_zs_partial_products = num_challenges * (1 + common.num_partial_products);
        let num_lookup_polys = num_challenges * common.num_lookup_polys;
        let num_quotient_polys = num_challenges * common.quotient_degree_factor;
        let salt = |i: usize| if ORACLE_BLINDING[i] && fri.hiding { SALT_SIZE } else { 0 };
        let initial_leaf_lens = vec![
            common.num_constants + config.num_routed_wires + salt(0),
            config.num_wires + salt(1),
            num_zs_partial_products + num_lookup_polys + salt(2),
            num_quotient_polys + salt(3),
        ];
        Ok(Self {
            num_public_inputs: common.num_public_inputs,
            cap_len: 1 << cap_height,
            num_challenges,
            num_constants: common.num_constants,
            num_sigmas: config.num_routed_wires,
            num_wires: config.num_wires,
            num_partial_products: num_challenges * common.num_partial_products,
            num_quotient_polys,
            num_lookup_polys,
            num_deltas: if common.num_lookup_polys != 0 { NUM_COINS_LOOKUP * num_challenges } else { 0 },
            initial_leaf_lens,
            initial_path_len,
            arity_bits: fri.reduction_arity_bits.clone(),
            step_path_lens,
            final_poly_len: 1 << final_poly_bits,
            num_query_rounds: config.fri_config.num_query_rounds,
            lde_bits,
            proof_of_work_bits: fri.config.proof_of_work_bits,
        })
    }

    /// Extension elements observed after ζ (the two opening batches of `to_fri_openings`).
    pub fn num_openings(&self) -> usize {
        self.num_constants
            + self.num_sigmas
            + self.num_wires
            + 2 * self.num_challenges
            + self.num_partial_products
            + self.num_quotient_polys
            + 2 * self.num_lookup_polys
    }

    /// Checks every length of `proof` against this shape (what plonky2's crate-private
    /// `validate_*_shape` check): [`Error::Shape`] names the first part that differs.
    pub fn check(&self, proof: &FinalProof) -> Result<()> {
        let shape = self;
        fn eq(what: impl FnOnce() -> String, expected: usize, got: usize) -> Result<()> {
            if expected == got {
                Ok(())
            } else {
                Err(Error::Shape { what: what(), expected, got })
            }
        }
        let p = &proof.proof;
        eq(|| "public inputs".into(), shape.num_public_inputs, proof.public_inputs.len())?;
        eq(|| "wires cap".into(), shape.cap_len, p.wires_cap.0.len())?;
        eq(|| "zs/partial products cap".into(), shape.cap_len, p.plonk_zs_partial_products_cap.0.len())?;
        eq(|| "quotient cap".into(), shape.cap_len, p.quotient_polys_cap.0.len())?;

        let o = &p.openings;
        for (what, expected, got) in [
            ("constants", shape.num_constants, o.constants.len()),
            ("plonk_sigmas", shape.num_sigmas, o.plonk_sigmas.len()),
            ("wires", shape.num_wires, o.wires.len()),
            ("plonk_zs", shape.num_challenges, o.plonk_zs.len()),
            ("plonk_zs_next", shape.num_challenges, o.plonk_zs_next.len()),
            ("partial_products", shape.num_partial_products, o.partial_products.len()),
            ("quotient_polys", shape.num_quotient_polys, o.quotient_polys.len()),
            ("lookup_zs", shape.num_lookup_polys, o.lookup_zs.len()),
            ("lookup_zs_next", shape.num_lookup_polys, o.lookup_zs_next.len()),
        ] {
            eq(|| format!("openings.{what}"), expected, got)?;
        }

        let fri = &p.opening_proof;
        eq(|| "commit-phase caps".into(), shape.arity_bits.len(), fri.commit_phase_merkle_caps.len())?;
        for (s, cap) in fri.commit_phase_merkle_caps.iter().enumerate() {
            eq(|| format!("commit-phase cap {s}"), shape.cap_len, cap.0.len())?;
        }
        eq(|| "query rounds".into(), shape.num_query_rounds, fri.query_round_proofs.len())?;
        for (q, round) in fri.query_round_proofs.iter().enumerate() {
            let trees = &round.initial_trees_proof.evals_proofs;
            eq(|| format!("query {q} initial trees"), shape.initial_leaf_lens.len(), trees.len())?;
            for (t, ((leaf, path), &leaf_len)) in trees.iter().zip(&shape.initial_leaf_lens).enumerate() {
                eq(|| format!("query {q} tree {t} leaf"), leaf_len, leaf.len())?;
                eq(|| format!("query {q} tree {t} siblings"), shape.initial_path_len, path.siblings.len())?;
            }
            eq(|| format!("query {q} steps"), shape.arity_bits.len(), round.steps.len())?;
            for (s, (step, (&bits, &path_len))) in
                round.steps.iter().zip(shape.arity_bits.iter().zip(&shape.step_path_lens)).enumerate()
            {
                eq(|| format!("query {q} step {s} evaluations"), 1 << bits, step.evals.len())?;
                eq(|| format!("query {q} step {s} siblings"), path_len, step.merkle_proof.siblings.len())?;
            }
        }
        eq(|| "final polynomial".into(), shape.final_poly_len, fri.final_poly.coeffs.len())
    }
}
