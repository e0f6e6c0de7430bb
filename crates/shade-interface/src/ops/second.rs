//! Second-order operators of one-argument functions: `second_derivative`, `hessian`,
//! `hvp`.

use super::{HessianOp, HvpOp, SecondDerivativeOp};
use crate::backend::{Backend, Operator};
use crate::error::InterfaceResult;
use crate::form::OneArg;
use crate::matrix::DerivativeMatrix;
use crate::prep::{Meta, PrepareBackend, Prepared, prepare};
use core::borrow::BorrowMut;

/// A backend that computes second derivatives of `f(x: S, contexts...) -> S`.
#[diagnostic::on_unimplemented(
    message = "backend `{Self}` cannot compute `second_derivative` of `{F}` with contexts `{C}`",
    label = "no second derivative for this backend, function and contexts",
    note = "`second_derivative` takes `shade_fn!(f(S, ...))`; second-order backends: AutoShade, AutoFiniteDiff, AutoNumDual"
)]
pub trait SecondDerivativeBackend<F, C>: PrepareBackend<OneArg<F>, C> {
    /// `(f(x), f'(x), f''(x))`.
    fn value_derivative_and_second_derivative(
        &self,
        st: &mut Self::State,
        f: &OneArg<F>,
        x: f64,
        ctx: &C,
    ) -> InterfaceResult<(f64, f64, f64)>;
}

/// A backend that computes Hessians of `f(x: &[S], contexts...) -> S`.
#[diagnostic::on_unimplemented(
    message = "backend `{Self}` cannot compute `hessian` of `{F}` with contexts `{C}`",
    label = "no Hessian for this backend, function and contexts",
    note = "`hessian` takes `shade_fn!(f(&[S], ...))`; second-order backends: AutoShade, AutoFiniteDiff, AutoNumDual, `SecondOrder {{ outer: AutoShade::FORWARD, inner: AutoShade::REVERSE }}` (the core nests forward over reverse only), `SecondOrder {{ outer: AutoFiniteDiff::CENTRAL, inner: <a gradient backend> }}`"
)]
pub trait HessianBackend<F, C>: PrepareBackend<OneArg<F>, C> {
    /// How the Hessian is stored: `[f64]` (dense `n × n`, row-major) for every backend
    /// but `AutoSparse`, whose Hessian is a `CsMat<f64>` with the detected pattern.
    type Hessian: ?Sized + DerivativeMatrix;
    /// A zero Hessian of the prepared shape (and pattern).
    fn new_hessian(
        &self,
        st: &Self::State,
        meta: &Meta,
    ) -> <Self::Hessian as DerivativeMatrix>::Owned;
    /// Checks a Hessian buffer against the preparation (length, or shape and pattern).
    fn check_hessian(
        &self,
        st: &Self::State,
        meta: &Meta,
        h: &Self::Hessian,
    ) -> InterfaceResult<()>;
    /// Writes the Hessian into `h`.
    fn hessian_into(
        &self,
        st: &mut Self::State,
        f: &OneArg<F>,
        x: &[f64],
        ctx: &C,
        h: &mut Self::Hessian,
    ) -> InterfaceResult<()>;
    /// Writes `∇f(x)` and the Hessian, returns `f(x)`.
    #[allow(clippy::too_many_arguments)]
    fn value_gradient_and_hessian_into(
        &self,
        st: &mut Self::State,
        f: &OneArg<F>,
        x: &[f64],
        ctx: &C,
        g: &mut [f64],
        h: &mut Self::Hessian,
    ) -> InterfaceResult<f64>;
}

/// The Hessian type backend `B` returns for `f` and contexts `C`: `Vec<f64>` (dense,
/// row-major) or `CsMat<f64>` (`AutoSparse`).
pub type HessianOf<B, F, C> = <<B as HessianBackend<F, C>>::Hessian as DerivativeMatrix>::Owned;

