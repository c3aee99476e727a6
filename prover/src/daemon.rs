//! `tgrid-prover run`: the provider daemon. It keeps the provider staked, watches the escrow's
//! `TaskPosted` events for the models it holds, accepts the tasks it can finish before their
//! deadline (only once their input is available and matches the on-chain commitment), infers,
//! proves, submits to the sequencer, follows each task until it settles, and claims the pay of
//! settled tasks (one `TaskEscrow.claimSettled` per poll round; setting `auto_claim`).
//!
//! Inputs come from a content-addressed store (a directory, or an HTTP URL) where posters publish
//! `<input commitment>.json`; an accepted task's input is kept under `data_dir/inputs`.
//!
//! Every step is written to `data_dir/state.json` (atomically) before the next begins, so a
//! restart resumes: accepted tasks are proven, proven ones resubmitted (the sequencer treats a
//! repeat as idempotent), nothing is accepted twice.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy::primitives::{Address, B256, U256};
use alloy::providers::{DynProvider, Provider};
use alloy::rpc::types::Filter;
use alloy::sol_types::SolEvent;
use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tgrid_chain::bindings::{IStaking, ITaskEscrow, IERC20};
use tgrid_chain::{confirm, format_tgrid as tgrid_amount, Deployment};
use tgrid_circuits::{commit, ModelFile, TaskProver};
use tgrid_cli::Output;
use tgrid_onnx::InputData;

/// Anvil's second default account key (public knowledge; the devnet's provider account only).
pub const ANVIL_KEY_1: &str = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

/// Prefix of the environment variables overriding settings.
pub const ENV_PREFIX: &str = "TGRID_PROVIDER_";

/// Largest input file read from the input store.
const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Largest block range asked of the node in one `eth_getLogs`.
const MAX_LOG_RANGE: u64 = tgrid_chain::MAX_LOG_RANGE;

/// Settings of the daemon: defaults for a local devnet, then the TOML file, then
/// `TGRID_PROVIDER_<SETTING>` variables (lists comma-separated).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Ethereum JSON-RPC endpoint.
    pub rpc_url: String,
    /// Deployment file written by `Deploy.s.sol`.
    pub deployment: PathBuf,
    /// The provider account's key (default: anvil account 1, devnet only).
    pub private_key: String,
    /// Compiled models (.tgm) this provider runs; tasks of other models are ignored.
    pub models: Vec<PathBuf>,
    /// Input store: task posters publish each input as `<input commitment>.json` (EZKL format)
    /// in this directory... Content-addressed, so the provider checks every file against the chain.
    pub inputs_dir: PathBuf,
    /// ...or, when set, under this HTTP URL (`<inputs_url>/<input commitment>.json`).
    pub inputs_url: String,
    /// The sequencer's HTTP API.
    pub sequencer_url: String,
    /// Where state, proofs and outputs are kept.
    pub data_dir: PathBuf,
    /// Bonded stake (whole TGRID) the daemon keeps; it stakes the difference at start.
    pub stake_tgrid: u64,
    /// A task is accepted only if its deadline leaves this long after the expected proving time
    /// (the sequencer needs it to batch, prove and settle).
    pub settle_margin_secs: u64,
    /// Proving time assumed for a model before one was measured.
    pub initial_prove_estimate_secs: u64,
    /// Idle wait between polls of the chain.
    pub poll_interval_ms: u64,
    /// A task nothing more can happen to (settled, skipped, never accepted) is forgotten this
    /// long after its deadline, with its proof and input files: the state file is rewritten at
    /// every step, so it must not grow with every task ever seen. The output files stay.
    pub prune_after_secs: u64,
    /// Claim the pay of this provider's settled tasks automatically: one
    /// `TaskEscrow.claimSettled` per poll round for the tasks that settled since (at most 200),
    /// which also releases their collateral. When off, they stay claimable with
    /// `tgrid stake claim` (and their collateral stays locked until then).
    pub auto_claim: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            rpc_url: tgrid_chain::DEFAULT_RPC_URL.into(),
            deployment: tgrid_chain::DEFAULT_DEPLOYMENT.into(),
            private_key: ANVIL_KEY_1.into(),
            models: Vec::new(),
            inputs_dir: ".tgrid/inputs".into(),
            inputs_url: String::new(),
            sequencer_url: "http://127.0.0.1:8080".into(),
            data_dir: ".tgrid/provider".into(),
            stake_tgrid: 1_000,
            settle_margin_secs: 600,
            initial_prove_estimate_secs: 120,
            poll_interval_ms: 1_000,
            prune_after_secs: 86_400,
            auto_claim: true,
        }
    }
}

