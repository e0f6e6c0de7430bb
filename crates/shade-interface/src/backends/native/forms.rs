//! What the native path does for each function form: one helper trait per kind of
//! input (a slice `x`, a scalar `x`, the one-argument gradient and its second order),
//! each a bound alias implemented once per form with every bound the core's entry
//! points need, so that the operator impls of `AutoShade<M>` are one line each; and the
//! report spec of every operator × form ([`NativeForm::spec`]).

use super::{ShadeCall, ShadeState, chunks};
use crate::backend::Operator;
use crate::context::Contexts;
use crate::error::InterfaceResult;
use crate::explain::Spec;
use crate::form::{InTail, OneArg, OneArgVec, ScalarForm, Tail, TwoArg, VecForm, VecTail};
use crate::prep::Meta;
use shade_autodiff::ModeKind;
use shade_autodiff::scalar::{
    CHUNK, ConstArgs, Dual, InPlaceFn, Join, Scalar, ScalarFn, Slice, VectorFn,
};

/// A function form the native backend knows: says which core entry point each
/// operator calls ([`Spec`] of the report).
pub trait NativeForm {
    /// The report spec of `op` in mode `mode` for the preparation `meta`.
    #[doc(hidden)]
    fn spec(op: Operator, mode: ModeKind, meta: &Meta) -> Spec;
}

/// One call of a slice-input operator: what is asked and where the result goes (the
/// primal output always goes to `y`).
#[derive(Debug)]
pub enum VecCall<'a> {
    /// The Jacobian (`m × n`, row-major).
    Jacobian(&'a mut [f64]),
    /// `dy = J dx`.
    Pushforward(&'a [f64], &'a mut [f64]),
    /// Stacked tangents `dxs` (`k × n`) and results `dys` (`k × m`).
    PushforwardBatch(&'a [f64], &'a mut [f64]),
    /// `dx = Jᵀ dy` (overwriting `dx`).
    Pullback(&'a [f64], &'a mut [f64]),
    /// Stacked cotangents `dys` (`k × m`) and results `dxs` (`k × n`).
    PullbackBatch(&'a [f64], &'a mut [f64]),
}

/// A form differentiated natively with respect to a slice `x` (jacobian, pushforward,
/// pullback), with contexts `C`.
#[diagnostic::on_unimplemented(
    message = "`AutoShade` cannot differentiate `{Self}` with contexts `{C}` with respect to a slice",
    label = "the contexts do not match the function's parameters after `x`",
    note = "a `&[S]` parameter takes `Constant(&slice)` or `Cache(&buf)`; a `&mut [S]` parameter takes `Cache(&mut buf)`; an `S` parameter takes `Constant(x)`; a `&C` parameter takes `Constant(&c)`"
)]
pub trait NativeVec<C>: NativeForm {
    /// Runs `call` at `x` in mode `mode`, writing `y = f(x)`.
    #[doc(hidden)]
    fn run(
        &self,
        mode: ModeKind,
        st: &mut ShadeState,
        at: (&[f64], &C),
        y: &mut [f64],
        call: VecCall<'_>,
    ) -> InterfaceResult<()>;
}

/// A form differentiated natively with respect to a scalar `x` (derivative).
#[diagnostic::on_unimplemented(
    message = "`AutoShade` cannot differentiate `{Self}` with contexts `{C}` with respect to a scalar",
    label = "the contexts do not match the function's parameters after `x`",
    note = "`derivative` takes `shade_fn!(f(S, ...))` or `shade_fn!(f(&mut [S], S, ...))`"
)]
pub trait NativeScalar<C>: NativeForm {
    /// Writes `y = f(x)` and `dy/dx`.
    #[doc(hidden)]
    fn derivative(
        &self,
        st: &mut ShadeState,
        x: f64,
        ctx: &C,
        y: &mut [f64],
        der: &mut [f64],
    ) -> InterfaceResult<()>;
}

