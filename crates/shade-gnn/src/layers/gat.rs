//! `GATConv` (Veličković et al., 2018) with PyTorch Geometric's options and defaults.

use super::attention::{
    Attention, FillValue, Messages, attention_edges, check_heads, edge_features,
};
use crate::ctx::Float;
use crate::error::GnnResult;
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::params::{ParamVars, Params, State, StateScope};
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
/// bias), `bias` `[H·C]` (concat) or `[C]` (zeros). Options and defaults as PyG:
/// `heads = 1`, `concat = true` (else the heads are averaged), `negative_slope = 0.2`,
/// `dropout = 0.0` (on the attention coefficients, in training), `add_self_loops = true`
/// (existing loops removed, one per node added), `edge_dim = None`, `fill_value = Mean`
/// (the edge features of the added loops, see [`FillValue`]), `bias = true`,
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
/// let g = shade_graph::Graph::new(3, vec![0, 1, 2], vec![1, 2, 1]);
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
    /// Width of the edge features, if the attention reads them.
    pub edge_dim: Option<usize>,
    /// The edge features of the added self-loops (with `edge_dim` and `add_self_loops`).
    pub fill_value: FillValue,
    /// Add a bias.
    pub bias: bool,
    /// Add a learned skip connection `x · resᵀ` (PyG's `residual`).
    pub residual: bool,
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
            edge_dim: None,
            fill_value: FillValue::Mean,
            bias: true,
            residual: false,
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

    /// Reads edge features of width `d` in the attention logits.
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
        if let Some(d) = self.edge_dim {
            p.push(
                "lin_edge.weight",
                init::glorot_uniform(rng, &[h * c, d], d, h * c),
            );
            p.push("att_edge", init::glorot_uniform(rng, &[1, h, c], h, c));
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
        let g = env.graph("GATConv")?;
        check_heads(self.heads, self.dropout)?;
        let e = edge_features(t, env, self.edge_dim, g.edges().num_edges())?;
        let (edges, e) = attention_edges(t, g, self.add_self_loops, e, self.fill_value)?;
        let h = self.heads;
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
        let logits = t.leaky_relu(logits, T::cst(self.negative_slope))?;
        let bias = if self.bias {
            Some(p.get("bias")?)
        } else {
            None
        };
        let tail = Attention {
            heads: h,
            channels: self.out_channels,
            concat: self.concat,
            dropout: self.dropout,
        };
        if !self.residual {
            return tail.aggregate(t, env, edges, logits, Messages::Nodes(hx), bias);
        }
        // PyG's order: attention output, then the skip connection, then the bias.
        let y = tail.aggregate(t, env, edges, logits, Messages::Nodes(hx), None)?;
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
    use super::super::blocks::reference::attention_edge_list;
    use super::*;
    use crate::testing::{
        GradCheck, arb_graph_and_features, assert_close, check_layer_gradient, layer_output,
        proptest_config, random_features, random_graph,
    };
    use crate::{Features, GraphCtx, Inputs, apply};
    use ndarray::{Array2, Ix2, Ix3};
    use proptest::prelude::*;
    use rand::SeedableRng;

    /// The definition with loops: self-loops replaced by one per node (their edge
    /// features filled by `conv.fill_value`), softmax over the incoming edges
    /// (multi-edges counted separately); `e` are the edge features when `edge_dim`.
    fn reference(
        conv: &GATConv,
        g: &shade_graph::Graph,
        x: &Array2<f64>,
        e: Option<&Array2<f64>>,
        p: &Params<f64>,
    ) -> Array2<f64> {
        let n = x.nrows();
        let (h, c) = (conv.heads, conv.out_channels);
        let mat = |name: &str| {
            p.get(name)
                .unwrap()
                .clone()
                .into_dimensionality::<Ix2>()
                .unwrap()
        };
        let att = |name: &str| {
            p.get(name)
                .unwrap()
                .clone()
                .into_dimensionality::<Ix3>()
                .unwrap()
        };
        let w = mat("lin.weight");
        let (asrc, adst) = (att("att_src"), att("att_dst"));
        let wx = x.dot(&w.t());
        let (edges, attrs) = attention_edge_list(g, e, conv.add_self_loops, conv.fill_value);
        // a_edgeᵀ W_e e_ij per edge and head.
        let edge_score = |id: usize, k: usize| -> f64 {
            let Some(attrs) = &attrs else { return 0.0 };
            let (we, ae) = (mat("lin_edge.weight"), att("att_edge"));
            (0..c)
                .map(|q| {
                    let wee: f64 = (0..attrs.ncols())
                        .map(|d| we[[k * c + q, d]] * attrs[[id, d]])
                        .sum();
                    ae[[0, k, q]] * wee
                })
                .sum()
        };
        let mut out = Array2::zeros((n, conv.out_width()));
        for i in 0..n {
            for k in 0..h {
                let score = |id: usize, j: usize| {
                    let s: f64 = (0..c)
                        .map(|q| {
                            wx[[j, k * c + q]] * asrc[[0, k, q]]
                                + wx[[i, k * c + q]] * adst[[0, k, q]]
                        })
                        .sum::<f64>()
                        + edge_score(id, k);
                    if s > 0.0 { s } else { conv.negative_slope * s }
                };
                let inc: Vec<(usize, usize)> = edges
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| e.1 == i)
                    .map(|(id, e)| (id, e.0))
                    .collect();
                let z: f64 = inc.iter().map(|&(id, j)| score(id, j).exp()).sum();
                for &(id, j) in &inc {
                    let a = score(id, j).exp() / z;
                    for q in 0..c {
                        let col = if conv.concat { k * c + q } else { q };
                        let scale = if conv.concat { 1.0 } else { 1.0 / h as f64 };
                        out[[i, col]] += scale * a * wx[[j, k * c + q]];
                    }
                }
            }
        }
        if conv.residual {
            out += &x.dot(&mat("res.weight").t());
        }
        if let Some(b) = p.get("bias") {
            out += &b.clone().into_dimensionality::<ndarray::Ix1>().unwrap();
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
            GATConv::new(3, 2).with_heads(3).with_residual(true),
            GATConv::new(3, 4)
                .with_heads(2)
                .with_concat(false)
                .with_residual(true),
        ] {
            let (y, _p) = layer_output(&conv, Some(&g), &x, 4);
            let (_, p) = layer_output(&conv, Some(&g), &x, 4);
            assert_close(&y, &reference(&conv, &g, &x, None, &p), 1e-12);
            assert_eq!(y.ncols(), conv.out_width());
        }
    }

    /// `edge_dim` with every fill of the self-loops' edge features, and without loops;
    /// a non-zero bias.
    #[test]
    fn edge_features_match_dense_reference() {
        let g = random_graph(7, 15, 2);
        let x = random_features(8, 3, 3);
        let e = random_features(g.num_edges(), 2, 5);
        let ctx = GraphCtx::<f64>::new(&g);
        let (f, ed) = (Features::dense(x.clone()), e.clone().into_dyn());
        let base = GATConv::new(3, 2).with_heads(3).with_edge_dim(2);
        for conv in [
            base,
            base.with_fill_value(FillValue::Add),
            base.with_fill_value(FillValue::Max),
            base.with_fill_value(FillValue::Min),
            base.with_fill_value(FillValue::Const(0.7)),
            GATConv::new(3, 4)
                .with_heads(2)
                .with_concat(false)
                .with_edge_dim(2),
            GATConv {
                add_self_loops: false,
                ..base
            },
        ] {
            let mut rng = StdRng::seed_from_u64(5);
            let (mut p, st) = Layer::<f64>::init(&conv, &mut rng);
            p.get_mut("bias")
                .unwrap()
                .iter_mut()
                .enumerate()
                .for_each(|(i, v)| *v = 0.1 * i as f64 - 0.2);
            let inputs = Inputs::new(&ctx, &f).with_edge_attr(&ed);
            let (y, _) = apply(&conv, &inputs, &p, &st, false, &mut rng).unwrap();
            let r = reference(&conv, &g, &x, Some(&e), &p);
            assert_close(&y.into_dimensionality().unwrap(), &r, 1e-12);
        }
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            check_layer_gradient(&GATConv::new(3, 2).with_heads(2), Some(&g), &x).map_err(TestCaseError::fail)?;
            check_layer_gradient(&GATConv { add_self_loops: false, ..GATConv::new(3, 2).with_heads(2).with_concat(false) }, Some(&g), &x).map_err(TestCaseError::fail)?;
            check_layer_gradient(&GATConv::new(3, 2).with_heads(2).with_concat(false).with_residual(true), Some(&g), &x).map_err(TestCaseError::fail)?;
        }

        /// With edge features (every parameter, the input; the fill by mean and by max),
        /// and attention dropout in training.
        #[test]
        fn edge_dim_gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            let ne = g.num_edges();
            let check = |conv: GATConv, training: bool| GradCheck {
                edge_attr: Some(random_features(ne, 2, 7).into_dyn()),
                training,
                ..GradCheck::new(Some(&g), &x)
            }.run(&conv);
            let conv = GATConv::new(3, 2).with_heads(2).with_edge_dim(2);
            check(conv, false).map_err(TestCaseError::fail)?;
            check(conv.with_concat(false).with_fill_value(FillValue::Max), false).map_err(TestCaseError::fail)?;
            check(conv.with_dropout(0.4), true).map_err(TestCaseError::fail)?;
        }
    }
}
