//! The market's accounts from Rust: posters' deposit books, providers' bonds and earnings,
//! parameters, and the transactions that move them (each waited for, reverts decoded into the
//! contract's custom error). Shared by `tgrid`, the provider daemon and the sequencer.

use alloy::primitives::{Address, B256, U256};
use alloy::providers::Provider;

use crate::bindings::ITaskMarket::{self, Bond, Book, Earner, ITaskMarketErrors, ITaskMarketInstance, Parameters};
use crate::bindings::IERC20;
use crate::market::order::{Acceptance, SignedOrder};
use crate::{confirm, Deployment, Error, Result};

/// The TaskMarket of a deployment, through one connection.
#[derive(Clone, Debug)]
pub struct Market<P> {
    contract: ITaskMarketInstance<P>,
    token: Address,
}

/// A transaction that went through, with what it moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sent<T> {
    /// The result read from the receipt or the call.
    pub value: T,
    /// The transaction.
    pub transaction: B256,
    /// Gas it used.
    pub gas_used: u64,
}

/// A reverted or failed market call as a readable error: the custom error's name and values when
/// the node returned revert data.
pub fn market_error(step: &str, e: alloy::contract::Error) -> Error {
    let reason = match e.as_decoded_interface_error::<ITaskMarketErrors>() {
        Some(decoded) => format!("reverted: {decoded:?}"),
        None => e.to_string(),
    };
    Error::Chain { step: step.to_string(), reason }
}

impl<P: Provider + Clone> Market<P> {
    /// The market of `deployment` through `provider`.
    pub fn new(deployment: &Deployment, provider: P) -> Self {
        Self { contract: ITaskMarket::new(deployment.market, provider), token: deployment.token }
    }

    /// The market's address.
    pub fn address(&self) -> Address {
        *self.contract.address()
    }

    /// The contract binding (for calls not wrapped here).
    pub fn contract(&self) -> &ITaskMarketInstance<P> {
        &self.contract
    }

    // -------------------------------------------------------------- reads

    /// The governed parameters.
    pub async fn parameters(&self) -> Result<Parameters> {
        self.contract.parameters().call().await.map_err(|e| market_error("TaskMarket.parameters", e))
    }

    /// Book `book` of `poster` (capacity 0: no such book).
    pub async fn book(&self, poster: Address, book: u32) -> Result<Book> {
        self.contract.book(poster, book).call().await.map_err(|e| market_error("TaskMarket.book", e))
    }

    /// Every book of `poster`, by id.
    pub async fn books(&self, poster: Address) -> Result<Vec<Book>> {
        let count =
            self.contract.bookCount(poster).call().await.map_err(|e| market_error("TaskMarket.bookCount", e))?;
        let count = u32::try_from(count).map_err(|_| Error::Chain {
            step: "TaskMarket.bookCount".into(),
            reason: format!("{count} books: not a u32"),
        })?;
        let mut books = Vec::with_capacity(count as usize);
        for id in 0..count {
            books.push(self.book(poster, id).await?);
        }
        Ok(books)
    }

    /// Whether `poster`'s nonce is used (settled, disputed or cancelled).
    pub async fn nonce_used(&self, poster: Address, nonce: u64) -> Result<bool> {
        self.contract.nonceUsed(poster, nonce).call().await.map_err(|e| market_error("TaskMarket.nonceUsed", e))
    }

    /// `provider`'s bond.
    pub async fn bond(&self, provider: Address) -> Result<Bond> {
        self.contract.bond(provider).call().await.map_err(|e| market_error("TaskMarket.bond", e))
    }

    /// `account`'s earnings and reputation.
    pub async fn earner(&self, account: Address) -> Result<Earner> {
        self.contract.earner(account).call().await.map_err(|e| market_error("TaskMarket.earner", e))
    }

    /// Whether `account` has the sequencer role.
    pub async fn is_sequencer(&self, account: Address) -> Result<bool> {
        self.contract.isSequencer(account).call().await.map_err(|e| market_error("TaskMarket.isSequencer", e))
    }

    // -------------------------------------------------------------- transactions

    /// Approves the market to pull `amount` TGRID from the signer if its allowance is lower.
    async fn approve(&self, owner: Address, amount: U256) -> Result<()> {
        let token = IERC20::new(self.token, self.contract.provider().clone());
        let allowance = token
            .allowance(owner, self.address())
            .call()
            .await
            .map_err(|e| Error::Chain { step: "TGRID.allowance".into(), reason: e.to_string() })?;
        if allowance < amount {
            confirm("TGRID.approve", token.approve(self.address(), amount).send().await).await?;
        }
        Ok(())
    }

