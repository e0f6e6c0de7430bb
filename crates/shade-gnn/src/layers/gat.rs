//! `GATConv` (Veličković et al., 2018) with PyTorch Geometric's options and defaults.

use super::attention::{AttentionOptions, Messages, attention_builders};
use super::{Call, GraphLayer};
use crate::ctx::Float;
use crate::error::GnnResult;
use crate::init;
use crate::layer::Input;
use crate::params::Params;
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// Graph attention: `x'_i = Σ_{j ∈ N(i) ∪ {i}} α_ij W x_j` per head, with
/// `α_ij = softmax_j(LeakyReLU(a_srcᵀ W x_j + a_dstᵀ W x_i + a_edgeᵀ W_e e_ij))` over
/// the edges into `i` (the edge term only with `edge_dim`).
///
/// Parameters (PyG's names): `lin.weight` `[H·C, in]`, `att_src` and `att_dst`
/// `[1, H, C]` (all Glorot), with `edge_dim = Some(D)` also `lin_edge.weight`
/// `[H·C, D]` (no bias) and `att_edge` `[1, H, C]` (Glorot), with `residual` also
/// `res.weight` `[out, in]` (Glorot, no bias; added after the aggregation, before the
/// bias), `bias` `[H·C]` (concat) or `[C]` (zeros). Options and defaults as PyG, in
/// [`AttentionOptions`] (with a builder method each): `heads = 1`, `concat = true`
/// (else the heads are averaged), `negative_slope = 0.2`, `dropout = 0.0` (on the
/// attention coefficients, in training), `add_self_loops = true` (existing loops
/// removed, one per node added), `edge_dim = None`, `fill_value = Mean` (the edge
/// features of the added loops, see [`FillValue`](super::FillValue)), `bias = true`,
/// `residual = false`.
///
/// With `edge_dim`, a call without edge features is an error (`SHADE-E0405`), and so
/// are edge features of another width (`SHADE-E0410`); without it, edge features of
/// the call are ignored.
///
/// ```
/// use rand::{SeedableRng, rngs::StdRng};
/// use shade_gnn::layers::{FillValue, GATConv};
/// use shade_gnn::{apply, Features, GraphCtx, Inputs, Layer};
/// let g = shade_graph::Graph::try_new(3, vec![0, 1, 2], vec![1, 2, 1])?;
/// let ctx = GraphCtx::<f64>::new(&g);
/// let x = Features::dense(ndarray::Array2::ones((3, 4)));
/// let e = ndarray::Array2::<f64>::ones((3, 2)).into_dyn();
/// let conv = GATConv::new(4, 8).with_heads(2).with_edge_dim(2).with_fill_value(FillValue::Mean);
/// let mut rng = StdRng::seed_from_u64(0);
/// let (p, st) = conv.init(&mut rng);
/// assert_eq!(p.get("lin_edge.weight").unwrap().shape(), &[16, 2]);
/// let inputs = Inputs::new(&ctx, &x).with_edge_attr(&e);
/// let (y, _) = apply(&conv, &inputs, &p, &st, false, &mut rng)?;
/// assert_eq!(y.shape(), &[3, 16]);
/// // Without the edge features the call is a coded error.
/// let err = apply(&conv, &Inputs::new(&ctx, &x), &p, &st, false, &mut rng).unwrap_err();
/// assert_eq!(err.code(), "SHADE-E0405");
/// # Ok::<(), shade_gnn::GnnError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GATConv {
    /// Input width.
    pub in_channels: usize,
    /// Output width per head (`C`).
    pub out_channels: usize,
    /// Heads, dropout, self-loops, edge features, bias, skip connection.
    pub options: AttentionOptions,
}

impl GATConv {
    /// `in → out` per head, one head, PyG's defaults.
    pub fn new(in_channels: usize, out_channels: usize) -> Self {
        GATConv {
            in_channels,
            out_channels,
            options: AttentionOptions::default(),
        }
    }
}

attention_builders!(gat GATConv);

