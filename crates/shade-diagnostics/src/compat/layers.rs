//! Backend × layer: the parameter gradient of a small model around each layer of
//! shade-gnn (`Dense(3 → 4)`, the layer at width 4, `Dense(4 → 2)`, cross-entropy over
//! every node of a seeded random graph with an isolated node, a self-loop and a
//! multi-edge), computed by each training backend and compared with central finite
//! differences (`AutoFiniteDiff::CENTRAL`, same dropout masks).

use super::Cell;
use crate::gradcheck::{GradcheckOptions, GradcheckReport, Order};
use ndarray::{Array2, ArrayD, IxDyn};
use shade_gnn::layers::{
    AGNNConv, APPNP, Activation, BatchNorm, CGConv, Chain, ChebConv, Dense, Dropout, EdgeConv,
    GATConv, GATv2Conv, GCNConv, GINConv, GINEConv, GatedGraphConv, GraphConv, LayerNorm,
    LayerNormMode, NNConv, ResGatedGraphConv, SAGEConv, SGConv, TAGConv, TransformerConv,
};
use shade_gnn::loss::{NodeTargets, cross_entropy};
use shade_gnn::optim::Optimiser;
use shade_gnn::train::{Data, TrainState, loss_and_gradient};
use shade_gnn::{Features, GraphCtx, Inputs, Layer};
use shade_graph::Graph;
use shade_interface::tensor::TensorBackend;
use shade_interface::{AutoFiniteDiff, AutoShade, Backend};

/// The backends of the layer table (the reference, `AutoFiniteDiff(central)`, is not
/// a column).
pub const LAYER_BACKENDS: [&str; 2] = ["AutoShade(reverse)", "AutoFiniteDiff(forward)"];

/// One row: the layer and one cell per backend of [`LAYER_BACKENDS`].
#[derive(Clone, Debug, PartialEq)]
pub struct LayerRow {
    /// The layer, as constructed.
    pub layer: &'static str,
    /// One cell per backend.
    pub cells: Vec<Cell>,
}

struct Setup {
    graph: Graph,
    x: Features<f64>,
    edge_attr: ArrayD<f64>,
    targets: NodeTargets,
}

fn setup() -> Setup {
    // 7 nodes: node 6 isolated, a self-loop on 2, a double edge 0 -> 1.
    let edges = [
        (0, 1),
        (0, 1),
        (1, 0),
        (1, 2),
        (2, 1),
        (2, 2),
        (2, 3),
        (3, 4),
        (4, 3),
        (4, 5),
        (5, 0),
    ];
    let graph = Graph::from_edges(7, &edges).expect("valid edges");
    let x = Array2::from_shape_fn((7, 3), |(i, j)| ((i * 3 + j) as f64 * 0.61).sin());
    let m = edges.len();
    let edge_attr = ArrayD::from_shape_vec(
        IxDyn(&[m, 2]),
        (0..2 * m).map(|k| (k as f64 * 0.37).cos()).collect(),
    )
    .expect("2m values");
    Setup {
        graph,
        x: Features::dense(x),
        edge_attr,
        targets: NodeTargets {
            labels: vec![0, 1, 1, 0, 1, 0, 1],
            nodes: (0..7).collect(),
        },
    }
}

fn gradient<B: TensorBackend>(
    b: &B,
    model: &Chain<f64>,
    data: &Data<'_, f64, NodeTargets>,
) -> Result<Vec<f64>, &'static str> {
    let mut ts = TrainState::new(model, Optimiser::sgd(0.1), 7).map_err(|e| e.code())?;
    loss_and_gradient(b, model, &cross_entropy, data, &mut ts).map_err(|e| e.code())?;
    Ok(ts
        .grads
        .values()
        .iter()
        .flat_map(|g| g.iter().copied())
        .collect())
}

