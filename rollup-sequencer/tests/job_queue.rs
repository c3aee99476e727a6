//! Aggregation on worker processes through a real NATS JetStream broker (Debian's
//! `nats-server`, installed by `make test`): `tgrid-sequencer aggregate --queue` of two task
//! proofs under a registry of two models, with `tgrid-sequencer worker` processes. One worker is
//! killed with SIGKILL in the middle of a job and the broker is killed and restarted on its store
//! while jobs are pending: the batch still completes, verifies, and its
//! root equals the natively computed one; every job's outcome is used once (2 leaves + 1 chunk).
//! A forged outcome planted in the queue's store before the batch (what a hostile worker could
//! store) fails its checks, is discarded and the job proven again by an honest worker. The batch
//! is then wrapped by `tgrid-sequencer wrap --queue` on a worker holding the (INSECURE test)
//! Groth16 key. A job over the broker's message limit is refused at once with the remedy. A
//! subtree proven ahead, as the service does while a batch is open, is found done at close.
//! About 2.5 minutes on 2 cores in the test profile, mostly the circuit builds of five processes
//! (the aggregation and wrap circuits of the wrapping worker and of `wrap --queue` included).

use crate::common;
use crate::nats;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tgrid_aggregation::{batch_root, RegistryFile, SubtreeKind, TaskLeaf};
use tgrid_circuits::testing::{random_input, tiny_model};
use tgrid_circuits::{SegmentPlan, TaskProof, TaskProver, TaskVerifier};
use tgrid_sequencer::jobs::{
    aggregate, job_id, prove_ahead, ChildProof, Job, JobMetrics, JobQueue, Outcome, QueueSettings, JOBS_STREAM,
    RESULTS_STREAM, WORKERS_CONSUMER, WORKER_HEADER,
};
use tgrid_sequencer::Aggregator;

/// A process whose stderr (its log) is collected as it is written.
struct Logged {
    child: Child,
    log: Arc<Mutex<String>>,
}

