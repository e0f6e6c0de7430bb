//! gradcheck through the interface's backends, and the proactive backend check.
//!
//! - [`gradcheck_backend`]: a backend's `gradient` against central finite differences
//!   (`AutoFiniteDiff::CENTRAL`); [`gradcheck_against`] against any reference backend.
//! - [`gradgradcheck_backend`]: a backend's `hessian` against finite differences
//!   (`AutoFiniteDiff::CENTRAL`'s four-point formula); [`gradgradcheck_against`].
//! - [`check_backend`]: does this backend offer this operator (`SHADE-E0202`)?
//!
//! ```
//! use shade_autodiff::scalar::{Real, shade_fn};
//! use shade_interface::{AutoShade, Constant};
//! use shade_diagnostics::backends::gradcheck_backend;
//! use shade_diagnostics::GradcheckOptions;
//!
//! fn loss<S: Real>(x: &[S], w: &[f64]) -> S {
//!     x.iter().zip(w).map(|(&xi, &wi)| (xi - wi).powi(2) * xi.exp()).sum()
//! }
//! let w = [0.5, -1.0];
//! let r = gradcheck_backend(shade_fn!(loss(&[S], &[f64])), &AutoShade::REVERSE, &[0.3, 0.1],
//!                           (Constant(&w[..]),), &GradcheckOptions::f64())?;
//! assert!(r.passed());
//! assert_eq!(r.reference, "`AutoFiniteDiff(central)`");
//! # Ok::<(), shade_diagnostics::Diagnostic>(())
//! ```

use crate::check::Findings;
use crate::gradcheck::{GradcheckOptions, GradcheckReport, Order};
use crate::render::Diagnostic;
use core::borrow::Borrow;
use shade_interface::DerivativeMatrix;
use shade_interface::{
    AutoFiniteDiff, Backend, Contexts, GradientBackend, HessianBackend, Operator, Support,
    gradient, hessian,
};
use std::panic::Location;

/// Compares `backend`'s gradient of `f` at `x` with central finite differences.
#[track_caller]
pub fn gradcheck_backend<F, B, C>(
    f: F,
    backend: &B,
    x: &[f64],
    ctx: C,
    options: &GradcheckOptions,
) -> Result<GradcheckReport, Diagnostic>
where
    F: Copy,
    B: GradientBackend<F, C>,
    AutoFiniteDiff: GradientBackend<F, C>,
    C: Contexts + Clone,
{
    gradcheck_against(f, backend, &AutoFiniteDiff::CENTRAL, x, ctx, options)
}

/// Compares `backend`'s gradient of `f` at `x` with `reference`'s.
#[track_caller]
pub fn gradcheck_against<F, B, R, C>(
    f: F,
    backend: &B,
    reference: &R,
    x: &[f64],
    ctx: C,
    options: &GradcheckOptions,
) -> Result<GradcheckReport, Diagnostic>
where
    F: Copy,
    B: GradientBackend<F, C>,
    R: GradientBackend<F, C>,
    C: Contexts + Clone,
{
    let a = gradient(f, backend, x, ctx.clone()).map_err(|e| Diagnostic::from_error(&e))?;
    let n = gradient(f, reference, x, ctx).map_err(|e| Diagnostic::from_error(&e))?;
    let mut rep = GradcheckReport::new(Order::First, x.len(), options);
    rep.reference = format!("`{}`", reference.name());
    for (i, (&a, &n)) in a.iter().zip(&n).enumerate() {
        rep.add(0, vec![i], a, n);
    }
    Ok(rep)
}

/// Compares `backend`'s Hessian of `f` at `x` with finite differences
/// (`AutoFiniteDiff::CENTRAL`); failures are `SHADE-E0501`.
#[track_caller]
pub fn gradgradcheck_backend<F, B, C>(
    f: F,
    backend: &B,
    x: &[f64],
    ctx: C,
    options: &GradcheckOptions,
) -> Result<GradcheckReport, Diagnostic>
where
    F: Copy,
    B: HessianBackend<F, C>,
    AutoFiniteDiff: HessianBackend<F, C>,
    C: Contexts + Clone,
{
    gradgradcheck_against(f, backend, &AutoFiniteDiff::CENTRAL, x, ctx, options)
}

/// Compares `backend`'s Hessian of `f` at `x` with `reference`'s.
#[track_caller]
pub fn gradgradcheck_against<F, B, R, C>(
    f: F,
    backend: &B,
    reference: &R,
    x: &[f64],
    ctx: C,
    options: &GradcheckOptions,
) -> Result<GradcheckReport, Diagnostic>
where
    F: Copy,
    B: HessianBackend<F, C>,
    R: HessianBackend<F, C>,
    C: Contexts + Clone,
{
    // Dense or sparse (`AutoSparse`): compared entry by entry, row-major.
    let a = hessian(f, backend, x, ctx.clone()).map_err(|e| Diagnostic::from_error(&e))?;
    let r = hessian(f, reference, x, ctx).map_err(|e| Diagnostic::from_error(&e))?;
    let (a, r) = (a.borrow().to_row_major(), r.borrow().to_row_major());
    let n = x.len();
    let mut rep = GradcheckReport::new(Order::Second, n * n, options);
    rep.reference = format!("`{}`", reference.name());
    for (k, (&a, &r)) in a.iter().zip(&r).enumerate() {
        rep.add(0, vec![k / n.max(1), k % n.max(1)], a, r);
    }
    Ok(rep)
}

/// Checks before differentiating that `backend` offers `op` on scalar-generic
/// functions; an error `SHADE-E0202` names the backends that do.
#[track_caller]
pub fn check_backend<B: Backend>(backend: &B, op: Operator) -> Findings {
    let mut f = Findings::new();
    if backend.supports(op) == Support::No {
        f.push(
            Diagnostic::error(
                "SHADE-E0202",
                format!(
                    "backend `{}` cannot compute `{}`",
                    backend.name(),
                    op.name()
                ),
            )
            .at(Location::caller())
            .with_note(capable_note(op))
            .with_help("pick a backend from the list, or see docs/compatibility.md"),
        );
    }
    f
}

/// Checks that `backend` runs tensor programs (`shade_interface::tensor`).
#[track_caller]
pub fn check_backend_tensor<B: Backend>(backend: &B) -> Findings {
    let mut f = Findings::new();
    if backend.supports_tensor() == Support::No {
        f.push(
            Diagnostic::error(
                "SHADE-E0202",
                format!(
                    "backend `{}` cannot differentiate tensor programs",
                    backend.name()
                ),
            )
            .at(Location::caller())
            .with_help(
                "use `AutoShade` (native) or `AutoFiniteDiff` (reference) for tensor programs",
            ),
        );
    }
    f
}

/// The backends of the published table that offer `op`.
fn capable_note(op: Operator) -> String {
    let k = Operator::ALL.iter().position(|&o| o == op).unwrap_or(0);
    let names: Vec<String> = shade_interface::support_table()
        .into_iter()
        .filter(|(_, s)| s.get(k).is_some_and(|&s| s != Support::No))
        .map(|(n, _)| format!("`{n}`"))
        .collect();
    format!(
        "backends that compute `{}`: {}",
        op.name(),
        names.join(", ")
    )
}
