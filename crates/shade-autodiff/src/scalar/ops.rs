//! Convenience operators built on the engine: gradients, derivatives, Jacobians,
//! Hessian-vector products, pushforwards and pullbacks.
//!
//! Each has a prepared form: a method on a [`Tape`] that the caller keeps, whose calls
//! reuse its buffers (no heap allocation once warm), and a free function that makes a
//! fresh tape. Functions take their differentiated argument first (`&[S]`, or `S` for
//! [`derivative`]) and their other arguments as a tuple of [`Const`](crate::Const)
//! values; in-place functions `f(y: &mut [S], x: &[S], ...)` write `m` outputs.

use super::args::{ConstArgs, check_shadow};
use super::dual::{Dual, DualVec};
use super::func::{InPlaceFn, Join, Kinds, Scalar, ScalarFn, Slice};
use super::real::Real;
use super::sparsity::jacobian_sparsity;
use super::tape::{Tape, Var};
use crate::error::{AdError, AdResult};

/// Tangents propagated together by [`Tape::jacobian_forward_into`].
pub const CHUNK: usize = 8;

type Tail<F> = <<F as ScalarFn>::Kinds as Kinds>::Tail;
type InTail<F> = <<F as InPlaceFn>::Kinds as Kinds>::Tail;

fn check_len(op: &'static str, expected: usize, found: usize) -> AdResult<()> {
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

impl Tape<f64> {
    /// Writes `∇f(x)` into `g` and returns `f(x)`.
    ///
    /// `f(x: &[S], consts...) -> S`; `g` is overwritten (use
    /// [`autodiff_with`](crate::scalar::autodiff_with) with `Duplicated` to accumulate).
    pub fn value_and_gradient_into<F, C>(
        &mut self,
        f: &F,
        x: &[f64],
        consts: C,
        g: &mut [f64],
    ) -> AdResult<f64>
    where
        F: ScalarFn,
        F::Kinds: Join<Slice>,
        C: ConstArgs<Tail<F>>,
    {
        check_shadow(0, x, g)?;
        self.reset();
        let (value, out, start) = {
            let (t, bump) = (&self.trace, &self.bump);
            let xs = bump.alloc_slice_fill_iter(x.iter().map(|&v| t.var(v)));
            let start = xs.first().and_then(Var::raw_index).unwrap_or(0) as usize;
            let y = f.call(F::Kinds::join(xs, consts.args(bump)));
            (y.primal(), y.raw_index(), start)
        };
        self.check_recording()?;
        match out {
            Some(i) => {
                self.sweep(&[(i, 1.0)]);
                g.copy_from_slice(&self.adj[start..start + x.len()]);
            }
            None => g.fill(0.0),
        }
        Ok(value)
    }

    /// Writes `∇f(x)` into `g` (overwriting it).
    pub fn gradient_into<F, C>(
        &mut self,
        f: &F,
        x: &[f64],
        consts: C,
        g: &mut [f64],
    ) -> AdResult<()>
    where
        F: ScalarFn,
        F::Kinds: Join<Slice>,
        C: ConstArgs<Tail<F>>,
    {
        self.value_and_gradient_into(f, x, consts, g).map(|_| ())
    }

    /// `f'(x)` for `f(x: S, consts...) -> S`, by forward mode.
    pub fn derivative<F, C>(&mut self, f: &F, x: f64, consts: C) -> AdResult<f64>
    where
        F: ScalarFn,
        F::Kinds: Join<Scalar>,
        C: ConstArgs<Tail<F>>,
    {
        self.bump.reset();
        let y: Dual<f64> = f.call(F::Kinds::join(Dual::new(x, 1.0), consts.args(&self.bump)));
        Ok(y.d[0])
    }

    /// `f''(x)` for `f(x: S, consts...) -> S`, by forward-over-forward mode.
    pub fn second_derivative<F, C>(&mut self, f: &F, x: f64, consts: C) -> AdResult<f64>
    where
        F: ScalarFn,
        F::Kinds: Join<Scalar>,
        C: ConstArgs<Tail<F>>,
    {
        self.bump.reset();
        let xd = DualVec::with_tangents(Dual::new(x, 1.0), [Dual::new(1.0, 0.0)]);
        let y: Dual<Dual<f64>> = f.call(F::Kinds::join(xd, consts.args(&self.bump)));
        Ok(y.d[0].d[0])
    }

    /// Writes `y = f(x)` and its tangent `dy = J(x) dx` for an in-place `f(y, x, consts...)`.
    pub fn pushforward_into<F, C>(
        &mut self,
        f: &F,
        x: &[f64],
        dx: &[f64],
        consts: C,
        y: &mut [f64],
        dy: &mut [f64],
    ) -> AdResult<()>
    where
        F: InPlaceFn,
        F::Kinds: Join<Slice>,
        C: ConstArgs<InTail<F>>,
    {
        check_shadow(0, x, dx)?;
        check_len("pushforward", y.len(), dy.len())?;
        self.bump.reset();
        let bump = &self.bump;
        let xs = bump.alloc_slice_fill_iter(x.iter().zip(dx).map(|(&v, &d)| Dual::new(v, d)));
        let ys = bump.alloc_slice_fill_copy(y.len(), Dual::<f64>::constant(0.0));
        f.call(ys, F::Kinds::join(xs, consts.args(bump)));
        for ((yo, dyo), r) in y.iter_mut().zip(dy.iter_mut()).zip(ys.iter()) {
            *yo = r.v;
            *dyo = r.d[0];
        }
        Ok(())
    }

    /// Writes `y = f(x)` and the Jacobian (`y.len()` rows × `x.len()` columns, row-major)
    /// of an in-place `f(y, x, consts...)` into `jac`, by chunked forward mode
    /// ([`CHUNK`] columns per evaluation).
    pub fn jacobian_forward_into<F, C>(
        &mut self,
        f: &F,
        x: &[f64],
        consts: C,
        y: &mut [f64],
        jac: &mut [f64],
    ) -> AdResult<()>
    where
        F: InPlaceFn,
        F::Kinds: Join<Slice>,
        C: ConstArgs<InTail<F>>,
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
            let ys = bump.alloc_slice_fill_copy(m, DualVec::<f64, CHUNK>::constant(0.0));
            f.call(ys, F::Kinds::join(xs, consts.args(bump)));
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

    /// Records an in-place `f(y, x, consts...)` once; returns the first input's and every
    /// output's record index (`None` for outputs that do not depend on `x`).
    pub(super) fn record_inplace<F, C>(
        &mut self,
        f: &F,
        x: &[f64],
        consts: C,
        y: &mut [f64],
    ) -> AdResult<usize>
    where
        F: InPlaceFn,
        F::Kinds: Join<Slice>,
        C: ConstArgs<InTail<F>>,
    {
        self.reset();
        let start = {
            let (t, bump) = (&self.trace, &self.bump);
            let xs = bump.alloc_slice_fill_iter(x.iter().map(|&v| t.var(v)));
            let start = xs.first().and_then(Var::raw_index).unwrap_or(0) as usize;
            let ys = bump.alloc_slice_fill_copy(y.len(), Var::cst(0.0));
            f.call(ys, F::Kinds::join(xs, consts.args(bump)));
            // Keep the outputs' indices in the arena's scratch: `u32::MAX` marks constants.
            for (yo, r) in y.iter_mut().zip(ys.iter()) {
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

    /// Writes `y = f(x)` and the Jacobian (row-major, `y.len()` × `x.len()`) of an
    /// in-place `f(y, x, consts...)` into `jac`: one recording, one sweep per output.
    pub fn jacobian_reverse_into<F, C>(
        &mut self,
        f: &F,
        x: &[f64],
        consts: C,
        y: &mut [f64],
        jac: &mut [f64],
    ) -> AdResult<()>
    where
        F: InPlaceFn,
        F::Kinds: Join<Slice>,
        C: ConstArgs<InTail<F>>,
    {
        let (m, n) = (y.len(), x.len());
        check_len("jacobian_reverse", m * n, jac.len())?;
        let start = self.record_inplace(f, x, consts, y)?;
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

    /// Writes `y = f(x)` and the cotangent `dx = J(x)ᵀ dy` (overwriting `dx`) for an
    /// in-place `f(y, x, consts...)`: one recording, one sweep.
    pub fn pullback_into<F, C>(
        &mut self,
        f: &F,
        x: &[f64],
        dy: &[f64],
        consts: C,
        y: &mut [f64],
        dx: &mut [f64],
    ) -> AdResult<()>
    where
        F: InPlaceFn,
        F::Kinds: Join<Slice>,
        C: ConstArgs<InTail<F>>,
    {
        check_shadow(0, x, dx)?;
        check_len("pullback", y.len(), dy.len())?;
        let start = self.record_inplace(f, x, consts, y)?;
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

impl Tape<Dual<f64>> {
    /// Writes the Hessian-vector product `∇²f(x) v` into `hv` (and returns `f(x)`), by
    /// forward-over-reverse mode: one recording and one sweep over `Dual<f64>`.
    pub fn hvp_into<F, C>(
        &mut self,
        f: &F,
        x: &[f64],
        v: &[f64],
        consts: C,
        hv: &mut [f64],
    ) -> AdResult<f64>
    where
        F: ScalarFn,
        F::Kinds: Join<Slice>,
        C: ConstArgs<Tail<F>>,
    {
        check_shadow(0, x, v)?;
        check_len("hvp", x.len(), hv.len())?;
        self.reset();
        let (value, out, start) = {
            let (t, bump) = (&self.trace, &self.bump);
            let xs =
                bump.alloc_slice_fill_iter(x.iter().zip(v).map(|(&a, &b)| t.var(Dual::new(a, b))));
            let start = xs.first().and_then(Var::raw_index).unwrap_or(0) as usize;
            let y = f.call(F::Kinds::join(xs, consts.args(bump)));
            (y.primal().v, y.raw_index(), start)
        };
        self.check_recording()?;
        match out {
            Some(i) => {
                self.sweep(&[(i, Dual::new(1.0, 0.0))]);
                for (h, a) in hv.iter_mut().zip(&self.adj[start..start + x.len()]) {
                    *h = a.d[0];
                }
            }
            None => hv.fill(0.0),
        }
        Ok(value)
    }

    /// Writes the Hessian (`n × n`, row-major) of `f(x: &[S], consts...) -> S` into `h`,
    /// one Hessian-vector product per column.
    pub fn hessian_into<F, C>(&mut self, f: &F, x: &[f64], consts: C, h: &mut [f64]) -> AdResult<()>
    where
        F: ScalarFn,
        F::Kinds: Join<Slice>,
        C: ConstArgs<Tail<F>>,
    {
        let n = x.len();
        check_len("hessian", n * n, h.len())?;
        let mut e = core::mem::take(&mut self.unit);
        e.clear();
        e.resize(n, 0.0);
        let mut result = Ok(());
        for j in 0..n {
            e[j] = 1.0;
            // The Hessian is symmetric: column j is row j.
            if let Err(err) = self.hvp_into(f, x, &e, &consts, &mut h[j * n..(j + 1) * n]) {
                result = Err(err);
                break;
            }
            e[j] = 0.0;
        }
        self.unit = e;
        result
    }
}

/// `∇f(x)` for `f(x: &[S], consts...) -> S`, by reverse mode.
///
/// ```
/// use shade_autodiff::scalar::{Real, gradient, shade_fn};
/// use shade_autodiff::Const;
///
/// fn f<S: Real>(x: &[S], w: &[f64]) -> S {
///     x[0] * x[1] * w[0] + x[1].exp()
/// }
/// let g = gradient(shade_fn!(f(&[S], &[f64])), &[2.0, 0.0], (Const(&[3.0]),))?;
/// assert_eq!(g, [0.0, 7.0]);
/// # Ok::<(), shade_autodiff::AdError>(())
/// ```
pub fn gradient<F, C>(f: F, x: &[f64], consts: C) -> AdResult<Vec<f64>>
where
    F: ScalarFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<Tail<F>>,
{
    let mut g = vec![0.0; x.len()];
    Tape::new().gradient_into(&f, x, consts, &mut g)?;
    Ok(g)
}

/// `(f(x), ∇f(x))` for `f(x: &[S], consts...) -> S`, by reverse mode.
pub fn value_and_gradient<F, C>(f: F, x: &[f64], consts: C) -> AdResult<(f64, Vec<f64>)>
where
    F: ScalarFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<Tail<F>>,
{
    let mut g = vec![0.0; x.len()];
    let v = Tape::new().value_and_gradient_into(&f, x, consts, &mut g)?;
    Ok((v, g))
}

/// `f'(x)` for `f(x: S, consts...) -> S`, by forward mode.
pub fn derivative<F, C>(f: F, x: f64, consts: C) -> AdResult<f64>
where
    F: ScalarFn,
    F::Kinds: Join<Scalar>,
    C: ConstArgs<Tail<F>>,
{
    Tape::new().derivative(&f, x, consts)
}

/// `f''(x)` for `f(x: S, consts...) -> S`, by forward-over-forward mode.
///
/// ```
/// use shade_autodiff::scalar::{Real, second_derivative, shade_fn};
///
/// fn f<S: Real>(x: S) -> S { x.powi(3) }
/// assert_eq!(second_derivative(shade_fn!(f(S)), 2.0, ())?, 12.0);
/// # Ok::<(), shade_autodiff::AdError>(())
/// ```
pub fn second_derivative<F, C>(f: F, x: f64, consts: C) -> AdResult<f64>
where
    F: ScalarFn,
    F::Kinds: Join<Scalar>,
    C: ConstArgs<Tail<F>>,
{
    Tape::new().second_derivative(&f, x, consts)
}

/// `∇²f(x) v` for `f(x: &[S], consts...) -> S`, by forward-over-reverse mode.
///
/// ```
/// use shade_autodiff::scalar::{Real, hvp, shade_fn};
///
/// fn f<S: Real>(x: &[S]) -> S { x[0] * x[0] * x[1] }
/// // ∇²f = [[2 x1, 2 x0], [2 x0, 0]]
/// assert_eq!(hvp(shade_fn!(f(&[S])), &[1.0, 3.0], &[1.0, 1.0], ())?, [8.0, 2.0]);
/// # Ok::<(), shade_autodiff::AdError>(())
/// ```
pub fn hvp<F, C>(f: F, x: &[f64], v: &[f64], consts: C) -> AdResult<Vec<f64>>
where
    F: ScalarFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<Tail<F>>,
{
    let mut hv = vec![0.0; x.len()];
    Tape::new().hvp_into(&f, x, v, consts, &mut hv)?;
    Ok(hv)
}

/// The Hessian (`n × n`, row-major) of `f(x: &[S], consts...) -> S`.
pub fn hessian<F, C>(f: F, x: &[f64], consts: C) -> AdResult<Vec<f64>>
where
    F: ScalarFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<Tail<F>>,
{
    let mut h = vec![0.0; x.len() * x.len()];
    Tape::new().hessian_into(&f, x, &consts, &mut h)?;
    Ok(h)
}

/// `(y, J)` with `J` row-major `m × n` for an in-place `f(y: &mut [S], x: &[S],
/// consts...)` with `m` outputs, by chunked forward mode.
///
/// `m` is checked by one evaluation with the sparsity tracer first
/// ([`probe_outputs`](crate::scalar::probe_outputs)): a function that leaves its last
/// outputs unwritten is [`AdError::OutputsNotWritten`] (`SHADE-E0130`, naming the length
/// it writes), one that indexes past `y` [`AdError::FunctionPanicked`] (`SHADE-E0131`),
/// instead of a zero row or a panic. (The prepared `Tape::*_into` forms take `m` from
/// `y.len()` and do not probe.)
///
/// ```
/// use shade_autodiff::scalar::{Real, jacobian_forward, jacobian_reverse, shade_fn};
///
/// fn polar<S: Real>(y: &mut [S], x: &[S]) {
///     y[0] = x[0] * x[1].cos();
///     y[1] = x[0] * x[1].sin();
/// }
/// let f = shade_fn!(polar(&mut [S], &[S]));
/// let (y, j) = jacobian_forward(f, &[2.0, 0.0], 2, ())?;
/// assert_eq!(y, [2.0, 0.0]);
/// assert_eq!(j, [1.0, 0.0, 0.0, 2.0]);
/// assert_eq!(jacobian_reverse(f, &[2.0, 0.0], 2, ())?.1, j);
/// # Ok::<(), shade_autodiff::AdError>(())
/// ```
pub fn jacobian_forward<F, C>(
    f: F,
    x: &[f64],
    m: usize,
    consts: C,
) -> AdResult<(Vec<f64>, Vec<f64>)>
where
    F: InPlaceFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<InTail<F>>,
{
    jacobian_sparsity(&f, x, m, &consts)?;
    let (mut y, mut j) = (vec![0.0; m], vec![0.0; m * x.len()]);
    Tape::new().jacobian_forward_into(&f, x, consts, &mut y, &mut j)?;
    Ok((y, j))
}

/// `(y, J)` with `J` row-major `m × n` for an in-place `f(y: &mut [S], x: &[S],
/// consts...)` with `m` outputs, by reverse mode (one sweep per output); `m` is checked
/// as by [`jacobian_forward`].
pub fn jacobian_reverse<F, C>(
    f: F,
    x: &[f64],
    m: usize,
    consts: C,
) -> AdResult<(Vec<f64>, Vec<f64>)>
where
    F: InPlaceFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<InTail<F>>,
{
    jacobian_sparsity(&f, x, m, &consts)?;
    let (mut y, mut j) = (vec![0.0; m], vec![0.0; m * x.len()]);
    Tape::new().jacobian_reverse_into(&f, x, consts, &mut y, &mut j)?;
    Ok((y, j))
}

/// `(y, J dx)` for an in-place `f(y: &mut [S], x: &[S], consts...)` with `m` outputs
/// (checked as by [`jacobian_forward`]).
pub fn pushforward<F, C>(
    f: F,
    x: &[f64],
    dx: &[f64],
    m: usize,
    consts: C,
) -> AdResult<(Vec<f64>, Vec<f64>)>
where
    F: InPlaceFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<InTail<F>>,
{
    jacobian_sparsity(&f, x, m, &consts)?;
    let (mut y, mut dy) = (vec![0.0; m], vec![0.0; m]);
    Tape::new().pushforward_into(&f, x, dx, consts, &mut y, &mut dy)?;
    Ok((y, dy))
}

/// `(y, Jᵀ dy)` for an in-place `f(y: &mut [S], x: &[S], consts...)`; `m = dy.len()`
/// (checked as by [`jacobian_forward`]).
pub fn pullback<F, C>(f: F, x: &[f64], dy: &[f64], consts: C) -> AdResult<(Vec<f64>, Vec<f64>)>
where
    F: InPlaceFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<InTail<F>>,
{
    jacobian_sparsity(&f, x, dy.len(), &consts)?;
    let (mut y, mut dx) = (vec![0.0; dy.len()], vec![0.0; x.len()]);
    Tape::new().pullback_into(&f, x, dy, consts, &mut y, &mut dx)?;
    Ok((y, dx))
}
