//! `tgrid-prover run`: the provider daemon. It keeps the provider bonded, finds open orders of
//! the models it holds in the relay, accepts by signature those it can finish and settle before
//! their deadline (only once the poster's book backs them, its bond covers what it accepted, and
//! the input is published and matches the order), infers, proves, submits to the sequencer,
//! follows each order on-chain until it settles, settles itself what the sequencer did not settle
//! in time, and withdraws its earnings.
//!
//! Inputs come from a content-addressed store (a directory, or an HTTP URL) where posters publish
//! `<input commitment>.json`; an accepted order's input is kept under `data_dir/inputs`.
//!
//! Private tasks (the model's private id in the order): the daemon holds an opening key
//! (`data_dir/sealing.key`, created on first start) and announces its public half on the relay
//! under its account's signature. A poster seals the input to it as `<input commitment>.tgs`; the
//! daemon accepts only once the sealed input opens and matches the order's (salted) commitment,
//! proves with a zero-knowledge proof that also encrypts the output under the key of the input's
//! salt, and delivers that ciphertext (only the poster, who chose the salt, can decrypt it).
//!
//! Every step is written to `data_dir/state.json` (atomically) before the next begins, so a
//! restart resumes: accepted orders are proven, proven ones resubmitted (the sequencer treats a
//! repeat as idempotent), nothing is accepted twice.

mod orders;
mod own;
mod settings;
mod state;
mod work;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use alloy::primitives::{Address, B256, U256};
use alloy::providers::DynProvider;
use alloy::signers::local::PrivateKeySigner;
use anyhow::{bail, Context, Result};
use serde_json::json;
use tgrid_chain::bindings::IERC20;
use tgrid_chain::market::SealingKeyAnnouncement;
use tgrid_chain::market::{Market, MarketDomain, RelayClient};
use tgrid_chain::{format_tgrid as tgrid_amount, Deployment};
use tgrid_circuits::{ModelFile, Privacy, TaskProver};
use tgrid_cli::Output;
use tgrid_seal::OpeningKey;

pub use settings::{Settings, ANVIL_KEY_1};
pub use state::{State, TaskRecord, TaskState};

use crate::settle::SelfSettler;

/// A model this provider can prove, in one mode (each mode has its own id and circuit).
struct HeldModel {
    file: ModelFile,
    prover: Arc<TaskProver>,
    name: String,
    privacy: Privacy,
    /// Expected proving time (seconds): the setting until a proof was timed, then 1.5× the
    /// slowest proof seen.
    prove_estimate: f64,
    measured: bool,
}

fn tokens(whole: u64) -> U256 {
    U256::from(whole) * U256::from(10u64).pow(U256::from(18u64))
}

struct Daemon {
    settings: Settings,
    out: Output,
    chain: DynProvider,
    market: Market<DynProvider>,
    deployment: Deployment,
    domain: MarketDomain,
    signer: PrivateKeySigner,
    me: Address,
    relay: RelayClient,
    http: alloy::transports::http::reqwest::Client,
    models: HashMap<B256, HeldModel>,
    state: State,
    state_path: PathBuf,
    /// The wrap circuits and key, built on the first self-settlement (a few GB, tens of
    /// seconds), then kept.
    settler: Option<Arc<SelfSettler>>,
    /// The aggregator of the provider's leaves (`prove_leaves`) and self-settlements, built on
    /// first use and rebuilt when the chain's registry root moves.
    aggregator: Option<Arc<tgrid_settlement_proof::Aggregator>>,
    /// Orders settled since the last earnings withdrawal.
    settled_since_withdrawal: u64,
    /// Opens inputs of private tasks sealed to this provider.
    opening_key: OpeningKey,
    /// Whether the relay holds this provider's sealing key (announced at start, retried each
    /// round until it does).
    key_announced: bool,
}

/// Runs the daemon until SIGINT or SIGTERM.
pub fn run(settings: Settings, out: Output) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    runtime.block_on(async move {
        let mut daemon = Daemon::start(settings, out).await?;
        let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        loop {
            let round = daemon.round();
            tokio::select! {
                // A node or disk hiccup fails one round, never the daemon: its work is in the
                // state file and the next round picks it up.
                r = round => if let Err(e) = r {
                    tracing::warn!("round failed, retrying: {e:#}");
                },
                _ = tokio::signal::ctrl_c() => break,
                _ = terminate.recv() => break,
            }
            let idle = tokio::time::sleep(Duration::from_millis(daemon.settings.poll_interval_ms));
            tokio::select! {
                _ = idle => {}
                _ = tokio::signal::ctrl_c() => break,
                _ = terminate.recv() => break,
            }
        }
        daemon.event("stopped", json!({}), "stopped (state saved; a restart resumes)".into());
        Ok(())
    })
}

