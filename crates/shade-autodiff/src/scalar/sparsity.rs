//! Local sparsity patterns of Jacobians and Hessians, and the output check of in-place
//! functions, all on the [`Tracer`] number type.
//!
//! - [`jacobian_sparsity`] evaluates a vector-valued function once with tracers: the
//!   sets of its outputs are the rows of the Jacobian's pattern.
//! - [`probe_outputs`] (and [`jacobian_sparsity_inplace`]) does the same for an in-place
//!   function, and outputs it never wrote (or a panic, when it indexes past `y`) show
//!   that `m` is not its output length.
//! - [`hessian_sparsity`] records the function on a tape of tracers (`Tape<Tracer>`) and
//!   sweeps it once: the set of input `i`'s adjoint holds the inputs that the partial
//!   `∂f/∂xᵢ` depends on, which is row `i` of the Hessian's pattern (a linear operation
//!   has constant partials and adds nothing; `x * y` has partials `y` and `x`).
//!
//! The patterns are *local*: control flow follows the values at `x`, as
//! DifferentiationInterface's `TracerLocalSparsityDetector`.
//!
//! ```
//! use shade_autodiff::scalar::{Real, hessian_sparsity, shade_fn};
//!
//! // f = x0 x1 + sin(x2) + 3 x3: entries (0,1), (1,0), (2,2) only.
//! fn f<S: Real>(x: &[S]) -> S {
//!     x[0] * x[1] + x[2].sin() + x[3] * 3.0
//! }
//! let rows = hessian_sparsity(&shade_fn!(f(&[S])), &[1.0, 2.0, 3.0, 4.0], ())?;
//! let rows: Vec<Vec<u32>> = rows.iter().map(|r| r.to_vec()).collect();
//! assert_eq!(rows, [vec![1], vec![0], vec![2], vec![]]);
//! # Ok::<(), shade_autodiff::AdError>(())
//! ```

use super::args::ConstArgs;
use super::func::{InPlaceFn, Join, Kinds, ScalarFn, Slice, VectorFn};
use super::real::Real;
use super::tape::{Tape, Var};
use super::tracer::{IndexSet, Tracer, trace_sparsity};
use crate::error::{AdError, AdResult};
use bumpalo::Bump;

type Tail<F> = <<F as ScalarFn>::Kinds as Kinds>::Tail;
type InTail<F> = <<F as InPlaceFn>::Kinds as Kinds>::Tail;
type VecTail<F> = <<F as VectorFn>::Kinds as Kinds>::Tail;

/// The input index the initial value of every output depends on: an output whose set
/// still is exactly the initial one was never written; indices of this value are
/// dropped from the sets returned.
const INITIAL: u32 = u32::MAX;

/// The text of a panic's payload.
fn panic_message(payload: &(dyn core::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(a panic without a message)".into())
}

/// Evaluates an in-place function once with tracers at `x` and `m` outputs, through
/// `eval(xs, ys)`, and returns each output's dependency set (the rows of the Jacobian's
/// local pattern).
///
/// Checks that `m` is the function's output length: if its last outputs are never
/// written, [`AdError::OutputsNotWritten`] (with the length it does write); if it
/// panics (most often an index past `y`, when it writes more than `m` outputs),
/// [`AdError::FunctionPanicked`] with the panic's message (the panic itself is caught;
/// Rust's panic hook still prints its location). Outputs may be accumulated into (`y[i]
/// += ..`): they start at zero, as in every entry point.
pub fn probe_outputs(
    x: &[f64],
    m: usize,
    eval: impl FnOnce(&[Tracer], &mut [Tracer]),
) -> AdResult<Vec<IndexSet>> {
    trace_sparsity(|| {
        let xs: Vec<Tracer> = (0u32..).zip(x).map(|(i, &v)| Tracer::input(v, i)).collect();
        // Every output starts as the same zero with the one set {INITIAL}: a written
        // output is a new value (an operation always makes a new set, or keeps an
        // operand's set; neither is this one unless the output only had constants added).
        let initial = Tracer::input(0.0, INITIAL);
        let mut ys = vec![initial; m];
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| eval(&xs, &mut ys)));
        if let Err(payload) = run {
            return Err(AdError::FunctionPanicked {
                outputs: m,
                message: panic_message(payload.as_ref()),
            });
        }
        let written = ys
            .iter()
            .rposition(|y| !y.is_same(&initial))
            .map_or(0, |i| i + 1);
        if written < m {
            return Err(AdError::OutputsNotWritten {
                outputs: m,
                written,
            });
        }
        Ok(ys
            .iter()
            .map(|y| {
                let mut s = y.inputs();
                s.retain(|j| *j != INITIAL);
                s
            })
            .collect())
    })
}

