//! The eight operators: for each, a backend trait (what a backend implements), the
//! `prepare_*` function, the free functions, and the methods of the prepared object
//! (plain, `_into`, `value_and_*`, `value_and_*_into`, batched where tangents are
//! involved).
//!
//! | operator | one-argument form | two-argument form |
//! |---|---|---|
//! | `derivative` | `f(x: S, ..) -> S` | `f(y: &mut [S], x: S, ..)` |
//! | `second_derivative` | `f(x: S, ..) -> S` | — |
//! | `gradient`, `hessian`, `hvp` | `f(x: &[S], ..) -> S` | — |
//! | `jacobian`, `pushforward`, `pullback` | `f(x: &[S], ..) -> Vec<S>` (`m` inferred) or `-> S` (`m = 1`) | `f(y: &mut [S], x: &[S], ..)` (`m = y.len()`) |
//!
//! No operator takes the number of outputs: a one-argument function's is what its
//! evaluation at the preparation point returns (later calls are checked against it,
//! `SHADE-E0132`), a two-argument function's is the length of the buffer `y` the user
//! passes (`*_inplace(f, &mut y, ..)`, `prepare_*_inplace(f, &y, ..)`; checked once,
//! `SHADE-E0130` / `SHADE-E0131`).

mod first;
mod push;
mod second;

pub use first::{
    DerivativeBackend, GradientBackend, JacobianBackend, JacobianOf, derivative, gradient,
    jacobian, prepare_derivative, prepare_derivative_inplace, prepare_gradient, prepare_jacobian,
    prepare_jacobian_inplace, value_and_derivative, value_and_derivative_inplace,
    value_and_gradient, value_and_jacobian, value_and_jacobian_inplace,
};
pub(crate) use push::each_tangent;
pub use push::{
    PullbackBackend, PushforwardBackend, prepare_pullback, prepare_pullback_inplace,
    prepare_pushforward, prepare_pushforward_inplace, pullback, pushforward, value_and_pullback,
    value_and_pullback_inplace, value_and_pushforward, value_and_pushforward_inplace,
};
pub use second::{
    HessianBackend, HessianOf, HvpBackend, SecondDerivativeBackend, hessian, hvp, prepare_hessian,
    prepare_hvp, prepare_second_derivative, second_derivative,
};

