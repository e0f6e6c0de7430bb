//! First-order operators with a full Jacobian result: `derivative`, `gradient`,
//! `jacobian`. No operator takes an output length: a one-argument vector-valued
//! function's is inferred, a two-argument function's is the length of the user's `y`.

use super::{DerivativeOp, GradientOp, JacobianOp};
use crate::backend::{Backend, Operator};
use crate::error::InterfaceResult;
use crate::form::{FormOf, OneArg, OneArgFn, TwoArg};
use crate::matrix::DerivativeMatrix;
use crate::prep::{Meta, PrepareBackend, Prepared, prepare};
use core::borrow::BorrowMut;

/// A backend that computes derivatives of functions of one scalar, in form `V`.
#[diagnostic::on_unimplemented(
    message = "backend `{Self}` cannot compute `derivative` of `{V}` with contexts `{C}`",
    label = "no derivative for this backend, function form and contexts",
    note = "`derivative` takes a function of one scalar, `shade_fn!(f(S, ...))` (one-argument) or `shade_fn!(f(&mut [S], S, ...))` (two-argument); backends: AutoShade, AutoFiniteDiff, AutoNumDual"
)]
pub trait DerivativeBackend<V, C>: PrepareBackend<V, C> {
    /// Writes `y = f(x)` and `dy/dx` (length `m` each).
    fn value_and_derivative_into(
        &self,
        st: &mut Self::State,
        f: &V,
        x: f64,
        ctx: &C,
        y: &mut [f64],
        der: &mut [f64],
    ) -> InterfaceResult<()>;
}

/// A backend that computes gradients of one-argument functions.
#[diagnostic::on_unimplemented(
    message = "backend `{Self}` cannot compute `gradient` of `{F}` with contexts `{C}`",
    label = "no gradient for this backend, function and contexts",
    note = "`gradient` takes a one-argument function `shade_fn!(f(&[S], ...))` returning `S`; backends: AutoShade, AutoFiniteDiff, AutoNumDual"
)]
pub trait GradientBackend<F, C>: PrepareBackend<OneArg<F>, C> {
    /// Writes `∇f(x)` into `g` (overwriting it) and returns `f(x)`.
    fn value_and_gradient_into(
        &self,
        st: &mut Self::State,
        f: &OneArg<F>,
        x: &[f64],
        ctx: &C,
        g: &mut [f64],
    ) -> InterfaceResult<f64>;
}

/// A backend that computes Jacobians of functions in form `V`.
#[diagnostic::on_unimplemented(
    message = "backend `{Self}` cannot compute `jacobian` of `{V}` with contexts `{C}`",
    label = "no jacobian for this backend, function form and contexts",
    note = "`jacobian` takes `shade_fn!(f(&[S], ...) -> Vec<S>)` (its output length inferred), `shade_fn!(f(&[S], ...))` (one output) or, with `*_inplace` and the output buffer `y`, `shade_fn!(f(&mut [S], &[S], ...))`; backends: AutoShade, AutoFiniteDiff, AutoNumDual, AutoSparse"
)]
pub trait JacobianBackend<V, C>: PrepareBackend<V, C> {
    /// How the Jacobian is stored: `[f64]` (dense `m × n`, row-major) for every backend
    /// but `AutoSparse`, whose Jacobian is a `CsMat<f64>` with the detected pattern.
    type Jacobian: ?Sized + DerivativeMatrix;
    /// A zero Jacobian of the prepared shape (and pattern).
    fn new_jacobian(
        &self,
        st: &Self::State,
        meta: &Meta,
    ) -> <Self::Jacobian as DerivativeMatrix>::Owned;
    /// Checks a Jacobian buffer against the preparation (length, or shape and pattern).
    fn check_jacobian(
        &self,
        st: &Self::State,
        meta: &Meta,
        jac: &Self::Jacobian,
    ) -> InterfaceResult<()>;
    /// Writes `y = f(x)` and the Jacobian.
    fn value_and_jacobian_into(
        &self,
        st: &mut Self::State,
        f: &V,
        x: &[f64],
        ctx: &C,
        y: &mut [f64],
        jac: &mut Self::Jacobian,
    ) -> InterfaceResult<()>;
}

