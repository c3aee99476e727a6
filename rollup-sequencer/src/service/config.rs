//! Settings of `tgrid-sequencer run`: defaults that work against a local anvil, overridden by a
//! TOML file, overridden by the environment (`TGRID_SEQUENCER_<FIELD>`, upper case).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
pub use tgrid_settlement_proof::WrapFri;

use crate::service::ServiceError;

/// Anvil's first default account key (public knowledge; local devnets only).
pub const ANVIL_KEY_0: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

pub use tgrid_chain::DEVNET_CHAIN_ID;
use tgrid_cli::OptionalSetting;

/// Every setting of the service.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Ethereum JSON-RPC endpoint.
    pub rpc_url: String,
    /// Deployment file written by `Deploy.s.sol`.
    pub deployment: PathBuf,
    /// Registry file (`tgrid-sequencer registry add`) listing the models and their files.
    pub registry: PathBuf,
    /// Durable state (sled database).
    pub data_dir: PathBuf,
    /// HTTP API address.
    pub listen: SocketAddr,
    /// Key of the settling account (its sequencer role gives priority before each order's
    /// self-settlement window; without it, orders settle only inside that window). Default: anvil
    /// account 0, devnet only. Ignored when `keystore` is set.
    pub private_key: String,
    /// Encrypted keystore of the settling account (Web3 Secret Storage, as Foundry's `cast
    /// wallet import` writes), instead of a raw key in the settings or the environment.
    pub keystore: Option<PathBuf>,
    /// File whose first line is the keystore's password; without it, TGRID_KEYSTORE_PASSWORD.
    pub keystore_password_file: Option<PathBuf>,
    /// A batch closes when it holds this many tasks...
    pub max_batch_tasks: usize,
    /// ...or when its first task has waited this long...
    pub max_batch_age_secs: u64,
    /// ...or when a task in it is due within this many seconds (leaves time to prove and settle).
    pub deadline_margin_secs: u64,
    /// Blocks on top of the settling block before a batch counts as settled: a reorganization
    /// shallower than this cannot undo a settlement this sequencer reported. Unset: none on the
    /// devnet chain (anvil mines a block per transaction, so none may come), 3 on any other.
    pub confirmations: Option<u64>,
    /// Re-send a pending settlement transaction with higher fees after this long.
    pub gas_bump_after_secs: u64,
    /// Final-layer FRI parameters of the wrap.
    pub wrap_fri: WrapFri,
    /// INSECURE: prove batches under the devnet Groth16 key, set up from a PUBLIC seed (anyone
    /// can forge proofs for it). An explicit opt-in, refused on any chain but the devnet's
    /// (31337); exactly one of this and `proving_key` is required.
    pub insecure_devnet_key: bool,
    /// Where the INSECURE devnet keys are set up once and cached.
    pub insecure_devnet_keys_dir: PathBuf,
    /// Groth16 proving key from a ceremony.
    pub proving_key: Option<PathBuf>,
    /// Largest request body accepted.
    pub max_body_bytes: usize,
    /// Requests taking longer are answered 408.
    pub request_timeout_secs: u64,
    /// A request's headers must arrive within this; also the longest a kept-alive connection
    /// waits for its next request.
    pub header_timeout_secs: u64,
    /// How long after its deadline a settled or dropped task (its record, proof and output, and
    /// its batch once all the batch's tasks are gone) and a listed order are kept; then they are
    /// forgotten, checked hourly. Providers hold their signed receipts; auditors read the chain.
    pub retention_secs: u64,
    /// Open connections the server holds at most; more are closed on arrival.
    pub max_connections: usize,
    /// Open connections one client address (an IPv6 client per /64) holds at most.
    pub max_connections_per_client: usize,
    /// Submissions per second allowed per provider (burst: twice that).
    pub submissions_per_provider_per_sec: u32,
    /// Result submissions per second allowed per client address (an IPv6 client per /64; burst:
    /// twice that), checked before the order's backing is read from the chain or its proof
    /// checked: throwaway provider keys must not buy a stranger new quota.
    pub submissions_per_client_per_sec: u32,
    /// Relay writes (orders, acceptances, sealing keys) per second allowed per client address
    /// (an IPv6 client per /64; burst: twice that). Each costs chain reads before it can be
    /// refused, so anyone could otherwise turn signatures of fresh keys into load on the node.
    pub relay_requests_per_client_per_sec: u32,
    /// Idle wait of the pipeline between polls of its queues and the chain.
    pub poll_interval_ms: u64,
    /// How often the pipeline compares the on-chain registry root with its own; when governance
    /// moved it and the registry file lists the new root, new batches are proven under it.
    pub registry_poll_secs: u64,
    /// Job queue (NATS JetStream, `nats://[user:password@ or token@]host:port`) on which
    /// `tgrid-sequencer worker` processes prove the leaves and merges of each closed batch.
    /// Unset (the default): proven in this process, leaves as results arrive.
    pub job_queue: Option<String>,
    /// Seconds a queued job may go without a sign of life from its worker before the queue
    /// redelivers it.
    pub job_ack_wait_secs: u64,
    /// Longest a queued job may take before it is queued again for another worker (a stuck
    /// worker holds one job, never the batch).
    pub job_deadline_secs: u64,
    /// With `job_queue`: the Groth16 wrap of each batch is a queue job too, for a worker started
    /// with the same proving key (`worker --wrap-proving-key`, or on a devnet
    /// `--wrap-insecure-devnet-key`). This process then proves no wrap layer and no Groth16
    /// proof, and keeps only the key's verifying key (the key file is still checked against the
    /// circuit), under which it verifies each returned proof before storing it.
    pub wrap_jobs: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            rpc_url: tgrid_chain::DEFAULT_RPC_URL.into(),
            deployment: tgrid_chain::DEFAULT_DEPLOYMENT.into(),
            registry: ".tgrid/registry.json".into(),
            data_dir: ".tgrid/sequencer".into(),
            listen: ([127, 0, 0, 1], 8080).into(),
            private_key: ANVIL_KEY_0.into(),
            keystore: None,
            keystore_password_file: None,
            max_batch_tasks: 16,
            max_batch_age_secs: 60,
            deadline_margin_secs: 600,
            confirmations: None,
            gas_bump_after_secs: 30,
            wrap_fri: WrapFri::Production,
            insecure_devnet_key: false,
            insecure_devnet_keys_dir: ".tgrid/keys".into(),
            proving_key: None,
            max_body_bytes: 4 << 20,
            request_timeout_secs: 30,
            header_timeout_secs: 10,
            retention_secs: 30 * 86_400,
            max_connections: 1_024,
            max_connections_per_client: 32,
            submissions_per_provider_per_sec: 50,
            submissions_per_client_per_sec: 100,
            relay_requests_per_client_per_sec: 20,
            poll_interval_ms: 500,
            registry_poll_secs: 10,
            job_queue: None,
            job_ack_wait_secs: 60,
            job_deadline_secs: crate::jobs::DEFAULT_JOB_DEADLINE.as_secs(),
            wrap_jobs: false,
        }
    }
}

