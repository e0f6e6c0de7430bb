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
