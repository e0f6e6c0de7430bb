//! One differentiation API over many backends, in the spirit of Julia's
//! DifferentiationInterface + ADTypes: backend markers, the eight operators, preparation
//! and contexts. Given the native marker [`AutoShade`] it calls `shade-autodiff`
//! directly, with the user's function value and the contexts as activities.
//!
//! - Backends ([`backend`]): [`AutoShade`] (native, reverse or forward),
//!   [`AutoFiniteDiff`] (the reference), `AutoNumDual` (feature `num-dual`: num-dual's
//!   dual and hyper-dual numbers), [`SecondOrder`].
//! - Operators ([`ops`]): [`derivative`], [`second_derivative`], [`gradient`],
//!   [`jacobian`], [`hessian`], [`pushforward`], [`pullback`], [`hvp`], each with a
//!   `prepare_*` function returning a [`Prepared`] object whose methods are the plain,
//!   `_into`, `value_and_*` and `value_and_*_into` variants.
//! - Function forms ([`form`]): one-argument `f(x, contexts...) -> y` and two-argument
//!   `f(y, x, contexts...)` (`*_inplace` functions), both made by
//!   [`shade_fn!`](shade_autodiff::shade_fn).
//! - Contexts ([`context`]): [`Constant`] and [`Cache`].
//! - Reports ([`Report`]): every prepared object says which path runs.
//! - Errors: [`InterfaceError`], codes `SHADE-E02xx`.
//!
//! ```
//! use shade_interface::{AutoFiniteDiff, AutoShade, Constant, PathKind, gradient, prepare_gradient};
//! use shade_autodiff::scalar::{Real, shade_fn};
//!
//! fn loss<S: Real>(x: &[S], w: &[f64]) -> S {
//!     x.iter().zip(w).map(|(&xi, &wi)| (xi - wi).powi(2)).sum()
//! }
//! let f = shade_fn!(loss(&[S], &[f64]));
//! let (x, w) = ([1.0, 2.0], [0.5, 0.5]);
//!
//! // One argument switches the backend.
//! let g = gradient(f, &AutoShade::REVERSE, &x, (Constant(&w),))?;
//! let g_fd = gradient(f, &AutoFiniteDiff::CENTRAL, &x, (Constant(&w),))?;
//! assert_eq!(g, [1.0, 3.0]);
//! assert!(g.iter().zip(&g_fd).all(|(a, b)| (a - b).abs() < 1e-8));
//!
//! // Prepared: later calls reuse the tape and do not allocate.
//! let mut prep = prepare_gradient(f, &AutoShade::REVERSE, &x, (Constant(&w),))?;
//! let mut out = [0.0; 2];
//! prep.gradient_into(&[0.0, 0.0], (Constant(&w),), &mut out)?;
//! assert_eq!(out, [-1.0, -1.0]);
//! assert_eq!(prep.explain().path, PathKind::Native);
//! # Ok::<(), shade_interface::InterfaceError>(())
//! ```
//!
//! ## The third-party backend
//!
//! With feature `num-dual`, `AutoNumDual` evaluates the function's instantiation with
//! num-dual's `Dual64` (first order, one direction per evaluation) and `HyperDual64`
//! (second order). The orphan rule forbids implementing shade's `Real` for num-dual's
//! types directly, so a transparent newtype `NumDual<D>` does it, forwarding every
//! operation to num-dual; `erf` and custom rules (`Real::custom`) go through the
//! isomorphic shade number type (`Dual<f64>`, `Dual<Dual<f64>>`).

pub mod backend;
pub mod context;
mod error;
mod explain;
mod fd;
pub mod form;
mod generic;
#[cfg(feature = "num-dual")]
pub mod numdual;
pub mod ops;
mod prep;
mod second_order;
mod shade;
mod support;
pub mod tensor;
#[cfg(feature = "testing")]
pub mod testing;

pub use backend::{
    AutoFiniteDiff, AutoShade, Backend, FdKind, ModeSupport, Operator, SecondOrder, Support,
};
pub use context::{Cache, Constant, ContextPassing, Contexts};
pub use error::{InterfaceError, InterfaceResult};
pub use explain::{PathKind, Report};
pub use fd::FdWork;
pub use form::{OneArg, TwoArg};
pub use generic::{GenericBackend, GenericState};
#[cfg(feature = "num-dual")]
pub use numdual::AutoNumDual;
pub use ops::*;
pub use prep::{Meta, Prepared};
pub use shade::{ShadeCall, ShadeState};
pub use support::{render_support_table, support_table};