impl Settings {
    /// Defaults, then `file`, then the environment.
    pub fn load(file: Option<&Path>) -> Result<Self> {
        let s: Settings = tgrid_cli::layered_settings(file, std::env::vars(), ENV_PREFIX, &[])
            .map_err(|e| anyhow!("provider settings: {e}"))?;
        if s.models.is_empty() {
            bail!("provider settings: no models (set `models = [\"model.tgm\"]` or {ENV_PREFIX}MODELS)");
        }
        if s.poll_interval_ms == 0 {
            bail!("provider settings: poll_interval_ms must be positive");
        }
        Ok(s)
    }
}

/// Where a task stands for this provider.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum TaskState {
    /// Seen and waiting for its input (or skipped until it becomes possible).
    Seen,
    /// Accepted on-chain: collateral locked, a proof is owed before the deadline.
    Accepted,
    /// Proven: `proofs/<task>.tgp` and `outputs/<task>.json` exist.
    Proven,
    /// Acknowledged by the sequencer.
    Submitted,
    /// Settled on-chain: its pay is fixed and waits in the escrow to be claimed.
    Settled,
    /// Its pay was claimed (by this daemon, or elsewhere with the same key) and its collateral
    /// released.
    Claimed,
    /// Not taken or given up, with the reason.
    Skipped {
        /// Why.
        reason: String,
    },
}

/// One task this daemon has seen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The model.
    pub model_id: B256,
    /// The committed input.
    pub input_commitment: B256,
    /// Last second at which it can settle.
    pub deadline: u64,
    /// Payment plus priority fee (wei of TGRID).
    pub reward: U256,
    /// Where it stands.
    #[serde(flatten)]
    pub state: TaskState,
}

/// The daemon's durable state.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct State {
    /// First block not yet scanned for `TaskPosted`.
    next_block: u64,
    tasks: BTreeMap<B256, TaskRecord>,
}

