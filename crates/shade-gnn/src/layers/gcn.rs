//! `GCNConv` (Kipf & Welling, 2017) with PyTorch Geometric's options and defaults.

use super::blocks::no_edge_features;
use crate::ctx::Float;
use crate::error::{GnnError, GnnResult};
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};
use shade_graph::GcnNorm;

/// `X' = Â · X · Wᵀ + b` with `Â = D^-1/2 (A + I) D^-1/2` (PyG's `GCNConv`).
///
/// Parameters (PyG's names): `lin.weight` `[out, in]` (Glorot), `bias` `[out]` (zeros).
/// Options and defaults as in PyG: `improved = false` (`A + 2I`), `cached = false`,
/// `add_self_loops = true`, `normalize = true`, `bias = true`. With `normalize = false`
/// the layer aggregates with the raw weighted adjacency and adds no self-loops.
///
/// Edge weights ([`GcnEdgeWeight`]) are by default the graph's, constants: the
/// normalised adjacency is then built once per graph by its
/// [`GraphCtx`](crate::GraphCtx), never inside the differentiated program, so every
/// call behaves like PyG's `cached = true`; `cached` is kept for parity and has no
/// further effect. With [`GcnEdgeWeight::EdgeAttr`] the weights are the call's edge
/// features (one per edge, e.g. computed by an edge network or learned), and the
/// normalisation `D^-1/2 (A_w + I) D^-1/2` is differentiated with respect to them
/// (PyG's `GCNConv(x, edge_index, edge_weight)` with a weight that requires grad);
/// the edge list and structure stay cached constants. As in PyG, a negative degree
/// gives NaN. The product runs in the cheaper order: `Â · (X Wᵀ)` when the output
/// is narrower than the input (always for sparse input), `(Â X) · Wᵀ` otherwise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GCNConv {
    /// Input width.
    pub in_channels: usize,
    /// Output width.
    pub out_channels: usize,
    /// Self-loops of weight 2 (`A + 2I`).
    pub improved: bool,
    /// PyG's caching flag (the context always caches; see the type documentation).
    pub cached: bool,
    /// Add the missing self-loops before normalising.
    pub add_self_loops: bool,
    /// Apply the symmetric normalisation.
    pub normalize: bool,
    /// Add a bias.
    pub bias: bool,
    /// Where the edge weights come from.
    pub edge_weight: GcnEdgeWeight,
}

/// The source of [`GCNConv`]'s edge weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum GcnEdgeWeight {
    /// The graph's weights (ones without): constants, normalised once per graph.
    #[default]
    Graph,
    /// The call's edge features ([`Inputs::with_edge_attr`](crate::Inputs::with_edge_attr)),
    /// `[E]` or `[E, 1]`: values on the tape, differentiable.
    EdgeAttr,
}

impl GCNConv {
    /// `in → out` with PyG's defaults.
    pub fn new(in_channels: usize, out_channels: usize) -> Self {
        GCNConv {
            in_channels,
            out_channels,
            improved: false,
            cached: false,
            add_self_loops: true,
            normalize: true,
            bias: true,
            edge_weight: GcnEdgeWeight::Graph,
        }
    }

    /// Takes the edge weights from the call's edge features (differentiable).
    pub fn with_edge_attr_weights(mut self) -> Self {
        self.edge_weight = GcnEdgeWeight::EdgeAttr;
        self
    }
}

impl GCNConv {
    /// The normalisation options of the graph's adjacency (PyG's `gcn_norm`).
    fn norm(&self) -> GcnNorm {
        GcnNorm {
            add_self_loops: self.add_self_loops,
            improved: self.improved,
            weighted: true,
        }
    }
}

