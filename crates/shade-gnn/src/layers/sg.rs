//! `SGConv` (Wu et al., 2019) with PyTorch Geometric's options and defaults.

use super::blocks::{linear, rows_per_node};
use crate::ctx::Float;
use crate::error::GnnResult;
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};
use shade_graph::GcnNorm;

/// Simplified graph convolution: `x' = Θ (Â^K x) + b` with the GCN-normalised
/// adjacency `Â = D^-1/2 (A + I) D^-1/2`.
///
/// Parameters (PyG's names): `lin.weight` `[out, in]`, `lin.bias` `[out]` (PyTorch's
/// `Linear` init). Options and defaults as PyG: `K = 1`, `cached = false`,
/// `add_self_loops = true`, `bias = true`. With `cached`, `Â^K x` is kept in the state
/// entry `cache` on the first call and reused afterwards (PyG's transductive caching:
/// the input is then treated as a constant, as in PyG). Without caching the transform
/// runs first when it narrows the features, and sparse input stays sparse.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SGConv {
    /// Input width.
    pub in_channels: usize,
    /// Output width.
    pub out_channels: usize,
    /// Number of hops `K`.
    pub k: usize,
    /// Cache `Â^K x` in the state.
    pub cached: bool,
    /// Add missing self-loops before normalising.
    pub add_self_loops: bool,
    /// Add a bias.
    pub bias: bool,
}

impl SGConv {
    /// `in → out` with PyG's defaults (`K = 1`).
    pub fn new(in_channels: usize, out_channels: usize) -> Self {
        SGConv {
            in_channels,
            out_channels,
            k: 1,
            cached: false,
            add_self_loops: true,
            bias: true,
        }
    }

    /// Sets the number of hops.
    pub fn with_k(mut self, k: usize) -> Self {
        self.k = k;
        self
    }

    /// Sets caching.
    pub fn with_cached(mut self, cached: bool) -> Self {
        self.cached = cached;
        self
    }
}

impl<T: Float> Layer<T> for SGConv {
    fn name(&self) -> &'static str {
        "SGConv"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let (i, o) = (self.in_channels, self.out_channels);
        let mut p = Params::new().with("lin.weight", init::torch_linear(rng, &[o, i], i));
        if self.bias {
            p.push("lin.bias", init::torch_linear(rng, &[o], i));
        }
        let s = if self.cached {
            State::new().with("cache", init::zeros(&[0]))
        } else {
            State::new()
        };
        (p, s)
    }

    fn forward<'a>(
        &self,
        t: &mut Tape<'a, T>,
        env: &mut Env<'a, '_, T>,
        x: Input<'a, T>,
        p: ParamVars<'_>,
        mut st: StateScope<'_, T>,
    ) -> GnnResult<Var> {
        let g = env.graph("SGConv")?;
        let a = g.normalized_adjacency(GcnNorm {
            add_self_loops: self.add_self_loops,
            ..GcnNorm::default()
        });
        let (n, f) = (x.rows(t)?, x.cols(t)?);
        if self.cached {
            let hit = st.get("cache")?.shape() == [n, f];
            let h = if hit {
                t.constant(st.get("cache")?)
            } else {
                let mut h = x.dense(t)?;
                for _ in 0..self.k {
                    h = t.spmm(a, h)?;
                }
                // A cache is a constant by design (PyG's `cached=True`): detached.
                let d = t.detach(h)?;
                *st.get_mut("cache")? = t.value(d)?.to_owned();
                h
            };
            return linear(t, Input::Dense(h), &p, "lin", self.bias);
        }
        if n != a.cols() {
            return Err(rows_per_node(&[n, f], a.cols()));
        }
        let first = matches!(x, Input::Sparse(_)) || self.out_channels < f;
        let mut h = if first {
            x.linear(t, p.param("lin.weight")?)?
        } else {
            x.dense(t)?
        };
        for _ in 0..self.k {
            h = t.spmm(a, h)?;
        }
        if !first {
            h = Input::Dense(h).linear(t, p.param("lin.weight")?)?;
        }
        if self.bias {
            h = t.add(h, p.get("lin.bias")?)?;
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
    use super::super::blocks::reference::{affine, m, v};
    use super::*;
    use crate::testing::{
        GradCheck, arb_graph_and_features, assert_close, check_layer_gradient, layer_output,
        proptest_config, random_features, random_graph,
    };
    use crate::{Features, GraphCtx, Inputs, apply};
    use proptest::prelude::*;
    use rand::SeedableRng;

    #[test]
    fn matches_dense_reference() {
        let g = random_graph(7, 15, 5);
        let x = random_features(8, 3, 6);
        for conv in [
            SGConv::new(3, 2),
            SGConv::new(3, 4).with_k(3),
            SGConv {
                add_self_loops: false,
                ..SGConv::new(3, 2).with_k(2)
            },
            SGConv::new(3, 2).with_k(2).with_cached(true),
        ] {
            let (y, p) = layer_output(&conv, Some(&g), &x, 7);
            let a = gcn(&g, conv.add_self_loops);
            let mut h = x.clone();
            for _ in 0..conv.k {
                h = a.dot(&h);
            }
            let r = affine(&h, &m(&p, "lin.weight"), Some(&v(&p, "lin.bias")));
            assert_close(&y, &r, 1e-12);
        }
    }

    #[test]
    fn cached_reuses_the_propagated_features() {
        let g = random_graph(5, 8, 1);
        let ctx = GraphCtx::<f64>::new(&g);
        let conv = SGConv::new(3, 2).with_k(2).with_cached(true);
        let mut rng = StdRng::seed_from_u64(0);
        let (p, st) = Layer::<f64>::init(&conv, &mut rng);
        let x1 = Features::dense(random_features(6, 3, 2));
        let x2 = Features::dense(random_features(6, 3, 3));
        let (y1, st) = apply(&conv, &Inputs::new(&ctx, &x1), &p, &st, false, &mut rng).unwrap();
        assert_eq!(st.get("cache").unwrap().shape(), &[6, 3]);
        // The second call ignores the new features (PyG's `cached=True`).
        let (y2, _) = apply(&conv, &Inputs::new(&ctx, &x2), &p, &st, false, &mut rng).unwrap();
        assert_eq!(y1, y2);
        let (y3, _) = apply(
            &SGConv::new(3, 2).with_k(2),
            &Inputs::new(&ctx, &x2),
            &p,
            &State::new(),
            false,
            &mut rng,
        )
        .unwrap();
        assert!(y3 != y1);
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            check_layer_gradient(&SGConv::new(3, 2).with_k(2), Some(&g), &x).map_err(TestCaseError::fail)?;
            check_layer_gradient(&SGConv::new(3, 4).with_k(3), Some(&g), &x).map_err(TestCaseError::fail)?;
            // Cached: the propagated input is a constant; the parameters' gradient holds.
            GradCheck { check_input: false, ..GradCheck::new(Some(&g), &x) }
                .run(&SGConv::new(3, 2).with_k(2).with_cached(true)).map_err(TestCaseError::fail)?;
        }
    }
}
