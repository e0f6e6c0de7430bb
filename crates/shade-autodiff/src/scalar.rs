//! The scalar layer: differentiate ordinary numeric code written once against [`Real`].
//!
//! - Number types: `f64` (the primal), [`Dual<T>`] and [`DualVec<T, N>`] (forward mode,
//!   one or `N` tangents), [`Var`] (reverse mode, recorded on a reusable [`Tape`]), and
//!   their nestings (`Dual<Dual<f64>>` for second derivatives, `Var<Dual<f64>>` for
//!   Hessian-vector products), and [`Tracer`] (the sparsity-detection number: the set of
//!   inputs a value depends on; [`jacobian_sparsity`], [`hessian_sparsity`] and the
//!   output check [`probe_outputs`] run on it).
//! - Functions are values: [`shade_fn!`](crate::shade_fn) turns a generic `fn` into one
//!   returning a number ([`ScalarFn`]), a vector ([`VectorFn`], `-> Vec<S>`: Jacobians
//!   infer the output length) or writing its outputs in place ([`InPlaceFn`]).
//! - One entry point, [`autodiff`]`(mode, f, return_activity, args)`, with the activity
//!   vocabulary of the crate root, and conveniences on top ([`gradient`], [`hvp`],
//!   [`jacobian_forward`], ...), each with a prepared form on [`Tape`], and batched
//!   forms for several tangents per evaluation ([`Tape::pushforward_batch_into`],
//!   [`Tape::pullback_batch_into`], [`Tape::hvp_batch_into`]).
//! - Custom derivative rules: [`ScalarRule`] with [`Real::custom`].
//!
//! ```
//! use shade_autodiff::scalar::{Real, autodiff, gradient, hvp, shade_fn};
//! use shade_autodiff::{Active, Const, Duplicated, Reverse};
//!
//! fn rosenbrock<S: Real>(x: &[S]) -> S {
//!     x.windows(2)
//!         .map(|w| (-w[0] + 1.0).powi(2) + (w[1] - w[0] * w[0]).powi(2) * 100.0)
//!         .sum()
//! }
//! let f = shade_fn!(rosenbrock(&[S]));
//!
//! let g = gradient(f, &[1.0, 1.0, 1.0], ())?;
//! assert_eq!(g, [0.0, 0.0, 0.0]);
//!
//! let (x, mut dx) = ([0.0, 0.0], [0.0; 2]);
//! autodiff(Reverse, f, Active(1.0), (Duplicated(&x, &mut dx),))?;
//! assert_eq!(dx, [-2.0, 0.0]);
//!
//! assert_eq!(hvp(f, &[0.0, 0.0], &[1.0, 0.0], ())?, [2.0, 0.0]);
//! # Ok::<(), shade_autodiff::AdError>(())
//! ```

/// The README's example, compiled and run as a doc-test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod args;
mod autodiff;
mod batch;
mod dual;
mod func;
mod jacobian;
mod lift;
mod ops;
mod real;
mod sparsity;
mod tape;
mod tracer;

pub use crate::shade_fn;
pub use args::{ConstArg, ConstArgs, ForwardArg, ForwardArgs, ReverseArg, ReverseArgs};
pub use autodiff::{BatchTangent, ScalarMode, Tangent, autodiff, autodiff_with};
pub use dual::{Dual, DualVec};
pub use func::{
    Constant, InPlaceFn, Join, Kind, Kinds, Scalar, ScalarFn, Slice, SliceMut, VectorFn,
};
pub use jacobian::{
    CHUNK, jacobian_forward, jacobian_forward_inplace, jacobian_reverse, jacobian_reverse_inplace,
    pullback, pullback_inplace, pushforward, pushforward_inplace,
};
pub use ops::{derivative, gradient, hessian, hvp, second_derivative, value_and_gradient};
pub use real::{Real, ScalarRule};
pub use sparsity::{hessian_sparsity, jacobian_sparsity, jacobian_sparsity_inplace, probe_outputs};
pub use tape::{Tape, Trace, Var, VarId};
pub use tracer::{IndexSet, Tracer, trace_sparsity};
