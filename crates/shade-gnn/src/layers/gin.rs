//! `GINConv` (Xu et al., 2019) with PyTorch Geometric's options and defaults.

use crate::ctx::Float;
use crate::error::GnnResult;
use crate::layer::{Env, Input, Layer};
use crate::message::{Aggr, Message, propagate};
use crate::params::{ParamVars, Params, State, StateScope};
use ndarray::{ArrayD, IxDyn};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// Graph isomorphism network layer: `x'_i = h_Θ((1 + ε) x_i + Σ_{j -> i} x_j)` with a
/// user-given network `h_Θ` (usually an MLP [`Chain`](crate::layers::Chain)).
///
/// Parameters: the network's under `nn.` (PyG's names, e.g. `nn.0.weight`), plus `eps`
/// `[1]` when `train_eps`. Options and defaults as PyG: `eps = 0`, `train_eps = false`.
/// The sum runs through the fused sparse × dense path; sparse input is densified.
pub struct GINConv<T: Float> {
    /// The network `h_Θ`.
    pub nn: Box<dyn Layer<T>>,
    /// Initial `ε`.
    pub eps: f64,
    /// Make `ε` a trainable parameter.
    pub train_eps: bool,
}

impl<T: Float> std::fmt::Debug for GINConv<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GINConv")
            .field("nn", &self.nn.name())
            .field("eps", &self.eps)
            .field("train_eps", &self.train_eps)
            .finish()
    }
}

impl<T: Float> GINConv<T> {
    /// GIN with network `nn`, `ε = 0` fixed.
    pub fn new(nn: impl Layer<T> + 'static) -> Self {
        GINConv {
            nn: Box::new(nn),
            eps: 0.0,
            train_eps: false,
        }
    }

    /// Trainable `ε` starting at `eps`.
    pub fn with_train_eps(mut self, eps: f64) -> Self {
        self.eps = eps;
        self.train_eps = true;
        self
    }
}

/// GIN's update `nn((1 + ε) x + agg)` with `ε` the constant `eps`, or the parameter
/// `eps` when `train_eps`; the network runs without the graph. Shared by
/// [`GINConv`] and [`GINEConv`](super::GINEConv), which differ in `agg`.
pub(crate) fn gin_update<'a, T: Float>(
    t: &mut Tape<'a, T>,
    env: &mut Env<'a, '_, T>,
    nn: &dyn Layer<T>,
    (x, agg): (Var, Var),
    (eps, train_eps): (f64, bool),
    p: ParamVars<'_>,
    mut st: StateScope<'_, T>,
) -> GnnResult<Var> {
    let root = if train_eps {
        let one = t.scalar(T::one());
        let s = t.add(one, p.get("eps")?)?;
        t.mul(x, s)?
    } else {
        t.scale(x, T::cst(1.0 + eps))?
    };
    let h = t.add(root, agg)?;
    env.without_graph(|env| nn.forward(t, env, Input::Dense(h), p.scope("nn"), st.scope("nn")))
}

impl<T: Float> Layer<T> for GINConv<T> {
    fn name(&self) -> &'static str {
        "GINConv"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let (np, ns) = self.nn.init(rng);
        let (mut p, mut s) = (Params::new(), State::new());
        p.extend_prefixed("nn", np);
        s.extend_prefixed("nn", ns);
        if self.train_eps {
            p.push("eps", ArrayD::from_elem(IxDyn(&[1]), T::cst(self.eps)));
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
        let g = env.graph("GINConv")?;
        let x = x.dense(t)?;
        let agg = propagate(t, g.edges(), x, Message::CopySrc, Aggr::Sum)?;
        gin_update(
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
    use super::*;
    use crate::layers::{Activation, Chain, Dense};
    use crate::testing::{
        arb_graph_and_features, assert_close, check_layer_gradient, dense_adjacency, layer_output,
        proptest_config, random_features, random_graph,
    };
    use ndarray::{Array2, Ix1, Ix2};
    use proptest::prelude::*;
    use shade_graph::Graph;

    fn mlp() -> Chain<f64> {
        Chain::new()
            .push(Dense::new(3, 4))
            .push(Activation::Relu)
            .push(Dense::new(4, 2))
    }

    #[test]
    fn matches_dense_reference() {
        let g = random_graph(7, 15, 8);
        let x = random_features(8, 3, 9);
        for conv in [GINConv::new(mlp()), GINConv::new(mlp()).with_train_eps(0.3)] {
            let (y, p) = layer_output(&conv, Some(&g), &x, 1);
            assert_eq!(p.names()[0], "nn.0.weight");
            let a = dense_adjacency(&g);
            let h = &x * (1.0 + if conv.train_eps { 0.3 } else { 0.0 }) + a.dot(&x);
            let m = |n: &str| {
                p.get(n)
                    .unwrap()
                    .clone()
                    .into_dimensionality::<Ix2>()
                    .unwrap()
            };
            let v = |n: &str| {
                p.get(n)
                    .unwrap()
                    .clone()
                    .into_dimensionality::<Ix1>()
                    .unwrap()
            };
            let z = (h.dot(&m("nn.0.weight").t()) + v("nn.0.bias")).mapv(|q| q.max(0.0));
            let r = z.dot(&m("nn.2.weight").t()) + v("nn.2.bias");
            assert_close(&y, &r, 1e-12);
        }
    }

    /// A case the fuzzer found: five nodes with zero features put the first linear
    /// layer's outputs exactly at the relu's kink (see `GradCheck`'s kink handling).
    #[test]
    fn kinks_at_the_point_are_told_from_wrong_gradients() {
        let g = Graph::new(
            6,
            vec![3, 2, 3, 1, 1, 1, 0, 3],
            vec![1, 1, 2, 0, 1, 0, 0, 1],
        );
        let mut x = Array2::zeros((6, 3));
        x.row_mut(5).assign(&ndarray::arr1(&[
            -0.15019678649784796,
            0.2818797185875785,
            -0.013389478587416294,
        ]));
        check_layer_gradient(&GINConv::new(mlp()), Some(&g), &x).unwrap();
        check_layer_gradient(&GINConv::new(mlp()).with_train_eps(0.1), Some(&g), &x).unwrap();
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            check_layer_gradient(&GINConv::new(mlp()), Some(&g), &x).map_err(TestCaseError::fail)?;
            check_layer_gradient(&GINConv::new(mlp()).with_train_eps(0.1), Some(&g), &x).map_err(TestCaseError::fail)?;
        }
    }
}