/// The Jacobian type `backend B` returns for form `V` and contexts `C`: `Vec<f64>`
/// (dense, row-major) or `CsMat<f64>` (`AutoSparse`).
pub type JacobianOf<B, V, C> = <<B as JacobianBackend<V, C>>::Jacobian as DerivativeMatrix>::Owned;

// ---------------------------------------------------------------- derivative

pub(crate) fn prep_derivative<V, B: DerivativeBackend<V, C>, C>(
    f: V,
    m: usize,
    backend: &B,
    x: f64,
    ctx: &C,
) -> InterfaceResult<Prepared<DerivativeOp, V, B, B::State>> {
    let (mut y, mut d) = (vec![0.0; m], vec![0.0; m]);
    prepare(
        Operator::Derivative,
        f,
        (1, m),
        backend,
        &[x],
        ctx,
        |b, st, f, _| b.value_and_derivative_into(st, f, x, ctx, &mut y, &mut d),
    )
}

/// Prepares `derivative` of a one-argument function `f(x: S, contexts...) -> S` at `x`.
pub fn prepare_derivative<F, B, C, St>(
    f: F,
    backend: &B,
    x: f64,
    ctx: C,
) -> InterfaceResult<Prepared<DerivativeOp, OneArg<F>, B, St>>
where
    B: DerivativeBackend<OneArg<F>, C, State = St>,
{
    prep_derivative(OneArg(f), 1, backend, x, &ctx)
}

/// Prepares `derivative` of a two-argument function `f(y: &mut [S], x: S, contexts...)`
/// whose outputs go to buffers like `y` (only its length is read: the number of outputs,
/// checked once with the core's sparsity tracer).
pub fn prepare_derivative_inplace<F, B, C, St>(
    f: F,
    y: &[f64],
    backend: &B,
    x: f64,
    ctx: C,
) -> InterfaceResult<Prepared<DerivativeOp, TwoArg<F>, B, St>>
where
    B: DerivativeBackend<TwoArg<F>, C, State = St>,
{
    let m = y.len();
    prep_derivative(TwoArg { f, m }, m, backend, x, &ctx)
}

/// `f'(x)` for a one-argument `f(x: S, contexts...) -> S`.
///
/// ```
/// use shade_interface::{AutoShade, derivative};
/// use shade_interface::{Real, shade_fn};
///
/// fn cube<S: Real>(x: S) -> S { x * x * x }
/// assert_eq!(derivative(shade_fn!(cube(S)), &AutoShade::FORWARD, 2.0, ())?, 12.0);
/// # Ok::<(), shade_interface::InterfaceError>(())
/// ```
pub fn derivative<F, B, C>(f: F, backend: &B, x: f64, ctx: C) -> InterfaceResult<f64>
where
    B: DerivativeBackend<OneArg<F>, C>,
{
    let mut p = prep_derivative(OneArg(f), 1, backend, x, &ctx)?;
    p.derivative(x, ctx)
}

/// `(f(x), f'(x))` for a one-argument `f(x: S, contexts...) -> S`.
pub fn value_and_derivative<F, B, C>(
    f: F,
    backend: &B,
    x: f64,
    ctx: C,
) -> InterfaceResult<(f64, f64)>
where
    B: DerivativeBackend<OneArg<F>, C>,
{
    let mut p = prep_derivative(OneArg(f), 1, backend, x, &ctx)?;
    p.value_and_derivative(x, ctx)
}

/// `dy/dx` for a two-argument `f(y: &mut [S], x: S, contexts...)`, writing `y = f(x)`:
/// the buffer `y` gives the number of outputs.
pub fn value_and_derivative_inplace<F, B, C>(
    f: F,
    y: &mut [f64],
    backend: &B,
    x: f64,
    ctx: C,
) -> InterfaceResult<Vec<f64>>
where
    B: DerivativeBackend<TwoArg<F>, C>,
{
    let m = y.len();
    let mut p = prep_derivative(TwoArg { f, m }, m, backend, x, &ctx)?;
    let mut d = vec![0.0; m];
    p.value_and_derivative_into(x, ctx, y, &mut d)?;
    Ok(d)
}

impl<F, B: Backend, St> Prepared<DerivativeOp, OneArg<F>, B, St> {
    /// `f'(x)`.
    pub fn derivative<C>(&mut self, x: f64, ctx: C) -> InterfaceResult<f64>
    where
        B: DerivativeBackend<OneArg<F>, C, State = St>,
    {
        self.value_and_derivative(x, ctx).map(|r| r.1)
    }

