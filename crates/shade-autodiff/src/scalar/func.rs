//! Functions as values: the traits [`ScalarFn`], [`VectorFn`] and [`InPlaceFn`], the
//! parameter kinds they are described by, and the macro [`shade_fn!`](crate::shade_fn)
//! that makes a zero-sized function value from a generic `fn`.
//!
//! Rust closures cannot be generic, so a differentiable function is a value whose
//! *method* is generic over the number type. Each parameter has a [`Kind`]: a slice of
//! numbers ([`Slice`], `&[S]`), one number ([`Scalar`], `S`), or a constant of any type
//! ([`Constant<C>`], `&C`). The kinds decide which activities an argument may carry.

use super::real::Real;
use core::marker::PhantomData;

/// The kind of one parameter of a differentiable function.
pub trait Kind {
    /// The type the function sees for number type `S`.
    type Arg<'b, S: Real + 'b>;
}

/// A parameter `&[S]`: a slice of numbers (`Duplicated` or `Const` argument).
#[derive(Clone, Copy, Debug, Default)]
pub struct Slice;

/// A parameter `&mut [S]` after the first: scratch numbers the function may write (a
/// writable cache). It takes `Const(&buf)` (the function gets a scratch copy of `buf`
/// in its number type; `buf` itself is never written) or, in reverse and forward mode,
/// `Duplicated(&buf, &mut dbuf)` (the derivative with respect to the scratch's initial
/// contents accumulates into `dbuf`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SliceMut;

/// A parameter `S`: one number (`Active` or `Const` argument).
#[derive(Clone, Copy, Debug, Default)]
pub struct Scalar;

/// A parameter `&C`: a constant of any type, passed through untouched (`Const`).
pub struct Constant<C: ?Sized + 'static>(PhantomData<fn() -> Box<C>>);

impl<C: ?Sized + 'static> core::fmt::Debug for Constant<C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Constant")
    }
}

impl Kind for Slice {
    type Arg<'b, S: Real + 'b> = &'b [S];
}
impl Kind for SliceMut {
    type Arg<'b, S: Real + 'b> = &'b mut [S];
}
impl Kind for Scalar {
    type Arg<'b, S: Real + 'b> = S;
}
impl<C: ?Sized + 'static> Kind for Constant<C> {
    type Arg<'b, S: Real + 'b> = &'b C;
}

/// The parameter kinds of a function, as a tuple of [`Kind`]s (arity 0 to 4).
pub trait Kinds {
    /// The argument tuple the function sees for number type `S`.
    type Args<'b, S: Real + 'b>;
    /// The first parameter's kind (`()` for no parameters).
    type Head;
    /// The other parameters' kinds.
    type Tail: Kinds;
    /// The number of parameters.
    const ARITY: usize;
}

/// Builds the argument tuple from the first argument and the rest.
pub trait Join<H: Kind>: Kinds<Head = H> {
    /// `(head, rest.0, rest.1, ...)`.
    fn join<'b, S: Real + 'b>(
        head: H::Arg<'b, S>,
        rest: <Self::Tail as Kinds>::Args<'b, S>,
    ) -> Self::Args<'b, S>;
}

impl Kinds for () {
    type Args<'b, S: Real + 'b> = ();
    type Head = ();
    type Tail = ();
    const ARITY: usize = 0;
}

macro_rules! kinds_tuple {
    ($n:literal; $k0:ident $a0:ident $(, $k:ident $a:ident)*) => {
        impl<$k0: Kind $(, $k: Kind)*> Kinds for ($k0, $($k,)*) {
            type Args<'b, S: Real + 'b> = ($k0::Arg<'b, S>, $($k::Arg<'b, S>,)*);
            type Head = $k0;
            type Tail = ($($k,)*);
            const ARITY: usize = $n;
        }
        impl<$k0: Kind $(, $k: Kind)*> Join<$k0> for ($k0, $($k,)*) {
            #[inline(always)]
            fn join<'b, S: Real + 'b>(
                head: $k0::Arg<'b, S>,
                rest: <Self::Tail as Kinds>::Args<'b, S>,
            ) -> Self::Args<'b, S> {
                #[allow(unused_variables, clippy::unused_unit)]
                let ($($a,)*) = rest;
                (head, $($a,)*)
            }
        }
    };
}
kinds_tuple!(1; K0 a0);
kinds_tuple!(2; K0 a0, K1 a1);
kinds_tuple!(3; K0 a0, K1 a1, K2 a2);
kinds_tuple!(4; K0 a0, K1 a1, K2 a2, K3 a3);

