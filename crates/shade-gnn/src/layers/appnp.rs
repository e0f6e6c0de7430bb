//! `APPNP` (Klicpera et al., 2019) with PyTorch Geometric's options and defaults,
//! edge dropout included.

use super::blocks::bad_option;
use crate::ctx::{Float, NormEdgeList};
use crate::error::GnnResult;
use crate::layer::{Env, Input, Layer};
use crate::params::{ParamVars, Params, State, StateScope};
use ndarray::{ArrayD, IxDyn};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};
use shade_graph::GcnNorm;

/// Approximate personalised propagation: `h_0 = x`, `h_k = (1 - α) Â_k h_{k-1} + α x`,
/// output `h_K`, with the GCN-normalised adjacency `Â` (or the plain weighted adjacency
/// when `normalize = false`), edge-dropped in training.
///
/// No parameters. Options and defaults as PyG: `K` and `alpha` given, `dropout = 0`,
/// `add_self_loops = true`, `normalize = true`; the normalised adjacency is cached per
/// graph by [`GraphCtx`](crate::GraphCtx).
///
/// **Edge dropout.** In training with `dropout = p > 0`, every step `k` draws a fresh
/// mask over the edges of `Â` and uses `Â_k` with each edge's coefficient zeroed with
/// probability `p` and the rest scaled by `1 / (1 - p)` (`Â_k = Â` otherwise). The
/// edges are those of PyG's normalised edge list: the added self-loops are edges too
/// and are dropped alike, and each copy of a multi-edge is drawn on its own (see
/// [`GraphCtx::normalized_edges`](crate::GraphCtx::normalized_edges)). The structure
/// stays the cached constant; only its values change, as a tape constant, so the
/// output stays differentiable in `x`. The masks come from `Env::rng` through the
/// core's dropout mask generator ([`keep_mask`](shade_autodiff::tensor::keep_mask),
/// one draw per step, resolution 2⁻³²). PyG's released `APPNP` re-applies dropout to the previous step's dropped
/// weights, so its masks compound over the steps (an edge survives step `k` with
/// probability `(1 - p)^k`, and its weight grows as `(1 - p)^-k`); that is a known bug
/// (pyg-team/pytorch_geometric#10783, fixes pending), and shade follows the paper's
/// and the proposed fix's independent masks. In evaluation mode `dropout` is ignored
/// and the output is that of `dropout = 0`, bit for bit.
///
/// Unlike PyG (which asserts edge weights there), `normalize = false` on an
/// unweighted graph drops the plain adjacency's unit weights.
///
/// ```
/// use rand::{SeedableRng, rngs::StdRng};
/// use shade_gnn::{apply, Features, GraphCtx, Inputs, Layer};
/// use shade_gnn::layers::APPNP;
/// let g = shade_graph::Graph::try_new(3, vec![0, 1, 2], vec![1, 2, 0])?;
/// let ctx = GraphCtx::<f64>::new(&g);
/// let x = Features::dense(ndarray::array![[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]);
/// let appnp = APPNP { dropout: 0.5, ..APPNP::new(10, 0.1) };
/// let (p, st) = Layer::<f64>::init(&appnp, &mut StdRng::seed_from_u64(0));
/// let inputs = Inputs::new(&ctx, &x);
/// let mut rng = StdRng::seed_from_u64(1);
/// let (train, _) = apply(&appnp, &inputs, &p, &st, true, &mut rng)?;
/// let (eval, _) = apply(&appnp, &inputs, &p, &st, false, &mut rng)?;
/// let plain = APPNP::new(10, 0.1);
/// assert_eq!(eval, apply(&plain, &inputs, &p, &st, false, &mut rng)?.0);
/// assert_ne!(train, eval);
/// # Ok::<(), shade_gnn::GnnError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct APPNP {
    /// Number of propagation steps `K`.
    pub k: usize,
    /// Teleport probability `α` in `[0, 1]`.
    pub alpha: f64,
    /// Edge dropout probability in `[0, 1)`, used in training only.
    pub dropout: f64,
    /// Add missing self-loops before normalising.
    pub add_self_loops: bool,
    /// GCN-normalise the adjacency.
    pub normalize: bool,
}

