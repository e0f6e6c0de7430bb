//! A test harness in the spirit of DifferentiationInterfaceTest (feature `testing`).
//!
//! A scenario is a function, an evaluation point, a different preparation point, its
//! contexts and reference derivatives (given, or computed by a reference backend). The
//! checkers ([`check_gradient`], ...) prepare each operator at the preparation point,
//! then run every variant (plain, `_into`, `value_and_*`, `value_and_*_into`, batched)
//! twice at the evaluation point, with output buffers pre-filled with garbage, compare
//! every result with the reference and check that the inputs are untouched.
//! [`test_differentiation`] runs a list of scenarios over a list of backends; the
//! [`standard`] module holds the standard scenario sets.
//!
//! ```
//! use shade_interface::AutoShade;
//! use shade_interface::testing::{Config, standard, test_differentiation};
//!
//! // One list per backend type (`AutoShade`'s mode is part of its type).
//! let set = standard::scenarios::<AutoShade>(&[0.3, -1.2, 0.7], 0.4);
//! let refs: Vec<_> = set.iter().map(|s| s.as_ref()).collect();
//! let summary = test_differentiation(&[AutoShade::REVERSE], &refs, &Config::exact()).unwrap();
//! assert!(summary.checks > 50);
//! let set = standard::scenarios::<AutoShade<shade_autodiff::Forward>>(&[0.3, -1.2, 0.7], 0.4);
//! let refs: Vec<_> = set.iter().map(|s| s.as_ref()).collect();
//! assert!(test_differentiation(&[AutoShade::FORWARD], &refs, &Config::exact()).is_ok());
//! ```

mod check;
pub mod standard;

pub use check::{
    check_derivative, check_derivative_inplace, check_gradient, check_hessian, check_hvp,
    check_jacobian, check_pullback, check_pushforward, check_second_derivative,
};

use crate::backend::{Backend, Operator};
use crate::context::Contexts;
use crate::form::{OneArg, OneArgFn, OneArgVec, ReturnsVector, TwoArg};
use crate::ops::{
    DerivativeBackend, GradientBackend, HessianBackend, HvpBackend, JacobianBackend,
    PullbackBackend, PushforwardBackend, SecondDerivativeBackend,
};
use std::collections::BTreeSet;
use std::fmt;

/// Relative and absolute tolerance: `|a - b| <= atol + rtol · max(|a|, |b|)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Relative tolerance.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
}

impl Tolerance {
    /// Whether `a` and `b` agree.
    pub fn close(&self, a: f64, b: f64) -> bool {
        (a - b).abs() <= self.atol + self.rtol * a.abs().max(b.abs()) || (a.is_nan() && b.is_nan())
    }
}

/// Tolerances of a harness run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// For values and first derivatives.
    pub first: Tolerance,
    /// For second derivatives.
    pub second: Tolerance,
}

impl Config {
    /// For exact backends (AD): agreement to rounding.
    pub fn exact() -> Self {
        let t = Tolerance {
            rtol: 1e-10,
            atol: 1e-10,
        };
        Config {
            first: t,
            second: t,
        }
    }
    /// For finite differences with default steps.
    pub fn finite_differences() -> Self {
        Config {
            first: Tolerance {
                rtol: 1e-6,
                atol: 1e-6,
            },
            second: Tolerance {
                rtol: 1e-4,
                atol: 1e-4,
            },
        }
    }
    /// For forward differences (first-order accurate).
    pub fn forward_differences() -> Self {
        Config {
            first: Tolerance {
                rtol: 1e-4,
                atol: 1e-4,
            },
            second: Tolerance {
                rtol: 1e-4,
                atol: 1e-4,
            },
        }
    }
}

/// Why a check failed: scenario, backend, operator, variant and what differed.
#[derive(Clone, Debug, PartialEq)]
pub struct HarnessError {
    /// The scenario's name.
    pub scenario: String,
    /// The backend's name.
    pub backend: String,
    /// The operator.
    pub operator: &'static str,
    /// The variant (`"plain"`, `"into"`, `"value_and"`, ..., with the round).
    pub variant: String,
    /// What went wrong.
    pub what: String,
}

