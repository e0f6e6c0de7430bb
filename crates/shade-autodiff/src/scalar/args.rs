//! How annotated arguments (`Const`, `Active`, `Duplicated`, `DuplicatedNoNeed`,
//! `BatchDuplicated`) become the arguments a function sees in each mode.
//!
//! Each annotation implements the traits for the parameter kinds and modes where it
//! makes sense; everything else is a compile error with a message that says what to pass
//! instead.

use super::dual::{Dual, DualVec};
use super::func::{Constant, Kind, Kinds, Scalar, Slice, SliceMut};
use super::real::Real;
use super::tape::{Tape, Trace, Var};
use crate::activity::{Active, BatchDuplicated, Const, Duplicated, DuplicatedNoNeed};
use crate::error::{AdError, AdResult};
use bumpalo::Bump;
use core::borrow::Borrow;

/// Whether the memory ranges of two slices overlap.
pub(crate) fn overlaps<T>(a: &[T], b: &[T]) -> bool {
    let ra = a.as_ptr_range();
    let rb = b.as_ptr_range();
    !a.is_empty() && !b.is_empty() && ra.start < rb.end && rb.start < ra.end
}

/// Checks a shadow against its primal: same length, no shared memory.
pub(crate) fn check_shadow(pos: usize, x: &[f64], dx: &[f64]) -> AdResult<()> {
    if x.len() != dx.len() {
        return Err(AdError::ShadowLength {
            arg: pos,
            expected: x.len(),
            found: dx.len(),
        });
    }
    if overlaps(x, dx) {
        return Err(AdError::ShadowAliasesPrimal { arg: pos });
    }
    Ok(())
}

/// An argument made of constants only, usable in every mode and with every number type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed as a constant for a parameter of kind `{K}`",
    label = "this constant does not fit the function's parameter",
    note = "a `&[S]` parameter takes `Const(&x)` with `x` a slice, array or `Vec` of `f64`; an `S` parameter takes `Const(x)` with `x: f64`; a `&C` parameter takes `Const(&c)`"
)]
pub trait ConstArg<K: Kind> {
    /// The argument the function sees for number type `S`.
    fn arg<'b, S: Real + 'b>(&'b self, bump: &'b Bump) -> K::Arg<'b, S>;
}

impl<C: ?Sized + 'static, D: ?Sized + Borrow<C>> ConstArg<Constant<C>> for Const<&D> {
    #[inline]
    fn arg<'b, S: Real + 'b>(&'b self, _: &'b Bump) -> &'b C {
        self.0.borrow()
    }
}

impl<D: ?Sized + AsRef<[f64]>> ConstArg<Slice> for Const<&D> {
    #[inline]
    fn arg<'b, S: Real + 'b>(&'b self, bump: &'b Bump) -> &'b [S] {
        bump.alloc_slice_fill_iter(self.0.as_ref().iter().map(|&v| S::cst(v)))
    }
}

/// A scratch copy of the constant, in the function's number type, that it may write.
impl<D: ?Sized + AsRef<[f64]>> ConstArg<SliceMut> for Const<&D> {
    #[inline]
    fn arg<'b, S: Real + 'b>(&'b self, bump: &'b Bump) -> &'b mut [S] {
        bump.alloc_slice_fill_iter(self.0.as_ref().iter().map(|&v| S::cst(v)))
    }
}

impl ConstArg<Scalar> for Const<f64> {
    #[inline]
    fn arg<'b, S: Real + 'b>(&'b self, _: &'b Bump) -> S {
        S::cst(self.0)
    }
}

/// A tuple of constant arguments (arity 0 to 3), the trailing arguments of the
/// convenience operators ([`gradient`](crate::scalar::gradient), ...).
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not match the function's trailing parameters `{Ks}`",
    label = "pass the remaining arguments as a tuple of `Const(..)`",
    note = "e.g. `(Const(&p),)` for one trailing parameter, `()` for none"
)]
pub trait ConstArgs<Ks: Kinds> {
    /// The argument tuple the function sees for number type `S`.
    fn args<'b, S: Real + 'b>(&'b self, bump: &'b Bump) -> Ks::Args<'b, S>;
}

