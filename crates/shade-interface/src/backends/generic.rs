//! The generic path: backends that only know how to evaluate a function's
//! instantiations ([`GenericBackend`]: values, directional first derivatives, bilinear
//! second derivatives) get all eight operators from here.
//!
//! `AutoFiniteDiff` and `AutoNumDual` use it; `AutoShade` never does.

use crate::backend::{Backend, Operator};
use crate::context::Contexts;
use crate::error::InterfaceResult;
use crate::explain::{Report, Spec};
use crate::form::{OneArg, ScalarForm, VecForm};
use crate::ops::{
    DerivativeBackend, GradientBackend, HessianBackend, HvpBackend, JacobianBackend,
    PullbackBackend, PushforwardBackend, SecondDerivativeBackend, op_fn,
};
use crate::prep::{Meta, PrepareBackend};

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
    /// Whether a two-argument function's output length was checked (at the first call).
    probed: bool,
}

impl<W: Default> GenericState<W> {
    fn new(meta: &Meta) -> Self {
        GenericState {
            work: W::default(),
            unit: vec![0.0; meta.n],
            col: vec![0.0; meta.m],
            y0: vec![0.0; meta.m],
            probed: false,
        }
    }

    /// Checks the output length of `f` once (the first call), or at every call for a
    /// vector-valued function ([`VecForm::check_every_call`]: one more evaluation).
    fn check_vec<V: VecForm<C>, C>(&mut self, f: &V, x: &[f64], ctx: &C) -> InterfaceResult<()> {
        if !self.probed || f.check_every_call() {
            f.check_outputs(x, ctx)?;
            self.probed = true;
        }
        Ok(())
    }

    /// [`check_vec`](Self::check_vec) for a scalar input.
    fn check_scalar<V: ScalarForm<C>, C>(&mut self, f: &V, x: f64, ctx: &C) -> InterfaceResult<()> {
        if !self.probed {
            f.check_outputs(x, ctx)?;
            self.probed = true;
        }
        Ok(())
    }
}

