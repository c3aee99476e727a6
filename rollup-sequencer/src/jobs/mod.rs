//! Aggregation jobs on a work queue (NATS JetStream), so that leaf, chunk, merge and wrap proofs
//! run on worker processes of other machines.
//!
//! - A job (a leaf: model file + registry + task proof; a chunk: one to four leaf proofs; a
//!   merge: two or three child proofs; a wrap: a closed batch and the Groth16 key to prove it
//!   with) is published under the SHA-256 of its bytes as message id (the broker drops a
//!   republished duplicate): leaves, chunks and merges to the
//!   `TGRID_JOBS` stream, wraps to `TGRID_WRAP_JOBS` (both work-queue retention, file storage).
//!   Wraps have their own stream because only workers holding the proving key (a few hundred MB,
//!   and the synthesis' memory) can take them.
//! - Workers (`tgrid-sequencer worker --queue URL`) share one durable pull consumer per stream
//!   (a worker started with a wrap key pulls from both, wraps first). A worker
//!   stores the outcome in the `TGRID_RESULTS` stream under `tgrid.results.<job id>` and only then
//!   acknowledges the job; while proving it tells the broker it is still working. A worker killed
//!   mid-job never acknowledges: the broker redelivers the job after the ack wait. A redelivered
//!   job whose outcome is already stored is acknowledged without proving again.
//! - The dispatcher ([`JobQueue::run`]) answers from a stored outcome if there is one, otherwise
//!   publishes the job and waits for its outcome (pushed as it is stored, and looked up again
//!   every few seconds, so a broker restart loses nothing). Workers are not trusted: every proof
//!   they return is verified, and its public inputs compared with the natively computed ones,
//!   before it is used ([`aggregate`]).
//! - The sequencer service queues a task's leaf when the task joins the open batch
//!   ([`queue_leaf`]), and each aligned block of the batch's tasks (4, 8, 16... tasks starting
//!   at a multiple of that size: a subtree of the batch's tree whatever size it closes at) as
//!   soon as it is complete ([`prove_ahead`]): the chunks and merges below the top of the tree
//!   are done while the batch is open, and the aggregation at close finds them (same jobs, same
//!   ids).

mod address;
mod codec;
mod dispatch;
mod worker;

use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};

pub use address::{BadQueueUrl, QueueUrl};
pub use codec::{job_id, ChildProof, Job, Outcome, MAX_BATCH_BYTES, MAX_MODEL_FILE_BYTES, MAX_PROOF_BYTES};
pub use dispatch::{aggregate, prove_ahead, queue_leaf, wrap, Delivered, JobMetrics, JobQueue, Product, WorkerTally};
pub use worker::{run_worker, WorkerOptions, WrapSetup};

