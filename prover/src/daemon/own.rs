//! What the provider does on its own account: settling its results that no sequencer settled in
//! time, and withdrawing its earnings.

use std::sync::Arc;

use alloy::primitives::{B256, U256};
use anyhow::{Context, Result};
use serde_json::json;
use tgrid_chain::format_tgrid as tgrid_amount;
use tgrid_circuits::TaskProof;

use super::{Daemon, TaskState};
use crate::settle::{OwnResult, SelfSettler};

impl Daemon {
    /// Settles, in one batch, every delivered order whose deadline is within
    /// `self_settle_before_secs` and whose nonce is still unused.
    pub(super) async fn settle_own(&mut self, now: u64) -> Result<()> {
        let before = self.settings.self_settle_before_secs;
        let due: Vec<B256> = self
            .state
            .tasks
            .iter()
            .filter(|(_, r)| r.state.delivered_unsettled() && r.deadline() >= now && r.deadline() <= now + before)
            .map(|(id, _)| *id)
            .collect();
        let mut results = Vec::new();
        for id in due {
            let o = &self.state.tasks[&id].order.order;
            if self.market.nonce_used(o.poster, o.nonce).await? {
                continue; // settled meanwhile: `follow` records it
            }
            let bytes = std::fs::read(self.proof_path(&id))?;
            let proof = TaskProof::from_bytes(&bytes).with_context(|| format!("the stored proof of order {id}"))?;
            // Its leaf, if it was proven with the result (`prove_leaves`); checked before use.
            let leaf = std::fs::read(self.leaf_path(&id)).ok();
            results.push(OwnResult { order: self.state.tasks[&id].order.clone(), proof, leaf });
        }
        if results.is_empty() {
            return Ok(());
        }
        let ids: Vec<String> = results.iter().map(|r| r.order.hash(&self.domain).to_string()).collect();
        self.event(
            "self_settling",
            json!({"task_ids": ids, "orders": results.len()}),
            format!(
                "{} order(s) near their deadline are unsettled: settling them from this provider's account",
                results.len()
            ),
        );
        let aggregator = self.chain_aggregator().await?;
        let settler = self.settler().await?;
        let bar = self.out.spinner("self-settlement: aggregating and wrapping");
        let settled = settler.settle(aggregator, &self.chain, &self.deployment, self.me, results).await;
        bar.finish_and_clear();
        let settled = settled?;
        self.event(
            "self_settled",
            json!({
                "tx": settled.transaction.to_string(),
                "gas_used": settled.gas_used,
                "prove_seconds": settled.prove_seconds,
                "leaves_reused": settled.leaves_reused,
                "skipped": settled.skipped.iter().map(|(h, r)| json!({"task_id": h.to_string(), "reason": r})).collect::<Vec<_>>(),
                "unpaid": settled.unpaid.len(),
            }),
            format!(
                "self-settled in {:.0} s of proving: tx {}, {} gas{}",
                settled.prove_seconds,
                settled.transaction,
                settled.gas_used,
                if settled.skipped.is_empty() { String::new() } else { format!(", {} skipped", settled.skipped.len()) }
            ),
        );
        Ok(())
    }

    /// The self-settlement wrap circuits and key, built on first use.
    async fn settler(&mut self) -> Result<Arc<SelfSettler>> {
        if let Some(s) = &self.settler {
            return Ok(s.clone());
        }
        let bar = self.out.spinner("building the self-settlement wrap circuits and loading the wrap key");
        let fri = self.settings.wrap_fri.params();
        let built = SelfSettler::build(&self.chain, &self.deployment, &self.settings.wrap_key_setting(), fri).await;
        bar.finish_and_clear();
        let settler = Arc::new(built?);
        self.settler = Some(settler.clone());
        Ok(settler)
    }

    /// The aggregator of this provider's models under the chain's current registry: it proves
    /// the provider's leaves (`prove_leaves`) and its self-settlements, one copy for both.
    /// Built on first use (the aggregation circuits, a leaf circuit per model and mode), rebuilt
    /// when the chain's registry root is no longer the one it proves membership under.
    pub(super) async fn chain_aggregator(&mut self) -> Result<Arc<tgrid_settlement_proof::Aggregator>> {
        let root = crate::settle::chain_registry_root(&self.chain, &self.deployment).await?;
        if let Some(a) = self.aggregator.as_ref().filter(|a| a.registry().root() == root) {
            return Ok(a.clone());
        }
        let bar = self.out.spinner("building the aggregation circuits for the chain's registry");
        let models = self.own_model_files();
        let built = crate::settle::chain_aggregator(&self.chain, &self.deployment, &models).await;
        bar.finish_and_clear();
        let aggregator = Arc::new(built?);
        self.aggregator = Some(aggregator.clone());
        Ok(aggregator)
    }

    /// The model files this provider holds, each once (a model held in both modes is one file).
    fn own_model_files(&self) -> Vec<tgrid_circuits::ModelFile> {
        let mut models: Vec<tgrid_circuits::ModelFile> = Vec::new();
        for m in self.models.values() {
            if !models.iter().any(|f| f.model.model_id() == m.file.model.model_id()) {
                models.push(m.file.clone());
            }
        }
        models
    }

    /// Withdraws the provider's earnings once orders settled since the last withdrawal.
    pub(super) async fn withdraw_earnings(&mut self) -> Result<()> {
        if self.settled_since_withdrawal == 0 {
            return Ok(());
        }
        let earnings = U256::from(self.market.earner(self.me).await?.earnings);
        if earnings.is_zero() {
            self.settled_since_withdrawal = 0;
            return Ok(());
        }
        let sent = self.market.withdraw_earnings().await?;
        self.settled_since_withdrawal = 0;
        let settled =
            self.state.tasks.values().filter(|r| matches!(r.state, TaskState::Settled { paid: true, .. })).count();
        self.event(
            "withdrawn",
            json!({"amount": tgrid_amount(sent.value), "tx": sent.transaction.to_string(), "orders_paid": settled}),
            format!("withdrew {} TGRID of earnings (tx {})", tgrid_amount(sent.value), sent.transaction),
        );
        Ok(())
    }
}
