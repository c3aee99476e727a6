//! The sequencer's view of the chain: the market's state for relay and ingest checks (nonces,
//! books, bonds, parameters, the registry), and settlement transactions signed locally with
//! explicit nonces, so a transaction's hash and raw bytes are stored before it is sent and a
//! restart can find or re-send it.

use alloy::network::{EthereumWallet, NetworkTransactionBuilder, TransactionBuilder};
use alloy::primitives::{Address, Bytes, FixedBytes, B256, U256};
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use alloy::rpc::types::TransactionRequest;
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::SolCall;
use futures::stream::{self, StreamExt, TryStreamExt};
use tgrid_chain::bindings::IModelRegistry;
use tgrid_chain::bindings::ITaskMarket::{self, Bond, Book, Parameters};
use tgrid_chain::market::{market_error, MarketDomain, Receipt, SettlementBatch, SignedReceipt};
use tgrid_chain::Deployment;

use crate::service::ServiceError;

/// Reads in flight at once when many orders are read: enough to hide a remote node's round trip,
/// few enough to stay inside a hosted node's rate limits.
const CONCURRENT_READS: usize = 16;

/// A mined transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mined {
    /// Whether it succeeded.
    pub success: bool,
    /// Its block.
    pub block: u64,
    /// Gas used.
    pub gas_used: u64,
    /// Orders the settlement skipped, with the reason (`OrderSkipped`).
    pub skipped: Vec<(B256, String)>,
    /// Orders it settled unpaid, with the reason (`OrderUnpaid`).
    pub unpaid: Vec<(B256, String)>,
}

/// A signed settlement transaction, not yet sent.
#[derive(Clone, Debug)]
pub struct SignedTx {
    /// Its hash.
    pub hash: B256,
    /// EIP-2718 bytes.
    pub raw: Bytes,
}

/// Whether a failed call is the contract refusing it (revert data, or a node that reports the
/// revert only in its message) rather than the node failing to answer.
fn is_revert(e: &alloy::contract::Error) -> bool {
    if e.as_revert_data().is_some() {
        return true;
    }
    match e {
        alloy::contract::Error::TransportError(t) => {
            t.as_error_resp().is_some_and(|r| r.message.to_ascii_lowercase().contains("revert"))
        }
        _ => false,
    }
}

/// Whether a node's error message says the account cannot pay (geth, anvil, reth word it so).
fn is_insufficient_funds(message: &str) -> bool {
    message.to_ascii_lowercase().contains("insufficient funds")
}

/// Chain access for the sequencer.
#[derive(Clone, Debug)]
pub struct Chain {
    provider: DynProvider,
    wallet: EthereumWallet,
    /// The same key, for the receipts of acknowledged results.
    signer: PrivateKeySigner,
    sender: Address,
    deployment: Deployment,
}

fn rpc(step: &str, e: impl std::fmt::Display) -> ServiceError {
    ServiceError::Chain(format!("{step}: {e}"))
}

fn market(step: &str, e: alloy::contract::Error) -> ServiceError {
    ServiceError::Chain(market_error(step, e).to_string())
}

impl Chain {
    /// Connects and checks the node's chain id against the deployment file (and warns when the
    /// key has no sequencer role).
    pub async fn connect(rpc_url: &str, deployment: Deployment, private_key: &str) -> Result<Self, ServiceError> {
        let signer: PrivateKeySigner =
            private_key.parse().map_err(|_| ServiceError::Config("private_key is not a 32-byte hex key".into()))?;
        Self::connect_as(rpc_url, deployment, signer).await
    }

