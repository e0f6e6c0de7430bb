//! Test helpers for layers (feature `testing`, always on in this crate's tests).
//!
//! - [`arb_graph`]: a proptest strategy for small random directed graphs that always
//!   contain an isolated node, a self-loop and a multi-edge.
//! - [`random_graph`], [`random_features`]: the same from a seed.
//! - [`check_layer_gradient`] / [`GradCheck`] (in `testing/grad_check.rs`): the native
//!   gradient of `sum(layer(x) ⊙ R)` (fixed random `R`) with respect to every
//!   parameter, the input and the edge features, against central finite differences
//!   in `f64`, along random directions first and coordinate by coordinate when a
//!   direction disagrees; a relu or max kink exactly at the point is told from a wrong
//!   gradient. [`check_array_gradient`]: the same directional check for a smooth
//!   function of one array.
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

mod grad_check;

pub use grad_check::{GradCheck, check_array_gradient, check_layer_gradient};

use crate::ctx::GraphCtx;
use crate::layer::{Features, Inputs, Layer, apply};
use crate::params::Params;
use ndarray::Array2;
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
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
        // Rejections in proportion to the cases (proptest's default is a fixed 1024).
        max_global_rejects: cases.max(1024),
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
        arena: None,
    };
    let (y, _) = apply(layer, &inputs, &p, &st, false, &mut rng).expect("forward pass");
    let y = y
        .into_dimensionality::<ndarray::Ix2>()
        .expect("a 2-D output");
    (y, p)
}

/// The layer's output on `inputs` in evaluation mode, with parameters `p` (set by hand
/// or taken from another run) and a fresh state.
///
/// # Panics
/// If the forward pass fails (a test helper).
#[cfg(test)]
#[track_caller]
pub(crate) fn eval_output<L: Layer<f64>>(
    layer: &L,
    inputs: &Inputs<'_, f64>,
    p: &Params<f64>,
) -> ndarray::ArrayD<f64> {
    let state = crate::params::State::new();
    let mut rng = StdRng::seed_from_u64(0);
    apply(layer, inputs, p, &state, false, &mut rng)
        .expect("forward pass")
        .0
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
