//! No panic on any input: every layer's forward (and one training step) driven with
//! arbitrary graphs and features: 0 nodes, 0 edges, ids beyond the graph and near
//! `u32::MAX`, NaN and infinities, widths of 0, column-major and strided
//! (non-contiguous) arrays, options out of range. Each call may succeed or return a
//! coded error; a panic fails the property. The safetensors reader is fuzzed the same
//! way on arbitrary and mutated bytes.
//!
//! 64 cases by default; `PROPTEST_CASES=10000` (or `cargo xtask fuzz`) for the long
//! run.

use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;
use shade_gnn::layers::{
    AGNNConv, APPNP, Activation, BatchNorm, CGConv, Chain, ChebConv, Dense, Dropout, EdgeConv,
    GATConv, GATv2Conv, GCNConv, GINConv, GINEConv, GatedGraphConv, GraphConv, LayerNorm, NNConv,
    ResGatedGraphConv, SAGEConv, SGConv, TAGConv, TransformerConv,
};
use shade_gnn::loss::{NodeTargets, cross_entropy};
use shade_gnn::message::Aggr;
use shade_gnn::optim::Optimiser;
use shade_gnn::pool::{GlobalAttentionPool, GlobalPool, Set2Set, TopKPool};
use shade_gnn::train::{Data, TrainState, single_train_step};
use shade_gnn::{
    Features, GraphCtx, Inputs, Layer, Params, apply, from_safetensors_bytes,
    model_to_safetensors_bytes, to_safetensors_bytes,
};
use shade_graph::Graph;
use shade_interface::AutoShade;
use shade_test_support::strategies::{Layout, build, layout, no_panic};

/// A node id: mostly in range, sometimes just past it, sometimes garbage.
fn node_id(n: u32) -> impl Strategy<Value = u32> {
    prop_oneof![
        40 => 0..n.max(1),
        1 => Just(n),
        1 => prop::sample::select(vec![u32::MAX, u32::MAX - 1, 1 << 31, 4_000_000]),
    ]
}

/// Edges over `n` nodes, some of them invalid.
fn edges(n: u32) -> impl Strategy<Value = Vec<(u32, u32)>> {
    prop::collection::vec((node_id(n), node_id(n)), 0..14)
}

/// A value: mostly moderate, sometimes NaN, an infinity or huge.
fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        80 => -2.0..2.0f64,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(-1e300),
    ]
}

/// A `rows × cols` array of the case's values in the given layout.
fn array(rows: usize, cols: usize, vals: &[f64], l: Layout) -> ArrayD<f64> {
    build(rows, cols, l, |i, j| {
        vals.get((i * cols + j) % vals.len().max(1))
            .copied()
            .unwrap_or(0.5)
    })
}

/// One arbitrary input of the models.
#[derive(Debug)]
struct Case {
    num_nodes: usize,
    edges: Vec<(u32, u32)>,
    rows: usize,
    cols: usize,
    vals: Vec<f64>,
    layout: Layout,
    edge_cols: usize,
    with_edge_attr: bool,
    width: usize,
    k: usize,
    p: f64,
}

fn case() -> impl Strategy<Value = Case> {
    (0u32..8).prop_flat_map(|n| {
        (
            prop_oneof![16 => Just(n as usize), 1 => Just(n as usize + 1), 1 => Just(u32::MAX as usize)],
            edges(n),
            prop_oneof![6 => Just(n as usize), 1 => 0usize..10],
            0usize..5,
            prop::collection::vec(value(), 1..24),
            layout(),
            0usize..4,
            any::<bool>(),
            0usize..5,
            0usize..4,
            prop::sample::select(vec![0.0, 0.3, 1.0, 1.5, -0.1, f64::NAN]),
        )
            .prop_map(
                |(num_nodes, edges, rows, cols, vals, layout, edge_cols, with_edge_attr, width, k, p)| Case {
                    num_nodes,
                    edges,
                    rows,
                    cols,
                    vals,
                    layout,
                    edge_cols,
                    with_edge_attr,
                    width,
                    k,
                    p,
                },
            )
    })
}

