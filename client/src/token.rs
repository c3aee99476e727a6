//! `tgrid token`: TGRID balances and transfers.

use anyhow::{Context, Result};
use clap::Subcommand;
use serde_json::json;
use tgrid_chain::bindings::IERC20;
use tgrid_chain::{confirm, format_tgrid};
use tgrid_cli::Output;

use crate::common::{address, amount, connect, connect_reading, Globals};

#[derive(Debug, Subcommand)]
pub(crate) enum TokenCommand {
    /// TGRID balance of an account (default: the signer).
    Balance { account: Option<String> },
    /// Transfer TGRID.
    Transfer {
        /// Recipient.
        to: String,
        /// Amount in TGRID.
        amount: String,
    },
}

pub(crate) async fn run(command: TokenCommand, g: &Globals, out: Output) -> Result<()> {
    match command {
        TokenCommand::Balance { account } => {
            let who = account.map(|a| address(&a, "account")).transpose()?;
            let ctx = if who.is_some() { connect_reading(g).await? } else { connect(g).await? };
            let who = who.unwrap_or(ctx.me);
            let balance =
                IERC20::new(ctx.deployment.token, &ctx.chain).balanceOf(who).call().await.context("TGRID.balanceOf")?;
            out.emit(json!({"account": who.to_string(), "balance": format_tgrid(balance)}), || {
                format!("{who}: {} TGRID", format_tgrid(balance))
            })
        }
        TokenCommand::Transfer { to, amount: a } => {
            let to = address(&to, "recipient")?;
            let v = amount(&a, "AMOUNT")?;
            let ctx = connect(g).await?;
            let token = IERC20::new(ctx.deployment.token, &ctx.chain);
            let receipt = confirm("TGRID.transfer", token.transfer(to, v).send().await).await?;
            out.emit(
                json!({"to": to.to_string(), "amount": format_tgrid(v), "tx": receipt.transaction_hash.to_string()}),
                || format!("sent {} TGRID to {to}", format_tgrid(v)),
            )
        }
    }
}
