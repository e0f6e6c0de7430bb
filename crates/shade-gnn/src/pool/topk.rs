//! `TopKPool` (Gao & Ji, 2019; Cangea et al., 2018; Knyazev et al., 2019), as
//! PyTorch Geometric's `TopKPooling`: a fraction or a count of nodes per graph, or the
//! nodes above a softmax score.

use crate::ctx::{Float, GraphArena, GraphCtx};
use crate::error::GnnResult;
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::layers::Activation;
use crate::layers::blocks::{bad_option, rows_per_node};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};
use shade_graph::Graph;

/// The tolerance of PyG's `topk` under `min_score`: a graph keeps the nodes scoring
/// above `min(max score - TOL, min_score)`, so at least its best one.
const MIN_SCORE_TOL: f64 = 1e-7;

/// How many nodes of each graph [`TopKPool`] keeps: PyG's `ratio`, a float or an int.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Ratio {
    /// `⌈fraction · n_g⌉` nodes of a graph of `n_g` nodes; the fraction lies in
    /// `(0, 1]`.
    Fraction(f64),
    /// `min(k, n_g)` nodes; `k >= 1`.
    Count(usize),
}

impl Ratio {
    /// The number of nodes kept out of `n`.
    fn keep(self, n: usize) -> usize {
        match self {
            Ratio::Fraction(r) => ((r * n as f64).ceil() as usize).min(n),
            Ratio::Count(k) => k.min(n),
        }
    }
}

impl From<f64> for Ratio {
    fn from(r: f64) -> Self {
        Ratio::Fraction(r)
    }
}

impl From<usize> for Ratio {
    fn from(k: usize) -> Self {
        Ratio::Count(k)
    }
}

/// Top-k pooling: score every node, keep the best-scored nodes of every graph `g` of
/// the batch, gate them by their scores, `X' = multiplier · X[perm] ⊙ s[perm]`, and keep
/// the subgraph they induce.
///
/// - Without `min_score` (the default): `s = σ(X p / ‖p‖)` with the `nonlinearity` `σ`,
///   and each graph keeps its `ratio`'s worth of nodes ([`Ratio::Fraction`]:
///   `⌈ratio · n_g⌉`, [`Ratio::Count`]: `min(k, n_g)`), ordered by descending score
///   (ties by node index).
/// - With `min_score = α̃`: `ratio` and `nonlinearity` are ignored, `s = softmax(X p)`
///   over each graph's nodes, and a graph keeps, in node order, the nodes with
///   `s > min(max_g s - 10⁻⁷, α̃)` (PyG's `topk` with `tol = 1e-7`; compared in
///   `f64`), so every graph with nodes keeps at least one. PyG's softmax adds `1e-16`
///   to the denominator; shade's does not.
///
/// The kept set `perm` (grouped by graph) and the pooled graph are constants computed
/// from the scores' values; the gating is differentiable in `X` and `p`. Parameter
/// (PyG's name): `weight` `[1, in]` (uniform `±1/√in`). Options and defaults as PyG:
/// `ratio = 0.5`, `min_score = None`, `multiplier = 1`, `nonlinearity = tanh` (any
/// [`Activation`]; PyG resolves the same names). A float `ratio` of exactly `1.0` keeps
/// every node, as PyG documents (its code takes any float `>= 1` as the count
/// `int(ratio)`).
///
/// As a [`Layer`] it returns the pooled features and, when the call has a
/// [`GraphArena`] (the entry points [`apply`](crate::apply),
/// [`TrainState::predict`](crate::train::TrainState::predict) and
/// [`single_train_step`](crate::train::single_train_step) make one), hands the pooled
/// graph and the kept edges' features on to the layers after it: a
/// [`Chain`](crate::layers::Chain) such as `conv → TopKPool → conv → GlobalPool` runs
/// like PyG's hierarchical models, the later layers and the readout on the pooled
/// graph and batch. [`TopKPool::pool`] also returns the kept nodes, their scores, the
/// kept edges and the pooled graph for hand-written programs.
///
/// ```
/// use rand::{SeedableRng, rngs::StdRng};
/// use shade_gnn::{apply, Features, GraphCtx, Inputs, Layer, Params, State};
/// use shade_gnn::pool::{Ratio, TopKPool};
/// let a = shade_graph::Graph::try_new(3, vec![0, 1], vec![1, 2])?;
/// let b = shade_graph::Graph::try_new(2, vec![0], vec![1])?;
/// let batch = shade_graph::Graph::batch(&[a, b])?;
/// let ctx = GraphCtx::<f64>::new(&batch);
/// let x = Features::dense(ndarray::array![[1.0], [3.0], [2.0], [-1.0], [4.0]]);
/// let p = Params::new().with("weight", ndarray::array![[1.0]].into_dyn());
/// let mut rng = StdRng::seed_from_u64(0);
/// let inputs = Inputs::new(&ctx, &x);
/// // Two nodes of each graph at most: nodes 1, 2 of the first, 4, 3 of the second.
/// let top2 = TopKPool::with_count(1, 2);
/// let (y, _) = apply(&top2, &inputs, &p, &State::new(), false, &mut rng)?;
/// assert_eq!(y.len(), 4);
/// assert!((y[[0, 0]] - 3.0 * 3f64.tanh()).abs() < 1e-12);
/// // Softmax scores above 0.4 (or each graph's best): nodes 1 and 4.
/// let min = TopKPool::with_min_score(1, 0.4);
/// let (y, _) = apply(&min, &inputs, &p, &State::new(), false, &mut rng)?;
/// assert_eq!(y.len(), 2);
/// assert_eq!(TopKPool { ratio: Ratio::Count(2), ..TopKPool::new(1, 0.5) }, top2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TopKPool {
    /// Feature width.
    pub in_channels: usize,
    /// How many nodes of each graph to keep (ignored with `min_score`).
    pub ratio: Ratio,
    /// Keep the nodes whose softmax score exceeds this value (see the type's
    /// documentation); must be finite.
    pub min_score: Option<f64>,
    /// Scale of the pooled features.
    pub multiplier: f64,
    /// The score's nonlinearity `σ` (ignored with `min_score`).
    pub nonlinearity: Activation,
}

