//! What every command shares: the connection and the signer, argument parsing (addresses,
//! hashes, amounts), loading models, the order a command names (a file or a hash), the relay.

use std::path::{Path, PathBuf};
use std::time::Duration;

use alloy::primitives::{Address, B256, U256};
use alloy::providers::DynProvider;
use alloy::signers::local::PrivateKeySigner;
use anyhow::{anyhow, Context, Result};
use tgrid_chain::market::{Market, MarketDomain, OrderView, RelayClient, RelayError, SignedOrder};
use tgrid_chain::{parse_tgrid, Deployment};
use tgrid_circuits::ModelFile;
use tgrid_cli::{bad_input, parse_hex};

/// Anvil's first default account key (public knowledge): the default signer on a local devnet
/// only (chain id 31337); any other chain needs a keystore or TGRID_PRIVATE_KEY.
const ANVIL_KEY_0: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
/// The placeholder key of read-only connections (nothing is ever signed with it).
const READ_ONLY_KEY: &str = "0x0000000000000000000000000000000000000000000000000000000000000001";
/// anvil's chain id.
pub(crate) use tgrid_chain::DEVNET_CHAIN_ID as ANVIL_CHAIN_ID;
/// The relay (served by the sequencer) every order command defaults to.
pub(crate) const DEFAULT_RELAY: &str = "http://127.0.0.1:8080";
/// Largest order, acceptance or view file read.
const MAX_JSON_FILE_BYTES: u64 = 1 << 20;

/// The global options.
#[derive(Debug)]
pub(crate) struct Globals {
    pub(crate) rpc: String,
    pub(crate) deployment: PathBuf,
    pub(crate) keystore: Option<tgrid_chain::keys::Keystore>,
    pub(crate) state_dir: PathBuf,
}

impl Globals {
    /// The deployment file, read and checked (bad input if missing or malformed).
    pub(crate) fn load_deployment(&self) -> Result<Deployment> {
        Deployment::load(&self.deployment).map_err(bad_input)
    }

    /// Where signed orders are kept.
    pub(crate) fn orders_dir(&self) -> PathBuf {
        self.state_dir.join("orders")
    }

    /// A private order's output key file (the key its output is encrypted under, derived from
    /// the input's salt): `<state dir>/output-keys/<order hash>.key`, readable by its owner only.
    pub(crate) fn output_key_path(&self, order: &B256) -> PathBuf {
        self.state_dir.join("output-keys").join(format!("{order}.key"))
    }
}

/// A connection to the deployment, signing as the chosen account.
pub(crate) struct Ctx {
    pub(crate) chain: DynProvider,
    pub(crate) deployment: Deployment,
    pub(crate) signer: PrivateKeySigner,
    pub(crate) me: Address,
    pub(crate) chain_id: u64,
}

impl Ctx {
    /// The deployment's TaskMarket, through the signing connection.
    pub(crate) fn market(&self) -> Market<DynProvider> {
        Market::new(&self.deployment, self.chain.clone())
    }

    /// The market's EIP-712 domain.
    pub(crate) fn domain(&self) -> MarketDomain {
        MarketDomain::of(&self.deployment)
    }

    /// The latest block's timestamp.
    pub(crate) async fn now(&self) -> Result<u64> {
        Ok(tgrid_chain::chain_now(&self.chain).await?)
    }
}

/// Connects to the node, checks it serves the deployment's chain, and picks the signer.
pub(crate) async fn connect(g: &Globals) -> Result<Ctx> {
    connect_as(g, true).await
}

/// Connects for reads only: the keystore is not opened, and the signer is a placeholder that never
/// signs (anvil's first key on the local devnet; commands that default to "the signer's account"
/// must not use this).
pub(crate) async fn connect_reading(g: &Globals) -> Result<Ctx> {
    connect_as(g, false).await
}

async fn connect_as(g: &Globals, signing: bool) -> Result<Ctx> {
    let deployment = g.load_deployment()?;
    let reader = tgrid_chain::reader(&g.rpc).map_err(bad_input)?;
    let chain_id = match tgrid_chain::check_chain(&reader, &g.rpc, &deployment).await {
        Ok(id) => id,
        Err(e @ tgrid_chain::Error::WrongChain { .. }) => return Err(bad_input(e)),
        Err(e) => return Err(e.into()),
    };
    // A read never opens the keystore: no password asked for, no seconds of key derivation.
    let key = if signing { tgrid_chain::keys::signer_from(g.keystore.as_ref()).map_err(bad_input)? } else { None };
    let signer = match (key, chain_id) {
        (Some(signer), _) => signer,
        (None, ANVIL_CHAIN_ID) => tgrid_chain::parse_signer(ANVIL_KEY_0)?,
        (None, _) if !signing => tgrid_chain::parse_signer(READ_ONLY_KEY)?,
        (None, _) => {
            return Err(bad_input(anyhow!(
                "off the local devnet a signing command needs --keystore (or TGRID_KEYSTORE) or the key in TGRID_PRIVATE_KEY"
            )))
        }
    };
    let me = signer.address();
    Ok(Ctx { chain: tgrid_chain::signing(&g.rpc, signer.clone())?, deployment, signer, me, chain_id })
}

