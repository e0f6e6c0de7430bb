//! The model path refuses what once went wrong without a word or with a panic: two
//! layers under one name, a node-level layer after a readout, NaN or transposed
//! features, rows that are not the graph's nodes, parameters replaced by another
//! model's, optimiser settings that would poison every parameter, parameters in
//! column-major layout; it warns about isolated nodes under a GCN normalisation
//! without self-loops, and exposes anomaly mode.

use ndarray::{Array2, ArrayD, IxDyn};
use shade_gnn::layers::{Activation, Chain, Dense, GCNConv};
use shade_gnn::loss::{NodeTargets, cross_entropy};
use shade_gnn::message::Aggr;
use shade_gnn::optim::Optimiser;
use shade_gnn::pool::GlobalPool;
use shade_gnn::train::{Data, TrainState, single_train_step};
use shade_gnn::{Features, GnnError, GnnWarning, GraphCtx, Inputs, Params, apply};
use shade_graph::Graph;
use shade_interface::AutoShade;

fn ring(n: u32) -> Graph {
    let e: Vec<(u32, u32)> = (0..n)
        .flat_map(|i| [(i, (i + 1) % n), ((i + 1) % n, i)])
        .collect();
    Graph::from_edges(n as usize, &e).unwrap()
}

fn features(n: usize, f: usize) -> Features<f64> {
    Features::dense(Array2::from_shape_fn((n, f), |(i, j)| {
        ((i * 7 + j * 3) % 5) as f64 / 5.0
    }))
}

fn targets(n: usize) -> NodeTargets {
    NodeTargets {
        labels: (0..n).map(|i| i % 2).collect(),
        nodes: (0..n).collect(),
    }
}

fn step(
    model: &Chain<f64>,
    ctx: &GraphCtx<f64>,
    x: &Features<f64>,
    ts: &mut TrainState<f64>,
) -> Result<f64, GnnError> {
    let y = targets(ctx.num_nodes());
    let data = Data {
        inputs: Inputs::new(ctx, x),
        target: &y,
    };
    single_train_step(&AutoShade::REVERSE, model, cross_entropy, &data, ts).map(|o| o.loss)
}

/// Two layers under one name once shared their weights: the second read the first's
/// and trained nothing of its own.
#[test]
fn two_layers_under_one_name_are_refused() {
    let model = Chain::new()
        .add("conv", GCNConv::new(3, 3))
        .add("conv", GCNConv::new(3, 2));
    let e = TrainState::new(&model, Optimiser::adam(0.01), 0).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0411");
    assert_eq!(e.to_string(), "two parameters are named `conv.lin.weight`");
    // Run without a train state: the chain itself refuses, naming the layer.
    let g = ring(6);
    let ctx = GraphCtx::new(&g);
    let x = features(6, 3);
    let mut rng = rand::SeedableRng::seed_from_u64(0);
    let p = Params::new();
    let e = apply(&model, &Inputs::new(&ctx, &x), &p, &p, false, &mut rng).unwrap_err();
    assert_eq!(
        (e.code(), e.to_string().as_str()),
        ("SHADE-E0411", "Chain: two layers are named `conv`")
    );
    let e = Chain::<f64>::new()
        .add("a", Dense::new(2, 2))
        .try_add("a", Dense::new(2, 2))
        .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0411");
    let e = Chain::<f64>::new()
        .try_add("conv.1", Dense::new(2, 2))
        .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0404");
}

#[test]
fn a_node_level_layer_after_a_readout_is_named_as_such() {
    let model = Chain::new()
        .add("conv1", GCNConv::new(3, 4))
        .add("pool", GlobalPool::new(Aggr::Mean))
        .add("conv2", GCNConv::new(4, 2));
    let g = ring(6);
    let ctx = GraphCtx::new(&g);
    let x = features(6, 3);
    let mut ts = TrainState::new(&model, Optimiser::adam(0.01), 0).unwrap();
    let e = step(&model, &ctx, &x, &mut ts).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0415");
    assert_eq!(
        e.to_string(),
        "conv2: the layer reads node features, but layer `pool` before it is a graph-level readout: its output has one row per graph"
    );
}

/// A one-layer GCN (3 → 2) on a ring of 6 nodes, with its train state.
fn one_conv_on_a_ring() -> (Chain<f64>, GraphCtx<f64>, TrainState<f64>) {
    let model = Chain::new().add("conv1", GCNConv::new(3, 2));
    let ctx = GraphCtx::new(&ring(6));
    let ts = TrainState::new(&model, Optimiser::adam(0.01), 0).unwrap();
    (model, ctx, ts)
}

