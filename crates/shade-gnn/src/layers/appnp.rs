//! `APPNP` (Klicpera et al., 2019) with PyTorch Geometric's options and defaults.

use super::blocks::bad_option;
use crate::ctx::Float;
use crate::layer::{Env, Input, Layer};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::AdResult;
use shade_autodiff::tensor::{Tape, Var};

/// Approximate personalised propagation: `h_0 = x`, `h_k = (1 - α) Â h_{k-1} + α x`,
/// output `h_K`, with the GCN-normalised adjacency `Â` (or the plain weighted adjacency
/// when `normalize = false`).
///
/// No parameters. Options and defaults as PyG: `K` and `alpha` given,
/// `add_self_loops = true`, `normalize = true`; the normalised adjacency is cached per
/// graph by [`GraphCtx`](crate::GraphCtx). PyG's edge `dropout` is not supported.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct APPNP {
    /// Number of propagation steps `K`.
    pub k: usize,
    /// Teleport probability `α` in `[0, 1]`.
    pub alpha: f64,
    /// Add missing self-loops before normalising.
    pub add_self_loops: bool,
    /// GCN-normalise the adjacency.
    pub normalize: bool,
}

impl APPNP {
    /// `K` steps with teleport probability `alpha`.
    pub fn new(k: usize, alpha: f64) -> Self {
        APPNP {
            k,
            alpha,
            add_self_loops: true,
            normalize: true,
        }
    }
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
    ) -> AdResult<Var> {
        let g = env.graph("APPNP")?;
        if !(0.0..=1.0).contains(&self.alpha) {
            return Err(bad_option(
                "APPNP",
                format!("alpha = {} (need 0 <= alpha <= 1)", self.alpha),
            ));
        }
        let a = if self.normalize {
            g.gcn_adjacency(false, self.add_self_loops)
        } else {
            g.edges().weighted_sum_matrix()
        };
        let x = x.dense(t)?;
        let ax = t.scale(x, T::cst(self.alpha))?;
        let mut h = x;
        for _ in 0..self.k {
            let p = t.spmm(a, h)?;
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
    use super::*;
    use crate::testing::{
        arb_graph_and_features, assert_close, check_layer_gradient, dense_adjacency, layer_output,
        proptest_config, random_features, random_graph,
    };
    use crate::{Features, GraphCtx, Inputs, apply};
    use proptest::prelude::*;
    use rand::SeedableRng;

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
    fn alpha_out_of_range_is_a_coded_error() {
        let g = random_graph(3, 4, 1);
        let layer = APPNP::new(2, 1.5);
        let mut rng = StdRng::seed_from_u64(0);
        let ctx = GraphCtx::<f64>::new(&g);
        let f = Features::dense(random_features(4, 3, 2));
        let err = apply(
            &layer,
            &Inputs::new(&ctx, &f),
            &Params::new(),
            &State::new(),
            false,
            &mut rng,
        )
        .unwrap_err();
        assert_eq!(err.code(), "SHADE-E0114");
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            check_layer_gradient(&APPNP::new(5, 0.1), Some(&g), &x).map_err(TestCaseError::fail)?;
        }
    }
}
