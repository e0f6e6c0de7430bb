//! Broken programs whose error arises inside a layer of a model: each message names
//! the layer's path (`conv1`, `conv1.nn.0`) and carries the GNN crate's code, or the
//! core's for a core error the layer ran into.

use super::gnn::{params_of, ring, two_layers};
use super::harness::{Program, Seen};
use ndarray::Array2;
use shade_gnn::layers::{Activation, Chain, ChebConv, Dense, GCNConv, GINConv, LayerNorm};
use shade_gnn::{Features, GnnResult, GraphCtx, Inputs, Layer, Params, apply};

pub(crate) const PROGRAMS: &[(&str, Program)] = &[
    (
        "gnn_layer_param_missing_from_another_model",
        layer_param_missing_from_another_model,
    ),
    ("gnn_layer_bad_option", layer_bad_option),
    ("gnn_layer_without_a_graph", layer_without_a_graph),
    ("gnn_layer_input_width", layer_input_width),
    ("gnn_sublayer_input_width", sublayer_input_width),
    ("gnn_layer_core_error_named", layer_core_error_named),
    ("gnn_norm_affine_param_missing", norm_affine_param_missing),
];

/// `model` on the six-node ring (or, unless `graph`, on the features alone) with
/// `x`, parameters `params` (from `model`'s own `init` unless given), evaluation
/// mode: the model's error is the inner result, for the program's `?` to locate.
fn run_on_ring(
    model: &dyn Layer<f64>,
    x: Array2<f64>,
    params: Option<Params<f64>>,
    graph: bool,
) -> Result<GnnResult<()>, Seen> {
    let g = ring(6)?;
    let ctx = GraphCtx::new(&g);
    let x = Features::dense(x);
    let mut rng = rand::SeedableRng::seed_from_u64(0);
    let (p, st) = model.init(&mut rng);
    let inputs = if graph {
        Inputs::new(&ctx, &x)
    } else {
        Inputs::without_graph(&x)
    };
    let p = params.unwrap_or(p);
    Ok(apply(model, &inputs, &p, &st, false, &mut rng).map(drop))
}

/// Parameters of a model whose second layer has another name.
fn layer_param_missing_from_another_model() -> Result<(), Seen> {
    let trained = Chain::new()
        .add("conv1", GCNConv::new(3, 4))
        .add("out", GCNConv::new(4, 2));
    let model = Chain::new()
        .add("conv1", GCNConv::new(3, 4))
        .add("conv2", GCNConv::new(4, 2));
    let p = params_of(&trained)?;
    run_on_ring(&model, Array2::from_elem((6, 3), 0.5), Some(p), true)??;
    Ok(())
}

/// A Chebyshev filter of size 0.
fn layer_bad_option() -> Result<(), Seen> {
    let model = Chain::new()
        .add("cheb", ChebConv::new(3, 4, 0))
        .add("act", Activation::Relu);
    run_on_ring(&model, Array2::from_elem((6, 3), 0.5), None, true)??;
    Ok(())
}

/// A GCN called on features alone.
fn layer_without_a_graph() -> Result<(), Seen> {
    run_on_ring(&two_layers(4), Array2::from_elem((6, 3), 0.5), None, false)??;
    Ok(())
}

/// Five features per node into a model built for three.
fn layer_input_width() -> Result<(), Seen> {
    run_on_ring(&two_layers(4), Array2::from_elem((6, 5), 0.5), None, true)??;
    Ok(())
}

/// GIN's MLP built for four inputs, fed three features per node.
fn sublayer_input_width() -> Result<(), Seen> {
    let mlp = Chain::new()
        .add("0", Dense::new(4, 8))
        .add("1", Activation::Relu);
    let model = Chain::new().add("conv1", GINConv::new(mlp));
    run_on_ring(&model, Array2::from_elem((6, 3), 0.5), None, true)??;
    Ok(())
}

/// A hand-built store whose bias has another width than the layer's output: the
/// core's shape error, named by the layer it arose in.
fn layer_core_error_named() -> Result<(), Seen> {
    let model = Chain::new().add("out", Dense::new(3, 2));
    let p = Params::new()
        .with("out.weight", Array2::from_elem((2, 3), 0.1).into_dyn())
        .with("out.bias", ndarray::Array1::from_elem(3, 0.0).into_dyn());
    run_on_ring(&model, Array2::from_elem((6, 3), 0.5), Some(p), false)??;
    Ok(())
}

/// A store saved from a model whose LayerNorm had no affine parameters, loaded into
/// one whose LayerNorm has them (once silently skipped: the output was not scaled).
fn norm_affine_param_missing() -> Result<(), Seen> {
    let model = Chain::new()
        .add("lin", Dense::new(3, 4))
        .add("norm", LayerNorm::new(4));
    let p = Params::new()
        .with("lin.weight", Array2::from_elem((4, 3), 0.1).into_dyn())
        .with("lin.bias", ndarray::Array1::from_elem(4, 0.0).into_dyn());
    run_on_ring(&model, Array2::from_elem((6, 3), 0.5), Some(p), false)??;
    Ok(())
}
