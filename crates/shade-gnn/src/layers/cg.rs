//! `CGConv` (Xie & Grossman, 2018; crystal graph convolution) with PyTorch Geometric's
//! options and defaults.

use super::BatchNorm;
use super::blocks::{check_width, linear, no_edge_features};
use crate::ctx::Float;
use crate::error::GnnResult;
use crate::init;
use crate::layer::{Env, Input, Layer, forward_sublayer};
use crate::message::{Aggr, aggregate, gather_dst, gather_src};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// Crystal graph convolution:
/// `x'_i = x_i + aggr_{j -> i} σ(z_ij W_f + b_f) ⊙ softplus(z_ij W_s + b_s)` with
/// `z_ij = [x_i, x_j, e_ij]`; with `batch_norm` the aggregate is batch-normalised first.
///
/// Parameters (PyG's names): `lin_f.weight`, `lin_s.weight` `[F, 2F + dim]`,
/// `lin_f.bias`, `lin_s.bias` `[F]` (if `bias`), and `bn.weight`, `bn.bias` (state
/// `bn.running_mean`, `bn.running_var`) with `batch_norm`. Options and defaults as
/// PyG: `dim = 0` (no edge features), `aggr = add`, `batch_norm = false`, `bias = true`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CGConv {
    /// Node width `F` (input and output).
    pub channels: usize,
    /// Edge feature width (0: none).
    pub dim: usize,
    /// Aggregation.
    pub aggr: Aggr,
    /// Batch-normalise the aggregate.
    pub batch_norm: bool,
    /// Biases of the two linear maps.
    pub bias: bool,
}

impl CGConv {
    /// `channels` wide, edge features of width `dim` (0 for none), PyG's defaults.
    pub fn new(channels: usize, dim: usize) -> Self {
        CGConv {
            channels,
            dim,
            aggr: Aggr::Sum,
            batch_norm: false,
            bias: true,
        }
    }

    /// Sets batch normalisation of the aggregate.
    pub fn with_batch_norm(mut self, on: bool) -> Self {
        self.batch_norm = on;
        self
    }
}

impl<T: Float> Layer<T> for CGConv {
    fn name(&self) -> &'static str {
        "CGConv"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let (f, z) = (self.channels, 2 * self.channels + self.dim);
        let mut p = Params::new();
        let mut s = State::new();
        for l in ["lin_f", "lin_s"] {
            p.push(format!("{l}.weight"), init::torch_linear(rng, &[f, z], z));
            if self.bias {
                p.push(format!("{l}.bias"), init::torch_linear(rng, &[f], z));
            }
        }
        if self.batch_norm {
            let (bp, bs) = Layer::<T>::init(&BatchNorm::new(f), rng);
            p.extend_prefixed("bn", bp);
            s.extend_prefixed("bn", bs);
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
        let g = env.graph("CGConv")?;
        let x = x.dense(t)?;
        let xi = gather_dst(t, g.edges(), x)?;
        let xj = gather_src(t, g.edges(), x)?;
        let z = if self.dim > 0 {
            let e = env
                .edge_attr
                .ok_or_else(|| no_edge_features(format!("`[E, {}]` (dim = {0})", self.dim)))?;
            check_width(t, "edge feature array", e, self.dim, "dim")?;
            t.concat(&[xi, xj, e], 1)?
        } else {
            t.concat(&[xi, xj], 1)?
        };
        let zf = linear(t, Input::Dense(z), &p, "lin_f", self.bias)?;
        let zf = t.sigmoid(zf)?;
        let zs = linear(t, Input::Dense(z), &p, "lin_s", self.bias)?;
        let zs = t.softplus(zs)?;
        let m = t.mul(zf, zs)?;
        let mut out = aggregate(t, g.edges(), m, self.aggr)?;
        if self.batch_norm {
            let bn = BatchNorm::new(self.channels);
            let out_bn = Input::Dense(out);
            out = forward_sublayer(&bn, t, env, out_bn, p.scope("bn"), st.scope("bn"))?;
        }
        Ok(t.add(out, x)?)
    }

    fn is_graph_layer(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::blocks::reference::{affine, edge_list, m, sigmoid, v};
    use super::*;
    use crate::testing::{
        GradCheck, arb_graph_and_features, assert_close, proptest_config, random_features,
        random_graph,
    };
    use crate::{Features, GraphCtx, Inputs, apply};
    use ndarray::{Array2, Axis, concatenate, s};
    use proptest::prelude::*;
    use rand::SeedableRng;

    #[test]
    fn matches_dense_reference() {
        let g = random_graph(7, 15, 2);
        let x = random_features(8, 3, 3);
        let e = random_features(g.num_edges(), 2, 4);
        let ctx = GraphCtx::<f64>::new(&g);
        let f = Features::dense(x.clone());
        let ed = e.clone().into_dyn();
        for conv in [
            CGConv::new(3, 2),
            CGConv::new(3, 0),
            CGConv::new(3, 2).with_batch_norm(true),
        ] {
            let mut rng = StdRng::seed_from_u64(5);
            let (p, mut st) = Layer::<f64>::init(&conv, &mut rng);
            if conv.batch_norm {
                st.get_mut("bn.running_mean")
                    .unwrap()
                    .assign(&ndarray::array![0.1, -0.2, 0.3].into_dyn());
                st.get_mut("bn.running_var")
                    .unwrap()
                    .assign(&ndarray::array![0.5, 2.0, 1.5].into_dyn());
            }
            let (y, _) = apply(
                &conv,
                &Inputs::new(&ctx, &f).with_edge_attr(&ed),
                &p,
                &st,
                false,
                &mut rng,
            )
            .unwrap();
            let mut r = Array2::<f64>::zeros((8, 3));
            for (id, (j, i, _)) in edge_list(&g).into_iter().enumerate() {
                let mut parts = vec![x.slice(s![i..i + 1, ..]), x.slice(s![j..j + 1, ..])];
                if conv.dim > 0 {
                    parts.push(e.slice(s![id..id + 1, ..]));
                }
                let z = concatenate(Axis(1), &parts).unwrap();
                let zf = affine(&z, &m(&p, "lin_f.weight"), Some(&v(&p, "lin_f.bias")));
                let zs = affine(&z, &m(&p, "lin_s.weight"), Some(&v(&p, "lin_s.bias")));
                for c in 0..3 {
                    r[[i, c]] += sigmoid(zf[[0, c]]) * (1.0 + zs[[0, c]].exp()).ln();
                }
            }
            if conv.batch_norm {
                let (rm, rv) = (v(&st, "bn.running_mean"), v(&st, "bn.running_var"));
                for i in 0..8 {
                    for c in 0..3 {
                        r[[i, c]] = (r[[i, c]] - rm[c]) / (rv[c] + 1e-5).sqrt();
                    }
                }
            }
            assert_close(&y.into_dimensionality().unwrap(), &(r + &x), 1e-12);
        }
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_graph_and_features(6, 10, 3)) {
            let ne = g.num_edges();
            for conv in [CGConv::new(3, 2), CGConv::new(3, 2).with_batch_norm(true)] {
                GradCheck {
                    edge_attr: Some(random_features(ne, 2, 7).into_dyn()),
                    ..GradCheck::new(Some(&g), &x)
                }.run(&conv).map_err(TestCaseError::fail)?;
            }
            // Batch statistics in training.
            GradCheck {
                edge_attr: Some(random_features(ne, 2, 7).into_dyn()),
                training: true,
                ..GradCheck::new(Some(&g), &x)
            }
            .run(&CGConv::new(3, 2).with_batch_norm(true))
            .map_err(TestCaseError::fail)?;
        }
    }
}
