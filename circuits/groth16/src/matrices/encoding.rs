//! Byte encoding of [`R1csMatrices`]: `MAGIC ‖ constraints ‖ instance ‖ witness ‖ coefficient
//! count` (u64 LE each), the coefficients (32-byte canonical LE), then per matrix A, B, C its
//! entry count (u64), each row's length (u32) and the entries (column, coefficient index: u32
//! each), and the digest. Decoding checks every count against the bytes left before allocating,
//! every index against what it points into and recomputes the digest, so a damaged file is an
//! error, never a panic or matrices other than the encoded ones.

use ark_bn254::Fr;
use ark_ff::{BigInt, BigInteger, PrimeField};

use super::{digest, R1csMatrices, SparseRows};
use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"TGR1CS01";
const WHAT: &str = "R1CS matrices";

impl R1csMatrices {
    /// The matrices as bytes (about 8 bytes per nonzero entry).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(
            64 + self.coefficients.len() * 32 + (self.num_constraints * 3) * 4 + self.nonzeros() * 8 + 32,
        );
        out.extend_from_slice(MAGIC);
        for n in [self.num_constraints, self.num_instance, self.num_witness, self.coefficients.len()] {
            out.extend_from_slice(&(n as u64).to_le_bytes());
        }
        for c in &self.coefficients {
            out.extend_from_slice(&c.into_bigint().to_bytes_le());
        }
        for m in &self.matrices {
            out.extend_from_slice(&(m.entries.len() as u64).to_le_bytes());
            for row in m.offsets.windows(2) {
                let length = u32::try_from(row[1] - row[0])
                    .map_err(|_| Error::malformed(WHAT, "a row of 2^32 entries or more"))?;
                out.extend_from_slice(&length.to_le_bytes());
            }
            for &(column, coefficient) in &m.entries {
                out.extend_from_slice(&column.to_le_bytes());
                out.extend_from_slice(&coefficient.to_le_bytes());
            }
        }
        out.extend_from_slice(&self.digest);
        Ok(out)
    }

    /// Decodes [`to_bytes`](Self::to_bytes)' output, checking it in full (see the module docs).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader { bytes };
        if r.take(MAGIC.len())? != MAGIC {
            return Err(Error::malformed(WHAT, "not an R1CS matrices encoding"));
        }
        let num_constraints = r.count("constraints", 12)?;
        let num_instance = r.count("instance variables", 0)?;
        let num_witness = r.count("witness variables", 0)?;
        let num_variables = num_instance
            .checked_add(num_witness)
            .filter(|&n| num_instance >= 1 && n <= u32::MAX as usize)
            .ok_or_else(|| Error::malformed(WHAT, "variable counts out of range"))?;
        let num_coefficients = r.count("coefficients", 32)?;
        let mut coefficients = Vec::with_capacity(num_coefficients);
        for _ in 0..num_coefficients {
            let mut limbs = [0u64; 4];
            for (limb, chunk) in limbs.iter_mut().zip(r.take(32)?.chunks_exact(8)) {
                *limb = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            }
            coefficients.push(
                Fr::from_bigint(BigInt(limbs))
                    .ok_or_else(|| Error::malformed(WHAT, "a coefficient is not canonical"))?,
            );
        }
        let mut matrix = || -> Result<SparseRows> {
            let num_entries = r.count("entries", 8)?;
            let lengths = r.take(
                num_constraints.checked_mul(4).ok_or_else(|| Error::malformed(WHAT, "row count out of range"))?,
            )?;
            let mut offsets = Vec::with_capacity(num_constraints + 1);
            let mut offset = 0usize;
            offsets.push(0);
            for length in lengths.chunks_exact(4) {
                offset += u32::from_le_bytes(length.try_into().expect("4 bytes")) as usize;
                if offset > num_entries {
                    return Err(Error::malformed(WHAT, "rows hold more entries than declared"));
                }
                offsets.push(offset);
            }
            if offset != num_entries {
                return Err(Error::malformed(WHAT, "rows hold fewer entries than declared"));
            }
            let encoded =
                r.take(num_entries.checked_mul(8).ok_or_else(|| Error::malformed(WHAT, "entry count out of range"))?)?;
            let mut entries = Vec::with_capacity(num_entries);
            for entry in encoded.chunks_exact(8) {
                let column = u32::from_le_bytes(entry[..4].try_into().expect("4 bytes"));
                let coefficient = u32::from_le_bytes(entry[4..].try_into().expect("4 bytes"));
                if column as usize >= num_variables || coefficient as usize >= coefficients.len() {
                    return Err(Error::malformed(WHAT, "an entry points outside the variables or coefficients"));
                }
                entries.push((column, coefficient));
            }
            Ok(SparseRows { offsets, entries })
        };
        let matrices = [matrix()?, matrix()?, matrix()?];
        let stored: [u8; 32] = r.take(32)?.try_into().expect("32 bytes");
        if !r.bytes.is_empty() {
            return Err(Error::malformed(WHAT, format!("{} bytes after the end", r.bytes.len())));
        }
        if digest(num_constraints, num_instance, num_witness, &coefficients, &matrices) != stored {
            return Err(Error::malformed(WHAT, "the digest does not match the matrices"));
        }
        Ok(Self { num_constraints, num_instance, num_witness, coefficients, matrices, digest: stored })
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.bytes.len() {
            return Err(Error::malformed(WHAT, format!("truncated: {n} bytes wanted, {} left", self.bytes.len())));
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }

    /// A u64 count of items taking at least `min_bytes_each` later in the input: larger counts
    /// than the bytes left could hold are refused before anything is allocated for them.
    fn count(&mut self, what: &str, min_bytes_each: usize) -> Result<usize> {
        let n = u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes"));
        let n = usize::try_from(n).map_err(|_| Error::malformed(WHAT, format!("{what}: {n} is out of range")))?;
        if n.saturating_mul(min_bytes_each) > self.bytes.len() {
            return Err(Error::malformed(WHAT, format!("{what}: {n} do not fit the {} bytes left", self.bytes.len())));
        }
        Ok(n)
    }
}