/// The settings that have no default.
const OPTIONAL_SETTINGS: [(&str, OptionalSetting); 5] = [
    ("proving_key", OptionalSetting::Text),
    ("job_queue", OptionalSetting::Text),
    ("keystore", OptionalSetting::Text),
    ("keystore_password_file", OptionalSetting::Text),
    ("confirmations", OptionalSetting::Integer),
];

/// Prefix of the environment variables overriding settings.
pub const ENV_PREFIX: &str = "TGRID_SEQUENCER_";

/// Blocks on top of a settlement off the devnet when `confirmations` is unset.
pub const DEFAULT_CONFIRMATIONS: u64 = 3;

impl Settings {
    /// Blocks on top of the settling block that `chain_id` needs ([`Settings::confirmations`]).
    pub fn confirmations_on(&self, chain_id: u64) -> u64 {
        self.confirmations.unwrap_or(if chain_id == DEVNET_CHAIN_ID { 0 } else { DEFAULT_CONFIRMATIONS })
    }

    /// The settling account's key: the keystore's if one is set, else `private_key`.
    pub fn signer(&self) -> Result<alloy::signers::local::PrivateKeySigner, ServiceError> {
        tgrid_chain::keys::settings_signer(
            self.keystore.as_deref(),
            self.keystore_password_file.as_deref(),
            &self.private_key,
        )
        .map_err(|e| ServiceError::Config(e.to_string()))
    }

    /// Defaults, then `file` (if any), then the environment.
    pub fn load(file: Option<&Path>) -> Result<Self, ServiceError> {
        Self::load_with_env(file, std::env::vars())
    }