impl Logged {
    fn spawn(cmd: &mut Command) -> Self {
        let mut child = cmd.env("RUST_LOG", "info").stderr(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let sink = log.clone();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        Self { child, log }
    }

    fn wait_for_log(&self, needle: &str, limit: Duration) {
        let started = Instant::now();
        while !self.log.lock().unwrap().contains(needle) {
            assert!(started.elapsed() < limit, "no {needle:?} in:\n{}", self.log.lock().unwrap());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `n` proofs of the tiny model (tasks `first`, `first + 1`, …, registered in `d`) and an
/// aggregator under that registry.
fn proven_tasks(d: &Path, first: u8, n: u8) -> (Arc<Aggregator>, Vec<TaskProof>) {
    let model = tiny_model(7);
    let mut registry = RegistryFile::empty(d.to_path_buf());
    common::add_model(&mut registry, &model, "m.tgm");
    let prover = TaskProver::new(model, SegmentPlan::default()).unwrap();
    let proofs = (first..first + n)
        .map(|task| {
            let input = random_input(u64::from(task), 16);
            prover.prove(&input, [task; 32], [0x23; 20], &mut |_, _, _| {}).unwrap().0
        })
        .collect();
    (Arc::new(Aggregator::new(registry).unwrap()), proofs)
}

/// The job deadline of the tests that do not test it: longer than any of their jobs.
const DEADLINE: Duration = Duration::from_secs(600);

fn worker(url: &str, name: &str) -> Logged {
    Logged::spawn(Command::new(common::BIN).args(["worker", "--queue", url, "--name", name, "--ack-wait-secs", "3"]))
}

#[test]
fn workers_aggregate_the_in_process_batch_through_a_worker_kill_and_a_broker_restart() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let store = d.join("jetstream");
    let mut broker = nats::Broker::start(&store);
    let (url, port) = (broker.url.clone(), broker.port());

    // Two tasks of one of the two registered models, their proofs as files, and the native root.
    let models = [tiny_model(5), tiny_model(6)];
    let mut registry = RegistryFile::empty(d.to_path_buf());
    for (i, m) in models.iter().enumerate() {
        common::add_model(&mut registry, m, &format!("m{i}.tgm"));
    }
    registry.save(&d.join("registry.json")).unwrap();
    let mut paths = Vec::new();
    let mut leaves = Vec::new();
    for (i, m) in [1usize, 1].into_iter().enumerate() {
        let prover = TaskProver::new(models[m].clone(), SegmentPlan::default()).unwrap();
        let input = random_input(40 + i as u64, 16);
        let (proof, ..) = prover.prove(&input, [0x50 + i as u8; 32], [0x22; 20], &mut |_, _, _| {}).unwrap();
        let publics = TaskVerifier::new(&models[m], &SegmentPlan::default()).unwrap().verify(&proof).unwrap();
        leaves.push(TaskLeaf::from_publics(&publics));
        let path = d.join(format!("task{i}.tgp"));
        std::fs::write(&path, proof.to_bytes()).unwrap();
        paths.push(path);
    }
    let native_root = batch_root(&leaves.iter().map(TaskLeaf::hash).collect::<Vec<_>>()).unwrap();

    // A hostile worker's answer to the first leaf job, stored before anyone asked.
    let first_leaf = Job::Leaf {
        registry: registry.registry().unwrap().entries().to_vec(),
        model_file: std::fs::read(d.join("m1.tgm")).unwrap(),
        task_proof: std::fs::read(&paths[0]).unwrap(),
    };
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let settings =
            QueueSettings { url: url.parse().unwrap(), ack_wait: Duration::from_secs(3), job_deadline: DEADLINE };
        drop(JobQueue::connect(settings, JobMetrics::new()).await.unwrap()); // creates the streams
        let js = async_nats::jetstream::new(async_nats::connect(url.as_str()).await.unwrap());
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(WORKER_HEADER, "forger");
        let forged = Outcome::Proven(ChildProof { kind: SubtreeKind::Leaf, bytes: vec![7; 4096] }).encode();
        let subject = format!("tgrid.results.{}", job_id(&first_leaf.encode()));
        js.publish_with_headers(subject, headers, forged.into()).await.unwrap().await.unwrap();
    });

    let doomed = worker(&url, "doomed");
    let _steady = worker(&url, "steady");
    let batch = d.join("batch.tgb");
    let aggregate = Logged::spawn(
        Command::new(common::BIN)
            .args(["--json", "aggregate"])
            .args(&paths)
            .arg("--registry")
            .arg(d.join("registry.json"))
            .arg("--out")
            .arg(&batch)
            .args(["--queue", &url, "--ack-wait-secs", "3"]),
    );

    // SIGKILL one worker in the middle of its first job: it never acknowledges it.
    doomed.wait_for_log("proving", Duration::from_secs(300));
    std::thread::sleep(Duration::from_millis(300));
    drop(doomed);
    // Kill the broker while jobs are pending or in flight, then restart it on the same store.
    drop(broker);
    std::thread::sleep(Duration::from_millis(500));
    broker = nats::Broker::start_on(port, &store);

    let mut aggregate = aggregate;
    let (child, log) = (&mut aggregate.child, aggregate.log.clone());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(600), "aggregate did not finish:\n{}", log.lock().unwrap());
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stdout = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
    assert!(status.success(), "aggregate failed:\n{}", log.lock().unwrap());
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    eprintln!("aggregate --queue: {summary}");
    assert_eq!(summary["count"], 2);
    assert_eq!(summary["batch_root"], format!("0x{}", hex::encode(native_root)));
    assert_eq!(summary["registry_root"], format!("0x{}", hex::encode(registry.registry().unwrap().root())));
    // Every outcome used exactly once, none from the killed worker's unfinished job.
    let workers = summary["workers"].as_object().unwrap();
    let jobs: u64 = workers.values().map(|w| w["jobs"].as_u64().unwrap()).sum();
    assert_eq!(jobs, 3, "{summary}");
    assert!(!workers.contains_key("doomed"), "the killed worker's job was redone by another: {summary}");
    assert!(!workers.contains_key("forger"), "the forged outcome was not used: {summary}");
    assert!(
        log.lock().unwrap().contains("discarding the outcome and queuing the job again"),
        "{}",
        log.lock().unwrap()
    );

