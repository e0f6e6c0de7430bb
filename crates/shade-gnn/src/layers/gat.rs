//! `GATConv` (Veličković et al., 2018) with PyTorch Geometric's options and defaults.

use crate::ctx::Float;
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::AdResult;
use shade_autodiff::tensor::{Tape, Var};

/// Graph attention: `x'_i = Σ_{j ∈ N(i) ∪ {i}} α_ij W x_j` per head, with
/// `α_ij = softmax_j(LeakyReLU(a_srcᵀ W x_j + a_dstᵀ W x_i))` over the edges into `i`.
///
/// Parameters (PyG's names): `lin.weight` `[H·C, in]`, `att_src` and `att_dst`
/// `[1, H, C]` (all Glorot), `bias` `[H·C]` (concat) or `[C]` (zeros). Options and
/// defaults as PyG: `heads = 1`, `concat = true` (else the heads are averaged),
/// `negative_slope = 0.2`, `dropout = 0.0` (on the attention coefficients, in
/// training), `add_self_loops = true` (existing loops removed, one per node added),
/// `bias = true`. Edge features (`edge_dim`) are not supported.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GATConv {
    /// Input width.
    pub in_channels: usize,
    /// Output width per head (`C`).
    pub out_channels: usize,
    /// Number of heads (`H`).
    pub heads: usize,
    /// Concatenate the heads (`[N, H·C]`) or average them (`[N, C]`).
    pub concat: bool,
    /// Slope of the LeakyReLU on the scores.
    pub negative_slope: f64,
    /// Dropout probability on the attention coefficients.
    pub dropout: f64,
    /// Replace self-loops by one per node.
    pub add_self_loops: bool,
    /// Add a bias.
    pub bias: bool,
}

impl GATConv {
    /// `in → out` per head, one head, PyG's defaults.
    pub fn new(in_channels: usize, out_channels: usize) -> Self {
        GATConv {
            in_channels,
            out_channels,
            heads: 1,
            concat: true,
            negative_slope: 0.2,
            dropout: 0.0,
            add_self_loops: true,
            bias: true,
        }
    }

    /// Sets the number of heads.
    pub fn with_heads(mut self, heads: usize) -> Self {
        self.heads = heads;
        self
    }

    /// Sets whether heads are concatenated.
    pub fn with_concat(mut self, concat: bool) -> Self {
        self.concat = concat;
        self
    }

    /// Sets the attention dropout.
    pub fn with_dropout(mut self, p: f64) -> Self {
        self.dropout = p;
        self
    }

    /// The output width.
    pub fn out_width(&self) -> usize {
        if self.concat {
            self.heads * self.out_channels
        } else {
            self.out_channels
        }
    }
}