    /// `(f(x), f'(x))`.
    pub fn value_and_derivative<C>(&mut self, x: f64, ctx: C) -> InterfaceResult<(f64, f64)>
    where
        B: DerivativeBackend<OneArg<F>, C, State = St>,
    {
        self.check(1, &ctx)?;
        let (mut y, mut d) = ([0.0], [0.0]);
        self.backend.value_and_derivative_into(
            &mut self.state,
            &self.f,
            x,
            &ctx,
            &mut y,
            &mut d,
        )?;
        Ok((y[0], d[0]))
    }
}

impl<F, B: Backend, St> Prepared<DerivativeOp, TwoArg<F>, B, St> {
    /// `dy/dx` (length `m`).
    pub fn derivative<C>(&mut self, x: f64, ctx: C) -> InterfaceResult<Vec<f64>>
    where
        B: DerivativeBackend<TwoArg<F>, C, State = St>,
    {
        self.value_and_derivative(x, ctx).map(|r| r.1)
    }

    /// Writes `dy/dx` into `der`.
    pub fn derivative_into<C>(&mut self, x: f64, ctx: C, der: &mut [f64]) -> InterfaceResult<()>
    where
        B: DerivativeBackend<TwoArg<F>, C, State = St>,
    {
        // The engine writes the outputs too: into the prepared object's buffer.
        let mut y = core::mem::take(&mut self.out);
        let r = self.value_and_derivative_into(x, ctx, &mut y, der);
        self.out = y;
        r
    }

    /// `(y, dy/dx)`.
    pub fn value_and_derivative<C>(
        &mut self,
        x: f64,
        ctx: C,
    ) -> InterfaceResult<(Vec<f64>, Vec<f64>)>
    where
        B: DerivativeBackend<TwoArg<F>, C, State = St>,
    {
        let (mut y, mut d) = (vec![0.0; self.meta.m], vec![0.0; self.meta.m]);
        self.value_and_derivative_into(x, ctx, &mut y, &mut d)?;
        Ok((y, d))
    }

    /// Writes `y` and `dy/dx`.
    pub fn value_and_derivative_into<C>(
        &mut self,
        x: f64,
        ctx: C,
        y: &mut [f64],
        der: &mut [f64],
    ) -> InterfaceResult<()>
    where
        B: DerivativeBackend<TwoArg<F>, C, State = St>,
    {
        self.check(1, &ctx)?;
        self.meta.arg("y", self.meta.m, y.len())?;
        self.meta.arg("der", self.meta.m, der.len())?;
        self.backend
            .value_and_derivative_into(&mut self.state, &self.f, x, &ctx, y, der)
    }
}

// ---------------------------------------------------------------- gradient

/// Prepares `gradient` of a one-argument `f(x: &[S], contexts...) -> S` at `x`.
///
/// ```
/// use shade_interface::{AutoShade, Constant, prepare_gradient};
/// use shade_interface::{Real, shade_fn};
///
/// fn f<S: Real>(x: &[S], w: &[f64]) -> S { x[0] * x[1] * w[0] }
/// let w = [3.0];
/// let mut prep = prepare_gradient(shade_fn!(f(&[S], &[f64])), &AutoShade::REVERSE, &[0.0, 0.0], (Constant(&w),))?;
/// let mut g = [0.0; 2];
/// let y = prep.value_and_gradient_into(&[2.0, 5.0], (Constant(&w),), &mut g)?;
/// assert_eq!((y, g), (30.0, [15.0, 6.0]));
/// # Ok::<(), shade_interface::InterfaceError>(())
/// ```
pub fn prepare_gradient<F, B, C, St>(
    f: F,
    backend: &B,
    x: &[f64],
    ctx: C,
) -> InterfaceResult<Prepared<GradientOp, OneArg<F>, B, St>>
where
    B: GradientBackend<F, C, State = St>,
{
    prep_gradient(f, backend, x, &ctx)
}

fn prep_gradient<F, B: GradientBackend<F, C>, C>(
    f: F,
    backend: &B,
    x: &[f64],
    ctx: &C,
) -> InterfaceResult<Prepared<GradientOp, OneArg<F>, B, B::State>> {
    let mut g = vec![0.0; x.len()];
    prepare(
        Operator::Gradient,
        OneArg(f),
        (x.len(), 1),
        backend,
        x,
        ctx,
        |b, st, f, _| b.value_and_gradient_into(st, f, x, ctx, &mut g).map(drop),
    )
}

