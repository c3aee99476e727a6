//! The wrap in `tgrid-sequencer bench --wrap-insecure-devnet-key`: production FRI, the INSECURE
//! devnet Groth16 key, built and loaded once before anything is timed.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use serde_json::json;
use tgrid_aggregation::BatchFile;
use tgrid_settlement_proof::{BatchWrapper, KeySource, WrapKey, WrapVerifyingKey};
use tgrid_wrap::FinalFri;

/// What the wrap costs once the batch root exists, measured on one batch.
pub(crate) struct Wrapped {
    pub seconds: f64,
    pub report: serde_json::Value,
}

/// The wrap circuits (production FRI) and the INSECURE devnet key, built and loaded before the
/// batches start (the service does both at start-up), so that only the proofs are timed.
pub(crate) struct Wrapping {
    wrapper: BatchWrapper,
    key: WrapKey,
}

impl Wrapping {
    pub(crate) fn load(keys_dir: PathBuf) -> Result<Self> {
        let wrapper = BatchWrapper::build(FinalFri::PRODUCTION)?;
        wrapper.prepare_prover()?;
        let key = wrapper.load_or_setup_key(&KeySource::InsecureDevnet { dir: keys_dir })?;
        eprintln!("WARNING: INSECURE devnet Groth16 key {} (public seed): benchmark only", key.id);
        Ok(Self { wrapper, key })
    }

    pub(crate) fn wrapper(&self) -> &BatchWrapper {
        &self.wrapper
    }

    /// The key's verifying half, which checks a queue worker's wrap.
    pub(crate) fn verifying_key(&self) -> WrapVerifyingKey {
        self.key.verifying()
    }

    pub(crate) fn wrap(&self, batch: &BatchFile) -> Result<Wrapped> {
        let started = Instant::now();
        let (file, stats) = self.wrapper.prove(&self.key, batch, &|_| {})?;
        let seconds = started.elapsed().as_secs_f64();
        anyhow::ensure!(file.count as usize == batch.leaves.len(), "the settlement proof counts another batch");
        Ok(Wrapped {
            seconds,
            report: json!({
                "insecure_devnet_key": true,
                "fri": self.wrapper.fri_label(),
                "seconds": seconds,
                "settle_layer_seconds": stats.settle_seconds,
                "final_layer_seconds": stats.final_layer_seconds,
                "groth16_seconds": stats.groth16_seconds,
            }),
        })
    }
}
