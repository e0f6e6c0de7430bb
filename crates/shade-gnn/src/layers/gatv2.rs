//! `GATv2Conv` (Brody et al., 2022) with PyTorch Geometric's options and defaults.

use super::attention::{
    Attention, FillValue, Messages, attention_edges, check_heads, edge_features,
};
use super::blocks::linear;
use crate::ctx::Float;
use crate::error::GnnResult;
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// Dynamic graph attention: `x'_i = Σ_{j ∈ N(i) ∪ {i}} α_ij W_l x_j` per head, with
/// `α_ij = softmax_j(aᵀ LeakyReLU(W_l x_j + W_r x_i + W_e e_ij))` over the edges into
/// `i` (the edge term only with `edge_dim`).
///
/// Parameters (PyG's names): `lin_l.weight` `[H·C, in]` (Glorot), `lin_l.bias`
/// `[H·C]` (zeros), `lin_r.weight` / `lin_r.bias` likewise unless `share_weights`,
/// `att` `[1, H, C]` (Glorot), with `edge_dim = Some(D)` also `lin_edge.weight`
/// `[H·C, D]` (Glorot, no bias), with `residual` also `res.weight` `[out, in]`
/// (Glorot, no bias; added after the aggregation, before the bias), `bias` `[H·C]`
/// (concat) or `[C]` (zeros). Options and defaults as PyG: `heads = 1`, `concat = true`
/// (else the heads are averaged), `negative_slope = 0.2`, `dropout = 0.0` (on the
/// attention coefficients, in training), `add_self_loops = true` (existing loops
/// removed, one per node added), `edge_dim = None`, `fill_value = Mean` (the edge
/// features of the added loops, see [`FillValue`]), `bias = true`,
/// `share_weights = false`, `residual = false`.
///
/// With `edge_dim`, a call without edge features is an error (`SHADE-E0405`), and so
/// are edge features of another width (`SHADE-E0410`); without it, edge features of
/// the call are ignored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GATv2Conv {
    /// Input width.
    pub in_channels: usize,
    /// Output width per head (`C`).
    pub out_channels: usize,
    /// Number of heads (`H`).
    pub heads: usize,
    /// Concatenate the heads (`[N, H·C]`) or average them (`[N, C]`).
    pub concat: bool,
    /// Slope of the LeakyReLU inside the score.
    pub negative_slope: f64,
    /// Dropout probability on the attention coefficients.
    pub dropout: f64,
    /// Replace self-loops by one per node.
    pub add_self_loops: bool,
    /// Width of the edge features, if the attention reads them.
    pub edge_dim: Option<usize>,
    /// The edge features of the added self-loops (with `edge_dim` and `add_self_loops`).
    pub fill_value: FillValue,
    /// Add a bias (also the biases of `lin_l` / `lin_r`).
    pub bias: bool,
    /// Add a learned skip connection `x · resᵀ` (PyG's `residual`).
    pub residual: bool,
    /// Use `W_l` for the target too (`W_r = W_l`).
    pub share_weights: bool,
}

