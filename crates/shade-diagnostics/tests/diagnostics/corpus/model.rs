//! Broken models, written from what users do when they build one for a dataset: a
//! layer built for another width, options out of range, edge features missing or of
//! another width, layers under one name, a node-level layer after a readout, features
//! transposed or with missing values. Every message names the layer's path.

use super::gnn::ring;
use super::harness::{Program, Seen};
use ndarray::{Array2, ArrayD, IxDyn};
use shade_gnn::layers::{
    AGNNConv, APPNP, Activation, BatchNorm, CGConv, Chain, ChebConv, Dense, Dropout, EdgeConv,
    GATConv, GATv2Conv, GCNConv, GINConv, GINEConv, GatedGraphConv, GraphConv, LayerNorm, NNConv,
    ResGatedGraphConv, SAGEConv, SGConv, TAGConv, TransformerConv,
};
use shade_gnn::message::Aggr;
use shade_gnn::pool::{GlobalAttentionPool, GlobalPool, Set2Set, TopKPool};
use shade_gnn::{Features, GnnResult, GraphCtx, Inputs, Layer, Params, apply};

pub(crate) const PROGRAMS: &[(&str, Program)] = &[
    ("model_gcn_built_for_cora_width", gcn_built_for_cora_width),
    ("model_graph_conv_input_width", graph_conv_input_width),
    ("model_sage_input_width", sage_input_width),
    ("model_gat_input_width", gat_input_width),
    ("model_gatv2_input_width", gatv2_input_width),
    ("model_transformer_input_width", transformer_input_width),
    ("model_cheb_input_width", cheb_input_width),
    ("model_tag_input_width", tag_input_width),
    ("model_sg_input_width", sg_input_width),
    ("model_res_gated_input_width", res_gated_input_width),
    ("model_dense_after_conv_width", dense_after_conv_width),
    ("model_second_conv_width", second_conv_width),
    ("model_gin_mlp_width", gin_mlp_width),
    ("model_edge_conv_mlp_width", edge_conv_mlp_width),
    ("model_gated_wider_input", gated_wider_input),
    ("model_layer_norm_width", layer_norm_width),
    ("model_batch_norm_width", batch_norm_width),
    ("model_gat_zero_heads", gat_zero_heads),
    ("model_gat_attention_dropout_one", gat_attention_dropout_one),
    (
        "model_dropout_probability_percent",
        dropout_probability_percent,
    ),
    ("model_topk_min_score_nan", topk_min_score_nan),
    ("model_appnp_alpha_above_one", appnp_alpha_above_one),
    ("model_topk_ratio_zero", topk_ratio_zero),
    ("model_set2set_zero_steps", set2set_zero_steps),
    (
        "model_gine_without_edge_features",
        gine_without_edge_features,
    ),
    (
        "model_nn_conv_without_edge_features",
        nn_conv_without_edge_features,
    ),
    ("model_cg_edge_width", cg_edge_width),
    (
        "model_gat_edge_dim_without_features",
        gat_edge_dim_without_features,
    ),
    (
        "model_edge_features_one_row_short",
        edge_features_one_row_short,
    ),
    ("model_nan_edge_feature", nan_edge_feature),
    ("model_two_layers_one_name", two_layers_one_name),
    ("model_nested_layers_one_name", nested_layers_one_name),
    ("model_dotted_layer_name", dotted_layer_name),
    ("model_conv_after_readout", conv_after_readout),
    ("model_pool_after_readout", pool_after_readout),
    ("model_features_transposed", features_transposed),
    ("model_missing_value_in_features", missing_value_in_features),
    ("model_infinite_sparse_feature", infinite_sparse_feature),
    ("model_features_of_a_subgraph", features_of_a_subgraph),
    ("model_params_of_a_wider_model", params_of_a_wider_model),
    ("model_bias_of_another_width", bias_of_another_width),
    (
        "model_mlp_without_a_graph_in_gin",
        mlp_graph_layer_in_plain_call,
    ),
    ("model_agnn_without_graph", agnn_without_graph),
    (
        "model_gcn_without_self_loops_isolated",
        gcn_without_self_loops_isolated,
    ),
];