fn row(name: &'static str, layer: impl Layer<f64> + 'static, s: &Setup) -> LayerRow {
    let model = Chain::new()
        .add("in", Dense::new(3, 4))
        .add("layer", layer)
        .add("out", Dense::new(4, 2));
    let ctx = GraphCtx::new(&s.graph);
    let data = Data {
        inputs: Inputs::new(&ctx, &s.x).with_edge_attr(&s.edge_attr),
        target: &s.targets,
    };
    let reference = gradient(&AutoFiniteDiff::CENTRAL, &model, &data);
    let cell = |g: Result<Vec<f64>, &'static str>| match (g, &reference) {
        (Err(c), _) | (_, &Err(c)) => Cell::Error(c),
        (Ok(a), Ok(n)) => {
            let mut rep = GradcheckReport::new(Order::First, n.len(), &GradcheckOptions::f64());
            for (k, (&a, &n)) in a.iter().zip(n).enumerate() {
                rep.add(0, vec![k], a, n);
            }
            Cell::from_report(Ok(rep))
        }
    };
    debug_assert_eq!(AutoShade::REVERSE.name(), LAYER_BACKENDS[0]);
    LayerRow {
        layer: name,
        cells: vec![
            cell(gradient(&AutoShade::REVERSE, &model, &data)),
            cell(gradient(&AutoFiniteDiff::FORWARD, &model, &data)),
        ],
    }
}

/// Every layer of shade-gnn × the training backends, each cell run.
pub fn layer_table() -> Vec<LayerRow> {
    let s = setup();
    vec![
        row("Dense(4, 4)", Dense::new(4, 4), &s),
        row("Activation::Elu(1.0)", Activation::Elu(1.0), &s),
        row("Dropout(0.3)", Dropout::new(0.3), &s),
        row("LayerNorm(4)", LayerNorm::new(4), &s),
        row(
            "LayerNorm(4, graph mode)",
            LayerNorm::new(4).with_mode(LayerNormMode::Graph),
            &s,
        ),
        row("BatchNorm(4)", BatchNorm::new(4), &s),
        row(
            "BatchNorm(4, no running stats)",
            BatchNorm::new(4).with_track_running_stats(false),
            &s,
        ),
        row("GCNConv(4, 4)", GCNConv::new(4, 4), &s),
        row("GraphConv(4, 4)", GraphConv::new(4, 4), &s),
        row("SAGEConv(4, 4)", SAGEConv::new(4, 4), &s),
        row(
            "SAGEConv(4, 4, project)",
            SAGEConv::new(4, 4).with_project(true),
            &s,
        ),
        row("GINConv(Dense(4, 4))", GINConv::new(Dense::new(4, 4)), &s),
        row(
            "GINEConv(Dense(4, 4), edge_dim 2)",
            GINEConv::new(Dense::new(4, 4)).with_edge_dim(2, 4),
            &s,
        ),
        row("GATConv(4, 4)", GATConv::new(4, 4), &s),
        row(
            "GATConv(4, 4, residual)",
            GATConv::new(4, 4).with_residual(true),
            &s,
        ),
        row(
            "GATConv(4, 4, edge_dim 2)",
            GATConv::new(4, 4).with_edge_dim(2),
            &s,
        ),
        row("GATv2Conv(4, 4)", GATv2Conv::new(4, 4), &s),
        row(
            "GATv2Conv(4, 4, residual)",
            GATv2Conv::new(4, 4).with_residual(true),
            &s,
        ),
        row(
            "GATv2Conv(4, 4, edge_dim 2)",
            GATv2Conv::new(4, 4).with_edge_dim(2),
            &s,
        ),
        row("ChebConv(4, 4, K = 3)", ChebConv::new(4, 4, 3), &s),
        row("SGConv(4, 4)", SGConv::new(4, 4), &s),
        row("TAGConv(4, 4)", TAGConv::new(4, 4), &s),
        row("APPNP(K = 3, α = 0.1)", APPNP::new(3, 0.1), &s),
        row("AGNNConv", AGNNConv::new(), &s),
        row("EdgeConv(Dense(8, 4))", EdgeConv::new(Dense::new(8, 4)), &s),
        row("ResGatedGraphConv(4, 4)", ResGatedGraphConv::new(4, 4), &s),
        row(
            "ResGatedGraphConv(4, 4, edge_dim 2)",
            ResGatedGraphConv::new(4, 4).with_edge_dim(2),
            &s,
        ),
        row("GatedGraphConv(4, 2 layers)", GatedGraphConv::new(4, 2), &s),
        row(
            "TransformerConv(4, 4, edge_dim 2)",
            TransformerConv::new(4, 4).with_edge_dim(2),
            &s,
        ),
        row(
            "NNConv(4, 4, Dense(2, 16))",
            NNConv::new(4, 4, Dense::new(2, 16)),
            &s,
        ),
        row("CGConv(4, dim 2)", CGConv::new(4, 2), &s),
    ]
}
