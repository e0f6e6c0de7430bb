//! The main job: train a two-layer graph neural network for node classification.
//!
//! ```text
//! cargo run --release --example train_gcn
//! cargo run --release --example train_gcn -- --data ../shared/data/cora.npz --model gat
//! cargo build --release --features mpi --example train_gcn
//! mpirun -np 2 target/release/examples/train_gcn --distributed --data ../shared/data/cora.npz
//! ```
//!
//! The body below is the API in order: data and a `GraphCtx` (the graph's constant
//! structures, built once), a `Chain` of layers, a `TrainState` (parameters, optimiser
//! state, RNG), then one `single_train_step` per epoch and `TrainState::predict` to
//! evaluate. Default data: a built-in contextual stochastic block model graph; with
//! `--data PATH` an npz citation graph (symmetrised, 20 training nodes per class, 500
//! validation, 1000 test). Option parsing, data loading, shade's proactive checks and
//! the plot writing live in `examples/support/`, shared by every example.
//!
//! With `--distributed` (feature `mpi`, under `mpirun`) the training is data-parallel:
//! every rank holds the model and takes every `world`-th training node from its rank
//! on; the ranks' gradients are averaged before each Adam step, so every rank keeps the
//! same parameters and a step is the full-batch step. Rank 0 prints the progress line
//! and writes `--checkpoint PATH` (every 50 epochs and at the end); `--resume PATH`
//! continues from one. The last line says what the exchanges cost per step.

#[path = "support/cli.rs"]
mod cli;
#[path = "support/data.rs"]
mod data;

use cli::{Args, Opt, Spec, coded, show_warnings};
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

const NODES: Opt = Opt {
    name: "nodes",
    value: "N",
    help: "nodes of the built-in CSBM graph (default 3000)",
};
const DISTRIBUTED: Opt = Opt {
    name: "distributed",
    value: "",
    help: "data-parallel over MPI, under mpirun (build with --features mpi)",
};
const CHECKPOINT: Opt = Opt {
    name: "checkpoint",
    value: "PATH",
    help: "with --distributed: rank 0 writes a checkpoint every 50 epochs and at the end",
};
const RESUME: Opt = Opt {
    name: "resume",
    value: "PATH",
    help: "with --distributed: continue from a checkpoint",
};

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
        NODES,
        DISTRIBUTED,
        CHECKPOINT,
        RESUME,
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
    if args.flag("distributed") {
        return distributed::train(args, &cfg, &model, &data, &ctx, &split, ts, seed);
    }
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
        if epoch == 1 {
            show_warnings(&ctx);
        }
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

/// `--distributed`: the same model and data, trained data-parallel over MPI.
#[cfg(feature = "mpi")]
mod distributed {
    use super::{Args, NodeData, coded};
    use shade::gnn::distributed::{DataParallel, MpiCollective};
    use shade::gnn::layers::Chain;
    use shade::gnn::loss::{NodeTargets, accuracy, cross_entropy};
    use shade::gnn::minibatch::NodeShard;
    use shade::gnn::models::NodeConfig;
    use shade::gnn::report::Progress;
    use shade::gnn::train::TrainState;
    use shade::gnn::{GraphCtx, Inputs};
    use shade::graph::NodeSplit;
    use shade::interface::AutoShade;
    use shade::rand::SeedableRng;
    use shade::rand::rngs::StdRng;
    use std::time::Duration;

    #[allow(clippy::too_many_arguments)] // the local run's values, handed over as they are
    pub(super) fn train(
        args: &Args,
        cfg: &NodeConfig,
        model: &Chain<f32>,
        data: &NodeData,
        ctx: &GraphCtx<f32>,
        split: &NodeSplit,
        ts: TrainState<f32>,
        seed: u64,
    ) -> Result<(), String> {
        let comm = MpiCollective::init().map_err(coded)?;
        // The timing barrier makes the last line's exchange time the exchanges' own
        // cost, not the wait for rank 0's evaluation.
        let mut dp = DataParallel::new(comm).seed(seed).timing_barrier(true);
        let result = run(&mut dp, args, cfg, model, data, ctx, split, ts, seed);
        // Each rank prints its error while MPI is up: finalising (when `dp` drops) waits
        // for every rank, so none exits non-zero, which makes `mpirun` stop the others
        // at once, before every rank has printed its line.
        if let Err(e) = &result {
            eprintln!("{e}");
        }
        drop(dp);
        result.map_err(|_| String::new())
    }