impl GATv2Conv {
    /// `in → out` per head, one head, PyG's defaults.
    pub fn new(in_channels: usize, out_channels: usize) -> Self {
        GATv2Conv {
            in_channels,
            out_channels,
            heads: 1,
            concat: true,
            negative_slope: 0.2,
            dropout: 0.0,
            add_self_loops: true,
            edge_dim: None,
            fill_value: FillValue::Mean,
            bias: true,
            residual: false,
            share_weights: false,
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

    /// Sets whether source and target share the weight.
    pub fn with_share_weights(mut self, share: bool) -> Self {
        self.share_weights = share;
        self
    }

    /// Reads edge features of width `d` in the attention scores.
    pub fn with_edge_dim(mut self, d: usize) -> Self {
        self.edge_dim = Some(d);
        self
    }

    /// Sets whether a learned skip connection is added (PyG's `residual`).
    pub fn with_residual(mut self, residual: bool) -> Self {
        self.residual = residual;
        self
    }

    /// Sets how the edge features of the added self-loops are filled.
    pub fn with_fill_value(mut self, fill: FillValue) -> Self {
        self.fill_value = fill;
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

impl<T: Float> Layer<T> for GATv2Conv {
    fn name(&self) -> &'static str {
        "GATv2Conv"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let (i, h, c) = (self.in_channels, self.heads, self.out_channels);
        let mut p = Params::new();
        let sides: &[&str] = if self.share_weights {
            &["lin_l"]
        } else {
            &["lin_l", "lin_r"]
        };
        for s in sides {
            p.push(
                format!("{s}.weight"),
                init::glorot_uniform(rng, &[h * c, i], i, h * c),
            );
            if self.bias {
                p.push(format!("{s}.bias"), init::zeros(&[h * c]));
            }
        }
        p.push("att", init::glorot_uniform(rng, &[1, h, c], h, c));
        if let Some(d) = self.edge_dim {
            p.push(
                "lin_edge.weight",
                init::glorot_uniform(rng, &[h * c, d], d, h * c),
            );
        }
        if self.residual {
            let o = self.out_width();
            p.push("res.weight", init::glorot_uniform(rng, &[o, i], i, o));
        }
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
    ) -> GnnResult<Var> {
        let g = env.graph("GATv2Conv")?;
        check_heads(self.heads, self.dropout)?;
        let e = edge_features(t, env, self.edge_dim, g.edges().num_edges())?;
        let (edges, e) = attention_edges(t, g, self.add_self_loops, e, self.fill_value)?;
        let (h, c) = (self.heads, self.out_channels);
        let n = x.rows(t)?;
        let xl = linear(t, x, &p, "lin_l", self.bias)?;
        let xl = t.reshape(xl, &[n, h, c])?;
        let xr = if self.share_weights {
            xl
        } else {
            let xr = linear(t, x, &p, "lin_r", self.bias)?;
            t.reshape(xr, &[n, h, c])?
        };
        let xj = t.index_select(xl, edges.src())?;
        let xi = t.index_select(xr, edges.dst())?;
        let mut s = t.add(xj, xi)?;
        if let Some(e) = e {
            let we = linear(t, Input::Dense(e), &p, "lin_edge", false)?;
            let we = t.reshape(we, &[edges.num_edges(), h, c])?;
            s = t.add(s, we)?;
        }
        let s = t.leaky_relu(s, T::cst(self.negative_slope))?;
        let s = t.mul(s, p.get("att")?)?;
        let logits = t.sum_axis(s, 2)?;
        let bias = if self.bias {
            Some(p.get("bias")?)
        } else {
            None
        };
        let tail = Attention {
            heads: h,
            channels: c,
            concat: self.concat,
            dropout: self.dropout,
        };
        if !self.residual {
            return tail.aggregate(t, env, edges, logits, Messages::Edges(xj), bias);
        }
        // PyG's order: attention output, then the skip connection, then the bias.
        let y = tail.aggregate(t, env, edges, logits, Messages::Edges(xj), None)?;
        let res = x.linear(t, p.param("res.weight")?)?;
        let y = t.add(y, res)?;
        match bias {
            Some(b) => Ok(t.add(y, b)?),
            None => Ok(y),
        }
    }

    fn is_graph_layer(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::blocks::reference::{affine, attention_edge_list, m, v};
    use super::*;
    use crate::testing::{
        GradCheck, arb_graph_and_features, assert_close, check_layer_gradient, layer_output,
        proptest_config, random_features, random_graph,
    };
    use crate::{Features, GraphCtx, Inputs, apply};
    use ndarray::{Array2, Ix3};
    use proptest::prelude::*;
    use rand::SeedableRng;
    use shade_graph::Graph;

    /// The definition with loops; `e` are the edge features when `edge_dim` (the
    /// added self-loops' filled by `conv.fill_value`).
    fn reference(
        conv: &GATv2Conv,
        g: &shade_graph::Graph,
        x: &Array2<f64>,
        e: Option<&Array2<f64>>,
        p: &Params<f64>,
    ) -> Array2<f64> {
        let n = x.nrows();
        let (h, c) = (conv.heads, conv.out_channels);
        let xl = affine(x, &m(p, "lin_l.weight"), Some(&v(p, "lin_l.bias")));
        let xr = if conv.share_weights {
            xl.clone()
        } else {
            affine(x, &m(p, "lin_r.weight"), Some(&v(p, "lin_r.bias")))
        };
        let att = p
            .get("att")
            .unwrap()
            .clone()
            .into_dimensionality::<Ix3>()
            .unwrap();
        let (edges, attrs) = attention_edge_list(g, e, conv.add_self_loops, conv.fill_value);
        // W_e e_ij per edge, or zeros.
        let we = match &attrs {
            Some(a) => affine(a, &m(p, "lin_edge.weight"), None),
            None => Array2::zeros((edges.len(), h * c)),
        };
        let mut out = Array2::zeros((n, conv.out_width()));
        for i in 0..n {
            let inc: Vec<(usize, usize)> = edges
                .iter()
                .enumerate()
                .filter(|(_, e)| e.1 == i)
                .map(|(id, e)| (id, e.0))
                .collect();
            for k in 0..h {
                let score = |id: usize, j: usize| -> f64 {
                    (0..c)
                        .map(|q| {
                            let s = xl[[j, k * c + q]] + xr[[i, k * c + q]] + we[[id, k * c + q]];
                            let s = if s > 0.0 { s } else { conv.negative_slope * s };
                            att[[0, k, q]] * s
                        })
                        .sum()
                };
                let z: f64 = inc.iter().map(|&(id, j)| score(id, j).exp()).sum();
                for &(id, j) in &inc {
                    let a = score(id, j).exp() / z;
                    for q in 0..c {
                        if conv.concat {
                            out[[i, k * c + q]] += a * xl[[j, k * c + q]];
                        } else {
                            out[[i, q]] += a * xl[[j, k * c + q]] / h as f64;
                        }
                    }
                }
            }
        }
        if conv.residual {
            out += &affine(x, &m(p, "res.weight"), None);
        }
        out + v(p, "bias")
    }

    #[test]
    fn matches_dense_reference() {
        let g = random_graph(7, 15, 2);
        let x = random_features(8, 3, 3);
        for conv in [
            GATv2Conv::new(3, 2).with_heads(3),
            GATv2Conv::new(3, 4).with_heads(2).with_concat(false),
            GATv2Conv::new(3, 2).with_heads(3).with_residual(true),
            GATv2Conv::new(3, 4)
                .with_heads(2)
                .with_concat(false)
                .with_residual(true),
            GATv2Conv {
                add_self_loops: false,
                ..GATv2Conv::new(3, 2).with_share_weights(true)
            },
        ] {
            let (y, p) = layer_output(&conv, Some(&g), &x, 4);
            // Non-zero biases so that they are checked too.
            let mut p = p;
            for name in ["lin_l.bias", "bias"] {
                let b = p.get_mut(name).unwrap();
                b.iter_mut()
                    .enumerate()
                    .for_each(|(i, v)| *v = 0.1 * i as f64 - 0.2);
            }
            let ctx = GraphCtx::<f64>::new(&g);
            let f = Features::dense(x.clone());
            let mut rng = StdRng::seed_from_u64(0);
            let (y2, _) = apply(
                &conv,
                &Inputs::new(&ctx, &f),
                &p,
                &State::new(),
                false,
                &mut rng,
            )
            .unwrap();
            assert_eq!(y.ncols(), conv.out_width());
            assert_close(
                &y2.into_dimensionality().unwrap(),
                &reference(&conv, &g, &x, None, &p),
                1e-12,
            );
        }
    }

    /// `edge_dim` with the fills of the self-loops' edge features, without loops, with
    /// shared weights; non-zero biases.
    #[test]
    fn edge_features_match_dense_reference() {
        let g = random_graph(7, 15, 2);
        let x = random_features(8, 3, 3);
        let e = random_features(g.num_edges(), 2, 5);
        let ctx = GraphCtx::<f64>::new(&g);
        let (f, ed) = (Features::dense(x.clone()), e.clone().into_dyn());
        let base = GATv2Conv::new(3, 2).with_heads(3).with_edge_dim(2);
        for conv in [
            base,
            base.with_fill_value(FillValue::Add),
            base.with_fill_value(FillValue::Max),
            base.with_fill_value(FillValue::Const(-0.3)),
            GATv2Conv::new(3, 4)
                .with_heads(2)
                .with_concat(false)
                .with_share_weights(true)
                .with_edge_dim(2),
            GATv2Conv {
                add_self_loops: false,
                ..base
            },
        ] {
            let mut rng = StdRng::seed_from_u64(5);
            let (mut p, st) = Layer::<f64>::init(&conv, &mut rng);
            for name in ["lin_l.bias", "bias"] {
                p.get_mut(name)
                    .unwrap()
                    .iter_mut()
                    .enumerate()
                    .for_each(|(i, v)| *v = 0.1 * i as f64 - 0.2);
            }
            let inputs = Inputs::new(&ctx, &f).with_edge_attr(&ed);
            let (y, _) = apply(&conv, &inputs, &p, &st, false, &mut rng).unwrap();
            let r = reference(&conv, &g, &x, Some(&e), &p);
            assert_close(&y.into_dimensionality().unwrap(), &r, 1e-12);
        }
    }

    #[test]
    fn invalid_options_are_coded_errors() {
        let g = random_graph(3, 4, 1);
        let x = random_features(4, 3, 2);
        let conv = GATv2Conv::new(3, 2).with_heads(0);
        let mut rng = StdRng::seed_from_u64(0);
        let (p, st) = conv.init(&mut rng);
        let ctx = GraphCtx::<f64>::new(&g);
        let f = Features::dense(x);
        let err = apply(&conv, &Inputs::new(&ctx, &f), &p, &st, false, &mut rng).unwrap_err();
        assert_eq!(err.code(), "SHADE-E0404");
        assert_eq!(
            err.to_string(),
            "GATv2Conv: invalid setting `heads` = 0: expected at least 1"
        );
    }

    /// A case the fuzzer found: with zero features and zero biases the scores sit
    /// exactly on the LeakyReLU's kink, so central differences average two slopes and
    /// AD's convention matches neither. `GradCheck` must tell such coordinates (one-sided
    /// slopes that stay apart) from wrong gradients; and at a nearby smooth point the
    /// gradient must match everywhere.
    #[test]
    fn kinks_at_the_point_are_told_from_wrong_gradients() {
        let g = Graph::new(5, vec![2, 2, 0, 2, 2, 0, 2], vec![2, 1, 2, 3, 0, 0, 2]);
        let mut x = Array2::zeros((5, 3));
        x[[2, 2]] = -0.5792655263654448;
        let conv = GATv2Conv::new(3, 2).with_heads(2);
        let dropout = GATv2Conv {
            dropout: 0.4,
            ..conv
        };
        check_layer_gradient(&conv, Some(&g), &x).unwrap();
        let train = GradCheck {
            training: true,
            ..GradCheck::new(Some(&g), &x)
        };
        train.run(&dropout).unwrap();
        // Demanding a smooth point fails here...
        let strict = GradCheck {
            max_kink_fraction: 0.0,
            ..GradCheck::new(Some(&g), &x)
        };
        assert!(strict.run(&conv).unwrap_err().contains("sit on a kink"));
        // ... and passes a small step away.
        let nudged = &x + &random_features(5, 3, 9).mapv(|v| 1e-3 * v);
        for check in [
            GradCheck::new(Some(&g), &nudged),
            GradCheck {
                training: true,
                ..GradCheck::new(Some(&g), &nudged)
            },
        ] {
            GradCheck {
                max_kink_fraction: 0.0,
                ..check
            }
            .run(&dropout)
            .unwrap();
        }
        GradCheck {
            max_kink_fraction: 0.0,
            ..GradCheck::new(Some(&g), &nudged)
        }
        .run(&conv)
        .unwrap();
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            check_layer_gradient(&GATv2Conv::new(3, 2).with_heads(2), Some(&g), &x).map_err(TestCaseError::fail)?;
            check_layer_gradient(&GATv2Conv::new(3, 2).with_heads(2).with_residual(true), Some(&g), &x).map_err(TestCaseError::fail)?;
            check_layer_gradient(&GATv2Conv { add_self_loops: false, ..GATv2Conv::new(3, 2).with_heads(2).with_concat(false).with_share_weights(true) }, Some(&g), &x).map_err(TestCaseError::fail)?;
            // Attention dropout in training (a fixed random stream per evaluation).
            GradCheck { training: true, ..GradCheck::new(Some(&g), &x) }
                .run(&GATv2Conv { dropout: 0.4, ..GATv2Conv::new(3, 2).with_heads(2) }).map_err(TestCaseError::fail)?;
        }

        /// With edge features: every parameter and the input, the fill by mean and by
        /// min, shared weights, and attention dropout in training.
        #[test]
        fn edge_dim_gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            let ne = g.num_edges();
            let check = |conv: GATv2Conv, training: bool| GradCheck {
                edge_attr: Some(random_features(ne, 2, 7).into_dyn()),
                training,
                ..GradCheck::new(Some(&g), &x)
            }.run(&conv);
            let conv = GATv2Conv::new(3, 2).with_heads(2).with_edge_dim(2);
            check(conv, false).map_err(TestCaseError::fail)?;
            check(conv.with_concat(false).with_share_weights(true).with_fill_value(FillValue::Min), false).map_err(TestCaseError::fail)?;
            check(GATv2Conv { dropout: 0.4, ..conv }, true).map_err(TestCaseError::fail)?;
        }
    }
}
