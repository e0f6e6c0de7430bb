//! Tensor programs through the interface: `gradient`, `pullback`, `pushforward` and
//! `jacobian` of a program of the core's tensor layer, with [`AutoShade`]
//! (native, either mode) and [`AutoFiniteDiff`] (generic), over
//! `f32` or `f64`.
//!
//! A tensor program is the core's own form: a closure
//! `|t: &mut Tape<'_, T>, (x, &(c0, c1, ..))| -> AdResult<Var>` taking the handle of the
//! differentiated argument and a reference to the contexts' handles.
//!
//! - The differentiated argument ([`TensorInput`]) is one array (the program gets a
//!   [`Var`]), a slice or `Vec` of arrays such as a parameter store (a `Vec<Var>`), or a
//!   tuple of those.
//! - Contexts are [`Constant`]s. `Constant(&array)` arrives as a
//!   constant `Var` (a `Const` leaf, never differentiated); `Constant(&v)` for any other
//!   borrowed value arrives as `&v` unchanged: a `SparseMatrix`, index slices, a graph,
//!   a struct of the user's ([`TensorContext`]). Borrowed contexts may be kept by the
//!   tape (a sparse matrix of a `spmm`): they arrive behind a reference of the tape's
//!   lifetime, which tells the compiler that they outlive it, so a closure written in
//!   the call infers with no lifetime written and nothing `'static`.
//!
//! With `AutoShade` the interface calls the core's entry points (`tensor::gradient`,
//! `tensor::pullback`, `tensor::pushforward_into`) with the user's program and
//! `(Duplicated(x, dx), <contexts as Const>)`: no closure around the program, no copy of
//! the contexts. `AutoShade::FORWARD` computes a gradient in forward mode (one
//! pushforward per input entry); a pushforward is forward and a pullback reverse in
//! either mode. [`Workspace`] keeps the storage of calls whose program changes from call
//! to call (a training step's closure), [`TensorPrepared`] a program with its storage.
//!
//! ```
//! use ndarray::{Array2, array};
//! use shade_autodiff::tensor::{SparseMatrix, Tape};
//! use shade_interface::{AutoFiniteDiff, AutoShade, Constant, tensor};
//!
//! // f(w) = sum(tanh(A · (x · w))[rows]): a dense, a sparse and an index context.
//! let x = array![[1.0, -1.0], [0.5, 2.0]];
//! let a = SparseMatrix::new(sprs::CsMatI::eye(2));
//! let rows = vec![1usize];
//! let w = Array2::from_elem((2, 3), 0.1);
//! let ctx = (Constant(&x), Constant(&a), Constant(&rows[..]));
//! let g = tensor::gradient(
//!     |t, (w, &(x, a, rows))| {
//!         let h = t.matmul(x, w)?;
//!         let h = t.spmm(a, h)?;
//!         let h = t.tanh(h)?;
//!         let h = t.index_select(h, rows)?;
//!         t.sum(h)
//!     },
//!     &AutoShade::REVERSE,
//!     &w,
//!     ctx,
//! )?;
//! // A program used twice is a function (or a closure passed through `tensor::program`).
//! let program = tensor::program(|t: &mut Tape<'_, f64>, (w, &(x, a, rows))| {
//!     let h = t.matmul(x, w)?;
//!     let h = t.spmm(a, h)?;
//!     let h = t.tanh(h)?;
//!     let h = t.index_select(h, rows)?;
//!     t.sum(h)
//! });
//! let mut prep = tensor::prepare_gradient(program, &AutoShade::FORWARD, &w, ctx)?;
//! assert!(prep.gradient(&w, ctx)?.iter().zip(&g).all(|(a, b)| (a - b).abs() < 1e-12));
//! let g_fd = tensor::gradient(program, &AutoFiniteDiff::CENTRAL, &w, ctx)?;
//! assert!(g.iter().zip(&g_fd).all(|(a, b)| (a - b).abs() < 1e-8));
//! # Ok::<(), shade_interface::InterfaceError>(())
//! ```

mod input;
mod ops;
mod work;