    /// As [`connect`](Self::connect), signing with `signer`.
    pub async fn connect_as(
        rpc_url: &str,
        deployment: Deployment,
        signer: PrivateKeySigner,
    ) -> Result<Self, ServiceError> {
        let url = rpc_url.parse().map_err(|e| ServiceError::Config(format!("rpc_url {rpc_url:?}: {e}")))?;
        let sender = signer.address();
        let provider = ProviderBuilder::new().disable_recommended_fillers().connect_http(url).erased();
        tgrid_chain::check_chain(&provider, rpc_url, &deployment).await.map_err(|e| match e {
            tgrid_chain::Error::WrongChain { .. } => ServiceError::Config(e.to_string()),
            other => ServiceError::Chain(other.to_string()),
        })?;
        let chain = Self { provider, wallet: EthereumWallet::from(signer.clone()), signer, sender, deployment };
        let contract = ITaskMarket::new(chain.deployment.market, &chain.provider);
        if !contract.isSequencer(sender).call().await.map_err(|e| market("TaskMarket.isSequencer", e))? {
            // Settlement is permissionless: without the role the sequencer can still settle, but
            // only inside each order's self-settlement window.
            tracing::warn!(
                %sender,
                "this account has no sequencer role: it settles orders only within their self-settlement window"
            );
        }
        Ok(chain)
    }

    /// The sequencer's account.
    pub fn sender(&self) -> Address {
        self.sender
    }

    /// The deployment.
    pub fn deployment(&self) -> &Deployment {
        &self.deployment
    }

    /// The market's EIP-712 domain.
    pub fn domain(&self) -> MarketDomain {
        MarketDomain::of(&self.deployment)
    }

    /// Signs the receipt of an acknowledged result with the sequencer's key.
    pub fn sign_receipt(&self, receipt: Receipt) -> Result<SignedReceipt, ServiceError> {
        SignedReceipt::sign(receipt, &self.signer, &self.domain()).map_err(|e| ServiceError::Io(e.to_string()))
    }

    /// Whether `poster`'s nonce is used on-chain (settled, disputed or cancelled).
    pub async fn nonce_used(&self, poster: Address, nonce: u64) -> Result<bool, ServiceError> {
        ITaskMarket::new(self.deployment.market, &self.provider)
            .nonceUsed(poster, nonce)
            .call()
            .await
            .map_err(|e| market("TaskMarket.nonceUsed", e))
    }

    /// The transaction that settled `item`'s order and paid its provider for its output, if one
    /// did (the order's fate read from chain events and calldata since the deployment): how a
    /// result this sequencer did not settle (its provider settled it itself) is known to be paid
    /// for before its output is published.
    pub async fn settled_paying(
        &self,
        item: &tgrid_chain::market::SettlementItem,
    ) -> Result<Option<B256>, ServiceError> {
        let outcome = tgrid_chain::market::status::order_outcome(
            &self.provider,
            self.deployment.market,
            &self.domain(),
            &item.order.order,
            self.deployment.start_block,
        )
        .await
        .map_err(|e| ServiceError::Chain(e.to_string()))?;
        Ok(match outcome {
            tgrid_chain::market::status::OrderOutcome::Settled {
                paid: true,
                provider,
                output_commitment,
                transaction,
                ..
            } if provider == item.provider && output_commitment == item.output_commitment => Some(transaction),
            _ => None,
        })
    }

    /// Whether each `(poster, nonce)` is used, in order. Read [`CONCURRENT_READS`] at a time: a
    /// batch of a thousand orders read one after the other from a remote node would take a
    /// thousand round trips.
    pub async fn nonces_used(&self, nonces: &[(Address, u64)]) -> Result<Vec<bool>, ServiceError> {
        stream::iter(nonces).map(|(p, n)| self.nonce_used(*p, *n)).buffered(CONCURRENT_READS).try_collect().await
    }

    /// A poster's deposit book.
    pub async fn book(&self, poster: Address, book: u32) -> Result<Book, ServiceError> {
        ITaskMarket::new(self.deployment.market, &self.provider)
            .book(poster, book)
            .call()
            .await
            .map_err(|e| market("TaskMarket.book", e))
    }

    /// A provider's bond.
    pub async fn bond(&self, provider: Address) -> Result<Bond, ServiceError> {
        ITaskMarket::new(self.deployment.market, &self.provider)
            .bond(provider)
            .call()
            .await
            .map_err(|e| market("TaskMarket.bond", e))
    }

