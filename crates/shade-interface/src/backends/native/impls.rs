//! The eight operators for [`AutoShade`], each a direct call of the core.

use super::{ShadeCall, ShadeState, chunks};
use crate::backend::AutoShade;
use crate::context::{ContextKind, Contexts};
use crate::error::InterfaceResult;
use crate::explain::Report;
use crate::form::{InTail, OneArg, ScalarForm, Tail, TwoArg, VecForm};
use crate::ops::{
    DerivativeBackend, GradientBackend, HessianBackend, HvpBackend, JacobianBackend,
    PullbackBackend, PushforwardBackend, SecondDerivativeBackend,
};
use crate::prep::Meta;
use shade_autodiff::ModeKind;
use shade_autodiff::scalar::{CHUNK, ConstArgs, Dual, InPlaceFn, Join, Scalar, ScalarFn, Slice};

/// `f(x)` at `f64`, contexts converted in the state's arena.
#[inline]
fn value<V: VecForm<C>, C>(st: &mut ShadeState, f: &V, x: &[f64], ctx: &C) -> f64 {
    st.bump.reset();
    let mut y = [0.0];
    f.eval::<f64>(x, ctx, &st.bump, &mut y);
    y[0]
}

/// Forward-mode gradient, `CHUNK` columns per core call; returns `f(x)`.
fn forward_gradient<F, C>(
    st: &mut ShadeState,
    f: &OneArg<F>,
    x: &[f64],
    ctx: &C,
    g: &mut [f64],
) -> InterfaceResult<f64>
where
    F: ScalarFn,
    C: ShadeCall<F>,
    OneArg<F>: VecForm<C>,
{
    let y = value(st, f, x, ctx);
    let n = x.len();
    if n == 0 {
        return Ok(y);
    }
    st.seeds.resize(CHUNK * n, 0.0);
    for c0 in (0..n).step_by(CHUNK) {
        let w = CHUNK.min(n - c0);
        for k in 0..w {
            st.seeds[k * n + c0 + k] = 1.0;
        }
        let mut it = st.seeds.chunks_exact_mut(n);
        let ts = core::array::from_fn(|_| it.next().expect("CHUNK seed buffers of length n"));
        let r = ctx.forward_batch(&mut st.tape, &f.0, x, ts);
        for k in 0..w {
            st.seeds[k * n + c0 + k] = 0.0;
        }
        g[c0..c0 + w].copy_from_slice(&r?[..w]);
    }
    Ok(y)
}

/// The gradient in the backend's mode; returns `f(x)`.
#[inline]
fn gradient_into<F, C>(
    b: &AutoShade,
    st: &mut ShadeState,
    f: &OneArg<F>,
    x: &[f64],
    ctx: &C,
    g: &mut [f64],
) -> InterfaceResult<f64>
where
    F: ScalarFn,
    F::Kinds: Join<Slice>,
    C: ShadeCall<F> + ConstArgs<Tail<F>> + Contexts,
    OneArg<F>: VecForm<C>,
{
    match b.mode {
        // Constants only: the tape's prepared gradient, the leanest core entry point
        // (it overwrites `g`; nothing to accumulate, no shadow to check).
        ModeKind::Reverse if !C::CACHES => Ok(st.tape.value_and_gradient_into(&f.0, x, ctx, g)?),
        ModeKind::Reverse => {
            g.fill(0.0);
            Ok(ctx.reverse(&mut st.tape, &f.0, 1.0, x, g, &mut st.scratch)?)
        }
        ModeKind::Forward => forward_gradient(st, f, x, ctx, g),
    }
}

fn gradient_report(b: &AutoShade, st: &ShadeState, meta: &Meta) -> Report {
    let caches = meta
        .ctx
        .kinds
        .iter()
        .flatten()
        .any(|k| matches!(k, ContextKind::Cache(_)));
    match b.mode {
        ModeKind::Reverse if !caches => st.report(
            b,
            meta,
            format!(
                "shade-autodiff reverse tape, `Tape::value_and_gradient_into(f, x, (Const(..), ..), g)`, 1 call per {}",
                meta.operator.name()
            ),
            false,
            1,
            1,
        ),
        ModeKind::Reverse => st.report(
            b,
            meta,
            format!("shade-autodiff reverse tape, `autodiff(ReverseWithPrimal, f, Active(1.0), (Duplicated(x, dx), ..))`, 1 call per {}", meta.operator.name()),
            true,
            1,
            1,
        ),
        ModeKind::Forward => st.report(
            b,
            meta,
            format!(
                "shade-autodiff chunked forward mode, `autodiff(Forward, f, BatchTangent::<{CHUNK}>, (BatchDuplicated(x, seeds), ..))`, {} calls per {} + 1 f64 evaluation",
                chunks(meta.n),
                meta.operator.name()
            ),
            false,
            CHUNK,
            chunks(meta.n) + 1,
        ),
    }
}

