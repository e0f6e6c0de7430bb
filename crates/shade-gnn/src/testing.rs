//! Test helpers for layers (feature `testing`, always on in this crate's tests).
//!
//! - [`arb_graph`]: a proptest strategy for small random directed graphs that always
//!   contain an isolated node, a self-loop and a multi-edge.
//! - [`random_graph`], [`random_features`]: the same from a seed.
//! - [`check_layer_gradient`] / [`GradCheck`]: the native gradient of
//!   `sum(layer(x) ⊙ R)` (fixed random `R`) with respect to every parameter and the
//!   input, against central finite differences in `f64`.
//! - [`dense_adjacency`]: `A[v, u]` = summed weight of the edges `u -> v`, for dense
//!   reference computations written from a layer's definition with plain loops.
//!
//! The pattern for a new layer (see `layers/gcn.rs`'s tests):
//!
//! ```text
//! proptest! {
//!     #[test]
//!     fn gradient((g, x) in arb_graph_and_features(6, 10, 3)) {
//!         check_layer_gradient(&MyConv::new(3, 2), Some(&g), &x).map_err(TestCaseError::fail)?;
//!     }
//! }
//! #[test]
//! fn matches_dense_reference() {
//!     let (g, x) = (random_graph(7, 12, 1), random_features(7, 3, 2));
//!     let (y, p) = layer_output(&MyConv::new(3, 2), Some(&g), &x, 0);
//!     let a = dense_adjacency(&g);
//!     // ... the definition with plain loops over `a`, `x` and `p` ...
//!     assert_close(&y, &reference, 1e-12);
//! }
//! ```

use crate::ctx::GraphCtx;
use crate::layer::{Features, Inputs, Layer, apply, forward_model, model_args};
use crate::params::Params;
use ndarray::{Array2, ArrayD, IxDyn};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use shade_autodiff::tensor::{self, TapeBuffers, Var};
use shade_graph::Graph;

/// Builds the graph with the guaranteed features: node `n` (the last) is isolated,
/// node 0 has a self-loop, and the first edge appears twice.
fn with_specials(n: usize, mut edges: Vec<(u32, u32)>) -> Graph {
    if n > 0 {
        edges.push((0, 0));
    }
    if let Some(&e) = edges.first() {
        edges.push(e);
    }
    let (src, dst) = edges.into_iter().unzip();
    Graph::new(n + 1, src, dst)
}

/// A strategy for graphs with `1..=max_nodes` connected-or-not nodes plus one isolated
/// node, up to `max_edges` random edges, a self-loop and a repeated edge.
pub fn arb_graph(max_nodes: usize, max_edges: usize) -> impl Strategy<Value = Graph> {
    (1..=max_nodes.max(1)).prop_flat_map(move |n| {
        proptest::collection::vec((0..n as u32, 0..n as u32), 0..=max_edges)
            .prop_map(move |e| with_specials(n, e))
    })
}

/// A strategy for a graph from [`arb_graph`] with `[N, f]` features in `[-1, 1]`.
pub fn arb_graph_and_features(
    max_nodes: usize,
    max_edges: usize,
    f: usize,
) -> impl Strategy<Value = (Graph, Array2<f64>)> {
    arb_graph(max_nodes, max_edges).prop_flat_map(move |g| {
        let n = g.num_nodes();
        proptest::collection::vec(-1.0f64..1.0, n * f).prop_map(move |v| {
            (
                g.clone(),
                Array2::from_shape_vec((n, f), v).expect("n * f values"),
            )
        })
    })
}

/// A proptest configuration with `default_cases` cases, unless the environment
/// variable `PROPTEST_CASES` asks for another number.
pub fn proptest_config(default_cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_cases);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

/// A random graph like [`arb_graph`]'s with exactly `n + 1` nodes, from a seed.
pub fn random_graph(n: usize, edges: usize, seed: u64) -> Graph {
    let mut rng = StdRng::seed_from_u64(seed);
    let e = (0..edges)
        .map(|_| (rng.random_range(0..n as u32), rng.random_range(0..n as u32)))
        .collect();
    with_specials(n, e)
}

/// `[n, f]` features uniform in `[-1, 1)`, from a seed.
pub fn random_features(n: usize, f: usize, seed: u64) -> Array2<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    Array2::from_shape_simple_fn((n, f), || rng.random::<f64>() * 2.0 - 1.0)
}

