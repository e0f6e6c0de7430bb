//! `Dense` (PyTorch's `nn.Linear`, with an optional activation as Lux's `Dense`).

use super::Activation;
use crate::ctx::Float;
use crate::error::GnnResult;
use crate::init;
use crate::layer::{Env, Input, Layer};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// `y = σ(x · Wᵀ + b)` with `weight` `[out, in]` and `bias` `[out]` (PyTorch's names and
/// layout), both initialised as PyTorch's `nn.Linear` (`U(±1/√in)`).
///
/// Sparse input goes through the sparse × dense kernel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dense {
    /// Input width.
    pub in_features: usize,
    /// Output width.
    pub out_features: usize,
    /// Whether to add a bias (default `true`).
    pub bias: bool,
    /// Activation after the affine map (default identity).
    pub activation: Activation,
}

/// PyTorch's name for [`Dense`].
pub type Linear = Dense;

impl Dense {
    /// `in → out` with bias and no activation.
    pub fn new(in_features: usize, out_features: usize) -> Self {
        Dense {
            in_features,
            out_features,
            bias: true,
            activation: Activation::Identity,
        }
    }

    /// Sets the activation.
    pub fn with_activation(mut self, a: Activation) -> Self {
        self.activation = a;
        self
    }

    /// Sets whether a bias is added.
    pub fn with_bias(mut self, bias: bool) -> Self {
        self.bias = bias;
        self
    }
}

impl<T: Float> Layer<T> for Dense {
    fn name(&self) -> &'static str {
        "Dense"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let (i, o) = (self.in_features, self.out_features);
        let mut p = Params::new().with("weight", init::torch_linear(rng, &[o, i], i));
        if self.bias {
            p.push("bias", init::torch_linear(rng, &[o], i));
        }
        (p, State::new())
    }

    fn forward<'a>(
        &self,
        t: &mut Tape<'a, T>,
        _env: &mut Env<'a, '_, T>,
        x: Input<'a, T>,
        p: ParamVars<'_>,
        _st: StateScope<'_, T>,
    ) -> GnnResult<Var> {
        let b = if self.bias {
            Some(p.get("bias")?)
        } else {
            None
        };
        let y = x.affine(t, p.param("weight")?, b)?;
        Ok(self.activation.apply(t, y)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{
        arb_graph_and_features, assert_close, check_layer_gradient, layer_output, proptest_config,
        random_features,
    };
    use ndarray::{Array2, Ix1, Ix2};
    use proptest::prelude::*;

    #[test]
    fn matches_dense_reference() {
        let x = random_features(5, 3, 1);
        for act in [Activation::Identity, Activation::Sigmoid, Activation::Tanh] {
            let d = Dense::new(3, 4).with_activation(act);
            let (y, p) = layer_output(&d, None, &x, 2);
            let w = p
                .get("weight")
                .unwrap()
                .clone()
                .into_dimensionality::<Ix2>()
                .unwrap();
            let b = p
                .get("bias")
                .unwrap()
                .clone()
                .into_dimensionality::<Ix1>()
                .unwrap();
            let mut r = Array2::zeros((5, 4));
            for i in 0..5 {
                for k in 0..4 {
                    let z: f64 = (0..3).map(|c| x[[i, c]] * w[[k, c]]).sum::<f64>() + b[k];
                    r[[i, k]] = match act {
                        Activation::Sigmoid => 1.0 / (1.0 + (-z).exp()),
                        Activation::Tanh => z.tanh(),
                        _ => z,
                    };
                }
            }
            assert_close(&y, &r, 1e-12);
            // PyTorch's init bound 1/sqrt(in).
            assert!(
                w.iter()
                    .chain(b.iter())
                    .all(|v| v.abs() <= 1.0 / 3f64.sqrt())
            );
        }
    }

    proptest! {
        #![proptest_config(proptest_config(32))]
        #[test]
        fn gradient_matches_finite_differences((_g, x) in arb_graph_and_features(5, 4, 3)) {
            for act in [Activation::Identity, Activation::Sigmoid, Activation::Elu(1.0), Activation::LogSoftmax] {
                check_layer_gradient(&Dense::new(3, 2).with_activation(act), None, &x).map_err(TestCaseError::fail)?;
            }
            check_layer_gradient(&Dense::new(3, 2).with_bias(false), None, &x).map_err(TestCaseError::fail)?;
        }
    }
}
