//! `GINEConv` (Hu et al., 2020): GIN with edge features, as PyTorch Geometric's.

use super::blocks::{linear, no_edge_features};
use crate::ctx::Float;
use crate::error::{GnnError, GnnResult};
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::message::{Aggr, aggregate, gather_src};
use crate::params::{ParamVars, Params, State, StateScope};
use ndarray::{ArrayD, IxDyn};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// `x'_i = h_Θ((1 + ε) x_i + Σ_{j -> i} ReLU(x_j + e_ji))` with a user-given network
/// `h_Θ` and the edge features `e_ji` of the call ([`Env::edge_attr`]).
///
/// Parameters: the network's under `nn.`, `eps` `[1]` when `train_eps`, and with
/// `edge_dim = Some(d)` the edge map `lin.weight` `[in, d]`, `lin.bias` `[in]` that
/// brings the edge features to the node width (PyG's `edge_dim`). Defaults as PyG:
/// `eps = 0`, `train_eps = false`, `edge_dim = None` (edge features must then have the
/// node features' width).
pub struct GINEConv<T: Float> {
    /// The network `h_Θ`.
    pub nn: Box<dyn Layer<T>>,
    /// Initial `ε`.
    pub eps: f64,
    /// Make `ε` a trainable parameter.
    pub train_eps: bool,
    /// `(edge_dim, in_channels)`: map edge features of width `edge_dim` to the node
    /// width `in_channels` with a linear layer.
    pub edge_dim: Option<(usize, usize)>,
}

impl<T: Float> std::fmt::Debug for GINEConv<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GINEConv")
            .field("nn", &self.nn.name())
            .field("eps", &self.eps)
            .field("train_eps", &self.train_eps)
            .field("edge_dim", &self.edge_dim)
            .finish()
    }
}

impl<T: Float> GINEConv<T> {
    /// GINE with network `nn`, `ε = 0` fixed, no edge map.
    pub fn new(nn: impl Layer<T> + 'static) -> Self {
        GINEConv {
            nn: Box::new(nn),
            eps: 0.0,
            train_eps: false,
            edge_dim: None,
        }
    }

    /// Trainable `ε` starting at `eps`.
    pub fn with_train_eps(mut self, eps: f64) -> Self {
        self.eps = eps;
        self.train_eps = true;
        self
    }

    /// Maps edge features of width `edge_dim` to the node width `in_channels`.
    pub fn with_edge_dim(mut self, edge_dim: usize, in_channels: usize) -> Self {
        self.edge_dim = Some((edge_dim, in_channels));
        self
    }
}

