//! GradBench's `llsq` eval: the least-squares residual of a degree `m - 1` polynomial
//! fitted to `sign(t)` at `n` points `t ∈ [-1, 1]` (`primal`), and its gradient with
//! respect to the `m` coefficients (`gradient`), by reverse mode.

use serde_json::Value;
use shade_autodiff::Const;
use shade_autodiff::scalar::{Real, shade_fn};

use super::input::{field, index, numbers};
use super::{Engine, GradientEval, Run, pick, show_list};

/// `½ Σᵢ (sign(tᵢ) - Σⱼ xⱼ tᵢʲ)²` with `tᵢ = -1 + 2i / (n - 1)`.
pub fn llsq_objective<S: Real>(x: &[S], n: &usize) -> S {
    let n = *n;
    let mut powers = vec![S::zero(); x.len()];
    let mut sum = S::zero();
    for i in 0..n {
        let t = -1.0 + i as f64 * 2.0 / (n as f64 - 1.0);
        let mut mul = 1.0;
        for p in powers.iter_mut() {
            *p = S::cst(mul);
            mul *= t;
        }
        let sign = if t > 0.0 {
            1.0
        } else if t < 0.0 {
            -1.0
        } else {
            0.0
        };
        let r = -S::dot(x, &powers) + sign;
        sum += r * r;
    }
    sum * 0.5
}

shade_fn!(Llsq = llsq_objective(&[S], &usize));

/// Prepares `primal` or `gradient` for `{"x": [m floats], "n": points}`.
pub fn prepare(function: &str, input: &Value, engine: Engine) -> Result<Box<dyn Run>, String> {
    let Engine::Tape = engine;
    let gradient = pick("llsq", function, ["primal", "gradient"])?;
    let x = numbers(field(input, "x")?, "x")?;
    let n = index(field(input, "n")?, "n")?;
    Ok(GradientEval::boxed(
        gradient,
        x,
        n,
        llsq_objective,
        |tape, x, n, g| tape.gradient_into(&Llsq, x, (Const(n),), g),
        show_list,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradbench::testing::{assert_close, central_gradient, uniform};
    use shade_autodiff::scalar::Tape;

    #[test]
    fn gradient_matches_central_differences() {
        let x = uniform(41, 7);
        let n = 33;
        let mut g = vec![0.0; x.len()];
        Tape::new()
            .gradient_into(&Llsq, &x, (Const(&n),), &mut g)
            .unwrap();
        let fd = central_gradient(|x| llsq_objective(x, &n), &x, 1e-6);
        assert_close("llsq gradient", &g, &fd, 1e-7);
    }

    #[test]
    fn objective_counts_the_sign_residuals() {
        // x = 0: residuals are sign(t) at t = -1, 0, 1: ½ (1 + 0 + 1).
        assert_eq!(llsq_objective(&[0.0, 0.0], &3), 1.0);
    }
}