    // The batch file is a valid batch of exactly these tasks, in order.
    let verified = Command::new(Path::new(common::BIN).with_file_name("tgrid-verifier"))
        .args(["--json", "batch"])
        .arg(&batch)
        .arg("--registry")
        .arg(d.join("registry.json"))
        .output()
        .unwrap();
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stderr));
    let verified: serde_json::Value = serde_json::from_slice(&verified.stdout).unwrap();
    assert_eq!(verified["batch_root"], summary["batch_root"]);
    let task_ids: Vec<_> = verified["leaves"].as_array().unwrap().iter().map(|l| l["task_id"].clone()).collect();
    assert_eq!(
        task_ids,
        (0..2u8).map(|i| serde_json::json!(format!("0x{}", hex::encode([0x50 + i; 32])))).collect::<Vec<_>>()
    );

    wrap_on_a_worker(d, &url, &batch, &verified);
    drop(broker);
}

/// The sequencer service's proving ahead (`jobs::prove_ahead`): the workers prove an aligned
/// block of an open batch (four tasks: their leaves and their chunk) before the batch closes,
/// uncounted; the batch's aggregation at close then finds those outcomes and has only what the
/// fifth task adds proven (its leaf, its chunk and the top merge): 5 outcomes in the broker
/// after proving ahead, 8 after the batch, which verifies and has the natively computed root.
/// (A block of two is less than a chunk: only its leaves are proven ahead.)
#[test]
fn a_subtree_proven_ahead_is_found_done_when_the_batch_closes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let broker = nats::Broker::start(&d.join("jetstream"));
    let url = broker.url.clone();
    let (aggregator, proofs) = proven_tasks(d, 0x70, 5);
    let _worker = worker(&url, "ahead");

    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let settings =
            QueueSettings { url: url.parse().unwrap(), ack_wait: Duration::from_secs(3), job_deadline: DEADLINE };
        let queue = Arc::new(JobQueue::connect(settings, JobMetrics::new()).await.unwrap());
        let js = async_nats::jetstream::new(async_nats::connect(url.as_str()).await.unwrap());
        let outcomes = || async {
            let mut stream = js.get_stream(RESULTS_STREAM).await.unwrap();
            stream.info().await.unwrap().state.messages
        };

        let pair = prove_ahead(aggregator.clone(), queue.clone(), proofs[..2].to_vec(), vec![None, None]);
        pair.await.unwrap();
        assert_eq!(outcomes().await, 2, "two leaves, no chunk of a part of a chunk");
        prove_ahead(aggregator.clone(), queue.clone(), proofs[..4].to_vec(), vec![None; 4]).await.unwrap();
        assert_eq!(outcomes().await, 5, "four leaves and their chunk");
        assert!(queue.tally().is_empty(), "proving ahead is not counted: {:?}", queue.tally());

        let batch = aggregate(&aggregator, &queue, &proofs, &[]).await.unwrap();
        assert_eq!(outcomes().await, 8, "only the fifth leaf, its chunk and the top merge were proven at close");
        let jobs: u64 = queue.tally().values().map(|t| t.jobs).sum();
        assert_eq!(jobs, 8, "the batch used eight outcomes, each counted once");
        let verified = aggregator.circuits().verify_batch(&batch, &aggregator.registry().root()).unwrap();
        let hashes: Vec<[u8; 32]> = proofs.iter().map(|p| aggregator.check(p).unwrap().hash()).collect();
        assert_eq!(verified.batch_root, batch_root(&hashes).unwrap());
    });
    drop(broker);
}

