//! The tensor operators (one-shot functions) and their prepared object
//! [`TensorPrepared`] (a program with its [`Workspace`]).

use super::work::shapes_of;
use super::{
    Ran, Run, TensorBackend, TensorContexts, TensorInput, TensorProgram, Workspace, entries,
};
use crate::backend::Operator;
use crate::error::InterfaceResult;
use crate::explain::Report;
use crate::ops::{GradientOp, JacobianOp, PullbackOp, PushforwardOp};
use ndarray::{Array2, ArrayD, IxDyn};
use shade_autodiff::AdError;
use shade_autodiff::tensor::Element;
use std::borrow::{Borrow, BorrowMut};
use std::marker::PhantomData;

/// The free tensor operators: each is generic over the program `P`, the backend `B`,
/// the element `T`, the input `X`, the contexts `C` and their handles `H`, with the
/// same bounds, which rustc wants written on every function; this writes them once.
/// An item is `$(#[doc])* $vis fn name<more generics>(args) -> R { body }` (the
/// generics optional, before the six), and returns `InterfaceResult<R>`.
macro_rules! tensor_operators {
    ($(
        $(#[$doc:meta])*
        $vis:vis fn $name:ident$(<$($g:ident),*>)?($($args:tt)*) -> $ret:ty $body:block
    )*) => {$(
        $(#[$doc])*
        $vis fn $name<$($($g,)*)? P, B, T, X, C, H>($($args)*) -> InterfaceResult<$ret>
        where
            P: TensorProgram<T, X, H>,
            B: TensorBackend,
            T: Element,
            X: TensorInput<T> + ?Sized,
            C: TensorContexts<T, H>,
        $body
    )*};
}

/// A zeroed value of `x`'s shape.
fn zeros_like<T: Element, X: TensorInput<T> + ?Sized>(x: &X) -> X::Owned {
    let mut z = x.to_standard();
    let b: &mut X = z.borrow_mut();
    for k in 0..b.arrays() {
        b.array_mut(k).fill(T::zero());
    }
    z
}

/// The operator and the contexts' handle types of a [`TensorPrepared`].
type Markers<Op, H> = (Op, fn(&H));

/// A prepared tensor operator: the program, the backend and the [`Workspace`].
///
/// The input's shapes and the result's shape are fixed at preparation (the program is
/// run once there) and checked at every call.
pub struct TensorPrepared<Op, P, B, T: Element, X: TensorInput<T> + ?Sized, H> {
    program: P,
    backend: B,
    work: Workspace<T, X>,
    report: Report,
    op: PhantomData<Markers<Op, H>>,
}

impl<Op, P, B: std::fmt::Debug, T: Element, X: TensorInput<T> + ?Sized, H> std::fmt::Debug
    for TensorPrepared<Op, P, B, T, X, H>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorPrepared")
            .field("backend", &self.backend)
            .field("work", &self.work)
            .finish_non_exhaustive()
    }
}

tensor_operators! {
    /// The preparation every operator shares: the backend checked, the input's shapes
    /// kept, the result's shape learnt by one run, the report written.
    fn prepare<Op>(
        operator: Operator,
        mut program: P,
        backend: &B,
        x: &X,
        ctx: C,
    ) -> TensorPrepared<Op, P, B, T, X, H> {
        backend.validate()?;
        let mut work = Workspace::new();
        work.shapes = Some(shapes_of(x));
        Run::new(&mut work, &mut program, ctx).learn_output(x)?;
        let report = Ran {
            operator,
            engine: backend.engine(),
            n: entries(x),
            m: work.seed.len(),
            contexts: C::COUNT,
        }
        .report();
        Ok(TensorPrepared {
            program,
            backend: *backend,
            work,
            report,
            op: PhantomData,
        })
    }
}