// ---------------------------------------------------------------- gradient

impl<F, C> GradientBackend<F, C> for AutoShade
where
    F: ScalarFn,
    F::Kinds: Join<Slice>,
    C: ShadeCall<F> + ConstArgs<Tail<F>> + Contexts,
    OneArg<F>: VecForm<C>,
{
    type State = ShadeState;
    fn prepare_gradient(
        &self,
        f: &OneArg<F>,
        x: &[f64],
        ctx: &C,
        meta: &Meta,
    ) -> InterfaceResult<ShadeState> {
        let mut st = ShadeState::new(meta);
        let mut g = vec![0.0; x.len()];
        st.warm(|st| gradient_into(self, st, f, x, ctx, &mut g).map(|_| ()))?;
        Ok(st)
    }
    #[inline]
    fn value_and_gradient_into(
        &self,
        st: &mut ShadeState,
        f: &OneArg<F>,
        x: &[f64],
        ctx: &C,
        g: &mut [f64],
    ) -> InterfaceResult<f64> {
        gradient_into(self, st, f, x, ctx, g)
    }
    fn explain_gradient(&self, st: &ShadeState, meta: &Meta) -> Report {
        gradient_report(self, st, meta)
    }
}

// ---------------------------------------------------------------- derivative

impl<F, C> DerivativeBackend<OneArg<F>, C> for AutoShade
where
    F: ScalarFn,
    F::Kinds: Join<Scalar>,
    C: ConstArgs<Tail<F>> + Contexts,
{
    type State = ShadeState;
    fn prepare_derivative(
        &self,
        f: &OneArg<F>,
        x: f64,
        ctx: &C,
        meta: &Meta,
    ) -> InterfaceResult<ShadeState> {
        let mut st = ShadeState::new(meta);
        self.value_and_derivative_into(&mut st, f, x, ctx, &mut [0.0], &mut [0.0])?;
        Ok(st)
    }
    fn value_and_derivative_into(
        &self,
        st: &mut ShadeState,
        f: &OneArg<F>,
        x: f64,
        ctx: &C,
        y: &mut [f64],
        der: &mut [f64],
    ) -> InterfaceResult<()> {
        der[0] = st.tape.derivative(&f.0, x, ctx)?;
        st.bump.reset();
        f.eval::<f64>(x, ctx, &st.bump, y);
        Ok(())
    }
    fn explain_derivative(&self, st: &ShadeState, meta: &Meta) -> Report {
        st.report(
            self,
            meta,
            "shade-autodiff forward mode, `Tape::derivative` (Dual<f64>), 1 call + 1 f64 evaluation; a scalar input is always differentiated forward".into(),
            false,
            1,
            2,
        )
    }
}

impl<F, C> DerivativeBackend<TwoArg<F>, C> for AutoShade
where
    F: InPlaceFn,
    F::Kinds: Join<Scalar>,
    C: ConstArgs<InTail<F>> + Contexts,
{
    type State = ShadeState;
    fn prepare_derivative(
        &self,
        f: &TwoArg<F>,
        x: f64,
        ctx: &C,
        meta: &Meta,
    ) -> InterfaceResult<ShadeState> {
        let mut st = ShadeState::new(meta);
        st.duals = vec![Dual::new(0.0, 0.0); f.m];
        let (mut y, mut d) = (vec![0.0; f.m], vec![0.0; f.m]);
        self.value_and_derivative_into(&mut st, f, x, ctx, &mut y, &mut d)?;
        Ok(st)
    }
    fn value_and_derivative_into(
        &self,
        st: &mut ShadeState,
        f: &TwoArg<F>,
        x: f64,
        ctx: &C,
        y: &mut [f64],
        der: &mut [f64],
    ) -> InterfaceResult<()> {
        st.bump.reset();
        st.duals.fill(Dual::new(0.0, 0.0));
        f.eval::<Dual<f64>>(Dual::new(x, 1.0), ctx, &st.bump, &mut st.duals);
        for ((yo, d), r) in y.iter_mut().zip(der.iter_mut()).zip(&st.duals) {
            *yo = r.v;
            *d = r.d[0];
        }
        Ok(())
    }
    fn explain_derivative(&self, st: &ShadeState, meta: &Meta) -> Report {
        st.report(
            self,
            meta,
            "shade-autodiff forward mode, the function called once with the core's Dual<f64> (the core has no entry point for in-place functions of a scalar)".into(),
            false,
            1,
            1,
        )
    }
}

