//! Contexts: the extra arguments of a differentiated function that are not
//! differentiated, [`Constant`] (read only), [`Cache`] (scratch the function may write)
//! and [`ConstantOrCache`] (a value passed as it is, constants and caches mixed), as in
//! DifferentiationInterface.
//!
//! A function `f(x, c1, c2, ...)` is differentiated with respect to `x` only; the
//! contexts are passed as a tuple `(Constant(&p), Cache(&buf))` at preparation and at
//! every call. How each backend hands them to the engine is part of its
//! [`Report`](crate::Report):
//!
//! - `AutoShade`: `Constant(c)` becomes the core's `Const(c)` (no copy, no closure);
//!   `Cache(buf)` becomes `Duplicated(buf, scratch)` in reverse-mode calls of the core's
//!   `autodiff` entry point, with a scratch shadow made at preparation (Enzyme.jl-in-DI
//!   semantics), and `Const(buf)` where the core's prepared operators take constants
//!   only. The two are exact: the cache's derivative is never read. `ConstantOrCache(v)`
//!   becomes `Const(v)`.
//! - generic backends evaluate the function's own instantiations (`f64`, dual numbers)
//!   with the contexts converted to the number type (a copy into an arena for slices).
//!
//! A cache reaches the function in the function's own number type: for a `&mut [S]`
//! parameter the engine hands it a scratch slice of `S` of the cache's length, which
//! starts as a copy of the buffer and which the function may overwrite (its contents
//! after the call are unspecified, as in DifferentiationInterface: the buffer passed
//! gives the length and the initial values, and is itself never written). A `&[S]`
//! parameter may take a cache too (read only, as before).
//!
//! ```
//! use shade_interface::{AutoFiniteDiff, AutoShade, Cache, Constant, Real, gradient, shade_fn};
//!
//! /// `Σ sin(xᵢ wᵢ)`, through a scratch buffer the function fills.
//! fn f<S: Real>(x: &[S], scratch: &mut [S], w: &[f64]) -> S {
//!     for (s, (&xi, &wi)) in scratch.iter_mut().zip(x.iter().zip(w)) {
//!         *s = xi * wi;
//!     }
//!     scratch.iter().map(|s| s.sin()).sum()
//! }
//! let f = shade_fn!(f(&[S], &mut [S], &[f64]));
//! let (x, w, mut buf) = ([0.5, 1.0], [2.0, -1.0], [0.0; 2]);
//! let g = gradient(f, &AutoShade::REVERSE, &x, (Cache(&mut buf), Constant(&w)))?;
//! assert!((g[0] - 2.0 * 1f64.cos()).abs() < 1e-14 && (g[1] + 1f64.cos()).abs() < 1e-14);
//! let fd = gradient(f, &AutoFiniteDiff::CENTRAL, &x, (Cache(&mut buf), Constant(&w)))?;
//! assert!(g.iter().zip(&fd).all(|(a, b)| (a - b).abs() < 1e-8));
//! # Ok::<(), shade_interface::InterfaceError>(())
//! ```

use bumpalo::Bump;
use core::borrow::Borrow;
use shade_autodiff::scalar::{ConstArg, Constant as ConstantKind, Real, Scalar, Slice, SliceMut};
use shade_autodiff::{Const, Duplicated};

/// A read-only context: a constant argument (`&[f64]`, `f64`, or `&C` of any type).
///
/// ```
/// use shade_interface::{AutoShade, Constant, gradient};
/// use shade_interface::{Real, shade_fn};
///
/// fn f<S: Real>(x: &[S], w: &[f64]) -> S {
///     x[0] * w[0] + x[1] * w[1]
/// }
/// let g = gradient(shade_fn!(f(&[S], &[f64])), &AutoShade::REVERSE, &[1.0, 2.0], (Constant(&[3.0, 4.0]),))?;
/// assert_eq!(g, [3.0, 4.0]);
/// # Ok::<(), shade_interface::InterfaceError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Constant<T>(pub T);

/// A scratch context: a slice argument the function may write, whose derivative is not
/// wanted.
///
/// Pass `Cache(&mut buf)` (or `Cache(&buf)`) for a `&mut [S]` parameter (or a `&[S]`
/// one): the function gets a scratch slice of its number type, of `buf`'s length,
/// starting as a copy of `buf` (see the [module](self) example). Its length is fixed at
/// preparation and checked at every call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cache<T>(pub T);

