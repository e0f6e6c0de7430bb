//! Convenience operators built on the engine for functions returning one number:
//! gradients, derivatives, Hessians and Hessian-vector products (vector-valued
//! functions: [`jacobian`](super::jacobian)).
//!
//! Each has a prepared form: a method on a [`Tape`] that the caller keeps, whose calls
//! reuse its buffers (no heap allocation once warm), and a free function that makes a
//! fresh tape. Functions take their differentiated argument first (`&[S]`, or `S` for
//! [`derivative`]) and their other arguments as a tuple of [`Const`](crate::Const)
//! values.

use super::args::{ConstArgs, check_shadow};
use super::dual::{Dual, DualVec};
use super::func::{Join, Kinds, Scalar, ScalarFn, Slice};
use super::jacobian::check_len;
use super::tape::{Tape, Var};
use crate::error::AdResult;

type Tail<F> = <<F as ScalarFn>::Kinds as Kinds>::Tail;

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
