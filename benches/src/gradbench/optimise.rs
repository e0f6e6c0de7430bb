//! Nested differentiation and the gradient descent of the `particle` and `saddle`
//! evals.
//!
//! [`gradient`] differentiates a [`Nested`] function at any number type `S`: forward
//! mode evaluates it at `Dual<S>`, reverse mode records it on a `Tape<S>`. Called with
//! `S` itself a forward or reverse number, it nests (`Dual<Dual<f64>>`,
//! `Var<Dual<f64>>`, `Dual<Var<f64>>`, `Var<Var<f64>>`): the outer derivative sees
//! through the inner one. Perturbations cannot be confused: each level is its own type.
//!
//! [`argmin`] / [`argmax`] are GradBench's shared gradient-descent solver for these two
//! evals (their expected outputs depend on its exact steps): step size `1e-5`, doubled
//! after 10 accepted steps, halved after a rejected one; stop when the gradient norm or
//! the step length falls to `1e-5`. Its comparisons read values, so it runs unchanged
//! at any number type, and a derivative through it follows the path actually taken.

use shade_autodiff::scalar::{Dual, Real, Tape};

/// A function `f(x; c)` whose derivative with respect to `x` is wanted, `c` held
/// constant; written once for every number type.
pub trait Nested {
    /// The value at `x` with constants `c`, both at the caller's number type.
    fn eval<T: Real>(&self, x: &[T], c: &[T]) -> Result<T, String>;
}

/// A mode of differentiation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// One forward evaluation per input, at `Dual<S>`.
    Forward,
    /// One recording on a `Tape<S>` and one reverse sweep.
    Reverse,
}

impl Mode {
    /// `f` → forward, `r` → reverse.
    pub fn from_letter(c: char) -> Option<Mode> {
        match c {
            'f' => Some(Mode::Forward),
            'r' => Some(Mode::Reverse),
            _ => None,
        }
    }
}

/// `∇ₓ f(x; c)` at number type `S`.
pub fn gradient<S: Real, F: Nested>(mode: Mode, f: &F, x: &[S], c: &[S]) -> Result<Vec<S>, String> {
    match mode {
        Mode::Forward => {
            let cs: Vec<Dual<S>> = c.iter().map(|&v| Dual::constant(v)).collect();
            (0..x.len())
                .map(|k| {
                    let xs: Vec<Dual<S>> = x
                        .iter()
                        .enumerate()
                        .map(|(i, &v)| Dual::new(v, if i == k { S::one() } else { S::zero() }))
                        .collect();
                    Ok(f.eval(&xs, &cs)?.d[0])
                })
                .collect()
        }
        Mode::Reverse => {
            let mut tape = Tape::<S>::new();
            let (ids, out) = {
                let t = tape.trace();
                let xs: Vec<_> = x.iter().map(|&v| t.var(v)).collect();
                // The scalar layer makes constants only from `f64`; a constant of the
                // outer number type enters as a variable whose adjoint is not read.
                let cs: Vec<_> = c.iter().map(|&v| t.var(v)).collect();
                let y = f.eval(&xs, &cs)?;
                (xs.iter().map(|v| v.id()).collect::<Vec<_>>(), y.id())
            };
            let Some(out) = out else {
                return Ok(vec![S::zero(); x.len()]);
            };
            let adj = tape.backward(out, S::one()).map_err(|e| e.to_string())?;
            Ok(ids
                .iter()
                .map(|id| id.map_or(S::zero(), |i| adj[i.index()]))
                .collect())
        }
    }
}

fn norm<T: Real>(v: &[T]) -> f64 {
    v.iter()
        .map(|x| x.detach().value().powi(2))
        .sum::<f64>()
        .sqrt()
}

/// Gradient-descent solver steps before giving up (the evals need a few thousand).
const MAX_STEPS: usize = 10_000_000;

