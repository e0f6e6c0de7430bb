//! The tensor layer: a tape of whole-array operations with hand-written rules.
//!
//! A tensor program is a plain closure `FnOnce(&mut Tape<T>, handles) -> AdResult<Var>`.
//! Its arguments are annotated with the shared activities ([`Const`](crate::Const),
//! [`Duplicated`](crate::Duplicated), [`DuplicatedNoNeed`](crate::DuplicatedNoNeed)) and
//! arrive in the closure as [`Var`] handles (or, for constant sparse matrices and index
//! arrays, as plain references). Every operation is a method on [`Tape`] that checks
//! shapes up front, returns an [`AdResult`], and keeps its forward,
//! reverse (vector-Jacobian) and forward-mode (Jacobian-vector) rule together in one
//! file per family:
//!
//! | family | file | operations |
//! |---|---|---|
//! | elementwise | `elementwise.rs` | `neg scale exp ln sqrt powi abs tanh sigmoid relu leaky_relu elu gelu softplus clamp` |
//! | broadcasting | `broadcast.rs` | `add sub mul div` (NumPy broadcasting) |
//! | matmul and shape | `matmul.rs`, `shape.rs` | `matmul` (2-D, batched), `group_dot`, `transpose reshape concat narrow stack` |
//! | reductions | `reduce.rs` | `sum mean max min` (all or one axis), `logsumexp norm` |
//! | softmax | `softmax.rs` | `softmax log_softmax` over an axis |
//! | losses | `loss.rs` | `cross_entropy nll mse bce_with_logits` |
//! | graph indexing | `index.rs` | `index_select scatter_add scatter_mean scatter_max segment_softmax` |
//! | sparse × dense | `sparse.rs` | `spmm dense_spmm spmm_values` over [`SparseMatrix`] |
//! | coordinate lists | `coo.rs` | `coo_spmm` (per-group values), `sym_norm_values` ([`SymNorm`]) |
//! | dropout | `dropout.rs` | `dropout` with an explicit RNG; [`keep_mask`], its mask generator; [`dropout_in_place`] for values off the tape |
//! | custom rules | `custom.rs` | [`TensorRule`], [`Tape::custom`] |
//!
//! Values derived only from constants are constants: they get no backward record, no
//! adjoint and no tangent. Storage lives in a caller-owned [`TapeBuffers`] and is reused
//! by the next call, so a warm call of the same program allocates nothing; during the
//! reverse sweep each intermediate returns to that storage as soon as no remaining rule
//! needs it.
//!
//! # Anomaly mode
//!
//! [`TapeBuffers::set_anomaly`] turns on a check of every result forward and every
//! adjoint backward: the first operation that produces NaN or an infinity makes the
//! entry point return [`AdError::NonFiniteForward`] / [`AdError::NonFiniteBackward`]
//! with the operation's name, the program's call site and its inputs' ranges.
//!
//! # Entry points
//!
//! - [`gradient`]: reverse mode for a scalar result, accumulating (`+=`) into the
//!   shadows of `Duplicated` arguments; returns the primal value.
//! - [`pullback`]: reverse mode for any result, given a seed of the result's shape.
//! - [`pushforward`] / [`pushforward_into`]: forward mode; shadows are tangents.
//! - [`value`]: evaluation only, every argument treated as a constant.
//!
//! ```
//! use ndarray::{array, Array1, Array2};
//! use shade_autodiff::{Const, Duplicated};
//! use shade_autodiff::tensor::{self, TapeBuffers};
//!
//! let w = array![[1.0, 2.0], [3.0, 4.0]];
//! let x = array![[1.0, -1.0]];
//! let mut dw = Array2::zeros((2, 2));
//! let mut bufs = TapeBuffers::new();
//! // f(w) = sum(x · w)
//! let y = tensor::gradient(
//!     &mut bufs,
//!     |t, (w, x)| {
//!         let h = t.matmul(x, w)?;
//!         t.sum(h)
//!     },
//!     (Duplicated(&w, &mut dw), Const(&x)),
//! )?;
//! assert_eq!(y, -4.0);
//! assert_eq!(dw, array![[1.0, 1.0], [-1.0, -1.0]]);
//! # let _ = Array1::<f64>::zeros(1);
//! # Ok::<(), shade_autodiff::AdError>(())
//! ```

mod args;
mod broadcast;
mod coo;
mod custom;
mod dropout;
mod elementwise;
mod index;
mod line;
mod linear;
mod loss;
mod matmul;
mod par;
mod reduce;
mod shape;
pub mod simd;
mod softmax;
mod sparse;
mod tape;
mod transpose;

