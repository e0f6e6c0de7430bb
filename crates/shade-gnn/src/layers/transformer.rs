//! `TransformerConv` (Shi et al., 2021) with PyTorch Geometric's options and defaults.

use super::attention::{Attention, Messages, check_heads, edge_features};
use super::blocks::linear;
use crate::ctx::Float;
use crate::error::GnnResult;
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::params::{ParamVars, Params, State, StateScope};
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

    /// Sets the gated skip.
    pub fn with_beta(mut self, beta: bool) -> Self {
        self.beta = beta;
        self
    }

    /// Reads edge features of width `d`.
    pub fn with_edge_dim(mut self, d: usize) -> Self {
        self.edge_dim = Some(d);
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

impl<T: Float> Layer<T> for TransformerConv {
    fn name(&self) -> &'static str {
        "TransformerConv"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
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
        let g = env.graph("TransformerConv")?;
        check_heads(self.heads, self.dropout)?;
        let edges = g.edges();
        let e = edge_features(t, env, self.edge_dim, edges.num_edges())?;
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
        let mut y = tail.aggregate(t, env, edges, logits, msgs, None)?;
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

    fn is_graph_layer(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::blocks::reference::{affine, edge_list, m, sigmoid, v};
    use super::*;
    use crate::testing::{
        GradCheck, arb_graph_and_features, assert_close, proptest_config, random_features,
        random_graph,
    };
    use crate::{Features, GraphCtx, Inputs, apply};
    use ndarray::Array2;
    use proptest::prelude::*;
    use rand::SeedableRng;

    fn reference(
        conv: &TransformerConv,
        g: &shade_graph::Graph,
        x: &Array2<f64>,
        e: Option<&Array2<f64>>,
        p: &Params<f64>,
    ) -> Array2<f64> {
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
        let el = edge_list(g);
        let mut out = Array2::zeros((n, conv.out_width()));
        for i in 0..n {
            let inc: Vec<(usize, usize)> = el
                .iter()
                .enumerate()
                .filter(|(_, e)| e.1 == i)
                .map(|(id, e)| (id, e.0))
                .collect();
            for hh in 0..h {
                let col = |q: usize| hh * c + q;
                let kv = |id: usize, j: usize, mat: &Array2<f64>, q: usize| {
                    mat[[j, col(q)]] + ee.as_ref().map_or(0.0, |ee| ee[[id, col(q)]])
                };
                let score = |id: usize, j: usize| {
                    (0..c)
                        .map(|qq| q[[i, col(qq)]] * kv(id, j, &k, qq))
                        .sum::<f64>()
                        / (c as f64).sqrt()
                };
                let z: f64 = inc.iter().map(|&(id, j)| score(id, j).exp()).sum();
                for &(id, j) in &inc {
                    let a = score(id, j).exp() / z;
                    for qq in 0..c {
                        if conv.concat {
                            out[[i, col(qq)]] += a * kv(id, j, &val, qq);
                        } else {
                            out[[i, qq]] += a * kv(id, j, &val, qq) / h as f64;
                        }
                    }
                }
            }
        }
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
        let ctx = GraphCtx::<f64>::new(&g);
        let f = Features::dense(x.clone());
        let ed = e.clone().into_dyn();
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
            let mut rng = StdRng::seed_from_u64(5);
            let (p, st) = Layer::<f64>::init(&conv, &mut rng);
            let inputs = Inputs::new(&ctx, &f).with_edge_attr(&ed);
            let (y, _) = apply(&conv, &inputs, &p, &st, false, &mut rng).unwrap();
            let r = reference(&conv, &g, &x, conv.edge_dim.map(|_| &e), &p);
            assert_close(&y.into_dimensionality().unwrap(), &r, 1e-12);
        }
    }

    #[test]
    fn missing_edge_features_are_a_coded_error() {
        let g = random_graph(3, 4, 1);
        let conv = TransformerConv::new(3, 2).with_edge_dim(2);
        let mut rng = StdRng::seed_from_u64(0);
        let (p, st) = Layer::<f64>::init(&conv, &mut rng);
        let ctx = GraphCtx::<f64>::new(&g);
        let f = Features::dense(random_features(4, 3, 2));
        let err = apply(&conv, &Inputs::new(&ctx, &f), &p, &st, false, &mut rng).unwrap_err();
        assert_eq!(err.code(), "SHADE-E0405");
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            let ne = g.num_edges();
            let check = |conv: TransformerConv| GradCheck {
                edge_attr: Some(random_features(ne, 2, 7).into_dyn()),
                ..GradCheck::new(Some(&g), &x)
            }.run(&conv);
            check(TransformerConv::new(3, 2).with_heads(2)).map_err(TestCaseError::fail)?;
            check(TransformerConv::new(3, 2).with_heads(2).with_concat(false).with_beta(true).with_edge_dim(2)).map_err(TestCaseError::fail)?;
            // Attention dropout in training (a fixed random stream per evaluation).
            GradCheck { training: true, ..GradCheck::new(Some(&g), &x) }
                .run(&TransformerConv { dropout: 0.4, ..TransformerConv::new(3, 2).with_heads(2) }).map_err(TestCaseError::fail)?;
        }
    }
}
