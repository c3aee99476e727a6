//! `tgrid`: the task poster's, the provider's and the DAO member's tool for the task market
//! (version 2: EIP-712 signed orders off-chain, paid from the poster's pre-funded deposit books;
//! providers' bonds slashable by disputes; permissionless batch settlement).
//!
//! Posters fund deposit books (`deposit`), sign and publish orders (`order post`: the input goes
//! to the input store, the signed order to the relay), follow them (`order status`), fetch and
//! check results against the settled output commitment (`order result`), cancel them, and
//! dispute orders a provider accepted and never settled (`dispute`). Providers manage their bond
//! (`stake`) and withdraw their pay (`earnings`). DAO members delegate, propose the market's
//! parameters and model registrations, vote, queue and execute.
//!
//! Every command checks its arguments and files before it touches the chain, takes `--json`, and
//! exits 0 on success, 1 on a failed operation, 2 on bad input (see `tgrid-cli`). Commands that
//! are refused because of the chain's state (too early, too late, nothing to withdraw) exit 1;
//! malformed or inconsistent input (files, hex, unknown books, amounts) exits 2.

mod common;
mod dao;
mod deposit;
mod devnet;
mod dispute;
mod order;
mod outcome;
mod poster;
mod stake;
mod token;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};
use tgrid_chain::keys::Keystore;
use tgrid_cli::{bad_input, Output};

use crate::common::Globals;

/// TensorGrid's task market for task posters, providers and DAO members.
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
    /// Encrypted keystore of the account that signs (Web3 Secret Storage, as Foundry's `cast
    /// wallet import` writes under ~/.foundry/keystores), its password from --password-file or
    /// TGRID_KEYSTORE_PASSWORD. Without it, the raw key in the environment variable
    /// TGRID_PRIVATE_KEY; without that, anvil account 0 on a local anvil only. A key is never an
    /// argument: any process on the machine can read another's arguments.
    #[arg(long, global = true, env = "TGRID_KEYSTORE")]
    keystore: Option<PathBuf>,
    /// File whose first line is the keystore's password.
    #[arg(long, global = true, env = "TGRID_KEYSTORE_PASSWORD_FILE")]
    password_file: Option<PathBuf>,
    /// Local state: signed orders (`orders/<hash>.json`) and each poster's next order index per
    /// book (`poster/<address>.json`).
    #[arg(long, global = true, env = "TGRID_STATE_DIR", default_value = ".tgrid")]
    state_dir: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// A poster's deposit books: add (open and fund), status, close, withdraw.
    #[command(subcommand)]
    Deposit(deposit::DepositCommand),
    /// Sign and publish orders, follow them, fetch and check their results, cancel them.
    #[command(subcommand)]
    Order(order::OrderCommand),
    /// Slash the provider of an order it accepted and never settled (after the deadline).
    Dispute(dispute::DisputeArgs),
    /// A provider's bond: status, add, unbond, withdraw.
    #[command(subcommand)]
    Stake(stake::StakeCommand),
    /// A provider's (or settler's) earnings: withdraw.
    #[command(subcommand)]
    Earnings(stake::EarningsCommand),
    /// Governance: delegate, propose, vote, queue, execute.
    #[command(subcommand)]
    Dao(dao::DaoCommand),
    /// TGRID balances and transfers.
    #[command(subcommand)]
    Token(token::TokenCommand),
    /// Local devnet helpers (refused on any chain but anvil's 31337).
    #[command(subcommand)]
    Devnet(devnet::DevnetCommand),
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

async fn run(cli: Cli, out: Output) -> Result<()> {
    if cli.password_file.is_some() && cli.keystore.is_none() {
        return Err(bad_input(anyhow::anyhow!("--password-file is the password of a --keystore; none is given")));
    }
    let keystore = cli.keystore.map(|path| Keystore { path, password_file: cli.password_file });
    let g = Globals { rpc: cli.rpc, deployment: cli.deployment, keystore, state_dir: cli.state_dir };
    match cli.command {
        Command::Deposit(c) => deposit::run(c, &g, out).await,
        Command::Order(c) => order::run(c, &g, out).await,
        Command::Dispute(a) => dispute::run(a, &g, out).await,
        Command::Stake(c) => stake::run(c, &g, out).await,
        Command::Earnings(c) => stake::earnings(c, &g, out).await,
        Command::Dao(c) => dao::run(c, &g, out).await,
        Command::Token(c) => token::run(c, &g, out).await,
        Command::Devnet(c) => devnet::run(c, &g, out).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_parses() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn removed_v1_commands_are_gone() {
        for args in [&["tgrid", "task", "status", "0x00"][..], &["tgrid", "stake", "claim"]] {
            assert!(Cli::try_parse_from(args).is_err(), "{args:?}");
        }
        let parsed =
            Cli::try_parse_from(["tgrid", "order", "post", "--model", "m.tgm", "--input", "i.json", "--payment", "2"]);
        assert!(parsed.is_ok(), "{parsed:?}");
    }
}