impl APPNP {
    /// `K` steps with teleport probability `alpha`, no edge dropout.
    pub fn new(k: usize, alpha: f64) -> Self {
        APPNP {
            k,
            alpha,
            dropout: 0.0,
            add_self_loops: true,
            normalize: true,
        }
    }
}

/// The values of the matrix of `edges` for one step of edge dropout: every listed
/// edge's coefficient `coef` kept with probability `1 - p` (one fresh mask from `rng`)
/// and scaled by `1 / (1 - p)`, summed into its stored entry.
fn dropped_values<T: Float>(
    edges: &NormEdgeList<T>,
    coef: &[T],
    p: f64,
    rng: &mut StdRng,
) -> ArrayD<T> {
    let keep = shade_autodiff::tensor::keep_mask(coef.len(), p, rng);
    let scale = T::cst(1.0 / (1.0 - p));
    let mut v = vec![T::zero(); edges.nnz];
    for ((&pos, &w), kept) in edges.position.iter().zip(coef).zip(keep) {
        if kept {
            v[pos] += w * scale;
        }
    }
    ArrayD::from_shape_vec(IxDyn(&[v.len()]), v).expect("one value per stored entry")
}

impl<T: Float> Layer<T> for APPNP {
    fn name(&self) -> &'static str {
        "APPNP"
    }

    fn init(&self, _rng: &mut StdRng) -> (Params<T>, State<T>) {
        (Params::new(), State::new())
    }

    fn forward<'a>(
        &self,
        t: &mut Tape<'a, T>,
        env: &mut Env<'a, '_, T>,
        x: Input<'a, T>,
        _p: ParamVars<'_>,
        _st: StateScope<'_, T>,
    ) -> GnnResult<Var> {
        let g = env.graph("APPNP")?;
        if !(0.0..=1.0).contains(&self.alpha) {
            return Err(bad_option("alpha", self.alpha, "a value in [0, 1]"));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(bad_option("dropout", self.dropout, "a value in [0, 1)"));
        }
        // The normalised adjacency, or (unnormalised) the weighted adjacency, whose
        // edges the normalisation without self-loops lists with their weights.
        let opts = GcnNorm {
            add_self_loops: self.normalize && self.add_self_loops,
            ..GcnNorm::default()
        };
        let a = if self.normalize {
            g.normalized_adjacency(opts)
        } else {
            g.edges().weighted_sum_matrix()
        };
        // Edge dropout: the cached edge list of the same matrix, new values per step.
        let drop = (env.training && self.dropout > 0.0).then(|| {
            let list = g.normalized_edges(opts);
            let coef = if self.normalize {
                &list.coef
            } else {
                &list.weights
            };
            (g.normalized_adjacency(opts), list, coef)
        });
        let x = x.dense(t)?;
        let ax = t.scale(x, T::cst(self.alpha))?;
        let mut h = x;
        for _ in 0..self.k {
            let p = match drop {
                None => t.spmm(a, h)?,
                Some((m, list, coef)) => {
                    let v = dropped_values(list, coef, self.dropout, env.rng);
                    let v = t.constant(&v);
                    t.spmm_values(m, v, h)?
                }
            };
            let p = t.scale(p, T::cst(1.0 - self.alpha))?;
            h = t.add(p, ax)?;
        }
        Ok(h)
    }

    fn is_graph_layer(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::blocks::dense_ops::gcn;
    use super::super::blocks::reference::edge_list;
    use super::*;
    use crate::testing::{
        GradCheck, arb_graph_and_features, assert_close, check_layer_gradient, dense_adjacency,
        layer_output, proptest_config, random_features, random_graph,
    };
    use crate::{Features, GraphCtx, Inputs, apply};
    use ndarray::Array2;
    use proptest::prelude::*;
    use rand::SeedableRng;

    /// The layer's output in training or evaluation mode, drawing from `rng`.
    fn run(
        layer: &APPNP,
        g: &shade_graph::Graph,
        x: &Array2<f64>,
        training: bool,
        rng: &mut StdRng,
    ) -> crate::GnnResult<ArrayD<f64>> {
        let ctx = GraphCtx::<f64>::new(g);
        let f = Features::dense(x.clone());
        let (p, st) = (Params::new(), State::new());
        Ok(apply(layer, &Inputs::new(&ctx, &f), &p, &st, training, rng)?.0)
    }

    /// The propagation edges `(src, dst, coefficient)` from PyG's definitions with plain
    /// loops: `gcn_norm` (non-loop edges, then one self-loop per node carrying an
    /// existing loop's weight, degrees by destination), or the raw weighted edges.
    fn reference_edges(g: &shade_graph::Graph, layer: &APPNP) -> Vec<(usize, usize, f64)> {
        let n = g.num_nodes();
        if !layer.normalize {
            return edge_list(g);
        }
        let mut entries = Vec::new();
        if layer.add_self_loops {
            let mut loop_w = vec![1.0; n];
            for (s, d, w) in edge_list(g) {
                if s == d {
                    loop_w[s] = w;
                } else {
                    entries.push((s, d, w));
                }
            }
            entries.extend((0..n).map(|v| (v, v, loop_w[v])));
        } else {
            entries = edge_list(g);
        }
        let mut deg = vec![0.0; n];
        for &(_, d, w) in &entries {
            deg[d] += w;
        }
        let is = |d: f64| if d == 0.0 { 0.0 } else { 1.0 / d.sqrt() };
        entries
            .into_iter()
            .map(|(s, d, w)| (s, d, is(deg[s]) * w * is(deg[d])))
            .collect()
    }

    /// APPNP with the given per-step edge masks, as dense products.
    fn reference_with_masks(
        edges: &[(usize, usize, f64)],
        masks: &[Vec<bool>],
        layer: &APPNP,
        x: &Array2<f64>,
    ) -> Array2<f64> {
        let n = x.nrows();
        let mut h = x.clone();
        for mask in masks {
            let mut a = Array2::<f64>::zeros((n, n));
            for (&(s, d, w), &kept) in edges.iter().zip(mask) {
                if kept {
                    a[[d, s]] += w / (1.0 - layer.dropout);
                }
            }
            h = a.dot(&h) * (1.0 - layer.alpha) + x * layer.alpha;
        }
        h
    }

    /// A weighted graph with an existing self-loop, a multi-edge and an isolated node.
    fn weighted_graph() -> shade_graph::Graph {
        let g = random_graph(9, 30, 11);
        let w = (0..g.num_edges()).map(|e| 0.5 + 0.1 * e as f64).collect();
        g.with_weights(w).unwrap()
    }

    #[test]
    fn matches_dense_reference() {
        let g = random_graph(7, 15, 5);
        let x = random_features(8, 3, 6);
        for layer in [
            APPNP::new(10, 0.1),
            APPNP::new(0, 0.1),
            APPNP {
                add_self_loops: false,
                ..APPNP::new(3, 0.3)
            },
            APPNP {
                normalize: false,
                ..APPNP::new(2, 0.5)
            },
        ] {
            let (y, _) = layer_output(&layer, Some(&g), &x, 7);
            let a = if layer.normalize {
                gcn(&g, layer.add_self_loops)
            } else {
                dense_adjacency(&g)
            };
            let mut h = x.clone();
            for _ in 0..layer.k {
                h = a.dot(&h) * (1.0 - layer.alpha) + &x * layer.alpha;
            }
            assert_close(&y, &h, 1e-12);
        }
    }

    #[test]
    fn edge_dropout_matches_dense_reference_with_the_same_masks() {
        for g in [random_graph(7, 15, 5), weighted_graph()] {
            let x = random_features(g.num_nodes(), 3, 6);
            for layer in [
                APPNP {
                    dropout: 0.3,
                    ..APPNP::new(4, 0.1)
                },
                APPNP {
                    dropout: 0.5,
                    add_self_loops: false,
                    ..APPNP::new(3, 0.2)
                },
                APPNP {
                    dropout: 0.2,
                    normalize: false,
                    ..APPNP::new(2, 0.5)
                },
            ] {
                let y = run(&layer, &g, &x, true, &mut StdRng::seed_from_u64(43)).unwrap();
                let y = y.into_dimensionality().unwrap();
                // The masks re-derived from the same seed: one draw per step, one entry
                // per edge of PyG's normalised edge list (added self-loops included).
                let edges = reference_edges(&g, &layer);
                let mut rng = StdRng::seed_from_u64(43);
                let masks: Vec<Vec<bool>> = (0..layer.k)
                    .map(|_| {
                        shade_autodiff::tensor::keep_mask(edges.len(), layer.dropout, &mut rng)
                    })
                    .collect();
                assert_close(&y, &reference_with_masks(&edges, &masks, &layer, &x), 1e-12);
                // Every step has its own mask, and some edges are dropped.
                for k in 1..masks.len() {
                    assert_ne!(masks[k - 1], masks[k], "steps {} and {k}", k - 1);
                }
                assert!(masks.iter().all(|m| m.contains(&false)));
                // The first mask at every step is not what the layer computes.
                let same = vec![masks[0].clone(); layer.k];
                let r = reference_with_masks(&edges, &same, &layer, &x);
                assert!((&y - &r).iter().any(|d| d.abs() > 1e-6));
            }
        }
    }

    #[test]
    fn masks_differ_between_calls_and_evaluation_ignores_dropout() {
        let g = random_graph(8, 20, 3);
        let x = random_features(9, 4, 4);
        let layer = APPNP {
            dropout: 0.5,
            ..APPNP::new(5, 0.1)
        };
        let mut rng = StdRng::seed_from_u64(7);
        let first = run(&layer, &g, &x, true, &mut rng).unwrap();
        let second = run(&layer, &g, &x, true, &mut rng).unwrap();
        assert_ne!(first, second);
        // The same seed gives the same masks.
        assert_eq!(
            first,
            run(&layer, &g, &x, true, &mut StdRng::seed_from_u64(7)).unwrap()
        );
        // Evaluation: the output of `dropout = 0`, bit for bit, and no draw.
        let plain = APPNP::new(5, 0.1);
        let mut a = StdRng::seed_from_u64(1);
        let eval = run(&layer, &g, &x, false, &mut a).unwrap();
        assert_eq!(eval, run(&plain, &g, &x, false, &mut rng).unwrap());
        assert_eq!(eval, run(&plain, &g, &x, true, &mut rng).unwrap());
        assert_eq!(a, StdRng::seed_from_u64(1));
    }

    #[test]
    fn bad_options_are_coded_errors() {
        let g = random_graph(3, 4, 1);
        let x = random_features(4, 3, 2);
        let mut rng = StdRng::seed_from_u64(0);
        for layer in [
            APPNP::new(2, 1.5),
            APPNP {
                dropout: 1.0,
                ..APPNP::new(2, 0.1)
            },
            APPNP {
                dropout: -0.1,
                ..APPNP::new(2, 0.1)
            },
            APPNP {
                dropout: f64::NAN,
                ..APPNP::new(2, 0.1)
            },
        ] {
            for training in [false, true] {
                let err = run(&layer, &g, &x, training, &mut rng).unwrap_err();
                assert_eq!(err.code(), "SHADE-E0404", "{layer:?}");
                let (name, value, range) = if (0.0..=1.0).contains(&layer.alpha) {
                    ("dropout", layer.dropout, "[0, 1)")
                } else {
                    ("alpha", layer.alpha, "[0, 1]")
                };
                assert_eq!(
                    err.to_string(),
                    format!(
                        "APPNP: invalid setting `{name}` = {value}: expected a value in {range}"
                    )
                );
            }
        }
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            check_layer_gradient(&APPNP::new(5, 0.1), Some(&g), &x).map_err(TestCaseError::fail)?;
            // Training with edge dropout: the same masks in every evaluation.
            for layer in [
                APPNP { dropout: 0.5, ..APPNP::new(5, 0.1) },
                APPNP { dropout: 0.3, normalize: false, ..APPNP::new(3, 0.2) },
            ] {
                GradCheck { training: true, ..GradCheck::new(Some(&g), &x) }
                    .run(&layer)
                    .map_err(TestCaseError::fail)?;
            }
        }
    }
}
