//! The DAO flow against TGridGovernor + TimelockController: propose, vote, queue, execute.
//! Every parameter and every registry change goes through it (the timelock owns the contracts).

use alloy::primitives::{keccak256, Address, Bytes, B256, U256};
use alloy::providers::Provider;
use alloy::sol_types::SolCall;

use crate::bindings::IGovernor::{self, ProposalState};
use crate::{Error, Result};

/// One governance proposal: calls the timelock will make once it passes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proposal {
    /// Contracts called, in order.
    pub targets: Vec<Address>,
    /// Ether sent with each call.
    pub values: Vec<U256>,
    /// ABI-encoded calls.
    pub calldatas: Vec<Bytes>,
    /// Human-readable description; its hash is part of the proposal id.
    pub description: String,
}

impl Proposal {
    /// A proposal making one call.
    pub fn single(target: Address, call: &impl SolCall, description: impl Into<String>) -> Self {
        Self {
            targets: vec![target],
            values: vec![U256::ZERO],
            calldatas: vec![call.abi_encode().into()],
            description: description.into(),
        }
    }

    /// keccak256 of the description, as the Governor hashes it.
    pub fn description_hash(&self) -> B256 {
        keccak256(self.description.as_bytes())
    }
}

/// A Governor reached through `provider` (whose wallet signs).
#[derive(Debug)]
pub struct Governance<P> {
    governor: IGovernor::IGovernorInstance<P>,
}

fn chain_err(step: &str, e: impl std::fmt::Display) -> Error {
    Error::Chain { step: step.to_string(), reason: e.to_string() }
}

impl<P: Provider> Governance<P> {
    /// The Governor at `address`.
    pub fn new(address: Address, provider: P) -> Self {
        Self { governor: IGovernor::new(address, provider) }
    }

    /// The proposal id the Governor assigns to `proposal`.
    pub async fn proposal_id(&self, proposal: &Proposal) -> Result<U256> {
        self.governor
            .hashProposal(
                proposal.targets.clone(),
                proposal.values.clone(),
                proposal.calldatas.clone(),
                proposal.description_hash(),
            )
            .call()
            .await
            .map_err(|e| chain_err("Governor.hashProposal", e))
    }

    /// The proposal's state.
    pub async fn state(&self, id: U256) -> Result<ProposalState> {
        self.governor.state(id).call().await.map_err(|e| chain_err("Governor.state", e))
    }

    /// Submits the proposal; returns its id.
    pub async fn propose(&self, proposal: &Proposal) -> Result<U256> {
        let call = self.governor.propose(
            proposal.targets.clone(),
            proposal.values.clone(),
            proposal.calldatas.clone(),
            proposal.description.clone(),
        );
        confirm("Governor.propose", call.send().await).await?;
        self.proposal_id(proposal).await
    }

    /// Votes for (`support` 1), against (0) or abstains (2).
    pub async fn vote(&self, id: U256, support: u8) -> Result<()> {
        confirm("Governor.castVote", self.governor.castVote(id, support).send().await).await.map(drop)
    }

    /// Queues a succeeded proposal in the timelock.
    pub async fn queue(&self, proposal: &Proposal) -> Result<()> {
        let call = self.governor.queue(
            proposal.targets.clone(),
            proposal.values.clone(),
            proposal.calldatas.clone(),
            proposal.description_hash(),
        );
        confirm("Governor.queue", call.send().await).await.map(drop)
    }

    /// Executes a queued proposal whose timelock delay has passed.
    pub async fn execute(&self, proposal: &Proposal) -> Result<()> {
        let call = self.governor.execute(
            proposal.targets.clone(),
            proposal.values.clone(),
            proposal.calldatas.clone(),
            proposal.description_hash(),
        );
        confirm("Governor.execute", call.send().await).await.map(drop)
    }

    /// A proposal as its `ProposalCreated` event recorded it (searched from `from_block`), so any
    /// member can queue or execute a proposal knowing only its id.
    pub async fn proposal(&self, id: U256, from_block: u64) -> Result<Proposal> {
        use alloy::sol_types::SolEvent;
        let filter = alloy::rpc::types::Filter::new()
            .address(*self.governor.address())
            .event_signature(IGovernor::ProposalCreated::SIGNATURE_HASH)
            .from_block(from_block);
        let logs = self
            .governor
            .provider()
            .get_logs(&filter)
            .await
            .map_err(|e| chain_err("eth_getLogs ProposalCreated", e))?;
        for log in logs {
            let created =
                log.log_decode::<IGovernor::ProposalCreated>().map_err(|e| chain_err("ProposalCreated", e))?.inner.data;
            if created.proposalId == id {
                return Ok(Proposal {
                    targets: created.targets,
                    values: created.values,
                    calldatas: created.calldatas,
                    description: created.description,
                });
            }
        }
        Err(chain_err("Governor", format!("no proposal {id} was created since block {from_block}")))
    }

    /// When voting opens (the snapshot timestamp: votes count as delegated at that instant;
    /// voting starts just after it).
    pub async fn voting_start(&self, id: U256) -> Result<u64> {
        let t =
            self.governor.proposalSnapshot(id).call().await.map_err(|e| chain_err("Governor.proposalSnapshot", e))?;
        u64::try_from(t).map_err(|e| chain_err("Governor.proposalSnapshot", e))
    }

    /// When voting ends (timestamp).
    pub async fn voting_deadline(&self, id: U256) -> Result<u64> {
        let t =
            self.governor.proposalDeadline(id).call().await.map_err(|e| chain_err("Governor.proposalDeadline", e))?;
        u64::try_from(t).map_err(|e| chain_err("Governor.proposalDeadline", e))
    }

    /// When a queued proposal becomes executable (timestamp).
    pub async fn eta(&self, id: U256) -> Result<u64> {
        let t = self.governor.proposalEta(id).call().await.map_err(|e| chain_err("Governor.proposalEta", e))?;
        u64::try_from(t).map_err(|e| chain_err("Governor.proposalEta", e))
    }
}

/// How long a governance transaction may wait for its receipt before the step fails (rather
/// than hanging on a transaction the node never mines).
const RECEIPT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Waits (at most two minutes) for a sent transaction's receipt and fails on a revert or a send
/// error, naming `step` (the message carries the decoded revert reason when the node gives one).
pub async fn confirm<N: alloy::network::Network>(
    step: &str,
    sent: Result<alloy::providers::PendingTransactionBuilder<N>, alloy::contract::Error>,
) -> Result<N::ReceiptResponse> {
    use alloy::network::ReceiptResponse;
    let pending = sent.map_err(|e| chain_err(step, e))?;
    let receipt = pending.with_timeout(Some(RECEIPT_TIMEOUT)).get_receipt().await.map_err(|e| {
        chain_err(step, format!("waiting for the receipt (at most {} s): {e}", RECEIPT_TIMEOUT.as_secs()))
    })?;
    if !receipt.status() {
        return Err(chain_err(step, format!("transaction {} reverted", receipt.transaction_hash())));
    }
    Ok(receipt)
}