/// The local sparsity pattern of the Jacobian of a vector-valued `f(x: &[S],
/// consts...) -> Vec<S>` at `x`: for each output (as many as `f` returns), the sorted
/// inputs it depends on. One evaluation with tracers.
///
/// ```
/// use shade_autodiff::scalar::{Real, jacobian_sparsity, shade_fn};
///
/// fn f<S: Real>(x: &[S]) -> Vec<S> {
///     vec![x[0] * x[2], x[1].sin(), S::cst(1.0)]
/// }
/// let rows = jacobian_sparsity(&shade_fn!(f(&[S]) -> Vec<S>), &[1.0, 2.0, 3.0], ())?;
/// let rows: Vec<Vec<u32>> = rows.iter().map(|r| r.to_vec()).collect();
/// assert_eq!(rows, [vec![0, 2], vec![1], vec![]]);
/// # Ok::<(), shade_autodiff::AdError>(())
/// ```
pub fn jacobian_sparsity<F, C>(f: &F, x: &[f64], consts: C) -> AdResult<Vec<IndexSet>>
where
    F: VectorFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<VecTail<F>>,
{
    Ok(trace_sparsity(|| {
        let xs: Vec<Tracer> = (0u32..).zip(x).map(|(i, &v)| Tracer::input(v, i)).collect();
        let bump = Bump::new();
        let ys = f.call(F::Kinds::join(&xs, consts.args(&bump)));
        ys.iter().map(Tracer::inputs).collect()
    }))
}

/// [`probe_outputs`] for an in-place function value `f(y, x, consts...)` called with
/// `m` outputs: the rows of its Jacobian's pattern, after checking that it writes
/// exactly `m` outputs.
pub fn jacobian_sparsity_inplace<F, C>(
    f: &F,
    x: &[f64],
    m: usize,
    consts: C,
) -> AdResult<Vec<IndexSet>>
where
    F: InPlaceFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<InTail<F>>,
{
    let bump = Bump::new();
    probe_outputs(x, m, |xs, ys| {
        f.call(ys, F::Kinds::join(xs, consts.args(&bump)));
    })
}

