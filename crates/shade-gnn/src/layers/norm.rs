//! `LayerNorm` and `BatchNorm` (PyTorch's `nn.LayerNorm` over the feature axis and
//! `nn.BatchNorm1d` over the node axis).

use crate::ctx::Float;
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::AdResult;
use shade_autodiff::tensor::{Tape, Var};

/// `(x - mean) / sqrt(var + eps)` over `axis` of a 2-D value, as `[N, 1]` or `[1, F]`
/// statistics; returns the normalised value, the mean and the (biased) variance.
fn standardise<T: Float>(
    t: &mut Tape<'_, T>,
    x: Var,
    axis: usize,
    eps: f64,
) -> AdResult<(Var, Var, Var)> {
    let s = t.shape(x)?.to_vec();
    let keep = if axis == 1 { [s[0], 1] } else { [1, s[1]] };
    let m = t.mean_axis(x, axis)?;
    let m = t.reshape(m, &keep)?;
    let xc = t.sub(x, m)?;
    let sq = t.mul(xc, xc)?;
    let v = t.mean_axis(sq, axis)?;
    let v = t.reshape(v, &keep)?;
    let e = t.scalar(T::cst(eps));
    let ve = t.add(v, e)?;
    let d = t.sqrt(ve)?;
    Ok((t.div(xc, d)?, m, v))
}

fn affine<T: Float>(t: &mut Tape<'_, T>, y: Var, p: &ParamVars<'_>) -> AdResult<Var> {
    let y = match p.opt("weight") {
        Some(w) => t.mul(y, w)?,
        None => y,
    };
    match p.opt("bias") {
        Some(b) => t.add(y, b),
        None => Ok(y),
    }
}

/// Normalises every row (node) over its features: `(x - μ) / sqrt(σ² + ε) · weight + bias`.
/// Parameters `weight` (ones) and `bias` (zeros) of shape `[F]` when
/// `elementwise_affine` (default); `eps = 1e-5`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerNorm {
    /// Feature width `F`.
    pub num_features: usize,
    /// Added to the variance.
    pub eps: f64,
    /// Learn `weight` and `bias`.
    pub elementwise_affine: bool,
}

impl LayerNorm {
    /// PyTorch's defaults.
    pub fn new(num_features: usize) -> Self {
        LayerNorm {
            num_features,
            eps: 1e-5,
            elementwise_affine: true,
        }
    }
}

impl<T: Float> Layer<T> for LayerNorm {
    fn name(&self) -> &'static str {
        "LayerNorm"
    }
    fn init(&self, _rng: &mut StdRng) -> (Params<T>, State<T>) {
        let f = self.num_features;
        let p = if self.elementwise_affine {
            Params::new()
                .with("weight", init::ones(&[f]))
                .with("bias", init::zeros(&[f]))
        } else {
            Params::new()
        };
        (p, State::new())
    }
    fn forward<'a>(
        &self,
        t: &mut Tape<'a, T>,
        _env: &mut Env<'a, '_, T>,
        x: Input<'a, T>,
        p: ParamVars<'_>,
        _st: StateScope<'_, T>,
    ) -> AdResult<Var> {
        let x = x.dense(t)?;
        let (y, _, _) = standardise(t, x, 1, self.eps)?;
        affine(t, y, &p)
    }
}

/// Batch normalisation over the nodes (rows) of a `[N, F]` value, as PyTorch's
/// `BatchNorm1d`: in training, batch statistics normalise the input and update the
/// state `running_mean` / `running_var` (unbiased) with `momentum`; at evaluation the
/// running statistics are used. Parameters `weight` (ones), `bias` (zeros) when
/// `affine`; `eps = 1e-5`, `momentum = 0.1`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BatchNorm {
    /// Feature width `F`.
    pub num_features: usize,
    /// Added to the variance.
    pub eps: f64,
    /// Weight of the new batch in the running statistics.
    pub momentum: f64,
    /// Learn `weight` and `bias`.
    pub affine: bool,
}

impl BatchNorm {
    /// PyTorch's defaults.
    pub fn new(num_features: usize) -> Self {
        BatchNorm {
            num_features,
            eps: 1e-5,
            momentum: 0.1,
            affine: true,
        }
    }
}

