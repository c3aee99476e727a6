//! `tgrid order`: sign an order (its input committed and published to the input store), publish
//! it to the relay, cancel it. Following and checking orders is in `outcome.rs`.

use std::path::{Path, PathBuf};

use alloy::primitives::{Address, B256, U256};
use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use serde_json::json;
use tgrid_chain::bindings::IModelRegistry;
use tgrid_chain::format_tgrid;
use tgrid_chain::market::{MarketDomain, Order, SignedOrder};
use tgrid_circuits::{commit, commit_salted, infer, OutputKey, Privacy, Salt};
use tgrid_cli::{bad_input, Output};
use tgrid_onnx::InputData;
use tgrid_seal::SealingKey;

use crate::common::{
    address, amount96, connect, duration_text, load_model, relay, write_atomically, write_secret, Globals, OrderArg,
    DEFAULT_RELAY,
};
use crate::outcome;
use crate::poster::{choose, BookInfo, PosterState, Want};

#[derive(Debug, Subcommand)]
pub(crate) enum OrderCommand {
    /// Sign an order paid from one of the signer's deposit books and publish it to the relay; the
    /// input goes to the input store as `<input commitment>.json`, or, for a private order
    /// (--private), sealed to the named provider as `<input commitment>.tgs`.
    Post(PostArgs),
    /// Where an order stands: the relay's view and the chain's (open, accepted, settled,
    /// disputed, cancelled; disputable past its deadline).
    Status {
        /// Order hash (0x + 64 hex digits) or the order's JSON file.
        order: String,
        /// Order relay (the sequencer's API).
        #[arg(long, env = "TGRID_RELAY_URL", default_value = DEFAULT_RELAY)]
        relay: String,
    },
    /// Cancel an order by its nonce: it can no longer settle nor be disputed (poster only).
    Cancel {
        /// Order hash (0x + 64 hex digits) or the order's JSON file.
        order: String,
        /// Order relay, to find an order that is not in the state directory.
        #[arg(long, env = "TGRID_RELAY_URL", default_value = DEFAULT_RELAY)]
        relay: String,
    },
    /// Fetch a settled order's output and check it against the output commitment settled on-chain
    /// (exit 1 on a mismatch).
    Result(outcome::ResultArgs),
    /// Publish a signed order (e.g. one posted with --no-relay) to the relay.
    Publish {
        /// Order hash (0x + 64 hex digits) or the order's JSON file.
        order: String,
        /// Order relay.
        #[arg(long, env = "TGRID_RELAY_URL", default_value = DEFAULT_RELAY)]
        relay: String,
    },
}

#[derive(Debug, Args)]
pub(crate) struct PostArgs {
    /// Compiled model (.tgm) the order runs.
    #[arg(long)]
    model: PathBuf,
    /// Input in EZKL's format (the first sample is used; a model with several inputs takes one array per input, or the inputs laid end to end).
    #[arg(long)]
    input: PathBuf,
    /// Payment in TGRID (the provider gets it less the protocol fee).
    #[arg(long)]
    payment: String,
    /// Provider bond at stake, in TGRID (default: the payment).
    #[arg(long)]
    collateral: Option<String>,
    /// Share of the collateral slashed if the accepting provider never settles (basis points).
    #[arg(long, default_value_t = 5_000)]
    slash_bps: u16,
    /// Share of the slash paid to the poster (basis points; at most the payment).
    #[arg(long, default_value_t = 5_000)]
    poster_share_bps: u16,
    /// Seconds from now (chain time) until the deadline.
    #[arg(long, default_value_t = 3_600)]
    deadline_in: u64,
    /// The only provider that may take the order (default: any; required with --private).
    #[arg(long)]
    provider: Option<String>,
    /// A private task: the input is sealed to the provider (only it can read it), its commitment
    /// salted, the proof zero-knowledge, and the output encrypted by the proof itself under a key
    /// derived from the input's salt, kept in `<state dir>/output-keys/<order hash>.key` (mode
    /// 0600) for `tgrid order result`. The model's private mode must be registered
    /// (`tgrid-sequencer registry add --private`, then a DAO vote).
    #[arg(long, requires = "provider")]
    private: bool,
    /// The provider's sealing key (0x + 64 hex digits), as it published it (default: fetched from
    /// the relay and checked against the provider's signature).
    #[arg(long, requires = "private")]
    provider_sealing_key: Option<String>,
    /// The deposit book that pays (default: the first open book that can).
    #[arg(long)]
    book: Option<u32>,
    /// Order relay (the sequencer's API).
    #[arg(long, env = "TGRID_RELAY_URL", default_value = DEFAULT_RELAY)]
    relay: String,
    /// Sign and write the order without publishing it (`tgrid order publish` later).
    #[arg(long)]
    no_relay: bool,
    /// Input store the providers read (`<input commitment>.json`, or `.tgs` sealed).
    #[arg(long, default_value = ".tgrid/inputs")]
    inputs_dir: PathBuf,
    /// Write the signed order here (default: `<state dir>/orders/<hash>.json`).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub(crate) async fn run(command: OrderCommand, g: &Globals, out: Output) -> Result<()> {
    match command {
        OrderCommand::Post(a) => post(a, g, out).await,
        OrderCommand::Status { order, relay } => outcome::status(&OrderArg::read(&order)?, &relay, g, out).await,
        OrderCommand::Result(a) => outcome::result(a, g, out).await,
        OrderCommand::Cancel { order, relay } => cancel(&OrderArg::read(&order)?, &relay, g, out).await,
        OrderCommand::Publish { order, relay: url } => {
            let arg = OrderArg::read(&order)?;
            let domain = MarketDomain::of(&g.load_deployment()?);
            let o = arg.load(g, &domain, None).await?;
            let view = relay(&url)?.post_order(&o.signed).await.map_err(|e| anyhow!("publishing {}: {e}", o.hash))?;
            let state = serde_json::to_value(view.state)?;
            out.emit(json!({"order_hash": o.hash.to_string(), "relay": url, "relay_state": state}), || {
                format!("published order {} to {url} ({})", o.hash, state.as_str().unwrap_or_default())
            })
        }
    }
}