pub use crate::error::ValueRange;
pub use args::{TensorArg, TensorArgs};
pub use coo::SymNorm;
pub use custom::{RuleSlot, TensorRule};
pub use dropout::{dropout_in_place, keep_mask};
pub use index::{IndexType, Rows};
pub use line::{is_on_line, on_line, zeros_on_line};
pub use sparse::{SPARSE_MAX_DIM, SparseMatrix};
pub use tape::{Tape, TapeBuffers, Var};

use crate::error::{AdError, AdResult};
use ndarray::{ArrayBase, ArrayD, Data, Dimension};
use tape::TapeMode;

mod sealed {
    use super::elementwise::math;

    /// Seals [`Element`](super::Element), and carries the per-type kernels the generic
    /// rules call (unreachable from outside the crate).
    pub trait Sealed: Copy {
        /// `e^x`, branch-free so that maps over slices vectorise.
        fn exp_v(self) -> Self;
        /// `e^x - 1`, as [`Sealed::exp_v`].
        fn expm1_v(self) -> Self;
        /// `tanh x`, as [`Sealed::exp_v`].
        fn tanh_v(self) -> Self;
        /// `1 / (1 + e^-x)`, as [`Sealed::exp_v`].
        fn sigmoid_v(self) -> Self;
    }

    impl Sealed for f32 {
        #[inline(always)]
        fn exp_v(self) -> Self {
            math::exp_f32(self)
        }
        #[inline(always)]
        fn expm1_v(self) -> Self {
            math::expm1_f32(self)
        }
        #[inline(always)]
        fn tanh_v(self) -> Self {
            math::tanh_f32(self)
        }
        #[inline(always)]
        fn sigmoid_v(self) -> Self {
            math::sigmoid_f32(self)
        }
    }

    impl Sealed for f64 {
        #[inline(always)]
        fn exp_v(self) -> Self {
            math::exp_f64(self)
        }
        #[inline(always)]
        fn expm1_v(self) -> Self {
            math::expm1_f64(self)
        }
        // No vectorised `f64` tanh yet (a polynomial to 1 ulp below 0.625 needs a
        // rational form): libm's.
        #[inline(always)]
        fn tanh_v(self) -> Self {
            self.tanh()
        }
        #[inline(always)]
        fn sigmoid_v(self) -> Self {
            math::sigmoid_f64(self)
        }
    }
}

/// The element types of the tensor layer: `f32` and `f64`.
///
/// Sealed: the rules rely on IEEE floating point.
pub trait Element:
    num_traits::Float
    + ndarray::LinalgScalar
    + ndarray::ScalarOperand
    + Send
    + Sync
    + Default
    + core::fmt::Debug
    + core::iter::Sum
    + core::ops::AddAssign
    + core::ops::SubAssign
    + core::ops::MulAssign
    + 'static
    + sealed::Sealed
{
    /// Converts an `f64` constant to this type (rounding for `f32`).
    fn cst(x: f64) -> Self;
}

impl Element for f32 {
    #[inline]
    fn cst(x: f64) -> Self {
        x as f32
    }
}

impl Element for f64 {
    #[inline]
    fn cst(x: f64) -> Self {
        x
    }
}

