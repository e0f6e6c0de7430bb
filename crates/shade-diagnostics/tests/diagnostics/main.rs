//! The integration tests of shade-diagnostics, one module per area, in one test binary
//! (one link instead of one per file; `cargo test -p shade-diagnostics --test
//! diagnostics`).
//!
//! `cargo xtask compat` runs the `generated` module alone (`-- generated::`) to rewrite
//! the generated pages.

mod backends;
mod checks;
mod corpus;
mod generated;
mod gradcheck;
