//! Broken training programs: optimiser settings that would poison every parameter,
//! parameters replaced by another model's, targets that do not fit, a run that
//! diverges, anomaly mode finding the operation behind a NaN.

use super::gnn::{params_of, ring, two_layers};
use super::harness::{Program, Seen};
use ndarray::{Array2, ArrayD, IxDyn};
use shade_autodiff::AdResult;
use shade_autodiff::tensor::{Tape, Var};
use shade_gnn::layers::{Activation, Chain, Dense, GCNConv};
use shade_gnn::loss::{DenseTargets, NodeTargets, accuracy, cross_entropy, mse, roc_auc};
use shade_gnn::models::{Model, NodeConfig};
use shade_gnn::optim::{Optimiser, Rule};
use shade_gnn::train::{Data, TrainState, single_train_step};
use shade_gnn::{
    Features, GnnResult, GraphCtx, Inputs, Params, from_safetensors_bytes, to_safetensors_bytes,
};
use shade_interface::AutoShade;

pub(crate) const PROGRAMS: &[(&str, Program)] = &[
    ("train_nan_learning_rate_in_step", nan_learning_rate_in_step),
    ("train_learning_rate_set_to_zero", learning_rate_set_to_zero),
    ("train_negative_weight_decay", negative_weight_decay),
    ("train_adam_beta_one", adam_beta_one),
    ("train_adam_eps_zero", adam_eps_zero),
    ("train_clip_norm_zero", clip_norm_zero),
    ("train_nesterov_without_momentum", nesterov_without_momentum),
    ("train_momentum_negative", momentum_negative),
    ("train_decay_rule_nan", decay_rule_nan),
    ("train_params_of_another_model", params_of_another_model),
    (
        "train_load_params_of_another_width",
        load_params_of_another_width,
    ),
    (
        "train_load_params_of_another_model",
        load_params_of_another_model,
    ),
    (
        "train_optimiser_buffers_of_another_model",
        optimiser_buffers_of_another_model,
    ),
    (
        "train_gradients_of_another_model",
        gradients_of_another_model,
    ),
    ("train_diverging_learning_rate", diverging_learning_rate),
    ("train_anomaly_ln_in_loss", anomaly_ln_in_loss),
    ("train_anomaly_sqrt_backward", anomaly_sqrt_backward),
    ("train_label_beyond_classes", label_beyond_classes),
    ("train_target_node_beyond_graph", target_node_beyond_graph),
    (
        "train_mse_targets_of_another_shape",
        mse_targets_of_another_shape,
    ),
    ("train_features_transposed", features_transposed),
    ("train_duplicate_layer_names", duplicate_layer_names),
    ("train_config_zero_hidden", config_zero_hidden),
    ("train_accuracy_of_other_nodes", accuracy_of_other_nodes),
    ("train_roc_auc_one_class", roc_auc_one_class),
    (
        "train_checkpoint_of_f64_as_f32_bad_dtype",
        checkpoint_bad_dtype,
    ),
];

fn ring_data() -> Result<(shade_graph::Graph, Features<f64>, NodeTargets), Seen> {
    let g = ring(6)?;
    let x = Features::dense(Array2::from_shape_fn((6, 3), |(i, j)| {
        ((i + 2 * j) % 5) as f64 / 5.0
    }));
    let y = NodeTargets {
        labels: vec![0, 1, 0, 1, 0, 1],
        nodes: vec![0, 1, 2, 3],
    };
    Ok((g, x, y))
}

/// One step of `model` with `ts`, on the ring; the error is the inner result.
fn step_with(model: &Chain<f64>, ts: &mut TrainState<f64>) -> Result<GnnResult<f64>, Seen> {
    let (g, x, y) = ring_data()?;
    let ctx = GraphCtx::new(&g);
    let data = Data {
        inputs: Inputs::new(&ctx, &x),
        target: &y,
    };
    Ok(single_train_step(&AutoShade::REVERSE, model, cross_entropy, &data, ts).map(|o| o.loss))
}

/// The optimiser's fields set by hand after a config file was read.
fn step_with_optimiser(opt: Optimiser) -> Result<(), Seen> {
    let model = two_layers(4);
    let mut ts = TrainState::new(&model, Optimiser::adam(0.01), 0)?;
    ts.opt = opt;
    step_with(&model, &mut ts)??;
    Ok(())
}

fn nan_learning_rate_in_step() -> Result<(), Seen> {
    // A learning-rate schedule that divided by zero (a warm-up over 0 steps).
    let (done, warmup) = (0.0f64, std::hint::black_box(0.0f64));
    let lr = 0.01 * (done / warmup);
    step_with_optimiser(Optimiser {
        lr,
        ..Optimiser::adam(0.01)
    })
}

