//! Test helpers for layers (feature `testing`, always on in this crate's tests).
//!
//! - [`arb_graph`]: a proptest strategy for small random directed graphs that always
//!   contain an isolated node, a self-loop and a multi-edge.
//! - [`random_graph`], [`random_features`]: the same from a seed.
//! - [`check_layer_gradient`] / [`GradCheck`]: the native gradient of
//!   `sum(layer(x) ⊙ R)` (fixed random `R`) with respect to every parameter, the
//!   input and the edge features, against central finite differences in `f64`; a
//!   relu or max kink exactly at the point is told from a wrong gradient.
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

use crate::ctx::{GraphArena, GraphCtx};
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
        arena: None,
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
    /// Also check the gradient with respect to the edge features, when there are
    /// some (they enter as tracked values; layers that read them are differentiable
    /// in them).
    pub check_edge_attr: bool,
    /// Training mode (dropout and BatchNorm with a fixed random stream).
    pub training: bool,
    /// The largest fraction of coordinates that may sit exactly on a kink (one-sided
    /// slopes that stay apart as the step shrinks: a relu at 0, a max with a tie).
    /// Such coordinates have no derivative to compare with and are not judged; past
    /// this fraction the check fails as meaningless. `0.0` demands a smooth point.
    pub max_kink_fraction: f64,
}

impl<'g> GradCheck<'g> {
    /// Defaults: seed 0, `h = 1e-6`, `rtol = 1e-5`, `atol = 1e-6`, input and edge
    /// features checked, evaluation mode, at most half the coordinates on a kink.
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
            check_edge_attr: true,
            training: false,
            max_kink_fraction: 0.5,
        }
    }

    /// With `width` columns of edge features, one row per edge of the graph, drawn
    /// with [`random_features`] (seed 7).
    pub fn with_edge_features(mut self, width: usize) -> Self {
        let ne = self.graph.map_or(0, Graph::num_edges);
        self.edge_attr = Some(random_features(ne, width, 7).into_dyn());
        self
    }

    /// In training mode (or evaluation mode) with a fixed random stream.
    pub fn in_training(mut self, training: bool) -> Self {
        self.training = training;
        self
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
            arena: None,
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
        // The loss at parameters `p`, features `x` and edge features `e`; with `g`, its
        // gradient into the parameter, feature and (if any) edge-feature shadows.
        type Shadows<'s> = (
            &'s mut Params<f64>,
            &'s mut ArrayD<f64>,
            Option<&'s mut ArrayD<f64>>,
        );
        let loss =
            |p: &Params<f64>, x: &ArrayD<f64>, e: Option<&ArrayD<f64>>, g: Option<Shadows<'_>>| {
                let feats = Features::Dense(x.clone());
                let arena = GraphArena::new();
                let inputs = Inputs {
                    graph: ctx.as_ref(),
                    x: &feats,
                    edge_attr: e,
                    arena: Some(&arena),
                };
                let mut st = state.clone();
                let mut run_rng = StdRng::seed_from_u64(run_seed);
                let mut bufs = TapeBuffers::new();
                let (grads, dx, de) = match g {
                    Some((gp, gx, ge)) => (Some(gp), Some(gx), ge),
                    None => (None, None, None),
                };
                let want = grads.is_some();
                let args = model_args(p, grads, &inputs, dx, de);
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
        let e0 = self.edge_attr.as_ref();
        let mut gp = params.zeros_like();
        let mut gx = ArrayD::zeros(x0.raw_dim());
        let mut ge = e0.map(|e| ArrayD::zeros(e.raw_dim()));
        let ge_slot = ge.as_mut().filter(|_| self.check_edge_attr);
        loss(&params, &x0, e0, Some((&mut gp, &mut gx, ge_slot)))
            .map_err(|e| format!("{}: {e}", layer.name()))?;
        // The loss with one coordinate moved by `d`.
        let fd_err = |e: crate::GnnError| format!("{}: {e}", layer.name());
        let moved = |c: Coord, d: f64| -> Result<f64, String> {
            let bump = |a: &mut ArrayD<f64>, j: usize| {
                a.as_slice_mut().expect("standard layout")[j] += d;
            };
            match c {
                Coord::Param(k, j) => {
                    let mut p = params.clone();
                    bump(&mut p.values_mut()[k], j);
                    loss(&p, &x0, e0, None)
                }
                Coord::Input(j) => {
                    let mut x = x0.clone();
                    bump(&mut x, j);
                    loss(&params, &x, e0, None)
                }
                Coord::Edge(j) => {
                    let mut e = e0
                        .expect("edge coordinates only with edge features")
                        .clone();
                    bump(&mut e, j);
                    loss(&params, &x0, Some(&e), None)
                }
            }
            .map_err(fd_err)
        };
        let close =
            |g: f64, fd: f64| (g - fd).abs() <= self.atol + self.rtol * g.abs().max(fd.abs());
        let mut worst: Option<(f64, String)> = None;
        let mut kinks = 0usize;
        let mut coords: Vec<(Coord, String, f64)> = Vec::new();
        let slice = |a: &ArrayD<f64>| a.as_slice().expect("standard layout").to_vec();
        for k in 0..params.len() {
            for (j, gj) in slice(&gp.values()[k]).into_iter().enumerate() {
                coords.push((
                    Coord::Param(k, j),
                    format!("{}[{j}]", params.names()[k]),
                    gj,
                ));
            }
        }
        if self.check_input {
            for (j, gj) in slice(&gx).into_iter().enumerate() {
                coords.push((Coord::Input(j), format!("input[{j}]"), gj));
            }
        }
        if let Some(ge) = ge.as_ref().filter(|_| self.check_edge_attr) {
            for (j, gj) in slice(ge).into_iter().enumerate() {
                coords.push((Coord::Edge(j), format!("edge_attr[{j}]"), gj));
            }
        }
        let total = coords.len();
        for (c, what, g) in coords {
            let central =
                |h: f64| -> Result<f64, String> { Ok((moved(c, h)? - moved(c, -h)?) / (2.0 * h)) };
            let fd = central(self.h)?;
            if close(g, fd) {
                continue;
            }
            match self.judge_mismatch(g, &central, &|d| moved(c, d))? {
                Mismatch::KinkNearby => {}
                Mismatch::KinkHere => kinks += 1,
                Mismatch::Wrong(detail) => {
                    let tol = self.atol + self.rtol * g.abs().max(fd.abs());
                    let excess = (g - fd).abs() / tol;
                    if worst.as_ref().is_none_or(|w| excess > w.0) {
                        worst = Some((
                            excess,
                            format!(
                                "{}: gradient of {what} is {g}, finite differences give {fd}{detail}",
                                layer.name()
                            ),
                        ));
                    }
                }
            }
        }
        // A point where most coordinates sit on a kink would test little.
        if worst.is_none() && kinks as f64 > self.max_kink_fraction * total as f64 {
            return Err(format!(
                "{}: {kinks} of {total} coordinates sit on a kink (a relu or max \
                 switching exactly here), more than the allowed fraction {}; check at \
                 other inputs",
                layer.name(),
                self.max_kink_fraction
            ));
        }
        match worst {
            None => Ok(()),
            Some((_, message)) => Err(message),
        }
    }
}

