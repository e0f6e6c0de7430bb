//! Preparation objects: [`Prepared`] holds the function, the backend, the backend's
//! state (tapes, scratch buffers) and the shapes fixed at preparation.
//!
//! Types are fixed at compile time (function, backend, context types); shapes are
//! checked at every call with [`InterfaceError::ShapeMismatch`]. Once prepared,
//! `AutoShade`'s gradient, jacobian, pushforward and pullback calls do not allocate
//! (the `_into` variants; the plain variants allocate their result).

use crate::backend::{Backend, Operator};
use crate::context::{ContextShape, Contexts};
use crate::error::{InterfaceError, InterfaceResult, check_len};
use crate::explain::Report;
use core::marker::PhantomData;

/// Shapes fixed at preparation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    /// The operator.
    pub operator: Operator,
    /// Input length (1 for a scalar input).
    pub n: usize,
    /// Output length (1 for the one-argument form).
    pub m: usize,
    pub(crate) ctx: ContextShape,
}

impl Meta {
    pub(crate) fn new<C: Contexts>(operator: Operator, n: usize, m: usize, ctx: &C) -> Self {
        Meta {
            operator,
            n,
            m,
            ctx: ContextShape::of(ctx),
        }
    }

    /// Checks the input length and the contexts.
    #[inline]
    pub(crate) fn check<C: Contexts>(&self, x: usize, ctx: &C) -> InterfaceResult<()> {
        check_len(self.operator.name(), "x", self.n, x)?;
        self.ctx.check(self.operator.name(), ctx)
    }

    /// Checks one more argument's length.
    #[inline]
    pub(crate) fn arg(
        &self,
        argument: &'static str,
        expected: usize,
        found: usize,
    ) -> InterfaceResult<()> {
        check_len(self.operator.name(), argument, expected, found)
    }

    /// Checks a stack of tangents of length `len` each; returns how many.
    #[inline]
    pub(crate) fn batch(&self, len: usize, found: usize) -> InterfaceResult<usize> {
        if len == 0 {
            return Ok(0);
        }
        if !found.is_multiple_of(len) {
            return Err(InterfaceError::BatchShape {
                operator: self.operator.name(),
                len,
                found,
            });
        }
        Ok(found / len)
    }
}

/// A prepared operator: function `V` (a form), backend `B` and its state `St`.
///
/// Made by the `prepare_*` functions; the operator `Op` is a marker type
/// ([`GradientOp`](crate::GradientOp), ...). Calls with the plain, `_into`,
/// `value_and_*` and `value_and_*_into` variants are methods of the operator's impl
/// block; every call checks the shapes against the preparation.
#[derive(Debug)]
pub struct Prepared<Op, V, B, St> {
    pub(crate) f: V,
    pub(crate) backend: B,
    pub(crate) state: St,
    pub(crate) meta: Meta,
    pub(crate) report: Report,
    /// Buffer for outputs the caller did not ask for (length `m`).
    pub(crate) out: Vec<f64>,
    pub(crate) op: PhantomData<Op>,
}

impl<Op, V, B: Backend, St> Prepared<Op, V, B, St> {
    pub(crate) fn new(f: V, backend: B, state: St, meta: Meta, report: Report) -> Self {
        Prepared {
            f,
            backend,
            state,
            meta,
            report,
            out: vec![0.0; meta.m],
            op: PhantomData,
        }
    }

    /// What this prepared operator does: which path runs, how contexts are passed,
    /// batch size, tape or buffer sizes.
    pub fn explain(&self) -> &Report {
        &self.report
    }

    /// The shapes fixed at preparation.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// Checks the input length `x` and the contexts against the preparation.
    #[inline]
    pub(crate) fn check<C>(&self, x: usize, ctx: &C) -> InterfaceResult<()>
    where
        B: PrepareBackend<V, C>,
    {
        self.meta.check(x, B::contexts(ctx))
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }
}

/// What every operator of a backend shares for the function form `V` and the contexts
/// `C`: the prepared state and its report. Each operator trait
/// ([`GradientBackend`](crate::GradientBackend), ...) adds its computation on that state.
#[diagnostic::on_unimplemented(
    message = "backend `{Self}` cannot prepare operators on `{V}` with contexts `{C}`",
    label = "no operator of this backend takes this function form and these contexts",
    note = "functions are made by `shade_fn!`; contexts are a tuple of `Constant(..)` / `Cache(..)`"
)]
pub trait PrepareBackend<V, C>: Backend {
    /// Buffers kept between calls.
    type State;
    /// The contexts as the interface reads them (their kinds and the caches' lengths,
    /// fixed at preparation and checked at every call): `ctx` itself. The impls require
    /// `C: Contexts` and the operator functions do not, so that contexts which do not
    /// fit are reported once, by the backend's bound, not once more by the function's.
    #[doc(hidden)]
    fn contexts(ctx: &C) -> &impl Contexts;
    /// Makes the state for the shapes of `meta`; `x` is the preparation point (a scalar
    /// input is a one-element slice).
    fn prepare(&self, f: &V, x: &[f64], ctx: &C, meta: &Meta) -> InterfaceResult<Self::State>;
    /// Bytes the state has reserved, if the preparation should warm it (run the operator
    /// until the buffers stop growing, so that later calls do not allocate); `None`:
    /// nothing to warm.
    fn footprint(&self, _st: &Self::State) -> Option<usize> {
        None
    }
    /// The report of a prepared state.
    fn explain(&self, st: &Self::State, meta: &Meta) -> Report;
}

/// Prepares operator `operator` of `f` (`n` inputs, `m` outputs): validates the backend,
/// makes its state, warms it with `run` (one call of the operator) while its buffers
/// grow, and asks for its report.
#[allow(clippy::too_many_arguments)]
pub(crate) fn prepare<Op, V, B, C>(
    operator: Operator,
    f: V,
    (n, m): (usize, usize),
    backend: &B,
    x: &[f64],
    ctx: &C,
    mut run: impl FnMut(&B, &mut B::State, &V, &Meta) -> InterfaceResult<()>,
) -> InterfaceResult<Prepared<Op, V, B, B::State>>
where
    B: PrepareBackend<V, C>,
{
    backend.validate()?;
    let meta = Meta::new(operator, n, m, B::contexts(ctx));
    let mut st = backend.prepare(&f, x, ctx, &meta)?;
    // The core's arena keeps only its largest chunk on reset, so a large first call may
    // need a second one; six is far more than any operator has needed.
    let mut last = backend.footprint(&st);
    if last.is_some() {
        for _ in 0..6 {
            run(backend, &mut st, &f, &meta)?;
            let now = backend.footprint(&st);
            if now == last {
                break;
            }
            last = now;
        }
    }
    let report = backend.explain(&st, &meta);
    Ok(Prepared::new(f, *backend, st, meta, report))
}