/// A backend that computes Hessian-vector products of `f(x: &[S], contexts...) -> S`.
#[diagnostic::on_unimplemented(
    message = "backend `{Self}` cannot compute `hvp` of `{F}` with contexts `{C}`",
    label = "no Hessian-vector product for this backend, function and contexts",
    note = "`hvp` takes `shade_fn!(f(&[S], ...))`; second-order backends: AutoShade, AutoFiniteDiff, AutoNumDual, `SecondOrder {{ outer: AutoShade::FORWARD, inner: AutoShade::REVERSE }}` (the core nests forward over reverse only), `SecondOrder {{ outer: AutoFiniteDiff::CENTRAL, inner: <a gradient backend> }}`"
)]
pub trait HvpBackend<F, C>: PrepareBackend<OneArg<F>, C> {
    /// Writes `∇²f(x) v` into `hv`.
    #[allow(clippy::too_many_arguments)]
    fn hvp_into(
        &self,
        st: &mut Self::State,
        f: &OneArg<F>,
        x: &[f64],
        v: &[f64],
        ctx: &C,
        hv: &mut [f64],
    ) -> InterfaceResult<()>;
    /// Writes `∇f(x)` and `∇²f(x) v`, returns `f(x)`.
    #[allow(clippy::too_many_arguments)]
    fn gradient_and_hvp_into(
        &self,
        st: &mut Self::State,
        f: &OneArg<F>,
        x: &[f64],
        v: &[f64],
        ctx: &C,
        g: &mut [f64],
        hv: &mut [f64],
    ) -> InterfaceResult<f64>;
    /// Writes `hvs[k] = ∇²f(x) vs[k]` for the directions stacked in `vs` (`k × n`). The
    /// default runs one product per direction; the native backend propagates several
    /// directions per recording.
    fn hvp_batch_into(
        &self,
        st: &mut Self::State,
        f: &OneArg<F>,
        x: &[f64],
        vs: &[f64],
        ctx: &C,
        hvs: &mut [f64],
    ) -> InterfaceResult<()> {
        crate::ops::each_tangent(x.len(), x.len(), vs, hvs, |v, hv| {
            self.hvp_into(st, f, x, v, ctx, hv)
        })
    }
}

// ---------------------------------------------------------------- second_derivative

fn prep_second_derivative<F, B: SecondDerivativeBackend<F, C>, C>(
    f: F,
    backend: &B,
    x: f64,
    ctx: &C,
) -> InterfaceResult<Prepared<SecondDerivativeOp, OneArg<F>, B, B::State>> {
    prepare(
        Operator::SecondDerivative,
        OneArg(f),
        (1, 1),
        backend,
        &[x],
        ctx,
        |b, st, f, _| {
            b.value_derivative_and_second_derivative(st, f, x, ctx)
                .map(drop)
        },
    )
}

/// Prepares `second_derivative` of `f(x: S, contexts...) -> S`.
pub fn prepare_second_derivative<F, B, C, St>(
    f: F,
    backend: &B,
    x: f64,
    ctx: C,
) -> InterfaceResult<Prepared<SecondDerivativeOp, OneArg<F>, B, St>>
where
    B: SecondDerivativeBackend<F, C, State = St>,
{
    prep_second_derivative(f, backend, x, &ctx)
}

/// `f''(x)` for `f(x: S, contexts...) -> S`.
///
/// ```
/// use shade_interface::{AutoFiniteDiff, AutoShade, second_derivative};
/// use shade_interface::{Real, shade_fn};
///
/// fn f<S: Real>(x: S) -> S { x.powi(3) }
/// assert_eq!(second_derivative(shade_fn!(f(S)), &AutoShade::FORWARD, 2.0, ())?, 12.0);
/// let fd = second_derivative(shade_fn!(f(S)), &AutoFiniteDiff::CENTRAL, 2.0, ())?;
/// assert!((fd - 12.0).abs() < 1e-6);
/// # Ok::<(), shade_interface::InterfaceError>(())
/// ```
pub fn second_derivative<F, B, C>(f: F, backend: &B, x: f64, ctx: C) -> InterfaceResult<f64>
where
    B: SecondDerivativeBackend<F, C>,
{
    prep_second_derivative(f, backend, x, &ctx)?.second_derivative(x, ctx)
}

impl<F, B: Backend, St> Prepared<SecondDerivativeOp, OneArg<F>, B, St> {
    /// `f''(x)`.
    pub fn second_derivative<C>(&mut self, x: f64, ctx: C) -> InterfaceResult<f64>
    where
        B: SecondDerivativeBackend<F, C, State = St>,
    {
        self.value_derivative_and_second_derivative(x, ctx)
            .map(|r| r.2)
    }

    /// `(f(x), f'(x), f''(x))`.
    pub fn value_derivative_and_second_derivative<C>(
        &mut self,
        x: f64,
        ctx: C,
    ) -> InterfaceResult<(f64, f64, f64)>
    where
        B: SecondDerivativeBackend<F, C, State = St>,
    {
        self.check(1, &ctx)?;
        self.backend
            .value_derivative_and_second_derivative(&mut self.state, &self.f, x, &ctx)
    }
}

// ---------------------------------------------------------------- hessian

fn prep_hessian<F, B: HessianBackend<F, C>, C>(
    f: F,
    backend: &B,
    x: &[f64],
    ctx: &C,
) -> InterfaceResult<Prepared<HessianOp, OneArg<F>, B, B::State>> {
    let mut g = vec![0.0; x.len()];
    let mut h: Option<HessianOf<B, F, C>> = None;
    prepare(
        Operator::Hessian,
        OneArg(f),
        (x.len(), 1),
        backend,
        x,
        ctx,
        |b, st, f, meta| {
            let h = h.get_or_insert_with(|| b.new_hessian(st, meta));
            b.value_gradient_and_hessian_into(st, f, x, ctx, &mut g, h.borrow_mut())
                .map(drop)
        },
    )
}

