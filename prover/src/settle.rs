//! Self-settlement: a provider aggregates and wraps its own task proofs and settles them on the
//! TaskMarket itself, so no sequencer (down, slow or censoring) can get it slashed. Used by
//! `tgrid-prover settle` and by the daemon when a deadline comes close unsettled.
//!
//! The registry membership is proven against the chain's registry: its active models are read
//! from the ModelRegistry and their tree must give the on-chain root; the provider proves leaves
//! of its own models only. The aggregator doing so ([`chain_aggregator`]) is the one the daemon
//! proves its leaves with (`prove_leaves`), so a leaf proven with a result is not proven again
//! when the provider settles that result itself. The Groth16 key must be the one the deployed
//! verifier was generated from (its digest is checked before any proving).

use std::path::PathBuf;

use alloy::primitives::{Address, B256, U256};
use alloy::providers::DynProvider;
use anyhow::{anyhow, bail, Context, Result};
use tgrid_aggregation::{LeafCircuit, Registry, RegistryEntry};
use tgrid_chain::bindings::{IKeyedGroth16Verifier, IModelRegistry, ITaskMarket};
use tgrid_chain::market::{market_error, SettlementBatch, SettlementItem, SignedOrder};
use tgrid_chain::{confirm, Deployment};
use tgrid_circuits::{ModelFile, Privacy, TaskProof, TaskVerifier};
use tgrid_settlement_proof::{Aggregator, BatchWrapper, KeySource, SettlementProofFile, WrapKey};
use tgrid_wrap::FinalFri;

/// Which Groth16 key self-settlement proves with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WrapKeySetting {
    /// A ceremony's proving key file.
    File(PathBuf),
    /// INSECURE: the devnet key set up from a public seed, cached in this directory.
    InsecureDevnet(PathBuf),
}

/// One of the provider's results to settle: its signed order, proof and output commitment.
#[derive(Clone, Debug)]
pub struct OwnResult {
    /// The signed order.
    pub order: SignedOrder,
    /// The task proof (bound to the order's hash and this provider).
    pub proof: TaskProof,
    /// The leaf proof proven with it (`prove_leaves`), if any: used if valid under the
    /// aggregator's registry, proven again otherwise.
    pub leaf: Option<Vec<u8>>,
}

/// What a self-settlement did.
#[derive(Clone, Debug, PartialEq)]
pub struct SelfSettled {
    /// The settling transaction.
    pub transaction: B256,
    /// Gas it used.
    pub gas_used: u64,
    /// Orders skipped, with the reason (for example settled by the sequencer meanwhile).
    pub skipped: Vec<(B256, String)>,
    /// Orders settled unpaid, with the reason.
    pub unpaid: Vec<(B256, String)>,
    /// Seconds spent proving (aggregation and wrap).
    pub prove_seconds: f64,
    /// Results whose leaf proof was taken as the provider proved it rather than proven again.
    pub leaves_reused: usize,
}

/// The wrap circuits and key of self-settlement, built once (tens of seconds, a few GB). The
/// aggregator is the caller's: it follows the chain's registry, which the key does not.
pub struct SelfSettler {
    wrapper: BatchWrapper,
    key: WrapKey,
}

impl std::fmt::Debug for SelfSettler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelfSettler").field("key", &self.key.id).finish()
    }
}

fn deployment_domain(deployment: &Deployment) -> tgrid_chain::market::MarketDomain {
    tgrid_chain::market::MarketDomain::of(deployment)
}

/// The registry of the chain's active models, checked against the on-chain root.
async fn chain_registry(chain: &DynProvider, deployment: &Deployment) -> Result<Registry> {
    let registry = IModelRegistry::new(deployment.registry, chain);
    let count = registry.modelCount().call().await.context("ModelRegistry.modelCount")?;
    let count = u64::try_from(count).map_err(|_| anyhow!("ModelRegistry lists {count} models"))?;
    let mut entries = Vec::new();
    for i in 0..count {
        let id = registry.modelIdAt(U256::from(i)).call().await.context("ModelRegistry.modelIdAt")?;
        let m = registry.model(id).call().await.context("ModelRegistry.model")?;
        if m.active {
            entries.push(RegistryEntry { model_id: id.0, leaf_digest: m.circuitDigest.0 });
        }
    }
    let tree = Registry::new(entries).context("the on-chain models do not form a registry")?;
    let root = registry.registryRoot().call().await.context("ModelRegistry.registryRoot")?;
    if tree.root() != root.0 {
        bail!(
            "the on-chain registry root {root} is not the tree of the {} active models (0x{}): cannot prove membership",
            tree.entries().len(),
            hex::encode(tree.root())
        );
    }
    Ok(tree)
}

