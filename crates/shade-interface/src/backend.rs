//! Backend markers: plain values that pick the engine, each declaring its mode.
//!
//! - [`AutoShade`]: the native core, reverse or forward (`AutoShade<M>`, the mode a type).
//! - [`AutoFiniteDiff`]: forward or central differences, the always-available reference.
//! - `AutoNumDual` (feature `num-dual`): num-dual's dual and hyper-dual numbers.
//! - [`SecondOrder`]: an outer backend over an inner one, for Hessians and HVPs.
//! - [`AutoSparse`]: sparse Jacobians through an inner backend's pushforwards.
//!
//! The engines behind the markers live in `backends/`.

use crate::error::{InterfaceError, InterfaceResult};
use shade_autodiff::{Forward, Mode, ModeKind, Reverse};

/// The eight operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operator {
    /// `f'(x)` for a scalar input.
    Derivative,
    /// `f''(x)` for a scalar input.
    SecondDerivative,
    /// `∇f(x)` for a scalar output.
    Gradient,
    /// `J(x)`, `m × n`, row-major.
    Jacobian,
    /// `∇²f(x)`, `n × n`, row-major.
    Hessian,
    /// `J(x) dx` (JVP).
    Pushforward,
    /// `J(x)ᵀ dy` (VJP).
    Pullback,
    /// `∇²f(x) v`.
    Hvp,
}

impl Operator {
    /// Every operator, in the order of the published table.
    pub const ALL: [Operator; 8] = [
        Operator::Derivative,
        Operator::SecondDerivative,
        Operator::Gradient,
        Operator::Jacobian,
        Operator::Hessian,
        Operator::Pushforward,
        Operator::Pullback,
        Operator::Hvp,
    ];

    /// The operator's name as in the API (`"gradient"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Operator::Derivative => "derivative",
            Operator::SecondDerivative => "second_derivative",
            Operator::Gradient => "gradient",
            Operator::Jacobian => "jacobian",
            Operator::Hessian => "hessian",
            Operator::Pushforward => "pushforward",
            Operator::Pullback => "pullback",
            Operator::Hvp => "hvp",
        }
    }

    /// Whether the operator needs second derivatives.
    pub fn is_second_order(self) -> bool {
        matches!(
            self,
            Operator::SecondDerivative | Operator::Hessian | Operator::Hvp
        )
    }
}

/// The mode a backend declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModeSupport {
    /// Forward mode (tangents).
    Forward,
    /// Reverse mode (adjoints).
    Reverse,
    /// Either, chosen per operator.
    Either,
    /// Finite differences.
    Finite,
}

/// How a backend supports an operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Support {
    /// The native core is called directly.
    Native,
    /// A generic path evaluates the function's instantiations.
    Generic,
    /// Not supported.
    No,
}

impl Support {
    /// The word used in the published table.
    pub fn word(self) -> &'static str {
        match self {
            Support::Native => "native",
            Support::Generic => "generic",
            Support::No => "no",
        }
    }
}

/// A backend marker.
pub trait Backend: Copy + core::fmt::Debug {
    /// The name used in reports and errors, e.g. `AutoShade(reverse)`.
    fn name(&self) -> String;
    /// The mode it declares.
    fn mode(&self) -> ModeSupport;
    /// How it supports `op` on scalar-generic functions.
    fn supports(&self, op: Operator) -> Support;
    /// How it supports tensor programs (gradient, jacobian, pushforward, pullback).
    fn supports_tensor(&self) -> Support {
        Support::No
    }
    /// Checks the backend's settings (called at preparation).
    fn validate(&self) -> InterfaceResult<()> {
        Ok(())
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for shade_autodiff::Forward {}
    impl Sealed for shade_autodiff::Reverse {}
}

/// The modes of [`AutoShade`]: the core's markers [`Forward`] and [`Reverse`].
///
/// (The core's `ForwardWithPrimal` / `ReverseWithPrimal` say whether an entry point
/// returns the primal; every interface operator has a `value_and_*` variant for that.)
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a mode of `AutoShade`",
    label = "`AutoShade`'s mode is `Forward` or `Reverse`",
    note = "write `AutoShade::REVERSE` or `AutoShade::FORWARD` (the types `AutoShade<Reverse>` and `AutoShade<Forward>`); for the primal value use the operator's `value_and_*` variant"
)]
pub trait ShadeMode: Mode + sealed::Sealed {}

impl ShadeMode for Forward {}
impl ShadeMode for Reverse {}