/// `A[v, u]` = summed weight (1 without weights) of the edges `u -> v`.
pub fn dense_adjacency(g: &Graph) -> Array2<f64> {
    let n = g.num_nodes();
    let mut a = Array2::zeros((n, n));
    for e in 0..g.num_edges() {
        a[[g.dst()[e] as usize, g.src()[e] as usize]] += g.weight(e);
    }
    a
}

/// The layer's output on `x` (evaluation mode) with parameters drawn from `seed`, and
/// the parameters.
///
/// # Panics
/// If the forward pass fails (a test helper).
#[track_caller]
pub fn layer_output<L: Layer<f64>>(
    layer: &L,
    graph: Option<&Graph>,
    x: &Array2<f64>,
    seed: u64,
) -> (Array2<f64>, Params<f64>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let (p, st) = layer.init(&mut rng);
    let ctx = graph.map(GraphCtx::<f64>::new);
    let feats = Features::dense(x.clone());
    let inputs = Inputs {
        graph: ctx.as_ref(),
        x: &feats,
        edge_attr: None,
    };
    let (y, _) = apply(layer, &inputs, &p, &st, false, &mut rng).expect("forward pass");
    let y = y
        .into_dimensionality::<ndarray::Ix2>()
        .expect("a 2-D output");
    (y, p)
}

/// Asserts `|a - b| <= tol · (1 + |b|)` elementwise, naming the worst entry.
#[track_caller]
pub fn assert_close(a: &Array2<f64>, b: &Array2<f64>, tol: f64) {
    assert_eq!(a.shape(), b.shape(), "shapes differ");
    let mut worst = (0.0, (0, 0));
    for ((i, &x), &y) in a.indexed_iter().zip(b.iter()) {
        let d = (x - y).abs() / (1.0 + y.abs());
        if d > worst.0 {
            worst = (d, i);
        }
    }
    assert!(
        worst.0 <= tol,
        "entry {:?}: {} vs reference {} (relative error {:e})",
        worst.1,
        a[worst.1],
        b[worst.1],
        worst.0
    );
}

/// Settings of a gradient check; [`GradCheck::run`] performs it.
#[derive(Clone, Debug)]
pub struct GradCheck<'g> {
    /// The graph (none for plain layers).
    pub graph: Option<&'g Graph>,
    /// The input features.
    pub x: Array2<f64>,
    /// Edge features (constants), if the layer reads them.
    pub edge_attr: Option<ArrayD<f64>>,
    /// Seed of the parameters and the weighting `R`.
    pub seed: u64,
    /// Finite-difference step.
    pub h: f64,
    /// Tolerance: `|g - fd| <= atol + rtol · max(|g|, |fd|)`.
    pub rtol: f64,
    /// See `rtol`.
    pub atol: f64,
    /// Also check the gradient with respect to the input.
    pub check_input: bool,
    /// Training mode (dropout and BatchNorm with a fixed random stream).
    pub training: bool,
}

impl<'g> GradCheck<'g> {
    /// Defaults: seed 0, `h = 1e-6`, `rtol = 1e-5`, `atol = 1e-6`, input checked,
    /// evaluation mode.
    pub fn new(graph: Option<&'g Graph>, x: &Array2<f64>) -> Self {
        GradCheck {
            graph,
            x: x.clone(),
            edge_attr: None,
            seed: 0,
            h: 1e-6,
            rtol: 1e-5,
            atol: 1e-6,
            check_input: true,
            training: false,
        }
    }

