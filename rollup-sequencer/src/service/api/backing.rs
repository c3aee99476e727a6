//! Whether an order is backed: paid work the market can settle and dispute. The relay lists only
//! backed orders and records only acceptances a bond covers; a result is acknowledged only for a
//! backed order too, so nobody can make the sequencer store, prove and settle work at its own gas
//! by signing an order and its acceptance with two throwaway keys (issue 63).

use alloy::primitives::U256;
use tgrid_chain::bindings::ITaskMarket::{Bond, Book, Parameters};
use tgrid_chain::market::{Acceptance, Order};

use super::ApiError;
use crate::service::store::OrderRecord;
use crate::service::Shared;

fn u256_u128(v: U256) -> u128 {
    v.try_into().unwrap_or(u128::MAX)
}

/// The market's terms an order must meet to be settled or disputed: a deadline ahead and at most
/// the longest delay away, a payment at least the minimum (smaller orders cannot be disputed).
pub(super) fn within_terms(order: &Order, params: &Parameters, now: u64) -> Result<(), ApiError> {
    let max_delay = params.maxDeadlineDelay.saturating_to::<u64>();
    if order.deadline <= now || order.deadline > now.saturating_add(max_delay) {
        return Err(ApiError::rejected(format!(
            "deadline {} must be after chain time {now} and at most {max_delay} s later",
            order.deadline
        )));
    }
    let min_payment = u256_u128(params.minPayment);
    if order.payment < min_payment {
        return Err(ApiError::rejected(format!(
            "payment {} is below the market's minimum {min_payment}: such an order could not be disputed",
            order.payment
        )));
    }
    Ok(())
}

/// Whether the poster's `book` pays `order` until its deadline: an index below the capacity, a
/// payment at most the per-order maximum and at most what the book still holds, and no unlock
/// before the deadline.
pub(super) fn book_backs(order: &Order, book: &Book) -> Result<(), ApiError> {
    let unlock_at = book.unlockAt.to::<u64>();
    let capacity = book.capacity.to::<u32>();
    let refused = if capacity == 0 {
        format!("poster {} has no book {}", order.poster, order.book())
    } else if order.index() >= capacity {
        format!("index {} is beyond book {}'s capacity {capacity}", order.index(), order.book())
    } else if order.payment > book.perOrderMax.to::<u128>() {
        format!("payment {} is above book {}'s per-order maximum {}", order.payment, order.book(), book.perOrderMax)
    } else if order.payment > book.remaining.to::<u128>() {
        format!("book {} holds {}, less than the payment", order.book(), book.remaining)
    } else if unlock_at != 0 && unlock_at <= order.deadline {
        format!("book {} unlocks at {unlock_at}, before the deadline {}", order.book(), order.deadline)
    } else {
        return Ok(());
    };
    Err(ApiError::rejected(format!("the poster's deposit does not back the order: {refused}")))
}

/// What of `bond` stays at stake until an order with `deadline` can no longer be disputed: the
/// bonded stake, plus stake still unbonding when the dispute window closes.
pub(super) fn bond_cover(bond: &Bond, deadline: u64, dispute_window: u64) -> u128 {
    let lasting_unbonding = if bond.unbondingReadyAt.to::<u64>() > deadline.saturating_add(dispute_window) {
        bond.unbonding.to::<u128>()
    } else {
        0
    };
    bond.bonded.to::<u128>().saturating_add(lasting_unbonding)
}

/// Refuses a result for an order that is not backed. An order listed here and accepted here by
/// the same provider was checked when it was listed (terms and book) and accepted (bond): nothing
/// is read. Any other order is checked now against the chain: the market's terms, the poster's
/// book, and a bond of the provider covering the order's collateral. Those reads happen only
/// after the client's rate limit admitted the request.
pub(super) async fn check_result_backed(
    shared: &Shared,
    order: &Order,
    acceptance: &Acceptance,
    listed: Option<&OrderRecord>,
) -> Result<(), ApiError> {
    let accepted_here = listed.and_then(|r| r.acceptance.as_ref()).is_some_and(|a| a.provider == acceptance.provider);
    if accepted_here {
        return Ok(());
    }
    let chain = &shared.chain;
    let (now, params, book, bond) = tokio::try_join!(
        shared.relay_reads.now(chain),
        shared.relay_reads.parameters(chain),
        chain.book(order.poster, order.book()),
        chain.bond(acceptance.provider),
    )
    .map_err(ApiError::unavailable)?;
    within_terms(order, &params, now)?;
    book_backs(order, &book)?;
    let cover = bond_cover(&bond, order.deadline, params.disputeWindow.saturating_to::<u64>());
    if cover < order.collateral {
        return Err(ApiError::rejected(format!(
            "provider {}'s bond {cover} does not cover the order's collateral {}: the order is not backed",
            acceptance.provider, order.collateral
        )));
    }
    Ok(())
}
