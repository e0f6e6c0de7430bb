//! The Cora accuracy protocol: 10 seeds, each with its own random split (20 labelled
//! nodes per class, 500 validation, 1000 test), a two-layer GCN (16 hidden, dropout
//! 0.5, Adam lr 0.01, weight decay 5e-4 on the first layer, 200 epochs) and a GAT
//! (8 heads × 8 hidden, dropout 0.6, lr 0.005, weight decay 5e-4, 200 epochs).
//! Prints the test accuracy after the last epoch and at the best validation epoch.
//!
//! ```text
//! cargo run --release --example cora_benchmark [-- PATH [SEEDS [MODELS]]]
//! cargo run --release --example cora_benchmark -- ../shared/data/cora.npz 10 gcn,gat
//! ```

use shade::gnn::models::{Model, NodeConfig, train_node_classifier};
use shade::gnn::{Features, GraphCtx};
use shade::graph::{NpzOptions, read_npz};
use std::time::Instant;

fn mean_std(v: &[f64]) -> (f64, f64) {
    let m = v.iter().sum::<f64>() / v.len() as f64;
    let s = (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64).sqrt();
    (m, s)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let default = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/cora.npz");
    let path = args.first().map_or(default, String::as_str);
    let seeds: u64 = args.get(1).map_or(Ok(10), |s| s.parse())?;
    let models: Vec<Model> = args
        .get(2)
        .map_or("gcn,gat", String::as_str)
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let ds = read_npz(path, NpzOptions::undirected())?;
    let ctx = GraphCtx::<f32>::new(&ds.graph);
    let x = Features::<f32>::sparse_from_f32(ds.features());
    println!(
        "{path}: {} nodes, {} edges (symmetrised), {} features; {} threads",
        ctx.num_nodes(),
        ctx.edges().num_edges(),
        x.cols(),
        rayon::current_num_threads()
    );
    for model in models {
        let (mut last, mut best) = (Vec::new(), Vec::new());
        let t = Instant::now();
        for seed in 0..seeds {
            let split = ds.split(20, 500, 1000, seed)?;
            let cfg = NodeConfig {
                seed,
                ..NodeConfig::standard(model)
            };
            let r = train_node_classifier(&cfg, &ctx, &x, &ds.labels, &split, |_, _| {})?;
            println!(
                "{model:?} seed {seed}: test {:.1}% after 200 epochs, {:.1}% at best validation (epoch {})",
                100.0 * r.final_test_acc,
                100.0 * r.test_acc,
                r.best_epoch
            );
            last.push(r.final_test_acc);
            best.push(r.test_acc);
        }
        let (ml, sl) = mean_std(&last);
        let (mb, sb) = mean_std(&best);
        println!(
            "{model:?}: mean test accuracy over {seeds} seeds: {:.2}% ± {:.2} (200 epochs), {:.2}% ± {:.2} (best validation epoch); {:.1} s",
            100.0 * ml,
            100.0 * sl,
            100.0 * mb,
            100.0 * sb,
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
