//! The layers: one file per layer in `layers/`.
//!
//! | layer | file | parameters (local names) |
//! |---|---|---|
//! | [`Dense`] / [`Linear`] | `dense.rs` | `weight [out, in]`, `bias [out]` |
//! | [`Chain`] | `chain.rs` | the children's, under their names |
//! | [`Activation`] | `activation.rs` | none |
//! | [`Dropout`] | `dropout.rs` | none |
//! | [`GCNConv`] | `gcn.rs` | `lin.weight [out, in]`, `bias [out]` |

mod activation;
mod chain;
mod dense;
mod dropout;
mod gcn;

pub use activation::Activation;
pub use chain::Chain;
pub use dense::{Dense, Linear};
pub use dropout::Dropout;
pub use gcn::GCNConv;