/// The local sparsity pattern of the Hessian of `f(x: &[S], consts...) -> S` at `x`:
/// for each input `i`, the sorted inputs `j` with `∂²f/∂xᵢ∂xⱼ` structurally nonzero
/// (symmetric: `j` is in row `i` exactly when `i` is in row `j`).
///
/// One recording of `f` on a `Tape<Tracer>` and one reverse sweep.
pub fn hessian_sparsity<F, C>(f: &F, x: &[f64], consts: C) -> AdResult<Vec<IndexSet>>
where
    F: ScalarFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<Tail<F>>,
{
    let n = x.len();
    let rows = trace_sparsity(|| -> AdResult<Vec<IndexSet>> {
        let mut tape = Tape::<Tracer>::new();
        let (out, start) = {
            let (t, bump) = (&tape.trace, &tape.bump);
            let xs = bump.alloc_slice_fill_iter(
                x.iter()
                    .enumerate()
                    .map(|(i, &v)| t.var(Tracer::input(v, i as u32))),
            );
            let start = xs.first().and_then(Var::raw_index).unwrap_or(0) as usize;
            let y = f.call(F::Kinds::join(xs, consts.args(bump)));
            (y.raw_index(), start)
        };
        tape.check_recording()?;
        let Some(out) = out else {
            return Ok(vec![IndexSet::new(); n]);
        };
        tape.sweep(&[(out, Tracer::cst(1.0))]);
        Ok((0..n).map(|i| tape.adj[start + i].inputs()).collect())
    })?;
    // The sets are symmetric in exact arithmetic; make them so structurally too.
    let mut sym: Vec<IndexSet> = rows.clone();
    for (i, row) in rows.iter().enumerate() {
        for &j in row {
            if j as usize != i {
                sym[j as usize].push(i as u32);
            }
        }
    }
    for r in &mut sym {
        r.sort_unstable();
        r.dedup();
    }
    Ok(sym)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scalar::shade_fn;

    fn band<S: Real>(y: &mut [S], x: &[S]) {
        for i in 0..x.len() {
            y[i] = x[i] * x[i];
            if i > 0 {
                y[i] += x[i - 1].sin();
            }
        }
    }

    #[test]
    fn the_probe_returns_the_rows_of_the_pattern() {
        let rows =
            jacobian_sparsity_inplace(&shade_fn!(band(&mut [S], &[S])), &[1.0, 2.0, 3.0], 3, ())
                .unwrap();
        let rows: Vec<Vec<u32>> = rows.iter().map(|r| r.to_vec()).collect();
        assert_eq!(rows, [vec![0], vec![0, 1], vec![1, 2]]);
    }

    #[test]
    fn too_many_outputs_are_unwritten_and_too_few_panic() {
        let f = shade_fn!(band(&mut [S], &[S]));
        let e = jacobian_sparsity_inplace(&f, &[1.0, 2.0], 4, ()).unwrap_err();
        assert_eq!(
            e,
            AdError::OutputsNotWritten {
                outputs: 4,
                written: 2
            }
        );
        let e = jacobian_sparsity_inplace(&f, &[1.0, 2.0, 3.0], 2, ()).unwrap_err();
        assert_eq!(e.code(), "SHADE-E0131");
        assert!(e.to_string().contains("index out of bounds"), "{e}");
    }

    /// Accumulating into an output (`y[0] += ..`) writes it; an output that only had a
    /// zero constant added is the one case taken for unwritten.
    fn accumulate<S: Real>(y: &mut [S], x: &[S]) {
        for &xi in x {
            y[0] += xi;
        }
        y[1] += x[0] * x[1];
    }

    #[test]
    fn accumulated_outputs_count_as_written() {
        let rows =
            jacobian_sparsity_inplace(&shade_fn!(accumulate(&mut [S], &[S])), &[1.0, 2.0], 2, ())
                .unwrap();
        assert_eq!(rows[0].as_slice(), &[0, 1]);
        assert_eq!(rows[1].as_slice(), &[0, 1]);
    }

    fn chain<S: Real>(x: &[S], p: &[f64]) -> S {
        let mut acc = S::zero();
        for w in x.windows(2) {
            acc += (w[1] - w[0] * w[0]).powi(2) * p[0] + (-w[0] + 1.0).powi(2);
        }
        acc + x[0] * 2.0
    }

    #[test]
    fn a_chained_sum_has_a_tridiagonal_hessian() {
        let x = [0.5, -1.0, 2.0, 0.25, 1.5];
        let rows = hessian_sparsity(
            &shade_fn!(chain(&[S], &[f64])),
            &x,
            (crate::Const(&[100.0][..]),),
        )
        .unwrap();
        for (i, r) in rows.iter().enumerate() {
            let want: Vec<u32> = (i.saturating_sub(1)..(i + 2).min(x.len()))
                .map(|j| j as u32)
                .collect();
            assert_eq!(r.as_slice(), &want[..], "row {i}");
        }
    }
}