/// A context passed as it is: a value that mixes constants and caches
/// (DifferentiationInterface's `ConstantOrCache`).
///
/// For a `&C` parameter the function gets the value itself, never converted or copied;
/// it may update caches inside it through interior mutability (`Cell`, `RefCell`), and
/// backends make no assumption that it is unchanged between evaluations. For a `&[S]` /
/// `&mut [S]` parameter it is converted (or copied to scratch) as a `Constant` / `Cache`
/// would be.
///
/// ```
/// use core::cell::Cell;
/// use shade_interface::{AutoShade, ConstantOrCache, Real, gradient, shade_fn};
///
/// /// Constants (`scale`) and a cache (`calls`, counted by the function) in one value.
/// struct Work { scale: f64, calls: Cell<usize> }
/// fn f<S: Real>(x: &[S], w: &Work) -> S {
///     w.calls.set(w.calls.get() + 1);
///     x[0] * x[1] * w.scale
/// }
/// let w = Work { scale: 3.0, calls: Cell::new(0) };
/// let g = gradient(shade_fn!(f(&[S], &Work)), &AutoShade::REVERSE, &[1.0, 2.0], (ConstantOrCache(&w),))?;
/// assert_eq!(g, [6.0, 3.0]);
/// assert!(w.calls.get() >= 1);
/// # Ok::<(), shade_interface::InterfaceError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConstantOrCache<T>(pub T);

/// How a context reaches the engine, as reported by [`Report`](crate::Report).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ContextPassing {
    /// A `Constant` passed as the core's `Const` activity.
    ConstantAsConst,
    /// A `Cache` passed as `Duplicated` with a scratch shadow of this many bytes.
    CacheAsDuplicated {
        /// Size of the scratch shadow made at preparation.
        scratch_bytes: usize,
    },
    /// A `Cache` passed as the core's `Const` (its derivative is never read).
    CacheAsConst,
    /// A `Constant` converted to the backend's number type (generic path).
    ConstantConverted,
    /// A `Cache` converted to the backend's number type (generic path).
    CacheConverted,
    /// A `ConstantOrCache` passed as the core's `Const`, untouched.
    ConstantOrCacheAsConst,
    /// A `ConstantOrCache` passed untouched to a generic backend (slices converted).
    ConstantOrCacheUntouched,
}

impl core::fmt::Display for ContextPassing {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ContextPassing::ConstantAsConst => f.write_str("Constant -> Const"),
            ContextPassing::CacheAsDuplicated { scratch_bytes } => {
                write!(f, "Cache -> Duplicated(scratch, {scratch_bytes} bytes)")
            }
            ContextPassing::CacheAsConst => f.write_str("Cache -> Const"),
            ContextPassing::ConstantConverted => f.write_str("Constant -> number type (generic)"),
            ContextPassing::CacheConverted => f.write_str("Cache -> number type (generic)"),
            ContextPassing::ConstantOrCacheAsConst => f.write_str("ConstantOrCache -> Const"),
            ContextPassing::ConstantOrCacheUntouched => {
                f.write_str("ConstantOrCache -> untouched (generic)")
            }
        }
    }
}

/// Whether a context is a [`Constant`], a [`Cache`] or a [`ConstantOrCache`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ContextKind {
    /// Read only.
    Constant,
    /// Scratch, with its length.
    Cache(usize),
    /// Passed as it is.
    ConstantOrCache,
}

/// One context: [`Constant`], [`Cache`] or [`ConstantOrCache`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a context",
    label = "wrap it: `Constant(..)` (read only), `Cache(..)` (scratch) or `ConstantOrCache(..)` (as it is)"
)]
pub trait Context {
    /// Whether it is a [`Cache`] (whose length is checked at every call).
    const IS_CACHE: bool;
    /// What it is (and a cache's length).
    fn kind(&self) -> ContextKind;
}

impl<T> Context for Constant<T> {
    const IS_CACHE: bool = false;
    fn kind(&self) -> ContextKind {
        ContextKind::Constant
    }
}

impl<T> Context for ConstantOrCache<T> {
    const IS_CACHE: bool = false;
    fn kind(&self) -> ContextKind {
        ContextKind::ConstantOrCache
    }
}

impl<T: AsRef<[f64]>> Context for Cache<T> {
    const IS_CACHE: bool = true;
    fn kind(&self) -> ContextKind {
        ContextKind::Cache(self.0.as_ref().len())
    }
}

/// Most contexts one function takes.
pub const MAX_CONTEXTS: usize = 3;

