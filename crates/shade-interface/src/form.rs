//! Function forms: the one-argument form `f(x, contexts...) -> y`, returning one
//! number ([`OneArg`], a core [`ScalarFn`]) or a vector ([`OneArgVec`], a core
//! [`VectorFn`], `shade_fn!(f(&[S], ..) -> Vec<S>)`), and the two-argument form `f(y, x,
//! contexts...)` ([`TwoArg`], a core [`InPlaceFn`] writing `m` outputs).
//!
//! Rust closures cannot be generic over the number type, so every form reuses the
//! core's function values made by [`shade_fn!`](shade_autodiff::shade_fn). No form takes
//! an output length from the user, as in DifferentiationInterface: a vector-valued
//! one-argument function has the length its first evaluation returns (at preparation;
//! every later evaluation is checked against it, `SHADE-E0132`), a two-argument one the
//! length of the buffer `y` the user passes (checked once with the core's sparsity
//! tracer, `SHADE-E0130` / `SHADE-E0131`). The two-argument form is the one that needs
//! no allocation per call.
//!
//! The one-argument operators (`jacobian`, `pushforward`, `pullback`, ...) take either
//! kind of one-argument function through [`OneArgFn`], whose marker parameter the
//! compiler infers.
//!
//! Generic backends evaluate a form through [`VecForm`] (slice input) or [`ScalarForm`]
//! (scalar input) with their own number type; `AutoShade` never goes through these
//! traits, it hands the function to the core.

use crate::error::InterfaceResult;
use bumpalo::Bump;
use shade_autodiff::AdError;
use shade_autodiff::scalar::{
    ConstArgs, InPlaceFn, IndexSet, Join, Kinds, Real, Scalar, ScalarFn, Slice, VectorFn,
    jacobian_sparsity, probe_outputs,
};

/// The one-argument form `f(x, contexts...) -> y` with one output.
#[derive(Clone, Copy, Debug, Default)]
pub struct OneArg<F>(pub F);

/// The one-argument form `f(x, contexts...) -> Vec<S>` of a vector-valued function,
/// with the `m` outputs its first evaluation returned.
#[derive(Clone, Copy, Debug, Default)]
pub struct OneArgVec<F> {
    /// The vector-valued function.
    pub f: F,
    /// The number of outputs, inferred at preparation.
    pub m: usize,
}

/// The two-argument form `f(y, x, contexts...)` writing `m` outputs into `y`.
#[derive(Clone, Copy, Debug, Default)]
pub struct TwoArg<F> {
    /// The in-place function.
    pub f: F,
    /// The number of outputs: the length of the user's `y`.
    pub m: usize,
}

/// Marker of [`OneArgFn`] for functions returning one number.
#[derive(Clone, Copy, Debug)]
pub enum ReturnsScalar {}

/// Marker of [`OneArgFn`] for functions returning a vector.
#[derive(Clone, Copy, Debug)]
pub enum ReturnsVector {}

/// Marker of [`OneArgFn`] for derivatives generated at compile time
/// ([`Compiled`](crate::Compiled)): one output.
#[derive(Clone, Copy, Debug)]
pub enum GeneratedDerivative {}

/// A one-argument function of a slice, in either kind: returning one number
/// (`shade_fn!(f(&[S], ..))`, one output) or a vector (`shade_fn!(f(&[S], ..) ->
/// Vec<S>)`, as many outputs as its first evaluation at `x` returns). The marker `M` is
/// inferred: callers never name it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a one-argument function of a slice with these contexts",
    label = "expected `shade_fn!(f(&[S], ..))` or `shade_fn!(f(&[S], ..) -> Vec<S>)`",
    note = "in-place functions `shade_fn!(f(&mut [S], &[S], ..))` go to the `*_inplace` operators with the output buffer: `value_and_jacobian_inplace(f, &mut y, &backend, &x, contexts)`; contexts must match the function's parameters after `x`"
)]
pub trait OneArgFn<C, M> {
    /// The form the operators run on ([`OneArg`] or [`OneArgVec`]).
    type Form;
    /// The form, with its number of outputs (one evaluation at `x` for a vector).
    fn into_form(self, x: &[f64], ctx: &C) -> (Self::Form, usize);
}

/// The form a one-argument function `F` runs on with contexts `C` ([`OneArg`] or
/// [`OneArgVec`]).
pub type FormOf<F, C, M> = <F as OneArgFn<C, M>>::Form;

impl<F: ScalarFn, C> OneArgFn<C, ReturnsScalar> for F {
    type Form = OneArg<F>;
    #[inline]
    fn into_form(self, _: &[f64], _: &C) -> (OneArg<F>, usize) {
        (OneArg(self), 1)
    }
}