    /// Compares the native gradient with central differences; `Err` names the worst
    /// entry.
    pub fn run<L: Layer<f64> + ?Sized>(&self, layer: &L) -> Result<(), String> {
        let mut rng = StdRng::seed_from_u64(self.seed);
        let (params, state) = layer.init(&mut rng);
        let ctx = self.graph.map(GraphCtx::<f64>::new);
        let err = |e: crate::GnnError| format!("{}: {e}", layer.name());
        let run_seed = self.seed.wrapping_add(17);
        // The output's shape, then a fixed random weighting of it.
        let feats = Features::dense(self.x.clone());
        let inputs = Inputs {
            graph: ctx.as_ref(),
            x: &feats,
            edge_attr: self.edge_attr.as_ref(),
        };
        let (y, _) = apply(
            layer,
            &inputs,
            &params,
            &state,
            self.training,
            &mut StdRng::seed_from_u64(run_seed),
        )
        .map_err(err)?;
        let r = ArrayD::from_shape_simple_fn(IxDyn(y.shape()), || rng.random::<f64>() * 2.0 - 1.0);
        let names = params.names().to_vec();
        let loss =
            |p: &Params<f64>, x: &ArrayD<f64>, g: Option<(&mut Params<f64>, &mut ArrayD<f64>)>| {
                let feats = Features::Dense(x.clone());
                let inputs = Inputs {
                    graph: ctx.as_ref(),
                    x: &feats,
                    edge_attr: self.edge_attr.as_ref(),
                };
                let mut st = state.clone();
                let mut run_rng = StdRng::seed_from_u64(run_seed);
                let mut bufs = TapeBuffers::new();
                let (grads, dx) = match g {
                    Some((gp, gx)) => (Some(gp), Some(gx)),
                    None => (None, None),
                };
                let want = grads.is_some();
                let args = model_args(p, grads, &inputs, dx);
                weighted_loss(
                    &mut bufs,
                    layer,
                    &names,
                    &inputs,
                    &mut st,
                    self.training,
                    &mut run_rng,
                    &r,
                    args,
                    want,
                )
            };
        let x0 = self.x.clone().into_dyn();
        let mut gp = params.zeros_like();
        let mut gx = ArrayD::zeros(x0.raw_dim());
        loss(&params, &x0, Some((&mut gp, &mut gx)))
            .map_err(|e| format!("{}: {e}", layer.name()))?;
        let mut worst: Option<(f64, String, f64, f64)> = None;
        let mut consider = |what: String, g: f64, fd: f64| {
            let tol = self.atol + self.rtol * g.abs().max(fd.abs());
            let excess = (g - fd).abs() / tol;
            if excess > 1.0 && worst.as_ref().is_none_or(|w| excess > w.0) {
                worst = Some((excess, what, g, fd));
            }
        };
        let fd_err = |e: shade_autodiff::AdError| format!("{}: {e}", layer.name());
        for k in 0..params.len() {
            for j in 0..params.values()[k].len() {
                let mut p = params.clone();
                let v = &mut p.values_mut()[k].as_slice_mut().expect("standard layout")[j];
                let v0 = *v;
                *v = v0 + self.h;
                let up = loss(&p, &x0, None).map_err(fd_err)?;
                p.values_mut()[k].as_slice_mut().expect("standard layout")[j] = v0 - self.h;
                let down = loss(&p, &x0, None).map_err(fd_err)?;
                let fd = (up - down) / (2.0 * self.h);
                let g = gp.values()[k].as_slice().expect("standard layout")[j];
                consider(format!("{}[{j}]", params.names()[k]), g, fd);
            }
        }
        if self.check_input {
            for j in 0..x0.len() {
                let mut x = x0.clone();
                let s = x.as_slice_mut().expect("standard layout");
                s[j] += self.h;
                let up = loss(&params, &x, None).map_err(fd_err)?;
                x.as_slice_mut().expect("standard layout")[j] -= 2.0 * self.h;
                let down = loss(&params, &x, None).map_err(fd_err)?;
                let fd = (up - down) / (2.0 * self.h);
                consider(
                    format!("input[{j}]"),
                    gx.as_slice().expect("standard layout")[j],
                    fd,
                );
            }
        }
        match worst {
            None => Ok(()),
            Some((_, what, g, fd)) => Err(format!(
                "{}: gradient of {what} is {g}, finite differences give {fd}",
                layer.name()
            )),
        }
    }
}

/// `sum(layer(x) ⊙ r)` and, when `grad`, its gradient into the shadows of `args`.
#[allow(clippy::too_many_arguments)]
fn weighted_loss<'a, L: Layer<f64> + ?Sized>(
    bufs: &'a mut TapeBuffers<f64>,
    layer: &L,
    names: &[String],
    inputs: &Inputs<'a, f64>,
    st: &mut crate::State<f64>,
    training: bool,
    rng: &mut StdRng,
    r: &'a ArrayD<f64>,
    args: Vec<crate::Arg<'a, f64>>,
    grad: bool,
) -> shade_autodiff::AdResult<f64> {
    let program = |t: &mut tensor::Tape<'a, f64>, h: Vec<Var>| {
        let y = forward_model(t, layer, names, &h, inputs, st, training, rng)?;
        let rv = t.constant(r);
        let m = t.mul(y, rv)?;
        t.sum(m)
    };
    if grad {
        tensor::gradient(bufs, program, args)
    } else {
        tensor::value(bufs, program, args).map(|v| v.iter().next().copied().unwrap_or(0.0))
    }
}

/// [`GradCheck::new`]`(graph, x).run(layer)`.
pub fn check_layer_gradient<L: Layer<f64> + ?Sized>(
    layer: &L,
    graph: Option<&Graph>,
    x: &Array2<f64>,
) -> Result<(), String> {
    GradCheck::new(graph, x).run(layer)
}
