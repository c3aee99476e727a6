//! Prints, as JSON, the degrees and proving seconds of the wrap layers over a one-task batch of
//! a tiny model, for the production and the test FRI parameters.

use tgrid_aggregation::{AggregationCircuits, LeafCircuit, Registry, RegistryEntry};
use tgrid_circuits::testing::{random_input, tiny_model};
use tgrid_circuits::{SegmentPlan, TaskProver, TaskVerifier};
use tgrid_wrap::{FinalFri, WrapCircuits};

fn main() -> anyhow::Result<()> {
    let model = tiny_model(1);
    let prover = TaskProver::new(model.clone(), SegmentPlan::default())?;
    let leaf_circuit = LeafCircuit::new(TaskVerifier::new(&model, &SegmentPlan::default())?)?;
    let registry =
        Registry::new([RegistryEntry { model_id: leaf_circuit.model_id(), leaf_digest: leaf_circuit.digest() }])?;
    let aggregation = AggregationCircuits::build()?;
    let (proof, _, _) = prover.prove(&random_input(3, 16), [7; 32], [0x42; 20], &mut |_, _, _| {})?;
    let leaf = aggregation.prove_chunk(&[leaf_circuit.prove(&proof)?.1], &registry)?;
    for (name, fri) in [("production", FinalFri::PRODUCTION), ("insecure_test", FinalFri::INSECURE_TEST)] {
        let t = std::time::Instant::now();
        let wrap = WrapCircuits::build(&aggregation, fri)?;
        let build = t.elapsed().as_secs_f64();
        let wrapped = wrap.wrap(&aggregation, &leaf)?;
        let t = std::time::Instant::now();
        wrap.verify(&wrapped.proof)?;
        let verify = t.elapsed().as_secs_f64();
        println!(
            "{{\"fri\":\"{name}\",\"degree_bits\":{:?},\"build_s\":{build:.2},\"settle_s\":{:.2},\"shrink_s\":{:.2},\"final_s\":{:.2},\"final_verify_s\":{verify:.3},\"final_proof_bytes\":{}}}",
            wrap.degree_bits(),
            wrapped.timings.settle,
            wrapped.timings.shrink,
            wrapped.timings.last,
            wrapped.proof.to_bytes().len()
        );
    }
    Ok(())
}
