//! Shared helpers for shade's criterion benches: problem generators and work counts.
//!
//! The benches themselves live in `benches/benches/`; `cargo xtask bench` runs them
//! and writes `docs/benchmarks.md` from criterion's estimates.
