//! Auditing from chain data alone: a settled batch is found by its root in the `BatchSettled`
//! events, its leaves and Groth16 proof are decoded from the settling transaction's calldata,
//! the batch root and public input are recomputed, and the proof is verified off-chain with a
//! verifying key whose digest must equal the one the deployed verifier was built from.

use std::path::{Path, PathBuf};
use std::time::Instant;

use alloy::consensus::Transaction as _;
use alloy::eips::BlockId;
use alloy::primitives::{Address, B256, U256};
use alloy::providers::{DynProvider, Provider};
use alloy::rpc::types::Filter;
use alloy::sol_types::{SolCall, SolEvent};
use anyhow::{anyhow, bail, Context, Result};
use serde_json::json;
use tgrid_aggregation::registry::hex32;
use tgrid_aggregation::TaskLeaf;
use tgrid_chain::bindings::{IKeyedGroth16Verifier, ISettlement, ITaskEscrow};
use tgrid_chain::Deployment;
use tgrid_cli::{bad_input, parse_hex, Output};
use tgrid_settlement_proof::file::{KeyJson, LeafJson, FORMAT};
use tgrid_settlement_proof::SettlementProofFile;

/// Where to read the chain and the keys.
#[derive(Debug, clap::Args)]
pub struct ChainArgs {
    /// Audit from chain data: the JSON-RPC endpoint of the chain.
    #[arg(long)]
    pub rpc: Option<String>,
    /// Deployment file written by contracts/script/Deploy.s.sol.
    #[arg(long, env = "TGRID_DEPLOYMENT", default_value = tgrid_chain::DEFAULT_DEPLOYMENT)]
    pub deployment: PathBuf,
}

/// A settled batch as the chain recorded it.
struct SettledBatch {
    batch_root: B256,
    registry_root: B256,
    public_input: U256,
    count: u64,
    leaves: Vec<TaskLeaf>,
    proof: [U256; 8],
    transaction: B256,
    block: u64,
    gas_used: u64,
    verifier: Address,
}

struct Chain {
    provider: DynProvider,
    deployment: Deployment,
}

impl Chain {
    async fn connect(rpc: &str, deployment: &Path) -> Result<Self> {
        let deployment = Deployment::load(deployment).map_err(bad_input)?;
        let provider = tgrid_chain::reader(rpc).map_err(bad_input)?;
        tgrid_chain::check_chain(&provider, rpc, &deployment).await?;
        Ok(Self { provider, deployment })
    }

    /// The batch settled under `batch_root`, decoded from its transaction's calldata.
    async fn settled_batch(&self, batch_root: B256) -> Result<SettledBatch> {
        let filter = Filter::new()
            .address(self.deployment.settlement)
            .event_signature(ISettlement::BatchSettled::SIGNATURE_HASH)
            .topic1(batch_root)
            .from_block(self.deployment.start_block);
        let logs = self.provider.get_logs(&filter).await.context("eth_getLogs BatchSettled")?;
        let log = logs.last().ok_or_else(|| anyhow!("no batch with root {batch_root} settled on this deployment"))?;
        let event = log.log_decode::<ISettlement::BatchSettled>().context("BatchSettled")?.inner.data;
        let transaction = log.transaction_hash.context("the log has no transaction hash")?;
        let block = log.block_number.context("the log has no block number")?;
        let tx = self
            .provider
            .get_transaction_by_hash(transaction)
            .await
            .context("eth_getTransactionByHash")?
            .ok_or_else(|| anyhow!("the node does not know transaction {transaction}"))?;
        // Settlement is called directly by the sequencer; the calldata is the batch.
        if tx.to() != Some(self.deployment.settlement) {
            bail!("transaction {transaction} does not call the settlement contract directly");
        }
        let call = ISettlement::submitBatchCall::abi_decode(tx.input())
            .with_context(|| format!("transaction {transaction} is not a submitBatch call"))?;
        let receipt = self
            .provider
            .get_transaction_receipt(transaction)
            .await
            .context("eth_getTransactionReceipt")?
            .ok_or_else(|| anyhow!("no receipt for {transaction}"))?;
        // The verifier in force when the batch settled (governance may have replaced it since).
        let verifier = ISettlement::new(self.deployment.settlement, &self.provider)
            .verifier()
            .block(BlockId::number(block))
            .call()
            .await
            .context("Settlement.verifier")?;
        let leaves = call
            .leaves
            .iter()
            .map(|l| TaskLeaf {
                task_id: l.taskId.0,
                model_id: l.modelId.0,
                input_commitment: l.inputCommitment.0,
                output_commitment: l.outputCommitment.0,
                provider: l.provider.0 .0,
            })
            .collect();
        Ok(SettledBatch {
            batch_root: event.batchRoot,
            registry_root: call.registryRoot,
            public_input: event.publicInput,
            count: u64::try_from(event.taskCount).context("task count")?,
            leaves,
            proof: call.proof,
            transaction,
            block,
            gas_used: receipt.gas_used,
            verifier,
        })
    }

