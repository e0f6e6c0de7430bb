//! One GCN 128 → 64 → 16 training step (forward + backward + Adam, f32, dropout 0.5,
//! cross-entropy over 10% of the nodes) on a random graph of `nodes` nodes and `edges`
//! edges (default 1M / 10M) through shade-gnn's public API, as a user program runs it:
//! the time of each step and the process's peak resident set (`VmHWM` from
//! `/proc/self/status`), after the setup (graph, features, context) and after the steps.
//!
//! `cargo run --release -p shade-benches --example gcn_large [nodes] [edges] [steps] [threads]`
//!
//! Floor per step (dense products; the gathers of `Â·H` read `nnz × width` floats):
//! forward `X·W₁` N·128·64, `Â·H₁` nnz·64, `H·W₂` N·64·16, `Â·H₂` nnz·16 multiply-adds;
//! backward about twice that (`Xᵀ·G` and `Â·G` for each; no `G·W₁ᵀ`, `X` is constant).

use ndarray::Array2;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use shade_gnn::loss::{NodeTargets, cross_entropy};
use shade_gnn::models::{Model, NodeConfig};
use shade_gnn::train::{Data, TrainState, single_train_step};
use shade_gnn::{Features, GraphCtx, Inputs};
use shade_graph::rand_graph;
use shade_interface::AutoShade;
use std::hint::black_box;
use std::time::Instant;

/// A field of `/proc/self/status` in MiB.
fn status_mib(field: &str) -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn arg(i: usize, default: usize) -> usize {
    std::env::args()
        .nth(i)
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let (n, m, steps, threads) = (arg(1, 1_000_000), arg(2, 10_000_000), arg(3, 5), arg(4, 2));
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .use_current_thread()
        .build_global()
        .expect("the global pool is built once");
    let (f_in, hidden, classes) = (128, 64, 16);
    let graph = rand_graph(n, m, 0).expect("valid sizes");
    let mut rng = StdRng::seed_from_u64(1);
    let x = Array2::from_shape_fn((n, f_in), |_| rng.random::<f32>() - 0.5);
    let x = Features::dense(x);
    let labels: Vec<usize> = (0..n).map(|_| rng.random_range(0..classes)).collect();
    let train: Vec<u32> = (0..n as u32).step_by(10).collect();
    let target = NodeTargets::new(&labels, &train);
    let ctx = GraphCtx::<f32>::shared(std::sync::Arc::new(graph));
    ctx.normalized_adjacency(shade_graph::GcnNorm::default());
    let cfg = NodeConfig {
        hidden,
        ..NodeConfig::standard(Model::Gcn)
    };
    let model = cfg.build::<f32>(f_in, classes);
    let mut ts = TrainState::new(&model, cfg.optimiser(), 0).expect("train state");
    let data = Data {
        inputs: Inputs::new(&ctx, &x),
        target: &target,
    };
    let setup = status_mib("VmHWM:");
    let mut times = Vec::with_capacity(steps);
    for _ in 0..steps {
        let t = Instant::now();
        let l = single_train_step(&AutoShade::REVERSE, &model, cross_entropy, &data, &mut ts)
            .expect("step");
        times.push(t.elapsed().as_secs_f64());
        black_box(l);
    }
    let peak = status_mib("VmHWM:");
    let rss = status_mib("VmRSS:");
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let nnz = ctx
        .normalized_adjacency(shade_graph::GcnNorm::default())
        .nnz();
    let madds = 3.0 * (n * f_in * hidden + n * hidden * classes + nnz * (hidden + classes)) as f64;
    println!(
        "gcn_large: {n} nodes, {m} edges (nnz {nnz}), {threads} threads, GCN {f_in}->{hidden}->{classes}"
    );
    println!(
        "  steps (s): {}",
        times
            .iter()
            .map(|t| format!("{t:.3}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "  min {:.3} s, median {:.3} s; floor ~{:.2} G multiply-adds per step",
        sorted[0],
        sorted[sorted.len() / 2],
        madds / 1e9
    );
    println!(
        "  peak RSS (VmHWM): after setup {setup:.0} MiB, after the steps {peak:.0} MiB; RSS at rest {rss:.0} MiB; pooled buffers {}",
        ts.pooled_buffers()
    );
}
