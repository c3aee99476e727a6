//! Every integration test of this package in one test binary: one compilation of the shared
//! helpers and one link instead of one per file, which is most of a clean `make test`'s build time.
//! Each file below stays a module of its own, and its tests run side by side with the others'.

mod cli;
mod market;
mod registry;
