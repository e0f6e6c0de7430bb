//! `ResGatedGraphConv` (Bresson & Laurent, 2017) with PyTorch Geometric's options and
//! defaults.

use super::blocks::linear;
use crate::ctx::Float;
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::message::{Aggr, aggregate, gather_dst, gather_src};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::AdResult;
use shade_autodiff::tensor::{Tape, Var};

/// Residual gated graph convolution:
/// `x'_i = W_1 x_i + Σ_{j -> i} η_ij ⊙ W_2 x_j + b` with the gate
/// `η_ij = σ(W_3 x_i + W_4 x_j)` (sigmoid).
///
/// Parameters (PyG's names): `lin_key` (`W_3`, target), `lin_query` (`W_4`, source),
/// `lin_value` (`W_2`), each `.weight` `[out, in]` and `.bias` `[out]`;
/// `lin_skip.weight` `[out, in]` (`W_1`, no bias) when `root_weight`; `bias` `[out]`
/// (zeros). Options and defaults as PyG: `act = sigmoid`, `root_weight = true`,
/// `bias = true`. Edge features are not supported.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResGatedGraphConv {
    /// Input width.
    pub in_channels: usize,
    /// Output width.
    pub out_channels: usize,
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
            root_weight: true,
            bias: true,
        }
    }
}

impl<T: Float> Layer<T> for ResGatedGraphConv {
    fn name(&self) -> &'static str {
        "ResGatedGraphConv"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let (i, o) = (self.in_channels, self.out_channels);
        let mut p = Params::new();
        for l in ["lin_key", "lin_query", "lin_value"] {
            p.push(format!("{l}.weight"), init::torch_linear(rng, &[o, i], i));
            p.push(format!("{l}.bias"), init::torch_linear(rng, &[o], i));
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
    ) -> AdResult<Var> {
        let g = env.graph("ResGatedGraphConv")?;
        let k = linear(t, x, &p, "lin_key", true)?;
        let q = linear(t, x, &p, "lin_query", true)?;
        let v = linear(t, x, &p, "lin_value", true)?;
        let ki = gather_dst(t, g.edges(), k)?;
        let qj = gather_src(t, g.edges(), q)?;
        let vj = gather_src(t, g.edges(), v)?;
        let eta = t.add(ki, qj)?;
        let eta = t.sigmoid(eta)?;
        let m = t.mul(eta, vj)?;
        let mut y = aggregate(t, g.edges(), m, Aggr::Sum)?;
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
        arb_graph_and_features, assert_close, check_layer_gradient, layer_output, proptest_config,
        random_features, random_graph,
    };
    use ndarray::Array2;
    use proptest::prelude::*;

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
                    r[[i, c]] += sigmoid(k[[i, c]] + q[[j, c]]) * val[[j, c]];
                }
            }
            if conv.root_weight {
                r = r + affine(&x, &m(&p, "lin_skip.weight"), None) + v(&p, "bias");
            }
            assert_close(&y, &r, 1e-12);
        }
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            check_layer_gradient(&ResGatedGraphConv::new(3, 2), Some(&g), &x).map_err(TestCaseError::fail)?;
        }
    }
}
