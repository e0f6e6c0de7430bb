//! The engines behind the backend markers of [`backend`](crate::backend), apart from
//! the interface's vocabulary (markers, operator traits, preparation, contexts):
//!
//! - [`native`]: `AutoShade`, every operator a direct call of `shade-autodiff`.
//! - `generic`: the operators of backends that only evaluate a function's
//!   instantiations (`GenericBackend`), used by
//! - `fd` (`AutoFiniteDiff`, finite differences of the `f64` instantiation) and
//!   `numdual` (`AutoNumDual`, feature `num-dual`).
//! - `second_order`: `SecondOrder` (forward over reverse natively, or differences of
//!   an inner gradient).
//! - [`sparse`]: `AutoSparse` (sparsity detection, colouring, compressed pushforwards).

pub(crate) mod fd;
pub(crate) mod generic;
pub mod native;
#[cfg(feature = "num-dual")]
pub mod numdual;
pub(crate) mod second_order;
pub mod sparse;
