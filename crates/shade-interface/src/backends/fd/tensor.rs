//! Finite differences of tensor programs: primal runs (`tensor::value`) at perturbed
//! copies of the input. A column `∂f/∂x_j` steps `x_j` alone by
//! `rel · max(|x_j|, 1) + abs` (`rel` scaled to the element type's precision); a
//! direction `dx` steps the whole input by `(rel · max(‖x‖∞, 1) + abs) / ‖dx‖∞`.
//! Differences are taken in `f64`.

use crate::backend::{AutoFiniteDiff, FdKind};
use crate::backends::native::tensor::set;
use crate::error::{InterfaceError, InterfaceResult};
use crate::tensor::{
    ConstContexts, InputArg, TensorContexts, TensorInput, TensorProgram, Workspace, for_entries,
};
use ndarray::{Array2, ArrayD};
use shade_autodiff::AdError;
use shade_autodiff::tensor::{self as engine, Element, TapeBuffers};
use std::marker::PhantomData;

/// `out = f(x)` by the primal tape.
fn eval<T, X, P, C, H>(
    bufs: &mut TapeBuffers<T>,
    program: &mut P,
    x: &X,
    ctx: C,
    out: &mut ArrayD<T>,
) -> InterfaceResult<()>
where
    T: Element,
    X: TensorInput<T> + ?Sized,
    P: TensorProgram<T, X, H>,
    C: TensorContexts<T, H>,
{
    let v = engine::value(
        bufs,
        &mut *program,
        (
            InputArg(x, None, PhantomData),
            ConstContexts(ctx, &mut None),
        ),
    )?;
    if v.shape() != out.shape() {
        return Err(AdError::ShapeMismatch {
            op: "finite differences (the result changed shape between evaluations)",
            left: out.shape().to_vec(),
            right: v.shape().to_vec(),
        }
        .into());
    }
    out.assign(&v);
    Ok(())
}

fn f64_of<T: Element>(v: T) -> f64 {
    v.to_f64().unwrap_or(f64::NAN)
}

impl<T: Element, X: TensorInput<T> + ?Sized> Workspace<T, X> {
    /// The relative step of `fd` at `T`'s precision.
    fn rel_step(fd: &AutoFiniteDiff) -> f64 {
        fd.first_rel_step_for(f64_of(T::epsilon()))
    }

