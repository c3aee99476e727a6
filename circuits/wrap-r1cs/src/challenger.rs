//! [`ChallengerVar`]: plonky2 1.1.0's `Challenger<F, Bn254PoseidonHash>` (`iop/challenger.rs`)
//! over `Bn254Duplex` (`tgrid_poseidon_bn254::hasher`), mirrored in R1CS.
//!
//! The native duplex shows plonky2 nine Goldilocks values, `unpack` of the three rate elements
//! of a width-4 Poseidon state, and packs them back (`pack`) before each permutation. Here the
//! state is the capacity `Fr` and, per rate element, either the permutation's raw output `Fr`
//! or its three unpacked canonical values. An output is unpacked (328 constraints) only when a
//! challenge reads it or when it survives into the next duplex (not overwritten by inputs), the
//! two cases where the native code uses the unpacked values. Buffers follow the native rules:
//!
//! - inputs are buffered; a duplex happens when 9 are pending, or on a challenge request with
//!   pending inputs or no outputs left;
//! - a duplex overwrites rate positions `0..k` with the `k` pending inputs (the rest of the
//!   previous output stays) and refills the output buffer with all 9 rate values;
//! - challenges are popped from the end of the output buffer; observing clears it.
//!
//! Constants fold: a duplex whose inputs and state are constants costs nothing.

use ark_bn254::Fr;
use ark_r1cs_std::fields::fp::FpVar;
use ark_r1cs_std::fields::FieldVar;
use ark_r1cs_std::GR1CSVar;
use tgrid_poseidon_bn254::hasher::{DOMAIN_CHALLENGER, PACK, RATE};
use tgrid_poseidon_bn254::POSEIDON_T4;
use tgrid_r1cs_goldilocks::{hash_limbs, pack3, unpack_rate, GoldilocksExtVar, GoldilocksVar};

use crate::{Error, Result};

/// One rate element of the duplex state.
#[derive(Clone, Debug)]
enum Slot {
    /// A permutation output not unpacked yet.
    Packed(FpVar<Fr>),
    /// The three Goldilocks values plonky2 sees (canonical).
    Values([GoldilocksVar; PACK]),
}

/// Counters of the work a [`ChallengerVar`] did (constant-folded work excluded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChallengerStats {
    /// Duplexes, constant ones included.
    pub duplexes: usize,
    /// Duplexes with a non-constant state (one Poseidon t=4 permutation each).
    pub witness_duplexes: usize,
    /// Non-constant rate elements unpacked (`unpack_rate`).
    pub unpacks: usize,
    /// Non-constant hashes observed (`hash_limbs`).
    pub hashes: usize,
}

/// plonky2's Fiat-Shamir challenger over the BN254 duplex, in R1CS.
#[derive(Clone, Debug)]
pub struct ChallengerVar {
    capacity: FpVar<Fr>,
    rate: [Slot; RATE / PACK],
    input_buffer: Vec<GoldilocksVar>,
    /// The output buffer is always the prefix `0..output_len` of the current rate (it is filled
    /// by a duplex and only shrinks until the next one).
    output_len: usize,
    stats: ChallengerStats,
}

impl Default for ChallengerVar {
    fn default() -> Self {
        Self::new()
    }
}

impl ChallengerVar {
    /// A fresh challenger: the state of `Challenger::new()` (rate zero, capacity
    /// `DOMAIN_CHALLENGER`), as constants.
    pub fn new() -> Self {
        let zeros = || Slot::Values([GoldilocksVar::zero(), GoldilocksVar::zero(), GoldilocksVar::zero()]);
        Self {
            capacity: FpVar::Constant(Fr::from(DOMAIN_CHALLENGER)),
            rate: [zeros(), zeros(), zeros()],
            input_buffer: Vec::with_capacity(RATE),
            output_len: 0,
            stats: ChallengerStats::default(),
        }
    }

    /// What this challenger has cost so far.
    pub fn stats(&self) -> ChallengerStats {
        self.stats
    }

    /// Observes a canonical value. [`Error::NotCanonical`] for a value not known to be below p
    /// (e.g. a 64-bit range-checked one): its packing would not be injective.
    pub fn observe_element(&mut self, x: &GoldilocksVar) -> Result<()> {
        if !x.is_canonical() {
            return Err(Error::NotCanonical);
        }
        // Pending outputs no longer reflect the transcript.
        self.output_len = 0;
        self.input_buffer.push(x.clone());
        if self.input_buffer.len() == RATE {
            self.duplex()?;
        }
        Ok(())
    }