/// `tgrid-sequencer wrap --queue`: the batch's Groth16 proof made by a worker holding the
/// (INSECURE test-FRI devnet) key; the command holds only the verifying key, and its file
/// verifies with `tgrid-verifier groth16` for exactly the batch's leaves.
fn wrap_on_a_worker(d: &Path, url: &str, batch: &Path, verified_batch: &serde_json::Value) {
    let keys = common::keys_dir();
    // The key is set up once per target dir (minutes), normally already by cli.rs; set it up in
    // one process here otherwise, so that the worker and this command do not both set it up.
    let cached = std::fs::read_dir(&keys).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("wrap-insecure-test-") && name.ends_with(".pk")
        })
    });
    if !cached {
        common::wrap_key();
    }
    let key_args = ["--insecure-devnet-key", "--fri", "insecure-test", "--keys-dir", keys.to_str().unwrap()];
    let _wrapper =
        Logged::spawn(Command::new(common::BIN).args(["worker", "--queue", url, "--name", "wrapper"]).args([
            "--wrap-insecure-devnet-key",
            "--wrap-fri",
            "insecure-test",
            "--keys-dir",
            keys.to_str().unwrap(),
            "--max-jobs",
            "1",
        ]));
    let g16 = d.join("batch.g16");
    let out = Command::new(common::BIN)
        .args(["--json", "wrap"])
        .arg(batch)
        .arg("--out")
        .arg(&g16)
        .args(key_args)
        .args(["--queue", url, "--ack-wait-secs", "3"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "wrap --queue failed:\n{stderr}");
    assert!(stderr.contains("INSECURE devnet Groth16 key"), "{stderr}");
    let wrapped: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    eprintln!("wrap --queue: {wrapped}");
    assert_eq!(wrapped["batch_root"], verified_batch["batch_root"]);
    assert_eq!(wrapped["public_input"], verified_batch["public_input"]);
    assert_eq!(wrapped["count"], 2);
    assert_eq!(wrapped["insecure_key"], true);
    assert_eq!(wrapped["workers"]["wrapper"]["jobs"], 1, "{wrapped}");
    assert!(wrapped["stats"].is_null(), "this process proved nothing: {wrapped}");

    let checked = Command::new(Path::new(common::BIN).with_file_name("tgrid-verifier"))
        .args(["--json", "groth16"])
        .arg(&g16)
        .arg("--keys-dir")
        .arg(&keys)
        .output()
        .unwrap();
    assert!(checked.status.success(), "{}", String::from_utf8_lossy(&checked.stderr));
    let checked: serde_json::Value = serde_json::from_slice(&checked.stdout).unwrap();
    assert_eq!(checked["valid"], true);
    assert_eq!(checked["public_input"], verified_batch["public_input"]);
    assert_eq!(checked["leaves"], verified_batch["leaves"]);
}

/// A broker that requires a user and password: the right ones get in, wrong ones get a clear
/// error, and neither the error nor the worker's log shows the password.
#[test]
fn a_password_protected_broker_admits_its_credentials_and_no_output_shows_them() {
    let store = tempfile::tempdir().unwrap();
    let broker = nats::Broker::start_with_password(store.path(), "tgrid", "Secr3t@pw");
    let port = broker.port();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let connect = |url: String| {
        let settings =
            QueueSettings { url: url.parse().unwrap(), ack_wait: Duration::from_secs(3), job_deadline: DEADLINE };
        runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(60), JobQueue::connect(settings, JobMetrics::new()))
                .await
                .expect("connecting neither succeeded nor failed in 60 s")
        })
    };
    // Creating the streams needs an authenticated connection.
    connect(format!("nats://tgrid:Secr3t@pw@127.0.0.1:{port}")).expect("the right credentials");

    let refused = connect(format!("nats://tgrid:Wr0ng@127.0.0.1:{port}")).expect_err("a wrong password");
    let message = refused.to_string();
    assert!(message.contains("nats://tgrid:***@127.0.0.1"), "{message}");
    assert!(!message.contains("Wr0ng"), "{message}");
    let anonymous = connect(format!("nats://127.0.0.1:{port}")).expect_err("no credentials");
    assert!(anonymous.to_string().contains(&format!("nats://127.0.0.1:{port}")), "{anonymous}");

    // A worker takes its address from the environment (not on its command line) and never
    // prints the password, even when it is refused.
    let out = Command::new(common::BIN)
        .args(["worker", "--name", "locked-out"])
        .env("TGRID_QUEUE", format!("nats://tgrid:Wr0ng@127.0.0.1:{port}"))
        .env("RUST_LOG", "debug")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("nats://tgrid:***@127.0.0.1"), "{stderr}");
    assert!(!stderr.contains("Wr0ng"), "{stderr}");
    drop(broker);
}

