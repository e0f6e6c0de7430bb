//! The tensor operators and their prepared object [`TensorPrepared`].

use super::{ConstContexts, TensorBackend, TensorContexts, TensorEngine};
use crate::backend::{AutoFiniteDiff, FdKind, Operator};
use crate::context::ContextPassing;
use crate::error::{InterfaceError, InterfaceResult};
use crate::explain::{PathKind, Report};
use crate::ops::{GradientOp, JacobianOp, PullbackOp, PushforwardOp};
use ndarray::{Array, Array2, ArrayD, Dimension, IxDyn};
use shade_autodiff::tensor::{self as engine, Tape, TapeBuffers, Var};
use shade_autodiff::{AdError, Const, Duplicated, ModeKind};
use std::marker::PhantomData;

/// A tensor program over `x` with contexts `C`: the core's closure form.
pub trait TensorProgram<C: TensorContexts>:
    for<'t> Fn(&mut Tape<'t, f64>, (Var, &'t C::Handles)) -> shade_autodiff::AdResult<Var>
{
}

impl<C: TensorContexts, P> TensorProgram<C> for P where
    P: for<'t> Fn(&mut Tape<'t, f64>, (Var, &'t C::Handles)) -> shade_autodiff::AdResult<Var>
{
}

/// A prepared tensor operator: program, backend, the core's tape buffers and scratch.
///
/// The input shape and the output shape are fixed at preparation (the program is run
/// once there) and checked at every call.
pub struct TensorPrepared<Op, P, B, D: Dimension> {
    program: P,
    backend: B,
    bufs: TapeBuffers<f64>,
    shape: Vec<usize>,
    out_shape: Vec<usize>,
    /// A tangent, a perturbed input, or a gradient (input shape).
    tan: Array<f64, D>,
    xp: Array<f64, D>,
    /// A seed or an output (output shape).
    seed: ArrayD<f64>,
    yp: ArrayD<f64>,
    report: Report,
    op: PhantomData<Op>,
}

impl<Op, P, B: std::fmt::Debug, D: Dimension> std::fmt::Debug for TensorPrepared<Op, P, B, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorPrepared")
            .field("backend", &self.backend)
            .field("shape", &self.shape)
            .field("out_shape", &self.out_shape)
            .finish_non_exhaustive()
    }
}

fn shape_err(
    operator: Operator,
    argument: &'static str,
    expected: &[usize],
    found: &[usize],
) -> InterfaceError {
    InterfaceError::ShapeMismatch {
        operator: operator.name(),
        argument,
        expected: expected.to_vec(),
        found: found.to_vec(),
    }
}

fn prepare<Op, P, B, C, D>(
    operator: Operator,
    program: P,
    backend: &B,
    x: &Array<f64, D>,
    ctx: C,
) -> InterfaceResult<TensorPrepared<Op, P, B, D>>
where
    P: TensorProgram<C>,
    B: TensorBackend,
    C: TensorContexts,
    D: Dimension,
{
    backend.validate()?;
    let mut bufs = TapeBuffers::new();
    let y = engine::value(
        &mut bufs,
        &program,
        (Const(x), ConstContexts(ctx, &mut None)),
    )?;
    let out_shape = y.shape().to_vec();
    let (n, m) = (x.len(), y.len());
    let (path, detail, calls) = match backend.engine() {
        TensorEngine::Shade(mode) => {
            let (entry, calls) = match (operator, mode) {
                (Operator::Gradient, _) => (
                    "`tensor::gradient(bufs, program, (Duplicated(x, g), Const(..)))`",
                    1,
                ),
                (Operator::Pullback, _) => (
                    "`tensor::pullback(bufs, program, (Duplicated(x, dx), Const(..)), dy)`",
                    1,
                ),
                (Operator::Pushforward, _) => (
                    "`tensor::pushforward_into(bufs, program, (Duplicated(x, dx), Const(..)), y, dy)`",
                    1,
                ),
                (_, ModeKind::Reverse) => ("`tensor::pullback`, one per output", m),
                (_, ModeKind::Forward) => ("`tensor::pushforward_into`, one per input", n),
            };
            (
                PathKind::Native,
                format!("shade-autodiff tensor tape, {entry}"),
                calls,
            )
        }
        TensorEngine::FiniteDiff(fd) => {
            let per = match fd.kind {
                FdKind::Central => 2,
                FdKind::Forward => 1,
            };
            let calls = match operator {
                Operator::Pushforward => 1 + per,
                _ => 1 + per * n,
            };
            (
                PathKind::Generic,
                "generic fallback: finite differences of `tensor::value` (primal tape)".to_string(),
                calls,
            )
        }
    };
    let report = Report {
        operator: operator.name(),
        backend: backend.name(),
        path,
        detail,
        contexts: vec![ContextPassing::ConstantAsConst; C::COUNT],
        batch: 1,
        calls,
        tape_records: None,
        reserved_bytes: 16 * (n + m),
    };
    Ok(TensorPrepared {
        program,
        backend: *backend,
        bufs,
        shape: x.shape().to_vec(),
        tan: Array::zeros(x.raw_dim()),
        xp: Array::zeros(x.raw_dim()),
        seed: ArrayD::zeros(IxDyn(&out_shape)),
        yp: ArrayD::zeros(IxDyn(&out_shape)),
        out_shape,
        report,
        op: PhantomData,
    })
}