/// Runs `model` in evaluation mode on the six-node ring (or without a graph) with
/// `x` and optional edge features (12 edges); the model's error is the inner result,
/// so that the program's `??` names the program's line.
fn run(
    model: &dyn Layer<f64>,
    x: Features<f64>,
    graph: bool,
    edge_attr: Option<ArrayD<f64>>,
    params: Option<Params<f64>>,
) -> Result<GnnResult<()>, Seen> {
    let g = ring(6)?;
    let ctx = GraphCtx::new(&g);
    let mut rng = rand::SeedableRng::seed_from_u64(0);
    let (p, st) = model.init(&mut rng);
    let mut inputs = if graph {
        Inputs::new(&ctx, &x)
    } else {
        Inputs::without_graph(&x)
    };
    if let Some(e) = &edge_attr {
        inputs = inputs.with_edge_attr(e);
    }
    let p = params.unwrap_or(p);
    Ok(apply(model, &inputs, &p, &st, false, &mut rng).map(drop))
}

fn x(rows: usize, cols: usize) -> Features<f64> {
    Features::dense(Array2::from_shape_fn((rows, cols), |(i, j)| {
        ((i * 5 + j * 3) % 7) as f64 / 7.0 - 0.4
    }))
}

fn on_ring(model: &dyn Layer<f64>, width: usize) -> Result<GnnResult<()>, Seen> {
    run(model, x(6, width), true, None, None)
}

/// Built for Cora's 1433 bag-of-words features, fed a 16-feature dataset.
fn gcn_built_for_cora_width() -> Result<(), Seen> {
    let model = Chain::new()
        .add("conv1", GCNConv::new(1433, 16))
        .add("act", Activation::Relu)
        .add("conv2", GCNConv::new(16, 7));
    on_ring(&model, 16)??;
    Ok(())
}

fn graph_conv_input_width() -> Result<(), Seen> {
    let model = Chain::new().add("conv", GraphConv::new(8, 4));
    on_ring(&model, 5)??;
    Ok(())
}

fn sage_input_width() -> Result<(), Seen> {
    let model = Chain::new().add("sage1", SAGEConv::new(32, 16));
    on_ring(&model, 3)??;
    Ok(())
}

fn gat_input_width() -> Result<(), Seen> {
    let model = Chain::new().add("gat1", GATConv::new(4, 8).with_heads(2));
    on_ring(&model, 3)??;
    Ok(())
}

fn gatv2_input_width() -> Result<(), Seen> {
    let model = Chain::new().add("att", GATv2Conv::new(10, 4));
    on_ring(&model, 3)??;
    Ok(())
}

fn transformer_input_width() -> Result<(), Seen> {
    let model = Chain::new().add("tr", TransformerConv::new(6, 4));
    on_ring(&model, 3)??;
    Ok(())
}

fn cheb_input_width() -> Result<(), Seen> {
    let model = Chain::new().add("cheb", ChebConv::new(2, 4, 3));
    on_ring(&model, 3)??;
    Ok(())
}

fn tag_input_width() -> Result<(), Seen> {
    let model = Chain::new().add("tag", TAGConv::new(7, 4));
    on_ring(&model, 3)??;
    Ok(())
}

fn sg_input_width() -> Result<(), Seen> {
    let model = Chain::new().add("sgc", SGConv::new(4, 2).with_k(2));
    on_ring(&model, 3)??;
    Ok(())
}

fn res_gated_input_width() -> Result<(), Seen> {
    let model = Chain::new().add("gate", ResGatedGraphConv::new(5, 5));
    on_ring(&model, 3)??;
    Ok(())
}

