//! The native engine of tensor programs: each operator one call (or one call per row or
//! column) of the core's tensor entry points, with the user's program and
//! `(Duplicated(x, dx), <contexts as Const>)`.

use crate::error::InterfaceResult;
use crate::tensor::{
    ConstContexts, InputArg, TensorContexts, TensorInput, TensorProgram, Workspace, for_entries,
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

impl<T: Element, X: TensorInput<T> + ?Sized> Workspace<T, X> {
    /// Reverse mode: one `tensor::gradient`.
    pub(crate) fn native_gradient<P, C, H>(
        &mut self,
        program: &mut P,
        x: &X,
        ctx: C,
        g: &mut X,
    ) -> InterfaceResult<T>
    where
        P: TensorProgram<T, X, H>,
        C: TensorContexts<T, H>,
    {
        for k in 0..g.arrays() {
            g.array_mut(k).fill(T::zero());
        }
        Ok(engine::gradient(
            &mut self.bufs,
            &mut *program,
            (
                InputArg(x, Some(g), PhantomData),
                ConstContexts(ctx, &mut None),
            ),
        )?)
    }

    /// Forward mode: one `tensor::pushforward_into` per input entry (tangent `e_j`).
    pub(crate) fn native_forward_gradient<P, C, H>(
        &mut self,
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
        let t = Self::zeroed(&mut self.tan, x);
        for k in 0..x.arrays() {
            for (off, slot) in g.array_mut(k).iter_mut().enumerate() {
                set(t, k, off, T::one());
                let r = engine::pushforward_into(
                    &mut self.bufs,
                    &mut *program,
                    (
                        InputArg(x, Some(&mut *t), PhantomData),
                        ConstContexts(ctx, &mut None),
                    ),
                    &mut self.y,
                    &mut self.dy,
                );
                set(t, k, off, T::zero());
                r?;
                *slot = self.dy.iter().next().copied().unwrap_or_else(T::zero);
            }
        }
        Ok(self.y.iter().next().copied().unwrap_or_else(T::zero))
    }

    /// One `tensor::pullback` (reverse in either mode).
    pub(crate) fn native_pullback<P, C, H>(
        &mut self,
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
        for k in 0..dx.arrays() {
            dx.array_mut(k).fill(T::zero());
        }
        Ok(engine::pullback(
            &mut self.bufs,
            &mut *program,
            (
                InputArg(x, Some(dx), PhantomData),
                ConstContexts(ctx, &mut None),
            ),
            dy,
        )?)
    }

    /// One `tensor::pushforward_into` (forward in either mode).
    pub(crate) fn native_pushforward<P, C, H>(
        &mut self,
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
        let t = Self::zeroed(&mut self.tan, x);
        for k in 0..x.arrays() {
            t.array_mut(k).assign(&dx.array(k));
        }
        Ok(engine::pushforward_into(
            &mut self.bufs,
            &mut *program,
            (
                InputArg(x, Some(t), PhantomData),
                ConstContexts(ctx, &mut None),
            ),
            y,
            dy,
        )?)
    }

    /// Reverse: one pullback per result entry (a row); forward: one pushforward per
    /// input entry (a column).
    pub(crate) fn native_jacobian<P, C, H>(
        &mut self,
        mode: ModeKind,
        program: &mut P,
        x: &X,
        ctx: C,
        jac: &mut Array2<T>,
    ) -> InterfaceResult<()>
    where
        P: TensorProgram<T, X, H>,
        C: TensorContexts<T, H>,
    {
        let t = Self::zeroed(&mut self.tan, x);
        match mode {
            ModeKind::Reverse => {
                for r in 0..self.seed.len() {
                    self.seed.fill(T::zero());
                    if let Some(s) = self.seed.as_slice_mut() {
                        s[r] = T::one();
                    }
                    for k in 0..t.arrays() {
                        t.array_mut(k).fill(T::zero());
                    }
                    engine::pullback(
                        &mut self.bufs,
                        &mut *program,
                        (
                            InputArg(x, Some(&mut *t), PhantomData),
                            ConstContexts(ctx, &mut None),
                        ),
                        &self.seed,
                    )?;
                    flatten_into(&*t, jac.row_mut(r));
                }
            }
            ModeKind::Forward => for_entries(x, |k, off, c| {
                set(t, k, off, T::one());
                let r = engine::pushforward_into(
                    &mut self.bufs,
                    &mut *program,
                    (
                        InputArg(x, Some(&mut *t), PhantomData),
                        ConstContexts(ctx, &mut None),
                    ),
                    &mut self.y,
                    &mut self.dy,
                );
                set(t, k, off, T::zero());
                r?;
                for (o, v) in jac.column_mut(c).iter_mut().zip(self.dy.iter()) {
                    *o = *v;
                }
                Ok(())
            })?,
        }
        Ok(())
    }
}
