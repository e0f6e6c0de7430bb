//! Activity-annotated automatic differentiation in the style of Enzyme.
//!
//! Arguments are annotated with the same vocabulary in both layers of the core:
//!
//! - [`Const`]: not differentiated; no shadow, no tape entries for work that only
//!   depends on constants.
//! - [`Active`]: a by-value scalar whose derivative is returned (reverse mode).
//! - [`Duplicated`]: a buffer with a caller-owned shadow; reverse mode accumulates
//!   (`+=`) into the shadow, forward mode reads it as the tangent.
//! - [`DuplicatedNoNeed`]: as [`Duplicated`], but the primal result is not needed.
//! - [`BatchDuplicated`]: a buffer with `N` shadows, differentiated in one pass.
//!
//! The modes are the zero-sized markers [`Forward`], [`ForwardWithPrimal`], [`Reverse`]
//! and [`ReverseWithPrimal`].
//!
//! Errors that user input can cause are values of [`AdError`], each with a stable
//! code (`SHADE-E01xx`).

mod activity;
pub mod compiled;
mod error;
mod mode;
pub mod scalar;
pub mod tensor;

pub use activity::{Active, BatchDuplicated, Const, Duplicated, DuplicatedNoNeed};
pub use error::{AdError, AdResult, Shape};
pub use mode::{Forward, ForwardWithPrimal, Mode, ModeKind, Reverse, ReverseWithPrimal};
/// Compile-time forward mode with `std::autodiff`'s surface (see [`shade_autodiff_macros`]).
pub use shade_autodiff_macros::autodiff_forward;
/// Compile-time reverse mode with `std::autodiff`'s surface (see [`shade_autodiff_macros`]).
pub use shade_autodiff_macros::autodiff_reverse;

// Public dependencies whose types appear in this crate's API, re-exported so that one
// dependency is enough (versions: README.md, "Re-exported dependencies").
/// The array crate of the tensor layer (`ArrayD`, `ArrayBase`): the version this
/// crate's API takes and returns.
pub use ndarray;
/// Number traits: [`scalar::Real`] builds on `num_traits::Float`.
pub use num_traits;
/// The RNG traits taken by `Tape::dropout`.
pub use rand;
/// The sparse-matrix crate: `tensor::SparseMatrix::new` takes an `sprs::CsMat`.
pub use sprs;