    /// The data-parallel training loop of [`train`].
    #[allow(clippy::too_many_arguments)] // as `train`
    fn run(
        dp: &mut DataParallel<MpiCollective>,
        args: &Args,
        cfg: &NodeConfig,
        model: &Chain<f32>,
        data: &NodeData,
        ctx: &GraphCtx<f32>,
        split: &NodeSplit,
        mut ts: TrainState<f32>,
        seed: u64,
    ) -> Result<(), String> {
        let (rank, world) = (dp.rank(), dp.world());
        // This rank's shard of the training nodes: every `world`-th, from its rank on.
        let shard: Vec<u32> = split
            .train
            .iter()
            .copied()
            .skip(rank)
            .step_by(world)
            .collect();
        let target = NodeTargets::new(&data.labels, &shard);
        let mut first = 1;
        if let Some(path) = args.str("resume") {
            first = dp.load_checkpoint(&mut ts, path).map_err(coded)?.epoch as usize;
        }
        let ids = |v: &[u32]| v.iter().map(|&i| i as usize).collect::<Vec<_>>();
        let (train_nodes, val, test) = (ids(&split.train), ids(&split.val), ids(&split.test));
        if dp.is_root() {
            println!(
                "data parallel: {world} ranks, {} training nodes each (rank 0), epochs {first}..={}",
                shard.len(),
                cfg.epochs
            );
        }
        let progress = Progress::new(cfg.epochs);
        let inputs = Inputs::new(ctx, &data.x);
        let (mut comm, mut total, mut steps) = (Duration::ZERO, Duration::ZERO, 0u32);
        let mut each = Vec::new();
        for epoch in first..=cfg.epochs {
            // Input dropout from a stream of (seed, epoch, rank): a resumed run repeats it.
            let mut rng =
                StdRng::seed_from_u64(seed ^ 0x5eed ^ ((epoch as u64) << 16) ^ rank as u64);
            let x = data.x.dropout(cfg.input_dropout, &mut rng).map_err(coded)?;
            let batch = NodeShard {
                inputs: Inputs::new(ctx, &x),
                target: &target,
            };
            let s = dp
                .step(
                    &AutoShade::REVERSE,
                    model,
                    &cross_entropy,
                    Ok(batch),
                    &mut ts,
                )
                .map_err(coded)?;
            (comm, total, steps) = (comm + s.comm, total + s.total, steps + 1);
            each.push(s.comm);
            if dp.is_root() {
                let out = ts.predict(model, &inputs).map_err(coded)?;
                let acc = |n: &[usize]| accuracy(&out, &data.labels, n).map_err(coded);
                let (tr, va, te) = (acc(&train_nodes)?, acc(&val)?, acc(&test)?);
                progress.update(
                    epoch,
                    &[("loss", s.loss), ("train", tr), ("val", va), ("test", te)],
                );
            }
            if let Some(path) = args.str("checkpoint")
                && (epoch % 50 == 0 || epoch == cfg.epochs)
            {
                dp.save_checkpoint(&ts, epoch as u64 + 1, path)
                    .map_err(coded)?;
            }
        }
        let checksum: f64 = ts
            .params
            .values()
            .iter()
            .flat_map(|a| a.iter())
            .map(|&v| f64::from(v))
            .sum();
        let ms = |d: Duration| 1e3 * d.as_secs_f64() / f64::from(steps.max(1));
        each.sort_unstable();
        let median = each.get(each.len() / 2).copied().unwrap_or_default();
        println!(
            "rank {rank}: {:.3} ms per step, of which {:.3} ms exchanging reports and gradients \
             (median {:.3} ms; {:.1}%, {} parameters); parameter checksum {checksum:.9}",
            ms(total),
            ms(comm),
            1e3 * median.as_secs_f64(),
            100.0 * comm.as_secs_f64() / total.as_secs_f64().max(1e-12),
            ts.params.num_scalars()
        );
        Ok(())
    }
}

/// Without the `mpi` feature, `--distributed` says how to get it.
#[cfg(not(feature = "mpi"))]
mod distributed {
    use super::{Args, NodeData};
    use shade::gnn::GraphCtx;
    use shade::gnn::layers::Chain;
    use shade::gnn::models::NodeConfig;
    use shade::gnn::train::TrainState;
    use shade::graph::NodeSplit;

    #[allow(clippy::too_many_arguments)]
    pub(super) fn train(
        _: &Args,
        _: &NodeConfig,
        _: &Chain<f32>,
        _: &NodeData,
        _: &GraphCtx<f32>,
        _: &NodeSplit,
        _: TrainState<f32>,
        _: u64,
    ) -> Result<(), String> {
        Err("error: `--distributed` needs the `mpi` feature: \
             cargo build --release --features mpi --example train_gcn, \
             then mpirun -np 2 target/release/examples/train_gcn --distributed"
            .into())
    }
}

fn main() -> ExitCode {
    SPEC.run(train)
}