/// One coordinate of the check: parameter `k`'s entry `j`, an input entry, or an
/// edge-feature entry.
#[derive(Clone, Copy)]
enum Coord {
    Param(usize, usize),
    Input(usize),
    Edge(usize),
}

/// What a coordinate whose gradient disagrees with the central difference turned out to
/// be.
enum Mismatch {
    /// A kink (a relu or max switching) lies within the step of the point: smaller
    /// steps agree with the gradient.
    KinkNearby,
    /// A kink at the point itself: the one-sided slopes stay apart as the step
    /// shrinks. The function has no derivative in this direction, and what AD returns
    /// is a convention (`relu'(0) = 0` in every unit at once), which need not even lie
    /// between the one-sided slopes when several units switch together; the
    /// coordinate is not judged (and [`GradCheck::run`] fails when most are like it).
    KinkHere,
    /// A wrong gradient; the text adds the one-sided slopes to the message.
    Wrong(String),
}

impl GradCheck<'_> {
    /// Tells a kink from a wrong gradient once `g` disagrees with the central
    /// difference at step `h`. `central(s)` is the central difference at step `s`,
    /// `moved(d)` the loss with the coordinate moved by `d`.
    ///
    /// A smooth function's central differences converge to its derivative as the step
    /// shrinks, and its one-sided slopes converge to each other; so where a
    /// smaller-step difference disagrees too and the slopes converge, the gradient is
    /// wrong. A jump in the function (say, a random mask that changed between
    /// evaluations) makes the slopes grow like `1 / step`, which is also judged wrong.
    fn judge_mismatch(
        &self,
        g: f64,
        central: &dyn Fn(f64) -> Result<f64, String>,
        moved: &dyn Fn(f64) -> Result<f64, String>,
    ) -> Result<Mismatch, String> {
        let tol = |a: f64, b: f64| self.atol + self.rtol * a.abs().max(b.abs());
        // Steps well below `h` but far enough above rounding (the losses are O(1)).
        let steps = [self.h / 16.0, self.h / 256.0];
        for s in steps {
            let fd = central(s)?;
            if (g - fd).abs() <= tol(g, fd) {
                return Ok(Mismatch::KinkNearby);
            }
        }
        let f0 = moved(0.0)?;
        let slopes = |s: f64| -> Result<(f64, f64), String> {
            Ok(((f0 - moved(-s)?) / s, (moved(s)? - f0) / s))
        };
        let (left, right) = slopes(steps[0])?;
        let (left2, right2) = slopes(steps[1])?;
        // A kink here: the slopes differ, and by the same amount at both steps (a smooth
        // function's gap shrinks with the step).
        let gap = (right - left).abs();
        let kink = gap > tol(left, right)
            && ((right2 - left2).abs() - gap).abs() <= tol(gap, gap) + 0.5 * gap;
        if kink {
            return Ok(Mismatch::KinkHere);
        }
        Ok(Mismatch::Wrong(format!(
            " (one-sided slopes {left} and {right} at step {})",
            steps[0]
        )))
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
) -> crate::GnnResult<f64> {
    let carry = crate::ErrorCarry::new();
    let program = |t: &mut tensor::Tape<'a, f64>, h: Vec<Var>| {
        let y = carry.lift(forward_model(
            t, layer, names, &h, inputs, st, training, rng,
        ))?;
        let rv = t.constant(r);
        let m = t.mul(y, rv)?;
        t.sum(m)
    };
    carry.land(if grad {
        tensor::gradient(bufs, program, args)
    } else {
        tensor::value(bufs, program, args).map(|v| v.iter().next().copied().unwrap_or(0.0))
    })
}