/// A differentiable function returning one number: `fn f<S: Real>(args...) -> S`.
///
/// Make one with [`shade_fn!`](crate::shade_fn); implement it by hand only for function
/// objects with state.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a differentiable function value",
    label = "expected a function value made by `shade_fn!`",
    note = "wrap a generic function with its parameter list, `S` standing for the number type: `shade_fn!(f(&[S], &[f64]))`"
)]
pub trait ScalarFn {
    /// The parameters' kinds.
    type Kinds: Kinds;
    /// Evaluates the function with number type `S`.
    fn call<'b, S: Real + 'b>(&self, args: <Self::Kinds as Kinds>::Args<'b, S>) -> S;
}

/// A differentiable function returning a vector: `fn f<S: Real>(args...) -> Vec<S>`.
///
/// The one-argument form of a vector-valued function: its output length is the length
/// it returns, so the Jacobian operators ([`jacobian_forward`](crate::scalar::jacobian_forward),
/// ...) infer it (each evaluation's length is checked against the first one's,
/// [`AdError::OutputLength`](crate::AdError::OutputLength)). Each evaluation allocates
/// its result; the in-place form [`InPlaceFn`] is the allocation-free one.
///
/// Make one with [`shade_fn!`](crate::shade_fn) by writing `-> Vec<S>` after the
/// parameters: `shade_fn!(f(&[S], &[f64]) -> Vec<S>)`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a differentiable function value returning a vector",
    label = "expected a function value made by `shade_fn!(f(&[S], ...) -> Vec<S>)`",
    note = "a vector-valued function returns `Vec<S>`, written after its parameters: `shade_fn!(f(&[S]) -> Vec<S>)`; an in-place one takes `&mut [S]` first and goes to the `*_inplace` operators"
)]
pub trait VectorFn {
    /// The parameters' kinds.
    type Kinds: Kinds;
    /// Evaluates the function with number type `S`.
    fn call<'b, S: Real + 'b>(&self, args: <Self::Kinds as Kinds>::Args<'b, S>) -> Vec<S>;
}

/// A differentiable in-place function `fn f<S: Real>(y: &mut [S], args...)` writing its
/// outputs into `y`.
///
/// Make one with [`shade_fn!`](crate::shade_fn) by writing `&mut [S]` first.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a differentiable in-place function value",
    label = "expected a function value made by `shade_fn!(f(&mut [S], ...))`",
    note = "in-place functions write their outputs into a first parameter `&mut [S]`: `shade_fn!(f(&mut [S], &[S]))`"
)]
pub trait InPlaceFn {
    /// The kinds of the parameters after `y`.
    type Kinds: Kinds;
    /// Evaluates the function with number type `S`, writing the outputs into `y`.
    fn call<'b, S: Real + 'b>(&self, y: &mut [S], args: <Self::Kinds as Kinds>::Args<'b, S>);
}

/// Makes a zero-sized differentiable function value from a generic function.
///
/// Write the function's parameter types with `S` for the number type: `&[S]` (a slice of
/// numbers), `S` (one number), `&[S]` after a leading `&mut [S]` (an in-place function
/// writing into the first parameter), `&mut [S]` after the first parameter (scratch the
/// function may write, [`SliceMut`]), or `&C` for a constant of any type `C` without
/// lifetime parameters.
///
/// - `shade_fn!(f(&[S], &[f64]))` is an expression: a value implementing
///   [`ScalarFn`] (or [`InPlaceFn`] when the first parameter is `&mut [S]`).
/// - `shade_fn!(f(&[S], &[f64]) -> Vec<S>)`: a value implementing [`VectorFn`], for a
///   function returning its outputs as a `Vec<S>` (the output length is inferred).
/// - `shade_fn!(pub Name = f(&[S], &[f64]));` (or `... -> Vec<S>);`) is an item: a unit
///   struct `Name`.
///
/// ```
/// use shade_autodiff::scalar::{Real, gradient, shade_fn};
/// use shade_autodiff::Const;
///
/// fn rosenbrock<S: Real>(x: &[S], p: &[f64]) -> S {
///     let (a, b) = (p[0], p[1]);
///     (-x[0] + a).powi(2) + (x[1] - x[0] * x[0]).powi(2) * b
/// }
///
/// let g = gradient(shade_fn!(rosenbrock(&[S], &[f64])), &[1.5, 2.0], (Const(&[1.0, 100.0]),))?;
/// assert_eq!(g, [2.0 * 0.5 + 100.0 * 2.0 * (2.0 - 2.25) * (-3.0), 200.0 * (2.0 - 2.25)]);
/// # Ok::<(), shade_autodiff::AdError>(())
/// ```
///
/// A vector-valued function, whose Jacobian needs no output length:
///
/// ```
/// use shade_autodiff::scalar::{Real, jacobian_forward, shade_fn};
///
/// fn polar<S: Real>(x: &[S]) -> Vec<S> {
///     vec![x[0] * x[1].cos(), x[0] * x[1].sin()]
/// }
/// let (y, j) = jacobian_forward(shade_fn!(polar(&[S]) -> Vec<S>), &[2.0, 0.0], ())?;
/// assert_eq!((y, j), (vec![2.0, 0.0], vec![1.0, 0.0, 0.0, 2.0]));
/// # Ok::<(), shade_autodiff::AdError>(())
/// ```
#[macro_export]
macro_rules! shade_fn {
    ($vis:vis $name:ident = $($f:ident)::+ ( $($sig:tt)* ) -> Vec<S>) => {
        $crate::__shade_fn_munch!(@vector [$vis] $name [$($f)::+] [] [a0 a1 a2 a3 a4] []
            $($sig)*);
    };
    ($($f:ident)::+ ( $($sig:tt)* ) -> Vec<S>) => {{
        $crate::__shade_fn_munch!(@vector [] __ShadeFn [$($f)::+] [] [a0 a1 a2 a3 a4] []
            $($sig)*);
        __ShadeFn
    }};
    ($vis:vis $name:ident = $($f:ident)::+ ( $($sig:tt)* )) => {
        $crate::__shade_fn_item!([$vis] $name [$($f)::+] $($sig)*);
    };
    ($($f:ident)::+ ( $($sig:tt)* )) => {{
        $crate::__shade_fn_item!([] __ShadeFn [$($f)::+] $($sig)*);
        __ShadeFn
    }};
}

#[doc(hidden)]
#[macro_export]
macro_rules! __shade_fn_item {
    ([$($vis:tt)*] $name:ident [$($f:tt)*] &mut [S] $(, $($rest:tt)*)?) => {
        $crate::__shade_fn_munch!(@inplace [$($vis)*] $name [$($f)*] [] [a0 a1 a2 a3 a4] []
            $($($rest)*)?);
    };
    ([$($vis:tt)*] $name:ident [$($f:tt)*] $($sig:tt)*) => {
        $crate::__shade_fn_munch!(@scalar [$($vis)*] $name [$($f)*] [] [a0 a1 a2 a3 a4] []
            $($sig)*);
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __shade_fn_munch {
    (@$m:ident $v:tt $n:ident $f:tt [$($k:ty,)*] [$id:ident $($ids:ident)*] [$($u:ident)*]
        & [S] $(, $($rest:tt)*)?) => {
        $crate::__shade_fn_munch!(@$m $v $n $f [$($k,)* $crate::scalar::Slice,] [$($ids)*]
            [$($u)* $id] $($($rest)*)?);
    };
    (@$m:ident $v:tt $n:ident $f:tt [$($k:ty,)*] [$id:ident $($ids:ident)*] [$($u:ident)*]
        &mut [S] $(, $($rest:tt)*)?) => {
        $crate::__shade_fn_munch!(@$m $v $n $f [$($k,)* $crate::scalar::SliceMut,] [$($ids)*]
            [$($u)* $id] $($($rest)*)?);
    };
    (@$m:ident $v:tt $n:ident $f:tt [$($k:ty,)*] [$id:ident $($ids:ident)*] [$($u:ident)*]
        S $(, $($rest:tt)*)?) => {
        $crate::__shade_fn_munch!(@$m $v $n $f [$($k,)* $crate::scalar::Scalar,] [$($ids)*]
            [$($u)* $id] $($($rest)*)?);
    };
    (@$m:ident $v:tt $n:ident $f:tt [$($k:ty,)*] [$id:ident $($ids:ident)*] [$($u:ident)*]
        & $t:ty $(, $($rest:tt)*)?) => {
        $crate::__shade_fn_munch!(@$m $v $n $f [$($k,)* $crate::scalar::Constant<$t>,] [$($ids)*]
            [$($u)* $id] $($($rest)*)?);
    };
    (@scalar [$($vis:tt)*] $name:ident [$($f:tt)*] [$($k:ty,)*] $ids:tt [$($u:ident)*]) => {
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, Default)]
        $($vis)* struct $name;
        impl $crate::scalar::ScalarFn for $name {
            type Kinds = ($($k,)*);
            #[inline(always)]
            fn call<'b, S: $crate::scalar::Real + 'b>(
                &self,
                ($($u,)*): <Self::Kinds as $crate::scalar::Kinds>::Args<'b, S>,
            ) -> S {
                $($f)*($($u),*)
            }
        }
    };
    (@vector [$($vis:tt)*] $name:ident [$($f:tt)*] [$($k:ty,)*] $ids:tt [$($u:ident)*]) => {
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, Default)]
        $($vis)* struct $name;
        impl $crate::scalar::VectorFn for $name {
            type Kinds = ($($k,)*);
            #[inline(always)]
            fn call<'b, S: $crate::scalar::Real + 'b>(
                &self,
                ($($u,)*): <Self::Kinds as $crate::scalar::Kinds>::Args<'b, S>,
            ) -> ::std::vec::Vec<S> {
                $($f)*($($u),*)
            }
        }
    };
    (@inplace [$($vis:tt)*] $name:ident [$($f:tt)*] [$($k:ty,)*] $ids:tt [$($u:ident)*]) => {
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, Default)]
        $($vis)* struct $name;
        impl $crate::scalar::InPlaceFn for $name {
            type Kinds = ($($k,)*);
            #[inline(always)]
            fn call<'b, S: $crate::scalar::Real + 'b>(
                &self,
                y: &mut [S],
                ($($u,)*): <Self::Kinds as $crate::scalar::Kinds>::Args<'b, S>,
            ) {
                $($f)*(y, $($u),*)
            }
        }
    };
}
