//! Generated derivatives on the native path ([`Compiled`]): the form helpers of
//! `OneArg<Compiled<G>>`, so that `AutoShade`'s gradient, jacobian, pushforward and
//! pullback (the impls in `impls.rs`, unchanged) call the generated function itself.
//!
//! Which code runs is the generated function's engine, a type (`Generated::Mode`):
//! [`Engine`] is implemented for the core's `Reverse` (a [`GradientFn`]: one call gives
//! `f(x)` and `seed · ∇f(x)`) and `Forward` (a [`TangentFn`]: one call gives
//! `(f(x), ∇f(x) · dx)`). The backend's own mode changes nothing; the report says so.

use super::forms::with_gradient;
use super::{NativeForm, NativeGradient, NativeVec, ShadeState, VecCall};
use crate::backend::Operator;
use crate::compiled::{Compiled, CompiledArgs};
use crate::error::InterfaceResult;
use crate::explain::Spec;
use crate::form::OneArg;
use crate::prep::Meta;
use shade_autodiff::compiled::{Generated, GeneratedMode, GradientFn, TangentFn, zero};
use shade_autodiff::{Forward, ModeKind, Reverse};

/// How a generated function's engine computes what the operators ask (`G` the marker,
/// `C` the contexts).
pub trait Engine<G, C> {
    /// Writes `∇f(x)` into `g` (overwriting it) and returns `f(x)`.
    #[doc(hidden)]
    fn gradient(st: &mut ShadeState, x: &[f64], ctx: &C, g: &mut [f64]) -> f64;
    /// Runs `call` (one output), writing `y = f(x)`.
    #[doc(hidden)]
    fn run(
        st: &mut ShadeState,
        x: &[f64],
        ctx: &C,
        y: &mut [f64],
        call: VecCall<'_>,
    ) -> InterfaceResult<()>;
}

/// What an engine computes from one gradient of the scalar output: the Jacobian is the
/// gradient, pushforwards are its dot products with the tangents, pullbacks its
/// multiples.
fn via_gradient<E: Engine<G, C>, G, C>(
    st: &mut ShadeState,
    x: &[f64],
    ctx: &C,
    y: &mut [f64],
    call: VecCall<'_>,
) -> InterfaceResult<()> {
    if let VecCall::Jacobian(jac) = call {
        y[0] = E::gradient(st, x, ctx, jac);
        return Ok(());
    }
    with_gradient(st, x.len(), |st, g| {
        y[0] = E::gradient(st, x, ctx, g);
        from_gradient(g, call);
        Ok(())
    })
}

/// The pushforwards and pullbacks of a scalar output from its gradient `g`.
fn from_gradient(g: &[f64], call: VecCall<'_>) {
    let n = g.len();
    match call {
        VecCall::Jacobian(jac) => jac.copy_from_slice(g),
        VecCall::Pushforward(dxs, dys) | VecCall::PushforwardBatch(dxs, dys) => {
            for (dy, dx) in dys.iter_mut().zip(dxs.chunks_exact(n.max(1))) {
                *dy = g.iter().zip(dx).map(|(a, b)| a * b).sum();
            }
        }
        VecCall::Pullback(dys, dxs) | VecCall::PullbackBatch(dys, dxs) => {
            for (dx, dy) in dxs.chunks_exact_mut(n.max(1)).zip(dys) {
                for (d, gi) in dx.iter_mut().zip(g) {
                    *d = gi * dy;
                }
            }
        }
    }
}

impl<G, C> Engine<G, C> for Reverse
where
    C: CompiledArgs,
    G: GradientFn<C::Args>,
{
    #[inline(always)]
    fn gradient(_: &mut ShadeState, x: &[f64], ctx: &C, g: &mut [f64]) -> f64 {
        zero(g);
        G::gradient(x, g, ctx.args(), 1.0)
    }

    #[inline]
    fn run(
        st: &mut ShadeState,
        x: &[f64],
        ctx: &C,
        y: &mut [f64],
        call: VecCall<'_>,
    ) -> InterfaceResult<()> {
        match call {
            // A pullback of a scalar output is the seed: one call.
            VecCall::Pullback(dy, dx) => {
                zero(dx);
                y[0] = G::gradient(x, dx, ctx.args(), dy[0]);
                Ok(())
            }
            // One gradient serves every tangent and every cotangent.
            call => via_gradient::<Self, G, C>(st, x, ctx, y, call),
        }
    }
}

