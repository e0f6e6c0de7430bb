//! `ResGatedGraphConv` (Bresson & Laurent, 2017) with PyTorch Geometric's options and
//! defaults.

use super::Activation;
use super::attention::edge_features;
use super::blocks::linear;
use crate::ctx::Float;
use crate::error::GnnResult;
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::message::{Aggr, aggregate, gather_dst, gather_src};
use crate::params::{Param, ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// Residual gated graph convolution:
/// `x'_i = W_1 x_i + Σ_{j -> i} η_ij ⊙ W_2 x_j + b` with the gate
/// `η_ij = act(W_3 x_i + W_4 x_j)` (`act` = sigmoid by default, any [`Activation`]).
/// With `edge_dim`, the edge features join the inputs of the three edge maps (PyG's
/// definition): `η_ij = act(W_3 [x_i, e_ij] + W_4 [x_j, e_ij])` and the message
/// `η_ij ⊙ W_2 [x_j, e_ij]`. A row-wise `act` (softmax) normalises over the output
/// channels of each edge.
///
/// Parameters (PyG's names): `lin_key` (`W_3`, target), `lin_query` (`W_4`, source),
/// `lin_value` (`W_2`), each `.weight` `[out, in + D]` (`D = edge_dim`, 0 without)
/// and `.bias` `[out]`; `lin_skip.weight` `[out, in]` (`W_1`, no bias) when
/// `root_weight`; `bias` `[out]` (zeros). Options and defaults as PyG:
/// `act = sigmoid`, `edge_dim = None`, `root_weight = true`, `bias = true`.
///
/// With `edge_dim`, a call without edge features is an error (`SHADE-E0405`), and so
/// are edge features of another width (`SHADE-E0410`); without it, edge features of
/// the call are ignored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResGatedGraphConv {
    /// Input width.
    pub in_channels: usize,
    /// Output width.
    pub out_channels: usize,
    /// The gate's activation (PyG's `act`; default [`Activation::Sigmoid`]).
    pub act: Activation,
    /// Width of the edge features, if the layer reads them.
    pub edge_dim: Option<usize>,
    /// Add the skip connection `W_1 x_i`.
    pub root_weight: bool,
    /// Add a bias.
    pub bias: bool,
}

impl ResGatedGraphConv {
    /// `in → out` with PyG's defaults.
    pub fn new(in_channels: usize, out_channels: usize) -> Self {
        ResGatedGraphConv {
            in_channels,
            out_channels,
            act: Activation::Sigmoid,
            edge_dim: None,
            root_weight: true,
            bias: true,
        }
    }

    /// Reads edge features of width `d` (concatenated to the inputs of the key, query
    /// and value maps).
    pub fn with_edge_dim(mut self, d: usize) -> Self {
        self.edge_dim = Some(d);
        self
    }

    /// Sets the gate's activation.
    pub fn with_act(mut self, act: Activation) -> Self {
        self.act = act;
        self
    }
}

/// `W [x_{idx[e]}, e_e] + b` for every edge `e`, with `W = p[weight]` `[out, in + D]`
/// and `b = p[bias]`: the node part `x · W[:, :in]ᵀ + b` once per node, gathered by
/// `idx`, plus the edge part `e · W[:, in:]ᵀ` (cheaper than `[E, in + D]` rows).
fn edge_linear<'a, T: Float>(
    t: &mut Tape<'a, T>,
    x: Input<'a, T>,
    e: Var,
    p: ParamVars<'_>,
    in_channels: usize,
    idx: &'a [u32],
) -> GnnResult<Var> {
    let w = p.param("weight")?;
    let d = t.shape(e)?[1];
    // The node and edge parts of the weight keep its name for messages.
    let part = |var| Param { var, name: w.name };
    let wx = part(t.narrow(w.var, 1, 0, in_channels)?);
    let we = part(t.narrow(w.var, 1, in_channels, d)?);
    let node = x.linear(t, wx)?;
    let node = t.add(node, p.get("bias")?)?;
    let node = t.index_select(node, idx)?;
    let edge = Input::Dense(e).linear(t, we)?;
    Ok(t.add(node, edge)?)
}

