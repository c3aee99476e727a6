//! The outer hasher of the final (Groth16-wrapped) plonky2 layer: Merkle trees, the circuit
//! digest AND the Fiat-Shamir transcript (plonky2 1.1's challenger runs on
//! `C::Hasher::Permutation`) use Poseidon over the BN254 scalar field, so the wrapper checks
//! them natively in R1CS. Encodings (docs/wrap.md):
//!
//! - A hash is one `Fr`. plonky2 sees it as 5 Goldilocks limbs of 56, 56, 56, 56 and 30 bits of
//!   its canonical integer: injective, and every limb is a canonical Goldilocks element.
//! - Goldilocks values enter `Fr` three at a time, `g0 + 2^64·g1 + 2^128·g2` (canonical, so
//!   < 2^192 < r and injective).
//! - The duplex (challenger) shows plonky2 9 Goldilocks values = the low 192 bits of the 3 rate
//!   elements of a width-4 permutation; the capacity `state[0]` is never exposed.

use core::fmt;

use ark_bn254::Fr;
use ark_ff::{AdditiveGroup, BigInteger, PrimeField};
use plonky2::field::extension::quadratic::QuadraticExtension;
use plonky2::field::goldilocks_field::GoldilocksField;
use plonky2::field::types::{Field as _, PrimeField64};
use plonky2::hash::hashing::PlonkyPermutation;
use plonky2::hash::poseidon::PoseidonHash;
use plonky2::plonk::config::{GenericConfig, GenericHashOut, Hasher};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::params::{POSEIDON_T3, POSEIDON_T4};

type F = GoldilocksField;

/// Goldilocks values per `Fr` when absorbing.
pub const PACK: usize = 3;
/// Goldilocks values the duplex shows plonky2 (3 rate elements × 3).
pub const RATE: usize = 9;
/// Bit widths of the limbs of [`Bn254HashOut::to_vec`], least significant first.
pub const HASH_LIMB_BITS: [u32; 5] = [56, 56, 56, 56, 30];

/// Capacity tag of the Fiat-Shamir duplex.
pub const DOMAIN_CHALLENGER: u64 = 1;
/// Capacity tag of `hash_no_pad` sponges (Merkle leaves, circuit digest).
pub const DOMAIN_SPONGE: u64 = 2;
/// `state[0]` of the width-3 two-to-one compression.
pub const DOMAIN_NODE: u64 = 3;

/// A BN254-Poseidon hash: one canonical `Fr`.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Default)]
pub struct Bn254HashOut(pub Fr);

impl fmt::Debug for Bn254HashOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bn254HashOut({})", self.0)
    }
}

impl Bn254HashOut {
    /// The canonical 32-byte little-endian form.
    pub fn to_le_bytes(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        out.copy_from_slice(&self.0.into_bigint().to_bytes_le());
        out
    }

    /// Parses the canonical form; `None` when the integer is not below the field modulus.
    pub fn from_le_bytes(bytes: &[u8; 32]) -> Option<Self> {
        let mut limbs = [0u64; 4];
        for (limb, chunk) in limbs.iter_mut().zip(bytes.chunks_exact(8)) {
            *limb = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        }
        Fr::from_bigint(ark_ff::BigInt(limbs)).map(Self)
    }

    /// The five Goldilocks limbs plonky2 observes and flattens (see [`HASH_LIMB_BITS`]).
    pub fn limbs(&self) -> [u64; 5] {
        let bits = self.0.into_bigint().to_bits_le();
        let mut out = [0u64; 5];
        let mut at = 0usize;
        for (limb, width) in out.iter_mut().zip(HASH_LIMB_BITS) {
            for i in 0..width as usize {
                if bits.get(at + i).copied().unwrap_or(false) {
                    *limb |= 1 << i;
                }
            }
            at += width as usize;
        }
        out
    }
}

impl GenericHashOut<F> for Bn254HashOut {
    fn to_bytes(&self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }

    /// plonky2's trait cannot fail: callers decoding untrusted proofs validate the bytes first
    /// (`from_le_bytes`); a non-canonical or short encoding here panics.
    fn from_bytes(bytes: &[u8]) -> Self {
        let bytes: &[u8; 32] = bytes.try_into().expect("a BN254 hash is 32 bytes");
        Self::from_le_bytes(bytes).expect("non-canonical BN254 hash")
    }

    fn to_vec(&self) -> Vec<F> {
        self.limbs().iter().map(|&l| F::from_canonical_u64(l)).collect()
    }
}

impl Serialize for Bn254HashOut {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_le_bytes().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Bn254HashOut {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bytes = <[u8; 32]>::deserialize(d)?;
        Self::from_le_bytes(&bytes).ok_or_else(|| serde::de::Error::custom("non-canonical BN254 hash"))
    }
}

