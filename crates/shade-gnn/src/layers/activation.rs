//! Activations, as a function on the tape ([`Activation::apply`]) and as a parameter-free
//! layer.

use crate::ctx::Float;
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
            Activation::Relu => crate::ops::relu(t, x),
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
    ) -> AdResult<Var> {
        let x = x.dense(t)?;
        self.apply(t, x)
    }
}