// ---------------------------------------------------------------- jacobian

impl<F, C> JacobianBackend<OneArg<F>, C> for AutoShade
where
    F: ScalarFn,
    F::Kinds: Join<Slice>,
    C: ShadeCall<F> + ConstArgs<Tail<F>> + Contexts,
    OneArg<F>: VecForm<C>,
{
    type State = ShadeState;
    fn prepare_jacobian(
        &self,
        f: &OneArg<F>,
        x: &[f64],
        ctx: &C,
        meta: &Meta,
    ) -> InterfaceResult<ShadeState> {
        let mut st = ShadeState::new(meta);
        let mut g = vec![0.0; x.len()];
        st.warm(|st| gradient_into(self, st, f, x, ctx, &mut g).map(|_| ()))?;
        Ok(st)
    }
    #[inline]
    fn value_and_jacobian_into(
        &self,
        st: &mut ShadeState,
        f: &OneArg<F>,
        x: &[f64],
        ctx: &C,
        y: &mut [f64],
        jac: &mut [f64],
    ) -> InterfaceResult<()> {
        y[0] = gradient_into(self, st, f, x, ctx, jac)?;
        Ok(())
    }
    fn explain_jacobian(&self, st: &ShadeState, meta: &Meta) -> Report {
        gradient_report(self, st, meta)
    }
}

impl<F, C> JacobianBackend<TwoArg<F>, C> for AutoShade
where
    F: InPlaceFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<InTail<F>> + Contexts,
{
    type State = ShadeState;
    fn prepare_jacobian(
        &self,
        f: &TwoArg<F>,
        x: &[f64],
        ctx: &C,
        meta: &Meta,
    ) -> InterfaceResult<ShadeState> {
        let mut st = ShadeState::new(meta);
        let (mut y, mut j) = (vec![0.0; f.m], vec![0.0; f.m * x.len()]);
        st.warm(|st| self.value_and_jacobian_into(st, f, x, ctx, &mut y, &mut j))?;
        Ok(st)
    }
    #[inline]
    fn value_and_jacobian_into(
        &self,
        st: &mut ShadeState,
        f: &TwoArg<F>,
        x: &[f64],
        ctx: &C,
        y: &mut [f64],
        jac: &mut [f64],
    ) -> InterfaceResult<()> {
        match self.mode {
            ModeKind::Reverse => st.tape.jacobian_reverse_into(&f.f, x, ctx, y, jac)?,
            ModeKind::Forward => st.tape.jacobian_forward_into(&f.f, x, ctx, y, jac)?,
        }
        Ok(())
    }
    fn explain_jacobian(&self, st: &ShadeState, meta: &Meta) -> Report {
        match self.mode {
            ModeKind::Reverse => st.report(
                self,
                meta,
                format!("shade-autodiff reverse tape, `Tape::jacobian_reverse_into`, 1 recording + {} sweeps", meta.m),
                false,
                1,
                1,
            ),
            ModeKind::Forward => st.report(
                self,
                meta,
                format!(
                    "shade-autodiff chunked forward mode, `Tape::jacobian_forward_into`, {} calls",
                    chunks(meta.n)
                ),
                false,
                CHUNK,
                chunks(meta.n),
            ),
        }
    }
}

// ---------------------------------------------------------------- pushforward