async fn post(a: PostArgs, g: &Globals, out: Output) -> Result<()> {
    // Everything local first: the model, the input, the terms.
    let file = load_model(&a.model)?;
    let data = InputData::from_path(&a.input).map_err(bad_input)?;
    let sample = data
        .first_sample(file.model.input_len(), &file.model.ports.inputs)
        .with_context(|| format!("{} does not fit the model", a.input.display()))
        .map_err(bad_input)?;
    let x = infer::quantize_input(&file.model, &sample)
        .with_context(|| format!("{} does not fit the model", a.input.display()))
        .map_err(bad_input)?;
    let privacy = if a.private { Privacy::Private } else { Privacy::Public };
    let model_id = B256::from(privacy.task_model_id(file.model.model_id()));
    let salt = Salt::random();
    let input_commitment = B256::from(match privacy {
        Privacy::Public => commit(&x).0,
        Privacy::Private => commit_salted(&x, &salt).0,
    });
    let payment = amount96(&a.payment, "--payment")?;
    let collateral = match &a.collateral {
        Some(c) => amount96(c, "--collateral")?,
        None => payment,
    };
    if payment == 0 {
        return Err(bad_input(anyhow!("--payment must be above zero")));
    }
    for (what, v) in [("--slash-bps", a.slash_bps), ("--poster-share-bps", a.poster_share_bps)] {
        if v > 10_000 {
            return Err(bad_input(anyhow!("{what} {v} is above 10,000 (100 %)")));
        }
    }
    if a.deadline_in == 0 {
        return Err(bad_input(anyhow!("--deadline-in must be above zero")));
    }
    let provider = a.provider.as_deref().map(|p| address(p, "--provider")).transpose()?.unwrap_or(Address::ZERO);

    let ctx = connect(g).await?;
    let d = &ctx.deployment;
    let market = ctx.market();
    let params = market.parameters().await?;
    let min_payment = params.minPayment;
    if U256::from(payment) < min_payment {
        return Err(bad_input(anyhow!(
            "--payment {} TGRID is below the market's minimum payment of {} TGRID: such an order cannot be disputed",
            format_tgrid(U256::from(payment)),
            format_tgrid(min_payment)
        )));
    }
    let max_delay = params.maxDeadlineDelay.to::<u64>();
    if a.deadline_in > max_delay {
        return Err(bad_input(anyhow!(
            "--deadline-in {} s is longer than the market's longest deadline ({max_delay} s, {})",
            a.deadline_in,
            duration_text(max_delay)
        )));
    }
    let registry = IModelRegistry::new(d.registry, &ctx.chain);
    if !registry.isModelActive(model_id).call().await.context("ModelRegistry.isModelActive")? {
        match privacy {
            Privacy::Public => bail!(
                "model {model_id} ({}) is not registered on-chain: a DAO vote registers it first",
                a.model.display()
            ),
            Privacy::Private => bail!(
                "the private mode of {} (model id {model_id}) is not registered on-chain: add it with \
                 `tgrid-sequencer registry add --private` and register it by a DAO vote first",
                a.model.display()
            ),
        }
    }
    // A private input is sealed before anything is signed: to the provider's published key (its
    // signature checked here, the relay is not trusted).
    let sealed_input = match privacy {
        Privacy::Public => None,
        Privacy::Private => {
            let recipient = provider_sealing_key(&a, provider, &ctx.domain()).await?;
            let (sealed, commitment) = tgrid_seal::seal_input(&recipient, &model_id.0, &x, &salt)?;
            debug_assert_eq!(B256::from(commitment.0), input_commitment);
            Some((sealed, recipient))
        }
    };

    let now = ctx.now().await?;
    let deadline = now + a.deadline_in;
    let books: Vec<BookInfo> =
        market.books(ctx.me).await?.iter().enumerate().map(|(i, b)| BookInfo::of(i as u32, b)).collect();
    let mut state = PosterState::load(&g.state_dir, ctx.me, ctx.chain_id, d.market)?;
    let domain = ctx.domain();
    adopt_saved_orders(&mut state, &g.orders_dir(), ctx.me, &domain);
    let want = Want { payment, deadline, now, book: a.book };
    let choice = choose(&books, &want, &state, |nonce| {
        let market = market.clone();
        let me = ctx.me;
        async move { Ok(market.nonce_used(me, nonce).await?) }
    })
    .await?;
    let order = Order {
        poster: ctx.me,
        provider,
        model_id,
        input_commitment,
        payment,
        collateral,
        deadline,
        nonce: Order::nonce_of(choice.book, choice.index),
        slash_bps: a.slash_bps,
        poster_share_bps: a.poster_share_bps,
    };
    let signed = SignedOrder::sign(order, &ctx.signer, &domain).map_err(bad_input)?;
    let hash = signed.hash(&domain);

    // The index is taken, and a private order's output key kept, before anything leaves this
    // machine.
    state.record(&signed.order, hash)?;
    if privacy == Privacy::Private {
        write_secret(&g.output_key_path(&hash), &OutputKey::from_input_salt(&salt).to_hex())?;
    }
    // Published before the order: a provider takes an order only once its input is readable.
    std::fs::create_dir_all(&a.inputs_dir).with_context(|| format!("cannot create {}", a.inputs_dir.display()))?;
    let (stored, bytes) = match &sealed_input {
        None => (
            a.inputs_dir.join(format!("{input_commitment}.json")),
            serde_json::to_vec(&json!({"input_data": [sample]}))?,
        ),
        Some((sealed, _)) => (a.inputs_dir.join(format!("{input_commitment}.tgs")), sealed.to_bytes()),
    };
    write_atomically(&stored, &bytes)?;
    let order_file = a.out.clone().unwrap_or_else(|| g.orders_dir().join(format!("{hash}.json")));
    write_atomically(&order_file, &serde_json::to_vec_pretty(&signed)?)?;
    if a.out.is_some() {
        // Commands naming the order by its hash find it in the state directory too.
        write_atomically(&g.orders_dir().join(format!("{hash}.json")), &serde_json::to_vec_pretty(&signed)?)?;
    }

    let relay_state = if a.no_relay {
        None
    } else {
        let spinner = out.spinner("publishing the order");
        let posted = relay(&a.relay)?.post_order(&signed).await;
        spinner.finish_and_clear();
        let view = posted.map_err(|e| {
            anyhow!(
                "order {hash} is signed and saved in {}, but publishing it failed: {e}; retry with `tgrid order \
                 publish {}`",
                order_file.display(),
                order_file.display()
            )
        })?;
        Some(serde_json::to_value(view.state)?)
    };
    let o = &signed.order;
    out.emit(
        json!({
            "order_hash": hash.to_string(),
            "task_id": hash.to_string(),
            "poster": o.poster.to_string(),
            "provider": (!o.provider.is_zero()).then(|| o.provider.to_string()),
            "book": choice.book,
            "index": choice.index,
            "nonce": o.nonce.to_string(),
            "deadline": deadline,
            "payment": format_tgrid(U256::from(payment)),
            "collateral": format_tgrid(U256::from(collateral)),
            "slash_bps": o.slash_bps,
            "poster_share_bps": o.poster_share_bps,
            "model_id": model_id.to_string(),
            "privacy": privacy.name(),
            "sealed_to": sealed_input.as_ref().map(|(_, key)| key.to_hex()),
            "output_key_file": (privacy == Privacy::Private).then(|| g.output_key_path(&hash).display().to_string()),
            "input_commitment": input_commitment.to_string(),
            "input_store": stored.display().to_string(),
            "order_file": order_file.display().to_string(),
            "poster_state": state.file().display().to_string(),
            "published": relay_state.is_some(),
            "relay_state": relay_state,
        }),
        || {
            let published = match &relay_state {
                Some(_) => format!("published to {}", a.relay),
                None => format!("not published (tgrid order publish {})", order_file.display()),
            };
            format!(
                "order {hash}\n  book {} index {}, payment {} TGRID, collateral {} TGRID, deadline {deadline} (in {})\n  \
                 model {model_id} ({} task)\n  input commitment {input_commitment} (input at {}{})\n  signed order in {}; \
                 {published}",
                choice.book,
                choice.index,
                format_tgrid(U256::from(payment)),
                format_tgrid(U256::from(collateral)),
                duration_text(a.deadline_in),
                privacy.name(),
                stored.display(),
                if sealed_input.is_some() {
                    format!(
                        ", sealed to the provider; the output key in {}",
                        g.output_key_path(&hash).display()
                    )
                } else {
                    String::new()
                },
                order_file.display()
            )
        },
    )
}

