//! `tgrid`: the task poster's and the DAO member's tool. Posters post tasks (the input is
//! committed on-chain and published to the input store), fetch results and check them against
//! the commitment the settlement recorded, and expire tasks whose provider missed the deadline
//! (refund plus slash). DAO members delegate, propose parameter changes and model
//! registrations, vote, queue and execute. Providers manage their stake: add, unbond, withdraw
//! after the delay, and claim the pay of their settled tasks (which also releases the tasks'
//! collateral).

use std::path::{Path, PathBuf};
use std::time::Duration;

use alloy::primitives::{Address, B256, U256};
use alloy::providers::DynProvider;
use alloy::sol_types::SolCall;
use anyhow::{anyhow, bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use serde_json::json;
use tgrid_aggregation::{Registry, RegistryEntry, RegistryFile};
use tgrid_chain::bindings::IGovernor::ProposalState;
use tgrid_chain::bindings::{IModelRegistry, ISettlement, IStaking, ITaskEscrow, IVotes, IERC20};
use tgrid_chain::{confirm, format_tgrid, parse_tgrid, Deployment, Governance, Proposal};
use tgrid_circuits::{commit, infer, ModelFile};
use tgrid_cli::{bad_input, parse_hex, Output};
use tgrid_onnx::InputData;

/// Anvil's first default account key (public knowledge): the default signer on a local devnet
/// only (chain id 31337); any other chain needs --private-key.
const ANVIL_KEY_0: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const ANVIL_CHAIN_ID: u64 = 31337;

/// Largest sequencer answer read.
const MAX_OUTPUT_BYTES: u64 = 16 << 20;

/// TensorGrid for task posters, DAO members, and providers managing their stake.
#[derive(Debug, Parser)]
#[command(name = "tgrid", version, about, long_about = None)]
struct Cli {
    /// Print one JSON object on stdout instead of text.
    #[arg(long, global = true)]
    json: bool,
    /// Ethereum JSON-RPC endpoint.
    #[arg(long, global = true, env = "TGRID_RPC_URL", default_value = tgrid_chain::DEFAULT_RPC_URL)]
    rpc: String,
    /// Deployment file written by Deploy.s.sol.
    #[arg(long, global = true, env = "TGRID_DEPLOYMENT", default_value = tgrid_chain::DEFAULT_DEPLOYMENT)]
    deployment: PathBuf,
    /// Key of the account that signs (default on a local anvil only: anvil account 0).
    #[arg(long, global = true, env = "TGRID_PRIVATE_KEY", hide_env_values = true)]
    private_key: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Post, follow, check and expire tasks.
    #[command(subcommand)]
    Task(TaskCommand),
    /// Governance: delegate, propose, vote, queue, execute.
    #[command(subcommand)]
    Dao(DaoCommand),
    /// TGRID balances and transfers.
    #[command(subcommand)]
    Token(TokenCommand),
    /// A provider's stake: status, add, unbond, withdraw, claim the pay of settled tasks.
    #[command(subcommand)]
    Stake(StakeCommand),
    /// Local devnet helpers (refused on any chain but anvil's 31337).
    #[command(subcommand)]
    Devnet(DevnetCommand),
}

#[derive(Debug, Subcommand)]
enum TaskCommand {
    /// Commit an input, escrow the payment and post the task; the input goes to the input store.
    Post {
        /// Compiled model (.tgm) the task runs.
        #[arg(long)]
        model: PathBuf,
        /// Input in EZKL's format (the first sample is used).
        #[arg(long)]
        input: PathBuf,
        /// Payment in TGRID.
        #[arg(long)]
        payment: String,
        /// Priority fee in TGRID, paid to the provider on top.
        #[arg(long, default_value = "0")]
        priority_fee: String,
        /// Seconds from now (chain time) until the deadline.
        #[arg(long, default_value_t = 3600)]
        deadline_in: u64,
        /// Input store the providers read (`<input commitment>.json`).
        #[arg(long, default_value = ".tgrid/inputs")]
        inputs_dir: PathBuf,
    },
    /// A task's on-chain state (and its output commitment once settled).
    Status {
        /// Task id (0x + 64 hex digits).
        task_id: String,
    },
    /// Fetch a settled task's output and check it against the on-chain output commitment.
    Result {
        /// Task id (0x + 64 hex digits).
        task_id: String,
        /// Sequencer API publishing outputs.
        #[arg(long, env = "TGRID_SEQUENCER_URL", default_value = "http://127.0.0.1:8080")]
        sequencer: String,
        /// Check this output file (`output_int8` or `output` as int8 values) instead of fetching.
        #[arg(long)]
        output_file: Option<PathBuf>,
        /// The model, to print the dequantized output and its argmax.
        #[arg(long)]
        model: Option<PathBuf>,
        /// Write the checked output here (JSON).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Wait up to this many seconds for the task to settle.
        #[arg(long, default_value_t = 0)]
        wait: u64,
    },
    /// Expire a task past its deadline: refund the poster, slash the provider that accepted it.
    Expire {
        /// Task id (0x + 64 hex digits).
        task_id: String,
    },
    /// Cancel a task nobody accepted yet (refund).
    Cancel {
        /// Task id (0x + 64 hex digits).
        task_id: String,
    },
}

#[derive(Debug, Subcommand)]
enum DaoCommand {
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
enum Support {
    Against,
    For,
    Abstain,
}

#[derive(Debug, Subcommand)]
enum ProposeCommand {
    /// Register every model of a registry file that is not active on-chain, ending at the file's root.
    RegisterModels {
        /// Registry file (`tgrid-sequencer registry add`).
        #[arg(long)]
        registry: PathBuf,
    },
    /// Minimum bonded stake (TGRID) to accept tasks.
    MinStake { tgrid: String },
    /// Unbonding delay in seconds.
    UnbondingDelay { seconds: u64 },
    /// Share of collateral slashed and the poster's part of it (basis points).
    Slash { slash_bps: u64, poster_share_bps: u64 },
    /// Collateral per task: basis points of the reward and a minimum (TGRID).
    Collateral { bps: u64, min_tgrid: String },
    /// Protocol fee on payments (basis points).
    ProtocolFee { bps: u64 },
    /// Shortest and longest deadline a task may have (seconds from posting).
    DeadlineBounds { min_seconds: u64, max_seconds: u64 },
    /// Largest number of tasks in one settled batch.
    MaxBatchSize { tasks: u64 },
    /// The Groth16 verifier contract settlement uses.
    Verifier { address: String },
    /// Grant or revoke the sequencer role.
    Sequencer { address: String, allowed: bool },
}

#[derive(Debug, Subcommand)]
enum TokenCommand {
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

#[derive(Debug, Subcommand)]
enum StakeCommand {
    /// Bonded, locked and free stake, unbonding, claimable pay and reputation (default: the signer).
    Status { account: Option<String> },
    /// Stake more TGRID (approves the staking contract first if needed).
    Add {
        /// Amount in TGRID.
        amount: String,
    },
    /// Start unbonding free stake; it can be withdrawn after the unbonding delay.
    Unbond {
        /// Amount in TGRID (at most the free stake).
        amount: String,
    },
    /// Withdraw stake whose unbonding delay has passed.
    Withdraw,
    /// Claim the pay of the signer's settled tasks (and release their collateral): all of them
    /// (found from the chain's TaskAccepted events), or the given ones. Exit 2 when there is
    /// nothing to claim.
    Claim {
        /// Only these tasks (0x + 64 hex digits each); each must be settled, unclaimed and
        /// accepted by the signer.
        task_ids: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
enum DevnetCommand {
    /// Move anvil's clock forward and mine a block (voting periods, timelock delays, deadlines).
    AdvanceTime {
        /// Seconds to add.
        #[arg(default_value_t = 0)]
        seconds: u64,
        /// Instead: to just past this proposal's voting deadline.
        #[arg(long, conflicts_with = "past_timelock")]
        past_voting: Option<String>,
        /// Instead: to just past this queued proposal's timelock eta.
        #[arg(long)]
        past_timelock: Option<String>,
    },
}

fn main() {
    let cli = Cli::parse();
    tgrid_cli::init_tracing();
    let out = Output { json: cli.json };
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|rt| rt.block_on(run(cli, out)));
    out.exit_with(result);
}

/// A connection to the deployment, signing as the chosen account.
struct Ctx {
    chain: DynProvider,
    deployment: Deployment,
    me: Address,
    chain_id: u64,
}

async fn connect(cli: &Cli) -> Result<Ctx> {
    let deployment = Deployment::load(&cli.deployment).map_err(bad_input)?;
    let reader = tgrid_chain::reader(&cli.rpc).map_err(bad_input)?;
    let chain_id = match tgrid_chain::check_chain(&reader, &cli.rpc, &deployment).await {
        Ok(id) => id,
        Err(e @ tgrid_chain::Error::WrongChain { .. }) => return Err(bad_input(e)),
        Err(e) => return Err(e.into()),
    };
    let key = match (&cli.private_key, chain_id) {
        (Some(k), _) => k.clone(),
        (None, ANVIL_CHAIN_ID) => ANVIL_KEY_0.to_string(),
        (None, _) => {
            return Err(bad_input(anyhow!("--private-key (or TGRID_PRIVATE_KEY) is needed off the local devnet")))
        }
    };
    let signer = tgrid_chain::parse_signer(&key).map_err(bad_input)?;
    let me = signer.address();
    Ok(Ctx { chain: tgrid_chain::signing(&cli.rpc, signer)?, deployment, me, chain_id })
}

fn task_id(text: &str) -> Result<B256> {
    parse_hex::<32>(text, "task id").map(B256::from).map_err(bad_input)
}

fn address(text: &str, what: &str) -> Result<Address> {
    parse_hex::<20>(text, what).map(Address::from).map_err(bad_input)
}

fn proposal_id(text: &str) -> Result<U256> {
    text.parse::<U256>().map_err(|_| bad_input(anyhow!("proposal id {text:?} is not a decimal number")))
}

fn amount(text: &str) -> Result<U256> {
    parse_tgrid(text).map_err(|e| bad_input(anyhow!(e)))
}

fn load_model(path: &Path) -> Result<ModelFile> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display())).map_err(bad_input)?;
    ModelFile::from_bytes(&bytes)
        .with_context(|| format!("{} is not a compiled model", path.display()))
        .map_err(bad_input)
}

async fn run(cli: Cli, out: Output) -> Result<()> {
    let ctx = connect(&cli).await?;
    match cli.command {
        Command::Task(c) => task(c, &ctx, out).await,
        Command::Dao(c) => dao(c, &ctx, out).await,
        Command::Token(c) => token(c, &ctx, out).await,
        Command::Stake(c) => stake(c, &ctx, out).await,
        Command::Devnet(c) => devnet(c, &ctx, out).await,
    }
}

async fn task(command: TaskCommand, ctx: &Ctx, out: Output) -> Result<()> {
    let d = &ctx.deployment;
    let escrow = ITaskEscrow::new(d.escrow, &ctx.chain);
    match command {
        TaskCommand::Post { model, input, payment, priority_fee, deadline_in, inputs_dir } => {
            let file = load_model(&model)?;
            let data = InputData::from_path(&input).map_err(bad_input)?;
            let sample =
                data.input_data.first().ok_or_else(|| bad_input(anyhow!("{} has no sample", input.display())))?;
            let x = infer::quantize_input(&file.model, sample)
                .with_context(|| format!("{} does not fit the model", input.display()))
                .map_err(bad_input)?;
            let model_id = B256::from(file.model.model_id());
            let input_commitment = B256::from(commit(&x).0);
            let (payment, priority_fee) = (amount(&payment)?, amount(&priority_fee)?);
            let (min_delay, max_delay) = match escrow.deadlineBounds().call().await {
                Ok(b) => (b.minDelay, b.maxDelay),
                Err(e) => bail!("TaskEscrow.deadlineBounds: {e}"),
            };
            if U256::from(deadline_in) < min_delay || U256::from(deadline_in) > max_delay {
                return Err(bad_input(anyhow!(
                    "--deadline-in {deadline_in} s is outside the escrow's bounds ({min_delay} to {max_delay} s)"
                )));
            }
            let registry = IModelRegistry::new(d.registry, &ctx.chain);
            if !registry.isModelActive(model_id).call().await.context("ModelRegistry.isModelActive")? {
                bail!(
                    "model {model_id} ({}) is not registered on-chain: a DAO vote registers it first",
                    model.display()
                );
            }
            // Published before posting: a provider accepts a task only once its input is readable.
            std::fs::create_dir_all(&inputs_dir).with_context(|| format!("cannot create {}", inputs_dir.display()))?;
            let stored = inputs_dir.join(format!("{input_commitment}.json"));
            std::fs::write(&stored, serde_json::to_vec(&json!({"input_data": [sample]}))?)
                .with_context(|| format!("cannot write {}", stored.display()))?;

            let reward = payment + priority_fee;
            let token = IERC20::new(d.token, &ctx.chain);
            if token.allowance(ctx.me, d.escrow).call().await.context("TGRID.allowance")? < reward {
                confirm("TGRID.approve", token.approve(d.escrow, reward).send().await).await?;
            }
            let deadline = tgrid_chain::chain_now(&ctx.chain).await? + deadline_in;
            let receipt = confirm(
                "TaskEscrow.postTask",
                escrow.postTask(model_id, input_commitment, payment, priority_fee, U256::from(deadline)).send().await,
            )
            .await?;
            let posted = receipt
                .inner
                .logs()
                .iter()
                .find_map(|l| l.log_decode::<ITaskEscrow::TaskPosted>().ok())
                .ok_or_else(|| anyhow!("the postTask receipt has no TaskPosted event"))?
                .inner
                .data;
            out.emit(
                json!({
                    "task_id": posted.taskId.to_string(),
                    "model_id": model_id.to_string(),
                    "input_commitment": input_commitment.to_string(),
                    "payment": format_tgrid(payment),
                    "priority_fee": format_tgrid(priority_fee),
                    "deadline": deadline,
                    "input_store": stored.display().to_string(),
                    "tx": receipt.transaction_hash.to_string(),
                }),
                || {
                    format!(
                        "posted task {}\n  model {model_id}\n  input commitment {input_commitment} (input published at {})\n  escrowed {} TGRID, deadline {deadline} (chain time)",
                        posted.taskId,
                        stored.display(),
                        format_tgrid(reward)
                    )
                },
            )
        }
        TaskCommand::Status { task_id: id } => {
            let id = task_id(&id)?;
            let t = escrow.task(id).call().await.context("TaskEscrow.task")?;
            if t.status == ITaskEscrow::TaskStatus::None {
                return Err(bad_input(anyhow!("no task {id} on this escrow")));
            }
            let settled = tgrid_chain::settled_output(&ctx.chain, d.escrow, d.start_block, id).await?;
            let status = format!("{:?}", t.status).to_lowercase();
            out.emit(
                json!({
                    "task_id": id.to_string(),
                    "status": status,
                    "deadline": t.deadline.to::<u64>(),
                    "reward": format_tgrid(U256::from(t.reward)),
                    "collateral": format_tgrid(U256::from(t.collateral)),
                    "poster": t.poster.to_string(),
                    "provider": t.provider.to_string(),
                    "output_commitment": settled.map(|s| s.output_commitment.to_string()),
                    "settled_in": settled.map(|s| s.transaction.to_string()),
                }),
                || {
                    let mut text = format!(
                        "task {id}: {status}\n  reward {} TGRID, deadline {}, provider {}",
                        format_tgrid(U256::from(t.reward)),
                        t.deadline,
                        t.provider
                    );
                    if let Some(s) = settled {
                        text.push_str(&format!(
                            "\n  output commitment {} (block {}, tx {})",
                            s.output_commitment, s.block, s.transaction
                        ));
                    }
                    text
                },
            )
        }
        TaskCommand::Result { task_id: id, sequencer, output_file, model, out: out_path, wait } => {
            let id = task_id(&id)?;
            let waited = std::time::Instant::now();
            let settled = loop {
                match tgrid_chain::settled_output(&ctx.chain, d.escrow, d.start_block, id).await? {
                    Some(s) => break s,
                    None if waited.elapsed().as_secs() < wait => tokio::time::sleep(Duration::from_secs(2)).await,
                    None => {
                        let t = escrow.task(id).call().await.context("TaskEscrow.task")?;
                        bail!("task {id} has not settled (status {:?})", t.status);
                    }
                }
            };
            let (output, source) = match &output_file {
                Some(path) => (tgrid_cli::read_int8_output(path)?, path.display().to_string()),
                None => (fetch_output(&sequencer, id).await?, format!("{sequencer}/v1/tasks/{id}/output")),
            };
            let computed = B256::from(commit(&output).0);
            if computed != settled.output_commitment {
                bail!(
                    "the output from {source} does NOT match task {id}'s settled output commitment: it commits to {computed}, the chain recorded {} (tx {})",
                    settled.output_commitment,
                    settled.transaction
                );
            }
            let mut result = json!({
                "task_id": id.to_string(),
                "valid": true,
                "output_int8": output,
                "output_commitment": computed.to_string(),
                "settled_in": settled.transaction.to_string(),
                "source": source,
            });
            if let Some(path) = &model {
                let file = load_model(path)?;
                let real = infer::dequantize(&output, file.model.tensor_q(file.model.output_tensor()));
                result["argmax"] = json!(tgrid_onnx::argmax(&real));
                result["output"] = json!(real);
            }
            if let Some(p) = &out_path {
                std::fs::write(p, serde_json::to_vec_pretty(&result)?)
                    .with_context(|| format!("cannot write {}", p.display()))?;
            }
            out.emit(result.clone(), || {
                let mut text = format!(
                    "task {id}: output matches the commitment settled on-chain ({computed}, tx {})",
                    settled.transaction
                );
                if let Some(a) = result.get("argmax") {
                    text.push_str(&format!("\n  argmax {a}"));
                }
                text
            })
        }
        TaskCommand::Expire { task_id: id } => {
            let id = task_id(&id)?;
            if let Err(e) = escrow.expireTask(id).call().await {
                bail!("TaskEscrow.expireTask would revert: {e}");
            }
            let receipt = confirm("TaskEscrow.expireTask", escrow.expireTask(id).send().await).await?;
            let expired = receipt
                .inner
                .logs()
                .iter()
                .find_map(|l| l.log_decode::<ITaskEscrow::TaskExpired>().ok())
                .ok_or_else(|| anyhow!("the expireTask receipt has no TaskExpired event"))?
                .inner
                .data;
            out.emit(
                json!({
                    "task_id": id.to_string(),
                    "provider": expired.provider.to_string(),
                    "refund": format_tgrid(expired.refund),
                    "slashed_to_poster": format_tgrid(expired.slashedToPoster),
                    "tx": receipt.transaction_hash.to_string(),
                }),
                || {
                    format!(
                        "expired task {id}: refunded {} TGRID; provider {} slashed, {} TGRID to the poster",
                        format_tgrid(expired.refund),
                        expired.provider,
                        format_tgrid(expired.slashedToPoster)
                    )
                },
            )
        }
        TaskCommand::Cancel { task_id: id } => {
            let id = task_id(&id)?;
            if let Err(e) = escrow.cancelTask(id).call().await {
                bail!("TaskEscrow.cancelTask would revert: {e}");
            }
            let receipt = confirm("TaskEscrow.cancelTask", escrow.cancelTask(id).send().await).await?;
            out.emit(json!({"task_id": id.to_string(), "tx": receipt.transaction_hash.to_string()}), || {
                format!("cancelled task {id} (payment refunded)")
            })
        }
    }
}

async fn fetch_output(sequencer: &str, id: B256) -> Result<Vec<i8>> {
    let url = format!("{}/v1/tasks/{id}/output", sequencer.trim_end_matches('/'));
    let http = alloy::transports::http::reqwest::Client::builder().timeout(Duration::from_secs(30)).build()?;
    let response = http.get(&url).send().await.with_context(|| format!("cannot reach {url}"))?;
    let status = response.status();
    let bytes = response.bytes().await?;
    if bytes.len() as u64 > MAX_OUTPUT_BYTES {
        bail!("{url} answered {} bytes, larger than any output", bytes.len());
    }
    if !status.is_success() {
        bail!("{url} answered {status}: {}", String::from_utf8_lossy(&bytes));
    }
    let v: serde_json::Value = serde_json::from_slice(&bytes).with_context(|| format!("{url} did not answer JSON"))?;
    tgrid_cli::int8_output(&v).with_context(|| url.clone())
}

async fn dao(command: DaoCommand, ctx: &Ctx, out: Output) -> Result<()> {
    let d = &ctx.deployment;
    let gov = Governance::new(d.governor, &ctx.chain);
    match command {
        DaoCommand::Delegate { to } => {
            let to = match to {
                Some(a) => address(&a, "--to")?,
                None => ctx.me,
            };
            confirm("TGRID.delegate", IVotes::new(d.token, &ctx.chain).delegate(to).send().await).await?;
            out.emit(json!({"delegatee": to.to_string()}), || format!("votes of {} delegated to {to}", ctx.me))
        }
        DaoCommand::Propose(p) => {
            let proposal = proposal_for(p, ctx).await?;
            let id = gov.propose(&proposal).await?;
            let voting_ends = gov.voting_deadline(id).await?;
            out.emit(
                json!({"proposal_id": id.to_string(), "description": proposal.description, "calls": proposal.targets.len(), "voting_ends": voting_ends}),
                || format!("proposed {id}\n  {}\n  voting ends at {voting_ends} (chain time)", proposal.description),
            )
        }
        DaoCommand::Vote { proposal, support } => {
            let id = proposal_id(&proposal)?;
            let state = gov.state(id).await?;
            if state != ProposalState::Active {
                bail!("proposal {id} is {state:?}, not open for votes");
            }
            gov.vote(id, support as u8).await?;
            out.emit(json!({"proposal_id": id.to_string(), "support": format!("{support:?}").to_lowercase()}), || {
                format!("voted {support:?} on {id}")
            })
        }
        DaoCommand::Queue { proposal } => {
            let id = proposal_id(&proposal)?;
            let p = gov.proposal(id, d.start_block).await?;
            gov.queue(&p).await?;
            let eta = gov.eta(id).await?;
            out.emit(json!({"proposal_id": id.to_string(), "eta": eta}), || {
                format!("queued {id} in the timelock; executable from {eta} (chain time)")
            })
        }
        DaoCommand::Execute { proposal } => {
            let id = proposal_id(&proposal)?;
            let p = gov.proposal(id, d.start_block).await?;
            gov.execute(&p).await?;
            out.emit(json!({"proposal_id": id.to_string(), "executed": true}), || {
                format!("executed {id}: {}", p.description)
            })
        }
        DaoCommand::Status { proposal } => {
            let id = proposal_id(&proposal)?;
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

async fn proposal_for(command: ProposeCommand, ctx: &Ctx) -> Result<Proposal> {
    let d = &ctx.deployment;
    let bps = |v: u64| U256::from(v);
    Ok(match command {
        ProposeCommand::RegisterModels { registry } => {
            let file = RegistryFile::load(&registry).map_err(bad_input)?;
            let on_chain = IModelRegistry::new(d.registry, &ctx.chain);
            let all = file.registry().map_err(bad_input)?;
            let mut included = Vec::new();
            let mut calldatas = Vec::new();
            let mut names = Vec::new();
            for listed in &file.models {
                let entry = RegistryEntry {
                    model_id: parse_hex(&listed.model_id, "model id").map_err(bad_input)?,
                    normalized_digest: parse_hex(&listed.normalized_digest, "normalized digest").map_err(bad_input)?,
                };
                let id = B256::from(entry.model_id);
                included.push(entry);
                if on_chain.isModelActive(id).call().await.context("ModelRegistry.isModelActive")? {
                    continue;
                }
                // Every call moves the root to the registry of the models registered so far, so
                // each call changes it and the last one leaves the file's root.
                let root = Registry::new(included.clone()).map_err(bad_input)?.root();
                calldatas.push(
                    IModelRegistry::registerModelCall {
                        modelId: id,
                        circuitDigest: B256::from(entry.normalized_digest),
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
            Proposal {
                targets: vec![d.registry; calldatas.len()],
                values: vec![U256::ZERO; calldatas.len()],
                calldatas,
                description: format!(
                    "Register model(s) {}; registry root 0x{}",
                    names.join(", "),
                    hex::encode(all.root())
                ),
            }
        }
        ProposeCommand::MinStake { tgrid } => {
            let v = amount(&tgrid)?;
            Proposal::single(
                d.staking,
                &IStaking::setMinStakeCall { minStake: v },
                format!("Set the minimum stake to {tgrid} TGRID"),
            )
        }
        ProposeCommand::UnbondingDelay { seconds } => Proposal::single(
            d.staking,
            &IStaking::setUnbondingDelayCall { unbondingDelay: U256::from(seconds) },
            format!("Set the unbonding delay to {seconds} s"),
        ),
        ProposeCommand::Slash { slash_bps, poster_share_bps } => Proposal::single(
            d.staking,
            &IStaking::setSlashParametersCall { slashBps: bps(slash_bps), posterShareBps: bps(poster_share_bps) },
            format!("Slash {slash_bps} bps of collateral, {poster_share_bps} bps of it to the poster"),
        ),
        ProposeCommand::Collateral { bps: b, min_tgrid } => {
            let min = amount(&min_tgrid)?;
            Proposal::single(
                d.escrow,
                &ITaskEscrow::setCollateralParametersCall { collateralBps: bps(b), minCollateral: min },
                format!("Lock {b} bps of the reward as collateral, at least {min_tgrid} TGRID"),
            )
        }
        ProposeCommand::ProtocolFee { bps: b } => Proposal::single(
            d.escrow,
            &ITaskEscrow::setProtocolFeeCall { protocolFeeBps: bps(b) },
            format!("Set the protocol fee to {b} bps"),
        ),
        ProposeCommand::DeadlineBounds { min_seconds, max_seconds } => Proposal::single(
            d.escrow,
            &ITaskEscrow::setDeadlineBoundsCall {
                minDelay: U256::from(min_seconds),
                maxDelay: U256::from(max_seconds),
            },
            format!("Allow deadlines from {min_seconds} s to {max_seconds} s after posting"),
        ),
        ProposeCommand::MaxBatchSize { tasks } => Proposal::single(
            d.settlement,
            &ISettlement::setMaxBatchSizeCall { maxBatchSize: U256::from(tasks) },
            format!("Settle at most {tasks} tasks per batch"),
        ),
        ProposeCommand::Verifier { address: a } => {
            let a = address(&a, "verifier")?;
            Proposal::single(
                d.settlement,
                &ISettlement::setVerifierCall { verifier: a },
                format!("Verify batches with {a}"),
            )
        }
        ProposeCommand::Sequencer { address: a, allowed } => {
            let a = address(&a, "sequencer")?;
            Proposal::single(
                d.settlement,
                &ISettlement::setSequencerCall { account: a, allowed },
                format!(
                    "{} the sequencer role {} {a}",
                    if allowed { "Grant" } else { "Revoke" },
                    if allowed { "to" } else { "from" }
                ),
            )
        }
    })
}

async fn token(command: TokenCommand, ctx: &Ctx, out: Output) -> Result<()> {
    let token = IERC20::new(ctx.deployment.token, &ctx.chain);
    match command {
        TokenCommand::Balance { account } => {
            let who = match account {
                Some(a) => address(&a, "account")?,
                None => ctx.me,
            };
            let balance = token.balanceOf(who).call().await.context("TGRID.balanceOf")?;
            out.emit(json!({"account": who.to_string(), "balance": format_tgrid(balance)}), || {
                format!("{who}: {} TGRID", format_tgrid(balance))
            })
        }
        TokenCommand::Transfer { to, amount: a } => {
            let to = address(&to, "recipient")?;
            let v = amount(&a)?;
            let receipt = confirm("TGRID.transfer", token.transfer(to, v).send().await).await?;
            out.emit(
                json!({"to": to.to_string(), "amount": format_tgrid(v), "tx": receipt.transaction_hash.to_string()}),
                || format!("sent {} TGRID to {to}", format_tgrid(v)),
            )
        }
    }
}

async fn stake(command: StakeCommand, ctx: &Ctx, out: Output) -> Result<()> {
    let staking = IStaking::new(ctx.deployment.staking, &ctx.chain);
    let account = async |who: Address| staking.account(who).call().await.context("Staking.account");
    match command {
        StakeCommand::Status { account: who } => {
            let who = match who {
                Some(a) => address(&a, "account")?,
                None => ctx.me,
            };
            let a = account(who).await?;
            let claimable =
                tgrid_chain::claimable_tasks(&ctx.chain, ctx.deployment.escrow, ctx.deployment.start_block, who)
                    .await?;
            let pay = claimable.iter().fold(U256::ZERO, |sum, c| sum + c.pay);
            let claim_releases = claimable.iter().fold(U256::ZERO, |sum, c| sum + c.collateral);
            let min = staking.minStake().call().await.context("Staking.minStake")?;
            let now = tgrid_chain::chain_now(&ctx.chain).await?;
            let (bonded, locked) = (U256::from(a.bonded), U256::from(a.locked));
            let free = bonded - locked;
            let ready_at = a.unbondingReadyAt.to::<u64>();
            let withdrawable = a.unbonding.to::<u128>() > 0 && now >= ready_at;
            out.emit(
                json!({
                    "account": who.to_string(),
                    "bonded": format_tgrid(bonded),
                    "locked": format_tgrid(locked),
                    "free": format_tgrid(free),
                    "min_stake": format_tgrid(min),
                    "unbonding": format_tgrid(U256::from(a.unbonding)),
                    "unbonding_ready_at": ready_at,
                    "withdrawable": withdrawable,
                    "claimable": format_tgrid(pay),
                    "claimable_tasks": claimable.len(),
                    "claim_releases": format_tgrid(claim_releases),
                    "tasks_settled": a.tasksSettled,
                    "tasks_slashed": a.tasksSlashed,
                }),
                || {
                    let mut text = format!(
                        "{who}\n  bonded    {} TGRID ({} locked as collateral, {} free; minimum {})\n  claimable {} TGRID for {} settled task(s) (claiming releases {} TGRID of collateral)\n  tasks     {} settled and claimed, {} slashed",
                        format_tgrid(bonded),
                        format_tgrid(locked),
                        format_tgrid(free),
                        format_tgrid(min),
                        format_tgrid(pay),
                        claimable.len(),
                        format_tgrid(claim_releases),
                        a.tasksSettled,
                        a.tasksSlashed
                    );
                    if a.unbonding.to::<u128>() > 0 {
                        let when = if withdrawable {
                            "withdrawable now".to_string()
                        } else {
                            format!("withdrawable in {} s", ready_at - now)
                        };
                        text += &format!("\n  unbonding {} TGRID, {when}", format_tgrid(U256::from(a.unbonding)));
                    }
                    text
                },
            )
        }
        StakeCommand::Add { amount: a } => {
            let v = amount(&a)?;
            if v.is_zero() {
                return Err(bad_input(anyhow!("the amount must be above zero")));
            }
            let token = IERC20::new(ctx.deployment.token, &ctx.chain);
            let balance = token.balanceOf(ctx.me).call().await.context("TGRID.balanceOf")?;
            if balance < v {
                return Err(bad_input(anyhow!(
                    "{} holds {} TGRID, less than {}",
                    ctx.me,
                    format_tgrid(balance),
                    format_tgrid(v)
                )));
            }
            let allowance = token.allowance(ctx.me, ctx.deployment.staking).call().await.context("TGRID.allowance")?;
            if allowance < v {
                confirm("TGRID.approve", token.approve(ctx.deployment.staking, v).send().await).await?;
            }
            let receipt = confirm("Staking.stake", staking.stake(v).send().await).await?;
            let bonded = U256::from(account(ctx.me).await?.bonded);
            out.emit(
                json!({"staked": format_tgrid(v), "bonded": format_tgrid(bonded), "tx": receipt.transaction_hash.to_string()}),
                || format!("staked {} TGRID; bonded {} TGRID", format_tgrid(v), format_tgrid(bonded)),
            )
        }
        StakeCommand::Unbond { amount: a } => {
            let v = amount(&a)?;
            let before = account(ctx.me).await?;
            let free = U256::from(before.bonded) - U256::from(before.locked);
            if v.is_zero() || v > free {
                return Err(bad_input(anyhow!(
                    "can unbond between 0 and the free stake ({} TGRID; {} TGRID are locked as collateral)",
                    format_tgrid(free),
                    format_tgrid(U256::from(before.locked))
                )));
            }
            let receipt = confirm("Staking.requestUnbonding", staking.requestUnbonding(v).send().await).await?;
            let after = account(ctx.me).await?;
            let ready_at = after.unbondingReadyAt.to::<u64>();
            out.emit(
                json!({
                    "unbonding": format_tgrid(U256::from(after.unbonding)),
                    "ready_at": ready_at,
                    "tx": receipt.transaction_hash.to_string(),
                }),
                || {
                    format!(
                        "unbonding {} TGRID in all; withdrawable from unix time {ready_at} (tgrid stake withdraw)",
                        format_tgrid(U256::from(after.unbonding))
                    )
                },
            )
        }
        StakeCommand::Withdraw => {
            let a = account(ctx.me).await?;
            let now = tgrid_chain::chain_now(&ctx.chain).await?;
            let ready_at = a.unbondingReadyAt.to::<u64>();
            if a.unbonding.to::<u128>() == 0 {
                return Err(bad_input(anyhow!("nothing is unbonding (tgrid stake unbond AMOUNT first)")));
            }
            if now < ready_at {
                return Err(bad_input(anyhow!(
                    "the unbonding of {} TGRID is ready in {} s (at unix time {ready_at})",
                    format_tgrid(U256::from(a.unbonding)),
                    ready_at - now
                )));
            }
            let receipt = confirm("Staking.withdraw", staking.withdraw().send().await).await?;
            let v = U256::from(a.unbonding);
            out.emit(json!({"withdrawn": format_tgrid(v), "tx": receipt.transaction_hash.to_string()}), || {
                format!("withdrew {} TGRID", format_tgrid(v))
            })
        }
        StakeCommand::Claim { task_ids } => {
            let d = &ctx.deployment;
            let ids = if task_ids.is_empty() {
                let found = tgrid_chain::claimable_tasks(&ctx.chain, d.escrow, d.start_block, ctx.me).await?;
                if found.is_empty() {
                    return Err(bad_input(anyhow!(
                        "nothing to claim: {} has no settled task whose pay it has not claimed",
                        ctx.me
                    )));
                }
                found.into_iter().map(|c| c.task_id).collect()
            } else {
                claimable_ids(&task_ids, ctx).await?
            };
            let claimed = tgrid_chain::claim_settled(&ctx.chain, d.escrow, &ids, tgrid_chain::MAX_CLAIM_IDS).await?;
            let txs: Vec<String> = claimed.transactions.iter().map(|t| t.to_string()).collect();
            out.emit(
                json!({
                    "tasks": claimed.tasks,
                    "paid": format_tgrid(claimed.paid),
                    "collateral_released": format_tgrid(claimed.collateral_released),
                    "task_ids": ids.iter().map(|id| id.to_string()).collect::<Vec<_>>(),
                    "transactions": txs,
                }),
                || {
                    format!(
                        "claimed {} settled task(s): paid {} TGRID, released {} TGRID of collateral\n  transaction(s): {}",
                        claimed.tasks,
                        format_tgrid(claimed.paid),
                        format_tgrid(claimed.collateral_released),
                        txs.join(", ")
                    )
                },
            )
        }
    }
}

/// The given task ids, each checked to be a settled, unclaimed task of the signer (else bad input
/// naming the task and why).
async fn claimable_ids(task_ids: &[String], ctx: &Ctx) -> Result<Vec<B256>> {
    let escrow = ITaskEscrow::new(ctx.deployment.escrow, &ctx.chain);
    let mut ids: Vec<B256> = Vec::new();
    for text in task_ids {
        let id = task_id(text)?;
        if ids.contains(&id) {
            return Err(bad_input(anyhow!("task {id} is given twice")));
        }
        let t = escrow.task(id).call().await.context("TaskEscrow.task")?;
        let c = escrow.claimable(id).call().await.context("TaskEscrow.claimable")?;
        if t.status != ITaskEscrow::TaskStatus::Settled {
            return Err(bad_input(anyhow!("task {id} is {:?}, not settled: nothing to claim", t.status)));
        }
        if t.provider != ctx.me {
            return Err(bad_input(anyhow!("task {id} was accepted by {}, not {}", t.provider, ctx.me)));
        }
        if !c.isClaimable {
            return Err(bad_input(anyhow!("task {id} is already claimed")));
        }
        ids.push(id);
    }
    Ok(ids)
}

async fn devnet(command: DevnetCommand, ctx: &Ctx, out: Output) -> Result<()> {
    if ctx.chain_id != ANVIL_CHAIN_ID {
        return Err(bad_input(anyhow!(
            "devnet commands move the clock of a local anvil only (chain {ANVIL_CHAIN_ID})"
        )));
    }
    let DevnetCommand::AdvanceTime { seconds, past_voting, past_timelock } = command;
    let gov = Governance::new(ctx.deployment.governor, &ctx.chain);
    let now = tgrid_chain::chain_now(&ctx.chain).await?;
    let target = match (past_voting, past_timelock) {
        (Some(p), _) => Some(gov.voting_deadline(proposal_id(&p)?).await? + 1),
        (_, Some(p)) => Some(gov.eta(proposal_id(&p)?).await? + 1),
        _ => None,
    };
    let step = match target {
        Some(t) => t.saturating_sub(now).max(1),
        None => seconds.max(1),
    };
    tgrid_chain::advance_time(&ctx.chain, step).await?;
    let after = tgrid_chain::chain_now(&ctx.chain).await?;
    out.emit(json!({"advanced_secs": step, "chain_time": after}), || {
        format!("devnet clock moved {step} s forward (chain time {after})")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_parses() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