impl<F, C> PushforwardBackend<OneArg<F>, C> for AutoShade
where
    F: ScalarFn,
    F::Kinds: Join<Slice>,
    C: ShadeCall<F> + ConstArgs<Tail<F>> + Contexts,
    OneArg<F>: VecForm<C>,
{
    type State = ShadeState;
    fn prepare_pushforward(
        &self,
        f: &OneArg<F>,
        x: &[f64],
        ctx: &C,
        meta: &Meta,
    ) -> InterfaceResult<ShadeState> {
        let mut st = ShadeState::new(meta);
        st.tmp = vec![0.0; x.len()];
        let dx = vec![0.0; x.len()];
        let dxs = vec![0.0; CHUNK * x.len()];
        st.warm(|st| {
            self.value_and_pushforward_into(st, f, x, &dx, ctx, &mut [0.0], &mut [0.0])?;
            // The batched path too.
            self.value_and_pushforward_batch_into(
                st,
                f,
                x,
                &dxs,
                ctx,
                &mut [0.0],
                &mut [0.0; CHUNK],
            )
        })?;
        Ok(st)
    }
    #[inline]
    fn value_and_pushforward_into(
        &self,
        st: &mut ShadeState,
        f: &OneArg<F>,
        x: &[f64],
        dx: &[f64],
        ctx: &C,
        y: &mut [f64],
        dy: &mut [f64],
    ) -> InterfaceResult<()> {
        match self.mode {
            ModeKind::Forward => {
                st.seeds.clear();
                st.seeds.extend_from_slice(dx);
                let (t, v) = ctx.forward(&mut st.tape, &f.0, x, &mut st.seeds, &mut st.scratch)?;
                (y[0], dy[0]) = (v, t);
            }
            ModeKind::Reverse => {
                let mut g = core::mem::take(&mut st.tmp);
                let r = gradient_into(self, st, f, x, ctx, &mut g);
                if let Ok(v) = r {
                    y[0] = v;
                    dy[0] = g.iter().zip(dx).map(|(a, b)| a * b).sum();
                }
                st.tmp = g;
                r?;
            }
        }
        Ok(())
    }
    fn value_and_pushforward_batch_into(
        &self,
        st: &mut ShadeState,
        f: &OneArg<F>,
        x: &[f64],
        dxs: &[f64],
        ctx: &C,
        y: &mut [f64],
        dys: &mut [f64],
    ) -> InterfaceResult<()> {
        let n = x.len();
        if self.mode == ModeKind::Reverse || n == 0 {
            // One gradient serves every tangent.
            let mut g = core::mem::take(&mut st.tmp);
            g.resize(n, 0.0);
            let r = gradient_into(self, st, f, x, ctx, &mut g);
            if let Ok(v) = r {
                y[0] = v;
                for (dy, dx) in dys.iter_mut().zip(dxs.chunks_exact(n.max(1))) {
                    *dy = g.iter().zip(dx).map(|(a, b)| a * b).sum();
                }
            }
            st.tmp = g;
            return r.map(|_| ());
        }
        y[0] = value(st, f, x, ctx);
        st.seeds.resize(CHUNK * n, 0.0);
        for (block, out) in dxs.chunks(CHUNK * n).zip(dys.chunks_mut(CHUNK)) {
            st.seeds[..block.len()].copy_from_slice(block);
            st.seeds[block.len()..].fill(0.0);
            let mut it = st.seeds.chunks_exact_mut(n);
            let ts = core::array::from_fn(|_| it.next().expect("CHUNK seed buffers of length n"));
            let t = ctx.forward_batch(&mut st.tape, &f.0, x, ts)?;
            out.copy_from_slice(&t[..out.len()]);
        }
        Ok(())
    }
    fn explain_pushforward(&self, st: &ShadeState, meta: &Meta) -> Report {
        match self.mode {
            ModeKind::Forward => st.report(
                self,
                meta,
                format!("shade-autodiff forward mode, `autodiff(ForwardWithPrimal, f, Tangent, (Duplicated(x, dx), ..))`, 1 call per tangent; batches of {CHUNK} tangents via `BatchTangent::<{CHUNK}>`"),
                false,
                CHUNK,
                1,
            ),
            ModeKind::Reverse => st.report(
                self,
                meta,
                "shade-autodiff reverse tape, one gradient per call (dy = ∇f · dx), shared by a batch of tangents".into(),
                true,
                1,
                1,
            ),
        }
    }
}

impl<F, C> PushforwardBackend<TwoArg<F>, C> for AutoShade
where
    F: InPlaceFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<InTail<F>> + Contexts,
{
    type State = ShadeState;
    fn prepare_pushforward(
        &self,
        f: &TwoArg<F>,
        x: &[f64],
        ctx: &C,
        meta: &Meta,
    ) -> InterfaceResult<ShadeState> {
        let mut st = ShadeState::new(meta);
        let (mut y, mut dy, dx) = (vec![0.0; f.m], vec![0.0; f.m], vec![0.0; x.len()]);
        st.warm(|st| self.value_and_pushforward_into(st, f, x, &dx, ctx, &mut y, &mut dy))?;
        Ok(st)
    }
    #[inline]
    fn value_and_pushforward_into(
        &self,
        st: &mut ShadeState,
        f: &TwoArg<F>,
        x: &[f64],
        dx: &[f64],
        ctx: &C,
        y: &mut [f64],
        dy: &mut [f64],
    ) -> InterfaceResult<()> {
        st.tape.pushforward_into(&f.f, x, dx, ctx, y, dy)?;
        Ok(())
    }
    fn explain_pushforward(&self, st: &ShadeState, meta: &Meta) -> Report {
        st.report(
            self,
            meta,
            "shade-autodiff forward mode, `Tape::pushforward_into`, 1 call per tangent (a pushforward is forward in either mode)".into(),
            false,
            1,
            1,
        )
    }
}

