//! The integration tests of shade-interface, one module per area, in one test binary
//! (one link instead of one per file; `cargo test -p shade-interface --test
//! interface`).
//!
//! The binary's global allocator is `alloc`'s counting one; it counts per thread, so only
//! the allocation test's own calls are counted. `cargo xtask compat` runs the `docs`
//! module alone (`-- docs::`) to rewrite `docs/backends.md`.

mod alloc;
mod compile_fail;
mod docs;
mod explain;
mod harness;
mod sparse;
mod tensor;
