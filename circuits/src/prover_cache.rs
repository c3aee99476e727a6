//! Task circuits kept between runs in a circuit cache, with the targets their prover fills.
//! Building a model's circuit commits to its weights (an FFT and a Merkle tree over the
//! low-degree extension of every constant and permutation column): 16.5 s for the character
//! GPT's 65,536 rows, paid by every `tgrid-prover prove` and daemon start. A model cut into
//! segments pays it for every segment and every join at every task (the prover keeps no more
//! than one segment's circuit in memory). With a cache, a process loads what it built before:
//! the single circuit of a one-segment model, or each segment and join circuit in turn (still
//! one at a time).
//!
//! Entries are keyed by the task model id (the SHA-256 of the model's canonical encoding, weights
//! included, or its private variant), the privacy mode and, for a segment, its node range, for a join, the digests of
//! the two circuits it verifies; all under the running executable's digest (the cache's own
//! keying): a stale circuit cannot be loaded. A cached circuit is trusted like the binary
//! (docs/SECURITY.md): at worst it makes its owner's proofs fail verification, never what a
//! verifier accepts, since verifiers rebuild or check the circuit they verify against.

use std::collections::BTreeMap;

use plonky2::iop::generator::WitnessGeneratorRef;
use plonky2::plonk::circuit_data::{CircuitData, CommonCircuitData};
use plonky2::util::serialization::{Buffer, IoError, IoResult, Read, Remaining, WitnessGeneratorSerializer, Write};
use tgrid_circuit_cache::{CircuitCache, CircuitKey, Generators};

use crate::circuit::{BindingTargets, SecretTargets, SegmentCircuit};
use crate::gates::ReadGenerator;
use crate::join::JoinCircuit;
use crate::verifier_cache::TaskGates;
use crate::{Result, C, D, F};
use tgrid_int8::Privacy;

/// Every witness generator this crate's circuits use, by id (a tag is a position here: an
/// entry is only read by the executable that wrote it).
fn own_generators() -> &'static [(&'static str, ReadGenerator)] {
    static ALL: std::sync::LazyLock<Vec<(&'static str, ReadGenerator)>> = std::sync::LazyLock::new(|| {
        [crate::gates::GENERATORS, crate::gadgets::GENERATORS, crate::zero_knowledge::GENERATORS].concat()
    });
    &ALL
}

/// Serializes the witness generators of task circuits: plonky2's (the cache's own list) and
/// this crate's gates and hints.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct TaskGenerators;

/// The first byte of a serialized generator: which list it comes from.
const PLONKY2: u8 = 0;
const OWN: u8 = 1;

impl WitnessGeneratorSerializer<F, D> for TaskGenerators {
    fn read_generator(
        &self,
        buf: &mut Buffer<'_>,
        common: &CommonCircuitData<F, D>,
    ) -> IoResult<WitnessGeneratorRef<F, D>> {
        match buf.read_u8()? {
            PLONKY2 => Generators.read_generator(buf, common),
            OWN => {
                let tag = buf.read_u32()? as usize;
                let (_, read) = own_generators().get(tag).ok_or(IoError)?;
                read(buf, common)
            }
            _ => Err(IoError),
        }
    }

    fn write_generator(
        &self,
        buf: &mut Vec<u8>,
        generator: &WitnessGeneratorRef<F, D>,
        common: &CommonCircuitData<F, D>,
    ) -> IoResult<()> {
        let id = generator.0.id();
        match own_generators().iter().position(|(own, _)| *own == id) {
            Some(tag) => {
                buf.write_u8(OWN)?;
                buf.write_u32(tag as u32)?;
                generator.0.serialize(buf, common)
            }
            None => {
                buf.write_u8(PLONKY2)?;
                Generators.write_generator(buf, generator, common)
            }
        }
    }
}