impl fmt::Display for HarnessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "scenario `{}`, backend `{}`, `{}` ({}): {}",
            self.scenario, self.backend, self.operator, self.variant, self.what
        )
    }
}

impl std::error::Error for HarnessError {}

/// Reference values at the evaluation point.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Reference {
    /// `f(x)` (length `m`).
    pub y: Vec<f64>,
    /// The Jacobian (`m × n`, row-major): the gradient for one output, `dy/dx` for a
    /// scalar input.
    pub jacobian: Vec<f64>,
    /// The Hessian (`n × n`) for one output, or `f''(x)` for a scalar input; empty when
    /// not applicable.
    pub hessian: Vec<f64>,
}

/// Writes the scenario structs, which share their fields: `name`, `f`, `m` (a
/// two-argument function's number of outputs), `x`, `prep_x` (both of type `X`), `ctx`
/// and `reference`, in that order, each `pub` and documented. The structs' docs and the
/// field docs that differ (`f`'s form, `prep_x`, `reference`) are written at the call,
/// so that rustdoc shows each struct as if written out.
///
/// Why: the five scenario kinds differ in the function's form and the point's type
/// only; written out, they repeated the same six documented fields.
macro_rules! scenarios {
    ($($(#[$doc:meta])* $name:ident {
        $(#[$fd:meta])* f,
        $($(#[$md:meta])* m,)?
        x: $X:ty,
        $(#[$pd:meta])* prep_x,
        $(#[$rd:meta])* reference $(,)?
    })*) => {$(
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $name<F, C> {
            /// Name in messages.
            pub name: String,
            $(#[$fd])*
            pub f: F,
            $($(#[$md])*
            pub m: usize,)?
            /// Evaluation point.
            pub x: $X,
            $(#[$pd])*
            pub prep_x: $X,
            /// The contexts.
            pub ctx: C,
            $(#[$rd])*
            pub reference: Reference,
        }
    )*};
}

scenarios! {
    /// A function of a vector returning one number: gradient, jacobian, hessian, hvp,
    /// pushforward, pullback.
    GradScenario {
        /// `shade_fn!(f(&[S], ...))`.
        f,
        x: Vec<f64>,
        /// Preparation point (same length, other values).
        prep_x,
        /// Reference values at `x`.
        reference,
    }

    /// A two-argument function of a vector with `m` outputs: jacobian, pushforward, pullback.
    JacScenario {
        /// `shade_fn!(f(&mut [S], &[S], ...))`.
        f,
        /// Number of outputs.
        m,
        x: Vec<f64>,
        /// Preparation point.
        prep_x,
        /// Reference values at `x`.
        reference,
    }

    /// A one-argument vector-valued function of a vector, `f(x, ..) -> Vec<S>`: jacobian,
    /// pushforward, pullback. The number of outputs is not given: the harness takes it from
    /// the function's evaluation at the preparation point, as the operators do, and the
    /// results are compared with the reference (whose `y` has the true length).
    VecScenario {
        /// `shade_fn!(f(&[S], ...) -> Vec<S>)`.
        f,
        x: Vec<f64>,
        /// Preparation point.
        prep_x,
        /// Reference values at `x`.
        reference,
    }

    /// A one-argument function of a scalar: derivative, second derivative.
    ScalarScenario {
        /// `shade_fn!(f(S, ...))`.
        f,
        x: f64,
        /// Preparation point.
        prep_x,
        /// Reference values at `x` (`hessian = [f''(x)]`).
        reference,
    }

    /// A two-argument function of a scalar with `m` outputs: derivative.
    ScalarInplaceScenario {
        /// `shade_fn!(f(&mut [S], S, ...))`.
        f,
        /// Number of outputs.
        m,
        x: f64,
        /// Preparation point.
        prep_x,
        /// Reference values at `x`.
        reference,
    }
}

/// What one scenario run checked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Checked {
    /// Number of compared results.
    pub checks: usize,
    /// Operators exercised.
    pub operators: BTreeSet<Operator>,
}

/// A scenario runnable on backend type `B`.
pub trait Scenario<B> {
    /// Its name.
    fn name(&self) -> &str;
    /// The operators it exercises.
    fn operators(&self) -> &'static [Operator];
    /// Runs every operator's checks on `backend`.
    fn run(&self, backend: &B, cfg: &Config) -> Result<Checked, HarnessError>;
}

impl<B, F: Copy, C: Contexts + Copy> Scenario<B> for GradScenario<F, C>
where
    B: GradientBackend<F, C>
        + JacobianBackend<OneArg<F>, C>
        + HessianBackend<F, C>
        + HvpBackend<F, C>
        + PushforwardBackend<OneArg<F>, C>
        + PullbackBackend<OneArg<F>, C>,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn operators(&self) -> &'static [Operator] {
        &[
            Operator::Gradient,
            Operator::Jacobian,
            Operator::Hessian,
            Operator::Hvp,
            Operator::Pushforward,
            Operator::Pullback,
        ]
    }
    fn run(&self, b: &B, cfg: &Config) -> Result<Checked, HarnessError> {
        let mut c = Checked::default();
        c.merge(check_gradient(b, self, cfg)?, Operator::Gradient);
        c.merge(check_jacobian(b, &self.as_jac(), cfg)?, Operator::Jacobian);
        c.merge(check_hessian(b, self, cfg)?, Operator::Hessian);
        c.merge(check_hvp(b, self, cfg)?, Operator::Hvp);
        c.merge(
            check_pushforward(b, &self.as_jac(), cfg)?,
            Operator::Pushforward,
        );
        c.merge(check_pullback(b, &self.as_jac(), cfg)?, Operator::Pullback);
        Ok(c)
    }
}

/// The operators of a vector-valued scenario, in either form.
const VECTOR_OPERATORS: &[Operator] = &[
    Operator::Jacobian,
    Operator::Pushforward,
    Operator::Pullback,
];

/// Runs the [`VECTOR_OPERATORS`]' checks on one form.
fn check_vector_form<B, V, C>(
    b: &B,
    form: &VecForms<'_, V, C>,
    cfg: &Config,
) -> Result<Checked, HarnessError>
where
    B: JacobianBackend<V, C> + PushforwardBackend<V, C> + PullbackBackend<V, C>,
    V: Copy,
    C: Contexts + Copy,
{
    let mut c = Checked::default();
    c.merge(check_jacobian(b, form, cfg)?, Operator::Jacobian);
    c.merge(check_pushforward(b, form, cfg)?, Operator::Pushforward);
    c.merge(check_pullback(b, form, cfg)?, Operator::Pullback);
    Ok(c)
}

/// The [`Scenario`] impl of the vector-valued scenario `$S`, whose `form()` is in form
/// `$V` (after it, the bounds that form needs): the [`VECTOR_OPERATORS`]' checks.
macro_rules! vector_scenario {
    ($S:ident, $V:ty $(, $($bound:tt)*)?) => {
        impl<B, F: Copy, C: Contexts + Copy> Scenario<B> for $S<F, C>
        where
            $($($bound)*,)?
            B: JacobianBackend<$V, C> + PushforwardBackend<$V, C> + PullbackBackend<$V, C>,
        {
            fn name(&self) -> &str {
                &self.name
            }
            fn operators(&self) -> &'static [Operator] {
                VECTOR_OPERATORS
            }
            fn run(&self, b: &B, cfg: &Config) -> Result<Checked, HarnessError> {
                check_vector_form(b, &self.form(), cfg)
            }
        }
    };
}
vector_scenario!(JacScenario, TwoArg<F>);
vector_scenario!(
    VecScenario,
    OneArgVec<F>,
    F: OneArgFn<C, ReturnsVector, Form = OneArgVec<F>>
);

impl<B, F: Copy, C: Contexts + Copy> Scenario<B> for ScalarScenario<F, C>
where
    B: DerivativeBackend<OneArg<F>, C> + SecondDerivativeBackend<F, C>,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn operators(&self) -> &'static [Operator] {
        &[Operator::Derivative, Operator::SecondDerivative]
    }
    fn run(&self, b: &B, cfg: &Config) -> Result<Checked, HarnessError> {
        let mut c = Checked::default();
        c.merge(check_derivative(b, self, cfg)?, Operator::Derivative);
        c.merge(
            check_second_derivative(b, self, cfg)?,
            Operator::SecondDerivative,
        );
        Ok(c)
    }
}

impl<B, F: Copy, C: Contexts + Copy> Scenario<B> for ScalarInplaceScenario<F, C>
where
    B: DerivativeBackend<TwoArg<F>, C>,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn operators(&self) -> &'static [Operator] {
        &[Operator::Derivative]
    }
    fn run(&self, b: &B, cfg: &Config) -> Result<Checked, HarnessError> {
        let mut c = Checked::default();
        c.merge(
            check_derivative_inplace(b, self, cfg)?,
            Operator::Derivative,
        );
        Ok(c)
    }
}

/// A vector-input scenario seen through its function form (for the checkers shared by
/// both forms).
#[derive(Clone, Debug)]
pub struct VecForms<'a, V, C> {
    /// Scenario name.
    pub name: &'a str,
    /// The form.
    pub f: V,
    /// Outputs.
    pub m: usize,
    /// Evaluation point.
    pub x: &'a [f64],
    /// Preparation point.
    pub prep_x: &'a [f64],
    /// Contexts.
    pub ctx: C,
    /// Reference values.
    pub reference: &'a Reference,
}

