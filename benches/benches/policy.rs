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
use shade_benches::measure::threads_label;
use shade_benches::small::{policy_graph, policy_loss, policy_model, policy_state};
use shade_gnn::Inputs;
use shade_gnn::train::{Data, loss_and_gradient};
use shade_interface::AutoShade;
use std::hint::black_box;

fn policy(c: &mut Criterion) {
    shade_benches::pool();
    let (ctx, x) = policy_graph();
    let model = policy_model();
    let mut ts = policy_state(&model);
    let data = Data {
        inputs: Inputs::new(&ctx, &x),
        target: &(),
    };
    let mut group = c.benchmark_group("peers/policy");
    group.bench_with_input(
        BenchmarkId::new("gradient", threads_label()),
        &(),
        |b, ()| {
            b.iter(|| {
                let l =
                    loss_and_gradient(&AutoShade::REVERSE, &model, &policy_loss, &data, &mut ts)
                        .expect("gradient");
                black_box(l)
            })
        },
    );
    group.finish();
}

criterion_group!(benches, policy);
criterion_main!(benches);
