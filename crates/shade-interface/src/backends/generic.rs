//! The generic path: backends that only know how to evaluate a function's
//! instantiations ([`GenericBackend`]: values, directional first derivatives, bilinear
//! second derivatives) get all eight operators from here.
//!
//! `AutoFiniteDiff` and `AutoNumDual` use it; `AutoShade` never does.

use crate::backend::Backend;
use crate::context::{ContextPassing, Contexts};
use crate::error::InterfaceResult;
use crate::explain::{PathKind, Report};
use crate::form::{OneArg, ScalarForm, VecForm};
use crate::ops::{
    DerivativeBackend, GradientBackend, HessianBackend, HvpBackend, JacobianBackend,
    PullbackBackend, PushforwardBackend, SecondDerivativeBackend,
};
use crate::prep::Meta;

/// A backend that evaluates function instantiations: everything else is derived.
#[diagnostic::on_unimplemented(
    message = "backend `{Self}` does not support this operator",
    label = "this backend cannot run the operator",
    note = "every operator: AutoShade, AutoFiniteDiff, AutoNumDual (feature `num-dual`); `SecondOrder` backends compute `hessian` and `hvp` only"
)]
pub trait GenericBackend: Backend {
    /// Buffers of the backend kept between calls.
    type Work: Default + core::fmt::Debug;
    /// What the backend evaluates, for reports (e.g. `"central differences of the f64 instantiation"`).
    fn describe(&self) -> String;
    /// Function evaluations per directional derivative.
    fn evals_per_jvp(&self) -> usize;
    /// Function evaluations per second-order directional derivative.
    fn evals_per_second(&self) -> usize;
    /// Bytes held by `w`.
    fn work_bytes(&self, w: &Self::Work) -> usize;
    /// `y = f(x)`.
    fn value<V: VecForm<C>, C>(&self, w: &mut Self::Work, f: &V, ctx: &C, x: &[f64], y: &mut [f64]);
    /// `dy = J(x) dx`, given `y0 = f(x)`.
    #[allow(clippy::too_many_arguments)]
    fn jvp<V: VecForm<C>, C>(
        &self,
        w: &mut Self::Work,
        f: &V,
        ctx: &C,
        x: &[f64],
        y0: &[f64],
        dx: &[f64],
        dy: &mut [f64],
    );
    /// `y = f(x)` and `dy = f'(x)` for a scalar input.
    fn scalar_jvp<V: ScalarForm<C>, C>(
        &self,
        w: &mut Self::Work,
        f: &V,
        ctx: &C,
        x: f64,
        y: &mut [f64],
        dy: &mut [f64],
    );
    /// `uᵀ ∇²f(x) v` for a one-output function.
    fn second<V: VecForm<C>, C>(
        &self,
        w: &mut Self::Work,
        f: &V,
        ctx: &C,
        x: &[f64],
        u: &[f64],
        v: &[f64],
    ) -> f64;
    /// `(f(x), f'(x), f''(x))` for a scalar input and one output.
    fn scalar_second<V: ScalarForm<C>, C>(
        &self,
        w: &mut Self::Work,
        f: &V,
        ctx: &C,
        x: f64,
    ) -> (f64, f64, f64);
}

/// Prepared state of a generic backend.
#[derive(Debug, Default)]
pub struct GenericState<W> {
    work: W,
    /// Unit vector of length `n`.
    unit: Vec<f64>,
    /// One Jacobian column (length `m`).
    col: Vec<f64>,
    /// Primal output (length `m`).
    y0: Vec<f64>,
}

impl<W: Default> GenericState<W> {
    fn new(meta: &Meta) -> Self {
        GenericState {
            work: W::default(),
            unit: vec![0.0; meta.n],
            col: vec![0.0; meta.m],
            y0: vec![0.0; meta.m],
        }
    }
}

fn report<B: GenericBackend>(
    b: &B,
    st: &GenericState<B::Work>,
    meta: &Meta,
    calls: usize,
) -> Report {
    Report {
        operator: meta.operator.name(),
        backend: b.name(),
        path: PathKind::Generic,
        detail: format!(
            "generic fallback: {}, {calls} evaluations per call",
            b.describe()
        ),
        contexts: meta.ctx.passing(
            |_| ContextPassing::CacheConverted,
            ContextPassing::ConstantConverted,
        ),
        batch: 1,
        calls,
        tape_records: None,
        reserved_bytes: b.work_bytes(&st.work)
            + 8 * (st.unit.capacity() + st.col.capacity() + st.y0.capacity()),
    }
}

/// Jacobian by columns: `jac[r n + j] = (J e_j)_r`; writes `y`.
fn jacobian_cols<B: GenericBackend, V: VecForm<C>, C>(
    b: &B,
    st: &mut GenericState<B::Work>,
    f: &V,
    ctx: &C,
    x: &[f64],
    y: &mut [f64],
    jac: &mut [f64],
) {
    let n = x.len();
    b.value(&mut st.work, f, ctx, x, y);
    for j in 0..n {
        st.unit[j] = 1.0;
        b.jvp(&mut st.work, f, ctx, x, y, &st.unit, &mut st.col);
        st.unit[j] = 0.0;
        for (r, c) in st.col.iter().enumerate() {
            jac[r * n + j] = *c;
        }
    }
}

