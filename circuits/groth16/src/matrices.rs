//! The R1CS matrices of a circuit, built once and reused by every proof, and their byte
//! encoding (so a process can keep them on disk instead of synthesizing them at every start).

use std::collections::HashMap;

use ark_bn254::Fr;
use ark_relations::gr1cs::{
    ConstraintSynthesizer, ConstraintSystem, ConstraintSystemRef, Matrix, OptimizationGoal, SynthesisMode,
    R1CS_PREDICATE_LABEL,
};

use crate::error::{Error, Result};

mod encoding;

/// The R1CS matrices of one circuit (A, B, C in compressed sparse rows, coefficients interned),
/// made once from a setup-mode synthesis and reused by every proof of that circuit: a proof then
/// only computes its witness ([`crate::prove_with_matrices`]); [`to_bytes`](Self::to_bytes) and
/// [`from_bytes`](Self::from_bytes) keep them between runs. arkworks' own matrices (`Vec` rows of
/// `(Fr, usize)`, about 1.3 GB for the production wrap verifier, plus the symbolic linear
/// combinations they are built from) take about a fifth of that here.
pub struct R1csMatrices {
    pub(crate) num_constraints: usize,
    /// Instance variables, the constant one included.
    pub(crate) num_instance: usize,
    pub(crate) num_witness: usize,
    coefficients: Vec<Fr>,
    /// A, B, C.
    matrices: [SparseRows; 3],
    digest: [u8; 32],
}

/// Rows `offsets[i]..offsets[i + 1]` of `entries`: (column, index into the coefficients).
struct SparseRows {
    offsets: Vec<usize>,
    entries: Vec<(u32, u32)>,
}

impl std::fmt::Debug for R1csMatrices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("R1csMatrices")
            .field("constraints", &self.num_constraints)
            .field("instance_variables", &self.num_instance)
            .field("witness_variables", &self.num_witness)
            .field("nonzeros", &self.nonzeros())
            .field("coefficients", &self.coefficients.len())
            .field("heap_bytes", &self.heap_bytes())
            .finish()
    }
}

impl R1csMatrices {
    /// Synthesizes `circuit` in setup mode (no witness) and keeps its matrices.
    pub fn build<C: ConstraintSynthesizer<Fr>>(circuit: C) -> Result<Self> {
        let cs = constraint_system(SynthesisMode::Setup);
        circuit.generate_constraints(cs.clone())?;
        cs.finalize();
        Self::from_constraint_system(cs)
    }

    /// Takes the R1CS matrices of a finalized constraint system, then drops it.
    pub(crate) fn from_constraint_system(cs: ConstraintSystemRef<Fr>) -> Result<Self> {
        let mut all = cs.to_matrices()?;
        let (num_constraints, num_instance, num_witness) =
            (cs.num_constraints(), cs.num_instance_variables(), cs.num_witness_variables());
        drop(cs);
        let rows = all
            .remove(R1CS_PREDICATE_LABEL)
            .ok_or_else(|| Error::KeyMismatch("the circuit has no R1CS constraints".into()))?;
        let [a, b, c]: [Matrix<Fr>; 3] = rows
            .try_into()
            .map_err(|m: Vec<Matrix<Fr>>| Error::KeyMismatch(format!("{} R1CS matrices, not 3", m.len())))?;
        let num_variables = num_instance + num_witness;
        if num_variables > u32::MAX as usize {
            return Err(Error::KeyMismatch(format!("{num_variables} variables do not fit 32-bit columns")));
        }
        let mut interned: HashMap<Fr, u32> = HashMap::new();
        let mut coefficients = Vec::new();
        let mut compress = |matrix: Matrix<Fr>| -> Result<SparseRows> {
            let mut sparse = SparseRows { offsets: Vec::with_capacity(matrix.len() + 1), entries: Vec::new() };
            sparse.offsets.push(0);
            // Row by row, so arkworks' rows are freed as they are compressed.
            for row in matrix {
                for (coefficient, column) in row {
                    let next = coefficients.len();
                    let index = *interned.entry(coefficient).or_insert_with(|| {
                        coefficients.push(coefficient);
                        next as u32
                    });
                    if column >= num_variables {
                        return Err(Error::KeyMismatch(format!("column {column} of {num_variables} variables")));
                    }
                    sparse.entries.push((column as u32, index));
                }
                sparse.offsets.push(sparse.entries.len());
            }
            sparse.entries.shrink_to_fit();
            Ok(sparse)
        };
        let matrices = [compress(a)?, compress(b)?, compress(c)?];
        if matrices.iter().any(|m| m.offsets.len() != num_constraints + 1) {
            return Err(Error::KeyMismatch("matrix rows do not match the constraint count".into()));
        }
        let digest = digest(num_constraints, num_instance, num_witness, &coefficients, &matrices);
        Ok(Self { num_constraints, num_instance, num_witness, coefficients, matrices, digest })
    }

