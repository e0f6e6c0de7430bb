//! Ready-made node classifiers (the two-layer GCN, GAT, GraphSAGE and GIN of the
//! papers' and PyG's examples) and [`train_node_classifier`], the usual full-batch
//! protocol with model selection on the validation set.
//!
//! ```
//! use shade_gnn::models::{train_node_classifier, Model, NodeConfig};
//! use shade_gnn::{Features, GraphCtx};
//! let ds = shade_graph::csbm(300, 3, 16, 8.0, 1.0, 0)?;
//! let split = shade_graph::split_per_class(&ds.labels, 3, 10, 60, 150, 0)?;
//! let ctx = GraphCtx::<f32>::new(&ds.graph);
//! let x = Features::dense(ds.features.clone());
//! let cfg = NodeConfig { epochs: 60, ..NodeConfig::standard(Model::Gcn) };
//! let run = train_node_classifier(&cfg, &ctx, &x, &ds.labels, &split, |_, _| {})?;
//! assert!(run.test_acc > 0.6, "{}", run.test_acc);
//! # Ok::<(), shade_gnn::GnnError>(())
//! ```

use crate::ctx::{Float, GraphCtx};
use crate::error::{GnnError, GnnResult};
use crate::layer::{Features, Inputs};
use crate::layers::{Activation, Chain, Dense, Dropout, GATConv, GCNConv, GINConv, SAGEConv};
use crate::loss::{NodeTargets, accuracy, cross_entropy};
use crate::optim::Optimiser;
use crate::report::TrainingCurve;
use crate::train::{Data, TrainState, single_train_step};
use ndarray::{ArrayD, Axis};
use rand::SeedableRng;
use rand::rngs::StdRng;
use shade_graph::NodeSplit;
use shade_interface::AutoShade;

/// The architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// `GCNConv → ReLU → Dropout → GCNConv` (Kipf & Welling).
    Gcn,
    /// `GATConv(heads) → ELU → Dropout → GATConv(1 head)` (Veličković et al.).
    Gat,
    /// `SAGEConv → ReLU → Dropout → SAGEConv` (mean aggregation).
    Sage,
    /// `GINConv(MLP) → ReLU → Dropout → GINConv(MLP)`.
    Gin,
}

impl std::str::FromStr for Model {
    type Err = GnnError;
    fn from_str(s: &str) -> GnnResult<Model> {
        match s.to_ascii_lowercase().as_str() {
            "gcn" => Ok(Model::Gcn),
            "gat" => Ok(Model::Gat),
            "sage" | "graphsage" => Ok(Model::Sage),
            "gin" => Ok(Model::Gin),
            _ => Err(GnnError::setting("model", s, "one of gcn, gat, sage, gin")),
        }
    }
}

/// Hyperparameters of a node classifier and its training.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeConfig {
    /// The architecture.
    pub model: Model,
    /// Hidden width (per head for GAT).
    pub hidden: usize,
    /// Attention heads of the first GAT layer.
    pub heads: usize,
    /// Dropout probability (hidden layer, and GAT's attention coefficients).
    pub dropout: f64,
    /// Dropout probability on the input features (applied to the constant features
    /// before each step, as in PyG's and the papers' examples).
    pub input_dropout: f64,
    /// Training epochs (one full-batch step each).
    pub epochs: usize,
    /// Adam's learning rate.
    pub lr: f64,
    /// Weight decay (L2, as PyTorch's Adam).
    pub weight_decay: f64,
    /// Apply the weight decay to the first layer only (Kipf & Welling's GCN).
    pub decay_first_layer_only: bool,
    /// Seed of the parameters and the dropout masks.
    pub seed: u64,
}

