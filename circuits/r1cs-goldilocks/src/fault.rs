//! Test-only fault injection. Each hint site asks [`on`] whether to perturb its witness while
//! keeping the claimed output (and, where possible, every linear relation) intact; the negative
//! tests then assert that the constraint kind meant to catch the forgery is the one that fails.
//! Outside `cfg(test)` [`on`] is a constant `false` and [`mark`] does nothing.

use ark_bn254::Fr;
use ark_relations::gr1cs::ConstraintSystemRef;

/// One way of forging a hint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Bit decompositions absorb any out-of-range excess into bit 0 (then non-boolean), so that
    /// every linear relation still holds for a value that does not fit.
    BitCarry,
    /// Bit decompositions of in-range values use `bit0 + 2`, `bit1 - 1` (same sum).
    BitNonBoolean,
    /// A canonical witness `v < 2^32 - 1` is allocated as its alias `v + p`.
    CanonicalAlias,
    /// The canonicity hint `w` is off by one.
    CanonicityHint,
    /// `reduce`: quotient − 1, remainder + p (a non-canonical remainder).
    ReduceQuotientDown,
    /// `reduce`: quotient + 1, remainder − p (negative; needs [`Fault::BitCarry`]).
    ReduceQuotientUp,
    /// `reduce`: remainder + 1, quotient kept.
    ReduceRemainder,
    /// `reduce`: a wrong canonical remainder with the quotient `(x − rem)/p` computed in `Fr`.
    ReduceFieldQuotient,
    /// `enforce_equal_mod_p`: quotient + 1.
    EqQuotient,
    /// `enforce_equal_mod_p`: quotient `d/p` computed in `Fr` (makes unequal values "pass").
    EqFieldQuotient,
    /// `inverse`: the hint is off by one.
    Inverse,
    /// `unpack_rate`: decompose the integer `x + r` instead of `x`.
    UnpackAlias,
    /// `unpack_rate`: flip the flag `b` of limb 0, keeping `L0 = g0 + b0·p`.
    UnpackFlag,
    /// `unpack_rate`: the flag hint `w` of limb 0 is off by one.
    UnpackFlagHint,
    /// `unpack_rate`: move 2^64 from limb 1 into limb 0 (`L0 ≥ 2^64`).
    UnpackLimbBorrow,
    /// `unpack_rate`: move 2^192 from `hi` into limb 2.
    UnpackHiBorrow,
    /// `hash_limbs`: decompose the integer `x + r` instead of `x`.
    HashAlias,
    /// Comparison with a constant: the running "prefix equal" product is off by one.
    CompareAnd,
}

#[cfg(test)]
thread_local! {
    static FAULTS: std::cell::RefCell<Vec<Fault>> = const { std::cell::RefCell::new(Vec::new()) };
    static MARKS: std::cell::RefCell<Vec<(usize, &'static str)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Whether `fault` is being injected (always `false` outside tests).
#[cfg(test)]
pub(crate) fn on(fault: Fault) -> bool {
    FAULTS.with(|f| f.borrow().contains(&fault))
}

#[cfg(not(test))]
#[inline(always)]
pub(crate) fn on(_: Fault) -> bool {
    false
}

/// Labels the constraints added from now on (test diagnostics; a no-op outside tests).
#[cfg(test)]
pub(crate) fn mark(cs: &ConstraintSystemRef<Fr>, label: &'static str) {
    let at = cs.num_constraints();
    MARKS.with(|m| m.borrow_mut().push((at, label)));
}

#[cfg(not(test))]
#[inline(always)]
pub(crate) fn mark(_: &ConstraintSystemRef<Fr>, _: &'static str) {}

/// Runs `f` with `faults` active (on this thread).
#[cfg(test)]
pub(crate) fn with<R>(faults: &[Fault], f: impl FnOnce() -> R) -> R {
    FAULTS.with(|a| *a.borrow_mut() = faults.to_vec());
    let out = f();
    FAULTS.with(|a| a.borrow_mut().clear());
    out
}

/// Forgets faults and constraint labels (call with a fresh constraint system).
#[cfg(test)]
pub(crate) fn reset() {
    MARKS.with(|m| m.borrow_mut().clear());
    FAULTS.with(|a| a.borrow_mut().clear());
}

/// The label of the constraint group that contains constraint `index`.
#[cfg(test)]
pub(crate) fn label_of(index: usize) -> Option<&'static str> {
    MARKS.with(|m| m.borrow().iter().rev().find(|(at, _)| *at <= index).map(|(_, l)| *l))
}
