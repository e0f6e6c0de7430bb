//! Mini-batch training over shade-graph's loaders, as PyTorch Geometric users write it:
//!
//! ```python
//! for batch in loader:                        # NeighborLoader(data, [10, 10], batch_size=1024)
//!     out = model(batch.x, batch.edge_index)[:batch.batch_size]
//!     loss = F.cross_entropy(out, batch.y[:batch.batch_size])
//!     loss.backward(); optimizer.step(); optimizer.zero_grad()
//! ```
//!
//! - [`NodeBatch`]: a batch of a [`NeighborLoader`] prepared for a model: the sampled
//!   subgraph's [`GraphCtx`], its features and [`NodeTargets`] that select the seeds,
//!   which come first in the relabelled subgraph, so the loss (and the outputs that
//!   count, [`NodeBatch::seed_rows`]) are the seeds' only.
//! - [`GraphsBatch`]: a batch of a [`DataLoader`] (a list of graphs batched into one):
//!   context, features, one label per graph for a pooled model's `[graphs, classes]`
//!   output.
//! - [`node_batches`] / [`graph_batches`]: the loaders' epochs with that preparation on
//!   the loader's worker thread, so the training thread only trains.
//! - [`train_epoch`]: one [`single_train_step`] per
//!   batch; [`EpochReport`] holds the mean loss weighted by the items (seeds or graphs)
//!   of each batch.
//!
//! Features and labels travel with the graph as node data (PyG's `x` and `y`;
//! [`Columns`] names them), or, for features, as the graph's sparse node features.
//!
//! ```
//! use shade_gnn::layers::{Activation, Chain, SAGEConv};
//! use shade_gnn::loss::cross_entropy;
//! use shade_gnn::minibatch::{Columns, node_batches, train_epoch};
//! use shade_gnn::optim::Optimiser;
//! use shade_gnn::train::TrainState;
//! use shade_graph::{NeighborLoader, ndarray::Array1};
//! use shade_interface::AutoShade;
//!
//! let ds = shade_graph::csbm(2_000, 2, 8, 10.0, 1.5, 0)?;
//! let mut g = ds.graph.clone();
//! g.set_node_data("x", ds.features.clone())?;
//! g.set_node_data("y", Array1::from_iter(ds.labels.iter().map(|&c| c as i64)))?;
//! let loader = NeighborLoader::new(g, &[10, 10])?.batch_size(256)?.shuffle(true);
//! let model = Chain::<f32>::new()
//!     .add("conv1", SAGEConv::new(8, 16))
//!     .add("act", Activation::Relu)
//!     .add("conv2", SAGEConv::new(16, 2));
//! let mut ts = TrainState::new(&model, Optimiser::adam(0.01), 0)?;
//! let mut losses = Vec::new();
//! for epoch in 0..3 {
//!     let batches = node_batches::<f32>(&loader, epoch, &Columns::default());
//!     let report = train_epoch(&AutoShade::REVERSE, &model, cross_entropy, batches, &mut ts)?;
//!     assert_eq!((report.steps, report.items), (8, 2_000));
//!     losses.push(report.mean_loss);
//! }
//! assert!(losses[2] < losses[0], "{losses:?}");
//! # Ok::<(), shade_gnn::GnnError>(())
//! ```

use crate::ctx::{Float, GraphCtx};
use crate::error::{GnnError, GnnResult};
use crate::layer::{Features, Inputs, Layer};
use crate::loss::NodeTargets;
use crate::train::{Data, TrainState, single_train_step};
use ndarray::{ArrayD, ArrayViewD, Axis, Slice};
use shade_autodiff::AdResult;
use shade_autodiff::tensor::{Tape, Var};
use shade_graph::{Array, DataLoader, Graph, GraphBatch, NeighborLoader, SampledSubgraph};
use shade_interface::tensor::TensorBackend;

/// The names of the data a batch takes its features and labels from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Columns {
    /// Node features `[nodes, F]` (`f32` or `f64`); when the graph has no node data of
    /// this name, its sparse node features are used.
    pub features: String,
    /// Integer class labels: node data `[nodes]` for a [`NodeBatch`], graph data
    /// `[graphs]` for a [`GraphsBatch`] (`i64`; `[n, 1]` is accepted too).
    pub labels: String,
}

