//! [`ProofVar`]: a final-layer proof as R1CS witnesses, with the encodings of WRAP_NOTES §1.4.
//!
//! - Hashes (caps, Merkle siblings) are single `FpVar<Fr>` (a BN254-Poseidon hash is one `Fr`);
//!   they cost nothing here, observing one costs its canonical decomposition (`hash_limbs`).
//! - Values the transcript absorbs or the verifier computes with (public inputs, openings,
//!   final polynomial, PoW witness) and the FRI step evaluations are canonical Goldilocks
//!   values (65 constraints each): canonicity makes the packing into `Fr` injective, so a prover
//!   cannot re-encode `v` as `v + p` to steer the transcript.
//! - Initial-tree leaf values only get a 64-bit range check (64 constraints): the Merkle
//!   commitment binds the integers, and `v` and `v + p` stand for the same field element.

use ark_bn254::Fr;
use ark_r1cs_std::alloc::AllocVar;
use ark_r1cs_std::fields::fp::FpVar;
use ark_relations::gr1cs::{ConstraintSystemRef, Namespace, SynthesisError};
use plonky2::field::types::PrimeField64;
use plonky2::plonk::proof::{OpeningSet, Proof};
use tgrid_poseidon_bn254::{Bn254HashOut, PoseidonBn254GoldilocksConfig};
use tgrid_r1cs_goldilocks::{GoldilocksExt, GoldilocksExtVar, GoldilocksVar};

use crate::shape::ProofShape;
use crate::{FinalCommon, FinalProof, Result, D, F};

type InnerProof = Proof<F, PoseidonBn254GoldilocksConfig, D>;

/// The openings at ζ and g·ζ (`OpeningSet`), canonical.
#[derive(Clone, Debug)]
pub struct OpeningSetVar {
    /// Constant polynomials at ζ.
    pub constants: Vec<GoldilocksExtVar>,
    /// Sigma polynomials at ζ.
    pub plonk_sigmas: Vec<GoldilocksExtVar>,
    /// Wires at ζ.
    pub wires: Vec<GoldilocksExtVar>,
    /// Z polynomials at ζ.
    pub plonk_zs: Vec<GoldilocksExtVar>,
    /// Z polynomials at g·ζ.
    pub plonk_zs_next: Vec<GoldilocksExtVar>,
    /// Partial products at ζ.
    pub partial_products: Vec<GoldilocksExtVar>,
    /// Quotient chunks at ζ.
    pub quotient_polys: Vec<GoldilocksExtVar>,
    /// Lookup polynomials at ζ (empty without lookups).
    pub lookup_zs: Vec<GoldilocksExtVar>,
    /// Lookup polynomials at g·ζ (empty without lookups).
    pub lookup_zs_next: Vec<GoldilocksExtVar>,
}

impl OpeningSetVar {
    /// The values opened at ζ, in the order of plonky2's `OpeningSet::to_fri_openings`.
    pub fn zeta_batch(&self) -> impl Iterator<Item = &GoldilocksExtVar> {
        self.constants
            .iter()
            .chain(&self.plonk_sigmas)
            .chain(&self.wires)
            .chain(&self.plonk_zs)
            .chain(&self.partial_products)
            .chain(&self.quotient_polys)
            .chain(&self.lookup_zs)
    }

    /// The values opened at g·ζ, in the order of `to_fri_openings`.
    pub fn zeta_next_batch(&self) -> impl Iterator<Item = &GoldilocksExtVar> {
        self.plonk_zs_next.iter().chain(&self.lookup_zs_next)
    }
}

/// One initial oracle's opening in a query round: the leaf and its Merkle path.
#[derive(Clone, Debug)]
pub struct InitialTreeVar {
    /// The leaf values (64-bit range-checked, not necessarily canonical).
    pub leaf: Vec<GoldilocksVar>,
    /// Merkle siblings, from the leaf up to the cap.
    pub siblings: Vec<FpVar<Fr>>,
}