#[test]
fn nan_and_transposed_features_are_refused_at_the_input() {
    let (model, ctx, mut ts) = one_conv_on_a_ring();
    let before = ts.params.clone();
    let mut x = Array2::from_elem((6, 3), 0.5);
    x[[4, 1]] = f64::NAN;
    let e = step(&model, &ctx, &Features::dense(x), &mut ts).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0413");
    assert_eq!(
        e.to_string(),
        "the node features hold NaN at [4, 1] (the first non-finite entry)"
    );
    // Column-major storage: the index is still the logical one.
    let mut x = Array2::from_elem((6, 3), 0.5)
        .reversed_axes()
        .as_standard_layout()
        .into_owned()
        .reversed_axes();
    x[[2, 0]] = f64::INFINITY;
    let e = step(&model, &ctx, &Features::dense(x), &mut ts).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the node features hold inf at [2, 0] (the first non-finite entry)"
    );
    // [F, N]: one column per node.
    let e = step(&model, &ctx, &features(3, 6), &mut ts).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0414");
    assert_eq!(
        e.to_string(),
        "the node features look transposed: got [3, 6], expected [6, F] (one row per node)"
    );
    assert_eq!(ts.params, before);
}

/// Features are checked once while they do not change, but a change after a step
/// (dense or sparse, through any mutable access) is found by the next step.
#[test]
fn features_changed_after_a_step_are_checked_again() {
    let (model, ctx, mut ts) = one_conv_on_a_ring();
    let mut x = features(6, 3);
    step(&model, &ctx, &x, &mut ts).unwrap();
    let Features::Dense(a) = &x else {
        unreachable!("dense features")
    };
    assert!(a.is_checked());
    let l1 = step(&model, &ctx, &x, &mut ts).unwrap();
    assert!(l1.is_finite());
    if let Features::Dense(a) = &mut x {
        a[[5, 2]] = f64::NEG_INFINITY;
    }
    let before = ts.params.clone();
    let e = step(&model, &ctx, &x, &mut ts).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0413");
    assert_eq!(
        e.to_string(),
        "the node features hold -inf at [5, 2] (the first non-finite entry)"
    );
    // Still refused on the next step (a failure is not recorded as a pass).
    assert_eq!(
        step(&model, &ctx, &x, &mut ts).unwrap_err().code(),
        "SHADE-E0413"
    );
    assert_eq!(ts.params, before);
    // Repaired: accepted again.
    if let Features::Dense(a) = &mut x {
        a.view_mut()[[5, 2]] = 0.25;
    }
    step(&model, &ctx, &x, &mut ts).unwrap();
    // Sparse features: a mutable access to the matrix clears the record as well.
    let csr = sprs::CsMatI::csr_from_dense(
        Array2::from_shape_fn((6, 3), |(i, j)| ((i + j) % 3) as f32).view(),
        0.0,
    );
    let mut xs = Features::<f64>::sparse_from_f32(&csr);
    step(&model, &ctx, &xs, &mut ts).unwrap();
    // One stored entry per row, the one of row 3 NaN.
    let nan = sprs::CsMatI::new(
        (6, 3),
        (0..=6).collect(),
        vec![0, 2, 1, 1, 0, 2],
        vec![1.0, 0.5, 2.0, f64::NAN, 1.0, 0.5],
    );
    if let Features::Sparse(s) = &mut xs {
        assert!(s.is_checked());
        **s = shade_gnn::shade_autodiff::tensor::SparseMatrix::new(nan);
        assert!(!s.is_checked());
    }
    let e = step(&model, &ctx, &xs, &mut ts).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0413");
    assert_eq!(
        e.to_string(),
        "the node features hold NaN at [3, 1] (the first non-finite entry)"
    );
}

/// A layer of the user's that hands its input on transposed.
struct Transpose;

impl shade_gnn::Layer<f64> for Transpose {
    fn name(&self) -> &'static str {
        "Transpose"
    }
    fn init(&self, _: &mut rand::rngs::StdRng) -> (Params<f64>, Params<f64>) {
        (Params::new(), Params::new())
    }
    fn forward<'a>(
        &self,
        t: &mut shade_autodiff::tensor::Tape<'a, f64>,
        _env: &mut shade_gnn::Env<'a, '_, f64>,
        x: shade_gnn::Input<'a, f64>,
        _p: shade_gnn::ParamVars<'_>,
        _st: shade_gnn::StateScope<'_, f64>,
    ) -> shade_gnn::GnnResult<shade_autodiff::tensor::Var> {
        let x = x.dense(t)?;
        Ok(t.transpose(x)?)
    }
}

