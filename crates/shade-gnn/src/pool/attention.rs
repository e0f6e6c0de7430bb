//! `GlobalAttentionPool` (Li et al., 2016; PyG's `GlobalAttention` /
//! `AttentionalAggregation`).

use crate::ctx::Float;
use crate::error::{GnnError, GnnResult};
use crate::layer::{Env, Input, Layer, forward_sublayer};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// Soft-attention readout: `out[g] = Σ_{v in g} softmax_g(h_gate(x_v)) ⊙ h(x_v)`, the
/// softmax running over the nodes of each graph (per column of the gate).
///
/// Parameters: the gate network's under `gate_nn.` (output `[N, 1]` or `[N, F']`) and,
/// if given, the feature network's under `nn.` (output `[N, F']`; identity otherwise).
pub struct GlobalAttentionPool<T: Float> {
    /// The gate network `h_gate`.
    pub gate_nn: Box<dyn Layer<T>>,
    /// The feature network `h` (identity when absent).
    pub nn: Option<Box<dyn Layer<T>>>,
}

impl<T: Float> std::fmt::Debug for GlobalAttentionPool<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GlobalAttentionPool")
            .field("gate_nn", &self.gate_nn.name())
            .field("nn", &self.nn.as_ref().map(|n| n.name()))
            .finish()
    }
}

impl<T: Float> GlobalAttentionPool<T> {
    /// Attention readout with gate network `gate_nn` and identity features.
    pub fn new(gate_nn: impl Layer<T> + 'static) -> Self {
        GlobalAttentionPool {
            gate_nn: Box::new(gate_nn),
            nn: None,
        }
    }

    /// Transforms the features with `nn` before weighting them.
    pub fn with_nn(mut self, nn: impl Layer<T> + 'static) -> Self {
        self.nn = Some(Box::new(nn));
        self
    }
}

impl<T: Float> Layer<T> for GlobalAttentionPool<T> {
    fn name(&self) -> &'static str {
        "GlobalAttentionPool"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let (mut p, mut s) = (Params::new(), State::new());
        let (gp, gs) = self.gate_nn.init(rng);
        p.extend_prefixed("gate_nn", gp);
        s.extend_prefixed("gate_nn", gs);
        if let Some(nn) = &self.nn {
            let (np, ns) = nn.init(rng);
            p.extend_prefixed("nn", np);
            s.extend_prefixed("nn", ns);
        }
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
        let g = env.graph("GlobalAttentionPool")?;
        let (gate, h) = env.without_graph(|env| {
            let (gp, gs) = (p.scope("gate_nn"), st.scope("gate_nn"));
            let gate = forward_sublayer(&*self.gate_nn, t, env, x, gp, gs)?;
            let h = match &self.nn {
                Some(nn) => forward_sublayer(&**nn, t, env, x, p.scope("nn"), st.scope("nn"))?,
                None => x.dense(t)?,
            };
            Ok::<_, GnnError>((gate, h))
        })?;
        let (gs, hs) = (t.shape(gate)?.to_vec(), t.shape(h)?.to_vec());
        let n = g.num_nodes();
        if gs.len() != 2
            || hs.len() != 2
            || gs[0] != n
            || hs[0] != n
            || (gs[1] != 1 && gs[1] != hs[1])
        {
            return Err(GnnError::InputShape {
                what: "the output of `gate_nn`".into(),
                found: format!("shape {gs:?}"),
                param: None,
                expected: format!(
                    "[{n}, 1] or [{n}, F] beside the node features of shape {hs:?} \
                     (one row per node)"
                ),
            });
        }
        let a = t.segment_softmax(gate, g.batch(), g.num_graphs())?;
        let w = t.mul(a, h)?;
        Ok(t.scatter_add(w, g.batch(), g.num_graphs())?)
    }

    fn is_graph_layer(&self) -> bool {
        true
    }
    fn is_readout(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{arb_batch, batch3};
    use super::*;
    use crate::layers::blocks::reference::{affine, m, v};
    use crate::layers::{Activation, Chain, Dense};
    use crate::testing::{assert_close, check_layer_gradient, layer_output, proptest_config};
    use ndarray::Array2;
    use proptest::prelude::*;

    fn gate() -> Chain<f64> {
        Chain::new()
            .push(Dense::new(3, 4))
            .push(Activation::Tanh)
            .push(Dense::new(4, 1))
    }

    #[test]
    fn matches_dense_reference() {
        let (g, x) = batch3();
        let ind: Vec<usize> = g.graph_indicator().iter().map(|&i| i as usize).collect();
        for with_nn in [false, true] {
            let pool = if with_nn {
                GlobalAttentionPool::new(gate()).with_nn(Dense::new(3, 2))
            } else {
                GlobalAttentionPool::new(gate())
            };
            let (y, p) = layer_output(&pool, Some(&g), &x, 1);
            let hg = affine(
                &x,
                &m(&p, "gate_nn.0.weight"),
                Some(&v(&p, "gate_nn.0.bias")),
            )
            .mapv(f64::tanh);
            let s = affine(
                &hg,
                &m(&p, "gate_nn.2.weight"),
                Some(&v(&p, "gate_nn.2.bias")),
            );
            let h = if with_nn {
                affine(&x, &m(&p, "nn.weight"), Some(&v(&p, "nn.bias")))
            } else {
                x.clone()
            };
            let mut r = Array2::zeros((3, h.ncols()));
            for gid in 0..3 {
                let nodes: Vec<usize> = (0..x.nrows()).filter(|&u| ind[u] == gid).collect();
                let z: f64 = nodes.iter().map(|&u| s[[u, 0]].exp()).sum();
                for &u in &nodes {
                    for c in 0..h.ncols() {
                        r[[gid, c]] += s[[u, 0]].exp() / z * h[[u, c]];
                    }
                }
            }
            assert_close(&y, &r, 1e-12);
        }
    }

    #[test]
    fn misshapen_gate_is_a_coded_error() {
        let (g, x) = batch3();
        let pool = GlobalAttentionPool::new(Dense::new(3, 2)).with_nn(Dense::new(3, 4));
        let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(0);
        let (p, st) = pool.init(&mut rng);
        let ctx = crate::GraphCtx::<f64>::new(&g);
        let f = crate::Features::dense(x);
        let err = crate::apply(
            &pool,
            &crate::Inputs::new(&ctx, &f),
            &p,
            &st,
            false,
            &mut rng,
        )
        .unwrap_err();
        assert_eq!(err.code(), "SHADE-E0410");
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_batch(3)) {
            check_layer_gradient(&GlobalAttentionPool::new(gate()), Some(&g), &x).map_err(TestCaseError::fail)?;
            check_layer_gradient(&GlobalAttentionPool::new(Dense::new(3, 2)).with_nn(Dense::new(3, 2)), Some(&g), &x).map_err(TestCaseError::fail)?;
        }
    }
}