    /// Gas the settling transaction spent inside the verifier's `verifyProof`, from the node's
    /// call trace (`debug_traceTransaction` with the call tracer; anvil and archive nodes have
    /// it). `None` when the node offers no traces. (Estimating a call to `verifyProof` does not
    /// work: it returns false rather than reverting when a precompile runs out of gas, so the
    /// estimate's search settles on a failing call.)
    async fn verify_gas(&self, batch: &SettledBatch) -> Option<u64> {
        let trace: serde_json::Value = self
            .provider
            .raw_request("debug_traceTransaction".into(), (batch.transaction, json!({"tracer": "callTracer"})))
            .await
            .map_err(|e| tracing::info!("no call trace from the node: {e}"))
            .ok()?;
        fn find(call: &serde_json::Value, verifier: &str) -> Option<u64> {
            if call["to"].as_str().is_some_and(|to| to.eq_ignore_ascii_case(verifier)) {
                return u64::from_str_radix(call["gasUsed"].as_str()?.trim_start_matches("0x"), 16).ok();
            }
            call["calls"].as_array()?.iter().find_map(|c| find(c, verifier))
        }
        find(&trace, &batch.verifier.to_string())
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}

/// `tgrid-verifier batch BATCH_ROOT --rpc URL`.
pub fn audit_batch(
    batch_root: &str,
    rpc: &str,
    deployment: &Path,
    vk: Option<&Path>,
    keys_dir: &Path,
    out: &Output,
) -> Result<()> {
    let started = Instant::now();
    let root = B256::from(parse_hex::<32>(batch_root, "batch root").map_err(bad_input)?);
    let rt = runtime()?;
    let (batch, key_id, key_digest, verify_gas) = rt.block_on(async {
        let chain = Chain::connect(rpc, deployment).await?;
        let batch = chain.settled_batch(root).await?;
        let verifier = IKeyedGroth16Verifier::new(batch.verifier, &chain.provider);
        let key_id = verifier.VERIFYING_KEY_ID().call().await.context("verifier VERIFYING_KEY_ID")?;
        let key_digest = verifier.VERIFYING_KEY_DIGEST().call().await.context("verifier VERIFYING_KEY_DIGEST")?;
        let gas = chain.verify_gas(&batch).await;
        anyhow::Ok((batch, key_id, key_digest, gas))
    })?;
    let vk_path = match vk {
        Some(p) => p.to_path_buf(),
        None => keys_dir.join(format!("{}.vk.json", crate::safe_key_id(&key_id).map_err(bad_input)?)),
    };
    let vk = crate::load_vk(&vk_path)?;
    let local_digest = tgrid_groth16::evm::verifying_key_digest(&vk)?;
    if local_digest != key_digest.0 {
        bail!(
            "{} has digest {}, the deployed verifier {} was built from key {key_id} with digest {key_digest}",
            vk_path.display(),
            hex32(&local_digest),
            batch.verifier
        );
    }
    let insecure = key_id.to_ascii_lowercase().contains("insecure");
    // The settlement-proof file's checks, fed from calldata: root, count, public input, proof.
    let file = SettlementProofFile {
        format: FORMAT.into(),
        key: KeyJson { id: key_id.clone(), insecure, verifying_key_digest: hex32(&local_digest) },
        fri: "from-chain".into(),
        final_circuit_digest: String::new(),
        batch_root: hex32(&batch.batch_root.0),
        registry_root: hex32(&batch.registry_root.0),
        count: batch.count,
        public_input: hex32(&batch.public_input.to_be_bytes::<32>()),
        proof: batch.proof.iter().map(|w| hex32(&w.to_be_bytes::<32>())).collect(),
        leaves: batch.leaves.iter().map(LeafJson::of).collect(),
    };
    let verified =
        file.verify(&vk).with_context(|| format!("batch {root} (tx {}) does not verify", batch.transaction))?;
    let count = verified.leaves.len() as u64;
    let value = json!({
        "valid": true,
        "batch_root": hex32(&verified.batch_root),
        "registry_root": hex32(&verified.registry_root),
        "public_input": hex32(&verified.public_input),
        "count": count,
        "transaction": batch.transaction.to_string(),
        "block": batch.block,
        "gas_used": batch.gas_used,
        "gas_per_task": batch.gas_used / count.max(1),
        "verify_gas": verify_gas,
        "verifier": batch.verifier.to_string(),
        "key_id": key_id,
        "insecure_key": insecure,
        "leaves": crate::leaves_json(&verified.leaves),
        "seconds": started.elapsed().as_secs_f64(),
    });
    out.emit(value, || {
        let mut text = format!(
            "valid settled batch (re-verified off-chain from calldata)\n  batch root     {}\n  registry root  {}\n  tasks          {count}\n  public input   {}\n  transaction    {} (block {})\n  gas            {} total, {} per task, {} in verifyProof\n  verifier       {} key {key_id}{}",
            hex32(&verified.batch_root),
            hex32(&verified.registry_root),
            hex32(&verified.public_input),
            batch.transaction,
            batch.block,
            batch.gas_used,
            batch.gas_used / count.max(1),
            verify_gas.map_or("(no trace from the node)".to_string(), |g| g.to_string()),
            batch.verifier,
            if insecure { "  (INSECURE devnet key: anyone can forge proofs for it)" } else { "" },
        );
        text += "\n";
        text += crate::leaves_text(&verified.leaves).trim_end();
        text
    })
}

/// `tgrid-verifier task TASK_ID --rpc URL [--output OUT.json]`.
pub fn audit_task(task_id: &str, rpc: &str, deployment: &Path, output: Option<&Path>, out: &Output) -> Result<()> {
    let id = B256::from(parse_hex::<32>(task_id, "task id").map_err(bad_input)?);
    let output_values = output.map(tgrid_cli::read_int8_output).transpose()?;
    let rt = runtime()?;
    let (task, settled, batch) = rt.block_on(async {
        let chain = Chain::connect(rpc, deployment).await?;
        let escrow = ITaskEscrow::new(chain.deployment.escrow, &chain.provider);
        let task = escrow.task(id).call().await.context("TaskEscrow.task")?;
        if task.status == ITaskEscrow::TaskStatus::None {
            return Err(bad_input(anyhow!("no task {id} on this deployment")));
        }
        let settled =
            tgrid_chain::settled_output(&chain.provider, chain.deployment.escrow, chain.deployment.start_block, id)
                .await?;
        // The batch that settled it: the BatchSettled event of the same transaction.
        let mut batch = None;
        if let Some(s) = settled {
            let receipt = chain
                .provider
                .get_transaction_receipt(s.transaction)
                .await
                .context("eth_getTransactionReceipt")?
                .ok_or_else(|| anyhow!("no receipt for {}", s.transaction))?;
            batch = receipt
                .inner
                .logs()
                .iter()
                .find_map(|l| l.log_decode::<ISettlement::BatchSettled>().ok())
                .map(|l| l.inner.data.batchRoot);
        }
        anyhow::Ok((task, settled, batch))
    })?;
    let status = format!("{:?}", task.status).to_lowercase();
    let mut value = json!({
        "task_id": id.to_string(),
        "status": status,
        "provider": task.provider.to_string(),
        "poster": task.poster.to_string(),
        "reward": tgrid_chain::format_tgrid(U256::from(task.reward)),
        "deadline": task.deadline.to::<u64>(),
        "output_commitment": settled.map(|s| s.output_commitment.to_string()),
        "settled_in": settled.map(|s| s.transaction.to_string()),
        "batch_root": batch.map(|b| b.to_string()),
    });
    if let Some(values) = &output_values {
        let s = settled.ok_or_else(|| anyhow!("task {id} is {status}: there is no settled output to check against"))?;
        let computed = B256::from(tgrid_circuits::commit(values).0);
        if computed != s.output_commitment {
            bail!(
                "the output file does NOT match task {id}: it commits to {computed}, the settlement recorded {}",
                s.output_commitment
            );
        }
        value["output_matches"] = json!(true);
    }
    out.emit(value.clone(), || {
        let mut text = format!(
            "task {id}: {status}\n  provider {}  reward {} TGRID  deadline {}",
            task.provider,
            tgrid_chain::format_tgrid(U256::from(task.reward)),
            task.deadline
        );
        if let Some(s) = settled {
            text += &format!("\n  output commitment {} (tx {}, block {})", s.output_commitment, s.transaction, s.block);
        }
        if let Some(b) = batch {
            text += &format!("\n  batch root {b} (audit it with `tgrid-verifier batch {b} --rpc ...`)");
        }
        if value.get("output_matches").is_some() {
            text += "\n  the output file matches the settled commitment";
        }
        text
    })
}
