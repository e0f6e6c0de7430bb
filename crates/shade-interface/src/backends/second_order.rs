//! [`SecondOrder`] backends for `hessian` and `hvp`:
//!
//! - `SecondOrder<AutoShade<Forward>, AutoShade<Reverse>>` is forward-over-reverse in
//!   one native pass (the core's `Tape<Dual<f64>>`); the other mode combinations do not
//!   implement the operators (the core nests forward over reverse only: reverse over
//!   anything would need a tape of tapes), a compile error with our own message.
//! - `SecondOrder<AutoFiniteDiff, I>` differences the gradients of any first-order
//!   backend `I` (the generic fallback).

use crate::backend::{AutoFiniteDiff, AutoShade, Backend, FdKind, SecondOrder};
use crate::context::Contexts;
use crate::error::InterfaceResult;
use crate::explain::{Report, Spec};
use crate::form::OneArg;
use crate::ops::{GradientBackend, HessianBackend, HvpBackend, op_fn};
use crate::prep::{Meta, PrepareBackend};
use shade_autodiff::{Forward, Reverse};

/// Forward over reverse: the native second-order backend.
type FwdRev = SecondOrder<AutoShade<Forward>, AutoShade<Reverse>>;

/// The inner reverse-mode state does the work; the report names the pair.
impl<F, C: Contexts> PrepareBackend<OneArg<F>, C> for FwdRev
where
    AutoShade<Reverse>: PrepareBackend<OneArg<F>, C>,
{
    type State = <AutoShade<Reverse> as PrepareBackend<OneArg<F>, C>>::State;
    op_fn!(contexts);
    op_fn!(prepare(self, f, x, ctx, meta) {
        self.inner.prepare(f, x, ctx, meta)
    });
    fn footprint(&self, st: &Self::State) -> Option<usize> {
        self.inner.footprint(st)
    }
    fn explain(&self, st: &Self::State, meta: &Meta) -> Report {
        let mut r = self.inner.explain(st, meta);
        r.backend = self.name();
        r
    }
}

impl<F, C: Contexts> HvpBackend<F, C> for FwdRev
where
    AutoShade<Reverse>: HvpBackend<F, C>,
{
    op_fn!(hvp_into(self, st: Self::State, f, x, v, ctx, hv) {
        self.inner.hvp_into(st, f, x, v, ctx, hv)
    });
    op_fn!(gradient_and_hvp_into(self, st: Self::State, f, x, v, ctx, g, hv) {
        self.inner.gradient_and_hvp_into(st, f, x, v, ctx, g, hv)
    });
    op_fn!(hvp_batch_into(self, st: Self::State, f, x, vs, ctx, hvs) {
        self.inner.hvp_batch_into(st, f, x, vs, ctx, hvs)
    });
}

impl<F, C: Contexts> HessianBackend<F, C> for FwdRev
where
    AutoShade<Reverse>: HessianBackend<F, C, Hessian = [f64]>,
{
    crate::matrix::dense_hessian!();
    op_fn!(hessian_into(self, st: Self::State, f, x, ctx, h: [f64]) {
        self.inner.hessian_into(st, f, x, ctx, h)
    });
    op_fn!(value_gradient_and_hessian_into(self, st: Self::State, f, x, ctx, g, h: [f64]) {
        self.inner.value_gradient_and_hessian_into(st, f, x, ctx, g, h)
    });
}

/// State of finite differences over an inner gradient.
#[derive(Debug)]
pub struct FdOverState<S> {
    inner: S,
    xp: Vec<f64>,
    gp: Vec<f64>,
    gm: Vec<f64>,
    unit: Vec<f64>,
}

impl<I, F, C: Contexts> PrepareBackend<OneArg<F>, C> for SecondOrder<AutoFiniteDiff, I>
where
    I: PrepareBackend<OneArg<F>, C>,
{
    type State = FdOverState<I::State>;
    op_fn!(contexts);
    op_fn!(prepare(self, f, x, ctx, meta) {
        let n = x.len();
        Ok(FdOverState {
            inner: self.inner.prepare(f, x, ctx, meta)?,
            xp: vec![0.0; n],
            gp: vec![0.0; n],
            gm: vec![0.0; n],
            unit: vec![0.0; n],
        })
    });
    fn footprint(&self, st: &Self::State) -> Option<usize> {
        self.inner.footprint(&st.inner)
    }
    fn explain(&self, _: &Self::State, meta: &Meta) -> Report {
        let calls = match meta.operator {
            crate::Operator::Hessian => 2 * meta.n,
            _ => 2,
        };
        let detail = format!(
            "generic fallback: {} differences of the gradients of {}, {calls} gradients per call",
            match self.outer.kind {
                FdKind::Central => "central",
                FdKind::Forward => "forward",
            },
            self.inner.name()
        );
        Spec::generic(detail, calls).report(self, meta, None, 32 * meta.n)
    }
}

