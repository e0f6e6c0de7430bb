//! `ChebConv` (Defferrard et al., 2016) with PyTorch Geometric's options and defaults.

use super::blocks::bad_option;
use crate::ctx::Float;
use crate::error::GnnResult;
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// The graph Laplacian of [`ChebConv`] (PyG's `normalization`): shade-graph's
/// [`LaplacianNorm`](shade_graph::LaplacianNorm), `L = D - A` (`None`),
/// `I - D^-1/2 A D^-1/2` (`Sym`, the default) or `I - D^-1 A` (`Rw`).
pub type ChebNorm = shade_graph::LaplacianNorm;

/// Chebyshev spectral convolution: `x' = Σ_{k<K} Θ_k T_k(L̂) x + b` with
/// `L̂ = 2L / λ_max - I`, `T_0 = x`, `T_1 = L̂ x`, `T_k = 2 L̂ T_{k-1} - T_{k-2}`.
///
/// As in PyG, self-loops are removed before the Laplacian is built, the degree `D` is
/// the weighted out-degree (by source), and messages flow from source to target.
/// Parameters (PyG's names): `lins.{k}.weight` `[out, in]` (Glorot, no bias) for
/// `k < K`, `bias` `[out]` (zeros). Options and defaults as PyG: `normalization = sym`,
/// `lambda_max = 2.0`, `bias = true`; `K >= 1` (checked).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChebConv {
    /// Input width.
    pub in_channels: usize,
    /// Output width.
    pub out_channels: usize,
    /// Chebyshev filter size `K`.
    pub k: usize,
    /// Which Laplacian.
    pub normalization: ChebNorm,
    /// Largest eigenvalue used for the rescaling.
    pub lambda_max: f64,
    /// Add a bias.
    pub bias: bool,
}

impl ChebConv {
    /// `in → out` with filter size `k`, symmetric normalisation, `λ_max = 2`.
    pub fn new(in_channels: usize, out_channels: usize, k: usize) -> Self {
        ChebConv {
            in_channels,
            out_channels,
            k,
            normalization: ChebNorm::Sym,
            lambda_max: 2.0,
            bias: true,
        }
    }

    /// Sets the Laplacian.
    pub fn with_normalization(mut self, n: ChebNorm) -> Self {
        self.normalization = n;
        self
    }
}