    /// The market's parameters.
    pub async fn parameters(&self) -> Result<Parameters, ServiceError> {
        ITaskMarket::new(self.deployment.market, &self.provider)
            .parameters()
            .call()
            .await
            .map_err(|e| market("TaskMarket.parameters", e))
    }

    /// Whether the registry lists the model as active.
    pub async fn model_active(&self, model_id: &[u8; 32]) -> Result<bool, ServiceError> {
        IModelRegistry::new(self.deployment.registry, &self.provider)
            .isModelActive(FixedBytes(*model_id))
            .call()
            .await
            .map_err(|e| rpc("ModelRegistry.isModelActive", e))
    }

    /// Whether the market accepts a batch proven under `root` now: the current root, or a
    /// replaced one still in its grace window.
    pub async fn root_accepted(&self, root: &[u8; 32]) -> Result<bool, ServiceError> {
        let status = IModelRegistry::new(self.deployment.registry, &self.provider)
            .rootStatus(FixedBytes(*root))
            .call()
            .await
            .map_err(|e| rpc("ModelRegistry.rootStatus", e))?;
        Ok(matches!(status.status, IModelRegistry::RootStatus::Current | IModelRegistry::RootStatus::Grace))
    }

    /// The registry root the settlement contract checks batches against.
    pub async fn registry_root(&self) -> Result<[u8; 32], ServiceError> {
        let root = IModelRegistry::new(self.deployment.registry, &self.provider)
            .registryRoot()
            .call()
            .await
            .map_err(|e| rpc("ModelRegistry.registryRoot", e))?;
        Ok(root.0)
    }

    /// Timestamp of the latest block: the clock deadlines are measured against.
    pub async fn now(&self) -> Result<u64, ServiceError> {
        let block = self
            .provider
            .get_block_by_number(alloy::eips::BlockNumberOrTag::Latest)
            .await
            .map_err(|e| rpc("eth_getBlockByNumber", e))?
            .ok_or_else(|| ServiceError::Chain("the node has no latest block".into()))?;
        Ok(block.header.timestamp)
    }

    /// Latest block number.
    pub async fn block_number(&self) -> Result<u64, ServiceError> {
        self.provider.get_block_number().await.map_err(|e| rpc("eth_blockNumber", e))
    }

    /// The sequencer's next nonce counting only mined transactions.
    pub async fn mined_nonce(&self) -> Result<u64, ServiceError> {
        self.provider.get_transaction_count(self.sender).latest().await.map_err(|e| rpc("eth_getTransactionCount", e))
    }

    /// The sequencer's next nonce counting pending transactions.
    pub async fn pending_nonce(&self) -> Result<u64, ServiceError> {
        self.provider.get_transaction_count(self.sender).pending().await.map_err(|e| rpc("eth_getTransactionCount", e))
    }

    /// Current EIP-1559 fee estimate: (max fee, priority fee) per gas.
    pub async fn fees(&self) -> Result<(u128, u128), ServiceError> {
        let f = self.provider.estimate_eip1559_fees().await.map_err(|e| rpc("fee estimate", e))?;
        Ok((f.max_fee_per_gas, f.max_priority_fee_per_gas))
    }

    fn settle_request(
        &self,
        batch: &SettlementBatch,
        registry_root: &[u8; 32],
        proof: &[U256; 8],
    ) -> TransactionRequest {
        let call = batch.call(FixedBytes(*registry_root), *proof);
        TransactionRequest::default()
            .with_from(self.sender)
            .with_to(self.deployment.market)
            .with_input(call.abi_encode())
    }

