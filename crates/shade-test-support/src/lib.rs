//! What the tests of several shade crates share, so that each helper exists once.
//!
//! - [`alloc`]: a counting global allocator that counts per thread, for the tests that
//!   prove a warm (prepared) call allocates nothing.
//! - [`strategies`]: proptest strategies for arrays, the case count that
//!   `cargo xtask fuzz` raises through `PROPTEST_CASES`, and `no_panic` for the
//!   no-panic properties.
//! - [`close`]: the mixed relative/absolute comparison every gradient check uses.
//!
//! A dev-dependency only (`publish = false`): no shipped crate depends on it, and it
//! depends on no shade crate, so any crate's tests may use it without a cycle.

pub mod alloc;
pub mod strategies;

/// `|a - b| <= tol · (1 + max(|a|, |b|))`: relative for large values, absolute near 0
/// (so `tol = 1e-6` accepts `1e6` against `1e6 + 0.5`, and `0` against `1e-9`).
pub fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}