/// What [`TopKPool::pool`] returns.
#[derive(Debug)]
pub struct TopKOutput {
    /// The pooled features `[k, F]`.
    pub x: Var,
    /// The kept nodes' scores `[k, 1]` (after the nonlinearity, or the softmax with
    /// `min_score`).
    pub score: Var,
    /// The kept nodes (ids in the input graph), in the pooled graph's order.
    pub perm: Vec<usize>,
    /// The subgraph induced by `perm` (node `i` is `perm[i]`), with the batch layout
    /// of the kept nodes.
    pub graph: Graph,
    /// The kept edges (ids in the input graph), in the pooled graph's edge order: the
    /// rows of the edge features that go with it.
    pub edges: Vec<usize>,
}

impl TopKPool {
    /// Pooling of `in_channels`-wide features keeping the fraction `ratio` of each
    /// graph's nodes, with PyG's other defaults.
    pub fn new(in_channels: usize, ratio: f64) -> Self {
        TopKPool {
            in_channels,
            ratio: Ratio::Fraction(ratio),
            min_score: None,
            multiplier: 1.0,
            nonlinearity: Activation::Tanh,
        }
    }

    /// Pooling keeping `k` nodes of each graph (all of a smaller graph).
    pub fn with_count(in_channels: usize, k: usize) -> Self {
        TopKPool {
            ratio: Ratio::Count(k),
            ..TopKPool::new(in_channels, 0.5)
        }
    }

    /// Pooling keeping the nodes whose softmax score exceeds `min_score` (and each
    /// graph's best node).
    pub fn with_min_score(in_channels: usize, min_score: f64) -> Self {
        TopKPool {
            min_score: Some(min_score),
            ..TopKPool::new(in_channels, 0.5)
        }
    }

    /// The options in effect, checked: `ratio` (without `min_score`), `min_score`,
    /// `multiplier`.
    fn check(&self) -> GnnResult<()> {
        Err(match (self.min_score, self.ratio) {
            (Some(m), _) if !m.is_finite() => bad_option("min_score", m, "a finite value"),
            (None, Ratio::Fraction(r)) if !(r > 0.0 && r <= 1.0) => {
                bad_option("ratio", r, "0 < ratio <= 1, or a count k >= 1")
            }
            (None, Ratio::Count(0)) => bad_option("ratio", "Count(0)", "a count k >= 1"),
            _ if !self.multiplier.is_finite() => {
                bad_option("multiplier", self.multiplier, "a finite value")
            }
            _ => return Ok(()),
        })
    }