/// The key a private input is sealed to: `--provider-sealing-key`, or the provider's signed
/// announcement on the relay (checked: a relay cannot substitute its own key).
async fn provider_sealing_key(a: &PostArgs, provider: Address, domain: &MarketDomain) -> Result<SealingKey> {
    if let Some(hex) = &a.provider_sealing_key {
        return SealingKey::from_hex(hex).map_err(|e| bad_input(anyhow!("--provider-sealing-key: {e}")));
    }
    if a.no_relay {
        return Err(bad_input(anyhow!("a private order with --no-relay needs --provider-sealing-key")));
    }
    let announced = relay(&a.relay)?.sealing_key(provider).await.map_err(|e| match e.status() {
        Some(404) => bad_input(anyhow!(
            "provider {provider} has published no sealing key on {}: it takes no private tasks there (or give \
                 --provider-sealing-key)",
            a.relay
        )),
        _ => anyhow!("fetching provider {provider}'s sealing key: {e}"),
    })?;
    if announced.provider != provider {
        bail!("the relay answered {}'s sealing key for provider {provider}", announced.provider);
    }
    announced.verify(domain).map_err(|e| anyhow!("the relay's sealing key for {provider} is not signed by it: {e}"))?;
    Ok(SealingKey::from_bytes(announced.public_key.as_slice())?)
}