impl Default for Columns {
    /// PyG's names: `x` and `y`.
    fn default() -> Self {
        Columns {
            features: "x".into(),
            labels: "y".into(),
        }
    }
}

/// A batch that a training step can take: its data and how many items (seeds or
/// graphs) its loss averages over, by which a data-parallel step weights it.
pub trait MiniBatch<T: Float> {
    /// What the loss compares the output with.
    type Target: ?Sized;
    /// The step's inputs and targets.
    fn data(&self) -> Data<'_, T, Self::Target>;
    /// Items in the loss (0 for a rank's empty slice at the end of an epoch).
    fn items(&self) -> usize;
}

/// A [`NeighborLoader`] batch prepared for a node classifier: outputs have one row per
/// sampled node, the seeds first; the loss is taken over the seeds.
#[derive(Debug)]
pub struct NodeBatch<T: Float> {
    /// The sampled subgraph, prepared (its features and labels taken out of its data).
    pub ctx: GraphCtx<T>,
    /// Features of the sampled nodes.
    pub x: Features<T>,
    /// Labels of the sampled nodes (0 for a non-seed without a label: never read) and
    /// the seeds `0..num_seeds` as the loss's nodes.
    pub target: NodeTargets,
    /// Original ids of the sampled nodes, the seeds first (PyG's `n_id`).
    pub nodes: Vec<u32>,
    /// Number of seeds (PyG's `batch_size`).
    pub num_seeds: usize,
}

impl<T: Float> NodeBatch<T> {
    /// Prepares a sampled subgraph: features and labels are taken out of its node data
    /// (`cols`), the rest of the graph becomes the context.
    ///
    /// Errors (`SHADE-E0405`): no features of that name (and no sparse features), no
    /// labels, labels that are not integers, or a seed whose label is negative.
    pub fn new(sub: SampledSubgraph, cols: &Columns) -> GnnResult<Self> {
        let SampledSubgraph {
            mut graph,
            nodes,
            num_seeds,
            ..
        } = sub;
        let n = graph.num_nodes();
        let x = take_features::<T>(&mut graph, &cols.features, "node")?;
        let labels = graph.remove_node_data(&cols.labels);
        let labels = labels_of(labels.as_ref(), &cols.labels, "node", n)?;
        let mut out = Vec::with_capacity(n);
        for (i, &c) in labels.iter().enumerate() {
            if c < 0 && i < num_seeds {
                return Err(GnnError::DataMismatch {
                    what: format!("the label `{}` of seed node {}", cols.labels, nodes[i]),
                    expected: "a class id >= 0 (seeds are the nodes the loss is taken over)".into(),
                    found: c.to_string(),
                });
            }
            out.push(usize::try_from(c).unwrap_or(0));
        }
        Ok(NodeBatch {
            ctx: GraphCtx::new(&graph),
            x,
            target: NodeTargets {
                labels: out,
                nodes: (0..num_seeds).collect(),
            },
            nodes,
            num_seeds,
        })
    }

    /// The rows of the seeds in an output of this batch (its first `num_seeds` rows).
    pub fn seed_rows<'o>(&self, out: &'o ArrayD<T>) -> ArrayViewD<'o, T> {
        out.slice_axis(Axis(0), Slice::from(0..self.num_seeds.min(out.shape()[0])))
    }
}

impl<T: Float> MiniBatch<T> for NodeBatch<T> {
    type Target = NodeTargets;
    fn data(&self) -> Data<'_, T, NodeTargets> {
        Data {
            inputs: Inputs::new(&self.ctx, &self.x),
            target: &self.target,
        }
    }
    fn items(&self) -> usize {
        self.num_seeds
    }
}

/// Full-batch inputs with the loss over a set of nodes: one rank's shard of the
/// training nodes in data-parallel full-batch training (each rank runs the whole
/// graph, the loss over its nodes; the weighted average is the full-batch loss).
#[derive(Clone, Copy, Debug)]
pub struct NodeShard<'d, T: Float> {
    /// Graph and features.
    pub inputs: Inputs<'d, T>,
    /// Labels and this shard's nodes.
    pub target: &'d NodeTargets,
}