impl<T: Float> Layer<T> for GATConv {
    fn name(&self) -> &'static str {
        "GATConv"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let (i, h, c) = (self.in_channels, self.heads, self.out_channels);
        let mut p = Params::new()
            .with(
                "lin.weight",
                init::glorot_uniform(rng, &[h * c, i], i, h * c),
            )
            .with("att_src", init::glorot_uniform(rng, &[1, h, c], h, c))
            .with("att_dst", init::glorot_uniform(rng, &[1, h, c], h, c));
        if self.bias {
            p.push("bias", init::zeros(&[self.out_width()]));
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
        let g = env.graph("GATConv")?;
        let (h, c) = (self.heads, self.out_channels);
        let n = x.rows(t)?;
        let hx = x.linear(t, p.get("lin.weight")?)?;
        let a_src = crate::ops::head_dot(t, hx, p.get("att_src")?, h)?;
        let a_dst = crate::ops::head_dot(t, hx, p.get("att_dst")?, h)?;
        let edges = if self.add_self_loops {
            g.edges_with_self_loops()
        } else {
            g.edges()
        };
        let es = t.index_select(a_src, edges.src())?;
        let ed = t.index_select(a_dst, edges.dst())?;
        let e = t.add(es, ed)?;
        let e = t.leaky_relu(e, T::cst(self.negative_slope))?;
        let alpha = t.segment_softmax(e, edges.dst(), edges.num_nodes())?;
        let alpha = if self.dropout > 0.0 {
            crate::ops::dropout(t, alpha, self.dropout, env.rng, env.training)?
        } else {
            alpha
        };
        let out = crate::ops::edge_weighted_sum(t, edges, alpha, hx)?;
        let mut y = if self.concat || h == 1 {
            out
        } else {
            let o3 = t.reshape(out, &[n, h, c])?;
            t.mean_axis(o3, 1)?
        };
        if self.bias {
            y = crate::ops::add_bias(t, y, p.get("bias")?)?;
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
    use ndarray::{Array2, Ix2, Ix3};
    use proptest::prelude::*;

    /// The definition with loops: self-loops replaced by one per node, softmax over the
    /// incoming edges (multi-edges counted separately).
    fn reference(
        conv: &GATConv,
        g: &shade_graph::Graph,
        x: &Array2<f64>,
        p: &Params<f64>,
    ) -> Array2<f64> {
        let n = x.nrows();
        let (h, c) = (conv.heads, conv.out_channels);
        let w = p
            .get("lin.weight")
            .unwrap()
            .clone()
            .into_dimensionality::<Ix2>()
            .unwrap();
        let asrc = p
            .get("att_src")
            .unwrap()
            .clone()
            .into_dimensionality::<Ix3>()
            .unwrap();
        let adst = p
            .get("att_dst")
            .unwrap()
            .clone()
            .into_dimensionality::<Ix3>()
            .unwrap();
        let wx = x.dot(&w.t());
        let mut edges: Vec<(usize, usize)> = (0..g.num_edges())
            .map(|e| (g.src()[e] as usize, g.dst()[e] as usize))
            .filter(|(s, d)| !conv.add_self_loops || s != d)
            .collect();
        if conv.add_self_loops {
            edges.extend((0..n).map(|v| (v, v)));
        }
        let mut out = Array2::zeros((n, conv.out_width()));
        for i in 0..n {
            for k in 0..h {
                let score = |j: usize| {
                    let s: f64 = (0..c)
                        .map(|q| {
                            wx[[j, k * c + q]] * asrc[[0, k, q]]
                                + wx[[i, k * c + q]] * adst[[0, k, q]]
                        })
                        .sum();
                    if s > 0.0 { s } else { conv.negative_slope * s }
                };
                let inc: Vec<usize> = edges.iter().filter(|e| e.1 == i).map(|e| e.0).collect();
                let z: f64 = inc.iter().map(|&j| score(j).exp()).sum();
                for &j in &inc {
                    let a = score(j).exp() / z;
                    for q in 0..c {
                        let col = if conv.concat { k * c + q } else { q };
                        let scale = if conv.concat { 1.0 } else { 1.0 / h as f64 };
                        out[[i, col]] += scale * a * wx[[j, k * c + q]];
                    }
                }
            }
        }
        out
    }

    #[test]
    fn matches_dense_reference() {
        let g = random_graph(7, 15, 2);
        let x = random_features(8, 3, 3);
        for conv in [
            GATConv::new(3, 2).with_heads(3),
            GATConv::new(3, 4).with_heads(2).with_concat(false),
            GATConv {
                add_self_loops: false,
                ..GATConv::new(3, 2)
            },
        ] {
            let (y, _p) = layer_output(&conv, Some(&g), &x, 4);
            let (_, p) = layer_output(&conv, Some(&g), &x, 4);
            assert_close(&y, &reference(&conv, &g, &x, &p), 1e-12);
            assert_eq!(y.ncols(), conv.out_width());
        }
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            check_layer_gradient(&GATConv::new(3, 2).with_heads(2), Some(&g), &x).map_err(TestCaseError::fail)?;
            check_layer_gradient(&GATConv { add_self_loops: false, ..GATConv::new(3, 2).with_heads(2).with_concat(false) }, Some(&g), &x).map_err(TestCaseError::fail)?;
        }
    }
}
