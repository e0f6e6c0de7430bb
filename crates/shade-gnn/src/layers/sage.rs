//! `SAGEConv` (Hamilton et al., 2017) with PyTorch Geometric's options and defaults.

use super::blocks::{linear, normalize_rows};
use crate::ctx::Float;
use crate::error::GnnResult;
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::message::{Aggr, Message, propagate};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// `x'_i = W_l · aggr_{j -> i} x_j + b + W_r x_i`, optionally L2-normalised per row.
///
/// With `project`, the neighbours' features are first projected,
/// `x_j ← relu(W x_j + b_p)`, before the aggregation; the root term `W_r x_i` keeps the
/// raw `x_i` (as PyG, which projects only the source side).
///
/// Parameters (PyG's names): `lin.weight` `[in, in]`, `lin.bias` `[in]` (with
/// `project`), `lin_l.weight` `[out, in]`, `lin_l.bias` `[out]`, `lin_r.weight`
/// `[out, in]` (PyTorch's `Linear` init). Options and defaults as PyG:
/// `aggr = mean` (also sum, max), `normalize = false`, `root_weight = true`,
/// `project = false`, `bias = true`. Mean and sum aggregate after the transform when that is cheaper
/// (always for sparse input), through the fused sparse × dense path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SAGEConv {
    /// Input width.
    pub in_channels: usize,
    /// Output width.
    pub out_channels: usize,
    /// Neighbour aggregation: `Mean`, `Sum` or `Max` (`Min` also works).
    pub aggr: Aggr,
    /// L2-normalise the output rows.
    pub normalize: bool,
    /// Add the transformed root features `W_r x_i`.
    pub root_weight: bool,
    /// Project the neighbours' features with `relu(lin(x_j))` before aggregating.
    pub project: bool,
    /// Bias of `lin_l`.
    pub bias: bool,
}

impl SAGEConv {
    /// `in → out` with PyG's defaults (mean aggregation).
    pub fn new(in_channels: usize, out_channels: usize) -> Self {
        SAGEConv {
            in_channels,
            out_channels,
            aggr: Aggr::Mean,
            normalize: false,
            root_weight: true,
            project: false,
            bias: true,
        }
    }

    /// Sets the aggregation.
    pub fn with_aggr(mut self, aggr: Aggr) -> Self {
        self.aggr = aggr;
        self
    }

    /// Projects the neighbours' features with `relu(lin(x_j))` before aggregating.
    pub fn with_project(mut self, project: bool) -> Self {
        self.project = project;
        self
    }
}

