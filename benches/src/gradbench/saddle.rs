//! GradBench's `saddle` eval (Pearlmutter and Siskind): the saddle point of
//! `f(x, y) = (x₁² + x₂²) - (y₁² + y₂²)` as `argmin_x max_y f(x, y)` by gradient
//! descent, the inner maximisation (itself gradient ascent, with its own derivative)
//! sitting inside the outer objective: nested AD. `ff`, `fr`, `rf`, `rr` pick forward or
//! reverse mode for the outer (first letter) and inner (second) derivative; the final
//! maximisation over `y` at the found `x` uses the outer mode. All return `[x, y]`.

use shade_autodiff::scalar::Real;

use super::optimise::{Mode, Nested, argmax, argmin, gradient};

/// `f(x, y)` as a function of `y` (the differentiated argument) with `x` held: the
/// inner objective.
pub struct Inner;

impl Nested for Inner {
    fn eval<T: Real>(&self, y: &[T], x: &[T]) -> Result<T, String> {
        Ok((x[0] * x[0] + x[1] * x[1]) - (y[0] * y[0] + y[1] * y[1]))
    }
}

/// `max_y f(x, y)` from the starting point `c`, as a function of `x`, the inner
/// gradients in `inner` mode.
pub struct Outer {
    /// Mode of the inner derivative.
    pub inner: Mode,
}

impl Nested for Outer {
    fn eval<T: Real>(&self, x: &[T], start: &[T]) -> Result<T, String> {
        let y = argmax(
            |y: &[T]| Inner.eval(y, x),
            |y: &[T]| gradient(self.inner, &Inner, y, x),
            start,
        )?;
        Inner.eval(&y, x)
    }
}

/// The saddle point `[x₁, x₂, y₁, y₂]` from `start`, derivatives in `(outer, inner)`.
pub fn solve(start: [f64; 2], outer: Mode, inner: Mode) -> Result<[f64; 4], String> {
    let o = Outer { inner };
    let x = argmin(
        |x: &[f64]| o.eval(x, &start),
        |x: &[f64]| gradient(outer, &o, x, &start),
        &start,
    )?;
    let y = argmax(
        |y: &[f64]| Inner.eval(y, &x),
        |y: &[f64]| gradient(outer, &Inner, y, &x),
        &start,
    )?;
    Ok([x[0], x[1], y[0], y[1]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outer_derivative_matches_central_differences() {
        // max_y f(x, y) = ‖x‖² (at y ≈ 0): its gradient is ≈ 2x in every mode pair.
        for outer in [Mode::Forward, Mode::Reverse] {
            for inner in [Mode::Forward, Mode::Reverse] {
                let o = Outer { inner };
                let x = [0.6, -0.3];
                let g = gradient(outer, &o, &x, &[1.0, 1.0]).unwrap();
                let h = 1e-6;
                for k in 0..2 {
                    let (mut up, mut down) = (x, x);
                    up[k] += h;
                    down[k] -= h;
                    let fd = (o.eval(&up, &[1.0, 1.0]).unwrap()
                        - o.eval(&down, &[1.0, 1.0]).unwrap())
                        / (2.0 * h);
                    assert!(
                        (g[k] - fd).abs() < 1e-5,
                        "{outer:?}{inner:?}[{k}]: {} vs {fd}",
                        g[k]
                    );
                    assert!((g[k] - 2.0 * x[k]).abs() < 1e-3);
                }
            }
        }
    }

    #[test]
    fn all_four_variants_reach_the_saddle() {
        for o in [Mode::Forward, Mode::Reverse] {
            for i in [Mode::Forward, Mode::Reverse] {
                let p = solve([1.0, 1.0], o, i).unwrap();
                for v in p {
                    // The eval expects 8.246e-6 for each coordinate.
                    assert!(
                        (v - 8.246_324_826_140_356e-6).abs() < 1e-9,
                        "{o:?}{i:?}: {p:?}"
                    );
                }
            }
        }
    }
}