/// Which task circuit an entry holds.
pub(crate) enum TaskCircuitKey<'a> {
    /// The circuit of a one-segment model (bound to the task).
    Whole,
    /// The circuit of the model's nodes `range` (a segment of a longer chain).
    Segment(std::ops::Range<usize>),
    /// The join of two proofs of circuits with these digests, the last join binding the task.
    Join { prev: &'a [F], seg: &'a [F], last: bool },
}

fn cache_key(model_id: [u8; 32], privacy: Privacy, which: &TaskCircuitKey<'_>) -> CircuitKey {
    let digest_bytes = |elements: &[F]| -> Vec<u8> {
        use plonky2::field::types::PrimeField64;
        elements.iter().flat_map(|e| e.to_canonical_u64().to_le_bytes()).collect()
    };
    let name = |what: &str| CircuitKey::new(format!("task-{what}-{}", privacy.name())).with(model_id);
    match which {
        TaskCircuitKey::Whole => name("prover"),
        TaskCircuitKey::Segment(range) => {
            name("segment").with((range.start as u64).to_le_bytes()).with((range.end as u64).to_le_bytes())
        }
        TaskCircuitKey::Join { prev, seg, last } => {
            name("join").with(digest_bytes(prev)).with(digest_bytes(seg)).with([u8::from(*last)])
        }
    }
}

/// A circuit kept in the cache with the targets its prover fills.
pub(crate) trait TaskCircuitEntry: Sized {
    /// What the entry holds, for the cache's keying and logs.
    const KIND: &'static str;
    /// The entry's bytes.
    fn encode(&self) -> Result<Vec<u8>, String>;
    /// The circuit and targets of an entry's bytes.
    fn decode(bytes: &[u8]) -> Result<Self, String>;
}

impl TaskCircuitEntry for SegmentCircuit {
    const KIND: &'static str = "task circuit";

    fn encode(&self) -> Result<Vec<u8>, String> {
        encode(self)
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        decode(bytes)
    }
}

impl TaskCircuitEntry for JoinCircuit {
    const KIND: &'static str = "task join circuit";

    fn encode(&self) -> Result<Vec<u8>, String> {
        encode_join(self)
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        decode_join(bytes)
    }
}

/// The circuit `which` of `model_id`'s tasks of mode `privacy`: from `cache` if it holds an
/// intact entry, else from `build` (stored on the way).
pub(crate) fn fetch_or_build<T: TaskCircuitEntry>(
    cache: Option<&CircuitCache>,
    model_id: [u8; 32],
    privacy: Privacy,
    which: TaskCircuitKey<'_>,
    build: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let Some(cache) = cache else { return build() };
    let kind = format!("{} {}", T::KIND, std::any::type_name::<C>());
    Ok(cache.try_fetch_or_make(&kind, &cache_key(model_id, privacy, &which), T::decode, build, T::encode)?.0)
}

fn io(e: IoError) -> String {
    format!("cannot write or read the targets: {e:?}")
}

/// An entry: the circuit's bytes, then the targets, then the targets' length (8 bytes, little
/// endian). The targets go last so that the circuit's bytes, most of the entry (hundreds of MB for
/// a transformer), are never copied.
fn encode_entry(data: &CircuitData<F, C, D>, targets: Vec<u8>) -> Result<Vec<u8>, String> {
    let mut out = data.to_bytes(&TaskGates, &TaskGenerators).map_err(|e| format!("cannot serialize: {e:?}"))?;
    out.extend_from_slice(&targets);
    out.extend_from_slice(&(targets.len() as u64).to_le_bytes());
    Ok(out)
}