fn learning_rate_set_to_zero() -> Result<(), Seen> {
    step_with_optimiser(Optimiser {
        lr: 0.0,
        ..Optimiser::sgd(0.1)
    })
}

fn negative_weight_decay() -> Result<(), Seen> {
    step_with_optimiser(Optimiser::adam(0.01).weight_decay(-5e-4))
}

fn adam_beta_one() -> Result<(), Seen> {
    step_with_optimiser(Optimiser {
        rule: Rule::Adam {
            beta1: 0.9,
            beta2: 1.0,
            eps: 1e-8,
        },
        ..Optimiser::adam(0.01)
    })
}

fn adam_eps_zero() -> Result<(), Seen> {
    step_with_optimiser(Optimiser {
        rule: Rule::AdamW {
            beta1: 0.9,
            beta2: 0.999,
            eps: 0.0,
        },
        ..Optimiser::adamw(0.01, 0.01)
    })
}

fn clip_norm_zero() -> Result<(), Seen> {
    step_with_optimiser(Optimiser::adam(0.01).clip_grad_norm(0.0))
}

fn nesterov_without_momentum() -> Result<(), Seen> {
    TrainState::new(&two_layers(4), Optimiser::sgd_momentum(0.1, 0.0, true), 0)?;
    Ok(())
}

fn momentum_negative() -> Result<(), Seen> {
    TrainState::new(&two_layers(4), Optimiser::sgd_momentum(0.1, -0.9, false), 0)?;
    Ok(())
}

fn decay_rule_nan() -> Result<(), Seen> {
    step_with_optimiser(Optimiser::adam(0.01).weight_decay_for("conv1.", f64::NAN))
}

/// `ts.params` replaced by a checkpoint of a model whose head had another name.
fn params_of_another_model() -> Result<(), Seen> {
    let model = two_layers(4);
    let other = Chain::new()
        .add("conv1", GCNConv::new(3, 4))
        .add("classifier", Dense::new(4, 2));
    let mut ts = TrainState::new(&model, Optimiser::adam(0.01), 0)?;
    ts.params = params_of(&other)?;
    step_with(&model, &mut ts)??;
    Ok(())
}

fn load_params_of_another_width() -> Result<(), Seen> {
    let mut ts = TrainState::new(&two_layers(4), Optimiser::adam(0.01), 0)?;
    ts.load_params(params_of(&two_layers(8))?)?;
    Ok(())
}

fn load_params_of_another_model() -> Result<(), Seen> {
    let mut ts = TrainState::new(&two_layers(4), Optimiser::adam(0.01), 0)?;
    let deeper = Chain::new()
        .add("conv1", GCNConv::new(3, 4))
        .add("conv2", GCNConv::new(4, 4))
        .add("conv3", GCNConv::new(4, 4))
        .add("out", Dense::new(4, 2));
    ts.load_params(params_of(&deeper)?)?;
    Ok(())
}

/// An optimiser state kept from the previous model of a notebook.
fn optimiser_buffers_of_another_model() -> Result<(), Seen> {
    let model = two_layers(4);
    let other = Chain::new().add("lin", Dense::new(3, 2));
    let mut ts = TrainState::new(&model, Optimiser::adam(0.01), 0)?;
    ts.opt_state = ts.opt.init(&params_of(&other)?);
    step_with(&model, &mut ts)??;
    Ok(())
}

/// `Optimiser::step` called by hand with the gradients of another store.
fn gradients_of_another_model() -> Result<(), Seen> {
    let opt = Optimiser::sgd(0.1);
    let mut p = params_of(&two_layers(4))?;
    let mut g = params_of(&Chain::new().add("lin", Dense::new(3, 2)))?;
    let mut st = opt.init(&p);
    opt.step(&mut p, &mut g, &mut st)?;
    Ok(())
}

/// One training step of `two_layers(4)` on the six-node ring, with features `x` (the
/// ring's own unless given), targets `target`, `loss`, optimiser `opt`, anomaly mode
/// as asked; the step's error is the inner result, for the program's `??`.
pub(crate) fn step_on_ring<D: ?Sized>(
    x: Option<Features<f64>>,
    target: &D,
    loss: impl for<'a> Fn(&mut Tape<'a, f64>, Var, &'a D) -> AdResult<Var>,
    opt: Optimiser,
    anomaly: bool,
) -> Result<GnnResult<f64>, Seen> {
    let (g, own, _) = ring_data()?;
    let ctx = GraphCtx::new(&g);
    let x = x.unwrap_or(own);
    let data = Data {
        inputs: Inputs::new(&ctx, &x),
        target,
    };
    let model = two_layers(4);
    let mut ts = TrainState::new(&model, opt, 0)?;
    ts.set_anomaly(anomaly);
    Ok(single_train_step(&AutoShade::REVERSE, &model, loss, &data, &mut ts).map(|o| o.loss))
}