impl<B: GenericBackend, V: ScalarForm<C>, C: Contexts> DerivativeBackend<V, C> for B {
    type State = GenericState<B::Work>;
    fn prepare_derivative(
        &self,
        _: &V,
        _: f64,
        _: &C,
        meta: &Meta,
    ) -> InterfaceResult<Self::State> {
        Ok(GenericState::new(meta))
    }
    fn value_and_derivative_into(
        &self,
        st: &mut Self::State,
        f: &V,
        x: f64,
        ctx: &C,
        y: &mut [f64],
        der: &mut [f64],
    ) -> InterfaceResult<()> {
        self.scalar_jvp(&mut st.work, f, ctx, x, y, der);
        Ok(())
    }
    fn explain_derivative(&self, st: &Self::State, meta: &Meta) -> Report {
        report(self, st, meta, self.evals_per_jvp())
    }
}

impl<B: GenericBackend, F, C: Contexts> GradientBackend<F, C> for B
where
    OneArg<F>: VecForm<C>,
{
    type State = GenericState<B::Work>;
    fn prepare_gradient(
        &self,
        _: &OneArg<F>,
        _: &[f64],
        _: &C,
        meta: &Meta,
    ) -> InterfaceResult<Self::State> {
        Ok(GenericState::new(meta))
    }
    fn value_and_gradient_into(
        &self,
        st: &mut Self::State,
        f: &OneArg<F>,
        x: &[f64],
        ctx: &C,
        g: &mut [f64],
    ) -> InterfaceResult<f64> {
        let mut y = [0.0];
        jacobian_cols(self, st, f, ctx, x, &mut y, g);
        Ok(y[0])
    }
    fn explain_gradient(&self, st: &Self::State, meta: &Meta) -> Report {
        report(self, st, meta, 1 + meta.n * self.evals_per_jvp())
    }
}

impl<B: GenericBackend, V: VecForm<C>, C: Contexts> JacobianBackend<V, C> for B {
    type State = GenericState<B::Work>;
    fn prepare_jacobian(
        &self,
        _: &V,
        _: &[f64],
        _: &C,
        meta: &Meta,
    ) -> InterfaceResult<Self::State> {
        Ok(GenericState::new(meta))
    }
    fn value_and_jacobian_into(
        &self,
        st: &mut Self::State,
        f: &V,
        x: &[f64],
        ctx: &C,
        y: &mut [f64],
        jac: &mut [f64],
    ) -> InterfaceResult<()> {
        jacobian_cols(self, st, f, ctx, x, y, jac);
        Ok(())
    }
    fn explain_jacobian(&self, st: &Self::State, meta: &Meta) -> Report {
        report(self, st, meta, 1 + meta.n * self.evals_per_jvp())
    }
}

impl<B: GenericBackend, V: VecForm<C>, C: Contexts> PushforwardBackend<V, C> for B {
    type State = GenericState<B::Work>;
    fn prepare_pushforward(
        &self,
        _: &V,
        _: &[f64],
        _: &C,
        meta: &Meta,
    ) -> InterfaceResult<Self::State> {
        Ok(GenericState::new(meta))
    }
    fn value_and_pushforward_into(
        &self,
        st: &mut Self::State,
        f: &V,
        x: &[f64],
        dx: &[f64],
        ctx: &C,
        y: &mut [f64],
        dy: &mut [f64],
    ) -> InterfaceResult<()> {
        self.value(&mut st.work, f, ctx, x, y);
        self.jvp(&mut st.work, f, ctx, x, y, dx, dy);
        Ok(())
    }
    fn explain_pushforward(&self, st: &Self::State, meta: &Meta) -> Report {
        report(self, st, meta, 1 + self.evals_per_jvp())
    }
}

impl<B: GenericBackend, V: VecForm<C>, C: Contexts> PullbackBackend<V, C> for B {
    type State = GenericState<B::Work>;
    fn prepare_pullback(
        &self,
        _: &V,
        _: &[f64],
        _: &C,
        meta: &Meta,
    ) -> InterfaceResult<Self::State> {
        Ok(GenericState::new(meta))
    }
    fn value_and_pullback_into(
        &self,
        st: &mut Self::State,
        f: &V,
        x: &[f64],
        dy: &[f64],
        ctx: &C,
        y: &mut [f64],
        dx: &mut [f64],
    ) -> InterfaceResult<()> {
        // (Jᵀ dy)_j = dy · (J e_j): one directional derivative per input.
        self.value(&mut st.work, f, ctx, x, y);
        for (j, d) in dx.iter_mut().enumerate() {
            st.unit[j] = 1.0;
            self.jvp(&mut st.work, f, ctx, x, y, &st.unit, &mut st.col);
            st.unit[j] = 0.0;
            *d = st.col.iter().zip(dy).map(|(a, b)| a * b).sum();
        }
        Ok(())
    }
    fn explain_pullback(&self, st: &Self::State, meta: &Meta) -> Report {
        report(self, st, meta, 1 + meta.n * self.evals_per_jvp())
    }
}

