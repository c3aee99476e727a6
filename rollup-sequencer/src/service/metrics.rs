//! Prometheus metrics served at `/metrics`.

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
};

/// The service's metrics.
#[derive(Clone, Debug)]
pub struct Metrics {
    registry: Registry,
    /// Acknowledged results waiting for a batch.
    pub queue_depth: IntGauge,
    /// Submissions by outcome (`accepted`, `duplicate`, `rejected`).
    pub submissions: IntCounterVec,
    /// Task leaves by who proved them: `adopted` (a provider's leaf proof checked at ingest),
    /// `dropped` (a provider's, valid but under another registry root), `used` (a batch took a
    /// provider's leaf without proving), `proven` (the sequencer or its workers proved the leaf).
    pub leaves: IntCounterVec,
    /// With a job queue: subtrees of an open batch its workers proved before the batch closed
    /// (`proven`), or whose proving ahead failed (`failed`; the aggregation at close retries).
    pub subtrees_ahead: IntCounterVec,
    /// Relay events (`listed`, `accepted`, `rate_limited`: a write refused by the per-client limit).
    pub orders: IntCounterVec,
    /// Time from request to acknowledgement.
    pub ack_seconds: Histogram,
    /// Time of each ingest stage of an acknowledged submission ([`IngestStage`]).
    pub ingest_stage_seconds: HistogramVec,
    /// Time from a batch opening to its settlement.
    pub batch_seconds: Histogram,
    /// Tasks settled on-chain.
    pub settled_tasks: IntCounter,
    /// Settlement gas per task of the last settled batch.
    pub gas_per_task: IntGauge,
    /// Batches that failed (their tasks were re-queued or dropped).
    pub failed_batches: IntCounter,
    /// Settlement transactions sent again because the node forgot them (reorg, eviction).
    pub resent_transactions: IntCounter,
    /// 1 once the pipeline has built its circuits and loaded its key (the API serves before).
    pub pipeline_ready: IntGauge,
    /// Failed settlement steps that will be retried, by kind (`rpc`, `funds`, `store`, `other`).
    pub settlement_retries: IntCounterVec,
    /// Batches whose settlement is being retried now.
    pub retrying_batches: IntGauge,
    /// Batches retried at least `health::STALLED_AFTER_ATTEMPTS` times in a row.
    pub stalled_batches: IntGauge,
    /// 1 while the sequencer's account could not pay its last settlement.
    pub low_funds: IntGauge,
    /// The sequencer account's balance in ETH (wei / 10^18), read before each settlement.
    pub balance_eth: prometheus::Gauge,
    /// 1 while the chain's registry root is not the one new batches are proven under.
    pub registry_stale: IntGauge,
    /// Times the pipeline moved to a new on-chain registry root.
    pub registry_reloads: IntCounter,
    /// Connections closed on arrival: their client, or the server, held its most.
    pub refused_connections: IntCounter,
    /// The job queue's (`job_queue` setting): jobs in flight, depth, workers, latency.
    pub jobs: crate::jobs::JobMetrics,
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Self {
        let registry = Registry::new();
        let queue_depth =
            IntGauge::new("tgrid_sequencer_queue_depth", "acknowledged results waiting for a batch").expect("metric");
        let submissions =
            IntCounterVec::new(Opts::new("tgrid_sequencer_submissions_total", "submissions by outcome"), &["outcome"])
                .expect("metric");
        let leaves = IntCounterVec::new(
            Opts::new(
                "tgrid_sequencer_leaves_total",
                "task leaves: provider leaf proofs adopted or dropped at ingest, then used by a batch, or proven here",
            ),
            &["outcome"],
        )
        .expect("metric");
        let subtrees_ahead = IntCounterVec::new(
            Opts::new(
                "tgrid_sequencer_subtrees_ahead_total",
                "subtrees of an open batch proven on the job queue before it closed, or whose proving ahead failed",
            ),
            &["outcome"],
        )
        .expect("metric");
        let orders = IntCounterVec::new(
            Opts::new(
                "tgrid_sequencer_relay_orders_total",
                "orders listed, acceptances recorded, relay writes refused by the per-client limit",
            ),
            &["event"],
        )
        .expect("metric");
        let ack_seconds = Histogram::with_opts(
            HistogramOpts::new("tgrid_sequencer_ack_seconds", "time from request to acknowledgement")
                .buckets(vec![0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5]),
        )
        .expect("metric");
        let ingest_stage_seconds = HistogramVec::new(
            HistogramOpts::new(
                "tgrid_sequencer_ingest_stage_seconds",
                "time of each stage of an acknowledged submission: decode, verify_queue (waiting for a \
                 proof-checking slot), verify, chain (market reads), store (write and flush)",
            )
            .buckets(vec![0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0]),
            &["stage"],
        )
        .expect("metric");
        let batch_seconds = Histogram::with_opts(
            HistogramOpts::new("tgrid_sequencer_batch_seconds", "time from a batch opening to its settlement")
                .buckets(vec![10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 3600.0]),
        )
        .expect("metric");
        let settled_tasks = IntCounter::new("tgrid_sequencer_settled_tasks_total", "tasks settled").expect("metric");
        let gas_per_task =
            IntGauge::new("tgrid_sequencer_gas_per_task", "settlement gas per task of the last batch").expect("metric");
        let failed_batches =
            IntCounter::new("tgrid_sequencer_failed_batches_total", "batches abandoned").expect("metric");
        let resent_transactions = IntCounter::new(
            "tgrid_sequencer_resent_transactions_total",
            "settlement transactions re-sent after the node forgot them (reorg or eviction)",
        )
        .expect("metric");
        let settlement_retries = IntCounterVec::new(
            Opts::new("tgrid_sequencer_settlement_retries_total", "failed settlement steps retried, by kind"),
            &["kind"],
        )
        .expect("metric");
        let retrying_batches =
            IntGauge::new("tgrid_sequencer_retrying_batches", "batches whose settlement is being retried")
                .expect("metric");
        let stalled_batches =
            IntGauge::new("tgrid_sequencer_stalled_batches", "batches retried 3 or more times in a row")
                .expect("metric");
        let low_funds =
            IntGauge::new("tgrid_sequencer_low_funds", "1 while the account could not pay its last settlement")
                .expect("metric");
        let balance_eth =
            prometheus::Gauge::new("tgrid_sequencer_balance_eth", "the sequencer account's balance").expect("metric");
        let registry_stale = IntGauge::new(
            "tgrid_sequencer_registry_stale",
            "1 while the on-chain registry root is not the registry file's: new batches are proven under a \
             replaced root (settling only during its grace period)",
        )
        .expect("metric");
        let registry_reloads = IntCounter::new(
            "tgrid_sequencer_registry_reloads_total",
            "times the pipeline moved to a new on-chain registry root",
        )
        .expect("metric");
        let refused_connections = IntCounter::new(
            "tgrid_sequencer_refused_connections_total",
            "connections closed on arrival because their client or the server held its most",
        )
        .expect("metric");
        let pipeline_ready = IntGauge::new(
            "tgrid_sequencer_pipeline_ready",
            "whether the pipeline has built its circuits and loaded its Groth16 key (1) or not yet (0)",
        )
        .expect("metric");
        for m in [
            Box::new(queue_depth.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(pipeline_ready.clone()),
            Box::new(submissions.clone()),
            Box::new(leaves.clone()),
            Box::new(subtrees_ahead.clone()),
            Box::new(orders.clone()),
            Box::new(ack_seconds.clone()),
            Box::new(ingest_stage_seconds.clone()),
            Box::new(batch_seconds.clone()),
            Box::new(settled_tasks.clone()),
            Box::new(gas_per_task.clone()),
            Box::new(failed_batches.clone()),
            Box::new(resent_transactions.clone()),
            Box::new(settlement_retries.clone()),
            Box::new(retrying_batches.clone()),
            Box::new(stalled_batches.clone()),
            Box::new(low_funds.clone()),
            Box::new(balance_eth.clone()),
            Box::new(registry_stale.clone()),
            Box::new(registry_reloads.clone()),
            Box::new(refused_connections.clone()),
        ] {
            registry.register(m).expect("unique metric names");
        }
        let jobs = crate::jobs::JobMetrics::new();
        jobs.register(&registry).expect("unique metric names");
        Self {
            registry,
            queue_depth,
            submissions,
            leaves,
            subtrees_ahead,
            orders,
            ack_seconds,
            ingest_stage_seconds,
            batch_seconds,
            settled_tasks,
            gas_per_task,
            failed_batches,
            resent_transactions,
            pipeline_ready,
            settlement_retries,
            retrying_batches,
            stalled_batches,
            low_funds,
            balance_eth,
            registry_stale,
            registry_reloads,
            refused_connections,
            jobs,
        }
    }

    /// Records how long an acknowledged submission spent in `stage`.
    pub fn observe_stage(&self, stage: IngestStage, seconds: f64) {
        self.ingest_stage_seconds.with_label_values(&[stage.label()]).observe(seconds);
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        TextEncoder::new().encode(&self.registry.gather(), &mut buf).expect("text encoding");
        String::from_utf8(buf).expect("the text format is UTF-8")
    }
}

/// The stages of [`crate::service`]'s ingest of one submission, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IngestStage {
    /// Hex and proof decoding, output commitment, duplicate lookup.
    Decode,
    /// Waiting for one of the proof-checking slots (one per core).
    VerifyQueue,
    /// The task proof's verification.
    Verify,
    /// The market and registry reads.
    Chain,
    /// The record's write and the flush to disk.
    Store,
}

impl IngestStage {
    /// The `stage` label.
    pub fn label(self) -> &'static str {
        match self {
            IngestStage::Decode => "decode",
            IngestStage::VerifyQueue => "verify_queue",
            IngestStage::Verify => "verify",
            IngestStage::Chain => "chain",
            IngestStage::Store => "store",
        }
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