impl ConstArgs<()> for () {
    #[inline]
    fn args<'b, S: Real + 'b>(&'b self, _: &'b Bump) {}
}

impl<Ks: Kinds, C: ConstArgs<Ks>> ConstArgs<Ks> for &C {
    #[inline]
    fn args<'b, S: Real + 'b>(&'b self, bump: &'b Bump) -> Ks::Args<'b, S> {
        (**self).args(bump)
    }
}

macro_rules! const_args {
    ($($k:ident $a:ident $i:tt),+) => {
        impl<$($k: Kind, $a: ConstArg<$k>),+> ConstArgs<($($k,)+)> for ($($a,)+) {
            #[inline]
            fn args<'b, S: Real + 'b>(&'b self, bump: &'b Bump) -> <($($k,)+) as Kinds>::Args<'b, S> {
                ($(self.$i.arg::<S>(bump),)+)
            }
        }
    };
}
const_args!(K0 A0 0);
const_args!(K0 A0 0, K1 A1 1);
const_args!(K0 A0 0, K1 A1 1, K2 A2 2);

/// An annotated argument in reverse mode, with tape values of type `T`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a parameter of kind `{K}` in reverse mode",
    label = "this annotation does not fit the function's parameter",
    note = "reverse mode takes `Duplicated(&x, &mut dx)` or `Const(&x)` for a `&[S]` parameter, `Active(x)` or `Const(x)` for an `S` parameter, and `Const(&c)` for a `&C` parameter"
)]
pub trait ReverseArg<K: Kind, T: Real> {
    /// What the entry point returns for this argument: the derivative for `Active`,
    /// `()` otherwise.
    type Grad;
    /// Checks the argument at position `pos` (shadow length, aliasing).
    fn check(&self, pos: usize) -> AdResult<()>;
    /// The argument the function sees, and the index of its first tape variable.
    fn input<'b>(&'b self, trace: &'b Trace<T>, bump: &'b Bump) -> (K::Arg<'b, Var<'b, T>>, u32);
    /// Accumulates the adjoints after the sweep.
    fn collect(&mut self, slot: u32, tape: &Tape<T>) -> Self::Grad;
}

#[diagnostic::do_not_recommend]
impl<K: Kind, T: Real, X> ReverseArg<K, T> for Const<X>
where
    Const<X>: ConstArg<K>,
{
    type Grad = ();
    #[inline]
    fn check(&self, _: usize) -> AdResult<()> {
        Ok(())
    }
    #[inline]
    fn input<'b>(&'b self, _: &'b Trace<T>, bump: &'b Bump) -> (K::Arg<'b, Var<'b, T>>, u32) {
        (self.arg::<Var<'b, T>>(bump), 0)
    }
    #[inline]
    fn collect(&mut self, _: u32, _: &Tape<T>) {}
}

macro_rules! duplicated_reverse {
    ($ann:ident, $kind:ident) => {
        #[diagnostic::do_not_recommend]
        impl<'a, D: ?Sized + AsRef<[f64]> + AsMut<[f64]>> ReverseArg<$kind, f64> for $ann<'a, D> {
            type Grad = ();
            #[inline]
            fn check(&self, pos: usize) -> AdResult<()> {
                check_shadow(pos, self.0.as_ref(), (*self.1).as_ref())
            }
            #[inline]
            fn input<'b>(
                &'b self,
                trace: &'b Trace<f64>,
                bump: &'b Bump,
            ) -> (<$kind as Kind>::Arg<'b, Var<'b, f64>>, u32) {
                let xs = bump.alloc_slice_fill_iter(self.0.as_ref().iter().map(|&v| trace.var(v)));
                let first = xs.first().and_then(Var::raw_index).unwrap_or(0);
                (xs, first)
            }
            #[inline]
            fn collect(&mut self, slot: u32, tape: &Tape<f64>) {
                let s = slot as usize;
                let dx = self.1.as_mut();
                let n = dx.len();
                for (d, a) in dx.iter_mut().zip(&tape.adj[s..s + n]) {
                    *d += *a;
                }
            }
        }
    };
}
duplicated_reverse!(Duplicated, Slice);
duplicated_reverse!(DuplicatedNoNeed, Slice);
duplicated_reverse!(Duplicated, SliceMut);
duplicated_reverse!(DuplicatedNoNeed, SliceMut);