    /// Observes canonical values in order.
    pub fn observe_elements<'a>(&mut self, xs: impl IntoIterator<Item = &'a GoldilocksVar>) -> Result<()> {
        xs.into_iter().try_for_each(|x| self.observe_element(x))
    }

    /// Observes an extension element as its two components.
    pub fn observe_extension_element(&mut self, x: &GoldilocksExtVar) -> Result<()> {
        self.observe_elements(&x.0)
    }

    /// Observes extension elements in order.
    pub fn observe_extension_elements<'a>(&mut self, xs: impl IntoIterator<Item = &'a GoldilocksExtVar>) -> Result<()> {
        xs.into_iter().try_for_each(|x| self.observe_extension_element(x))
    }

    /// Observes a BN254-Poseidon hash as plonky2 does (`observe_hash` → `to_vec`): its five
    /// limbs of 56, 56, 56, 56 and 30 bits (316 constraints; free for a constant).
    pub fn observe_hash(&mut self, h: &FpVar<Fr>) -> Result<()> {
        if !h.is_constant() {
            self.stats.hashes += 1;
        }
        let limbs = hash_limbs(h)?;
        self.observe_elements(&limbs)
    }

    /// Observes a Merkle cap, hash by hash.
    pub fn observe_cap<'a>(&mut self, cap: impl IntoIterator<Item = &'a FpVar<Fr>>) -> Result<()> {
        cap.into_iter().try_for_each(|h| self.observe_hash(h))
    }

    /// The next challenge (canonical, with its bits available for free).
    pub fn get_challenge(&mut self) -> Result<GoldilocksVar> {
        if !self.input_buffer.is_empty() || self.output_len == 0 {
            self.duplex()?;
        }
        self.output_len -= 1;
        self.rate_value(self.output_len)
    }

    /// The next `n` challenges.
    pub fn get_n_challenges(&mut self, n: usize) -> Result<Vec<GoldilocksVar>> {
        (0..n).map(|_| self.get_challenge()).collect()
    }

    /// An extension challenge: two challenges, the first one is the constant coefficient.
    pub fn get_extension_challenge(&mut self) -> Result<GoldilocksExtVar> {
        let c0 = self.get_challenge()?;
        let c1 = self.get_challenge()?;
        Ok(GoldilocksExtVar([c0, c1]))
    }

    /// Rate value `i` as plonky2 sees it, unpacking its rate element on first use.
    fn rate_value(&mut self, i: usize) -> Result<GoldilocksVar> {
        let slot = &mut self.rate[i / PACK];
        let values = match slot {
            Slot::Values(v) => return Ok(v[i % PACK].clone()),
            Slot::Packed(x) => {
                if !x.is_constant() {
                    self.stats.unpacks += 1;
                }
                unpack_rate(x)?
            }
        };
        let out = values[i % PACK].clone();
        *slot = Slot::Values(values);
        Ok(out)
    }

    /// `Challenger::duplexing`: overwrite rate positions `0..k` with the pending inputs, pack
    /// all 9 rate values, permute, and make the 9 new rate values the outputs.
    fn duplex(&mut self) -> Result<()> {
        let inputs = std::mem::take(&mut self.input_buffer);
        debug_assert!(inputs.len() <= RATE);
        let mut state = [self.capacity.clone(), FpVar::zero(), FpVar::zero(), FpVar::zero()];
        for (j, packed) in state[1..].iter_mut().enumerate() {
            let values = (j * PACK..(j + 1) * PACK)
                .map(|i| match inputs.get(i) {
                    Some(x) => Ok(x.clone()),
                    // Not overwritten: the native code re-packs the unpacked value.
                    None => self.rate_value(i),
                })
                .collect::<Result<Vec<_>>>()?;
            *packed = pack3(&values)?;
        }
        POSEIDON_T4.permute_var(&mut state)?;
        let [capacity, r0, r1, r2] = state;
        self.stats.duplexes += 1;
        if !capacity.is_constant() {
            self.stats.witness_duplexes += 1;
        }
        self.capacity = capacity;
        self.rate = [Slot::Packed(r0), Slot::Packed(r1), Slot::Packed(r2)];
        self.output_len = RATE;
        Ok(())
    }
}