/// A tuple of zero to three contexts.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tuple of contexts",
    label = "pass the extra arguments as a tuple of `Constant(..)` / `Cache(..)`",
    note = "e.g. `(Constant(&p),)` for one, `(Constant(&p), Cache(&buf))` for two, `()` for none"
)]
pub trait Contexts {
    /// Number of contexts.
    const COUNT: usize;
    /// Whether any context is a [`Cache`].
    const CACHES: bool;
    /// Each context's kind, in order (unused entries `None`).
    fn kinds(&self) -> [Option<ContextKind>; MAX_CONTEXTS];
}

impl Contexts for () {
    const COUNT: usize = 0;
    const CACHES: bool = false;
    fn kinds(&self) -> [Option<ContextKind>; MAX_CONTEXTS] {
        [None; MAX_CONTEXTS]
    }
}

macro_rules! contexts_tuple {
    ($n:literal; $($c:ident $i:tt),+) => {
        #[diagnostic::do_not_recommend]
        impl<$($c: Context),+> Contexts for ($($c,)+) {
            const COUNT: usize = $n;
            const CACHES: bool = false $(|| $c::IS_CACHE)+;
            fn kinds(&self) -> [Option<ContextKind>; MAX_CONTEXTS] {
                let mut k = [None; MAX_CONTEXTS];
                $(k[$i] = Some(self.$i.kind());)+
                k
            }
        }
    };
}
contexts_tuple!(1; C0 0);
contexts_tuple!(2; C0 0, C1 1);
contexts_tuple!(3; C0 0, C1 1, C2 2);

/// The contexts' shape as fixed at preparation: checked at every call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ContextShape {
    pub(crate) kinds: [Option<ContextKind>; MAX_CONTEXTS],
}

const CONTEXT_NAMES: [&str; MAX_CONTEXTS] = ["context 0", "context 1", "context 2"];

impl ContextShape {
    pub(crate) fn of<C: Contexts>(c: &C) -> Self {
        ContextShape { kinds: c.kinds() }
    }

    /// Whether any context is a [`Cache`].
    pub(crate) fn has_cache(&self) -> bool {
        self.kinds
            .iter()
            .flatten()
            .any(|k| matches!(k, ContextKind::Cache(_)))
    }

    /// Total scratch length of the caches.
    pub(crate) fn cache_len(&self) -> usize {
        self.kinds
            .iter()
            .map(|k| match k {
                Some(ContextKind::Cache(n)) => *n,
                _ => 0,
            })
            .sum()
    }

    /// Checks that `c` has the shape fixed at preparation.
    #[inline]
    pub(crate) fn check<C: Contexts>(
        &self,
        operator: &'static str,
        c: &C,
    ) -> crate::InterfaceResult<()> {
        if !C::CACHES {
            // Constants have no shape to check; the types fixed the rest.
            return Ok(());
        }
        let now = c.kinds();
        for (i, (a, b)) in self.kinds.iter().zip(now.iter()).enumerate() {
            if let (Some(ContextKind::Cache(e)), Some(ContextKind::Cache(f))) = (a, b)
                && e != f
            {
                return Err(crate::InterfaceError::len(
                    operator,
                    CONTEXT_NAMES[i],
                    *e,
                    *f,
                ));
            }
        }
        Ok(())
    }

    /// How each context reaches the engine, given the rule for caches and what
    /// constants and pass-through values become.
    pub(crate) fn passing(
        &self,
        cache: impl Fn(usize) -> ContextPassing,
        [constant, as_is]: [ContextPassing; 2],
    ) -> Vec<ContextPassing> {
        self.kinds
            .iter()
            .flatten()
            .map(|k| match k {
                ContextKind::Constant => constant,
                ContextKind::Cache(n) => cache(*n),
                ContextKind::ConstantOrCache => as_is,
            })
            .collect()
    }
}

// The core's `ConstArg`: contexts as constants for every number type (the generic path,
// and the core's prepared operators, which take constants only).

/// A `&C` parameter gets the value itself.
macro_rules! as_is {
    ($($ctx:ident),*) => {$(
        impl<C: ?Sized + 'static, D: ?Sized + Borrow<C>> ConstArg<ConstantKind<C>> for $ctx<&D> {
            #[inline]
            fn arg<'b, S: Real + 'b>(&'b self, _: &'b Bump) -> &'b C {
                self.0.borrow()
            }
        }
    )*};
}
as_is!(Constant, ConstantOrCache);