/// The native backend: `shade-autodiff`, in the mode `M` ([`Reverse`] or [`Forward`]).
///
/// The mode is a type, so what a combination supports is known at compile time (a
/// [`SecondOrder`] backend is forward over reverse or it does not compile). Write
/// `AutoShade::REVERSE` (of type `AutoShade<Reverse>`, also spelled `AutoShade`) or
/// `AutoShade::FORWARD` (`AutoShade<Forward>`); `AutoShade { mode: Forward }` is the
/// same value.
///
/// Every operator calls the core's entry point with the user's function value and the
/// contexts as activities: nothing is wrapped in a closure (see
/// [`Report`](crate::Report)).
///
/// ```
/// use shade_autodiff::{Forward, Reverse};
/// use shade_interface::{AutoShade, Backend};
///
/// let r: AutoShade = AutoShade::REVERSE;
/// let f: AutoShade<Forward> = AutoShade::FORWARD;
/// assert_eq!((r.name(), f.name()), ("AutoShade(reverse)".to_string(), "AutoShade(forward)".to_string()));
/// assert_eq!(AutoShade { mode: Reverse }, r);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AutoShade<M: ShadeMode = Reverse> {
    /// The mode for operators that have a choice (gradient, jacobian, one-argument
    /// pushforward and pullback, tensor programs).
    pub mode: M,
}

impl AutoShade<Reverse> {
    /// Reverse mode.
    pub const REVERSE: AutoShade<Reverse> = AutoShade { mode: Reverse };
}

impl AutoShade<Forward> {
    /// Forward mode.
    pub const FORWARD: AutoShade<Forward> = AutoShade { mode: Forward };
}

impl<M: ShadeMode> AutoShade<M> {
    /// The mode's direction, for reports.
    pub const KIND: ModeKind = M::KIND;
}

impl<M: ShadeMode> Backend for AutoShade<M> {
    fn name(&self) -> String {
        format!("AutoShade({})", M::KIND.name())
    }
    fn mode(&self) -> ModeSupport {
        match M::KIND {
            ModeKind::Forward => ModeSupport::Forward,
            ModeKind::Reverse => ModeSupport::Reverse,
        }
    }
    fn supports(&self, _: Operator) -> Support {
        Support::Native
    }
    fn supports_tensor(&self) -> Support {
        Support::Native
    }
}

/// The difference formula of [`AutoFiniteDiff`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum FdKind {
    /// `(f(x + h) - f(x)) / h`, default step `√ε · max(|x|, 1)`.
    Forward,
    /// `(f(x + h) - f(x - h)) / 2h`, default step `∛ε · max(|x|, 1)`.
    #[default]
    Central,
}

/// Finite differences: always available, the reference of the test harness.
///
/// First derivatives use [`FdKind`]; second derivatives always use the symmetric
/// four-point formula with step `ε^¼ · max(|x|, 1)` (as FiniteDiff.jl). `|x|` is the
/// largest magnitude of the input. The step is `rel_step · max(|x|, 1) + abs_step`.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct AutoFiniteDiff {
    /// The formula for first derivatives.
    pub kind: FdKind,
    /// Relative step; `None` for the default of `kind`.
    pub rel_step: Option<f64>,
    /// Absolute step added to the relative one.
    pub abs_step: f64,
}

impl AutoFiniteDiff {
    /// Central differences with default steps.
    pub const CENTRAL: AutoFiniteDiff = AutoFiniteDiff {
        kind: FdKind::Central,
        rel_step: None,
        abs_step: 0.0,
    };
    /// Forward differences with default steps.
    pub const FORWARD: AutoFiniteDiff = AutoFiniteDiff {
        kind: FdKind::Forward,
        rel_step: None,
        abs_step: 0.0,
    };

    /// The relative step for first derivatives.
    pub fn first_rel_step(&self) -> f64 {
        self.first_rel_step_for(f64::EPSILON)
    }

    /// The relative step for first derivatives of numbers with machine epsilon `eps`
    /// (the default of `kind` scaled to the precision: `f32` tensor programs step
    /// further than `f64` ones).
    pub fn first_rel_step_for(&self, eps: f64) -> f64 {
        self.rel_step.unwrap_or(match self.kind {
            FdKind::Forward => eps.sqrt(),
            FdKind::Central => eps.cbrt(),
        })
    }

    /// The relative step for second derivatives.
    pub fn second_rel_step(&self) -> f64 {
        self.rel_step.unwrap_or(f64::EPSILON.powf(0.25))
    }
}