impl<F, C> OneArgFn<C, ReturnsVector> for F
where
    F: VectorFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<VecTail<F>>,
{
    type Form = OneArgVec<F>;
    fn into_form(self, x: &[f64], ctx: &C) -> (OneArgVec<F>, usize) {
        let bump = Bump::new();
        let m = self.call(F::Kinds::join(x, ctx.args::<f64>(&bump))).len();
        (OneArgVec { f: self, m }, m)
    }
}

/// The trailing parameters of a one-argument function.
pub type Tail<F> = <<F as ScalarFn>::Kinds as Kinds>::Tail;
/// The trailing parameters (after `x`) of a two-argument function.
pub type InTail<F> = <<F as InPlaceFn>::Kinds as Kinds>::Tail;
/// The trailing parameters of a vector-valued one-argument function.
pub type VecTail<F> = <<F as VectorFn>::Kinds as Kinds>::Tail;

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
    /// Whether [`check_outputs`](Self::check_outputs) must run at every call, not only
    /// the first: the output length of a vector-valued function may change with `x` or
    /// the contexts (an in-place function's is the fixed length of `y`).
    fn check_every_call(&self) -> bool {
        false
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

/// The impls of [`VecForm`] and [`ScalarForm`] for the one-argument form (`OneArg`: one
/// output, nothing to check) and the two-argument form (`TwoArg`: the `m` outputs of the
/// user's `y`), which differ between the two traits only in the input's type (`&[S]` or
/// `S`, checked at `&[f64]` or `f64`) and the kind it joins to the contexts (`Slice` or
/// `Scalar`): one invocation lists both traits.
macro_rules! one_and_two_arg_forms {
    ($($Form:ident(x: $X:ty, at $X64:ty, $Kind:ident);)*) => {$(
        impl<F, C> $Form<C> for OneArg<F>
        where
            F: ScalarFn,
            F::Kinds: Join<$Kind>,
            C: ConstArgs<Tail<F>>,
        {
            #[inline]
            fn outputs(&self) -> usize {
                1
            }
            #[inline]
            fn eval<S: Real>(&self, x: $X, ctx: &C, bump: &Bump, y: &mut [S]) {
                y[0] = self.0.call(F::Kinds::join(x, ctx.args::<S>(bump)));
            }
            fn check_outputs(&self, _: $X64, _: &C) -> InterfaceResult<()> {
                Ok(())
            }
        }

        impl<F, C> $Form<C> for TwoArg<F>
        where
            F: InPlaceFn,
            F::Kinds: Join<$Kind>,
            C: ConstArgs<InTail<F>>,
        {
            #[inline]
            fn outputs(&self) -> usize {
                self.m
            }
            #[inline]
            fn eval<S: Real>(&self, x: $X, ctx: &C, bump: &Bump, y: &mut [S]) {
                self.f.call(y, F::Kinds::join(x, ctx.args::<S>(bump)));
            }
        }
    )*};
}

one_and_two_arg_forms! {
    VecForm(x: &[S], at &[f64], Slice);
    ScalarForm(x: S, at f64, Scalar);
}

/// Evaluations copy at most `m` outputs and zero the missing ones, so that a length
/// that changes cannot make a backend index out of bounds;
/// [`check_outputs`](VecForm::check_outputs), run at every call, turns such a change
/// into `SHADE-E0132` before any derivative is computed.
impl<F, C> VecForm<C> for OneArgVec<F>
where
    F: VectorFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<VecTail<F>>,
{
    #[inline]
    fn outputs(&self) -> usize {
        self.m
    }
    #[inline]
    fn eval<S: Real>(&self, x: &[S], ctx: &C, bump: &Bump, y: &mut [S]) {
        let v = self.f.call(F::Kinds::join(x, ctx.args::<S>(bump)));
        let k = v.len().min(y.len());
        y[..k].copy_from_slice(&v[..k]);
        y[k..].fill(S::cst(0.0));
    }
    fn probe(&self, x: &[f64], ctx: &C) -> InterfaceResult<Vec<IndexSet>> {
        let rows = jacobian_sparsity(&self.f, x, ctx)?;
        same_length(self.m, rows.len())?;
        Ok(rows)
    }
    fn check_outputs(&self, x: &[f64], ctx: &C) -> InterfaceResult<()> {
        let bump = Bump::new();
        let found = self.f.call(F::Kinds::join(x, ctx.args::<f64>(&bump))).len();
        same_length(self.m, found)
    }
    fn check_every_call(&self) -> bool {
        true
    }
}

/// `SHADE-E0132` unless a vector-valued function returned the `expected` length.
fn same_length(expected: usize, found: usize) -> InterfaceResult<()> {
    if expected == found {
        Ok(())
    } else {
        Err(AdError::OutputLength { expected, found }.into())
    }
}
