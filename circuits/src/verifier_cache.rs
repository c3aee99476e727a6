//! A task circuit's verifier data kept between runs in a circuit cache. A [`TaskVerifier`]
//! rebuilds the model's circuits from its weights, which for a transformer is a full circuit
//! build of tens of thousands of rows (16.5 s for the character GPT) paid by every sequencer,
//! worker and `registry add` that meets the model, to keep a few kilobytes: the final circuit's
//! verifier data. A process with a cache keeps those kilobytes under a key naming the model
//! (its id, the SHA-256 of its canonical encoding), the segment plan and the privacy mode; the
//! auditor's tools enable no cache and keep rebuilding.
//!
//! [`TaskVerifier`]: crate::TaskVerifier

use plonky2::plonk::circuit_data::VerifierCircuitData;
use tgrid_circuit_cache::{CircuitCache, CircuitKey};

use crate::gates::{
    ByteRangeGate, ByteTableGate, DotProductGate, PoseidonHeadGate, PoseidonLowDegreeGate, PoseidonTailGate,
    QuotientMaskGate, RequantizeGate, WeightedSumGate,
};
use crate::plan::SegmentPlan;
use crate::{Result, C, D, F};
use tgrid_int8::Privacy;

/// Serializes the gates of task circuits: those of the cache's own serializer (plonky2's, for
/// lookups and the joins' recursive verifiers) and this crate's custom gates.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct TaskGates;

tgrid_circuit_cache::gate_serializer!(
    TaskGates,
    ByteRangeGate,
    ByteTableGate,
    DotProductGate,
    PoseidonHeadGate,
    PoseidonTailGate,
    PoseidonLowDegreeGate,
    QuotientMaskGate,
    RequantizeGate,
    WeightedSumGate
);

/// What a task verifier keeps of the circuits it builds.
pub(crate) struct BuiltVerifier {
    pub(crate) verifier: VerifierCircuitData<F, C, D>,
    pub(crate) segment_rows: Vec<usize>,
}

/// The verifier data of `model_id`'s tasks of mode `privacy` cut by `plan`: from `cache` if it
/// holds an intact entry, else from `build` (stored on the way).
pub(crate) fn fetch_or_build(
    cache: Option<&CircuitCache>,
    model_id: [u8; 32],
    plan: &SegmentPlan,
    privacy: Privacy,
    build: impl FnOnce() -> Result<BuiltVerifier>,
) -> Result<BuiltVerifier> {
    let Some(cache) = cache else { return build() };
    let mut key = CircuitKey::new(format!("task-{}", privacy.name())).with(model_id);
    for cut in &plan.cuts {
        key = key.with((*cut as u64).to_le_bytes());
    }
    let kind = format!("task verifier data {}", std::any::type_name::<C>());
    Ok(cache.try_fetch_or_make(&kind, &key, decode, build, encode)?.0)
}

fn encode(built: &BuiltVerifier) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    out.extend_from_slice(&(built.segment_rows.len() as u64).to_le_bytes());
    for rows in &built.segment_rows {
        out.extend_from_slice(&(*rows as u64).to_le_bytes());
    }
    let data = built.verifier.to_bytes(&TaskGates).map_err(|e| format!("cannot serialize the verifier data: {e:?}"))?;
    out.extend_from_slice(&data);
    Ok(out)
}