/// [`GradCheck::new`]`(graph, x).run(layer)`.
pub fn check_layer_gradient<L: Layer<f64> + ?Sized>(
    layer: &L,
    graph: Option<&Graph>,
    x: &Array2<f64>,
) -> Result<(), String> {
    GradCheck::new(graph, x).run(layer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layer::{Env, Input};
    use crate::params::{ParamVars, State, StateScope};
    use ndarray::ArrayViewD;
    use shade_autodiff::AdResult;
    use shade_autodiff::tensor::{RuleSlot, Tape, TensorRule};

    /// `x²` elementwise, or `relu(x)`, or `x²` with a rule that forgets the factor 2.
    #[derive(Clone, Copy)]
    enum Probe {
        Square,
        Relu,
        WrongSquare,
    }

    struct HalfSquareRule;

    impl TensorRule<f64> for HalfSquareRule {
        fn name(&self) -> &'static str {
            "wrong_square"
        }
        fn forward(&self, x: &[ArrayViewD<'_, f64>]) -> AdResult<ArrayD<f64>> {
            Ok(x[0].mapv(|v| v * v))
        }
        fn vjp(
            &self,
            x: &[ArrayViewD<'_, f64>],
            _y: ArrayViewD<'_, f64>,
            g: ArrayViewD<'_, f64>,
            _input: usize,
            mut dx: RuleSlot<'_, f64>,
        ) -> AdResult<()> {
            dx.add(&(&g * &x[0]))
        }
        fn jvp(
            &self,
            x: &[ArrayViewD<'_, f64>],
            _y: ArrayViewD<'_, f64>,
            t: &[Option<ArrayViewD<'_, f64>>],
            mut ty: RuleSlot<'_, f64>,
        ) -> AdResult<()> {
            match &t[0] {
                Some(t) => ty.assign(&(t * &x[0])),
                None => Ok(()),
            }
        }
    }

    impl Layer<f64> for Probe {
        fn name(&self) -> &'static str {
            "Probe"
        }
        fn init(&self, _rng: &mut StdRng) -> (Params<f64>, State<f64>) {
            (Params::new(), State::new())
        }
        fn forward<'a>(
            &self,
            t: &mut Tape<'a, f64>,
            _env: &mut Env<'a, '_, f64>,
            x: Input<'a, f64>,
            _p: ParamVars<'_>,
            _st: StateScope<'_, f64>,
        ) -> crate::GnnResult<Var> {
            let x = x.dense(t)?;
            Ok(match self {
                Probe::Square => t.mul(x, x)?,
                Probe::Relu => t.relu(x)?,
                Probe::WrongSquare => t.custom(HalfSquareRule, &[x])?,
            })
        }
    }

    #[test]
    fn a_wrong_rule_fails_the_check_and_a_right_one_passes() {
        let x = random_features(4, 3, 1);
        let strict = GradCheck {
            max_kink_fraction: 0.0,
            ..GradCheck::new(None, &x)
        };
        strict.run(&Probe::Square).unwrap();
        strict.run(&Probe::Relu).unwrap();
        let err = strict.run(&Probe::WrongSquare).unwrap_err();
        assert!(err.starts_with("Probe: gradient of input["), "{err}");
        assert!(err.contains("one-sided slopes"), "{err}");
    }

    #[test]
    fn kinks_are_skipped_only_up_to_the_allowed_fraction() {
        // Four of twelve inputs exactly at relu's kink.
        let mut x = random_features(4, 3, 2);
        x.row_mut(1).fill(0.0);
        x[[3, 0]] = 0.0;
        GradCheck::new(None, &x).run(&Probe::Relu).unwrap();
        let strict = GradCheck {
            max_kink_fraction: 0.25,
            ..GradCheck::new(None, &x)
        };
        let err = strict.run(&Probe::Relu).unwrap_err();
        assert!(err.contains("4 of 12 coordinates sit on a kink"), "{err}");
        // A kink does not hide a wrong rule elsewhere.
        let err = GradCheck::new(None, &x)
            .run(&Probe::WrongSquare)
            .unwrap_err();
        assert!(err.contains("gradient of input["), "{err}");
    }
}
