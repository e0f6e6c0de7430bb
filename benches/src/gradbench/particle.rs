//! GradBench's `particle` eval (Pearlmutter and Siskind's charged particle): choose
//! the control `w` that makes a particle, accelerated by two charges one of which
//! depends on `w`, hit the origin. The trajectory (naive Euler steps until it crosses
//! the x-axis) needs the gradient of the potential at every step (the inner
//! derivative), and the gradient descent over `w` needs the derivative of the whole
//! trajectory (the outer one): nested AD. The four functions `ff`, `fr`, `rf`, `rr`
//! pick forward or reverse mode for the outer (first letter) and inner (second)
//! derivative; they return the same `w`.

use shade_autodiff::scalar::Real;

use super::optimise::{Mode, Nested, argmin, gradient};

/// The potential `Σ_k 1 / ‖x - c_k‖` at `x` (2) of the charges `c` (2 × 2, flat).
pub struct Potential;

impl Nested for Potential {
    fn eval<T: Real>(&self, x: &[T], c: &[T]) -> Result<T, String> {
        let mut p = T::zero();
        for ck in c.chunks_exact(2) {
            let (dx, dy) = (x[0] - ck[0], x[1] - ck[1]);
            p += (dx * dx + dy * dy).sqrt().recip();
        }
        Ok(p)
    }
}

/// Euler steps before a trajectory that never reaches the x-axis is an error.
const MAX_STEPS: usize = 1_000_000;

/// The squared x-coordinate where the particle crosses the x-axis, for control `w`
/// (`x = [w]`), with the potential's gradient taken in `inner` mode.
pub struct Miss {
    /// Mode of the inner derivative.
    pub inner: Mode,
}

impl Nested for Miss {
    fn eval<T: Real>(&self, w: &[T], _c: &[T]) -> Result<T, String> {
        let charges = [T::cst(10.0), -w[0] + 10.0, T::cst(10.0), T::cst(0.0)];
        let mut x = [T::cst(0.0), T::cst(8.0)];
        let mut v = [T::cst(0.75), T::cst(0.0)];
        let dt = 0.1;
        for _ in 0..MAX_STEPS {
            let g = gradient(self.inner, &Potential, &x, &charges)?;
            let a = [-g[0], -g[1]];
            x = [x[0] + v[0] * dt, x[1] + v[1] * dt];
            if x[1].detach().value() <= 0.0 {
                let dt_f = -x[1] / v[1];
                let x_f = x[0] + dt_f * v[0];
                return Ok(x_f * x_f);
            }
            v = [v[0] + a[0] * dt, v[1] + a[1] * dt];
        }
        Err(format!(
            "the particle did not reach the x-axis in {MAX_STEPS} steps"
        ))
    }
}

/// The control that minimises the miss, from `w0`, derivatives in modes
/// `(outer, inner)`.
pub fn solve(w0: f64, outer: Mode, inner: Mode) -> Result<f64, String> {
    let miss = Miss { inner };
    let w = argmin(
        |w: &[f64]| miss.eval(w, &[]),
        |w: &[f64]| gradient(outer, &miss, w, &[]),
        &[w0],
    )?;
    Ok(w[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn miss_derivative_matches_central_differences_in_all_modes() {
        for outer in [Mode::Forward, Mode::Reverse] {
            for inner in [Mode::Forward, Mode::Reverse] {
                let m = Miss { inner };
                let w = 0.1;
                let h = 1e-6;
                let fd =
                    (m.eval(&[w + h], &[]).unwrap() - m.eval(&[w - h], &[]).unwrap()) / (2.0 * h);
                let g = gradient(outer, &m, &[w], &[]).unwrap();
                assert!(
                    (g[0] - fd).abs() < 1e-6 * fd.abs().max(1.0),
                    "{outer:?}{inner:?}: {} vs {fd}",
                    g[0]
                );
            }
        }
    }

    #[test]
    fn all_four_variants_reach_the_eval_s_answer() {
        // The eval's expected output for w0 = 0.
        for o in [Mode::Forward, Mode::Reverse] {
            for i in [Mode::Forward, Mode::Reverse] {
                let w = solve(0.0, o, i).unwrap();
                assert!(
                    (w - 0.207_191_874_648_611_6).abs() < 1e-6,
                    "{o:?}{i:?}: {w}"
                );
            }
        }
    }
}