    /// The kept nodes, grouped by graph: each graph's `ratio` best by descending score
    /// (ties by node index), or, with `min_score`, those above the graph's threshold in
    /// node order.
    fn select(&self, batch: &[u32], num_graphs: usize, score: &[f64]) -> Vec<usize> {
        let mut groups: Vec<Vec<usize>> = vec![Vec::new(); num_graphs];
        for (v, &g) in batch.iter().enumerate() {
            groups[g as usize].push(v);
        }
        let mut perm = Vec::with_capacity(batch.len());
        for nodes in &mut groups {
            match self.min_score {
                Some(min_score) => {
                    let best = nodes
                        .iter()
                        .map(|&v| score[v])
                        .fold(f64::NEG_INFINITY, f64::max);
                    let threshold = (best - MIN_SCORE_TOL).min(min_score);
                    perm.extend(nodes.iter().copied().filter(|&v| score[v] > threshold));
                }
                None => {
                    nodes.sort_by(|&a, &b| {
                        score[b]
                            .partial_cmp(&score[a])
                            .unwrap_or(std::cmp::Ordering::Equal)
                            .then(a.cmp(&b))
                    });
                    perm.extend_from_slice(&nodes[..self.ratio.keep(nodes.len())]);
                }
            }
        }
        perm
    }

    /// Pools `x` on the graph `ctx` with the parameter `weight` in `p`.
    ///
    /// Errors: [`GnnError::InvalidSetting`](crate::GnnError::InvalidSetting) for an
    /// option out of range (a fraction outside `(0, 1]`, a count of 0, a non-finite
    /// `min_score` or `multiplier`), [`GnnError::InputShape`](crate::GnnError::InputShape)
    /// when `x` does not have one row per node or its width differs from the weight's.
    pub fn pool<'a, T: Float>(
        &self,
        t: &mut Tape<'a, T>,
        ctx: &'a GraphCtx<T>,
        x: Input<'a, T>,
        p: ParamVars<'_>,
    ) -> GnnResult<TopKOutput> {
        self.check()?;
        let n = ctx.num_nodes();
        if x.rows(t)? != n {
            return Err(rows_per_node(&[x.rows(t)?, x.cols(t)?], n));
        }
        let w = p.param("weight")?;
        let s = x.linear(t, w)?;
        let w = w.var;
        let batch = ctx.batch();
        let score = if self.min_score.is_some() {
            t.segment_softmax(s, batch, ctx.num_graphs())?
        } else {
            let norm = t.norm(w)?;
            let s = t.div(s, norm)?;
            self.nonlinearity.apply(t, s)?
        };
        // The selection: a constant computed from the scores' values (detached: the
        // scores' derivative flows through the gating below, not through the choice).
        let detached = t.detach(score)?;
        let sv: Vec<f64> = t
            .value(detached)?
            .iter()
            .map(|v| v.to_f64().unwrap_or(f64::NAN))
            .collect();
        let perm = self.select(batch, ctx.num_graphs(), &sv);
        let new_batch: Vec<u32> = perm.iter().map(|&v| batch[v]).collect();
        let ids: Vec<u32> = perm.iter().map(|&v| v as u32).collect();
        let graph = ctx
            .graph()
            .induced_subgraph(&ids)
            .and_then(|g| g.with_graph_indicator(&new_batch, ctx.num_graphs()))?;
        // The edges `induced_subgraph` keeps, in its (the graph's) order.
        let mut kept = vec![false; n];
        perm.iter().for_each(|&v| kept[v] = true);
        let (src, dst) = (ctx.edges().src(), ctx.edges().dst());
        let edges = (0..src.len())
            .filter(|&e| kept[src[e] as usize] && kept[dst[e] as usize])
            .collect();
        let xd = x.dense(t)?;
        let xk = t.index_select_owned(xd, perm.clone())?;
        let sk = t.index_select_owned(score, perm.clone())?;
        let mut y = t.mul(xk, sk)?;
        if self.multiplier != 1.0 {
            y = t.scale(y, T::cst(self.multiplier))?;
        }
        Ok(TopKOutput {
            x: y,
            score: sk,
            perm,
            graph,
            edges,
        })
    }
}

