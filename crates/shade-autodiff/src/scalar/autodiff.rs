//! The one entry point, [`autodiff`]: a mode, a function value, a return activity and a
//! tuple of annotated arguments.

use super::args::{ForwardArgs, ReverseArgs};
use super::dual::{Dual, DualVec};
use super::func::ScalarFn;
use super::real::Real;
use super::tape::Tape;
use crate::activity::Active;
use crate::error::AdResult;
use crate::mode::{Forward, ForwardWithPrimal, Reverse, ReverseWithPrimal};

/// Return activity of forward modes: the result's tangent is computed.
///
/// (Enzyme calls it `Dual`; reverse modes take [`Active(seed)`](Active) instead.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tangent;

/// Return activity of batched forward mode: `N` tangents of the result, one per shadow of
/// the [`BatchDuplicated`](crate::BatchDuplicated) arguments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchTangent<const N: usize>;

/// A mode that can differentiate function `F` with return activity `R` and arguments `A`.
///
/// Implemented for the four modes; what it returns:
///
/// | mode | return activity | output |
/// |---|---|---|
/// | `Reverse` | `Active(seed)` | one entry per argument: `∂f/∂x·seed` for `Active`, `()` otherwise (`Duplicated` shadows get `+= ∂f/∂x·seed`) |
/// | `ReverseWithPrimal` | `Active(seed)` | `(derivatives, primal)` |
/// | `Forward` | `Tangent` | the result's tangent |
/// | `Forward` | `BatchTangent::<N>` | the result's `N` tangents |
/// | `ForwardWithPrimal` | `Tangent` | `(tangent, primal)` |
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot differentiate with return activity `{R}` and these arguments",
    label = "no rule for this mode, return activity and argument tuple",
    note = "reverse modes take `Active(seed)` as return activity and `Active`/`Duplicated`/`Const` arguments; forward modes take `Tangent` (or `BatchTangent::<N>`) and `Duplicated`/`Const` arguments"
)]
pub trait ScalarMode<F, R, A> {
    /// What [`autodiff`] returns.
    type Output;
    /// Runs the mode, reusing `tape`'s buffers.
    fn run(tape: &mut Tape<f64>, f: &F, ret: R, args: A) -> AdResult<Self::Output>;
}

/// Records `f` on `tape` and sweeps back from its result with adjoint `seed`.
///
/// Returns the collected derivatives and the primal value.
pub(crate) fn reverse_core<T: Real, F: ScalarFn, A: ReverseArgs<F::Kinds, T>>(
    tape: &mut Tape<T>,
    f: &F,
    seed: T,
    args: &mut A,
) -> AdResult<(A::Grads, T)> {
    args.check()?;
    tape.reset();
    let (value, out, slots) = {
        let (inputs, slots) = args.inputs(&tape.trace, &tape.bump);
        let y = f.call(inputs);
        (y.primal(), y.raw_index(), slots)
    };
    tape.check_recording()?;
    match out {
        Some(i) => tape.sweep(&[(i, seed)]),
        None => tape.sweep(&[]),
    }
    Ok((args.collect(slots, tape), value))
}

/// Evaluates `f` with number type `D`, the inputs built in `tape`'s arena.
pub(crate) fn forward_core<D: Real, F: ScalarFn, A: ForwardArgs<F::Kinds, D>>(
    tape: &mut Tape<f64>,
    f: &F,
    args: &A,
) -> AdResult<D> {
    args.check()?;
    tape.bump.reset();
    Ok(f.call(args.inputs(&tape.bump)))
}

impl<F: ScalarFn, A: ReverseArgs<F::Kinds, f64>> ScalarMode<F, Active<f64>, A> for Reverse {
    type Output = A::Grads;
    fn run(tape: &mut Tape<f64>, f: &F, ret: Active<f64>, mut args: A) -> AdResult<A::Grads> {
        reverse_core(tape, f, ret.0, &mut args).map(|r| r.0)
    }
}

impl<F: ScalarFn, A: ReverseArgs<F::Kinds, f64>> ScalarMode<F, Active<f64>, A>
    for ReverseWithPrimal
{
    type Output = (A::Grads, f64);
    fn run(tape: &mut Tape<f64>, f: &F, ret: Active<f64>, mut args: A) -> AdResult<Self::Output> {
        reverse_core(tape, f, ret.0, &mut args)
    }
}

