//! GradBench's `ode` eval: `y(2)` of `y₀' = x₀`, `yᵢ' = xᵢ · yᵢ₋₁`, `y(0) = 0`, by
//! `s` steps of the classical Runge–Kutta method (`primal`), and the gradient of the
//! last component with respect to `x` (`gradient`), by reverse mode through the steps.

use serde_json::Value;
use shade_autodiff::Const;
use shade_autodiff::scalar::{Real, Tape, shade_fn};

use super::input::{field, index, numbers, to_list};
use super::{Engine, Run, pick};

fn rhs<S: Real>(x: &[S], y: &[S], z: &mut [S]) {
    z[0] = x[0];
    for i in 1..x.len() {
        z[i] = x[i] * y[i - 1];
    }
}

/// Integrates from 0 to 2 in `s` steps, writing `y(2)` into `y` (`y.len() = x.len()`).
pub fn ode_solve<S: Real>(y: &mut [S], x: &[S], s: usize) {
    let n = x.len();
    let h = 2.0 / s as f64;
    let mut k = [
        vec![S::zero(); n],
        vec![S::zero(); n],
        vec![S::zero(); n],
        vec![S::zero(); n],
    ];
    let mut tmp = vec![S::zero(); n];
    y.fill(S::zero());
    let weights = [
        S::cst(h / 6.0),
        S::cst(h / 3.0),
        S::cst(h / 3.0),
        S::cst(h / 6.0),
    ];
    for _ in 0..s {
        rhs(x, y, &mut k[0]);
        for i in 0..n {
            tmp[i] = y[i] + k[0][i] * (h / 2.0);
        }
        rhs(x, &tmp, &mut k[1]);
        for i in 0..n {
            tmp[i] = y[i] + k[1][i] * (h / 2.0);
        }
        rhs(x, &tmp, &mut k[2]);
        for i in 0..n {
            tmp[i] = y[i] + k[2][i] * h;
        }
        rhs(x, &tmp, &mut k[3]);
        for i in 0..n {
            y[i] += S::dot(&[k[0][i], k[1][i], k[2][i], k[3][i]], &weights);
        }
    }
}

/// The last component of [`ode_solve`]'s result.
pub fn ode_last<S: Real>(x: &[S], s: &usize) -> S {
    let mut y = vec![S::zero(); x.len()];
    ode_solve(&mut y, x, *s);
    y[x.len() - 1]
}

shade_fn!(OdeLast = ode_last(&[S], &usize));

struct OdeRun {
    gradient: bool,
    x: Vec<f64>,
    s: usize,
    out: Vec<f64>,
    tape: Tape,
}

impl Run for OdeRun {
    fn run(&mut self) -> Result<(), String> {
        if self.gradient {
            self.tape
                .gradient_into(&OdeLast, &self.x, (Const(&self.s),), &mut self.out)
                .map_err(|e| e.to_string())
        } else {
            ode_solve(&mut self.out, &self.x, self.s);
            Ok(())
        }
    }
    fn output(&self) -> Value {
        to_list(&self.out)
    }
}

/// Prepares `primal` or `gradient` for `{"x": [n floats], "s": steps}`.
pub fn prepare(function: &str, input: &Value, engine: Engine) -> Result<Box<dyn Run>, String> {
    let Engine::Tape = engine;
    let gradient = pick("ode", function, ["primal", "gradient"])?;
    let x = numbers(field(input, "x")?, "x")?;
    let s = index(field(input, "s")?, "s")?;
    if x.is_empty() || s == 0 {
        return Err(format!(
            "`x` must not be empty and `s` positive, found {} and {s}",
            x.len()
        ));
    }
    Ok(Box::new(OdeRun {
        gradient,
        out: vec![0.0; x.len()],
        x,
        s,
        tape: Tape::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradbench::testing::{assert_close, central_gradient, uniform};

    #[test]
    fn gradient_matches_central_differences() {
        // Values of order one (the eval's n ≥ 1000 makes the last component tiny).
        let x: Vec<f64> = uniform(31, 6).iter().map(|u| 0.5 + u).collect();
        for s in [1, 3] {
            let mut g = vec![0.0; x.len()];
            Tape::new()
                .gradient_into(&OdeLast, &x, (Const(&s),), &mut g)
                .unwrap();
            let fd = central_gradient(|x| ode_last(x, &s), &x, 1e-6);
            assert_close("ode gradient", &g, &fd, 1e-8);
        }
    }

    #[test]
    fn many_steps_approach_the_exact_solution() {
        // y0 = x0 t, y1 = x1 x0 t² / 2: at t = 2, y1 = 2 x0 x1 (RK4 is exact here).
        let mut y = [0.0; 2];
        ode_solve(&mut y, &[0.7, 0.3], 4);
        assert!((y[0] - 1.4).abs() < 1e-14 && (y[1] - 2.0 * 0.7 * 0.3).abs() < 1e-14);
    }
}
