//! Activations, as a function on the tape ([`Activation::apply`]) and as a parameter-free
//! layer.

use crate::ctx::Float;
use crate::error::GnnResult;
use crate::layer::{Env, Input, Layer};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::AdResult;
use shade_autodiff::tensor::{Tape, Var};

/// An elementwise (or row-wise softmax) activation.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Activation {
    /// `x`.
    #[default]
    Identity,
    /// `max(x, 0)`.
    Relu,
    /// `tanh(x)`.
    Tanh,
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// `x` for `x > 0`, `slope · x` otherwise.
    LeakyRelu(f64),
    /// `x` for `x > 0`, `alpha (e^x - 1)` otherwise.
    Elu(f64),
    /// GELU (tanh approximation as in the tensor layer).
    Gelu,
    /// `ln(1 + e^x)`.
    Softplus,
    /// Softmax over the last axis of a 2-D value (axis 1).
    Softmax,
    /// Log-softmax over axis 1.
    LogSoftmax,
}

impl Activation {
    /// Applies the activation to `x`.
    pub fn apply<T: Float>(self, t: &mut Tape<'_, T>, x: Var) -> AdResult<Var> {
        match self {
            Activation::Identity => Ok(x),
            Activation::Relu => t.relu(x),
            Activation::Tanh => t.tanh(x),
            Activation::Sigmoid => t.sigmoid(x),
            Activation::LeakyRelu(s) => t.leaky_relu(x, T::cst(s)),
            Activation::Elu(a) => t.elu(x, T::cst(a)),
            Activation::Gelu => t.gelu(x),
            Activation::Softplus => t.softplus(x),
            Activation::Softmax => t.softmax(x, 1),
            Activation::LogSoftmax => t.log_softmax(x, 1),
        }
    }
}

impl<T: Float> Layer<T> for Activation {
    fn name(&self) -> &'static str {
        "Activation"
    }
    fn init(&self, _rng: &mut StdRng) -> (Params<T>, State<T>) {
        (Params::new(), State::new())
    }
    fn forward<'a>(
        &self,
        t: &mut Tape<'a, T>,
        _env: &mut Env<'a, '_, T>,
        x: Input<'a, T>,
        _p: ParamVars<'_>,
        _st: StateScope<'_, T>,
    ) -> GnnResult<Var> {
        let x = x.dense(t)?;
        Ok(self.apply(t, x)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{GradCheck, assert_close, layer_output, proptest_config, random_features};
    use ndarray::Array2;
    use proptest::prelude::*;

    const ALL: [Activation; 10] = [
        Activation::Identity,
        Activation::Relu,
        Activation::Tanh,
        Activation::Sigmoid,
        Activation::LeakyRelu(0.1),
        Activation::Elu(0.7),
        Activation::Gelu,
        Activation::Softplus,
        Activation::Softmax,
        Activation::LogSoftmax,
    ];

    /// The definitions, elementwise or row by row in plain `f64`.
    fn reference(a: Activation, x: &Array2<f64>) -> Array2<f64> {
        let row_softmax = |x: &Array2<f64>, log: bool| {
            let mut y = x.clone();
            for mut r in y.rows_mut() {
                let m = r.fold(f64::NEG_INFINITY, |m, &v| m.max(v));
                let z: f64 = r.iter().map(|v| (v - m).exp()).sum();
                r.mapv_inplace(|v| {
                    if log {
                        v - m - z.ln()
                    } else {
                        (v - m).exp() / z
                    }
                });
            }
            y
        };
        let c = (2.0 / std::f64::consts::PI).sqrt();
        match a {
            Activation::Identity => x.clone(),
            Activation::Relu => x.mapv(|v| if v > 0.0 { v } else { 0.0 }),
            Activation::Tanh => x.mapv(f64::tanh),
            Activation::Sigmoid => x.mapv(|v| 1.0 / (1.0 + (-v).exp())),
            Activation::LeakyRelu(s) => x.mapv(|v| if v > 0.0 { v } else { s * v }),
            Activation::Elu(al) => x.mapv(|v| if v > 0.0 { v } else { al * (v.exp() - 1.0) }),
            Activation::Gelu => {
                x.mapv(|v| 0.5 * v * (1.0 + (c * (v + 0.044715 * v * v * v)).tanh()))
            }
            Activation::Softplus => x.mapv(|v| (1.0 + v.exp()).ln()),
            Activation::Softmax => row_softmax(x, false),
            Activation::LogSoftmax => row_softmax(x, true),
        }
    }

    #[test]
    fn matches_the_definitions() {
        let x = random_features(6, 4, 3).mapv(|v| 3.0 * v);
        for a in ALL {
            let (y, _) = layer_output(&a, None, &x, 0);
            assert_close(&y, &reference(a, &x), 1e-13);
        }
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences(seed in 0u64..1000, rows in 1usize..5, cols in 1usize..5) {
            let x = random_features(rows, cols, seed).mapv(|v| 3.0 * v);
            for a in ALL {
                GradCheck::new(None, &x).run(&a).map_err(TestCaseError::fail)?;
            }
        }
    }
}