/// The circuit of an entry and a reader of its targets.
fn decode_entry(bytes: &[u8]) -> Result<(CircuitData<F, C, D>, Buffer<'_>), String> {
    let (rest, trailer) =
        bytes.split_at_checked(bytes.len().saturating_sub(8)).ok_or("an entry shorter than its trailer")?;
    let trailer: [u8; 8] = trailer.try_into().map_err(|_| "an entry shorter than its trailer")?;
    let targets_len = usize::try_from(u64::from_le_bytes(trailer)).map_err(|_| "a targets length past usize")?;
    let circuit_len = rest.len().checked_sub(targets_len).ok_or("the targets' length runs past the entry")?;
    let (circuit, targets) = rest.split_at(circuit_len);
    let data = CircuitData::<F, C, D>::from_bytes(circuit, &TaskGates, &TaskGenerators)
        .map_err(|e| format!("cannot parse the circuit: {e:?}"))?;
    Ok((data, Buffer::new(targets)))
}

fn write_binding(out: &mut Vec<u8>, binding: &Option<BindingTargets>) -> Result<(), String> {
    match binding {
        None => out.write_bool(false).map_err(io),
        Some(binding) => {
            out.write_bool(true).map_err(io)?;
            out.write_target_array(&binding.task_id).map_err(io)?;
            out.write_target_array(&binding.provider).map_err(io)
        }
    }
}

fn read_binding(buf: &mut Buffer<'_>) -> Result<Option<BindingTargets>, String> {
    Ok(if buf.read_bool().map_err(io)? {
        Some(BindingTargets {
            task_id: buf.read_target_array().map_err(io)?,
            provider: buf.read_target_array().map_err(io)?,
        })
    } else {
        None
    })
}

fn encode_join(join: &JoinCircuit) -> Result<Vec<u8>, String> {
    let mut targets = Vec::new();
    targets.write_target_proof_with_public_inputs(&join.prev).map_err(io)?;
    targets.write_target_proof_with_public_inputs(&join.seg).map_err(io)?;
    write_binding(&mut targets, &join.binding)?;
    encode_entry(&join.data, targets)
}

fn decode_join(bytes: &[u8]) -> Result<JoinCircuit, String> {
    let (data, mut buf) = decode_entry(bytes)?;
    let prev = buf.read_target_proof_with_public_inputs().map_err(io)?;
    let seg = buf.read_target_proof_with_public_inputs().map_err(io)?;
    let binding = read_binding(&mut buf)?;
    if buf.remaining() != 0 {
        return Err("trailing bytes after the targets".into());
    }
    Ok(JoinCircuit {
        data,
        prev,
        seg,
        binding,
        #[cfg(test)]
        blinding: None,
    })
}

fn encode(circuit: &SegmentCircuit) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    out.write_usize(circuit.inputs.len()).map_err(io)?;
    for input in &circuit.inputs {
        out.write_target_vec(input).map_err(io)?;
    }
    out.write_usize(circuit.tensors.len()).map_err(io)?;
    for (&tensor, targets) in &circuit.tensors {
        out.write_usize(tensor).map_err(io)?;
        out.write_target_vec(targets).map_err(io)?;
    }
    write_binding(&mut out, &circuit.binding)?;
    let (tag, secret) = match circuit.secret {
        None => (0u8, None),
        Some(SecretTargets::InputSalt(t)) => (1, Some(t)),
        Some(SecretTargets::OutputKey(t)) => (2, Some(t)),
    };
    out.write_u8(tag).map_err(io)?;
    if let Some(targets) = secret {
        out.write_target_array(&targets).map_err(io)?;
    }
    encode_entry(&circuit.data, out)
}