impl NodeConfig {
    /// The papers' hyperparameters: GCN 16 hidden, dropout 0.5 (input and hidden), lr
    /// 0.01, weight decay 5e-4 on the first layer, 200 epochs; GAT 8 heads × 8 hidden,
    /// dropout 0.6 (input, hidden, attention), lr 0.005, weight decay 5e-4; SAGE and GIN
    /// as GCN with 64 hidden.
    pub fn standard(model: Model) -> NodeConfig {
        let base = NodeConfig {
            model,
            hidden: 16,
            heads: 8,
            dropout: 0.5,
            input_dropout: 0.5,
            epochs: 200,
            lr: 0.01,
            weight_decay: 5e-4,
            decay_first_layer_only: true,
            seed: 0,
        };
        match model {
            Model::Gcn => base,
            Model::Gat => NodeConfig {
                hidden: 8,
                dropout: 0.6,
                input_dropout: 0.6,
                lr: 0.005,
                decay_first_layer_only: false,
                ..base
            },
            Model::Sage | Model::Gin => NodeConfig { hidden: 64, ..base },
        }
    }

    /// Checks the sizes and rates (`SHADE-E0404`).
    pub fn validate(&self) -> GnnResult<()> {
        if self.hidden == 0 {
            return Err(GnnError::setting("hidden", 0, "at least 1"));
        }
        if self.heads == 0 {
            return Err(GnnError::setting("heads", 0, "at least 1"));
        }
        for (n, p) in [
            ("dropout", self.dropout),
            ("input_dropout", self.input_dropout),
        ] {
            if !(0.0..1.0).contains(&p) {
                return Err(GnnError::setting(n, p, "a value in [0, 1)"));
            }
        }
        if self.epochs == 0 {
            return Err(GnnError::setting("epochs", 0, "at least 1"));
        }
        Ok(())
    }

    /// The model for `features` inputs and `classes` outputs (logits). The first
    /// graph layer is named `conv1`, the second `conv2`.
    pub fn build<T: Float>(&self, features: usize, classes: usize) -> Chain<T> {
        let (h, p) = (self.hidden, self.dropout);
        let mlp = |i: usize, o: usize| {
            Chain::<T>::new()
                .push(Dense::new(i, h))
                .push(Activation::Relu)
                .push(Dense::new(h, o))
        };
        match self.model {
            Model::Gcn => Chain::new()
                .add("conv1", GCNConv::new(features, h))
                .add("act", Activation::Relu)
                .add("drop", Dropout::new(p))
                .add("conv2", GCNConv::new(h, classes)),
            Model::Gat => Chain::new()
                .add(
                    "conv1",
                    GATConv::new(features, h)
                        .with_heads(self.heads)
                        .with_dropout(p),
                )
                .add("act", Activation::Elu(1.0))
                .add("drop", Dropout::new(p))
                .add(
                    "conv2",
                    GATConv::new(h * self.heads, classes)
                        .with_concat(false)
                        .with_dropout(p),
                ),
            Model::Sage => Chain::new()
                .add("conv1", SAGEConv::new(features, h))
                .add("act", Activation::Relu)
                .add("drop", Dropout::new(p))
                .add("conv2", SAGEConv::new(h, classes)),
            Model::Gin => Chain::new()
                .add("conv1", GINConv::new(mlp(features, h)))
                .add("act", Activation::Relu)
                .add("drop", Dropout::new(p))
                .add("conv2", GINConv::new(mlp(h, classes))),
        }
    }

    /// Adam with this configuration's rate and decay.
    pub fn optimiser(&self) -> Optimiser {
        if self.decay_first_layer_only {
            Optimiser::adam(self.lr).weight_decay_for("conv1.", self.weight_decay)
        } else {
            Optimiser::adam(self.lr).weight_decay(self.weight_decay)
        }
    }
}

/// The outcome of [`train_node_classifier`].
#[derive(Clone, Debug, PartialEq)]
pub struct NodeRun {
    /// Loss, train / validation / test accuracy per epoch.
    pub curve: TrainingCurve,
    /// Test accuracy after the last epoch.
    pub final_test_acc: f64,
    /// Best validation accuracy (ties: lower validation loss).
    pub best_val_acc: f64,
    /// Test accuracy at the epoch of the best validation accuracy.
    pub test_acc: f64,
    /// That epoch (1-based).
    pub best_epoch: usize,
}