impl<T: Float> Layer<T> for SAGEConv {
    fn name(&self) -> &'static str {
        "SAGEConv"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let (i, o) = (self.in_channels, self.out_channels);
        let mut p = Params::new();
        if self.project {
            p.push("lin.weight", init::torch_linear(rng, &[i, i], i));
            p.push("lin.bias", init::torch_linear(rng, &[i], i));
        }
        p.push("lin_l.weight", init::torch_linear(rng, &[o, i], i));
        if self.bias {
            p.push("lin_l.bias", init::torch_linear(rng, &[o], i));
        }
        if self.root_weight {
            p.push("lin_r.weight", init::torch_linear(rng, &[o, i], i));
        }
        (p, State::new())
    }

    fn forward<'a>(
        &self,
        t: &mut Tape<'a, T>,
        env: &mut Env<'a, '_, T>,
        x: Input<'a, T>,
        p: ParamVars<'_>,
        _st: StateScope<'_, T>,
    ) -> GnnResult<Var> {
        let g = env.graph("SAGEConv")?;
        let wl = p.param("lin_l.weight")?;
        // The source side: the raw features or their projection.
        let xs = if self.project {
            let h = linear(t, x, &p, "lin", true)?;
            Input::Dense(t.relu(h)?)
        } else {
            x
        };
        let linear_aggr = matches!(self.aggr, Aggr::Mean | Aggr::Sum);
        let transform_first = linear_aggr
            && (matches!(xs, Input::Sparse(_)) || self.out_channels <= self.in_channels);
        let mut y = if transform_first {
            let h = xs.linear(t, wl)?;
            propagate(t, g.edges(), h, Message::CopySrc, self.aggr)?
        } else {
            let xd = xs.dense(t)?;
            let a = propagate(t, g.edges(), xd, Message::CopySrc, self.aggr)?;
            Input::Dense(a).linear(t, wl)?
        };
        if self.bias {
            y = t.add(y, p.get("lin_l.bias")?)?;
        }
        if self.root_weight {
            let r = x.linear(t, p.param("lin_r.weight")?)?;
            y = t.add(y, r)?;
        }
        if self.normalize {
            y = normalize_rows(t, y)?;
        }
        Ok(y)
    }

    fn is_graph_layer(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{
        arb_graph_and_features, assert_close, check_layer_gradient, layer_output, proptest_config,
        random_features, random_graph,
    };
    use ndarray::{Array2, Ix1, Ix2};
    use proptest::prelude::*;

    fn reference(
        conv: &SAGEConv,
        g: &shade_graph::Graph,
        x: &Array2<f64>,
        p: &Params<f64>,
    ) -> Array2<f64> {
        let m2 = |n: &str| {
            p.get(n)
                .unwrap()
                .clone()
                .into_dimensionality::<Ix2>()
                .unwrap()
        };
        let raw = x;
        let projected;
        let x = if conv.project {
            let b = p.get("lin.bias").unwrap().clone();
            let b = b.into_dimensionality::<Ix1>().unwrap();
            projected = (raw.dot(&m2("lin.weight").t()) + &b).mapv(|v| v.max(0.0));
            &projected
        } else {
            raw
        };
        let (n, f) = x.dim();
        let mut agg = Array2::<f64>::zeros((n, f));
        for i in 0..n {
            let inc: Vec<usize> = (0..g.num_edges())
                .filter(|&e| g.dst()[e] as usize == i)
                .map(|e| g.src()[e] as usize)
                .collect();
            if inc.is_empty() {
                continue;
            }
            for c in 0..f {
                let vals = inc.iter().map(|&j| x[[j, c]]);
                agg[[i, c]] = match conv.aggr {
                    Aggr::Sum => vals.sum(),
                    Aggr::Mean => vals.sum::<f64>() / inc.len() as f64,
                    Aggr::Max => vals.fold(f64::NEG_INFINITY, f64::max),
                    Aggr::Min => vals.fold(f64::INFINITY, f64::min),
                };
            }
        }
        let mut y = agg.dot(&m2("lin_l.weight").t());
        if let Some(b) = p.get("lin_l.bias") {
            y += &b.clone().into_dimensionality::<Ix1>().unwrap();
        }
        if conv.root_weight {
            y += &raw.dot(&m2("lin_r.weight").t());
        }
        if conv.normalize {
            for mut r in y.rows_mut() {
                let nrm = r.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-12);
                r.mapv_inplace(|v| v / nrm);
            }
        }
        y
    }

    #[test]
    fn matches_dense_reference() {
        let g = random_graph(7, 15, 5);
        let x = random_features(8, 4, 6);
        for aggr in [Aggr::Mean, Aggr::Sum, Aggr::Max] {
            for (o, normalize, root, project) in [
                (2, false, true, false),
                (6, true, true, false),
                (3, false, false, false),
                (2, false, true, true),
                (6, true, true, true),
                (3, false, false, true),
            ] {
                let conv = SAGEConv {
                    aggr,
                    normalize,
                    root_weight: root,
                    project,
                    ..SAGEConv::new(4, o)
                };
                let (y, p) = layer_output(&conv, Some(&g), &x, 7);
                assert_close(&y, &reference(&conv, &g, &x, &p), 1e-12);
            }
        }
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            for aggr in [Aggr::Mean, Aggr::Sum, Aggr::Max] {
                check_layer_gradient(&SAGEConv::new(3, 2).with_aggr(aggr), Some(&g), &x).map_err(TestCaseError::fail)?;
            }
            check_layer_gradient(&SAGEConv { normalize: true, ..SAGEConv::new(3, 4) }, Some(&g), &x).map_err(TestCaseError::fail)?;
            for (aggr, o) in [(Aggr::Mean, 2), (Aggr::Sum, 4), (Aggr::Max, 2)] {
                let conv = SAGEConv::new(3, o).with_aggr(aggr).with_project(true);
                check_layer_gradient(&conv, Some(&g), &x).map_err(TestCaseError::fail)?;
            }
        }
    }
}
