//! GradBench's `llsq` eval: the least-squares residual of a degree `m - 1` polynomial
//! fitted to `sign(t)` at `n` points `t ∈ [-1, 1]` (`primal`), and its gradient with
//! respect to the `m` coefficients (`gradient`), by reverse mode.

use serde_json::Value;
use shade_autodiff::Const;
use shade_autodiff::scalar::{Real, Tape, shade_fn};

use super::input::{field, finite, index, numbers, to_list};
use super::{Engine, Run, unknown_function};

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

struct LlsqRun {
    gradient: bool,
    x: Vec<f64>,
    n: usize,
    value: f64,
    g: Vec<f64>,
    tape: Tape,
}

impl Run for LlsqRun {
    fn run(&mut self) -> Result<(), String> {
        if self.gradient {
            self.tape
                .gradient_into(&Llsq, &self.x, (Const(&self.n),), &mut self.g)
                .map_err(|e| e.to_string())
        } else {
            self.value = llsq_objective(&self.x, &self.n);
            Ok(())
        }
    }
    fn output(&self) -> Value {
        if self.gradient {
            to_list(&self.g)
        } else {
            finite(self.value)
        }
    }
}

/// Prepares `primal` or `gradient` for `{"x": [m floats], "n": points}`.
pub fn prepare(function: &str, input: &Value, engine: Engine) -> Result<Box<dyn Run>, String> {
    let Engine::Tape = engine;
    let gradient = match function {
        "primal" => false,
        "gradient" => true,
        f => return Err(unknown_function("llsq", f, &["primal", "gradient"])),
    };
    let x = numbers(field(input, "x")?, "x")?;
    let n = index(field(input, "n")?, "n")?;
    Ok(Box::new(LlsqRun {
        gradient,
        g: vec![0.0; x.len()],
        x,
        n,
        value: 0.0,
        tape: Tape::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradbench::testing::{assert_close, central_gradient, uniform};

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