impl<T: Float> MiniBatch<T> for NodeShard<'_, T> {
    type Target = NodeTargets;
    fn data(&self) -> Data<'_, T, NodeTargets> {
        Data {
            inputs: self.inputs,
            target: self.target,
        }
    }
    fn items(&self) -> usize {
        self.target.nodes.len()
    }
}

/// A [`DataLoader`] batch prepared for graph classification: the batched graph's
/// context (its `batch` vector for pooling), features, one label per graph.
#[derive(Debug)]
pub struct GraphsBatch<T: Float> {
    /// The batched graphs, prepared.
    pub ctx: GraphCtx<T>,
    /// Node features of the batched graphs.
    pub x: Features<T>,
    /// One label per graph; the loss's nodes are the graphs `0..num_graphs` (rows of a
    /// pooled output).
    pub target: NodeTargets,
    /// The position of each graph in the loader's list.
    pub indices: Vec<usize>,
}

impl<T: Float> GraphsBatch<T> {
    /// Prepares a batch of graphs: node features and graph labels are taken out of its
    /// data (`cols`). An empty batch (a rank's empty slice) has no data and needs none.
    ///
    /// Errors (`SHADE-E0405`): missing features or labels, labels that are not
    /// integers or are negative.
    pub fn new(batch: GraphBatch, cols: &Columns) -> GnnResult<Self> {
        let GraphBatch { mut graph, indices } = batch;
        if indices.is_empty() {
            return Ok(GraphsBatch {
                ctx: GraphCtx::new(&graph),
                x: Features::Dense(ArrayD::zeros(ndarray::IxDyn(&[0, 0])).into()),
                target: NodeTargets {
                    labels: Vec::new(),
                    nodes: Vec::new(),
                },
                indices,
            });
        }
        let x = take_features::<T>(&mut graph, &cols.features, "node")?;
        let g = indices.len();
        let labels = labels_of(
            graph.graph_data().get(&cols.labels),
            &cols.labels,
            "graph",
            g,
        )?;
        let labels = labels
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                usize::try_from(c).map_err(|_| GnnError::DataMismatch {
                    what: format!("the label `{}` of graph {}", cols.labels, indices[i]),
                    expected: "a class id >= 0".into(),
                    found: c.to_string(),
                })
            })
            .collect::<GnnResult<Vec<_>>>()?;
        Ok(GraphsBatch {
            ctx: GraphCtx::new(&graph),
            x,
            target: NodeTargets {
                labels,
                nodes: (0..g).collect(),
            },
            indices,
        })
    }
}

impl<T: Float> MiniBatch<T> for GraphsBatch<T> {
    type Target = NodeTargets;
    fn data(&self) -> Data<'_, T, NodeTargets> {
        Data {
            inputs: Inputs::new(&self.ctx, &self.x),
            target: &self.target,
        }
    }
    fn items(&self) -> usize {
        self.indices.len()
    }
}

/// Dense features out of the graph's data `name` (converted to `T`), or its sparse
/// node features.
fn take_features<T: Float>(g: &mut Graph, name: &str, kind: &str) -> GnnResult<Features<T>> {
    let n = g.num_nodes();
    let cst = |v: f64| T::cst(v);
    let x = match g.remove_node_data(name) {
        Some(Array::F32(a)) => a.mapv(|v| cst(f64::from(v))),
        Some(Array::F64(a)) => a.mapv(cst),
        Some(other) => {
            return Err(GnnError::DataMismatch {
                what: format!("the {kind} features `{name}`"),
                expected: "f32 or f64 values".into(),
                found: other.dtype().into(),
            });
        }
        None => {
            return match g.sparse_node_features() {
                Some(s) => Ok(Features::sparse_from_f32(s)),
                None => Err(GnnError::DataMismatch {
                    what: format!("the {kind} features `{name}`"),
                    expected: format!(
                        "{kind} data `{name}` [{n}, F] (set it with `Graph::set_node_data`) or sparse node features"
                    ),
                    found: "neither".into(),
                }),
            };
        }
    };
    let x = if x.ndim() == 1 {
        x.into_shape_with_order(ndarray::IxDyn(&[n, 1]))
            .map_err(|e| GnnError::DataMismatch {
                what: format!("the {kind} features `{name}`"),
                expected: format!("[{n}, F]"),
                found: e.to_string(),
            })?
    } else {
        x
    };
    Ok(Features::Dense(x.into()))
}