/// The minimiser of `value` from `x0`, with gradients from `grad` (see the module
/// documentation for the rule).
pub fn argmin<T: Real>(
    value: impl Fn(&[T]) -> Result<T, String>,
    grad: impl Fn(&[T]) -> Result<Vec<T>, String>,
    x0: &[T],
) -> Result<Vec<T>, String> {
    let mut x = x0.to_vec();
    let mut fx = value(&x)?;
    let mut gx = grad(&x)?;
    let mut accepted = 0;
    let mut eta = 1e-5;
    let mut next = vec![T::zero(); x.len()];
    for _ in 0..MAX_STEPS {
        if norm(&gx) <= 1e-5 {
            return Ok(x);
        }
        if accepted == 10 {
            eta *= 2.0;
            accepted = 0;
            continue;
        }
        for ((n, &xi), &gi) in next.iter_mut().zip(&x).zip(&gx) {
            *n = xi - gi * eta;
        }
        let step: f64 = x
            .iter()
            .zip(&next)
            .map(|(a, b)| (a.detach().value() - b.detach().value()).powi(2))
            .sum::<f64>()
            .sqrt();
        if step <= 1e-5 {
            return Ok(x);
        }
        let fnext = value(&next)?;
        if fnext.detach().value() < fx.detach().value() {
            std::mem::swap(&mut x, &mut next);
            fx = fnext;
            gx = grad(&x)?;
            accepted += 1;
        } else {
            eta /= 2.0;
            accepted = 0;
        }
    }
    Err(format!(
        "gradient descent did not converge in {MAX_STEPS} steps"
    ))
}

/// The maximiser of `value`: [`argmin`] of its negation.
pub fn argmax<T: Real>(
    value: impl Fn(&[T]) -> Result<T, String>,
    grad: impl Fn(&[T]) -> Result<Vec<T>, String>,
    x0: &[T],
) -> Result<Vec<T>, String> {
    argmin(
        |x| value(x).map(|v| -v),
        |x| grad(x).map(|g| g.into_iter().map(|v| -v).collect()),
        x0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `f(x; c) = c₀ x₀² x₁ + sin(x₁ c₁)`.
    struct F;
    impl Nested for F {
        fn eval<T: Real>(&self, x: &[T], c: &[T]) -> Result<T, String> {
            Ok(c[0] * x[0] * x[0] * x[1] + (x[1] * c[1]).sin())
        }
    }

    /// `g(y) = y · ∂f/∂x₀(y, 2; y, 1) = y · 4 y²` (the derivative taken inside).
    struct G(Mode);
    impl Nested for G {
        fn eval<T: Real>(&self, y: &[T], _c: &[T]) -> Result<T, String> {
            let g = gradient(self.0, &F, &[y[0], T::cst(2.0)], &[y[0], T::cst(1.0)])?;
            Ok(y[0] * g[0])
        }
    }

    #[test]
    fn both_modes_agree_alone_and_nested_in_all_four_ways() {
        for mode in [Mode::Forward, Mode::Reverse] {
            let g = gradient(mode, &F, &[1.5, 0.5], &[2.0, 3.0]).unwrap();
            assert!((g[0] - 2.0 * 2.0 * 1.5 * 0.5).abs() < 1e-14);
            assert!((g[1] - (2.0 * 2.25 + 3.0 * 1.5f64.cos())).abs() < 1e-14);
            for inner in [Mode::Forward, Mode::Reverse] {
                // g(y) = 4 y³ → g'(y) = 12 y².
                let d = gradient(mode, &G(inner), &[0.7], &[]).unwrap();
                assert!(
                    (d[0] - 12.0 * 0.49).abs() < 1e-13,
                    "{mode:?}/{inner:?}: {}",
                    d[0]
                );
            }
        }
    }

    #[test]
    fn descent_finds_the_minimum_of_a_quadratic() {
        let x = argmin(
            |x: &[f64]| Ok((x[0] - 3.0).powi(2) + 2.0 * (x[1] + 1.0).powi(2)),
            |x: &[f64]| Ok(vec![2.0 * (x[0] - 3.0), 4.0 * (x[1] + 1.0)]),
            &[0.0, 0.0],
        )
        .unwrap();
        assert!(
            (x[0] - 3.0).abs() < 1e-4 && (x[1] + 1.0).abs() < 1e-4,
            "{x:?}"
        );
        let y = argmax(
            |x: &[f64]| Ok(-(x[0] * x[0])),
            |x: &[f64]| Ok(vec![-2.0 * x[0]]),
            &[1.0],
        )
        .unwrap();
        assert!(y[0].abs() < 1e-4);
    }
}