impl<F: ScalarFn, A: ForwardArgs<F::Kinds, Dual<f64>>> ScalarMode<F, Tangent, A> for Forward {
    type Output = f64;
    fn run(tape: &mut Tape<f64>, f: &F, _: Tangent, args: A) -> AdResult<f64> {
        forward_core::<Dual<f64>, _, _>(tape, f, &args).map(|y| y.d[0])
    }
}

impl<F: ScalarFn, A: ForwardArgs<F::Kinds, Dual<f64>>> ScalarMode<F, Tangent, A>
    for ForwardWithPrimal
{
    type Output = (f64, f64);
    fn run(tape: &mut Tape<f64>, f: &F, _: Tangent, args: A) -> AdResult<(f64, f64)> {
        forward_core::<Dual<f64>, _, _>(tape, f, &args).map(|y| (y.d[0], y.v))
    }
}

impl<F: ScalarFn, A: ForwardArgs<F::Kinds, DualVec<f64, N>>, const N: usize>
    ScalarMode<F, BatchTangent<N>, A> for Forward
{
    type Output = [f64; N];
    fn run(tape: &mut Tape<f64>, f: &F, _: BatchTangent<N>, args: A) -> AdResult<[f64; N]> {
        forward_core::<DualVec<f64, N>, _, _>(tape, f, &args).map(|y| y.d)
    }
}

/// Differentiates `f` in `mode` with return activity `ret` and annotated arguments `args`
/// (a tuple of one to four of `Const`, `Active`, `Duplicated`, `DuplicatedNoNeed`,
/// `BatchDuplicated`).
///
/// What it returns depends on the mode (see [`ScalarMode`]). In reverse mode,
/// `Duplicated` shadows *accumulate* (`dx += ∂f/∂x · seed`): zero them for a fresh
/// gradient. In forward mode the shadows are the input tangents.
///
/// This allocates a fresh tape; [`autodiff_with`] reuses one (no allocation once warm).
///
/// ```
/// use shade_autodiff::scalar::{Real, Tangent, autodiff, shade_fn};
/// use shade_autodiff::{Active, Const, Duplicated, Forward, Reverse};
///
/// fn f<S: Real>(x: &[S], a: S, p: &[f64]) -> S {
///     (x[0] * x[1]).sin() * a + p[0]
/// }
/// let f = shade_fn!(f(&[S], S, &[f64]));
/// let (x, p) = ([1.0, 2.0], [0.5]);
///
/// let mut dx = [0.0; 2];
/// let ((), da, ()) = autodiff(Reverse, f, Active(1.0), (Duplicated(&x, &mut dx), Active(3.0), Const(&p)))?;
/// assert_eq!(da, 2.0_f64.sin());
/// assert_eq!(dx, [3.0 * 2.0 * 2.0_f64.cos(), 3.0 * 2.0_f64.cos()]);
///
/// let mut t = [1.0, 0.0];
/// let d0 = autodiff(Forward, f, Tangent, (Duplicated(&x, &mut t), Const(3.0), Const(&p)))?;
/// assert_eq!(d0, dx[0]);
/// # Ok::<(), shade_autodiff::AdError>(())
/// ```
#[inline]
pub fn autodiff<M, F, R, A, O>(mode: M, f: F, ret: R, args: A) -> AdResult<O>
where
    // The output as a parameter (not `M::Output`): a misuse is one unmet bound, so the
    // compiler reports our message once.
    M: ScalarMode<F, R, A, Output = O>,
{
    let _ = mode;
    let mut tape = Tape::new();
    M::run(&mut tape, &f, ret, args)
}

/// [`autodiff`] reusing `tape`'s buffers: once warm, no heap allocation.
#[inline]
pub fn autodiff_with<M, F, R, A, O>(
    tape: &mut Tape<f64>,
    mode: M,
    f: &F,
    ret: R,
    args: A,
) -> AdResult<O>
where
    M: ScalarMode<F, R, A, Output = O>,
{
    let _ = mode;
    M::run(tape, f, ret, args)
}