impl<Op, P, B: TensorBackend, T: Element, X: TensorInput<T> + ?Sized, H>
    TensorPrepared<Op, P, B, T, X, H>
{
    /// What this prepared operator does.
    pub fn explain(&self) -> &Report {
        &self.report
    }

    /// The shape of the program's result.
    pub fn output_shape(&self) -> &[usize] {
        self.work.out_shape.as_deref().unwrap_or(&[])
    }

    /// The storage (e.g. to turn anomaly mode on in its tape buffers).
    pub fn workspace(&mut self) -> &mut Workspace<T, X> {
        &mut self.work
    }

    /// Runs `call` twice when the backend is native, so that the tape's pool settles
    /// after one full sweep and later calls do not allocate.
    fn warm(
        &mut self,
        mut call: impl FnMut(&mut Self) -> InterfaceResult<()>,
    ) -> InterfaceResult<()> {
        if matches!(self.backend.engine(), super::TensorEngine::Shade(_)) {
            call(self)?;
            call(self)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- gradient

tensor_operators! {
    /// Prepares `gradient` of a tensor program with a scalar result.
    pub fn prepare_gradient(
        program: P, backend: &B, x: &X, ctx: C,
    ) -> TensorPrepared<GradientOp, P, B, T, X, H> {
        let mut p = prepare(Operator::Gradient, program, backend, x, ctx)?;
        if p.work.seed.len() != 1 {
            return Err(AdError::NonScalarReturn {
                len: p.work.seed.len(),
            }
            .into());
        }
        let mut g = zeros_like(x);
        p.warm(|p| p.value_and_gradient_into(x, ctx, g.borrow_mut()).map(drop))?;
        Ok(p)
    }

    /// The gradient of a tensor program with a scalar result: one engine call with
    /// `AutoShade::REVERSE` (no preparation run).
    pub fn gradient(program: P, backend: &B, x: &X, ctx: C) -> X::Owned {
        value_and_gradient(program, backend, x, ctx).map(|r| r.1)
    }

    /// `(f(x), ∇f(x))` of a tensor program with a scalar result.
    pub fn value_and_gradient(program: P, backend: &B, x: &X, ctx: C) -> (T, X::Owned) {
        let mut g = zeros_like(x);
        let v = Workspace::new().value_and_gradient_into(program, backend, x, ctx, g.borrow_mut())?;
        Ok((v, g))
    }
}

impl<P, B: TensorBackend, T: Element, X: TensorInput<T> + ?Sized, H>
    TensorPrepared<GradientOp, P, B, T, X, H>
{
    /// `∇f(x)`.
    pub fn gradient<C>(&mut self, x: &X, ctx: C) -> InterfaceResult<X::Owned>
    where
        P: TensorProgram<T, X, H>,
        C: TensorContexts<T, H>,
    {
        let mut g = zeros_like(x);
        self.value_and_gradient_into(x, ctx, g.borrow_mut())?;
        Ok(g)
    }

    /// Writes `∇f(x)` into `g` (overwriting it) and returns `f(x)`; warm calls with
    /// `AutoShade::REVERSE` do not allocate.
    pub fn value_and_gradient_into<C>(&mut self, x: &X, ctx: C, g: &mut X) -> InterfaceResult<T>
    where
        P: TensorProgram<T, X, H>,
        C: TensorContexts<T, H>,
    {
        self.work
            .value_and_gradient_into(&mut self.program, &self.backend, x, ctx, g)
    }
}

// ---------------------------------------------------------------- pullback

tensor_operators! {
    /// Prepares `pullback` (VJP) of a tensor program.
    pub fn prepare_pullback(
        program: P, backend: &B, x: &X, ctx: C,
    ) -> TensorPrepared<PullbackOp, P, B, T, X, H> {
        let mut p = prepare(Operator::Pullback, program, backend, x, ctx)?;
        let (dy, mut dx) = (ArrayD::zeros(IxDyn(p.output_shape())), zeros_like(x));
        p.warm(|p| p.pullback_into(x, &dy, ctx, dx.borrow_mut()))?;
        Ok(p)
    }

    /// `J(x)ᵀ dy` for a tensor program (`dy` of the result's shape).
    pub fn pullback(program: P, backend: &B, x: &X, dy: &ArrayD<T>, ctx: C) -> X::Owned {
        let mut dx = zeros_like(x);
        Workspace::new().pullback_into(program, backend, (x, dy), ctx, dx.borrow_mut())?;
        Ok(dx)
    }
}

impl<P, B: TensorBackend, T: Element, X: TensorInput<T> + ?Sized, H>
    TensorPrepared<PullbackOp, P, B, T, X, H>
{
    /// `J(x)ᵀ dy`.
    pub fn pullback<C>(&mut self, x: &X, dy: &ArrayD<T>, ctx: C) -> InterfaceResult<X::Owned>
    where
        P: TensorProgram<T, X, H>,
        C: TensorContexts<T, H>,
    {
        let mut dx = zeros_like(x);
        self.pullback_into(x, dy, ctx, dx.borrow_mut())?;
        Ok(dx)
    }

    /// Writes `J(x)ᵀ dy` into `dx` (overwriting it).
    pub fn pullback_into<C>(
        &mut self,
        x: &X,
        dy: &ArrayD<T>,
        ctx: C,
        dx: &mut X,
    ) -> InterfaceResult<()>
    where
        P: TensorProgram<T, X, H>,
        C: TensorContexts<T, H>,
    {
        self.work
            .pullback_into(&mut self.program, &self.backend, (x, dy), ctx, dx)
    }
}

// ---------------------------------------------------------------- pushforward

tensor_operators! {
    /// Prepares `pushforward` (JVP) of a tensor program.
    pub fn prepare_pushforward(
        program: P, backend: &B, x: &X, ctx: C,
    ) -> TensorPrepared<PushforwardOp, P, B, T, X, H> {
        let mut p = prepare(Operator::Pushforward, program, backend, x, ctx)?;
        let dx = zeros_like(x);
        let mut y = ArrayD::zeros(IxDyn(p.output_shape()));
        let mut dy = y.clone();
        p.warm(|p| p.value_and_pushforward_into(x, dx.borrow(), ctx, &mut y, &mut dy))?;
        Ok(p)
    }

    /// `(f(x), J(x) dx)` for a tensor program.
    pub fn pushforward(
        mut program: P, backend: &B, x: &X, dx: &X, ctx: C,
    ) -> (ArrayD<T>, ArrayD<T>) {
        let mut work = Workspace::new();
        Run::new(&mut work, &mut program, ctx).learn_output(x)?;
        let mut y = ArrayD::zeros(IxDyn(work.out_shape.as_deref().unwrap_or(&[])));
        let mut dy = y.clone();
        work.value_and_pushforward_into(program, backend, (x, dx), ctx, (&mut y, &mut dy))?;
        Ok((y, dy))
    }
}

impl<P, B: TensorBackend, T: Element, X: TensorInput<T> + ?Sized, H>
    TensorPrepared<PushforwardOp, P, B, T, X, H>
{
    /// `(f(x), J(x) dx)`.
    pub fn value_and_pushforward<C>(
        &mut self,
        x: &X,
        dx: &X,
        ctx: C,
    ) -> InterfaceResult<(ArrayD<T>, ArrayD<T>)>
    where
        P: TensorProgram<T, X, H>,
        C: TensorContexts<T, H>,
    {
        let mut y = ArrayD::zeros(IxDyn(self.output_shape()));
        let mut dy = y.clone();
        self.value_and_pushforward_into(x, dx, ctx, &mut y, &mut dy)?;
        Ok((y, dy))
    }

    /// Writes `f(x)` and `J(x) dx` into `y` and `dy` (result's shape).
    pub fn value_and_pushforward_into<C>(
        &mut self,
        x: &X,
        dx: &X,
        ctx: C,
        y: &mut ArrayD<T>,
        dy: &mut ArrayD<T>,
    ) -> InterfaceResult<()>
    where
        P: TensorProgram<T, X, H>,
        C: TensorContexts<T, H>,
    {
        self.work.value_and_pushforward_into(
            &mut self.program,
            &self.backend,
            (x, dx),
            ctx,
            (y, dy),
        )
    }
}

// ---------------------------------------------------------------- jacobian

tensor_operators! {
    /// Prepares `jacobian` of a tensor program (`m × n`: result entries × input entries,
    /// both in logical order, the input's arrays one after the other).
    pub fn prepare_jacobian(
        program: P, backend: &B, x: &X, ctx: C,
    ) -> TensorPrepared<JacobianOp, P, B, T, X, H> {
        prepare(Operator::Jacobian, program, backend, x, ctx)
    }

    /// The Jacobian of a tensor program (`m × n`).
    pub fn jacobian(mut program: P, backend: &B, x: &X, ctx: C) -> Array2<T> {
        let mut work = Workspace::new();
        Run::new(&mut work, &mut program, ctx).learn_output(x)?;
        let mut j = Array2::zeros((work.seed.len(), entries(x)));
        work.jacobian_into(program, backend, x, ctx, &mut j)?;
        Ok(j)
    }
}

impl<P, B: TensorBackend, T: Element, X: TensorInput<T> + ?Sized, H>
    TensorPrepared<JacobianOp, P, B, T, X, H>
{
    /// The Jacobian (`m × n`).
    pub fn jacobian<C>(&mut self, x: &X, ctx: C) -> InterfaceResult<Array2<T>>
    where
        P: TensorProgram<T, X, H>,
        C: TensorContexts<T, H>,
    {
        let mut j = Array2::zeros((self.work.seed.len(), entries(x)));
        self.jacobian_into(x, ctx, &mut j)?;
        Ok(j)
    }

    /// Writes the Jacobian into `jac` (`m × n`).
    pub fn jacobian_into<C>(&mut self, x: &X, ctx: C, jac: &mut Array2<T>) -> InterfaceResult<()>
    where
        P: TensorProgram<T, X, H>,
        C: TensorContexts<T, H>,
    {
        self.work
            .jacobian_into(&mut self.program, &self.backend, x, ctx, jac)
    }
}
