//! The sequencer's view of the chain: task and model state for ingest checks, and settlement
//! transactions signed locally with explicit nonces, so a transaction's hash and raw bytes are
//! stored before it is sent and a restart can find or re-send it.

use alloy::network::{EthereumWallet, NetworkTransactionBuilder, TransactionBuilder};
use alloy::primitives::{keccak256, Address, Bytes, FixedBytes, B256, U256};
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use alloy::rpc::types::TransactionRequest;
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::SolCall;
use futures::stream::{self, StreamExt, TryStreamExt};
use tgrid_aggregation::TaskLeaf;
use tgrid_chain::bindings::{IModelRegistry, ISettlement, ITaskEscrow, TaskLeaf as SolLeaf};
use tgrid_chain::Deployment;

use crate::service::ServiceError;

/// Reads in flight at once when many tasks are read: enough to hide a remote node's round trip,
/// few enough to stay inside a hosted node's rate limits.
const CONCURRENT_READS: usize = 16;

/// What ingest needs to know about a task on-chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainTask {
    /// Escrow status.
    pub status: ITaskEscrow::TaskStatus,
    /// Deadline (unix seconds).
    pub deadline: u64,
    /// Accepting provider.
    pub provider: Address,
    /// `keccak(keccak(modelId ‖ inputCommitment) ‖ provider)` once accepted.
    pub binding: B256,
}

/// A mined transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mined {
    /// Whether it succeeded.
    pub success: bool,
    /// Its block.
    pub block: u64,
    /// Gas used.
    pub gas_used: u64,
}

/// A signed settlement transaction, not yet sent.
#[derive(Clone, Debug)]
pub struct SignedTx {
    /// Its hash.
    pub hash: B256,
    /// EIP-2718 bytes.
    pub raw: Bytes,
}

/// Chain access for the sequencer.
#[derive(Clone, Debug)]
pub struct Chain {
    provider: DynProvider,
    wallet: EthereumWallet,
    sender: Address,
    deployment: Deployment,
}

fn rpc(step: &str, e: impl std::fmt::Display) -> ServiceError {
    ServiceError::Chain(format!("{step}: {e}"))
}

/// The escrow's binding of a task to its model, input and provider.
pub fn task_binding(model_id: &[u8; 32], input_commitment: &[u8; 32], provider: &[u8; 20]) -> B256 {
    let mut buf = [0u8; 64];
    buf[..32].copy_from_slice(model_id);
    buf[32..].copy_from_slice(input_commitment);
    let input = keccak256(buf);
    buf[..32].copy_from_slice(input.as_slice());
    buf[32..44].fill(0);
    buf[44..].copy_from_slice(provider);
    keccak256(buf)
}

fn sol_leaf(l: &TaskLeaf) -> SolLeaf {
    SolLeaf {
        taskId: l.task_id.into(),
        modelId: l.model_id.into(),
        inputCommitment: l.input_commitment.into(),
        outputCommitment: l.output_commitment.into(),
        provider: Address::from(l.provider),
    }
}