fn diverging_learning_rate() -> Result<(), Seen> {
    // Mean squared error on targets of order 1e160: the loss overflows to inf.
    let y = DenseTargets(ArrayD::from_elem(IxDyn(&[6, 2]), 1e160));
    step_on_ring(None, &y, mse, Optimiser::sgd(1e3), false)??;
    Ok(())
}

/// A log-likelihood written by hand, `ln(1 - p)` with `p` exactly 1 somewhere.
fn bad_loss<'a>(t: &mut Tape<'a, f64>, out: Var, _y: &'a NodeTargets) -> AdResult<Var> {
    let p = t.sigmoid(out)?;
    let big = t.scale(p, 1e3)?;
    let one = t.scalar(1.0);
    let q = t.sub(one, big)?;
    let l = t.ln(q)?;
    t.mean(l)
}

fn anomaly_ln_in_loss() -> Result<(), Seen> {
    let (_, _, y) = ring_data()?;
    step_on_ring(None, &y, bad_loss, Optimiser::adam(0.01), true)??;
    Ok(())
}

/// The norm of each output row as a loss term: zero rows have no derivative.
fn norm_loss<'a>(t: &mut Tape<'a, f64>, out: Var, _y: &'a NodeTargets) -> AdResult<Var> {
    let z = t.scale(out, 0.0)?;
    let sq = t.mul(z, z)?;
    let s = t.sum_axis(sq, 1)?;
    let n = t.sqrt(s)?;
    t.sum(n)
}

fn anomaly_sqrt_backward() -> Result<(), Seen> {
    let (_, _, y) = ring_data()?;
    step_on_ring(None, &y, norm_loss, Optimiser::adam(0.01), true)??;
    Ok(())
}

fn label_beyond_classes() -> Result<(), Seen> {
    // Labels 1..=2 for two classes.
    let y = NodeTargets {
        labels: vec![1, 2, 1, 2, 1, 2],
        nodes: vec![0, 1, 2],
    };
    step_on_ring(None, &y, cross_entropy, Optimiser::adam(0.01), false)??;
    Ok(())
}

fn target_node_beyond_graph() -> Result<(), Seen> {
    // A training mask of another split: node 9 of a 6-node graph.
    let y = NodeTargets {
        labels: vec![0, 1, 0, 1, 0, 1],
        nodes: vec![0, 1, 9],
    };
    step_on_ring(None, &y, cross_entropy, Optimiser::adam(0.01), false)??;
    Ok(())
}

fn mse_targets_of_another_shape() -> Result<(), Seen> {
    let y = DenseTargets(ArrayD::zeros(IxDyn(&[6])));
    step_on_ring(None, &y, mse, Optimiser::adam(0.01), false)??;
    Ok(())
}

fn features_transposed() -> Result<(), Seen> {
    let (_, _, y) = ring_data()?;
    let x = Features::dense(Array2::from_elem((3, 6), 0.5));
    step_on_ring(Some(x), &y, cross_entropy, Optimiser::adam(0.01), false)??;
    Ok(())
}

fn duplicate_layer_names() -> Result<(), Seen> {
    let model = Chain::<f64>::new()
        .add("hidden", Dense::new(3, 3))
        .add("act", Activation::Tanh)
        .add("hidden", Dense::new(3, 3));
    TrainState::new(&model, Optimiser::adam(0.01), 0)?;
    Ok(())
}

fn config_zero_hidden() -> Result<(), Seen> {
    let cfg = NodeConfig {
        hidden: 0,
        ..NodeConfig::standard(Model::Gcn)
    };
    cfg.validate()?;
    Ok(())
}

/// Accuracy over the test nodes of another graph.
fn accuracy_of_other_nodes() -> Result<(), Seen> {
    let scores = ArrayD::from_elem(IxDyn(&[4, 2]), 0.5);
    accuracy(&scores, &[0, 1, 0, 1], &[0, 2, 7])?;
    Ok(())
}

fn roc_auc_one_class() -> Result<(), Seen> {
    roc_auc(&[0.9, 0.2, 0.4], &[true, true, true])?;
    Ok(())
}

/// A checkpoint whose dtype field was edited to a name that does not exist.
fn checkpoint_bad_dtype() -> Result<(), Seen> {
    let p: Params<f64> = Params::new().with("w", ArrayD::zeros(IxDyn(&[2])));
    let bytes = to_safetensors_bytes(&p);
    let text = String::from_utf8_lossy(&bytes).replace("\"F64\"", "\"F65\"");
    from_safetensors_bytes::<f64>(text.as_bytes())?;
    Ok(())
}
