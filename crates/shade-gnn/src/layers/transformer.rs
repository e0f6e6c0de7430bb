//! `TransformerConv` (Shi et al., 2021) with PyTorch Geometric's options and defaults.

use super::attention::{Attention, Messages, attention_builders, begin};
use super::blocks::linear;
use super::{Call, GraphLayer};
use crate::ctx::Float;
use crate::error::GnnResult;
use crate::init;
use crate::layer::Input;
use crate::params::Params;
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// Graph transformer: per head, `x'_i = W_1 x_i + Σ_{j -> i} α_ij (W_2 x_j + W_e e_ij)`
/// with `α_ij = softmax_j((W_3 x_i)ᵀ (W_4 x_j + W_e e_ij) / √C)` over the edges into
/// `i` (no self-loops are added). With `beta`, the skip is gated:
/// `x'_i = β_i W_1 x_i + (1 - β_i) m_i`, `β_i = σ(w_βᵀ [m_i, W_1 x_i, m_i - W_1 x_i])`.
///
/// Parameters (PyG's names): `lin_key`, `lin_query`, `lin_value` (`.weight` `[H·C, in]`,
/// `.bias` `[H·C]`), `lin_edge.weight` `[H·C, edge_dim]` (if `edge_dim`),
/// `lin_skip.weight` `[H·C or C, in]` and `lin_skip.bias` (if `root_weight`; bias if
/// `bias`), `lin_beta.weight` `[1, 3·(H·C or C)]` (if `beta`). Options and defaults as
/// PyG: `heads = 1`, `concat = true`, `beta = false`, `dropout = 0` (on `α`, in
/// training), `edge_dim = None`, `bias = true`, `root_weight = true`.
///
/// With `edge_dim`, a call without edge features is an error (`SHADE-E0405`), and so
/// are edge features of another width (`SHADE-E0410`); without it, edge features of
/// the call are ignored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransformerConv {
    /// Input width.
    pub in_channels: usize,
    /// Output width per head (`C`).
    pub out_channels: usize,
    /// Number of heads (`H`).
    pub heads: usize,
    /// Concatenate the heads (`[N, H·C]`) or average them (`[N, C]`).
    pub concat: bool,
    /// Gate the skip connection.
    pub beta: bool,
    /// Dropout probability on the attention coefficients.
    pub dropout: f64,
    /// Width of the edge features, if the layer reads them.
    pub edge_dim: Option<usize>,
    /// Bias of the skip connection.
    pub bias: bool,
    /// Add the skip connection `W_1 x_i`.
    pub root_weight: bool,
}

impl TransformerConv {
    /// `in → out` per head, one head, PyG's defaults.
    pub fn new(in_channels: usize, out_channels: usize) -> Self {
        TransformerConv {
            in_channels,
            out_channels,
            heads: 1,
            concat: true,
            beta: false,
            dropout: 0.0,
            edge_dim: None,
            bias: true,
            root_weight: true,
        }
    }

    /// Sets the gated skip.
    pub fn with_beta(mut self, beta: bool) -> Self {
        self.beta = beta;
        self
    }
}

attention_builders!(TransformerConv);

impl<T: Float> GraphLayer<T> for TransformerConv {
    fn params(&self, rng: &mut StdRng) -> Params<T> {
        let (i, hc, w) = (
            self.in_channels,
            self.heads * self.out_channels,
            self.out_width(),
        );
        let mut p = Params::new();
        for l in ["lin_key", "lin_query", "lin_value"] {
            p.push(format!("{l}.weight"), init::torch_linear(rng, &[hc, i], i));
            p.push(format!("{l}.bias"), init::torch_linear(rng, &[hc], i));
        }
        if let Some(d) = self.edge_dim {
            p.push("lin_edge.weight", init::torch_linear(rng, &[hc, d], d));
        }
        if self.root_weight {
            p.push("lin_skip.weight", init::torch_linear(rng, &[w, i], i));
            if self.bias {
                p.push("lin_skip.bias", init::torch_linear(rng, &[w], i));
            }
            if self.beta {
                p.push(
                    "lin_beta.weight",
                    init::torch_linear(rng, &[1, 3 * w], 3 * w),
                );
            }
        }
        p
    }

