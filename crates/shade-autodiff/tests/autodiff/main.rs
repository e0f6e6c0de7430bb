//! The integration tests of shade-autodiff, one module per area, in one test binary
//! (one link instead of one per file; `cargo test -p shade-autodiff --test autodiff`):
//! `scalar_*` for the scalar layer, `tensor_*` for the tensor layer, `check` the
//! tensor layer's shared gradient checker.
//!
//! The binary's global allocator counts per thread, on request
//! (`shade_test_support::alloc`), so the allocation tests count their own calls only,
//! whatever the other tests do at the same time.
//!
//! Proptest keeps its regression seeds for `tests/autodiff/<module>.rs` in
//! `tests/proptest-regressions/<module>.txt` (beside the folder holding `main.rs`).

#[global_allocator]
static ALLOC: shade_test_support::alloc::CountingAlloc = shade_test_support::alloc::CountingAlloc;

mod check;
mod scalar_activities;
mod scalar_alloc;
mod scalar_composed;
mod scalar_elementary;
mod scalar_fused;
mod scalar_gmm;
mod scalar_ui;
mod tensor_alloc;
mod tensor_anomaly;
mod tensor_elementwise;
mod tensor_entry;
mod tensor_fastpaths;
mod tensor_fuzz;
mod tensor_fuzz_index;
mod tensor_graph;
mod tensor_index_types;
mod tensor_shape;
mod tensor_trust;
