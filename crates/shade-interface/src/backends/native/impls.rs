//! The eight operators for [`AutoShade<M>`](crate::AutoShade), each a direct call of the
//! core through the form's helper trait ([`super::forms`]).

use super::{
    NativeForm, NativeGradient, NativeHessian, NativeScalar, NativeVec, ShadeState, VecCall,
};
use crate::backend::{AutoShade, ShadeMode};
use crate::context::Contexts;
use crate::error::InterfaceResult;
use crate::explain::Report;
use crate::form::{OneArg, ScalarForm, Tail};
use crate::ops::{
    DerivativeBackend, GradientBackend, HessianBackend, HvpBackend, JacobianBackend,
    PullbackBackend, PushforwardBackend, SecondDerivativeBackend,
};
use crate::prep::{Meta, PrepareBackend};
use shade_autodiff::scalar::{ConstArgs, Join, Scalar, ScalarFn};

impl<M: ShadeMode, V: NativeForm, C: Contexts> PrepareBackend<V, C> for AutoShade<M> {
    type State = ShadeState;
    fn contexts(ctx: &C) -> &impl Contexts {
        ctx
    }
    fn prepare(&self, _: &V, _: &[f64], _: &C, meta: &Meta) -> InterfaceResult<ShadeState> {
        Ok(ShadeState::new(meta))
    }
    fn footprint(&self, st: &ShadeState) -> Option<usize> {
        Some(st.reserved())
    }
    fn explain(&self, st: &ShadeState, meta: &Meta) -> Report {
        st.report(self, meta, V::spec(meta.operator, M::KIND, meta))
    }
}

impl<M: ShadeMode, F, C: Contexts> GradientBackend<F, C> for AutoShade<M>
where
    OneArg<F>: NativeGradient<C>,
{
    #[inline]
    fn value_and_gradient_into(
        &self,
        st: &mut ShadeState,
        f: &OneArg<F>,
        x: &[f64],
        ctx: &C,
        g: &mut [f64],
    ) -> InterfaceResult<f64> {
        f.gradient(M::KIND, st, x, ctx, g)
    }
}

impl<M: ShadeMode, V: NativeScalar<C>, C: Contexts> DerivativeBackend<V, C> for AutoShade<M> {
    fn value_and_derivative_into(
        &self,
        st: &mut ShadeState,
        f: &V,
        x: f64,
        ctx: &C,
        y: &mut [f64],
        der: &mut [f64],
    ) -> InterfaceResult<()> {
        f.derivative(st, x, ctx, y, der)
    }
}

impl<M: ShadeMode, V: NativeVec<C>, C: Contexts> JacobianBackend<V, C> for AutoShade<M> {
    crate::matrix::dense_jacobian!();
    #[inline]
    fn value_and_jacobian_into(
        &self,
        st: &mut ShadeState,
        f: &V,
        x: &[f64],
        ctx: &C,
        y: &mut [f64],
        jac: &mut [f64],
    ) -> InterfaceResult<()> {
        f.run(M::KIND, st, (x, ctx), y, VecCall::Jacobian(jac))
    }
}

impl<M: ShadeMode, V: NativeVec<C>, C: Contexts> PushforwardBackend<V, C> for AutoShade<M> {
    #[inline]
    fn value_and_pushforward_into(
        &self,
        st: &mut ShadeState,
        f: &V,
        x: &[f64],
        dx: &[f64],
        ctx: &C,
        y: &mut [f64],
        dy: &mut [f64],
    ) -> InterfaceResult<()> {
        f.run(M::KIND, st, (x, ctx), y, VecCall::Pushforward(dx, dy))
    }
    fn value_and_pushforward_batch_into(
        &self,
        st: &mut ShadeState,
        f: &V,
        x: &[f64],
        dxs: &[f64],
        ctx: &C,
        y: &mut [f64],
        dys: &mut [f64],
    ) -> InterfaceResult<()> {
        f.run(
            M::KIND,
            st,
            (x, ctx),
            y,
            VecCall::PushforwardBatch(dxs, dys),
        )
    }
}