/// Prepares `hessian` of `f(x: &[S], contexts...) -> S`.
pub fn prepare_hessian<F, B, C, St>(
    f: F,
    backend: &B,
    x: &[f64],
    ctx: C,
) -> InterfaceResult<Prepared<HessianOp, OneArg<F>, B, St>>
where
    B: HessianBackend<F, C, State = St>,
{
    prep_hessian(f, backend, x, &ctx)
}

/// The Hessian of `f(x: &[S], contexts...) -> S`: `n × n` row-major (`Vec<f64>`), or a
/// `CsMat<f64>` with `AutoSparse`.
pub fn hessian<F, B, C, H>(f: F, backend: &B, x: &[f64], ctx: C) -> InterfaceResult<H::Owned>
where
    B: HessianBackend<F, C, Hessian = H>,
    H: ?Sized + DerivativeMatrix,
{
    prep_hessian(f, backend, x, &ctx)?.hessian(x, ctx)
}

impl<F, B: Backend, St> Prepared<HessianOp, OneArg<F>, B, St> {
    /// The Hessian.
    pub fn hessian<C, H>(&mut self, x: &[f64], ctx: C) -> InterfaceResult<H::Owned>
    where
        B: HessianBackend<F, C, State = St, Hessian = H>,
        H: ?Sized + DerivativeMatrix,
    {
        let mut h = self.new_hessian();
        self.hessian_into(x, ctx, h.borrow_mut())?;
        Ok(h)
    }

    /// A zero Hessian of the prepared shape (and, with `AutoSparse`, pattern): the
    /// buffer of [`hessian_into`](Self::hessian_into).
    pub fn new_hessian<C, H>(&self) -> H::Owned
    where
        B: HessianBackend<F, C, State = St, Hessian = H>,
        H: ?Sized + DerivativeMatrix,
    {
        self.backend.new_hessian(&self.state, &self.meta)
    }

    /// Writes the Hessian into `h`.
    pub fn hessian_into<C, H>(&mut self, x: &[f64], ctx: C, h: &mut H) -> InterfaceResult<()>
    where
        B: HessianBackend<F, C, State = St, Hessian = H>,
        H: ?Sized + DerivativeMatrix,
    {
        self.check(x.len(), &ctx)?;
        self.backend.check_hessian(&self.state, &self.meta, h)?;
        self.backend
            .hessian_into(&mut self.state, &self.f, x, &ctx, h)
    }

    /// `(f(x), ∇f(x), ∇²f(x))`.
    pub fn value_gradient_and_hessian<C, H>(
        &mut self,
        x: &[f64],
        ctx: C,
    ) -> InterfaceResult<(f64, Vec<f64>, H::Owned)>
    where
        B: HessianBackend<F, C, State = St, Hessian = H>,
        H: ?Sized + DerivativeMatrix,
    {
        let mut g = vec![0.0; self.meta.n];
        let mut h = self.new_hessian();
        let y = self.value_gradient_and_hessian_into(x, ctx, &mut g, h.borrow_mut())?;
        Ok((y, g, h))
    }

    /// Writes `∇f(x)` and `∇²f(x)`, returns `f(x)`.
    pub fn value_gradient_and_hessian_into<C, H>(
        &mut self,
        x: &[f64],
        ctx: C,
        g: &mut [f64],
        h: &mut H,
    ) -> InterfaceResult<f64>
    where
        B: HessianBackend<F, C, State = St, Hessian = H>,
        H: ?Sized + DerivativeMatrix,
    {
        self.check(x.len(), &ctx)?;
        self.meta.arg("gradient", self.meta.n, g.len())?;
        self.backend.check_hessian(&self.state, &self.meta, h)?;
        self.backend
            .value_gradient_and_hessian_into(&mut self.state, &self.f, x, &ctx, g, h)
    }
}

// ---------------------------------------------------------------- hvp

fn prep_hvp<F, B: HvpBackend<F, C>, C>(
    f: F,
    backend: &B,
    x: &[f64],
    ctx: &C,
) -> InterfaceResult<Prepared<HvpOp, OneArg<F>, B, B::State>> {
    let (v, mut g, mut hv) = (vec![0.0; x.len()], vec![0.0; x.len()], vec![0.0; x.len()]);
    prepare(
        Operator::Hvp,
        OneArg(f),
        (x.len(), 1),
        backend,
        x,
        ctx,
        |b, st, f, _| {
            b.gradient_and_hvp_into(st, f, x, &v, ctx, &mut g, &mut hv)
                .map(drop)
        },
    )
}

