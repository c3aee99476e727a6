//! `tgrid dispute`: after an order's deadline and within the dispute window, anyone presents the
//! poster's signed order and the provider's signed acceptance of it; if the order never settled,
//! the provider is slashed on the terms it accepted and the poster compensated from the slash.

use std::path::PathBuf;

use alloy::primitives::U256;
use anyhow::{anyhow, bail, Result};
use clap::Args;
use serde_json::json;
use tgrid_chain::format_tgrid;
use tgrid_chain::market::{Acceptance, MarketDomain};
use tgrid_cli::{bad_input, Output};

use crate::common::{connect, read_json_file, relay_view, when, Globals, OrderArg, DEFAULT_RELAY};
use crate::outcome::outcome_word;

#[derive(Debug, Args)]
pub(crate) struct DisputeArgs {
    /// Order hash (0x + 64 hex digits) or the order's JSON file.
    order: String,
    /// The provider's signed acceptance (JSON); default: the one the relay recorded.
    #[arg(long)]
    acceptance: Option<PathBuf>,
    /// Order relay (the sequencer's API).
    #[arg(long, env = "TGRID_RELAY_URL", default_value = DEFAULT_RELAY)]
    relay: String,
}

/// Decodes an acceptance file (bad input naming it).
pub(crate) fn parse_acceptance(bytes: &[u8], path: &std::path::Path) -> Result<Acceptance> {
    serde_json::from_slice(bytes).map_err(|e| {
        bad_input(anyhow!("{} is not a signed acceptance ({{orderHash, provider, signature}}): {e}", path.display()))
    })
}

pub(crate) async fn run(a: DisputeArgs, g: &Globals, out: Output) -> Result<()> {
    let arg = OrderArg::read(&a.order)?;
    let given = match &a.acceptance {
        Some(path) => Some(parse_acceptance(&read_json_file(path)?, path)?),
        None => None,
    };
    let domain = MarketDomain::of(&g.load_deployment()?);
    let o = arg.load(g, &domain, Some(&a.relay)).await?;
    let ctx = connect(g).await?;
    let recorded = o.view.as_ref().and_then(|v| v.acceptance.clone());
    let acceptance = match (given, recorded) {
        (Some(acc), _) | (None, Some(acc)) => acc,
        (None, None) => {
            let view = if o.from_relay {
                o.view.clone()
            } else {
                Some(relay_view(&a.relay, o.hash).await.map_err(|e| {
                    anyhow!("no --acceptance given, and the relay's acceptance of {} could not be read: {e}", o.hash)
                })?)
            };
            view.and_then(|v| v.acceptance).ok_or_else(|| {
                bad_input(anyhow!(
                    "the relay at {} records no acceptance of order {}: give the provider's signed acceptance with \
                     --acceptance",
                    a.relay,
                    o.hash
                ))
            })?
        }
    };
    let order = &o.signed.order;
    if acceptance.order_hash != o.hash {
        return Err(bad_input(anyhow!("the acceptance is of order {}, not {}", acceptance.order_hash, o.hash)));
    }
    acceptance.verify(&domain).map_err(|e| bad_input(anyhow!("the acceptance of {}: {e}", o.hash)))?;
    if order.is_named() && order.provider != acceptance.provider {
        return Err(bad_input(anyhow!(
            "order {} names provider {}, the acceptance is {}'s",
            o.hash,
            order.provider,
            acceptance.provider
        )));
    }

    let market = ctx.market();
    let params = market.parameters().await?;
    let now = ctx.now().await?;
    let window = params.disputeWindow.to::<u64>();
    if now <= order.deadline {
        bail!(
            "order {}'s deadline has not passed: it can be disputed after {}, before {}",
            o.hash,
            when(order.deadline, now),
            when(order.deadline + window, now)
        );
    }
    if now >= order.deadline + window {
        bail!("the dispute window of order {} closed at {}", o.hash, when(order.deadline + window, now));
    }
    if U256::from(order.payment) < params.minPayment {
        bail!(
            "order {} pays {} TGRID, below the market's minimum payment of {} TGRID: it cannot be disputed",
            o.hash,
            format_tgrid(U256::from(order.payment)),
            format_tgrid(params.minPayment)
        );
    }
    if market.nonce_used(order.poster, order.nonce).await? {
        let d = &ctx.deployment;
        let outcome = tgrid_chain::order_outcome(&ctx.chain, d.market, &domain, order, d.start_block).await?;
        bail!("order {} is {}: it can no longer be disputed", o.hash, outcome_word(&outcome));
    }
    let spinner = out.spinner("disputing");
    let sent = market.dispute(&o.signed, &acceptance).await;
    spinner.finish_and_clear();
    let sent = sent?;
    let (slashed, to_poster) = sent.value;
    out.emit(
        json!({
            "order_hash": o.hash.to_string(),
            "provider": acceptance.provider.to_string(),
            "poster": order.poster.to_string(),
            "slashed": format_tgrid(slashed),
            "to_poster": format_tgrid(to_poster),
            "tx": sent.transaction.to_string(),
            "gas": sent.gas_used,
        }),
        || {
            format!(
                "disputed order {}: provider {} slashed {} TGRID, {} TGRID paid to the poster {} (gas {})",
                o.hash,
                acceptance.provider,
                format_tgrid(slashed),
                format_tgrid(to_poster),
                order.poster,
                sent.gas_used
            )
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_acceptances_are_bad_input() {
        for bad in [&b"{}"[..], b"\xff\xfe", b"{\"orderHash\":\"0x00\",\"provider\":\"0x00\",\"signature\":\"0x\"}"] {
            let err = parse_acceptance(bad, std::path::Path::new("acc.json")).unwrap_err();
            assert!(err.downcast_ref::<tgrid_cli::BadInput>().is_some());
            assert!(format!("{err:#}").contains("acc.json is not a signed acceptance"), "{err:#}");
        }
    }
}
