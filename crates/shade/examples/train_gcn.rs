//! The main job: train a two-layer graph neural network for node classification.
//!
//! ```text
//! cargo run --release --example train_gcn
//! cargo run --release --example train_gcn -- --data ../shared/data/cora.npz --model gat
//! ```
//!
//! The body below is the API in order: data and a `GraphCtx` (the graph's constant
//! structures, built once), a `Chain` of layers, a `TrainState` (parameters, optimiser
//! state, RNG), then one `single_train_step` per epoch and `TrainState::predict` to
//! evaluate. Default data: a built-in contextual stochastic block model graph; with
//! `--data PATH` an npz citation graph (symmetrised, 20 training nodes per class, 500
//! validation, 1000 test). Option parsing, data loading, shade's proactive checks and
//! the plot writing live in `examples/support/`, shared by every example.

#[path = "support/cli.rs"]
mod cli;
#[path = "support/data.rs"]
mod data;

use cli::{Args, Spec, coded};
use data::NodeData;
use shade::gnn::layers::{Activation, Chain, Dropout, GCNConv};
use shade::gnn::loss::{NodeTargets, accuracy, cross_entropy};
use shade::gnn::models::{Model, NodeConfig};
use shade::gnn::report::{Progress, TrainingCurve};
use shade::gnn::train::{Data, TrainState, single_train_step};
use shade::gnn::{GraphCtx, Inputs};
use shade::interface::AutoShade;
use shade::rand::SeedableRng;
use shade::rand::rngs::StdRng;
use std::process::ExitCode;
use std::time::Instant;

const SPEC: Spec = Spec {
    program: "train_gcn",
    about: "Trains a two-layer GNN for node classification and plots its training curve.",
    opts: &[
        cli::DATA,
        cli::NORMALIZE,
        cli::LCC,
        cli::SPLIT,
        cli::MODEL,
        cli::HIDDEN,
        cli::EPOCHS,
        cli::LR,
        cli::SEED,
        cli::THREADS,
        cli::PLOT,
    ],
};

fn train(args: &Args) -> Result<(), String> {
    args.threads()?;
    let seed: u64 = args.get("seed", 0)?;
    let data = NodeData::from_args(args)?;
    let split = data.split(seed)?;
    data.check(&split)?;
    println!("data: {}", data.describe(&split));

    // The papers' hyperparameters for the chosen model, adjusted by the options.
    let kind: Model = args.get("model", Model::Gcn)?;
    let mut cfg = NodeConfig::standard(kind);
    cfg.hidden = args.count("hidden", cfg.hidden)?;
    cfg.epochs = args.count("epochs", cfg.epochs)?;
    cfg.lr = args.get("lr", cfg.lr)?;

    // The model: a Chain of layers, each under a PyTorch-style name (`conv1.lin.weight`).
    let (f, c, h) = (data.x.cols(), data.num_classes, cfg.hidden);
    let model: Chain<f32> = match kind {
        Model::Gcn => Chain::new()
            .add("conv1", GCNConv::new(f, h))
            .add("act", Activation::Relu)
            .add("drop", Dropout::new(cfg.dropout))
            .add("conv2", GCNConv::new(h, c)),
        // GAT, GraphSAGE and GIN as their papers (and PyG's examples) build them.
        _ => cfg.build(f, c),
    };
    // The graph's constant structures (normalised adjacency, edge lists), built once.
    let ctx = GraphCtx::new(&data.graph);
    let inputs = Inputs::new(&ctx, &data.x);
    // Parameters, model state, Adam's buffers and dropout's RNG, all in one value.
    let mut ts = TrainState::new(&model, cfg.optimiser(), seed).map_err(coded)?;
    let target = NodeTargets::new(&data.labels, &split.train);
    let nodes = |v: &[u32]| v.iter().map(|&i| i as usize).collect::<Vec<_>>();
    let (train_nodes, val, test) = (nodes(&split.train), nodes(&split.val), nodes(&split.test));
    println!(
        "model: {kind:?}, hidden {h}, dropout {}, Adam lr {}, weight decay {}, {} epochs, {} threads",
        cfg.dropout,
        cfg.lr,
        cfg.weight_decay,
        cfg.epochs,
        rayon::current_num_threads()
    );

    let title = format!(
        "{} on {}, seed {seed}",
        format!("{kind:?}").to_uppercase(),
        data.name
    );
    let mut curve =
        TrainingCurve::new(["loss", "train acc", "val acc", "test acc"]).with_title(title);
    let (mut best_val, mut best_epoch, mut best_test) = (f64::NEG_INFINITY, 0, 0.0);
    let mut input_dropout = StdRng::seed_from_u64(seed ^ 0x5eed);
    let progress = Progress::new(cfg.epochs);
    let t0 = Instant::now();
    for epoch in 1..=cfg.epochs {
        // One step in training mode: dropout on the input features, the loss and its
        // gradient with the native reverse mode, one Adam update.
        let x = data
            .x
            .dropout(cfg.input_dropout, &mut input_dropout)
            .map_err(coded)?;
        let step = Data {
            inputs: Inputs::new(&ctx, &x),
            target: &target,
        };
        let loss = single_train_step(&AutoShade::REVERSE, &model, cross_entropy, &step, &mut ts)
            .map_err(coded)?
            .loss;
        // Evaluation mode (no dropout, running statistics): accuracies of the node sets.
        let out = ts.predict(&model, &inputs).map_err(coded)?;
        let acc = |n: &[usize]| accuracy(&out, &data.labels, n).map_err(coded);
        let (tr, va, te) = (acc(&train_nodes)?, acc(&val)?, acc(&test)?);
        if va > best_val {
            (best_val, best_epoch, best_test) = (va, epoch, te);
        }
        curve.push(&[f64::from(loss), tr, va, te]);
        progress.update(
            epoch,
            &[
                ("loss", f64::from(loss)),
                ("train", tr),
                ("val", va),
                ("test", te),
            ],
        );
    }
    let secs = t0.elapsed().as_secs_f64();
    curve.mark_epoch(best_epoch, "best validation");
    let last_test = curve.rows.last().map_or(0.0, |r| r[3]);
    println!(
        "final test accuracy: {:.2}%  (at the best validation epoch {best_epoch}: test {:.2}%, val {:.2}%)",
        100.0 * last_test,
        100.0 * best_test,
        100.0 * best_val
    );
    println!(
        "training {secs:.2} s ({:.2} ms per epoch incl. evaluation)",
        1e3 * secs / cfg.epochs as f64
    );
    cli::write_curve(&curve, &args.plot("train_gcn.svg"))
}

fn main() -> ExitCode {
    SPEC.run(train)
}
