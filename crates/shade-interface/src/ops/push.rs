//! Directional operators: `pushforward` (JVP, `J dx`) and `pullback` (VJP, `Jᵀ dy`),
//! single or batched (several tangents stacked one after the other).

use super::{PullbackOp, PushforwardOp};
use crate::backend::{Backend, Operator};
use crate::error::InterfaceResult;
use crate::form::{FormOf, OneArgFn, TwoArg};
use crate::prep::{PrepareBackend, Prepared, prepare};
use shade_autodiff::scalar::CHUNK;

/// Runs `one` on each stacked tangent of `ts` (length `tl` each) and its result slot in
/// `outs` (length `ol` each): the batched variants of backends without a batched path.
pub(crate) fn each_tangent(
    tl: usize,
    ol: usize,
    ts: &[f64],
    outs: &mut [f64],
    mut one: impl FnMut(&[f64], &mut [f64]) -> InterfaceResult<()>,
) -> InterfaceResult<()> {
    for (t, out) in ts
        .chunks_exact(tl.max(1))
        .zip(outs.chunks_exact_mut(ol.max(1)))
    {
        one(t, out)?;
    }
    Ok(())
}

/// A backend that computes pushforwards (Jacobian-vector products) of form `V`.
#[diagnostic::on_unimplemented(
    message = "backend `{Self}` cannot compute `pushforward` of `{V}` with contexts `{C}`",
    label = "no pushforward for this backend, function form and contexts",
    note = "`pushforward` takes `shade_fn!(f(&[S], ...) -> Vec<S>)` (its output length inferred), `shade_fn!(f(&[S], ...))` or, with `*_inplace` and the output buffer `y`, `shade_fn!(f(&mut [S], &[S], ...))`; backends: AutoShade, AutoFiniteDiff, AutoNumDual"
)]
pub trait PushforwardBackend<V, C>: PrepareBackend<V, C> {
    /// Writes `y = f(x)` and `dy = J(x) dx`.
    #[allow(clippy::too_many_arguments)]
    fn value_and_pushforward_into(
        &self,
        st: &mut Self::State,
        f: &V,
        x: &[f64],
        dx: &[f64],
        ctx: &C,
        y: &mut [f64],
        dy: &mut [f64],
    ) -> InterfaceResult<()>;
    /// Writes `y` and `dys[k] = J dxs[k]` for stacked tangents (`dxs`: `k × n`,
    /// `dys`: `k × m`). The default runs one pushforward per tangent.
    #[allow(clippy::too_many_arguments)]
    fn value_and_pushforward_batch_into(
        &self,
        st: &mut Self::State,
        f: &V,
        x: &[f64],
        dxs: &[f64],
        ctx: &C,
        y: &mut [f64],
        dys: &mut [f64],
    ) -> InterfaceResult<()> {
        each_tangent(x.len(), y.len(), dxs, dys, |dx, dy| {
            self.value_and_pushforward_into(st, f, x, dx, ctx, y, dy)
        })
    }
}

/// A backend that computes pullbacks (vector-Jacobian products) of form `V`.
#[diagnostic::on_unimplemented(
    message = "backend `{Self}` cannot compute `pullback` of `{V}` with contexts `{C}`",
    label = "no pullback for this backend, function form and contexts",
    note = "`pullback` takes `shade_fn!(f(&[S], ...) -> Vec<S>)` (its output length inferred), `shade_fn!(f(&[S], ...))` or, with `*_inplace` and the output buffer `y`, `shade_fn!(f(&mut [S], &[S], ...))`; backends: AutoShade, AutoFiniteDiff, AutoNumDual"
)]
pub trait PullbackBackend<V, C>: PrepareBackend<V, C> {
    /// Writes `y = f(x)` and `dx = J(x)ᵀ dy` (overwriting `dx`).
    #[allow(clippy::too_many_arguments)]
    fn value_and_pullback_into(
        &self,
        st: &mut Self::State,
        f: &V,
        x: &[f64],
        dy: &[f64],
        ctx: &C,
        y: &mut [f64],
        dx: &mut [f64],
    ) -> InterfaceResult<()>;
    /// Writes `y` and `dxs[k] = Jᵀ dys[k]` for stacked cotangents. The default runs one
    /// pullback per cotangent.
    #[allow(clippy::too_many_arguments)]
    fn value_and_pullback_batch_into(
        &self,
        st: &mut Self::State,
        f: &V,
        x: &[f64],
        dys: &[f64],
        ctx: &C,
        y: &mut [f64],
        dxs: &mut [f64],
    ) -> InterfaceResult<()> {
        each_tangent(y.len(), x.len(), dys, dxs, |dy, dx| {
            self.value_and_pullback_into(st, f, x, dy, ctx, y, dx)
        })
    }
}