impl<T: Float> Layer<T> for GINEConv<T> {
    fn name(&self) -> &'static str {
        "GINEConv"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let (np, ns) = self.nn.init(rng);
        let (mut p, mut s) = (Params::new(), State::new());
        p.extend_prefixed("nn", np);
        s.extend_prefixed("nn", ns);
        if self.train_eps {
            p.push("eps", ArrayD::from_elem(IxDyn(&[1]), T::cst(self.eps)));
        }
        if let Some((d, i)) = self.edge_dim {
            p.push("lin.weight", init::torch_linear(rng, &[i, d], d));
            p.push("lin.bias", init::torch_linear(rng, &[i], d));
        }
        (p, s)
    }

    fn forward<'a>(
        &self,
        t: &mut Tape<'a, T>,
        env: &mut Env<'a, '_, T>,
        x: Input<'a, T>,
        p: ParamVars<'_>,
        st: StateScope<'_, T>,
    ) -> GnnResult<Var> {
        let g = env.graph("GINEConv")?;
        let e = env
            .edge_attr
            .ok_or_else(|| no_edge_features("`[E, D]` edge features".into()))?;
        let x = x.dense(t)?;
        let e = if self.edge_dim.is_some() {
            linear(t, Input::Dense(e), &p, "lin", true)?
        } else {
            e
        };
        let (xs, es) = (t.shape(x)?.to_vec(), t.shape(e)?.to_vec());
        let ne = g.edges().num_edges();
        if es.len() != 2 || xs.get(1) != es.get(1) || es[0] != ne {
            let f = xs.get(1).copied().unwrap_or(0);
            let via = if self.edge_dim.is_some() {
                " after `lin`"
            } else {
                ""
            };
            return Err(GnnError::InputShape {
                what: format!("the edge feature array{via}"),
                found: format!("shape {es:?}"),
                param: None,
                expected: format!(
                    "[{ne}, {f}], one row per edge as wide as the node features \
                     (or set edge_dim to map them)"
                ),
            });
        }
        let xj = gather_src(t, g.edges(), x)?;
        let msg = t.add(xj, e)?;
        let msg = t.relu(msg)?;
        let agg = aggregate(t, g.edges(), msg, Aggr::Sum)?;
        super::gin::gin_update(
            t,
            env,
            &self.nn,
            (x, agg),
            (self.eps, self.train_eps),
            p,
            st,
        )
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

    fn mlp() -> Chain<f64> {
        Chain::new()
            .push(Dense::new(3, 4))
            .push(Activation::Tanh)
            .push(Dense::new(4, 2))
    }

    fn run(
        conv: &GINEConv<f64>,
        g: &shade_graph::Graph,
        x: &Array2<f64>,
        e: &Array2<f64>,
    ) -> crate::GnnResult<(Array2<f64>, Params<f64>)> {
        let mut rng = StdRng::seed_from_u64(1);
        let (p, st) = conv.init(&mut rng);
        let ctx = GraphCtx::<f64>::new(g);
        let f = Features::dense(x.clone());
        let ed = e.clone().into_dyn();
        let (y, _) = apply(
            conv,
            &Inputs::new(&ctx, &f).with_edge_attr(&ed),
            &p,
            &st,
            false,
            &mut rng,
        )?;
        Ok((y.into_dimensionality().unwrap(), p))
    }

    #[test]
    fn matches_dense_reference() {
        let g = random_graph(7, 15, 8);
        let x = random_features(8, 3, 9);
        let ne = g.num_edges();
        for (conv, d) in [
            (GINEConv::new(mlp()), 3),
            (
                GINEConv::new(mlp()).with_train_eps(0.3).with_edge_dim(5, 3),
                5,
            ),
        ] {
            let e = random_features(ne, d, 10);
            let (y, p) = run(&conv, &g, &x, &e).unwrap();
            let e = if d == 5 {
                affine(&e, &m(&p, "lin.weight"), Some(&v(&p, "lin.bias")))
            } else {
                e
            };
            let mut h = &x * (1.0 + if conv.train_eps { 0.3 } else { 0.0 });
            for (k, (j, i, _)) in edge_list(&g).into_iter().enumerate() {
                for c in 0..3 {
                    h[[i, c]] += (x[[j, c]] + e[[k, c]]).max(0.0);
                }
            }
            let z = affine(&h, &m(&p, "nn.0.weight"), Some(&v(&p, "nn.0.bias"))).mapv(f64::tanh);
            let r = affine(&z, &m(&p, "nn.2.weight"), Some(&v(&p, "nn.2.bias")));
            assert_close(&y, &r, 1e-12);
        }
    }

    #[test]
    fn missing_or_misshapen_edge_features_are_coded_errors() {
        let g = random_graph(4, 5, 1);
        let x = random_features(5, 3, 2);
        let conv = GINEConv::new(mlp());
        let mut rng = StdRng::seed_from_u64(1);
        let (p, st) = conv.init(&mut rng);
        let ctx = GraphCtx::<f64>::new(&g);
        let f = Features::dense(x.clone());
        let err = apply(&conv, &Inputs::new(&ctx, &f), &p, &st, false, &mut rng).unwrap_err();
        assert_eq!(err.code(), "SHADE-E0405", "{err}");
        assert_eq!(
            err.to_string(),
            "GINEConv: edge features: expected `[E, D]` edge features, found none (give them \
             with `Inputs::with_edge_attr`)"
        );
        let e = random_features(g.num_edges(), 2, 3);
        let err = run(&conv, &g, &x, &e).unwrap_err();
        assert_eq!(err.code(), "SHADE-E0410", "{err}");
        let ne = g.num_edges();
        assert_eq!(
            err.to_string(),
            format!(
                "GINEConv: the edge feature array has shape [{ne}, 2] but the layer expects \
                 [{ne}, 3], one row per edge as wide as the node features (or set edge_dim to \
                 map them)"
            )
        );
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            let ne = g.num_edges();
            let check = |conv: &GINEConv<f64>, d: usize| GradCheck {
                edge_attr: Some(random_features(ne, d, 7).into_dyn()),
                ..GradCheck::new(Some(&g), &x)
            }.run(conv);
            check(&GINEConv::new(mlp()), 3).map_err(TestCaseError::fail)?;
            check(&GINEConv::new(mlp()).with_train_eps(0.1).with_edge_dim(2, 3), 2).map_err(TestCaseError::fail)?;
        }
    }
}
