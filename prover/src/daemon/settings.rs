//! The daemon's settings: defaults for a local devnet, then the TOML file, then
//! `TGRID_PROVIDER_<SETTING>` variables (lists comma-separated).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};

pub use tgrid_settlement_proof::WrapFri;

use crate::settle::WrapKeySetting;

/// Anvil's second default account key (public knowledge; the devnet's provider account only).
pub const ANVIL_KEY_1: &str = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

/// Prefix of the environment variables overriding settings.
pub const ENV_PREFIX: &str = "TGRID_PROVIDER_";

/// The `wrap_key` value naming the INSECURE devnet key.
pub const INSECURE_DEVNET_KEY: &str = "insecure-devnet";

/// Settings of the daemon.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Ethereum JSON-RPC endpoint.
    pub rpc_url: String,
    /// Deployment file written by `Deploy.s.sol`.
    pub deployment: PathBuf,
    /// The provider account's key (default: anvil account 1, devnet only). Ignored when
    /// `keystore` is set.
    pub private_key: String,
    /// Encrypted keystore of the provider's account (Web3 Secret Storage, as Foundry's `cast
    /// wallet import` writes), instead of a raw key in this file or the environment.
    pub keystore: Option<PathBuf>,
    /// File whose first line is the keystore's password; without it, TGRID_KEYSTORE_PASSWORD.
    pub keystore_password_file: Option<PathBuf>,
    /// Compiled models (.tgm) this provider runs; orders of other models are ignored.
    pub models: Vec<PathBuf>,
    /// Input store: posters publish each input as `<input commitment>.json` (EZKL format) in this
    /// directory... Content-addressed, so the provider checks every file against the order.
    pub inputs_dir: PathBuf,
    /// ...or, when set, under this HTTP URL (`<inputs_url>/<input commitment>.json`).
    pub inputs_url: String,
    /// The order relay and sequencer (its HTTP API).
    pub sequencer_url: String,
    /// Where state, proofs and outputs are kept.
    pub data_dir: PathBuf,
    /// Bonded stake (whole TGRID) the daemon keeps; it stakes the difference at start.
    pub stake_tgrid: u64,
    /// An order is accepted only if its deadline leaves, after the proving backlog and this
    /// order's proving time, this long: the sequencer's batching and, failing that, this
    /// provider's own settlement (`self_settle_before_secs`) need it.
    pub settle_margin_secs: u64,
    /// An order still unsettled this long before its deadline is settled by the daemon itself
    /// (aggregated, wrapped and sent from the provider's account). Must fit the market's
    /// self-settlement window, and exceed the time a self-settlement takes here.
    pub self_settle_before_secs: u64,
    /// Whether the daemon settles its own results near their deadline.
    pub self_settle: bool,
    /// The Groth16 proving key of self-settlement: a ceremony's key file, or `insecure-devnet`
    /// (INSECURE, devnet chain only: the key set up from a public seed, cached in
    /// `insecure_devnet_keys_dir`). Either way it must be the key of the verifier the market calls.
    /// No default: required when `self_settle` is on.
    pub wrap_key: String,
    /// Where the INSECURE devnet key is cached.
    pub insecure_devnet_keys_dir: PathBuf,
    /// FRI parameters of self-settlement's wrap.
    pub wrap_fri: WrapFri,
    /// Smallest payment (whole TGRID) worth accepting (the market's dispute minimum applies too).
    pub min_payment_tgrid: u64,
    /// New orders are accepted only while the sequencer's advertised queue (acknowledged results
    /// waiting for a batch) holds at most this many: beyond, results would wait long for
    /// settlement and more of them end in self-settlement. 0: ignore the queue.
    pub max_sequencer_queue: u64,
    /// Proving time assumed for a model before one was measured.
    pub initial_prove_estimate_secs: u64,
    /// Idle wait between polls.
    pub poll_interval_ms: u64,
    /// A task nothing more can happen to is forgotten this long after its deadline, with its
    /// proof and input files (the state file is rewritten at every step). Outputs stay.
    pub prune_after_secs: u64,
    /// Withdraw earnings automatically after orders settle.
    pub auto_withdraw: bool,
    /// Take private tasks too (their models' private ids; inputs sealed to this provider's key,
    /// `data_dir/sealing.key`, announced on the relay). Builds each model's zero-knowledge
    /// circuit as well.
    pub private_tasks: bool,
    /// Prove each task's leaf (the aggregation's first recursive step, a few seconds and about
    /// 1 GB more per task proof) and send it with the result, so the sequencer checks it in
    /// milliseconds instead of proving it: its aggregation cost per task drops to the merges.
    /// Proven under the chain's current registry (a leaf under an older root is dropped by the
    /// sequencer and proven there).
    pub prove_leaves: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            rpc_url: tgrid_chain::DEFAULT_RPC_URL.into(),
            deployment: tgrid_chain::DEFAULT_DEPLOYMENT.into(),
            private_key: ANVIL_KEY_1.into(),
            keystore: None,
            keystore_password_file: None,
            models: Vec::new(),
            inputs_dir: ".tgrid/inputs".into(),
            inputs_url: String::new(),
            sequencer_url: "http://127.0.0.1:8080".into(),
            data_dir: ".tgrid/provider".into(),
            stake_tgrid: 1_000,
            settle_margin_secs: 900,
            self_settle_before_secs: 600,
            self_settle: true,
            wrap_key: String::new(),
            insecure_devnet_keys_dir: ".tgrid/keys".into(),
            wrap_fri: WrapFri::Production,
            min_payment_tgrid: 0,
            max_sequencer_queue: 1_000,
            initial_prove_estimate_secs: 120,
            poll_interval_ms: 1_000,
            prune_after_secs: 86_400,
            auto_withdraw: true,
            private_tasks: true,
            prove_leaves: false,
        }
    }
}