/// A 0x-prefixed 20-byte address (bad input otherwise).
pub(crate) fn address(text: &str, what: &str) -> Result<Address> {
    parse_hex::<20>(text, what).map(Address::from).map_err(bad_input)
}

/// A 0x-prefixed 32-byte hash (bad input otherwise).
pub(crate) fn hash32(text: &str, what: &str) -> Result<B256> {
    parse_hex::<32>(text, what).map(B256::from).map_err(bad_input)
}

/// A governance proposal id (decimal).
pub(crate) fn proposal_id(text: &str) -> Result<U256> {
    text.parse::<U256>().map_err(|_| bad_input(anyhow!("proposal id {text:?} is not a decimal number")))
}

/// TGRID amount in whole or decimal tokens.
pub(crate) fn amount(text: &str, what: &str) -> Result<U256> {
    parse_tgrid(text).map_err(|e| bad_input(anyhow!("{what}: {e}")))
}

/// A TGRID amount that fits the market's 96-bit accounting.
pub(crate) fn amount96(text: &str, what: &str) -> Result<u128> {
    let v = amount(text, what)?;
    match u128::try_from(v) {
        Ok(v) if v <= tgrid_chain::market::order::MAX_AMOUNT => Ok(v),
        _ => Err(bad_input(anyhow!("{what} {text} TGRID is more than the market accounts (2^96 - 1 base units)"))),
    }
}

/// A compiled model file.
pub(crate) fn load_model(path: &Path) -> Result<ModelFile> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display())).map_err(bad_input)?;
    ModelFile::from_bytes(&bytes)
        .with_context(|| format!("{} is not a compiled model", path.display()))
        .map_err(bad_input)
}

/// A small JSON file (order, acceptance): bytes, with size and read errors as bad input.
pub(crate) fn read_json_file(path: &Path) -> Result<Vec<u8>> {
    tgrid_cli::read_bounded(path, MAX_JSON_FILE_BYTES, "order file")
}

/// Writes a secret (an output key) to `path`, readable and writable by its owner only, through
/// a temporary file and a rename.
pub(crate) fn write_secret(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("cannot create {}", tmp.display()))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot move {} to {}", tmp.display(), path.display()))
}

/// Writes `bytes` to `path` through a temporary file and a rename, so a crash never leaves a torn
/// file.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot move {} to {}", tmp.display(), path.display()))
}

/// A span of seconds for people: "45 s", "12 min 5 s", "3 h 20 min", "8 d 2 h".
pub(crate) fn duration_text(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3_600 % 24, secs / 60 % 60, secs % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s} s"),
        (0, 0, _) => format!("{m} min {s} s"),
        (0, _, _) => format!("{h} h {m} min"),
        _ => format!("{d} d {h} h"),
    }
}

/// "unix time T (in 3 h 20 min)" or "(3 h ago)" relative to `now`.
pub(crate) fn when(t: u64, now: u64) -> String {
    if t >= now {
        format!("unix time {t} (in {})", duration_text(t - now))
    } else {
        format!("unix time {t} ({} ago)", duration_text(now - t))
    }
}

/// The relay client of `url`.
pub(crate) fn relay(url: &str) -> Result<RelayClient> {
    RelayClient::new(url, Duration::from_secs(15)).map_err(bad_input)
}

/// An order named on the command line: a file holding it (read as soon as the argument is), or
/// its hash.
#[derive(Clone, Debug)]
pub(crate) enum OrderArg {
    /// A signed order (or a relay's view of one) read from a JSON file.
    File { path: PathBuf, order: Box<(SignedOrder, Option<OrderView>)> },
    /// Its hash (task id): read from the state directory, else from the relay.
    Hash(B256),
}

impl OrderArg {
    /// `0x` + 64 hex digits is a hash (unless a file of that name exists); anything else a file,
    /// read and decoded now (bad input naming it if it is not an order).
    pub(crate) fn read(text: &str) -> Result<Self> {
        if text.starts_with("0x") && !Path::new(text).exists() {
            return hash32(text, "order hash").map(Self::Hash);
        }
        let path = PathBuf::from(text);
        let order = Box::new(parse_order_file(&read_json_file(&path)?, &path)?);
        Ok(Self::File { path, order })
    }