/// Stream of pending leaf, chunk and merge jobs.
pub const JOBS_STREAM: &str = "TGRID_JOBS";
/// Stream of pending wrap jobs.
pub const WRAP_JOBS_STREAM: &str = "TGRID_WRAP_JOBS";
/// Subjects of wrap jobs (`<prefix>.wrap`).
pub const WRAP_SUBJECT_PREFIX: &str = "tgrid.wrap-jobs";
/// Stream of job outcomes, one per job id.
pub const RESULTS_STREAM: &str = "TGRID_RESULTS";
/// The workers' shared durable consumer of leaf, chunk and merge jobs.
pub const WORKERS_CONSUMER: &str = "tgrid-workers";
/// The wrap-capable workers' shared durable consumer of wrap jobs.
pub const WRAP_WORKERS_CONSUMER: &str = "tgrid-wrap-workers";
/// Header naming the worker that produced an outcome.
pub const WORKER_HEADER: &str = "Tgrid-Worker";
/// Header with the seconds a worker spent on a job.
pub const SECONDS_HEADER: &str = "Tgrid-Job-Seconds";
/// Core NATS subject of the workers' heartbeats (payload: the worker's name).
pub const HEARTBEAT_SUBJECT: &str = "tgrid.workers.heartbeat";
/// How often a worker sends one.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(2);
/// How long outcomes are kept (a dispatcher restarted within it reuses them).
const RESULTS_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// What can go wrong with queued jobs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// The broker cannot be reached or refused a request.
    #[error("job queue {url}: {reason}")]
    Queue {
        /// Broker address (without its credentials).
        url: String,
        /// What failed.
        reason: String,
    },
    /// A worker refused the job: it can never succeed.
    #[error("a worker refused the {kind} job: {reason}")]
    Refused {
        /// Job kind.
        kind: &'static str,
        /// The worker's reason.
        reason: String,
    },
    /// No outcome came within the job deadline (no worker, or a stuck one).
    #[error("no outcome of the {kind} job within {seconds} s (no worker took it, or its worker is stuck)")]
    TimedOut {
        /// Job kind.
        kind: &'static str,
        /// The deadline.
        seconds: u64,
    },
    /// A worker's answer is not a valid proof of what was asked.
    #[error("invalid outcome of a {kind} job from worker {worker}: {reason}")]
    InvalidOutcome {
        /// Job kind.
        kind: &'static str,
        /// The worker's name, as it reported it.
        worker: String,
        /// What is wrong.
        reason: String,
    },
    /// Checking the proofs or building the batch failed.
    #[error(transparent)]
    Aggregate(#[from] crate::Error),
    /// Building the wrap circuits or loading the Groth16 key failed.
    #[error("wrap: {0}")]
    Wrap(#[from] tgrid_settlement_proof::Error),
    /// A model file named by the registry file cannot be read.
    #[error("{path}: {reason}")]
    ModelFile {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

/// Where the queue is and how long a job may go without a sign of life before redelivery.
#[derive(Clone, Debug)]
pub struct QueueSettings {
    /// Broker address and credentials.
    pub url: QueueUrl,
    /// Redelivery delay of a job whose worker went silent (workers report progress at a third
    /// of it while proving).
    pub ack_wait: Duration,
    /// Longest a job may take. The dispatcher stops waiting for an outcome after it and queues
    /// the job again under a new id (another worker takes it); a worker stops reporting progress
    /// on a job it has proven for this long, so the broker redelivers it. A worker that hangs
    /// but still reports progress holds one job, never the batch.
    pub job_deadline: Duration,
}

/// [`QueueSettings::job_deadline`] unless set: a GPT-sized leaf takes a few minutes on 2 cores.
pub const DEFAULT_JOB_DEADLINE: Duration = Duration::from_secs(1_800);

impl QueueSettings {
    fn error(&self, reason: impl std::fmt::Display) -> JobError {
        JobError::Queue { url: self.url.to_string(), reason: reason.to_string() }
    }
}

/// A connection with both streams in place.
struct Broker {
    client: async_nats::Client,
    js: jetstream::Context,
    results: stream::Stream,
    jobs: stream::Stream,
    wrap_jobs: stream::Stream,
}

impl Broker {
    /// Connects (retrying until the broker answers) and creates the streams if missing.
    async fn connect(settings: &QueueSettings, name: &str) -> Result<Self, JobError> {
        let (options, server) = settings.url.connect_options();
        let client =
            options.name(name).retry_on_initial_connect().connect(server).await.map_err(|e| settings.error(e))?;
        let js = jetstream::new(client.clone());
        let work_queue = |name: &str, subjects: String| stream::Config {
            name: name.into(),
            subjects: vec![subjects],
            retention: stream::RetentionPolicy::WorkQueue,
            storage: stream::StorageType::File,
            duplicate_window: Duration::from_secs(600),
            ..Default::default()
        };
        let jobs = js
            .get_or_create_stream(work_queue(JOBS_STREAM, "tgrid.jobs.>".into()))
            .await
            .map_err(|e| settings.error(format!("stream {JOBS_STREAM}: {e}")))?;
        let wrap_jobs = js
            .get_or_create_stream(work_queue(WRAP_JOBS_STREAM, format!("{WRAP_SUBJECT_PREFIX}.>")))
            .await
            .map_err(|e| settings.error(format!("stream {WRAP_JOBS_STREAM}: {e}")))?;
        let results = js
            .get_or_create_stream(stream::Config {
                name: RESULTS_STREAM.into(),
                subjects: vec!["tgrid.results.>".into()],
                storage: stream::StorageType::File,
                max_messages_per_subject: 1,
                max_age: RESULTS_MAX_AGE,
                duplicate_window: Duration::from_secs(600),
                ..Default::default()
            })
            .await
            .map_err(|e| settings.error(format!("stream {RESULTS_STREAM}: {e}")))?;
        Ok(Self { client, js, results, jobs, wrap_jobs })
    }

    /// The workers' consumer of leaf, chunk and merge jobs, created on first use.
    async fn workers_consumer(&self, settings: &QueueSettings) -> Result<consumer::PullConsumer, JobError> {
        Self::consumer(&self.jobs, WORKERS_CONSUMER, settings).await
    }

    /// The wrap-capable workers' consumer of wrap jobs, created on first use.
    async fn wrap_consumer(&self, settings: &QueueSettings) -> Result<consumer::PullConsumer, JobError> {
        Self::consumer(&self.wrap_jobs, WRAP_WORKERS_CONSUMER, settings).await
    }

    async fn consumer(
        stream: &stream::Stream,
        name: &str,
        settings: &QueueSettings,
    ) -> Result<consumer::PullConsumer, JobError> {
        stream
            .get_or_create_consumer(
                name,
                consumer::pull::Config {
                    durable_name: Some(name.into()),
                    ack_policy: consumer::AckPolicy::Explicit,
                    ack_wait: settings.ack_wait,
                    max_deliver: -1,
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| settings.error(format!("consumer {name}: {e}")))
    }

    /// The stored outcome of `id`, if any (with the worker's headers).
    async fn stored_outcome(&self, id: &str) -> Option<jetstream::message::StreamMessage> {
        self.results.get_last_raw_message_by_subject(&format!("tgrid.results.{id}")).await.ok()
    }
}
