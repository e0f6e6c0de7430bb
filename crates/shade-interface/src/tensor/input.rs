//! The differentiated argument of a tensor program ([`TensorInput`]): one array, a slice
//! or `Vec` of arrays (a parameter store), or a tuple of those; and how it reaches the
//! core's entry points (every array `Duplicated` with its shadow, or `Const`).

use ndarray::{Array, ArrayViewD, ArrayViewMutD, Dimension};
use shade_autodiff::tensor::{Element, Tape, TensorArg, Var};
use shade_autodiff::{AdResult, Const, Duplicated};
use std::borrow::BorrowMut;
use std::marker::PhantomData;

/// The differentiated argument of a tensor program: one or many arrays of `T`, each
/// registered on the tape as the core's `Duplicated(&x, &mut dx)` (or `Const(&x)` where
/// no derivative is taken), so that the program sees tracked [`Var`]s.
///
/// | argument `x` | the program receives | gradient, tangents |
/// |---|---|---|
/// | `Array<T, D>` | `Var` | `Array<T, D>` |
/// | `[Array<T, D>]`, `Vec<Array<T, D>>` (a parameter store) | `Vec<Var>` | `Vec<Array<T, D>>` |
/// | `(A, B)`, `(A, B, C)` of the above (sized) | a tuple of handles | a tuple |
///
/// Entries are numbered array by array, each in logical (row-major) order: that is the
/// column order of a tensor [`jacobian`](crate::tensor::jacobian).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a differentiable argument of a tensor program over `{T}`",
    label = "pass an array, a slice or `Vec` of arrays, or a tuple of those",
    note = "e.g. `&w` (an `Array2<f64>`), `&params[..]` (a parameter store), `&(w, b)`; constants go in the contexts: `(Constant(&x),)`"
)]
pub trait TensorInput<T: Element> {
    /// What the program receives for it.
    type Handle;
    /// An owned value of the same shape: gradients, tangents, perturbed copies.
    type Owned: BorrowMut<Self>;
    /// Number of arrays.
    fn arrays(&self) -> usize;
    /// Array `k`.
    fn array(&self, k: usize) -> ArrayViewD<'_, T>;
    /// Array `k`, mutable.
    fn array_mut(&mut self, k: usize) -> ArrayViewMutD<'_, T>;
    /// A copy in standard (row-major) layout.
    fn to_standard(&self) -> Self::Owned;
    /// Registers every array on the tape at positions `pos..`: `Duplicated` with its
    /// shadow (the gradient accumulates into it in reverse mode; it is the tangent in
    /// forward mode), or `Const` without one.
    fn register<'a>(
        &'a self,
        shadow: Option<&'a mut Self>,
        tape: &mut Tape<'a, T>,
        pos: usize,
    ) -> AdResult<Self::Handle>;
}

impl<T: Element, D: Dimension> TensorInput<T> for Array<T, D> {
    type Handle = Var;
    type Owned = Array<T, D>;
    fn arrays(&self) -> usize {
        1
    }
    fn array(&self, _: usize) -> ArrayViewD<'_, T> {
        self.view().into_dyn()
    }
    fn array_mut(&mut self, _: usize) -> ArrayViewMutD<'_, T> {
        self.view_mut().into_dyn()
    }
    fn to_standard(&self) -> Self {
        self.as_standard_layout().into_owned()
    }
    #[inline]
    fn register<'a>(
        &'a self,
        shadow: Option<&'a mut Self>,
        tape: &mut Tape<'a, T>,
        pos: usize,
    ) -> AdResult<Var> {
        match shadow {
            Some(dx) => Duplicated(self, dx).register(tape, pos),
            None => Const(self).register(tape, pos),
        }
    }
}

impl<T: Element, D: Dimension> TensorInput<T> for [Array<T, D>] {
    type Handle = Vec<Var>;
    type Owned = Vec<Array<T, D>>;
    fn arrays(&self) -> usize {
        self.len()
    }
    fn array(&self, k: usize) -> ArrayViewD<'_, T> {
        self[k].view().into_dyn()
    }
    fn array_mut(&mut self, k: usize) -> ArrayViewMutD<'_, T> {
        self[k].view_mut().into_dyn()
    }
    fn to_standard(&self) -> Vec<Array<T, D>> {
        self.iter().map(TensorInput::to_standard).collect()
    }
    fn register<'a>(
        &'a self,
        shadow: Option<&'a mut Self>,
        tape: &mut Tape<'a, T>,
        pos: usize,
    ) -> AdResult<Vec<Var>> {
        match shadow {
            Some(dxs) => (pos..)
                .zip(self.iter().zip(dxs.iter_mut()))
                .map(|(p, (x, dx))| Duplicated(x, dx).register(tape, p))
                .collect(),
            None => (pos..)
                .zip(self)
                .map(|(p, x)| Const(x).register(tape, p))
                .collect(),
        }
    }
}