/// Every layer of the crate, built with the case's sizes and options (including
/// widths of 0 and options out of range).
fn layers(c: &Case) -> Vec<Box<dyn Layer<f64>>> {
    let (i, o, k, p) = (c.cols, c.width, c.k, c.p);
    let mlp = |a: usize, b: usize| {
        Chain::new()
            .add("0", Dense::new(a, b))
            .add("1", Activation::Relu)
    };
    vec![
        Box::new(GCNConv::new(i, o)),
        Box::new(GCNConv {
            add_self_loops: false,
            ..GCNConv::new(i, o)
        }),
        Box::new(GCNConv::new(i, o).with_edge_attr_weights()),
        Box::new(GraphConv::new(i, o).with_aggr(Aggr::Max)),
        Box::new(SAGEConv::new(i, o).with_aggr(Aggr::Mean)),
        Box::new(GATConv::new(i, o).with_heads(k).with_dropout(p)),
        Box::new(GATConv::new(i, o).with_edge_dim(c.edge_cols)),
        Box::new(GATv2Conv::new(i, o).with_heads(k)),
        Box::new(TransformerConv::new(i, o).with_heads(k)),
        Box::new(ChebConv::new(i, o, k)),
        Box::new(TAGConv::new(i, o).with_k(k)),
        Box::new(SGConv::new(i, o).with_k(k)),
        Box::new(APPNP::new(k, p)),
        Box::new(AGNNConv::new()),
        Box::new(ResGatedGraphConv::new(i, o)),
        Box::new(ResGatedGraphConv::new(i, o).with_edge_dim(c.edge_cols)),
        Box::new(GatedGraphConv::new(o, k)),
        Box::new(GINConv::new(mlp(i, o))),
        Box::new(GINEConv::new(mlp(i, o)).with_edge_dim(c.edge_cols, i)),
        Box::new(EdgeConv::new(mlp(2 * i, o))),
        Box::new(NNConv::new(i, o, mlp(c.edge_cols, i * o))),
        Box::new(CGConv::new(i, c.edge_cols)),
        Box::new(Dense::new(i, o).with_activation(Activation::Softmax)),
        Box::new(Dropout::new(p)),
        Box::new(LayerNorm::new(i)),
        Box::new(BatchNorm::new(i)),
        Box::new(GlobalPool::new(Aggr::Max)),
        Box::new(GlobalAttentionPool::new(mlp(i, 1))),
        Box::new(Set2Set::new(i, k)),
        Box::new(TopKPool::new(i, p)),
        Box::new(TopKPool::with_count(i, k)),
        Box::new(
            Chain::new()
                .add("conv", GCNConv::new(i, o))
                .add("pool", TopKPool::new(o, 0.5))
                .add("conv2", GCNConv::new(o, o)),
        ),
    ]
}