fn short(id: &B256) -> String {
    let h = format!("{id}");
    format!("{}…", &h[..10])
}

impl Daemon {
    async fn start(settings: Settings, out: Output) -> Result<Self> {
        let deployment = Deployment::load(&settings.deployment)?;
        // The deployment's chain id is the node's (check_chain below).
        settings.check_chain(deployment.chain_id)?;
        let signer = settings.signer()?;
        let me = signer.address();
        let chain = tgrid_chain::signing(&settings.rpc_url, signer.clone())?;
        tgrid_chain::check_chain(&chain, &settings.rpc_url, &deployment).await?;
        for dir in ["proofs", "outputs", "inputs"] {
            std::fs::create_dir_all(settings.data_dir.join(dir))
                .with_context(|| format!("cannot create {}", settings.data_dir.display()))?;
        }
        let state_path = settings.data_dir.join("state.json");
        let state = State::load(&state_path)?;

        let mut models = HashMap::new();
        let modes: &[Privacy] =
            if settings.private_tasks { &[Privacy::Public, Privacy::Private] } else { &[Privacy::Public] };
        for path in &settings.models {
            let file = crate::load_model(path)?;
            let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            for &privacy in modes {
                let prover = TaskProver::with_privacy(file.model.clone(), file.plan.clone(), privacy)
                    .with_context(|| format!("building the {} circuit of {}", privacy.name(), path.display()))?;
                let id = B256::from(prover.task_model_id());
                let name = match privacy {
                    Privacy::Public => stem.clone(),
                    Privacy::Private => format!("{stem} (private)"),
                };
                let prove_estimate = settings.initial_prove_estimate_secs as f64;
                let held = HeldModel {
                    file: file.clone(),
                    prover: Arc::new(prover),
                    name,
                    privacy,
                    prove_estimate,
                    measured: false,
                };
                models.insert(id, held);
            }
        }
        let registry = tgrid_chain::bindings::IModelRegistry::new(deployment.registry, &chain);
        for (id, m) in &models {
            if !registry.isModelActive(*id).call().await.context("ModelRegistry.isModelActive")? {
                // A model need not be registered in both modes; its public mode should be.
                if m.privacy == Privacy::Public {
                    tracing::warn!(model = %id, name = m.name, "model is not registered on-chain (yet): no order can settle");
                } else {
                    tracing::info!(model = %id, name = m.name, "the model's private mode is not registered on-chain (yet)");
                }
            }
        }
        let (opening_key, created) = tgrid_seal::keyfile::load_or_create(&settings.data_dir.join("sealing.key"))?;
        if created {
            tracing::info!(key = %opening_key.sealing_key().to_hex(), "created this provider's sealing key");
        }
        let market = Market::new(&deployment, chain.clone());
        let params = market.parameters().await?;
        let window = params.selfSettlementWindow.saturating_to::<u64>();
        if settings.self_settle && settings.self_settle_before_secs > window {
            bail!(
                "provider settings: self_settle_before_secs ({}) is longer than the market's self-settlement window \
                 ({window} s): the market would skip the daemon's own settlements",
                settings.self_settle_before_secs
            );
        }
        let relay = RelayClient::new(&settings.sequencer_url, Duration::from_secs(60))?;
        let http = alloy::transports::http::reqwest::Client::builder().timeout(Duration::from_secs(60)).build()?;
        let domain = MarketDomain::of(&deployment);
        let daemon = Self {
            settings,
            out,
            chain,
            market,
            deployment,
            domain,
            signer,
            me,
            relay,
            http,
            models,
            state,
            state_path,
            settler: None,
            aggregator: None,
            settled_since_withdrawal: 0,
            opening_key,
            key_announced: false,
        };
        daemon.ensure_stake().await?;
        let bond = daemon.market.bond(me).await?;
        let earner = daemon.market.earner(me).await?;
        daemon.event(
            "ready",
            json!({
                "provider": me.to_string(),
                "models": daemon.models.iter().map(|(id, m)| json!({"model_id": id.to_string(), "name": m.name})).collect::<Vec<_>>(),
                "bonded": tgrid_amount(U256::from(bond.bonded)),
                "earnings": tgrid_amount(U256::from(earner.earnings)),
                "tasks_settled": earner.tasksSettled,
                "tasks_slashed": earner.tasksSlashed,
                "self_settle": daemon.settings.self_settle,
                "sealing_key": daemon.opening_key.sealing_key().to_hex(),
            }),
            format!(
                "provider {me} ready: {} model(s), bonded {} TGRID, earnings {} TGRID, settled {} slashed {}{}",
                daemon.models.len(),
                tgrid_amount(U256::from(bond.bonded)),
                tgrid_amount(U256::from(earner.earnings)),
                earner.tasksSettled,
                earner.tasksSlashed,
                if daemon.settings.self_settle { "" } else { " (self-settlement off)" }
            ),
        );
        Ok(daemon)
    }