#[diagnostic::do_not_recommend]
impl ReverseArg<Scalar, f64> for Active<f64> {
    type Grad = f64;
    #[inline]
    fn check(&self, _: usize) -> AdResult<()> {
        Ok(())
    }
    #[inline]
    fn input<'b>(&'b self, trace: &'b Trace<f64>, _: &'b Bump) -> (Var<'b, f64>, u32) {
        let x = trace.var(self.0);
        (x, x.raw_index().unwrap_or(0))
    }
    #[inline]
    fn collect(&mut self, slot: u32, tape: &Tape<f64>) -> f64 {
        tape.adjoint(slot)
    }
}

/// A tuple of annotated arguments (arity 1 to 4) in reverse mode.
#[diagnostic::on_unimplemented(
    message = "the arguments `{Self}` do not match the function's parameters `{Ks}` in reverse mode",
    label = "one annotated argument per parameter, in order",
    note = "reverse mode takes `Duplicated(&x, &mut dx)` or `Const(&x)` for `&[S]`, `Active(x)` or `Const(x)` for `S`, `Const(&c)` for `&C`"
)]
pub trait ReverseArgs<Ks: Kinds, T: Real> {
    /// The derivatives returned (one entry per argument; `()` for non-`Active` ones).
    type Grads;
    /// Where each argument's variables start on the tape.
    type Slots: Copy;
    /// Checks every argument.
    fn check(&self) -> AdResult<()>;
    /// The argument tuple the function sees.
    fn inputs<'b>(
        &'b self,
        trace: &'b Trace<T>,
        bump: &'b Bump,
    ) -> (Ks::Args<'b, Var<'b, T>>, Self::Slots);
    /// Accumulates every argument's adjoints after the sweep.
    fn collect(&mut self, slots: Self::Slots, tape: &Tape<T>) -> Self::Grads;
}

/// An annotated argument in forward mode, with number type `D`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a parameter of kind `{K}` in forward mode",
    label = "this annotation has no meaning in forward mode here",
    note = "forward mode takes `Duplicated(&x, &mut dx)` (with `dx` the tangent) or `Const(..)`; `Active` is for reverse mode, use `Duplicated` with a one-element slice or `derivative` instead"
)]
pub trait ForwardArg<K: Kind, D: Real> {
    /// Checks the argument at position `pos` (shadow length, aliasing).
    fn check(&self, pos: usize) -> AdResult<()>;
    /// The argument the function sees.
    fn input<'b>(&'b self, bump: &'b Bump) -> K::Arg<'b, D>;
}

#[diagnostic::do_not_recommend]
impl<K: Kind, D: Real, X> ForwardArg<K, D> for Const<X>
where
    Const<X>: ConstArg<K>,
{
    #[inline]
    fn check(&self, _: usize) -> AdResult<()> {
        Ok(())
    }
    #[inline]
    fn input<'b>(&'b self, bump: &'b Bump) -> K::Arg<'b, D> {
        self.arg::<D>(bump)
    }
}

macro_rules! duplicated_forward {
    ($ann:ident, $kind:ident) => {
        #[diagnostic::do_not_recommend]
        impl<'a, D: ?Sized + AsRef<[f64]> + AsMut<[f64]>> ForwardArg<$kind, Dual<f64>>
            for $ann<'a, D>
        {
            #[inline]
            fn check(&self, pos: usize) -> AdResult<()> {
                check_shadow(pos, self.0.as_ref(), (*self.1).as_ref())
            }
            #[inline]
            fn input<'b>(&'b self, bump: &'b Bump) -> <$kind as Kind>::Arg<'b, Dual<f64>> {
                let (x, dx) = (self.0.as_ref(), (*self.1).as_ref());
                bump.alloc_slice_fill_iter(x.iter().zip(dx).map(|(&v, &d)| Dual::new(v, d)))
            }
        }
    };
}
duplicated_forward!(Duplicated, Slice);
duplicated_forward!(DuplicatedNoNeed, Slice);
duplicated_forward!(Duplicated, SliceMut);
duplicated_forward!(DuplicatedNoNeed, SliceMut);

