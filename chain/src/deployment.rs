use std::path::Path;

use alloy::primitives::{Address, B256};
use serde::Deserialize;

use crate::{Error, Result};

/// JSON-RPC endpoint every tool defaults to: a local anvil.
pub const DEFAULT_RPC_URL: &str = "http://127.0.0.1:8545";

/// Deployment file every tool defaults to: what `Deploy.s.sol` writes for anvil's chain id.
pub const DEFAULT_DEPLOYMENT: &str = "contracts/deployments/31337.json";

/// Chain id of local anvil devnets: the only chain where anvil's public keys and the INSECURE
/// devnet Groth16 key may be used (Deploy.s.sol's `DEVNET_CHAIN_ID`).
pub const DEVNET_CHAIN_ID: u64 = 31337;

/// A deployment file is a few hundred bytes; anything far larger is not one.
const MAX_DEPLOYMENT_BYTES: u64 = 64 * 1024;

/// The addresses and parameters `contracts/script/Deploy.s.sol` writes
/// (`contracts/deployments/<chainId>.json` by default): everything an off-chain tool needs to
/// find the contracts.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Deployment {
    /// Chain id the contracts live on.
    pub chain_id: u64,
    /// Block of the deployment: event scans start here.
    pub start_block: u64,
    /// TGRID (ERC-20, votes).
    pub token: Address,
    /// The timelock owning every parameter.
    pub timelock: Address,
    /// The Governor proposing to the timelock.
    pub governor: Address,
    /// ModelRegistry.
    pub registry: Address,
    /// TaskMarket: deposit books, bonds, permissionless settlement of signed orders, disputes.
    pub market: Address,
    /// The Groth16 verifier the market calls.
    pub verifier: Address,
    /// Identifier of the verifier's key (contains "insecure" for a devnet key).
    pub verifying_key_id: String,
    /// The account granted the sequencer role at deployment (zero: none).
    pub sequencer: Address,
    /// The registry root at deployment.
    pub registry_root: B256,
    /// The model registered at deployment (zero: none).
    pub devnet_model_id: B256,
}

impl Deployment {
    /// Reads and checks a deployment file.
    pub fn load(path: &Path) -> Result<Self> {
        let fail = |reason: String| Error::Deployment { path: path.display().to_string(), reason };
        let len = std::fs::metadata(path)
            .map_err(|e| match e.kind() {
                // The usual first-run mistake: say what writes the file.
                std::io::ErrorKind::NotFound => fail(format!(
                    "{e}; the contracts' deploy script writes it (`make demo` deploys to a local anvil); \
                     for another chain, set --deployment or the `deployment` setting to its file"
                )),
                _ => fail(e.to_string()),
            })?
            .len();
        if len > MAX_DEPLOYMENT_BYTES {
            return Err(fail(format!("{len} bytes, more than the {MAX_DEPLOYMENT_BYTES} a deployment file can be")));
        }
        let bytes = std::fs::read(path).map_err(|e| fail(e.to_string()))?;
        Self::from_json_bytes(&bytes).map_err(|e| fail(e.to_string()))
    }

    /// Decodes a deployment from JSON, rejecting unknown fields and zero contract addresses.
    pub fn from_json_bytes(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        let d: Self = serde_json::from_slice(bytes)?;
        let contracts = [
            ("token", d.token),
            ("timelock", d.timelock),
            ("governor", d.governor),
            ("registry", d.registry),
            ("market", d.market),
            ("verifier", d.verifier),
        ];
        if let Some((name, _)) = contracts.iter().find(|(_, a)| a.is_zero()) {
            return Err(serde::de::Error::custom(format!("{name} is the zero address")));
        }
        Ok(d)
    }

    /// Whether the deployment itself says its verifier's key is a devnet key whose toxic waste is
    /// public (its id carries `insecure`). A self-description: auditors decide from the parsed
    /// key id and the key's digest (`tgrid_settlement_proof::insecurity`).
    pub fn verifier_is_insecure(&self) -> bool {
        self.verifying_key_id.to_ascii_lowercase().contains("insecure")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"{"chainId":31337,"startBlock":1,
        "token":"0x5FbDB2315678afecb367f032d93F642f64180aa3",
        "timelock":"0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512",
        "governor":"0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0",
        "registry":"0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9",
        "market":"0x2279B7A0a67DB372996a5FaB50D91eAA73d2eBe6",
        "verifier":"0xa513E6E4b8f2a923D98304ec87F64353C4D5C853",
        "verifyingKeyId":"wrap-production-r4q21g16-b2040e15e164b7bb-6f990bdc6e64c4c2d710109c5ea949d3ceec7851903ff7a22665a9a12f725714-insecure-devnet",
        "sequencer":"0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
        "registryRoot":"0x0101010101010101010101010101010101010101010101010101010101010101",
        "devnetModelId":"0x0000000000000000000000000000000000000000000000000000000000000000"}"#;

    #[test]
    fn decodes_what_deploy_writes() {
        let d = Deployment::from_json_bytes(SAMPLE.as_bytes()).unwrap();
        assert_eq!(d.chain_id, 31337);
        assert!(d.verifier_is_insecure());
        assert!(d.devnet_model_id.is_zero());
    }

    #[test]
    fn rejects_malformed_files() {
        assert!(Deployment::from_json_bytes(b"\x00\xff random").is_err());
        assert!(Deployment::from_json_bytes(b"{}").is_err());
        let unknown = SAMPLE.replacen("\"chainId\"", "\"surprise\":1,\"chainId\"", 1);
        assert!(Deployment::from_json_bytes(unknown.as_bytes()).is_err());
        let zero =
            SAMPLE.replace("0xa513E6E4b8f2a923D98304ec87F64353C4D5C853", "0x0000000000000000000000000000000000000000");
        let err = Deployment::from_json_bytes(zero.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("verifier is the zero address"), "{err}");
    }

    #[test]
    fn load_refuses_oversized_files() {
        let dir = std::env::temp_dir().join(format!("tgrid-chain-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("big.json");
        std::fs::write(&path, vec![b' '; MAX_DEPLOYMENT_BYTES as usize + 1]).unwrap();
        let err = Deployment::load(&path).unwrap_err().to_string();
        assert!(err.contains("more than"), "{err}");
        let err = Deployment::load(&dir.join("missing.json")).unwrap_err().to_string();
        assert!(err.contains("missing.json") && err.contains("--deployment"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