fn drive(c: &Case) -> Result<(), TestCaseError> {
    let (src, dst): (Vec<u32>, Vec<u32>) = c.edges.iter().copied().unzip();
    let g = no_panic("Graph::try_new", || Graph::try_new(c.num_nodes, src, dst))?;
    let x = array(c.rows, c.cols, &c.vals, c.layout);
    // The feature array by itself, as a user would inspect it, never panics either.
    no_panic("Features", || {
        let f = Features::Dense(x.clone().into());
        (f.rows(), f.cols())
    })?;
    let Ok(g) = g else {
        return Ok(());
    };
    let g = no_panic("with_weights", || {
        let w: Vec<f64> = (0..g.num_edges())
            .map(|e| c.vals[e % c.vals.len()])
            .collect();
        g.clone().with_weights(w).unwrap_or(g)
    })?;
    let ctx = no_panic("GraphCtx::new", || GraphCtx::<f64>::new(&g))?;
    let e = array(g.num_edges(), c.edge_cols, &c.vals, c.layout);
    let feats = Features::Dense(x.into());
    for layer in layers(c) {
        let name = layer.name();
        no_panic(name, || {
            let mut rng = rand::SeedableRng::seed_from_u64(1);
            let (p, st) = layer.init(&mut rng);
            let mut inputs = Inputs::new(&ctx, &feats);
            if c.with_edge_attr {
                inputs = inputs.with_edge_attr(&e);
            }
            let r = apply(&*layer, &inputs, &p, &st, true, &mut rng);
            if std::env::var_os("NO_PANIC_STATS").is_some() {
                eprintln!(
                    "{name}: {}",
                    r.as_ref()
                        .map(|_| "ok".to_string())
                        .unwrap_or_else(|e| e.code().to_string())
                );
            }
            let _ = apply(
                &*layer,
                &Inputs::without_graph(&feats),
                &p,
                &st,
                false,
                &mut rng,
            );
        })?;
    }
    // One training step of a small model, with targets that may not fit.
    no_panic("single_train_step", || {
        let model = Chain::new()
            .add("conv", GCNConv::new(c.cols, c.width.max(1)))
            .add("act", Activation::Elu(1.0))
            .add("out", Dense::new(c.width.max(1), 2));
        let y = NodeTargets {
            labels: (0..c.rows).map(|v| v % 3).collect(),
            nodes: (0..c.rows.min(3) + c.k).collect(),
        };
        let data = Data {
            inputs: Inputs::new(&ctx, &feats),
            target: &y,
        };
        let opt = Optimiser {
            lr: if c.p.is_nan() { f64::NAN } else { 0.01 },
            ..Optimiser::adam(0.01)
        };
        if let Ok(mut ts) = TrainState::new(&model, Optimiser::adam(0.01), 0) {
            ts.opt = opt;
            let _ = single_train_step(&AutoShade::REVERSE, &model, cross_entropy, &data, &mut ts);
        }
    })?;
    Ok(())
}

proptest! {
    #![proptest_config(shade_test_support::strategies::cases(64))]

    #[test]
    fn no_layer_and_no_constructor_panics(c in case()) {
        drive(&c)?;
    }

    /// Optimisers on parameters and gradients of any layout and value.
    #[test]
    fn no_optimiser_panics(
        rows in 0usize..4, cols in 0usize..4,
        vals in prop::collection::vec(value(), 1..12),
        lp in layout(), lg in layout(), which in 0usize..4,
    ) {
        no_panic("Optimiser::step", || {
            let opt = [
                Optimiser::sgd(0.1),
                Optimiser::sgd_momentum(0.1, 0.9, true),
                Optimiser::adam(0.1).clip_grad_norm(1.0),
                Optimiser::adamw(0.1, 0.01),
            ][which].clone();
            let mut p = Params::new().with("w", array(rows, cols, &vals, Layout::Standard));
            p.values_mut()[0] = array(rows, cols, &vals, lp);
            let mut g = Params::new().with("w", array(rows, cols, &vals, Layout::Standard));
            g.values_mut()[0] = array(rows, cols, &vals, lg);
            let mut st = opt.init(&p);
            let _ = opt.step(&mut p, &mut g, &mut st);
            let _ = opt.step(&mut p, &mut g, &mut st);
        })?;
    }

    /// The safetensors reader on arbitrary bytes, and on valid files with bytes
    /// overwritten, cut or appended.
    #[test]
    fn the_safetensors_reader_never_panics(
        noise in prop::collection::vec(any::<u8>(), 0..64),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        cut in any::<prop::sample::Index>(),
        how in 0usize..4,
    ) {
        let store = Params::new()
            .with("a.weight", ArrayD::from_elem(IxDyn(&[2, 3]), 0.5))
            .with("b", ArrayD::from_elem(IxDyn(&[0]), 1.0));
        let valid = if how % 2 == 0 {
            to_safetensors_bytes(&store)
        } else {
            model_to_safetensors_bytes(&store, &store)
        };
        let bytes = match how {
            0 => noise.clone(),
            1 => valid[..cut.index(valid.len() + 1)].to_vec(),
            _ => {
                let mut b = valid.clone();
                for (i, v) in &edits {
                    if !b.is_empty() {
                        let k = i.index(b.len());
                        b[k] = *v;
                    }
                }
                b.extend_from_slice(&noise[..noise.len().min(4)]);
                b
            }
        };
        no_panic("from_safetensors_bytes", || {
            let _ = from_safetensors_bytes::<f32>(&bytes);
            let _ = from_safetensors_bytes::<f64>(&bytes);
        })?;
    }
}
