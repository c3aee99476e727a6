//! `tgrid deposit`: a poster's deposit books. A book of capacity C and per-order maximum M is
//! funded with C·M TGRID when opened and pays each of its C order indices at most once, at most M.

use alloy::primitives::{Address, U256};
use anyhow::{anyhow, bail, Context, Result};
use clap::Subcommand;
use serde_json::json;
use tgrid_chain::bindings::IERC20;
use tgrid_chain::format_tgrid;
use tgrid_cli::{bad_input, Output};

use crate::common::{address, amount, connect, connect_reading, duration_text, when, Globals};
use crate::poster::{BookInfo, PosterState};

/// Largest capacity of a book (24 bits).
pub(crate) const MAX_CAPACITY: u64 = (1 << 24) - 1;

#[derive(Debug, Subcommand)]
pub(crate) enum DepositCommand {
    /// Open a deposit book of floor(AMOUNT / MAX) orders paying at most MAX each, funded with
    /// capacity × MAX TGRID (approving the market first if needed).
    Add {
        /// TGRID to deposit (at most; the remainder below one more order stays in the wallet).
        amount: String,
        /// Largest payment of one order of the book, in TGRID.
        #[arg(long = "per-order", value_name = "MAX")]
        per_order: String,
    },
    /// Every book of an account (default: the signer) with the orders signed from it locally.
    Status {
        /// The poster.
        account: Option<String>,
    },
    /// Close a book: its remainder unlocks after the deposit unlock delay (its orders can still
    /// settle until then).
    Close {
        /// Book id.
        book: u32,
    },
    /// Withdraw the remainder of a closed book whose unlock time has passed.
    Withdraw {
        /// Book id.
        book: u32,
    },
}

/// The capacity of a book funded with at most `amount` at `per_order` each (bad input when it
/// is not 1 .. 2^24-1).
pub(crate) fn capacity(amount: U256, per_order: U256) -> Result<u32> {
    if per_order.is_zero() {
        return Err(bad_input(anyhow!("--per-order must be above zero")));
    }
    let c = amount / per_order;
    if c.is_zero() {
        return Err(bad_input(anyhow!(
            "a book needs room for at least one order: {} TGRID buys no order of up to {} TGRID (capacity 0)",
            format_tgrid(amount),
            format_tgrid(per_order)
        )));
    }
    if c > U256::from(MAX_CAPACITY) {
        return Err(bad_input(anyhow!(
            "capacity {c} is more than a book holds ({MAX_CAPACITY} orders): raise --per-order or deposit less"
        )));
    }
    Ok(c.to::<u32>())
}

pub(crate) async fn run(command: DepositCommand, g: &Globals, out: Output) -> Result<()> {
    match command {
        DepositCommand::Add { amount: a, per_order } => {
            let (total, max) = (amount(&a, "AMOUNT")?, amount(&per_order, "--per-order")?);
            let cap = capacity(total, max)?;
            let funded = max * U256::from(cap);
            if funded >= U256::from(1u128 << 96) {
                return Err(bad_input(anyhow!("{} TGRID is more than a book holds", format_tgrid(funded))));
            }
            let ctx = connect(g).await?;
            let token = IERC20::new(ctx.deployment.token, &ctx.chain);
            let balance = token.balanceOf(ctx.me).call().await.context("TGRID.balanceOf")?;
            if balance < funded {
                bail!(
                    "{} holds {} TGRID, less than the {} TGRID the book needs",
                    ctx.me,
                    format_tgrid(balance),
                    format_tgrid(funded)
                );
            }
            let spinner = out.spinner("opening the book");
            let sent = ctx.market().open_book(ctx.me, cap, max).await;
            spinner.finish_and_clear();
            let sent = sent?;
            out.emit(
                json!({
                    "book": sent.value,
                    "capacity": cap,
                    "per_order_max": format_tgrid(max),
                    "funded": format_tgrid(funded),
                    "tx": sent.transaction.to_string(),
                    "gas": sent.gas_used,
                }),
                || {
                    let mut text = format!(
                        "opened book {} of {} order(s) of at most {} TGRID: funded {} TGRID (gas {})",
                        sent.value,
                        cap,
                        format_tgrid(max),
                        format_tgrid(funded),
                        sent.gas_used
                    );
                    if funded < total {
                        text +=
                            &format!("\n  {} TGRID of the amount stays in the wallet", format_tgrid(total - funded));
                    }
                    text
                },
            )
        }
        DepositCommand::Status { account } => {
            let who = account.map(|a| address(&a, "account")).transpose()?;
            let ctx = if who.is_some() { connect_reading(g).await? } else { connect(g).await? };
            let who = who.unwrap_or(ctx.me);
            status(&ctx, g, who, out).await
        }
        DepositCommand::Close { book } => {
            let ctx = connect(g).await?;
            let b = existing(&ctx, book).await?;
            let now = ctx.now().await?;
            if b.unlock_at != 0 {
                bail!("book {book} is already {}: it unlocks at {}", b.state(now), when(b.unlock_at, now));
            }
            let sent = ctx.market().close_book(book).await?;
            let unlock_at = BookInfo::of(book, &ctx.market().book(ctx.me, book).await?).unlock_at;
            out.emit(
                json!({"book": book, "unlock_at": unlock_at, "tx": sent.transaction.to_string(), "gas": sent.gas_used}),
                || {
                    format!(
                        "closed book {book}: withdrawable from {} (tgrid deposit withdraw {book}); its orders can still settle until then",
                        when(unlock_at, now)
                    )
                },
            )
        }
        DepositCommand::Withdraw { book } => {
            let ctx = connect(g).await?;
            let b = existing(&ctx, book).await?;
            let now = ctx.now().await?;
            if b.unlock_at == 0 {
                let delay = ctx.market().parameters().await?.depositUnlockDelay.to::<u64>();
                bail!(
                    "book {book} is open: close it first (tgrid deposit close {book}); it can be withdrawn {} later",
                    duration_text(delay)
                );
            }
            if now < b.unlock_at {
                bail!("book {book} is closing: it can be withdrawn from {}", when(b.unlock_at, now));
            }
            if b.remaining == 0 {
                bail!("book {book} holds nothing: it was withdrawn (or paid out) already");
            }
            let sent = ctx.market().withdraw_book(book).await?;
            out.emit(
                json!({"book": book, "withdrawn": format_tgrid(sent.value), "tx": sent.transaction.to_string(), "gas": sent.gas_used}),
                || format!("withdrew {} TGRID from book {book}", format_tgrid(sent.value)),
            )
        }
    }
}