/// `∇f(x)` for a one-argument `f(x: &[S], contexts...) -> S`.
pub fn gradient<F, B, C>(f: F, backend: &B, x: &[f64], ctx: C) -> InterfaceResult<Vec<f64>>
where
    B: GradientBackend<F, C>,
{
    prep_gradient(f, backend, x, &ctx)?.gradient(x, ctx)
}

/// `(f(x), ∇f(x))`.
pub fn value_and_gradient<F, B, C>(
    f: F,
    backend: &B,
    x: &[f64],
    ctx: C,
) -> InterfaceResult<(f64, Vec<f64>)>
where
    B: GradientBackend<F, C>,
{
    prep_gradient(f, backend, x, &ctx)?.value_and_gradient(x, ctx)
}

impl<F, B: Backend, St> Prepared<GradientOp, OneArg<F>, B, St> {
    /// `∇f(x)`.
    pub fn gradient<C>(&mut self, x: &[f64], ctx: C) -> InterfaceResult<Vec<f64>>
    where
        B: GradientBackend<F, C, State = St>,
    {
        let mut g = vec![0.0; x.len()];
        self.value_and_gradient_into(x, ctx, &mut g)?;
        Ok(g)
    }

    /// Writes `∇f(x)` into `g` (overwriting it).
    #[inline]
    pub fn gradient_into<C>(&mut self, x: &[f64], ctx: C, g: &mut [f64]) -> InterfaceResult<()>
    where
        B: GradientBackend<F, C, State = St>,
    {
        self.value_and_gradient_into(x, ctx, g).map(|_| ())
    }

    /// `(f(x), ∇f(x))`.
    pub fn value_and_gradient<C>(&mut self, x: &[f64], ctx: C) -> InterfaceResult<(f64, Vec<f64>)>
    where
        B: GradientBackend<F, C, State = St>,
    {
        let mut g = vec![0.0; x.len()];
        let y = self.value_and_gradient_into(x, ctx, &mut g)?;
        Ok((y, g))
    }

    /// Writes `∇f(x)` into `g` and returns `f(x)`.
    #[inline]
    pub fn value_and_gradient_into<C>(
        &mut self,
        x: &[f64],
        ctx: C,
        g: &mut [f64],
    ) -> InterfaceResult<f64>
    where
        B: GradientBackend<F, C, State = St>,
    {
        self.check(x.len(), &ctx)?;
        self.meta.arg("gradient", self.meta.n, g.len())?;
        self.backend
            .value_and_gradient_into(&mut self.state, &self.f, x, &ctx, g)
    }
}

// ---------------------------------------------------------------- jacobian

pub(crate) fn prep_jacobian<V, B: JacobianBackend<V, C>, C>(
    f: V,
    m: usize,
    backend: &B,
    x: &[f64],
    ctx: &C,
) -> InterfaceResult<Prepared<JacobianOp, V, B, B::State>> {
    let mut y = vec![0.0; m];
    let mut j: Option<JacobianOf<B, V, C>> = None;
    prepare(
        Operator::Jacobian,
        f,
        (x.len(), m),
        backend,
        x,
        ctx,
        |b, st, f, meta| {
            let j = j.get_or_insert_with(|| b.new_jacobian(st, meta));
            b.value_and_jacobian_into(st, f, x, ctx, &mut y, j.borrow_mut())
        },
    )
}

/// Prepares `jacobian` of a one-argument function: `f(x: &[S], contexts...) -> Vec<S>`
/// (`m × n`, `m` the length its evaluation at `x` returns; every later call is checked
/// against it, `SHADE-E0132`) or `f(x: &[S], contexts...) -> S` (`1 × n`).
#[allow(
    clippy::type_complexity,
    reason = "the prepared form is named through the function's kind, `FormOf`"
)]
pub fn prepare_jacobian<F, M, B, C, St>(
    f: F,
    backend: &B,
    x: &[f64],
    ctx: C,
) -> InterfaceResult<Prepared<JacobianOp, FormOf<F, C, M>, B, St>>
where
    F: OneArgFn<C, M>,
    B: JacobianBackend<FormOf<F, C, M>, C, State = St>,
{
    let (form, m) = f.into_form(x, &ctx);
    prep_jacobian(form, m, backend, x, &ctx)
}