/// A one-argument function whose gradient the native backend computes in either mode
/// (`autodiff` with the contexts as activities, [`ShadeCall`]).
#[diagnostic::on_unimplemented(
    message = "`AutoShade` cannot take the gradient of `{Self}` with contexts `{C}`",
    label = "the contexts do not match the function's parameters after `x`",
    note = "a `&[S]` parameter takes `Constant(&slice)` or `Cache(&buf)`; a `&mut [S]` parameter takes `Cache(&mut buf)`; an `S` parameter takes `Constant(x)`; a `&C` parameter takes `Constant(&c)`"
)]
pub trait NativeGradient<C>: NativeVec<C> {
    /// Writes `∇f(x)` into `g` (overwriting it) and returns `f(x)`.
    #[doc(hidden)]
    fn gradient(
        &self,
        mode: ModeKind,
        st: &mut ShadeState,
        x: &[f64],
        ctx: &C,
        g: &mut [f64],
    ) -> InterfaceResult<f64>;
}

/// A one-argument function whose Hessian (and Hessian-vector products) the native
/// backend computes forward over reverse (`Tape<Dual<f64>>`).
#[diagnostic::on_unimplemented(
    message = "`AutoShade` cannot take second derivatives of `{Self}` with contexts `{C}`",
    label = "the contexts do not match the function's parameters after `x`",
    note = "`hessian` and `hvp` take `shade_fn!(f(&[S], ...))` and one context per trailing parameter"
)]
pub trait NativeHessian<C>: NativeForm {
    /// Writes the Hessian into `h`.
    #[doc(hidden)]
    fn hessian(
        &self,
        st: &mut ShadeState,
        x: &[f64],
        ctx: &C,
        h: &mut [f64],
    ) -> InterfaceResult<()>;
    /// Writes `∇²f(x) v` into `hv`.
    #[doc(hidden)]
    fn hvp(
        &self,
        st: &mut ShadeState,
        x: &[f64],
        v: &[f64],
        ctx: &C,
        hv: &mut [f64],
    ) -> InterfaceResult<()>;
    /// Writes `hvs[k] = ∇²f(x) vs[k]` for stacked directions.
    #[doc(hidden)]
    fn hvp_batch(
        &self,
        st: &mut ShadeState,
        x: &[f64],
        vs: &[f64],
        ctx: &C,
        hvs: &mut [f64],
    ) -> InterfaceResult<()>;
    /// Writes `∇f(x)` (reverse tape) and returns `f(x)`.
    #[doc(hidden)]
    fn value_and_gradient(
        &self,
        st: &mut ShadeState,
        x: &[f64],
        ctx: &C,
        g: &mut [f64],
    ) -> InterfaceResult<f64>;
}