    /// Opens a deposit book of `capacity` orders of at most `per_order_max` each, funded by the
    /// signer `owner` (approving the market first if needed). Returns the book id.
    pub async fn open_book(&self, owner: Address, capacity: u32, per_order_max: U256) -> Result<Sent<u32>> {
        self.approve(owner, per_order_max * U256::from(capacity)).await?;
        let receipt =
            self.send("TaskMarket.openBook", self.contract.openBook(U256::from(capacity), per_order_max)).await?;
        let id = event::<ITaskMarket::BookOpened>(&receipt)
            .map(|e| e.book)
            .ok_or_else(|| Error::Chain { step: "TaskMarket.openBook".into(), reason: "no BookOpened event".into() })?;
        Ok(sent(id, &receipt))
    }

    /// Starts the unlock delay of one of the signer's books.
    pub async fn close_book(&self, book: u32) -> Result<Sent<()>> {
        let receipt = self.send("TaskMarket.closeBook", self.contract.closeBook(book)).await?;
        Ok(sent((), &receipt))
    }

    /// Withdraws the remainder of a closed, unlocked book of the signer.
    pub async fn withdraw_book(&self, book: u32) -> Result<Sent<U256>> {
        let receipt = self.send("TaskMarket.withdrawBook", self.contract.withdrawBook(book)).await?;
        let amount = event::<ITaskMarket::BookWithdrawn>(&receipt).map(|e| e.amount).unwrap_or_default();
        Ok(sent(amount, &receipt))
    }

    /// Cancels orders of the signer by nonce.
    pub async fn cancel(&self, nonces: Vec<u64>) -> Result<Sent<()>> {
        let receipt = self.send("TaskMarket.cancelNonces", self.contract.cancelNonces(nonces)).await?;
        Ok(sent((), &receipt))
    }

    /// Bonds `amount` more of the signer `owner`'s TGRID (approving first if needed).
    pub async fn stake(&self, owner: Address, amount: U256) -> Result<Sent<()>> {
        self.approve(owner, amount).await?;
        let receipt = self.send("TaskMarket.stake", self.contract.stake(amount)).await?;
        Ok(sent((), &receipt))
    }

    /// Moves `amount` of the signer's bond to unbonding.
    pub async fn request_unbonding(&self, amount: U256) -> Result<Sent<()>> {
        let receipt = self.send("TaskMarket.requestUnbonding", self.contract.requestUnbonding(amount)).await?;
        Ok(sent((), &receipt))
    }

    /// Withdraws the signer's unbonded stake.
    pub async fn withdraw_stake(&self) -> Result<Sent<U256>> {
        let receipt = self.send("TaskMarket.withdrawStake", self.contract.withdrawStake()).await?;
        let amount = event::<ITaskMarket::StakeWithdrawn>(&receipt).map(|e| e.amount).unwrap_or_default();
        Ok(sent(amount, &receipt))
    }

    /// Withdraws the signer's earnings.
    pub async fn withdraw_earnings(&self) -> Result<Sent<U256>> {
        let receipt = self.send("TaskMarket.withdrawEarnings", self.contract.withdrawEarnings()).await?;
        let amount = event::<ITaskMarket::EarningsWithdrawn>(&receipt).map(|e| e.amount).unwrap_or_default();
        Ok(sent(amount, &receipt))
    }

    /// Disputes an order that never settled: slashes the accepting provider on its signed terms.
    /// Returns (slashed, paid to the poster).
    pub async fn dispute(&self, order: &SignedOrder, acceptance: &Acceptance) -> Result<Sent<(U256, U256)>> {
        let call = self.contract.dispute(
            order.order.to_sol(),
            order.signature.as_bytes().to_vec().into(),
            acceptance.provider,
            acceptance.signature.as_bytes().to_vec().into(),
        );
        let receipt = self.send("TaskMarket.dispute", call).await?;
        let event =
            receipt.inner.logs().iter().find_map(|l| l.log_decode::<ITaskMarket::OrderDisputed>().ok()).ok_or_else(
                || Error::Chain { step: "TaskMarket.dispute".into(), reason: "no OrderDisputed event".into() },
            )?;
        Ok(sent((event.inner.data.slashed, event.inner.data.toPoster), &receipt))
    }

    /// Simulates `call` (so a revert is reported with its custom error), sends it and waits.
    async fn send<C: alloy::sol_types::SolCall>(
        &self,
        step: &str,
        call: alloy::contract::SolCallBuilder<&P, C>,
    ) -> Result<alloy::rpc::types::TransactionReceipt> {
        call.call().await.map_err(|e| market_error(step, e))?;
        confirm(step, call.send().await).await
    }
}

/// The first `E` event in `receipt`.
fn event<E: alloy::sol_types::SolEvent>(receipt: &alloy::rpc::types::TransactionReceipt) -> Option<E> {
    receipt.inner.logs().iter().find_map(|l| l.log_decode::<E>().ok()).map(|l| l.inner.data)
}

fn sent<T>(value: T, receipt: &alloy::rpc::types::TransactionReceipt) -> Sent<T> {
    Sent { value, transaction: receipt.transaction_hash, gas_used: receipt.gas_used }
}