impl Settings {
    /// Refuses what only a devnet may use (the INSECURE wrap key, anvil's public key 1) on any
    /// other chain.
    pub fn check_chain(&self, chain_id: u64) -> Result<()> {
        use tgrid_chain::DEVNET_CHAIN_ID;
        if chain_id == DEVNET_CHAIN_ID {
            return Ok(());
        }
        if self.self_settle && self.wrap_key == INSECURE_DEVNET_KEY {
            bail!(
                "provider settings: wrap_key `{INSECURE_DEVNET_KEY}` on chain {chain_id}: the INSECURE devnet \
                 key serves the devnet chain ({DEVNET_CHAIN_ID}) only; give the ceremony key file"
            );
        }
        if self.keystore.is_none() && self.private_key.eq_ignore_ascii_case(ANVIL_KEY_1) {
            bail!("provider settings: private_key is anvil's public key 1 on chain {chain_id}: set your own");
        }
        Ok(())
    }

    /// The provider's signing key: the keystore's if one is set, else `private_key`.
    pub fn signer(&self) -> Result<alloy::signers::local::PrivateKeySigner> {
        Ok(tgrid_chain::keys::settings_signer(
            self.keystore.as_deref(),
            self.keystore_password_file.as_deref(),
            &self.private_key,
        )?)
    }

    /// The self-settlement key.
    pub fn wrap_key_setting(&self) -> WrapKeySetting {
        if self.wrap_key == INSECURE_DEVNET_KEY {
            WrapKeySetting::InsecureDevnet(self.insecure_devnet_keys_dir.clone())
        } else {
            WrapKeySetting::File(self.wrap_key.clone().into())
        }
    }