impl<T: Float> Layer<T> for ChebConv {
    fn name(&self) -> &'static str {
        "ChebConv"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let (i, o) = (self.in_channels, self.out_channels);
        let mut p = Params::new();
        for k in 0..self.k {
            p.push(
                format!("lins.{k}.weight"),
                init::glorot_uniform(rng, &[o, i], i, o),
            );
        }
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
        let g = env.graph("ChebConv")?;
        if self.k == 0 {
            return Err(bad_option("K", self.k, "at least 1"));
        }
        if !(self.lambda_max > 0.0 && self.lambda_max.is_finite()) {
            return Err(bad_option(
                "lambda_max",
                self.lambda_max,
                "a finite value > 0",
            ));
        }
        let mut out = x.linear(t, p.param("lins.0.weight")?)?;
        if self.k > 1 {
            // Built once per graph and normalisation (see `GraphCtx::scaled_laplacian`).
            let l = g.scaled_laplacian(self.normalization, self.lambda_max)?;
            let (a, vals) = (l.matrix, l.values.map(|v| t.constant(&v)));
            let lhat = |t: &mut Tape<'a, T>, h: Var| -> GnnResult<Var> {
                match vals {
                    None => Ok(t.spmm(a, h)?),
                    Some(v) => Ok(t.spmm_values(a, v, h)?),
                }
            };
            let mut t0 = x.dense(t)?;
            let mut t1 = lhat(t, t0)?;
            let y = Input::Dense(t1).linear(t, p.param("lins.1.weight")?)?;
            out = t.add(out, y)?;
            for k in 2..self.k {
                let l = lhat(t, t1)?;
                let l2 = t.scale(l, T::cst(2.0))?;
                let t2 = t.sub(l2, t0)?;
                let y = Input::Dense(t2).linear(t, p.param(&format!("lins.{k}.weight"))?)?;
                out = t.add(out, y)?;
                (t0, t1) = (t1, t2);
            }
        }
        if self.bias {
            out = t.add(out, p.get("bias")?)?;
        }
        Ok(out)
    }

    fn is_graph_layer(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::blocks::reference::{affine, edge_list, m, v};
    use super::*;
    use crate::testing::{
        arb_graph_and_features, assert_close, check_layer_gradient, eval_output, layer_output,
        proptest_config, random_features, random_graph,
    };
    use crate::{Features, GraphCtx, Inputs, apply};
    use ndarray::Array2;
    use proptest::prelude::*;
    use rand::SeedableRng;

    /// `L̂` as a dense matrix, from PyG's `get_laplacian` + `__norm__` step by step.
    fn lhat(g: &shade_graph::Graph, norm: ChebNorm, lambda: f64) -> Array2<f64> {
        let n = g.num_nodes();
        let edges: Vec<(usize, usize, f64)> =
            edge_list(g).into_iter().filter(|e| e.0 != e.1).collect();
        let mut deg = vec![0.0; n];
        for &(s, _, w) in &edges {
            deg[s] += w;
        }
        let mut l = Array2::zeros((n, n));
        for &(s, d, w) in &edges {
            let c = match norm {
                ChebNorm::None => w,
                ChebNorm::Sym => w / (deg[s].sqrt() * deg[d].sqrt()),
                ChebNorm::Rw => w / deg[s],
            };
            l[[d, s]] -= c;
        }
        for i in 0..n {
            l[[i, i]] += if norm == ChebNorm::None { deg[i] } else { 1.0 };
        }
        l * (2.0 / lambda) - Array2::<f64>::eye(n)
    }

    #[test]
    fn matches_dense_reference() {
        let g = random_graph(7, 15, 5);
        let ne = g.num_edges();
        let g = g
            .with_weights((0..ne).map(|e| 0.5 + 0.1 * e as f64).collect())
            .unwrap();
        let x = random_features(8, 3, 6);
        for conv in [
            ChebConv::new(3, 2, 1),
            ChebConv::new(3, 2, 2),
            ChebConv::new(3, 2, 4),
            ChebConv::new(3, 2, 3).with_normalization(ChebNorm::Rw),
            ChebConv {
                lambda_max: 3.0,
                ..ChebConv::new(3, 2, 3).with_normalization(ChebNorm::None)
            },
        ] {
            let (y, p) = layer_output(&conv, Some(&g), &x, 7);
            let l = lhat(&g, conv.normalization, conv.lambda_max);
            let mut ts = vec![x.clone()];
            if conv.k > 1 {
                ts.push(l.dot(&x));
            }
            for k in 2..conv.k {
                let next = l.dot(&ts[k - 1]) * 2.0 - &ts[k - 2];
                ts.push(next);
            }
            let mut r = Array2::zeros((8, 2));
            for (k, tk) in ts.iter().enumerate() {
                r = r + affine(tk, &m(&p, &format!("lins.{k}.weight")), None);
            }
            let r = r + v(&p, "bias");
            assert_close(&y, &r, 1e-12);
        }
    }

    /// The context builds `L̂` once per normalisation; another `λ_max` on the same
    /// context rescales the cached values and still gives the right matrix.
    #[test]
    fn laplacian_is_cached_per_normalisation_and_rescaled_for_other_lambdas() {
        let g = random_graph(6, 14, 3);
        let ne = g.num_edges();
        let g = g
            .with_weights((0..ne).map(|e| 0.3 + 0.2 * e as f64).collect())
            .unwrap();
        let ctx = GraphCtx::<f64>::new(&g);
        for norm in [ChebNorm::Sym, ChebNorm::None, ChebNorm::Rw] {
            let first = ctx.scaled_laplacian(norm, 2.0).unwrap().matrix as *const _;
            for lambda in [2.0, 1.5, 3.7, 2.0] {
                let l = ctx.scaled_laplacian(norm, lambda).unwrap();
                assert!(std::ptr::eq(l.matrix, first), "rebuilt for {lambda}");
                assert_eq!(l.values.is_some(), lambda != 2.0);
                let mut dense = l.matrix.csr().to_dense();
                if let Some(v) = &l.values {
                    let m = l.matrix.csr();
                    let mut k = 0;
                    for (i, row) in m.outer_iterator().enumerate() {
                        for (j, _) in row.iter() {
                            dense[[i, j]] = v[k];
                            k += 1;
                        }
                    }
                }
                let want = lhat(&g, norm, lambda);
                assert_close(&dense, &want, 1e-12);
            }
        }
        // Layers with different λ_max on one context each match the reference.
        let x = random_features(7, 3, 4);
        let f = Features::dense(x.clone());
        for lambda in [1.5, 2.0] {
            let conv = ChebConv {
                lambda_max: lambda,
                ..ChebConv::new(3, 2, 3)
            };
            let (want, p) = layer_output(&conv, Some(&g), &x, 1);
            let y = eval_output(&conv, &Inputs::new(&ctx, &f), &p);
            assert_close(&y.into_dimensionality().unwrap(), &want, 1e-12);
        }
    }

    #[test]
    fn invalid_k_is_a_coded_error() {
        let g = random_graph(3, 4, 1);
        let conv = ChebConv::new(3, 2, 0);
        let mut rng = StdRng::seed_from_u64(0);
        let (p, st) = Layer::<f64>::init(&conv, &mut rng);
        let ctx = GraphCtx::<f64>::new(&g);
        let f = Features::dense(random_features(4, 3, 2));
        let err = apply(&conv, &Inputs::new(&ctx, &f), &p, &st, false, &mut rng).unwrap_err();
        assert_eq!(err.code(), "SHADE-E0404");
        assert_eq!(
            err.to_string(),
            "ChebConv: invalid setting `K` = 0: expected at least 1"
        );
        let conv = ChebConv {
            lambda_max: -1.0,
            ..ChebConv::new(3, 2, 2)
        };
        let (p, st) = Layer::<f64>::init(&conv, &mut rng);
        let err = apply(&conv, &Inputs::new(&ctx, &f), &p, &st, false, &mut rng).unwrap_err();
        assert_eq!(
            err.to_string(),
            "ChebConv: invalid setting `lambda_max` = -1: expected a finite value > 0"
        );
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            check_layer_gradient(&ChebConv::new(3, 2, 3), Some(&g), &x).map_err(TestCaseError::fail)?;
            check_layer_gradient(&ChebConv::new(3, 2, 2).with_normalization(ChebNorm::Rw), Some(&g), &x).map_err(TestCaseError::fail)?;
        }
    }
}