/// A job larger than the broker accepts (`max_payload`, 1 MiB by default) is refused at once with
/// the reason and the remedy, not retried against a broker that will always refuse it; the
/// broker stays usable.
#[test]
fn a_job_over_the_brokers_message_limit_is_a_clear_error() {
    let store = tempfile::tempdir().unwrap();
    let broker = nats::Broker::start(store.path());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let settings = QueueSettings {
            url: broker.url.parse().unwrap(),
            ack_wait: Duration::from_secs(3),
            job_deadline: DEADLINE,
        };
        let queue = JobQueue::connect(settings, JobMetrics::new()).await.unwrap();
        let child = |len: usize| ChildProof { kind: SubtreeKind::Chunk, bytes: vec![3; len] };
        let oversized = Job::Merge { left: child(700 << 10), right: child(700 << 10) };
        let started = Instant::now();
        let error = tokio::time::timeout(Duration::from_secs(30), queue.run(&oversized, 0))
            .await
            .expect("refused at once")
            .expect_err("over the limit")
            .to_string();
        assert!(error.contains("exceeds the broker's max_payload of 1048576 bytes"), "{error}");
        assert!(error.contains("a merge job of"), "{error}");
        assert!(started.elapsed() < Duration::from_secs(10), "not retried");
        // The broker stays usable: a job within the limit is queued (no worker runs here, so it
        // stays pending, and `run` keeps waiting for its outcome).
        let small = Job::Merge { left: child(100), right: child(100) };
        assert!(
            tokio::time::timeout(Duration::from_secs(3), queue.run(&small, 0)).await.is_err(),
            "waits for a worker"
        );
        let js = async_nats::jetstream::new(async_nats::connect(broker.url.as_str()).await.unwrap());
        let mut jobs = js.get_stream("TGRID_JOBS").await.unwrap();
        assert_eq!(jobs.info().await.unwrap().state.messages, 1, "only the small job was queued");
    });
    drop(broker);
}

/// A worker that takes a job and hangs while still reporting progress holds that job, never the
/// batch: past the job deadline the dispatcher queues the job again under a new id, and a
/// working worker proves it (issue 63).
#[test]
fn a_stuck_worker_holds_one_job_never_the_batch() {
    use async_nats::jetstream::consumer::{pull, AckPolicy, PullConsumer};
    use async_nats::jetstream::AckKind;
    use futures::StreamExt;

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let broker = nats::Broker::start(&d.join("jetstream"));
    let url = broker.url.clone();
    let (aggregator, proofs) = proven_tasks(d, 0x90, 1);
    let proof = &proofs[0];
    let deadline = Duration::from_secs(8);

    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let settings =
            QueueSettings { url: url.parse().unwrap(), ack_wait: Duration::from_secs(3), job_deadline: deadline };
        let queue = JobQueue::connect(settings, JobMetrics::new()).await.unwrap();
        // The stuck worker, on the workers' own consumer: takes the first job, reports progress
        // every second, never answers.
        let js = async_nats::jetstream::new(async_nats::connect(url.as_str()).await.unwrap());
        let config = pull::Config {
            durable_name: Some(WORKERS_CONSUMER.into()),
            ack_policy: AckPolicy::Explicit,
            ack_wait: Duration::from_secs(3),
            max_deliver: -1,
            ..Default::default()
        };
        let stream = js.get_stream(JOBS_STREAM).await.unwrap();
        let consumer: PullConsumer = stream.get_or_create_consumer(WORKERS_CONSUMER, config).await.unwrap();
        let (taken, is_taken) = tokio::sync::oneshot::channel();
        let stuck = tokio::spawn(async move {
            let mut messages =
                consumer.fetch().max_messages(1).expires(Duration::from_secs(120)).messages().await.unwrap();
            let job = messages.next().await.expect("a job").unwrap();
            let _ = taken.send(());
            loop {
                let _ = job.ack_with(AckKind::Progress).await;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        let started = Instant::now();
        // A working worker joins once the stuck one holds the job.
        let rescuer = async {
            is_taken.await.unwrap();
            worker(&url, "rescuer")
        };
        let joined = async { tokio::join!(aggregate(&aggregator, &queue, std::slice::from_ref(proof), &[]), rescuer) };
        let (batch, _rescuer) =
            tokio::time::timeout(Duration::from_secs(300), joined).await.expect("the batch waited on the stuck job");
        let batch = batch.unwrap();
        assert!(started.elapsed() >= deadline, "the stuck job was queued again only past its deadline");
        let tally = queue.tally();
        assert_eq!(tally.keys().map(String::as_str).collect::<Vec<_>>(), ["rescuer"], "{tally:?}");
        let verified = aggregator.circuits().verify_batch(&batch, &aggregator.registry().root()).unwrap();
        assert_eq!(verified.batch_root, batch_root(&[aggregator.check(proof).unwrap().hash()]).unwrap());
        stuck.abort();
    });
    drop(broker);
}