/// An aggregator for the provider's `models` under `registry` (blocking: builds the
/// aggregation circuits and a leaf circuit per mode the registry lists each model under).
fn aggregator_for(registry: Registry, models: &[ModelFile]) -> Result<Aggregator> {
    // Each mode (public, private) the chain registers a model under has its own circuit.
    let mut leaf_circuits = Vec::new();
    for f in models {
        for privacy in [Privacy::Public, Privacy::Private] {
            if registry.entry(&privacy.task_model_id(f.model.model_id())).is_some() {
                leaf_circuits.push(LeafCircuit::new(TaskVerifier::with_privacy(&f.model, &f.plan, privacy)?)?);
            }
        }
    }
    Ok(Aggregator::with_registry(registry, leaf_circuits)?)
}

/// The aggregator a provider proves its own tasks' leaves with (`prove_leaves`): its models
/// under the chain's current registry, the one a sequencer batches under.
pub async fn chain_aggregator(
    chain: &DynProvider,
    deployment: &Deployment,
    models: &[ModelFile],
) -> Result<Aggregator> {
    let registry = chain_registry(chain, deployment).await?;
    let models = models.to_vec();
    tokio::task::spawn_blocking(move || aggregator_for(registry, &models)).await?
}

/// The chain's current registry root.
pub async fn chain_registry_root(chain: &DynProvider, deployment: &Deployment) -> Result<[u8; 32]> {
    let root = IModelRegistry::new(deployment.registry, chain)
        .registryRoot()
        .call()
        .await
        .context("ModelRegistry.registryRoot")?;
    Ok(root.0)
}

impl SelfSettler {
    /// Builds the wrap circuits and loads the key, checking the key against the verifier the
    /// market calls. Blocking work runs off the async threads.
    pub async fn build(
        chain: &DynProvider,
        deployment: &Deployment,
        key: &WrapKeySetting,
        fri: FinalFri,
    ) -> Result<Self> {
        let params = ITaskMarket::new(deployment.market, chain)
            .parameters()
            .call()
            .await
            .map_err(|e| market_error("TaskMarket.parameters", e))?;
        let deployed_digest = IKeyedGroth16Verifier::new(params.verifier, chain)
            .VERIFYING_KEY_DIGEST()
            .call()
            .await
            .context("the market's verifier has no VERIFYING_KEY_DIGEST")?;
        let source = match key {
            WrapKeySetting::File(p) => KeySource::File(p.clone()),
            WrapKeySetting::InsecureDevnet(dir) => KeySource::InsecureDevnet { dir: dir.clone() },
        };
        let settler = tokio::task::spawn_blocking(move || -> Result<Self> {
            let wrapper = BatchWrapper::build(fri)?;
            let key = wrapper.load_or_setup_key(&source)?;
            Ok(Self { wrapper, key })
        })
        .await??;
        if settler.key.verifying_key_digest != deployed_digest.0 {
            bail!(
                "the wrap key {} (verifying key digest 0x{}) is not the key of the market's verifier {} (0x{}): \
                 its proofs would not settle",
                settler.key.id,
                hex::encode(settler.key.verifying_key_digest),
                params.verifier,
                hex::encode(deployed_digest)
            );
        }
        if settler.key.insecure {
            tracing::warn!(key = %settler.key.id, "self-settlement uses an INSECURE devnet key (public toxic waste)");
        }
        Ok(settler)
    }