pub use input::TensorInput;
pub use ops::{
    TensorPrepared, gradient, jacobian, prepare_gradient, prepare_jacobian, prepare_pullback,
    prepare_pushforward, pullback, pushforward, value_and_gradient,
};
/// The core's tape and handle types that programs are written against, re-exported so
/// that `shade_interface::tensor::{Tape, Var}` is enough.
pub use shade_autodiff::tensor::{Tape, Var};
pub use work::Workspace;

pub(crate) use work::{Ran, Run};

pub(crate) use input::{InputArg, entries, mismatch};
pub(crate) use work::for_entries;

use crate::backend::{AutoFiniteDiff, AutoShade, Backend, ShadeMode};
use crate::context::Constant;
use ndarray::{ArrayBase, Data, Dimension};
use shade_autodiff::tensor::{Element, TensorArg};
use shade_autodiff::{AdResult, Const, ModeKind};

/// One context of a tensor program over `T`, arriving in the program as `H`.
///
/// `Constant(&array)` arrives as a constant [`Var`] (`H = Var`), `Constant(Some(&array))`
/// / `Constant(None)` as an `Option<Var>`; `Constant(&v)` for any `v` arrives as `&v`
/// (`H = &V`: sparse matrices, index slices, graphs, the user's own types). An array context may be had either way; the program's use of it decides
/// (`t.matmul(x, w)` wants a `Var`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a context of a tensor program over `{T}` arriving as `{H}`",
    label = "pass `Constant(&array)` (a constant `Var`) or `Constant(&value)` (the reference itself)"
)]
pub trait TensorContext<T: Element, H>: Copy {
    /// Registers it on the tape as the core does for `Const` (`pos`: position in the
    /// core's argument list, for errors).
    fn register<'a>(self, tape: &mut Tape<'a, T>, pos: usize) -> AdResult<H>
    where
        Self: 'a;
}

impl<T, S, D> TensorContext<T, Var> for Constant<&ArrayBase<S, D>>
where
    T: Element,
    S: Data<Elem = T>,
    D: Dimension,
{
    #[inline]
    fn register<'a>(self, tape: &mut Tape<'a, T>, pos: usize) -> AdResult<Var>
    where
        Self: 'a,
    {
        Const(self.0).register(tape, pos)
    }
}

/// An optional array (features a model may or may not have): `Some` arrives as a
/// constant `Var`, `None` as `None`.
impl<T, S, D> TensorContext<T, Option<Var>> for Constant<Option<&ArrayBase<S, D>>>
where
    T: Element,
    S: Data<Elem = T>,
    D: Dimension,
{
    #[inline]
    fn register<'a>(self, tape: &mut Tape<'a, T>, pos: usize) -> AdResult<Option<Var>>
    where
        Self: 'a,
    {
        self.0.map(|a| Const(a).register(tape, pos)).transpose()
    }
}

impl<'c, T: Element, V: ?Sized> TensorContext<T, &'c V> for Constant<&'c V> {
    #[inline]
    fn register<'a>(self, _: &mut Tape<'a, T>, _: usize) -> AdResult<&'c V>
    where
        Self: 'a,
    {
        // The core passes borrowed constants through untouched; so do we.
        Ok(self.0)
    }
}

/// A tuple of zero to six tensor contexts, arriving as the tuple of handles `H`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tuple of tensor-program contexts",
    label = "pass the contexts as a tuple of `Constant(..)`: `(Constant(&x),)` for one, `()` for none"
)]
pub trait TensorContexts<T: Element, H>: Copy {
    /// Number of contexts.
    const COUNT: usize;
    /// Registers every context.
    fn register_all<'a>(self, tape: &mut Tape<'a, T>, pos: usize) -> AdResult<H>
    where
        Self: 'a;
}

impl<T: Element> TensorContexts<T, ()> for () {
    const COUNT: usize = 0;
    fn register_all<'a>(self, _: &mut Tape<'a, T>, _: usize) -> AdResult<()>
    where
        Self: 'a,
    {
        Ok(())
    }
}

