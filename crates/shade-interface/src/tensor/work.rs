//! [`Workspace`]: the reusable storage of tensor operators (the core's tape buffers,
//! shadows, tangents, perturbed inputs), the shape checks, the dispatch to the engines
//! (`backends/native/tensor.rs`, `backends/fd/tensor.rs`) and the report of what ran.

use super::{ConstContexts, InputArg, TensorBackend, TensorContexts, TensorEngine, TensorInput};
use super::{TensorProgram, entries, mismatch};
use crate::backend::{Backend, FdKind, Operator};
use crate::context::ContextPassing;
use crate::error::{InterfaceError, InterfaceResult};
use crate::explain::{PathKind, Report};
use ndarray::{Array2, ArrayD, IxDyn};
use shade_autodiff::ModeKind;
use shade_autodiff::tensor::{self as engine, Element, TapeBuffers};
use std::borrow::{Borrow, BorrowMut};
use std::marker::PhantomData;

/// Reusable storage of tensor operators on arguments of type `X`: pass the same one to
/// every call (the program may change from call to call, as a training step's closure
/// does) and warm calls with `AutoShade` allocate nothing.
///
/// ```
/// use ndarray::{Array2, array};
/// use shade_interface::{AutoShade, Constant, PathKind, tensor::Workspace};
///
/// let x = array![[1.0, 2.0]];
/// let params = vec![Array2::from_elem((2, 2), 0.5), Array2::from_elem((2, 1), -1.0)];
/// let mut grads = vec![Array2::zeros((2, 2)), Array2::zeros((2, 1))];
/// let mut work = Workspace::new();
/// for step in 0..3 {
///     // A new closure every step (it could borrow the step's data).
///     let scale = 1.0 + step as f64;
///     let loss = work.value_and_gradient_into(
///         |t, (p, &(x,))| {
///             let h = t.matmul(x, p[0])?;
///             let h = t.matmul(h, p[1])?;
///             let h = t.scale(h, scale)?;
///             t.sum(h)
///         },
///         &AutoShade::REVERSE,
///         &params[..],
///         (Constant(&x),),
///         &mut grads[..],
///     )?;
///     assert_eq!(loss, -3.0 * scale);
/// }
/// assert_eq!(work.explain().unwrap().path, PathKind::Native);
/// # Ok::<(), shade_interface::InterfaceError>(())
/// ```
pub struct Workspace<T: Element, X: TensorInput<T> + ?Sized> {
    pub(crate) bufs: TapeBuffers<T>,
    /// Input shapes fixed at preparation ([`TensorPrepared`](super::TensorPrepared));
    /// `None`: each call only checks its arguments against each other.
    pub(crate) shapes: Option<Vec<Vec<usize>>>,
    /// The result's shape, once a call has seen it.
    pub(crate) out_shape: Option<Vec<usize>>,
    /// A shadow or a tangent of the input's shape (standard layout).
    pub(crate) tan: Option<X::Owned>,
    /// A perturbed copy of the input (finite differences; standard layout).
    pub(crate) xp: Option<X::Owned>,
    /// Buffers of the result's shape: a seed, a value, a tangent.
    pub(crate) seed: ArrayD<T>,
    pub(crate) y: ArrayD<T>,
    pub(crate) dy: ArrayD<T>,
    last: Option<Ran>,
    marker: PhantomData<fn(&X)>,
}

impl<T: Element, X: TensorInput<T> + ?Sized> Default for Workspace<T, X> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Element, X: TensorInput<T> + ?Sized> std::fmt::Debug for Workspace<T, X> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("shapes", &self.shapes)
            .field("out_shape", &self.out_shape)
            .field("last", &self.last)
            .finish_non_exhaustive()
    }
}

/// What a call ran, kept for [`Workspace::explain`] (the report is built on demand, so
/// a call formats nothing).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Ran {
    pub(crate) operator: Operator,
    pub(crate) engine: TensorEngine,
    /// Input entries and result entries.
    pub(crate) n: usize,
    pub(crate) m: usize,
    pub(crate) contexts: usize,
}

