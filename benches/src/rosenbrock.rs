//! Rosenbrock's function as a plain `fn` with its compile-time reverse derivative
//! (`d_rosenbrock`), shared by the `compiled` bench and the profiling example.

use shade_autodiff::autodiff_reverse;

/// `Σ (1 - xᵢ)² + 100 (xᵢ₊₁ - xᵢ²)²`.
#[autodiff_reverse(d_rosenbrock, Duplicated, Active)]
pub fn rosenbrock(x: &[f64]) -> f64 {
    let mut acc = 0.0;
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        acc += a * a + 100.0 * b * b;
    }
    acc
}
