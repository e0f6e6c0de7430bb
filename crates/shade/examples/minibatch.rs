//! Mini-batch GraphSAGE on a large graph, as PyTorch Geometric users write it with
//! `NeighborLoader`: seed batches of the training nodes, a sampled computation
//! subgraph per batch (fan-out per hop), the seeds first, loss on the seeds only.
//!
//! ```text
//! cargo run --release --example minibatch                       # 100k-node synthetic graph
//! cargo run --release --example minibatch -- --nodes 1000000    # the 1M-node measurement
//! cargo run --release --example minibatch -- --nodes 1000000 --loader-only --max-batches 200
//! ```
//!
//! The PyG program this mirrors:
//!
//! ```python
//! loader = NeighborLoader(data, num_neighbors=[10, 10], batch_size=1024,
//!                         input_nodes=data.train_mask, shuffle=True)
//! for batch in loader:
//!     out = model(batch.x, batch.edge_index)[:batch.batch_size]
//!     loss = F.cross_entropy(out, batch.y[:batch.batch_size])
//!     loss.backward(); optimizer.step(); optimizer.zero_grad()
//! ```
//!
//! The graph is the built-in contextual SBM (average degree 10, 16 features, 4
//! classes). Features and labels travel with the graph as node data `x` and `y`; each
//! batch is sampled and prepared (its `GraphCtx`, features, targets) on the loader's
//! worker thread while the previous one trains. The program prints batches per second
//! and the peak resident memory; `--loader-only` measures the loader alone (sampling
//! and gathering the batch's features), and `--export PATH` writes the graph as an npz
//! file (`src`, `dst`, `x`, `y`) for a PyG comparison.

#[path = "support/cli.rs"]
mod cli;

use cli::{Args, Opt, Spec, coded};
use shade::gnn::layers::{Activation, Chain, Dropout, SAGEConv};
use shade::gnn::loss::{accuracy, cross_entropy};
use shade::gnn::minibatch::{Columns, MiniBatch, node_batches, train_epoch};
use shade::gnn::optim::Optimiser;
use shade::gnn::report::{Progress, TrainingCurve};
use shade::gnn::train::TrainState;
use shade::graph::ndarray::Array1;
use shade::graph::{Csbm, NeighborLoader, NpzArrays, write_npz_arrays};
use shade::interface::AutoShade;
use std::process::ExitCode;
use std::time::Instant;

const NODES: Opt = Opt {
    name: "nodes",
    value: "N",
    help: "nodes of the synthetic graph (default 100000)",
};
const FANOUT: Opt = Opt {
    name: "fanout",
    value: "LIST",
    help: "neighbours sampled per hop, -1 = all (default 10,10)",
};
const BATCH: Opt = Opt {
    name: "batch",
    value: "N",
    help: "seed nodes per batch (default 1024)",
};
const MAX_BATCHES: Opt = Opt {
    name: "max-batches",
    value: "N",
    help: "stop each epoch after N batches (default: the whole epoch)",
};
const LOADER_ONLY: Opt = Opt {
    name: "loader-only",
    value: "",
    help: "iterate the loader without training (sampling throughput)",
};
const EXPORT: Opt = Opt {
    name: "export",
    value: "PATH",
    help: "write the graph (src, dst, x, y) as an npz file and exit",
};

const SPEC: Spec = Spec {
    program: "minibatch",
    about: "Mini-batch GraphSAGE with a NeighborLoader on a large synthetic graph.",
    opts: &[
        NODES,
        FANOUT,
        BATCH,
        cli::EPOCHS,
        MAX_BATCHES,
        cli::HIDDEN,
        cli::LR,
        cli::SEED,
        cli::THREADS,
        LOADER_ONLY,
        EXPORT,
        cli::PLOT,
    ],
};

