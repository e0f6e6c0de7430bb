//! Vector-valued functions: Jacobians (chunked forward mode and reverse mode),
//! pushforwards and pullbacks, in both forms a function can have.
//!
//! - **One argument**, `f(x: &[S], consts...) -> Vec<S>` ([`VectorFn`], made by
//!   `shade_fn!(f(&[S], ..) -> Vec<S>)`): the output length is the length the function
//!   returns. [`jacobian_forward`]`(f, x, consts)` evaluates it once to size the result;
//!   every later evaluation (each forward chunk, each recording) is checked against
//!   that length ([`AdError::OutputLength`], `SHADE-E0132`), never a row dropped or
//!   added.
//! - **Two arguments** (in place), `f(y: &mut [S], x: &[S], consts...)` ([`InPlaceFn`]):
//!   the output buffer `y` the caller passes gives the length.
//!   [`jacobian_forward_inplace`]`(f, &mut y, x, consts)` first evaluates the function
//!   once with the sparsity tracer and checks that it writes exactly `y.len()` outputs
//!   (`SHADE-E0130` when it writes fewer, `SHADE-E0131` when it indexes past `y`).
//!
//! Each has a prepared form on [`Tape`] whose buffers are reused (the `*_into` methods
//! for in-place functions, `*_vec_into` for vector-valued ones; the prepared forms take
//! the length from `y.len()`); only the in-place form is allocation-free, as a
//! vector-valued function allocates its result at every evaluation.
//!
//! ```
//! use shade_autodiff::scalar::{Real, jacobian_forward, jacobian_reverse_inplace, shade_fn};
//!
//! // Three outputs of two inputs: the length is the function's own.
//! fn f<S: Real>(x: &[S]) -> Vec<S> {
//!     vec![x[0] * x[1], x[0].sin(), x[1] * 2.0]
//! }
//! let (y, j) = jacobian_forward(shade_fn!(f(&[S]) -> Vec<S>), &[1.0, 3.0], ())?;
//! assert_eq!(y.len(), 3);
//! assert_eq!(j, [3.0, 1.0, 1.0f64.cos(), 0.0, 0.0, 2.0]);
//!
//! // The same function in place: `y` gives the length.
//! fn g<S: Real>(y: &mut [S], x: &[S]) {
//!     y.copy_from_slice(&f(x));
//! }
//! let mut y2 = [0.0; 3];
//! let j2 = jacobian_reverse_inplace(shade_fn!(g(&mut [S], &[S])), &mut y2, &[1.0, 3.0], ())?;
//! assert_eq!((&y2[..], &j2), (&y[..], &j));
//! # Ok::<(), shade_autodiff::AdError>(())
//! ```

use super::args::{ConstArgs, check_shadow};
use super::dual::{Dual, DualVec};
use super::func::{InPlaceFn, Join, Kinds, Slice, VectorFn};
use super::real::Real;
use super::sparsity::jacobian_sparsity_inplace;
use super::tape::{Tape, Var};
use crate::error::{AdError, AdResult};
use bumpalo::Bump;

/// Tangents propagated together by [`Tape::jacobian_forward_into`].
pub const CHUNK: usize = 8;

type InTail<F> = <<F as InPlaceFn>::Kinds as Kinds>::Tail;
type VecTail<F> = <<F as VectorFn>::Kinds as Kinds>::Tail;
type OutTail<O> = <<O as Outputs>::Kinds as Kinds>::Tail;

pub(super) fn check_len(op: &'static str, expected: usize, found: usize) -> AdResult<()> {
    if expected == found {
        Ok(())
    } else {
        Err(AdError::BufferLength {
            op,
            expected,
            found,
        })
    }
}

/// How a function of a slice gives its outputs for one number type: written into a
/// fresh buffer of the expected length ([`InPlace`]), or returned and checked against
/// that length ([`Returned`]). Every operator on vector outputs is written once over it.
pub(super) trait Outputs {
    /// The parameters' kinds (after `y` for an in-place function).
    type Kinds: Kinds;
    /// Evaluates at `args` and gives the `m` outputs, kept in `bump`.
    fn outputs<'b, S: Real + 'b>(
        &self,
        bump: &'b Bump,
        m: usize,
        args: <Self::Kinds as Kinds>::Args<'b, S>,
    ) -> AdResult<&'b [S]>;
}