/// Preparation and report: one state for every operator; no warm-up (the generic
/// state holds plain vectors sized at preparation).
#[diagnostic::do_not_recommend]
impl<B: GenericBackend, V, C: Contexts> PrepareBackend<V, C> for B {
    type State = GenericState<B::Work>;
    op_fn!(contexts);
    fn prepare(&self, _: &V, _: &[f64], _: &C, meta: &Meta) -> InterfaceResult<Self::State> {
        Ok(GenericState::new(meta))
    }
    fn explain(&self, st: &Self::State, meta: &Meta) -> Report {
        let (n, jvp, second) = (meta.n, self.evals_per_jvp(), self.evals_per_second());
        let calls = match meta.operator {
            Operator::Derivative => jvp,
            Operator::SecondDerivative => second,
            Operator::Gradient | Operator::Jacobian | Operator::Pullback => 1 + n * jvp,
            Operator::Pushforward => 1 + jvp,
            Operator::Hessian => n * (n + 1) / 2 * second,
            Operator::Hvp => n * second,
        };
        let detail = format!(
            "generic fallback: {}, {calls} evaluations per call",
            self.describe()
        );
        let bytes = self.work_bytes(&st.work)
            + 8 * (st.unit.capacity() + st.col.capacity() + st.y0.capacity());
        Spec::generic(detail, calls).report(self, meta, None, bytes)
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

#[diagnostic::do_not_recommend]
impl<B: GenericBackend, V: ScalarForm<C>, C: Contexts> DerivativeBackend<V, C> for B {
    op_fn!(value_and_derivative_into(self, st: Self::State, f, x, ctx, y, der) {
        st.check_scalar(f, x, ctx)?;
        self.scalar_jvp(&mut st.work, f, ctx, x, y, der);
        Ok(())
    });
}

#[diagnostic::do_not_recommend]
impl<B: GenericBackend, F, C: Contexts> GradientBackend<F, C> for B
where
    OneArg<F>: VecForm<C>,
{
    op_fn!(value_and_gradient_into(self, st: Self::State, f, x, ctx, g) {
        Ok(value_and_gradient(self, st, f, ctx, x, g))
    });
}

#[diagnostic::do_not_recommend]
impl<B: GenericBackend, V: VecForm<C>, C: Contexts> JacobianBackend<V, C> for B {
    crate::matrix::dense_jacobian!();
    op_fn!(value_and_jacobian_into(self, st: Self::State, f, x, ctx, y, jac: [f64]) {
        st.check_vec(f, x, ctx)?;
        jacobian_cols(self, st, f, ctx, x, y, jac);
        Ok(())
    });
}

#[diagnostic::do_not_recommend]
impl<B: GenericBackend, V: VecForm<C>, C: Contexts> PushforwardBackend<V, C> for B {
    op_fn!(value_and_pushforward_into(self, st: Self::State, f, x, dx, ctx, y, dy) {
        st.check_vec(f, x, ctx)?;
        self.value(&mut st.work, f, ctx, x, y);
        self.jvp(&mut st.work, f, ctx, x, y, dx, dy);
        Ok(())
    });
}

#[diagnostic::do_not_recommend]
impl<B: GenericBackend, V: VecForm<C>, C: Contexts> PullbackBackend<V, C> for B {
    op_fn!(value_and_pullback_into(self, st: Self::State, f, x, dy, ctx, y, dx) {
        // (Jᵀ dy)_j = dy · (J e_j): one directional derivative per input.
        st.check_vec(f, x, ctx)?;
        self.value(&mut st.work, f, ctx, x, y);
        for (j, d) in dx.iter_mut().enumerate() {
            st.unit[j] = 1.0;
            self.jvp(&mut st.work, f, ctx, x, y, &st.unit, &mut st.col);
            st.unit[j] = 0.0;
            *d = st.col.iter().zip(dy).map(|(a, b)| a * b).sum();
        }
        Ok(())
    });
}

#[diagnostic::do_not_recommend]
impl<B: GenericBackend, F, C: Contexts> SecondDerivativeBackend<F, C> for B
where
    OneArg<F>: ScalarForm<C>,
{
    op_fn!(value_derivative_and_second_derivative(self, st: Self::State, f, x, ctx) {
        Ok(self.scalar_second(&mut st.work, f, ctx, x))
    });
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

/// The gradient by columns (also of the value variants of `hessian` and `hvp`); returns
/// `f(x)`.
fn value_and_gradient<B: GenericBackend, F, C>(
    b: &B,
    st: &mut GenericState<B::Work>,
    f: &OneArg<F>,
    ctx: &C,
    x: &[f64],
    g: &mut [f64],
) -> f64
where
    OneArg<F>: VecForm<C>,
{
    let mut y = [0.0];
    jacobian_cols(b, st, f, ctx, x, &mut y, g);
    y[0]
}

#[diagnostic::do_not_recommend]
impl<B: GenericBackend, F, C: Contexts> HessianBackend<F, C> for B
where
    OneArg<F>: VecForm<C>,
{
    crate::matrix::dense_hessian!();
    op_fn!(hessian_into(self, st: Self::State, f, x, ctx, h: [f64]) {
        hessian_entries(self, st, f, ctx, x, h);
        Ok(())
    });
    op_fn!(value_gradient_and_hessian_into(self, st: Self::State, f, x, ctx, g, h: [f64]) {
        hessian_entries(self, st, f, ctx, x, h);
        Ok(value_and_gradient(self, st, f, ctx, x, g))
    });
}

#[diagnostic::do_not_recommend]
impl<B: GenericBackend, F, C: Contexts> HvpBackend<F, C> for B
where
    OneArg<F>: VecForm<C>,
{
    op_fn!(hvp_into(self, st: Self::State, f, x, v, ctx, hv) {
        for (i, out) in hv.iter_mut().enumerate() {
            st.unit[i] = 1.0;
            *out = self.second(&mut st.work, f, ctx, x, &st.unit, v);
            st.unit[i] = 0.0;
        }
        Ok(())
    });
    op_fn!(gradient_and_hvp_into(self, st: Self::State, f, x, v, ctx, g, hv) {
        self.hvp_into(st, f, x, v, ctx, hv)?;
        Ok(value_and_gradient(self, st, f, ctx, x, g))
    });
}
