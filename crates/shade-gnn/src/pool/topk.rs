//! `TopKPool` (Gao & Ji, 2019; Cangea et al., 2018), as PyTorch Geometric's
//! `TopKPooling`.

use crate::ctx::{Float, GraphCtx};
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::layers::blocks::{RowGather, bad_option};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};
use shade_autodiff::{AdError, AdResult};
use shade_graph::Graph;

/// Top-k pooling: scores `s = tanh(X p / ‖p‖)`, keep the `⌈ratio · n_g⌉` best-scored
/// nodes of every graph `g` of the batch, gate them by their scores,
/// `X' = multiplier · X[perm] ⊙ s[perm]`, and keep the subgraph they induce.
///
/// The kept set `perm` (ordered by graph, then by descending score; ties by node
/// index) and the pooled graph are constants computed from the scores' values; the
/// gating is differentiable in `X` and `p`. Parameter (PyG's name): `weight`
/// `[1, in]` (uniform `±1/√in`). Options and defaults as PyG: `ratio = 0.5` (a fraction
/// in `(0, 1]`), `multiplier = 1`, nonlinearity tanh; PyG's `min_score` is not
/// supported.
///
/// As a [`Layer`] it returns the pooled features only; [`TopKPool::pool`] also returns
/// the kept nodes, their scores and the pooled graph (with its batch) for the layers
/// after it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TopKPool {
    /// Feature width.
    pub in_channels: usize,
    /// Fraction of the nodes of each graph to keep, in `(0, 1]`.
    pub ratio: f64,
    /// Scale of the pooled features.
    pub multiplier: f64,
}

/// What [`TopKPool::pool`] returns.
#[derive(Debug)]
pub struct TopKOutput {
    /// The pooled features `[k, F]`.
    pub x: Var,
    /// The kept nodes' scores `[k, 1]` (after tanh).
    pub score: Var,
    /// The kept nodes (ids in the input graph), in the pooled graph's order.
    pub perm: Vec<usize>,
    /// The subgraph induced by `perm` (node `i` is `perm[i]`), with the batch layout
    /// of the kept nodes.
    pub graph: Graph,
}

impl TopKPool {
    /// Pooling of `in_channels`-wide features keeping the fraction `ratio`.
    pub fn new(in_channels: usize, ratio: f64) -> Self {
        TopKPool {
            in_channels,
            ratio,
            multiplier: 1.0,
        }
    }

