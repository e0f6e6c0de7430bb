//! `NNConv` (Gilmer et al., 2017; edge-conditioned convolution) with PyTorch
//! Geometric's options and defaults.

use super::blocks::{linear, no_edge_features};
use crate::ctx::Float;
use crate::error::{GnnError, GnnResult};
use crate::init;
use crate::layer::{Env, Input, Layer, forward_sublayer};
use crate::message::{Aggr, aggregate, gather_src};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// Edge-conditioned convolution: `x'_i = Θ x_i + aggr_{j -> i} x_j · h_Θ(e_ij) + b`,
/// where the edge network `h_Θ` maps every edge's features to an `[in, out]` weight
/// matrix (its output `[E, in·out]` is read row-major as `[E, in, out]`).
///
/// Parameters (PyG's names): the edge network's under `nn.`, `lin.weight` `[out, in]`
/// (no bias; if `root_weight`), `bias` `[out]` (zeros; if `bias`). Options and defaults
/// as PyG: `aggr = add` (also mean, max, min), `root_weight = true`, `bias = true`.
/// The call must carry edge features ([`Env::edge_attr`]).
pub struct NNConv<T: Float> {
    /// Input width.
    pub in_channels: usize,
    /// Output width.
    pub out_channels: usize,
    /// The edge network, `[E, D] → [E, in·out]`.
    pub nn: Box<dyn Layer<T>>,
    /// Aggregation.
    pub aggr: Aggr,
    /// Add `Θ x_i`.
    pub root_weight: bool,
    /// Add a bias.
    pub bias: bool,
}

impl<T: Float> std::fmt::Debug for NNConv<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NNConv")
            .field("in_channels", &self.in_channels)
            .field("out_channels", &self.out_channels)
            .field("nn", &self.nn.name())
            .field("aggr", &self.aggr)
            .finish()
    }
}

impl<T: Float> NNConv<T> {
    /// `in → out` with edge network `nn` and PyG's defaults (sum aggregation).
    pub fn new(in_channels: usize, out_channels: usize, nn: impl Layer<T> + 'static) -> Self {
        NNConv {
            in_channels,
            out_channels,
            nn: Box::new(nn),
            aggr: Aggr::Sum,
            root_weight: true,
            bias: true,
        }
    }

    /// Sets the aggregation.
    pub fn with_aggr(mut self, aggr: Aggr) -> Self {
        self.aggr = aggr;
        self
    }
}