fn decode(bytes: &[u8]) -> Result<SegmentCircuit, String> {
    let (data, mut buf) = decode_entry(bytes)?;
    // Every count is bounded by the bytes left (each target takes at least one byte).
    let count = |buf: &mut Buffer<'_>| -> Result<usize, String> {
        let n = buf.read_usize().map_err(io)?;
        (n <= buf.remaining()).then_some(n).ok_or_else(|| "a count runs past the entry".to_string())
    };
    let inputs = (0..count(&mut buf)?).map(|_| buf.read_target_vec().map_err(io)).collect::<Result<Vec<_>, _>>()?;
    let mut tensors = BTreeMap::new();
    for _ in 0..count(&mut buf)? {
        let tensor = buf.read_usize().map_err(io)?;
        tensors.insert(tensor, buf.read_target_vec().map_err(io)?);
    }
    let binding = read_binding(&mut buf)?;
    let secret = match buf.read_u8().map_err(io)? {
        0 => None,
        1 => Some(SecretTargets::InputSalt(buf.read_target_array::<4>().map_err(io)?)),
        2 => Some(SecretTargets::OutputKey(buf.read_target_array::<4>().map_err(io)?)),
        other => return Err(format!("unknown secret kind {other}")),
    };
    if buf.remaining() != 0 {
        return Err("trailing bytes after the targets".into());
    }
    Ok(SegmentCircuit {
        data,
        inputs,
        tensors,
        binding,
        secret,
        #[cfg(test)]
        cut_key: None,
        #[cfg(test)]
        blinding: None,
    })
}

#[cfg(test)]
mod tests {
    use tgrid_circuit_cache::CircuitCache;

    use crate::testing::{language_model, tiny_model};
    use crate::tests::{cache_entries as entries, PROVIDER, TASK};
    use crate::{infer, SegmentPlan, TaskProver, TaskVerifier};
    use tgrid_int8::commit::Salt;
    use tgrid_int8::Privacy;

    /// A prover with its circuit from the cache proves what a freshly built one proves: the
    /// same circuit (digest, targets, every generator of the lookups, the attention's hints and
    /// the blinding) and proofs the rebuilt circuit's verifier accepts with the same statement.
    #[test]
    fn a_cached_task_circuit_proves_what_the_built_one_proves() {
        let root = tempfile::tempdir().unwrap();
        let cache = CircuitCache::open(root.path()).unwrap();
        // Token ids 0..6 in offset form: valid inputs of both models.
        let tokens: Vec<i8> = [3u8, 1, 4, 1, 5, 2].iter().map(|&id| (id ^ 0x80) as i8).collect();
        let plan = SegmentPlan::default();
        for (n, model) in [tiny_model(6), language_model(31)].into_iter().enumerate() {
            let x: Vec<i8> = tokens.iter().copied().cycle().take(model.input_len()).collect();
            let built = TaskProver::new(model.clone(), plan.clone()).unwrap();
            let stored = TaskProver::with_cache(model.clone(), plan.clone(), Privacy::Public, Some(&cache)).unwrap();
            let after_store = entries(&cache);
            assert_eq!(after_store.len(), n + 1, "the circuit was stored");
            let loaded = TaskProver::with_cache(model.clone(), plan.clone(), Privacy::Public, Some(&cache)).unwrap();
            assert_eq!(entries(&cache), after_store, "the second prover was loaded, not rebuilt and rewritten");

            let built_circuit = built.single.as_ref().unwrap();
            let loaded_circuit = loaded.single.as_ref().unwrap();
            assert_eq!(loaded_circuit.data.verifier_only, built_circuit.data.verifier_only);
            assert_eq!(loaded_circuit.data.common, built_circuit.data.common);
            assert_eq!(loaded_circuit.inputs, built_circuit.inputs);
            assert_eq!(loaded_circuit.tensors, built_circuit.tensors);
            assert_eq!(loaded.circuit_trace(&x).unwrap(), infer::run(&model, &x).unwrap());

            // Proofs are not byte-for-byte reproducible (plonky2 grinds its proof-of-work nonce
            // on all cores and takes the first found): each is checked by the verifier instead.
            let verifier = TaskVerifier::new(&model, &plan).unwrap();
            let want = verifier.verify(&built.prove(&x, TASK, PROVIDER, &mut |_, _, _| {}).unwrap().0).unwrap();
            for prover in [&stored, &loaded] {
                let (proof, trace, _) = prover.prove(&x, TASK, PROVIDER, &mut |_, _, _| {}).unwrap();
                assert_eq!(verifier.verify(&proof).unwrap(), want);
                assert_eq!(trace, infer::run(&model, &x).unwrap());
            }
        }

        // The private mode is another entry; its loaded circuit keeps the blinding generators
        // and the secret's targets.
        let model = tiny_model(6);
        let x = crate::testing::random_input(2, model.input_len());
        let salt = Salt::random();
        let _ = TaskProver::with_cache(model.clone(), plan.clone(), Privacy::Private, Some(&cache)).unwrap();
        assert_eq!(entries(&cache).len(), 3);
        let private = TaskProver::with_cache(model.clone(), plan.clone(), Privacy::Private, Some(&cache)).unwrap();
        assert_eq!(entries(&cache).len(), 3);
        let (a, _, _) = private.prove_private(&x, &salt, TASK, PROVIDER, &mut |_, _, _| {}).unwrap();
        let (b, _, _) = private.prove_private(&x, &salt, TASK, PROVIDER, &mut |_, _, _| {}).unwrap();
        assert_ne!(a.proof, b.proof, "the blinding draws fresh randomness at every proof");
        let verifier = TaskVerifier::with_privacy(&model, &plan, Privacy::Private).unwrap();
        assert_eq!(verifier.verify(&a).unwrap(), verifier.verify(&b).unwrap());

        // A damaged entry is rebuilt (and rewritten), not used.
        let (path, inode) =
            entries(&cache).into_iter().find(|(p, _)| p.to_string_lossy().contains("task-prover-private")).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let again = TaskProver::with_cache(model.clone(), plan.clone(), Privacy::Private, Some(&cache)).unwrap();
        let rewritten = entries(&cache).into_iter().find(|(p, _)| *p == path).unwrap();
        assert_ne!(rewritten.1, inode, "the damaged entry was rewritten");
        let (c, _, _) = again.prove_private(&x, &salt, TASK, PROVIDER, &mut |_, _, _| {}).unwrap();
        verifier.verify(&c).unwrap();
    }