impl Chain {
    /// Connects and checks the node's chain id against the deployment file and that the key
    /// holds the sequencer role.
    pub async fn connect(rpc_url: &str, deployment: Deployment, private_key: &str) -> Result<Self, ServiceError> {
        let url = rpc_url.parse().map_err(|e| ServiceError::Config(format!("rpc_url {rpc_url:?}: {e}")))?;
        let signer: PrivateKeySigner =
            private_key.parse().map_err(|_| ServiceError::Config("private_key is not a 32-byte hex key".into()))?;
        let sender = signer.address();
        let provider = ProviderBuilder::new().disable_recommended_fillers().connect_http(url).erased();
        tgrid_chain::check_chain(&provider, rpc_url, &deployment).await.map_err(|e| match e {
            tgrid_chain::Error::WrongChain { .. } => ServiceError::Config(e.to_string()),
            other => ServiceError::Chain(other.to_string()),
        })?;
        let chain = Self { provider, wallet: EthereumWallet::from(signer), sender, deployment };
        let settlement = ISettlement::new(chain.deployment.settlement, &chain.provider);
        if !settlement.isSequencer(sender).call().await.map_err(|e| rpc("Settlement.isSequencer", e))? {
            return Err(ServiceError::Config(format!(
                "{sender} does not hold the sequencer role of the settlement contract"
            )));
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

    /// A task as the escrow sees it.
    pub async fn task(&self, task_id: &[u8; 32]) -> Result<ChainTask, ServiceError> {
        let t = ITaskEscrow::new(self.deployment.escrow, &self.provider)
            .task(FixedBytes(*task_id))
            .call()
            .await
            .map_err(|e| rpc("TaskEscrow.task", e))?;
        Ok(ChainTask { status: t.status, deadline: t.deadline.to::<u64>(), provider: t.provider, binding: t.binding })
    }

    /// Tasks as the escrow sees them, in the order of `task_ids`. Read [`CONCURRENT_READS`] at a
    /// time: a batch of a thousand tasks read one after the other from a remote node would take
    /// a thousand round trips.
    pub async fn tasks(&self, task_ids: &[[u8; 32]]) -> Result<Vec<ChainTask>, ServiceError> {
        stream::iter(task_ids).map(|id| self.task(id)).buffered(CONCURRENT_READS).try_collect().await
    }

    /// Whether the registry lists the model as active.
    pub async fn model_active(&self, model_id: &[u8; 32]) -> Result<bool, ServiceError> {
        IModelRegistry::new(self.deployment.registry, &self.provider)
            .isModelActive(FixedBytes(*model_id))
            .call()
            .await
            .map_err(|e| rpc("ModelRegistry.isModelActive", e))
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

    fn submit_request(&self, leaves: &[TaskLeaf], registry_root: &[u8; 32], proof: &[U256; 8]) -> TransactionRequest {
        let call = ISettlement::submitBatchCall {
            leaves: leaves.iter().map(sol_leaf).collect(),
            registryRoot: FixedBytes(*registry_root),
            proof: *proof,
        };
        TransactionRequest::default()
            .with_from(self.sender)
            .with_to(self.deployment.settlement)
            .with_input(call.abi_encode())
    }

    /// Simulates `submitBatch` and returns its gas; a revert comes back with its reason.
    pub async fn estimate_submit(
        &self,
        leaves: &[TaskLeaf],
        registry_root: &[u8; 32],
        proof: &[U256; 8],
    ) -> Result<u64, ServiceError> {
        self.provider
            .estimate_gas(self.submit_request(leaves, registry_root, proof))
            .await
            .map_err(|e| ServiceError::Rejected(format!("submitBatch would revert: {e}")))
    }

    /// Signs `submitBatch` with an explicit nonce, gas and fees (not sent).
    #[allow(clippy::too_many_arguments)]
    pub async fn sign_submit(
        &self,
        leaves: &[TaskLeaf],
        registry_root: &[u8; 32],
        proof: &[U256; 8],
        nonce: u64,
        gas: u64,
        max_fee_per_gas: u128,
        max_priority_fee_per_gas: u128,
    ) -> Result<SignedTx, ServiceError> {
        use alloy::eips::eip2718::Encodable2718;
        let request = self
            .submit_request(leaves, registry_root, proof)
            .with_chain_id(self.deployment.chain_id)
            .with_nonce(nonce)
            .with_gas_limit(gas)
            .with_max_fee_per_gas(max_fee_per_gas)
            .with_max_priority_fee_per_gas(max_priority_fee_per_gas);
        let envelope = request.build(&self.wallet).await.map_err(|e| rpc("signing submitBatch", e))?;
        Ok(SignedTx { hash: *envelope.tx_hash(), raw: envelope.encoded_2718().into() })
    }

    /// Sends a signed transaction; "already known" counts as sent.
    pub async fn send_raw(&self, raw: &[u8]) -> Result<(), ServiceError> {
        match self.provider.send_raw_transaction(raw).await {
            Ok(_) => Ok(()),
            Err(e) if e.to_string().to_ascii_lowercase().contains("already") => Ok(()),
            Err(e) => Err(rpc("eth_sendRawTransaction", e)),
        }
    }

    /// Whether the node knows the transaction at all (pending or mined). A node forgets a
    /// transaction whose block was reorganized away, and may evict a pending one.
    pub async fn transaction_known(&self, hash: B256) -> Result<bool, ServiceError> {
        let tx = self.provider.get_transaction_by_hash(hash).await.map_err(|e| rpc("eth_getTransactionByHash", e))?;
        Ok(tx.is_some())
    }

    /// The receipt of `hash`, if mined.
    pub async fn receipt(&self, hash: B256) -> Result<Option<Mined>, ServiceError> {
        let r = self.provider.get_transaction_receipt(hash).await.map_err(|e| rpc("eth_getTransactionReceipt", e))?;
        Ok(r.and_then(|r| r.block_number.map(|block| Mined { success: r.status(), block, gas_used: r.gas_used })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_matches_the_escrow() {
        // keccak(keccak(modelId ‖ inputCommitment) ‖ uint256(provider)), as TaskEscrow computes it.
        let (m, i, p) = ([1u8; 32], [2u8; 32], [3u8; 20]);
        let mut inner = m.to_vec();
        inner.extend(i);
        let mut outer = keccak256(&inner).to_vec();
        outer.extend([0u8; 12]);
        outer.extend(p);
        assert_eq!(task_binding(&m, &i, &p), keccak256(&outer));
    }
}