/// Prepares `jacobian` of a two-argument `f(y: &mut [S], x: &[S], contexts...)` whose
/// outputs go to buffers like `y` (only its length is read: the number of outputs,
/// checked once with the core's sparsity tracer, `SHADE-E0130` / `SHADE-E0131`).
pub fn prepare_jacobian_inplace<F, B, C, St>(
    f: F,
    y: &[f64],
    backend: &B,
    x: &[f64],
    ctx: C,
) -> InterfaceResult<Prepared<JacobianOp, TwoArg<F>, B, St>>
where
    B: JacobianBackend<TwoArg<F>, C, State = St>,
{
    let m = y.len();
    prep_jacobian(TwoArg { f, m }, m, backend, x, &ctx)
}

/// The Jacobian of a one-argument function: `m × n` for `f(x: &[S], contexts...) ->
/// Vec<S>`, whose output length `m` is inferred (one evaluation at `x`), `1 × n` for a
/// function returning `S`. Row-major `Vec<f64>`, or `CsMat<f64>` with `AutoSparse`.
///
/// ```
/// use shade_interface::{AutoFiniteDiff, AutoShade, jacobian, value_and_jacobian};
/// use shade_interface::{Real, shade_fn};
///
/// fn polar<S: Real>(x: &[S]) -> Vec<S> {
///     vec![x[0] * x[1].cos(), x[0] * x[1].sin(), x[0]]
/// }
/// let f = shade_fn!(polar(&[S]) -> Vec<S>);
/// let (y, j) = value_and_jacobian(f, &AutoShade::FORWARD, &[2.0, 0.0], ())?;
/// assert_eq!(y, [2.0, 0.0, 2.0]);
/// assert_eq!(j, [1.0, 0.0, 0.0, 2.0, 1.0, 0.0]);
/// let fd = jacobian(f, &AutoFiniteDiff::CENTRAL, &[2.0, 0.0], ())?;
/// assert!(j.iter().zip(&fd).all(|(a, b)| (a - b).abs() < 1e-8));
/// # Ok::<(), shade_interface::InterfaceError>(())
/// ```
pub fn jacobian<F, M, B, C, J>(f: F, backend: &B, x: &[f64], ctx: C) -> InterfaceResult<J::Owned>
where
    F: OneArgFn<C, M>,
    B: JacobianBackend<FormOf<F, C, M>, C, Jacobian = J>,
    J: ?Sized + DerivativeMatrix,
{
    let (form, m) = f.into_form(x, &ctx);
    prep_jacobian(form, m, backend, x, &ctx)?.jacobian(x, ctx)
}

/// `(y, J)` of a one-argument function, as [`jacobian`].
pub fn value_and_jacobian<F, M, B, C, J>(
    f: F,
    backend: &B,
    x: &[f64],
    ctx: C,
) -> InterfaceResult<(Vec<f64>, J::Owned)>
where
    F: OneArgFn<C, M>,
    B: JacobianBackend<FormOf<F, C, M>, C, Jacobian = J>,
    J: ?Sized + DerivativeMatrix,
{
    let (form, m) = f.into_form(x, &ctx);
    prep_jacobian(form, m, backend, x, &ctx)?.value_and_jacobian(x, ctx)
}