impl<Op, P, B: TensorBackend, D: Dimension> TensorPrepared<Op, P, B, D> {
    /// What this prepared operator does.
    pub fn explain(&self) -> &Report {
        &self.report
    }

    /// The shape of the program's result.
    pub fn output_shape(&self) -> &[usize] {
        &self.out_shape
    }

    fn check(
        &self,
        op: Operator,
        argument: &'static str,
        found: &[usize],
        output: bool,
    ) -> InterfaceResult<()> {
        let want = if output { &self.out_shape } else { &self.shape };
        if want[..] == *found {
            Ok(())
        } else {
            Err(shape_err(op, argument, want, found))
        }
    }

    /// `f(x + t d)` written into `self.yp` (finite differences).
    fn eval_shifted<C>(
        &mut self,
        x: &Array<f64, D>,
        t: f64,
        d: Option<&Array<f64, D>>,
        k: Option<usize>,
        ctx: C,
    ) -> InterfaceResult<()>
    where
        P: TensorProgram<C>,
        C: TensorContexts,
    {
        self.xp.assign(x);
        if let Some(d) = d {
            self.xp.scaled_add(t, d);
        }
        if let Some(k) = k {
            // `xp` is in standard layout (made by `Array::zeros`).
            if let Some(v) = self.xp.as_slice_mut().and_then(|s| s.get_mut(k)) {
                *v += t;
            }
        }
        let y = engine::value(
            &mut self.bufs,
            &self.program,
            (Const(&self.xp), ConstContexts(ctx, &mut None)),
        )?;
        self.yp.assign(&y);
        Ok(())
    }

