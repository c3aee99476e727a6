//! `tgrid devnet`: moving a local anvil's clock (voting periods, timelock delays, deadlines).

use anyhow::{anyhow, Result};
use clap::Subcommand;
use serde_json::json;
use tgrid_chain::Governance;
use tgrid_cli::{bad_input, Output};

use crate::common::{connect, proposal_id, Globals, ANVIL_CHAIN_ID};

#[derive(Debug, Subcommand)]
pub(crate) enum DevnetCommand {
    /// Move anvil's clock forward and mine a block (voting periods, timelock delays, deadlines).
    AdvanceTime {
        /// Seconds to add.
        #[arg(default_value_t = 0)]
        seconds: u64,
        /// Instead: to just after this proposal's vote opens (its snapshot; a day after the
        /// proposal with the shipped governance defaults).
        #[arg(long, conflicts_with_all = ["past_voting", "past_timelock"])]
        voting_open: Option<String>,
        /// Instead: to just past this proposal's voting deadline.
        #[arg(long, conflicts_with = "past_timelock")]
        past_voting: Option<String>,
        /// Instead: to just past this queued proposal's timelock eta.
        #[arg(long)]
        past_timelock: Option<String>,
    },
}

pub(crate) async fn run(command: DevnetCommand, g: &Globals, out: Output) -> Result<()> {
    let DevnetCommand::AdvanceTime { seconds, voting_open, past_voting, past_timelock } = command;
    let voting_open = voting_open.as_deref().map(proposal_id).transpose()?;
    let past_voting = past_voting.as_deref().map(proposal_id).transpose()?;
    let past_timelock = past_timelock.as_deref().map(proposal_id).transpose()?;
    let ctx = connect(g).await?;
    if ctx.chain_id != ANVIL_CHAIN_ID {
        return Err(bad_input(anyhow!(
            "devnet commands move the clock of a local anvil only (chain {ANVIL_CHAIN_ID})"
        )));
    }
    let gov = Governance::new(ctx.deployment.governor, &ctx.chain);
    let now = ctx.now().await?;
    let target = match (voting_open, past_voting, past_timelock) {
        (Some(p), _, _) => Some(gov.voting_start(p).await? + 1),
        (_, Some(p), _) => Some(gov.voting_deadline(p).await? + 1),
        (_, _, Some(p)) => Some(gov.eta(p).await? + 1),
        _ => None,
    };
    let step = match target {
        Some(t) => t.saturating_sub(now).max(1),
        None => seconds.max(1),
    };
    tgrid_chain::advance_time(&ctx.chain, step).await?;
    let after = ctx.now().await?;
    out.emit(json!({"advanced_secs": step, "chain_time": after}), || {
        format!("devnet clock moved {step} s forward (chain time {after})")
    })
}
