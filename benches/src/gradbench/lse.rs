//! GradBench's `lse` eval: `primal(x) = ln Σ exp(xᵢ)`, computed stably from primitive
//! operations (maximum, shift, `exp`, sum, `ln`, shift back), and `gradient`, its
//! gradient by reverse mode through those operations (not a hand-written softmax).

use serde_json::Value;
use shade_autodiff::scalar::{Real, shade_fn};

use super::input::{field, numbers};
use super::{Engine, GradientEval, Run, pick, show_list};

/// `ln Σᵢ exp(xᵢ)` with the maximum shifted out; `x` must not be empty.
pub fn logsumexp<S: Real>(x: &[S]) -> S {
    let mut a = x[0];
    for &xi in &x[1..] {
        a = a.max(xi);
    }
    let mut s = S::zero();
    for &xi in x {
        s += (xi - a).exp();
    }
    s.ln() + a
}

shade_fn!(Lse = logsumexp(&[S]));

/// Prepares `primal` or `gradient` for input `{"x": [n floats]}`.
pub fn prepare(function: &str, input: &Value, engine: Engine) -> Result<Box<dyn Run>, String> {
    let Engine::Tape = engine;
    let gradient = pick("lse", function, ["primal", "gradient"])?;
    let x = numbers(field(input, "x")?, "x")?;
    if x.is_empty() {
        return Err("`x` must not be empty".into());
    }
    Ok(GradientEval::boxed(
        gradient,
        x,
        (),
        |x, ()| logsumexp(x),
        |tape, x, (), g| tape.gradient_into(&Lse, x, (), g),
        show_list,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradbench::testing::{assert_close, central_gradient, uniform};
    use serde_json::json;

    #[test]
    fn gradient_matches_central_differences() {
        let x: Vec<f64> = uniform(1, 40).iter().map(|u| 20.0 * u - 10.0).collect();
        let mut r = prepare("gradient", &json!({ "x": x }), Engine::Tape).unwrap();
        r.run().unwrap();
        let g: Vec<f64> = serde_json::from_value(r.output()).unwrap();
        let fd = central_gradient(logsumexp, &x, 1e-6);
        assert_close("lse gradient", &g, &fd, 1e-7);
        assert!((g.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn primal_is_stable_for_large_inputs() {
        let y = logsumexp(&[1000.0, 1000.0]);
        assert!((y - (1000.0 + 2f64.ln())).abs() < 1e-12);
    }
}