    /// One line on stdout per event: text, or one JSON object with `--json`.
    fn event(&self, kind: &str, mut fields: serde_json::Value, text: String) {
        fields["event"] = json!(kind);
        if let Err(e) = self.out.emit(fields, || text) {
            tracing::warn!(error = %e, "cannot write an event to stdout");
        }
    }

    async fn ensure_stake(&self) -> Result<()> {
        let want = tokens(self.settings.stake_tgrid);
        let bonded = U256::from(self.market.bond(self.me).await?.bonded);
        if bonded >= want {
            return Ok(());
        }
        let missing = want - bonded;
        let balance = IERC20::new(self.deployment.token, &self.chain)
            .balanceOf(self.me)
            .call()
            .await
            .context("TGRID.balanceOf")?;
        if balance < missing {
            bail!(
                "bonding {} TGRID needs that much in {}; it holds {} TGRID",
                tgrid_amount(missing),
                self.me,
                tgrid_amount(balance)
            );
        }
        self.market.stake(self.me, missing).await?;
        self.event(
            "staked",
            json!({"amount": tgrid_amount(missing), "bonded": tgrid_amount(want)}),
            format!("bonded {} TGRID (bond {} TGRID)", tgrid_amount(missing), tgrid_amount(want)),
        );
        Ok(())
    }

    /// The held model of a task's model id. A task outlives a restart with other settings (a
    /// model removed, private tasks turned off): then it is an error for that task, not a panic.
    fn held(&self, model_id: &B256) -> Result<&HeldModel> {
        self.models.get(model_id).ok_or_else(|| {
            anyhow::anyhow!(
                "model {model_id} is not held by this daemon (removed from the settings, or private_tasks off)"
            )
        })
    }

    fn save(&self) -> Result<()> {
        self.state.save(&self.state_path)
    }

    fn set(&mut self, id: B256, state: TaskState) -> Result<()> {
        if let Some(r) = self.state.tasks.get_mut(&id) {
            r.state = state;
        }
        self.save()
    }

    fn skip(&mut self, id: B256, reason: String) -> Result<()> {
        self.event(
            "skipped",
            json!({"task_id": id.to_string(), "reason": reason}),
            format!("skipped order {}: {reason}", short(&id)),
        );
        self.set(id, TaskState::Skipped { reason })
    }

    fn proof_path(&self, id: &B256) -> PathBuf {
        self.settings.data_dir.join("proofs").join(format!("{id}.tgp"))
    }

    /// The task's leaf proof (`prove_leaves`), beside its task proof.
    fn leaf_path(&self, id: &B256) -> PathBuf {
        self.settings.data_dir.join("proofs").join(format!("{id}.leaf"))
    }

    fn accepted_input_path(&self, id: &B256) -> PathBuf {
        self.settings.data_dir.join("inputs").join(format!("{id}.json"))
    }

    fn output_path(&self, id: &B256) -> PathBuf {
        self.settings.data_dir.join("outputs").join(format!("{id}.json"))
    }

    /// Whether the sequencer's advertised queue leaves room for more work. Unknown (the
    /// sequencer does not answer) counts as room: accepted work can still be self-settled.
    async fn sequencer_has_room(&mut self) -> bool {
        if self.settings.max_sequencer_queue == 0 {
            return true;
        }
        match self.relay.queue_depth().await {
            Ok(depth) => match queue_too_long(depth, self.settings.max_sequencer_queue) {
                Some(why) => {
                    tracing::info!("not accepting new orders this round: {why}");
                    false
                }
                None => true,
            },
            Err(e) => {
                tracing::warn!("the sequencer's queue depth: {e}");
                true
            }
        }
    }