/// An in-place function: its outputs start at zero and it writes them.
pub(super) struct InPlace<'f, F>(pub(super) &'f F);

/// A function returning its outputs.
pub(super) struct Returned<'f, F>(pub(super) &'f F);

impl<F: InPlaceFn> Outputs for InPlace<'_, F> {
    type Kinds = F::Kinds;
    #[inline]
    fn outputs<'b, S: Real + 'b>(
        &self,
        bump: &'b Bump,
        m: usize,
        args: <Self::Kinds as Kinds>::Args<'b, S>,
    ) -> AdResult<&'b [S]> {
        let ys = bump.alloc_slice_fill_copy(m, S::cst(0.0));
        self.0.call(ys, args);
        Ok(ys)
    }
}

impl<F: VectorFn> Outputs for Returned<'_, F> {
    type Kinds = F::Kinds;
    #[inline]
    fn outputs<'b, S: Real + 'b>(
        &self,
        bump: &'b Bump,
        m: usize,
        args: <Self::Kinds as Kinds>::Args<'b, S>,
    ) -> AdResult<&'b [S]> {
        let ys = self.0.call(args);
        if ys.len() != m {
            return Err(AdError::OutputLength {
                expected: m,
                found: ys.len(),
            });
        }
        Ok(bump.alloc_slice_copy(&ys))
    }
}

/// `f(x)` at `f64` for a vector-valued function: the evaluation that sizes the result.
fn value_of<F, C>(f: &F, x: &[f64], consts: &C) -> Vec<f64>
where
    F: VectorFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<VecTail<F>>,
{
    let bump = Bump::new();
    f.call(F::Kinds::join(x, consts.args(&bump)))
}

/// The one-argument operators' shared part: `f`'s value at `f64` sizes `y` (`m`
/// entries) and the result (`len(m)`), then `op` runs on a fresh tape.
fn sized_by_value<F, C>(
    f: &F,
    x: &[f64],
    consts: C,
    len: impl FnOnce(usize) -> usize,
    op: impl FnOnce(&mut Tape<f64>, C, &mut [f64], &mut [f64]) -> AdResult<()>,
) -> AdResult<(Vec<f64>, Vec<f64>)>
where
    F: VectorFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<VecTail<F>>,
{
    let mut y = value_of(f, x, &consts);
    let mut out = vec![0.0; len(y.len())];
    op(&mut Tape::new(), consts, &mut y, &mut out)?;
    Ok((y, out))
}

/// The in-place operators' shared part: the tracer probe of `y.len()`, then `op` on a
/// fresh tape with a result of `len` entries.
fn probed<F, C>(
    f: &F,
    y: &mut [f64],
    x: &[f64],
    consts: C,
    len: usize,
    op: impl FnOnce(&mut Tape<f64>, C, &mut [f64], &mut [f64]) -> AdResult<()>,
) -> AdResult<Vec<f64>>
where
    F: InPlaceFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<InTail<F>>,
{
    jacobian_sparsity_inplace(f, x, y.len(), &consts)?;
    let mut out = vec![0.0; len];
    op(&mut Tape::new(), consts, y, &mut out)?;
    Ok(out)
}

impl Tape<f64> {
    fn pushforward_with<O, C>(
        &mut self,
        f: &O,
        x: &[f64],
        dx: &[f64],
        consts: C,
        y: &mut [f64],
        dy: &mut [f64],
    ) -> AdResult<()>
    where
        O: Outputs,
        O::Kinds: Join<Slice>,
        C: ConstArgs<OutTail<O>>,
    {
        check_shadow(0, x, dx)?;
        check_len("pushforward", y.len(), dy.len())?;
        self.bump.reset();
        let bump = &self.bump;
        let xs = bump.alloc_slice_fill_iter(x.iter().zip(dx).map(|(&v, &d)| Dual::new(v, d)));
        let ys = f.outputs(bump, y.len(), O::Kinds::join(xs, consts.args(bump)))?;
        for ((yo, dyo), r) in y.iter_mut().zip(dy.iter_mut()).zip(ys) {
            *yo = r.v;
            *dyo = r.d[0];
        }
        Ok(())
    }

