//! [GradBench](https://github.com/gradbench/gradbench)'s twelve evals written with shade,
//! and the GradBench tool that serves them ([`tool`], behind the `shade-gradbench`
//! binary).
//!
//! # One module per eval, two engines
//!
//! `gradbench/<eval>.rs` holds the eval's mathematics in plain Rust, depending on
//! `std` and `shade_autodiff` only (no JSON, nothing of the tool), in the two forms the
//! two engines differentiate:
//!
//! - a plain `f64` function carrying `#[autodiff_reverse]` / `#[autodiff_forward]`:
//!   the compile-time engine (`--engine macro`) calls its generated derivative, and the
//!   function itself is that engine's primal;
//! - a function generic over [`Real`](shade_autodiff::scalar::Real) (suffix `_tape`):
//!   shade's run-time scalar layer (`--engine tape`) evaluates it at `f64` for the
//!   primal and at `Var` / `Dual` / `DualVec` (and their nestings) for the derivatives.
//!
//! The two forms are the same formula written twice, because the compile-time engine
//! differentiates `f64` code and the tape needs the generic one; each module has a test
//! that they agree (values and derivatives). Where the compile-time subset cannot
//! express a function (a second derivative, nested derivatives), the module has the
//! tape form only and the tool says so ([`tool::MODULES`]).
//!
//! `gmm.rs`, `kmeans.rs`, `lse.rs` and `lstm.rs` are also compiled into
//! `shade-autodiff-macros`' tests (and `gmm.rs` into `shade-autodiff`'s) by `#[path]`,
//! which is why these files refer to nothing outside themselves but `std`,
//! `shade_autodiff` and their sibling [`support`] (the generator and the checks their
//! tests share, included next to them there too). `gmm.rs` is also the `gmm` bench's
//! objective, which `cargo xtask bench --peers` compares with JAX and PyTorch.
//!
//! The tool's side of each eval (reading the eval's JSON input, choosing the function
//! for the engine, writing the output, and the tests of each derivative against
//! central differences) is `gradbench/tool/<eval>.rs`.

// Index loops are the form the compile-time engine differentiates (iterator adaptors
// are outside its subset); the argument lists are GradBench's.
#![allow(clippy::needless_range_loop, clippy::too_many_arguments)]

pub mod ba;
pub mod det;
pub mod gmm;
pub mod hello;
pub mod ht;
pub mod kmeans;
pub mod llsq;
pub mod lse;
pub mod lstm;
pub mod ode;
pub mod optimise;
pub mod particle;
pub mod saddle;
pub mod support;
pub mod tool;

pub use support::Lcg;