    /// A private model that reads tables and embeds tokens is kept too: its table gates, their
    /// generators (each naming its gate by index) and the one-hot hints load, and prove.
    #[test]
    fn a_private_model_with_tables_is_kept_and_proves() {
        let root = tempfile::tempdir().unwrap();
        let cache = CircuitCache::open(root.path()).unwrap();
        let model = language_model(32);
        let plan = SegmentPlan::default();
        let x: Vec<i8> = [3u8, 1, 4, 1, 5, 2].iter().map(|&id| (id ^ 0x80) as i8).collect();
        let stored = TaskProver::with_cache(model.clone(), plan.clone(), Privacy::Private, Some(&cache)).unwrap();
        let after_store = entries(&cache);
        let loaded = TaskProver::with_cache(model.clone(), plan.clone(), Privacy::Private, Some(&cache)).unwrap();
        assert_eq!(entries(&cache), after_store, "the second prover was loaded, not rebuilt");
        let common = &loaded.single.as_ref().unwrap().data.common;
        assert_eq!(common, &stored.single.as_ref().unwrap().data.common);
        assert!(common.gates.iter().any(|g| g.0.id().starts_with("ByteTableGate")));
        let verifier = TaskVerifier::with_privacy(&model, &plan, Privacy::Private).unwrap();
        let salt = Salt::random();
        let (proof, trace, _) = loaded.prove_private(&x, &salt, TASK, PROVIDER, &mut |_, _, _| {}).unwrap();
        assert_eq!(trace, infer::run(&model, &x).unwrap());
        verifier.verify(&proof).unwrap();
    }

