//! shade: automatic differentiation with Enzyme-style activities, one interface over
//! many backends, and graph neural networks on top.
//!
//! This facade re-exports the workspace's crates behind cargo features:
//!
//! | module | crate | feature |
//! |---|---|---|
//! | [`autodiff`] | `shade-autodiff` | always |
//! | `interface` | `shade-interface` | `interface` |
//! | `graph` | `shade-graph` | `graph` |
//! | `gnn` | `shade-gnn` | `gnn` |
//! | `diagnostics` | `shade-diagnostics` | `diagnostics` |
//!
//! It also re-exports [`ndarray`], [`sprs`], [`rand`] and [`num_traits`], the versions
//! the crates' APIs use, so a project needs no other dependency.

pub use shade_autodiff as autodiff;
#[cfg(feature = "diagnostics")]
pub use shade_diagnostics as diagnostics;
#[cfg(feature = "gnn")]
pub use shade_gnn as gnn;
#[cfg(feature = "graph")]
pub use shade_graph as graph;
#[cfg(feature = "interface")]
pub use shade_interface as interface;

// Public dependencies whose types appear in the crates' APIs, re-exported so that
// `shade` alone is enough (versions: README.md, "Re-exported dependencies").
/// The array crate of the tensor layer, features and parameters.
pub use shade_autodiff::ndarray;
/// Number traits: `autodiff::scalar::Real` builds on `num_traits::Float`.
pub use shade_autodiff::num_traits;
/// The RNG crate: `gnn::Layer::init` takes a `rand::rngs::StdRng`.
pub use shade_autodiff::rand;
/// The sparse-matrix crate (`sprs::CsMat`: sparse features, normalised adjacencies).
pub use shade_autodiff::sprs;

/// The README's examples, compiled and run as doc tests so they cannot go stale.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
