//! The citation-graph accuracy protocol: `--seeds` seeds, each with its own random
//! split (by default PyG Planetoid's random split: 20 labelled nodes per class, 500
//! validation, 1000 test; `--split shchur`: 20 training and 30 validation nodes per
//! class, the rest for testing, as Shchur et al.), optionally on the largest connected
//! component (`--lcc`, PyG's `LargestConnectedComponents`, as Shchur et al.), a
//! two-layer GCN (16 hidden, dropout 0.5, Adam lr 0.01, weight decay 5e-4 on the first
//! layer, 200 epochs) and a GAT (8 heads × 8 hidden, dropout 0.6, lr 0.005, weight decay
//! 5e-4). Prints the test accuracy after the last epoch and at the epoch of the best
//! validation accuracy (model selection on the validation set, never on the test set),
//! and plots seed 0's curve of each model.
//!
//! ```text
//! cargo run --release --example cora_benchmark
//! cargo run --release --example cora_benchmark -- --data ../shared/data/citeseer.npz \
//!     --normalize-features --model gcn --seeds 10 [--lcc] [--split shchur]
//! ```

#[path = "support/cli.rs"]
mod cli;
#[path = "support/data.rs"]
mod data;

use cli::{Args, Spec, coded};
use data::{NodeData, Protocol};
use shade::gnn::models::{Model, NodeConfig, train_node_classifier};
use shade::gnn::{Features, GraphCtx};
use std::process::ExitCode;
use std::time::Instant;

const SPEC: Spec = Spec {
    program: "cora_benchmark",
    about: "The 10-seed citation-graph protocol (default data: ../shared/data/cora.npz).",
    opts: &[
        cli::DATA_NPZ,
        cli::NORMALIZE,
        cli::LCC,
        cli::SPLIT,
        cli::MODELS,
        cli::SEEDS,
        cli::EPOCHS,
        cli::THREADS,
        cli::PLOT,
    ],
};

fn mean_std(v: &[f64]) -> (f64, f64) {
    let m = v.iter().sum::<f64>() / v.len() as f64;
    let s = (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64).sqrt();
    (m, s)
}

fn run(args: &Args) -> Result<(), String> {
    args.threads()?;
    let seeds = args.count("seeds", 10)? as u64;
    let epochs = args.count("epochs", 200)?;
    let models: Vec<Model> = args
        .str("model")
        .unwrap_or("gcn,gat")
        .split(',')
        .map(|m| m.parse().map_err(coded))
        .collect::<Result<_, _>>()?;
    let default = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/cora.npz");
    let path = args.str("data").unwrap_or(default);
    let protocol = Protocol::from_args(args)?;
    let data = NodeData::load(Some(path), &protocol)?;
    let ctx = GraphCtx::<f32>::new(&data.graph);
    let x: &Features<f32> = &data.x;
    println!(
        "{}: {} nodes, {} edges (symmetrised), {} features; {}; {} threads",
        data.name,
        ctx.num_nodes(),
        ctx.edges().num_edges(),
        x.cols(),
        protocol.describe(),
        rayon::current_num_threads()
    );
    for model in models {
        let (mut last, mut best) = (Vec::new(), Vec::new());
        let t = Instant::now();
        for seed in 0..seeds {
            let split = data.split(seed)?;
            let cfg = NodeConfig {
                seed,
                epochs,
                ..NodeConfig::standard(model)
            };
            let mut r = train_node_classifier(&cfg, &ctx, x, &data.labels, &split, |_, _| {})
                .map_err(coded)?;
            println!(
                "{model:?} seed {seed}: test {:.1}% after {epochs} epochs, {:.1}% at best validation (epoch {})",
                100.0 * r.final_test_acc,
                100.0 * r.test_acc,
                r.best_epoch
            );
            if seed == 0 {
                r.curve.title = format!(
                    "{} on {}, seed 0",
                    format!("{model:?}").to_uppercase(),
                    data.name
                );
                r.curve.mark_epoch(r.best_epoch, "best validation");
                let name = format!("cora_benchmark_{}.svg", format!("{model:?}").to_lowercase());
                let path = match args.str("plot") {
                    // One plot per model: the model's name before the extension.
                    Some(p) => {
                        let p = std::path::Path::new(p);
                        let stem = p.file_stem().map_or("plot".into(), |s| s.to_string_lossy());
                        p.with_file_name(format!(
                            "{stem}_{}.svg",
                            format!("{model:?}").to_lowercase()
                        ))
                    }
                    None => shade::gnn::report::output_path(&name),
                };
                cli::write_curve(&r.curve, &path)?;
            }
            last.push(r.final_test_acc);
            best.push(r.test_acc);
        }
        let (ml, sl) = mean_std(&last);
        let (mb, sb) = mean_std(&best);
        println!(
            "{model:?}: mean test accuracy over {seeds} seeds: {:.2}% ± {:.2} ({epochs} epochs), {:.2}% ± {:.2} (best validation epoch); {:.1} s",
            100.0 * ml,
            100.0 * sl,
            100.0 * mb,
            100.0 * sb,
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    SPEC.run(run)
}
