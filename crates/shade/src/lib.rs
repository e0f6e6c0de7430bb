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

pub use shade_autodiff as autodiff;
#[cfg(feature = "diagnostics")]
pub use shade_diagnostics as diagnostics;
#[cfg(feature = "gnn")]
pub use shade_gnn as gnn;
#[cfg(feature = "graph")]
pub use shade_graph as graph;
#[cfg(feature = "interface")]
pub use shade_interface as interface;

/// The README's examples, compiled and run as doc tests so they cannot go stale.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