impl<F: Copy, C: Copy> GradScenario<F, C> {
    /// The one-argument form, `m = 1`.
    pub fn as_jac(&self) -> VecForms<'_, OneArg<F>, C> {
        VecForms {
            name: &self.name,
            f: OneArg(self.f),
            m: 1,
            x: &self.x,
            prep_x: &self.prep_x,
            ctx: self.ctx,
            reference: &self.reference,
        }
    }
}

impl<F: Copy, C: Copy> JacScenario<F, C> {
    /// The two-argument form.
    pub fn form(&self) -> VecForms<'_, TwoArg<F>, C> {
        VecForms {
            name: &self.name,
            f: TwoArg {
                f: self.f,
                m: self.m,
            },
            m: self.m,
            x: &self.x,
            prep_x: &self.prep_x,
            ctx: self.ctx,
            reference: &self.reference,
        }
    }
}

impl<F: Copy, C: Copy> VecScenario<F, C> {
    /// The one-argument vector form, its number of outputs inferred at the preparation
    /// point.
    pub fn form(&self) -> VecForms<'_, OneArgVec<F>, C>
    where
        F: OneArgFn<C, ReturnsVector, Form = OneArgVec<F>>,
    {
        let (f, m) = self.f.into_form(&self.prep_x, &self.ctx);
        VecForms {
            name: &self.name,
            f,
            m,
            x: &self.x,
            prep_x: &self.prep_x,
            ctx: self.ctx,
            reference: &self.reference,
        }
    }
}

impl Checked {
    fn merge(&mut self, checks: usize, op: Operator) {
        self.checks += checks;
        self.operators.insert(op);
    }
}

/// What [`test_differentiation`] ran.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Number of compared results.
    pub checks: usize,
    /// `(backend name, operator)` pairs exercised.
    pub covered: BTreeSet<(String, Operator)>,
}

/// Runs every scenario on every backend; stops at the first failure.
pub fn test_differentiation<B: Backend>(
    backends: &[B],
    scenarios: &[&dyn Scenario<B>],
    cfg: &Config,
) -> Result<Summary, HarnessError> {
    let mut s = Summary::default();
    for b in backends {
        for sc in scenarios {
            let c = sc.run(b, cfg)?;
            s.checks += c.checks;
            s.covered
                .extend(c.operators.into_iter().map(|op| (b.name(), op)));
        }
    }
    Ok(s)
}