impl<T: Element, D: Dimension> TensorInput<T> for Vec<Array<T, D>> {
    type Handle = Vec<Var>;
    type Owned = Vec<Array<T, D>>;
    fn arrays(&self) -> usize {
        self.len()
    }
    fn array(&self, k: usize) -> ArrayViewD<'_, T> {
        self[..].array(k)
    }
    fn array_mut(&mut self, k: usize) -> ArrayViewMutD<'_, T> {
        self[..].array_mut(k)
    }
    fn to_standard(&self) -> Self {
        self[..].to_standard()
    }
    fn register<'a>(
        &'a self,
        shadow: Option<&'a mut Self>,
        tape: &mut Tape<'a, T>,
        pos: usize,
    ) -> AdResult<Vec<Var>> {
        self[..].register(shadow.map(|s| &mut s[..]), tape, pos)
    }
}

macro_rules! tuple_inputs {
    ($($A:ident $i:tt),+) => {
        /// A tuple of inputs: its arrays one input after the other.
        impl<T: Element, $($A: TensorInput<T, Owned = $A>),+> TensorInput<T> for ($($A,)+) {
            type Handle = ($($A::Handle,)+);
            type Owned = Self;
            fn arrays(&self) -> usize {
                0 $(+ self.$i.arrays())+
            }
            fn array(&self, mut k: usize) -> ArrayViewD<'_, T> {
                $(
                    if k < self.$i.arrays() {
                        return self.$i.array(k);
                    }
                    k -= self.$i.arrays();
                )+
                unreachable!("array {k} past the end of the tuple")
            }
            fn array_mut(&mut self, mut k: usize) -> ArrayViewMutD<'_, T> {
                $(
                    if k < self.$i.arrays() {
                        return self.$i.array_mut(k);
                    }
                    k -= self.$i.arrays();
                )+
                unreachable!("array {k} past the end of the tuple")
            }
            fn to_standard(&self) -> Self {
                ($(self.$i.to_standard(),)+)
            }
            // The last input's position is counted past the end.
            #[allow(unused_assignments)]
            fn register<'a>(
                &'a self,
                shadow: Option<&'a mut Self>,
                tape: &mut Tape<'a, T>,
                pos: usize,
            ) -> AdResult<Self::Handle> {
                let mut pos = pos;
                match shadow {
                    Some(dx) => Ok(($({
                        let h = self.$i.register(Some(&mut dx.$i), tape, pos)?;
                        pos += self.$i.arrays();
                        h
                    },)+)),
                    None => Ok(($({
                        let h = self.$i.register(None, tape, pos)?;
                        pos += self.$i.arrays();
                        h
                    },)+)),
                }
            }
        }
    };
}
tuple_inputs!(A0 0, A1 1);
tuple_inputs!(A0 0, A1 1, A2 2);

/// The differentiated argument as one argument of the core's entry points.
pub(crate) struct InputArg<'a, T, X: ?Sized>(
    pub(crate) &'a X,
    pub(crate) Option<&'a mut X>,
    pub(crate) PhantomData<T>,
);

impl<'a, T: Element, X: TensorInput<T> + ?Sized> TensorArg<'a, T> for InputArg<'a, T, X> {
    type Handle = X::Handle;
    #[inline]
    fn register(self, tape: &mut Tape<'a, T>, pos: usize) -> AdResult<X::Handle> {
        self.0.register(self.1, tape, pos)
    }
}

/// Whether `x` has the shapes `shapes`; else the expected and the found shape of the
/// first array that differs (the numbers of arrays, if those differ).
pub(crate) fn mismatch<T: Element, X: TensorInput<T> + ?Sized>(
    x: &X,
    shapes: &[Vec<usize>],
) -> Option<(Vec<usize>, Vec<usize>)> {
    if x.arrays() != shapes.len() {
        return Some((vec![shapes.len()], vec![x.arrays()]));
    }
    (0..shapes.len())
        .find(|&k| x.array(k).shape() != &shapes[k][..])
        .map(|k| (shapes[k].clone(), x.array(k).shape().to_vec()))
}

/// The total number of entries of `x`.
pub(crate) fn entries<T: Element, X: TensorInput<T> + ?Sized>(x: &X) -> usize {
    (0..x.arrays()).map(|k| x.array(k).len()).sum()
}