#[diagnostic::do_not_recommend]
impl<'a, D: ?Sized + AsRef<[f64]> + AsMut<[f64]>, const N: usize> ForwardArg<Slice, DualVec<f64, N>>
    for BatchDuplicated<'a, D, N>
{
    fn check(&self, pos: usize) -> AdResult<()> {
        for s in &self.1 {
            check_shadow(pos, self.0.as_ref(), (**s).as_ref())?;
        }
        Ok(())
    }
    #[inline]
    fn input<'b>(&'b self, bump: &'b Bump) -> &'b [DualVec<f64, N>] {
        let x = self.0.as_ref();
        bump.alloc_slice_fill_iter(x.iter().enumerate().map(|(i, &v)| {
            DualVec::with_tangents(v, core::array::from_fn(|k| (*self.1[k]).as_ref()[i]))
        }))
    }
}

/// A tuple of annotated arguments (arity 1 to 4) in forward mode.
#[diagnostic::on_unimplemented(
    message = "the arguments `{Self}` do not match the function's parameters `{Ks}` in forward mode",
    label = "one annotated argument per parameter, in order",
    note = "forward mode takes `Duplicated(&x, &mut dx)` (tangent `dx`) or `Const(&x)` for `&[S]`, `Const(x)` for `S`, `Const(&c)` for `&C`; `Active` is for reverse mode"
)]
pub trait ForwardArgs<Ks: Kinds, D: Real> {
    /// Checks every argument.
    fn check(&self) -> AdResult<()>;
    /// The argument tuple the function sees.
    fn inputs<'b>(&'b self, bump: &'b Bump) -> Ks::Args<'b, D>;
}

macro_rules! arg_tuples {
    ($($k:ident $a:ident $i:tt),+) => {
        impl<T: Real, $($k: Kind, $a: ReverseArg<$k, T>),+> ReverseArgs<($($k,)+), T> for ($($a,)+) {
            type Grads = ($($a::Grad,)+);
            type Slots = ($(arg_tuples!(@u32 $i),)+);
            #[inline]
            fn check(&self) -> AdResult<()> {
                $(self.$i.check($i)?;)+
                Ok(())
            }
            #[inline]
            fn inputs<'b>(
                &'b self,
                trace: &'b Trace<T>,
                bump: &'b Bump,
            ) -> (<($($k,)+) as Kinds>::Args<'b, Var<'b, T>>, Self::Slots) {
                let all = ($(self.$i.input(trace, bump),)+);
                (($(all.$i.0,)+), ($(all.$i.1,)+))
            }
            #[inline]
            fn collect(&mut self, slots: Self::Slots, tape: &Tape<T>) -> Self::Grads {
                ($(self.$i.collect(slots.$i, tape),)+)
            }
        }
        impl<D: Real, $($k: Kind, $a: ForwardArg<$k, D>),+> ForwardArgs<($($k,)+), D> for ($($a,)+) {
            #[inline]
            fn check(&self) -> AdResult<()> {
                $(self.$i.check($i)?;)+
                Ok(())
            }
            #[inline]
            fn inputs<'b>(&'b self, bump: &'b Bump) -> <($($k,)+) as Kinds>::Args<'b, D> {
                ($(self.$i.input(bump),)+)
            }
        }
    };
    (@u32 $i:tt) => { u32 };
}
arg_tuples!(K0 A0 0);
arg_tuples!(K0 A0 0, K1 A1 1);
arg_tuples!(K0 A0 0, K1 A1 1, K2 A2 2);
arg_tuples!(K0 A0 0, K1 A1 1, K2 A2 2, K3 A3 3);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_detects_shared_memory_only() {
        let buf = [0.0; 8];
        assert!(overlaps(&buf[0..4], &buf[3..6]));
        assert!(!overlaps(&buf[0..4], &buf[4..8]));
        assert!(!overlaps(&buf[0..0], &buf[0..4]));
        let err = check_shadow(2, &buf[0..4], &buf[2..6]).unwrap_err();
        assert_eq!(err.code(), "SHADE-E0103");
        assert_eq!(err, AdError::ShadowAliasesPrimal { arg: 2 });
    }
}