    /// Defaults, then `file`, then the environment.
    pub fn load(file: Option<&Path>) -> Result<Self> {
        use tgrid_cli::OptionalSetting::Text;
        let s: Settings = tgrid_cli::layered_settings(
            file,
            std::env::vars(),
            ENV_PREFIX,
            &[("keystore", Text), ("keystore_password_file", Text)],
        )
        .map_err(|e| anyhow!("provider settings: {e}"))?;
        if s.models.is_empty() {
            bail!("provider settings: no models (set `models = [\"model.tgm\"]` or {ENV_PREFIX}MODELS)");
        }
        if s.poll_interval_ms == 0 {
            bail!("provider settings: poll_interval_ms must be positive");
        }
        if s.self_settle && s.wrap_key.is_empty() {
            bail!(
                "provider settings: self_settle needs wrap_key: a ceremony key file, or `{INSECURE_DEVNET_KEY}` on a \
                 local devnet only (INSECURE: set up from a public seed); or set self_settle = false"
            );
        }
        if s.self_settle && s.self_settle_before_secs >= s.settle_margin_secs {
            bail!(
                "provider settings: self_settle_before_secs ({}) must be below settle_margin_secs ({}), or orders \
                 would be accepted too late to settle them oneself",
                s.self_settle_before_secs,
                s.settle_margin_secs
            );
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_need_a_model_name_unknown_keys_and_keep_margins_ordered() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("provider.toml");
        std::fs::write(&file, "models = []\n").unwrap();
        assert!(Settings::load(Some(&file)).unwrap_err().to_string().contains("no models"));
        std::fs::write(&file, "modles = [\"a.tgm\"]\n").unwrap();
        assert!(Settings::load(Some(&file)).unwrap_err().to_string().contains("modles"));
        std::fs::write(&file, "models = [\"a.tgm\"]\nstake_tgrid = 5\n").unwrap();
        let err = Settings::load(Some(&file)).unwrap_err().to_string();
        assert!(err.contains("self_settle needs wrap_key") && err.contains("INSECURE"), "{err}");
        std::fs::write(&file, "models = [\"a.tgm\"]\nstake_tgrid = 5\nself_settle = false\n").unwrap();
        assert!(!Settings::load(Some(&file)).unwrap().self_settle);
        std::fs::write(&file, "models = [\"a.tgm\"]\nstake_tgrid = 5\nwrap_key = \"insecure-devnet\"\n").unwrap();
        let s = Settings::load(Some(&file)).unwrap();
        s.check_chain(31337).unwrap();
        assert!(s.check_chain(10).unwrap_err().to_string().contains("devnet chain (31337) only"));
        assert_eq!(s.stake_tgrid, 5);
        assert!(s.self_settle && s.auto_withdraw);
        assert_eq!(s.models, vec![PathBuf::from("a.tgm")]);
        std::fs::write(
            &file,
            "models = [\"a.tgm\"]\nwrap_key = \"insecure-devnet\"\nself_settle_before_secs = 900\nsettle_margin_secs = 600\n",
        )
        .unwrap();
        assert!(Settings::load(Some(&file)).unwrap_err().to_string().contains("self_settle_before_secs"));
        assert_eq!(s.wrap_key_setting(), WrapKeySetting::InsecureDevnet(".tgrid/keys".into()));
        std::fs::write(&file, "models = [\"a.tgm\"]\nwrap_key = \"/keys/ceremony.pk\"\nwrap_fri = \"insecure-test\"\n")
            .unwrap();
        let s = Settings::load(Some(&file)).unwrap();
        assert_eq!(s.wrap_key_setting(), WrapKeySetting::File("/keys/ceremony.pk".into()));
        assert_eq!(s.wrap_fri, WrapFri::InsecureTest);
    }

    #[test]
    fn a_keystore_replaces_the_raw_key_and_lifts_the_devnet_only_default() {
        let dir = tempfile::tempdir().unwrap();
        let key = tgrid_chain::parse_signer(ANVIL_KEY_1).unwrap();
        let mut rng = rand::thread_rng();
        alloy::signers::local::PrivateKeySigner::encrypt_keystore(
            dir.path(),
            &mut rng,
            key.to_bytes(),
            "pw",
            Some("ks"),
        )
        .unwrap();
        std::fs::write(dir.path().join("pw"), "pw\n").unwrap();
        let file = dir.path().join("provider.toml");
        let settings = format!(
            "models = [\"a.tgm\"]\nself_settle = false\nkeystore = {:?}\nkeystore_password_file = {:?}\n",
            dir.path().join("ks"),
            dir.path().join("pw")
        );
        std::fs::write(&file, settings).unwrap();
        let s = Settings::load(Some(&file)).unwrap();
        assert_eq!(s.signer().unwrap().address(), key.address());
        // The unused default raw key is not what signs, so any chain may be used.
        s.check_chain(10).unwrap();
        std::fs::write(dir.path().join("pw"), "not it").unwrap();
        assert!(s.signer().unwrap_err().to_string().contains("wrong password"));
    }
}