/// The Jacobian of a two-argument function, writing `y = f(x)`: the buffer `y` gives
/// the number of outputs `m`. `J` is row-major `m × n` (a `Vec<f64>`), or a
/// `CsMat<f64>` with `AutoSparse`.
///
/// `y.len()` is checked by one evaluation with the core's sparsity tracer (at
/// preparation with `AutoShade` and `AutoSparse`, at the first call with the generic
/// backends): a function that writes fewer outputs is `SHADE-E0130`, one that indexes
/// past `y` `SHADE-E0131`, never a zero row or a panic.
///
/// ```
/// use shade_interface::{AutoShade, value_and_jacobian_inplace};
/// use shade_interface::{Real, shade_fn};
///
/// fn polar<S: Real>(y: &mut [S], x: &[S]) {
///     y[0] = x[0] * x[1].cos();
///     y[1] = x[0] * x[1].sin();
/// }
/// let f = shade_fn!(polar(&mut [S], &[S]));
/// let mut y = [0.0; 2];
/// let j = value_and_jacobian_inplace(f, &mut y, &AutoShade::REVERSE, &[2.0, 0.0], ())?;
/// assert_eq!((y, j), ([2.0, 0.0], vec![1.0, 0.0, 0.0, 2.0]));
///
/// let e = value_and_jacobian_inplace(f, &mut [0.0; 3], &AutoShade::REVERSE, &[2.0, 0.0], ());
/// assert_eq!(e.unwrap_err().code(), "SHADE-E0130");
/// # Ok::<(), shade_interface::InterfaceError>(())
/// ```
pub fn value_and_jacobian_inplace<F, B, C, J>(
    f: F,
    y: &mut [f64],
    backend: &B,
    x: &[f64],
    ctx: C,
) -> InterfaceResult<J::Owned>
where
    B: JacobianBackend<TwoArg<F>, C, Jacobian = J>,
    J: ?Sized + DerivativeMatrix,
{
    let m = y.len();
    let mut p = prep_jacobian(TwoArg { f, m }, m, backend, x, &ctx)?;
    let mut j = p.backend.new_jacobian(&p.state, &p.meta);
    p.value_and_jacobian_into(x, ctx, y, j.borrow_mut())?;
    Ok(j)
}

impl<V, B: Backend, St> Prepared<JacobianOp, V, B, St> {
    /// The Jacobian (`m × n`: row-major `Vec<f64>`, or `CsMat<f64>` with `AutoSparse`).
    pub fn jacobian<C, J>(&mut self, x: &[f64], ctx: C) -> InterfaceResult<J::Owned>
    where
        B: JacobianBackend<V, C, State = St, Jacobian = J>,
        J: ?Sized + DerivativeMatrix,
    {
        self.value_and_jacobian(x, ctx).map(|r| r.1)
    }

    /// A zero Jacobian of the prepared shape (and, with `AutoSparse`, pattern): the
    /// buffer of [`jacobian_into`](Self::jacobian_into).
    pub fn new_jacobian<C, J>(&self) -> J::Owned
    where
        B: JacobianBackend<V, C, State = St, Jacobian = J>,
        J: ?Sized + DerivativeMatrix,
    {
        self.backend.new_jacobian(&self.state, &self.meta)
    }

    /// Writes the Jacobian into `jac` (the outputs go to a buffer of the prepared
    /// object, so this does not allocate either).
    pub fn jacobian_into<C, J>(&mut self, x: &[f64], ctx: C, jac: &mut J) -> InterfaceResult<()>
    where
        B: JacobianBackend<V, C, State = St, Jacobian = J>,
        J: ?Sized + DerivativeMatrix,
    {
        let mut y = core::mem::take(&mut self.out);
        let r = self.value_and_jacobian_into(x, ctx, &mut y, jac);
        self.out = y;
        r
    }

    /// `(y, J)`.
    pub fn value_and_jacobian<C, J>(
        &mut self,
        x: &[f64],
        ctx: C,
    ) -> InterfaceResult<(Vec<f64>, J::Owned)>
    where
        B: JacobianBackend<V, C, State = St, Jacobian = J>,
        J: ?Sized + DerivativeMatrix,
    {
        let mut y = vec![0.0; self.meta.m];
        let mut j = self.backend.new_jacobian(&self.state, &self.meta);
        self.value_and_jacobian_into(x, ctx, &mut y, j.borrow_mut())?;
        Ok((y, j))
    }

    /// Writes `y = f(x)` and the Jacobian.
    #[inline]
    pub fn value_and_jacobian_into<C, J>(
        &mut self,
        x: &[f64],
        ctx: C,
        y: &mut [f64],
        jac: &mut J,
    ) -> InterfaceResult<()>
    where
        B: JacobianBackend<V, C, State = St, Jacobian = J>,
        J: ?Sized + DerivativeMatrix,
    {
        self.check(x.len(), &ctx)?;
        self.meta.arg("y", self.meta.m, y.len())?;
        self.backend.check_jacobian(&self.state, &self.meta, jac)?;
        self.backend
            .value_and_jacobian_into(&mut self.state, &self.f, x, &ctx, y, jac)
    }
}
