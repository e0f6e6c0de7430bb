//! Graph classification on batched graphs: rings versus random graphs with the same
//! number of nodes and edges (the random ones have uneven degrees). Two GIN layers,
//! global mean pooling over each graph of a batch (a small layer written here with the
//! `Layer` trait), and a linear classifier; mini-batches of 32 graphs, Adam; 280
//! graphs train, 40 validate (the best validation epoch is marked on the plot), 80 test.
//!
//! ```text
//! cargo run --release --example graph_classification [-- --epochs 60 --seed 0 --plot PATH]
//! ```

#[path = "support/cli.rs"]
mod cli;

use cli::{Args, Spec, coded};
use shade::autodiff::tensor::{Tape, Var};
use shade::gnn::layers::{Activation, Chain, Dense, GINConv};
use shade::gnn::loss::{NodeTargets, accuracy, cross_entropy};
use shade::gnn::optim::Optimiser;
use shade::gnn::report::{Progress, TrainingCurve};
use shade::gnn::train::{Data, TrainState, single_train_step};
use shade::gnn::{
    Env, Features, Float, GnnResult, GraphCtx, Input, Inputs, Layer, ParamVars, Params, State,
    StateScope,
};
use shade::graph::Graph;
use shade::interface::AutoShade;
use shade::rand::rngs::StdRng;
use shade::rand::{RngExt, SeedableRng};
use std::process::ExitCode;

const SPEC: Spec = Spec {
    program: "graph_classification",
    about: "GIN graph classification on batched graphs: rings versus random graphs.",
    opts: &[cli::EPOCHS, cli::SEED, cli::THREADS, cli::PLOT],
};

/// Mean of the node rows of every graph in the batch: `[num_graphs, F]`.
struct GlobalMeanPool;

impl<T: Float> Layer<T> for GlobalMeanPool {
    fn name(&self) -> &'static str {
        "GlobalMeanPool"
    }
    fn init(&self, _rng: &mut StdRng) -> (Params<T>, State<T>) {
        (Params::new(), State::new())
    }
    fn forward<'a>(
        &self,
        t: &mut Tape<'a, T>,
        env: &mut Env<'a, '_, T>,
        x: Input<'a, T>,
        _p: ParamVars<'_>,
        _st: StateScope<'_, T>,
    ) -> GnnResult<Var> {
        let g = env.graph("GlobalMeanPool")?;
        let x = x.dense(t)?;
        Ok(t.scatter_mean(x, g.batch(), g.num_graphs())?)
    }
    fn is_graph_layer(&self) -> bool {
        true
    }
}

fn ring(n: usize) -> Result<Graph, String> {
    let src: Vec<u32> = (0..n as u32)
        .flat_map(|i| [i, (i + 1) % n as u32])
        .collect();
    let dst: Vec<u32> = (0..n as u32)
        .flat_map(|i| [(i + 1) % n as u32, i])
        .collect();
    Graph::try_new(n, src, dst).map_err(coded)
}

fn random_like(n: usize, rng: &mut StdRng) -> Result<Graph, String> {
    // n undirected edges between random distinct nodes, as a ring has.
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    while src.len() < 2 * n {
        let (u, v) = (rng.random_range(0..n as u32), rng.random_range(0..n as u32));
        if u != v {
            src.extend([u, v]);
            dst.extend([v, u]);
        }
    }
    Graph::try_new(n, src, dst).map_err(coded)
}

/// A batch of graphs prepared once: context, features (a constant 1 per node), labels.
struct Batch {
    ctx: GraphCtx<f32>,
    x: Features<f32>,
    y: NodeTargets,
}

fn batch(graphs: &[(Graph, usize)]) -> Result<Batch, String> {
    let g = Graph::batch(&graphs.iter().map(|p| p.0.clone()).collect::<Vec<_>>()).map_err(coded)?;
    let x = Features::dense(shade::ndarray::Array2::ones((g.num_nodes(), 1)));
    let labels: Vec<usize> = graphs.iter().map(|p| p.1).collect();
    Ok(Batch {
        ctx: GraphCtx::new(&g),
        x,
        y: NodeTargets {
            nodes: (0..labels.len()).collect(),
            labels,
        },
    })
}

fn run(args: &Args) -> Result<(), String> {
    args.threads()?;
    let seed: u64 = args.get("seed", 0)?;
    let epochs = args.count("epochs", 60)?;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut graphs: Vec<(Graph, usize)> = (0..400)
        .map(|i| {
            let n = rng.random_range(10..30);
            Ok(if i % 2 == 0 {
                (ring(n)?, 0)
            } else {
                (random_like(n, &mut rng)?, 1)
            })
        })
        .collect::<Result<_, String>>()?;
    // Shuffle, then 280 for training (batches of 32), 40 for validation, 80 for testing.
    for i in (1..graphs.len()).rev() {
        graphs.swap(i, rng.random_range(0..=i));
    }
    let train: Vec<Batch> = graphs[..280]
        .chunks(32)
        .map(batch)
        .collect::<Result<_, _>>()?;
    let (val, test) = (batch(&graphs[280..320])?, batch(&graphs[320..])?);
    let h = 32;
    let mlp = |i: usize| {
        Chain::<f32>::new()
            .push(Dense::new(i, h))
            .push(Activation::Relu)
            .push(Dense::new(h, h))
    };
    let model = Chain::new()
        .add("conv1", GINConv::new(mlp(1)))
        .add("act1", Activation::Relu)
        .add("conv2", GINConv::new(mlp(h)))
        .add("act2", Activation::Relu)
        .add("pool", GlobalMeanPool)
        .add("head", Dense::new(h, 2));
    let mut ts = TrainState::new(&model, Optimiser::adam(0.01), seed).map_err(coded)?;
    let progress = Progress::new(epochs);
    let mut curve = TrainingCurve::new(["loss", "val acc", "test acc"])
        .with_title(format!("GIN on rings vs random graphs, seed {seed}"));
    let accuracy_on = |ts: &mut TrainState<f32>, b: &Batch| {
        let out = ts
            .predict(&model, &Inputs::new(&b.ctx, &b.x))
            .map_err(coded)?;
        accuracy(&out, &b.y.labels, &b.y.nodes).map_err(coded)
    };
    let (mut best_val, mut best_epoch, mut best_test) = (f64::NEG_INFINITY, 0, 0.0);
    for epoch in 1..=epochs {
        let mut loss = 0.0;
        for b in &train {
            let data = Data {
                inputs: Inputs::new(&b.ctx, &b.x),
                target: &b.y,
            };
            let l = single_train_step(&AutoShade::REVERSE, &model, cross_entropy, &data, &mut ts)
                .map_err(coded)?
                .loss;
            loss += f64::from(l) / train.len() as f64;
        }
        let (va, te) = (accuracy_on(&mut ts, &val)?, accuracy_on(&mut ts, &test)?);
        if va > best_val {
            (best_val, best_epoch, best_test) = (va, epoch, te);
        }
        curve.push(&[loss, va, te]);
        progress.update(epoch, &[("loss", loss), ("val acc", va), ("test acc", te)]);
    }
    curve.mark_epoch(best_epoch, "best validation");
    let acc = curve.rows.last().map_or(0.0, |r| r[2]);
    println!(
        "final test accuracy (80 graphs, rings vs random): {:.1}% (at the best validation epoch {best_epoch}: test {:.1}%, val {:.1}%)",
        100.0 * acc,
        100.0 * best_test,
        100.0 * best_val
    );
    cli::write_curve(&curve, &args.plot("graph_classification.svg"))
}

fn main() -> ExitCode {
    SPEC.run(run)
}