/// The signer's book `id` (bad input if it has none).
async fn existing(ctx: &crate::common::Ctx, id: u32) -> Result<BookInfo> {
    let b = BookInfo::of(id, &ctx.market().book(ctx.me, id).await?);
    if b.capacity == 0 {
        return Err(bad_input(anyhow!("{} has no book {id}", ctx.me)));
    }
    Ok(b)
}

async fn status(ctx: &crate::common::Ctx, g: &Globals, who: Address, out: Output) -> Result<()> {
    let market = ctx.market();
    let books: Vec<BookInfo> =
        market.books(who).await?.iter().enumerate().map(|(i, b)| BookInfo::of(i as u32, b)).collect();
    let state = PosterState::load(&g.state_dir, who, ctx.chain_id, ctx.deployment.market)?;
    let now = ctx.now().await?;
    let mut listed = Vec::new();
    for b in &books {
        let mut orders = Vec::new();
        for o in state.books.get(&b.id).map(|s| s.orders.as_slice()).unwrap_or_default() {
            let used = market.nonce_used(who, tgrid_chain::market::Order::nonce_of(b.id, o.index)).await?;
            orders.push(json!({
                "index": o.index,
                "hash": o.hash.to_string(),
                "payment": format_tgrid(U256::from(o.payment)),
                "deadline": o.deadline,
                "nonce_used": used,
            }));
        }
        listed.push(json!({
            "book": b.id,
            "remaining": format_tgrid(U256::from(b.remaining)),
            "per_order_max": format_tgrid(U256::from(b.per_order_max)),
            "capacity": b.capacity,
            "state": b.state(now),
            "unlock_at": (b.unlock_at != 0).then_some(b.unlock_at),
            "next_index": state.next_index(b.id),
            "orders": orders,
        }));
    }
    out.emit(json!({"account": who.to_string(), "chain_time": now, "books": listed}), || {
        if books.is_empty() {
            return format!("{who} has no deposit book (tgrid deposit add AMOUNT --per-order MAX)");
        }
        let mut text = format!("{who}: {} book(s)", books.len());
        for (b, v) in books.iter().zip(&listed) {
            let state = match b.state(now) {
                "closing" => format!("closing until {}", when(b.unlock_at, now)),
                s => s.to_string(),
            };
            text += &format!(
                "\n  book {}: {} TGRID left, up to {} TGRID per order, capacity {}, {state}",
                b.id,
                format_tgrid(U256::from(b.remaining)),
                format_tgrid(U256::from(b.per_order_max)),
                b.capacity
            );
            for o in v["orders"].as_array().into_iter().flatten() {
                text += &format!(
                    "\n    #{} {} {} TGRID, deadline {}{}",
                    o["index"],
                    o["hash"].as_str().unwrap_or_default(),
                    o["payment"].as_str().unwrap_or_default(),
                    o["deadline"],
                    if o["nonce_used"] == true { " (nonce used: settled, disputed or cancelled)" } else { "" }
                );
            }
        }
        text
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> U256 {
        tgrid_chain::parse_tgrid(s).unwrap()
    }

    #[test]
    fn capacity_is_the_whole_number_of_orders() {
        assert_eq!(capacity(t("100"), t("10")).unwrap(), 10);
        assert_eq!(capacity(t("105.5"), t("10")).unwrap(), 10);
        assert_eq!(capacity(t("1"), t("0.000001")).unwrap(), 1_000_000);
        let err = capacity(t("5"), t("10")).unwrap_err();
        assert!(format!("{err:#}").contains("capacity 0"), "{err:#}");
        assert!(capacity(t("5"), t("0")).is_err());
        let err = capacity(t("100"), t("0.000001")).unwrap_err();
        assert!(format!("{err:#}").contains("more than a book holds"), "{err:#}");
    }
}