    /// As [`load`](Self::load) with an explicit environment (tests).
    pub fn load_with_env(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ServiceError> {
        let settings: Settings =
            tgrid_cli::layered_settings(file, env, ENV_PREFIX, &OPTIONAL_SETTINGS).map_err(|e| {
                if e.ends_with(": unknown setting") {
                    ServiceError::Config(format!("{e} (see `tgrid-sequencer run --help`)"))
                } else {
                    ServiceError::Config(e)
                }
            })?;
        settings.validate()?;
        Ok(settings)
    }

    fn validate(&self) -> Result<(), ServiceError> {
        let bad = |reason: &str| Err(ServiceError::Config(reason.into()));
        if self.max_batch_tasks == 0 {
            return bad("max_batch_tasks must be at least 1");
        }
        if self.max_body_bytes < 1024 {
            return bad("max_body_bytes must be at least 1024");
        }
        if self.submissions_per_provider_per_sec == 0
            || self.submissions_per_client_per_sec == 0
            || self.relay_requests_per_client_per_sec == 0
        {
            return bad(
                "submissions_per_provider_per_sec, submissions_per_client_per_sec and relay_requests_per_client_per_sec \
                 must be at least 1",
            );
        }
        if self.request_timeout_secs == 0
            || self.header_timeout_secs == 0
            || self.poll_interval_ms == 0
            || self.registry_poll_secs == 0
        {
            return bad(
                "request_timeout_secs, header_timeout_secs, poll_interval_ms and registry_poll_secs must be positive",
            );
        }
        if self.retention_secs < 3_600 {
            return bad("retention_secs must be at least 3600: a poster fetches its output after settlement");
        }
        if self.max_connections_per_client == 0 || self.max_connections < self.max_connections_per_client {
            return bad("max_connections_per_client must be at least 1 and at most max_connections");
        }
        if self.job_queue_url()?.is_none() && self.wrap_jobs {
            return bad("wrap_jobs needs a job_queue for the wrap workers to take them from");
        }
        match (&self.proving_key, self.insecure_devnet_key) {
            (None, false) => bad("no Groth16 key: set proving_key (a ceremony key file) or, on a local devnet only, \
                 insecure_devnet_key = true (INSECURE: anyone can forge batch proofs for it)"),
            (Some(_), true) => bad("proving_key and insecure_devnet_key exclude each other: choose one"),
            _ => Ok(()),
        }
    }

    /// The `job_queue` setting, parsed (shown without its credentials).
    pub fn job_queue_url(&self) -> Result<Option<crate::jobs::QueueUrl>, ServiceError> {
        self.job_queue
            .as_deref()
            .map(|url| {
                url.parse().map_err(|e: crate::jobs::BadQueueUrl| ServiceError::Config(format!("job_queue: {e}")))
            })
            .transpose()
    }

    /// Whether batch proofs can be forged: a Groth16 key from a public seed, or the test FRI
    /// parameters (whatever the key).
    pub fn key_is_insecure(&self) -> bool {
        self.insecure_devnet_key || self.wrap_fri == WrapFri::InsecureTest
    }

    /// Refuses what only a devnet may use (the INSECURE Groth16 key, anvil's public key 0) on
    /// any other chain.
    pub fn check_chain(&self, chain_id: u64) -> Result<(), ServiceError> {
        if chain_id == DEVNET_CHAIN_ID {
            return Ok(());
        }
        if self.insecure_devnet_key {
            return Err(ServiceError::Config(format!(
                "insecure_devnet_key on chain {chain_id}: the INSECURE devnet key serves the devnet chain \
                 ({DEVNET_CHAIN_ID}) only; set proving_key to a ceremony key"
            )));
        }
        if self.wrap_fri == WrapFri::InsecureTest {
            return Err(ServiceError::Config(format!(
                "wrap_fri = insecure-test on chain {chain_id}: 10-bit test parameters serve the devnet chain \
                 ({DEVNET_CHAIN_ID}) only"
            )));
        }
        if self.keystore.is_none() && self.private_key.eq_ignore_ascii_case(ANVIL_KEY_0) {
            return Err(ServiceError::Config(format!(
                "private_key is anvil's public key 0 on chain {chain_id}: anyone could spend from it; set your own"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn defaults_target_a_local_anvil_once_the_insecure_key_is_chosen() {
        let err = Settings::load_with_env(None, env(&[("PATH", "/bin")])).unwrap_err().to_string();
        assert!(err.contains("no Groth16 key") && err.contains("INSECURE"), "{err}");
        let s = Settings::load_with_env(None, env(&[("TGRID_SEQUENCER_INSECURE_DEVNET_KEY", "true")])).unwrap();
        assert_eq!(s, Settings { insecure_devnet_key: true, ..Settings::default() });
        assert_eq!(s.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(s.data_dir, PathBuf::from(".tgrid/sequencer"));
        assert!(s.key_is_insecure());
        s.check_chain(DEVNET_CHAIN_ID).unwrap();
        // Off the devnet: neither the insecure key nor anvil's key.
        assert!(s.check_chain(1).unwrap_err().to_string().contains("insecure_devnet_key on chain 1"));
        let anvil_key = Settings { insecure_devnet_key: false, proving_key: Some("/k.pk".into()), ..s.clone() };
        assert!(anvil_key.check_chain(1).unwrap_err().to_string().contains("anvil's public key 0"));
        let own = Settings { private_key: format!("0x{}", "11".repeat(32)), ..anvil_key };
        own.check_chain(1).unwrap();
        let test_fri = Settings { wrap_fri: WrapFri::InsecureTest, ..own };
        assert!(test_fri.key_is_insecure(), "10-bit FRI: forgeable whatever the key");
        assert!(test_fri.check_chain(1).unwrap_err().to_string().contains("insecure-test on chain 1"));
        let both = env(&[("TGRID_SEQUENCER_INSECURE_DEVNET_KEY", "true"), ("TGRID_SEQUENCER_PROVING_KEY", "/k.pk")]);
        assert!(Settings::load_with_env(None, both).unwrap_err().to_string().contains("exclude each other"));
    }

    #[test]
    fn confirmations_count_blocks_on_top_and_default_by_chain() {
        let unset = Settings::default();
        assert_eq!((unset.confirmations_on(DEVNET_CHAIN_ID), unset.confirmations_on(1)), (0, DEFAULT_CONFIRMATIONS));
        let key = ("TGRID_SEQUENCER_INSECURE_DEVNET_KEY", "true");
        let set = Settings::load_with_env(None, env(&[key, ("TGRID_SEQUENCER_CONFIRMATIONS", "5")])).unwrap();
        assert_eq!((set.confirmations_on(DEVNET_CHAIN_ID), set.confirmations_on(1)), (5, 5));
    }

    #[test]
    fn wrap_jobs_need_a_job_queue() {
        let key = ("TGRID_SEQUENCER_INSECURE_DEVNET_KEY", "true");
        let alone = env(&[key, ("TGRID_SEQUENCER_WRAP_JOBS", "true")]);
        let err = Settings::load_with_env(None, alone).unwrap_err().to_string();
        assert!(err.contains("wrap_jobs needs a job_queue"), "{err}");
        let queued =
            env(&[key, ("TGRID_SEQUENCER_WRAP_JOBS", "true"), ("TGRID_SEQUENCER_JOB_QUEUE", "nats://127.0.0.1:4222")]);
        assert!(Settings::load_with_env(None, queued).unwrap().wrap_jobs);
    }

    #[test]
    fn file_then_environment_override() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sequencer.toml");
        std::fs::write(
            &path,
            "max_batch_tasks = 4\nrpc_url = \"http://10.0.0.1:8545\"\nwrap_fri = \"insecure-test\"\n",
        )
        .unwrap();
        let s = Settings::load_with_env(
            Some(&path),
            env(&[("TGRID_SEQUENCER_MAX_BATCH_TASKS", "8"), ("TGRID_SEQUENCER_PROVING_KEY", "/keys/ceremony.pk")]),
        )
        .unwrap();
        assert_eq!(s.max_batch_tasks, 8);
        assert_eq!(s.rpc_url, "http://10.0.0.1:8545");
        assert_eq!(s.wrap_fri, WrapFri::InsecureTest);
        assert_eq!(s.proving_key, Some(PathBuf::from("/keys/ceremony.pk")));
        assert!(s.key_is_insecure(), "the test FRI parameters are forgeable whatever the key");
        let production = Settings { wrap_fri: WrapFri::Production, ..s };
        assert!(!production.key_is_insecure());
    }

    #[test]
    fn bad_settings_are_named() {
        let err = |e: Vec<(String, String)>| Settings::load_with_env(None, e).unwrap_err().to_string();
        assert!(err(env(&[("TGRID_SEQUENCER_MAX_BATCH_TASKS", "many")])).contains("not an integer"));
        assert!(err(env(&[("TGRID_SEQUENCER_COLOUR", "blue")])).contains("unknown setting"));
        assert!(err(env(&[("TGRID_SEQUENCER_MAX_BATCH_TASKS", "0")])).contains("at least 1"));
        assert!(err(env(&[("TGRID_SEQUENCER_WRAP_FRI", "weak")])).contains("unknown variant"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, "batch = 3\n").unwrap();
        assert!(Settings::load_with_env(Some(&path), vec![]).unwrap_err().to_string().contains("unknown setting"));
        std::fs::write(&path, "max_batch_tasks = \n").unwrap();
        assert!(Settings::load_with_env(Some(&path), vec![]).is_err());
    }
}
