//! The policy model of shade's founding story, one gradient: a random directed graph
//! (n = 100, each ordered pair an edge with p = 0.2, `peer_data::bernoulli_edges`), 2
//! input features per node, GCNConv 2 → 50, tanh, GCNConv 50 → 50, relu, Dense
//! 50 → 100 with a sigmoid; the loss is the mean of the outputs; f32. Bench id
//! `peers/policy/gradient/t<n>`, compared by `cargo xtask bench --peers` with PyTorch
//! Geometric, PyTorch with a dense normalised adjacency, and JAX.
//!
//! Work: ~2,000 edges + 100 self-loops; `X·W` 100 × 2 × 50, `Â·H` 2,100 × 50 twice,
//! `H·W` 100 × 50 × 50, the dense 100 × 50 × 100: ~0.9 M multiply-adds forward, about
//! twice that backward. A few microseconds of arithmetic: what is measured is overhead.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ndarray::Array2;
use shade_benches::measure::threads_label;
use shade_benches::peer_data::{bernoulli_edges, dense_f32};
use shade_gnn::layers::{Activation, Chain, Dense, GCNConv};
use shade_gnn::optim::Optimiser;
use shade_gnn::train::{Data, TrainState, loss_and_gradient};
use shade_gnn::{Features, GraphCtx, Inputs};
use shade_graph::Graph;
use shade_interface::AutoShade;
use std::hint::black_box;

/// Nodes, edge probability, input features.
const N: usize = 100;
const P: f64 = 0.2;
const FEATURES: usize = 2;

fn policy(c: &mut Criterion) {
    let (src, dst) = bernoulli_edges(N, P, 1);
    let graph = Graph::try_new(N, src, dst).expect("valid edges");
    let ctx = GraphCtx::<f32>::new(&graph);
    ctx.normalized_adjacency(shade_graph::GcnNorm::default());
    let x = Array2::from_shape_vec((N, FEATURES), dense_f32(N, FEATURES, 2)).expect("shape");
    let x = Features::dense(x);
    let model = Chain::<f32>::new()
        .add("conv1", GCNConv::new(FEATURES, 50))
        .add("act1", Activation::Tanh)
        .add("conv2", GCNConv::new(50, 50))
        .add("act2", Activation::Relu)
        .add(
            "out",
            Dense::new(50, 100).with_activation(Activation::Sigmoid),
        );
    let mut ts = TrainState::new(&model, Optimiser::adam(0.01), 0).expect("train state");
    let data = Data {
        inputs: Inputs::new(&ctx, &x),
        target: &(),
    };
    let loss = |t: &mut shade_autodiff::tensor::Tape<'_, f32>, y, _: &()| t.mean(y);
    let mut group = c.benchmark_group("peers/policy");
    group.bench_with_input(
        BenchmarkId::new("gradient", threads_label()),
        &(),
        |b, ()| {
            b.iter(|| {
                let l = loss_and_gradient(&AutoShade::REVERSE, &model, &loss, &data, &mut ts)
                    .expect("gradient");
                black_box(l)
            })
        },
    );
    group.finish();
}

criterion_group!(benches, policy);
criterion_main!(benches);