    fn jacobian_forward_with<O, C>(
        &mut self,
        f: &O,
        x: &[f64],
        consts: C,
        y: &mut [f64],
        jac: &mut [f64],
    ) -> AdResult<()>
    where
        O: Outputs,
        O::Kinds: Join<Slice>,
        C: ConstArgs<OutTail<O>>,
    {
        let (m, n) = (y.len(), x.len());
        check_len("jacobian_forward", m * n, jac.len())?;
        let mut c0 = 0;
        loop {
            self.bump.reset();
            let bump = &self.bump;
            let xs = bump.alloc_slice_fill_iter(x.iter().enumerate().map(|(i, &v)| {
                if (c0..c0 + CHUNK).contains(&i) {
                    DualVec::<f64, CHUNK>::seeded(v, i - c0)
                } else {
                    DualVec::constant(v)
                }
            }));
            let ys = f.outputs(bump, m, O::Kinds::join(xs, consts.args(bump)))?;
            let w = CHUNK.min(n.saturating_sub(c0));
            for (r, yr) in ys.iter().enumerate() {
                y[r] = yr.v;
                jac[r * n + c0..r * n + c0 + w].copy_from_slice(&yr.d[..w]);
            }
            c0 += CHUNK;
            if c0 >= n {
                return Ok(());
            }
        }
    }

    /// Records `f` once with `y.len()` outputs, writing their values into `y`; returns
    /// the first input's record index, the outputs' indices in `self.out_ids`
    /// (`u32::MAX` for outputs that do not depend on `x`).
    pub(super) fn record_outputs<O, C>(
        &mut self,
        f: &O,
        x: &[f64],
        consts: C,
        y: &mut [f64],
    ) -> AdResult<usize>
    where
        O: Outputs,
        O::Kinds: Join<Slice>,
        C: ConstArgs<OutTail<O>>,
    {
        self.reset();
        let start = {
            let (t, bump) = (&self.trace, &self.bump);
            let xs = bump.alloc_slice_fill_iter(x.iter().map(|&v| t.var(v)));
            let start = xs.first().and_then(Var::raw_index).unwrap_or(0) as usize;
            let ys = f.outputs(bump, y.len(), O::Kinds::join(xs, consts.args(bump)))?;
            for (yo, r) in y.iter_mut().zip(ys) {
                *yo = r.primal();
            }
            self.out_ids.clear();
            self.out_ids
                .extend(ys.iter().map(|r| r.raw_index().unwrap_or(u32::MAX)));
            start
        };
        self.check_recording()?;
        Ok(start)
    }