/// Reverse mode for a scalar result: returns `f(args)` and accumulates its gradient
/// (`+=`) into the shadow of every `Duplicated` argument.
///
/// The result must hold exactly one element (shape `[]`, `[1]`, `[1, 1]`, ...);
/// otherwise the error is [`AdError::NonScalarReturn`]. Shadow shapes are checked
/// against their primals ([`AdError::ShadowShape`]).
pub fn gradient<'a, T, A, F>(bufs: &'a mut TapeBuffers<T>, f: F, args: A) -> AdResult<T>
where
    T: Element,
    A: TensorArgs<'a, T>,
    F: FnOnce(&mut Tape<'a, T>, A::Handles) -> AdResult<Var>,
{
    let mut tape = Tape::new(bufs, TapeMode::Reverse);
    let handles = args.register(&mut tape)?;
    let out = f(&mut tape, handles);
    tape.pending_result()?;
    let o = tape.index(out?)?;
    let len = tape.vals[o].view().len();
    if len != 1 {
        return Err(AdError::NonScalarReturn { len });
    }
    let y = tape.vals[o]
        .view()
        .iter()
        .next()
        .copied()
        .unwrap_or_else(T::zero);
    tape.backward(o, |mut g| g.map_inplace(|x| *x += T::one()));
    tape.pending_result()?;
    Ok(y)
}

/// Reverse mode for any result: accumulates `seedᵀ · ∂f/∂x` (`+=`) into the shadow of
/// every `Duplicated` argument.
///
/// `seed` must have the result's shape ([`AdError::ShapeMismatch`] otherwise).
pub fn pullback<'a, T, A, F, S, D>(
    bufs: &'a mut TapeBuffers<T>,
    f: F,
    args: A,
    seed: &ArrayBase<S, D>,
) -> AdResult<()>
where
    T: Element,
    A: TensorArgs<'a, T>,
    F: FnOnce(&mut Tape<'a, T>, A::Handles) -> AdResult<Var>,
    S: Data<Elem = T>,
    D: Dimension,
{
    let mut tape = Tape::new(bufs, TapeMode::Reverse);
    let handles = args.register(&mut tape)?;
    let out = f(&mut tape, handles);
    tape.pending_result()?;
    let o = tape.index(out?)?;
    if tape.vals[o].view().shape() != seed.shape() {
        return Err(AdError::ShapeMismatch {
            op: "pullback",
            left: tape.vals[o].view().shape().to_vec(),
            right: seed.shape().to_vec(),
        });
    }
    let seed = seed.view().into_dyn();
    tape.backward(o, |mut g| g += &seed);
    tape.pending_result()?;
    Ok(())
}

/// Forward mode: returns `f(args)` and its tangent, reading the shadow of every
/// `Duplicated` argument as that argument's tangent.
///
/// Allocates the two returned arrays; [`pushforward_into`] writes into the caller's.
pub fn pushforward<'a, T, A, F>(
    bufs: &'a mut TapeBuffers<T>,
    f: F,
    args: A,
) -> AdResult<(ArrayD<T>, ArrayD<T>)>
where
    T: Element,
    A: TensorArgs<'a, T>,
    F: FnOnce(&mut Tape<'a, T>, A::Handles) -> AdResult<Var>,
{
    let mut tape = Tape::new(bufs, TapeMode::Forward);
    let handles = args.register(&mut tape)?;
    let out = f(&mut tape, handles);
    tape.pending_result()?;
    let o = tape.index(out?)?;
    let y = tape.vals[o].view().to_owned();
    let dy = match tape.tans[o].view() {
        Some(t) => t.to_owned(),
        None => ArrayD::zeros(y.raw_dim()),
    };
    Ok((y, dy))
}

/// Forward mode writing the result into `y` and its tangent into `dy`, both of which
/// must already have the result's shape ([`AdError::ShapeMismatch`] otherwise).
///
/// Allocation-free when warm.
pub fn pushforward_into<'a, T, A, F>(
    bufs: &'a mut TapeBuffers<T>,
    f: F,
    args: A,
    y: &mut ArrayD<T>,
    dy: &mut ArrayD<T>,
) -> AdResult<()>
where
    T: Element,
    A: TensorArgs<'a, T>,
    F: FnOnce(&mut Tape<'a, T>, A::Handles) -> AdResult<Var>,
{
    let mut tape = Tape::new(bufs, TapeMode::Forward);
    let handles = args.register(&mut tape)?;
    let out = f(&mut tape, handles);
    tape.pending_result()?;
    let o = tape.index(out?)?;
    let v = tape.vals[o].view();
    for target in [y.shape(), dy.shape()] {
        if target != v.shape() {
            return Err(AdError::ShapeMismatch {
                op: "pushforward_into",
                left: v.shape().to_vec(),
                right: target.to_vec(),
            });
        }
    }
    y.assign(&v);
    match tape.tans[o].view() {
        Some(t) => dy.assign(&t),
        None => dy.fill(T::zero()),
    }
    Ok(())
}

/// Evaluates the program without derivatives (every argument is a constant, shadows
/// are ignored) and returns its result.
pub fn value<'a, T, A, F>(bufs: &'a mut TapeBuffers<T>, f: F, args: A) -> AdResult<ArrayD<T>>
where
    T: Element,
    A: TensorArgs<'a, T>,
    F: FnOnce(&mut Tape<'a, T>, A::Handles) -> AdResult<Var>,
{
    let mut tape = Tape::new(bufs, TapeMode::Primal);
    let handles = args.register(&mut tape)?;
    let out = f(&mut tape, handles);
    tape.pending_result()?;
    let o = tape.index(out?)?;
    Ok(tape.vals[o].view().to_owned())
}
