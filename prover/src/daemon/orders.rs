//! Finding orders in the relay and accepting them by signature, only when the daemon can finish,
//! be paid and, failing the sequencer, settle them itself.

use alloy::primitives::{B256, U256};
use alloy::providers::Provider;
use anyhow::{Context, Result};
use serde_json::json;
use tgrid_chain::format_tgrid as tgrid_amount;
use tgrid_chain::market::{Acceptance, RelayError, RelayState};

use super::{short, tokens, write_synced, Daemon, TaskRecord, TaskState};

/// Orders listed per page.
const LIST_LIMIT: usize = 50;

/// Pages of one model's listing read per round: the relay shows at most a few orders of one
/// poster per page, so later pages reach other posters' orders; the bound keeps a relay that
/// answers with cursor after cursor from holding the round.
const LIST_PAGES: usize = 4;

impl Daemon {
    /// Adds the relay's open orders of the held models to the state (as `Seen`).
    pub(super) async fn discover(&mut self) -> Result<()> {
        let block = self.chain.get_block_number().await.context("eth_blockNumber")?;
        let models: Vec<B256> = self.models.keys().copied().collect();
        for model in models {
            let listed = self.relay.orders_across_pages(model, RelayState::Open, LIST_LIMIT, LIST_PAGES).await?;
            for view in listed {
                if self.state.tasks.contains_key(&view.hash) {
                    continue;
                }
                // The relay is not trusted: the order must carry its poster's signature.
                match view.signed.verify(&self.domain) {
                    Ok(hash) if hash == view.hash => {}
                    _ => {
                        tracing::warn!(order = %view.hash, "the relay listed an order whose signature does not verify");
                        continue;
                    }
                }
                let o = &view.signed.order;
                let name = self.models[&model].name.clone();
                self.event(
                    "seen",
                    json!({"task_id": view.hash.to_string(), "model": name, "payment": tgrid_amount(U256::from(o.payment)), "deadline": o.deadline}),
                    format!("order {} for {name}: payment {} TGRID", short(&view.hash), tgrid_amount(U256::from(o.payment))),
                );
                let record = TaskRecord {
                    order: view.signed,
                    acceptance: None,
                    seen_block: block,
                    receipt: None,
                    state: TaskState::Seen,
                };
                self.state.tasks.insert(view.hash, record);
            }
        }
        self.save()
    }