/// Prepares `hvp` of `f(x: &[S], contexts...) -> S`.
pub fn prepare_hvp<F, B, C, St>(
    f: F,
    backend: &B,
    x: &[f64],
    ctx: C,
) -> InterfaceResult<Prepared<HvpOp, OneArg<F>, B, St>>
where
    B: HvpBackend<F, C, State = St>,
{
    prep_hvp(f, backend, x, &ctx)
}

/// `∇²f(x) v` for `f(x: &[S], contexts...) -> S`.
///
/// ```
/// use shade_interface::{AutoShade, SecondOrder, hvp};
/// use shade_interface::{Real, shade_fn};
///
/// fn f<S: Real>(x: &[S]) -> S { x[0] * x[0] * x[1] }
/// let b = SecondOrder { outer: AutoShade::FORWARD, inner: AutoShade::REVERSE };
/// assert_eq!(hvp(shade_fn!(f(&[S])), &b, &[1.0, 3.0], &[1.0, 1.0], ())?, [8.0, 2.0]);
/// # Ok::<(), shade_interface::InterfaceError>(())
/// ```
pub fn hvp<F, B, C>(f: F, backend: &B, x: &[f64], v: &[f64], ctx: C) -> InterfaceResult<Vec<f64>>
where
    B: HvpBackend<F, C>,
{
    prep_hvp(f, backend, x, &ctx)?.hvp(x, v, ctx)
}

impl<F, B: Backend, St> Prepared<HvpOp, OneArg<F>, B, St> {
    /// `∇²f(x) v`.
    pub fn hvp<C>(&mut self, x: &[f64], v: &[f64], ctx: C) -> InterfaceResult<Vec<f64>>
    where
        B: HvpBackend<F, C, State = St>,
    {
        let mut hv = vec![0.0; self.meta.n];
        self.hvp_into(x, v, ctx, &mut hv)?;
        Ok(hv)
    }

    /// Writes `∇²f(x) v` into `hv`.
    pub fn hvp_into<C>(
        &mut self,
        x: &[f64],
        v: &[f64],
        ctx: C,
        hv: &mut [f64],
    ) -> InterfaceResult<()>
    where
        B: HvpBackend<F, C, State = St>,
    {
        self.check(x.len(), &ctx)?;
        self.meta.arg("v", self.meta.n, v.len())?;
        self.meta.arg("hvp", self.meta.n, hv.len())?;
        self.backend
            .hvp_into(&mut self.state, &self.f, x, v, &ctx, hv)
    }

    /// `(∇f(x), ∇²f(x) v)` (the `value_and_` variant of `hvp`, as in DifferentiationInterface).
    pub fn gradient_and_hvp<C>(
        &mut self,
        x: &[f64],
        v: &[f64],
        ctx: C,
    ) -> InterfaceResult<(Vec<f64>, Vec<f64>)>
    where
        B: HvpBackend<F, C, State = St>,
    {
        let (mut g, mut hv) = (vec![0.0; self.meta.n], vec![0.0; self.meta.n]);
        self.gradient_and_hvp_into(x, v, ctx, &mut g, &mut hv)?;
        Ok((g, hv))
    }

    /// Writes `∇f(x)` and `∇²f(x) v`, returns `f(x)`.
    pub fn gradient_and_hvp_into<C>(
        &mut self,
        x: &[f64],
        v: &[f64],
        ctx: C,
        g: &mut [f64],
        hv: &mut [f64],
    ) -> InterfaceResult<f64>
    where
        B: HvpBackend<F, C, State = St>,
    {
        self.check(x.len(), &ctx)?;
        self.meta.arg("v", self.meta.n, v.len())?;
        self.meta.arg("gradient", self.meta.n, g.len())?;
        self.meta.arg("hvp", self.meta.n, hv.len())?;
        self.backend
            .gradient_and_hvp_into(&mut self.state, &self.f, x, v, &ctx, g, hv)
    }

    /// Batched `hvp`: `vs` stacks `k` directions; the result stacks `k` products.
    pub fn hvp_batch<C>(&mut self, x: &[f64], vs: &[f64], ctx: C) -> InterfaceResult<Vec<f64>>
    where
        B: HvpBackend<F, C, State = St>,
    {
        self.check(x.len(), &ctx)?;
        let n = self.meta.n;
        let k = self.meta.batch(n, vs.len())?;
        let mut out = vec![0.0; k * n];
        self.backend
            .hvp_batch_into(&mut self.state, &self.f, x, vs, &ctx, &mut out)?;
        Ok(out)
    }
}
