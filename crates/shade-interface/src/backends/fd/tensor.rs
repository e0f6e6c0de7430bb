//! Finite differences of tensor programs: primal runs (`tensor::value`) at perturbed
//! copies of the input. A column `∂f/∂x_j` steps `x_j` alone by
//! `rel · max(|x_j|, 1) + abs` (`rel` scaled to the element type's precision); a
//! direction `dx` steps the whole input by `(rel · max(‖x‖∞, 1) + abs) / ‖dx‖∞`.
//! Differences are taken in `f64`.

use crate::backend::{AutoFiniteDiff, FdKind};
use crate::backends::native::tensor::{scalar, set};
use crate::error::{InterfaceError, InterfaceResult};
use crate::tensor::{Run, TensorContexts, TensorInput, TensorProgram, Workspace, for_entries};
use ndarray::{Array2, ArrayD};
use shade_autodiff::AdError;
use shade_autodiff::tensor::Element;

fn f64_of<T: Element>(v: T) -> f64 {
    v.to_f64().unwrap_or(f64::NAN)
}

/// `(p - m) / scale` entry by entry, in `f64`.
fn difference<T: Element>(out: &mut ArrayD<T>, p: &ArrayD<T>, m: &ArrayD<T>, scale: f64) {
    for ((o, a), b) in out.iter_mut().zip(p.iter()).zip(m.iter()) {
        *o = T::cst((f64_of(*a) - f64_of(*b)) / scale);
    }
}

/// The largest magnitude of `v`'s entries.
fn inf_norm<T: Element, X: TensorInput<T> + ?Sized>(v: &X) -> f64 {
    (0..v.arrays())
        .flat_map(|k| {
            v.array(k)
                .iter()
                .map(|e| f64_of(*e).abs())
                .collect::<Vec<_>>()
        })
        .fold(0.0, f64::max)
}

