//! The layers: one file per layer in `layers/`.
//!
//! | layer | file | parameters (local names) |
//! |---|---|---|
//! | [`Dense`] / [`Linear`] | `dense.rs` | `weight [out, in]`, `bias [out]` |
//! | [`Chain`] | `chain.rs` | the children's, under their names |
//! | [`Activation`] | `activation.rs` | none |
//! | [`Dropout`] | `dropout.rs` | none |
//! | [`LayerNorm`], [`BatchNorm`] | `norm.rs` | `weight [F]`, `bias [F]`; BatchNorm state `running_mean`, `running_var` (with `track_running_stats`) |
//! | [`GCNConv`] | `gcn.rs` | `lin.weight [out, in]`, `bias [out]` |
//! | [`GATConv`] | `gat.rs` | `lin.weight [H·C, in]`, `att_src`, `att_dst [1, H, C]`, `lin_edge.weight [H·C, D]`, `att_edge` (with `edge_dim`), `res.weight` (with `residual`), `bias` |
//! | [`SAGEConv`] | `sage.rs` | `lin.weight [in, in]`, `lin.bias` (with `project`), `lin_l.weight`, `lin_l.bias`, `lin_r.weight` |
//! | [`GINConv`] | `gin.rs` | `nn.*`, `eps [1]` (if trained) |
//! | [`GraphConv`] | `graph_conv.rs` | `lin_rel.weight`, `lin_rel.bias`, `lin_root.weight` |
//! | [`GINEConv`] | `gine.rs` | `nn.*`, `eps [1]` (if trained), `lin.*` (with `edge_dim`) |
//! | [`GATv2Conv`] | `gatv2.rs` | `lin_l.*`, `lin_r.*` (unless shared), `att [1, H, C]`, `lin_edge.weight` (with `edge_dim`), `res.weight` (with `residual`), `bias` |
//! | [`ChebConv`] | `cheb.rs` | `lins.{k}.weight [out, in]` for `k < K`, `bias` |
//! | [`SGConv`] | `sg.rs` | `lin.weight`, `lin.bias`; state `cache` (if cached) |
//! | [`TAGConv`] | `tag.rs` | `lins.{k}.weight` for `k <= K`, `bias` |
//! | [`APPNP`] | `appnp.rs` | none |
//! | [`EdgeConv`] | `edge_conv.rs` | `nn.*` |
//! | [`ResGatedGraphConv`] | `res_gated.rs` | `lin_key.*`, `lin_query.*`, `lin_value.*` (`[out, in + D]` with `edge_dim`), `lin_skip.weight`, `bias` |
//! | [`GatedGraphConv`] | `gated.rs` | `weight [L, out, out]`, `rnn.weight_ih`, `rnn.weight_hh`, `rnn.bias_ih`, `rnn.bias_hh` (with `bias`) |
//! | [`TransformerConv`] | `transformer.rs` | `lin_key.*`, `lin_query.*`, `lin_value.*`, `lin_edge.weight` (with `edge_dim`), `lin_skip.*`, `lin_beta.weight` |
//! | [`NNConv`] | `nn_conv.rs` | `nn.*`, `lin.weight`, `bias` |
//! | [`CGConv`] | `cg.rs` | `lin_f.*`, `lin_s.*`, `bn.*` (with `batch_norm`) |
//! | [`AGNNConv`] | `agnn.rs` | `beta [1]` (if trained) |
//!
//! `D` is the edge-feature width (`edge_dim`); the layers with an `edge_dim` check the
//! call's edge features against it. Pooling layers are in [`crate::pool`]. `blocks.rs`
//! holds the GRU / LSTM cells and option checks shared by these files; `attention.rs`
//! what the attention layers share (GAT's and GATv2's [`AttentionOptions`] and the
//! builder methods of every attention layer; edge set and self-loop edge features,
//! [`FillValue`]; softmax, dropout, weighted sum, heads, skip connection, bias).
//! A stateless graph layer may implement `GraphLayer` (its parameters and its
//! computation) and get its [`Layer`](crate::Layer) impl from `graph_layer!`.

use crate::ctx::Float;
use crate::error::GnnResult;
use crate::layer::{Env, Input};
use crate::params::{ParamVars, Params};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// What [`GraphLayer::record`] reads besides the tape: the environment (the graph),
/// the input and the layer's parameters.
pub(crate) type Call<'a, 'e, 'r, T> = (&'e mut Env<'a, 'r, T>, Input<'a, T>, ParamVars<'e>);

/// A graph layer without state, by its own part: its parameters and its computation.
/// `graph_layer!` writes the [`Layer`](crate::Layer) impl around it once (its name,
/// an empty state, `is_graph_layer`).
pub(crate) trait GraphLayer<T: Float> {
    /// Fresh parameters, by local name.
    fn params(&self, rng: &mut StdRng) -> Params<T>;
    /// Records the layer's computation on `t` and returns the output handle.
    fn record<'a>(&self, t: &mut Tape<'a, T>, c: Call<'a, '_, '_, T>) -> GnnResult<Var>;
}

/// The [`Layer`](crate::Layer) impl of a stateless graph layer `$ty` (named
/// `stringify!($ty)`) from its [`GraphLayer`] impl. A macro, not a blanket impl: a
/// blanket impl over `GraphLayer` would overlap the one for `Box<L>`.
macro_rules! graph_layer {
    ($ty:ident) => {
        impl<T: $crate::ctx::Float> $crate::layer::Layer<T> for $ty {
            fn name(&self) -> &'static str {
                stringify!($ty)
            }
            fn init(
                &self,
                rng: &mut rand::rngs::StdRng,
            ) -> ($crate::params::Params<T>, $crate::params::State<T>) {
                (
                    $crate::layers::GraphLayer::params(self, rng),
                    $crate::params::State::new(),
                )
            }
            fn forward<'a>(
                &self,
                t: &mut shade_autodiff::tensor::Tape<'a, T>,
                env: &mut $crate::layer::Env<'a, '_, T>,
                x: $crate::layer::Input<'a, T>,
                p: $crate::params::ParamVars<'_>,
                _st: $crate::params::StateScope<'_, T>,
            ) -> $crate::error::GnnResult<shade_autodiff::tensor::Var> {
                $crate::layers::GraphLayer::record(self, t, (env, x, p))
            }
            fn is_graph_layer(&self) -> bool {
                true
            }
        }
    };
}

mod activation;
mod agnn;
mod appnp;
mod attention;
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
pub use attention::{AttentionOptions, FillValue};
pub use cg::CGConv;
pub use chain::Chain;
pub use cheb::{ChebConv, ChebNorm};
pub use dense::{Dense, Linear};
pub use dropout::Dropout;
pub use edge_conv::EdgeConv;
pub use gat::GATConv;
pub use gated::GatedGraphConv;
pub use gatv2::GATv2Conv;
pub use gcn::{GCNConv, GcnEdgeWeight};
pub use gin::GINConv;
pub use gine::GINEConv;
pub use graph_conv::GraphConv;
pub use nn_conv::NNConv;
pub use norm::{BatchNorm, LayerNorm, LayerNormMode};
pub use res_gated::ResGatedGraphConv;
pub use sage::SAGEConv;
pub use sg::SGConv;
pub use tag::TAGConv;
pub use transformer::TransformerConv;