impl Ran {
    /// The report of this call.
    pub(crate) fn report(&self) -> Report {
        let (n, m) = (self.n, self.m);
        let (backend, path, detail, calls) = match self.engine {
            TensorEngine::Shade(mode) => {
                let (entry, calls) = match (self.operator, mode) {
                    (Operator::Gradient, ModeKind::Reverse) => (
                        "`tensor::gradient(bufs, program, (Duplicated(x, g), Const(..)))`",
                        1,
                    ),
                    (Operator::Gradient, ModeKind::Forward) => (
                        "forward mode, `tensor::pushforward_into(bufs, program, (Duplicated(x, e_j), Const(..)), y, dy)` once per input entry",
                        n,
                    ),
                    (Operator::Pullback, _) => (
                        "`tensor::pullback(bufs, program, (Duplicated(x, dx), Const(..)), dy)` (a pullback is reverse in either mode)",
                        1,
                    ),
                    (Operator::Pushforward, _) => (
                        "`tensor::pushforward_into(bufs, program, (Duplicated(x, dx), Const(..)), y, dy)` (a pushforward is forward in either mode)",
                        1,
                    ),
                    (_, ModeKind::Reverse) => ("`tensor::pullback`, one per output entry", m),
                    (_, ModeKind::Forward) => {
                        ("`tensor::pushforward_into`, one per input entry", n)
                    }
                };
                (
                    format!("AutoShade({})", mode.name()),
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
                let calls = match self.operator {
                    Operator::Pushforward => 1 + per,
                    _ => 1 + per * n,
                };
                (
                    fd.name(),
                    PathKind::Generic,
                    "generic fallback: finite differences of `tensor::value` (primal tape)"
                        .to_string(),
                    calls,
                )
            }
        };
        Report {
            operator: self.operator.name(),
            backend,
            path,
            detail,
            contexts: vec![ContextPassing::ConstantAsConst; self.contexts],
            batch: 1,
            calls,
            tape_records: None,
            reserved_bytes: 16 * (n + m),
        }
    }
}

pub(crate) fn shape_err(
    operator: Operator,
    argument: &'static str,
    expected: Vec<usize>,
    found: Vec<usize>,
) -> InterfaceError {
    InterfaceError::ShapeMismatch {
        operator: operator.name(),
        argument,
        expected,
        found,
    }
}

impl<T: Element, X: TensorInput<T> + ?Sized> Workspace<T, X> {
    /// Empty storage; the first call sizes it.
    pub fn new() -> Self {
        Workspace {
            bufs: TapeBuffers::new(),
            shapes: None,
            out_shape: None,
            tan: None,
            xp: None,
            seed: ArrayD::zeros(IxDyn(&[])),
            y: ArrayD::zeros(IxDyn(&[])),
            dy: ArrayD::zeros(IxDyn(&[])),
            last: None,
            marker: PhantomData,
        }
    }

    /// The core's tape buffers.
    pub fn buffers(&self) -> &TapeBuffers<T> {
        &self.bufs
    }

    /// The core's tape buffers, writable (e.g. to turn on anomaly mode, or to run the
    /// program without derivatives on the same storage).
    pub fn buffers_mut(&mut self) -> &mut TapeBuffers<T> {
        &mut self.bufs
    }

    /// What the last call ran (backend, path, engine entry point), if there was one.
    pub fn explain(&self) -> Option<Report> {
        self.last.map(|r| r.report())
    }

    /// Checks `x` against the shapes fixed at preparation, and `other` (a gradient, a
    /// tangent) against `x`.
    pub(crate) fn check_input(
        &self,
        op: Operator,
        x: &X,
        other: Option<(&'static str, &X)>,
    ) -> InterfaceResult<()> {
        if let Some(shapes) = &self.shapes
            && let Some((e, f)) = mismatch(x, shapes)
        {
            return Err(shape_err(op, "x", e, f));
        }
        match other.and_then(|(argument, o)| differ(x, o).map(|d| (argument, d))) {
            Some((argument, (e, f))) => Err(shape_err(op, argument, e, f)),
            None => Ok(()),
        }
    }

    /// Checks an argument of the result's shape, once it is known.
    pub(crate) fn check_output(
        &self,
        op: Operator,
        argument: &'static str,
        found: &[usize],
    ) -> InterfaceResult<()> {
        match &self.out_shape {
            Some(want) if want[..] != *found => {
                Err(shape_err(op, argument, want.clone(), found.to_vec()))
            }
            _ => Ok(()),
        }
    }

    /// A zeroed buffer of `x`'s shape in `slot` (made on first use, reused after).
    pub(crate) fn zeroed<'s>(slot: &'s mut Option<X::Owned>, x: &X) -> &'s mut X {
        let fits = slot
            .as_ref()
            .is_some_and(|t| differ(x, t.borrow()).is_none());
        if !fits {
            *slot = Some(x.to_standard());
        }
        let t: &mut X = slot.as_mut().expect("made above").borrow_mut();
        for k in 0..t.arrays() {
            t.array_mut(k).fill(T::zero());
        }
        t
    }

