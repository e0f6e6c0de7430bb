//! `GraphConv` (Morris et al., 2019) with PyTorch Geometric's options and defaults.

use super::blocks::linear;
use crate::ctx::Float;
use crate::error::GnnResult;
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::message::{Aggr, Message, propagate};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// `x'_i = W_1 x_i + W_2 · aggr_{j -> i} e_ji · x_j` (edge weights `e_ji`, ones when
/// the graph has none).
///
/// Parameters (PyG's names): `lin_rel.weight` `[out, in]`, `lin_rel.bias` `[out]`,
/// `lin_root.weight` `[out, in]` (PyTorch's `Linear` init). Options and defaults as PyG:
/// `aggr = add` (also mean, max, min), `bias = true`. Sum and mean aggregate after the
/// transform through the fused sparse × dense path (sparse input stays sparse).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GraphConv {
    /// Input width.
    pub in_channels: usize,
    /// Output width.
    pub out_channels: usize,
    /// Neighbour aggregation.
    pub aggr: Aggr,
    /// Bias of `lin_rel`.
    pub bias: bool,
}

impl GraphConv {
    /// `in → out` with PyG's defaults (sum aggregation, bias).
    pub fn new(in_channels: usize, out_channels: usize) -> Self {
        GraphConv {
            in_channels,
            out_channels,
            aggr: Aggr::Sum,
            bias: true,
        }
    }

    /// Sets the aggregation.
    pub fn with_aggr(mut self, aggr: Aggr) -> Self {
        self.aggr = aggr;
        self
    }
}

impl<T: Float> Layer<T> for GraphConv {
    fn name(&self) -> &'static str {
        "GraphConv"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let (i, o) = (self.in_channels, self.out_channels);
        let mut p = Params::new().with("lin_rel.weight", init::torch_linear(rng, &[o, i], i));
        if self.bias {
            p.push("lin_rel.bias", init::torch_linear(rng, &[o], i));
        }
        p.push("lin_root.weight", init::torch_linear(rng, &[o, i], i));
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
        let g = env.graph("GraphConv")?;
        let w = p.param("lin_rel.weight")?;
        let mut y = if matches!(self.aggr, Aggr::Sum | Aggr::Mean) {
            let h = x.linear(t, w)?;
            propagate(t, g.edges(), h, Message::WeightedSrc, self.aggr)?
        } else {
            let xd = x.dense(t)?;
            let a = propagate(t, g.edges(), xd, Message::WeightedSrc, self.aggr)?;
            Input::Dense(a).linear(t, w)?
        };
        if self.bias {
            y = t.add(y, p.get("lin_rel.bias")?)?;
        }
        let r = linear(t, x, &p, "lin_root", false)?;
        Ok(t.add(y, r)?)
    }

    fn is_graph_layer(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::blocks::reference::{affine, edge_list, m, v};
    use super::*;
    use crate::testing::{
        arb_graph_and_features, assert_close, check_layer_gradient, layer_output, proptest_config,
        random_features, random_graph,
    };
    use ndarray::Array2;
    use proptest::prelude::*;

    #[test]
    fn matches_dense_reference() {
        let g = random_graph(7, 15, 3);
        let ne = g.num_edges();
        let g = g
            .with_weights((0..ne).map(|e| 0.5 + 0.1 * e as f64).collect())
            .unwrap();
        let x = random_features(8, 3, 4);
        for aggr in [Aggr::Sum, Aggr::Mean, Aggr::Max] {
            let conv = GraphConv::new(3, 2).with_aggr(aggr);
            let (y, p) = layer_output(&conv, Some(&g), &x, 5);
            let mut a = Array2::<f64>::zeros((8, 3));
            for i in 0..8 {
                let inc: Vec<(usize, f64)> = edge_list(&g)
                    .into_iter()
                    .filter(|e| e.1 == i)
                    .map(|e| (e.0, e.2))
                    .collect();
                if inc.is_empty() {
                    continue;
                }
                for c in 0..3 {
                    let vals = inc.iter().map(|&(j, w)| w * x[[j, c]]);
                    a[[i, c]] = match aggr {
                        Aggr::Sum => vals.sum(),
                        Aggr::Mean => vals.sum::<f64>() / inc.len() as f64,
                        _ => vals.fold(f64::NEG_INFINITY, f64::max),
                    };
                }
            }
            let r = affine(&a, &m(&p, "lin_rel.weight"), Some(&v(&p, "lin_rel.bias")))
                + affine(&x, &m(&p, "lin_root.weight"), None);
            assert_close(&y, &r, 1e-12);
        }
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            for aggr in [Aggr::Sum, Aggr::Mean, Aggr::Max] {
                check_layer_gradient(&GraphConv::new(3, 2).with_aggr(aggr), Some(&g), &x).map_err(TestCaseError::fail)?;
            }
        }
    }
}