/// The head sized for the input features instead of the hidden width.
fn dense_after_conv_width() -> Result<(), Seen> {
    let model = Chain::new()
        .add("conv1", GCNConv::new(3, 16))
        .add("act", Activation::Relu)
        .add("head", Dense::new(3, 2));
    on_ring(&model, 3)??;
    Ok(())
}

/// The second convolution copied from the first.
fn second_conv_width() -> Result<(), Seen> {
    let model = Chain::new()
        .add("conv1", GCNConv::new(3, 16))
        .add("act", Activation::Elu(1.0))
        .add("conv2", GCNConv::new(3, 2));
    on_ring(&model, 3)??;
    Ok(())
}

fn gin_mlp_width() -> Result<(), Seen> {
    let mlp = Chain::new()
        .add("0", Dense::new(3, 8))
        .add("1", Activation::Relu)
        .add("2", Dense::new(16, 8));
    let model = Chain::new().add("gin", GINConv::new(mlp));
    on_ring(&model, 3)??;
    Ok(())
}

/// EdgeConv's network reads `[x_i, x_j - x_i]`: twice the node width.
fn edge_conv_mlp_width() -> Result<(), Seen> {
    let mlp = Chain::new().add("0", Dense::new(3, 4));
    let model = Chain::new().add("edge", EdgeConv::new(mlp));
    on_ring(&model, 3)??;
    Ok(())
}

/// GatedGraphConv pads narrower inputs to its width, but cannot take wider ones.
fn gated_wider_input() -> Result<(), Seen> {
    let model = Chain::new().add("ggnn", GatedGraphConv::new(4, 2));
    on_ring(&model, 6)??;
    Ok(())
}

fn layer_norm_width() -> Result<(), Seen> {
    let model = Chain::new()
        .add("lin", Dense::new(3, 8))
        .add("norm", LayerNorm::new(16));
    on_ring(&model, 3)??;
    Ok(())
}

fn batch_norm_width() -> Result<(), Seen> {
    let model = Chain::new()
        .add("conv", GCNConv::new(3, 8))
        .add("bn", BatchNorm::new(4));
    on_ring(&model, 3)??;
    Ok(())
}

fn gat_zero_heads() -> Result<(), Seen> {
    let model = Chain::new().add("gat", GATConv::new(3, 8).with_heads(0));
    on_ring(&model, 3)??;
    Ok(())
}

fn gat_attention_dropout_one() -> Result<(), Seen> {
    let model = Chain::new().add("gat", GATConv::new(3, 8).with_dropout(1.0));
    on_ring(&model, 3)??;
    Ok(())
}

/// A dropout rate written as a percentage.
fn dropout_probability_percent() -> Result<(), Seen> {
    let model = Chain::new()
        .add("conv", GCNConv::new(3, 8))
        .add("drop", Dropout::new(50.0));
    on_ring(&model, 3)??;
    Ok(())
}

/// A threshold read from a config file that had no value for it.
fn topk_min_score_nan() -> Result<(), Seen> {
    let model = Chain::new()
        .add("conv", GCNConv::new(3, 4))
        .add("pool", TopKPool::with_min_score(4, f64::NAN));
    on_ring(&model, 3)??;
    Ok(())
}

/// APPNP's teleport probability written as the number of steps' complement.
fn appnp_alpha_above_one() -> Result<(), Seen> {
    let model = Chain::new()
        .add("lin", Dense::new(3, 2))
        .add("prop", APPNP::new(10, 1.1));
    on_ring(&model, 3)??;
    Ok(())
}

fn topk_ratio_zero() -> Result<(), Seen> {
    let model = Chain::new()
        .add("conv", GCNConv::new(3, 4))
        .add("pool", TopKPool::new(4, 0.0));
    on_ring(&model, 3)??;
    Ok(())
}