    /// Aggregates `results` with `aggregator` and wraps the batch (blocking: run it off the
    /// async threads). Returns the settlement proof and how many of the results' own leaf
    /// proofs it used.
    pub fn prove(&self, aggregator: &Aggregator, results: &[OwnResult]) -> Result<(SettlementProofFile, usize)> {
        let proofs: Vec<TaskProof> = results.iter().map(|r| r.proof.clone()).collect();
        let provided: Vec<_> = results.iter().map(|r| reusable_leaf(aggregator, r)).collect();
        let reused = provided.iter().flatten().count();
        let batch = aggregator.aggregate_with(&proofs, &provided, &|_| {})?;
        let (file, _) = self.wrapper.prove(&self.key, &batch, &|_| {})?;
        Ok((file, reused))
    }

    /// Proves `results` with `aggregator` (the chain's current registry, see
    /// [`chain_aggregator`]) and settles them with `signing` (the provider's connection): one
    /// `settleBatch` transaction, simulated first so a revert is reported with its reason.
    pub async fn settle(
        self: &std::sync::Arc<Self>,
        aggregator: std::sync::Arc<Aggregator>,
        signing: &DynProvider,
        deployment: &Deployment,
        me: Address,
        results: Vec<OwnResult>,
    ) -> Result<SelfSettled> {
        if results.is_empty() {
            bail!("nothing to settle");
        }
        let started = std::time::Instant::now();
        let this = self.clone();
        let proven = results.clone();
        let (file, leaves_reused) = tokio::task::spawn_blocking(move || this.prove(&aggregator, &proven)).await??;
        let prove_seconds = started.elapsed().as_secs_f64();
        let leaves = file.task_leaves()?;
        for (r, leaf) in results.iter().zip(&leaves) {
            let hash = r.order.hash(&deployment_domain(deployment));
            if leaf.task_id != hash.0 || leaf.provider != me.0 .0 {
                bail!(
                    "a proof does not belong to order {hash} of provider {me} (it binds task 0x{} and provider 0x{})",
                    hex::encode(leaf.task_id),
                    hex::encode(leaf.provider)
                );
            }
        }
        let items: Vec<SettlementItem> = results
            .iter()
            .zip(&leaves)
            .map(|(r, leaf)| SettlementItem {
                order: r.order.clone(),
                provider: me,
                output_commitment: B256::from(leaf.output_commitment),
            })
            .collect();
        let batch = SettlementBatch::build(&items)?;
        let root = B256::from(tgrid_cli::parse_hex::<32>(&file.registry_root, "registry root")?);
        let call = batch.call(root, file.proof_words()?);
        let market = ITaskMarket::new(deployment.market, signing);
        let builder = market.settleBatch(call.header, call.leaves, call.registryRoot, call.proof);
        builder.call().await.map_err(|e| market_error("TaskMarket.settleBatch", e))?;
        let receipt = confirm("TaskMarket.settleBatch", builder.send().await).await?;
        let (mut skipped, mut unpaid) = (Vec::new(), Vec::new());
        for log in receipt.inner.logs() {
            if let Ok(e) = log.log_decode::<ITaskMarket::OrderSkipped>() {
                skipped.push((e.inner.data.orderHash, format!("{:?}", e.inner.data.reason)));
            } else if let Ok(e) = log.log_decode::<ITaskMarket::OrderUnpaid>() {
                unpaid.push((e.inner.data.orderHash, format!("{:?}", e.inner.data.reason)));
            }
        }
        Ok(SelfSettled {
            transaction: receipt.transaction_hash,
            gas_used: receipt.gas_used,
            skipped,
            unpaid,
            prove_seconds,
            leaves_reused,
        })
    }
}

/// The leaf proof kept with `result`, if it is a proof of this task's leaf under `aggregator`'s
/// circuits and registry (a leaf proven before governance moved the registry is not).
fn reusable_leaf(aggregator: &Aggregator, result: &OwnResult) -> Option<tgrid_aggregation::SubtreeProof> {
    let bytes = result.leaf.as_deref()?;
    match aggregator.adopt_leaf(&result.proof, bytes) {
        Ok((_, leaf)) => Some(leaf),
        Err(e) => {
            tracing::info!(nonce = %result.order.order.nonce, reason = %e, "a kept leaf proof does not fit: proving the leaf again");
            None
        }
    }
}
