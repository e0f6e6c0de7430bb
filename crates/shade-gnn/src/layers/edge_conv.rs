//! `EdgeConv` (Wang et al., 2019, dynamic graph CNN) as PyTorch Geometric's.

use crate::ctx::Float;
use crate::error::GnnResult;
use crate::layer::{Env, Input, Layer};
use crate::message::{Aggr, aggregate, gather_dst, gather_src};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// Edge convolution: `x'_i = aggr_{j -> i} h_Θ([x_i, x_j - x_i])` with a user-given
/// network `h_Θ` applied to every edge (input width `2F`).
///
/// Parameters: the network's under `nn.`. Options and defaults as PyG: `aggr = max`
/// (also sum, mean, min); nodes without incoming edges get zeros.
pub struct EdgeConv<T: Float> {
    /// The edge network `h_Θ`.
    pub nn: Box<dyn Layer<T>>,
    /// Aggregation over incoming edges.
    pub aggr: Aggr,
}

impl<T: Float> std::fmt::Debug for EdgeConv<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgeConv")
            .field("nn", &self.nn.name())
            .field("aggr", &self.aggr)
            .finish()
    }
}

impl<T: Float> EdgeConv<T> {
    /// Edge convolution with network `nn` and max aggregation.
    pub fn new(nn: impl Layer<T> + 'static) -> Self {
        EdgeConv {
            nn: Box::new(nn),
            aggr: Aggr::Max,
        }
    }

    /// Sets the aggregation.
    pub fn with_aggr(mut self, aggr: Aggr) -> Self {
        self.aggr = aggr;
        self
    }
}

impl<T: Float> Layer<T> for EdgeConv<T> {
    fn name(&self) -> &'static str {
        "EdgeConv"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let (np, ns) = self.nn.init(rng);
        let (mut p, mut s) = (Params::new(), State::new());
        p.extend_prefixed("nn", np);
        s.extend_prefixed("nn", ns);
        (p, s)
    }

    fn forward<'a>(
        &self,
        t: &mut Tape<'a, T>,
        env: &mut Env<'a, '_, T>,
        x: Input<'a, T>,
        p: ParamVars<'_>,
        mut st: StateScope<'_, T>,
    ) -> GnnResult<Var> {
        let g = env.graph("EdgeConv")?;
        let x = x.dense(t)?;
        let xi = gather_dst(t, g.edges(), x)?;
        let xj = gather_src(t, g.edges(), x)?;
        let d = t.sub(xj, xi)?;
        let z = t.concat(&[xi, d], 1)?;
        let m = env.without_graph(|env| {
            self.nn
                .forward(t, env, Input::Dense(z), p.scope("nn"), st.scope("nn"))
        })?;
        Ok(aggregate(t, g.edges(), m, self.aggr)?)
    }

    fn is_graph_layer(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::blocks::reference::{affine, edge_list, m, v};
    use super::*;
    use crate::layers::{Activation, Chain, Dense};
    use crate::testing::{
        arb_graph_and_features, assert_close, check_layer_gradient, layer_output, proptest_config,
        random_features, random_graph,
    };
    use ndarray::{Array2, Axis, concatenate, s};
    use proptest::prelude::*;

    fn mlp() -> Chain<f64> {
        Chain::new()
            .push(Dense::new(6, 4))
            .push(Activation::Tanh)
            .push(Dense::new(4, 2))
    }

    #[test]
    fn matches_dense_reference() {
        let g = random_graph(7, 15, 8);
        let x = random_features(8, 3, 9);
        for aggr in [Aggr::Max, Aggr::Sum, Aggr::Mean] {
            let conv = EdgeConv::new(mlp()).with_aggr(aggr);
            let (y, p) = layer_output(&conv, Some(&g), &x, 1);
            let h = |z: &Array2<f64>| {
                let a = affine(z, &m(&p, "nn.0.weight"), Some(&v(&p, "nn.0.bias"))).mapv(f64::tanh);
                affine(&a, &m(&p, "nn.2.weight"), Some(&v(&p, "nn.2.bias")))
            };
            let mut r = Array2::zeros((8, 2));
            for i in 0..8 {
                let msgs: Vec<Array2<f64>> = edge_list(&g)
                    .into_iter()
                    .filter(|e| e.1 == i)
                    .map(|(j, _, _)| {
                        let xi = x.slice(s![i..i + 1, ..]);
                        let d = &x.slice(s![j..j + 1, ..]) - &xi;
                        h(&concatenate(Axis(1), &[xi, d.view()]).unwrap())
                    })
                    .collect();
                if msgs.is_empty() {
                    continue;
                }
                for c in 0..2 {
                    let vals = msgs.iter().map(|mm| mm[[0, c]]);
                    r[[i, c]] = match aggr {
                        Aggr::Max => vals.fold(f64::NEG_INFINITY, f64::max),
                        Aggr::Sum => vals.sum(),
                        _ => vals.sum::<f64>() / msgs.len() as f64,
                    };
                }
            }
            assert_close(&y, &r, 1e-12);
        }
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            check_layer_gradient(&EdgeConv::new(mlp()), Some(&g), &x).map_err(TestCaseError::fail)?;
            check_layer_gradient(&EdgeConv::new(mlp()).with_aggr(Aggr::Mean), Some(&g), &x).map_err(TestCaseError::fail)?;
        }
    }
}
