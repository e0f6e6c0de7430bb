//! `Dropout` with inverted scaling; the identity at evaluation.

use crate::ctx::Float;
use crate::layer::{Env, Input, Layer};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::AdResult;
use shade_autodiff::tensor::{Tape, Var};

/// Zeroes each element with probability `p` (in `[0, 1)`) in training and scales the
/// rest by `1 / (1 - p)`; the identity at evaluation. The mask comes from a fast
/// generator seeded by one draw from [`Env::rng`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dropout {
    /// Drop probability in `[0, 1]`.
    pub p: f64,
}

impl Dropout {
    /// Dropout with probability `p`.
    pub fn new(p: f64) -> Self {
        Dropout { p }
    }
}

impl<T: Float> Layer<T> for Dropout {
    fn name(&self) -> &'static str {
        "Dropout"
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
        let x = x.dense(t)?;
        crate::ops::dropout(t, x, self.p, env.rng, env.training)
    }
}
