//! `tgrid stake` and `tgrid earnings`: a provider's bond in the market (slashable by disputes,
//! bonded stake first, then stake still unbonding) and its earnings (pay and settler fees).

use alloy::primitives::U256;
use anyhow::{anyhow, bail, Context, Result};
use clap::Subcommand;
use serde_json::json;
use tgrid_chain::bindings::IERC20;
use tgrid_chain::format_tgrid;
use tgrid_cli::{bad_input, Output};

use crate::common::{address, amount, connect, connect_reading, duration_text, when, Globals};

#[derive(Debug, Subcommand)]
pub(crate) enum StakeCommand {
    /// Bonded and unbonding stake, earnings and reputation (default: the signer).
    Status {
        /// The provider.
        account: Option<String>,
    },
    /// Bond more TGRID (approves the market first if needed).
    Add {
        /// Amount in TGRID.
        amount: String,
    },
    /// Move bonded stake to unbonding (restarts the unbonding delay of everything unbonding);
    /// it stays slashable until withdrawn.
    Unbond {
        /// Amount in TGRID (at most the bonded stake).
        amount: String,
    },
    /// Withdraw unbonding stake whose unbonding delay has passed.
    Withdraw,
}

#[derive(Debug, Subcommand)]
pub(crate) enum EarningsCommand {
    /// Withdraw the signer's earnings (pay of settled orders, settler fees).
    Withdraw,
}

fn positive(text: &str) -> Result<U256> {
    let v = amount(text, "AMOUNT")?;
    if v.is_zero() {
        return Err(bad_input(anyhow!("the amount must be above zero")));
    }
    Ok(v)
}

pub(crate) async fn run(command: StakeCommand, g: &Globals, out: Output) -> Result<()> {
    match command {
        StakeCommand::Status { account } => {
            let who = account.map(|a| address(&a, "account")).transpose()?;
            let ctx = if who.is_some() { connect_reading(g).await? } else { connect(g).await? };
            let who = who.unwrap_or(ctx.me);
            let market = ctx.market();
            let (bond, earner) = (market.bond(who).await?, market.earner(who).await?);
            let now = ctx.now().await?;
            let (bonded, unbonding) = (U256::from(bond.bonded), U256::from(bond.unbonding));
            let ready_at = bond.unbondingReadyAt.to::<u64>();
            let withdrawable = !unbonding.is_zero() && now >= ready_at;
            let earnings = U256::from(earner.earnings);
            out.emit(
                json!({
                    "account": who.to_string(),
                    "bonded": format_tgrid(bonded),
                    "unbonding": format_tgrid(unbonding),
                    "unbonding_ready_at": (!unbonding.is_zero()).then_some(ready_at),
                    "withdrawable": withdrawable,
                    "earnings": format_tgrid(earnings),
                    "tasks_settled": earner.tasksSettled,
                    "tasks_slashed": earner.tasksSlashed,
                }),
                || {
                    let mut text = format!(
                        "{who}\n  bonded    {} TGRID\n  earnings  {} TGRID (tgrid earnings withdraw)\n  tasks     {} settled and paid, {} slashed",
                        format_tgrid(bonded),
                        format_tgrid(earnings),
                        earner.tasksSettled,
                        earner.tasksSlashed
                    );
                    if !unbonding.is_zero() {
                        let w = if withdrawable { "withdrawable now".to_string() } else { format!("ready at {}", when(ready_at, now)) };
                        text += &format!("\n  unbonding {} TGRID (slashable until withdrawn), {w}", format_tgrid(unbonding));
                    }
                    text
                },
            )
        }
        StakeCommand::Add { amount: a } => {
            let v = positive(&a)?;
            let ctx = connect(g).await?;
            let token = IERC20::new(ctx.deployment.token, &ctx.chain);
            let balance = token.balanceOf(ctx.me).call().await.context("TGRID.balanceOf")?;
            if balance < v {
                bail!("{} holds {} TGRID, less than {}", ctx.me, format_tgrid(balance), format_tgrid(v));
            }
            let sent = ctx.market().stake(ctx.me, v).await?;
            let bonded = U256::from(ctx.market().bond(ctx.me).await?.bonded);
            out.emit(
                json!({"staked": format_tgrid(v), "bonded": format_tgrid(bonded), "tx": sent.transaction.to_string(), "gas": sent.gas_used}),
                || format!("bonded {} TGRID more; bonded {} TGRID in all", format_tgrid(v), format_tgrid(bonded)),
            )
        }
        StakeCommand::Unbond { amount: a } => {
            let v = positive(&a)?;
            let ctx = connect(g).await?;
            let market = ctx.market();
            let bonded = U256::from(market.bond(ctx.me).await?.bonded);
            if v > bonded {
                return Err(bad_input(anyhow!(
                    "{} has {} TGRID bonded: it can unbond at most that",
                    ctx.me,
                    format_tgrid(bonded)
                )));
            }
            let sent = market.request_unbonding(v).await?;
            let after = market.bond(ctx.me).await?;
            let ready_at = after.unbondingReadyAt.to::<u64>();
            let now = ctx.now().await?;
            out.emit(
                json!({
                    "unbonding": format_tgrid(U256::from(after.unbonding)),
                    "ready_at": ready_at,
                    "tx": sent.transaction.to_string(),
                    "gas": sent.gas_used,
                }),
                || {
                    format!(
                        "unbonding {} TGRID in all (slashable until withdrawn); withdrawable from {} (tgrid stake withdraw)",
                        format_tgrid(U256::from(after.unbonding)),
                        when(ready_at, now)
                    )
                },
            )
        }
        StakeCommand::Withdraw => {
            let ctx = connect(g).await?;
            let market = ctx.market();
            let b = market.bond(ctx.me).await?;
            let now = ctx.now().await?;
            let ready_at = b.unbondingReadyAt.to::<u64>();
            let unbonding = U256::from(b.unbonding);
            if unbonding.is_zero() {
                let delay = market.parameters().await?.unbondingDelay.to::<u64>();
                bail!(
                    "nothing is unbonding for {} (tgrid stake unbond AMOUNT first; it is withdrawable {} later)",
                    ctx.me,
                    duration_text(delay)
                );
            }
            if now < ready_at {
                bail!("the unbonding of {} TGRID is ready at {}", format_tgrid(unbonding), when(ready_at, now));
            }
            let sent = market.withdraw_stake().await?;
            out.emit(
                json!({"withdrawn": format_tgrid(sent.value), "tx": sent.transaction.to_string(), "gas": sent.gas_used}),
                || format!("withdrew {} TGRID of unbonded stake", format_tgrid(sent.value)),
            )
        }
    }
}

pub(crate) async fn earnings(command: EarningsCommand, g: &Globals, out: Output) -> Result<()> {
    let EarningsCommand::Withdraw = command;
    let ctx = connect(g).await?;
    let market = ctx.market();
    let earned = U256::from(market.earner(ctx.me).await?.earnings);
    if earned.is_zero() {
        bail!("nothing to withdraw: {} has no earnings (pay is credited when its orders settle)", ctx.me);
    }
    let sent = market.withdraw_earnings().await?;
    out.emit(
        json!({"withdrawn": format_tgrid(sent.value), "tx": sent.transaction.to_string(), "gas": sent.gas_used}),
        || format!("withdrew {} TGRID of earnings", format_tgrid(sent.value)),
    )
}