// ---------------------------------------------------------------- pullback

impl<F, C> PullbackBackend<OneArg<F>, C> for AutoShade
where
    F: ScalarFn,
    F::Kinds: Join<Slice>,
    C: ShadeCall<F> + ConstArgs<Tail<F>> + Contexts,
    OneArg<F>: VecForm<C>,
{
    type State = ShadeState;
    fn prepare_pullback(
        &self,
        f: &OneArg<F>,
        x: &[f64],
        ctx: &C,
        meta: &Meta,
    ) -> InterfaceResult<ShadeState> {
        let mut st = ShadeState::new(meta);
        st.tmp = vec![0.0; x.len()];
        let mut dx = vec![0.0; x.len()];
        st.warm(|st| self.value_and_pullback_into(st, f, x, &[1.0], ctx, &mut [0.0], &mut dx))?;
        Ok(st)
    }
    #[inline]
    fn value_and_pullback_into(
        &self,
        st: &mut ShadeState,
        f: &OneArg<F>,
        x: &[f64],
        dy: &[f64],
        ctx: &C,
        y: &mut [f64],
        dx: &mut [f64],
    ) -> InterfaceResult<()> {
        match self.mode {
            ModeKind::Reverse => {
                dx.fill(0.0);
                y[0] = ctx.reverse(&mut st.tape, &f.0, dy[0], x, dx, &mut st.scratch)?;
            }
            ModeKind::Forward => {
                y[0] = forward_gradient(st, f, x, ctx, dx)?;
                dx.iter_mut().for_each(|d| *d *= dy[0]);
            }
        }
        Ok(())
    }
    fn value_and_pullback_batch_into(
        &self,
        st: &mut ShadeState,
        f: &OneArg<F>,
        x: &[f64],
        dys: &[f64],
        ctx: &C,
        y: &mut [f64],
        dxs: &mut [f64],
    ) -> InterfaceResult<()> {
        // One gradient serves every cotangent of a scalar output.
        let n = x.len();
        let mut g = core::mem::take(&mut st.tmp);
        g.resize(n, 0.0);
        let r = gradient_into(self, st, f, x, ctx, &mut g);
        if let Ok(v) = r {
            y[0] = v;
            for (dx, dy) in dxs.chunks_exact_mut(n.max(1)).zip(dys) {
                for (d, gi) in dx.iter_mut().zip(&g) {
                    *d = gi * dy;
                }
            }
        }
        st.tmp = g;
        r.map(|_| ())
    }
    fn explain_pullback(&self, st: &ShadeState, meta: &Meta) -> Report {
        match self.mode {
            ModeKind::Reverse => st.report(
                self,
                meta,
                "shade-autodiff reverse tape, `autodiff(ReverseWithPrimal, f, Active(dy), (Duplicated(x, dx), ..))`, 1 call per cotangent".into(),
                true,
                1,
                1,
            ),
            ModeKind::Forward => gradient_report(self, st, meta),
        }
    }
}

impl<F, C> PullbackBackend<TwoArg<F>, C> for AutoShade
where
    F: InPlaceFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<InTail<F>> + Contexts,
{
    type State = ShadeState;
    fn prepare_pullback(
        &self,
        f: &TwoArg<F>,
        x: &[f64],
        ctx: &C,
        meta: &Meta,
    ) -> InterfaceResult<ShadeState> {
        let mut st = ShadeState::new(meta);
        let (mut y, dy, mut dx) = (vec![0.0; f.m], vec![1.0; f.m], vec![0.0; x.len()]);
        st.warm(|st| self.value_and_pullback_into(st, f, x, &dy, ctx, &mut y, &mut dx))?;
        Ok(st)
    }
    #[inline]
    fn value_and_pullback_into(
        &self,
        st: &mut ShadeState,
        f: &TwoArg<F>,
        x: &[f64],
        dy: &[f64],
        ctx: &C,
        y: &mut [f64],
        dx: &mut [f64],
    ) -> InterfaceResult<()> {
        st.tape.pullback_into(&f.f, x, dy, ctx, y, dx)?;
        Ok(())
    }
    fn explain_pullback(&self, st: &ShadeState, meta: &Meta) -> Report {
        st.report(
            self,
            meta,
            "shade-autodiff reverse tape, `Tape::pullback_into`, 1 recording + 1 sweep per cotangent (a pullback is reverse in either mode)".into(),
            false,
            1,
            1,
        )
    }
}

