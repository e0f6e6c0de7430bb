//! One GCN training step on real Cora through shade-gnn's public API (forward +
//! backward + Adam), f32, on rayon's global pool (`RAYON_NUM_THREADS`, else one thread
//! per CPU; the bench parameter `t<n>` says how many): the two-layer GCN of Kipf & Welling (1433 → 16 →
//! 7, dropout 0.5, weight decay 5e-4 on the first layer), cross-entropy over the 140
//! training nodes, sparse input features (98.7% zeros) through the sparse × dense
//! kernel, cached normalised adjacency. Bench ids `peers/cora_gcn/step/t<n>` and
//! `peers/cora_gcn/infer/t<n>` (the forward pass alone, evaluation mode): the
//! workloads that `cargo xtask bench --peers` compares with PyTorch Geometric and JAX.
//!
//! Work per step: `X·W₁` 49 216 nonzeros × 16 = 0.79 M multiply-adds forward and the
//! same for `Xᵀ·G` backward; `Â·H` 13 264 nonzeros × (16 + 7) forward and backward;
//! about 2 M multiply-adds in all, a few hundred microseconds of memory traffic.
//!
//! Group `peers/cora_gat`: the same step for the two-layer GAT of Veličković et al. (8 heads
//! × 8 hidden → 7 classes, one averaged head; dropout 0.6 on the hidden units and the
//! attention coefficients; input dropout, which the training loop applies, is left
//! out as in the GCN step), against its forward pass. Per step: `X·W₁` 49 216 nonzeros
//! × 64 = 3.1 M multiply-adds forward and again backward; attention over 13 264 edges
//! (10 556 plus one self-loop per node) × 8 heads × 8 channels ≈ 0.85 M multiply-adds
//! per pass.
//!
//! Variants `step-dense` and `infer-dense`: the same models on `Features::dense` of the
//! same features (a `[2708, 1433]` array, as the peers hold them), through the dense
//! products: `X·W₁` is 2708 × 1433 × 16 = 62.1 M multiply-adds forward and `Xᵀ·G` the
//! same backward for the GCN (× 4 for the GAT's 64 columns: 248 M each way); `X` is
//! 15.5 MB, read once per product.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use shade_gnn::loss::{NodeTargets, cross_entropy};
use shade_gnn::models::{Model, NodeConfig};
use shade_gnn::train::{Data, TrainState, single_train_step};
use shade_gnn::{Features, Inputs};
use shade_interface::AutoShade;
use std::hint::black_box;

/// The training step of `model` (standard hyperparameters) on Cora as variant `step`
/// of workload `workload`, next to its forward pass as variant `infer`.
fn cora_step(c: &mut Criterion, workload: &str, model: Model) {
    cora_variant(c, workload, model, "");
    cora_variant(c, workload, model, "-dense");
}

/// [`cora_step`]'s two variants with the features sparse (`suffix` empty) or dense
/// (`suffix` `-dense`).
fn cora_variant(c: &mut Criterion, workload: &str, model: Model, suffix: &str) {
    let (ds, split, ctx) = shade_benches::small::cora();
    let x = if suffix.is_empty() {
        Features::<f32>::sparse_from_f32(ds.features())
    } else {
        Features::<f32>::dense(ds.features().to_dense())
    };
    let target = NodeTargets::new(&ds.labels, &split.train);
    let cfg = NodeConfig::standard(model);
    let model = cfg.build::<f32>(x.cols(), ds.num_classes);
    let mut ts = TrainState::new(&model, cfg.optimiser(), 0).expect("train state");
    let data = Data {
        inputs: Inputs::new(&ctx, &x),
        target: &target,
    };
    let threads = shade_benches::measure::threads_label();
    let mut group = c.benchmark_group(format!("peers/{workload}"));
    group.bench_with_input(
        BenchmarkId::new(format!("step{suffix}"), &threads),
        &(),
        |b, ()| {
            b.iter(|| {
                let l =
                    single_train_step(&AutoShade::REVERSE, &model, cross_entropy, &data, &mut ts)
                        .expect("step")
                        .loss;
                black_box(l);
            })
        },
    );
    group.bench_with_input(
        BenchmarkId::new(format!("infer{suffix}"), &threads),
        &(),
        |b, ()| b.iter(|| black_box(ts.predict(&model, &data.inputs).expect("forward"))),
    );
    group.finish();
}

fn gnn_step(c: &mut Criterion) {
    shade_benches::pool();
    cora_step(c, "cora_gcn", Model::Gcn);
}

fn gat_step(c: &mut Criterion) {
    shade_benches::pool();
    cora_step(c, "cora_gat", Model::Gat);
}

criterion_group!(benches, gnn_step, gat_step);
criterion_main!(benches);