/// Takes note of the poster's orders saved in the state directory, so a lost or reset poster
/// state never reuses their indices. Unreadable files and other posters' orders are ignored.
fn adopt_saved_orders(state: &mut PosterState, dir: &Path, poster: Address, domain: &MarketDomain) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else { continue };
        let Ok(signed) = serde_json::from_slice::<SignedOrder>(&bytes) else { continue };
        if signed.order.poster == poster {
            if let Ok(hash) = signed.verify(domain) {
                state.adopt(&signed.order, hash);
            }
        }
    }
}

async fn cancel(arg: &OrderArg, relay_url: &str, g: &Globals, out: Output) -> Result<()> {
    let domain = MarketDomain::of(&g.load_deployment()?);
    let o = arg.load(g, &domain, Some(relay_url)).await?;
    let ctx = connect(g).await?;
    let order = &o.signed.order;
    if order.poster != ctx.me {
        return Err(bad_input(anyhow!(
            "order {} is {}'s: only its poster can cancel it (the signer is {})",
            o.hash,
            order.poster,
            ctx.me
        )));
    }
    let market = ctx.market();
    if market.nonce_used(ctx.me, order.nonce).await? {
        let outcome =
            tgrid_chain::order_outcome(&ctx.chain, ctx.deployment.market, &domain, order, ctx.deployment.start_block)
                .await?;
        bail!("order {} is closed already ({}): nothing to cancel", o.hash, outcome::outcome_word(&outcome));
    }
    let sent = market.cancel(vec![order.nonce]).await?;
    out.emit(
        json!({
            "order_hash": o.hash.to_string(),
            "book": order.book(),
            "index": order.index(),
            "nonce": order.nonce.to_string(),
            "tx": sent.transaction.to_string(),
            "gas": sent.gas_used,
        }),
        || {
            format!(
                "cancelled order {} (book {} index {}): it can no longer settle",
                o.hash,
                order.book(),
                order.index()
            )
        },
    )
}
