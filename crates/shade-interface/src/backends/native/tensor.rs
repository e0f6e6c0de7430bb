//! The native engine of tensor programs: each operator one call (or one call per row or
//! column) of the core's tensor entry points, with the user's program and
//! `(Duplicated(x, dx), <contexts as Const>)`.

use crate::error::InterfaceResult;
use crate::tensor::{
    ConstContexts, InputArg, Run, TensorContexts, TensorInput, TensorProgram, Workspace,
    for_entries,
};
use ndarray::{Array2, ArrayD};
use shade_autodiff::tensor::{self as engine, Element};
use shade_autodiff::{AdError, ModeKind};
use std::marker::PhantomData;

/// Sets entry `off` of array `k` of a standard-layout buffer.
pub(crate) fn set<T: Element, X: TensorInput<T> + ?Sized>(t: &mut X, k: usize, off: usize, v: T) {
    if let Some(e) = t.array_mut(k).as_slice_mut().and_then(|s| s.get_mut(off)) {
        *e = v;
    }
}

/// Zeroes every array of `x`.
pub(crate) fn zero<T: Element, X: TensorInput<T> + ?Sized>(x: &mut X) {
    for k in 0..x.arrays() {
        x.array_mut(k).fill(T::zero());
    }
}

/// The one entry of a one-element result.
pub(crate) fn scalar<T: Element>(a: &ArrayD<T>) -> T {
    a.iter().next().copied().unwrap_or_else(T::zero)
}

impl<T, X, P, C, H> Run<'_, T, X, P, C, H>
where
    T: Element,
    X: TensorInput<T> + ?Sized,
    P: TensorProgram<T, X, H>,
    C: TensorContexts<T, H>,
{
    /// `tensor::pushforward_into` with tangent `t`, into the workspace's `y` and `dy`.
    fn push(&mut self, x: &X, t: &mut X) -> InterfaceResult<()> {
        let w = &mut *self.work;
        Ok(engine::pushforward_into(
            &mut w.bufs,
            &mut self.program,
            (
                InputArg(x, Some(t), PhantomData),
                ConstContexts(self.ctx, &mut None),
            ),
            &mut w.y,
            &mut w.dy,
        )?)
    }

    /// `tensor::pullback` with seed `dy`, accumulating into the shadow `dx`.
    fn pull(&mut self, x: &X, dy: &ArrayD<T>, dx: &mut X) -> InterfaceResult<()> {
        Ok(engine::pullback(
            &mut self.work.bufs,
            &mut self.program,
            (
                InputArg(x, Some(dx), PhantomData),
                ConstContexts(self.ctx, &mut None),
            ),
            dy,
        )?)
    }

    /// Runs `each(j)` with tangent `e_j` in the workspace's tangent buffer, for every
    /// input entry `j` (array `k`, offset `off`), after one push each.
    fn unit_tangents(
        &mut self,
        x: &X,
        mut each: impl FnMut(usize, usize, usize, &ArrayD<T>),
    ) -> InterfaceResult<()> {
        let mut slot = self.work.tan.take();
        let t = Workspace::<T, X>::zeroed(&mut slot, x);
        let r = for_entries(x, |k, off, j| {
            set(t, k, off, T::one());
            let r = self.push(x, t);
            set(t, k, off, T::zero());
            r?;
            each(k, off, j, &self.work.dy);
            Ok(())
        });
        self.work.tan = slot;
        r
    }

    /// Reverse mode: one `tensor::gradient`.
    pub(crate) fn native_gradient(&mut self, x: &X, g: &mut X) -> InterfaceResult<T> {
        zero(g);
        Ok(engine::gradient(
            &mut self.work.bufs,
            &mut self.program,
            (
                InputArg(x, Some(g), PhantomData),
                ConstContexts(self.ctx, &mut None),
            ),
        )?)
    }

    /// Forward mode: one `tensor::pushforward_into` per input entry (tangent `e_j`).
    pub(crate) fn native_forward_gradient(&mut self, x: &X, g: &mut X) -> InterfaceResult<T> {
        self.learn_output(x)?;
        if self.work.y.len() != 1 {
            let len = self.work.y.len();
            return Err(AdError::NonScalarReturn { len }.into());
        }
        // The derivatives go to a standard-layout buffer first (`g` may be strided).
        let mut out = self.work.xp.take();
        let buf = Workspace::<T, X>::zeroed(&mut out, x);
        let r = self.unit_tangents(x, |k, off, _, dy| set(buf, k, off, scalar(dy)));
        if r.is_ok() {
            for k in 0..g.arrays() {
                g.array_mut(k).assign(&buf.array(k));
            }
        }
        self.work.xp = out;
        r?;
        Ok(scalar(&self.work.y))
    }

    /// One `tensor::pullback` (reverse in either mode).
    pub(crate) fn native_pullback(
        &mut self,
        x: &X,
        dy: &ArrayD<T>,
        dx: &mut X,
    ) -> InterfaceResult<()> {
        zero(dx);
        self.pull(x, dy, dx)
    }

    /// One `tensor::pushforward_into` (forward in either mode).
    pub(crate) fn native_pushforward(
        &mut self,
        (x, dx): (&X, &X),
        y: &mut ArrayD<T>,
        dy: &mut ArrayD<T>,
    ) -> InterfaceResult<()> {
        let mut slot = self.work.tan.take();
        let t = Workspace::<T, X>::zeroed(&mut slot, x);
        for k in 0..x.arrays() {
            t.array_mut(k).assign(&dx.array(k));
        }
        let r = engine::pushforward_into(
            &mut self.work.bufs,
            &mut self.program,
            (
                InputArg(x, Some(&mut *t), PhantomData),
                ConstContexts(self.ctx, &mut None),
            ),
            y,
            dy,
        );
        self.work.tan = slot;
        Ok(r?)
    }

    /// Reverse: one pullback per result entry (a row); forward: one pushforward per
    /// input entry (a column).
    pub(crate) fn native_jacobian(
        &mut self,
        mode: ModeKind,
        x: &X,
        jac: &mut Array2<T>,
    ) -> InterfaceResult<()> {
        match mode {
            ModeKind::Reverse => {
                let mut slot = self.work.tan.take();
                let t = Workspace::<T, X>::zeroed(&mut slot, x);
                let mut seed = core::mem::take(&mut self.work.seed);
                let mut r = Ok(());
                for row in 0..seed.len() {
                    seed.fill(T::zero());
                    if let Some(s) = seed.as_slice_mut() {
                        s[row] = T::one();
                    }
                    zero(t);
                    r = self.pull(x, &seed, t);
                    if r.is_err() {
                        break;
                    }
                    flatten_into(&*t, jac.row_mut(row));
                }
                self.work.seed = seed;
                self.work.tan = slot;
                r
            }
            ModeKind::Forward => self.unit_tangents(x, |_, _, c, dy| {
                for (o, v) in jac.column_mut(c).iter_mut().zip(dy.iter()) {
                    *o = *v;
                }
            }),
        }
    }
}

/// Copies `from`'s entries, in logical order, into row or column `out`.
pub(crate) fn flatten_into<'o, T: Element, X: TensorInput<T> + ?Sized>(
    from: &X,
    out: impl IntoIterator<Item = &'o mut T>,
) {
    let entries = (0..from.arrays()).flat_map(|k| from.array(k).into_iter());
    for (o, v) in out.into_iter().zip(entries) {
        *o = *v;
    }
}