impl<T: Float> Layer<T> for TopKPool {
    fn name(&self) -> &'static str {
        "TopKPool"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let i = self.in_channels;
        let b = 1.0 / (i.max(1) as f64).sqrt();
        (
            Params::new().with("weight", init::uniform(rng, &[1, i], b)),
            State::new(),
        )
    }

    fn forward<'a>(
        &self,
        t: &mut Tape<'a, T>,
        env: &mut Env<'a, '_, T>,
        x: Input<'a, T>,
        p: ParamVars<'_>,
        _st: StateScope<'_, T>,
    ) -> GnnResult<Var> {
        let g = env.graph("TopKPool")?;
        let o = self.pool(t, g, x, p)?;
        // With an arena, the layers after this one read the pooled graph and the kept
        // edges' features (a Chain passes `env` on).
        if let Some(arena) = env.arena {
            let pooled = arena.hold(GraphCtx::new(&o.graph)).ok_or_else(|| {
                let cap = GraphArena::<T>::CAPACITY;
                bad_option(
                    "node-dropping poolings per program",
                    format!("more than {cap}"),
                    &format!("at most {cap} (GraphArena::CAPACITY)"),
                )
            })?;
            env.graph = Some(pooled);
            env.edge_attr = match env.edge_attr {
                Some(e) => Some(t.index_select_owned(e, o.edges)?),
                None => None,
            };
        }
        Ok(o.x)
    }

    fn is_graph_layer(&self) -> bool {
        true
    }

    fn drops_nodes(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::global_add_pool;
    use super::super::test_util::{arb_batch, batch3};
    use super::*;
    use crate::layers::blocks::reference::m;
    use crate::testing::{
        assert_close, check_array_gradient, check_layer_gradient, layer_output, proptest_config,
    };
    use ndarray::{Array2, ArrayD};
    use proptest::prelude::*;
    use rand::SeedableRng;
    use shade_autodiff::Duplicated;
    use shade_autodiff::tensor::{self, TapeBuffers};
    use std::sync::OnceLock;

    #[test]
    fn matches_dense_reference_and_returns_the_induced_subgraph() {
        // Graph sizes 5, 2 and 6: a count of 3 exceeds the middle graph's size.
        let (g, x) = batch3();
        assert_eq!(g.graph_node_ptr(), &[0, 5, 7, 13]);
        let ind: Vec<usize> = g.graph_indicator().iter().map(|&i| i as usize).collect();
        let sigmoid = crate::layers::blocks::reference::sigmoid;
        type Act = fn(f64) -> f64;
        let configs: [(Ratio, Activation, Act); 6] = [
            (Ratio::Fraction(0.5), Activation::Tanh, f64::tanh),
            (Ratio::Fraction(0.3), Activation::Sigmoid, sigmoid),
            (Ratio::Fraction(1.0), Activation::Identity, |s| s),
            (Ratio::Count(3), Activation::Tanh, f64::tanh),
            (Ratio::Count(1), Activation::Sigmoid, sigmoid),
            (Ratio::Count(100), Activation::Tanh, f64::tanh),
        ];
        for (ratio, nonlinearity, act) in configs {
            let pool = TopKPool {
                ratio,
                nonlinearity,
                multiplier: 2.0,
                ..TopKPool::new(3, 0.5)
            };
            let (y, p) = layer_output(&pool, Some(&g), &x, 4);
            let w = m(&p, "weight");
            let wn = w.iter().map(|v| v * v).sum::<f64>().sqrt();
            let score: Vec<f64> = (0..x.nrows())
                .map(|u| act((0..3).map(|c| x[[u, c]] * w[[0, c]]).sum::<f64>() / wn))
                .collect();
            let mut perm = Vec::new();
            for gid in 0..3 {
                let mut nodes: Vec<usize> = (0..x.nrows()).filter(|&u| ind[u] == gid).collect();
                nodes.sort_by(|&a, &b| score[b].partial_cmp(&score[a]).unwrap());
                let k = match ratio {
                    Ratio::Fraction(r) => (r * nodes.len() as f64).ceil() as usize,
                    Ratio::Count(k) => k.min(nodes.len()),
                };
                perm.extend_from_slice(&nodes[..k]);
            }
            if ratio == Ratio::Count(3) {
                assert_eq!(perm.len(), 3 + 2 + 3);
            }
            let r = Array2::from_shape_fn((perm.len(), 3), |(i, c)| {
                2.0 * x[[perm[i], c]] * score[perm[i]]
            });
            assert_close(&y, &r, 1e-12);
            // The pooled graph: kept edges, renumbered; the batch of the kept nodes.
            let ctx = GraphCtx::<f64>::new(&g);
            let xd = x.clone().into_dyn();
            let out = tensor::value(
                &mut TapeBuffers::new(),
                |t, (xv, wv)| {
                    let names = ["weight".to_string()];
                    let o = pool.pool(t, &ctx, Input::Dense(xv), ParamVars::new(&names, &[wv]));
                    let o = o.expect("the pooling runs");
                    assert_eq!(o.perm, perm);
                    let pos = |u: usize| perm.iter().position(|&q| q == u);
                    let mut edges = Vec::new();
                    for e in 0..g.num_edges() {
                        if let (Some(a), Some(b)) =
                            (pos(g.src()[e] as usize), pos(g.dst()[e] as usize))
                        {
                            edges.push((a as u32, b as u32));
                        }
                    }
                    let got: Vec<(u32, u32)> = o
                        .graph
                        .src()
                        .iter()
                        .copied()
                        .zip(o.graph.dst().iter().copied())
                        .collect();
                    assert_eq!(got, edges);
                    let want_ind: Vec<u32> = perm.iter().map(|&u| ind[u] as u32).collect();
                    assert_eq!(o.graph.graph_indicator(), &want_ind[..]);
                    Ok(o.x)
                },
                (
                    shade_autodiff::Const(&xd),
                    shade_autodiff::Const(p.get("weight").unwrap()),
                ),
            )
            .unwrap();
            assert_close(&out.into_dimensionality().unwrap(), &r, 1e-12);
        }
    }

    /// The pooled features, the kept nodes and the pooled graph for a given weight.
    fn pooled(
        pool: &TopKPool,
        g: &Graph,
        x: &Array2<f64>,
        w: &ArrayD<f64>,
    ) -> GnnResult<(Array2<f64>, Vec<usize>, Graph)> {
        let ctx = GraphCtx::<f64>::new(g);
        let xd = x.clone().into_dyn();
        let mut kept = None;
        let carry = crate::ErrorCarry::new();
        let y = carry.land(tensor::value(
            &mut TapeBuffers::new(),
            |t, (xv, wv)| {
                let names = ["weight".to_string()];
                let o = pool.pool(t, &ctx, Input::Dense(xv), ParamVars::new(&names, &[wv]));
                let o = carry.lift(o)?;
                kept = Some((o.perm, o.graph));
                Ok(o.x)
            },
            (shade_autodiff::Const(&xd), shade_autodiff::Const(w)),
        ))?;
        let (perm, graph) = kept.expect("the program ran");
        Ok((y.into_dimensionality().unwrap(), perm, graph))
    }

    /// Graphs of 4, 5 and 1 nodes whose scores `x · [1, 0]` make `min_score = 0.3` bite
    /// differently: the first keeps its two nodes above 0.3, the second (every
    /// softmax score near 0.2) only its best node, the third its only node.
    fn min_score_batch() -> (Graph, Array2<f64>) {
        let a = Graph::new(4, vec![0, 1, 2, 3, 1], vec![1, 2, 3, 0, 0]);
        let b = Graph::new(5, vec![0, 1, 2, 3, 4, 4], vec![1, 2, 3, 4, 0, 4]);
        let c = Graph::new(1, vec![0], vec![0]);
        let g = Graph::batch(&[a, b, c]).unwrap();
        let s = [2.0, 1.9, 0.0, -1.0, 0.1, 0.2, 0.0, 0.15, 0.05, -3.0];
        let x = Array2::from_shape_fn((10, 2), |(v, c)| if c == 0 { s[v] } else { 0.5 - v as f64 });
        (g, x)
    }

    #[test]
    fn min_score_matches_dense_reference() {
        let (g, x) = min_score_batch();
        let ind: Vec<usize> = g.graph_indicator().iter().map(|&i| i as usize).collect();
        let w = ndarray::array![[1.0, 0.0]].into_dyn();
        // `ratio` and `nonlinearity` are ignored, whatever they are.
        for pool in [
            TopKPool::with_min_score(2, 0.3),
            TopKPool {
                ratio: Ratio::Count(1),
                nonlinearity: Activation::Sigmoid,
                multiplier: 1.5,
                ..TopKPool::with_min_score(2, 0.3)
            },
        ] {
            let (y, perm, graph) = pooled(&pool, &g, &x, &w).unwrap();
            // PyG's definitions with plain loops: softmax of x·p per graph (no norm),
            // threshold min(max - 1e-7, min_score), kept nodes in node order.
            let raw: Vec<f64> = (0..10).map(|v| x[[v, 0]]).collect();
            let mut score = [0.0; 10];
            let mut want = Vec::new();
            for gid in 0..3 {
                let nodes: Vec<usize> = (0..10).filter(|&v| ind[v] == gid).collect();
                let mx = nodes.iter().map(|&v| raw[v]).fold(f64::MIN, f64::max);
                let z: f64 = nodes.iter().map(|&v| (raw[v] - mx).exp()).sum();
                for &v in &nodes {
                    score[v] = (raw[v] - mx).exp() / z;
                }
                let best = nodes.iter().map(|&v| score[v]).fold(f64::MIN, f64::max);
                let thr = (best - 1e-7).min(0.3);
                want.extend(nodes.iter().copied().filter(|&v| score[v] > thr));
            }
            assert_eq!(want, vec![0, 1, 5, 9]);
            assert_eq!(perm, want);
            let r = Array2::from_shape_fn((4, 2), |(i, c)| {
                pool.multiplier * x[[want[i], c]] * score[want[i]]
            });
            assert_close(&y, &r, 1e-12);
            // The pooled graph: edges 0 -> 1 and 1 -> 0 of the first graph, the loop of
            // the third; the batch of the kept nodes.
            let got: Vec<(u32, u32)> = graph
                .src()
                .iter()
                .copied()
                .zip(graph.dst().iter().copied())
                .collect();
            assert_eq!(got, vec![(0, 1), (1, 0), (3, 3)]);
            assert_eq!(graph.graph_indicator(), &[0, 0, 1, 2]);
        }
        // A low threshold keeps every node; one above 1 only each graph's best.
        let all = pooled(&TopKPool::with_min_score(2, 0.0), &g, &x, &w)
            .unwrap()
            .1;
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        let best = pooled(&TopKPool::with_min_score(2, 2.0), &g, &x, &w)
            .unwrap()
            .1;
        assert_eq!(best, vec![0, 5, 9]);
    }

    #[test]
    fn invalid_options_are_coded_errors() {
        let (g, x) = batch3();
        let w = ndarray::array![[0.4, -0.7, 0.2]].into_dyn();
        let bad = [
            TopKPool::new(3, 0.0),
            TopKPool::new(3, -0.5),
            TopKPool::new(3, 1.5),
            TopKPool::new(3, f64::NAN),
            TopKPool::with_count(3, 0),
            TopKPool::with_min_score(3, f64::NAN),
            TopKPool::with_min_score(3, f64::INFINITY),
            TopKPool {
                multiplier: f64::NAN,
                ..TopKPool::new(3, 0.5)
            },
        ];
        for pool in bad {
            let err = pooled(&pool, &g, &x, &w).unwrap_err();
            assert_eq!(err.code(), "SHADE-E0404", "{pool:?}");
        }
        // Through `apply` too.
        let ctx = GraphCtx::<f64>::new(&g);
        let f = crate::Features::dense(x.clone());
        let mut rng = StdRng::seed_from_u64(0);
        let pool = TopKPool::with_count(3, 0);
        let (p, st) = Layer::<f64>::init(&pool, &mut rng);
        let err = crate::apply(
            &pool,
            &crate::Inputs::new(&ctx, &f),
            &p,
            &st,
            false,
            &mut rng,
        )
        .unwrap_err();
        assert_eq!(err.code(), "SHADE-E0404");
        assert_eq!(
            err.to_string(),
            "TopKPool: invalid setting `ratio` = Count(0): expected a count k >= 1"
        );
        // A ratio that `min_score` overrides is not checked (PyG ignores it).
        let pool = TopKPool {
            ratio: Ratio::Count(0),
            ..TopKPool::with_min_score(3, 0.1)
        };
        assert!(pooled(&pool, &g, &x, &w).is_ok());
    }

    /// `sum(global_add_pool(pooled graph, X') ⊙ R)`: the pooled graph's batch is used
    /// downstream in the same program.
    #[allow(clippy::too_many_arguments)]
    fn readout<'a>(
        t: &mut tensor::Tape<'a, f64>,
        pool: &TopKPool,
        ctx: &'a GraphCtx<f64>,
        slot: &'a OnceLock<GraphCtx<f64>>,
        names: &[String],
        r: &Array2<f64>,
        xv: Var,
        wv: Var,
    ) -> shade_autodiff::AdResult<Var> {
        let o = pool.pool(t, ctx, Input::Dense(xv), ParamVars::new(names, &[wv]));
        let o = o.expect("the pooling runs");
        let pooled = slot.get_or_init(|| GraphCtx::new(&o.graph));
        let y = global_add_pool(t, pooled, o.x).expect("one row per node");
        let rv = t.constant(r);
        let yr = t.mul(y, rv)?;
        t.sum(yr)
    }

    /// The readout loss and, with `grads`, its gradient w.r.t. `X` and the weight.
    fn readout_loss(
        pool: &TopKPool,
        g: &Graph,
        x: &ArrayD<f64>,
        w: &ArrayD<f64>,
        grads: Option<(&mut ArrayD<f64>, &mut ArrayD<f64>)>,
    ) -> f64 {
        let ctx = GraphCtx::<f64>::new(g);
        let slot: OnceLock<GraphCtx<f64>> = OnceLock::new();
        let names = ["weight".to_string()];
        let r = Array2::from_shape_fn((g.num_graphs(), 3), |(i, c)| {
            0.3 + 0.7 * i as f64 - 0.4 * c as f64
        });
        let mut bufs = TapeBuffers::new();
        match grads {
            Some((dx, dw)) => tensor::gradient(
                &mut bufs,
                |t, (xv, wv)| readout(t, pool, &ctx, &slot, &names, &r, xv, wv),
                (Duplicated(x, dx), Duplicated(w, dw)),
            )
            .unwrap(),
            None => tensor::value(
                &mut bufs,
                |t, (xv, wv)| readout(t, pool, &ctx, &slot, &names, &r, xv, wv),
                (shade_autodiff::Const(x), shade_autodiff::Const(w)),
            )
            .unwrap()
            .iter()
            .sum(),
        }
    }

    /// The pooled graph and kept edges of `pool` on `(g, x)` with weight `w`, from the
    /// lower-level `TopKPool::pool` (the reference side of the chain tests).
    fn pooled_graph(
        pool: &TopKPool,
        g: &Graph,
        x: &Array2<f64>,
        w: &ArrayD<f64>,
    ) -> (Graph, Vec<usize>) {
        let ctx = GraphCtx::<f64>::new(g);
        let names = ["weight".to_string()];
        let x = x.clone().into_dyn();
        let mut out = None;
        tensor::value(
            &mut TapeBuffers::new(),
            |t, (xv, wv)| {
                let o = pool.pool(t, &ctx, Input::Dense(xv), ParamVars::new(&names, &[wv]));
                let o = o.expect("the pooling runs");
                out = Some((o.graph, o.edges));
                Ok(o.x)
            },
            (shade_autodiff::Const(&x), shade_autodiff::Const(w)),
        )
        .unwrap();
        out.unwrap()
    }

    /// A hierarchical model in one Chain: conv → TopK → conv on the pooled graph →
    /// mean readout over the pooled batch, equal to the same steps run one by one on
    /// the pooled graph; and its gradient against finite differences.
    #[test]
    fn chain_runs_graph_layers_on_the_pooled_graph() {
        use crate::layers::{Chain, GraphConv};
        use crate::message::Aggr;
        use crate::pool::GlobalPool;
        let (g, x) = batch3();
        let pool = TopKPool::new(4, 0.6);
        let model = Chain::new()
            .add("conv1", crate::layers::GCNConv::new(3, 4))
            .add("pool", pool)
            .add("conv2", GraphConv::new(4, 2))
            .add("readout", GlobalPool::new(Aggr::Mean));
        let (y, p) = layer_output(&model, Some(&g), &x, 4);
        // Step by step with the same parameters.
        let step = |layer: &dyn Layer<f64>, g: &Graph, x: &Array2<f64>, prefix: &str| {
            let mut lp = Params::new();
            for (n, v) in p.names().iter().zip(p.values()) {
                if let Some(local) = n.strip_prefix(&format!("{prefix}.")) {
                    lp.push(local, v.clone());
                }
            }
            let ctx = GraphCtx::<f64>::new(g);
            let f = crate::Features::dense(x.clone());
            let mut rng = StdRng::seed_from_u64(0);
            crate::apply(
                layer,
                &crate::Inputs::new(&ctx, &f),
                &lp,
                &State::new(),
                false,
                &mut rng,
            )
            .unwrap()
            .0
            .into_dimensionality::<ndarray::Ix2>()
            .unwrap()
        };
        let h1 = step(&crate::layers::GCNConv::new(3, 4), &g, &x, "conv1");
        let h2 = step(&pool, &g, &h1, "pool");
        let (pg, _) = pooled_graph(&pool, &g, &h1, p.get("pool.weight").unwrap());
        assert_eq!(pg.num_graphs(), 3);
        let h3 = step(&GraphConv::new(4, 2), &pg, &h2, "conv2");
        let want = step(&GlobalPool::new(Aggr::Mean), &pg, &h3, "readout");
        assert_eq!(y.shape(), &[3, 2]);
        assert_close(&y, &want, 1e-12);
        check_layer_gradient(&model, Some(&g), &x).unwrap();
    }

    /// After the pooling the edge features are the kept edges' rows, differentiably.
    #[test]
    fn chain_passes_the_kept_edges_features_on() {
        use crate::layers::{Chain, Dense, GINEConv};
        let (g, x) = batch3();
        let e = crate::testing::random_features(g.num_edges(), 2, 8);
        let pool = TopKPool::new(3, 0.7);
        let gine = || GINEConv::new(Dense::new(3, 2)).with_edge_dim(2, 3);
        let model = Chain::new().add("pool", pool).add("gine", gine());
        let ctx = GraphCtx::<f64>::new(&g);
        let f = crate::Features::dense(x.clone());
        let ed = e.clone().into_dyn();
        let mut rng = StdRng::seed_from_u64(3);
        let (p, st) = model.init(&mut rng);
        let inputs = crate::Inputs::new(&ctx, &f).with_edge_attr(&ed);
        let (y, _) = crate::apply(&model, &inputs, &p, &st, false, &mut rng).unwrap();
        // Reference: GINE on the pooled graph with the kept edges' features.
        let (pg, kept) = pooled_graph(&pool, &g, &x, p.get("pool.weight").unwrap());
        let ek = e.select(ndarray::Axis(0), &kept).into_dyn();
        let h = crate::apply(
            &pool,
            &inputs,
            &{
                let mut lp = Params::new();
                lp.push("weight", p.get("pool.weight").unwrap().clone());
                lp
            },
            &State::new(),
            false,
            &mut rng,
        )
        .unwrap()
        .0;
        let mut gp = Params::new();
        for (n, v) in p.names().iter().zip(p.values()) {
            if let Some(local) = n.strip_prefix("gine.") {
                gp.push(local, v.clone());
            }
        }
        let pctx = GraphCtx::<f64>::new(&pg);
        let hf = crate::Features::Dense(h.into());
        let want = crate::apply(
            &gine(),
            &crate::Inputs::new(&pctx, &hf).with_edge_attr(&ek),
            &gp,
            &State::new(),
            false,
            &mut rng,
        )
        .unwrap()
        .0;
        assert_eq!(y, want);
        crate::testing::GradCheck {
            edge_attr: Some(ed),
            ..crate::testing::GradCheck::new(Some(&g), &x)
        }
        .run(&model)
        .unwrap();
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_batch(3)) {
            for pool in [
                TopKPool::new(3, 0.5),
                TopKPool { multiplier: 1.5, ..TopKPool::new(3, 0.8) },
                TopKPool { nonlinearity: Activation::Sigmoid, ..TopKPool::with_count(3, 2) },
                TopKPool { nonlinearity: Activation::Identity, ..TopKPool::with_count(3, 9) },
                TopKPool::with_min_score(3, 0.2),
                TopKPool { multiplier: 0.7, ..TopKPool::with_min_score(3, 0.6) },
            ] {
                check_layer_gradient(&pool, Some(&g), &x).map_err(TestCaseError::fail)?;
            }
            // A hierarchical chain: a graph layer and a readout on the pooled graph.
            let model = crate::layers::Chain::new()
                .add("pool", TopKPool::new(3, 0.6))
                .add("conv", crate::layers::GraphConv::new(3, 2))
                .add("readout", crate::pool::GlobalPool::new(crate::message::Aggr::Mean));
            check_layer_gradient(&model, Some(&g), &x).map_err(TestCaseError::fail)?;
            // Downstream use of the pooled graph. Kink-aware: the selection changes where
            // two scores cross, so the loss has one-sided slopes only there.
            let pool = TopKPool::new(3, 0.6);
            let w = ndarray::array![[0.4, -0.7, 0.2]].into_dyn();
            let xd = x.into_dyn();
            let (mut dx, mut dw) = (ArrayD::zeros(xd.raw_dim()), ArrayD::zeros(w.raw_dim()));
            readout_loss(&pool, &g, &xd, &w, Some((&mut dx, &mut dw)));
            check_array_gradient(&xd, &dx, |x| readout_loss(&pool, &g, x, &w, None))
                .map_err(|e| TestCaseError::fail(format!("readout, features: {e}")))?;
            check_array_gradient(&w, &dw, |w| readout_loss(&pool, &g, &xd, w, None))
                .map_err(|e| TestCaseError::fail(format!("readout, weight: {e}")))?;
        }
    }
}
