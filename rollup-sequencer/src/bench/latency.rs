//! `tgrid-sequencer bench --arrival-every S`: how long a batch takes from its close to a settleable
//! proof when its tasks arrive over time, as they do in service, rather than all at once.
//!
//! Each task arrives with its provider's leaf proof, S seconds after the previous one; the
//! sequencer checks the leaf and pushes it into an incremental tree, which merges equal subtrees
//! as soon as both exist (what the in-process service does while a batch is open; a job queue's
//! workers prove the same subtrees ahead). The batch closes when its last task arrives: only the
//! merges on that task's path remain, then (with a Groth16 key) the wrap. If the sequencer falls
//! behind the arrivals, the backlog is part of the measured latency.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;
use tgrid_aggregation::TaskLeaf;
use tgrid_circuits::TaskProof;
use tgrid_sequencer::{Aggregator, IncrementalTree};

use super::wrapping::Wrapping;

/// How the tasks arrive.
pub(crate) struct LatencyBench {
    /// Time between two arrivals.
    pub every: Duration,
}

/// Feeds the tasks at the set pace into an incremental tree and times close → root (and
/// root → Groth16 with `wrapping`). `leaf_bytes` are the providers' leaf proofs.
pub(crate) fn run(
    bench: &LatencyBench,
    aggregator: &Aggregator,
    proofs: &[TaskProof],
    leaf_bytes: &[Vec<u8>],
    expected: &[TaskLeaf],
    wrapping: Option<&Wrapping>,
) -> Result<serde_json::Value> {
    let (arrivals, arrived) = mpsc::channel::<(usize, Instant)>();
    let every = bench.every;
    let n = proofs.len();
    let started = Instant::now();
    let feeder = std::thread::spawn(move || {
        for i in 0..n {
            let due = started + every * i as u32;
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
            if arrivals.send((i, Instant::now())).is_err() {
                return;
            }
        }
    });

    let mut tree = IncrementalTree::new(aggregator);
    let mut closed_at = None;
    let mut most_waiting = 0usize;
    let mut waited = Duration::ZERO;
    for (i, at) in arrived.iter() {
        most_waiting = most_waiting.max(backlog(i, started.elapsed(), every, n));
        waited += at.elapsed();
        let (leaf, subtree) = aggregator.adopt_leaf(&proofs[i], &leaf_bytes[i])?;
        tree.push(leaf, subtree)?;
        if i + 1 == n {
            closed_at = Some(at);
        }
    }
    feeder.join().map_err(|_| anyhow::anyhow!("the arrival thread panicked"))?;
    let closed_at = closed_at.context("the last task never arrived")?;
    let batch = tree.finish()?;
    let close_to_root = closed_at.elapsed().as_secs_f64();
    super::check_batch(aggregator, &batch, expected)?;

    let mut report = json!({
        "arrival_every_seconds": every.as_secs_f64(),
        "open_seconds": (closed_at - started).as_secs_f64(),
        "mean_wait_before_check_seconds": waited.as_secs_f64() / n as f64,
        "most_tasks_waiting": most_waiting,
        "close_to_root_seconds": close_to_root,
    });
    if let Some(wrapping) = wrapping {
        let wrapped = wrapping.wrap(&batch)?;
        report["close_to_groth16_seconds"] = json!(close_to_root + wrapped.seconds);
        report["wrap"] = wrapped.report;
    }
    Ok(report)
}

/// How many tasks arrived after task `i` and wait while it is taken up `elapsed` after the first
/// arrival: the sequencer's backlog.
fn backlog(i: usize, elapsed: Duration, every: Duration, n: usize) -> usize {
    let scheduled = (elapsed.as_secs_f64() / every.as_secs_f64()) as usize + 1;
    scheduled.min(n).saturating_sub(i + 1)
}

#[cfg(test)]
mod tests {
    use super::backlog;
    use std::time::Duration;

    #[test]
    fn the_backlog_counts_the_tasks_scheduled_after_the_one_taken_up() {
        let (every, s) = (Duration::from_secs(4), Duration::from_secs);
        assert_eq!(backlog(0, s(0), every, 64), 0);
        // Task 3 taken up at 20 s: tasks 4 and 5 (due at 16 and 20 s) wait.
        assert_eq!(backlog(3, s(20), every, 64), 2);
        // Never more than the batch holds.
        assert_eq!(backlog(60, s(1000), every, 64), 3);
        // Taken up before its own arrival time cannot be negative.
        assert_eq!(backlog(10, s(4), every, 64), 0);
    }
}