impl<T: Float> GraphLayer<T> for GATConv {
    fn params(&self, rng: &mut StdRng) -> Params<T> {
        let (i, h, c) = (self.in_channels, self.options.heads, self.out_channels);
        let mut p = Params::new()
            .with(
                "lin.weight",
                init::glorot_uniform(rng, &[h * c, i], i, h * c),
            )
            .with("att_src", init::glorot_uniform(rng, &[1, h, c], h, c))
            .with("att_dst", init::glorot_uniform(rng, &[1, h, c], h, c));
        self.options.push_tail(&mut p, rng, (i, c), true);
        p
    }

    fn record<'a>(&self, t: &mut Tape<'a, T>, (env, x, p): Call<'a, '_, '_, T>) -> GnnResult<Var> {
        let (edges, e) = self.options.begin(t, env, "GATConv")?;
        let h = self.options.heads;
        let hx = x.linear(t, p.param("lin.weight")?)?;
        let a_src = t.group_dot(hx, p.get("att_src")?, h)?;
        let a_dst = t.group_dot(hx, p.get("att_dst")?, h)?;
        let es = t.index_select(a_src, edges.src())?;
        let ed = t.index_select(a_dst, edges.dst())?;
        let mut logits = t.add(es, ed)?;
        if let Some(e) = e {
            let we = Input::Dense(e).linear(t, p.param("lin_edge.weight")?)?;
            let a_edge = t.group_dot(we, p.get("att_edge")?, h)?;
            logits = t.add(logits, a_edge)?;
        }
        let logits = t.leaky_relu(logits, T::cst(self.options.negative_slope))?;
        let msgs = Messages::Nodes(hx);
        (self.options).finish(t, env, (x, &p), edges, logits, msgs, self.out_channels)
    }
}

graph_layer!(GATConv);

#[cfg(test)]
mod tests {
    use super::super::attention::{check_gradient_cases, for_each_reference_case};
    use super::super::blocks::reference::{
        Case, attention_edge_list, check_against, gat_output, m, t3,
    };
    use super::*;
    use crate::testing::{arb_graph_and_features, proptest_config};
    use ndarray::Array2;
    use proptest::prelude::*;

    /// The definition with loops: self-loops replaced by one per node (their edge
    /// features filled by the layer's `fill_value`), softmax over the incoming edges
    /// (multi-edges counted separately); `e` are the edge features when `edge_dim`.
    fn reference(conv: &GATConv, (g, x, e): Case<'_>, p: &Params<f64>) -> Array2<f64> {
        let o = &conv.options;
        let c = conv.out_channels;
        let (asrc, adst) = (t3(p, "att_src"), t3(p, "att_dst"));
        let wx = x.dot(&m(p, "lin.weight").t());
        let (edges, attrs) = attention_edge_list(g, e, o.add_self_loops, o.fill_value);
        // a_edgeᵀ W_e e_ij per edge and head.
        let we = attrs.map(|a| a.dot(&m(p, "lin_edge.weight").t()));
        let edge_score = |id: usize, k: usize| -> f64 {
            let Some(we) = &we else { return 0.0 };
            let ae = t3(p, "att_edge");
            (0..c).map(|q| ae[[0, k, q]] * we[[id, k * c + q]]).sum()
        };
        let score = |id: usize, i: usize, j: usize, k: usize| {
            let s: f64 = (0..c)
                .map(|q| {
                    wx[[j, k * c + q]] * asrc[[0, k, q]] + wx[[i, k * c + q]] * adst[[0, k, q]]
                })
                .sum::<f64>()
                + edge_score(id, k);
            if s > 0.0 { s } else { o.negative_slope * s }
        };
        gat_output((x, p), o, (c, &edges), score, &wx)
    }

    /// Every option set of `for_each_reference_case`, with a non-zero bias.
    #[test]
    fn matches_dense_reference() {
        for_each_reference_case(|options, case| {
            let conv = GATConv {
                options,
                ..GATConv::new(3, 2)
            };
            check_against(&conv, case, &["bias"], |p| reference(&conv, case, p));
        });
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        /// Every parameter, the input and the edge features (`check_gradient_cases`).
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            check_gradient_cases((&g, &x), |options| GATConv { options, ..GATConv::new(3, 2) })
                .map_err(TestCaseError::fail)?;
        }
    }
}