#[test]
fn rows_that_are_not_the_graphs_nodes_are_named_at_the_layer() {
    // Once `spmm cannot combine shapes`; now the graph layer names the mismatch.
    let model = Chain::new()
        .add("t", Transpose)
        .add("conv1", GCNConv::new(6, 2));
    let g = ring(6);
    let ctx = GraphCtx::new(&g);
    let x = features(6, 3);
    let mut rng = rand::SeedableRng::seed_from_u64(0);
    let (p, st) = shade_gnn::Layer::<f64>::init(&model, &mut rng);
    let e = apply(&model, &Inputs::new(&ctx, &x), &p, &st, false, &mut rng).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0410");
    assert_eq!(
        e.to_string(),
        "conv1: input has 3 rows but the layer expects one row per node of the graph, [6, features]"
    );
}

#[test]
fn a_bias_of_another_shape_is_named_as_a_parameter() {
    let model = Chain::new().add("out", Dense::new(3, 2));
    let g = ring(6);
    let ctx = GraphCtx::new(&g);
    let x = features(6, 3);
    let p = Params::new()
        .with("out.weight", Array2::from_elem((2, 3), 0.1).into_dyn())
        .with("out.bias", ArrayD::from_elem(IxDyn(&[3]), 0.0));
    let mut rng = rand::SeedableRng::seed_from_u64(0);
    // Once `out: \`add\` cannot combine shapes [6, 2] and [3]`.
    let e = apply(
        &model,
        &Inputs::new(&ctx, &x),
        &p,
        &Params::new(),
        false,
        &mut rng,
    )
    .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0402");
    assert_eq!(
        e.to_string(),
        "parameter `out.bias` has shape [3], but the model needs [2]"
    );
    // The same store put into a train state.
    let mut ts = TrainState::new(&model, Optimiser::adam(0.01), 0).unwrap();
    ts.params = p;
    let e = step(&model, &ctx, &x, &mut ts).unwrap_err();
    assert_eq!(
        e.to_string(),
        "parameter `out.bias` has shape [3], but the model needs [2]"
    );
}

#[test]
fn parameters_replaced_by_another_models_are_listed() {
    let model = Chain::new()
        .add("conv1", GCNConv::new(3, 4))
        .add("out", Dense::new(4, 2));
    let other = Chain::new()
        .add("conv1", GCNConv::new(3, 4))
        .add("head", Dense::new(4, 2));
    let g = ring(6);
    let ctx = GraphCtx::new(&g);
    let x = features(6, 3);
    let mut ts = TrainState::new(&model, Optimiser::adam(0.01), 0).unwrap();
    let theirs = TrainState::new(&other, Optimiser::adam(0.01), 1)
        .unwrap()
        .params;
    // Once an internal assertion; now a coded error listing the differences.
    ts.params = theirs.clone();
    let e = step(&model, &ctx, &x, &mut ts).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0412");
    assert_eq!(
        e.to_string(),
        "the parameters do not match the model's parameters: missing `out.weight`, `out.bias`; not in the model `head.weight`, `head.bias`"
    );
    assert_eq!(ts.params, theirs, "the store is kept as it was");
    let e = ts.load_params(theirs).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0412");
    // The model's own names in another order: put back in order, and the step runs.
    let mut fresh = TrainState::new(&model, Optimiser::adam(0.01), 2)
        .unwrap()
        .params;
    let mut reversed = Params::new();
    for (n, v) in fresh.names().iter().zip(fresh.values()).rev() {
        reversed.push(n.clone(), v.clone());
    }
    ts.params = reversed;
    step(&model, &ctx, &x, &mut ts).unwrap();
    assert_eq!(ts.params.names(), fresh.names());
    fresh.values_mut()[0] = ArrayD::zeros(IxDyn(&[5, 3]));
    let e = ts.load_params(fresh).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0402");
}

#[test]
fn the_optimiser_refuses_bad_settings_before_touching_a_parameter() {
    let p0 = Params::new().with("w", ArrayD::from_elem(IxDyn(&[2]), 1.0));
    for (opt, name) in [
        (
            Optimiser {
                lr: f64::NAN,
                ..Optimiser::sgd(0.1)
            },
            "lr",
        ),
        (
            Optimiser {
                lr: -0.1,
                ..Optimiser::adam(0.1)
            },
            "lr",
        ),
        (
            Optimiser::adam(0.1).weight_decay(f64::INFINITY),
            "weight_decay",
        ),
        (Optimiser::sgd_momentum(0.1, -0.9, false), "momentum"),
    ] {
        let mut p = p0.clone();
        let mut g = p0.clone();
        let mut st = Optimiser::adam(0.1).init(&p);
        let e = opt.step(&mut p, &mut g, &mut st).unwrap_err();
        assert_eq!(e.code(), "SHADE-E0404", "{opt:?}");
        assert!(e.to_string().contains(&format!("`{name}`")), "{e}");
        assert_eq!(p, p0, "{opt:?} changed the parameters");
    }
    // Gradients of another model.
    let mut p = p0.clone();
    let mut g = Params::new().with("v", ArrayD::from_elem(IxDyn(&[2]), 1.0));
    let opt = Optimiser::sgd(0.1);
    let mut st = opt.init(&p);
    let e = opt.step(&mut p, &mut g, &mut st).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0412");
    assert_eq!(p, p0);
}