impl<B: GenericBackend, F, C: Contexts> SecondDerivativeBackend<F, C> for B
where
    OneArg<F>: ScalarForm<C>,
{
    type State = GenericState<B::Work>;
    fn prepare_second_derivative(
        &self,
        _: &OneArg<F>,
        _: f64,
        _: &C,
        meta: &Meta,
    ) -> InterfaceResult<Self::State> {
        Ok(GenericState::new(meta))
    }
    fn value_derivative_and_second_derivative(
        &self,
        st: &mut Self::State,
        f: &OneArg<F>,
        x: f64,
        ctx: &C,
    ) -> InterfaceResult<(f64, f64, f64)> {
        Ok(self.scalar_second(&mut st.work, f, ctx, x))
    }
    fn explain_second_derivative(&self, st: &Self::State, meta: &Meta) -> Report {
        report(self, st, meta, self.evals_per_second())
    }
}

/// Writes the symmetric Hessian from `eᵢᵀ H eⱼ`, `j ≥ i`.
fn hessian_entries<B: GenericBackend, F, C>(
    b: &B,
    st: &mut GenericState<B::Work>,
    f: &OneArg<F>,
    ctx: &C,
    x: &[f64],
    h: &mut [f64],
) where
    OneArg<F>: VecForm<C>,
{
    let n = x.len();
    let mut ej = core::mem::take(&mut st.y0);
    ej.clear();
    ej.resize(n, 0.0);
    for i in 0..n {
        st.unit[i] = 1.0;
        for j in i..n {
            ej[j] = 1.0;
            let v = b.second(&mut st.work, f, ctx, x, &st.unit, &ej);
            ej[j] = 0.0;
            h[i * n + j] = v;
            h[j * n + i] = v;
        }
        st.unit[i] = 0.0;
    }
    ej.truncate(1);
    st.y0 = ej;
}

impl<B: GenericBackend, F, C: Contexts> HessianBackend<F, C> for B
where
    OneArg<F>: VecForm<C>,
{
    type State = GenericState<B::Work>;
    fn prepare_hessian(
        &self,
        _: &OneArg<F>,
        _: &[f64],
        _: &C,
        meta: &Meta,
    ) -> InterfaceResult<Self::State> {
        Ok(GenericState::new(meta))
    }
    fn hessian_into(
        &self,
        st: &mut Self::State,
        f: &OneArg<F>,
        x: &[f64],
        ctx: &C,
        h: &mut [f64],
    ) -> InterfaceResult<()> {
        hessian_entries(self, st, f, ctx, x, h);
        Ok(())
    }
    fn value_gradient_and_hessian_into(
        &self,
        st: &mut Self::State,
        f: &OneArg<F>,
        x: &[f64],
        ctx: &C,
        g: &mut [f64],
        h: &mut [f64],
    ) -> InterfaceResult<f64> {
        hessian_entries(self, st, f, ctx, x, h);
        let mut y = [0.0];
        jacobian_cols(self, st, f, ctx, x, &mut y, g);
        Ok(y[0])
    }
    fn explain_hessian(&self, st: &Self::State, meta: &Meta) -> Report {
        report(
            self,
            st,
            meta,
            meta.n * (meta.n + 1) / 2 * self.evals_per_second(),
        )
    }
}

impl<B: GenericBackend, F, C: Contexts> HvpBackend<F, C> for B
where
    OneArg<F>: VecForm<C>,
{
    type State = GenericState<B::Work>;
    fn prepare_hvp(
        &self,
        _: &OneArg<F>,
        _: &[f64],
        _: &C,
        meta: &Meta,
    ) -> InterfaceResult<Self::State> {
        Ok(GenericState::new(meta))
    }
    fn hvp_into(
        &self,
        st: &mut Self::State,
        f: &OneArg<F>,
        x: &[f64],
        v: &[f64],
        ctx: &C,
        hv: &mut [f64],
    ) -> InterfaceResult<()> {
        for (i, out) in hv.iter_mut().enumerate() {
            st.unit[i] = 1.0;
            *out = self.second(&mut st.work, f, ctx, x, &st.unit, v);
            st.unit[i] = 0.0;
        }
        Ok(())
    }
    fn gradient_and_hvp_into(
        &self,
        st: &mut Self::State,
        f: &OneArg<F>,
        x: &[f64],
        v: &[f64],
        ctx: &C,
        g: &mut [f64],
        hv: &mut [f64],
    ) -> InterfaceResult<f64> {
        self.hvp_into(st, f, x, v, ctx, hv)?;
        let mut y = [0.0];
        jacobian_cols(self, st, f, ctx, x, &mut y, g);
        Ok(y[0])
    }
    fn explain_hvp(&self, st: &Self::State, meta: &Meta) -> Report {
        report(self, st, meta, meta.n * self.evals_per_second())
    }
}
