//! What the evals' tests and the benches share: a small deterministic generator
//! ([`Lcg`]), central finite differences, and GradBench's closeness measure.
//!
//! `std` only, like the eval modules that `shade-autodiff-macros`' tests include by
//! `#[path]` (they include this file too, as the sibling `support` of those modules).

/// A small deterministic generator (uniform in `[0, 1)`), so problems are
/// reproducible without a random-number crate in the objectives.
#[derive(Clone, Debug)]
pub struct Lcg(u64);

impl Lcg {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Lcg(seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407))
    }

    /// The next number in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `n` numbers in `[lo, hi)`.
    pub fn vec(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| lo + (hi - lo) * self.next_f64()).collect()
    }
}

/// `n` numbers uniform in `[0, 1)` from the stream `seed`.
pub fn uniform(seed: u64, n: usize) -> Vec<f64> {
    Lcg::new(seed).vec(n, 0.0, 1.0)
}

/// `∂f/∂x` by central differences with step `h · max(1, |x_i|)`.
pub fn central_gradient(f: impl Fn(&[f64]) -> f64, x: &[f64], h: f64) -> Vec<f64> {
    central_jacobian(|x| vec![f(x)], x, h)
}

/// The Jacobian (row-major, `m × n`) of `f: ℝⁿ → ℝᵐ` by central differences with step
/// `h · max(1, |x_j|)`.
pub fn central_jacobian(f: impl Fn(&[f64]) -> Vec<f64>, x: &[f64], h: f64) -> Vec<f64> {
    let m = f(x).len();
    let n = x.len();
    let mut jac = vec![0.0; m * n];
    let mut xp = x.to_vec();
    for j in 0..n {
        let step = h * x[j].abs().max(1.0);
        xp[j] = x[j] + step;
        let up = f(&xp);
        xp[j] = x[j] - step;
        let down = f(&xp);
        xp[j] = x[j];
        for i in 0..m {
            jac[i * n + j] = (up[i] - down[i]) / (2.0 * step);
        }
    }
    jac
}

/// Asserts `|a - b| <= tol · max(1, |a| + |b|)` entry by entry (GradBench's measure).
#[track_caller]
pub fn assert_close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        let scale = (a.abs() + b.abs()).max(1.0);
        assert!(
            (a - b).abs() <= tol * scale,
            "{what}[{i}]: got {a}, want {b} (tolerance {tol})"
        );
    }
}