fn decode(bytes: &[u8]) -> Result<BuiltVerifier, String> {
    let word = |at: usize| -> Result<u64, String> {
        bytes
            .get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .ok_or_else(|| "truncated entry".to_string())
    };
    let segments = word(0)?;
    // Each segment's row count takes 8 bytes: refuse counts the entry cannot hold.
    if segments == 0 || segments > (bytes.len() as u64) / 8 {
        return Err(format!("{segments} segments"));
    }
    let segment_rows = (0..segments as usize).map(|i| word(8 + 8 * i).map(|r| r as usize)).collect::<Result<_, _>>()?;
    let start = 8 + 8 * segments as usize;
    let verifier = VerifierCircuitData::from_bytes(bytes[start..].to_vec(), &TaskGates)
        .map_err(|e| format!("cannot parse the verifier data: {e:?}"))?;
    Ok(BuiltVerifier { verifier, segment_rows })
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::SeedableRng;
    use tgrid_circuit_cache::CircuitCache;

    use crate::testing::tiny_model;
    use crate::tests::{cache_entries as entries, random_input, PROVIDER, TASK};
    use crate::{SegmentPlan, TaskProver, TaskVerifier};
    use tgrid_int8::Privacy;

    #[test]
    fn a_cached_task_verifier_is_the_rebuilt_one_and_checks_proofs_alike() {
        let root = tempfile::tempdir().unwrap();
        let cache = CircuitCache::open(root.path()).unwrap();
        let model = tiny_model(6);
        let x = random_input(&mut StdRng::seed_from_u64(5), model.input_len());
        for (n, plan) in [SegmentPlan::default(), SegmentPlan { cuts: vec![3] }].into_iter().enumerate() {
            let prover = TaskProver::new(model.clone(), plan.clone()).unwrap();
            let (proof, _, _) = prover.prove(&x, TASK, PROVIDER, &mut |_, _, _| {}).unwrap();
            let rebuilt = TaskVerifier::with_cache(&model, &plan, Privacy::Public, None).unwrap();
            let stored = TaskVerifier::with_cache(&model, &plan, Privacy::Public, Some(&cache)).unwrap();
            let after_store = entries(&cache);
            assert_eq!(after_store.len(), n + 1, "one entry per plan");
            let loaded = TaskVerifier::with_cache(&model, &plan, Privacy::Public, Some(&cache)).unwrap();
            assert_eq!(entries(&cache), after_store, "the second verifier was loaded, not rebuilt and rewritten");
            for verifier in [&stored, &loaded] {
                assert_eq!(verifier.circuit_digest(), rebuilt.circuit_digest());
                assert_eq!(verifier.verifier_data().common, rebuilt.verifier_data().common);
                assert_eq!(verifier.segment_rows(), rebuilt.segment_rows());
                assert_eq!(verifier.verify(&proof).unwrap(), rebuilt.verify(&proof).unwrap());
                let mut tampered = proof.clone();
                let last = tampered.proof.len() - 1;
                tampered.proof[last] ^= 1;
                assert!(verifier.verify(&tampered).is_err());
            }
        }

        // Another model, or the private mode of this one, is another entry, never this one's.
        let other = TaskVerifier::with_cache(&tiny_model(7), &SegmentPlan::default(), Privacy::Public, Some(&cache));
        let private = TaskVerifier::with_cache(&model, &SegmentPlan::default(), Privacy::Private, Some(&cache));
        let public = TaskVerifier::with_cache(&model, &SegmentPlan::default(), Privacy::Public, Some(&cache)).unwrap();
        assert_ne!(other.unwrap().circuit_digest(), public.circuit_digest());
        assert_ne!(private.unwrap().circuit_digest(), public.circuit_digest());
        assert_eq!(entries(&cache).len(), 4);

        // A damaged entry is rebuilt (and rewritten), not used.
        let (path, inode) =
            entries(&cache).into_iter().find(|(p, _)| p.to_string_lossy().contains("task-private")).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let again = TaskVerifier::with_cache(&model, &SegmentPlan::default(), Privacy::Private, Some(&cache)).unwrap();
        let rebuilt = TaskVerifier::with_cache(&model, &SegmentPlan::default(), Privacy::Private, None).unwrap();
        assert_eq!(again.circuit_digest(), rebuilt.circuit_digest());
        let rewritten = entries(&cache).into_iter().find(|(p, _)| *p == path).unwrap();
        assert_ne!(rewritten.1, inode, "the damaged entry was rewritten");
    }
}