/// Packs up to three Goldilocks values into one `Fr` (missing values are zero).
pub fn pack(values: &[F]) -> Fr {
    debug_assert!(values.len() <= PACK);
    let mut limbs = [0u64; 4];
    for (limb, v) in limbs.iter_mut().zip(values) {
        *limb = v.to_canonical_u64();
    }
    Fr::from_bigint(ark_ff::BigInt(limbs)).expect("< 2^192 is below the modulus")
}

/// The three Goldilocks values read off a rate element: its low 192 bits as 64-bit limbs,
/// each reduced mod p (the top 62 bits are dropped).
pub fn unpack(x: Fr) -> [F; PACK] {
    let limbs = x.into_bigint().0;
    [0, 1, 2].map(|i| F::from_noncanonical_u64(limbs[i]))
}

/// Sponge over the width-4 permutation: 9 Goldilocks values (3 packed `Fr`) overwrite the rate
/// per permutation; the output is rate element 0. Fixed-length inputs only, as plonky2's own
/// `hash_no_pad`. The empty input still permutes once.
pub fn sponge(input: &[F]) -> Fr {
    let mut state = [Fr::from(DOMAIN_SPONGE), Fr::ZERO, Fr::ZERO, Fr::ZERO];
    let mut chunks = input.chunks(RATE).peekable();
    if chunks.peek().is_none() {
        POSEIDON_T4.permute(&mut state);
    }
    for chunk in chunks {
        for (j, slot) in state[1..].iter_mut().enumerate() {
            let lo = (j * PACK).min(chunk.len());
            let hi = ((j + 1) * PACK).min(chunk.len());
            *slot = pack(&chunk[lo..hi]);
        }
        POSEIDON_T4.permute(&mut state);
    }
    state[1]
}

/// Two-to-one compression: width-3 permutation of `[DOMAIN_NODE, left, right]`, element 0.
pub fn compress(left: Fr, right: Fr) -> Fr {
    let mut state = [Fr::from(DOMAIN_NODE), left, right];
    POSEIDON_T3.permute(&mut state);
    state[0]
}

/// The Fiat-Shamir duplex as plonky2 sees it: 9 Goldilocks values; the width-4 state's capacity
/// stays hidden and keeps its full 254 bits between duplexes.
#[derive(Copy, Clone, PartialEq, Eq)]
pub struct Bn254Duplex {
    rate: [F; RATE],
    capacity: Fr,
}

impl fmt::Debug for Bn254Duplex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bn254Duplex").field("rate", &self.rate).field("capacity", &self.capacity.to_string()).finish()
    }
}

impl Default for Bn254Duplex {
    fn default() -> Self {
        Self { rate: [F::ZERO; RATE], capacity: Fr::from(DOMAIN_CHALLENGER) }
    }
}

impl Bn254Duplex {
    /// The hidden capacity element (for the R1CS replay).
    pub fn capacity(&self) -> Fr {
        self.capacity
    }
}

impl AsRef<[F]> for Bn254Duplex {
    fn as_ref(&self) -> &[F] {
        &self.rate
    }
}

impl PlonkyPermutation<F> for Bn254Duplex {
    const RATE: usize = RATE;
    const WIDTH: usize = RATE;

    fn new<I: IntoIterator<Item = F>>(elts: I) -> Self {
        let mut perm = Self::default();
        perm.set_from_iter(elts, 0);
        perm
    }

    fn set_elt(&mut self, elt: F, idx: usize) {
        self.rate[idx] = elt;
    }

    fn set_from_slice(&mut self, elts: &[F], start_idx: usize) {
        self.rate[start_idx..start_idx + elts.len()].copy_from_slice(elts);
    }

    fn set_from_iter<I: IntoIterator<Item = F>>(&mut self, elts: I, start_idx: usize) {
        for (slot, e) in self.rate[start_idx..].iter_mut().zip(elts) {
            *slot = e;
        }
    }

    fn permute(&mut self) {
        let mut state = [self.capacity, Fr::ZERO, Fr::ZERO, Fr::ZERO];
        for (slot, chunk) in state[1..].iter_mut().zip(self.rate.chunks(PACK)) {
            *slot = pack(chunk);
        }
        POSEIDON_T4.permute(&mut state);
        self.capacity = state[0];
        for (chunk, x) in self.rate.chunks_mut(PACK).zip(&state[1..]) {
            chunk.copy_from_slice(&unpack(*x));
        }
    }

    fn squeeze(&self) -> &[F] {
        &self.rate
    }
}

/// plonky2's outer hasher over BN254 Poseidon.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Bn254PoseidonHash;

impl Hasher<F> for Bn254PoseidonHash {
    const HASH_SIZE: usize = 32;
    type Hash = Bn254HashOut;
    type Permutation = Bn254Duplex;