fn set2set_zero_steps() -> Result<(), Seen> {
    let model = Chain::new().add("readout", Set2Set::new(3, 0));
    on_ring(&model, 3)??;
    Ok(())
}

fn gine_without_edge_features() -> Result<(), Seen> {
    let mlp = Chain::new().add("0", Dense::new(3, 4));
    let model = Chain::new().add("gine", GINEConv::new(mlp));
    on_ring(&model, 3)??;
    Ok(())
}

fn nn_conv_without_edge_features() -> Result<(), Seen> {
    // The edge network maps 2 edge features to a 3 x 4 weight per edge.
    let edge_nn = Chain::new().add("0", Dense::new(2, 12));
    let model = Chain::new().add("nn", NNConv::new(3, 4, edge_nn));
    on_ring(&model, 3)??;
    Ok(())
}

fn cg_edge_width() -> Result<(), Seen> {
    let model = Chain::new().add("cg", CGConv::new(3, 2));
    let e = ArrayD::from_elem(IxDyn(&[12, 5]), 0.1);
    run(&model, x(6, 3), true, Some(e), None)??;
    Ok(())
}

fn gat_edge_dim_without_features() -> Result<(), Seen> {
    let model = Chain::new().add("gat", GATConv::new(3, 4).with_edge_dim(2));
    on_ring(&model, 3)??;
    Ok(())
}

/// Edge features of a graph before one edge was removed.
fn edge_features_one_row_short() -> Result<(), Seen> {
    let mlp = Chain::new().add("0", Dense::new(3, 4));
    let model = Chain::new().add("gine", GINEConv::new(mlp).with_edge_dim(2, 3));
    let e = ArrayD::from_elem(IxDyn(&[11, 2]), 0.1);
    run(&model, x(6, 3), true, Some(e), None)??;
    Ok(())
}

fn nan_edge_feature() -> Result<(), Seen> {
    let model = Chain::new().add("cg", CGConv::new(3, 2));
    let mut e = ArrayD::from_elem(IxDyn(&[12, 2]), 0.1);
    e[[7, 1]] = f64::NAN;
    run(&model, x(6, 3), true, Some(e), None)??;
    Ok(())
}

/// Copy-pasted blocks: the second `conv` would read the first one's weights.
fn two_layers_one_name() -> Result<(), Seen> {
    let model = Chain::new()
        .add("conv", GCNConv::new(3, 3))
        .add("act", Activation::Relu)
        .add("conv", GCNConv::new(3, 3));
    on_ring(&model, 3)??;
    Ok(())
}

fn nested_layers_one_name() -> Result<(), Seen> {
    let block = Chain::new()
        .add("lin", Dense::new(3, 3))
        .add("lin", Dense::new(3, 3));
    let model = Chain::new().add("block", block);
    on_ring(&model, 3)??;
    Ok(())
}

fn dotted_layer_name() -> Result<(), Seen> {
    let model = Chain::new().add("encoder.conv1", GCNConv::new(3, 3));
    on_ring(&model, 3)??;
    Ok(())
}

fn conv_after_readout() -> Result<(), Seen> {
    let model = Chain::new()
        .add("conv1", GCNConv::new(3, 4))
        .add("pool", GlobalPool::new(Aggr::Mean))
        .add("conv2", GCNConv::new(4, 2));
    on_ring(&model, 3)??;
    Ok(())
}

fn pool_after_readout() -> Result<(), Seen> {
    let gate = Chain::new().add("0", Dense::new(4, 1));
    let model = Chain::new()
        .add("conv1", GCNConv::new(3, 4))
        .add("readout", GlobalPool::new(Aggr::Sum))
        .add("att", GlobalAttentionPool::new(gate));
    on_ring(&model, 3)??;
    Ok(())
}

/// Features loaded feature by feature: `[F, N]`.
fn features_transposed() -> Result<(), Seen> {
    let model = Chain::new().add("conv1", GCNConv::new(6, 2));
    run(&model, x(3, 6), true, None, None)??;
    Ok(())
}

