//! The task market (version 2, `contracts/market/`): signed orders and acceptances, signed
//! deliveries and receipts of results, the settlement calldata, the accounts and transactions,
//! and where an order ended up.

pub mod batch;
pub mod delivery;
pub mod ledger;
pub mod order;
pub mod relay;
pub mod sealing;
pub mod status;

pub use batch::{BatchError, SettleCall, SettlementBatch, SettlementItem};
pub use delivery::{Delivery, Receipt, SignedReceipt};
pub use ledger::{market_error, Market, Sent};
pub use order::{Acceptance, MarketDomain, Order, OrderError, SignedOrder};
pub use relay::{
    OrderListingPage, OrderView, RelayClient, RelayError, RelayState, ResultSubmission, MAX_ANSWER_BYTES, NEXT_FROM,
};
pub use sealing::SealingKeyAnnouncement;
pub use status::{order_outcome, OrderOutcome};