/// One FRI reduction step of a query round.
#[derive(Clone, Debug)]
pub struct FriQueryStepVar {
    /// The coset evaluations (`arity` canonical extension values).
    pub evals: Vec<GoldilocksExtVar>,
    /// Merkle siblings, from the leaf up to the cap.
    pub siblings: Vec<FpVar<Fr>>,
}

/// One FRI query round.
#[derive(Clone, Debug)]
pub struct FriQueryRoundVar {
    /// Openings of the four initial oracles (constants/sigmas, wires, Z/partial products,
    /// quotient).
    pub initial_trees: Vec<InitialTreeVar>,
    /// One entry per FRI reduction.
    pub steps: Vec<FriQueryStepVar>,
}

/// A final-layer proof with its public inputs, allocated as witnesses.
#[derive(Clone, Debug)]
pub struct ProofVar {
    shape: ProofShape,
    /// Public inputs (canonical).
    pub public_inputs: Vec<GoldilocksVar>,
    /// Cap of the wires tree.
    pub wires_cap: Vec<FpVar<Fr>>,
    /// Cap of the Z / partial-products (/ lookup) tree.
    pub plonk_zs_partial_products_cap: Vec<FpVar<Fr>>,
    /// Cap of the quotient tree.
    pub quotient_polys_cap: Vec<FpVar<Fr>>,
    /// Openings at ζ and g·ζ.
    pub openings: OpeningSetVar,
    /// Caps of the FRI commit phase, one per reduction.
    pub commit_phase_merkle_caps: Vec<Vec<FpVar<Fr>>>,
    /// FRI query rounds.
    pub query_round_proofs: Vec<FriQueryRoundVar>,
    /// Coefficients of the final polynomial (canonical).
    pub final_poly: Vec<GoldilocksExtVar>,
    /// Grinding witness (canonical).
    pub pow_witness: GoldilocksVar,
}

