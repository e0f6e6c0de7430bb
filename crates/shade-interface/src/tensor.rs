//! Tensor programs through the interface: `gradient`, `pullback`, `pushforward` and
//! `jacobian` of a program of the core's tensor layer, with [`AutoShade`] (native) and
//! [`AutoFiniteDiff`] (generic).
//!
//! A tensor program is the core's own form: a closure
//! `|t: &mut Tape<'_, f64>, (x, &(h0, h1, ..))| -> AdResult<Var>` taking the
//! differentiated array's handle and a reference to the contexts' handles. Contexts are
//! [`Constant`]s: `Constant(&array)` arrives as a constant `Var` (a `Const` leaf, never
//! differentiated), `Constant(&sparse)` as `&SparseMatrix<f64>`, `Constant(&indices[..])`
//! as `&[usize]`, exactly as the core hands them out. With `AutoShade` the interface calls
//! the core's entry point (`tensor::gradient`, `tensor::pullback`,
//! `tensor::pushforward_into`) with the user's program and
//! `(Duplicated(x, dx), <contexts as Const>)`: no closure around the program, no copy of
//! the contexts.
//!
//! ```
//! use ndarray::{Array2, array};
//! use shade_autodiff::tensor::{Tape, Var};
//! use shade_interface::{AutoFiniteDiff, AutoShade, Constant, tensor};
//!
//! // f(w) = sum(tanh(x · w))
//! let program = |t: &mut Tape<'_, f64>, (w, &(x,)): (Var, &(Var,))| {
//!     let h = t.matmul(x, w)?;
//!     let h = t.tanh(h)?;
//!     t.sum(h)
//! };
//! let x = array![[1.0, -1.0], [0.5, 2.0]];
//! let w = Array2::from_elem((2, 3), 0.1);
//! let mut prep = tensor::prepare_gradient(program, &AutoShade::REVERSE, &w, (Constant(&x),))?;
//! let g = prep.gradient(&w, (Constant(&x),))?;
//! let g_fd = tensor::gradient(program, &AutoFiniteDiff::CENTRAL, &w, (Constant(&x),))?;
//! assert!(g.iter().zip(&g_fd).all(|(a, b)| (a - b).abs() < 1e-8));
//! # Ok::<(), shade_interface::InterfaceError>(())
//! ```

mod ops;

pub use ops::{
    TensorPrepared, TensorProgram, gradient, jacobian, prepare_gradient, prepare_jacobian,
    prepare_pullback, prepare_pushforward, pullback, pushforward,
};

use crate::backend::{AutoFiniteDiff, AutoShade};
use crate::context::Constant;
use ndarray::{ArrayBase, Data, Dimension};
use shade_autodiff::tensor::{SparseMatrix, Tape, TensorArg, Var};
use shade_autodiff::{AdResult, Const};

/// One context of a tensor program.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a context of a tensor program",
    label = "pass `Constant(&array)`, `Constant(&sparse_matrix)` or `Constant(&indices[..])`"
)]
pub trait TensorContext: Copy {
    /// What the program receives for it.
    type Handle;
    /// Registers it on the tape as the core does for `Const` (`pos`: position in the
    /// core's argument list, for errors).
    fn register<'a>(self, tape: &mut Tape<'a, f64>, pos: usize) -> AdResult<Self::Handle>
    where
        Self: 'a;
    /// Bytes of the constant, for reports.
    fn bytes(&self) -> usize;
}

impl<S, D> TensorContext for Constant<&ArrayBase<S, D>>
where
    S: Data<Elem = f64>,
    D: Dimension,
{
    type Handle = Var;
    #[inline]
    fn register<'a>(self, tape: &mut Tape<'a, f64>, pos: usize) -> AdResult<Var>
    where
        Self: 'a,
    {
        Const(self.0).register(tape, pos)
    }
    fn bytes(&self) -> usize {
        8 * self.0.len()
    }
}

