//! Provers a malicious party could run, for soundness tests: each builds a proof from a wrong
//! witness or a circuit with a constraint cut, which the honest verifier must reject.

use plonky2::iop::witness::WitnessWrite;
use tgrid_int8::commit::{OutputKey, Salt};
use tgrid_int8::infer;
use tgrid_int8::Privacy;

use super::TaskProver;
use crate::circuit::{prove_circuit, BuildOptions, Segment, SegmentCircuit};
use crate::error::{Error, Result};
use crate::files::TaskProof;
use crate::join::{JoinCircuit, Proven};

/// Soundness tests of one segment: a fault in the witness.
impl TaskProver {
    /// Proves a single-segment model with a deliberately wrong witness (soundness tests), with
    /// a malicious prover ([`crate::malicious`]) that lets a lookup read outside its table and
    /// connected wires differ where the fault needs it, so that the verifier sees the proof.
    ///
    /// A private prover's proof is private (a random input salt), its bytes checked by limbs.
    pub(crate) fn prove_with_fault(&self, input: &[i8], fault: (usize, crate::gadgets::Fault)) -> Result<TaskProof> {
        let segment = Segment::new(&self.model, 0..self.model.nodes.len());
        let build = |cut| {
            let options =
                BuildOptions { bind_task: true, fault: Some(fault), cut, privacy: self.privacy, ..Default::default() };
            SegmentCircuit::build(&self.model, segment.clone(), options)
        };
        let mut circuit = build(false)?;
        crate::testing::cut_copy_constraints(&mut circuit.data, build(true)?.data);
        let salt = Salt::random();
        let salt = self.privacy.zero_knowledge().then_some(&salt);
        let pw = circuit.witness(&[input], Some((&[1; 32], &[2; 20])), salt)?;
        let proof = crate::malicious::prove_admitting_any_byte(&mut circuit.data, pw)
            .map_err(|e| Error::Proving(e.to_string()))?;
        Ok(TaskProof::new(self.model_id, proof.to_bytes()))
    }
}

/// Soundness tests of the chain: proofs a malicious prover could build.
impl TaskProver {
    /// Proves a two-segment model whose second segment ran on the first segment's output with
    /// one value changed when `tamper` is set, and joins the two with a malicious prover that
    /// ignores the join's commitment link ([`crate::testing::cut_copy_constraints`]).
    pub(crate) fn prove_with_link_fault(&self, input: &[i8], tamper: bool) -> Result<TaskProof> {
        let trace = infer::run(&self.model, input)?;
        let segments = self.plan.segments(&self.model);
        assert_eq!(segments.len(), 2, "a two-segment plan");
        let mut live: Vec<Vec<Vec<i8>>> =
            segments.iter().map(|s| s.live_in.iter().map(|&t| trace.tensors[t].clone()).collect()).collect();
        if tamper {
            live[1][0][0] = live[1][0][0].wrapping_add(1);
        }
        let mut proven = Vec::new();
        for (segment, live) in segments.into_iter().zip(&live) {
            let circuit = SegmentCircuit::build(&self.model, segment, BuildOptions::default())?;
            let live: Vec<&[i8]> = live.iter().map(Vec::as_slice).collect();
            let proof = prove_circuit(&circuit.data, circuit.witness(&live, None, None)?)?;
            proven.push(Proven { proof, verifier: circuit.data.verifier_data() });
        }
        let (first, second) = (&proven[0], &proven[1]);
        let public = Privacy::Public;
        let mut join = JoinCircuit::build_linked(&self.model, &first.verifier, &second.verifier, true, public, true)?;
        let cut = JoinCircuit::build_linked(&self.model, &first.verifier, &second.verifier, true, public, false)?;
        crate::testing::cut_copy_constraints(&mut join.data, cut.data);
        let joined = join.prove(first, second, Some((&[1; 32], &[2; 20])))?;
        Ok(TaskProof::new(self.model_id, joined.proof.to_bytes()))
    }
}

/// Soundness tests of private tasks: proofs whose output key is not the input salt's.
impl TaskProver {
    /// Proves a single-segment private task; with `chosen`, a malicious prover encrypts the
    /// output under that key instead of the input salt's (the build's key wiring cut,
    /// [`crate::testing::cut_copy_constraints`]).
    pub(crate) fn prove_with_output_key(
        &self,
        input: &[i8],
        salt: &Salt,
        chosen: Option<&OutputKey>,
    ) -> Result<TaskProof> {
        let segment = Segment::new(&self.model, 0..self.model.nodes.len());
        let build = |cut_output_key| {
            let options =
                BuildOptions { bind_task: true, privacy: Privacy::Private, cut_output_key, ..Default::default() };
            SegmentCircuit::build(&self.model, segment.clone(), options)
        };
        let mut circuit = build(false)?;
        let task = Some((&[1u8; 32], &[2u8; 20]));
        let pw = match chosen {
            None => circuit.witness(&[input], task, Some(salt))?,
            Some(key) => {
                let cut = build(true)?;
                let mut pw = cut.witness(&[input], task, Some(salt))?;
                for (t, v) in cut.cut_key.expect("a cut key").into_iter().zip(key.to_elements()) {
                    pw.set_target(t, v).map_err(|e| Error::Proving(e.to_string()))?;
                }
                crate::testing::cut_copy_constraints(&mut circuit.data, cut.data);
                pw
            }
        };
        let proof = prove_circuit(&circuit.data, pw)?;
        Ok(TaskProof::new(self.model_id, proof.to_bytes()))
    }

    /// Proves a two-segment private task whose second segment takes the output key of
    /// `second_salt` (the first derives it from `salt`) and joins them, with the join's
    /// commitment link (`link`) or a malicious prover without it.
    pub(crate) fn prove_private_chain(
        &self,
        input: &[i8],
        salt: &Salt,
        second_salt: &Salt,
        link: bool,
    ) -> Result<TaskProof> {
        let trace = infer::run(&self.model, input)?;
        let segments = self.plan.segments(&self.model);
        assert_eq!(segments.len(), 2, "a two-segment plan");
        let mut proven = Vec::new();
        for (segment, salt) in segments.into_iter().zip([salt, second_salt]) {
            let live: Vec<&[i8]> = segment.live_in.iter().map(|&t| trace.tensors[t].as_slice()).collect();
            let circuit = SegmentCircuit::build(&self.model, segment, BuildOptions::binding(false, Privacy::Private))?;
            let proof = prove_circuit(&circuit.data, circuit.witness(&live, None, Some(salt))?)?;
            proven.push(Proven { proof, verifier: circuit.data.verifier_data() });
        }
        let (first, second) = (&proven[0], &proven[1]);
        let private = Privacy::Private;
        let mut join = JoinCircuit::build_linked(&self.model, &first.verifier, &second.verifier, true, private, true)?;
        if !link {
            let cut = JoinCircuit::build_linked(&self.model, &first.verifier, &second.verifier, true, private, false)?;
            crate::testing::cut_copy_constraints(&mut join.data, cut.data);
        }
        let joined = join.prove(first, second, Some((&[1; 32], &[2; 20])))?;
        Ok(TaskProof::new(self.model_id, joined.proof.to_bytes()))
    }
}