impl Backend for AutoFiniteDiff {
    fn name(&self) -> String {
        match self.kind {
            FdKind::Forward => "AutoFiniteDiff(forward)".into(),
            FdKind::Central => "AutoFiniteDiff(central)".into(),
        }
    }
    fn mode(&self) -> ModeSupport {
        ModeSupport::Finite
    }
    fn supports(&self, _: Operator) -> Support {
        Support::Generic
    }
    fn supports_tensor(&self) -> Support {
        Support::Generic
    }
    fn validate(&self) -> InterfaceResult<()> {
        if let Some(r) = self.rel_step
            && !(r.is_finite() && r > 0.0)
        {
            return Err(InterfaceError::InvalidSetting {
                backend: "AutoFiniteDiff",
                setting: "rel_step",
                value: r,
                what: "a relative step must be positive and finite",
            });
        }
        if !(self.abs_step.is_finite() && self.abs_step >= 0.0) {
            return Err(InterfaceError::InvalidSetting {
                backend: "AutoFiniteDiff",
                setting: "abs_step",
                value: self.abs_step,
                what: "an absolute step must be non-negative and finite",
            });
        }
        Ok(())
    }
}

/// Second-order backend: `outer` differentiates `inner`'s gradient.
///
/// Supported for [`hvp`](crate::hvp) and [`hessian`](crate::hessian):
/// `SecondOrder { outer: AutoShade::FORWARD, inner: AutoShade::REVERSE }` is
/// forward-over-reverse in one native pass (the core's `Tape<Dual<f64>>`), and
/// `SecondOrder { outer: AutoFiniteDiff, inner }` differences `inner`'s gradients (the
/// generic fallback). Other combinations (reverse over anything, forward over forward)
/// do not implement the operators: a compile error with our own message.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct SecondOrder<O, I> {
    /// The backend of the outer differentiation (of the gradient).
    pub outer: O,
    /// The backend of the inner gradient.
    pub inner: I,
}

impl<O: Backend, I: Backend> Backend for SecondOrder<O, I> {
    fn name(&self) -> String {
        format!("SecondOrder({}, {})", self.outer.name(), self.inner.name())
    }
    fn mode(&self) -> ModeSupport {
        self.outer.mode()
    }
    fn supports(&self, op: Operator) -> Support {
        match op {
            Operator::Hessian | Operator::Hvp => {
                match (self.outer.mode(), self.inner.supports(Operator::Gradient)) {
                    (ModeSupport::Forward, Support::Native)
                        if self.inner.mode() == ModeSupport::Reverse =>
                    {
                        Support::Native
                    }
                    (ModeSupport::Finite, s) if s != Support::No => Support::Generic,
                    _ => Support::No,
                }
            }
            _ => Support::No,
        }
    }
    fn validate(&self) -> InterfaceResult<()> {
        self.outer.validate()?;
        self.inner.validate()
    }
}

/// Sparse Jacobians and Hessians: sparsity detection, colouring, batched compressed
/// products of the inner backend (pushforwards or pullbacks for Jacobians, Hessian-vector
/// products for Hessians), results as sprs `CsMat<f64>` (see
/// [`backends::sparse`](crate::backends::sparse)).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AutoSparse<B> {
    /// The backend of the compressed products: a first-order backend (Jacobians), or
    /// one with Hessian-vector products (`SecondOrder { outer: AutoShade::FORWARD, inner:
    /// AutoShade::REVERSE }`, `AutoShade`) for Hessians.
    pub inner: B,
}

impl<B: Backend> Backend for AutoSparse<B> {
    fn name(&self) -> String {
        format!("AutoSparse({})", self.inner.name())
    }
    fn mode(&self) -> ModeSupport {
        self.inner.mode()
    }
    fn supports(&self, op: Operator) -> Support {
        match op {
            Operator::Jacobian => match self.inner.supports(Operator::Pushforward) {
                Support::No => Support::No,
                _ => Support::Generic,
            },
            Operator::Hessian => match self.inner.supports(Operator::Hvp) {
                Support::No => Support::No,
                _ => Support::Generic,
            },
            _ => Support::No,
        }
    }
    fn validate(&self) -> InterfaceResult<()> {
        self.inner.validate()
    }
}

/// num-dual as a backend (feature `num-dual`): `Dual64` (first order), `HyperDual64`
/// (second order), through the [`NumDual`](crate::numdual::NumDual) newtype.
#[cfg(feature = "num-dual")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AutoNumDual;

#[cfg(feature = "num-dual")]
impl Backend for AutoNumDual {
    fn name(&self) -> String {
        "AutoNumDual".into()
    }
    fn mode(&self) -> ModeSupport {
        ModeSupport::Forward
    }
    fn supports(&self, _: Operator) -> Support {
        Support::Generic
    }
}