/// The integer labels `name` (`[n]` or `[n, 1]`).
fn labels_of(a: Option<&Array>, name: &str, kind: &str, n: usize) -> GnnResult<Vec<i64>> {
    let mismatch = |expected: String, found: String| GnnError::DataMismatch {
        what: format!("the {kind} labels `{name}`"),
        expected,
        found,
    };
    let a = a.ok_or_else(|| {
        mismatch(
            format!("{kind} data `{name}` with one integer per {kind}"),
            "none".into(),
        )
    })?;
    let v = a.as_i64().ok_or_else(|| {
        mismatch(
            "i64 class ids (e.g. `Array1::from_iter(labels.iter().map(|&c| c as i64))`)".into(),
            a.dtype().into(),
        )
    })?;
    let ok = v.shape() == [n] || v.shape() == [n, 1];
    if !ok {
        return Err(mismatch(format!("shape [{n}]"), format!("{:?}", v.shape())));
    }
    Ok(v.iter().copied().collect())
}

/// The batches of `epoch` of `loader`, each prepared as a [`NodeBatch`] on the
/// loader's worker thread. Items are the loader's errors (graph codes) and the
/// preparation's (`SHADE-E0405`).
pub fn node_batches<T: Float>(
    loader: &NeighborLoader,
    epoch: u64,
    cols: &Columns,
) -> impl Iterator<Item = GnnResult<NodeBatch<T>>> + use<T> {
    let cols = cols.clone();
    loader
        .epoch_map(epoch, move |sub| NodeBatch::new(sub, &cols))
        .map(|r| r.map_err(GnnError::from).and_then(|b| b))
}

/// The batches of `epoch` of `loader`, each prepared as a [`GraphsBatch`] on the
/// loader's worker thread.
pub fn graph_batches<T: Float>(
    loader: &DataLoader,
    epoch: u64,
    cols: &Columns,
) -> impl Iterator<Item = GnnResult<GraphsBatch<T>>> + use<T> {
    let cols = cols.clone();
    loader
        .epoch_map(epoch, move |b| GraphsBatch::new(b, &cols))
        .map(|r| r.map_err(GnnError::from).and_then(|b| b))
}

/// What an epoch of [`train_epoch`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EpochReport {
    /// Optimiser steps taken (batches).
    pub steps: usize,
    /// Items (seeds or graphs) over all batches.
    pub items: usize,
    /// The batches' losses averaged with their item counts as weights (the loss over
    /// the epoch's items, each measured when its batch trained).
    pub mean_loss: f64,
}

impl EpochReport {
    /// Adds a step whose loss is the mean over `items` items.
    pub(crate) fn record(&mut self, loss: f64, items: usize) {
        let total = self.mean_loss * self.items as f64 + loss * items as f64;
        self.steps += 1;
        self.items += items;
        self.mean_loss = total / self.items.max(1) as f64;
    }
}

/// Trains one step per batch ([`single_train_step`]) and reports the epoch. Stops at
/// the first error (a batch that could not be prepared, or a step's error; the steps
/// before it are kept).
pub fn train_epoch<T, B, L, M, F, I>(
    backend: &B,
    model: &L,
    loss: F,
    batches: I,
    ts: &mut TrainState<T>,
) -> GnnResult<EpochReport>
where
    T: Float,
    B: TensorBackend,
    L: Layer<T> + ?Sized,
    M: MiniBatch<T>,
    F: for<'a> Fn(&mut Tape<'a, T>, Var, &'a M::Target) -> AdResult<Var>,
    I: IntoIterator<Item = GnnResult<M>>,
{
    let mut report = EpochReport::default();
    for batch in batches {
        let batch = batch?;
        let l = single_train_step(backend, model, &loss, &batch.data(), ts)?.loss;
        report.record(l.to_f64().unwrap_or(f64::NAN), batch.items());
    }
    Ok(report)
}