    /// SHA-256 of the sizes, the coefficient table and the three matrices: names the exact
    /// constraint system (a key cache keyed by it never serves a key of another circuit).
    pub fn digest(&self) -> [u8; 32] {
        self.digest
    }

    /// R1CS constraints.
    pub fn num_constraints(&self) -> usize {
        self.num_constraints
    }

    /// Nonzero entries of A, B and C together.
    pub fn nonzeros(&self) -> usize {
        self.matrices.iter().map(|m| m.entries.len()).sum()
    }

    /// Bytes these matrices hold on the heap.
    pub fn heap_bytes(&self) -> usize {
        let rows: usize = self
            .matrices
            .iter()
            .map(|m| m.offsets.capacity() * size_of::<usize>() + m.entries.capacity() * size_of::<(u32, u32)>())
            .sum();
        rows + self.coefficients.capacity() * size_of::<Fr>()
    }

    pub(crate) fn row_value(&self, matrix: usize, row: usize, z: &[Fr]) -> Fr {
        let m = &self.matrices[matrix];
        m.entries[m.offsets[row]..m.offsets[row + 1]]
            .iter()
            .map(|&(column, coefficient)| self.coefficients[coefficient as usize] * z[column as usize])
            .sum()
    }
}

fn digest(
    num_constraints: usize,
    num_instance: usize,
    num_witness: usize,
    coefficients: &[Fr],
    matrices: &[SparseRows; 3],
) -> [u8; 32] {
    use ark_ff::{BigInteger, PrimeField};
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"tgrid-r1cs-v1");
    for n in [num_constraints, num_instance, num_witness, coefficients.len()] {
        h.update((n as u64).to_le_bytes());
    }
    for c in coefficients {
        h.update(c.into_bigint().to_bytes_le());
    }
    // The same bytes as one update per number, fed in large blocks (tens of millions of
    // entries: the per-call overhead was most of the time).
    let mut block = Vec::with_capacity(1 << 16);
    let mut feed = |bytes: &[u8], h: &mut Sha256| {
        block.extend_from_slice(bytes);
        if block.len() >= (1 << 16) - 8 {
            h.update(&block);
            block.clear();
        }
    };
    for m in matrices {
        for &o in &m.offsets {
            feed(&(o as u64).to_le_bytes(), &mut h);
        }
        for &(column, coefficient) in &m.entries {
            feed(&column.to_le_bytes(), &mut h);
            feed(&coefficient.to_le_bytes(), &mut h);
        }
    }
    h.update(&block);
    h.finalize().into()
}

/// An empty constraint system in `mode`, optimized for fewest constraints (linear combinations
/// inlined, as Groth16 wants).
pub(crate) fn constraint_system(mode: SynthesisMode) -> ConstraintSystemRef<Fr> {
    let cs = ConstraintSystem::<Fr>::new_ref();
    cs.set_optimization_goal(OptimizationGoal::Constraints);
    cs.set_mode(mode);
    cs
}