/// Writes a method of a form's impl of a helper trait above ([`NativeVec::run`],
/// [`NativeScalar::derivative`], [`NativeGradient::gradient`], the methods of
/// [`NativeHessian`]; `hvp` and `hvp_batch` share one shape) with the trait's signature,
/// from the parameter names (in the trait's order; macro hygiene) and the body: three
/// forms implement `run` and two `derivative`, and each impl repeated the trait's
/// signature verbatim. The impl headers, with their bounds, stay written out.
macro_rules! native_fn {
    ($(#[$a:meta])* run($s:tt, $mode:tt, $st:tt, $at:pat, $y:tt, $call:tt) $body:block) => {
        $(#[$a])* fn run(&$s, $mode: ModeKind, $st: &mut ShadeState, $at: (&[f64], &C), $y: &mut [f64], $call: VecCall<'_>) -> InterfaceResult<()> $body
    };
    ($(#[$a:meta])* derivative($s:tt, $st:tt, $x:tt, $ctx:tt, $y:tt, $der:tt) $body:block) => {
        $(#[$a])* fn derivative(&$s, $st: &mut ShadeState, $x: f64, $ctx: &C, $y: &mut [f64], $der: &mut [f64]) -> InterfaceResult<()> $body
    };
    ($(#[$a:meta])* gradient($s:tt, $mode:tt, $st:tt, $x:tt, $ctx:tt, $g:tt) $body:block) => {
        $(#[$a])* fn gradient(&$s, $mode: ModeKind, $st: &mut ShadeState, $x: &[f64], $ctx: &C, $g: &mut [f64]) -> InterfaceResult<f64> $body
    };
    ($(#[$a:meta])* hessian($s:tt, $st:tt, $x:tt, $ctx:tt, $h:tt) $body:block) => {
        $(#[$a])* fn hessian(&$s, $st: &mut ShadeState, $x: &[f64], $ctx: &C, $h: &mut [f64]) -> InterfaceResult<()> $body
    };
    ($(#[$a:meta])* $name:ident($s:tt, $st:tt, $x:tt, $v:tt, $ctx:tt, $hv:tt) $body:block) => {
        $(#[$a])* fn $name(&$s, $st: &mut ShadeState, $x: &[f64], $v: &[f64], $ctx: &C, $hv: &mut [f64]) -> InterfaceResult<()> $body
    };
    ($(#[$a:meta])* value_and_gradient($s:tt, $st:tt, $x:tt, $ctx:tt, $g:tt) $body:block) => {
        $(#[$a])* fn value_and_gradient(&$s, $st: &mut ShadeState, $x: &[f64], $ctx: &C, $g: &mut [f64]) -> InterfaceResult<f64> $body
    };
}

// ---------------------------------------------------------------- report specs

fn gradient_spec(mode: ModeKind, meta: &Meta) -> Spec {
    let op = meta.operator.name();
    match mode {
        ModeKind::Reverse if !meta.ctx.has_cache() => Spec::native(
            format!(
                "shade-autodiff reverse tape, `Tape::value_and_gradient_into(f, x, (Const(..), ..), g)`, 1 call per {op}"
            ),
            1,
        ),
        ModeKind::Reverse => Spec::native(
            format!(
                "shade-autodiff reverse tape, `autodiff(ReverseWithPrimal, f, Active(1.0), (Duplicated(x, dx), ..))`, 1 call per {op}"
            ),
            1,
        )
        .caches_duplicated(),
        ModeKind::Forward => Spec::native(
            format!(
                "shade-autodiff chunked forward mode, `autodiff(Forward, f, BatchTangent::<{CHUNK}>, (BatchDuplicated(x, seeds), ..))`, {} calls per {op} + 1 f64 evaluation",
                chunks(meta.n)
            ),
            chunks(meta.n) + 1,
        )
        .batch(CHUNK),
    }
}

impl<F: ScalarFn> NativeForm for OneArg<F> {
    fn spec(op: Operator, mode: ModeKind, meta: &Meta) -> Spec {
        match (op, mode) {
            (Operator::Derivative, _) => Spec::native(
                "shade-autodiff forward mode, `Tape::derivative` (Dual<f64>), 1 call + 1 f64 evaluation; a scalar input is always differentiated forward",
                2,
            ),
            (Operator::SecondDerivative, _) => Spec::native(
                "shade-autodiff forward over forward, `Tape::second_derivative` (Dual<Dual<f64>>), plus `Tape::derivative` and 1 f64 evaluation for the value variant",
                3,
            ),
            (Operator::Hessian, _) => Spec::native(
                format!(
                    "shade-autodiff forward over reverse, `Tape::<DualVec<f64, {CHUNK}>>::hessian_batch_into`, {} recordings of {CHUNK} Hessian-vector products each (+1 reverse gradient for the value variant)",
                    chunks(meta.n)
                ),
                chunks(meta.n),
            )
            .batch(CHUNK),
            (Operator::Hvp, _) => Spec::native(
                format!(
                    "shade-autodiff forward over reverse, `Tape::<Dual<f64>>::hvp_into`, 1 recording + 1 sweep (+1 reverse gradient for `gradient_and_hvp`); batches of up to {CHUNK} directions per recording (`Tape::<DualVec<f64, N>>::hvp_batch_into`)"
                ),
                1,
            ),
            (Operator::Pushforward, ModeKind::Forward) => Spec::native(
                format!(
                    "shade-autodiff forward mode, `autodiff(ForwardWithPrimal, f, Tangent, (Duplicated(x, dx), ..))`, 1 call per tangent; batches of {CHUNK} tangents via `BatchTangent::<{CHUNK}>`"
                ),
                1,
            )
            .batch(CHUNK),
            (Operator::Pushforward, ModeKind::Reverse) => Spec::native(
                "shade-autodiff reverse tape, one gradient per call (dy = ∇f · dx), shared by a batch of tangents",
                1,
            )
            .caches_duplicated(),
            (Operator::Pullback, ModeKind::Reverse) => Spec::native(
                "shade-autodiff reverse tape, `autodiff(ReverseWithPrimal, f, Active(dy), (Duplicated(x, dx), ..))`, 1 call per cotangent",
                1,
            )
            .caches_duplicated(),
            // Gradient, a 1 × n Jacobian, a forward-mode pullback: one gradient.
            _ => gradient_spec(mode, meta),
        }
    }
}

/// The report spec of a vector-valued form: the core's in-place entry points
/// (`suffix` `"_into"`) or those of functions returning a vector (`"_vec_into"`).
fn vector_spec(op: Operator, mode: ModeKind, meta: &Meta, suffix: &str) -> Spec {
    match (op, mode) {
        (Operator::Derivative, _) => Spec::native(
            "shade-autodiff forward mode, the function called once with the core's Dual<f64> (the core has no entry point for in-place functions of a scalar)",
            1,
        ),
        (Operator::Pushforward, _) => Spec::native(
            format!(
                "shade-autodiff forward mode, `Tape::pushforward{suffix}`, 1 call per tangent; batches of up to {CHUNK} tangents per call (`Tape::pushforward_batch{suffix}`); a pushforward is forward in either mode"
            ),
            1,
        ),
        (Operator::Pullback, _) => Spec::native(
            format!(
                "shade-autodiff reverse tape, `Tape::pullback{suffix}`, 1 recording + 1 sweep per cotangent; a batch shares one recording (`Tape::pullback_batch{suffix}`); a pullback is reverse in either mode"
            ),
            1,
        ),
        (_, ModeKind::Reverse) => Spec::native(
            format!(
                "shade-autodiff reverse tape, `Tape::jacobian_reverse{suffix}`, 1 recording + {} sweeps",
                meta.m
            ),
            1,
        ),
        (_, ModeKind::Forward) => Spec::native(
            format!(
                "shade-autodiff chunked forward mode, `Tape::jacobian_forward{suffix}`, {} calls",
                chunks(meta.n)
            ),
            chunks(meta.n),
        )
        .batch(CHUNK),
    }
}

impl<F: InPlaceFn> NativeForm for TwoArg<F> {
    fn spec(op: Operator, mode: ModeKind, meta: &Meta) -> Spec {
        vector_spec(op, mode, meta, "_into")
    }
}

impl<F: VectorFn> NativeForm for OneArgVec<F> {
    fn spec(op: Operator, mode: ModeKind, meta: &Meta) -> Spec {
        vector_spec(op, mode, meta, "_vec_into")
    }
}

// ---------------------------------------------------------------- one argument, slice x

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

/// Runs `with` on a gradient buffer of length `n` borrowed from the state.
pub(super) fn with_gradient<R>(
    st: &mut ShadeState,
    n: usize,
    with: impl FnOnce(&mut ShadeState, &mut [f64]) -> InterfaceResult<R>,
) -> InterfaceResult<R> {
    let mut g = core::mem::take(&mut st.tmp);
    g.resize(n, 0.0);
    let r = with(st, &mut g);
    st.tmp = g;
    r
}

#[diagnostic::do_not_recommend]
impl<F, C> NativeGradient<C> for OneArg<F>
where
    F: ScalarFn,
    F::Kinds: Join<Slice>,
    C: ShadeCall<F> + ConstArgs<Tail<F>> + Contexts,
    OneArg<F>: VecForm<C>,
{
    native_fn!(#[inline] gradient(self, mode, st, x, ctx, g) {
        match mode {
            // Constants only: the tape's prepared gradient, the leanest core entry point
            // (it overwrites `g`; nothing to accumulate, no shadow to check).
            ModeKind::Reverse if !C::CACHES => {
                Ok(st.tape.value_and_gradient_into(&self.0, x, ctx, g)?)
            }
            ModeKind::Reverse => {
                g.fill(0.0);
                Ok(ctx.reverse(&mut st.tape, &self.0, 1.0, x, g, &mut st.scratch)?)
            }
            ModeKind::Forward => forward_gradient(st, self, x, ctx, g),
        }
    });
}

#[diagnostic::do_not_recommend]
impl<F, C> NativeVec<C> for OneArg<F>
where
    F: ScalarFn,
    F::Kinds: Join<Slice>,
    C: ShadeCall<F> + ConstArgs<Tail<F>> + Contexts,
    OneArg<F>: VecForm<C>,
{
    native_fn!(#[inline] run(self, mode, st, (x, ctx), y, call) {
        let n = x.len();
        match (call, mode) {
            (VecCall::Jacobian(jac), _) => y[0] = self.gradient(mode, st, x, ctx, jac)?,
            (VecCall::Pushforward(dx, dy), ModeKind::Forward) => {
                st.seeds.clear();
                st.seeds.extend_from_slice(dx);
                let (t, v) =
                    ctx.forward(&mut st.tape, &self.0, x, &mut st.seeds, &mut st.scratch)?;
                (y[0], dy[0]) = (v, t);
            }
            (VecCall::PushforwardBatch(dxs, dys), ModeKind::Forward) if n > 0 => {
                y[0] = value(st, self, x, ctx);
                st.seeds.resize(CHUNK * n, 0.0);
                for (block, out) in dxs.chunks(CHUNK * n).zip(dys.chunks_mut(CHUNK)) {
                    st.seeds[..block.len()].copy_from_slice(block);
                    st.seeds[block.len()..].fill(0.0);
                    let mut it = st.seeds.chunks_exact_mut(n);
                    let ts = core::array::from_fn(|_| {
                        it.next().expect("CHUNK seed buffers of length n")
                    });
                    let t = ctx.forward_batch(&mut st.tape, &self.0, x, ts)?;
                    out.copy_from_slice(&t[..out.len()]);
                }
            }
            // One gradient serves every tangent: dy = ∇f · dx.
            (VecCall::Pushforward(dxs, dys) | VecCall::PushforwardBatch(dxs, dys), _) => {
                dys.fill(0.0);
                with_gradient(st, n, |st, g| {
                    y[0] = self.gradient(mode, st, x, ctx, g)?;
                    for (dy, dx) in dys.iter_mut().zip(dxs.chunks_exact(n.max(1))) {
                        *dy = g.iter().zip(dx).map(|(a, b)| a * b).sum();
                    }
                    Ok(())
                })?;
            }
            (VecCall::Pullback(dy, dx), ModeKind::Reverse) => {
                dx.fill(0.0);
                y[0] = ctx.reverse(&mut st.tape, &self.0, dy[0], x, dx, &mut st.scratch)?;
            }
            (VecCall::Pullback(dy, dx), ModeKind::Forward) => {
                y[0] = forward_gradient(st, self, x, ctx, dx)?;
                dx.iter_mut().for_each(|d| *d *= dy[0]);
            }
            // One gradient serves every cotangent of a scalar output.
            (VecCall::PullbackBatch(dys, dxs), _) => {
                with_gradient(st, n, |st, g| {
                    y[0] = self.gradient(mode, st, x, ctx, g)?;
                    for (dx, dy) in dxs.chunks_exact_mut(n.max(1)).zip(dys) {
                        for (d, gi) in dx.iter_mut().zip(g.iter()) {
                            *d = gi * dy;
                        }
                    }
                    Ok(())
                })?;
            }
        }
        Ok(())
    });
}

#[diagnostic::do_not_recommend]
impl<F, C> NativeHessian<C> for OneArg<F>
where
    F: ScalarFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<Tail<F>> + Contexts,
{
    native_fn!(hessian(self, st, x, ctx, h) {
        st.hv8.hessian_batch_into(&self.0, x, ctx, h)?;
        Ok(())
    });
    native_fn!(hvp_batch(self, st, x, vs, ctx, hvs) {
        let n = x.len();
        let k = vs.len().checked_div(n).unwrap_or(0);
        // Groups of CHUNK directions while more than 4 remain, then one of 4.
        let mut c0 = 0;
        while c0 < k {
            let w = (k - c0).min(CHUNK);
            let (v, hv) = (&vs[c0 * n..(c0 + w) * n], &mut hvs[c0 * n..(c0 + w) * n]);
            if w > 4 {
                st.hv8.hvp_batch_into(&self.0, x, v, ctx, hv)?;
            } else {
                st.hv4.hvp_batch_into(&self.0, x, v, ctx, hv)?;
            }
            c0 += w;
        }
        Ok(())
    });
    native_fn!(#[inline] hvp(self, st, x, v, ctx, hv) {
        st.dtape.hvp_into(&self.0, x, v, ctx, hv)?;
        Ok(())
    });
    native_fn!(value_and_gradient(self, st, x, ctx, g) {
        Ok(st.tape.value_and_gradient_into(&self.0, x, ctx, g)?)
    });
}

// ---------------------------------------------------------------- vector outputs, slice x

/// Stacked pushforwards by groups of [`CHUNK`] tangents while more than 4 remain, then
/// one of 4 (which also computes the value when there is no tangent): `group(wide,
/// tangents, results)` runs one group, `wide` for [`CHUNK`] tangents.
fn pushforward_groups(
    (n, m): (usize, usize),
    dxs: &[f64],
    dys: &mut [f64],
    mut group: impl FnMut(bool, &[f64], &mut [f64]) -> InterfaceResult<()>,
) -> InterfaceResult<()> {
    let k = dxs.len().checked_div(n).unwrap_or(0);
    let mut c0 = 0;
    loop {
        let w = (k - c0).min(CHUNK);
        let (t, out) = (&dxs[c0 * n..(c0 + w) * n], &mut dys[c0 * m..(c0 + w) * m]);
        group(w > 4, t, out)?;
        c0 += w;
        if c0 >= k {
            return Ok(());
        }
    }
}

/// The core's calls for a vector-valued form, written once for both: the in-place
/// entry points (`*_into`) or their twins for functions returning a vector
/// (`*_vec_into`), named in that order: reverse and forward Jacobian, pushforward,
/// pullback, batched pushforward, batched pullback. A pushforward is forward and a
/// pullback reverse in either mode.
macro_rules! vector_calls {
    ($tape:ident, $f:ident, $x:ident, $ctx:ident, $y:ident, $call:ident, $mode:ident;
     $jr:ident, $jf:ident, $pf:ident, $pb:ident, $pfb:ident, $pbb:ident) => {
        match ($call, $mode) {
            (VecCall::Jacobian(jac), ModeKind::Reverse) => $tape.$jr($f, $x, $ctx, $y, jac)?,
            (VecCall::Jacobian(jac), ModeKind::Forward) => $tape.$jf($f, $x, $ctx, $y, jac)?,
            (VecCall::Pushforward(dx, dy), _) => $tape.$pf($f, $x, dx, $ctx, $y, dy)?,
            (VecCall::Pullback(dy, dx), _) => $tape.$pb($f, $x, dy, $ctx, $y, dx)?,
            (VecCall::PushforwardBatch(dxs, dys), _) => {
                pushforward_groups(($x.len(), $y.len()), dxs, dys, |wide, t, out| {
                    if wide {
                        $tape.$pfb::<CHUNK, _, _>($f, $x, t, $ctx, $y, out)?;
                    } else {
                        $tape.$pfb::<4, _, _>($f, $x, t, $ctx, $y, out)?;
                    }
                    Ok(())
                })?
            }
            (VecCall::PullbackBatch(dys, dxs), _) => $tape.$pbb($f, $x, dys, $ctx, $y, dxs)?,
        }
    };
}

#[diagnostic::do_not_recommend]
impl<F, C> NativeVec<C> for TwoArg<F>
where
    F: InPlaceFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<InTail<F>> + Contexts,
{
    native_fn!(#[inline] run(self, mode, st, (x, ctx), y, call) {
        if !st.probed {
            // Once: does the function write exactly `m` outputs?
            self.check_outputs(x, ctx)?;
            st.probed = true;
        }
        let (tape, f) = (&mut st.tape, &self.f);
        vector_calls!(tape, f, x, ctx, y, call, mode;
            jacobian_reverse_into, jacobian_forward_into, pushforward_into, pullback_into,
            pushforward_batch_into, pullback_batch_into);
        Ok(())
    });
}

/// The core's `*_vec_into` entry points check every evaluation's length against `m`
/// (`SHADE-E0132`): nothing to probe.
#[diagnostic::do_not_recommend]
impl<F, C> NativeVec<C> for OneArgVec<F>
where
    F: VectorFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<VecTail<F>> + Contexts,
{
    native_fn!(#[inline] run(self, mode, st, (x, ctx), y, call) {
        let (tape, f) = (&mut st.tape, &self.f);
        vector_calls!(tape, f, x, ctx, y, call, mode;
            jacobian_reverse_vec_into, jacobian_forward_vec_into, pushforward_vec_into,
            pullback_vec_into, pushforward_batch_vec_into, pullback_batch_vec_into);
        Ok(())
    });
}

// ---------------------------------------------------------------- scalar x

#[diagnostic::do_not_recommend]
impl<F, C> NativeScalar<C> for OneArg<F>
where
    F: ScalarFn,
    F::Kinds: Join<Scalar>,
    C: ConstArgs<Tail<F>> + Contexts,
{
    native_fn!(derivative(self, st, x, ctx, y, der) {
        der[0] = st.tape.derivative(&self.0, x, ctx)?;
        st.bump.reset();
        self.eval::<f64>(x, ctx, &st.bump, y);
        Ok(())
    });
}

#[diagnostic::do_not_recommend]
impl<F, C> NativeScalar<C> for TwoArg<F>
where
    F: InPlaceFn,
    F::Kinds: Join<Scalar>,
    C: ConstArgs<InTail<F>> + Contexts,
{
    native_fn!(derivative(self, st, x, ctx, y, der) {
        if !st.probed {
            self.check_outputs(x, ctx)?;
            st.probed = true;
        }
        st.bump.reset();
        st.duals.clear();
        st.duals.resize(self.m, Dual::new(0.0, 0.0));
        self.eval::<Dual<f64>>(Dual::new(x, 1.0), ctx, &st.bump, &mut st.duals);
        for ((yo, d), r) in y.iter_mut().zip(der.iter_mut()).zip(&st.duals) {
            *yo = r.v;
            *d = r.d[0];
        }
        Ok(())
    });
}
