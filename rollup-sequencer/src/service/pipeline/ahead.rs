//! Proving an open batch's subtrees ahead of its close on the job queue's workers.

use super::{OpenBatch, Result, ServiceError, Worker};
use crate::Aggregator;
use tracing::{info, warn};

/// Subtrees of the open batch whose proving on the job queue this process is following, by
/// task range. Dropping it (the batch closes, or is abandoned) stops following them; the jobs
/// stay queued, and the aggregation at close finds their outcomes.
#[derive(Default)]
pub(super) struct AheadJobs(Vec<(std::ops::Range<usize>, tokio::task::JoinHandle<()>)>);

impl Drop for AheadJobs {
    fn drop(&mut self) {
        for (_, follower) in &self.0 {
            follower.abort();
        }
    }
}

/// The maximal aligned blocks of `0..n` (sizes: the bits of `n`, largest first): each is a
/// subtree of the RFC 6962 tree of any batch holding at least those tasks.
fn aligned_blocks(n: usize) -> Vec<std::ops::Range<usize>> {
    let mut blocks = Vec::new();
    let mut start = 0;
    for bit in (0..usize::BITS).rev() {
        let size = 1usize << bit;
        if n & size != 0 {
            blocks.push(start..start + size);
            start += size;
        }
    }
    blocks
}

impl Worker {
    /// With a job queue: has the workers prove each aligned block of the open batch's tasks
    /// ([`aligned_blocks`]) as soon as it is complete, following it in the background, so that
    /// most merges are done when the batch closes rather than after (in-process, the
    /// [`IncrementalTree`](crate::IncrementalTree) does the same). Best effort: a failure is logged, and the
    /// aggregation at close proves, or finds done, every job itself.
    pub(super) fn prove_ahead(&self, aggregator: &Aggregator, open: &mut OpenBatch<'_>) {
        if let Err(e) = self.try_prove_ahead(aggregator, open) {
            warn!(batch = open.record.id, error = %e, "cannot prove the batch's subtrees ahead; the aggregation at close will");
        }
    }

    fn try_prove_ahead(&self, aggregator: &Aggregator, open: &mut OpenBatch<'_>) -> Result<()> {
        let Some(queue) = &self.queue else { return Ok(()) };
        // The followers outlive this call: they need the shared aggregator, not a borrow.
        let shared = [Some(self.shared.aggregator()), self.shared.previous_aggregator()];
        let Some(owned) = shared.into_iter().flatten().find(|a| std::ptr::eq(a.as_ref(), aggregator)) else {
            return Ok(());
        };
        for block in aligned_blocks(open.record.tasks.len()) {
            // Below a chunk there is nothing but leaves, which were queued as the tasks joined.
            if block.len() < tgrid_aggregation::CHUNK_LEAVES || open.ahead.0.iter().any(|(r, _)| *r == block) {
                continue;
            }
            // A block's sub-blocks are part of it: their followers are no longer needed.
            open.ahead.0.retain(|(r, follower)| {
                let inside = block.start <= r.start && r.end <= block.end;
                if inside {
                    follower.abort();
                }
                !inside
            });
            // As checked when they joined: the batch's registry has not moved since.
            let joined = open.joined.get(block.clone()).ok_or_else(|| {
                ServiceError::Store(format!("the open batch holds {} joined tasks", open.joined.len()))
            })?;
            let proofs = joined.iter().map(|t| t.proof.clone()).collect::<Vec<_>>();
            let provided = joined.iter().map(|t| t.provider_leaf.clone()).collect::<Vec<_>>();
            let (aggregator, queue) = (owned.clone(), queue.clone());
            let (batch, range, metric) = (open.record.id, block.clone(), self.shared.metrics.subtrees_ahead.clone());
            info!(batch = open.record.id, tasks = ?block, "handing a complete subtree of the open batch to the workers");
            let follower = self.rt.spawn(async move {
                match crate::jobs::prove_ahead(aggregator, queue, proofs, provided).await {
                    Ok(()) => {
                        metric.with_label_values(&["proven"]).inc();
                        info!(batch, tasks = ?range, "subtree proven while the batch is open");
                    }
                    Err(e) => {
                        metric.with_label_values(&["failed"]).inc();
                        warn!(batch, tasks = ?range, error = %e, "proving a subtree ahead failed; the batch's aggregation will");
                    }
                }
            });
            open.ahead.0.push((block, follower));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::aligned_blocks;

    #[test]
    fn aligned_blocks_are_the_bits_of_the_count_largest_first() {
        assert!(aligned_blocks(0).is_empty());
        assert_eq!(aligned_blocks(1), vec![0..1]);
        assert_eq!(aligned_blocks(4), vec![0..4]);
        assert_eq!(aligned_blocks(6), vec![0..4, 4..6]);
        assert_eq!(aligned_blocks(7), vec![0..4, 4..6, 6..7]);
        assert_eq!(aligned_blocks(64), vec![0..64]);
        // Each block is a subtree of the RFC 6962 tree of any larger batch: it starts at a
        // multiple of its size, a power of two.
        for n in 1..200usize {
            let blocks = aligned_blocks(n);
            assert_eq!(blocks.iter().map(|b| b.len()).sum::<usize>(), n);
            for b in blocks {
                assert!(b.len().is_power_of_two() && b.start % b.len() == 0, "{n}: {b:?}");
            }
        }
    }
}