impl<I: Backend> SecondOrder<AutoFiniteDiff, I> {
    /// `hv = ∇²f(x) v` by differencing the inner gradient along `v`.
    #[allow(clippy::too_many_arguments)]
    fn hvp_with<F, C>(
        &self,
        st: &mut FdOverState<I::State>,
        f: &OneArg<F>,
        x: &[f64],
        v: &[f64],
        ctx: &C,
        hv: &mut [f64],
        unit: bool,
    ) -> InterfaceResult<()>
    where
        I: GradientBackend<F, C>,
    {
        let vn = v.iter().fold(0.0f64, |a, b| a.max(b.abs()));
        if vn == 0.0 {
            hv.fill(0.0);
            return Ok(());
        }
        let xn = x.iter().fold(0.0f64, |a, b| a.max(b.abs()));
        let h = (self.outer.first_rel_step() * xn.max(1.0) + self.outer.abs_step) / vn;
        let v = if unit { &st.unit[..] } else { v };
        st.xp.clear();
        st.xp.extend(x.iter().zip(v).map(|(a, b)| a + h * b));
        self.inner
            .value_and_gradient_into(&mut st.inner, f, &st.xp, ctx, &mut st.gp)?;
        match self.outer.kind {
            FdKind::Central => {
                st.xp.clear();
                st.xp.extend(x.iter().zip(v).map(|(a, b)| a - h * b));
                self.inner
                    .value_and_gradient_into(&mut st.inner, f, &st.xp, ctx, &mut st.gm)?;
                for ((o, p), m) in hv.iter_mut().zip(&st.gp).zip(&st.gm) {
                    *o = (p - m) / (2.0 * h);
                }
            }
            FdKind::Forward => {
                self.inner
                    .value_and_gradient_into(&mut st.inner, f, x, ctx, &mut st.gm)?;
                for ((o, p), m) in hv.iter_mut().zip(&st.gp).zip(&st.gm) {
                    *o = (p - m) / h;
                }
            }
        }
        Ok(())
    }
}

impl<F, C: Contexts, I: GradientBackend<F, C>> HvpBackend<F, C> for SecondOrder<AutoFiniteDiff, I> {
    op_fn!(hvp_into(self, st: Self::State, f, x, v, ctx, hv) {
        self.hvp_with(st, f, x, v, ctx, hv, false)
    });
    op_fn!(gradient_and_hvp_into(self, st: Self::State, f, x, v, ctx, g, hv) {
        self.hvp_with(st, f, x, v, ctx, hv, false)?;
        self.inner.value_and_gradient_into(&mut st.inner, f, x, ctx, g)
    });
}

impl<F, C: Contexts, I: GradientBackend<F, C>> HessianBackend<F, C>
    for SecondOrder<AutoFiniteDiff, I>
{
    crate::matrix::dense_hessian!();
    op_fn!(hessian_into(self, st: Self::State, f, x, ctx, h: [f64]) {
        let n = x.len();
        for j in 0..n {
            st.unit[j] = 1.0;
            let r = self.hvp_with(st, f, x, &[1.0], ctx, &mut h[j * n..(j + 1) * n], true);
            st.unit[j] = 0.0;
            r?;
        }
        // Symmetrise: the differences of a gradient are symmetric only up to their error.
        for i in 0..n {
            for j in i + 1..n {
                let a = 0.5 * (h[i * n + j] + h[j * n + i]);
                h[i * n + j] = a;
                h[j * n + i] = a;
            }
        }
        Ok(())
    });
    op_fn!(value_gradient_and_hessian_into(self, st: Self::State, f, x, ctx, g, h: [f64]) {
        self.hessian_into(st, f, x, ctx, h)?;
        self.inner.value_and_gradient_into(&mut st.inner, f, x, ctx, g)
    });
}