    /// Pools `x` on the graph `ctx` with the parameter `weight` in `p`.
    ///
    /// Errors: [`AdError::InvalidArgument`] for a ratio outside `(0, 1]`,
    /// [`AdError::ShapeMismatch`] when `x` does not have one row per node or its width
    /// differs from the weight's.
    pub fn pool<'a, T: Float>(
        &self,
        t: &mut Tape<'a, T>,
        ctx: &'a GraphCtx<T>,
        x: Input<'a, T>,
        p: ParamVars<'_>,
    ) -> AdResult<TopKOutput> {
        if !(self.ratio > 0.0 && self.ratio <= 1.0) {
            return Err(bad_option(
                "TopKPool",
                format!("ratio = {} (need 0 < ratio <= 1)", self.ratio),
            ));
        }
        let n = ctx.num_nodes();
        if x.rows(t)? != n {
            return Err(AdError::ShapeMismatch {
                op: "TopKPool (rows of x vs nodes)",
                left: vec![n],
                right: vec![x.rows(t)?, x.cols(t)?],
            });
        }
        let w = p.get("weight")?;
        let s = x.linear(t, w)?;
        let norm = t.norm(w)?;
        let s = t.div(s, norm)?;
        let score = t.tanh(s)?;
        // The selection: a constant computed from the scores' values.
        let sv: Vec<T> = t.value(score)?.iter().copied().collect();
        let batch = ctx.batch();
        let mut groups: Vec<Vec<usize>> = vec![Vec::new(); ctx.num_graphs()];
        for (v, &g) in batch.iter().enumerate() {
            groups[g].push(v);
        }
        let mut perm = Vec::new();
        let mut new_batch = Vec::new();
        for (g, nodes) in groups.iter_mut().enumerate() {
            let k = (self.ratio * nodes.len() as f64).ceil() as usize;
            nodes.sort_by(|&a, &b| {
                sv[b]
                    .partial_cmp(&sv[a])
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(a.cmp(&b))
            });
            perm.extend_from_slice(&nodes[..k.min(nodes.len())]);
            new_batch.extend(std::iter::repeat_n(g as u32, k.min(nodes.len())));
        }
        let ids: Vec<u32> = perm.iter().map(|&v| v as u32).collect();
        let graph_err = |e: shade_graph::GraphError| bad_option("TopKPool", e.to_string());
        let graph = ctx
            .graph()
            .induced_subgraph(&ids)
            .and_then(|g| g.with_graph_indicator(&new_batch, ctx.num_graphs()))
            .map_err(graph_err)?;
        let xd = x.dense(t)?;
        let xk = t.custom(RowGather { idx: perm.clone() }, &[xd])?;
        let sk = t.custom(RowGather { idx: perm.clone() }, &[score])?;
        let mut y = t.mul(xk, sk)?;
        if self.multiplier != 1.0 {
            y = t.scale(y, T::cst(self.multiplier))?;
        }
        Ok(TopKOutput {
            x: y,
            score: sk,
            perm,
            graph,
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
    ) -> AdResult<Var> {
        let g = env.graph("TopKPool")?;
        Ok(self.pool(t, g, x, p)?.x)
    }

    fn is_graph_layer(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::global_add_pool;
    use super::super::test_util::{arb_batch, batch3};
    use super::*;
    use crate::layers::blocks::reference::m;
    use crate::testing::{assert_close, check_layer_gradient, layer_output, proptest_config};
    use ndarray::{Array2, ArrayD};
    use proptest::prelude::*;
    use rand::SeedableRng;
    use shade_autodiff::Duplicated;
    use shade_autodiff::tensor::{self, TapeBuffers};
    use std::sync::OnceLock;

    #[test]
    fn matches_dense_reference_and_returns_the_induced_subgraph() {
        let (g, x) = batch3();
        let ind: Vec<usize> = g.graph_indicator().iter().map(|&i| i as usize).collect();
        for ratio in [0.5, 0.3, 1.0] {
            let pool = TopKPool {
                multiplier: 2.0,
                ..TopKPool::new(3, ratio)
            };
            let (y, p) = layer_output(&pool, Some(&g), &x, 4);
            let w = m(&p, "weight");
            let wn = w.iter().map(|v| v * v).sum::<f64>().sqrt();
            let score: Vec<f64> = (0..x.nrows())
                .map(|u| ((0..3).map(|c| x[[u, c]] * w[[0, c]]).sum::<f64>() / wn).tanh())
                .collect();
            let mut perm = Vec::new();
            for gid in 0..3 {
                let mut nodes: Vec<usize> = (0..x.nrows()).filter(|&u| ind[u] == gid).collect();
                nodes.sort_by(|&a, &b| score[b].partial_cmp(&score[a]).unwrap());
                let k = (ratio * nodes.len() as f64).ceil() as usize;
                perm.extend_from_slice(&nodes[..k]);
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
                    let o = pool.pool(t, &ctx, Input::Dense(xv), ParamVars::new(&names, &[wv]))?;
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

    #[test]
    fn invalid_ratio_is_a_coded_error() {
        let (g, x) = batch3();
        let ctx = GraphCtx::<f64>::new(&g);
        let f = crate::Features::dense(x);
        let mut rng = StdRng::seed_from_u64(0);
        for ratio in [0.0, 1.5, f64::NAN] {
            let pool = TopKPool::new(3, ratio);
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
            assert_eq!(err.code(), "SHADE-E0114");
        }
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
    ) -> AdResult<Var> {
        let o = pool.pool(t, ctx, Input::Dense(xv), ParamVars::new(names, &[wv]))?;
        let pooled = slot.get_or_init(|| GraphCtx::new(&o.graph));
        let y = global_add_pool(t, pooled, o.x)?;
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

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_batch(3)) {
            check_layer_gradient(&TopKPool::new(3, 0.5), Some(&g), &x).map_err(TestCaseError::fail)?;
            check_layer_gradient(&TopKPool { multiplier: 1.5, ..TopKPool::new(3, 0.8) }, Some(&g), &x).map_err(TestCaseError::fail)?;
            // Downstream use of the pooled graph, with a hand-rolled central difference.
            let pool = TopKPool::new(3, 0.6);
            let w = ndarray::array![[0.4, -0.7, 0.2]].into_dyn();
            let xd = x.into_dyn();
            let (mut dx, mut dw) = (ArrayD::zeros(xd.raw_dim()), ArrayD::zeros(w.raw_dim()));
            readout_loss(&pool, &g, &xd, &w, Some((&mut dx, &mut dw)));
            let h = 1e-6;
            for (which, len) in [(0, xd.len()), (1, w.len())] {
                for j in 0..len {
                    let (mut xp, mut xm, mut wp, mut wm) = (xd.clone(), xd.clone(), w.clone(), w.clone());
                    if which == 0 {
                        xp.as_slice_mut().unwrap()[j] += h;
                        xm.as_slice_mut().unwrap()[j] -= h;
                    } else {
                        wp.as_slice_mut().unwrap()[j] += h;
                        wm.as_slice_mut().unwrap()[j] -= h;
                    }
                    let fd = (readout_loss(&pool, &g, &xp, &wp, None) - readout_loss(&pool, &g, &xm, &wm, None)) / (2.0 * h);
                    let gr = if which == 0 { dx.as_slice().unwrap()[j] } else { dw.as_slice().unwrap()[j] };
                    prop_assert!((gr - fd).abs() <= 1e-6 + 1e-5 * fd.abs().max(gr.abs()), "arg {which}[{j}]: {gr} vs {fd}");
                }
            }
        }
    }
}