impl<T: Float> Layer<T> for BatchNorm {
    fn name(&self) -> &'static str {
        "BatchNorm"
    }
    fn init(&self, _rng: &mut StdRng) -> (Params<T>, State<T>) {
        let f = self.num_features;
        let p = if self.affine {
            Params::new()
                .with("weight", init::ones(&[f]))
                .with("bias", init::zeros(&[f]))
        } else {
            Params::new()
        };
        let s = State::new()
            .with("running_mean", init::zeros(&[f]))
            .with("running_var", init::ones(&[f]));
        (p, s)
    }
    fn forward<'a>(
        &self,
        t: &mut Tape<'a, T>,
        env: &mut Env<'a, '_, T>,
        x: Input<'a, T>,
        p: ParamVars<'_>,
        mut st: StateScope<'_, T>,
    ) -> AdResult<Var> {
        let x = x.dense(t)?;
        let y = if env.training {
            let (y, m, v) = standardise(t, x, 0, self.eps)?;
            let n = t.shape(x)?[0] as f64;
            let unbias = if n > 1.0 { n / (n - 1.0) } else { 1.0 };
            let mom = T::cst(self.momentum);
            let keep = T::one() - mom;
            let mv: Vec<T> = t.value(m)?.iter().copied().collect();
            let vv: Vec<T> = t.value(v)?.iter().copied().collect();
            let rm = st.get_mut("running_mean")?;
            rm.iter_mut()
                .zip(&mv)
                .for_each(|(r, &b)| *r = keep * *r + mom * b);
            let rv = st.get_mut("running_var")?;
            rv.iter_mut()
                .zip(&vv)
                .for_each(|(r, &b)| *r = keep * *r + mom * b * T::cst(unbias));
            y
        } else {
            let rm = t.constant(st.get("running_mean")?);
            let rv = st
                .get("running_var")?
                .mapv(|v| (v + T::cst(self.eps)).sqrt());
            let rs = t.constant(&rv);
            let xc = t.sub(x, rm)?;
            t.div(xc, rs)?
        };
        affine(t, y, &p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{
        GradCheck, arb_graph_and_features, assert_close, check_layer_gradient, proptest_config,
        random_features,
    };
    use crate::{Features, Inputs, apply};
    use ndarray::{Array2, Axis, Ix2};
    use proptest::prelude::*;
    use rand::SeedableRng;

    fn affine_params(f: usize) -> Params<f64> {
        Params::new()
            .with(
                "weight",
                ndarray::Array1::from_shape_fn(f, |i| 1.0 + 0.5 * i as f64).into_dyn(),
            )
            .with(
                "bias",
                ndarray::Array1::from_shape_fn(f, |i| 0.1 * i as f64).into_dyn(),
            )
    }

    #[test]
    fn layer_norm_matches_definition() {
        let x = random_features(4, 3, 1);
        let p = affine_params(3);
        let f = Features::dense(x.clone());
        let (y, _) = apply(
            &LayerNorm::new(3),
            &Inputs::without_graph(&f),
            &p,
            &State::new(),
            false,
            &mut StdRng::seed_from_u64(0),
        )
        .unwrap();
        let mut r = Array2::zeros((4, 3));
        for i in 0..4 {
            let m = x.row(i).sum() / 3.0;
            let v = x.row(i).iter().map(|a| (a - m) * (a - m)).sum::<f64>() / 3.0;
            for c in 0..3 {
                r[[i, c]] =
                    (x[[i, c]] - m) / (v + 1e-5).sqrt() * (1.0 + 0.5 * c as f64) + 0.1 * c as f64;
            }
        }
        assert_close(&y.into_dimensionality::<Ix2>().unwrap(), &r, 1e-12);
    }

    #[test]
    fn batch_norm_training_eval_and_running_stats() {
        let x = random_features(5, 2, 2);
        let bn = BatchNorm::new(2);
        let p = affine_params(2);
        let (_, st0) = Layer::<f64>::init(&bn, &mut StdRng::seed_from_u64(0));
        let f = Features::dense(x.clone());
        let inputs = Inputs::without_graph(&f);
        let (y, st1) = apply(&bn, &inputs, &p, &st0, true, &mut StdRng::seed_from_u64(0)).unwrap();
        let m = x.mean_axis(Axis(0)).unwrap();
        let v = x.var_axis(Axis(0), 0.0);
        let vu = x.var_axis(Axis(0), 1.0);
        let mut r = Array2::zeros((5, 2));
        for i in 0..5 {
            for c in 0..2 {
                r[[i, c]] = (x[[i, c]] - m[c]) / (v[c] + 1e-5).sqrt() * (1.0 + 0.5 * c as f64)
                    + 0.1 * c as f64;
            }
        }
        assert_close(&y.into_dimensionality::<Ix2>().unwrap(), &r, 1e-12);
        for c in 0..2 {
            assert!((st1.get("running_mean").unwrap()[c] - 0.1 * m[c]).abs() < 1e-15);
            assert!((st1.get("running_var").unwrap()[c] - (0.9 + 0.1 * vu[c])).abs() < 1e-15);
        }
        // The input state is not modified; evaluation uses the running statistics.
        assert_eq!(st0.get("running_var").unwrap()[0], 1.0);
        let (ye, st2) =
            apply(&bn, &inputs, &p, &st1, false, &mut StdRng::seed_from_u64(0)).unwrap();
        assert_eq!(st2, st1);
        let rm = st1.get("running_mean").unwrap();
        let rv = st1.get("running_var").unwrap();
        let e = (x[[3, 1]] - rm[1]) / (rv[1] + 1e-5).sqrt() * 1.5 + 0.1;
        assert!((ye[[3, 1]] - e).abs() < 1e-12);
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradients_match_finite_differences((_g, x) in arb_graph_and_features(5, 2, 3)) {
            prop_assume!(x.nrows() >= 2);
            check_layer_gradient(&LayerNorm::new(3), None, &x).map_err(TestCaseError::fail)?;
            check_layer_gradient(&BatchNorm::new(3), None, &x).map_err(TestCaseError::fail)?;
            let mut c = GradCheck::new(None, &x);
            c.training = true;
            c.run(&BatchNorm::new(3)).map_err(TestCaseError::fail)?;
        }
    }
}