macro_rules! tensor_contexts {
    ($n:literal; $($c:ident $h:ident $i:tt),+) => {
        impl<T: Element, $($c: TensorContext<T, $h>, $h),+> TensorContexts<T, ($($h,)+)> for ($($c,)+) {
            const COUNT: usize = $n;
            #[inline]
            fn register_all<'a>(self, tape: &mut Tape<'a, T>, pos: usize) -> AdResult<($($h,)+)>
            where
                Self: 'a,
            {
                Ok(($(self.$i.register(tape, pos + $i)?,)+))
            }
        }
    };
}
tensor_contexts!(1; C0 H0 0);
tensor_contexts!(2; C0 H0 0, C1 H1 1);
tensor_contexts!(3; C0 H0 0, C1 H1 1, C2 H2 2);
tensor_contexts!(4; C0 H0 0, C1 H1 1, C2 H2 2, C3 H3 3);
tensor_contexts!(5; C0 H0 0, C1 H1 1, C2 H2 2, C3 H3 3, C4 H4 4);
tensor_contexts!(6; C0 H0 0, C1 H1 1, C2 H2 2, C3 H3 3, C4 H4 4, C5 H5 5);

/// The contexts as one argument of the core's entry points: each registered as the
/// core registers a `Const` argument, the handles kept in `slot` and handed to the
/// program by reference (the reference of the tape's lifetime is what tells the
/// compiler that borrowed contexts outlive the tape).
pub(crate) struct ConstContexts<'s, C, H>(pub(crate) C, pub(crate) &'s mut Option<H>);

impl<'a, T: Element, C: TensorContexts<T, H> + 'a, H: 'a> TensorArg<'a, T>
    for ConstContexts<'a, C, H>
{
    type Handle = &'a H;
    #[inline]
    fn register(self, tape: &mut Tape<'a, T>, pos: usize) -> AdResult<&'a H> {
        let h = self.0.register_all(tape, pos)?;
        Ok(self.1.insert(h))
    }
}

/// A tensor program over `T` differentiated with respect to `X`, with contexts arriving
/// as `H`: the core's closure form, callable for every tape.
pub trait TensorProgram<T: Element, X: TensorInput<T> + ?Sized, H>:
    for<'t> FnMut(&mut Tape<'t, T>, (X::Handle, &'t H)) -> AdResult<Var>
{
}

impl<T: Element, X: TensorInput<T> + ?Sized, H, P> TensorProgram<T, X, H> for P where
    P: for<'t> FnMut(&mut Tape<'t, T>, (X::Handle, &'t H)) -> AdResult<Var>
{
}

/// Gives a closure the signature of a tensor program, so that it can be bound with `let`
/// and used more than once (a closure written in the call of an operator gets it from
/// the call). The contexts' handles arrive behind a reference of the tape's lifetime
/// `'t`, which tells the compiler that borrowed contexts outlive the tape.
pub fn program<T, XH, H, P>(p: P) -> P
where
    T: Element,
    P: for<'t> FnMut(&mut Tape<'t, T>, (XH, &'t H)) -> AdResult<Var>,
{
    p
}

/// A backend that differentiates tensor programs.
#[diagnostic::on_unimplemented(
    message = "backend `{Self}` cannot differentiate tensor programs",
    label = "this backend works on scalar-generic functions only",
    note = "tensor programs: AutoShade (native), AutoFiniteDiff (generic)"
)]
pub trait TensorBackend: Backend {
    /// The engine that runs.
    fn engine(&self) -> TensorEngine;
}

/// The engine behind a [`TensorBackend`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TensorEngine {
    /// The core's tensor tape in this mode.
    Shade(ModeKind),
    /// Finite differences of `tensor::value`.
    FiniteDiff(AutoFiniteDiff),
}

impl<M: ShadeMode> TensorBackend for AutoShade<M> {
    fn engine(&self) -> TensorEngine {
        TensorEngine::Shade(M::KIND)
    }
}

impl TensorBackend for AutoFiniteDiff {
    fn engine(&self) -> TensorEngine {
        TensorEngine::FiniteDiff(*self)
    }
}
