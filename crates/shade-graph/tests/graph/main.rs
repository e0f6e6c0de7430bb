//! The integration tests of shade-graph, one module per area, in one test binary
//! (one link instead of one per file; `cargo test -p shade-graph --test graph`).
//!
//! Proptest keeps its regression seeds for `tests/graph/<module>.rs` in
//! `tests/proptest-regressions/<module>.txt` (beside the folder holding `main.rs`).

mod generators;
mod graph_api;
mod loader;
mod no_panic;
mod properties;
mod readers;
mod sampling;
mod trust;
