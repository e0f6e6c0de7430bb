//! `GatedGraphConv` (Li et al., 2016) with PyTorch Geometric's options and defaults.

use super::blocks::gru_cell;
use crate::ctx::Float;
use crate::error::{GnnError, GnnResult};
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::message::{Aggr, Message, propagate};
use crate::params::{ParamVars, Params, State, StateScope};
use ndarray::Array2;
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// Gated graph sequence layer: `h_0 = x` (zero-padded to `out` columns), then for
/// `l < num_layers`: `m = aggr_{j -> i} e_ji · h_j Θ_l` and `h = GRU(m, h)`.
///
/// Parameters (PyG's names): `weight` `[num_layers, out, out]` (uniform `±1/√out`),
/// the GRU cell's `rnn.weight_ih` / `rnn.weight_hh` `[3·out, out]` and, with `bias`,
/// `rnn.bias_ih` / `rnn.bias_hh` `[3·out]` (PyTorch's `GRUCell` init; gate order r, z,
/// n). Options and defaults as PyG: `aggr = add`, `bias = true`; without `bias` the
/// cell has no biases (PyTorch's `GRUCell(bias=False)`). The input width must not exceed
/// `out` (checked). Edge weights of the graph scale the messages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GatedGraphConv {
    /// Output (and state) width.
    pub out_channels: usize,
    /// Number of propagation steps.
    pub num_layers: usize,
    /// Aggregation.
    pub aggr: Aggr,
    /// Biases `rnn.bias_ih` / `rnn.bias_hh` in the GRU cell.
    pub bias: bool,
}

impl GatedGraphConv {
    /// `out` channels, `num_layers` steps, sum aggregation, GRU biases.
    pub fn new(out_channels: usize, num_layers: usize) -> Self {
        GatedGraphConv {
            out_channels,
            num_layers,
            aggr: Aggr::Sum,
            bias: true,
        }
    }

    /// Sets whether the GRU cell has biases.
    pub fn with_bias(mut self, bias: bool) -> Self {
        self.bias = bias;
        self
    }
}

impl<T: Float> Layer<T> for GatedGraphConv {
    fn name(&self) -> &'static str {
        "GatedGraphConv"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let (o, l) = (self.out_channels, self.num_layers);
        let b = 1.0 / (o.max(1) as f64).sqrt();
        let mut p = Params::new()
            .with("weight", init::uniform(rng, &[l, o, o], b))
            .with("rnn.weight_ih", init::uniform(rng, &[3 * o, o], b))
            .with("rnn.weight_hh", init::uniform(rng, &[3 * o, o], b));
        if self.bias {
            p.push("rnn.bias_ih", init::uniform(rng, &[3 * o], b));
            p.push("rnn.bias_hh", init::uniform(rng, &[3 * o], b));
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
        let g = env.graph("GatedGraphConv")?;
        let o = self.out_channels;
        let (n, f) = (x.rows(t)?, x.cols(t)?);
        if f > o {
            return Err(GnnError::InputShape {
                what: "input".into(),
                found: format!("{f} features per node"),
                param: None,
                expected: format!("at most out_channels = {o}"),
            });
        }
        let mut h = x.dense(t)?;
        if f < o {
            let z = t.constant(&Array2::<T>::zeros((n, o - f)));
            h = t.concat(&[h, z], 1)?;
        }
        let w = p.param("weight")?;
        let ws = t.shape(w.var)?.to_vec();
        if ws != [self.num_layers, o, o] {
            return Err(GnnError::ParamShape {
                name: w.name.unwrap_or("weight").to_string(),
                expected: vec![self.num_layers, o, o],
                found: ws,
            });
        }
        let w = w.var;
        let rnn = p.scope("rnn");
        for l in 0..self.num_layers {
            let wl = t.narrow(w, 0, l, 1)?;
            let wl = t.reshape(wl, &[o, o])?;
            let m = t.matmul(h, wl)?;
            let m = propagate(t, g.edges(), m, Message::WeightedSrc, self.aggr)?;
            h = gru_cell(t, m, h, &rnn, o, self.bias)?;
        }
        Ok(h)
    }

    fn is_graph_layer(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::blocks::reference::gru;
    use super::*;
    use crate::testing::{
        arb_graph_and_features, assert_close, check_layer_gradient, dense_adjacency, layer_output,
        proptest_config, random_features, random_graph,
    };
    use crate::{Features, GraphCtx, Inputs, apply};
    use ndarray::{Ix3, s};
    use proptest::prelude::*;
    use rand::SeedableRng;

    #[test]
    fn matches_dense_reference() {
        let g = random_graph(7, 15, 8);
        let ne = g.num_edges();
        let g = g
            .with_weights((0..ne).map(|e| 0.5 + 0.1 * e as f64).collect())
            .unwrap();
        let x = random_features(8, 3, 9);
        for conv in [
            GatedGraphConv::new(3, 2),
            GatedGraphConv::new(5, 3),
            GatedGraphConv::new(3, 2).with_bias(false),
            GatedGraphConv::new(5, 3).with_bias(false),
        ] {
            let (y, mut p) = layer_output(&conv, Some(&g), &x, 1);
            let o = conv.out_channels;
            // PyTorch's GRUCell(bias=False): no bias parameters, i.e. zero biases.
            for b in ["rnn.bias_ih", "rnn.bias_hh"] {
                assert_eq!(p.get(b).is_some(), conv.bias, "{b}");
                if !conv.bias {
                    p.push(b, ndarray::ArrayD::zeros(vec![3 * o]));
                }
            }
            let w = p
                .get("weight")
                .unwrap()
                .clone()
                .into_dimensionality::<Ix3>()
                .unwrap();
            let a = dense_adjacency(&g);
            let mut h = Array2::zeros((8, o));
            h.slice_mut(s![.., ..3]).assign(&x);
            for l in 0..conv.num_layers {
                let wl = w.slice(s![l, .., ..]);
                let mut hw = Array2::zeros((8, o));
                for i in 0..8 {
                    for c in 0..o {
                        hw[[i, c]] = (0..o).map(|k| h[[i, k]] * wl[[k, c]]).sum();
                    }
                }
                let m = a.dot(&hw);
                h = gru(&p, "rnn.", &m, &h);
            }
            assert_close(&y, &h, 1e-12);
        }
    }

    #[test]
    fn too_wide_input_is_a_coded_error() {
        let g = random_graph(3, 4, 1);
        let conv = GatedGraphConv::new(2, 1);
        let mut rng = StdRng::seed_from_u64(0);
        let (p, st) = Layer::<f64>::init(&conv, &mut rng);
        let ctx = GraphCtx::<f64>::new(&g);
        let f = Features::dense(random_features(4, 3, 2));
        let err = apply(&conv, &Inputs::new(&ctx, &f), &p, &st, false, &mut rng).unwrap_err();
        assert_eq!(err.code(), "SHADE-E0410");
        assert_eq!(
            err.to_string(),
            "GatedGraphConv: input has 3 features per node but the layer expects at most \
             out_channels = 2"
        );
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            check_layer_gradient(&GatedGraphConv::new(4, 2), Some(&g), &x).map_err(TestCaseError::fail)?;
            check_layer_gradient(&GatedGraphConv::new(4, 2).with_bias(false), Some(&g), &x).map_err(TestCaseError::fail)?;
        }
    }
}