/// Peak resident memory of this process (Linux `VmHWM`), in MiB.
fn peak_rss_mib() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn run(args: &Args) -> Result<(), String> {
    args.threads()?;
    let n = args.count("nodes", 100_000)?;
    let batch = args.count("batch", 1024)?;
    let epochs = args.count("epochs", 1)?;
    let max_batches = args.count("max-batches", usize::MAX)?;
    let hidden = args.count("hidden", 64)?;
    let lr: f64 = args.get("lr", 0.01)?;
    let seed: u64 = args.get("seed", 0)?;
    let fanout: Vec<i64> = args
        .str("fanout")
        .unwrap_or("10,10")
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .map_err(|e| format!("option `--fanout`: cannot read `{s}`: {e}"))
        })
        .collect::<Result<_, _>>()?;

    // The data: graph, features `x` and labels `y` as node data (PyG's `Data`).
    let t0 = Instant::now();
    let ds = Csbm {
        seed,
        feature_signal: 1.5,
        ..Csbm::new(n, 4, 16)
    }
    .generate()
    .map_err(coded)?;
    let classes = ds.num_classes;
    let y = Array1::from_iter(ds.labels.iter().map(|&c| c as i64));
    if let Some(path) = args.str("export") {
        let (src, dst) = ds.graph.edge_index();
        let arrays = NpzArrays::new()
            .with(
                "src",
                Array1::from(src.iter().map(|&s| i64::from(s)).collect::<Vec<_>>()),
            )
            .with(
                "dst",
                Array1::from(dst.iter().map(|&d| i64::from(d)).collect::<Vec<_>>()),
            )
            .with("x", ds.features)
            .with("y", y);
        write_npz_arrays(path, &arrays).map_err(coded)?;
        println!("wrote {path}: {n} nodes, {} edges", src.len());
        return Ok(());
    }
    let mut graph = ds.graph;
    graph.set_node_data("x", ds.features).map_err(coded)?;
    graph.set_node_data("y", y).map_err(coded)?;
    // 80% of the nodes train; of every tenth node (up to 20 000) the model is tested,
    // of every tenth node shifted by five (up to 10 000) validated.
    let train: Vec<u32> = (0..n as u32)
        .filter(|v| v % 10 != 0 && v % 10 != 5)
        .collect();
    let test: Vec<u32> = (0..n as u32).step_by(10).take(20_000).collect();
    let val: Vec<u32> = (5..n as u32).step_by(10).take(10_000).collect();
    println!(
        "data: {n} nodes, {} edges, 16 features, {classes} classes, {} training nodes ({:.1} s, peak RSS {:.0} MiB)",
        graph.num_edges(),
        train.len(),
        t0.elapsed().as_secs_f64(),
        peak_rss_mib()
    );

    // The loader: shuffled seed batches, `fanout[h]` in-neighbours per node at hop h.
    let loader = NeighborLoader::new(graph, &fanout)
        .and_then(|l| l.input_nodes(&train))
        .and_then(|l| l.batch_size(batch))
        .map_err(coded)?
        .shuffle(true)
        .seed(seed);
    let steps = loader.len().min(max_batches);
    let cols = Columns::default();

    if args.flag("loader-only") {
        let t = Instant::now();
        let (mut nodes, mut edges) = (0usize, 0usize);
        for b in loader.epoch(0).take(steps) {
            let b = b.map_err(coded)?;
            nodes += b.graph.num_nodes();
            edges += b.graph.num_edges();
        }
        let secs = t.elapsed().as_secs_f64();
        println!(
            "loader only, fan-out {fanout:?}, batch {batch}: {:.1} batches/s over {steps} batches \
             (mean {:.0} nodes, {:.0} edges per batch), peak RSS {:.0} MiB",
            steps as f64 / secs,
            nodes as f64 / steps as f64,
            edges as f64 / steps as f64,
            peak_rss_mib()
        );
        return Ok(());
    }

    // GraphSAGE (mean aggregation), as PyG's `GraphSAGE(16, 64, num_layers=2)` plus a
    // dropout between the layers.
    let model: Chain<f32> = Chain::new()
        .add("conv1", SAGEConv::new(16, hidden))
        .add("act", Activation::Relu)
        .add("drop", Dropout::new(0.5))
        .add("conv2", SAGEConv::new(hidden, classes));
    let mut ts = TrainState::new(&model, Optimiser::adam(lr), seed).map_err(coded)?;
    let eval_loader = |nodes: &[u32]| {
        NeighborLoader::new(loader.graph().clone(), &fanout)
            .and_then(|l| l.input_nodes(nodes))
            .and_then(|l| l.batch_size(batch))
            .map_err(coded)
    };
    let (val_loader, test_loader) = (eval_loader(&val)?, eval_loader(&test)?);
    // The seeds' accuracy, batch by batch, in evaluation mode.
    let evaluate = |ts: &mut TrainState<f32>, l: &NeighborLoader| -> Result<f64, String> {
        let (mut hits, mut total) = (0.0, 0usize);
        for b in node_batches::<f32>(l, 0, &cols) {
            let b = b.map_err(coded)?;
            let out = ts.predict(&model, &b.data().inputs).map_err(coded)?;
            let acc = accuracy(&out, &b.target.labels, &b.target.nodes).map_err(coded)?;
            hits += acc * b.num_seeds as f64;
            total += b.num_seeds;
        }
        Ok(hits / total.max(1) as f64)
    };
    println!(
        "model: GraphSAGE 16 -> {hidden} -> {classes}, Adam lr {lr}; fan-out {fanout:?}, \
         batch {batch}, {steps} batches per epoch, {} threads",
        rayon::current_num_threads()
    );
    let mut curve = TrainingCurve::new(["loss", "val acc", "test acc"]).with_title(format!(
        "GraphSAGE (mini-batch) on a CSBM graph of {n} nodes, fan-out {fanout:?}"
    ));
    let (mut best_val, mut best_epoch, mut best_test) = (f64::NEG_INFINITY, 0, 0.0);
    let progress = Progress::new(epochs);
    let (mut train_secs, mut train_peak) = (0.0, 0.0);
    for epoch in 0..epochs {
        let t = Instant::now();
        let batches = node_batches::<f32>(&loader, epoch as u64, &cols).take(steps);
        let report = train_epoch(&AutoShade::REVERSE, &model, cross_entropy, batches, &mut ts)
            .map_err(coded)?;
        train_secs += t.elapsed().as_secs_f64();
        train_peak = peak_rss_mib();
        let (va, te) = (
            evaluate(&mut ts, &val_loader)?,
            evaluate(&mut ts, &test_loader)?,
        );
        if va > best_val {
            (best_val, best_epoch, best_test) = (va, epoch + 1, te);
        }
        curve.push(&[report.mean_loss, va, te]);
        progress.update(
            epoch + 1,
            &[
                ("loss", report.mean_loss),
                ("val acc", va),
                ("test acc", te),
            ],
        );
    }
    curve.mark_epoch(best_epoch, "best validation");
    println!(
        "test accuracy at the best validation epoch {best_epoch}: {:.2}% (val {:.2}%)",
        100.0 * best_test,
        100.0 * best_val
    );
    println!(
        "training: {:.1} batches/s (sampling on the loader's thread; evaluation not counted), \
         peak RSS {train_peak:.0} MiB while training, {:.0} MiB with the evaluation",
        (epochs * steps) as f64 / train_secs,
        peak_rss_mib()
    );
    cli::write_curve(&curve, &args.plot("minibatch.svg"))
}

fn main() -> ExitCode {
    SPEC.run(run)
}
