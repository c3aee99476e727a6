//! `tgrid dao`: delegate, propose (model registrations and the market's parameters), vote,
//! queue, execute, status. Parameter proposals are checked against the market's bounds before
//! they are proposed: a proposal that would revert at execution wastes a vote.

use std::path::PathBuf;

use alloy::primitives::{B256, U256};
use alloy::providers::Provider;
use alloy::sol_types::SolCall;
use anyhow::{anyhow, bail, Context, Result};
use clap::{Subcommand, ValueEnum};
use serde_json::json;
use tgrid_aggregation::{Registry, RegistryEntry, RegistryFile};
use tgrid_chain::bindings::IGovernor::ProposalState;
use tgrid_chain::bindings::IModelRegistry::RootStatus;
use tgrid_chain::bindings::{IKeyedGroth16Verifier, IModelRegistry, ITaskMarket, ITimelock, IVotes};
use tgrid_chain::{confirm, Governance, Proposal};
use tgrid_cli::{bad_input, parse_hex, Output};
use tgrid_settlement_proof::SettlementProofFile;

use crate::common::{address, amount96, connect, connect_reading, duration_text, proposal_id, Ctx, Globals};

#[derive(Debug, Subcommand)]
pub(crate) enum DaoCommand {
    /// Delegate the signer's votes (to itself by default); votes count from the next block.
    Delegate {
        /// Delegatee.
        #[arg(long)]
        to: Option<String>,
    },
    /// Propose a change; prints the proposal id.
    #[command(subcommand)]
    Propose(ProposeCommand),
    /// Vote on an active proposal.
    Vote {
        /// Proposal id (decimal).
        proposal: String,
        /// For, against or abstain.
        #[arg(long, value_enum, default_value_t = Support::For)]
        support: Support,
    },
    /// Queue a succeeded proposal in the timelock.
    Queue {
        /// Proposal id (decimal).
        proposal: String,
    },
    /// Execute a queued proposal whose timelock delay has passed.
    Execute {
        /// Proposal id (decimal).
        proposal: String,
    },
    /// A proposal's state, voting deadline and timelock eta.
    Status {
        /// Proposal id (decimal).
        proposal: String,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum Support {
    Against,
    For,
    Abstain,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ProposeCommand {
    /// Register every model of a registry file that is not active on-chain, ending at the file's root.
    RegisterModels {
        /// Registry file (`tgrid-sequencer registry add`).
        #[arg(long)]
        registry: PathBuf,
    },
    /// The market's fees: protocol fee on paid orders (at most 2,000 bps) and the settler's share
    /// of it (at most 10,000 bps).
    Fees { protocol_bps: u64, settler_bps: u64 },
    /// The market's delays in seconds: longest deadline (1 h .. 365 d), dispute window (1 h ..
    /// 30 d), deposit unlock (> longest deadline, ≤ 730 d), unbonding (≥ longest deadline +
    /// dispute window, ≤ 730 d).
    Delays { max_deadline: u64, dispute_window: u64, deposit_unlock: u64, unbonding: u64 },
    /// Seconds before a deadline from which anyone may settle an order (5 min .. 7 d).
    SelfSettlementWindow { seconds: u64 },
    /// Smallest payment (TGRID) of an order that can be disputed.
    MinPayment { tgrid: String },
    /// Largest number of orders in one settled batch (1 .. 4096).
    MaxBatchSize { tasks: u64 },
    /// The Groth16 verifier contract batches are verified with. The market installs it only if,
    /// when the proposal executes, it accepts a real batch proof under its key and refuses the
    /// same proof for another input (no vote can install a verifier that accepts everything).
    Verifier {
        address: String,
        /// A settlement proof file (`.g16`, `tgrid-sequencer wrap`) proven under the new
        /// verifier's key; checked against the new verifier before anything is proposed.
        #[arg(long)]
        proof: PathBuf,
    },
    /// Revoke a replaced registry root at once and for good: batches proven under it are
    /// refused from then on, and it can never become current again.
    RevokeRoot { root: String },
    /// Grant or revoke the sequencer role (settlement priority before the self-settlement window).
    Sequencer {
        address: String,
        /// true to grant, false to revoke.
        #[arg(action = clap::ArgAction::Set)]
        allowed: bool,
    },
}

pub(crate) async fn run(command: DaoCommand, g: &Globals, out: Output) -> Result<()> {
    // Arguments are checked before connecting.
    let id = match &command {
        DaoCommand::Vote { proposal, .. }
        | DaoCommand::Queue { proposal }
        | DaoCommand::Execute { proposal }
        | DaoCommand::Status { proposal } => Some(proposal_id(proposal)?),
        DaoCommand::Delegate { .. } | DaoCommand::Propose(_) => None,
    };
    let id = id.unwrap_or_default();
    let to = match &command {
        DaoCommand::Delegate { to: Some(a) } => Some(address(a, "--to")?),
        DaoCommand::Propose(p) => {
            check_parameters(p)?;
            None
        }
        _ => None,
    };
    let ctx = match command {
        DaoCommand::Status { .. } => connect_reading(g).await?,
        _ => connect(g).await?,
    };
    let d = &ctx.deployment;
    let gov = Governance::new(d.governor, &ctx.chain);
    match command {
        DaoCommand::Delegate { .. } => {
            let to = to.unwrap_or(ctx.me);
            confirm("TGRID.delegate", IVotes::new(d.token, &ctx.chain).delegate(to).send().await).await?;
            out.emit(json!({"delegatee": to.to_string()}), || format!("votes of {} delegated to {to}", ctx.me))
        }
        DaoCommand::Propose(p) => {
            let proposal = proposal_for(p, &ctx).await?;
            let id = gov.propose(&proposal).await?;
            let voting_ends = gov.voting_deadline(id).await?;
            out.emit(
                json!({"proposal_id": id.to_string(), "description": proposal.description, "calls": proposal.targets.len(), "voting_ends": voting_ends}),
                || format!("proposed {id}\n  {}\n  voting ends at {voting_ends} (chain time)", proposal.description),
            )
        }
        DaoCommand::Vote { support, .. } => {
            let state = gov.state(id).await?;
            if state != ProposalState::Active {
                bail!("proposal {id} is {state:?}, not open for votes");
            }
            gov.vote(id, support as u8).await?;
            out.emit(json!({"proposal_id": id.to_string(), "support": format!("{support:?}").to_lowercase()}), || {
                format!("voted {support:?} on {id}")
            })
        }
        DaoCommand::Queue { .. } => {
            let p = gov.proposal(id, d.start_block).await?;
            gov.queue(&p).await?;
            let eta = gov.eta(id).await?;
            out.emit(json!({"proposal_id": id.to_string(), "eta": eta}), || {
                format!("queued {id} in the timelock; executable from {eta} (chain time)")
            })
        }
        DaoCommand::Execute { .. } => {
            let p = gov.proposal(id, d.start_block).await?;
            gov.execute(&p).await?;
            out.emit(json!({"proposal_id": id.to_string(), "executed": true}), || {
                format!("executed {id}: {}", p.description)
            })
        }
        DaoCommand::Status { .. } => {
            let p = gov.proposal(id, d.start_block).await?;
            let state = gov.state(id).await?;
            let voting_ends = gov.voting_deadline(id).await?;
            let eta = gov.eta(id).await?;
            out.emit(
                json!({"proposal_id": id.to_string(), "state": format!("{state:?}").to_lowercase(), "description": p.description, "voting_ends": voting_ends, "eta": eta}),
                || format!("proposal {id}: {state:?}\n  {}\n  voting ends {voting_ends}, eta {eta}", p.description),
            )
        }
    }
}

const DAY: u64 = 86_400;

/// Checks a proposal's arguments and the market's parameter bounds (ITaskMarket's errors), as
/// bad input.
pub(crate) fn check_parameters(p: &ProposeCommand) -> Result<()> {
    let fail = |m: String| Err(bad_input(anyhow!(m)));
    match p {
        ProposeCommand::MinPayment { tgrid } => amount96(tgrid, "minimum payment").map(drop),
        ProposeCommand::Verifier { address: a, proof } => {
            address(a, "verifier")?;
            known_good_proof(proof).map(drop)
        }
        ProposeCommand::RevokeRoot { root } => parse_hex::<32>(root, "root").map(drop).map_err(bad_input),
        ProposeCommand::Sequencer { address: a, .. } => match address(a, "sequencer")? {
            a if a.is_zero() => fail("the sequencer cannot be the zero address".into()),
            _ => Ok(()),
        },
        _ => Ok(()),
    }?;
    match *p {
        ProposeCommand::Fees { protocol_bps, settler_bps } if protocol_bps > 2_000 || settler_bps > 10_000 => fail(
            format!("fees {protocol_bps} / {settler_bps} bps: the protocol fee is at most 2,000 bps, the settler share 10,000"),
        ),
        ProposeCommand::Delays { max_deadline: m, dispute_window: w, deposit_unlock: u, unbonding: b } => {
            let ok = (3_600..=365 * DAY).contains(&m)
                && (3_600..=30 * DAY).contains(&w)
                && m < u
                && u <= 730 * DAY
                && m + w <= b
                && b <= 730 * DAY;
            if ok {
                Ok(())
            } else {
                fail(format!(
                    "delays {m} / {w} / {u} / {b} s: need 1 h <= longest deadline <= 365 d, 1 h <= dispute window <= 30 d, \
                     longest deadline < deposit unlock <= 730 d, longest deadline + dispute window <= unbonding <= 730 d"
                ))
            }
        }
        ProposeCommand::SelfSettlementWindow { seconds } if !(300..=7 * DAY).contains(&seconds) => {
            fail(format!("a self-settlement window of {seconds} s is outside 5 min .. 7 d"))
        }
        ProposeCommand::MaxBatchSize { tasks } if !(1..=4_096).contains(&tasks) => {
            fail(format!("a batch size of {tasks} is outside 1 .. 4096"))
        }
        _ => Ok(()),
    }
}

async fn proposal_for(command: ProposeCommand, ctx: &Ctx) -> Result<Proposal> {
    check_parameters(&command)?;
    let d = &ctx.deployment;
    let market = d.market;
    let u = U256::from;
    Ok(match command {
        ProposeCommand::RegisterModels { registry } => register_models(&registry, ctx).await?,
        ProposeCommand::Fees { protocol_bps, settler_bps } => Proposal::single(
            market,
            &ITaskMarket::setFeesCall { protocolFeeBps: u(protocol_bps), settlerShareBps: u(settler_bps) },
            format!("Set the market's protocol fee to {protocol_bps} bps, {settler_bps} bps of it to settlers"),
        ),
        ProposeCommand::Delays { max_deadline, dispute_window, deposit_unlock, unbonding } => {
            // The market refuses an unbonding or deposit unlock delay beyond the timelock's (a
            // passed vote could otherwise land before a provider or a poster who objects can
            // leave): say so before a vote.
            let timelock = ITimelock::new(d.timelock, &ctx.chain).getMinDelay().call().await.context("getMinDelay")?;
            for (what, delay) in [("an unbonding", unbonding), ("a deposit unlock", deposit_unlock)] {
                if U256::from(delay) > timelock {
                    return Err(bad_input(anyhow!(
                        "{what} delay of {} exceeds the timelock's delay of {timelock} s: the market would refuse it \
                         when the vote executes; propose a longer timelock delay (updateDelay) first",
                        duration_text(delay)
                    )));
                }
            }
            Proposal::single(
                market,
                &ITaskMarket::setDelaysCall {
                    maxDeadlineDelay: u(max_deadline),
                    disputeWindow: u(dispute_window),
                    depositUnlockDelay: u(deposit_unlock),
                    unbondingDelay: u(unbonding),
                },
                format!(
                "Set the market's delays: deadlines up to {}, disputes for {}, deposits unlock after {}, unbonding {}",
                duration_text(max_deadline),
                duration_text(dispute_window),
                duration_text(deposit_unlock),
                duration_text(unbonding)
            ),
            )
        }
        ProposeCommand::SelfSettlementWindow { seconds } => Proposal::single(
            market,
            &ITaskMarket::setSelfSettlementWindowCall { window: u(seconds) },
            format!("Let anyone settle an order from {} before its deadline", duration_text(seconds)),
        ),
        ProposeCommand::MinPayment { tgrid } => {
            let v = amount96(&tgrid, "minimum payment")?;
            Proposal::single(
                market,
                &ITaskMarket::setMinPaymentCall { minPayment: U256::from(v) },
                format!("Set the minimum disputable payment to {tgrid} TGRID"),
            )
        }
        ProposeCommand::MaxBatchSize { tasks } => Proposal::single(
            market,
            &ITaskMarket::setMaxBatchSizeCall { maxBatchSize: u(tasks) },
            format!("Settle at most {tasks} orders per batch"),
        ),
        ProposeCommand::Verifier { address: a, proof } => verifier_proposal(&a, &proof, ctx).await?,
        ProposeCommand::RevokeRoot { root } => revoke_root_proposal(&root, ctx).await?,
        ProposeCommand::Sequencer { address: a, allowed } => {
            let a = address(&a, "sequencer")?;
            Proposal::single(
                market,
                &ITaskMarket::setSequencerCall { account: a, allowed },
                format!(
                    "{} the market's sequencer role {} {a}",
                    if allowed { "Grant" } else { "Revoke" },
                    if allowed { "to" } else { "from" }
                ),
            )
        }
    })
}

/// The proof words and public input of a `.g16` file, as `setVerifier` takes them.
fn known_good_proof(path: &std::path::Path) -> Result<([U256; 8], U256)> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display())).map_err(bad_input)?;
    let file = SettlementProofFile::from_json_bytes(&bytes)
        .with_context(|| format!("{}: not a settlement proof file", path.display()))
        .map_err(bad_input)?;
    let words = file.proof_words().map_err(|e| bad_input(anyhow!("{}: {e}", path.display())))?;
    let input = parse_hex::<32>(&file.public_input, "public_input").map_err(bad_input)?;
    Ok((words, U256::from_be_bytes(input)))
}