// ---------------------------------------------------------------- second order

impl<F, C> SecondDerivativeBackend<F, C> for AutoShade
where
    F: ScalarFn,
    F::Kinds: Join<Scalar>,
    C: ConstArgs<Tail<F>> + Contexts,
{
    type State = ShadeState;
    fn prepare_second_derivative(
        &self,
        f: &OneArg<F>,
        x: f64,
        ctx: &C,
        meta: &Meta,
    ) -> InterfaceResult<ShadeState> {
        let mut st = ShadeState::new(meta);
        self.value_derivative_and_second_derivative(&mut st, f, x, ctx)?;
        Ok(st)
    }
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
    fn explain_second_derivative(&self, st: &ShadeState, meta: &Meta) -> Report {
        st.report(
            self,
            meta,
            "shade-autodiff forward over forward, `Tape::second_derivative` (Dual<Dual<f64>>), plus `Tape::derivative` and 1 f64 evaluation for the value variant".into(),
            false,
            1,
            3,
        )
    }
}

impl<F, C> HessianBackend<F, C> for AutoShade
where
    F: ScalarFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<Tail<F>> + Contexts,
{
    type State = ShadeState;
    fn prepare_hessian(
        &self,
        f: &OneArg<F>,
        x: &[f64],
        ctx: &C,
        meta: &Meta,
    ) -> InterfaceResult<ShadeState> {
        let mut st = ShadeState::new(meta);
        let (mut g, mut h) = (vec![0.0; x.len()], vec![0.0; x.len() * x.len()]);
        self.value_gradient_and_hessian_into(&mut st, f, x, ctx, &mut g, &mut h)?;
        Ok(st)
    }
    fn hessian_into(
        &self,
        st: &mut ShadeState,
        f: &OneArg<F>,
        x: &[f64],
        ctx: &C,
        h: &mut [f64],
    ) -> InterfaceResult<()> {
        st.dtape.hessian_into(&f.0, x, ctx, h)?;
        Ok(())
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
        st.dtape.hessian_into(&f.0, x, ctx, h)?;
        Ok(st.tape.value_and_gradient_into(&f.0, x, ctx, g)?)
    }
    fn explain_hessian(&self, st: &ShadeState, meta: &Meta) -> Report {
        st.report(
            self,
            meta,
            format!(
                "shade-autodiff forward over reverse, `Tape::<Dual<f64>>::hessian_into`, {} Hessian-vector products (+1 reverse gradient for the value variant)",
                meta.n
            ),
            false,
            1,
            meta.n,
        )
    }
}

impl<F, C> HvpBackend<F, C> for AutoShade
where
    F: ScalarFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<Tail<F>> + Contexts,
{
    type State = ShadeState;
    fn prepare_hvp(
        &self,
        f: &OneArg<F>,
        x: &[f64],
        ctx: &C,
        meta: &Meta,
    ) -> InterfaceResult<ShadeState> {
        let mut st = ShadeState::new(meta);
        let (v, mut g, mut hv) = (vec![0.0; x.len()], vec![0.0; x.len()], vec![0.0; x.len()]);
        self.gradient_and_hvp_into(&mut st, f, x, &v, ctx, &mut g, &mut hv)?;
        Ok(st)
    }
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
        st.dtape.hvp_into(&f.0, x, v, ctx, hv)?;
        Ok(())
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
        st.dtape.hvp_into(&f.0, x, v, ctx, hv)?;
        Ok(st.tape.value_and_gradient_into(&f.0, x, ctx, g)?)
    }
    fn explain_hvp(&self, st: &ShadeState, meta: &Meta) -> Report {
        st.report(
            self,
            meta,
            "shade-autodiff forward over reverse, `Tape::<Dual<f64>>::hvp_into`, 1 recording + 1 sweep (+1 reverse gradient for `gradient_and_hvp`)".into(),
            false,
            1,
            1,
        )
    }
}