fn mean_nll<T: Float>(logits: &ArrayD<T>, labels: &[usize], nodes: &[usize]) -> f64 {
    let mut s = 0.0;
    for &v in nodes {
        let row = logits.index_axis(Axis(0), v);
        let m = row
            .iter()
            .fold(f64::NEG_INFINITY, |a, &b| a.max(b.to_f64().unwrap_or(0.0)));
        let z: f64 = row
            .iter()
            .map(|&b| (b.to_f64().unwrap_or(0.0) - m).exp())
            .sum();
        s += m + z.ln() - row[labels[v]].to_f64().unwrap_or(0.0);
    }
    s / nodes.len().max(1) as f64
}

/// Trains `cfg`'s model on the nodes of `split.train` for `cfg.epochs` full-batch
/// Adam steps, evaluating train/validation/test accuracy after every epoch;
/// `on_epoch(epoch, metrics)` sees `loss`, `train`, `val`, `test`.
///
/// Errors: invalid settings (`SHADE-E0404`), labels or features that do not fit the
/// graph (`SHADE-E0405`), and the errors of the training step.
pub fn train_node_classifier<T: Float>(
    cfg: &NodeConfig,
    ctx: &GraphCtx<T>,
    x: &Features<T>,
    labels: &[usize],
    split: &NodeSplit,
    mut on_epoch: impl FnMut(usize, &[(&str, f64)]),
) -> GnnResult<NodeRun> {
    cfg.validate()?;
    if labels.len() != ctx.num_nodes() {
        return Err(GnnError::DataMismatch {
            what: "number of labels".into(),
            expected: ctx.num_nodes().to_string(),
            found: labels.len().to_string(),
        });
    }
    let classes = labels.iter().max().map_or(0, |m| m + 1);
    let model = cfg.build::<T>(x.cols(), classes);
    let mut ts = TrainState::new(&model, cfg.optimiser(), cfg.seed)?;
    let ids = |v: &[u32]| v.iter().map(|&i| i as usize).collect::<Vec<_>>();
    let (val, test) = (ids(&split.val), ids(&split.test));
    let target = NodeTargets::new(labels, &split.train);
    let inputs = Inputs::new(ctx, x);
    let mut drop_rng = StdRng::seed_from_u64(cfg.seed ^ 0x5eed_d80b);
    let mut curve = TrainingCurve::new(["loss", "train acc", "val acc", "test acc"]);
    let mut best = (f64::NEG_INFINITY, f64::INFINITY, 0.0, 0);
    let mut last_test = 0.0;
    for epoch in 1..=cfg.epochs {
        let dropped;
        let step_x = if cfg.input_dropout > 0.0 {
            dropped = x.dropout(cfg.input_dropout, &mut drop_rng)?;
            &dropped
        } else {
            x
        };
        let data = Data {
            inputs: Inputs::new(ctx, step_x),
            target: &target,
        };
        let loss = single_train_step(&AutoShade::REVERSE, &model, cross_entropy, &data, &mut ts)?
            .loss
            .to_f64()
            .unwrap_or(f64::NAN);
        let out = ts.predict(&model, &inputs)?;
        let tr = accuracy(&out, labels, &target.nodes)?;
        let va = accuracy(&out, labels, &val)?;
        let te = accuracy(&out, labels, &test)?;
        let vl = mean_nll(&out, labels, &val);
        if va > best.0 || (va == best.0 && vl < best.1) {
            best = (va, vl, te, epoch);
        }
        last_test = te;
        curve.push(&[loss, tr, va, te]);
        on_epoch(
            epoch,
            &[("loss", loss), ("train", tr), ("val", va), ("test", te)],
        );
    }
    Ok(NodeRun {
        curve,
        final_test_acc: last_test,
        best_val_acc: best.0,
        test_acc: best.2,
        best_epoch: best.3,
    })
}
