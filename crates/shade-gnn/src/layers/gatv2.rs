//! `GATv2Conv` (Brody et al., 2022) with PyTorch Geometric's options and defaults.

use super::attention::{AttentionOptions, Messages, attention_builders};
use super::blocks::linear;
use super::{Call, GraphLayer};
use crate::ctx::Float;
use crate::error::GnnResult;
use crate::init;
use crate::layer::Input;
use crate::params::Params;
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
/// (concat) or `[C]` (zeros). Options and defaults as PyG, in [`AttentionOptions`]
/// (with a builder method each): `heads = 1`, `concat = true` (else the heads are
/// averaged), `negative_slope = 0.2`, `dropout = 0.0` (on the attention coefficients,
/// in training), `add_self_loops = true` (existing loops removed, one per node added),
/// `edge_dim = None`, `fill_value = Mean` (the edge features of the added loops, see
/// [`FillValue`](super::FillValue)), `bias = true`, `residual = false`; and
/// `share_weights = false`.
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
    /// Heads, dropout, self-loops, edge features, bias, skip connection.
    pub options: AttentionOptions,
    /// Use `W_l` for the target too (`W_r = W_l`).
    pub share_weights: bool,
}

impl GATv2Conv {
    /// `in → out` per head, one head, PyG's defaults.
    pub fn new(in_channels: usize, out_channels: usize) -> Self {
        GATv2Conv {
            in_channels,
            out_channels,
            options: AttentionOptions::default(),
            share_weights: false,
        }
    }

    /// Sets whether source and target share the weight.
    pub fn with_share_weights(mut self, share: bool) -> Self {
        self.share_weights = share;
        self
    }
}

attention_builders!(gat GATv2Conv);

impl<T: Float> GraphLayer<T> for GATv2Conv {
    fn params(&self, rng: &mut StdRng) -> Params<T> {
        let (i, h, c) = (self.in_channels, self.options.heads, self.out_channels);
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
            if self.options.bias {
                p.push(format!("{s}.bias"), init::zeros(&[h * c]));
            }
        }
        p.push("att", init::glorot_uniform(rng, &[1, h, c], h, c));
        self.options.push_tail(&mut p, rng, (i, c), false);
        p
    }

    fn record<'a>(&self, t: &mut Tape<'a, T>, (env, x, p): Call<'a, '_, '_, T>) -> GnnResult<Var> {
        let (edges, e) = self.options.begin(t, env, "GATv2Conv")?;
        let (h, c, bias) = (self.options.heads, self.out_channels, self.options.bias);
        let n = x.rows(t)?;
        let xl = linear(t, x, &p, "lin_l", bias)?;
        let xl = t.reshape(xl, &[n, h, c])?;
        let xr = if self.share_weights {
            xl
        } else {
            let xr = linear(t, x, &p, "lin_r", bias)?;
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
        let s = t.leaky_relu(s, T::cst(self.options.negative_slope))?;
        let s = t.mul(s, p.get("att")?)?;
        let logits = t.sum_axis(s, 2)?;
        let msgs = Messages::Edges(xj);
        (self.options).finish(t, env, (x, &p), edges, logits, msgs, c)
    }
}

graph_layer!(GATv2Conv);

#[cfg(test)]
mod tests {
    use super::super::attention::{check_gradient_cases, for_each_reference_case};
    use super::super::blocks::reference::{
        Case, affine, attention_edge_list, check_against, gat_output, m, t3, v,
    };
    use super::*;
    use crate::testing::{
        GradCheck, arb_graph_and_features, check_layer_gradient, proptest_config, random_features,
        random_graph,
    };
    use crate::{Features, GraphCtx, Inputs, Layer, apply};
    use ndarray::Array2;
    use proptest::prelude::*;
    use rand::SeedableRng;
    use shade_graph::Graph;

    /// The definition with loops; `e` are the edge features when `edge_dim` (the
    /// added self-loops' filled by the layer's `fill_value`).
    fn reference(conv: &GATv2Conv, (g, x, e): Case<'_>, p: &Params<f64>) -> Array2<f64> {
        let o = &conv.options;
        let (h, c) = (o.heads, conv.out_channels);
        let xl = affine(x, &m(p, "lin_l.weight"), Some(&v(p, "lin_l.bias")));
        let xr = if conv.share_weights {
            xl.clone()
        } else {
            affine(x, &m(p, "lin_r.weight"), Some(&v(p, "lin_r.bias")))
        };
        let att = t3(p, "att");
        let (edges, attrs) = attention_edge_list(g, e, o.add_self_loops, o.fill_value);
        // W_e e_ij per edge, or zeros.
        let we = match &attrs {
            Some(a) => affine(a, &m(p, "lin_edge.weight"), None),
            None => Array2::zeros((edges.len(), h * c)),
        };
        let score = |id: usize, i: usize, j: usize, k: usize| -> f64 {
            (0..c)
                .map(|q| {
                    let s = xl[[j, k * c + q]] + xr[[i, k * c + q]] + we[[id, k * c + q]];
                    let s = if s > 0.0 { s } else { o.negative_slope * s };
                    att[[0, k, q]] * s
                })
                .sum()
        };
        gat_output((x, p), o, (c, &edges), score, &xl)
    }

    /// Every option set of `for_each_reference_case`, each with own and shared
    /// weights, with non-zero biases.
    #[test]
    fn matches_dense_reference() {
        for_each_reference_case(|options, case| {
            for share_weights in [false, true] {
                let conv = GATv2Conv {
                    options,
                    share_weights,
                    ..GATv2Conv::new(3, 2)
                };
                let biases = ["lin_l.bias", "bias"];
                check_against(&conv, case, &biases, |p| reference(&conv, case, p));
            }
        });
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
        let dropout = conv.with_dropout(0.4);
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
        /// Every parameter, the input and the edge features (`check_gradient_cases`,
        /// with shared weights for the averaged heads).
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            check_gradient_cases((&g, &x), |options| GATv2Conv {
                options,
                share_weights: !options.concat,
                ..GATv2Conv::new(3, 2)
            })
            .map_err(TestCaseError::fail)?;
        }
    }
}
