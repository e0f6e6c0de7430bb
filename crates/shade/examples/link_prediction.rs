//! Link prediction with negative sampling: a two-layer GCN encoder on the training
//! edges, a dot-product decoder `σ(z_u · z_v)`, binary cross-entropy over the training
//! edges and as many freshly sampled non-edges every epoch; ROC AUC on held-out edges.
//!
//! ```text
//! cargo run --release --example link_prediction [-- --data ../shared/data/cora.npz]
//! ```
//!
//! Default data: a built-in contextual SBM graph; with `--data`, an npz citation graph
//! (symmetrised, sparse features).

#[path = "support/cli.rs"]
mod cli;

use cli::{Args, Spec, coded};
use shade::autodiff::AdResult;
use shade::autodiff::tensor::{Tape, Var};
use shade::gnn::layers::{Activation, Chain, GCNConv};
use shade::gnn::loss::roc_auc;
use shade::gnn::optim::Optimiser;
use shade::gnn::report::{Progress, TrainingCurve};
use shade::gnn::train::{Data, TrainState, single_train_step};
use shade::gnn::{Features, GraphCtx, Inputs};
use shade::graph::{
    Csbm, NormalizeFeatures, NpzOptions, negative_edges, random_edge_split, read_npz,
};
use shade::interface::AutoShade;
use std::process::ExitCode;

const SPEC: Spec = Spec {
    program: "link_prediction",
    about: "Link prediction: a GCN encoder, a dot-product decoder, negative sampling.",
    opts: &[
        cli::DATA,
        cli::NORMALIZE,
        cli::EPOCHS,
        cli::SEED,
        cli::THREADS,
        cli::PLOT,
    ],
};

/// Node pairs and their 0/1 labels.
struct Pairs {
    src: Vec<usize>,
    dst: Vec<usize>,
    labels: shade::ndarray::ArrayD<f32>,
}

impl Pairs {
    fn new(pos: &[(u32, u32)], neg: &[(u32, u32)]) -> Pairs {
        let all = pos.iter().chain(neg);
        let labels: Vec<f32> = pos
            .iter()
            .map(|_| 1.0)
            .chain(neg.iter().map(|_| 0.0))
            .collect();
        Pairs {
            src: all.clone().map(|p| p.0 as usize).collect(),
            dst: all.map(|p| p.1 as usize).collect(),
            labels: shade::ndarray::ArrayD::from_shape_vec(
                shade::ndarray::IxDyn(&[labels.len()]),
                labels,
            )
            .expect("one label per pair"),
        }
    }
}

/// `z_u · z_v` for every pair, as logits `[M]`.
fn scores<'a>(t: &mut Tape<'a, f32>, z: Var, y: &'a Pairs) -> AdResult<Var> {
    let zu = t.index_select(z, &y.src)?;
    let zv = t.index_select(z, &y.dst)?;
    let p = t.mul(zu, zv)?;
    t.sum_axis(p, 1)
}

fn link_loss<'a>(t: &mut Tape<'a, f32>, z: Var, y: &'a Pairs) -> AdResult<Var> {
    let s = scores(t, z, y)?;
    let l = t.constant(&y.labels);
    t.bce_with_logits(s, l)
}

fn auc(z: &shade::ndarray::ArrayD<f32>, p: &Pairs) -> Result<f64, shade::gnn::GnnError> {
    let s: Vec<f64> = p
        .src
        .iter()
        .zip(&p.dst)
        .map(|(&u, &v)| {
            (0..z.shape()[1])
                .map(|c| f64::from(z[[u, c]] * z[[v, c]]))
                .sum()
        })
        .collect();
    let l: Vec<bool> = p.labels.iter().map(|&v| v > 0.5).collect();
    roc_auc(&s, &l)
}

fn run(args: &Args) -> Result<(), String> {
    args.threads()?;
    let seed: u64 = args.get("seed", 0)?;
    let epochs = args.count("epochs", 100)?;
    let (name, g, x) = match args.str("data") {
        Some(path) => {
            let mut ds = read_npz(path, NpzOptions::undirected()).map_err(coded)?;
            if args.flag("normalize-features") {
                ds.graph = ds.graph.normalize_features().map_err(coded)?;
            }
            let x = Features::<f32>::sparse_from_f32(ds.features());
            let name = std::path::Path::new(path)
                .file_name()
                .map_or(path.to_string(), |f| f.to_string_lossy().into_owned());
            (name, ds.graph, x)
        }
        None => {
            let ds = Csbm {
                avg_degree: 10.0,
                homophily: 0.9,
                seed: 3,
                ..Csbm::new(2000, 8, 32)
            }
            .generate()
            .map_err(coded)?;
            let x = if args.flag("normalize-features") {
                NormalizeFeatures::dense(&ds.features)
            } else {
                ds.features.clone()
            };
            (
                "built-in CSBM graph".to_string(),
                ds.graph,
                Features::dense(x),
            )
        }
    };
    let split = random_edge_split(&g, 0.05, 0.1, true, seed).map_err(coded)?;
    let ctx = GraphCtx::<f32>::new(&split.train_graph);
    let test = Pairs::new(&split.test_pos, &split.test_neg);
    let val = Pairs::new(&split.val_pos, &split.val_neg);
    println!(
        "{} nodes, {} training edges (directed), {} test pairs",
        ctx.num_nodes(),
        ctx.edges().num_edges(),
        test.src.len()
    );
    let model = Chain::new()
        .add("conv1", GCNConv::new(x.cols(), 64))
        .add("act", Activation::Relu)
        .add("conv2", GCNConv::new(64, 32));
    let mut ts = TrainState::new(&model, Optimiser::adam(0.01), seed).map_err(coded)?;
    let progress = Progress::new(epochs);
    let mut curve = TrainingCurve::new(["loss", "val auc", "test auc"])
        .with_title(format!("GCN link prediction on {name}, seed {seed}"));
    let mut best = (f64::NEG_INFINITY, 0);
    for epoch in 1..=epochs {
        // Fresh negatives every epoch, as many as the positive training edges.
        let neg = negative_edges(
            &split.train_graph,
            split.train_pos.len(),
            seed ^ epoch as u64,
        )
        .map_err(coded)?;
        let pairs = Pairs::new(&split.train_pos, &neg);
        let data = Data {
            inputs: Inputs::new(&ctx, &x),
            target: &pairs,
        };
        let loss = f64::from(
            single_train_step(&AutoShade::REVERSE, &model, link_loss, &data, &mut ts)
                .map_err(coded)?
                .loss,
        );
        let z = ts.predict(&model, &Inputs::new(&ctx, &x)).map_err(coded)?;
        let (va, te) = (
            auc(&z, &val).map_err(coded)?,
            auc(&z, &test).map_err(coded)?,
        );
        if va > best.0 {
            best = (va, epoch);
        }
        curve.push(&[loss, va, te]);
        progress.update(epoch, &[("loss", loss), ("val auc", va), ("test auc", te)]);
    }
    let last = curve.rows.last().cloned().unwrap_or_default();
    println!(
        "final test ROC AUC: {:.4} (validation {:.4})",
        last[2], last[1]
    );
    curve.mark_epoch(best.1, "best validation");
    cli::write_curve(&curve, &args.plot("link_prediction.svg"))
}

fn main() -> ExitCode {
    SPEC.run(run)
}