/// Checks what the market will check when the proposal executes, so a vote is not wasted on a
/// verifier it would refuse.
async fn verifier_proposal(a: &str, proof_path: &std::path::Path, ctx: &Ctx) -> Result<Proposal> {
    let a = address(a, "verifier")?;
    let code = ctx.chain.get_code_at(a).await.context("eth_getCode")?;
    if code.is_empty() {
        return Err(bad_input(anyhow!("verifier {a} has no code on this chain")));
    }
    let (proof, input) = known_good_proof(proof_path)?;
    let verifier = IKeyedGroth16Verifier::new(a, &ctx.chain);
    // A revert counts as a refusal, as in the market.
    let accepts = |i: U256| {
        let call = verifier.verifyProof(proof, i);
        async move { call.call().await.unwrap_or(false) }
    };
    if !accepts(input).await {
        return Err(bad_input(anyhow!(
            "verifier {a} rejects the proof in {}: the market would refuse it (is the proof from its key?)",
            proof_path.display()
        )));
    }
    if accepts(input ^ U256::from(1u8)).await {
        return Err(bad_input(anyhow!(
            "verifier {a} accepts the proof for another public input: it does not verify, the market would refuse it"
        )));
    }
    Ok(Proposal::single(
        ctx.deployment.market,
        &ITaskMarket::setVerifierCall { verifier: a, proof, publicInput: input },
        format!("Verify batches with {a}"),
    ))
}

