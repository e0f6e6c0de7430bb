//! `Dropout` with inverted scaling; the identity at evaluation.

use crate::ctx::Float;
use crate::error::{GnnError, GnnResult};
use crate::layer::{Env, Input, Layer};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// Zeroes each element with probability `p` (in `[0, 1)`) in training and scales the
/// rest by `1 / (1 - p)`; the identity at evaluation. The mask is the core's
/// ([`Tape::dropout`], one draw from [`Env::rng`] per call).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dropout {
    /// Drop probability in `[0, 1)`.
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
    ) -> GnnResult<Var> {
        if !(0.0..1.0).contains(&self.p) {
            return Err(GnnError::setting("p", self.p, "a value in [0, 1)"));
        }
        let x = x.dense(t)?;
        Ok(t.dropout(x, self.p, env.rng, env.training)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{GradCheck, layer_output, proptest_config, random_features};
    use crate::{Features, Inputs, apply};
    use ndarray::Array2;
    use proptest::prelude::*;
    use rand::SeedableRng;

    fn train(p: f64, x: &Array2<f64>, seed: u64) -> Result<Array2<f64>, crate::GnnError> {
        let f = Features::dense(x.clone());
        let inputs = Inputs::without_graph(&f);
        let mut rng = StdRng::seed_from_u64(seed);
        let d = Dropout::new(p);
        let (y, _) = apply(&d, &inputs, &Params::new(), &State::new(), true, &mut rng)?;
        Ok(y.into_dimensionality().expect("2-D"))
    }

    #[test]
    fn training_drops_about_p_and_scales_the_rest() {
        let x = random_features(200, 50, 1).mapv(|v| v + 2.0); // no zeros
        for p in [0.1, 0.5, 0.9] {
            let y = train(p, &x, 7).unwrap();
            let mut dropped = 0usize;
            for (&a, &b) in x.iter().zip(&y) {
                if b == 0.0 {
                    dropped += 1;
                } else {
                    assert!((b - a / (1.0 - p)).abs() <= 1e-12 * b.abs(), "{b} vs {a}");
                }
            }
            let frac = dropped as f64 / x.len() as f64;
            // 10 000 draws: the standard deviation of the fraction is below 0.005.
            assert!((frac - p).abs() < 0.025, "p = {p}: dropped {frac}");
            // The same seed gives the same mask; another seed another one.
            assert_eq!(train(p, &x, 7).unwrap(), y);
            assert_ne!(train(p, &x, 8).unwrap(), y);
        }
    }

    #[test]
    fn evaluation_is_the_identity_and_bad_p_is_a_coded_error() {
        let x = random_features(4, 3, 2);
        assert_eq!(layer_output(&Dropout::new(0.5), None, &x, 0).0, x);
        for p in [1.0, -0.1, f64::NAN] {
            let err = train(p, &x, 0).unwrap_err();
            assert_eq!(err.code(), "SHADE-E0404", "p = {p}: {err}");
            assert_eq!(
                err.to_string(),
                format!("Dropout: invalid setting `p` = {p}: expected a value in [0, 1)")
            );
        }
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences(seed in 0u64..1000, p in 0.0f64..0.9) {
            let x = random_features(5, 4, seed);
            GradCheck { training: true, seed, ..GradCheck::new(None, &x) }
                .run(&Dropout::new(p))
                .map_err(TestCaseError::fail)?;
        }
    }
}