    fn record<'a>(&self, t: &mut Tape<'a, T>, (env, x, p): Call<'a, '_, '_, T>) -> GnnResult<Var> {
        let opts = (self.heads, self.dropout, self.edge_dim);
        let (edges, e) = begin(t, env, "TransformerConv", opts, None)?;
        let (h, c) = (self.heads, self.out_channels);
        let n = x.rows(t)?;
        let heads = |t: &mut Tape<'a, T>, y: Var| t.reshape(y, &[n, h, c]);
        let q = linear(t, x, &p, "lin_query", true)?;
        let q = heads(t, q)?;
        let k = linear(t, x, &p, "lin_key", true)?;
        let k = heads(t, k)?;
        let v = linear(t, x, &p, "lin_value", true)?;
        let qi = t.index_select(q, edges.dst())?;
        let mut kj = t.index_select(k, edges.src())?;
        // The values: node rows `W_2 x_j`, or per edge `W_2 x_j + W_e e_ij`.
        let msgs = match e {
            Some(e) => {
                let we = linear(t, Input::Dense(e), &p, "lin_edge", false)?;
                let we = t.reshape(we, &[edges.num_edges(), h, c])?;
                kj = t.add(kj, we)?;
                let v = heads(t, v)?;
                let vj = t.index_select(v, edges.src())?;
                Messages::Edges(t.add(vj, we)?)
            }
            None => Messages::Nodes(v),
        };
        let s = t.mul(qi, kj)?;
        let s = t.sum_axis(s, 2)?;
        let logits = t.scale(s, T::cst(1.0 / (c as f64).sqrt()))?;
        let tail = Attention {
            heads: h,
            channels: c,
            concat: self.concat,
            dropout: self.dropout,
        };
        let mut y = tail.aggregate(t, env, edges, logits, msgs)?;
        if self.root_weight {
            let r = linear(t, x, &p, "lin_skip", self.bias)?;
            if self.beta {
                let d = t.sub(y, r)?;
                let z = t.concat(&[y, r, d], 1)?;
                let b = linear(t, Input::Dense(z), &p, "lin_beta", false)?;
                let b = t.sigmoid(b)?;
                // b r + (1 - b) y = y + b (r - y)
                let ry = t.sub(r, y)?;
                let br = t.mul(b, ry)?;
                y = t.add(y, br)?;
            } else {
                y = t.add(y, r)?;
            }
        }
        Ok(y)
    }
}

graph_layer!(TransformerConv);

#[cfg(test)]
mod tests {
    use super::super::blocks::reference::{
        Case, affine, attention, check_against, edge_list, m, sigmoid, v,
    };
    use super::*;
    use crate::testing::{
        GradCheck, arb_graph_and_features, proptest_config, random_features, random_graph,
    };
    use ndarray::Array2;
    use proptest::prelude::*;

    fn reference(conv: &TransformerConv, (g, x, e): Case<'_>, p: &Params<f64>) -> Array2<f64> {
        let n = x.nrows();
        let (h, c) = (conv.heads, conv.out_channels);
        let l = |name: &str| {
            affine(
                x,
                &m(p, &format!("{name}.weight")),
                Some(&v(p, &format!("{name}.bias"))),
            )
        };
        let (q, k, val) = (l("lin_query"), l("lin_key"), l("lin_value"));
        let ee = e.map(|e| affine(e, &m(p, "lin_edge.weight"), None));
        let edges: Vec<(usize, usize)> = edge_list(g).iter().map(|e| (e.0, e.1)).collect();
        // Keys and values of an edge: node rows plus the edge term.
        let kv = |id: usize, j: usize, mat: &Array2<f64>, col: usize| {
            mat[[j, col]] + ee.as_ref().map_or(0.0, |ee| ee[[id, col]])
        };
        let score = |id: usize, i: usize, j: usize, hh: usize| {
            (0..c)
                .map(|qq| q[[i, hh * c + qq]] * kv(id, j, &k, hh * c + qq))
                .sum::<f64>()
                / (c as f64).sqrt()
        };
        let value = |id: usize, j: usize, hh: usize, qq: usize| kv(id, j, &val, hh * c + qq);
        let out = attention(n, &edges, (h, c, conv.concat), score, value);
        if !conv.root_weight {
            return out;
        }
        let r = affine(x, &m(p, "lin_skip.weight"), Some(&v(p, "lin_skip.bias")));
        if !conv.beta {
            return out + r;
        }
        let wb = m(p, "lin_beta.weight");
        let w = conv.out_width();
        Array2::from_shape_fn((n, w), |(i, q)| {
            let s: f64 = (0..w)
                .map(|k| {
                    wb[[0, k]] * out[[i, k]]
                        + wb[[0, w + k]] * r[[i, k]]
                        + wb[[0, 2 * w + k]] * (out[[i, k]] - r[[i, k]])
                })
                .sum();
            let b = sigmoid(s);
            b * r[[i, q]] + (1.0 - b) * out[[i, q]]
        })
    }

    #[test]
    fn matches_dense_reference() {
        let g = random_graph(7, 15, 2);
        let x = random_features(8, 3, 3);
        let e = random_features(g.num_edges(), 2, 4);
        for conv in [
            TransformerConv::new(3, 2).with_heads(3),
            TransformerConv::new(3, 4)
                .with_heads(2)
                .with_concat(false)
                .with_beta(true),
            TransformerConv::new(3, 2)
                .with_heads(2)
                .with_edge_dim(2)
                .with_beta(true),
            TransformerConv {
                root_weight: false,
                ..TransformerConv::new(3, 2)
            },
        ] {
            let ed = conv.edge_dim.map(|_| &e);
            check_against(&conv, (&g, &x, Some(&e)), &[], |p| {
                reference(&conv, (&g, &x, ed), p)
            });
        }
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            let check = |conv: TransformerConv| GradCheck::new(Some(&g), &x).with_edge_features(2).run(&conv);
            check(TransformerConv::new(3, 2).with_heads(2)).map_err(TestCaseError::fail)?;
            check(TransformerConv::new(3, 2).with_heads(2).with_concat(false).with_beta(true).with_edge_dim(2)).map_err(TestCaseError::fail)?;
            // Attention dropout in training (a fixed random stream per evaluation).
            GradCheck { training: true, ..GradCheck::new(Some(&g), &x) }
                .run(&TransformerConv::new(3, 2).with_heads(2).with_dropout(0.4)).map_err(TestCaseError::fail)?;
        }
    }
}