    fn jacobian_reverse_with<O, C>(
        &mut self,
        f: &O,
        x: &[f64],
        consts: C,
        y: &mut [f64],
        jac: &mut [f64],
    ) -> AdResult<()>
    where
        O: Outputs,
        O::Kinds: Join<Slice>,
        C: ConstArgs<OutTail<O>>,
    {
        let (m, n) = (y.len(), x.len());
        check_len("jacobian_reverse", m * n, jac.len())?;
        let start = self.record_outputs(f, x, consts, y)?;
        for r in 0..m {
            let row = &mut jac[r * n..(r + 1) * n];
            match self.out_ids[r] {
                u32::MAX => row.fill(0.0),
                i => {
                    self.sweep(&[(i, 1.0)]);
                    row.copy_from_slice(&self.adj[start..start + n]);
                }
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn pullback_with<O, C>(
        &mut self,
        f: &O,
        x: &[f64],
        dy: &[f64],
        consts: C,
        y: &mut [f64],
        dx: &mut [f64],
    ) -> AdResult<()>
    where
        O: Outputs,
        O::Kinds: Join<Slice>,
        C: ConstArgs<OutTail<O>>,
    {
        check_shadow(0, x, dx)?;
        check_len("pullback", y.len(), dy.len())?;
        let start = self.record_outputs(f, x, consts, y)?;
        let mut seeds = core::mem::take(&mut self.seeds);
        seeds.clear();
        seeds.extend(
            self.out_ids
                .iter()
                .zip(dy)
                .filter(|(i, _)| **i != u32::MAX)
                .map(|(&i, &s)| (i, s)),
        );
        self.sweep(&seeds);
        self.seeds = seeds;
        if self.adj.len() >= start + x.len() {
            dx.copy_from_slice(&self.adj[start..start + x.len()]);
        } else {
            dx.fill(0.0);
        }
        Ok(())
    }
}

/// The prepared forms: the same operators for in-place functions (`*_into`) and for
/// vector-valued ones (`*_vec_into`, whose result must have `y.len()` entries).
macro_rules! prepared_forms {
    ($(
        $(#[$doc:meta])*
        $inplace:ident / $vec:ident => $with:ident ($($a:ident: $t:ty),*);
    )*) => {
        impl Tape<f64> {$(
            $(#[$doc])*
            ///
            /// In-place form `f(y, x, consts...)`: it writes `y.len()` outputs (not
            /// probed here: the free `*_inplace` functions check the length once).
            #[allow(clippy::too_many_arguments)]
            #[inline]
            pub fn $inplace<F, C>(&mut self, f: &F, x: &[f64], $($a: $t,)* consts: C, y: &mut [f64], out: &mut [f64]) -> AdResult<()>
            where
                F: InPlaceFn,
                F::Kinds: Join<Slice>,
                C: ConstArgs<InTail<F>>,
            {
                self.$with(&InPlace(f), x, $($a,)* consts, y, out)
            }

            $(#[$doc])*
            ///
            /// Vector-valued form `f(x, consts...) -> Vec<S>`: every evaluation must
            /// return `y.len()` outputs ([`AdError::OutputLength`] otherwise).
            #[allow(clippy::too_many_arguments)]
            #[inline]
            pub fn $vec<F, C>(&mut self, f: &F, x: &[f64], $($a: $t,)* consts: C, y: &mut [f64], out: &mut [f64]) -> AdResult<()>
            where
                F: VectorFn,
                F::Kinds: Join<Slice>,
                C: ConstArgs<VecTail<F>>,
            {
                self.$with(&Returned(f), x, $($a,)* consts, y, out)
            }
        )*}
    };
}

prepared_forms! {
    /// Writes `y = f(x)` and its tangent `out = J(x) dx`.
    pushforward_into / pushforward_vec_into => pushforward_with(dx: &[f64]);
    /// Writes `y = f(x)` and the Jacobian `out` (`y.len()` rows × `x.len()` columns,
    /// row-major), by chunked forward mode ([`CHUNK`] columns per evaluation).
    jacobian_forward_into / jacobian_forward_vec_into => jacobian_forward_with();
    /// Writes `y = f(x)` and the Jacobian `out` (row-major, `y.len()` × `x.len()`): one
    /// recording, one sweep per output.
    jacobian_reverse_into / jacobian_reverse_vec_into => jacobian_reverse_with();
    /// Writes `y = f(x)` and the cotangent `out = J(x)ᵀ dy` (overwriting it): one
    /// recording, one sweep.
    pullback_into / pullback_vec_into => pullback_with(dy: &[f64]);
}

// ---------------------------------------------------------------- one argument

/// `(y, J)` with `J` row-major `m × n` for a vector-valued `f(x: &[S], consts...) ->
/// Vec<S>`, by chunked forward mode; `m` is the length `f` returns.
///
/// The first evaluation (at `f64`) sizes the result; each of the `⌈n / 8⌉` chunks is
/// checked against it (`SHADE-E0132` if the function returns another length).
///
/// ```
/// use shade_autodiff::scalar::{Real, jacobian_forward, jacobian_reverse, shade_fn};
///
/// fn polar<S: Real>(x: &[S]) -> Vec<S> {
///     vec![x[0] * x[1].cos(), x[0] * x[1].sin()]
/// }
/// let f = shade_fn!(polar(&[S]) -> Vec<S>);
/// let (y, j) = jacobian_forward(f, &[2.0, 0.0], ())?;
/// assert_eq!(y, [2.0, 0.0]);
/// assert_eq!(j, [1.0, 0.0, 0.0, 2.0]);
/// assert_eq!(jacobian_reverse(f, &[2.0, 0.0], ())?.1, j);
/// # Ok::<(), shade_autodiff::AdError>(())
/// ```
pub fn jacobian_forward<F, C>(f: F, x: &[f64], consts: C) -> AdResult<(Vec<f64>, Vec<f64>)>
where
    F: VectorFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<VecTail<F>>,
{
    sized_by_value(
        &f,
        x,
        consts,
        |m| m * x.len(),
        |t, c, y, j| t.jacobian_forward_vec_into(&f, x, c, y, j),
    )
}

/// `(y, J)` with `J` row-major `m × n` for a vector-valued `f(x: &[S], consts...) ->
/// Vec<S>`, by reverse mode (one recording, one sweep per output); `m` is the length `f`
/// returns.
pub fn jacobian_reverse<F, C>(f: F, x: &[f64], consts: C) -> AdResult<(Vec<f64>, Vec<f64>)>
where
    F: VectorFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<VecTail<F>>,
{
    sized_by_value(
        &f,
        x,
        consts,
        |m| m * x.len(),
        |t, c, y, j| t.jacobian_reverse_vec_into(&f, x, c, y, j),
    )
}

/// `(y, J dx)` for a vector-valued `f(x: &[S], consts...) -> Vec<S>`.
pub fn pushforward<F, C>(f: F, x: &[f64], dx: &[f64], consts: C) -> AdResult<(Vec<f64>, Vec<f64>)>
where
    F: VectorFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<VecTail<F>>,
{
    sized_by_value(
        &f,
        x,
        consts,
        |m| m,
        |t, c, y, dy| t.pushforward_vec_into(&f, x, dx, c, y, dy),
    )
}

/// `(y, Jᵀ dy)` for a vector-valued `f(x: &[S], consts...) -> Vec<S>`; `dy` must have
/// as many entries as `f` returns (`SHADE-E0121` otherwise).
pub fn pullback<F, C>(f: F, x: &[f64], dy: &[f64], consts: C) -> AdResult<(Vec<f64>, Vec<f64>)>
where
    F: VectorFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<VecTail<F>>,
{
    sized_by_value(
        &f,
        x,
        consts,
        |_| x.len(),
        |t, c, y, dx| {
            check_len("pullback", y.len(), dy.len())?;
            t.pullback_vec_into(&f, x, dy, c, y, dx)
        },
    )
}

// ---------------------------------------------------------------- two arguments

/// The Jacobian (row-major, `y.len()` × `x.len()`) of an in-place `f(y: &mut [S], x:
/// &[S], consts...)`, by chunked forward mode, writing `y = f(x)`: the buffer `y` gives
/// the output length.
///
/// The length is checked by one evaluation with the sparsity tracer first
/// ([`probe_outputs`](crate::scalar::probe_outputs)): a function that leaves its last
/// outputs unwritten is [`AdError::OutputsNotWritten`] (`SHADE-E0130`, naming the length
/// it writes), one that indexes past `y` [`AdError::FunctionPanicked`] (`SHADE-E0131`),
/// instead of a zero row or a panic. (The prepared `Tape::*_into` forms do not probe.)
///
/// ```
/// use shade_autodiff::scalar::{Real, jacobian_forward_inplace, shade_fn};
///
/// fn polar<S: Real>(y: &mut [S], x: &[S]) {
///     y[0] = x[0] * x[1].cos();
///     y[1] = x[0] * x[1].sin();
/// }
/// let f = shade_fn!(polar(&mut [S], &[S]));
/// let mut y = [0.0; 2];
/// let j = jacobian_forward_inplace(f, &mut y, &[2.0, 0.0], ())?;
/// assert_eq!((y, j), ([2.0, 0.0], vec![1.0, 0.0, 0.0, 2.0]));
///
/// // A buffer of another length is refused, not filled with a zero row.
/// let e = jacobian_forward_inplace(f, &mut [0.0; 3], &[2.0, 0.0], ()).unwrap_err();
/// assert_eq!(e.code(), "SHADE-E0130");
/// # Ok::<(), shade_autodiff::AdError>(())
/// ```
pub fn jacobian_forward_inplace<F, C>(
    f: F,
    y: &mut [f64],
    x: &[f64],
    consts: C,
) -> AdResult<Vec<f64>>
where
    F: InPlaceFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<InTail<F>>,
{
    let len = y.len() * x.len();
    probed(&f, y, x, consts, len, |t, c, y, j| {
        t.jacobian_forward_into(&f, x, c, y, j)
    })
}

/// The Jacobian of an in-place `f(y: &mut [S], x: &[S], consts...)` by reverse mode (one
/// sweep per output), writing `y = f(x)`; `y.len()` is checked as by
/// [`jacobian_forward_inplace`].
pub fn jacobian_reverse_inplace<F, C>(
    f: F,
    y: &mut [f64],
    x: &[f64],
    consts: C,
) -> AdResult<Vec<f64>>
where
    F: InPlaceFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<InTail<F>>,
{
    let len = y.len() * x.len();
    probed(&f, y, x, consts, len, |t, c, y, j| {
        t.jacobian_reverse_into(&f, x, c, y, j)
    })
}

/// `J dx` for an in-place `f(y: &mut [S], x: &[S], consts...)`, writing `y = f(x)`;
/// `y.len()` is checked as by [`jacobian_forward_inplace`].
pub fn pushforward_inplace<F, C>(
    f: F,
    y: &mut [f64],
    x: &[f64],
    dx: &[f64],
    consts: C,
) -> AdResult<Vec<f64>>
where
    F: InPlaceFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<InTail<F>>,
{
    let len = y.len();
    probed(&f, y, x, consts, len, |t, c, y, dy| {
        t.pushforward_into(&f, x, dx, c, y, dy)
    })
}

/// `Jᵀ dy` for an in-place `f(y: &mut [S], x: &[S], consts...)`, writing `y = f(x)`;
/// `dy` has `y.len()` entries, and `y.len()` is checked as by
/// [`jacobian_forward_inplace`].
pub fn pullback_inplace<F, C>(
    f: F,
    y: &mut [f64],
    x: &[f64],
    dy: &[f64],
    consts: C,
) -> AdResult<Vec<f64>>
where
    F: InPlaceFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<InTail<F>>,
{
    probed(&f, y, x, consts, x.len(), |t, c, y, dx| {
        t.pullback_into(&f, x, dy, c, y, dx)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scalar::shade_fn;

    /// Two outputs for a positive first input, three otherwise.
    fn varying<S: Real>(x: &[S]) -> Vec<S> {
        let mut y = vec![x[0] * x[1], x[1].exp()];
        if x[0] < S::cst(0.0) {
            y.push(x[0]);
        }
        y
    }

    #[test]
    fn a_length_that_changes_is_refused_naming_both_lengths() {
        let f = shade_fn!(varying(&[S]) -> Vec<S>);
        let mut tape = Tape::new();
        let (mut y, mut j) = ([0.0; 2], [0.0; 4]);
        tape.jacobian_forward_vec_into(&f, &[1.0, 2.0], (), &mut y, &mut j)
            .unwrap();
        for e in [
            tape.jacobian_forward_vec_into(&f, &[-1.0, 2.0], (), &mut y, &mut j),
            tape.jacobian_reverse_vec_into(&f, &[-1.0, 2.0], (), &mut y, &mut j),
            tape.pushforward_vec_into(&f, &[-1.0, 2.0], &[1.0, 0.0], (), &mut y, &mut [0.0; 2]),
            tape.pullback_vec_into(&f, &[-1.0, 2.0], &[1.0, 0.0], (), &mut y, &mut [0.0; 2]),
        ] {
            let e = e.unwrap_err();
            assert_eq!(
                e,
                AdError::OutputLength {
                    expected: 2,
                    found: 3
                }
            );
            assert_eq!(e.code(), "SHADE-E0132");
        }
        // Unprepared, the first evaluation sizes the result: three rows.
        let (y3, j3) = jacobian_forward(f, &[-1.0, 2.0], ()).unwrap();
        assert_eq!((y3.len(), j3.len()), (3, 6));
    }
}