impl<T: Float> Layer<T> for ResGatedGraphConv {
    fn name(&self) -> &'static str {
        "ResGatedGraphConv"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let (i, o) = (self.in_channels, self.out_channels);
        let ie = i + self.edge_dim.unwrap_or(0);
        let mut p = Params::new();
        for l in ["lin_key", "lin_query", "lin_value"] {
            p.push(format!("{l}.weight"), init::torch_linear(rng, &[o, ie], ie));
            p.push(format!("{l}.bias"), init::torch_linear(rng, &[o], ie));
        }
        if self.root_weight {
            p.push("lin_skip.weight", init::torch_linear(rng, &[o, i], i));
        }
        if self.bias {
            p.push("bias", init::zeros(&[o]));
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
        let g = env.graph("ResGatedGraphConv")?;
        let edges = g.edges();
        let e = edge_features(t, env, self.edge_dim, edges.num_edges())?;
        let (ki, qj, vj) = match e {
            None => {
                let k = linear(t, x, &p, "lin_key", true)?;
                let q = linear(t, x, &p, "lin_query", true)?;
                let v = linear(t, x, &p, "lin_value", true)?;
                let ki = gather_dst(t, edges, k)?;
                let qj = gather_src(t, edges, q)?;
                (ki, qj, gather_src(t, edges, v)?)
            }
            Some(e) => {
                let i = self.in_channels;
                let (src, dst) = (edges.src(), edges.dst());
                (
                    edge_linear(t, x, e, p.scope("lin_key"), i, dst)?,
                    edge_linear(t, x, e, p.scope("lin_query"), i, src)?,
                    edge_linear(t, x, e, p.scope("lin_value"), i, src)?,
                )
            }
        };
        let eta = t.add(ki, qj)?;
        let eta = self.act.apply(t, eta)?;
        let m = t.mul(eta, vj)?;
        let mut y = aggregate(t, edges, m, Aggr::Sum)?;
        if self.root_weight {
            let r = linear(t, x, &p, "lin_skip", false)?;
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
    use super::super::blocks::reference::{affine, edge_list, m, sigmoid, v};
    use super::*;
    use crate::testing::{
        GradCheck, arb_graph_and_features, assert_close, check_layer_gradient, layer_output,
        proptest_config, random_features, random_graph,
    };
    use crate::{Features, GraphCtx, Inputs, apply};
    use ndarray::{Array2, concatenate};
    use proptest::prelude::*;
    use rand::SeedableRng;

    /// The elementwise activations the tests use, from their definitions.
    fn act(a: Activation, z: f64) -> f64 {
        match a {
            Activation::Sigmoid => sigmoid(z),
            Activation::Tanh => z.tanh(),
            Activation::Relu => z.max(0.0),
            Activation::LeakyRelu(s) => {
                if z > 0.0 {
                    z
                } else {
                    s * z
                }
            }
            Activation::Identity => z,
            other => panic!("no reference for {other:?}"),
        }
    }

    #[test]
    fn matches_dense_reference() {
        let g = random_graph(7, 15, 8);
        let x = random_features(8, 3, 9);
        for conv in [
            ResGatedGraphConv::new(3, 2),
            ResGatedGraphConv {
                root_weight: false,
                bias: false,
                ..ResGatedGraphConv::new(3, 4)
            },
            ResGatedGraphConv::new(3, 2).with_act(Activation::Tanh),
            ResGatedGraphConv::new(3, 4).with_act(Activation::LeakyRelu(0.1)),
            ResGatedGraphConv {
                bias: false,
                ..ResGatedGraphConv::new(3, 3).with_act(Activation::Identity)
            },
        ] {
            let (y, p) = layer_output(&conv, Some(&g), &x, 1);
            let l = |n: &str| {
                affine(
                    &x,
                    &m(&p, &format!("{n}.weight")),
                    Some(&v(&p, &format!("{n}.bias"))),
                )
            };
            let (k, q, val) = (l("lin_key"), l("lin_query"), l("lin_value"));
            let o = conv.out_channels;
            let mut r = Array2::zeros((8, o));
            for (j, i, _) in edge_list(&g) {
                for c in 0..o {
                    r[[i, c]] += act(conv.act, k[[i, c]] + q[[j, c]]) * val[[j, c]];
                }
            }
            if conv.root_weight {
                r = r + affine(&x, &m(&p, "lin_skip.weight"), None);
            }
            if conv.bias {
                r = r + v(&p, "bias");
            }
            assert_close(&y, &r, 1e-12);
        }
    }

    /// PyG's definition with `edge_dim`: per edge `j -> i`, the key map of `[x_i, e_ji]`
    /// and the query and value maps of `[x_j, e_ji]` (rows concatenated, then the
    /// `[out, in + D]` weights applied).
    #[test]
    fn edge_features_match_dense_reference() {
        let g = random_graph(7, 15, 8);
        let x = random_features(8, 3, 9);
        let e = random_features(g.num_edges(), 2, 10);
        let ctx = GraphCtx::<f64>::new(&g);
        let (f, ed) = (Features::dense(x.clone()), e.clone().into_dyn());
        for conv in [
            ResGatedGraphConv::new(3, 2).with_edge_dim(2),
            ResGatedGraphConv {
                root_weight: false,
                bias: false,
                ..ResGatedGraphConv::new(3, 4).with_edge_dim(2)
            },
            ResGatedGraphConv::new(3, 2)
                .with_edge_dim(2)
                .with_act(Activation::Relu),
        ] {
            let mut rng = StdRng::seed_from_u64(3);
            let (mut p, st) = Layer::<f64>::init(&conv, &mut rng);
            if let Some(b) = p.get_mut("bias") {
                b.iter_mut()
                    .enumerate()
                    .for_each(|(i, v)| *v = 0.1 * i as f64 - 0.2);
            }
            let inputs = Inputs::new(&ctx, &f).with_edge_attr(&ed);
            let (y, _) = apply(&conv, &inputs, &p, &st, false, &mut rng).unwrap();
            let el = edge_list(&g);
            let rows = |pick: &dyn Fn(usize, usize) -> usize| {
                let xs =
                    Array2::from_shape_fn((el.len(), 3), |(k, c)| x[[pick(el[k].0, el[k].1), c]]);
                concatenate![ndarray::Axis(1), xs, e]
            };
            let (xi_e, xj_e) = (rows(&|_, i| i), rows(&|j, _| j));
            let l = |n: &str, z: &Array2<f64>| {
                affine(
                    z,
                    &m(&p, &format!("{n}.weight")),
                    Some(&v(&p, &format!("{n}.bias"))),
                )
            };
            let (k, q, val) = (
                l("lin_key", &xi_e),
                l("lin_query", &xj_e),
                l("lin_value", &xj_e),
            );
            let o = conv.out_channels;
            let mut r = Array2::zeros((8, o));
            for (id, &(_, i, _)) in el.iter().enumerate() {
                for c in 0..o {
                    r[[i, c]] += act(conv.act, k[[id, c]] + q[[id, c]]) * val[[id, c]];
                }
            }
            if conv.root_weight {
                r = r + affine(&x, &m(&p, "lin_skip.weight"), None) + v(&p, "bias");
            }
            assert_close(&y.into_dimensionality().unwrap(), &r, 1e-12);
        }
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            check_layer_gradient(&ResGatedGraphConv::new(3, 2), Some(&g), &x).map_err(TestCaseError::fail)?;
            for a in [Activation::Tanh, Activation::Relu, Activation::Softmax] {
                check_layer_gradient(&ResGatedGraphConv::new(3, 2).with_act(a), Some(&g), &x).map_err(TestCaseError::fail)?;
            }
        }

        /// With edge features: every parameter and the input.
        #[test]
        fn edge_dim_gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            GradCheck {
                edge_attr: Some(random_features(g.num_edges(), 2, 7).into_dyn()),
                ..GradCheck::new(Some(&g), &x)
            }
            .run(&ResGatedGraphConv::new(3, 2).with_edge_dim(2))
            .map_err(TestCaseError::fail)?;
            GradCheck {
                edge_attr: Some(random_features(g.num_edges(), 2, 8).into_dyn()),
                ..GradCheck::new(Some(&g), &x)
            }
            .run(&ResGatedGraphConv::new(3, 2).with_edge_dim(2).with_act(Activation::Tanh))
            .map_err(TestCaseError::fail)?;
        }
    }
}