    /// Publishes this provider's sealing key on the relay, signed by its account, so posters
    /// can seal private inputs to it. Retried each round until the relay holds it.
    async fn announce_sealing_key(&mut self) -> Result<()> {
        if self.key_announced || !self.settings.private_tasks {
            return Ok(());
        }
        let public = B256::from_slice(&self.opening_key.sealing_key().to_bytes());
        let issued_at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs();
        let announcement = SealingKeyAnnouncement::sign(public, issued_at, &self.signer, &self.domain)?;
        let kept = self.relay.publish_sealing_key(&announcement).await?;
        if kept.public_key != public {
            // The relay holds a newer key of this account: another daemon with the same account
            // (or a copy of its data dir) announced it. Inputs sealed to it would not open here.
            bail!(
                "the relay holds another sealing key for {} (0x{}, issued at {}): private inputs would be sealed to \
                 a key this daemon lacks",
                self.me,
                hex::encode(kept.public_key),
                kept.issued_at
            );
        }
        self.key_announced = true;
        self.event(
            "sealing_key",
            json!({"sealing_key": self.opening_key.sealing_key().to_hex(), "relay": self.relay.base_url()}),
            format!("announced sealing key {} on {}", self.opening_key.sealing_key().to_hex(), self.relay.base_url()),
        );
        Ok(())
    }

    async fn round(&mut self) -> Result<()> {
        if let Err(e) = self.announce_sealing_key().await {
            tracing::warn!("announcing the sealing key: {e:#}");
        }
        if let Err(e) = self.discover().await {
            // The relay is down: work already accepted goes on.
            tracing::warn!("listing orders: {e:#}");
        }
        let now = tgrid_chain::chain_now(&self.chain).await?;
        let pruned = self.state.prune(now, self.settings.prune_after_secs);
        if !pruned.is_empty() {
            self.save()?;
            // After the state no longer names them; a file left behind by a crash is harmless.
            for id in &pruned {
                let _ = std::fs::remove_file(self.proof_path(id));
                let _ = std::fs::remove_file(self.leaf_path(id));
                let _ = std::fs::remove_file(self.accepted_input_path(id));
                let _ = std::fs::remove_file(self.output_path(id));
            }
        }
        // Earliest deadline first. Open orders are accepted first (before another provider takes
        // them); then each accepted order goes as far as it can (prove, submit at once, so the
        // sequencer works on it while the next one is proven).
        let mut queue: Vec<(u64, B256)> = self.state.tasks.iter().map(|(id, r)| (r.deadline(), *id)).collect();
        queue.sort();
        let seen = queue.iter().any(|(_, id)| self.state.tasks[id].state == TaskState::Seen);
        let accepting = !seen || self.sequencer_has_room().await;
        for &(_, id) in &queue {
            if accepting && self.state.tasks[&id].state == TaskState::Seen {
                if let Err(e) = self.consider(id, now).await {
                    tracing::warn!(task = %id, "{e:#}");
                }
            }
        }
        for &(_, id) in &queue {
            loop {
                let record = self.state.tasks[&id].clone();
                let step = match record.state {
                    TaskState::Accepted => self.prove(id, &record).await,
                    TaskState::Proven => self.submit(id, &record, now).await,
                    TaskState::Submitted | TaskState::Refused { .. } => self.follow(id, &record, now).await,
                    TaskState::Seen | TaskState::Settled { .. } | TaskState::Skipped { .. } => break,
                };
                if let Err(e) = step {
                    // A node or sequencer hiccup: the order stays where it is; retried next round.
                    tracing::warn!(task = %id, "{e:#}");
                    break;
                }
                if self.state.tasks[&id].state == record.state {
                    break;
                }
            }
        }
        if self.settings.self_settle {
            if let Err(e) = self.settle_own(now).await {
                tracing::warn!("self-settlement: {e:#}");
            }
        }
        if self.settings.auto_withdraw {
            if let Err(e) = self.withdraw_earnings().await {
                tracing::warn!("withdrawing earnings: {e:#}");
            }
        }
        Ok(())
    }
}

/// Why the sequencer's queue (`depth` results waiting for a batch) is too long to accept more
/// work, if it is (`max` 0: never).
fn queue_too_long(depth: u64, max: u64) -> Option<String> {
    (max != 0 && depth > max)
        .then(|| format!("the sequencer's queue holds {depth} results waiting for a batch (max_sequencer_queue {max})"))
}

/// Writes and syncs a file of the data directory, readable by its owner only: accepted inputs,
/// outputs and a private task's salt are the posters' data.
fn write_synced(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    // A file an older version created keeps its mode through `open`: narrow it.
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::queue_too_long;

    #[test]
    fn data_files_are_the_owners_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input.json");
        std::fs::write(&path, b"old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        super::write_synced(&path, b"[1, 2]").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"[1, 2]");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let fresh = dir.path().join("output.json");
        super::write_synced(&fresh, b"{}").unwrap();
        assert_eq!(std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn a_long_sequencer_queue_stops_new_acceptances() {
        assert_eq!(queue_too_long(1_000, 1_000), None);
        assert!(queue_too_long(1_001, 1_000).unwrap().contains("1001 results"));
        assert_eq!(queue_too_long(u64::MAX, 0), None, "0 ignores the queue");
    }
}
