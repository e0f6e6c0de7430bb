//! `AGNNConv` (Thekumparampil et al., 2018) with PyTorch Geometric's options and
//! defaults.

use super::blocks::normalize_rows;
use super::{Call, GraphLayer};
use crate::ctx::Float;
use crate::error::GnnResult;
use crate::message::weighted_sum;
use crate::params::Params;
use ndarray::{ArrayD, IxDyn};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// Attention-based propagation: `x'_i = Σ_{j ∈ N(i) ∪ {i}} α_ij x_j` with
/// `α_ij = softmax_j(β · cos(x_i, x_j))` over the edges into `i`; rows are normalised
/// as PyG's `F.normalize` (`x / max(‖x‖, 1e-12)`).
///
/// Parameters: `beta` `[1]` (starting at 1) when `requires_grad`; otherwise `β = 1` is
/// fixed. Options and defaults as PyG: `requires_grad = true`, `add_self_loops = true`
/// (existing loops removed, one per node added). The output has the input's width.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AGNNConv {
    /// Learn `β`.
    pub requires_grad: bool,
    /// Replace self-loops by one per node.
    pub add_self_loops: bool,
}

impl AGNNConv {
    /// PyG's defaults: trainable `β`, self-loops added.
    pub fn new() -> Self {
        AGNNConv {
            requires_grad: true,
            add_self_loops: true,
        }
    }
}

impl Default for AGNNConv {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Float> GraphLayer<T> for AGNNConv {
    fn params(&self, _rng: &mut StdRng) -> Params<T> {
        let mut p = Params::new();
        if self.requires_grad {
            p.push("beta", ArrayD::from_elem(IxDyn(&[1]), T::one()));
        }
        p
    }

    fn record<'a>(&self, t: &mut Tape<'a, T>, (env, x, p): Call<'a, '_, '_, T>) -> GnnResult<Var> {
        let g = env.graph("AGNNConv")?;
        let x = x.dense(t)?;
        let xn = normalize_rows(t, x)?;
        let edges = if self.add_self_loops {
            g.edges_with_self_loops()
        } else {
            g.edges()
        };
        let xi = t.index_select(xn, edges.dst())?;
        let xj = t.index_select(xn, edges.src())?;
        let c = t.mul(xi, xj)?;
        let c = t.sum_axis(c, 1)?;
        let c = t.reshape(c, &[edges.num_edges(), 1])?;
        let c = if self.requires_grad {
            t.mul(c, p.get("beta")?)?
        } else {
            c
        };
        let alpha = t.segment_softmax(c, edges.dst(), edges.num_nodes())?;
        let msg = t.index_select(x, edges.src())?;
        Ok(weighted_sum(t, edges, alpha, msg)?)
    }
}

graph_layer!(AGNNConv);

#[cfg(test)]
mod tests {
    use super::super::blocks::reference::edge_list;
    use super::*;
    use crate::testing::{
        arb_graph_and_features, assert_close, check_layer_gradient, eval_output, proptest_config,
        random_features, random_graph,
    };
    use crate::{Features, GraphCtx, Inputs};
    use ndarray::Array2;
    use proptest::prelude::*;

    #[test]
    fn matches_dense_reference() {
        let (g, x) = (random_graph(7, 15, 2), random_features(8, 3, 3));
        let ctx = GraphCtx::<f64>::new(&g);
        let f = Features::dense(x.clone());
        for (conv, beta) in [
            (AGNNConv::new(), 1.7),
            (
                AGNNConv {
                    requires_grad: false,
                    add_self_loops: false,
                },
                1.0,
            ),
        ] {
            let p = if conv.requires_grad {
                Params::new().with("beta", ndarray::array![beta].into_dyn())
            } else {
                Params::new()
            };
            let y = eval_output(&conv, &Inputs::new(&ctx, &f), &p);
            let mut edges: Vec<(usize, usize)> = edge_list(&g)
                .into_iter()
                .filter(|e| !conv.add_self_loops || e.0 != e.1)
                .map(|e| (e.0, e.1))
                .collect();
            if conv.add_self_loops {
                edges.extend((0..8).map(|u| (u, u)));
            }
            let nrm = |i: usize| (0..3).map(|c| x[[i, c]] * x[[i, c]]).sum::<f64>().sqrt();
            let cos = |i: usize, j: usize| {
                (0..3).map(|c| x[[i, c]] * x[[j, c]]).sum::<f64>() / (nrm(i) * nrm(j))
            };
            let mut r = Array2::zeros((8, 3));
            for i in 0..8 {
                let inc: Vec<usize> = edges.iter().filter(|e| e.1 == i).map(|e| e.0).collect();
                let z: f64 = inc.iter().map(|&j| (beta * cos(i, j)).exp()).sum();
                for &j in &inc {
                    let a = (beta * cos(i, j)).exp() / z;
                    for c in 0..3 {
                        r[[i, c]] += a * x[[j, c]];
                    }
                }
            }
            assert_close(&y.into_dimensionality().unwrap(), &r, 1e-12);
        }
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            check_layer_gradient(&AGNNConv::new(), Some(&g), &x).map_err(TestCaseError::fail)?;
            check_layer_gradient(&AGNNConv { requires_grad: false, add_self_loops: false }, Some(&g), &x).map_err(TestCaseError::fail)?;
        }
    }
}