    /// Simulates `settleBatch` and returns its gas; a revert comes back with its custom error.
    pub async fn estimate_settle(
        &self,
        batch: &SettlementBatch,
        registry_root: &[u8; 32],
        proof: &[U256; 8],
    ) -> Result<u64, ServiceError> {
        let call = batch.call(FixedBytes(*registry_root), *proof);
        let contract = ITaskMarket::new(self.deployment.market, &self.provider);
        let builder = contract.settleBatch(call.header, call.leaves, call.registryRoot, call.proof).from(self.sender);
        builder.estimate_gas().await.map_err(|e| {
            if is_revert(&e) {
                ServiceError::Rejected(format!("settleBatch would revert: {}", market_error("settleBatch", e)))
            } else if is_insufficient_funds(&e.to_string()) {
                ServiceError::Funds(format!("account {}: {e}", self.sender))
            } else {
                // A timeout, a refused connection, a node error: nothing is wrong with the batch.
                rpc("eth_estimateGas(settleBatch)", e)
            }
        })
    }

    /// The sequencer account's balance in wei.
    pub async fn balance(&self) -> Result<U256, ServiceError> {
        self.provider.get_balance(self.sender).await.map_err(|e| rpc("eth_getBalance", e))
    }

    /// Signs `settleBatch` with an explicit nonce, gas and fees (not sent).
    #[allow(clippy::too_many_arguments)]
    pub async fn sign_settle(
        &self,
        batch: &SettlementBatch,
        registry_root: &[u8; 32],
        proof: &[U256; 8],
        nonce: u64,
        gas: u64,
        max_fee_per_gas: u128,
        max_priority_fee_per_gas: u128,
    ) -> Result<SignedTx, ServiceError> {
        use alloy::eips::eip2718::Encodable2718;
        let request = self
            .settle_request(batch, registry_root, proof)
            .with_chain_id(self.deployment.chain_id)
            .with_nonce(nonce)
            .with_gas_limit(gas)
            .with_max_fee_per_gas(max_fee_per_gas)
            .with_max_priority_fee_per_gas(max_priority_fee_per_gas);
        let envelope = request.build(&self.wallet).await.map_err(|e| rpc("signing settleBatch", e))?;
        Ok(SignedTx { hash: *envelope.tx_hash(), raw: envelope.encoded_2718().into() })
    }

    /// Sends a signed transaction; "already known" counts as sent.
    pub async fn send_raw(&self, raw: &[u8]) -> Result<(), ServiceError> {
        match self.provider.send_raw_transaction(raw).await {
            Ok(_) => Ok(()),
            Err(e) if e.to_string().to_ascii_lowercase().contains("already") => Ok(()),
            Err(e) if is_insufficient_funds(&e.to_string()) => {
                Err(ServiceError::Funds(format!("account {}: {e}", self.sender)))
            }
            Err(e) => Err(rpc("eth_sendRawTransaction", e)),
        }
    }

    /// Whether the node knows the transaction at all (pending or mined). A node forgets a
    /// transaction whose block was reorganized away, and may evict a pending one.
    pub async fn transaction_known(&self, hash: B256) -> Result<bool, ServiceError> {
        let tx = self.provider.get_transaction_by_hash(hash).await.map_err(|e| rpc("eth_getTransactionByHash", e))?;
        Ok(tx.is_some())
    }

    /// The receipt of `hash`, if mined, with the orders its settlement skipped or left unpaid.
    pub async fn receipt(&self, hash: B256) -> Result<Option<Mined>, ServiceError> {
        let r = self.provider.get_transaction_receipt(hash).await.map_err(|e| rpc("eth_getTransactionReceipt", e))?;
        Ok(r.and_then(|r| {
            let block = r.block_number?;
            let (mut skipped, mut unpaid) = (Vec::new(), Vec::new());
            for log in r.inner.logs() {
                if log.address() != self.deployment.market {
                    continue;
                }
                if let Ok(e) = log.log_decode::<ITaskMarket::OrderSkipped>() {
                    skipped.push((e.inner.data.orderHash, format!("{:?}", e.inner.data.reason)));
                } else if let Ok(e) = log.log_decode::<ITaskMarket::OrderUnpaid>() {
                    unpaid.push((e.inner.data.orderHash, format!("{:?}", e.inner.data.reason)));
                }
            }
            Some(Mined { success: r.status(), block, gas_used: r.gas_used, skipped, unpaid })
        }))
    }
}