    /// A copy of `x` in `xp`, in standard layout.
    fn copy_input<'s>(xp: &'s mut Option<X::Owned>, x: &X) -> &'s mut X {
        let p = Self::zeroed(xp, x);
        for k in 0..x.arrays() {
            p.array_mut(k).assign(&x.array(k));
        }
        p
    }

    /// Every column `∂f/∂x_j` in turn, in `self.dy`, handed to `each(k, off, j, self.dy)`
    /// (array `k`, offset `off` in it, `j` among all entries).
    fn fd_columns<P, C, H>(
        &mut self,
        fd: &AutoFiniteDiff,
        program: &mut P,
        x: &X,
        ctx: C,
        mut each: impl FnMut(usize, usize, usize, &ArrayD<T>),
    ) -> InterfaceResult<()>
    where
        P: TensorProgram<T, X, H>,
        C: TensorContexts<T, H>,
    {
        self.learn_output(program, x, ctx)?;
        let rel = Self::rel_step(fd);
        let xp = Self::copy_input(&mut self.xp, x);
        let (bufs, up, down, col) = (&mut self.bufs, &mut self.seed, &mut self.y, &mut self.dy);
        for_entries(x, |k, off, j| {
            let v0 = xp.array(k).as_slice().map_or(T::zero(), |s| s[off]);
            let x0 = f64_of(v0);
            let h = rel * x0.abs().max(1.0) + fd.abs_step;
            set(xp, k, off, T::cst(x0 + h));
            let r = eval(bufs, program, &*xp, ctx, up);
            let (r, scale) = match (r, fd.kind) {
                (Ok(()), FdKind::Central) => {
                    set(xp, k, off, T::cst(x0 - h));
                    (eval(bufs, program, &*xp, ctx, down), 2.0 * h)
                }
                (Ok(()), FdKind::Forward) => {
                    set(xp, k, off, v0);
                    (eval(bufs, program, &*xp, ctx, down), h)
                }
                (e, _) => (e, h),
            };
            set(xp, k, off, v0);
            r?;
            for ((c, p), m) in col.iter_mut().zip(up.iter()).zip(down.iter()) {
                *c = T::cst((f64_of(*p) - f64_of(*m)) / scale);
            }
            each(k, off, j, col);
            Ok(())
        })
    }

    /// `∇f(x)` column by column, then `f(x)` (the last evaluation is at `x`).
    pub(crate) fn fd_gradient<P, C, H>(
        &mut self,
        fd: &AutoFiniteDiff,
        program: &mut P,
        x: &X,
        ctx: C,
        g: &mut X,
    ) -> InterfaceResult<T>
    where
        P: TensorProgram<T, X, H>,
        C: TensorContexts<T, H>,
    {
        self.learn_output(program, x, ctx)?;
        if self.y.len() != 1 {
            return Err(AdError::NonScalarReturn { len: self.y.len() }.into());
        }
        // The columns go to a standard-layout buffer first (`g` may be strided).
        let mut t = self.tan.take();
        let buf = Self::zeroed(&mut t, x);
        let r = self.fd_columns(fd, program, x, ctx, |k, off, _, col| {
            set(
                buf,
                k,
                off,
                col.iter().next().copied().unwrap_or_else(T::zero),
            );
        });
        if r.is_ok() {
            for k in 0..g.arrays() {
                g.array_mut(k).assign(&buf.array(k));
            }
        }
        self.tan = t;
        r?;
        eval(&mut self.bufs, program, x, ctx, &mut self.y)?;
        Ok(self.y.iter().next().copied().unwrap_or_else(T::zero))
    }

    /// `J(x)ᵀ dy`, column by column.
    pub(crate) fn fd_pullback<P, C, H>(
        &mut self,
        fd: &AutoFiniteDiff,
        program: &mut P,
        x: &X,
        dy: &ArrayD<T>,
        ctx: C,
        dx: &mut X,
    ) -> InterfaceResult<()>
    where
        P: TensorProgram<T, X, H>,
        C: TensorContexts<T, H>,
    {
        self.learn_output(program, x, ctx)?;
        if dy.shape() != self.y.shape() {
            return Err(AdError::ShapeMismatch {
                op: "pullback",
                left: self.y.shape().to_vec(),
                right: dy.shape().to_vec(),
            }
            .into());
        }
        let mut t = self.tan.take();
        let buf = Self::zeroed(&mut t, x);
        let r = self.fd_columns(fd, program, x, ctx, |k, off, _, col| {
            let v = col.iter().zip(dy.iter()).map(|(a, b)| *a * *b).sum();
            set(buf, k, off, v);
        });
        if r.is_ok() {
            for k in 0..dx.arrays() {
                dx.array_mut(k).assign(&buf.array(k));
            }
        }
        self.tan = t;
        r
    }

    /// The Jacobian, column by column.
    pub(crate) fn fd_jacobian<P, C, H>(
        &mut self,
        fd: &AutoFiniteDiff,
        program: &mut P,
        x: &X,
        ctx: C,
        jac: &mut Array2<T>,
    ) -> InterfaceResult<()>
    where
        P: TensorProgram<T, X, H>,
        C: TensorContexts<T, H>,
    {
        self.fd_columns(fd, program, x, ctx, |_, _, j, col| {
            flatten_into_column(col, jac, j);
        })
    }

    /// `(f(x), J(x) dx)` by one directional difference.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn fd_pushforward<P, C, H>(
        &mut self,
        fd: &AutoFiniteDiff,
        program: &mut P,
        (x, dx): (&X, &X),
        ctx: C,
        y: &mut ArrayD<T>,
        dy: &mut ArrayD<T>,
    ) -> InterfaceResult<()>
    where
        P: TensorProgram<T, X, H>,
        C: TensorContexts<T, H>,
    {
        self.learn_output(program, x, ctx)?;
        for (argument, a) in [("y", &*y), ("dy", &*dy)] {
            if a.shape() != self.y.shape() {
                return Err(InterfaceError::ShapeMismatch {
                    operator: "pushforward",
                    argument,
                    expected: self.y.shape().to_vec(),
                    found: a.shape().to_vec(),
                });
            }
        }
        let norm = |v: &X| {
            (0..v.arrays())
                .flat_map(|k| {
                    v.array(k)
                        .into_iter()
                        .map(|e| f64_of(*e).abs())
                        .collect::<Vec<_>>()
                })
                .fold(0.0f64, f64::max)
        };
        let (xn, dn) = (norm(x), norm(dx));
        if dn == 0.0 {
            dy.fill(T::zero());
            return eval(&mut self.bufs, program, x, ctx, y);
        }
        let h = (Self::rel_step(fd) * xn.max(1.0) + fd.abs_step) / dn;
        let xp = Self::zeroed(&mut self.xp, x);
        let (bufs, up, down) = (&mut self.bufs, &mut self.seed, &mut self.y);
        let mut shifted = |t: f64, out: &mut ArrayD<T>| {
            for k in 0..x.arrays() {
                let mut p = xp.array_mut(k);
                p.assign(&x.array(k));
                p.zip_mut_with(&dx.array(k), |a, d| {
                    *a = T::cst(f64_of(*a) + t * f64_of(*d))
                });
            }
            eval(bufs, program, &*xp, ctx, out)
        };
        shifted(h, up)?;
        let scale = match fd.kind {
            FdKind::Central => {
                shifted(-h, down)?;
                2.0 * h
            }
            FdKind::Forward => {
                shifted(0.0, down)?;
                h
            }
        };
        for ((d, p), m) in dy.iter_mut().zip(up.iter()).zip(down.iter()) {
            *d = T::cst((f64_of(*p) - f64_of(*m)) / scale);
        }
        eval(&mut self.bufs, program, x, ctx, y)
    }
}

/// Column `j` of `jac` from `col` (logical order).
fn flatten_into_column<T: Element>(col: &ArrayD<T>, jac: &mut Array2<T>, j: usize) {
    for (o, v) in jac.column_mut(j).iter_mut().zip(col.iter()) {
        *o = *v;
    }
}
