//! The layers: one file per layer in `layers/`.
//!
//! | layer | file | parameters (local names) |
//! |---|---|---|
//! | [`Dense`] / [`Linear`] | `dense.rs` | `weight [out, in]`, `bias [out]` |
//! | [`Chain`] | `chain.rs` | the children's, under their names |
//! | [`Activation`] | `activation.rs` | none |
//! | [`Dropout`] | `dropout.rs` | none |
//! | [`LayerNorm`], [`BatchNorm`] | `norm.rs` | `weight [F]`, `bias [F]`; state `running_mean`, `running_var` |
//! | [`GCNConv`] | `gcn.rs` | `lin.weight [out, in]`, `bias [out]` |
//! | [`GATConv`] | `gat.rs` | `lin.weight [H·C, in]`, `att_src`, `att_dst [1, H, C]`, `bias` |
//! | [`SAGEConv`] | `sage.rs` | `lin_l.weight`, `lin_l.bias`, `lin_r.weight` |
//! | [`GINConv`] | `gin.rs` | `nn.*`, `eps [1]` (if trained) |

mod activation;
mod appnp;
mod blocks;
mod chain;
mod cheb;
mod dense;
mod dropout;
mod gat;
mod gatv2;
mod gcn;
mod gin;
mod gine;
mod graph_conv;
mod norm;
mod sage;
mod sg;
mod tag;

pub use activation::Activation;
pub use appnp::APPNP;
pub use chain::Chain;
pub use cheb::{ChebConv, ChebNorm};
pub use dense::{Dense, Linear};
pub use dropout::Dropout;
pub use gat::GATConv;
pub use gatv2::GATv2Conv;
pub use gcn::GCNConv;
pub use gin::GINConv;
pub use gine::GINEConv;
pub use graph_conv::GraphConv;
pub use norm::{BatchNorm, LayerNorm};
pub use sage::SAGEConv;
pub use sg::SGConv;
pub use tag::TAGConv;