    /// The first steps of every operator: validates `backend`, checks `x` against the
    /// preparation, `other` against `x` and each of `outputs` against the result's
    /// shape; returns the engine to dispatch to.
    fn begin<B: TensorBackend>(
        &self,
        (op, backend): (Operator, &B),
        x: &X,
        other: Option<(&'static str, &X)>,
        outputs: &[(&'static str, &[usize])],
    ) -> InterfaceResult<TensorEngine> {
        backend.validate()?;
        self.check_input(op, x, other)?;
        for &(argument, found) in outputs {
            self.check_output(op, argument, found)?;
        }
        Ok(backend.engine())
    }

    /// Runs `call` on a [`Run`] of `program` with `ctx` and records what ran.
    fn run<P, C, H, R>(
        &mut self,
        (operator, engine): (Operator, TensorEngine),
        x: &X,
        (program, ctx): (P, C),
        call: impl FnOnce(&mut Run<'_, T, X, P, C, H>) -> InterfaceResult<R>,
    ) -> InterfaceResult<R>
    where
        P: TensorProgram<T, X, H>,
        C: TensorContexts<T, H>,
    {
        let r = call(&mut Run {
            work: &mut *self,
            program,
            ctx,
            handles: PhantomData,
        })?;
        self.last = Some(Ran {
            operator,
            engine,
            n: entries(x),
            m: self.out_shape.as_deref().map_or(1, |s| s.iter().product()),
            contexts: C::COUNT,
        });
        Ok(r)
    }

    /// Writes `∇f(x)` into `g` (overwriting it) and returns `f(x)`, for a program with a
    /// scalar result (`AdError::NonScalarReturn` otherwise).
    pub fn value_and_gradient_into<P, B, C, H>(
        &mut self,
        program: P,
        backend: &B,
        x: &X,
        ctx: C,
        g: &mut X,
    ) -> InterfaceResult<T>
    where
        P: TensorProgram<T, X, H>,
        B: TensorBackend,
        C: TensorContexts<T, H>,
    {
        let engine = self.begin((Operator::Gradient, backend), x, Some(("gradient", g)), &[])?;
        self.run(
            (Operator::Gradient, engine),
            x,
            (program, ctx),
            |r| match engine {
                TensorEngine::Shade(ModeKind::Reverse) => r.native_gradient(x, g),
                TensorEngine::Shade(ModeKind::Forward) => r.native_forward_gradient(x, g),
                TensorEngine::FiniteDiff(fd) => r.fd_gradient(&fd, x, g),
            },
        )
    }

    /// Writes `J(x)ᵀ dy` into `dx` (overwriting it); `dy` has the result's shape.
    pub fn pullback_into<P, B, C, H>(
        &mut self,
        program: P,
        backend: &B,
        (x, dy): (&X, &ArrayD<T>),
        ctx: C,
        dx: &mut X,
    ) -> InterfaceResult<()>
    where
        P: TensorProgram<T, X, H>,
        B: TensorBackend,
        C: TensorContexts<T, H>,
    {
        let outputs = [("dy", dy.shape())];
        let engine = self.begin((Operator::Pullback, backend), x, Some(("dx", dx)), &outputs)?;
        self.run(
            (Operator::Pullback, engine),
            x,
            (program, ctx),
            |r| match engine {
                TensorEngine::Shade(_) => r.native_pullback(x, dy, dx),
                TensorEngine::FiniteDiff(fd) => r.fd_pullback(&fd, x, dy, dx),
            },
        )
    }

    /// Writes `f(x)` and `J(x) dx` into `y` and `dy` (the result's shape).
    pub fn value_and_pushforward_into<P, B, C, H>(
        &mut self,
        program: P,
        backend: &B,
        (x, dx): (&X, &X),
        ctx: C,
        (y, dy): (&mut ArrayD<T>, &mut ArrayD<T>),
    ) -> InterfaceResult<()>
    where
        P: TensorProgram<T, X, H>,
        B: TensorBackend,
        C: TensorContexts<T, H>,
    {
        let outputs = [("y", y.shape()), ("dy", dy.shape())];
        let engine = self.begin(
            (Operator::Pushforward, backend),
            x,
            Some(("dx", dx)),
            &outputs,
        )?;
        self.run(
            (Operator::Pushforward, engine),
            x,
            (program, ctx),
            |r| match engine {
                TensorEngine::Shade(_) => r.native_pushforward((x, dx), y, dy),
                TensorEngine::FiniteDiff(fd) => r.fd_pushforward(&fd, (x, dx), y, dy),
            },
        )
    }

    /// Writes the Jacobian into `jac` (`m × n`: result entries × input entries, both in
    /// logical order, the input's arrays one after the other).
    pub fn jacobian_into<P, B, C, H>(
        &mut self,
        program: P,
        backend: &B,
        x: &X,
        ctx: C,
        jac: &mut Array2<T>,
    ) -> InterfaceResult<()>
    where
        P: TensorProgram<T, X, H>,
        B: TensorBackend,
        C: TensorContexts<T, H>,
    {
        let engine = self.begin((Operator::Jacobian, backend), x, None, &[])?;
        self.run((Operator::Jacobian, engine), x, (program, ctx), |r| {
            r.learn_output(x)?;
            let (m, n) = (r.work.seed.len(), entries(x));
            if jac.shape() != [m, n] {
                return Err(shape_err(
                    Operator::Jacobian,
                    "jacobian",
                    vec![m, n],
                    jac.shape().to_vec(),
                ));
            }
            match engine {
                TensorEngine::Shade(mode) => r.native_jacobian(mode, x, jac),
                TensorEngine::FiniteDiff(fd) => r.fd_jacobian(&fd, x, jac),
            }
        })
    }
}

/// One call of a tensor operator: the workspace, the program and its contexts. The
/// engines (`backends/native/tensor.rs`, `backends/fd/tensor.rs`) are its methods.
pub(crate) struct Run<'w, T: Element, X: TensorInput<T> + ?Sized, P, C, H> {
    pub(crate) work: &'w mut Workspace<T, X>,
    pub(crate) program: P,
    pub(crate) ctx: C,
    pub(crate) handles: PhantomData<fn(&H)>,
}

impl<T, X, P, C, H> Run<'_, T, X, P, C, H>
where
    T: Element,
    X: TensorInput<T> + ?Sized,
    P: TensorProgram<T, X, H>,
    C: TensorContexts<T, H>,
{
    /// A run on `work`.
    pub(crate) fn new(work: &mut Workspace<T, X>, program: P, ctx: C) -> Run<'_, T, X, P, C, H> {
        Run {
            work,
            program,
            ctx,
            handles: PhantomData,
        }
    }

    /// `f(x)` by the primal tape (checked against the result's shape, once known).
    pub(crate) fn eval(&mut self, x: &X) -> InterfaceResult<ArrayD<T>> {
        let v = engine::value(
            &mut self.work.bufs,
            &mut self.program,
            (
                InputArg(x, None, PhantomData),
                ConstContexts(self.ctx, &mut None),
            ),
        )?;
        match &self.work.out_shape {
            Some(s) if v.shape() != &s[..] => Err(shade_autodiff::AdError::ShapeMismatch {
                op: "tensor program (the result changed shape between evaluations)",
                left: s.clone(),
                right: v.shape().to_vec(),
            }
            .into()),
            _ => Ok(v),
        }
    }

    /// The result's shape: evaluated once (a primal run) if no call has seen it yet;
    /// sizes the result-shaped buffers.
    pub(crate) fn learn_output(&mut self, x: &X) -> InterfaceResult<()> {
        let w = &mut *self.work;
        if w.out_shape.is_none() {
            let y = engine::value(
                &mut w.bufs,
                &mut self.program,
                (
                    InputArg(x, None, PhantomData),
                    ConstContexts(self.ctx, &mut None),
                ),
            )?;
            w.out_shape = Some(y.shape().to_vec());
        }
        let shape = w.out_shape.as_deref().unwrap_or(&[]);
        for b in [&mut w.seed, &mut w.y, &mut w.dy] {
            if b.shape() != shape {
                *b = ArrayD::zeros(IxDyn(shape));
            }
        }
        Ok(())
    }
}

/// The shapes of `x`'s arrays.
pub(crate) fn shapes_of<T: Element, X: TensorInput<T> + ?Sized>(x: &X) -> Vec<Vec<usize>> {
    (0..x.arrays())
        .map(|k| x.array(k).shape().to_vec())
        .collect()
}

/// `None` if `a` and `b` have the same arrays of the same shapes; else `a`'s and `b`'s
/// shapes of the first array that differs (their numbers of arrays, if those differ).
/// Allocates only for the answer.
pub(crate) fn differ<T: Element, X: TensorInput<T> + ?Sized>(
    a: &X,
    b: &X,
) -> Option<(Vec<usize>, Vec<usize>)> {
    if a.arrays() != b.arrays() {
        return Some((vec![a.arrays()], vec![b.arrays()]));
    }
    (0..a.arrays())
        .find(|&k| a.array(k).shape() != b.array(k).shape())
        .map(|k| (a.array(k).shape().to_vec(), b.array(k).shape().to_vec()))
}

/// Calls `each(k, off, flat)` for every entry of `x` in order: array `k`, offset `off`
/// in it, `flat` its number among all entries.
pub(crate) fn for_entries<T: Element, X: TensorInput<T> + ?Sized>(
    x: &X,
    mut each: impl FnMut(usize, usize, usize) -> InterfaceResult<()>,
) -> InterfaceResult<()> {
    let mut flat = 0;
    for k in 0..x.arrays() {
        for off in 0..x.array(k).len() {
            each(k, off, flat)?;
            flat += 1;
        }
    }
    Ok(())
}
