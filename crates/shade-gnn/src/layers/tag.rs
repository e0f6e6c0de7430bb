//! `TAGConv` (Du et al., 2017) with PyTorch Geometric's options and defaults.

use crate::ctx::Float;
use crate::error::GnnResult;
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};
use shade_graph::GcnNorm;

/// Topology adaptive graph convolution: `x' = Σ_{k=0}^{K} Θ_k Â^k x + b` with the
/// GCN-normalised adjacency without added self-loops, `Â = D^-1/2 A D^-1/2` (or the
/// plain weighted adjacency when `normalize = false`).
///
/// Parameters (PyG's names): `lins.{k}.weight` `[out, in]` for `k = 0..=K` (PyTorch's
/// `Linear` init, no bias), `bias` `[out]` (zeros). Options and defaults as PyG:
/// `K = 3`, `bias = true`, `normalize = true`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TAGConv {
    /// Input width.
    pub in_channels: usize,
    /// Output width.
    pub out_channels: usize,
    /// Number of hops `K`.
    pub k: usize,
    /// Add a bias.
    pub bias: bool,
    /// GCN-normalise the adjacency.
    pub normalize: bool,
}

impl TAGConv {
    /// `in → out` with PyG's defaults (`K = 3`).
    pub fn new(in_channels: usize, out_channels: usize) -> Self {
        TAGConv {
            in_channels,
            out_channels,
            k: 3,
            bias: true,
            normalize: true,
        }
    }

    /// Sets the number of hops.
    pub fn with_k(mut self, k: usize) -> Self {
        self.k = k;
        self
    }
}

impl<T: Float> Layer<T> for TAGConv {
    fn name(&self) -> &'static str {
        "TAGConv"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let (i, o) = (self.in_channels, self.out_channels);
        let mut p = Params::new();
        for k in 0..=self.k {
            p.push(
                format!("lins.{k}.weight"),
                init::torch_linear(rng, &[o, i], i),
            );
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
        let g = env.graph("TAGConv")?;
        let a = if self.normalize {
            g.normalized_adjacency(GcnNorm {
                add_self_loops: false,
                ..GcnNorm::default()
            })
        } else {
            g.edges().weighted_sum_matrix()
        };
        let mut out = x.linear(t, p.param("lins.0.weight")?)?;
        if self.k > 0 {
            let mut h = x.dense(t)?;
            for k in 1..=self.k {
                h = t.spmm(a, h)?;
                let y = Input::Dense(h).linear(t, p.param(&format!("lins.{k}.weight"))?)?;
                out = t.add(out, y)?;
            }
        }
        if self.bias {
            out = t.add(out, p.get("bias")?)?;
        }
        Ok(out)
    }

    fn is_graph_layer(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::blocks::dense_ops::gcn;
    use super::super::blocks::reference::{affine, m, v};
    use super::*;
    use crate::testing::{
        arb_graph_and_features, assert_close, check_layer_gradient, dense_adjacency, layer_output,
        proptest_config, random_features, random_graph,
    };
    use ndarray::Array2;
    use proptest::prelude::*;

    #[test]
    fn matches_dense_reference() {
        let g = random_graph(7, 15, 5);
        let ne = g.num_edges();
        let g = g
            .with_weights((0..ne).map(|e| 0.5 + 0.1 * e as f64).collect())
            .unwrap();
        let x = random_features(8, 3, 6);
        for conv in [
            TAGConv::new(3, 2),
            TAGConv::new(3, 2).with_k(0),
            TAGConv {
                normalize: false,
                ..TAGConv::new(3, 4).with_k(2)
            },
        ] {
            let (y, p) = layer_output(&conv, Some(&g), &x, 7);
            let a = if conv.normalize {
                gcn(&g, false)
            } else {
                dense_adjacency(&g)
            };
            let mut h = x.clone();
            let mut r = Array2::zeros((8, conv.out_channels));
            for k in 0..=conv.k {
                if k > 0 {
                    h = a.dot(&h);
                }
                r = r + affine(&h, &m(&p, &format!("lins.{k}.weight")), None);
            }
            assert_close(&y, &(r + v(&p, "bias")), 1e-12);
        }
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            check_layer_gradient(&TAGConv::new(3, 2), Some(&g), &x).map_err(TestCaseError::fail)?;
            check_layer_gradient(&TAGConv { normalize: false, ..TAGConv::new(3, 2).with_k(2) }, Some(&g), &x).map_err(TestCaseError::fail)?;
        }
    }
}
