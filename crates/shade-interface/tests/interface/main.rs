//! The integration tests of shade-interface, one module per area, in one test binary
//! (one link instead of one per file; `cargo test -p shade-interface --test
//! interface`).
//!
//! The binary's global allocator counts per thread, on request
//! (`shade_test_support::alloc`), so the allocation tests count their own calls only,
//! whatever the other tests do at the same time.
//!
//! `cargo xtask compat` runs the `docs` module alone (`-- docs::`) to rewrite
//! `docs/backends.md`.

#[global_allocator]
static ALLOC: shade_test_support::alloc::CountingAlloc = shade_test_support::alloc::CountingAlloc;

mod alloc;
mod compile_fail;
mod compiled;
mod contexts;
mod docs;
mod explain;
mod harness;
mod jacobian;
mod sparse;
mod tensor;