impl<M: ShadeMode, V: NativeVec<C>, C: Contexts> PullbackBackend<V, C> for AutoShade<M> {
    #[inline]
    fn value_and_pullback_into(
        &self,
        st: &mut ShadeState,
        f: &V,
        x: &[f64],
        dy: &[f64],
        ctx: &C,
        y: &mut [f64],
        dx: &mut [f64],
    ) -> InterfaceResult<()> {
        f.run(M::KIND, st, (x, ctx), y, VecCall::Pullback(dy, dx))
    }
    fn value_and_pullback_batch_into(
        &self,
        st: &mut ShadeState,
        f: &V,
        x: &[f64],
        dys: &[f64],
        ctx: &C,
        y: &mut [f64],
        dxs: &mut [f64],
    ) -> InterfaceResult<()> {
        f.run(M::KIND, st, (x, ctx), y, VecCall::PullbackBatch(dys, dxs))
    }
}

impl<M: ShadeMode, F, C> SecondDerivativeBackend<F, C> for AutoShade<M>
where
    F: ScalarFn,
    F::Kinds: Join<Scalar>,
    C: ConstArgs<Tail<F>> + Contexts,
{
    fn value_derivative_and_second_derivative(
        &self,
        st: &mut ShadeState,
        f: &OneArg<F>,
        x: f64,
        ctx: &C,
    ) -> InterfaceResult<(f64, f64, f64)> {
        let d2 = st.tape.second_derivative(&f.0, x, ctx)?;
        let d1 = st.tape.derivative(&f.0, x, ctx)?;
        st.bump.reset();
        let mut y = [0.0];
        f.eval::<f64>(x, ctx, &st.bump, &mut y);
        Ok((y[0], d1, d2))
    }
}

impl<M: ShadeMode, F, C: Contexts> HessianBackend<F, C> for AutoShade<M>
where
    OneArg<F>: NativeHessian<C>,
{
    crate::matrix::dense_hessian!();
    fn hessian_into(
        &self,
        st: &mut ShadeState,
        f: &OneArg<F>,
        x: &[f64],
        ctx: &C,
        h: &mut [f64],
    ) -> InterfaceResult<()> {
        f.hessian(st, x, ctx, h)
    }
    fn value_gradient_and_hessian_into(
        &self,
        st: &mut ShadeState,
        f: &OneArg<F>,
        x: &[f64],
        ctx: &C,
        g: &mut [f64],
        h: &mut [f64],
    ) -> InterfaceResult<f64> {
        f.hessian(st, x, ctx, h)?;
        f.value_and_gradient(st, x, ctx, g)
    }
}

impl<M: ShadeMode, F, C: Contexts> HvpBackend<F, C> for AutoShade<M>
where
    OneArg<F>: NativeHessian<C>,
{
    #[inline]
    fn hvp_into(
        &self,
        st: &mut ShadeState,
        f: &OneArg<F>,
        x: &[f64],
        v: &[f64],
        ctx: &C,
        hv: &mut [f64],
    ) -> InterfaceResult<()> {
        f.hvp(st, x, v, ctx, hv)
    }
    fn gradient_and_hvp_into(
        &self,
        st: &mut ShadeState,
        f: &OneArg<F>,
        x: &[f64],
        v: &[f64],
        ctx: &C,
        g: &mut [f64],
        hv: &mut [f64],
    ) -> InterfaceResult<f64> {
        f.hvp(st, x, v, ctx, hv)?;
        f.value_and_gradient(st, x, ctx, g)
    }
    fn hvp_batch_into(
        &self,
        st: &mut ShadeState,
        f: &OneArg<F>,
        x: &[f64],
        vs: &[f64],
        ctx: &C,
        hvs: &mut [f64],
    ) -> InterfaceResult<()> {
        f.hvp_batch(st, x, vs, ctx, hvs)
    }
}