impl<G, C> Engine<G, C> for Forward
where
    C: CompiledArgs,
    G: TangentFn<C::Args>,
{
    /// `n` calls, one per unit tangent (one for the value if `n = 0`).
    fn gradient(st: &mut ShadeState, x: &[f64], ctx: &C, g: &mut [f64]) -> f64 {
        let n = x.len();
        if n == 0 {
            return G::tangent(x, &[], ctx.args()).0;
        }
        st.seeds.clear();
        st.seeds.resize(n, 0.0);
        let mut y = 0.0;
        for (i, gi) in g.iter_mut().enumerate() {
            st.seeds[i] = 1.0;
            (y, *gi) = G::tangent(x, &st.seeds, ctx.args());
            st.seeds[i] = 0.0;
        }
        y
    }

    #[inline]
    fn run(
        st: &mut ShadeState,
        x: &[f64],
        ctx: &C,
        y: &mut [f64],
        call: VecCall<'_>,
    ) -> InterfaceResult<()> {
        let n = x.len();
        match call {
            // One call per tangent.
            VecCall::Pushforward(dx, dy) => (y[0], dy[0]) = G::tangent(x, dx, ctx.args()),
            VecCall::PushforwardBatch(dxs, dys) => {
                if dys.is_empty() {
                    st.seeds.clear();
                    st.seeds.resize(n, 0.0);
                    y[0] = G::tangent(x, &st.seeds, ctx.args()).0;
                }
                for (dy, dx) in dys.iter_mut().zip(dxs.chunks_exact(n.max(1))) {
                    (y[0], *dy) = G::tangent(x, dx, ctx.args());
                }
            }
            // A Jacobian or a pullback needs the whole gradient: `n` calls.
            call => return via_gradient::<Self, G, C>(st, x, ctx, y, call),
        }
        Ok(())
    }
}

/// A generated derivative is a one-argument function of one output: the operators
/// that infer the output length (`jacobian`, `pushforward`, `pullback`) take it as is.
#[diagnostic::do_not_recommend]
impl<G: Generated, C> crate::form::OneArgFn<C, crate::form::GeneratedDerivative> for Compiled<G> {
    type Form = OneArg<Compiled<G>>;
    #[inline]
    fn into_form(self, _: &[f64], _: &C) -> (OneArg<Compiled<G>>, usize) {
        (OneArg(self), 1)
    }
}

impl<G: Generated> NativeForm for OneArg<Compiled<G>> {
    fn spec(op: Operator, mode: ModeKind, meta: &Meta) -> Spec {
        let info = G::INFO;
        let (attr, engine) = match info.mode {
            GeneratedMode::Reverse => ("autodiff_reverse", ModeKind::Reverse),
            GeneratedMode::Forward => ("autodiff_forward", ModeKind::Forward),
        };
        let calls = match (engine, op) {
            (ModeKind::Forward, Operator::Pushforward) => 1,
            (ModeKind::Forward, _) => meta.n.max(1),
            (ModeKind::Reverse, _) => 1,
        };
        let per = match (engine, op) {
            (ModeKind::Forward, Operator::Pushforward) => "1 call per tangent".to_string(),
            (ModeKind::Forward, _) => {
                format!("{calls} calls per {} (one per input)", op.name())
            }
            (ModeKind::Reverse, Operator::Pushforward | Operator::Pullback) => {
                "1 call, shared by a batch".to_string()
            }
            (ModeKind::Reverse, _) => format!("1 call per {}", op.name()),
        };
        let backend_mode = if mode == engine {
            String::new()
        } else {
            format!(
                "; the backend's {} mode does not change it: the engine is the generated function's",
                mode.name()
            )
        };
        Spec::native(
            format!(
                "compile-time {} derivative `{}` (`#[{attr}({}, {})]` on `{}`), called directly, {per}{backend_mode}",
                engine.name(),
                info.derivative,
                info.derivative,
                info.activities.join(", "),
                info.primal,
            ),
            calls,
        )
    }
}

#[diagnostic::do_not_recommend]
impl<G, C> NativeVec<C> for OneArg<Compiled<G>>
where
    G: Generated,
    G::Mode: Engine<G, C>,
{
    #[inline]
    fn run(
        &self,
        _: ModeKind,
        st: &mut ShadeState,
        (x, ctx): (&[f64], &C),
        y: &mut [f64],
        call: VecCall<'_>,
    ) -> InterfaceResult<()> {
        G::Mode::run(st, x, ctx, y, call)
    }
}

#[diagnostic::do_not_recommend]
impl<G, C> NativeGradient<C> for OneArg<Compiled<G>>
where
    G: Generated,
    G::Mode: Engine<G, C>,
{
    #[inline(always)]
    fn gradient(
        &self,
        _: ModeKind,
        st: &mut ShadeState,
        x: &[f64],
        ctx: &C,
        g: &mut [f64],
    ) -> InterfaceResult<f64> {
        Ok(G::Mode::gradient(st, x, ctx, g))
    }
}
