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
mod agnn;
mod appnp;
pub(crate) mod blocks;
mod cg;
mod chain;
mod cheb;
mod dense;
mod dropout;
mod edge_conv;
mod gat;
mod gated;
mod gatv2;
mod gcn;
mod gin;
mod gine;
mod graph_conv;
mod nn_conv;
mod norm;
mod res_gated;
mod sage;
mod sg;
mod tag;
mod transformer;

pub use activation::Activation;
pub use agnn::AGNNConv;
pub use appnp::APPNP;
pub use cg::CGConv;
pub use chain::Chain;
pub use cheb::{ChebConv, ChebNorm};
pub use dense::{Dense, Linear};
pub use dropout::Dropout;
pub use edge_conv::EdgeConv;
pub use gat::GATConv;
pub use gated::GatedGraphConv;
pub use gatv2::GATv2Conv;
pub use gcn::GCNConv;
pub use gin::GINConv;
pub use gine::GINEConv;
pub use graph_conv::GraphConv;
pub use nn_conv::NNConv;
pub use norm::{BatchNorm, LayerNorm};
pub use res_gated::ResGatedGraphConv;
pub use sage::SAGEConv;
pub use sg::SGConv;
pub use tag::TAGConv;
pub use transformer::TransformerConv;