macro_rules! directional {
    (
        $op:ident, $Trait:ident, $oper:ident, $prep_fn:ident, $prepare:ident, $prepare_inplace:ident,
        $free:ident, $vand_free:ident, $free_inplace:ident, $into:ident, $batch_into:ident,
        $plain:ident, $plain_into:ident, $vand:ident, $batch:ident, $vand_batch:ident,
        $tin:literal, $tout:literal, $inlen:ident, $outlen:ident, $doc:literal
    ) => {
        pub(crate) fn $prep_fn<V, B: $Trait<V, C>, C>(
            f: V,
            m: usize,
            backend: &B,
            x: &[f64],
            ctx: &C,
        ) -> InterfaceResult<Prepared<$op, V, B, B::State>> {
            // Warm the single and the batched path; a pullback's warm-up seed is one (a
            // zero seed could let an engine skip its sweep).
            let n = x.len();
            let (tl, ol, t0) = match Operator::$oper {
                Operator::Pushforward => (n, m, 0.0),
                _ => (m, n, 1.0),
            };
            let (mut y, t, mut out) = (vec![0.0; m], vec![t0; tl], vec![0.0; ol]);
            let (ts, mut outs) = (vec![t0; CHUNK * tl], vec![0.0; CHUNK * ol]);
            prepare(Operator::$oper, f, (n, m), backend, x, ctx, |b, st, f, _| {
                b.$into(st, f, x, &t, ctx, &mut y, &mut out)?;
                b.$batch_into(st, f, x, &ts, ctx, &mut y, &mut outs)
            })
        }

        #[doc = concat!("Prepares `", stringify!($plain), "` (", $doc, ") of a one-argument function: `f(x: &[S], contexts...) -> Vec<S>` (`m` inferred from its evaluation at `x`) or `f(x: &[S], contexts...) -> S` (`m = 1`).")]
        pub fn $prepare<F, M, B, C, St>(f: F, backend: &B, x: &[f64], ctx: C) -> InterfaceResult<Prepared<$op, FormOf<F, C, M>, B, St>>
        where
            F: OneArgFn<C, M>,
            B: $Trait<FormOf<F, C, M>, C, State = St>,
        {
            let (form, m) = f.into_form(x, &ctx);
            $prep_fn(form, m, backend, x, &ctx)
        }

        #[doc = concat!("Prepares `", stringify!($plain), "` (", $doc, ") of a two-argument `f(y: &mut [S], x: &[S], contexts...)` whose outputs go to buffers like `y` (only its length is read: the number of outputs).")]
        pub fn $prepare_inplace<F, B, C, St>(
            f: F,
            y: &[f64],
            backend: &B,
            x: &[f64],
            ctx: C,
        ) -> InterfaceResult<Prepared<$op, TwoArg<F>, B, St>>
        where
            B: $Trait<TwoArg<F>, C, State = St>,
        {
            let m = y.len();
            $prep_fn(TwoArg { f, m }, m, backend, x, &ctx)
        }

        #[doc = concat!("`", stringify!($plain), "` (", $doc, ") of a one-argument function (returning `Vec<S>`, whose output length is inferred, or `S`).")]
        pub fn $free<F, M, B, C>(f: F, backend: &B, x: &[f64], t: &[f64], ctx: C) -> InterfaceResult<Vec<f64>>
        where
            F: OneArgFn<C, M>,
            B: $Trait<FormOf<F, C, M>, C>,
        {
            let (form, m) = f.into_form(x, &ctx);
            $prep_fn(form, m, backend, x, &ctx)?.$plain(x, t, ctx)
        }

        #[doc = concat!("`(y, ", stringify!($plain), ")` (", $doc, ") of a one-argument function (returning `Vec<S>`, whose output length is inferred, or `S`).")]
        pub fn $vand_free<F, M, B, C>(f: F, backend: &B, x: &[f64], t: &[f64], ctx: C) -> InterfaceResult<(Vec<f64>, Vec<f64>)>
        where
            F: OneArgFn<C, M>,
            B: $Trait<FormOf<F, C, M>, C>,
        {
            let (form, m) = f.into_form(x, &ctx);
            $prep_fn(form, m, backend, x, &ctx)?.$vand(x, t, ctx)
        }

        #[doc = concat!("`", stringify!($plain), "` (", $doc, ") of a two-argument function, writing `y = f(x)`: the buffer `y` gives the number of outputs (checked once with the core's sparsity tracer).")]
        pub fn $free_inplace<F, B, C>(
            f: F,
            y: &mut [f64],
            backend: &B,
            x: &[f64],
            t: &[f64],
            ctx: C,
        ) -> InterfaceResult<Vec<f64>>
        where
            B: $Trait<TwoArg<F>, C>,
        {
            let m = y.len();
            let mut p = $prep_fn(TwoArg { f, m }, m, backend, x, &ctx)?;
            let mut out = vec![0.0; p.meta.$outlen];
            p.$into(x, t, ctx, y, &mut out)?;
            Ok(out)
        }

        impl<V, B: Backend, St> Prepared<$op, V, B, St> {
            #[doc = concat!("`", $doc, "` (length ", stringify!($outlen), ").")]
            pub fn $plain<C>(&mut self, x: &[f64], t: &[f64], ctx: C) -> InterfaceResult<Vec<f64>>
            where
                B: $Trait<V, C, State = St>,
            {
                self.$vand(x, t, ctx).map(|r| r.1)
            }

            #[doc = concat!("Writes `", $doc, "` into `out` (the primal output goes to a buffer of the prepared object).")]
            pub fn $plain_into<C>(&mut self, x: &[f64], t: &[f64], ctx: C, out: &mut [f64]) -> InterfaceResult<()>
            where
                B: $Trait<V, C, State = St>,
            {
                let mut y = core::mem::take(&mut self.out);
                let r = self.$into(x, t, ctx, &mut y, out);
                self.out = y;
                r
            }

            #[doc = concat!("`(y, ", $doc, ")`.")]
            pub fn $vand<C>(&mut self, x: &[f64], t: &[f64], ctx: C) -> InterfaceResult<(Vec<f64>, Vec<f64>)>
            where
                B: $Trait<V, C, State = St>,
            {
                let (mut y, mut out) = (vec![0.0; self.meta.m], vec![0.0; self.meta.$outlen]);
                self.$into(x, t, ctx, &mut y, &mut out)?;
                Ok((y, out))
            }

            #[doc = concat!("Writes `y = f(x)` and `", $doc, "`.")]
            #[inline]
            pub fn $into<C>(&mut self, x: &[f64], t: &[f64], ctx: C, y: &mut [f64], out: &mut [f64]) -> InterfaceResult<()>
            where
                B: $Trait<V, C, State = St>,
            {
                self.check(x.len(), &ctx)?;
                self.meta.arg($tin, self.meta.$inlen, t.len())?;
                self.meta.arg("y", self.meta.m, y.len())?;
                self.meta.arg($tout, self.meta.$outlen, out.len())?;
                self.backend.$into(&mut self.state, &self.f, x, t, &ctx, y, out)
            }

            #[doc = concat!("Batched `", stringify!($plain), "`: `ts` stacks `k` tangents, the result stacks `k` results.")]
            pub fn $batch<C>(&mut self, x: &[f64], ts: &[f64], ctx: C) -> InterfaceResult<Vec<f64>>
            where
                B: $Trait<V, C, State = St>,
            {
                let k = self.meta.batch(self.meta.$inlen, ts.len())?;
                let mut y = core::mem::take(&mut self.out);
                let mut out = vec![0.0; k * self.meta.$outlen];
                let r = self.$vand_batch(x, ts, ctx, &mut y, &mut out);
                self.out = y;
                r.map(|()| out)
            }

            #[doc = concat!("Batched `", stringify!($into), "`: writes `y` and the `k` stacked results.")]
            pub fn $vand_batch<C>(
                &mut self,
                x: &[f64],
                ts: &[f64],
                ctx: C,
                y: &mut [f64],
                outs: &mut [f64],
            ) -> InterfaceResult<()>
            where
                B: $Trait<V, C, State = St>,
            {
                self.check(x.len(), &ctx)?;
                let k = self.meta.batch(self.meta.$inlen, ts.len())?;
                self.meta.arg("y", self.meta.m, y.len())?;
                self.meta.arg($tout, k * self.meta.$outlen, outs.len())?;
                self.backend.$batch_into(&mut self.state, &self.f, x, ts, &ctx, y, outs)
            }
        }
    };
}

directional!(
    PushforwardOp,
    PushforwardBackend,
    Pushforward,
    prep_pushforward,
    prepare_pushforward,
    prepare_pushforward_inplace,
    pushforward,
    value_and_pushforward,
    value_and_pushforward_inplace,
    value_and_pushforward_into,
    value_and_pushforward_batch_into,
    pushforward,
    pushforward_into,
    value_and_pushforward,
    pushforward_batch,
    value_and_pushforward_batch_into,
    "dx",
    "dy",
    n,
    m,
    "dy = J(x) dx"
);

directional!(
    PullbackOp,
    PullbackBackend,
    Pullback,
    prep_pullback,
    prepare_pullback,
    prepare_pullback_inplace,
    pullback,
    value_and_pullback,
    value_and_pullback_inplace,
    value_and_pullback_into,
    value_and_pullback_batch_into,
    pullback,
    pullback_into,
    value_and_pullback,
    pullback_batch,
    value_and_pullback_batch_into,
    "dy",
    "dx",
    m,
    n,
    "dx = J(x)ᵀ dy"
);
