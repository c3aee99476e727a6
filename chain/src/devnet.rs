use std::path::{Path, PathBuf};
use std::process::Command;

use alloy::node_bindings::{Anvil, AnvilInstance};
use alloy::primitives::Address;
use alloy::signers::local::PrivateKeySigner;

use crate::{Deployment, Error, Result};

/// How to start a local devnet.
#[derive(Clone, Debug)]
pub struct DevnetConfig {
    /// The repository root: holds `foundry.toml`, `contracts/` and `node_modules/.bin/{anvil,forge}`
    /// (installed by `scripts/foundry/setup.sh`).
    pub repo_root: PathBuf,
    /// Environment overrides passed to `Deploy.s.sol` (`TGRID_REGISTRY_ROOT`, `TGRID_VERIFIER_VK`,
    /// ...; see its NatSpec header).
    pub deploy_env: Vec<(String, String)>,
}

impl DevnetConfig {
    /// Defaults for the repository at `repo_root`.
    pub fn new(repo_root: impl Into<PathBuf>) -> Self {
        Self { repo_root: repo_root.into(), deploy_env: Vec::new() }
    }

    /// Adds one environment override for the deployment script.
    pub fn deploy_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.deploy_env.push((name.into(), value.into()));
        self
    }
}

/// A real anvil chain on a free local port with the real contracts deployed by
/// `contracts/script/Deploy.s.sol` (sent by anvil's first account, which also holds the TGRID
/// supply and the sequencer role unless overridden). anvil stops when this is dropped.
#[derive(Debug)]
pub struct Devnet {
    anvil: AnvilInstance,
    deployment: Deployment,
    deployment_path: PathBuf,
}

impl Devnet {
    /// Starts anvil and deploys the contracts.
    pub fn start(config: &DevnetConfig) -> Result<Self> {
        let bin = config.repo_root.join("node_modules/.bin");
        let anvil_path = bin.join("anvil");
        if !anvil_path.exists() {
            return Err(Error::Tool {
                tool: anvil_path.display().to_string(),
                reason: "not installed: run `bash scripts/foundry/setup.sh`".into(),
            });
        }
        // anvil picks its own free port when given port 0.
        let anvil = Anvil::at(&anvil_path)
            .port(0u16)
            .try_spawn()
            .map_err(|e| Error::Tool { tool: anvil_path.display().to_string(), reason: e.to_string() })?;
        // Not under forge's `out/`: a `forge build --force` meanwhile would delete it.
        let out = format!("target/test-deployments/anvil-{}.json", anvil.port());
        let deployer = anvil.keys()[0].clone();
        let key_hex = format!("0x{}", hex::encode(deployer.to_bytes()));
        run_deploy_script(
            &config.repo_root,
            &bin.join("forge"),
            anvil.endpoint().as_str(),
            &key_hex,
            &out,
            &config.deploy_env,
        )?;
        let deployment_path = config.repo_root.join(&out);
        let deployment = Deployment::load(&deployment_path)?;
        Ok(Self { anvil, deployment, deployment_path })
    }

    /// The JSON-RPC endpoint.
    pub fn rpc_url(&self) -> String {
        self.anvil.endpoint()
    }

    /// The deployed contracts.
    pub fn deployment(&self) -> &Deployment {
        &self.deployment
    }

    /// The deployment file the script wrote (what `--deployment` options take).
    pub fn deployment_path(&self) -> &Path {
        &self.deployment_path
    }

    /// anvil's `i`-th funded account (0 deployed the contracts and holds the TGRID supply).
    pub fn signer(&self, i: usize) -> PrivateKeySigner {
        PrivateKeySigner::from_signing_key(self.anvil.keys()[i].clone().into())
    }

    /// The address of anvil's `i`-th account.
    pub fn address(&self, i: usize) -> Address {
        self.anvil.addresses()[i]
    }
}

fn run_deploy_script(
    repo_root: &Path,
    forge: &Path,
    rpc_url: &str,
    private_key: &str,
    out: &str,
    extra_env: &[(String, String)],
) -> Result<()> {
    let mut cmd = Command::new(forge);
    cmd.current_dir(repo_root)
        .args(["script", "contracts/script/Deploy.s.sol", "--rpc-url", rpc_url, "--broadcast", "--slow"])
        .env("PRIVATE_KEY", private_key)
        .env("TGRID_DEPLOYMENTS_OUT", out)
        .envs(extra_env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    tracing::info!(rpc_url, out, "deploying the contracts with forge script");
    let output = cmd.output().map_err(|e| Error::Tool { tool: forge.display().to_string(), reason: e.to_string() })?;
    if !output.status.success() {
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        let tail: String =
            text.lines().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
        return Err(Error::DeployScript { status: output.status.to_string(), output: tail });
    }
    Ok(())
}

/// Moves a devnet's clock forward by `seconds` and mines a block (anvil's `evm_increaseTime` and
/// `evm_mine`): how tests and the demo pass voting periods, timelock delays and task deadlines.
pub async fn advance_time<P: alloy::providers::Provider>(provider: &P, seconds: u64) -> Result<()> {
    let step =
        |e: alloy::transports::TransportError| Error::Chain { step: "evm_increaseTime".into(), reason: e.to_string() };
    provider.raw_request::<_, serde_json::Value>("evm_increaseTime".into(), (seconds,)).await.map_err(step)?;
    provider.raw_request::<_, serde_json::Value>("evm_mine".into(), ()).await.map_err(step)?;
    Ok(())
}
