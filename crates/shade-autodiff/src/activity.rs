//! Activity annotations, shared by the scalar and the tensor layer.
//!
//! The names and meanings follow Enzyme. An annotation wraps an argument; the entry
//! points of each layer accept tuples of annotated arguments.

/// An argument that is not differentiated.
///
/// No shadow exists for it and no tape entries are recorded for work that depends on
/// constants alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Const<T>(pub T);

/// A by-value scalar argument whose derivative is returned.
///
/// In reverse mode the entry point returns `∂f/∂x · seed` for every `Active` argument.
/// `Active` makes no sense in forward mode (use [`Duplicated`] with a tangent there).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Active<T>(pub T);

/// A buffer argument with a caller-owned shadow of the same shape.
///
/// Reverse mode accumulates into the shadow (`dx += ∂f/∂x · seed`): calling twice
/// doubles it, so zero it first when you want a fresh gradient. Forward mode reads the
/// shadow as the tangent (direction) of the argument.
#[derive(Debug)]
pub struct Duplicated<'a, T: ?Sized>(pub &'a T, pub &'a mut T);

/// As [`Duplicated`], for a result whose primal value the caller does not need.
///
/// The engine may skip writing the primal output; the shadow is treated exactly as in
/// [`Duplicated`].
#[derive(Debug)]
pub struct DuplicatedNoNeed<'a, T: ?Sized>(pub &'a T, pub &'a mut T);

/// A buffer argument with `N` shadows, differentiated in one pass.
///
/// Forward mode propagates `N` tangents at once (one column of a Jacobian each);
/// reverse mode accumulates `N` seeds' adjoints, one into each shadow.
#[derive(Debug)]
pub struct BatchDuplicated<'a, T: ?Sized, const N: usize>(pub &'a T, pub [&'a mut T; N]);

impl<'a, T: ?Sized> Duplicated<'a, T> {
    /// Annotates `primal` with its `shadow`.
    pub fn new(primal: &'a T, shadow: &'a mut T) -> Self {
        Duplicated(primal, shadow)
    }
}

impl<'a, T: ?Sized> DuplicatedNoNeed<'a, T> {
    /// Annotates `primal` with its `shadow`.
    pub fn new(primal: &'a T, shadow: &'a mut T) -> Self {
        DuplicatedNoNeed(primal, shadow)
    }
}
