//! GradBench `lse`: `LSE(x) = max x + ln Σ exp(xᵢ - max x)`, written with its
//! primitive elements (a maximum, a sum), as the eval asks.

// Index loops are the form the compile-time engine differentiates.
#![allow(clippy::needless_range_loop)]

use shade_autodiff::autodiff_reverse;

/// `ln Σᵢ exp(xᵢ)`, computed stably.
#[autodiff_reverse(d_lse, Duplicated, Active)]
pub fn lse(x: &[f64]) -> f64 {
    let mut m = x[0];
    for i in 1..x.len() {
        if x[i] > m {
            m = x[i];
        }
    }
    let mut s = 0.0;
    for i in 0..x.len() {
        s += (x[i] - m).exp();
    }
    m + s.ln()
}