/// A `&[S]` (or `&mut [S]`) parameter gets a copy in the function's number type, in the
/// arena (a scratch copy that it may write, for `&mut [S]`).
macro_rules! converted {
    ($($ctx:ident [$($g:tt)*] $t:ty: $kind:ident -> $arg:ty;)*) => {$(
        impl<$($g)*> ConstArg<$kind> for $ctx<$t> {
            #[inline]
            fn arg<'b, S: Real + 'b>(&'b self, bump: &'b Bump) -> $arg {
                bump.alloc_slice_fill_iter(self.0.as_ref().iter().map(|&v| S::cst(v)))
            }
        }
    )*};
}
converted! {
    Constant [D: ?Sized + AsRef<[f64]>] &D: Slice -> &'b [S];
    Cache [T: AsRef<[f64]>] T: Slice -> &'b [S];
    Cache [T: AsRef<[f64]>] T: SliceMut -> &'b mut [S];
    ConstantOrCache [D: ?Sized + AsRef<[f64]>] &D: Slice -> &'b [S];
    ConstantOrCache [D: ?Sized + AsRef<[f64]>] &D: SliceMut -> &'b mut [S];
}

impl ConstArg<Scalar> for Constant<f64> {
    #[inline]
    fn arg<'b, S: Real + 'b>(&'b self, _: &'b Bump) -> S {
        S::cst(self.0)
    }
}

/// How one context becomes an annotated argument of the core's `autodiff` entry point
/// (the `AutoShade` path), for borrows of lifetime `'s`.
///
/// (A lifetime parameter rather than generic associated types, so that bounds quantified
/// over every `'s` do not demand `'static` contexts.)
pub trait ShadeContext<'s>: Context {
    /// The annotation in reverse mode: `Const` for a `Constant`, `Duplicated` (scratch
    /// shadow) for a `Cache`.
    type Rev;
    /// The annotation in forward mode (one tangent): the scratch shadow of a cache holds
    /// a zero tangent.
    type Fwd;
    /// The annotation in batched forward mode: `Const` for both.
    type Batch;
    /// Length of the scratch shadow this context needs.
    fn scratch_len(&self) -> usize;
    /// The reverse-mode annotation, `scratch` being this context's zeroed scratch.
    fn rev(&'s self, scratch: &'s mut [f64]) -> Self::Rev;
    /// The forward-mode annotation, `scratch` being this context's zeroed scratch.
    fn fwd(&'s self, scratch: &'s mut [f64]) -> Self::Fwd;
    /// The batched forward-mode annotation.
    fn batch(&'s self) -> Self::Batch;
}

/// `Constant` and `ConstantOrCache`: the core's `Const` in every mode, no scratch.
macro_rules! shade_context_as_const {
    ($($ctx:ident),*) => {$(
        impl<'s, T: Copy> ShadeContext<'s> for $ctx<T> {
            type Rev = Const<T>;
            type Fwd = Const<T>;
            type Batch = Const<T>;
            #[inline(always)]
            fn scratch_len(&self) -> usize {
                0
            }
            #[inline(always)]
            fn rev(&'s self, _: &'s mut [f64]) -> Const<T> {
                Const(self.0)
            }
            #[inline(always)]
            fn fwd(&'s self, _: &'s mut [f64]) -> Const<T> {
                Const(self.0)
            }
            #[inline(always)]
            fn batch(&'s self) -> Const<T> {
                Const(self.0)
            }
        }
    )*};
}
shade_context_as_const!(Constant, ConstantOrCache);

impl<'s, T: AsRef<[f64]>> ShadeContext<'s> for Cache<T> {
    type Rev = Duplicated<'s, [f64]>;
    type Fwd = Duplicated<'s, [f64]>;
    type Batch = Const<&'s [f64]>;
    #[inline(always)]
    fn scratch_len(&self) -> usize {
        self.0.as_ref().len()
    }
    #[inline(always)]
    fn rev(&'s self, scratch: &'s mut [f64]) -> Duplicated<'s, [f64]> {
        Duplicated(self.0.as_ref(), scratch)
    }
    #[inline(always)]
    fn fwd(&'s self, scratch: &'s mut [f64]) -> Duplicated<'s, [f64]> {
        Duplicated(self.0.as_ref(), scratch)
    }
    #[inline(always)]
    fn batch(&'s self) -> Const<&'s [f64]> {
        Const(self.0.as_ref())
    }
}