impl<T, X, P, C, H> Run<'_, T, X, P, C, H>
where
    T: Element,
    X: TensorInput<T> + ?Sized,
    P: TensorProgram<T, X, H>,
    C: TensorContexts<T, H>,
{
    /// The relative step of `fd` at `T`'s precision.
    fn rel_step(fd: &AutoFiniteDiff) -> f64 {
        fd.first_rel_step_for(f64_of(T::epsilon()))
    }

    /// Every column `∂f/∂x_j` in turn, handed to `each(k, off, j, column)` (array `k`,
    /// offset `off` in it, `j` among all entries).
    fn fd_columns(
        &mut self,
        fd: &AutoFiniteDiff,
        x: &X,
        mut each: impl FnMut(usize, usize, usize, &ArrayD<T>),
    ) -> InterfaceResult<()> {
        self.learn_output(x)?;
        let rel = Self::rel_step(fd);
        let mut slot = self.work.xp.take();
        let xp = Workspace::<T, X>::zeroed(&mut slot, x);
        for k in 0..x.arrays() {
            xp.array_mut(k).assign(&x.array(k));
        }
        let mut col = core::mem::take(&mut self.work.dy);
        let r = for_entries(x, |k, off, j| {
            let v0 = xp.array(k).as_slice().map_or(T::zero(), |s| s[off]);
            let x0 = f64_of(v0);
            let h = rel * x0.abs().max(1.0) + fd.abs_step;
            set(xp, k, off, T::cst(x0 + h));
            let up = self.eval(xp);
            let (second, scale) = match fd.kind {
                FdKind::Central => (T::cst(x0 - h), 2.0 * h),
                FdKind::Forward => (v0, h),
            };
            set(xp, k, off, second);
            let down = up.and_then(|up| self.eval(xp).map(|down| (up, down)));
            set(xp, k, off, v0);
            let (up, down) = down?;
            difference(&mut col, &up, &down, scale);
            each(k, off, j, &col);
            Ok(())
        });
        self.work.dy = col;
        self.work.xp = slot;
        r
    }

    /// Runs the columns into a standard-layout buffer of the input's shape (`reduce`
    /// turns a column into the entry), then copies it into `out` (which may be strided).
    fn fd_entries(
        &mut self,
        fd: &AutoFiniteDiff,
        x: &X,
        out: &mut X,
        reduce: impl Fn(&ArrayD<T>) -> T,
    ) -> InterfaceResult<()> {
        let mut slot = self.work.tan.take();
        let buf = Workspace::<T, X>::zeroed(&mut slot, x);
        let r = self.fd_columns(fd, x, |k, off, _, col| set(buf, k, off, reduce(col)));
        if r.is_ok() {
            for k in 0..out.arrays() {
                out.array_mut(k).assign(&buf.array(k));
            }
        }
        self.work.tan = slot;
        r
    }

    /// `∇f(x)` column by column, then `f(x)` (the last evaluation is at `x`).
    pub(crate) fn fd_gradient(
        &mut self,
        fd: &AutoFiniteDiff,
        x: &X,
        g: &mut X,
    ) -> InterfaceResult<T> {
        self.learn_output(x)?;
        if self.work.y.len() != 1 {
            let len = self.work.y.len();
            return Err(AdError::NonScalarReturn { len }.into());
        }
        self.fd_entries(fd, x, g, scalar)?;
        Ok(scalar(&self.eval(x)?))
    }

    /// `J(x)ᵀ dy`, column by column.
    pub(crate) fn fd_pullback(
        &mut self,
        fd: &AutoFiniteDiff,
        x: &X,
        dy: &ArrayD<T>,
        dx: &mut X,
    ) -> InterfaceResult<()> {
        self.learn_output(x)?;
        if dy.shape() != self.work.y.shape() {
            return Err(AdError::ShapeMismatch {
                op: "pullback",
                left: self.work.y.shape().to_vec(),
                right: dy.shape().to_vec(),
            }
            .into());
        }
        self.fd_entries(fd, x, dx, |col| {
            col.iter().zip(dy.iter()).map(|(a, b)| *a * *b).sum()
        })
    }

    /// The Jacobian, column by column.
    pub(crate) fn fd_jacobian(
        &mut self,
        fd: &AutoFiniteDiff,
        x: &X,
        jac: &mut Array2<T>,
    ) -> InterfaceResult<()> {
        self.fd_columns(fd, x, |_, _, j, col| {
            for (o, v) in jac.column_mut(j).iter_mut().zip(col.iter()) {
                *o = *v;
            }
        })
    }

    /// `(f(x), J(x) dx)` by one directional difference.
    pub(crate) fn fd_pushforward(
        &mut self,
        fd: &AutoFiniteDiff,
        (x, dx): (&X, &X),
        y: &mut ArrayD<T>,
        dy: &mut ArrayD<T>,
    ) -> InterfaceResult<()> {
        self.learn_output(x)?;
        for (argument, a) in [("y", &*y), ("dy", &*dy)] {
            if a.shape() != self.work.y.shape() {
                return Err(InterfaceError::ShapeMismatch {
                    operator: "pushforward",
                    argument,
                    expected: self.work.y.shape().to_vec(),
                    found: a.shape().to_vec(),
                });
            }
        }
        let dn = inf_norm(dx);
        if dn == 0.0 {
            dy.fill(T::zero());
        } else {
            let h = (Self::rel_step(fd) * inf_norm(x).max(1.0) + fd.abs_step) / dn;
            let mut slot = self.work.xp.take();
            let xp = Workspace::<T, X>::zeroed(&mut slot, x);
            let mut shifted = |r: &mut Self, t: f64| {
                for k in 0..x.arrays() {
                    let mut p = xp.array_mut(k);
                    p.assign(&x.array(k));
                    p.zip_mut_with(&dx.array(k), |a, d| {
                        *a = T::cst(f64_of(*a) + t * f64_of(*d))
                    });
                }
                r.eval(xp)
            };
            let (second, scale) = match fd.kind {
                FdKind::Central => (-h, 2.0 * h),
                FdKind::Forward => (0.0, h),
            };
            let r = shifted(self, h).and_then(|up| shifted(self, second).map(|m| (up, m)));
            self.work.xp = slot;
            let (up, down) = r?;
            difference(dy, &up, &down, scale);
        }
        y.assign(&self.eval(x)?);
        Ok(())
    }
}