impl<T: Float> Layer<T> for NNConv<T> {
    fn name(&self) -> &'static str {
        "NNConv"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let (i, o) = (self.in_channels, self.out_channels);
        let (np, ns) = self.nn.init(rng);
        let (mut p, mut s) = (Params::new(), State::new());
        p.extend_prefixed("nn", np);
        s.extend_prefixed("nn", ns);
        if self.root_weight {
            p.push("lin.weight", init::torch_linear(rng, &[o, i], i));
        }
        if self.bias {
            p.push("bias", init::zeros(&[o]));
        }
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
        let g = env.graph("NNConv")?;
        let (i, o) = (self.in_channels, self.out_channels);
        let e = env
            .edge_attr
            .ok_or_else(|| no_edge_features("`[E, D]` edge features".into()))?;
        let (np, ns) = (p.scope("nn"), st.scope("nn"));
        let w =
            env.without_graph(|env| forward_sublayer(&*self.nn, t, env, Input::Dense(e), np, ns))?;
        let ne = g.edges().num_edges();
        let ws = t.shape(w)?.to_vec();
        if ws != [ne, i * o] {
            return Err(GnnError::InputShape {
                what: "the output of `nn`".into(),
                found: format!("shape {ws:?}"),
                param: None,
                expected: format!(
                    "[{ne}, {}] (one in × out = {i} × {o} matrix per edge)",
                    i * o
                ),
            });
        }
        let w = t.reshape(w, &[ne, i, o])?;
        let xd = x.dense(t)?;
        let xj = gather_src(t, g.edges(), xd)?;
        let xj = t.reshape(xj, &[ne, 1, i])?;
        let m = t.matmul(xj, w)?;
        let m = t.reshape(m, &[ne, o])?;
        let mut y = aggregate(t, g.edges(), m, self.aggr)?;
        if self.root_weight {
            let r = linear(t, x, &p, "lin", false)?;
            y = t.add(y, r)?;
        }
        if self.bias {
            y = t.add(y, p.get("bias")?)?;
        }
        Ok(y)
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
        GradCheck, arb_graph_and_features, assert_close, proptest_config, random_features,
        random_graph,
    };
    use crate::{Features, GraphCtx, Inputs, apply};
    use ndarray::Array2;
    use proptest::prelude::*;
    use rand::SeedableRng;

    fn edge_nn() -> Chain<f64> {
        Chain::new()
            .push(Dense::new(2, 4))
            .push(Activation::Tanh)
            .push(Dense::new(4, 3 * 2))
    }

    #[test]
    fn matches_dense_reference() {
        let g = random_graph(7, 15, 2);
        let x = random_features(8, 3, 3);
        let e = random_features(g.num_edges(), 2, 4);
        let ctx = GraphCtx::<f64>::new(&g);
        let f = Features::dense(x.clone());
        let ed = e.clone().into_dyn();
        for aggr in [Aggr::Sum, Aggr::Mean, Aggr::Max] {
            let conv = NNConv::new(3, 2, edge_nn()).with_aggr(aggr);
            let mut rng = StdRng::seed_from_u64(5);
            let (mut p, st) = conv.init(&mut rng);
            p.get_mut("bias")
                .unwrap()
                .assign(&ndarray::array![0.3, -0.2].into_dyn());
            let (y, _) = apply(
                &conv,
                &Inputs::new(&ctx, &f).with_edge_attr(&ed),
                &p,
                &st,
                false,
                &mut rng,
            )
            .unwrap();
            let hz = affine(&e, &m(&p, "nn.0.weight"), Some(&v(&p, "nn.0.bias"))).mapv(f64::tanh);
            let we = affine(&hz, &m(&p, "nn.2.weight"), Some(&v(&p, "nn.2.bias")));
            let mut r = Array2::zeros((8, 2));
            for node in 0..8 {
                let msgs: Vec<[f64; 2]> = edge_list(&g)
                    .into_iter()
                    .enumerate()
                    .filter(|(_, ed)| ed.1 == node)
                    .map(|(id, (j, _, _))| {
                        let mut out = [0.0; 2];
                        for (q, o) in out.iter_mut().enumerate() {
                            *o = (0..3).map(|k| x[[j, k]] * we[[id, k * 2 + q]]).sum();
                        }
                        out
                    })
                    .collect();
                if msgs.is_empty() {
                    continue;
                }
                for q in 0..2 {
                    let vals = msgs.iter().map(|mm| mm[q]);
                    r[[node, q]] = match aggr {
                        Aggr::Sum => vals.sum(),
                        Aggr::Mean => vals.sum::<f64>() / msgs.len() as f64,
                        _ => vals.fold(f64::NEG_INFINITY, f64::max),
                    };
                }
            }
            let r = r + affine(&x, &m(&p, "lin.weight"), None) + v(&p, "bias");
            assert_close(&y.into_dimensionality().unwrap(), &r, 1e-12);
        }
    }

    #[test]
    fn wrong_edge_network_width_is_a_coded_error() {
        let g = random_graph(3, 4, 1);
        let conv = NNConv::new(2, 2, edge_nn()); // nn gives 6 = 3·2, needs 2·2
        let mut rng = StdRng::seed_from_u64(0);
        let (p, st) = conv.init(&mut rng);
        let ctx = GraphCtx::<f64>::new(&g);
        let f = Features::dense(random_features(4, 2, 2));
        let ed = random_features(g.num_edges(), 2, 3).into_dyn();
        let err = apply(
            &conv,
            &Inputs::new(&ctx, &f).with_edge_attr(&ed),
            &p,
            &st,
            false,
            &mut rng,
        )
        .unwrap_err();
        assert_eq!(err.code(), "SHADE-E0410");
        let ne = g.num_edges();
        assert_eq!(
            err.to_string(),
            format!(
                "NNConv: the output of `nn` has shape [{ne}, 6] but the layer expects [{ne}, 4] \
                 (one in × out = 2 × 2 matrix per edge)"
            )
        );
        let err = apply(&conv, &Inputs::new(&ctx, &f), &p, &st, false, &mut rng).unwrap_err();
        assert_eq!(err.code(), "SHADE-E0405");
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            let ne = g.num_edges();
            for aggr in [Aggr::Sum, Aggr::Max] {
                GradCheck {
                    edge_attr: Some(random_features(ne, 2, 7).into_dyn()),
                    ..GradCheck::new(Some(&g), &x)
                }.run(&NNConv::new(3, 2, edge_nn()).with_aggr(aggr)).map_err(TestCaseError::fail)?;
            }
        }
    }
}