    fn hash_no_pad(input: &[F]) -> Self::Hash {
        Bn254HashOut(sponge(input))
    }

    /// Always hashes: the default would reinterpret four 64-bit values as a 256-bit integer,
    /// which may exceed the BN254 modulus.
    fn hash_or_noop(inputs: &[F]) -> Self::Hash {
        Self::hash_no_pad(inputs)
    }

    fn two_to_one(left: Self::Hash, right: Self::Hash) -> Self::Hash {
        Bn254HashOut(compress(left.0, right.0))
    }
}

/// The final layer's configuration: Goldilocks arithmetic, BN254-Poseidon Merkle trees and
/// transcript; the public-input hash stays Goldilocks Poseidon (`InnerHasher`). A proof of this
/// configuration cannot be verified inside plonky2 (the outer hasher is not algebraic): it is the
/// last layer, verified by the Groth16 wrapper.
#[derive(Debug, Copy, Clone, Default, Eq, PartialEq)]
pub struct PoseidonBn254GoldilocksConfig;

impl GenericConfig<2> for PoseidonBn254GoldilocksConfig {
    type F = F;
    type FE = QuadraticExtension<F>;
    type Hasher = Bn254PoseidonHash;
    type InnerHasher = PoseidonHash;
}

#[cfg(test)]
mod tests {
    use ark_ff::UniformRand;
    use plonky2::field::types::Sample;
    use plonky2::iop::challenger::Challenger;
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn limbs_are_injective_and_canonical() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        for _ in 0..100 {
            let h = Bn254HashOut(Fr::rand(&mut rng));
            let limbs = h.limbs();
            for (l, w) in limbs.iter().zip(HASH_LIMB_BITS) {
                assert!(*l < 1 << w);
            }
            // Recombine: the limbs are the integer's bits, in order.
            let mut acc = Fr::ZERO;
            for (l, w) in limbs.iter().zip(HASH_LIMB_BITS).rev() {
                acc = acc * Fr::from(1u64 << w) + Fr::from(*l);
            }
            assert_eq!(acc, h.0);
            assert_eq!(Bn254HashOut::from_bytes(&h.to_bytes()), h);
        }
    }

    #[test]
    fn non_canonical_bytes_are_rejected() {
        assert!(Bn254HashOut::from_le_bytes(&[0xff; 32]).is_none());
        let json = serde_json_bytes(&[0xff; 32]);
        assert!(serde_json_from::<Bn254HashOut>(&json).is_err());
    }

    fn serde_json_bytes(b: &[u8; 32]) -> String {
        format!("[{}]", b.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","))
    }

    fn serde_json_from<T: for<'de> Deserialize<'de>>(s: &str) -> Result<T, String> {
        // A minimal JSON array reader keeps serde_json out of this crate's dependencies.
        let bytes: Vec<u8> = s.trim_matches(['[', ']']).split(',').map(|x| x.parse().unwrap()).collect();
        let de = serde::de::value::SeqDeserializer::<_, serde::de::value::Error>::new(bytes.into_iter());
        T::deserialize(de).map_err(|e| e.to_string())
    }

    #[test]
    fn pack_unpack_round_trip() {
        let v = [F::NEG_ONE, F::from_canonical_u64(7), F::from_canonical_u64(u32::MAX as u64)];
        assert_eq!(unpack(pack(&v)), v);
    }

    #[test]
    fn sponge_separates_lengths_across_chunks_and_order() {
        let v: Vec<F> = F::rand_vec(20);
        assert_ne!(sponge(&v), sponge(&v[..19]));
        assert_ne!(sponge(&v[..9]), sponge(&v[..10]));
        let mut w = v.clone();
        w.swap(0, 1);
        assert_ne!(sponge(&v), sponge(&w));
        assert_ne!(compress(Fr::from(1u64), Fr::from(2u64)), compress(Fr::from(2u64), Fr::from(1u64)));
    }

    /// plonky2's challenger runs on our duplex; its outputs are the unpacked rate, popped from
    /// the end, and they depend on everything observed.
    #[test]
    fn challenger_runs_on_the_duplex() {
        let mut a = Challenger::<F, Bn254PoseidonHash>::new();
        let mut b = Challenger::<F, Bn254PoseidonHash>::new();
        a.observe_elements(&[F::ONE, F::TWO]);
        b.observe_elements(&[F::ONE, F::TWO + F::ONE]);
        let ca = a.get_n_challenges(10);
        assert_ne!(ca, b.get_n_challenges(10));

        let mut d = Bn254Duplex::default();
        d.set_from_slice(&[F::ONE, F::TWO], 0);
        d.permute();
        let expected: Vec<F> = d.squeeze().iter().rev().copied().collect();
        assert_eq!(ca[..9], expected[..]);
    }
}
