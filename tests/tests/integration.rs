//! Every integration test of this package in one test binary: one compilation of the shared
//! helpers and one link instead of one per file (a clean `make test` built about 2 minutes less).
//! Each file below stays a module of its own, and its tests run side by side with the others'.

#[path = "../../rollup-sequencer/tests/fault_proxy/mod.rs"]
mod fault_proxy;
#[path = "../../rollup-sequencer/tests/nats/mod.rs"]
mod nats;
mod onnx_graph;
mod support;

mod corpus;
mod devnet;
mod digests;
mod division;
mod fixtures;
mod gpt_devnet;
mod layering;
mod ports;
mod settle_cli;
mod written_graphs;