/// Writes one method of an operator trait (or of `PrepareBackend`: `contexts`, and
/// `prepare` for a one-argument function) with the trait's own signature, so that an
/// implementation names only the method, its parameters and its body:
/// `op_fn!(#[inline] hvp_into(self, st: ShadeState, f, x, v, ctx, hv) { .. })`.
///
/// Why: every backend (native, generic, second-order, sparse) implements the same
/// operator traits, and written out each impl repeated the traits' signatures verbatim,
/// up to seven parameters a method. The signatures, with their docs, stay written once,
/// in the traits (`first.rs`, `push.rs`, `second.rs`); the impl headers with their
/// bounds stay written out (they are what compile errors quote). The parameters are
/// named at the call, in the trait's order (macro hygiene), `_` for an unused one, with
/// the types that differ between backends: the state (`Self::State` or the backend's
/// own) and the Jacobian or Hessian storage (`[f64]` or `CsMat<f64>`), so that rustdoc
/// shows each impl's methods as before. The form type is the impl's `V` (a form) or
/// `OneArg<F>` (a one-argument function) and the contexts' `C`, as in the traits.
/// Attributes go before the name.
macro_rules! op_fn {
    // `PrepareBackend::contexts`, which every impl passes through, and `prepare` of a
    // one-argument function.
    (contexts) => {
        fn contexts(ctx: &C) -> &impl $crate::context::Contexts {
            ctx
        }
    };
    ($(#[$a:meta])* prepare($s:tt, $f:tt, $x:tt, $ctx:tt, $meta:tt) $body:block) => {
        $(#[$a])* fn prepare(&$s, $f: &$crate::form::OneArg<F>, $x: &[f64], $ctx: &C, $meta: &$crate::prep::Meta) -> $crate::error::InterfaceResult<Self::State> $body
    };
    // The one shape of the four pushforward and pullback methods: `(x, tangents or
    // cotangents) -> (y, results)`.
    (@tangent $(#[$a:meta])* $name:ident($s:tt, $st:tt: $St:ty, $f:tt, $x:tt, $t:tt, $ctx:tt, $y:tt, $o:tt) $body:block) => {
        $(#[$a])* fn $name(&$s, $st: &mut $St, $f: &V, $x: &[f64], $t: &[f64], $ctx: &C, $y: &mut [f64], $o: &mut [f64]) -> $crate::error::InterfaceResult<()> $body
    };
    ($(#[$a:meta])* value_and_pushforward_into $($rest:tt)*) => {
        $crate::ops::op_fn!(@tangent $(#[$a])* value_and_pushforward_into $($rest)*);
    };
    ($(#[$a:meta])* value_and_pushforward_batch_into $($rest:tt)*) => {
        $crate::ops::op_fn!(@tangent $(#[$a])* value_and_pushforward_batch_into $($rest)*);
    };
    ($(#[$a:meta])* value_and_pullback_into $($rest:tt)*) => {
        $crate::ops::op_fn!(@tangent $(#[$a])* value_and_pullback_into $($rest)*);
    };
    ($(#[$a:meta])* value_and_pullback_batch_into $($rest:tt)*) => {
        $crate::ops::op_fn!(@tangent $(#[$a])* value_and_pullback_batch_into $($rest)*);
    };
    ($(#[$a:meta])* value_and_derivative_into($s:tt, $st:tt: $St:ty, $f:tt, $x:tt, $ctx:tt, $y:tt, $d:tt) $body:block) => {
        $(#[$a])* fn value_and_derivative_into(&$s, $st: &mut $St, $f: &V, $x: f64, $ctx: &C, $y: &mut [f64], $d: &mut [f64]) -> $crate::error::InterfaceResult<()> $body
    };
    ($(#[$a:meta])* value_and_gradient_into($s:tt, $st:tt: $St:ty, $f:tt, $x:tt, $ctx:tt, $g:tt) $body:block) => {
        $(#[$a])* fn value_and_gradient_into(&$s, $st: &mut $St, $f: &$crate::form::OneArg<F>, $x: &[f64], $ctx: &C, $g: &mut [f64]) -> $crate::error::InterfaceResult<f64> $body
    };
    ($(#[$a:meta])* value_and_jacobian_into($s:tt, $st:tt: $St:ty, $f:tt, $x:tt, $ctx:tt, $y:tt, $j:tt: $J:ty) $body:block) => {
        $(#[$a])* fn value_and_jacobian_into(&$s, $st: &mut $St, $f: &V, $x: &[f64], $ctx: &C, $y: &mut [f64], $j: &mut $J) -> $crate::error::InterfaceResult<()> $body
    };
    ($(#[$a:meta])* value_derivative_and_second_derivative($s:tt, $st:tt: $St:ty, $f:tt, $x:tt, $ctx:tt) $body:block) => {
        $(#[$a])* fn value_derivative_and_second_derivative(&$s, $st: &mut $St, $f: &$crate::form::OneArg<F>, $x: f64, $ctx: &C) -> $crate::error::InterfaceResult<(f64, f64, f64)> $body
    };
    ($(#[$a:meta])* hessian_into($s:tt, $st:tt: $St:ty, $f:tt, $x:tt, $ctx:tt, $h:tt: $H:ty) $body:block) => {
        $(#[$a])* fn hessian_into(&$s, $st: &mut $St, $f: &$crate::form::OneArg<F>, $x: &[f64], $ctx: &C, $h: &mut $H) -> $crate::error::InterfaceResult<()> $body
    };
    ($(#[$a:meta])* value_gradient_and_hessian_into($s:tt, $st:tt: $St:ty, $f:tt, $x:tt, $ctx:tt, $g:tt, $h:tt: $H:ty) $body:block) => {
        $(#[$a])* fn value_gradient_and_hessian_into(&$s, $st: &mut $St, $f: &$crate::form::OneArg<F>, $x: &[f64], $ctx: &C, $g: &mut [f64], $h: &mut $H) -> $crate::error::InterfaceResult<f64> $body
    };
    ($(#[$a:meta])* hvp_into($s:tt, $st:tt: $St:ty, $f:tt, $x:tt, $v:tt, $ctx:tt, $hv:tt) $body:block) => {
        $(#[$a])* fn hvp_into(&$s, $st: &mut $St, $f: &$crate::form::OneArg<F>, $x: &[f64], $v: &[f64], $ctx: &C, $hv: &mut [f64]) -> $crate::error::InterfaceResult<()> $body
    };
    ($(#[$a:meta])* hvp_batch_into($s:tt, $st:tt: $St:ty, $f:tt, $x:tt, $vs:tt, $ctx:tt, $hvs:tt) $body:block) => {
        $(#[$a])* fn hvp_batch_into(&$s, $st: &mut $St, $f: &$crate::form::OneArg<F>, $x: &[f64], $vs: &[f64], $ctx: &C, $hvs: &mut [f64]) -> $crate::error::InterfaceResult<()> $body
    };
    ($(#[$a:meta])* gradient_and_hvp_into($s:tt, $st:tt: $St:ty, $f:tt, $x:tt, $v:tt, $ctx:tt, $g:tt, $hv:tt) $body:block) => {
        $(#[$a])* fn gradient_and_hvp_into(&$s, $st: &mut $St, $f: &$crate::form::OneArg<F>, $x: &[f64], $v: &[f64], $ctx: &C, $g: &mut [f64], $hv: &mut [f64]) -> $crate::error::InterfaceResult<f64> $body
    };
}
pub(crate) use op_fn;

/// The preparation functions for either form (`m` ignored by the one-argument form's
/// callers), for the harness.
#[cfg(feature = "testing")]
pub(crate) mod prep_any {
    pub(crate) use super::first::prep_jacobian as jacobian;
    pub(crate) use super::push::{prep_pullback as pullback, prep_pushforward as pushforward};
}

macro_rules! op_markers {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name;
    )*};
}

op_markers! {
    /// Marker of a prepared `derivative`.
    DerivativeOp;
    /// Marker of a prepared `second_derivative`.
    SecondDerivativeOp;
    /// Marker of a prepared `gradient`.
    GradientOp;
    /// Marker of a prepared `jacobian`.
    JacobianOp;
    /// Marker of a prepared `hessian`.
    HessianOp;
    /// Marker of a prepared `pushforward`.
    PushforwardOp;
    /// Marker of a prepared `pullback`.
    PullbackOp;
    /// Marker of a prepared `hvp`.
    HvpOp;
}