/// A column-major parameter once panicked in SGD (`as_slice` of a non-standard array).
#[test]
fn every_optimiser_updates_column_major_parameters_as_row_major_ones() {
    let w = Array2::from_shape_fn((3, 2), |(i, j)| i as f64 - 0.5 * j as f64);
    let gw = Array2::from_shape_fn((3, 2), |(i, j)| 0.1 * (i + 2 * j) as f64 - 0.2);
    let fortran = |a: &Array2<f64>| {
        a.t()
            .as_standard_layout()
            .into_owned()
            .reversed_axes()
            .into_dyn()
    };
    for opt in [
        Optimiser::sgd(0.1),
        Optimiser::sgd_momentum(0.1, 0.9, true),
        Optimiser::adam(0.1).weight_decay(0.01),
        Optimiser::adamw(0.1, 0.01),
    ] {
        let mut rows = Params::new().with("w", w.clone().into_dyn());
        let mut cols = rows.clone();
        cols.values_mut()[0] = fortran(&w);
        assert!(!cols.values()[0].is_standard_layout());
        let (mut sr, mut sc) = (opt.init(&rows), opt.init(&cols));
        for _ in 0..3 {
            let mut gr = Params::new().with("w", gw.clone().into_dyn());
            let mut gc = gr.clone();
            gc.values_mut()[0] = fortran(&gw);
            opt.step(&mut rows, &mut gr, &mut sr).unwrap();
            opt.step(&mut cols, &mut gc, &mut sc).unwrap();
        }
        assert_eq!(rows.values()[0], cols.values()[0], "{opt:?}");
    }
}

#[test]
fn isolated_nodes_without_self_loops_warn_on_the_model_path() {
    // Nodes 4 and 5 have no incoming edge.
    let g =
        Graph::from_edges(6, &[(0, 1), (1, 0), (1, 2), (2, 3), (3, 0), (4, 0), (5, 1)]).unwrap();
    let ctx = GraphCtx::new(&g);
    let x = features(6, 3);
    let model = Chain::new().add(
        "conv1",
        GCNConv {
            add_self_loops: false,
            ..GCNConv::new(3, 2)
        },
    );
    let mut ts = TrainState::new(&model, Optimiser::adam(0.01), 0).unwrap();
    assert!(ctx.warnings().is_empty());
    step(&model, &ctx, &x, &mut ts).unwrap();
    step(&model, &ctx, &x, &mut ts).unwrap();
    let w = ctx.warnings();
    assert_eq!(w.len(), 1, "once per normalisation: {w:?}");
    assert_eq!(w[0].code(), "SHADE-W0401");
    assert_eq!(
        w[0],
        GnnWarning::IsolatedWithoutSelfLoops {
            isolated: 2,
            num_nodes: 6,
            first: vec![4, 5]
        }
    );
    // With self-loops (the default), nothing to say.
    let ctx = GraphCtx::new(&g);
    let model = Chain::new().add("conv1", GCNConv::new(3, 2));
    let mut ts = TrainState::new(&model, Optimiser::adam(0.01), 0).unwrap();
    step(&model, &ctx, &x, &mut ts).unwrap();
    assert!(ctx.warnings().is_empty());
}

#[test]
fn anomaly_mode_on_the_train_state_names_the_operation() {
    let model = Chain::new()
        .add("conv1", GCNConv::new(3, 2))
        .add("act", Activation::Relu);
    let g = ring(6);
    let ctx = GraphCtx::new(&g);
    let x = features(6, 3);
    let y = targets(6);
    let data = Data {
        inputs: Inputs::new(&ctx, &x),
        target: &y,
    };
    // A loss whose logarithm meets a negative number.
    let bad = |t: &mut shade_autodiff::tensor::Tape<'_, f64>, out, _y: &NodeTargets| {
        let s = t.sum(out)?;
        let n = t.scale(s, -1.0)?;
        let one = t.scalar(1.0);
        let n = t.sub(n, one)?;
        t.ln(n)
    };
    let mut ts = TrainState::new(&model, Optimiser::adam(0.01), 0).unwrap();
    let e = single_train_step(&AutoShade::REVERSE, &model, bad, &data, &mut ts).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0406");
    assert!(e.help().contains("ts.set_anomaly(true)"), "{}", e.help());
    ts.set_anomaly(true);
    assert!(ts.anomaly());
    let e = single_train_step(&AutoShade::REVERSE, &model, bad, &data, &mut ts).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0170");
    assert!(e.to_string().starts_with("`ln` produced NaN"), "{e}");
}
