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
    PullbackBackend, PushforwardBackend, SecondDerivativeBackend, op_fn,
};
use crate::prep::{Meta, PrepareBackend};
use shade_autodiff::scalar::{ConstArgs, Join, Scalar, ScalarFn};

impl<M: ShadeMode, V: NativeForm, C: Contexts> PrepareBackend<V, C> for AutoShade<M> {
    type State = ShadeState;
    op_fn!(contexts);
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
    op_fn!(#[inline] value_and_gradient_into(self, st: ShadeState, f, x, ctx, g) {
        f.gradient(M::KIND, st, x, ctx, g)
    });
}

impl<M: ShadeMode, V: NativeScalar<C>, C: Contexts> DerivativeBackend<V, C> for AutoShade<M> {
    op_fn!(value_and_derivative_into(self, st: ShadeState, f, x, ctx, y, der) {
        f.derivative(st, x, ctx, y, der)
    });
}

impl<M: ShadeMode, V: NativeVec<C>, C: Contexts> JacobianBackend<V, C> for AutoShade<M> {
    crate::matrix::dense_jacobian!();
    op_fn!(#[inline] value_and_jacobian_into(self, st: ShadeState, f, x, ctx, y, jac: [f64]) {
        f.run(M::KIND, st, (x, ctx), y, VecCall::Jacobian(jac))
    });
}

impl<M: ShadeMode, V: NativeVec<C>, C: Contexts> PushforwardBackend<V, C> for AutoShade<M> {
    op_fn!(#[inline] value_and_pushforward_into(self, st: ShadeState, f, x, dx, ctx, y, dy) {
        f.run(M::KIND, st, (x, ctx), y, VecCall::Pushforward(dx, dy))
    });
    op_fn!(value_and_pushforward_batch_into(self, st: ShadeState, f, x, dxs, ctx, y, dys) {
        f.run(M::KIND, st, (x, ctx), y, VecCall::PushforwardBatch(dxs, dys))
    });
}

impl<M: ShadeMode, V: NativeVec<C>, C: Contexts> PullbackBackend<V, C> for AutoShade<M> {
    op_fn!(#[inline] value_and_pullback_into(self, st: ShadeState, f, x, dy, ctx, y, dx) {
        f.run(M::KIND, st, (x, ctx), y, VecCall::Pullback(dy, dx))
    });
    op_fn!(value_and_pullback_batch_into(self, st: ShadeState, f, x, dys, ctx, y, dxs) {
        f.run(M::KIND, st, (x, ctx), y, VecCall::PullbackBatch(dys, dxs))
    });
}

impl<M: ShadeMode, F, C> SecondDerivativeBackend<F, C> for AutoShade<M>
where
    F: ScalarFn,
    F::Kinds: Join<Scalar>,
    C: ConstArgs<Tail<F>> + Contexts,
{
    op_fn!(value_derivative_and_second_derivative(self, st: ShadeState, f, x, ctx) {
        let d2 = st.tape.second_derivative(&f.0, x, ctx)?;
        let d1 = st.tape.derivative(&f.0, x, ctx)?;
        st.bump.reset();
        let mut y = [0.0];
        f.eval::<f64>(x, ctx, &st.bump, &mut y);
        Ok((y[0], d1, d2))
    });
}

impl<M: ShadeMode, F, C: Contexts> HessianBackend<F, C> for AutoShade<M>
where
    OneArg<F>: NativeHessian<C>,
{
    crate::matrix::dense_hessian!();
    op_fn!(hessian_into(self, st: ShadeState, f, x, ctx, h: [f64]) {
        f.hessian(st, x, ctx, h)
    });
    op_fn!(value_gradient_and_hessian_into(self, st: ShadeState, f, x, ctx, g, h: [f64]) {
        f.hessian(st, x, ctx, h)?;
        f.value_and_gradient(st, x, ctx, g)
    });
}

impl<M: ShadeMode, F, C: Contexts> HvpBackend<F, C> for AutoShade<M>
where
    OneArg<F>: NativeHessian<C>,
{
    op_fn!(#[inline] hvp_into(self, st: ShadeState, f, x, v, ctx, hv) {
        f.hvp(st, x, v, ctx, hv)
    });
    op_fn!(gradient_and_hvp_into(self, st: ShadeState, f, x, v, ctx, g, hv) {
        f.hvp(st, x, v, ctx, hv)?;
        f.value_and_gradient(st, x, ctx, g)
    });
    op_fn!(hvp_batch_into(self, st: ShadeState, f, x, vs, ctx, hvs) {
        f.hvp_batch(st, x, vs, ctx, hvs)
    });
}