impl ProofVar {
    /// Allocates `proof` with the shape `common` prescribes. `proof` is `None` to synthesize
    /// without values (Groth16 setup mode); the constraints do not depend on it.
    ///
    /// A proof whose lengths differ from the shape is rejected with [`Error::Shape`](crate::Error::Shape) before
    /// anything is allocated.
    pub fn new_witness(cs: impl Into<Namespace<Fr>>, proof: Option<&FinalProof>, common: &FinalCommon) -> Result<Self> {
        let cs = cs.into().cs();
        let shape = ProofShape::from_common(common)?;
        if let Some(p) = proof {
            shape.check(p)?;
        }
        let inner = proof.map(|p| &p.proof);

        let public_inputs = (0..shape.num_public_inputs)
            .map(|i| canonical(&cs, proof.map(|p| p.public_inputs[i])))
            .collect::<Result<Vec<_>>>()?;
        let cap = |get: fn(&InnerProof) -> &[Bn254HashOut]| hashes(&cs, shape.cap_len, |i| inner.map(|p| get(p)[i]));
        let wires_cap = cap(|p| &p.wires_cap.0)?;
        let plonk_zs_partial_products_cap = cap(|p| &p.plonk_zs_partial_products_cap.0)?;
        let quotient_polys_cap = cap(|p| &p.quotient_polys_cap.0)?;

        let opening = |n: usize, get: fn(&OpeningSet<F, D>) -> &[GoldilocksExt]| {
            exts(&cs, n, |i| inner.map(|p| get(&p.openings)[i]))
        };
        let openings = OpeningSetVar {
            constants: opening(shape.num_constants, |o| &o.constants)?,
            plonk_sigmas: opening(shape.num_sigmas, |o| &o.plonk_sigmas)?,
            wires: opening(shape.num_wires, |o| &o.wires)?,
            plonk_zs: opening(shape.num_challenges, |o| &o.plonk_zs)?,
            plonk_zs_next: opening(shape.num_challenges, |o| &o.plonk_zs_next)?,
            partial_products: opening(shape.num_partial_products, |o| &o.partial_products)?,
            quotient_polys: opening(shape.num_quotient_polys, |o| &o.quotient_polys)?,
            lookup_zs: opening(shape.num_lookup_polys, |o| &o.lookup_zs)?,
            lookup_zs_next: opening(shape.num_lookup_polys, |o| &o.lookup_zs_next)?,
        };

        let fri = inner.map(|p| &p.opening_proof);
        let commit_phase_merkle_caps = (0..shape.arity_bits.len())
            .map(|s| hashes(&cs, shape.cap_len, |i| fri.map(|f| f.commit_phase_merkle_caps[s].0[i])))
            .collect::<Result<Vec<_>>>()?;

        let mut query_round_proofs = Vec::with_capacity(shape.num_query_rounds);
        for q in 0..shape.num_query_rounds {
            let round = fri.map(|f| &f.query_round_proofs[q]);
            let mut initial_trees = Vec::with_capacity(shape.initial_leaf_lens.len());
            for (t, &leaf_len) in shape.initial_leaf_lens.iter().enumerate() {
                let tree = round.map(|r| &r.initial_trees_proof.evals_proofs[t]);
                let leaf = (0..leaf_len)
                    .map(|i| {
                        let v = tree.map(|t| t.0[i].to_canonical_u64());
                        Ok(GoldilocksVar::new_witness_u64(cs.clone(), || value(v))?)
                    })
                    .collect::<Result<Vec<_>>>()?;
                let siblings = hashes(&cs, shape.initial_path_len, |i| tree.map(|t| t.1.siblings[i]))?;
                initial_trees.push(InitialTreeVar { leaf, siblings });
            }
            let mut steps = Vec::with_capacity(shape.arity_bits.len());
            for (s, (&bits, &path_len)) in shape.arity_bits.iter().zip(&shape.step_path_lens).enumerate() {
                let step = round.map(|r| &r.steps[s]);
                let evals = exts(&cs, 1 << bits, |i| step.map(|st| st.evals[i]))?;
                let siblings = hashes(&cs, path_len, |i| step.map(|st| st.merkle_proof.siblings[i]))?;
                steps.push(FriQueryStepVar { evals, siblings });
            }
            query_round_proofs.push(FriQueryRoundVar { initial_trees, steps });
        }

        let final_poly = exts(&cs, shape.final_poly_len, |i| fri.map(|f| f.final_poly.coeffs[i]))?;
        let pow_witness = canonical(&cs, fri.map(|f| f.pow_witness))?;

        Ok(Self {
            shape,
            public_inputs,
            wires_cap,
            plonk_zs_partial_products_cap,
            quotient_polys_cap,
            openings,
            commit_phase_merkle_caps,
            query_round_proofs,
            final_poly,
            pow_witness,
        })
    }

    /// The shape this proof was allocated with.
    pub fn shape(&self) -> &ProofShape {
        &self.shape
    }
}

fn value<T>(v: Option<T>) -> std::result::Result<T, SynthesisError> {
    v.ok_or(SynthesisError::AssignmentMissing)
}

fn canonical(cs: &ConstraintSystemRef<Fr>, v: Option<F>) -> Result<GoldilocksVar> {
    Ok(GoldilocksVar::new_witness_canonical(cs.clone(), || value(v))?)
}

fn exts(
    cs: &ConstraintSystemRef<Fr>,
    n: usize,
    get: impl Fn(usize) -> Option<GoldilocksExt>,
) -> Result<Vec<GoldilocksExtVar>> {
    (0..n).map(|i| Ok(GoldilocksExtVar::new_witness_canonical(cs.clone(), || value(get(i)))?)).collect()
}

fn hashes(
    cs: &ConstraintSystemRef<Fr>,
    n: usize,
    get: impl Fn(usize) -> Option<Bn254HashOut>,
) -> Result<Vec<FpVar<Fr>>> {
    (0..n).map(|i| Ok(FpVar::new_witness(cs.clone(), || value(get(i)).map(|h| h.0))?)).collect()
}