impl<'c> TensorContext for Constant<&'c SparseMatrix<f64>> {
    type Handle = &'c SparseMatrix<f64>;
    #[inline]
    fn register<'a>(self, _: &mut Tape<'a, f64>, _: usize) -> AdResult<Self::Handle>
    where
        Self: 'a,
    {
        // The core passes sparse constants through untouched; so do we.
        Ok(self.0)
    }
    fn bytes(&self) -> usize {
        0
    }
}

impl<'c> TensorContext for Constant<&'c [usize]> {
    type Handle = &'c [usize];
    #[inline]
    fn register<'a>(self, _: &mut Tape<'a, f64>, _: usize) -> AdResult<Self::Handle>
    where
        Self: 'a,
    {
        Ok(self.0)
    }
    fn bytes(&self) -> usize {
        8 * self.0.len()
    }
}

/// A tuple of zero to four tensor contexts.
pub trait TensorContexts: Copy {
    /// The handles the program receives.
    type Handles;
    /// Number of contexts.
    const COUNT: usize;
    /// Registers every context.
    fn register_all<'a>(self, tape: &mut Tape<'a, f64>, pos: usize) -> AdResult<Self::Handles>
    where
        Self: 'a;
    /// Bytes of the constants.
    fn bytes(&self) -> usize;
}

impl TensorContexts for () {
    type Handles = ();
    const COUNT: usize = 0;
    fn register_all<'a>(self, _: &mut Tape<'a, f64>, _: usize) -> AdResult<()>
    where
        Self: 'a,
    {
        Ok(())
    }
    fn bytes(&self) -> usize {
        0
    }
}

macro_rules! tensor_contexts {
    ($n:literal; $($c:ident $i:tt),+) => {
        impl<$($c: TensorContext),+> TensorContexts for ($($c,)+) {
            type Handles = ($($c::Handle,)+);
            const COUNT: usize = $n;
            #[inline]
            fn register_all<'a>(self, tape: &mut Tape<'a, f64>, pos: usize) -> AdResult<Self::Handles>
            where
                Self: 'a,
            {
                Ok(($(self.$i.register(tape, pos + $i)?,)+))
            }
            fn bytes(&self) -> usize {
                0 $(+ self.$i.bytes())+
            }
        }
    };
}
tensor_contexts!(1; C0 0);
tensor_contexts!(2; C0 0, C1 1);
tensor_contexts!(3; C0 0, C1 1, C2 2);
tensor_contexts!(4; C0 0, C1 1, C2 2, C3 3);

/// The contexts as one argument of the core's entry points: each registered as the
/// core registers a `Const` argument, the handles kept in `slot` and handed to the
/// program by reference (so that the program may use borrowed contexts, such as sparse
/// matrices, with the tape's lifetime).
#[derive(Debug)]
pub struct ConstContexts<'s, C: TensorContexts>(pub C, pub &'s mut Option<C::Handles>);

impl<'a, C: TensorContexts + 'a> TensorArg<'a, f64> for ConstContexts<'a, C> {
    type Handle = &'a C::Handles;
    #[inline]
    fn register(self, tape: &mut Tape<'a, f64>, pos: usize) -> AdResult<&'a C::Handles> {
        let h = self.0.register_all(tape, pos)?;
        Ok(self.1.insert(h))
    }
}

/// A backend that differentiates tensor programs.
#[diagnostic::on_unimplemented(
    message = "backend `{Self}` cannot differentiate tensor programs",
    label = "this backend works on scalar-generic functions only",
    note = "tensor programs: AutoShade (native), AutoFiniteDiff (generic)"
)]
pub trait TensorBackend: crate::Backend {
    /// The engine that runs.
    fn engine(&self) -> TensorEngine;
}

/// The engine behind a [`TensorBackend`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TensorEngine {
    /// The core's tensor tape in this mode.
    Shade(shade_autodiff::ModeKind),
    /// Finite differences of `tensor::value`.
    FiniteDiff(AutoFiniteDiff),
}

impl<M: crate::ShadeMode> TensorBackend for AutoShade<M> {
    fn engine(&self) -> TensorEngine {
        TensorEngine::Shade(M::KIND)
    }
}

impl TensorBackend for AutoFiniteDiff {
    fn engine(&self) -> TensorEngine {
        TensorEngine::FiniteDiff(*self)
    }
}