    /// A segmented model's segment and join circuits are stored at its first proof and loaded
    /// at the next, and the proofs verify alike.
    #[test]
    fn a_segmented_models_circuits_are_kept_between_proofs() {
        let root = tempfile::tempdir().unwrap();
        let cache = CircuitCache::open(root.path()).unwrap();
        let model = tiny_model(6);
        let plan = SegmentPlan { cuts: vec![3] };
        let x = crate::testing::random_input(3, model.input_len());
        let verifier = TaskVerifier::new(&model, &plan).unwrap();
        let prover = TaskProver::with_cache(model.clone(), plan.clone(), Privacy::Public, Some(&cache)).unwrap();
        assert!(entries(&cache).is_empty(), "a segmented model's circuits are built when proving");
        let (first, _, stats) = prover.prove(&x, TASK, PROVIDER, &mut |_, _, _| {}).unwrap();
        assert_eq!(stats.segments, 2);
        let stored = entries(&cache);
        let count = |what: &str| stored.iter().filter(|(p, _)| p.to_string_lossy().contains(what)).count();
        assert_eq!((count("task-segment-public"), count("task-join-public")), (2, 1), "{stored:?}");
        let (second, _, _) = prover.prove(&x, TASK, PROVIDER, &mut |_, _, _| {}).unwrap();
        assert_eq!(entries(&cache), stored, "the second proof loaded every circuit");
        let again = TaskProver::with_cache(model.clone(), plan.clone(), Privacy::Public, Some(&cache)).unwrap();
        let (third, _, _) = again.prove(&x, TASK, PROVIDER, &mut |_, _, _| {}).unwrap();
        assert_eq!(entries(&cache), stored);
        let want = verifier.verify(&first).unwrap();
        assert_eq!(verifier.verify(&second).unwrap(), want);
        assert_eq!(verifier.verify(&third).unwrap(), want);
    }

    /// A cached circuit that proves what does not verify (simulated: its permutation data
    /// changed after loading) costs a rebuild, never a bad proof; without a cache the prover
    /// reports the failure instead of handing the proof out.
    #[test]
    fn a_proof_that_does_not_verify_is_proven_again_or_refused() {
        use plonky2::field::types::Field;

        let root = tempfile::tempdir().unwrap();
        let cache = CircuitCache::open(root.path()).unwrap();
        let model = tiny_model(6);
        let plan = SegmentPlan::default();
        let x = crate::testing::random_input(4, model.input_len());
        let tamper = |prover: &mut TaskProver| {
            let sigmas = &mut prover.single.as_mut().unwrap().data.prover_only.sigmas;
            sigmas[0][0] += crate::F::ONE;
        };
        let mut cached = TaskProver::with_cache(model.clone(), plan.clone(), Privacy::Public, Some(&cache)).unwrap();
        tamper(&mut cached);
        let (proof, _, _) = cached.prove(&x, TASK, PROVIDER, &mut |_, _, _| {}).unwrap();
        TaskVerifier::new(&model, &plan).unwrap().verify(&proof).unwrap();

        let mut uncached = TaskProver::new(model, plan).unwrap();
        tamper(&mut uncached);
        let err = uncached.prove(&x, TASK, PROVIDER, &mut |_, _, _| {}).unwrap_err().to_string();
        assert!(err.contains("does not verify") || err.contains("does not satisfy"), "{err}");
    }

    /// The entry decoder refuses what the cache's content check would only let through if the
    /// executable itself wrote it wrongly: truncations, extra bytes, a wrong targets length.
    #[test]
    fn a_truncated_or_extended_entry_is_refused() {
        let model = tiny_model(6);
        let prover = TaskProver::new(model, SegmentPlan::default()).unwrap();
        let bytes = super::encode(prover.single.as_ref().unwrap()).unwrap();
        assert!(super::decode(&bytes).is_ok());
        for len in [0, 7, 8, 100, bytes.len() / 2, bytes.len() - 1] {
            assert!(super::decode(&bytes[..len]).is_err(), "a {len}-byte prefix was accepted");
        }
        assert!(super::decode(&bytes[1..]).is_err(), "the entry without its first byte was accepted");
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(super::decode(&longer).is_err());
        // A targets length past the entry.
        let mut lying = bytes.clone();
        let at = lying.len() - 8;
        lying[at..].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(super::decode(&lying).is_err());
    }
}
