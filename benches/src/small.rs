//! The small-graph workloads shared by the `gnn_step` and `policy` benches and the
//! `small_profile` example: real Cora with its split and prepared context, and the
//! founding policy model on its random graph.

use ndarray::Array2;
use shade_gnn::layers::{Activation, Chain, Dense, GCNConv};
use shade_gnn::optim::Optimiser;
use shade_gnn::train::TrainState;
use shade_gnn::{Features, GraphCtx};
use shade_graph::{Dataset, Graph, NodeSplit, NpzOptions, read_npz};

/// Nodes, edge probability and input features of the policy model's graph.
pub const POLICY_N: usize = 100;
/// Edge probability of the policy model's graph.
pub const POLICY_P: f64 = 0.2;
/// Input features per node of the policy model.
pub const POLICY_FEATURES: usize = 2;

/// Real Cora (`../shared/data/cora.npz`, undirected), its 20-per-class split and a
/// context with the structures the GCN and GAT read built before timing (a training
/// loop builds them in its first step).
pub fn cora() -> (Dataset, NodeSplit, GraphCtx<f32>) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data/cora.npz");
    let ds = read_npz(path, NpzOptions::undirected()).expect("../shared/data/cora.npz");
    let split = ds.split(20, 500, 1000, 0).expect("split");
    let ctx = GraphCtx::<f32>::new(&ds.graph);
    ctx.normalized_adjacency(shade_graph::GcnNorm::default());
    ctx.edges_with_self_loops();
    (ds, split, ctx)
}

/// The policy model's random directed graph (`peer_data::bernoulli_edges`, seed 1)
/// with its normalised adjacency built, and its dense features (seed 2).
pub fn policy_graph() -> (GraphCtx<f32>, Features<f32>) {
    let (src, dst) = crate::peer_data::bernoulli_edges(POLICY_N, POLICY_P, 1);
    let graph = Graph::try_new(POLICY_N, src, dst).expect("valid edges");
    let ctx = GraphCtx::<f32>::new(&graph);
    ctx.normalized_adjacency(shade_graph::GcnNorm::default());
    let x = crate::peer_data::dense_f32(POLICY_N, POLICY_FEATURES, 2);
    let x = Array2::from_shape_vec((POLICY_N, POLICY_FEATURES), x).expect("shape");
    (ctx, Features::dense(x))
}

/// The policy model's loss: the mean of its outputs.
pub fn policy_loss<'a>(
    t: &mut shade_autodiff::tensor::Tape<'a, f32>,
    y: shade_autodiff::tensor::Var,
    _: &'a (),
) -> shade_autodiff::AdResult<shade_autodiff::tensor::Var> {
    t.mean(y)
}

/// The policy model's train state (Adam, lr 0.01, seed 0; no step is taken, only
/// gradients).
pub fn policy_state(model: &Chain<f32>) -> TrainState<f32> {
    TrainState::new(model, Optimiser::adam(0.01), 0).expect("train state")
}

/// GCNConv 2 → 50, tanh, GCNConv 50 → 50, relu, Dense 50 → 100 with a sigmoid.
pub fn policy_model() -> Chain<f32> {
    Chain::<f32>::new()
        .add("conv1", GCNConv::new(POLICY_FEATURES, 50))
        .add("act1", Activation::Tanh)
        .add("conv2", GCNConv::new(50, 50))
        .add("act2", Activation::Relu)
        .add(
            "out",
            Dense::new(50, 100).with_activation(Activation::Sigmoid),
        )
}
