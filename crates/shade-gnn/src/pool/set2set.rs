//! `Set2Set` (Vinyals et al., 2016) readout, as PyTorch Geometric's.

use crate::ctx::Float;
use crate::error::{GnnError, GnnResult};
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::layers::blocks::{bad_option, lstm_cell, rows_per_node};
use crate::params::{ParamVars, Params, State, StateScope};
use ndarray::Array2;
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// Set2Set readout: starting from `q* = 0`, `processing_steps` times
/// `q = LSTM(q*)`, `e_v = ⟨x_v, q_{g(v)}⟩`, `a = softmax_g(e)`,
/// `r_g = Σ_{v in g} a_v x_v`, `q* = [q, r]`; the output is `q*` `[num_graphs, 2F]`.
///
/// Parameters (PyTorch's `LSTM(2F, F)` names): `lstm.weight_ih_l0` `[4F, 2F]`,
/// `lstm.weight_hh_l0` `[4F, F]`, `lstm.bias_ih_l0`, `lstm.bias_hh_l0` `[4F]` (uniform
/// `±1/√F`; gate order i, f, g, o). The LSTM cell is composed from matmul, sigmoid,
/// tanh, mul and add.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Set2Set {
    /// Feature width `F`.
    pub in_channels: usize,
    /// Number of LSTM steps (`>= 1`).
    pub processing_steps: usize,
}

impl Set2Set {
    /// Width `F`, `processing_steps` steps.
    pub fn new(in_channels: usize, processing_steps: usize) -> Self {
        Set2Set {
            in_channels,
            processing_steps,
        }
    }
}

impl<T: Float> Layer<T> for Set2Set {
    fn name(&self) -> &'static str {
        "Set2Set"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let f = self.in_channels;
        let b = 1.0 / (f.max(1) as f64).sqrt();
        let p = Params::new()
            .with("lstm.weight_ih_l0", init::uniform(rng, &[4 * f, 2 * f], b))
            .with("lstm.weight_hh_l0", init::uniform(rng, &[4 * f, f], b))
            .with("lstm.bias_ih_l0", init::uniform(rng, &[4 * f], b))
            .with("lstm.bias_hh_l0", init::uniform(rng, &[4 * f], b));
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
        let g = env.graph("Set2Set")?;
        if self.processing_steps == 0 {
            return Err(bad_option("processing_steps", 0, "at least 1"));
        }
        let f = self.in_channels;
        let x = x.dense(t)?;
        let xs = t.shape(x)?.to_vec();
        if xs.len() != 2 || xs[0] != g.num_nodes() {
            return Err(rows_per_node(&xs, g.num_nodes()));
        }
        if xs[1] != f {
            return Err(GnnError::InputShape {
                what: "input".into(),
                found: format!("{} features per node", xs[1]),
                param: None,
                expected: format!("in_channels = {f}"),
            });
        }
        let (b, batch) = (g.num_graphs(), g.batch());
        let mut h = t.constant(&Array2::<T>::zeros((b, f)));
        let mut c = h;
        let mut q_star = t.constant(&Array2::<T>::zeros((b, 2 * f)));
        let lstm = p.scope("lstm");
        for _ in 0..self.processing_steps {
            (h, c) = lstm_cell(t, q_star, (h, c), &lstm, f)?;
            let qb = t.index_select(h, batch)?;
            let e = t.mul(x, qb)?;
            let e = t.sum_axis(e, 1)?;
            let e = t.reshape(e, &[g.num_nodes(), 1])?;
            let a = t.segment_softmax(e, batch, b)?;
            let ax = t.mul(a, x)?;
            let r = t.scatter_add(ax, batch, b)?;
            q_star = t.concat(&[h, r], 1)?;
        }
        Ok(q_star)
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
    use crate::layers::blocks::reference::lstm;
    use crate::testing::{assert_close, check_layer_gradient, layer_output, proptest_config};
    use ndarray::{Axis, concatenate};
    use proptest::prelude::*;

    #[test]
    fn matches_dense_reference() {
        let (g, x) = batch3();
        let ind: Vec<usize> = g.graph_indicator().iter().map(|&i| i as usize).collect();
        for steps in [1, 3] {
            let (y, p) = layer_output(&Set2Set::new(3, steps), Some(&g), &x, 2);
            let (mut h, mut c) = (Array2::zeros((3, 3)), Array2::zeros((3, 3)));
            let mut qs = Array2::zeros((3, 6));
            for _ in 0..steps {
                (h, c) = lstm(&p, "lstm.", &qs, &h, &c);
                let mut r = Array2::zeros((3, 3));
                for gid in 0..3 {
                    let nodes: Vec<usize> = (0..x.nrows()).filter(|&u| ind[u] == gid).collect();
                    let e = |u: usize| (0..3).map(|k| x[[u, k]] * h[[gid, k]]).sum::<f64>();
                    let z: f64 = nodes.iter().map(|&u| e(u).exp()).sum();
                    for &u in &nodes {
                        for k in 0..3 {
                            r[[gid, k]] += e(u).exp() / z * x[[u, k]];
                        }
                    }
                }
                qs = concatenate(Axis(1), &[h.view(), r.view()]).unwrap();
            }
            assert_close(&y, &qs, 1e-12);
        }
    }

    #[test]
    fn zero_steps_and_wrong_width_are_coded_errors() {
        let (g, x) = batch3();
        let ctx = crate::GraphCtx::<f64>::new(&g);
        let f = crate::Features::dense(x);
        let mut rng = <StdRng as rand::SeedableRng>::seed_from_u64(0);
        for (s, code) in [
            (Set2Set::new(3, 0), "SHADE-E0404"),
            (Set2Set::new(2, 1), "SHADE-E0410"),
        ] {
            let (p, st) = Layer::<f64>::init(&s, &mut rng);
            let err = crate::apply(&s, &crate::Inputs::new(&ctx, &f), &p, &st, false, &mut rng)
                .unwrap_err();
            assert_eq!(err.code(), code);
        }
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_batch(3)) {
            check_layer_gradient(&Set2Set::new(3, 2), Some(&g), &x).map_err(TestCaseError::fail)?;
        }
    }
}