    /// The order, its signature checked under `domain`: the file's, or the one in the state
    /// directory, or the relay's at `relay_url`.
    pub(crate) async fn load(
        &self,
        g: &Globals,
        domain: &MarketDomain,
        relay_url: Option<&str>,
    ) -> Result<LoadedOrder> {
        let (signed, view, source, wanted) = match self {
            Self::File { path, order } => (order.0.clone(), order.1.clone(), path.display().to_string(), None),
            Self::Hash(hash) => {
                let local = g.orders_dir().join(format!("{hash}.json"));
                if local.exists() {
                    let (signed, view) = parse_order_file(&read_json_file(&local)?, &local)?;
                    (signed, view, local.display().to_string(), Some(*hash))
                } else {
                    let Some(url) = relay_url else {
                        return Err(bad_input(anyhow!("order {hash} is not in {}", g.orders_dir().display())));
                    };
                    let view = relay(url)?.order(*hash).await.map_err(|e| match e.status() {
                        Some(404) => bad_input(anyhow!(
                            "order {hash} is neither in {} nor known to the relay at {url}",
                            g.orders_dir().display()
                        )),
                        _ => anyhow!("order {hash} is not in {}, and the relay failed: {e}", g.orders_dir().display()),
                    })?;
                    (view.signed.clone(), Some(view), format!("the relay at {url}"), Some(*hash))
                }
            }
        };
        let hash = signed.verify(domain).map_err(|e| bad_input(anyhow!("{source}: {e}")))?;
        if let Some(w) = wanted.filter(|w| *w != hash) {
            return Err(bad_input(anyhow!("{source} holds order {hash}, not {w}")));
        }
        let from_relay = matches!(self, Self::Hash(_)) && source.starts_with("the relay");
        Ok(LoadedOrder { signed, hash, source, view, from_relay })
    }
}

/// An order a command works on.
#[derive(Clone, Debug)]
pub(crate) struct LoadedOrder {
    pub(crate) signed: SignedOrder,
    pub(crate) hash: B256,
    /// Where it was read from.
    pub(crate) source: String,
    /// A relay's view of it, when it was read from one (or from a file holding one).
    pub(crate) view: Option<OrderView>,
    /// Whether `view` is fresh from the relay.
    pub(crate) from_relay: bool,
}

/// Decodes an order file: a signed order (`tgrid order post`'s file) or a relay's view of one.
pub(crate) fn parse_order_file(bytes: &[u8], path: &Path) -> Result<(SignedOrder, Option<OrderView>)> {
    match serde_json::from_slice::<SignedOrder>(bytes) {
        Ok(signed) => Ok((signed, None)),
        Err(e) => match serde_json::from_slice::<OrderView>(bytes) {
            Ok(view) => Ok((view.signed.clone(), Some(view))),
            Err(_) => Err(bad_input(anyhow!(
                "{} is not a signed order (the JSON `tgrid order post` writes): {e}",
                path.display()
            ))),
        },
    }
}

/// The relay's view of an order, or why it could not be had (unreachable, unknown).
pub(crate) async fn relay_view(url: &str, hash: B256) -> std::result::Result<OrderView, String> {
    let client = relay(url).map_err(|e| e.to_string())?;
    client.order(hash).await.map_err(|e| match e {
        RelayError::Refused { status: 404, .. } => format!("the relay at {url} does not list it"),
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration_text(45), "45 s");
        assert_eq!(duration_text(725), "12 min 5 s");
        assert_eq!(duration_text(3 * 3600 + 20 * 60 + 7), "3 h 20 min");
        assert_eq!(duration_text(8 * 86_400 + 2 * 3600), "8 d 2 h");
        assert_eq!(when(100, 40), "unix time 100 (in 1 min 0 s)");
        assert_eq!(when(40, 100), "unix time 40 (1 min 0 s ago)");
    }

    #[test]
    fn order_args_are_hashes_or_files() {
        let h = format!("0x{}", "ab".repeat(32));
        assert!(matches!(OrderArg::read(&h).unwrap(), OrderArg::Hash(x) if x == h.parse::<B256>().unwrap()));
        let err = OrderArg::read("0x1234").unwrap_err();
        assert!(err.downcast_ref::<tgrid_cli::BadInput>().is_some());
        assert!(format!("{err:#}").contains("64 hex digits"), "{err:#}");
        assert!(OrderArg::read(&format!("0x{}", "zz".repeat(32))).is_err());
        let err = OrderArg::read("/nonexistent/o.json").unwrap_err();
        assert!(format!("{err:#}").contains("cannot read /nonexistent/o.json"), "{err:#}");
    }

    #[test]
    fn garbage_is_not_an_order() {
        for bad in [&b"\x00\xff\x13\x37"[..], b"{}", b"{\"order\":{}}", b"[1,2]"] {
            let err = parse_order_file(bad, Path::new("x.json")).unwrap_err();
            assert!(err.downcast_ref::<tgrid_cli::BadInput>().is_some());
            assert!(format!("{err:#}").contains("x.json is not a signed order"), "{err:#}");
        }
    }

    #[test]
    fn amounts_fit_96_bits() {
        assert_eq!(amount96("1.5", "payment").unwrap(), 1_500_000_000_000_000_000);
        assert!(amount96("100000000000", "payment").is_err());
        assert!(amount96("-1", "payment").is_err());
    }
}
