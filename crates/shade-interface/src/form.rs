//! Function forms: the one-argument form `f(x, contexts...) -> y` ([`OneArg`], a core
//! [`ScalarFn`]) and the two-argument form `f(y, x, contexts...)` ([`TwoArg`], a core
//! [`InPlaceFn`] writing `m` outputs).
//!
//! Rust closures cannot be generic over the number type, so both forms reuse the core's
//! function values made by [`shade_fn!`](shade_autodiff::shade_fn). A one-argument
//! function returns one number: vector-valued functions are written in the two-argument
//! form (the only one that needs no allocation per call).
//!
//! Generic backends evaluate a form through [`VecForm`] (slice input) or [`ScalarForm`]
//! (scalar input) with their own number type; `AutoShade` never goes through these
//! traits, it hands the function to the core.

use crate::error::InterfaceResult;
use bumpalo::Bump;
use shade_autodiff::scalar::{
    ConstArgs, InPlaceFn, IndexSet, Join, Kinds, Real, Scalar, ScalarFn, Slice, probe_outputs,
};

/// The one-argument form `f(x, contexts...) -> y` with one output.
#[derive(Clone, Copy, Debug, Default)]
pub struct OneArg<F>(pub F);

/// The two-argument form `f(y, x, contexts...)` writing `m` outputs into `y`.
#[derive(Clone, Copy, Debug, Default)]
pub struct TwoArg<F> {
    /// The in-place function.
    pub f: F,
    /// The number of outputs.
    pub m: usize,
}

/// The trailing parameters of a one-argument function.
pub type Tail<F> = <<F as ScalarFn>::Kinds as Kinds>::Tail;
/// The trailing parameters (after `x`) of a two-argument function.
pub type InTail<F> = <<F as InPlaceFn>::Kinds as Kinds>::Tail;

/// A form with input `x: &[S]` and `outputs()` outputs, evaluable with any number type.
pub trait VecForm<C> {
    /// Number of outputs (1 for the one-argument form).
    fn outputs(&self) -> usize;
    /// Writes `f(x, contexts)` into `y` (length `outputs()`), building converted
    /// contexts in `bump`.
    fn eval<S: Real>(&self, x: &[S], ctx: &C, bump: &Bump, y: &mut [S]);
    /// Evaluates the form once with the core's sparsity tracer at `x`: the inputs each
    /// output depends on (the rows of the Jacobian's local pattern), after checking that
    /// the function writes exactly `outputs()` outputs (`SHADE-E0130` if it writes fewer,
    /// `SHADE-E0131` if it panics, e.g. indexing past `y`).
    fn probe(&self, x: &[f64], ctx: &C) -> InterfaceResult<Vec<IndexSet>> {
        let bump = Bump::new();
        Ok(probe_outputs(x, self.outputs(), |xs, ys| {
            self.eval(xs, ctx, &bump, ys)
        })?)
    }
    /// Checks the output length ([`probe`](Self::probe)); nothing to check for the
    /// one-argument form, whose one output is its return value.
    fn check_outputs(&self, x: &[f64], ctx: &C) -> InterfaceResult<()> {
        self.probe(x, ctx).map(drop)
    }
}

/// A form with one scalar input `x: S` and `outputs()` outputs.
pub trait ScalarForm<C> {
    /// Number of outputs (1 for the one-argument form).
    fn outputs(&self) -> usize;
    /// Writes `f(x, contexts)` into `y` (length `outputs()`).
    fn eval<S: Real>(&self, x: S, ctx: &C, bump: &Bump, y: &mut [S]);
    /// Checks the output length by one evaluation with the sparsity tracer, as
    /// [`VecForm::probe`] (nothing to check for the one-argument form).
    fn check_outputs(&self, x: f64, ctx: &C) -> InterfaceResult<()> {
        let bump = Bump::new();
        probe_outputs(&[x], self.outputs(), |xs, ys| {
            self.eval(xs[0], ctx, &bump, ys)
        })?;
        Ok(())
    }
}

impl<F, C> VecForm<C> for OneArg<F>
where
    F: ScalarFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<Tail<F>>,
{
    #[inline]
    fn outputs(&self) -> usize {
        1
    }
    #[inline]
    fn eval<S: Real>(&self, x: &[S], ctx: &C, bump: &Bump, y: &mut [S]) {
        y[0] = self.0.call(F::Kinds::join(x, ctx.args::<S>(bump)));
    }
    fn check_outputs(&self, _: &[f64], _: &C) -> InterfaceResult<()> {
        Ok(())
    }
}

impl<F, C> VecForm<C> for TwoArg<F>
where
    F: InPlaceFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<InTail<F>>,
{
    #[inline]
    fn outputs(&self) -> usize {
        self.m
    }
    #[inline]
    fn eval<S: Real>(&self, x: &[S], ctx: &C, bump: &Bump, y: &mut [S]) {
        self.f.call(y, F::Kinds::join(x, ctx.args::<S>(bump)));
    }
}

impl<F, C> ScalarForm<C> for OneArg<F>
where
    F: ScalarFn,
    F::Kinds: Join<Scalar>,
    C: ConstArgs<Tail<F>>,
{
    #[inline]
    fn outputs(&self) -> usize {
        1
    }
    #[inline]
    fn eval<S: Real>(&self, x: S, ctx: &C, bump: &Bump, y: &mut [S]) {
        y[0] = self.0.call(F::Kinds::join(x, ctx.args::<S>(bump)));
    }
    fn check_outputs(&self, _: f64, _: &C) -> InterfaceResult<()> {
        Ok(())
    }
}

impl<F, C> ScalarForm<C> for TwoArg<F>
where
    F: InPlaceFn,
    F::Kinds: Join<Scalar>,
    C: ConstArgs<InTail<F>>,
{
    #[inline]
    fn outputs(&self) -> usize {
        self.m
    }
    #[inline]
    fn eval<S: Real>(&self, x: S, ctx: &C, bump: &Bump, y: &mut [S]) {
        self.f.call(y, F::Kinds::join(x, ctx.args::<S>(bump)));
    }
}