impl<T: Float> Layer<T> for GCNConv {
    fn name(&self) -> &'static str {
        "GCNConv"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let (i, o) = (self.in_channels, self.out_channels);
        let mut p = Params::new().with("lin.weight", init::glorot_uniform(rng, &[o, i], i, o));
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
        let g = env.graph("GCNConv")?;
        // The adjacency: a cached constant, or cached structure with values on the tape.
        let (a, values) = match self.edge_weight {
            GcnEdgeWeight::Graph if self.normalize => (g.normalized_adjacency(self.norm()), None),
            GcnEdgeWeight::Graph => (g.edges().weighted_sum_matrix(), None),
            GcnEdgeWeight::EdgeAttr => {
                let ne = g.edges().num_edges();
                let ew = env.edge_attr.ok_or_else(|| {
                    no_edge_features(format!("`[{ne}]` or `[{ne}, 1]` edge weights"))
                })?;
                let shape = t.shape(ew)?.to_vec();
                if !(shape == [ne] || shape == [ne, 1]) {
                    return Err(GnnError::InputShape {
                        what: "the edge weight array".into(),
                        found: format!("shape {shape:?}"),
                        param: None,
                        expected: format!("one weight per edge, [{ne}] or [{ne}, 1]"),
                    });
                }
                // Without normalisation no loops are added (PyG's `normalize=False`).
                let opts = GcnNorm {
                    add_self_loops: self.normalize && self.add_self_loops,
                    ..self.norm()
                };
                let edges = g.normalized_edges(opts);
                let v = t.sym_norm_values(ew, edges.sym_norm(self.normalize))?;
                (g.normalized_adjacency(opts), Some(v))
            }
        };
        let prop = |t: &mut Tape<'a, T>, h: Var| match values {
            None => t.spmm(a, h),
            Some(v) => t.spmm_values(a, v, h),
        };
        let w = p.param("lin.weight")?;
        let transform_first =
            matches!(x, Input::Sparse(_)) || self.out_channels <= self.in_channels;
        if transform_first && self.bias && values.is_none() {
            // `Â·(XW) + b` in one buffer (the bias added as the product's rows are
            // written): one [N, out] result fewer on the tape.
            let h = x.linear(t, w)?;
            return Ok(t.spmm_bias(a, h, p.get("bias")?)?);
        }
        let mut y = if transform_first {
            let h = x.linear(t, w)?;
            prop(t, h)?
        } else {
            let x = x.dense(t)?;
            let h = prop(t, x)?;
            Input::Dense(h).linear(t, w)?
        };
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
    use super::*;
    use crate::testing::{
        GradCheck, arb_graph_and_features, assert_close, check_layer_gradient, dense_adjacency,
        layer_output, random_features, random_graph,
    };
    use crate::{Features, GraphCtx, Inputs, apply};
    use ndarray::{Array2, Ix1, Ix2};
    use proptest::prelude::*;
    use rand::SeedableRng;

    /// `D^-1/2 (A + fill·I) D^-1/2` from the definition, with PyG's
    /// `add_remaining_self_loops`: all existing loops of a node are replaced by one
    /// loop carrying the weight of the last of them (or `fill` if it has none).
    fn reference(
        conv: &GCNConv,
        g: &shade_graph::Graph,
        x: &Array2<f64>,
        p: &Params<f64>,
    ) -> Array2<f64> {
        let mut a = dense_adjacency(g);
        let n = a.nrows();
        if conv.normalize {
            if conv.add_self_loops {
                let fill = if conv.improved { 2.0 } else { 1.0 };
                for v in 0..n {
                    let last_loop = (0..g.num_edges())
                        .rfind(|&e| g.src()[e] as usize == v && g.dst()[e] as usize == v);
                    a[[v, v]] = last_loop.map_or(fill, |e| g.weight(e));
                }
            }
            let deg: Vec<f64> = (0..n).map(|v| a.row(v).sum()).collect();
            let dis = |v: usize| {
                if deg[v] > 0.0 {
                    1.0 / deg[v].sqrt()
                } else {
                    0.0
                }
            };
            for v in 0..n {
                for u in 0..n {
                    a[[v, u]] *= dis(v) * dis(u);
                }
            }
        }
        let w = p
            .get("lin.weight")
            .unwrap()
            .clone()
            .into_dimensionality::<Ix2>()
            .unwrap();
        let (o, i) = w.dim();
        let mut y = Array2::zeros((n, o));
        for v in 0..n {
            for k in 0..o {
                let mut s = 0.0;
                for u in 0..n {
                    for c in 0..i {
                        s += a[[v, u]] * x[[u, c]] * w[[k, c]];
                    }
                }
                y[[v, k]] = s;
            }
        }
        if let Some(b) = p.get("bias") {
            let b = b.clone().into_dimensionality::<Ix1>().unwrap();
            for v in 0..n {
                for k in 0..o {
                    y[[v, k]] += b[k];
                }
            }
        }
        y
    }

    #[test]
    fn matches_dense_reference_for_every_option() {
        let g = random_graph(7, 14, 3);
        let x = random_features(8, 3, 4);
        for (improved, loops, normalize) in [
            (false, true, true),
            (true, true, true),
            (false, false, true),
            (false, false, false),
        ] {
            for o in [2, 5] {
                let conv = GCNConv {
                    improved,
                    add_self_loops: loops,
                    normalize,
                    ..GCNConv::new(3, o)
                };
                let (y, mut p) = layer_output(&conv, Some(&g), &x, 1);
                // A nonzero bias, so the check covers it.
                if let Some(b) = p.get_mut("bias") {
                    b.iter_mut()
                        .enumerate()
                        .for_each(|(k, v)| *v = 0.1 * k as f64);
                }
                let ctx = crate::GraphCtx::new(&g);
                let f = crate::Features::dense(x.clone());
                let (y2, _) = crate::apply(
                    &conv,
                    &crate::Inputs::new(&ctx, &f),
                    &p,
                    &crate::State::new(),
                    false,
                    &mut rand::SeedableRng::seed_from_u64(0),
                )
                .unwrap();
                let y2 = y2.into_dimensionality::<Ix2>().unwrap();
                assert_close(&y2, &reference(&conv, &g, &x, &p), 1e-12);
                assert_eq!(y.dim(), (8, o));
            }
        }
    }

    #[test]
    fn weighted_graph_uses_its_weights() {
        let g = shade_graph::Graph::new(3, vec![0, 1, 2], vec![1, 2, 0])
            .with_weights(vec![2.0, 0.5, 3.0])
            .unwrap();
        let x = random_features(3, 2, 9);
        let conv = GCNConv::new(2, 2);
        let (y, p) = layer_output(&conv, Some(&g), &x, 2);
        assert_close(&y, &reference(&conv, &g, &x, &p), 1e-12);
    }

    #[test]
    fn sparse_input_equals_dense_input() {
        let g = random_graph(9, 20, 5);
        let mut x = random_features(10, 6, 6);
        x.iter_mut().enumerate().for_each(|(i, v)| {
            if i % 3 != 0 {
                *v = 0.0
            }
        });
        let conv = GCNConv::new(6, 3);
        let (y, p) = layer_output(&conv, Some(&g), &x, 0);
        let ctx = crate::GraphCtx::new(&g);
        let xs = shade_graph::CsMat32::csr_from_dense(x.mapv(|v| v as f32).view(), 0.0);
        let f = crate::Features::<f64>::sparse_from_f32(&xs);
        let (ys, _) = crate::apply(
            &conv,
            &crate::Inputs::new(&ctx, &f),
            &p,
            &crate::State::new(),
            false,
            &mut rand::SeedableRng::seed_from_u64(0),
        )
        .unwrap();
        // The sparse path rounds the features through f32.
        assert_close(&ys.into_dimensionality::<Ix2>().unwrap(), &y, 1e-6);
    }

    #[test]
    fn without_a_graph_is_a_coded_error() {
        let f = crate::Features::dense(Array2::<f64>::zeros((2, 2)));
        let conv = GCNConv::new(2, 2);
        let mut rng = rand::SeedableRng::seed_from_u64(0);
        let (p, s) = Layer::<f64>::init(&conv, &mut rng);
        let e = crate::apply(
            &conv,
            &crate::Inputs::without_graph(&f),
            &p,
            &s,
            false,
            &mut rng,
        )
        .unwrap_err();
        assert_eq!(e.code(), "SHADE-E0409", "{e}");
        assert_eq!(
            e.to_string(),
            "GCNConv: the layer reads the graph, but the call has no graph"
        );
    }

    /// Edge weights from the call's edge features give the same output as the same
    /// weights on the graph (whose cached path the dense reference checks), for every
    /// option set; isolated nodes, self-loops and multi-edges included.
    #[test]
    fn edge_attr_weights_match_graph_weights() {
        let g = random_graph(7, 15, 4);
        let ne = g.num_edges();
        let w: Vec<f64> = (0..ne).map(|e| 0.3 + 0.17 * e as f64).collect();
        let gw = g.clone().with_weights(w.clone()).unwrap();
        let attr = Array2::from_shape_vec((ne, 1), w).unwrap().into_dyn();
        let x = random_features(8, 3, 5);
        for base in [
            GCNConv::new(3, 2),
            GCNConv::new(3, 4),
            GCNConv {
                improved: true,
                ..GCNConv::new(3, 2)
            },
            GCNConv {
                add_self_loops: false,
                ..GCNConv::new(3, 2)
            },
            GCNConv {
                normalize: false,
                ..GCNConv::new(3, 2)
            },
        ] {
            let (want, p) = layer_output(&base, Some(&gw), &x, 3);
            assert_close(&want, &reference(&base, &gw, &x, &p), 1e-12);
            let conv = base.with_edge_attr_weights();
            let ctx = GraphCtx::<f64>::new(&g);
            let f = Features::dense(x.clone());
            for e in [
                attr.clone(),
                attr.clone().into_shape_with_order(vec![ne]).unwrap(),
            ] {
                let inputs = Inputs::new(&ctx, &f).with_edge_attr(&e);
                let mut rng = StdRng::seed_from_u64(0);
                let (y, _) = apply(&conv, &inputs, &p, &State::new(), false, &mut rng).unwrap();
                assert_close(&y.into_dimensionality().unwrap(), &want, 1e-12);
            }
        }
    }

    #[test]
    fn edge_attr_weights_errors_are_coded() {
        let g = random_graph(4, 6, 1);
        let ctx = GraphCtx::<f64>::new(&g);
        let f = Features::dense(random_features(5, 3, 2));
        let conv = GCNConv::new(3, 2).with_edge_attr_weights();
        let mut rng = StdRng::seed_from_u64(0);
        let (p, st) = Layer::<f64>::init(&conv, &mut rng);
        let run = |inputs: &Inputs<'_, f64>| {
            apply(&conv, inputs, &p, &st, false, &mut StdRng::seed_from_u64(0)).unwrap_err()
        };
        let ne = g.num_edges();
        let e = run(&Inputs::new(&ctx, &f));
        assert_eq!(e.code(), "SHADE-E0405");
        assert_eq!(
            e.to_string(),
            format!(
                "GCNConv: edge features: expected `[{ne}]` or `[{ne}, 1]` edge weights, found \
                 none (give them with `Inputs::with_edge_attr`)"
            )
        );
        let wide = ndarray::ArrayD::zeros(ndarray::IxDyn(&[ne, 2]));
        let e = run(&Inputs::new(&ctx, &f).with_edge_attr(&wide));
        assert_eq!(e.code(), "SHADE-E0410");
        assert_eq!(
            e.to_string(),
            format!(
                "GCNConv: the edge weight array has shape [{ne}, 2] but the layer expects one \
                 weight per edge, [{ne}] or [{ne}, 1]"
            )
        );
        // One row per edge is checked for every layer before the call (a data error).
        let short = ndarray::ArrayD::zeros(ndarray::IxDyn(&[g.num_edges() - 1]));
        assert_eq!(
            run(&Inputs::new(&ctx, &f).with_edge_attr(&short)).code(),
            "SHADE-E0405"
        );
    }

    proptest! {
        #![proptest_config(crate::testing::proptest_config(32))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            check_layer_gradient(&GCNConv::new(3, 2), Some(&g), &x).map_err(TestCaseError::fail)?;
            check_layer_gradient(&GCNConv { improved: true, ..GCNConv::new(3, 4) }, Some(&g), &x).map_err(TestCaseError::fail)?;
            check_layer_gradient(&GCNConv { normalize: false, bias: false, ..GCNConv::new(3, 2) }, Some(&g), &x).map_err(TestCaseError::fail)?;
        }

        /// Edge weights from edge features: the gradient with respect to the weights
        /// too (positive weights, as a degree near zero has no stable difference).
        #[test]
        fn edge_attr_weight_gradient_matches_finite_differences(
            (g, x) in arb_graph_and_features(6, 10, 3),
            seed in 0u64..1000,
        ) {
            let w = random_features(g.num_edges(), 1, seed).mapv(|v| 1.1 + 0.9 * v).into_dyn();
            for conv in [
                GCNConv::new(3, 2),
                GCNConv { improved: true, ..GCNConv::new(3, 4) },
                GCNConv { add_self_loops: false, ..GCNConv::new(3, 2) },
                GCNConv { normalize: false, ..GCNConv::new(3, 2) },
            ] {
                GradCheck { edge_attr: Some(w.clone()), ..GradCheck::new(Some(&g), &x) }
                    .run(&conv.with_edge_attr_weights())
                    .map_err(TestCaseError::fail)?;
            }
        }
    }
}