fn missing_value_in_features() -> Result<(), Seen> {
    let model = Chain::new().add("conv1", GCNConv::new(3, 2));
    let mut a = Array2::from_elem((6, 3), 0.5);
    a[[5, 0]] = f64::NAN;
    run(&model, Features::dense(a), true, None, None)??;
    Ok(())
}

fn infinite_sparse_feature() -> Result<(), Seen> {
    let model = Chain::new().add("conv1", GCNConv::new(4, 2));
    let mut m = sprs::TriMatI::<_, u32>::new((6, 4));
    m.add_triplet(0, 1, 1.0f32);
    m.add_triplet(3, 2, f32::INFINITY);
    let x = Features::sparse_from_f32(&m.to_csr());
    run(&model, x, true, None, None)??;
    Ok(())
}

/// Features of the first five nodes only (a subgraph's), on the whole graph.
fn features_of_a_subgraph() -> Result<(), Seen> {
    let model = Chain::new().add("conv1", GCNConv::new(3, 2));
    run(&model, x(5, 3), true, None, None)??;
    Ok(())
}

/// A store saved from a model with 32 hidden units, loaded into one with 16.
fn params_of_a_wider_model() -> Result<(), Seen> {
    let wide = Chain::new()
        .add("conv1", GCNConv::new(3, 32))
        .add("conv2", GCNConv::new(32, 2));
    let model = Chain::new()
        .add("conv1", GCNConv::new(3, 16))
        .add("conv2", GCNConv::new(16, 2));
    let (p, _) = wide.init(&mut rand::SeedableRng::seed_from_u64(1));
    run(&model, x(6, 3), true, None, Some(p))??;
    Ok(())
}

fn bias_of_another_width() -> Result<(), Seen> {
    let model = Chain::new().add("conv1", GCNConv::new(3, 2));
    let (mut p, _) = model.init(&mut rand::SeedableRng::seed_from_u64(1));
    let i = p.position("conv1.bias").unwrap_or(0);
    p.values_mut()[i] = ArrayD::zeros(IxDyn(&[3]));
    run(&model, x(6, 3), true, None, Some(p))??;
    Ok(())
}

/// A graph model run on the features alone (`Inputs::without_graph`).
fn mlp_graph_layer_in_plain_call() -> Result<(), Seen> {
    let mlp = Chain::new().add("0", Dense::new(3, 3));
    let model = Chain::new().add("gin", GINConv::new(mlp));
    run(&model, x(6, 3), false, None, None)??;
    Ok(())
}

fn agnn_without_graph() -> Result<(), Seen> {
    let model = Chain::new()
        .add("lin", Dense::new(3, 4))
        .add("prop", AGNNConv::new());
    run(&model, x(6, 3), false, None, None)??;
    Ok(())
}

/// Self-loops turned off (as in a paper's ablation) on a graph where nodes 4 and 5
/// receive no edge: the model runs, and the graph context keeps the warning.
fn gcn_without_self_loops_isolated() -> Result<(), Seen> {
    let g = shade_graph::Graph::from_edges(
        6,
        &[(0, 1), (1, 0), (1, 2), (2, 3), (3, 0), (4, 0), (5, 1)],
    )?;
    let ctx = GraphCtx::new(&g);
    let model = Chain::new().add(
        "conv1",
        GCNConv {
            add_self_loops: false,
            ..GCNConv::new(3, 2)
        },
    );
    let x = x(6, 3);
    let mut rng = rand::SeedableRng::seed_from_u64(0);
    let (p, st) = model.init(&mut rng);
    apply(&model, &Inputs::new(&ctx, &x), &p, &st, false, &mut rng)?;
    let shown: Vec<_> = ctx
        .warnings()
        .iter()
        .map(|w| shade_diagnostics::Diagnostic::from_warning(w))
        .collect();
    Err(Seen(shown))
}