    /// Accepts a seen order if everything holds; skips it for good if it never will; leaves it
    /// seen (to look again next round) while its input is not published or the bond is busy.
    pub(super) async fn consider(&mut self, id: B256, now: u64) -> Result<()> {
        let record = self.state.tasks[&id].clone();
        let o = record.order.order.clone();
        if o.is_named() && o.provider != self.me {
            return self.skip(id, format!("names provider {}", o.provider));
        }
        // Time: the proving backlog ahead of it, its own proving, then the settlement margin.
        let estimate = match self.held(&o.model_id) {
            Ok(m) => m.prove_estimate,
            Err(e) => return self.skip(id, format!("{e:#}")),
        };
        let backlog: f64 = self
            .state
            .tasks
            .values()
            .filter(|r| r.state == TaskState::Accepted && r.deadline() <= o.deadline)
            .map(|r| self.models.get(&r.order.order.model_id).map_or(0.0, |m| m.prove_estimate))
            .sum();
        let needed = (backlog + estimate).ceil() as u64 + self.settings.settle_margin_secs;
        if now + needed > o.deadline {
            return self.skip(
                id,
                format!(
                    "deadline in {} s leaves less than the backlog and proving (~{:.0} s) plus the settlement margin ({} s)",
                    o.deadline.saturating_sub(now),
                    backlog + estimate,
                    self.settings.settle_margin_secs
                ),
            );
        }
        let params = self.market.parameters().await?;
        if let Err(reason) = within_longest_deadline(o.deadline, now, params.maxDeadlineDelay.saturating_to()) {
            return self.skip(id, reason);
        }
        let min_payment = tokens(self.settings.min_payment_tgrid).max(params.minPayment);
        if U256::from(o.payment) < min_payment {
            return self.skip(
                id,
                format!(
                    "payment {} TGRID is below {} TGRID",
                    tgrid_amount(U256::from(o.payment)),
                    tgrid_amount(min_payment)
                ),
            );
        }
        // The poster's book must back it until the deadline (else the work could go unpaid).
        let book = self.market.book(o.poster, o.book()).await?;
        let unlock = book.unlockAt.to::<u64>();
        let unbacked = if o.index() >= book.capacity.to::<u32>() {
            Some(format!("index {} is beyond book {}'s capacity {}", o.index(), o.book(), book.capacity))
        } else if o.payment > book.perOrderMax.to::<u128>() || o.payment > book.remaining.to::<u128>() {
            Some(format!("book {} cannot pay {}", o.book(), tgrid_amount(U256::from(o.payment))))
        } else if unlock != 0 && unlock <= o.deadline {
            Some(format!("book {} unlocks at {unlock}, before the deadline", o.book()))
        } else {
            None
        };
        if let Some(reason) = unbacked {
            return self.skip(id, format!("the poster's deposit does not back it: {reason}"));
        }
        if self.market.nonce_used(o.poster, o.nonce).await? {
            return self.skip(id, "its nonce is already used on-chain".into());
        }
        // The bond must cover every acceptance that may still end in a dispute, this one included.
        let exposure: u128 = self
            .state
            .tasks
            .values()
            .filter(|r| {
                r.acceptance.is_some() && !matches!(r.state, TaskState::Settled { .. } | TaskState::Skipped { .. })
            })
            .map(|r| r.order.order.collateral)
            .sum::<u128>()
            + o.collateral;
        let bonded = self.market.bond(self.me).await?.bonded.to::<u128>();
        if bonded < exposure {
            tracing::info!(task = %id, bonded, exposure, "bond does not cover another acceptance yet");
            return Ok(());
        }
        let input = match self.input(&record).await {
            Ok(Some(x)) => x,
            // Not published yet: look again next round (never accept what cannot be proven).
            Ok(None) => return Ok(()),
            Err(e) => return self.skip(id, format!("{e:#}")),
        };
        let acceptance = Acceptance::sign(id, &self.signer, &self.domain)?;
        // Binding from here on: whoever holds the signature (a relay, which providers need not
        // trust, keeps what it is sent whatever it answers) can hand it to the poster, who may
        // dispute after the deadline. So the acceptance is saved, and the order owed, before it
        // leaves this machine; whatever the relay answers, the daemon proves the order and, if
        // no one settles it, settles it itself.
        // Kept beside the proof: once accepted, proving must not depend on the store.
        write_synced(&self.accepted_input_path(&id), &serde_json::to_vec(&input)?)?;
        if let Some(r) = self.state.tasks.get_mut(&id) {
            r.acceptance = Some(acceptance.clone());
            r.state = TaskState::Accepted;
        }
        self.save()?;
        let relay = match self.relay.accept(&acceptance).await {
            Ok(_) => "recorded".to_string(),
            Err(e) => {
                let why = match &e {
                    RelayError::Refused { status, reason, .. } => format!("refused ({status}): {reason}"),
                    other => format!("{other}"),
                };
                tracing::warn!(order = %id, relay = %why, "the relay did not confirm the acceptance; it binds all the same: proving it");
                why
            }
        };
        self.event(
            "accepted",
            json!({"task_id": id.to_string(), "collateral": tgrid_amount(U256::from(o.collateral)), "deadline_in_secs": o.deadline.saturating_sub(now), "relay": relay}),
            format!(
                "accepted order {} (collateral {} TGRID at stake, deadline in {} s)",
                short(&id),
                tgrid_amount(U256::from(o.collateral)),
                o.deadline.saturating_sub(now)
            ),
        );
        Ok(())
    }
}

/// Refuses an order whose deadline is further than the market's longest deadline: the relay
/// that listed it need not be trusted, and only within that delay does a book closed right after
/// the acceptance still pay at the deadline (the deposit unlock delay exceeds it).
fn within_longest_deadline(deadline: u64, now: u64, longest: u64) -> Result<(), String> {
    if deadline > now.saturating_add(longest) {
        return Err(format!(
            "deadline in {} s is beyond the market's longest deadline ({longest} s): the poster's book could \
             unlock before it",
            deadline - now
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::within_longest_deadline;

    #[test]
    fn an_order_past_the_longest_deadline_is_refused() {
        assert!(within_longest_deadline(1_000 + 3_600, 1_000, 3_600).is_ok());
        let why = within_longest_deadline(1_000 + 3_601, 1_000, 3_600).unwrap_err();
        assert!(why.contains("beyond the market's longest deadline (3600 s)"), "{why}");
        assert!(within_longest_deadline(u64::MAX, u64::MAX - 1, u64::MAX).is_ok(), "no overflow");
    }
}
