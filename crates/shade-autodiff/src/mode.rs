//! Differentiation modes as zero-sized markers.

mod sealed {
    pub trait Sealed {}
}

/// A differentiation mode: one of [`Forward`], [`ForwardWithPrimal`], [`Reverse`],
/// [`ReverseWithPrimal`].
///
/// Sealed: the engine, not the user, decides what a mode means.
pub trait Mode: sealed::Sealed + Copy + Default + core::fmt::Debug + 'static {
    /// The runtime description of this mode.
    const KIND: ModeKind;
    /// Whether the primal result is returned along with the derivative.
    const WITH_PRIMAL: bool;
}

/// The direction of a mode, for runtime inspection and reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModeKind {
    /// Tangents flow from inputs to outputs (Jacobian-vector products).
    Forward,
    /// Adjoints flow from outputs to inputs (vector-Jacobian products).
    Reverse,
}

impl ModeKind {
    /// The mode's name as used in messages (`"forward"` or `"reverse"`).
    pub fn name(self) -> &'static str {
        match self {
            ModeKind::Forward => "forward",
            ModeKind::Reverse => "reverse",
        }
    }
}

macro_rules! modes {
    ($($(#[$doc:meta])* $name:ident => $kind:ident, $primal:literal;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name;
        impl sealed::Sealed for $name {}
        impl Mode for $name {
            const KIND: ModeKind = ModeKind::$kind;
            const WITH_PRIMAL: bool = $primal;
        }
    )*};
}

modes! {
    /// Forward mode: returns the tangent of the result only.
    Forward => Forward, false;
    /// Forward mode returning the primal result and its tangent.
    ForwardWithPrimal => Forward, true;
    /// Reverse mode: accumulates adjoints into shadows and returns those of `Active`
    /// arguments.
    Reverse => Reverse, false;
    /// Reverse mode that also returns the primal result.
    ReverseWithPrimal => Reverse, true;
}
