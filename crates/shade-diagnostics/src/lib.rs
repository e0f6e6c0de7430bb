//! Every failure becomes a clear, coded, actionable message: the error catalogue,
//! rendering, gradcheck, anomaly mode, proactive checks and the compatibility matrix.
//!
//! - [`explain`]`(code)`: the long explanation of any shade error code (rustc
//!   `--explain` style); `docs/errors.md` is generated from the same [`catalogue`].
//! - [`Diagnostic`]: one message in rustc's shape (`error[SHADE-E0110]: ...`,
//!   `--> file:line:col`, `= note:`, `= help:`), built from any crate's error through
//!   [`Coded`] (`?` converts and records the line); with the `miette` feature it is
//!   also a `miette::Diagnostic`.
//! - [`check`](mod@check): proactive checks before training or differentiating, returning
//!   [`Findings`] (errors and warnings, each coded).
//! - [`detect_anomaly`]: runs a tensor program with the tensor layer's anomaly mode on,
//!   so the first operation producing NaN/Inf is named with its source line.
//! - [`gradcheck`](mod@gradcheck): derivatives against a reference (central finite differences),
//!   with PyTorch-like tolerances, naming the worst entries; [`backends`] does the same
//!   through shade-interface's backends (any backend against any reference).
//! - [`compat`]: the compatibility matrix (`docs/compatibility.md`), every cell a real run.
//!
//! ```
//! use ndarray::array;
//! use shade_autodiff::Duplicated;
//! use shade_autodiff::tensor::TapeBuffers;
//! use shade_diagnostics::{Diagnostic, detect_anomaly};
//!
//! let x = array![1.0, -2.0];
//! let mut dx = x.clone() * 0.0;
//! let mut bufs = TapeBuffers::new();
//! let err = detect_anomaly(&mut bufs, |bufs| {
//!     shade_autodiff::tensor::gradient(bufs, |t, (x,)| {
//!         let y = t.sqrt(x)?;
//!         t.sum(y)
//!     }, (Duplicated(&x, &mut dx),))
//! })
//! .unwrap_err();
//! assert_eq!(err.code, "SHADE-E0170");
//! assert!(err.render().starts_with("error[SHADE-E0170]: `sqrt` produced NaN at element 1"));
//! ```

pub mod anomaly;
pub mod backends;
pub mod catalogue;
pub mod check;
pub mod compat;
pub mod gradcheck;
#[cfg(feature = "miette")]
pub mod miette;
pub mod render;

pub use anomaly::detect_anomaly;
pub use catalogue::{explain, render_errors_md};
pub use check::{
    Findings, check_finite, check_gcn_normalisation, check_graph_features, check_shadow_zeroed,
};
pub use compat::render_compatibility_md;
pub use gradcheck::{
    GradcheckOptions, GradcheckReport, TensorProgram, gradcheck, gradcheck_fn, gradcheck_tensor,
    gradcheck_tensor_forward, gradgradcheck,
};
pub use render::{Coded, Diagnose, Diagnostic, Severity, render_all};

// Public dependencies whose types appear in this crate's API, re-exported so that one
// dependency is enough (versions: README.md, "Re-exported dependencies").
/// The array crate of the proactive checks ([`check_finite`], ...).
pub use ndarray;
/// The AD core: [`detect_anomaly`] runs its tensor programs.
pub use shade_autodiff;
/// The GNN crate: compatibility cells and checks name its layers and errors.
pub use shade_gnn;
/// The graph crate: [`check_graph_features`] takes a `shade_graph::Graph`.
pub use shade_graph;
/// The differentiation interface: [`backends`] compares its backends.
pub use shade_interface;