impl State {
    fn load(path: &Path) -> Result<Self> {
        match std::fs::read(path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).with_context(|| format!("{} is not a state file", path.display()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    /// Forgets the tasks nothing more can happen to (claimed, skipped, seen and never accepted,
    /// and settled ones too unless `claiming`: the daemon still owes them a claim) once their
    /// deadline is `retention` seconds past; returns their ids.
    fn prune(&mut self, now: u64, retention: u64, claiming: bool) -> Vec<B256> {
        let done: Vec<B256> = self
            .tasks
            .iter()
            .filter(|(_, r)| {
                let finished = match r.state {
                    TaskState::Claimed | TaskState::Skipped { .. } | TaskState::Seen => true,
                    TaskState::Settled => !claiming,
                    TaskState::Accepted | TaskState::Proven | TaskState::Submitted => false,
                };
                finished && r.deadline.saturating_add(retention) < now
            })
            .map(|(id, _)| *id)
            .collect();
        for id in &done {
            self.tasks.remove(id);
        }
        done
    }

    /// Writes to a temporary file, syncs it, then renames it over the old state.
    fn save(&self, path: &Path) -> Result<()> {
        let tmp = path.with_extension("json.tmp");
        let bytes = serde_json::to_vec_pretty(self)?;
        {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
            f.write_all(&bytes)?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, path).with_context(|| format!("cannot replace {}", path.display()))
    }
}

/// A model this provider can prove.
struct HeldModel {
    file: ModelFile,
    prover: Arc<TaskProver>,
    name: String,
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
    deployment: Deployment,
    me: Address,
    http: alloy::transports::http::reqwest::Client,
    models: HashMap<B256, HeldModel>,
    state: State,
    state_path: PathBuf,
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
                r = round => r?,
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
        let signer = tgrid_chain::parse_signer(&settings.private_key)?;
        let me = signer.address();
        let chain = tgrid_chain::signing(&settings.rpc_url, signer)?;
        tgrid_chain::check_chain(&chain, &settings.rpc_url, &deployment).await?;
        std::fs::create_dir_all(settings.data_dir.join("proofs"))
            .with_context(|| format!("cannot create {}", settings.data_dir.display()))?;
        std::fs::create_dir_all(settings.data_dir.join("outputs"))?;
        std::fs::create_dir_all(settings.data_dir.join("inputs"))?;
        let state_path = settings.data_dir.join("state.json");
        let mut state = State::load(&state_path)?;
        if state.next_block == 0 {
            state.next_block = deployment.start_block;
        }

        let mut models = HashMap::new();
        for path in &settings.models {
            let file = crate::load_model(path)?;
            let id = B256::from(file.model.model_id());
            let prover = TaskProver::new(file.model.clone(), file.plan.clone())
                .with_context(|| format!("building the circuit of {}", path.display()))?;
            let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            models.insert(
                id,
                HeldModel {
                    file,
                    prover: Arc::new(prover),
                    name,
                    prove_estimate: settings.initial_prove_estimate_secs as f64,
                    measured: false,
                },
            );
        }
        let registry = tgrid_chain::bindings::IModelRegistry::new(deployment.registry, &chain);
        for (id, m) in &models {
            if !registry.isModelActive(*id).call().await.context("ModelRegistry.isModelActive")? {
                tracing::warn!(model = %id, name = m.name, "model is not registered on-chain (yet): its tasks cannot be posted");
            }
        }
        let http = alloy::transports::http::reqwest::Client::builder().timeout(Duration::from_secs(60)).build()?;
        let daemon = Self { settings, out, chain, deployment, me, http, models, state, state_path };
        daemon.ensure_stake().await?;
        let account = daemon.account().await?;
        let unclaimed = daemon.state.tasks.values().filter(|r| r.state == TaskState::Settled).count();
        daemon.event(
            "ready",
            json!({
                "provider": me.to_string(),
                "models": daemon.models.iter().map(|(id, m)| json!({"model_id": id.to_string(), "name": m.name})).collect::<Vec<_>>(),
                "bonded": tgrid_amount(U256::from(account.bonded)),
                "locked": tgrid_amount(U256::from(account.locked)),
                "unclaimed_tasks": unclaimed,
                "auto_claim": daemon.settings.auto_claim,
                "tasks_settled": account.tasksSettled,
                "tasks_slashed": account.tasksSlashed,
            }),
            format!(
                "provider {me} ready: {} model(s), bonded {} TGRID ({} locked), {unclaimed} settled task(s) to claim{}, settled and claimed {} slashed {}",
                daemon.models.len(),
                tgrid_amount(U256::from(account.bonded)),
                tgrid_amount(U256::from(account.locked)),
                if daemon.settings.auto_claim { "" } else { " (auto_claim off: tgrid stake claim)" },
                account.tasksSettled,
                account.tasksSlashed
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

    async fn account(&self) -> Result<IStaking::ProviderAccount> {
        IStaking::new(self.deployment.staking, &self.chain).account(self.me).call().await.context("Staking.account")
    }

    async fn ensure_stake(&self) -> Result<()> {
        let want = tokens(self.settings.stake_tgrid);
        let bonded = U256::from(self.account().await?.bonded);
        if bonded >= want {
            return Ok(());
        }
        let missing = want - bonded;
        let token = IERC20::new(self.deployment.token, &self.chain);
        let balance = token.balanceOf(self.me).call().await.context("TGRID.balanceOf")?;
        if balance < missing {
            bail!(
                "staking {} TGRID needs that much in {}; it holds {} TGRID",
                tgrid_amount(missing),
                self.me,
                tgrid_amount(balance)
            );
        }
        confirm("TGRID.approve", token.approve(self.deployment.staking, missing).send().await).await?;
        confirm("Staking.stake", IStaking::new(self.deployment.staking, &self.chain).stake(missing).send().await)
            .await?;
        self.event(
            "staked",
            json!({"amount": tgrid_amount(missing), "bonded": tgrid_amount(want)}),
            format!("staked {} TGRID (bonded {} TGRID)", tgrid_amount(missing), tgrid_amount(want)),
        );
        Ok(())
    }

    fn save(&self) -> Result<()> {
        self.state.save(&self.state_path)
    }

    fn set(&mut self, task: B256, state: TaskState) -> Result<()> {
        if let Some(r) = self.state.tasks.get_mut(&task) {
            r.state = state;
        }
        self.save()
    }

    async fn round(&mut self) -> Result<()> {
        self.scan().await?;
        let now = tgrid_chain::chain_now(&self.chain).await?;
        let pruned = self.state.prune(now, self.settings.prune_after_secs, self.settings.auto_claim);
        if !pruned.is_empty() {
            self.save()?;
            // After the state no longer names them; a file left behind by a crash is harmless.
            for id in &pruned {
                let _ = std::fs::remove_file(self.proof_path(id));
                let _ = std::fs::remove_file(self.accepted_input_path(id));
            }
            tracing::debug!(tasks = pruned.len(), "finished tasks pruned from the state");
        }
        // Earliest deadline first. Open tasks are accepted first (before another provider takes
        // them); then each accepted task goes as far as it can (prove, submit at once, so the
        // sequencer works on it while the next one is proven).
        let mut order: Vec<(u64, B256)> = self.state.tasks.iter().map(|(id, r)| (r.deadline, *id)).collect();
        order.sort();
        for &(_, id) in &order {
            let record = self.state.tasks[&id].clone();
            if record.state == TaskState::Seen {
                if let Err(e) = self.consider(id, &record, now).await {
                    tracing::warn!(task = %id, "{e:#}");
                }
            }
        }
        for &(_, id) in &order {
            loop {
                let record = self.state.tasks[&id].clone();
                let step = match record.state {
                    TaskState::Accepted => self.prove(id, &record).await,
                    TaskState::Proven => self.submit(id, &record, now).await,
                    TaskState::Submitted => self.follow(id, &record, now).await,
                    TaskState::Seen | TaskState::Settled | TaskState::Claimed | TaskState::Skipped { .. } => break,
                };
                if let Err(e) = step {
                    // A node or sequencer hiccup: the task stays where it is; retried next round.
                    tracing::warn!(task = %id, "{e:#}");
                    break;
                }
                if self.state.tasks[&id].state == record.state {
                    break;
                }
            }
        }
        if self.settings.auto_claim {
            if let Err(e) = self.claim().await {
                // The tasks stay Settled: claimed next round.
                tracing::warn!("claiming settled tasks: {e:#}");
            }
        }
        Ok(())
    }

    /// Claims the pay of the tasks that settled (earliest deadline first, at most
    /// [`tgrid_chain::MAX_CLAIM_IDS`]) in one transaction. A task the escrow no longer lists as
    /// claimable was claimed elsewhere with this key (`tgrid stake claim`) and is marked so.
    async fn claim(&mut self) -> Result<()> {
        let mut settled: Vec<(u64, B256)> = self
            .state
            .tasks
            .iter()
            .filter(|(_, r)| r.state == TaskState::Settled)
            .map(|(id, r)| (r.deadline, *id))
            .collect();
        if settled.is_empty() {
            return Ok(());
        }
        settled.sort();
        let escrow = ITaskEscrow::new(self.deployment.escrow, &self.chain);
        let (mut ids, mut elsewhere) = (Vec::new(), Vec::new());
        for (_, id) in settled {
            if ids.len() == tgrid_chain::MAX_CLAIM_IDS {
                break;
            }
            if escrow.claimable(id).call().await.context("TaskEscrow.claimable")?.isClaimable {
                ids.push(id);
            } else {
                tracing::info!(task = %id, "already claimed (elsewhere)");
                elsewhere.push(id);
            }
        }
        for id in elsewhere {
            self.set(id, TaskState::Claimed)?;
        }
        if ids.is_empty() {
            return Ok(());
        }
        let claimed =
            tgrid_chain::claim_settled(&self.chain, self.deployment.escrow, &ids, tgrid_chain::MAX_CLAIM_IDS).await?;
        for id in &ids {
            if let Some(r) = self.state.tasks.get_mut(id) {
                r.state = TaskState::Claimed;
            }
        }
        self.save()?;
        let tx = claimed.transactions.first().map(|t| t.to_string()).unwrap_or_default();
        self.event(
            "claimed",
            json!({
                "tasks": claimed.tasks,
                "task_ids": ids.iter().map(|id| id.to_string()).collect::<Vec<_>>(),
                "paid": tgrid_amount(claimed.paid),
                "collateral_released": tgrid_amount(claimed.collateral_released),
                "tx": tx,
            }),
            format!(
                "claimed {} settled task(s): paid {} TGRID, {} TGRID of collateral released (tx {tx})",
                claimed.tasks,
                tgrid_amount(claimed.paid),
                tgrid_amount(claimed.collateral_released)
            ),
        );
        Ok(())
    }

    /// Reads new `TaskPosted` events for the held models.
    async fn scan(&mut self) -> Result<()> {
        let head = self.chain.get_block_number().await.context("eth_blockNumber")?;
        while self.state.next_block <= head {
            let to = head.min(self.state.next_block + MAX_LOG_RANGE - 1);
            let filter = Filter::new()
                .address(self.deployment.escrow)
                .event_signature(ITaskEscrow::TaskPosted::SIGNATURE_HASH)
                .topic3(self.models.keys().copied().collect::<Vec<_>>())
                .from_block(self.state.next_block)
                .to_block(to);
            let logs = self.chain.get_logs(&filter).await.context("eth_getLogs TaskPosted")?;
            for log in logs {
                let Ok(posted) = log.log_decode::<ITaskEscrow::TaskPosted>() else { continue };
                let e = posted.inner.data;
                if self.state.tasks.contains_key(&e.taskId) || !self.models.contains_key(&e.modelId) {
                    continue;
                }
                let deadline = u64::try_from(e.deadline).unwrap_or(u64::MAX);
                self.state.tasks.insert(
                    e.taskId,
                    TaskRecord {
                        model_id: e.modelId,
                        input_commitment: e.inputCommitment,
                        deadline,
                        reward: e.payment + e.priorityFee,
                        state: TaskState::Seen,
                    },
                );
                let name = &self.models[&e.modelId].name;
                self.event(
                    "seen",
                    json!({"task_id": e.taskId.to_string(), "model": name, "reward": tgrid_amount(e.payment + e.priorityFee), "deadline": deadline}),
                    format!("task {} posted for {name}: reward {} TGRID", short(&e.taskId), tgrid_amount(e.payment + e.priorityFee)),
                );
            }
            self.state.next_block = to + 1;
            self.save()?;
        }
        Ok(())
    }

    /// The task's input from the store, quantized and checked against its commitment. `None`
    /// while it is not (or not reachably) published; an error when what is published is not the
    /// committed input.
    async fn input(&self, record: &TaskRecord) -> Result<Option<Vec<i8>>> {
        let name = format!("{}.json", record.input_commitment);
        let (text, source) = if self.settings.inputs_url.is_empty() {
            let path = self.settings.inputs_dir.join(&name);
            let len = match std::fs::metadata(&path) {
                Ok(m) => m.len(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
            };
            if len > MAX_INPUT_BYTES {
                bail!("{}: {len} bytes, larger than any input", path.display());
            }
            let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
            (text, path.display().to_string())
        } else {
            let url = format!("{}/{name}", self.settings.inputs_url.trim_end_matches('/'));
            let response = match self.http.get(&url).send().await {
                Ok(r) if r.status().as_u16() == 404 => return Ok(None),
                Ok(r) if r.status().is_success() => r,
                // Unreachable or failing store: look again next round.
                Ok(r) => {
                    tracing::warn!(url, status = %r.status(), "input store answered an error");
                    return Ok(None);
                }
                Err(e) => {
                    tracing::warn!(url, "input store unreachable: {e}");
                    return Ok(None);
                }
            };
            if response.content_length().is_some_and(|n| n > MAX_INPUT_BYTES) {
                bail!("{url}: larger than any input");
            }
            let bytes = response.bytes().await.with_context(|| format!("reading {url}"))?;
            if bytes.len() as u64 > MAX_INPUT_BYTES {
                bail!("{url}: larger than any input");
            }
            (String::from_utf8(bytes.to_vec()).with_context(|| format!("{url} is not UTF-8 JSON"))?, url)
        };
        let model = &self.models[&record.model_id].file.model;
        let data = InputData::from_json(&text).map_err(|e| anyhow!("{source}: {e}"))?;
        let sample = data.input_data.first().ok_or_else(|| anyhow!("{source} holds no sample"))?;
        let x = tgrid_circuits::infer::quantize_input(model, sample)
            .with_context(|| format!("{source} does not fit the model"))?;
        if B256::from(commit(&x).0) != record.input_commitment {
            bail!("{source} does not match the input commitment posted on-chain");
        }
        Ok(Some(x))
    }

    async fn consider(&mut self, id: B256, record: &TaskRecord, now: u64) -> Result<()> {
        let escrow = ITaskEscrow::new(self.deployment.escrow, &self.chain);
        let task = escrow.task(id).call().await.context("TaskEscrow.task")?;
        if task.status == ITaskEscrow::TaskStatus::Accepted && task.provider == self.me {
            // Accepted by this daemon just before a crash that lost the state write: resume.
            self.set(id, TaskState::Accepted)?;
            self.event(
                "resumed",
                json!({"task_id": id.to_string()}),
                format!("resuming task {} (accepted before a restart)", short(&id)),
            );
            return Ok(());
        }
        if task.status != ITaskEscrow::TaskStatus::Posted {
            let reason = format!("no longer open ({:?})", task.status);
            return self.skip(id, reason);
        }
        let estimate = self.models[&record.model_id].prove_estimate.ceil() as u64;
        if now + estimate + self.settings.settle_margin_secs > record.deadline {
            let reason = format!(
                "deadline in {} s leaves less than proving (~{estimate} s) plus the settlement margin ({} s)",
                record.deadline.saturating_sub(now),
                self.settings.settle_margin_secs
            );
            return self.skip(id, reason);
        }
        let input = match self.input(record).await {
            Ok(Some(x)) => x,
            // Not published yet: look again next round (never accept what cannot be proven).
            Ok(None) => return Ok(()),
            Err(e) => return self.skip(id, format!("{e:#}")),
        };
        let collateral = escrow.collateralFor(record.reward).call().await.context("TaskEscrow.collateralFor")?;
        let free = IStaking::new(self.deployment.staking, &self.chain)
            .freeStake(self.me)
            .call()
            .await
            .context("Staking.freeStake")?;
        if free < collateral {
            // Collateral frees up as earlier tasks settle: stay Seen and retry.
            tracing::info!(task = %id, "free stake {} TGRID below the collateral {} TGRID", tgrid_amount(free), tgrid_amount(collateral));
            return Ok(());
        }
        // Simulated first: another provider may have taken it.
        if let Err(e) = escrow.acceptTask(id).call().await {
            return self.skip(id, format!("acceptTask would revert: {e}"));
        }
        // Kept beside the proof: once accepted, proving must not depend on the store.
        write_synced(&self.accepted_input_path(&id), &serde_json::to_vec(&input)?)?;
        confirm("TaskEscrow.acceptTask", escrow.acceptTask(id).send().await).await?;
        self.set(id, TaskState::Accepted)?;
        self.event(
            "accepted",
            json!({"task_id": id.to_string(), "collateral": tgrid_amount(collateral), "deadline_in_secs": record.deadline.saturating_sub(now)}),
            format!(
                "accepted task {} (collateral {} TGRID locked, deadline in {} s)",
                short(&id),
                tgrid_amount(collateral),
                record.deadline.saturating_sub(now)
            ),
        );
        Ok(())
    }

    fn skip(&mut self, id: B256, reason: String) -> Result<()> {
        self.event(
            "skipped",
            json!({"task_id": id.to_string(), "reason": reason}),
            format!("skipped task {}: {reason}", short(&id)),
        );
        self.set(id, TaskState::Skipped { reason })
    }

    fn proof_path(&self, id: &B256) -> PathBuf {
        self.settings.data_dir.join("proofs").join(format!("{id}.tgp"))
    }

    fn accepted_input_path(&self, id: &B256) -> PathBuf {
        self.settings.data_dir.join("inputs").join(format!("{id}.json"))
    }

    fn output_path(&self, id: &B256) -> PathBuf {
        self.settings.data_dir.join("outputs").join(format!("{id}.json"))
    }

    async fn prove(&mut self, id: B256, record: &TaskRecord) -> Result<()> {
        let x: Vec<i8> = match std::fs::read(self.accepted_input_path(&id)) {
            Ok(bytes) => serde_json::from_slice(&bytes)?,
            // Accepted before a crash lost the copy: fetch it again.
            Err(_) => self.input(record).await?.ok_or_else(|| anyhow!("the input of task {id} is not in the store"))?,
        };
        let model = &self.models[&record.model_id];
        let prover = Arc::clone(&model.prover);
        let (task_id, provider) = (id.0, self.me.0 .0);
        let bar = self.out.spinner(&format!("proving task {}", short(&id)));
        let started = Instant::now();
        let (proof, output) = tokio::task::spawn_blocking(move || -> Result<_> {
            let (proof, trace, _stats) = prover.prove(&x, task_id, provider, &mut |_, _, _| {})?;
            Ok((proof.to_bytes(), trace.output().to_vec()))
        })
        .await??;
        bar.finish_and_clear();
        let seconds = started.elapsed().as_secs_f64();
        write_synced(&self.proof_path(&id), &proof)?;
        write_synced(&self.output_path(&id), &serde_json::to_vec(&json!({"output_int8": output}))?)?;
        let held = self.models.get_mut(&record.model_id).expect("held model");
        held.prove_estimate = if held.measured { held.prove_estimate.max(seconds * 1.5) } else { seconds * 1.5 };
        held.measured = true;
        self.set(id, TaskState::Proven)?;
        self.event(
            "proven",
            json!({"task_id": id.to_string(), "seconds": seconds, "proof_bytes": proof.len()}),
            format!("proved task {} in {seconds:.1} s ({} bytes)", short(&id), proof.len()),
        );
        Ok(())
    }

    async fn submit(&mut self, id: B256, record: &TaskRecord, now: u64) -> Result<()> {
        if now > record.deadline {
            return self.skip(id, "the deadline passed before the sequencer took the result".into());
        }
        let proof = std::fs::read(self.proof_path(&id))?;
        let output: serde_json::Value = serde_json::from_slice(&std::fs::read(self.output_path(&id))?)?;
        let body = json!({
            "task_id": id.to_string(),
            "provider": self.me.to_string(),
            "output": output["output_int8"],
            "proof": format!("0x{}", hex::encode(&proof)),
        });
        let url = format!("{}/v1/results", self.settings.sequencer_url.trim_end_matches('/'));
        let response = self
            .http
            .post(&url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .with_context(|| format!("cannot reach the sequencer at {url}"))?;
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        if status.is_success() {
            self.set(id, TaskState::Submitted)?;
            self.event(
                "submitted",
                json!({"task_id": id.to_string()}),
                format!("submitted task {} to the sequencer", short(&id)),
            );
            Ok(())
        } else if status.is_client_error() && status.as_u16() != 429 && status.as_u16() != 408 {
            // Refused for a reason that a retry will not change.
            self.skip(id, format!("the sequencer refused the result ({status}): {text}"))
        } else {
            bail!("the sequencer answered {status}: {text} (retrying)")
        }
    }

    async fn follow(&mut self, id: B256, record: &TaskRecord, now: u64) -> Result<()> {
        let task = ITaskEscrow::new(self.deployment.escrow, &self.chain).task(id).call().await?;
        match task.status {
            ITaskEscrow::TaskStatus::Settled => {
                let c = ITaskEscrow::new(self.deployment.escrow, &self.chain)
                    .claimable(id)
                    .call()
                    .await
                    .context("TaskEscrow.claimable")?;
                self.set(id, TaskState::Settled)?;
                self.event(
                    "settled",
                    json!({
                        "task_id": id.to_string(),
                        "reward": tgrid_amount(record.reward),
                        "pay": tgrid_amount(c.pay),
                        "claimable": c.isClaimable,
                    }),
                    format!(
                        "task {} settled: pay {} TGRID (reward {} minus the protocol fee), {}",
                        short(&id),
                        tgrid_amount(c.pay),
                        tgrid_amount(record.reward),
                        if self.settings.auto_claim { "claimed this round" } else { "claim with tgrid stake claim" }
                    ),
                );
                Ok(())
            }
            ITaskEscrow::TaskStatus::Expired => self.skip(id, "expired before settlement (collateral slashed)".into()),
            _ if now > record.deadline => {
                tracing::warn!(task = %id, "past its deadline and not settled");
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut f = std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_and_a_torn_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let mut s = State { next_block: 7, ..Default::default() };
        s.tasks.insert(
            B256::repeat_byte(1),
            TaskRecord {
                model_id: B256::repeat_byte(2),
                input_commitment: B256::repeat_byte(3),
                deadline: 99,
                reward: tokens(5),
                state: TaskState::Skipped { reason: "late".into() },
            },
        );
        s.save(&path).unwrap();
        let back = State::load(&path).unwrap();
        assert_eq!(back.next_block, 7);
        assert_eq!(back.tasks, s.tasks);
        std::fs::write(&path, b"{\"next_block\": 3, \"tas").unwrap();
        assert!(State::load(&path).is_err());
    }

    #[test]
    fn pruning_forgets_only_finished_tasks_past_the_retention() {
        let record = |deadline, state| TaskRecord {
            model_id: B256::ZERO,
            input_commitment: B256::ZERO,
            deadline,
            reward: tokens(1),
            state,
        };
        let mut s = State::default();
        let skipped = TaskState::Skipped { reason: "taken".into() };
        for (i, (deadline, state)) in [
            (100, TaskState::Claimed),
            (100, skipped.clone()),
            (100, TaskState::Seen),
            (100, TaskState::Accepted),
            (100, TaskState::Proven),
            (100, TaskState::Submitted),
            (100, TaskState::Settled),
            (1_000, TaskState::Claimed),
            (1_000, skipped),
        ]
        .into_iter()
        .enumerate()
        {
            s.tasks.insert(B256::repeat_byte(i as u8), record(deadline, state));
        }
        // At 150 with 100 s of retention nothing is old enough.
        assert!(s.prune(150, 100, true).is_empty());
        let pruned = s.prune(250, 100, true);
        assert_eq!(pruned, (0..3).map(B256::repeat_byte).collect::<Vec<_>>());
        // Work still owed (or owed and late) stays whatever its age, a claim owed too; recent
        // tasks stay.
        let left: Vec<TaskState> = s.tasks.values().map(|r| r.state.clone()).collect();
        assert_eq!(left.len(), 6);
        assert!(left.contains(&TaskState::Accepted) && left.contains(&TaskState::Submitted));
        assert!(left.contains(&TaskState::Settled));
        // Without automatic claims a settled task is finished for the daemon.
        assert_eq!(s.prune(250, 100, false), vec![B256::repeat_byte(6)]);
    }

    #[test]
    fn settings_need_a_model_and_name_unknown_keys() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("provider.toml");
        std::fs::write(&file, "models = []\n").unwrap();
        assert!(Settings::load(Some(&file)).unwrap_err().to_string().contains("no models"));
        std::fs::write(&file, "modles = [\"a.tgm\"]\n").unwrap();
        assert!(Settings::load(Some(&file)).unwrap_err().to_string().contains("modles"));
        std::fs::write(&file, "models = [\"a.tgm\"]\nstake_tgrid = 5\n").unwrap();
        let s = Settings::load(Some(&file)).unwrap();
        assert_eq!(s.stake_tgrid, 5);
        assert!(s.auto_claim, "claims are automatic by default");
        std::fs::write(&file, "models = [\"a.tgm\"]\nauto_claim = false\n").unwrap();
        assert!(!Settings::load(Some(&file)).unwrap().auto_claim);
        assert_eq!(s.models, vec![PathBuf::from("a.tgm")]);
    }
}