async fn revoke_root_proposal(root: &str, ctx: &Ctx) -> Result<Proposal> {
    let root = B256::from(parse_hex::<32>(root, "root").map_err(bad_input)?);
    let registry = IModelRegistry::new(ctx.deployment.registry, &ctx.chain);
    let status = registry.rootStatus(root).call().await.context("ModelRegistry.rootStatus")?.status;
    match status {
        RootStatus::Unknown => Err(bad_input(anyhow!("{root} was never a registry root"))),
        RootStatus::Current => {
            Err(bad_input(anyhow!("{root} is the current root: replace it first (register-models or a new root)")))
        }
        RootStatus::Revoked => Err(bad_input(anyhow!("{root} is already revoked"))),
        _ => Ok(Proposal::single(
            ctx.deployment.registry,
            &IModelRegistry::revokeRootCall { root },
            format!("Revoke registry root {root}"),
        )),
    }
}

async fn register_models(registry: &std::path::Path, ctx: &Ctx) -> Result<Proposal> {
    let d = &ctx.deployment;
    let file = RegistryFile::load(registry).map_err(bad_input)?;
    let on_chain = IModelRegistry::new(d.registry, &ctx.chain);
    let all = file.registry().map_err(bad_input)?;
    let mut included = Vec::new();
    let mut calldatas = Vec::new();
    let mut names = Vec::new();
    for listed in &file.models {
        let entry = RegistryEntry {
            model_id: parse_hex(&listed.model_id, "model id").map_err(bad_input)?,
            leaf_digest: parse_hex(&listed.leaf_digest, "leaf digest").map_err(bad_input)?,
        };
        let id = B256::from(entry.model_id);
        included.push(entry);
        if on_chain.isModelActive(id).call().await.context("ModelRegistry.isModelActive")? {
            continue;
        }
        // Every call moves the root to the registry of the models registered so far, so each
        // call changes it and the last one leaves the file's root.
        let root = Registry::new(included.clone()).map_err(bad_input)?.root();
        calldatas.push(
            IModelRegistry::registerModelCall {
                modelId: id,
                circuitDigest: B256::from(entry.leaf_digest),
                uri: format!("tgrid-model:{}", listed.name),
                newRoot: B256::from(root),
            }
            .abi_encode()
            .into(),
        );
        names.push(listed.name.clone());
    }
    if calldatas.is_empty() {
        return Err(bad_input(anyhow!("every model of {} is already registered", registry.display())));
    }
    // The file's root was checked against its entries on load.
    debug_assert_eq!(Registry::new(included).map(|r| r.root()).ok(), Some(all.root()));
    Ok(Proposal {
        targets: vec![d.registry; calldatas.len()],
        values: vec![U256::ZERO; calldatas.len()],
        calldatas,
        description: format!("Register model(s) {}; registry root 0x{}", names.join(", "), hex::encode(all.root())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_bounds_are_the_markets() {
        let ok = |p: ProposeCommand| check_parameters(&p).is_ok();
        assert!(!ok(ProposeCommand::Sequencer {
            address: format!("{}", alloy::primitives::Address::ZERO),
            allowed: true
        }));
        assert!(ok(ProposeCommand::Sequencer { address: format!("0x{}", "12".repeat(20)), allowed: false }));
        assert!(!ok(ProposeCommand::MinPayment { tgrid: "1e18".into() }));
        assert!(ok(ProposeCommand::Fees { protocol_bps: 100, settler_bps: 2_000 }));
        assert!(!ok(ProposeCommand::Fees { protocol_bps: 2_001, settler_bps: 0 }));
        assert!(ok(ProposeCommand::Delays {
            max_deadline: 7 * DAY,
            dispute_window: DAY,
            deposit_unlock: 8 * DAY,
            unbonding: 8 * DAY
        }));
        // Unbonding shorter than the longest deadline plus the dispute window.
        assert!(!ok(ProposeCommand::Delays {
            max_deadline: 7 * DAY,
            dispute_window: 2 * DAY,
            deposit_unlock: 8 * DAY,
            unbonding: 8 * DAY
        }));
        assert!(!ok(ProposeCommand::Delays {
            max_deadline: 7 * DAY,
            dispute_window: DAY,
            deposit_unlock: 7 * DAY,
            unbonding: 8 * DAY
        }));
        assert!(!ok(ProposeCommand::SelfSettlementWindow { seconds: 299 }));
        assert!(ok(ProposeCommand::SelfSettlementWindow { seconds: 3_600 }));
        assert!(!ok(ProposeCommand::MaxBatchSize { tasks: 0 }));
        assert!(!ok(ProposeCommand::MaxBatchSize { tasks: 4_097 }));
        assert!(ok(ProposeCommand::MaxBatchSize { tasks: 256 }));
    }
}