    /// Column `k` (or direction `d`) of the Jacobian by finite differences, into `self.seed`.
    fn fd_column<C>(
        &mut self,
        fd: &AutoFiniteDiff,
        x: &Array<f64, D>,
        d: Option<&Array<f64, D>>,
        k: Option<usize>,
        ctx: C,
    ) -> InterfaceResult<()>
    where
        P: TensorProgram<C>,
        C: TensorContexts,
    {
        let xn = x.iter().fold(0.0f64, |a, b| a.max(b.abs()));
        let dn = d.map_or(1.0, |d| d.iter().fold(0.0f64, |a, b| a.max(b.abs())));
        if dn == 0.0 {
            self.seed.fill(0.0);
            return Ok(());
        }
        let h = (fd.first_rel_step() * xn.max(1.0) + fd.abs_step) / dn;
        self.eval_shifted(x, h, d, k, ctx)?;
        // `seed` holds f(x + h d) for a moment.
        self.seed.assign(&self.yp);
        match fd.kind {
            FdKind::Central => {
                self.eval_shifted(x, -h, d, k, ctx)?;
                self.seed
                    .zip_mut_with(&self.yp, |p, m| *p = (*p - m) / (2.0 * h));
            }
            FdKind::Forward => {
                self.eval_shifted(x, 0.0, None, None, ctx)?;
                self.seed.zip_mut_with(&self.yp, |p, y| *p = (*p - y) / h);
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- gradient

/// Prepares `gradient` of a tensor program with a scalar result.
pub fn prepare_gradient<P, B, C, D>(
    program: P,
    backend: &B,
    x: &Array<f64, D>,
    ctx: C,
) -> InterfaceResult<TensorPrepared<GradientOp, P, B, D>>
where
    P: TensorProgram<C>,
    B: TensorBackend,
    C: TensorContexts,
    D: Dimension,
{
    let p = prepare(Operator::Gradient, program, backend, x, ctx)?;
    if p.out_shape.iter().product::<usize>() != 1 {
        return Err(AdError::NonScalarReturn {
            len: p.out_shape.iter().product(),
        }
        .into());
    }
    Ok(p)
}

/// The gradient of a tensor program with a scalar result.
pub fn gradient<P, B, C, D>(
    program: P,
    backend: &B,
    x: &Array<f64, D>,
    ctx: C,
) -> InterfaceResult<Array<f64, D>>
where
    P: TensorProgram<C>,
    B: TensorBackend,
    C: TensorContexts,
    D: Dimension,
{
    prepare_gradient(program, backend, x, ctx)?.gradient(x, ctx)
}

impl<P, B: TensorBackend, D: Dimension> TensorPrepared<GradientOp, P, B, D> {
    /// `∇f(x)`.
    pub fn gradient<C>(&mut self, x: &Array<f64, D>, ctx: C) -> InterfaceResult<Array<f64, D>>
    where
        P: TensorProgram<C>,
        C: TensorContexts,
    {
        let mut g = Array::zeros(x.raw_dim());
        self.value_and_gradient_into(x, ctx, &mut g)?;
        Ok(g)
    }

    /// Writes `∇f(x)` into `g` (overwriting it) and returns `f(x)`; warm calls with
    /// `AutoShade` do not allocate.
    pub fn value_and_gradient_into<C>(
        &mut self,
        x: &Array<f64, D>,
        ctx: C,
        g: &mut Array<f64, D>,
    ) -> InterfaceResult<f64>
    where
        P: TensorProgram<C>,
        C: TensorContexts,
    {
        self.check(Operator::Gradient, "x", x.shape(), false)?;
        self.check(Operator::Gradient, "gradient", g.shape(), false)?;
        match self.backend.engine() {
            TensorEngine::Shade(_) => {
                g.fill(0.0);
                Ok(engine::gradient(
                    &mut self.bufs,
                    &self.program,
                    (Duplicated(x, g), ConstContexts(ctx, &mut None)),
                )?)
            }
            TensorEngine::FiniteDiff(fd) => {
                for k in 0..x.len() {
                    self.fd_column(&fd, x, None, Some(k), ctx)?;
                    self.tan.as_slice_mut().expect("standard layout")[k] =
                        self.seed.iter().next().copied().unwrap_or(0.0);
                }
                g.assign(&self.tan);
                self.eval_shifted(x, 0.0, None, None, ctx)?;
                Ok(self.yp.iter().next().copied().unwrap_or(0.0))
            }
        }
    }
}

// ---------------------------------------------------------------- pullback

/// Prepares `pullback` (VJP) of a tensor program.
pub fn prepare_pullback<P, B, C, D>(
    program: P,
    backend: &B,
    x: &Array<f64, D>,
    ctx: C,
) -> InterfaceResult<TensorPrepared<PullbackOp, P, B, D>>
where
    P: TensorProgram<C>,
    B: TensorBackend,
    C: TensorContexts,
    D: Dimension,
{
    prepare(Operator::Pullback, program, backend, x, ctx)
}

/// `J(x)ᵀ dy` for a tensor program (`dy` of the result's shape).
pub fn pullback<P, B, C, D>(
    program: P,
    backend: &B,
    x: &Array<f64, D>,
    dy: &ArrayD<f64>,
    ctx: C,
) -> InterfaceResult<Array<f64, D>>
where
    P: TensorProgram<C>,
    B: TensorBackend,
    C: TensorContexts,
    D: Dimension,
{
    prepare_pullback(program, backend, x, ctx)?.pullback(x, dy, ctx)
}

impl<P, B: TensorBackend, D: Dimension> TensorPrepared<PullbackOp, P, B, D> {
    /// `J(x)ᵀ dy`.
    pub fn pullback<C>(
        &mut self,
        x: &Array<f64, D>,
        dy: &ArrayD<f64>,
        ctx: C,
    ) -> InterfaceResult<Array<f64, D>>
    where
        P: TensorProgram<C>,
        C: TensorContexts,
    {
        let mut dx = Array::zeros(x.raw_dim());
        self.pullback_into(x, dy, ctx, &mut dx)?;
        Ok(dx)
    }

    /// Writes `J(x)ᵀ dy` into `dx` (overwriting it).
    pub fn pullback_into<C>(
        &mut self,
        x: &Array<f64, D>,
        dy: &ArrayD<f64>,
        ctx: C,
        dx: &mut Array<f64, D>,
    ) -> InterfaceResult<()>
    where
        P: TensorProgram<C>,
        C: TensorContexts,
    {
        self.check(Operator::Pullback, "x", x.shape(), false)?;
        self.check(Operator::Pullback, "dy", dy.shape(), true)?;
        self.check(Operator::Pullback, "dx", dx.shape(), false)?;
        match self.backend.engine() {
            TensorEngine::Shade(_) => {
                dx.fill(0.0);
                Ok(engine::pullback(
                    &mut self.bufs,
                    &self.program,
                    (Duplicated(x, dx), ConstContexts(ctx, &mut None)),
                    dy,
                )?)
            }
            TensorEngine::FiniteDiff(fd) => {
                for k in 0..x.len() {
                    self.fd_column(&fd, x, None, Some(k), ctx)?;
                    let v: f64 = self.seed.iter().zip(dy.iter()).map(|(a, b)| a * b).sum();
                    self.tan.as_slice_mut().expect("standard layout")[k] = v;
                }
                dx.assign(&self.tan);
                Ok(())
            }
        }
    }
}

// ---------------------------------------------------------------- pushforward

/// Prepares `pushforward` (JVP) of a tensor program.
pub fn prepare_pushforward<P, B, C, D>(
    program: P,
    backend: &B,
    x: &Array<f64, D>,
    ctx: C,
) -> InterfaceResult<TensorPrepared<PushforwardOp, P, B, D>>
where
    P: TensorProgram<C>,
    B: TensorBackend,
    C: TensorContexts,
    D: Dimension,
{
    prepare(Operator::Pushforward, program, backend, x, ctx)
}

/// `(f(x), J(x) dx)` for a tensor program.
pub fn pushforward<P, B, C, D>(
    program: P,
    backend: &B,
    x: &Array<f64, D>,
    dx: &Array<f64, D>,
    ctx: C,
) -> InterfaceResult<(ArrayD<f64>, ArrayD<f64>)>
where
    P: TensorProgram<C>,
    B: TensorBackend,
    C: TensorContexts,
    D: Dimension,
{
    prepare_pushforward(program, backend, x, ctx)?.value_and_pushforward(x, dx, ctx)
}

impl<P, B: TensorBackend, D: Dimension> TensorPrepared<PushforwardOp, P, B, D> {
    /// `(f(x), J(x) dx)`.
    pub fn value_and_pushforward<C>(
        &mut self,
        x: &Array<f64, D>,
        dx: &Array<f64, D>,
        ctx: C,
    ) -> InterfaceResult<(ArrayD<f64>, ArrayD<f64>)>
    where
        P: TensorProgram<C>,
        C: TensorContexts,
    {
        let mut y = ArrayD::zeros(IxDyn(&self.out_shape));
        let mut dy = y.clone();
        self.value_and_pushforward_into(x, dx, ctx, &mut y, &mut dy)?;
        Ok((y, dy))
    }

    /// Writes `f(x)` and `J(x) dx` into `y` and `dy` (result's shape).
    pub fn value_and_pushforward_into<C>(
        &mut self,
        x: &Array<f64, D>,
        dx: &Array<f64, D>,
        ctx: C,
        y: &mut ArrayD<f64>,
        dy: &mut ArrayD<f64>,
    ) -> InterfaceResult<()>
    where
        P: TensorProgram<C>,
        C: TensorContexts,
    {
        self.check(Operator::Pushforward, "x", x.shape(), false)?;
        self.check(Operator::Pushforward, "dx", dx.shape(), false)?;
        self.check(Operator::Pushforward, "y", y.shape(), true)?;
        self.check(Operator::Pushforward, "dy", dy.shape(), true)?;
        match self.backend.engine() {
            TensorEngine::Shade(_) => {
                self.tan.assign(dx);
                Ok(engine::pushforward_into(
                    &mut self.bufs,
                    &self.program,
                    (Duplicated(x, &mut self.tan), ConstContexts(ctx, &mut None)),
                    y,
                    dy,
                )?)
            }
            TensorEngine::FiniteDiff(fd) => {
                self.fd_column(&fd, x, Some(dx), None, ctx)?;
                dy.assign(&self.seed);
                self.eval_shifted(x, 0.0, None, None, ctx)?;
                y.assign(&self.yp);
                Ok(())
            }
        }
    }
}

// ---------------------------------------------------------------- jacobian

/// Prepares `jacobian` of a tensor program (`m × n`: result entries × input entries,
/// both in logical order).
pub fn prepare_jacobian<P, B, C, D>(
    program: P,
    backend: &B,
    x: &Array<f64, D>,
    ctx: C,
) -> InterfaceResult<TensorPrepared<JacobianOp, P, B, D>>
where
    P: TensorProgram<C>,
    B: TensorBackend,
    C: TensorContexts,
    D: Dimension,
{
    prepare(Operator::Jacobian, program, backend, x, ctx)
}

/// The Jacobian of a tensor program (`m × n`).
pub fn jacobian<P, B, C, D>(
    program: P,
    backend: &B,
    x: &Array<f64, D>,
    ctx: C,
) -> InterfaceResult<Array2<f64>>
where
    P: TensorProgram<C>,
    B: TensorBackend,
    C: TensorContexts,
    D: Dimension,
{
    prepare_jacobian(program, backend, x, ctx)?.jacobian(x, ctx)
}

impl<P, B: TensorBackend, D: Dimension> TensorPrepared<JacobianOp, P, B, D> {
    /// The Jacobian (`m × n`).
    pub fn jacobian<C>(&mut self, x: &Array<f64, D>, ctx: C) -> InterfaceResult<Array2<f64>>
    where
        P: TensorProgram<C>,
        C: TensorContexts,
    {
        let mut j = Array2::zeros((self.seed.len(), x.len()));
        self.jacobian_into(x, ctx, &mut j)?;
        Ok(j)
    }

    /// Writes the Jacobian into `jac` (`m × n`).
    pub fn jacobian_into<C>(
        &mut self,
        x: &Array<f64, D>,
        ctx: C,
        jac: &mut Array2<f64>,
    ) -> InterfaceResult<()>
    where
        P: TensorProgram<C>,
        C: TensorContexts,
    {
        self.check(Operator::Jacobian, "x", x.shape(), false)?;
        let (m, n) = (self.seed.len(), x.len());
        if jac.shape() != [m, n] {
            return Err(shape_err(
                Operator::Jacobian,
                "jacobian",
                &[m, n],
                jac.shape(),
            ));
        }
        match self.backend.engine() {
            TensorEngine::Shade(ModeKind::Reverse) => {
                for r in 0..m {
                    self.seed.fill(0.0);
                    if let Some(s) = self.seed.as_slice_mut() {
                        s[r] = 1.0;
                    }
                    self.tan.fill(0.0);
                    engine::pullback(
                        &mut self.bufs,
                        &self.program,
                        (Duplicated(x, &mut self.tan), ConstContexts(ctx, &mut None)),
                        &self.seed,
                    )?;
                    jac.row_mut(r)
                        .iter_mut()
                        .zip(self.tan.iter())
                        .for_each(|(o, v)| *o = *v);
                }
            }
            TensorEngine::Shade(ModeKind::Forward) => {
                for c in 0..n {
                    self.tan.fill(0.0);
                    self.tan.as_slice_mut().expect("standard layout")[c] = 1.0;
                    engine::pushforward_into(
                        &mut self.bufs,
                        &self.program,
                        (Duplicated(x, &mut self.tan), ConstContexts(ctx, &mut None)),
                        &mut self.yp,
                        &mut self.seed,
                    )?;
                    jac.column_mut(c)
                        .iter_mut()
                        .zip(self.seed.iter())
                        .for_each(|(o, v)| *o = *v);
                }
            }
            TensorEngine::FiniteDiff(fd) => {
                for c in 0..n {
                    self.fd_column(&fd, x, None, Some(c), ctx)?;
                    jac.column_mut(c)
                        .iter_mut()
                        .zip(self.seed.iter())
                        .for_each(|(o, v)| *o = *v);
                }
            }
        }
        Ok(())
    }
}
